//! Route queries are answered from the connection threads' caches; a route change must be visible
//! on every thread before the reply to the request that caused it. Each test warms the caches of
//! several connections spread over two worker threads, makes one change, and asks again on every
//! connection right after the change's reply: register, unregister, expiry, write permission,
//! topic deletion, the ORDER_TOPIC_CONFIG KV value; and a closed broker connection (no reply to
//! wait for: its change reaches every thread at once after the close).

mod support;

use std::time::{Duration, Instant};

use rmq_namesrv::actors::messages::RunScan;
use rmq_namesrv::protocol::body::TopicRouteData;
use rmq_namesrv::protocol::fastjson;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::*;

/// Readers on both worker threads (connections are spread round robin).
const READERS: usize = 6;

fn start() -> NameServerHandle {
    let mut config = test_config();
    config.server.workers = 2;
    config.registry.order_message_enable = true;
    start_server(config)
}

async fn readers(server: &NameServerHandle) -> Vec<Client> {
    let mut out = Vec::new();
    for _ in 0..READERS {
        out.push(connect(server).await);
    }
    out
}

/// The route of `topic` as each reader sees it now (`None`: TOPIC_NOT_EXIST).
async fn routes(readers: &mut [Client], topic: &str) -> Vec<Option<TopicRouteData>> {
    let mut out = Vec::new();
    for reader in readers.iter_mut() {
        let resp = reader.request(route_request(topic)).await.expect("answer");
        out.push(match resp.code {
            0 => Some(fastjson::from_slice(resp.body_bytes()).expect("route body")),
            17 => None,
            other => panic!("unexpected code {other}"),
        });
    }
    out
}

/// Asks twice on every reader, so every thread's cache holds the route.
async fn warm(readers: &mut [Client], topic: &str) -> TopicRouteData {
    routes(readers, topic).await;
    let seen = routes(readers, topic).await;
    let first = seen[0].clone().expect("route exists");
    assert!(seen.iter().all(|r| r.as_ref() == Some(&first)));
    first
}

fn brokers(route: &Option<TopicRouteData>) -> Vec<String> {
    route.as_ref().map_or_else(Vec::new, |r| {
        r.broker_datas
            .iter()
            .map(|b| b.broker_name.clone())
            .collect()
    })
}

#[actix::test]
async fn registration_and_unregistration_are_seen_everywhere_before_their_reply() {
    let server = start();
    let mut conn = connect(&server).await;
    let a = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    let mut readers = readers(&server).await;
    warm(&mut readers, "T").await;

    let b = FakeBroker::master("broker-b", 10921, &["T", "U"]);
    let mut b_conn = connect(&server).await;
    assert_eq!(b_conn.request(b.register()).await.unwrap().code, 0);
    for route in routes(&mut readers, "T").await {
        assert_eq!(brokers(&route), ["broker-a", "broker-b"]);
    }

    assert_eq!(b_conn.request(b.unregister()).await.unwrap().code, 0);
    for route in routes(&mut readers, "T").await {
        assert_eq!(brokers(&route), ["broker-a"]);
    }
    server.stop().await;
}

#[actix::test]
async fn expiry_permission_and_deletion_are_seen_everywhere_before_their_reply() {
    let server = start();
    let mut conn = connect(&server).await;
    let a = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    let mut slow = a.clone();
    slow.name = "broker-s".into();
    slow.addr = "127.0.0.1:10931".into();
    slow.heartbeat_timeout_millis = Some(1000);
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    let mut slow_conn = connect(&server).await;
    assert_eq!(slow_conn.request(slow.register()).await.unwrap().code, 0);
    let mut readers = readers(&server).await;
    assert_eq!(
        brokers(&Some(warm(&mut readers, "T").await)),
        ["broker-a", "broker-s"]
    );

    // Expiry: the scan's answer comes after every thread dropped the route.
    server
        .housekeeping()
        .send(RunScan {
            now: Instant::now() + Duration::from_secs(10),
        })
        .await
        .unwrap();
    for route in routes(&mut readers, "T").await {
        assert_eq!(brokers(&route), ["broker-a"]);
    }

    // Write permission.
    warm(&mut readers, "T").await;
    let wipe = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "broker-a");
    assert_eq!(conn.request(wipe).await.unwrap().code, 0);
    for route in routes(&mut readers, "T").await {
        assert_eq!(route.expect("route").queue_datas[0].perm, 4);
    }

    // Deletion.
    warm(&mut readers, "U").await;
    let delete =
        RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "U");
    assert_eq!(conn.request(delete).await.unwrap().code, 0);
    assert!(routes(&mut readers, "U").await.iter().all(Option::is_none));
    server.stop().await;
}

#[actix::test]
async fn order_topic_config_is_seen_everywhere_before_the_kv_reply() {
    let server = start();
    let mut conn = connect(&server).await;
    let a = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    let mut readers = readers(&server).await;
    assert_eq!(warm(&mut readers, "T").await.order_topic_conf, None);
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "ORDER_TOPIC_CONFIG")
        .with_ext("key", "T")
        .with_ext("value", "broker-a:4");
    assert_eq!(conn.request(put).await.unwrap().code, 0);
    for route in routes(&mut readers, "T").await {
        assert_eq!(
            route.expect("route").order_topic_conf.as_deref(),
            Some("broker-a:4")
        );
    }
    server.stop().await;
}

#[actix::test]
async fn a_closed_broker_connection_leaves_every_thread() {
    let server = start();
    let mut keep = connect(&server).await;
    let a = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(keep.request(a.register()).await.unwrap().code, 0);
    let b = FakeBroker::master("broker-b", 10921, &["T", "U"]);
    let mut b_conn = connect(&server).await;
    assert_eq!(b_conn.request(b.register()).await.unwrap().code, 0);
    let mut readers = readers(&server).await;
    warm(&mut readers, "T").await;
    drop(b_conn);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut gone = false;
    while !gone && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        gone = routes(&mut readers, "T")
            .await
            .iter()
            .all(|r| brokers(r) == ["broker-a"]);
    }
    assert!(gone, "every thread dropped broker-b's route");
    server.stop().await;
}
