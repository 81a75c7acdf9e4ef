//! A registration or unregistration of a large topic table is walked in slices on the registry
//! (docs/actors.md#large-registrations): questions are answered between slices, and a change
//! that arrives meanwhile waits its turn, so changes still apply in arrival order. Over TCP.

mod support;

use std::time::{Duration, Instant};

use rmq_namesrv::actors::messages::GetRouteStats;
use rmq_namesrv::protocol::RemotingCommand;
use rmq_namesrv::protocol::RequestCode;
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::*;

const TOPIC_NOT_EXIST: i32 = 17;
const SLOW: Duration = Duration::from_secs(60);

fn cluster_info() -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO)
}

async fn slow_client(server: &NameServerHandle) -> Client {
    Client::connect(&server.local_addr().to_string(), SLOW)
        .await
        .expect("connect")
}

async fn shows_group(client: &mut Client, name: &str) -> bool {
    let resp = client.request(cluster_info()).await.expect("cluster info");
    assert_eq!(resp.code, 0);
    body_text(&resp).contains(&format!("\"{name}\""))
}

#[actix::test]
async fn a_change_during_a_large_registration_waits_its_turn() {
    let mut config = test_config();
    config.server.workers = 2;
    let server = start_server(config);
    let mut waited = false;
    for (attempt, topics) in [30_000usize, 60_000, 90_000].into_iter().enumerate() {
        let name = format!("big-{attempt}");
        let names: Vec<String> = (0..topics)
            .map(|i| format!("Big{attempt}Topic{i:06}"))
            .collect();
        let port = 20_000 + u16::try_from(attempt).expect("few attempts");
        let broker = FakeBroker::new("DefaultCluster", &name, 0, port, names.clone());
        let before = server.routes().send(GetRouteStats).await.expect("stats");

        let mut registrar = slow_client(&server).await;
        let register = broker.register();
        let registering = tokio::spawn(async move { registrar.request(register).await });

        // Once the group shows (the registration's first part is applied), unregister it from
        // another connection. The cluster view is answered while the topics are walked.
        let mut watcher = slow_client(&server).await;
        let deadline = Instant::now() + SLOW;
        while !shows_group(&mut watcher, &name).await {
            assert!(Instant::now() < deadline, "the group never showed");
        }
        let mut other = slow_client(&server).await;
        let unregistered = other.request(broker.unregister()).await.expect("answer");
        assert_eq!(unregistered.code, 0, "{:?}", unregistered.remark);
        let registered = registering.await.expect("joined").expect("answer");
        assert_eq!(registered.code, 0, "{:?}", registered.remark);

        // The unregistration ran after the whole registration: nothing of the broker is left,
        // on either worker thread.
        for topic in [&names[0], &names[topics / 2], &names[topics - 1]] {
            for _ in 0..2 {
                let mut reader = connect(&server).await;
                let resp = reader.request(route_request(topic)).await.expect("answer");
                assert_eq!(resp.code, TOPIC_NOT_EXIST, "{topic} still routed");
            }
        }
        assert!(!shows_group(&mut watcher, &name).await);

        let after = server.routes().send(GetRouteStats).await.expect("stats");
        assert!(
            after.sliced_changes >= before.sliced_changes + 2,
            "both the registration and the unregistration were walked in slices"
        );
        assert_eq!(after.topics, 0);
        if after.waited_changes > before.waited_changes {
            waited = true;
            break;
        }
    }
    assert!(
        waited,
        "in no attempt did the unregistration arrive during the registration's walk"
    );
}

#[actix::test]
async fn a_broker_whose_connection_closes_during_its_registration_is_gone_after_it() {
    let mut config = test_config();
    config.server.workers = 2;
    let server = start_server(config);
    let names: Vec<String> = (0..40_000).map(|i| format!("Closing{i:06}")).collect();
    let broker = FakeBroker::new("DefaultCluster", "closing", 0, 21_000, names.clone());
    let mut registrar = slow_client(&server).await;
    registrar
        .oneway(broker.register())
        .await
        .expect("registration sent");
    let mut watcher = slow_client(&server).await;
    let deadline = Instant::now() + SLOW;
    while !shows_group(&mut watcher, "closing").await {
        assert!(Instant::now() < deadline, "the group never showed");
    }
    drop(registrar);
    // The close waits for the walk, then removes every topic.
    assert!(
        eventually(SLOW, || {
            let routes = server.routes().clone();
            async move {
                routes
                    .send(GetRouteStats)
                    .await
                    .is_ok_and(|s| s.topics == 0 && s.live_brokers == 0)
            }
        })
        .await,
        "the closed broker's topics stayed"
    );
    let mut reader = connect(&server).await;
    let resp = reader
        .request(route_request(&names[names.len() - 1]))
        .await
        .expect("answer");
    assert_eq!(resp.code, TOPIC_NOT_EXIST);
}

#[actix::test]
async fn brokers_whose_connections_close_together_are_swept_together() {
    const GROUPS: usize = 40;
    let mut config = test_config();
    config.server.workers = 2;
    let server = start_server(config);
    // Every group serves the same topics, more than one slice of the table.
    let names: Vec<String> = (0..4_500).map(|i| format!("Shared{i:05}")).collect();
    let mut connections = Vec::new();
    for g in 0..GROUPS {
        let port = 22_000 + u16::try_from(g).expect("few groups");
        let broker = FakeBroker::new("DefaultCluster", &format!("g{g}"), 0, port, names.clone());
        let mut conn = slow_client(&server).await;
        let resp = conn.request(broker.register()).await.expect("answer");
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
        connections.push(conn);
    }
    let before = server.routes().send(GetRouteStats).await.expect("stats");
    assert_eq!((before.topics, before.live_brokers), (names.len(), GROUPS));
    drop(connections);
    assert!(
        eventually(SLOW, || {
            let routes = server.routes().clone();
            async move {
                routes
                    .send(GetRouteStats)
                    .await
                    .is_ok_and(|s| s.topics == 0 && s.live_brokers == 0)
            }
        })
        .await,
        "brokers or topics of the closed connections stayed"
    );
    // The closes that came while the registry swept the first ones were swept together
    // (Java batches unregistrations too): far fewer walks of the table than brokers.
    let after = server.routes().send(GetRouteStats).await.expect("stats");
    let sweeps = after.sliced_changes - before.sliced_changes;
    assert!(
        sweeps >= 1 && sweeps <= GROUPS as u64 / 2,
        "{sweeps} sweeps for {GROUPS} closes"
    );
    let mut reader = connect(&server).await;
    let resp = reader
        .request(route_request(&names[0]))
        .await
        .expect("answer");
    assert_eq!(resp.code, TOPIC_NOT_EXIST);
}

#[actix::test]
async fn a_split_registration_round_sent_again_is_not_decoded_again() {
    use rmq_namesrv::actors::messages::GetRegistryMetrics;
    let server = start_server(test_config());
    let names: Vec<String> = (0..2_410).map(|i| format!("SplitTopic{i:05}")).collect();
    let broker = FakeBroker::new("DefaultCluster", "split", 0, 23_000, names.clone());
    // 800 topics a part, as a 5.x broker with enableSplitRegistration sends them: the last
    // part, the rest, is small.
    let round = broker.register_split(800);
    assert_eq!(round.len(), 4);
    assert!(round[3].body_bytes().len() < 64 * 1024);
    let mut conn = slow_client(&server).await;
    let counters = || {
        let routes = server.routes().clone();
        async move {
            routes
                .send(GetRegistryMetrics)
                .await
                .expect("metrics")
                .counters
        }
    };
    for _ in 0..2 {
        for part in &round {
            let resp = conn.request(part.clone()).await.expect("answer");
            assert_eq!(resp.code, 0, "{:?}", resp.remark);
        }
    }
    let first = counters().await;
    assert_eq!(first.registrations_unchanged_body, 4, "{first:?}");
    // Every topic of every part is routed after both rounds.
    let mut reader = connect(&server).await;
    for topic in [&names[0], &names[1_600], &names[2_409]] {
        let resp = reader.request(route_request(topic)).await.expect("answer");
        assert_eq!(resp.code, 0, "{topic}");
    }
    // A part under a new data version is decoded and applied.
    let mut changed = broker.clone();
    changed.topics = names[..800].to_vec();
    changed.topics.push("SplitTopicAdded".to_owned());
    changed.version.counter += 1;
    let resp = conn.request(changed.register()).await.expect("answer");
    assert_eq!(resp.code, 0);
    let resp = reader
        .request(route_request("SplitTopicAdded"))
        .await
        .expect("answer");
    assert_eq!(resp.code, 0);
}
