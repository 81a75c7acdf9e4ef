//! The HTTP port over HTTP against the running server (docs/metrics.md): each metric moves when
//! its event happens (register, re-register, expire, close, bad frame, KV save failure, route
//! cache), `/health` goes 503 when the registry is lost, `/ready` follows the
//! `need_wait_for_service` window and a stop, `/rocketmq/nsaddr` answers the address list,
//! a port that cannot be bound stops start-up naming it, and no port is opened by default.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rmq_namesrv::actors::messages::RunScan;
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::code::version;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::{NameServer, NameServerHandle, StartError};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// FAULT_INJECTION (builds with debug assertions).
const FAULT_INJECTION: i32 = 1_999_999;

fn http_config() -> Config {
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().expect("address"));
    config
}

fn http_addr(server: &NameServerHandle) -> SocketAddr {
    server.http_addr().expect("the HTTP port is on")
}

/// A GET over a fresh connection: the status code and the body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let answer = support::http::get(addr, path, "").await;
    (answer.status, answer.body)
}

/// The value of the sample `name{labels}` (labels as written by the server, in its order;
/// `""` for none), or 0 when absent.
fn sample(metrics: &str, name: &str, labels: &str) -> f64 {
    let key = if labels.is_empty() {
        name.to_owned()
    } else {
        format!("{name}{{{labels}}}")
    };
    metrics
        .lines()
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            (series == key).then(|| value.parse().ok()).flatten()
        })
        .unwrap_or(0.0)
}

async fn metrics(server: &NameServerHandle) -> String {
    let (status, body) = get(http_addr(server), "/metrics").await;
    assert_eq!(status, 200);
    assert!(body.trim_end().ends_with("# EOF"), "OpenMetrics text");
    body
}

#[actix::test]
async fn every_metric_moves_when_its_event_happens() {
    let server = start_server(http_config());
    let m = metrics(&server).await;
    assert_eq!(
        sample(&m, "rmq_namesrv_registrations_total", "kind=\"new\""),
        0.0
    );
    assert!(m.contains("rmq_namesrv_build_info{version="));

    // A registration, then the same body again, then a new data version.
    let mut broker = FakeBroker::master("http-a", 10911, &["T1", "T2"]);
    broker.cluster = "ClusterA".into();
    let mut conn = connect(&server).await;
    for _ in 0..2 {
        let resp = conn.request(broker.register()).await.expect("answer");
        assert_eq!(resp.code, 0);
    }
    broker.version.counter += 1;
    assert_eq!(
        conn.request(broker.register()).await.expect("answer").code,
        0
    );
    let m = metrics(&server).await;
    assert_eq!(
        sample(&m, "rmq_namesrv_registrations_total", "kind=\"new\""),
        1.0
    );
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_registrations_total",
            "kind=\"unchanged_body\""
        ),
        1.0
    );
    assert_eq!(
        sample(&m, "rmq_namesrv_registrations_total", "kind=\"refreshed\""),
        1.0
    );
    assert_eq!(
        sample(&m, "rmq_namesrv_live_brokers", "cluster=\"ClusterA\""),
        1.0
    );
    assert_eq!(sample(&m, "rmq_namesrv_topics", ""), 2.0);
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_requests_total",
            "code=\"103\",request=\"REGISTER_BROKER\",response_code=\"0\""
        ),
        3.0
    );
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_request_duration_seconds_count",
            "code=\"103\",request=\"REGISTER_BROKER\""
        ),
        3.0
    );

    // Route queries: a miss, then hits; a topic that does not exist answers 17.
    let mut client = connect(&server).await;
    for _ in 0..3 {
        assert_eq!(
            client
                .request(route_request("T1"))
                .await
                .expect("answer")
                .code,
            0
        );
    }
    assert_eq!(
        client
            .request(route_request("nope"))
            .await
            .expect("answer")
            .code,
        17
    );
    let m = metrics(&server).await;
    assert_eq!(sample(&m, "rmq_namesrv_route_cache_misses_total", ""), 2.0);
    assert_eq!(sample(&m, "rmq_namesrv_route_cache_hits_total", ""), 2.0);
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_requests_total",
            "code=\"105\",request=\"GET_ROUTEINFO_BY_TOPIC\",response_code=\"17\""
        ),
        1.0
    );
    assert!(sample(&m, "rmq_namesrv_route_cache_bytes", "") > 0.0);
    assert!(sample(&m, "rmq_namesrv_connections_accepted_total", "") >= 2.0);
    assert_eq!(sample(&m, "rmq_namesrv_connections_open", ""), 2.0);

    // A broker whose connection closes, and one that expires.
    let closing = FakeBroker::master("http-b", 10912, &["T3", "T4"]);
    let mut closing_conn = connect(&server).await;
    assert_eq!(
        closing_conn
            .request(closing.register())
            .await
            .expect("answer")
            .code,
        0
    );
    drop(closing_conn);
    let removed = eventually(TIMEOUT, || async {
        sample(
            &metrics(&server).await,
            "rmq_namesrv_broker_channel_close_removals_total",
            "",
        ) == 1.0
    })
    .await;
    assert!(removed, "the close is counted");
    server
        .housekeeping()
        .send(RunScan {
            now: Instant::now() + Duration::from_secs(600),
        })
        .await
        .expect("scan");
    let m = metrics(&server).await;
    assert_eq!(sample(&m, "rmq_namesrv_broker_expiries_total", ""), 1.0);
    assert_eq!(
        sample(&m, "rmq_namesrv_live_brokers", "cluster=\"ClusterA\""),
        0.0
    );

    // A bad frame: a negative length closes its connection.
    let mut bad = TcpStream::connect(server.local_addr())
        .await
        .expect("connect");
    bad.write_all(&(-5i32).to_be_bytes()).await.expect("write");
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(TIMEOUT, bad.read_to_end(&mut sink)).await;
    let counted = eventually(TIMEOUT, || async {
        sample(
            &metrics(&server).await,
            "rmq_namesrv_frame_errors_total",
            "kind=\"length\"",
        ) == 1.0
    })
    .await;
    assert!(counted, "the bad frame is counted");
    let m = metrics(&server).await;
    assert_eq!(
        sample(
            &m,
            "rmq_namesrv_limit_refusals_total",
            "limit=\"bad_input\""
        ),
        1.0
    );
    server.stop().await;
}

#[actix::test]
async fn a_failed_kv_save_is_counted_and_entries_are_shown() {
    let config = http_config();
    let kv_dir = config
        .kv
        .path
        .parent()
        .expect("the KV file has a directory")
        .to_owned();
    let server = start_server(config);
    let mut conn = connect(&server).await;
    assert_eq!(
        conn.request(put_kv("NS", "a", "1"))
            .await
            .expect("answer")
            .code,
        0
    );
    let m = metrics(&server).await;
    assert_eq!(sample(&m, "rmq_namesrv_kv_entries", ""), 1.0);
    assert_eq!(sample(&m, "rmq_namesrv_kv_save_failures_total", ""), 0.0);

    // The KV directory becomes a plain file: the next save cannot be written.
    std::fs::remove_dir_all(&kv_dir).expect("remove the KV directory");
    std::fs::write(&kv_dir, b"not a directory").expect("a file in its place");
    let _ = conn.request(put_kv("NS", "b", "2")).await.expect("answer");
    let counted = eventually(TIMEOUT, || async {
        sample(
            &metrics(&server).await,
            "rmq_namesrv_kv_save_failures_total",
            "",
        ) >= 1.0
    })
    .await;
    assert!(counted, "the failed save is counted");
    assert_eq!(
        sample(&metrics(&server).await, "rmq_namesrv_kv_entries", ""),
        2.0
    );
    let _ = std::fs::remove_file(&kv_dir);
    server.stop().await;
}

#[actix::test]
async fn health_turns_red_when_the_registry_is_lost() {
    let server = start_server(http_config());
    let addr = http_addr(&server);
    let (status, body) = get(addr, "/health").await;
    assert_eq!(status, 200, "{body}");
    let mut conn = connect(&server).await;
    let resp = conn
        .request(
            RemotingCommand::request(RequestCode(FAULT_INJECTION))
                .with_ext("actor", "registry")
                .with_ext("lose", "true"),
        )
        .await
        .expect("answer");
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let red = eventually(TIMEOUT, || async { get(addr, "/health").await.0 == 503 }).await;
    assert!(red, "/health is 503 once the registry is gone");
    let (_, body) = get(addr, "/health").await;
    assert!(body.contains("route registry"), "{body}");
    let m = metrics(&server).await;
    assert_eq!(
        sample(&m, "rmq_namesrv_actor_alive", "actor=\"route registry\""),
        0.0
    );
    server.stop().await;
}

#[actix::test]
async fn ready_follows_the_wait_window_and_the_stop() {
    let mut config = http_config();
    config.registry.need_wait_for_service = true;
    config.registry.wait_for_service = Duration::from_millis(800);
    let server = start_server(config);
    let addr = http_addr(&server);
    let (status, body) = get(addr, "/ready").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("need_wait_for_service"), "{body}");
    let ready = eventually(Duration::from_secs(5), || async {
        get(addr, "/ready").await.0 == 200
    })
    .await;
    assert!(ready, "ready once the window is over");
    assert_eq!(get(addr, "/health").await.0, 200);
    server.stop().await;
    // The port is closed with the server.
    assert!(TcpStream::connect(addr).await.is_err());
}

#[actix::test]
async fn the_address_server_answers_one_line_for_every_subgroup() {
    let mut config = http_config();
    config.http.nsaddr = "10.0.0.1:9876; 10.0.0.2:9876".into();
    let server = start_server(config);
    let addr = http_addr(&server);
    for path in [
        "/rocketmq/nsaddr",
        "/rocketmq/nsaddr-unit1?nofix=1",
        "/rocketmq/other",
        "/rocketmq/",
    ] {
        let (status, body) = get(addr, path).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(body, "10.0.0.1:9876;10.0.0.2:9876\n", "{path}");
    }
    assert_eq!(get(addr, "/nothing-here").await.0, 404);
    server.stop().await;

    // With no list: the server's own (specific) remoting address.
    let server = start_server(http_config());
    let (status, body) = get(http_addr(&server), "/rocketmq/nsaddr").await;
    assert_eq!(status, 200);
    assert_eq!(body, format!("{}\n", server.local_addr()));
    server.stop().await;
}

#[actix::test]
async fn the_status_page_and_api_name_every_cluster_and_broker() {
    let server = start_server(http_config());
    let mut conn = connect(&server).await;
    let mut broker = FakeBroker::master("page-<b>", 10913, &["PageTopic", "Other"]);
    broker.cluster = "PageCluster".into();
    // A 4.9.4 broker: the frame's `version` is its software version.
    let register = broker.register().with_version(version::V4_9_4);
    assert_eq!(conn.request(register).await.expect("answer").code, 0);
    // A heartbeat carries the sender's version too (5.3.3 here) but does not change the shown one.
    assert_eq!(
        conn.request(broker.heartbeat()).await.expect("answer").code,
        0
    );
    let (status, page) = get(http_addr(&server), "/").await;
    assert_eq!(status, 200);
    assert!(page.contains("PageCluster"));
    assert!(page.contains("page-&lt;b&gt;"), "names are escaped");
    assert!(page.contains("PageTopic"));
    assert!(page.contains(&broker.addr));
    assert!(page.contains("<th>RocketMQ version</th>"), "{page}");
    assert!(
        page.contains("<td class=\"version\">V4_9_4 (401)</td>"),
        "{page}"
    );
    let api = api_status(&server, "/api/status?topic=pagetop").await;
    assert_eq!(api["clusters"][0]["cluster"], "PageCluster");
    let shown = &api["clusters"][0]["groups"][0]["brokers"][0];
    assert_eq!(shown["role"], "master");
    assert_eq!(shown["version"], 401);
    assert_eq!(shown["version_name"], "V4_9_4");
    assert_eq!(api["topics"]["matched"], 1);

    // Upgraded to 5.3.1, the same broker registers again (same body): the new version shows.
    let register = broker.register().with_version(475);
    assert_eq!(conn.request(register).await.expect("answer").code, 0);
    let api = api_status(&server, "/api/status").await;
    let shown = &api["clusters"][0]["groups"][0]["brokers"][0];
    assert_eq!(
        (&shown["version"], &shown["version_name"]),
        (&475.into(), &"V5_3_1".into())
    );
    let (_, page) = get(http_addr(&server), "/").await;
    assert!(
        page.contains("<td class=\"version\">V5_3_1 (475)</td>"),
        "{page}"
    );
    server.stop().await;
}

async fn api_status(server: &NameServerHandle, path: &str) -> serde_json::Value {
    let (status, api) = get(http_addr(server), path).await;
    assert_eq!(status, 200, "{api}");
    serde_json::from_str(&api).expect("JSON")
}

#[actix::test]
async fn no_http_port_by_default_and_a_port_in_use_stops_start_up() {
    let server = start_server(test_config());
    assert_eq!(server.http_addr(), None);
    server.stop().await;

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("address");
    let mut config = test_config();
    config.http.listen = Some(addr);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    match NameServer::new(config).start(listener) {
        Err(err @ StartError::Http { .. }) => {
            assert!(err.to_string().contains(&addr.to_string()), "{err}");
            assert!(err.to_string().contains("http.listen"), "{err}");
        }
        Err(other) => panic!("unexpected error: {other}"),
        Ok(_) => panic!("started on a port in use"),
    }
}
