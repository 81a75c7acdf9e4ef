//! Every request code beyond the route path, over TCP against the real server: KV store, topic
//! lists, permissions, topic deletion/registration, runtime configuration, cluster-test mode.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use rmq_namesrv::protocol::body::{to_json, KvTable, QueueData, TopicList, TopicRouteData};
use rmq_namesrv::protocol::fastjson::{self, JsonStyle};
use rmq_namesrv::protocol::{properties, RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use support::*;

fn topics_of(resp: &RemotingCommand) -> Vec<String> {
    let list: TopicList = fastjson::from_slice(resp.body_bytes()).expect("TopicList body");
    list.topic_list.into_iter().collect()
}

fn update_config(text: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(text.as_bytes().to_vec())
}

async fn get_config(conn: &mut Client) -> BTreeMap<String, String> {
    let resp = conn
        .request(RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG))
        .await
        .unwrap();
    assert_eq!(resp.code, 0);
    properties::parse(&body_text(&resp)).unwrap()
}

#[actix::test]
async fn kv_codes_with_java_remarks() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;

    let resp = conn.request(get_kv("ns", "k")).await.unwrap();
    assert_eq!(resp.code, 22);
    assert_eq!(
        resp.remark.as_deref(),
        Some("No config item, Namespace: ns Key: k")
    );
    let resp = conn.request(kv_list("ns")).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (22, Some("No config item, Namespace: ns"))
    );

    let resp = conn.request(put_kv("ns", "k", "v1")).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref(), resp.ext_fields.is_none()),
        (0, None, true)
    );
    let resp = conn.request(get_kv("ns", "k")).await.unwrap();
    assert_eq!((resp.code, resp.ext("value")), (0, Some("v1")));
    conn.request(put_kv("ns", "k2", "v2")).await.unwrap();
    let resp = conn.request(kv_list("ns")).await.unwrap();
    assert_eq!(body_text(&resp), r#"{"table":{"k":"v1","k2":"v2"}}"#);

    assert_eq!(conn.request(delete_kv("ns", "k")).await.unwrap().code, 0);
    assert_eq!(conn.request(delete_kv("ns", "k2")).await.unwrap().code, 0);
    // The namespace stays, empty.
    let resp = conn.request(kv_list("ns")).await.unwrap();
    assert_eq!(
        (resp.code, body_text(&resp).as_str()),
        (0, r#"{"table":{}}"#)
    );
    // Deleting a missing key still succeeds.
    assert_eq!(conn.request(delete_kv("ns", "gone")).await.unwrap().code, 0);

    // Missing namespace or key.
    let resp = conn
        .request(RemotingCommand::request(RequestCode::PUT_KV_CONFIG).with_ext("key", "k"))
        .await
        .unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("namespace or key is null"))
    );
    let resp = conn
        .request(RemotingCommand::request(RequestCode::GET_KV_CONFIG).with_ext("namespace", "ns"))
        .await
        .unwrap();
    assert_eq!(
        resp.remark.as_deref(),
        Some("No config item, Namespace: ns Key: null")
    );
    server.stop().await;
}

#[actix::test]
async fn kv_file_survives_restart_in_java_format() {
    let config = test_config();
    let kv_path = config.kv.path.clone();
    let server = start_server(config.clone());
    let mut conn = connect(&server).await;
    conn.request(put_kv(
        "ORDER_TOPIC_CONFIG",
        "TopicTest",
        "broker-a:4;broker-b:4",
    ))
    .await
    .unwrap();
    conn.request(put_kv("other", "x", "1")).await.unwrap();
    conn.request(put_kv("other", "x", "2")).await.unwrap();
    server.stop().await;

    let text = std::fs::read_to_string(&kv_path).unwrap();
    assert_eq!(
        text,
        r#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"},"other":{"x":"2"}}}"#
    );
    // The previous version is kept as .bak, as Java does.
    let bak = std::fs::read_to_string(kv_path.with_extension("json.bak")).unwrap();
    assert!(bak.contains(r#""x":"1""#), "{bak}");

    let server = start_server(config);
    let mut conn = connect(&server).await;
    let resp = conn.request(get_kv("other", "x")).await.unwrap();
    assert_eq!(resp.ext("value"), Some("2"));
    server.stop().await;
}

#[actix::test]
async fn corrupt_kv_file_stops_start_up_naming_the_file() {
    let config = test_config();
    std::fs::create_dir_all(config.kv.path.parent().unwrap()).unwrap();
    std::fs::write(&config.kv.path, b"{\"configTable\":{broken").unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = rmq_namesrv::NameServer::new(config.clone())
        .start(listener)
        .err()
        .expect("start-up refused");
    assert!(
        err.to_string()
            .contains(&config.kv.path.display().to_string()),
        "{err}"
    );

    // A stale temp file from a crash mid-write next to a good file is ignored.
    std::fs::write(&config.kv.path, br#"{"configTable":{"ns":{"k":"good"}}}"#).unwrap();
    std::fs::write(config.kv.path.with_extension("json.tmp"), b"{\"configTa").unwrap();
    let server = start_server(config.clone());
    let mut conn = connect(&server).await;
    assert_eq!(
        conn.request(get_kv("ns", "k")).await.unwrap().ext("value"),
        Some("good")
    );
    conn.request(put_kv("ns", "k", "newer")).await.unwrap();
    server.stop().await;
    assert!(std::fs::read_to_string(&config.kv.path)
        .unwrap()
        .contains("newer"));
}

#[actix::test]
async fn order_topic_config_reaches_brokers_and_routes() {
    let mut config = test_config();
    config.registry.order_message_enable = true;
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["Ordered", "Plain"]);
    assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);
    let before = conn.request(route_request("Ordered")).await.unwrap();
    assert!(!body_text(&before).contains("orderTopicConf"));

    conn.request(put_kv("ORDER_TOPIC_CONFIG", "Ordered", "broker-a:4"))
        .await
        .unwrap();
    // Registration replies carry the namespace as a KVTable.
    let resp = conn.request(broker.register()).await.unwrap();
    let table: KvTable = fastjson::from_slice(resp.body_bytes()).unwrap();
    assert_eq!(
        table.table.get("Ordered").map(String::as_str),
        Some("broker-a:4")
    );
    // Routes show it at once (the cached route was invalidated).
    let after = conn.request(route_request("Ordered")).await.unwrap();
    assert!(
        body_text(&after).contains(r#""orderTopicConf":"broker-a:4""#),
        "{}",
        body_text(&after)
    );
    let plain = conn.request(route_request("Plain")).await.unwrap();
    assert!(!body_text(&plain).contains("orderTopicConf"));

    // returnOrderTopicConfigToBroker=false: no body.
    assert_eq!(
        conn.request(update_config("returnOrderTopicConfigToBroker=false"))
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(conn.request(broker.register()).await.unwrap().body, None);
    // orderMessageEnable=false: routes stop showing it.
    assert_eq!(
        conn.request(update_config("orderMessageEnable=false"))
            .await
            .unwrap()
            .code,
        0
    );
    let off = conn.request(route_request("Ordered")).await.unwrap();
    assert!(!body_text(&off).contains("orderTopicConf"));
    server.stop().await;
}

#[actix::test]
async fn topic_lists_and_switches() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let mut a = FakeBroker::master("broker-a", 10911, &["A1", "A2"]);
    a.cluster = "ClusterA".into();
    let mut b = FakeBroker::master("broker-b", 10921, &["B1", "B2"]);
    b.cluster = "ClusterB".into();
    conn.request(a.register()).await.unwrap();
    conn.request(b.register()).await.unwrap();

    let all = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        ))
        .await
        .unwrap();
    assert_eq!(topics_of(&all), vec!["A1", "A2", "B1", "B2"]);
    let by_cluster = |cluster: &str| {
        RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER).with_ext("cluster", cluster)
    };
    assert_eq!(
        topics_of(&conn.request(by_cluster("ClusterA")).await.unwrap()),
        vec!["A1", "A2"]
    );
    // The lists are encoded once and kept while the tables stay the same: a topic made or
    // deleted shows.
    let all_topics = || RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    let again = conn.request(all_topics()).await.unwrap();
    assert_eq!(again.body_bytes(), all.body_bytes());
    b.topics.push("B3".into());
    conn.request(b.register()).await.unwrap();
    let delete =
        RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "A1");
    assert_eq!(conn.request(delete).await.unwrap().code, 0);
    assert_eq!(
        topics_of(&conn.request(all_topics()).await.unwrap()),
        vec!["A2", "B1", "B2", "B3"]
    );
    assert_eq!(
        topics_of(&conn.request(by_cluster("ClusterA")).await.unwrap()),
        vec!["A2"]
    );
    let unknown = conn.request(by_cluster("Nope")).await.unwrap();
    assert_eq!(
        (unknown.code, body_text(&unknown).as_str()),
        (0, r#"{"topicList":[]}"#)
    );

    let sys = conn
        .request(RemotingCommand::request(
            RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        ))
        .await
        .unwrap();
    let list: TopicList = fastjson::from_slice(sys.body_bytes()).unwrap();
    assert_eq!(
        list.topic_list.into_iter().collect::<Vec<_>>(),
        vec!["ClusterA", "ClusterB", "broker-a", "broker-b"]
    );
    assert_eq!(list.broker_addr.as_deref(), Some("127.0.0.1:10911"));

    for code in [
        RequestCode::GET_UNIT_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ] {
        let resp = conn.request(RemotingCommand::request(code)).await.unwrap();
        assert_eq!(
            (resp.code, body_text(&resp).as_str()),
            (0, r#"{"topicList":[]}"#),
            "{code}"
        );
    }

    // Switch the lists off at runtime.
    assert_eq!(
        conn.request(update_config(
            "enableAllTopicList=false\nenableTopicList=false"
        ))
        .await
        .unwrap()
        .code,
        0
    );
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        ))
        .await
        .unwrap();
    assert_eq!((resp.code, resp.remark.as_deref()), (1, Some("disable")));
    let resp = conn.request(by_cluster("ClusterA")).await.unwrap();
    assert_eq!((resp.code, resp.remark.as_deref()), (1, Some("disable")));
    let resp = conn
        .request(RemotingCommand::request(RequestCode::GET_UNIT_TOPIC_LIST))
        .await
        .unwrap();
    assert_eq!(resp.remark.as_deref(), Some("disable"));
    // The system list is never switched off.
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        ))
        .await
        .unwrap();
    assert_eq!(resp.code, 0);
    server.stop().await;
}

#[actix::test]
async fn unit_topic_lists_by_sys_flag() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-u", 10911, &[]);
    let mut body = broker.body();
    for (name, flag) in [("Unit", 1), ("Sub", 2), ("Both", 3), ("None", 0)] {
        let mut t = rmq_namesrv::protocol::body::TopicConfig::new(name, 4, 6);
        t.topic_sys_flag = flag;
        body.topic_config_wrapper
            .topic_config_table
            .insert(name.into(), t);
    }
    let json = to_json(&body, JsonStyle::Legacy);
    let header = broker.header(&json, false);
    use rmq_namesrv::protocol::custom_headers::CommandHeader;
    let register = RemotingCommand::request(RequestCode::REGISTER_BROKER)
        .with_ext_fields(header.to_ext())
        .with_body(json);
    assert_eq!(conn.request(register).await.unwrap().code, 0);
    let list = |code| RemotingCommand::request(code);
    assert_eq!(
        topics_of(
            &conn
                .request(list(RequestCode::GET_UNIT_TOPIC_LIST))
                .await
                .unwrap()
        ),
        vec!["Both", "Unit"]
    );
    assert_eq!(
        topics_of(
            &conn
                .request(list(RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST))
                .await
                .unwrap()
        ),
        vec!["Both", "Sub"]
    );
    assert_eq!(
        topics_of(
            &conn
                .request(list(RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST))
                .await
                .unwrap()
        ),
        vec!["Sub"]
    );
    server.stop().await;
}

#[actix::test]
async fn write_permission_and_topic_deletion() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T1", "T2"]);
    conn.request(broker.register()).await.unwrap();
    let wipe = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "broker-a");
    let resp = conn.request(wipe).await.unwrap();
    assert_eq!((resp.code, resp.ext("wipeTopicCount")), (0, Some("2")));
    assert!(body_text(&conn.request(route_request("T1")).await.unwrap()).contains(r#""perm":4"#));
    let add = RemotingCommand::request(RequestCode::ADD_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "broker-a");
    let resp = conn.request(add).await.unwrap();
    assert_eq!((resp.code, resp.ext("addTopicCount")), (0, Some("2")));
    assert!(body_text(&conn.request(route_request("T1")).await.unwrap()).contains(r#""perm":6"#));
    let unknown = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER)
        .with_ext("brokerName", "nobody");
    assert_eq!(
        conn.request(unknown).await.unwrap().ext("wipeTopicCount"),
        Some("0")
    );

    // Delete by cluster (unknown cluster: no-op), then entirely.
    let delete = |cluster: Option<&str>| {
        let cmd =
            RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV).with_ext("topic", "T1");
        match cluster {
            Some(c) => cmd.with_ext("clusterName", c),
            None => cmd,
        }
    };
    assert_eq!(conn.request(delete(Some("Nope"))).await.unwrap().code, 0);
    assert_eq!(conn.request(route_request("T1")).await.unwrap().code, 0);
    assert_eq!(
        conn.request(delete(Some("DefaultCluster")))
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(conn.request(route_request("T1")).await.unwrap().code, 17);
    assert_eq!(conn.request(delete(None)).await.unwrap().code, 0);

    // REGISTER_TOPIC_IN_NAMESRV for a known broker group.
    let route = TopicRouteData {
        queue_datas: vec![QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 2,
            topic_sys_flag: 0,
            write_queue_nums: 2,
        }],
        ..TopicRouteData::default()
    };
    let register_topic = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "Single")
        .with_body(to_json(&route, JsonStyle::Legacy));
    assert_eq!(conn.request(register_topic).await.unwrap().code, 0);
    assert!(
        body_text(&conn.request(route_request("Single")).await.unwrap())
            .contains(r#""readQueueNums":2"#)
    );
    let bad = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "X")
        .with_body(b"not json".to_vec());
    assert_eq!(conn.request(bad).await.unwrap().code, 1);
    server.stop().await;
}

#[actix::test]
async fn runtime_config_get_update_and_black_list() {
    let mut config = test_config();
    config.tls.key_password = Some(rmq_namesrv::transport::Secret::new("hunter2"));
    let store = config.kv.config_store_path.clone();
    let server = start_server(config);
    let mut conn = connect(&server).await;

    let props = get_config(&mut conn).await;
    assert_eq!(props["listenPort"], server.local_addr().port().to_string());
    assert_eq!(props["enableAllTopicList"], "true");
    assert_eq!(props["scanNotActiveBrokerInterval"], "5000");
    assert_eq!(
        props["configBlackList"],
        "configBlackList;configStorePath;kvConfigPath"
    );

    // Black-listed keys: NO_PERMISSION, nothing changes, nothing is written.
    for body in [
        "kvConfigPath=/tmp/evil.json",
        "configStorePath=/etc/cron.d/x",
        "configBlackList=",
        "rocketmqHome=/",
        "tls.server.certPath=/x",
        "tls.server.mode=disabled",
        "tls.test.mode.enable=false",
        "tls.enable=true",
        "enableTopicList=false\nkvConfigPath=/x",
    ] {
        let resp = conn.request(update_config(body)).await.unwrap();
        assert_eq!(
            (resp.code, resp.remark.as_deref()),
            (16, Some("Can not update config in black list.")),
            "{body}"
        );
    }
    assert!(!store.exists(), "a refused update writes nothing");
    let props = get_config(&mut conn).await;
    assert_eq!(props["enableTopicList"], "true");
    // TLS settings are not shown (Java does not either), the key password least of all.
    assert!(props.keys().all(|k| !k.starts_with("tls.")), "{props:?}");
    assert!(props.values().all(|v| !v.contains("hunter2")));

    // Bad values and bad text: SYSTEM_ERROR, nothing changes.
    let resp = conn
        .request(update_config("enableTopicList=maybe"))
        .await
        .unwrap();
    assert_eq!(resp.code, 1);
    assert!(resp.remark.unwrap().contains("enableTopicList"));
    let resp = conn
        .request(update_config("scanNotActiveBrokerInterval=soon"))
        .await
        .unwrap();
    assert!(resp.remark.unwrap().contains("scanNotActiveBrokerInterval"));
    let resp = conn.request(update_config("k=\\u12G4")).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("string2Properties error"))
    );
    assert!(!store.exists());

    // No body: SUCCESS, nothing changes.
    let resp = conn
        .request(RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG))
        .await
        .unwrap();
    assert_eq!(resp.code, 0);

    // A live key takes effect at once and is persisted; a start-only key is stored and shown.
    let resp = conn
        .request(update_config(
            "enableAllTopicList=false\nscanNotActiveBrokerInterval=7000\nnotAKey=1",
        ))
        .await
        .unwrap();
    assert_eq!((resp.code, resp.remark.as_deref()), (0, None));
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        ))
        .await
        .unwrap();
    assert_eq!(resp.remark.as_deref(), Some("disable"));
    let props = get_config(&mut conn).await;
    assert_eq!(props["enableAllTopicList"], "false");
    assert_eq!(props["scanNotActiveBrokerInterval"], "7000");
    assert!(
        !props.contains_key("notAKey"),
        "unknown keys are ignored, as in Java"
    );
    let saved_text = std::fs::read_to_string(&store).unwrap();
    assert!(
        !saved_text.contains("hunter2"),
        "no password in the config store"
    );
    let saved = properties::parse(&saved_text).unwrap();
    assert_eq!(saved["enableAllTopicList"], "false");
    assert_eq!(saved["scanNotActiveBrokerInterval"], "7000");
    server.stop().await;

    // The saved file is a Java properties file that --config accepts.
    let loaded =
        rmq_namesrv::config::Config::load(Some(&store), Vec::new(), &Default::default()).unwrap();
    assert!(!loaded.registry.enable_all_topic_list);
    assert_eq!(loaded.registry.scan_interval, Duration::from_secs(7));
}

#[actix::test]
async fn wait_for_service_window() {
    let mut config = test_config();
    config.registry.need_wait_for_service = true;
    config.registry.wait_for_service = Duration::from_secs(3600);
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let resp = conn.request(route_request("x")).await.unwrap();
    assert_eq!(
        (resp.code, resp.remark.as_deref()),
        (1, Some("name server not ready"))
    );
    assert_eq!(
        conn.request(update_config("waitSecondsForService=0"))
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(conn.request(route_request("x")).await.unwrap().code, 17);
    server.stop().await;
}

#[actix::test]
async fn acting_master_and_delete_with_registration() {
    let mut config = test_config();
    config.registry.support_acting_master = true;
    config.registry.delete_topic_with_broker_registration = true;
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let mut master_conn = connect(&server).await;
    let mut master = FakeBroker::master("g", 10911, &["T", "U"]);
    master.enable_acting_master = Some(true);
    let mut slave = FakeBroker::slave("g", 10921, &["T", "U"]);
    slave.enable_acting_master = Some(true);
    master_conn.request(master.register()).await.unwrap();
    conn.request(slave.register()).await.unwrap();
    drop(master_conn);
    // The master is gone: the slave is shown as acting master (id 0), read-only.
    assert!(
        eventually(TIMEOUT, || async {
            let mut c = connect(&server).await;
            let text = body_text(&c.request(route_request("T")).await.unwrap());
            text.contains(r#""brokerAddrs":{"0":"127.0.0.1:10921"}"#)
                && text.contains(r#""perm":4"#)
        })
        .await
    );
    // A registration without U removes it.
    let mut fewer = slave.clone();
    fewer.topics = vec!["T".into(), "V".into()];
    fewer.version.counter += 1;
    conn.request(fewer.register()).await.unwrap();
    assert_eq!(conn.request(route_request("U")).await.unwrap().code, 17);
    server.stop().await;
}

#[actix::test]
async fn cluster_test_mode_asks_the_product_environment() {
    // The product environment: a normal server with a broker.
    let product = start_server(test_config());
    let mut product_conn = connect(&product).await;
    let broker = FakeBroker::master("prod-broker", 10911, &["ProdTopic", "Other"]);
    assert_eq!(
        product_conn.request(broker.register()).await.unwrap().code,
        0
    );

    let mut config = test_config();
    config.cluster_test.enabled = true;
    config.cluster_test.product_env_namesrv = format!("127.0.0.1:1;{}", product.local_addr());
    let test_env = start_server(config);
    let mut conn = connect(&test_env).await;

    // A local miss is answered from the product environment, in legacy JSON.
    let resp = conn.request(route_request("ProdTopic")).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert!(
        body_text(&resp).contains(r#"{0:"127.0.0.1:10911"}"#),
        "{}",
        body_text(&resp)
    );
    // Missing everywhere: TOPIC_NOT_EXIST.
    let resp = conn.request(route_request("Nowhere")).await.unwrap();
    assert_eq!(resp.code, 17);
    // A local route wins, with orderTopicConf from the local KV store, legacy encoded.
    let local = FakeBroker::master("test-broker", 10921, &["ProdTopic", "Local"]);
    conn.request(local.register()).await.unwrap();
    conn.request(put_kv("ORDER_TOPIC_CONFIG", "ProdTopic", "test-broker:4"))
        .await
        .unwrap();
    let text = body_text(&conn.request(route_request("ProdTopic")).await.unwrap());
    assert!(
        text.contains("test-broker") && !text.contains("prod-broker"),
        "{text}"
    );
    assert!(
        text.contains(r#""orderTopicConf":"test-broker:4""#),
        "{text}"
    );
    assert!(text.contains(r#"{0:"127.0.0.1:10921"}"#), "{text}");
    // Other codes work normally (4.x semantics).
    let resp = conn
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO,
        ))
        .await
        .unwrap();
    assert!(body_text(&resp).contains("test-broker"));
    test_env.stop().await;
    product.stop().await;
}

#[actix::test]
async fn failed_kv_write_is_reported_kept_and_retried() {
    let mut config = test_config();
    let dir = config.kv.path.parent().unwrap().to_owned();
    std::fs::create_dir_all(&dir).unwrap();
    let blocker = dir.join("blocked");
    config.kv.path = blocker.join("kvConfig.json");
    let kv_path = config.kv.path.clone();
    let server = start_server(config);
    let mut conn = connect(&server).await;
    // The KV file's directory becomes a plain file: every save fails until it is removed.
    std::fs::write(&blocker, b"not a directory").unwrap();

    let resp = conn.request(put_kv("ns", "first", "1")).await.unwrap();
    assert_eq!(resp.code, 1);
    let remark = resp.remark.unwrap();
    assert!(
        remark.contains("applied but could not be saved"),
        "{remark}"
    );
    // Not lost: the change is served from memory.
    assert_eq!(
        conn.request(get_kv("ns", "first"))
            .await
            .unwrap()
            .ext("value"),
        Some("1")
    );

    // Once the disk problem is gone, the next change saves everything, the earlier one included.
    std::fs::remove_file(&blocker).unwrap();
    let resp = conn.request(put_kv("ns", "second", "2")).await.unwrap();
    assert_eq!((resp.code, resp.remark.as_deref()), (0, None));
    let saved = std::fs::read_to_string(&kv_path).unwrap();
    assert_eq!(
        saved,
        r#"{"configTable":{"ns":{"first":"1","second":"2"}}}"#
    );
    server.stop().await;
}
