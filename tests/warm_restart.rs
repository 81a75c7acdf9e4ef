//! Warm restart over TCP (`registry.warm_restart`, docs/route-rules.md#warm-restart): routes
//! written at a graceful stop are answered by the first request after the next start; a broker
//! that registers again is confirmed, one that does not is gone after the grace; snapshots that
//! do not fit are ignored and the server starts empty.

mod support;

use std::path::Path;
use std::time::Duration;

use rmq_namesrv::actors::messages::{GetRouteStats, ListBrokers};
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::RemotingCommand;
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::NameServerHandle;
use support::*;

fn warm_config(dir: &Path) -> Config {
    let mut config = test_config();
    config.registry.warm_restart = true;
    config.registry.snapshot_path = dir.join("routes.json");
    config.registry.restore_grace = Duration::from_secs(2);
    config.registry.scan_interval = Duration::from_millis(200);
    config
}

/// Registers `brokers` with `server` and stops it gracefully.
async fn register_and_stop(server: NameServerHandle, brokers: &[&FakeBroker]) {
    let mut conn = connect(&server).await;
    for broker in brokers {
        let r = conn.request(broker.register()).await.unwrap();
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    server.stop().await;
}

async fn route_code(server: &NameServerHandle, topic: &str) -> (i32, String) {
    let mut client = connect(server).await;
    let r: RemotingCommand = client.request(route_request(topic)).await.unwrap();
    (r.code, body_text(&r))
}

async fn unconfirmed(server: &NameServerHandle) -> usize {
    server
        .routes()
        .send(GetRouteStats)
        .await
        .unwrap()
        .unconfirmed_brokers
}

#[actix::test]
async fn routes_are_served_at_once_after_a_restart_and_confirmed_by_registrations() {
    let dir = test_dir("warm-restart");
    let mut config = warm_config(&dir);
    // Java's needWaitForService would refuse every route for 45 s: restored routes are served.
    config.registry.need_wait_for_service = true;
    let a = FakeBroker::master("broker-a", 10911, &["orders", "payments"]);
    let b = FakeBroker::master("broker-b", 10921, &["orders", "refunds"]);
    register_and_stop(start_server(config.clone()), &[&a, &b]).await;
    assert!(dir.join("routes.json").exists(), "written at the stop");

    config.http.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = start_server(config);
    let (code, body) = route_code(&server, "orders").await;
    assert_eq!(code, 0, "the first request after the start: {body}");
    assert!(
        body.contains("broker-a") && body.contains("broker-b"),
        "{body}"
    );
    assert_eq!(unconfirmed(&server).await, 2);
    let brokers = server.routes().send(ListBrokers).await.unwrap();
    assert!(brokers.iter().all(|b| b.unconfirmed), "{brokers:?}");
    let http = server.http_addr().unwrap();
    assert_eq!(
        support::http::get(http, "/ready", "").await.status,
        200,
        "ready at once"
    );
    let metrics = support::http::get(http, "/metrics", "").await.body;
    assert!(
        metrics.contains("rmq_namesrv_brokers_unconfirmed 2"),
        "{metrics}"
    );
    let status: serde_json::Value =
        serde_json::from_str(&support::http::get(http, "/api/status", "").await.body).unwrap();
    assert_eq!(status["counters"]["unconfirmed_brokers"], 2, "{status}");
    let page = support::http::get(http, "/", "").await.body;
    assert!(
        page.contains("unconfirmed</span>"),
        "the status page marks them"
    );

    // broker-a registers again: confirmed; broker-b does not: gone after the grace (2 s).
    let mut conn = connect(&server).await;
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    assert_eq!(unconfirmed(&server).await, 1);
    let gone = eventually(Duration::from_secs(10), || async {
        !route_code(&server, "orders").await.1.contains("broker-b")
    })
    .await;
    assert!(
        gone,
        "the unconfirmed broker is removed after restore_grace"
    );
    assert_eq!(unconfirmed(&server).await, 0);
    let (code, body) = route_code(&server, "payments").await;
    assert_eq!(code, 0, "{body}");
    assert!(body.contains("broker-a"), "{body}");
    server.stop().await;
}

#[actix::test]
async fn snapshots_that_do_not_fit_are_ignored_and_the_server_starts_empty() {
    let dir = test_dir("warm-restart-bad");
    let config = warm_config(&dir);
    let a = FakeBroker::master("broker-a", 10911, &["orders", "refunds"]);
    register_and_stop(start_server(config.clone()), &[&a]).await;
    let path = dir.join("routes.json");
    let good = std::fs::read_to_string(&path).unwrap();
    let snapshot: serde_json::Value = serde_json::from_str(&good).unwrap();
    let taken = snapshot["taken_at_ms"].as_u64().unwrap();
    let with = |key: &str, value: serde_json::Value| {
        let mut changed = snapshot.clone();
        changed[key] = value;
        changed.to_string()
    };
    let cases = [
        ("truncated", good[..good.len() / 2].to_owned()),
        (
            "from the future",
            with("taken_at_ms", (taken + 3_600_000).into()),
        ),
        (
            "older than the expiry",
            with("taken_at_ms", (taken - 600_000).into()),
        ),
        ("of another format", with("format", 99.into())),
        ("not JSON at all", "\u{0}\u{1}garbage".to_owned()),
    ];
    for (case, text) in cases {
        std::fs::write(&path, text).unwrap();
        let server = start_server(config.clone());
        let (code, body) = route_code(&server, "orders").await;
        assert_eq!(code, 17, "{case}: starts empty: {body}");
        assert_eq!(unconfirmed(&server).await, 0, "{case}");
        server.stop().await;
    }
    // The file as it was is restored again.
    std::fs::write(&path, good).unwrap();
    let server = start_server(config);
    assert_eq!(route_code(&server, "orders").await.0, 0);
    server.stop().await;
}

#[actix::test]
async fn without_warm_restart_a_restart_is_empty_and_nothing_is_written() {
    let dir = test_dir("warm-restart-off");
    let mut config = warm_config(&dir);
    config.registry.warm_restart = false;
    let a = FakeBroker::master("broker-a", 10911, &["orders", "refunds"]);
    register_and_stop(start_server(config.clone()), &[&a]).await;
    assert!(!dir.join("routes.json").exists());
    let server = start_server(config);
    assert_eq!(route_code(&server, "orders").await.0, 17);
    server.stop().await;
}

#[actix::test]
async fn the_tables_are_written_periodically_so_a_crash_loses_at_most_one_interval() {
    let dir = test_dir("warm-restart-periodic");
    let mut config = warm_config(&dir);
    config.registry.snapshot_interval = Duration::from_secs(1);
    let running = start_server(config.clone());
    let mut conn = connect(&running).await;
    let a = FakeBroker::master("broker-a", 10911, &["orders", "refunds"]);
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    let path = dir.join("routes.json");
    let written = eventually(Duration::from_secs(10), || async {
        std::fs::read_to_string(&path).is_ok_and(|t| t.contains("broker-a"))
    })
    .await;
    assert!(written, "a periodic snapshot within snapshot_interval");
    // A second server started from the file while the first still runs (as after a crash of
    // the first, whose stop never wrote anything).
    let restarted = start_server(config);
    assert_eq!(route_code(&restarted, "orders").await.0, 0);
    restarted.stop().await;
    running.stop().await;
}
