//! The route path over TCP against the real server: register, route, heartbeat, expiry,
//! connection close, master/slave, both header serializations.

mod support;

use std::time::{Duration, Instant};

use rmq_namesrv::actors::messages::RunScan;
use rmq_namesrv::protocol::body::{ClusterInfo, DataVersion, TopicRouteData};
use rmq_namesrv::protocol::fastjson;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode, SerializeType};
use rmq_namesrv::tools::broker::FakeBroker;
use support::*;

#[actix::test]
async fn register_route_heartbeat_expiry_and_close() {
    let server = start_server(test_config());
    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["TopicTest", "Other"]);

    let resp = broker_conn.request(broker.register()).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(
        resp.ext_fields.as_ref().map(|f| f.len()),
        Some(0),
        "master gets empty ext fields"
    );
    assert_eq!(resp.body, None, "no ORDER_TOPIC_CONFIG namespace yet");
    assert_eq!(resp.version, 513, "Java 5.5.0's version by default");

    // A Java 5.x client gets standard JSON.
    let mut client = connect(&server).await;
    let resp = client.request(route_request("TopicTest")).await.unwrap();
    assert_eq!(resp.code, 0);
    assert_eq!(
        body_text(&resp),
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    // A Go client (version 317) gets the legacy form.
    let resp = client
        .request(route_request("TopicTest").with_version(317))
        .await
        .unwrap();
    assert!(
        body_text(&resp).contains(r#"{0:"127.0.0.1:10911"}"#),
        "{}",
        body_text(&resp)
    );

    // Unknown topic: Java's code and remark.
    let resp = client.request(route_request("Nope")).await.unwrap();
    assert_eq!(resp.code, 17);
    assert_eq!(
        resp.remark.as_deref(),
        Some("No topic route info in name server for the topic: Nope\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")
    );
    assert_eq!(resp.body, None);

    // Heartbeat (oneway, like acting-master brokers send it): no reply, liveness refreshed.
    broker_conn.oneway(broker.heartbeat()).await.unwrap();
    let resp = broker_conn.request(broker.heartbeat()).await.unwrap();
    assert_eq!((resp.code, resp.ext_fields.is_none()), (0, true));

    // Not expired 100 s from now, expired 121 s from now; the broker's connection is closed.
    let expired = server
        .housekeeping()
        .send(RunScan {
            now: Instant::now() + Duration::from_secs(100),
        })
        .await
        .unwrap();
    assert!(expired.is_empty());
    let expired = server
        .housekeeping()
        .send(RunScan {
            now: Instant::now() + Duration::from_secs(121),
        })
        .await
        .unwrap();
    assert_eq!(expired.len(), 1);
    assert_eq!(
        client
            .request(route_request("TopicTest"))
            .await
            .unwrap()
            .code,
        17
    );
    assert!(
        broker_conn.request(broker.heartbeat()).await.is_err(),
        "the expired broker's connection is closed"
    );

    // Registers again on a new connection, then the connection closes: routes go at once.
    let mut broker_conn = connect(&server).await;
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    assert_eq!(
        client
            .request(route_request("TopicTest"))
            .await
            .unwrap()
            .code,
        0
    );
    drop(broker_conn);
    assert!(
        eventually(TIMEOUT, || async {
            let mut c = connect(&server).await;
            c.request(route_request("TopicTest")).await.unwrap().code == 17
        })
        .await,
        "closing the broker's connection removes its routes"
    );
    server.stop().await;
}

#[actix::test]
async fn master_and_slave() {
    let server = start_server(test_config());
    let mut master_conn = connect(&server).await;
    let mut slave_conn = connect(&server).await;
    let master = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);
    let slave = FakeBroker::slave("broker-a", 10921, &["TopicTest", "T2"]);

    // A slave registering before its master learns nothing.
    let resp = slave_conn.request(slave.register()).await.unwrap();
    assert_eq!(resp.code, 0);
    assert_eq!(resp.ext("masterAddr"), None);

    assert_eq!(
        master_conn.request(master.register()).await.unwrap().code,
        0
    );
    let resp = slave_conn.request(slave.register()).await.unwrap();
    assert_eq!(resp.ext("masterAddr"), Some("127.0.0.1:10911"));
    assert_eq!(resp.ext("haServerAddr"), Some("127.0.0.1:10912"));

    let mut client = connect(&server).await;
    let resp = client
        .request(route_request("TopicTest").with_version(317))
        .await
        .unwrap();
    let route: TopicRouteData = fastjson::from_slice(resp.body_bytes()).unwrap();
    let addrs = &route.broker_datas[0].broker_addrs;
    assert_eq!(addrs.get(&0).map(String::as_str), Some("127.0.0.1:10911"));
    assert_eq!(addrs.get(&1).map(String::as_str), Some("127.0.0.1:10921"));
    assert!(body_text(&resp).contains(r#"{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#));

    // Cluster info: always legacy JSON.
    let resp = client
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO,
        ))
        .await
        .unwrap();
    assert!(body_text(&resp).contains(r#""brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"}"#));
    let info: ClusterInfo = fastjson::from_slice(resp.body_bytes()).unwrap();
    assert!(info.cluster_addr_table["DefaultCluster"].contains("broker-a"));

    // Member group.
    let resp = client
        .request(
            RemotingCommand::request(RequestCode::GET_BROKER_MEMBER_GROUP)
                .with_ext("clusterName", "DefaultCluster")
                .with_ext("brokerName", "broker-a"),
        )
        .await
        .unwrap();
    // Java's handler never resets the default remark of a new response.
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (0, Some("not set any response code"))
    );
    assert_eq!(
        body_text(&resp),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );

    // The master unregisters (graceful broker shutdown): the slave stays, id 1 only.
    let resp = master_conn.request(master.unregister()).await.unwrap();
    assert_eq!((resp.code, resp.ext_fields.is_none()), (0, true));
    let resp = client.request(route_request("TopicTest")).await.unwrap();
    let route: TopicRouteData = fastjson::from_slice(resp.body_bytes()).unwrap();
    assert_eq!(
        route.broker_datas[0]
            .broker_addrs
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        vec![1]
    );
    server.stop().await;
}

#[actix::test]
async fn both_header_serializations() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-b", 10931, &["Bin", "Bin2"]);
    let register = broker
        .register()
        .with_serialize_type(SerializeType::RocketMq);
    let resp = conn.request(register).await.unwrap();
    assert_eq!(resp.code, 0);
    assert_eq!(
        resp.serialize_type,
        SerializeType::RocketMq,
        "responses mirror the request"
    );

    let resp = conn
        .request(route_request("Bin").with_serialize_type(SerializeType::RocketMq))
        .await
        .unwrap();
    assert_eq!(
        (resp.code, resp.serialize_type),
        (0, SerializeType::RocketMq)
    );
    let resp = conn.request(route_request("Bin")).await.unwrap();
    assert_eq!((resp.code, resp.serialize_type), (0, SerializeType::Json));

    // Binary remark survives: TOPIC_NOT_EXIST in ROCKETMQ form.
    let resp = conn
        .request(route_request("Missing").with_serialize_type(SerializeType::RocketMq))
        .await
        .unwrap();
    assert_eq!(resp.code, 17);
    assert!(resp
        .remark
        .unwrap()
        .starts_with("No topic route info in name server for the topic: Missing"));
    server.stop().await;
}

#[actix::test]
async fn json_responses_when_configured() {
    let mut config = test_config();
    config.server.response_serialize = rmq_namesrv::config::ResponseSerialize::Json;
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let resp = conn
        .request(route_request("X").with_serialize_type(SerializeType::RocketMq))
        .await
        .unwrap();
    assert_eq!((resp.code, resp.serialize_type), (17, SerializeType::Json));
    server.stop().await;
}

#[actix::test]
async fn query_data_version_and_crc() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-c", 10941, &["A", "B"]);

    let resp = conn
        .request(broker.query_data_version(&broker.version))
        .await
        .unwrap();
    assert_eq!((resp.code, resp.ext("changed")), (0, Some("true")));
    assert_eq!(resp.body, None);

    assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);
    let resp = conn
        .request(broker.query_data_version(&broker.version))
        .await
        .unwrap();
    assert_eq!(resp.ext("changed"), Some("false"));
    assert_eq!(
        body_text(&resp),
        r#"{"counter":1,"stateVersion":0,"timestamp":1700000000000}"#
    );
    let newer = DataVersion {
        counter: 2,
        ..broker.version
    };
    assert_eq!(
        conn.request(broker.query_data_version(&newer))
            .await
            .unwrap()
            .ext("changed"),
        Some("true")
    );

    // A body that does not match its CRC changes nothing.
    let mut bad = FakeBroker::master("broker-d", 10951, &["C", "D"]).register();
    bad.ext_fields
        .as_mut()
        .unwrap()
        .insert("bodyCrc32", "12345");
    let resp = conn.request(bad).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("crc32 not match"))
    );
    assert_eq!(conn.request(route_request("C")).await.unwrap().code, 17);

    // A 4.x broker's compressed registration.
    let old = FakeBroker::master("broker-e", 10961, &["Zipped", "Zipped2"]);
    let resp = conn.request(old.register_compressed()).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(conn.request(route_request("Zipped")).await.unwrap().code, 0);
    // A 5.x broker with compressedRegister=true: compressed, flagged `compressed=false` (Java's
    // NameServer answers SYSTEM_ERROR "Failed to decode RegisterBrokerBody"; ours reads it).
    let new = FakeBroker::master("broker-g", 10962, &["Zipped5", "Zipped5b"]);
    let resp = conn
        .request(new.register_compressed_unflagged())
        .await
        .unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let route = conn.request(route_request("Zipped5")).await.unwrap();
    assert_eq!(route.code, 0);
    assert!(
        body_text(&route).contains("broker-g"),
        "{}",
        body_text(&route)
    );

    // A single-topic first registration fails like Java.
    let single = FakeBroker::master("broker-f", 10971, &["Only"]);
    let resp = conn.request(single.register()).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("register broker failed"))
    );
    server.stop().await;
}

#[actix::test]
async fn pipelined_requests_all_answered() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-p", 10981, &["P1", "P2"]);
    assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);

    use futures_util::{SinkExt, StreamExt};
    use rmq_namesrv::protocol::RemotingCodec;
    let stream = tokio::net::TcpStream::connect(server.local_addr())
        .await
        .unwrap();
    let mut framed = tokio_util::codec::Framed::new(stream, RemotingCodec::default());
    for opaque in 0..200 {
        let topic = if opaque % 2 == 0 { "P1" } else { "Nope" };
        framed
            .feed(&route_request(topic).with_opaque(opaque))
            .await
            .unwrap();
    }
    SinkExt::<&RemotingCommand>::flush(&mut framed)
        .await
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let resp = tokio::time::timeout(TIMEOUT, framed.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(resp.is_response());
        let expected = if resp.opaque % 2 == 0 { 0 } else { 17 };
        assert_eq!(resp.code, expected, "opaque {}", resp.opaque);
        seen.insert(resp.opaque);
    }
    assert_eq!(seen.len(), 200);
    server.stop().await;
}

#[actix::test]
async fn unknown_code_keeps_the_connection() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let resp = conn
        .request(RemotingCommand::request(RequestCode(10)))
        .await
        .unwrap();
    assert_eq!(resp.code, 3);
    assert_eq!(
        resp.remark.as_deref(),
        Some(" request type 10 not supported")
    );
    assert!(resp.ext_fields.is_none() && resp.body.is_none());
    let resp = conn
        .request(RemotingCommand::request(RequestCode(99999)))
        .await
        .unwrap();
    assert_eq!(
        resp.remark.as_deref(),
        Some(" request type 99999 not supported")
    );
    // A missing required header field: SYSTEM_ERROR naming it; still usable.
    let resp = conn
        .request(RemotingCommand::request(RequestCode::UNREGISTER_BROKER))
        .await
        .unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("the custom field <brokerName> is null"))
    );
    // A route request without a topic: Java answers for topic "null".
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ROUTEINFO_BY_TOPIC,
        ))
        .await
        .unwrap();
    assert_eq!(resp.code, 17);
    assert!(resp.remark.unwrap().contains("for the topic: null"));
    let resp = conn.request(route_request("x")).await.unwrap();
    assert_eq!(resp.code, 17);
    server.stop().await;
}

#[actix::test]
async fn graceful_stop_closes_connections() {
    let server = start_server(test_config());
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;
    assert_eq!(a.request(route_request("x")).await.unwrap().code, 17);
    assert_eq!(b.request(route_request("x")).await.unwrap().code, 17);
    assert_eq!(server.open_connections().await, 2);
    let addr = server.local_addr();
    server.stop().await;
    assert!(a.request(route_request("x")).await.is_err());
    assert!(b.request(route_request("x")).await.is_err());
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
}

#[actix::test]
async fn idle_connections_are_closed_and_the_connection_cap_holds() {
    let mut config = test_config();
    config.server.idle_timeout = Duration::from_millis(300);
    config.server.max_connections = 2;
    let server = start_server(config);
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;
    assert_eq!(a.request(route_request("x")).await.unwrap().code, 17);
    assert_eq!(b.request(route_request("x")).await.unwrap().code, 17);

    // A third connection is refused while two are open.
    let mut refused = connect(&server).await;
    assert!(
        refused.request(route_request("x")).await.is_err(),
        "over the connection cap"
    );

    // A connection with no traffic for the idle timeout is closed by the server.
    assert!(
        eventually(Duration::from_secs(3), || async {
            server.open_connections().await == 0
        })
        .await,
        "idle connections closed"
    );
    assert!(a.request(route_request("x")).await.is_err());
    // Slots are free again.
    let mut c = connect(&server).await;
    assert_eq!(c.request(route_request("x")).await.unwrap().code, 17);
    drop(b);
    server.stop().await;
}

#[actix::test]
async fn identical_reregistrations_stay_exact() {
    let server = start_server(test_config());
    let mut broker_conn = connect(&server).await;
    let mut slave_conn = connect(&server).await;
    let mut admin = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["Keep", "Gone"]);
    let slave = FakeBroker::slave("broker-a", 10921, &["Keep", "Gone"]);
    for _ in 0..3 {
        // The same bytes again and again on the same connection: each answered in full.
        assert_eq!(
            broker_conn.request(broker.register()).await.unwrap().code,
            0
        );
        let resp = slave_conn.request(slave.register()).await.unwrap();
        assert_eq!(resp.ext("masterAddr"), Some("127.0.0.1:10911"));
    }
    // An admin deletes a topic the broker still has: its next identical registration brings it
    // back, as Java's per-topic check does.
    let delete =
        RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "Gone");
    assert_eq!(admin.request(delete).await.unwrap().code, 0);
    assert_eq!(admin.request(route_request("Gone")).await.unwrap().code, 17);
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    assert_eq!(admin.request(route_request("Gone")).await.unwrap().code, 0);
    // The registry restarted (empty): the identical body is decoded again and everything returns.
    server
        .routes()
        .send(rmq_namesrv::actors::messages::Restart)
        .await
        .unwrap();
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );
    assert_eq!(admin.request(route_request("Keep")).await.unwrap().code, 0);
    server.stop().await;
}

#[actix::test]
async fn zone_filtering_of_routes() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let mut a = FakeBroker::master("broker-a", 10911, &["Zoned", "Other"]);
    a.zone = Some("zone-a".into());
    let mut b = FakeBroker::master("broker-b", 10921, &["Zoned", "Other"]);
    b.zone = Some("zone-b".into());
    // A group without a master is kept whatever its zone.
    let mut c = FakeBroker::slave("broker-c", 10931, &["Zoned", "Other"]);
    c.zone = Some("zone-b".into());
    for broker in [&a, &b, &c] {
        assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);
    }
    let zoned = |mode: &str, zone: &str| {
        route_request("Zoned")
            .with_ext("__ZONE_MODE", mode)
            .with_ext("__ZONE_NAME", zone)
    };
    let text = body_text(&conn.request(zoned("true", "ZONE-A")).await.unwrap());
    assert!(
        text.contains("broker-a") && text.contains("broker-c") && !text.contains("broker-b"),
        "{text}"
    );
    assert!(
        text.contains(r#"{0:"127.0.0.1:10911"}"#),
        "zone-filtered routes are legacy JSON: {text}"
    );
    assert!(text.contains(r#""zoneName":"zone-a""#), "{text}");
    // Zone mode off, or no zone name: everything.
    for (mode, zone) in [("false", "zone-a"), ("true", " ")] {
        let text = body_text(&conn.request(zoned(mode, zone)).await.unwrap());
        assert!(
            text.contains("broker-a") && text.contains("broker-b") && text.contains("broker-c"),
            "{text}"
        );
    }
    server.stop().await;
}
