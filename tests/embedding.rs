//! The embedding API: typed messages to the actors, supervised restarts, several NameServers in
//! one process, and the simulated broker/client fixtures.

mod support;

use std::time::Duration;

use rmq_namesrv::actors::messages::GetKvConfig;
use rmq_namesrv::actors::messages::{GetRouteStats, ListBrokers, QueryRoute, Restart};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::sim::{SimBroker, SimBrokerSpec, SimClient, SimClientSpec};
use support::*;

#[actix::test]
async fn typed_messages_for_applications() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let master = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);
    conn.request(master.register()).await.unwrap();

    let route = server
        .routes()
        .send(QueryRoute {
            topic: "TopicTest".into(),
        })
        .await
        .unwrap()
        .expect("route");
    assert_eq!(route.broker_datas[0].broker_addrs[&0], "127.0.0.1:10911");
    assert!(server
        .routes()
        .send(QueryRoute { topic: "x".into() })
        .await
        .unwrap()
        .is_none());

    let brokers = server.routes().send(ListBrokers).await.unwrap();
    assert_eq!(brokers.len(), 1);
    assert_eq!(brokers[0].name.as_deref(), Some("broker-a"));
    assert_eq!(
        (brokers[0].id, brokers[0].addr.as_str()),
        (Some(0), "127.0.0.1:10911")
    );
    assert!(brokers[0].since_last_update < Duration::from_secs(5));

    let stats = server.routes().send(GetRouteStats).await.unwrap();
    assert_eq!(
        (
            stats.topics,
            stats.broker_groups,
            stats.clusters,
            stats.live_brokers
        ),
        (2, 1, 1, 1)
    );
    server.stop().await;
}

#[actix::test]
async fn registry_restart_is_supervised_and_brokers_rebuild_routes() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);
    conn.request(broker.register()).await.unwrap();
    assert_eq!(
        conn.request(route_request("TopicTest")).await.unwrap().code,
        0
    );

    // Stop the registry on purpose: its supervisor restarts it, with empty (soft) route tables.
    server.routes().send(Restart).await.unwrap();
    let stats = server.routes().send(GetRouteStats).await.unwrap();
    assert_eq!(stats.topics, 0, "routes are soft state");
    // The same address keeps working: connections never noticed. (The worker threads' route
    // caches hear of the restart by message, so the empty tables may show a moment later.)
    let mut answers = Vec::new();
    for _ in 0..100 {
        let code = conn.request(route_request("TopicTest")).await.unwrap().code;
        answers.push(code);
        if code == 17 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(answers.last(), Some(&17), "{answers:?}");
    // The broker's next registration brings everything back.
    assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);
    assert_eq!(
        conn.request(route_request("TopicTest")).await.unwrap().code,
        0
    );

    // With a real registration loop, nothing has to be done at all.
    let mut spec = SimBrokerSpec::new(
        "DefaultCluster",
        "broker-sim",
        0,
        10921,
        vec!["SimTopic".into(), "SimTopic2".into()],
        vec![server.local_addr().to_string()],
    );
    spec.register_interval = Duration::from_millis(200);
    let mut sim = SimBroker::spawn(spec);
    assert!(sim.registered(1, TIMEOUT).await);
    server.routes().send(Restart).await.unwrap();
    assert!(
        eventually(TIMEOUT, || async {
            let route = server
                .routes()
                .send(QueryRoute {
                    topic: "SimTopic".into(),
                })
                .await;
            matches!(route, Ok(Some(_)))
        })
        .await,
        "the simulated broker's next registration restores its routes"
    );
    sim.stop(true).await;
    server.stop().await;
}

#[actix::test]
async fn kv_restart_reloads_the_file() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "ns")
        .with_ext("key", "k")
        .with_ext("value", "persisted");
    assert_eq!(conn.request(put).await.unwrap().code, 0);
    server.kv().send(Restart).await.unwrap();
    let value = server
        .kv()
        .send(GetKvConfig {
            namespace: Some("ns".into()),
            key: Some("k".into()),
        })
        .await
        .unwrap();
    assert_eq!(value.map(|v| v.0), Ok("persisted".to_owned()));
    server.stop().await;
}

#[actix::test]
async fn several_name_servers_in_one_process() {
    let a = start_server(test_config());
    let b = start_server(test_config());
    let namesrv = vec![a.local_addr().to_string(), b.local_addr().to_string()];
    let mut master = SimBroker::spawn(SimBrokerSpec::new(
        "DefaultCluster",
        "broker-a",
        0,
        10911,
        vec!["T1".into(), "T2".into()],
        namesrv.clone(),
    ));
    let mut slave = SimBroker::spawn(SimBrokerSpec::new(
        "DefaultCluster",
        "broker-a",
        1,
        10921,
        vec!["T1".into(), "T2".into()],
        namesrv.clone(),
    ));
    assert!(master.registered(1, TIMEOUT).await);
    assert!(slave.registered(1, TIMEOUT).await);
    for server in [&a, &b] {
        let brokers = server.routes().send(ListBrokers).await.unwrap();
        assert_eq!(brokers.len(), 2, "each NameServer has its own tables");
    }

    // A simulated client sees the routes through either server.
    let client = SimClient::spawn(SimClientSpec {
        namesrv: namesrv.clone(),
        topics: vec!["T1".into(), "T2".into()],
        interval: Duration::from_millis(10),
        timeout: TIMEOUT,
        tls: None,
    });
    let queried = eventually(TIMEOUT, || async { client.stats().found >= 10 }).await;
    assert!(queried, "{:?}", client.stats());
    assert_eq!(client.stats().errors, 0);
    client.stop().await;

    // Stopping one NameServer leaves the other untouched.
    a.stop().await;
    assert_eq!(b.routes().send(ListBrokers).await.unwrap().len(), 2);
    // The master is killed: server b drops it at once (connection close).
    master.stop(false).await;
    assert!(
        eventually(TIMEOUT, || async {
            b.routes().send(ListBrokers).await.map(|l| l.len()) == Ok(1)
        })
        .await
    );
    // The slave shuts down gracefully: it unregisters.
    slave.stop(true).await;
    assert_eq!(b.routes().send(ListBrokers).await.unwrap().len(), 0);
    b.stop().await;
}
