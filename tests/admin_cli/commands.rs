//! Every command against one server, in text and `--json`: route reads, the KV commands, write
//! permission and topic deletion, the NameServer configuration.

use rmq_namesrv::protocol::body::TopicRouteData;

use crate::fixtures::*;
use crate::run::*;
use crate::support::*;

#[actix::test]
async fn route_reads_in_text_and_json() {
    let server = start_server(test_config());
    let _brokers = two_brokers(&server).await;
    let ns = addr(&server);

    let run = admin(&ns, &["clusterList"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        "#Cluster Name   #Broker Name  #BID  #Addr\n\
         DefaultCluster  broker-a      0     127.0.0.1:10911\n\
         DefaultCluster  broker-b      0     127.0.0.1:10921\n"
    );
    let doc = admin(&ns, &["clusterList", "--json"]).await.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["namesrv"], ns.as_str());
    assert_eq!(
        doc["result"]["clusterAddrTable"]["DefaultCluster"],
        serde_json::json!(["broker-a", "broker-b"])
    );
    assert_eq!(
        doc["result"]["brokerAddrTable"]["broker-b"]["brokerAddrs"]["0"],
        "127.0.0.1:10921"
    );

    let run = admin(&ns, &["topicList"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, "TopicA\nTopicB\nTopicC\n");
    let doc = admin(&ns, &["--json", "topicList"]).await.json();
    assert_eq!(
        doc["result"]["topicList"],
        serde_json::json!(["TopicA", "TopicB", "TopicC"])
    );

    let run = admin(&ns, &["topicList", "-c", "DefaultCluster"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        "#Cluster Name   #Topic\n\
         DefaultCluster  TopicA\n\
         DefaultCluster  TopicB\n\
         DefaultCluster  TopicC\n"
    );
    let run = admin(&ns, &["topicList", "--cluster", "NoSuchCluster"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, "#Cluster Name  #Topic\n");
    let doc = admin(&ns, &["topicList", "-c", "DefaultCluster", "--json"])
        .await
        .json();
    assert_eq!(doc["result"]["cluster"], "DefaultCluster");
    assert_eq!(doc["result"]["topicList"].as_array().map(Vec::len), Some(3));

    // topicRoute prints the route as pretty JSON, like mqadmin.
    let run = admin(&ns, &["topicRoute", "-t", "TopicB"]).await;
    run.assert_ok();
    assert!(run.stdout.starts_with("{\n  \"brokerDatas\": ["), "{run:?}");
    let route: TopicRouteData = serde_json::from_str(&run.stdout).expect("route JSON");
    assert_eq!(route.broker_datas.len(), 2);
    assert_eq!(route.queue_datas.len(), 2);
    assert_eq!(route.broker_datas[0].broker_addrs[&0], "127.0.0.1:10911");
    let doc = admin(&ns, &["topicRoute", "--topic", "TopicA", "--json"])
        .await
        .json();
    assert_eq!(perms(&doc["result"]), [("broker-a".to_owned(), 6)]);

    // A non-success answer: exit 1, code name, number and remark on stderr, nothing on stdout.
    let run = admin(&ns, &["topicRoute", "-t", "NoSuchTopic"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: name server {ns} answered TOPIC_NOT_EXIST(17): \
             No topic route info in name server for the topic: NoSuchTopic"
        )),
        "{run:?}"
    );
}

#[actix::test]
async fn kv_commands() {
    let server = start_server(test_config());
    let ns = addr(&server);

    let run = admin(&ns, &["updateKvConfig", "-s", "ns", "-k", "k1", "-v", "v1"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("update kv config [ns] k1=v1 in name server[{ns}] OK\n")
    );
    let run = admin(
        &ns,
        &[
            "--json",
            "updateKvConfig",
            "--namespace",
            "ns",
            "--key",
            "k2",
            "--value",
            "two words",
        ],
    )
    .await;
    run.assert_ok();
    let doc = run.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(
        doc["results"],
        serde_json::json!([{ "namesrv": ns, "ok": true, "result": null }])
    );
    assert_eq!(
        kv_value(&server, "ns", "k2").await.as_deref(),
        Some("two words")
    );

    let run = admin(&ns, &["getKvConfig", "-s", "ns", "-k", "k1"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, "v1\n");
    let doc = admin(&ns, &["getKvConfig", "-s", "ns", "-k", "k2", "--json"])
        .await
        .json();
    assert_eq!(
        doc,
        serde_json::json!({
            "ok": true,
            "namesrv": ns,
            "result": { "namespace": "ns", "key": "k2", "value": "two words" }
        })
    );

    let run = admin(&ns, &["kvList", "-s", "ns"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, "#Key  #Value\nk1    v1\nk2    two words\n");
    let doc = admin(&ns, &["kvList", "-s", "ns", "--json"]).await.json();
    assert_eq!(
        doc["result"],
        serde_json::json!({ "namespace": "ns", "table": { "k1": "v1", "k2": "two words" } })
    );

    // A missing key: QUERY_NOT_FOUND (22) with Java's remark, exit 1.
    let run = admin(&ns, &["getKvConfig", "-s", "ns", "-k", "missing"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "rmq-namesrv admin: name server {ns} answered QUERY_NOT_FOUND(22): \
             No config item, Namespace: ns Key: missing\n"
        )
    );
    let run = admin(&ns, &["getKvConfig", "-s", "ns", "-k", "missing", "--json"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["ok"], false);
    let error = &doc["results"][0]["error"];
    assert_eq!(doc["results"][0]["namesrv"], ns.as_str());
    assert_eq!(error["kind"], "answered");
    assert_eq!(error["code"], 22);
    assert_eq!(error["name"], "QUERY_NOT_FOUND");
    assert_eq!(
        error["remark"],
        "No config item, Namespace: ns Key: missing"
    );
    let run = admin(&ns, &["kvList", "-s", "nope"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("QUERY_NOT_FOUND(22): No config item, Namespace: nope"),
        "{run:?}"
    );

    let run = admin(&ns, &["deleteKvConfig", "-s", "ns", "-k", "k1"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("delete kv config [ns] k1 in name server[{ns}] OK\n")
    );
    assert_eq!(kv_value(&server, "ns", "k1").await, None);
    assert_eq!(
        admin(&ns, &["getKvConfig", "-s", "ns", "-k", "k1"])
            .await
            .code,
        1
    );
}

#[actix::test]
async fn write_permission_and_topic_deletion() {
    let server = start_server(test_config());
    let _brokers = two_brokers(&server).await;
    let ns = addr(&server);
    let route = |topic: &'static str| {
        let ns = ns.clone();
        async move {
            admin(&ns, &["topicRoute", "-t", topic, "--json"])
                .await
                .json()["result"]
                .clone()
        }
    };

    let run = admin(&ns, &["wipeWritePerm", "-b", "broker-a"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("wipe write perm of broker[broker-a] in name server[{ns}] OK, 2\n")
    );
    assert_eq!(perms(&route("TopicA").await), [("broker-a".to_owned(), 4)]);
    assert_eq!(
        perms(&route("TopicB").await),
        [("broker-a".to_owned(), 4), ("broker-b".to_owned(), 6)]
    );

    let run = admin(&ns, &["addWritePerm", "--brokerName", "broker-a", "--json"]).await;
    run.assert_ok();
    assert_eq!(
        run.json()["results"][0]["result"],
        serde_json::json!({ "addTopicCount": 2 })
    );
    assert_eq!(perms(&route("TopicA").await), [("broker-a".to_owned(), 6)]);
    let run = admin(&ns, &["addWritePerm", "-b", "no-such-broker"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("add write perm of broker[no-such-broker] in name server[{ns}] OK, 0\n")
    );

    let run = admin(&ns, &["deleteTopic", "-t", "TopicC"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("delete topic[TopicC] in name server[{ns}] OK\n")
    );
    let run = admin(
        &ns,
        &["deleteTopic", "-t", "TopicB", "-c", "DefaultCluster"],
    )
    .await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("delete topic[TopicB] of cluster[DefaultCluster] in name server[{ns}] OK\n")
    );
    assert_eq!(admin(&ns, &["topicList"]).await.stdout, "TopicA\n");
    assert_eq!(admin(&ns, &["topicRoute", "-t", "TopicC"]).await.code, 1);
}

#[actix::test]
async fn namesrv_config() {
    let server = start_server(test_config());
    let ns = addr(&server);
    let port = server.local_addr().port();

    let run = admin(&ns, &["getNamesrvConfig"]).await;
    run.assert_ok();
    let mut lines = run.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(format!("============{ns}============").as_str())
    );
    let lines: Vec<&str> = lines.collect();
    assert!(
        lines.contains(&format!("listenPort = {port}").as_str()),
        "{run:?}"
    );
    assert!(lines.contains(&"orderMessageEnable = false"), "{run:?}");
    let mut sorted = lines.clone();
    sorted.sort_unstable();
    assert_eq!(lines, sorted, "key order");

    let run = admin(
        &ns,
        &[
            "updateNamesrvConfig",
            "-k",
            "orderMessageEnable",
            "-v",
            "true",
        ],
    )
    .await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("update name server config orderMessageEnable=true in name server[{ns}] OK\n")
    );
    let doc = admin(&ns, &["getNamesrvConfig", "--json"]).await.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["results"][0]["namesrv"], ns.as_str());
    assert_eq!(doc["results"][0]["result"]["orderMessageEnable"], "true");
    assert_eq!(
        doc["results"][0]["result"]["listenPort"],
        port.to_string().as_str()
    );

    // A black-listed key is refused per server: exit 1, the failure line on stderr.
    let run = admin(
        &ns,
        &[
            "updateNamesrvConfig",
            "-k",
            "kvConfigPath",
            "-v",
            "/tmp/elsewhere",
        ],
    )
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        format!(
            "update name server config kvConfigPath=/tmp/elsewhere in name server[{ns}] \
             Failed, answered NO_PERMISSION(16): Can not update config in black list.\n"
        )
    );
}
