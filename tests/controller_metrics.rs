//! The controller's metrics and status over HTTP against the running server (docs/metrics.md,
//! "The controller"): each figure moves with its event — requests by type and handling status
//! with their latency, an election after a master's connection closes (clean and unclean), a
//! SyncStateSet shrinking, heartbeats expiring, the leader changing between two controllers on
//! one etcd (role gauge, leader changes, the lease and its loss) — and `/api/status` shows the broker sets with
//! their master, epochs, SyncStateSet and members; a standalone controller shows the same
//! without the NameServer's tables. The scrape passes `promtool check metrics`.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::NameServerHandle;
use serde_json::Value;
use support::controller::requests::{alter, elect, heartbeat};
use support::controller::{controller, controller_config, free_port, join};
use support::*;

const CLUSTER: &str = "metrics-cluster";
/// Java's labels of this node in a one-node test: `address`, `group`, `peer_id`.
fn node(server: &NameServerHandle) -> String {
    let addr = server.controller_addr().expect("controller on");
    format!("address=\"{addr}\",group=\"group-test\",peer_id=\"n0\"")
}

fn with_http(mut config: Config) -> Config {
    config.http.listen = Some("127.0.0.1:0".parse().expect("loopback"));
    config
}

fn http_addr(server: &NameServerHandle) -> SocketAddr {
    server.http_addr().expect("the HTTP port is on")
}

async fn metrics(server: &NameServerHandle) -> String {
    let answer = support::http::get(http_addr(server), "/metrics", "").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.body
}

async fn status(server: &NameServerHandle) -> Value {
    let answer = support::http::get(http_addr(server), "/api/status", "").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    serde_json::from_str(&answer.body).expect("JSON")
}

/// The value of the sample `name{labels}` (labels in the server's order), 0 when absent.
fn sample(metrics: &str, name: &str, labels: &str) -> f64 {
    let key = format!("{name}{{{labels}}}");
    metrics
        .lines()
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            (series == key).then(|| value.parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

/// Polls the scrape (bounded: 10 s) until `check` holds on it; the last scrape either way.
async fn scrape_until(server: &NameServerHandle, check: impl Fn(&str) -> bool) -> (bool, String) {
    let mut last = String::new();
    for _ in 0..100 {
        last = metrics(server).await;
        if check(&last) {
            return (true, last);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (false, last)
}

/// The OpenMetrics scrape in the Prometheus text format promtool's parser reads: a counter's
/// `# HELP`/`# TYPE` name gets the `_total` its samples have, and `# EOF` goes.
fn as_prometheus_text(scrape: &str) -> String {
    let counters: Vec<&str> = scrape
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::new();
    for line in scrape.lines().filter(|l| *l != "# EOF") {
        let named = ["# HELP ", "# TYPE "].iter().find_map(|p| {
            let rest = line.strip_prefix(p)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{p}{name}_total {tail}"))
        });
        out.push_str(named.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

/// `promtool check metrics` (its lint: names, units, help, histogram shape) passes on a scrape.
fn promtool_accepts(scrape: &str) {
    let scrape = as_prometheus_text(scrape);
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian: apt-get install prometheus)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(scrape.as_bytes())
        .expect("write the scrape");
    let out = child.wait_with_output().expect("promtool ran");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "promtool check metrics: {said}");
}

#[actix::test]
async fn requests_elections_shrinks_and_expiry_move_the_controller_metrics() {
    let dir = test_dir("ctl-metrics");
    let mut config = with_http(controller_config(&dir));
    config.controller.elect_unclean_master = true;
    config.controller.notify_broker_role_changed = false;
    let server = start_server(config);
    let n = node(&server);
    let m = metrics(&server).await;
    assert_eq!(sample(&m, "rmq_namesrv_controller_role", &n), 3.0, "{m}");
    let zero =
        format!("{n},request_type=\"CONTROLLER_ELECT_MASTER\",request_handle_status=\"failed\"");
    assert!(
        m.contains(&format!("rmq_namesrv_controller_request_total{{{zero}}} 0")),
        "{m}"
    );

    // Set "clean": master 1 and slave 2 in sync; set "unclean": slave 2 never in sync.
    let mut master = controller(&server).await;
    let mut slave = controller(&server).await;
    let mut other = controller(&server).await;
    join(&mut master, CLUSTER, "clean", 1, "127.0.0.1:10911", 10_000).await;
    assert_eq!(
        master
            .request(elect(CLUSTER, "clean", 1))
            .await
            .unwrap()
            .code,
        0
    );
    join(&mut slave, CLUSTER, "clean", 2, "127.0.0.1:10921", 10_000).await;
    let r = master
        .request(alter("clean", 1, 1, &[1, 2], 1))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    join(
        &mut master,
        CLUSTER,
        "unclean",
        1,
        "127.0.0.1:10912",
        10_000,
    )
    .await;
    assert_eq!(
        master
            .request(elect(CLUSTER, "unclean", 1))
            .await
            .unwrap()
            .code,
        0
    );
    join(&mut other, CLUSTER, "unclean", 2, "127.0.0.1:10922", 10_000).await;
    // Asked again while the master lives: Java's keep_current_master.
    let r = slave.request(elect(CLUSTER, "clean", 2)).await.unwrap();
    assert_eq!(r.code, 2011, "{r:?}");
    // A request whose header cannot be read: failed.
    let bad = RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER);
    assert_ne!(slave.request(bad).await.unwrap().code, 0);

    let set = |name: &str, result: &str| {
        format!("{n},cluster=\"{CLUSTER}\",broker_set=\"{name}\",election_result=\"{result}\"")
    };
    let m = metrics(&server).await;
    let election = "rmq_namesrv_controller_election_total";
    assert_eq!(
        sample(&m, election, &set("clean", "new_master_elected")),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(&m, election, &set("clean", "keep_current_master")),
        1.0,
        "{m}"
    );
    let requests = "rmq_namesrv_controller_request_total";
    let of = |kind: &str, how: &str| {
        format!("{n},request_type=\"{kind}\",request_handle_status=\"{how}\"")
    };
    assert_eq!(
        sample(&m, requests, &of("CONTROLLER_ELECT_MASTER", "success")),
        3.0,
        "{m}"
    );
    assert_eq!(
        sample(&m, requests, &of("CONTROLLER_ELECT_MASTER", "failed")),
        1.0,
        "{m}"
    );
    assert_eq!(
        sample(
            &m,
            requests,
            &of("CONTROLLER_GET_NEXT_BROKER_ID", "success")
        ),
        4.0
    );
    let latency = "rmq_namesrv_controller_request_latency_seconds_count";
    let elect_type = format!("{n},request_type=\"CONTROLLER_ELECT_MASTER\"");
    assert_eq!(sample(&m, latency, &elect_type), 3.0, "{m}");
    let commits = "rmq_namesrv_controller_commit_latency_seconds_count";
    assert!(sample(&m, commits, &n) >= 7.0, "{m}");
    let active = |name: &str| format!("{n},cluster=\"{CLUSTER}\",broker_set=\"{name}\"");
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_controller_active_broker_num",
            &active("clean")
        ),
        2.0
    );
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_controller_sync_state_set_size",
            &active("clean")
        ),
        2.0
    );
    promtool_accepts(&m);
    // Heartbeats are oneway: counted once the controller has them.
    let beats = of("CONTROLLER_BROKER_HEARTBEAT", "success");
    let (counted, m) = scrape_until(&server, |m| sample(m, requests, &beats) == 4.0).await;
    assert!(counted, "{m}");

    // The master's connection closes: both sets elect their slave, "unclean" from outside its
    // SyncStateSet; "clean"'s SyncStateSet shrinks from {1, 2} to {2}.
    drop(master);
    let (moved, m) = scrape_until(&server, |m| {
        sample(m, election, &set("clean", "new_master_elected")) == 2.0
            && sample(m, election, &set("unclean", "new_master_elected")) == 2.0
    })
    .await;
    assert!(moved, "{m}");
    let unclean = "rmq_namesrv_controller_unclean_elections_total";
    assert_eq!(sample(&m, unclean, &active("unclean")), 1.0, "{m}");
    assert_eq!(sample(&m, unclean, &active("clean")), 0.0, "{m}");
    let shrinks = "rmq_namesrv_controller_sync_state_set_shrinks_total";
    assert!(sample(&m, shrinks, &active("clean")) >= 1.0, "{m}");
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_controller_active_broker_num",
            &active("clean")
        ),
        1.0
    );

    // The status API shows the new master, epochs and SyncStateSet.
    let s = status(&server).await;
    let c = &s["controller"];
    assert_eq!(
        (c["role"].as_str(), c["role_value"].as_u64()),
        (Some("leader"), Some(3))
    );
    let clean = c["broker_sets"]
        .as_array()
        .and_then(|sets| sets.iter().find(|x| x["broker_set"] == "clean"))
        .expect("set clean listed");
    assert_eq!(clean["cluster"], CLUSTER);
    assert_eq!(clean["master"]["id"], 2);
    assert_eq!(clean["master"]["address"], "127.0.0.1:10921");
    assert_eq!(clean["master_epoch"], 2);
    assert_eq!(clean["sync_state_set"], serde_json::json!([2]));
    let members = clean["members"].as_array().expect("members");
    assert_eq!(members.len(), 2, "{clean}");
    assert_eq!(members[0]["alive"], false);
    assert_eq!(members[1]["alive"], true);
    assert!(
        members[1]["heartbeat_age_seconds"].as_f64().is_some(),
        "{clean}"
    );

    // Heartbeats that expire: the slave beats with a 300 ms timeout and stops.
    let beat = heartbeat(CLUSTER, "clean", 2, "127.0.0.1:10921", (2, 0), 300);
    slave.oneway(beat).await.unwrap();
    let (dropped, m) = scrape_until(&server, |m| {
        sample(
            m,
            "rmq_namesrv_controller_active_broker_num",
            &active("clean"),
        ) == 0.0
    })
    .await;
    assert!(dropped, "{m}");
    promtool_accepts(&m);
    server.stop().await;
}

/// Two NameServers' controllers sharing one etcd.
fn etcd_config(dir: &Path, etcd: &support::etcd::Etcd, peers: &str, me: &str) -> Config {
    let mut config = with_http(controller_config(dir));
    config.controller.peers = peers.to_owned();
    config.controller.self_id = me.to_owned();
    config.controller.etcd_endpoints = etcd.endpoint();
    config.controller.etcd_prefix = format!("/rmq-test/{}", dir.display());
    config.controller.etcd_lease_ttl = Duration::from_secs(2);
    config
}

fn labels_of(server: &NameServerHandle, me: &str) -> String {
    let addr = server.controller_addr().expect("controller on");
    format!("address=\"{addr}\",group=\"group-test\",peer_id=\"{me}\"")
}

#[actix::test]
async fn a_leader_change_on_etcd_flips_the_role_and_is_counted() {
    let etcd = support::etcd::start();
    let dir = test_dir("ctl-metrics-etcd");
    let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{}", free_port(), free_port());
    let first = start_server(etcd_config(&dir, &etcd, &peers, "n0"));
    let n0 = labels_of(&first, "n0");
    let role = "rmq_namesrv_controller_role";
    let (leads, m) = scrape_until(&first, |m| sample(m, role, &n0) == 3.0).await;
    assert!(leads, "the first controller never led: {m}");
    let second = start_server(etcd_config(&dir, &etcd, &peers, "n1"));
    let n1 = labels_of(&second, "n1");
    let (follows, m) = scrape_until(&second, |m| sample(m, role, &n1) == 2.0).await;
    assert!(follows, "{m}");
    let changes = "rmq_namesrv_controller_leader_changes_total";
    assert_eq!(sample(&m, changes, &n1), 1.0, "{m}");
    let lease = sample(&m, "rmq_namesrv_controller_lease_remaining_seconds", &n1);
    assert!(lease > 0.0 && lease <= 2.0, "{m}");
    let s = status(&second).await;
    assert_eq!(s["controller"]["role"], "follower");
    assert_eq!(s["controller"]["leader"]["id"], "n0");

    // A change committed to etcd by the leader is timed.
    let mut leader = controller(&first).await;
    join(
        &mut leader,
        CLUSTER,
        "etcd-set",
        1,
        "127.0.0.1:10911",
        10_000,
    )
    .await;
    let m = metrics(&first).await;
    let commits = "rmq_namesrv_controller_commit_latency_seconds_count";
    assert!(sample(&m, commits, &n0) >= 1.0, "{m}");
    promtool_accepts(&m);

    // The leader stops: the other takes over, and counts the change.
    first.stop().await;
    let (took_over, m) = scrape_until(&second, |m| sample(m, role, &n1) == 3.0).await;
    assert!(took_over, "{m}");
    assert_eq!(sample(&m, changes, &n1), 2.0, "{m}");
    let s = status(&second).await;
    assert_eq!(s["controller"]["leader"]["id"], "n1");
    let sets = s["controller"]["broker_sets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(sets.iter().any(|x| x["broker_set"] == "etcd-set"), "{s}");

    // etcd frozen: the lease runs out, the leader steps down and shows its lease lost.
    etcd.pause();
    let lease = "rmq_namesrv_controller_lease_remaining_seconds";
    let (lost, m) = scrape_until(&second, |m| {
        m.contains(&format!("{lease}{{{n1}}} 0")) && sample(m, role, &n1) == 1.0
    })
    .await;
    etcd.resume();
    assert!(lost, "{m}");
    second.stop().await;
}

#[actix::test]
async fn without_a_controller_there_is_no_controller_family_or_section() {
    let server = start_server(with_http(test_config()));
    let m = metrics(&server).await;
    assert!(!m.contains("rmq_namesrv_controller_"), "{m}");
    assert_eq!(status(&server).await["controller"], Value::Null);
    server.stop().await;
}

#[actix::test]
async fn a_standalone_controller_shows_its_metrics_and_section_without_namesrv_tables() {
    use rmq_namesrv::StandaloneController;
    let dir = test_dir("ctl-metrics-standalone");
    let controller = StandaloneController::new(with_http(controller_config(&dir)))
        .start()
        .expect("starts");
    let http = controller.http_addr().expect("the HTTP port is on");
    let addr = controller.local_addr();
    let mut ctl = rmq_namesrv::tools::client::Client::connect(&addr.to_string(), TIMEOUT)
        .await
        .expect("connect");
    join(
        &mut ctl,
        CLUSTER,
        "standalone-set",
        1,
        "127.0.0.1:10911",
        10_000,
    )
    .await;
    let n = format!("address=\"{addr}\",group=\"group-test\",peer_id=\"n0\"");
    let answer = support::http::get(http, "/metrics", "").await;
    let m = answer.body;
    assert_eq!(sample(&m, "rmq_namesrv_controller_role", &n), 3.0, "{m}");
    let next_ids = format!(
        "{n},request_type=\"CONTROLLER_GET_NEXT_BROKER_ID\",request_handle_status=\"success\""
    );
    assert_eq!(
        sample(&m, "rmq_namesrv_controller_request_total", &next_ids),
        1.0
    );
    promtool_accepts(&m);
    let answer = support::http::get(http, "/api/status", "").await;
    let s: Value = serde_json::from_str(&answer.body).expect("JSON");
    assert_eq!(s["controller"]["role"], "leader", "{s}");
    assert_eq!(
        s["controller"]["broker_sets"][0]["broker_set"],
        "standalone-set"
    );
    assert_eq!(s["clusters"], Value::Null, "{s}");
    let page = support::http::get(http, "/", "").await.body;
    assert!(page.contains("id=\"broker-sets\""), "{page}");
    controller.stop().await;
}
