//! A panic in an actor's handler is contained: the actor is reset as a supervised restart would
//! reset it, the panic is counted in the health report, and the server keeps answering over TCP.
//! Faults are injected with the FAULT_INJECTION request code, which exists only in builds with
//! debug assertions (tests); one per actor. A panic that cannot be contained (the listener's, on
//! purpose) shows in the health report without taking the host process down.

mod support;

use std::time::Duration;

use rmq_namesrv::actors::dispatch::FAULT_INJECTION;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::*;

async fn inject(conn: &mut Client, actor: &str) {
    let resp = conn
        .request(RemotingCommand::request(FAULT_INJECTION).with_ext("actor", actor))
        .await
        .expect("answer");
    assert_eq!(resp.code, 0, "fault into {actor}: {:?}", resp.remark);
}

/// Waits until the health report counts `panics` for the actor named `actor`.
async fn panics_reach(server: &NameServerHandle, actor: &str, panics: u64) {
    let counted = eventually(TIMEOUT, || async {
        let health = server.health().await;
        health
            .actors
            .iter()
            .any(|a| a.actor == actor && a.panics >= panics)
    })
    .await;
    let health = server.health().await;
    assert!(
        counted,
        "{actor} never counted {panics} panic(s): {health:?}"
    );
    assert!(health.serving(), "every actor alive: {health:?}");
}

async fn route_code(conn: &mut Client, topic: &str) -> i32 {
    conn.request(route_request(topic))
        .await
        .expect("answer")
        .code
}

#[actix::test]
async fn a_registry_panic_resets_the_routes_and_the_registry_keeps_serving() {
    let mut config = test_config();
    config.server.workers = 2;
    let server = start_server(config);
    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    let r = broker_conn.request(broker.register()).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    // Readers on both worker threads have the route cached.
    let mut readers = vec![connect(&server).await, connect(&server).await];
    for reader in &mut readers {
        assert_eq!(route_code(reader, "T").await, 0);
        assert_eq!(route_code(reader, "T").await, 0);
    }

    let mut admin = connect(&server).await;
    inject(&mut admin, "registry").await;
    panics_reach(&server, "route registry", 1).await;

    // As after a restart: the tables are empty, on every thread's cache too ...
    for reader in &mut readers {
        assert_eq!(route_code(reader, "T").await, 17, "TOPIC_NOT_EXIST");
    }
    let info = admin
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO,
        ))
        .await
        .unwrap();
    assert_eq!(info.code, 0);
    // ... and the next registration brings the route back.
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    for reader in &mut readers {
        assert_eq!(route_code(reader, "T").await, 0);
    }
    server.stop().await;
}

#[actix::test]
async fn a_kv_panic_reloads_the_file_and_keeps_every_acknowledged_write() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let put = |key: &str, value: &str| {
        RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "NS")
            .with_ext("key", key)
            .with_ext("value", value)
    };
    let get = |key: &str| {
        RemotingCommand::request(RequestCode::GET_KV_CONFIG)
            .with_ext("namespace", "NS")
            .with_ext("key", key)
    };
    assert_eq!(conn.request(put("a", "1")).await.unwrap().code, 0);

    inject(&mut conn, "kv").await;
    panics_reach(&server, "KV store", 1).await;

    let got = conn.request(get("a")).await.unwrap();
    assert_eq!(got.code, 0);
    assert_eq!(got.ext("value"), Some("1"), "acknowledged before the panic");
    assert_eq!(conn.request(put("b", "2")).await.unwrap().code, 0);
    let got = conn.request(get("b")).await.unwrap();
    assert_eq!(got.ext("value"), Some("2"));
    server.stop().await;
}

/// Found by bench/soak.sh: a KV panic while a save ran let a second save start beside it; the
/// two raced on the temporary file, leaving it empty or torn. Writers and panics at once: the
/// file parses whenever it is read, and every acknowledged write is in it at the end.
#[actix::test]
async fn kv_panics_during_saves_never_tear_the_file_or_lose_acknowledged_writes() {
    let config = test_config();
    let path = config.kv.path.clone();
    let server = start_server(config);
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let addr = server.local_addr().to_string();
            actix::spawn(async move {
                let mut conn = Client::connect(&addr, TIMEOUT).await.expect("connect");
                let mut acked = Vec::new();
                for i in 0..60 {
                    let key = format!("w{w}-k{i}");
                    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                        .with_ext("namespace", "NS")
                        .with_ext("key", &key)
                        .with_ext("value", "v".repeat(4000));
                    if conn.request(put).await.is_ok_and(|r| r.code == 0) {
                        acked.push(key);
                    }
                }
                acked
            })
        })
        .collect();
    let mut faults = connect(&server).await;
    let mut unparsable = 0;
    for _ in 0..60 {
        inject(&mut faults, "kv").await;
        for _ in 0..5 {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if serde_json::from_str::<serde_json::Value>(&text).is_err() {
                    unparsable += 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let mut acked = Vec::new();
    for writer in writers {
        acked.extend(writer.await.expect("writer"));
    }
    assert!(!acked.is_empty());
    assert_eq!(unparsable, 0, "the KV file was torn");
    server.stop().await;
    let text = std::fs::read_to_string(&path).expect("KV file");
    let table: serde_json::Value = serde_json::from_str(&text).expect("the KV file parses");
    let ns = &table["configTable"]["NS"];
    let missing: Vec<&String> = acked
        .iter()
        .filter(|k| ns.get(k.as_str()).is_none())
        .collect();
    assert!(missing.is_empty(), "acknowledged and missing: {missing:?}");
}

#[actix::test]
async fn a_housekeeping_panic_keeps_connection_closes_unregistering_brokers() {
    let server = start_server(test_config());
    let mut admin = connect(&server).await;
    inject(&mut admin, "housekeeping").await;
    panics_reach(&server, "housekeeping", 1).await;

    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    assert_eq!(route_code(&mut admin, "T").await, 0);
    drop(broker_conn);
    let gone = eventually(TIMEOUT, || async {
        let mut conn = connect(&server).await;
        route_code(&mut conn, "T").await == 17
    })
    .await;
    assert!(gone, "the broker of a closed connection is unregistered");
    server.stop().await;
}

#[actix::test]
async fn a_runtime_config_panic_keeps_the_configuration() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let get = || RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG);
    let before = conn.request(get()).await.unwrap();
    assert_eq!(before.code, 0);

    inject(&mut conn, "runtime_config").await;
    panics_reach(&server, "runtime config", 1).await;

    let after = conn.request(get()).await.unwrap();
    assert_eq!(after.code, 0);
    assert_eq!(body_text(&after), body_text(&before));
    let update = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG)
        .with_body(b"orderMessageEnable=true".to_vec());
    assert_eq!(conn.request(update).await.unwrap().code, 0);
    let updated = conn.request(get()).await.unwrap();
    assert!(body_text(&updated).contains("orderMessageEnable=true"));
    server.stop().await;
}

#[actix::test]
async fn a_product_env_panic_keeps_cluster_test_lookups_working() {
    let product = start_server(test_config());
    let mut product_conn = connect(&product).await;
    let broker = FakeBroker::master("broker-p", 10911, &["ProductTopic", "ProductTopic2"]);
    assert_eq!(
        product_conn.request(broker.register()).await.unwrap().code,
        0
    );

    let mut config = test_config();
    config.cluster_test.enabled = true;
    config.cluster_test.product_env_namesrv = product.local_addr().to_string();
    let server = start_server(config);
    let mut conn = connect(&server).await;
    assert_eq!(route_code(&mut conn, "ProductTopic").await, 0);

    inject(&mut conn, "product_env").await;
    panics_reach(&server, "product env", 1).await;
    assert_eq!(route_code(&mut conn, "ProductTopic").await, 0);
    server.stop().await;
    product.stop().await;
}

#[actix::test]
async fn a_route_cache_keeper_panic_drops_that_threads_cache_and_it_stays_correct() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let a = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(conn.request(a.register()).await.unwrap().code, 0);
    assert_eq!(route_code(&mut conn, "T").await, 0);

    inject(&mut conn, "route_cache").await;
    panics_reach(&server, "route cache keeper", 1).await;

    // Still answered, and still told of changes.
    assert_eq!(route_code(&mut conn, "T").await, 0);
    let b = FakeBroker::master("broker-b", 10921, &["T", "U"]);
    assert_eq!(conn.request(b.register()).await.unwrap().code, 0);
    let route = conn.request(route_request("T")).await.unwrap();
    assert!(body_text(&route).contains("broker-b"));
    server.stop().await;
}

#[actix::test]
async fn a_panic_in_a_connection_closes_only_that_connection_and_unregisters_its_broker() {
    let server = start_server(test_config());
    let mut witness = connect(&server).await;
    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    assert_eq!(route_code(&mut witness, "T").await, 0);

    // The connection panics while handling the request: no answer, the socket closes.
    let died = broker_conn
        .request(RemotingCommand::request(FAULT_INJECTION).with_ext("actor", "connection"))
        .await;
    assert!(died.is_err(), "no answer from a connection that panicked");
    let mut unregistered = false;
    for _ in 0..250 {
        if route_code(&mut witness, "T").await == 17 {
            unregistered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(unregistered, "its broker is unregistered as on any close");
    assert!(
        eventually(TIMEOUT, || async { server.open_connections().await == 1 }).await,
        "only the witness is left"
    );
    assert!(server.health().await.serving());
    server.stop().await;
}

#[actix::test]
async fn a_panic_that_cannot_be_contained_shows_in_health_and_spares_the_host() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    assert!(server.health().await.serving());
    inject(&mut conn, "listener").await;
    let lost = eventually(TIMEOUT, || async { !server.health().await.serving() }).await;
    assert!(lost, "the lost listener shows in the health report");
    let health = server.health().await;
    assert!(health
        .actors
        .iter()
        .any(|a| a.actor == "listener" && !a.alive));
    // The host process and the connections already open go on.
    assert_eq!(route_code(&mut conn, "T").await, 17);
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.stop().await;
}

#[actix::test]
async fn every_injection_is_counted_and_the_server_stays_healthy() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    for _ in 0..3 {
        inject(&mut conn, "registry").await;
        inject(&mut conn, "kv").await;
    }
    panics_reach(&server, "route registry", 3).await;
    panics_reach(&server, "KV store", 3).await;
    let health = server.health().await;
    assert!(health.panics() >= 6, "{health:?}");
    assert_eq!(route_code(&mut conn, "T").await, 17);
    server.stop().await;
}
