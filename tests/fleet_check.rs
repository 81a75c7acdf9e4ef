//! The periodic fleet check (`[fleet]`) over TCP: a server compares itself with a peer every
//! `fleet.check_interval`; the `rmq_namesrv_fleet_drift{kind}` gauges and the status page's
//! "fleet" section (HTML and `/api/status`) move when drift appears and disappear when it goes;
//! an unreachable peer is counted; the config keys are checked.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use rmq_namesrv::config::Config;
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::NameServerHandle;
use serde_json::Value;
use support::*;

/// Bound on waiting for a check to see a change (checks run every second).
const SEEN_WITHIN: Duration = Duration::from_secs(15);

fn watching(peers: Vec<String>) -> Config {
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().expect("address"));
    config.fleet.peers = peers;
    config.fleet.check_interval = Duration::from_secs(1);
    config.fleet.timeout = Duration::from_secs(2);
    config
}

fn http_addr(server: &NameServerHandle) -> SocketAddr {
    server.http_addr().expect("the HTTP port is on")
}

fn drift(metrics: &str, kind: &str) -> Option<f64> {
    let key = format!("rmq_namesrv_fleet_drift{{kind=\"{kind}\"}}");
    metrics.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        (series == key).then(|| value.parse().ok()).flatten()
    })
}

async fn metrics(server: &NameServerHandle) -> String {
    support::http::get(http_addr(server), "/metrics", "")
        .await
        .body
}

async fn fleet_status(server: &NameServerHandle) -> Value {
    let body = support::http::get(http_addr(server), "/api/status", "")
        .await
        .body;
    let doc: Value = serde_json::from_str(&body).expect("status JSON");
    doc["fleet"].clone()
}

/// Registers `broker` on its own connection; the broker lives as long as the connection.
async fn register(
    server: &NameServerHandle,
    broker: FakeBroker,
) -> rmq_namesrv::tools::client::Client {
    let mut conn = connect(server).await;
    let resp = conn.request(broker.register()).await.expect("register");
    assert_eq!(resp.code, 0, "{resp:?}");
    conn
}

#[actix::test]
async fn gauges_and_status_follow_drift_as_it_appears_and_goes() {
    let peer = start_server(test_config());
    let watcher = start_server(watching(vec![peer.local_addr().to_string()]));
    let broker = || FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]);
    let _on_peer = register(&peer, broker()).await;
    let on_watcher = register(&watcher, broker()).await;

    // Agreeing: every kind at 0, the section says so.
    assert!(
        eventually(SEEN_WITHIN, || async {
            fleet_status(&watcher).await["agrees"] == true
        })
        .await
    );
    let m = metrics(&watcher).await;
    for kind in ["broker", "topic", "queue", "data_version", "kv", "config"] {
        assert_eq!(drift(&m, kind), Some(0.0), "{kind}: {m}");
    }
    let page = support::http::get(http_addr(&watcher), "/", "").await.body;
    assert!(page.contains("<section id=\"fleet\">"), "{page}");
    assert!(page.contains("the name servers agree"), "{page}");

    // A broker on the peer only, and a KV entry on the watcher only.
    let _only_peer = register(
        &peer,
        FakeBroker::master("broker-b", 10921, &["TopicC", "TopicD"]),
    )
    .await;
    let mut conn = connect(&watcher).await;
    let resp = conn
        .request(put_kv("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4"))
        .await
        .expect("put");
    assert_eq!(resp.code, 0);
    assert!(
        eventually(SEEN_WITHIN, || async {
            let m = metrics(&watcher).await;
            drift(&m, "broker") == Some(1.0) && drift(&m, "kv") == Some(1.0)
        })
        .await
    );
    let m = metrics(&watcher).await;
    assert_eq!(drift(&m, "topic"), Some(2.0), "{m}");
    let fleet = fleet_status(&watcher).await;
    assert_eq!(fleet["agrees"], false, "{fleet}");
    let subjects: Vec<&str> = fleet["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["subject"].as_str())
        .collect();
    assert!(
        subjects.contains(&"cluster DefaultCluster broker broker-b id 0 addr 127.0.0.1:10921"),
        "{fleet}"
    );
    assert!(
        subjects.contains(&"kv ORDER_TOPIC_CONFIG TopicA"),
        "{fleet}"
    );
    let page = support::http::get(http_addr(&watcher), "/", "").await.body;
    assert!(page.contains("the name servers differ"), "{page}");
    assert!(page.contains("broker broker-b id 0"), "{page}");

    // The drift goes: the same broker and KV entry on both.
    let _also_watcher = register(
        &watcher,
        FakeBroker::master("broker-b", 10921, &["TopicC", "TopicD"]),
    )
    .await;
    let mut conn = connect(&peer).await;
    let resp = conn
        .request(put_kv("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4"))
        .await
        .expect("put");
    assert_eq!(resp.code, 0);
    assert!(
        eventually(SEEN_WITHIN, || async {
            fleet_status(&watcher).await["agrees"] == true
        })
        .await
    );
    let m = metrics(&watcher).await;
    assert_eq!(drift(&m, "broker"), Some(0.0), "{m}");
    assert_eq!(drift(&m, "kv"), Some(0.0), "{m}");
    drop(on_watcher);
}

#[actix::test]
async fn an_unreachable_peer_is_counted_and_named() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let closed = listener.local_addr().expect("addr").to_string();
    drop(listener);
    let watcher = start_server(watching(vec![closed.clone()]));
    assert!(
        eventually(SEEN_WITHIN, || async {
            fleet_status(&watcher).await["checked"] == true
        })
        .await
    );
    let fleet = fleet_status(&watcher).await;
    assert_eq!(fleet["agrees"], false, "{fleet}");
    assert_eq!(
        fleet["unreachable"][0]["namesrv"],
        closed.as_str(),
        "{fleet}"
    );
    let m = metrics(&watcher).await;
    assert!(m.contains("rmq_namesrv_fleet_unreachable 1\n"), "{m}");
}

#[actix::test]
async fn without_fleet_the_section_and_gauges_are_absent() {
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().expect("address"));
    let server = start_server(config);
    assert_eq!(fleet_status(&server).await, Value::Null);
    assert_eq!(drift(&metrics(&server).await, "broker"), None);
}

#[test]
fn fleet_keys_are_checked_naming_the_key() {
    let invalid = |edit: &dyn Fn(&mut Config)| {
        let mut config = watching(vec!["127.0.0.1:9876".into()]);
        edit(&mut config);
        config.validate().expect_err("invalid").to_string()
    };
    assert!(invalid(&|c| c.fleet.peers = vec!["nohost".into()]).contains("fleet.peers"));
    assert!(
        invalid(&|c| c.fleet.check_interval = Duration::from_millis(10))
            .contains("fleet.check_interval")
    );
    assert!(invalid(&|c| c.http.listen = None).contains("fleet.check_interval"));
    assert!(invalid(&|c| c.fleet.peers.clear()).contains("fleet.check_interval"));
    assert!(invalid(&|c| c.fleet.timeout = Duration::ZERO).contains("fleet.timeout"));
    let mut config = watching(Vec::new());
    config.http.nsaddr = "127.0.0.1:9876;127.0.0.1:9877".into();
    config.validate().expect("http.nsaddr gives the fleet");
}
