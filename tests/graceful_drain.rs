//! Graceful drain (Java's enableShutdownGracefully / shutdownWaitTimeSeconds): during the wait,
//! requests of clients newer than 5.3.1 on connections opened before the stop are answered
//! GO_AWAY (1500) and counted; older clients, and connections opened during the drain, are
//! served as usual; then the server stops and the KV store is on disk.

mod support;

use std::time::{Duration, Instant};

use rmq_namesrv::actors::kv::KvTables;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use support::*;

const GO_AWAY: i32 = 1500;
/// `MQVersion.Version` ordinals: 5.5.0 (newer than 5.3.1) and 4.9.4.
const V5_5_0: i32 = 513;
const V4_9_4: i32 = 401;

fn route_as(version: i32, topic: &str) -> RemotingCommand {
    let mut cmd = route_request(topic);
    cmd.version = version;
    cmd
}

#[actix::test]
async fn a_drain_sends_new_clients_away_serves_old_ones_and_new_connections_then_stops() {
    let mut config = test_config();
    config.server.shutdown_gracefully = true;
    config.server.shutdown_wait = Duration::from_secs(2);
    let kv_path = config.kv.path.clone();
    let server = start_server(config);
    let addr = server.local_addr().to_string();

    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    let mut new_client = connect(&server).await;
    let mut old_client = connect(&server).await;
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "NS")
        .with_ext("key", "k")
        .with_ext("value", "v");
    assert_eq!(new_client.request(put).await.unwrap().code, 0);
    assert_eq!(
        new_client
            .request(route_as(V5_5_0, "T"))
            .await
            .unwrap()
            .code,
        0
    );

    let started = Instant::now();
    let stopping = actix::spawn(server.stop());
    // The drain begins at once; give the connections the message.
    tokio::time::sleep(Duration::from_millis(200)).await;

    for _ in 0..3 {
        let resp = new_client.request(route_as(V5_5_0, "T")).await.unwrap();
        assert_eq!(resp.code, GO_AWAY);
        assert_eq!(resp.remark.as_deref(), Some("please go away"));
    }
    let resp = old_client.request(route_as(V4_9_4, "T")).await.unwrap();
    assert_eq!(resp.code, 0, "a 4.9.4 client is served during the drain");
    // A 5.x client that reconnects, as the Java client does after GO_AWAY, is served.
    let mut reconnected = rmq_namesrv::tools::client::Client::connect(&addr, TIMEOUT)
        .await
        .expect("the server still accepts during the drain");
    let resp = reconnected.request(route_as(V5_5_0, "T")).await.unwrap();
    assert_eq!(
        resp.code, 0,
        "a connection opened during the drain is served"
    );

    // Then the server stops, after the wait, with the KV store on disk.
    tokio::time::timeout(Duration::from_secs(15), stopping)
        .await
        .expect("stops after the drain")
        .expect("stop task");
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "waited the drain"
    );
    assert!(reconnected.request(route_as(V5_5_0, "T")).await.is_err());
    let tables = KvTables::load(&kv_path).unwrap();
    assert_eq!(tables.get("NS", "k"), Some("v"));
}

#[actix::test]
async fn the_go_away_answers_are_counted() {
    let mut config = test_config();
    config.server.shutdown_gracefully = true;
    config.server.shutdown_wait = Duration::from_secs(1);
    let server = start_server(config);
    let mut client = connect(&server).await;
    assert_eq!(
        client.request(route_as(V5_5_0, "T")).await.unwrap().code,
        17
    );
    assert_eq!(server.go_away_count().await, 0);
    // Drain only (the stop's first step), to read the count while the server runs.
    let told = server
        .housekeeping()
        .send(rmq_namesrv::actors::messages::DrainAll)
        .await
        .unwrap();
    assert_eq!(told, 1);
    for _ in 0..4 {
        assert_eq!(
            client.request(route_as(V5_5_0, "T")).await.unwrap().code,
            GO_AWAY
        );
    }
    let counted = eventually(TIMEOUT, || async { server.go_away_count().await == 4 }).await;
    assert!(
        counted,
        "{} GO_AWAY answers counted",
        server.go_away_count().await
    );
    server.stop().await;
}

#[actix::test]
async fn without_graceful_shutdown_a_stop_does_not_wait() {
    let server = start_server(test_config());
    let mut client = connect(&server).await;
    assert_eq!(
        client.request(route_as(V5_5_0, "T")).await.unwrap().code,
        17
    );
    let started = Instant::now();
    server.stop().await;
    assert!(started.elapsed() < Duration::from_secs(2));
}
