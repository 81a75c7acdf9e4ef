//! `rmq-namesrv admin` as an operator runs it: the built binary against real servers started
//! in-process on 127.0.0.1, every command in text and `--json`, exit codes, unreachable servers,
//! and writes to several NameServers.

mod support;

use std::process::{Command, Stdio};
use std::time::Duration;

use rmq_namesrv::protocol::body::TopicRouteData;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use serde_json::Value;
use support::*;

const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");
/// Bound on one run of the binary (its own --timeout is far shorter).
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// One finished run of the binary.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        assert_eq!(
            self.stdout.lines().count(),
            1,
            "one JSON document: {self:?}"
        );
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    fn assert_ok(&self) {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stderr, "", "{self:?}");
    }
}

/// Runs the binary off the actix thread, so the in-process servers keep serving.
async fn run_bin(mut cmd: Command) -> Run {
    cmd.stdin(Stdio::null());
    let waiting = tokio::task::spawn_blocking(move || cmd.output());
    let output = tokio::time::timeout(RUN_LIMIT, waiting)
        .await
        .expect("the admin command finishes")
        .expect("join")
        .expect("spawn rmq-namesrv");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `rmq-namesrv admin -n <namesrv> --timeout 2s <args>`.
async fn admin(namesrv: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["admin", "-n", namesrv, "--timeout", "2s"])
        .args(args)
        .env_remove("NAMESRV_ADDR");
    run_bin(cmd).await
}

fn addr(server: &NameServerHandle) -> String {
    server.local_addr().to_string()
}

/// Registers `broker` on its own connection; the broker lives as long as the connection.
async fn register(server: &NameServerHandle, broker: FakeBroker) -> Client {
    let mut conn = connect(server).await;
    let resp = conn.request(broker.register()).await.expect("register");
    assert_eq!(resp.code, 0, "{resp:?}");
    conn
}

/// broker-a: TopicA, TopicB; broker-b: TopicB, TopicC (a first registration needs two topics).
async fn two_brokers(server: &NameServerHandle) -> (Client, Client) {
    let a = register(
        server,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let b = register(
        server,
        FakeBroker::master("broker-b", 10921, &["TopicB", "TopicC"]),
    )
    .await;
    (a, b)
}

/// A port on 127.0.0.1 with nothing listening.
fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    addr.to_string()
}

async fn kv_value(server: &NameServerHandle, ns: &str, key: &str) -> Option<String> {
    let mut conn = connect(server).await;
    let resp = conn
        .request(
            RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                .with_ext("namespace", ns)
                .with_ext("key", key),
        )
        .await
        .expect("GET_KV_CONFIG");
    resp.ext("value").map(str::to_owned)
}

fn perms(route: &Value) -> Vec<(String, i64)> {
    route["queueDatas"]
        .as_array()
        .expect("queueDatas")
        .iter()
        .map(|q| {
            (
                q["brokerName"].as_str().unwrap_or_default().to_owned(),
                q["perm"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

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

#[actix::test]
async fn unreachable_name_server_exits_3_naming_it() {
    let closed = closed_port();

    let run = admin(&closed, &["clusterList"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: cannot reach name server {closed}: "
        )),
        "{run:?}"
    );
    let run = admin(&closed, &["getKvConfig", "-s", "ns", "-k", "k", "--json"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["results"][0]["namesrv"], closed.as_str());
    assert_eq!(doc["results"][0]["error"]["kind"], "unreachable");
    assert!(run.stderr.contains(&closed), "{run:?}");

    let run = admin(&closed, &["wipeWritePerm", "-b", "broker-a"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "wipe write perm of broker[broker-a] in name server[{closed}] Failed, unreachable: "
        )),
        "{run:?}"
    );

    // A listener that never answers: the request times out.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let silent_addr = silent.local_addr().expect("local addr").to_string();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "admin",
        "topicList",
        "-n",
        &silent_addr,
        "--timeout",
        "300ms",
    ]);
    let run = run_bin(cmd).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "rmq-namesrv admin: cannot reach name server {silent_addr}: no response within 300ms\n"
        )
    );
    drop(silent);
}

#[actix::test]
async fn reads_use_the_first_name_server_that_answers() {
    let server = start_server(test_config());
    let _brokers = two_brokers(&server).await;
    let ns = addr(&server);
    let closed = closed_port();

    let run = admin(&format!("{closed};{ns}"), &["topicList"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "TopicA\nTopicB\nTopicC\n");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: warning: cannot reach name server {closed}: "
        )),
        "{run:?}"
    );
    let doc = admin(&format!("{closed};{ns}"), &["clusterList", "--json"])
        .await
        .json();
    assert_eq!(doc["namesrv"], ns.as_str());

    // An answer, even a refusal, ends the search: the second server is not asked.
    let other = start_server(test_config());
    let other_ns = addr(&other);
    assert_eq!(
        admin(
            &other_ns,
            &["updateKvConfig", "-s", "ns", "-k", "k", "-v", "v"]
        )
        .await
        .code,
        0
    );
    let run = admin(
        &format!("{ns};{other_ns}"),
        &["getKvConfig", "-s", "ns", "-k", "k"],
    )
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&ns), "{run:?}");

    // Without -n the address list comes from NAMESRV_ADDR.
    let mut cmd = Command::new(BIN);
    cmd.args(["admin", "topicList"])
        .env("NAMESRV_ADDR", format!("{closed};{ns}"));
    let run = run_bin(cmd).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "TopicA\nTopicB\nTopicC\n");
}

#[actix::test]
async fn writes_reach_every_name_server() {
    let first = start_server(test_config());
    let second = start_server(test_config());
    let _on_first = register(
        &first,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let _on_second = register(
        &second,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let (a, b) = (addr(&first), addr(&second));
    let both = format!("{a};{b}");

    let run = admin(&both, &["updateKvConfig", "-s", "ns", "-k", "k", "-v", "v"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!(
            "update kv config [ns] k=v in name server[{a}] OK\n\
             update kv config [ns] k=v in name server[{b}] OK\n"
        )
    );
    assert_eq!(kv_value(&first, "ns", "k").await.as_deref(), Some("v"));
    assert_eq!(kv_value(&second, "ns", "k").await.as_deref(), Some("v"));

    let run = admin(&both, &["wipeWritePerm", "-b", "broker-a", "--json"]).await;
    run.assert_ok();
    let doc = run.json();
    assert_eq!(doc["ok"], true);
    assert_eq!(
        doc["results"],
        serde_json::json!([
            { "namesrv": a, "ok": true, "result": { "wipeTopicCount": 2 } },
            { "namesrv": b, "ok": true, "result": { "wipeTopicCount": 2 } },
        ])
    );
    for ns in [&a, &b] {
        let doc = admin(ns, &["topicRoute", "-t", "TopicA", "--json"])
            .await
            .json();
        assert_eq!(perms(&doc["result"]), [("broker-a".to_owned(), 4)], "{ns}");
    }

    let run = admin(&both, &["deleteKvConfig", "-s", "ns", "-k", "k"]).await;
    run.assert_ok();
    assert_eq!(run.stdout.lines().count(), 2);
    assert_eq!(kv_value(&first, "ns", "k").await, None);
    assert_eq!(kv_value(&second, "ns", "k").await, None);

    let run = admin(&both, &["getNamesrvConfig"]).await;
    run.assert_ok();
    assert!(run
        .stdout
        .starts_with(&format!("============{a}============\n")));
    assert!(run
        .stdout
        .contains(&format!("\n============{b}============\n")));

    // One server down: the others still get the write; exit 3 names the missing one.
    let closed = closed_port();
    let run = admin(
        &format!("{a};{closed}"),
        &["updateKvConfig", "-s", "ns", "-k", "k2", "-v", "v2"],
    )
    .await;
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        run.stdout,
        format!("update kv config [ns] k2=v2 in name server[{a}] OK\n")
    );
    assert!(
        run.stderr.starts_with(&format!(
            "update kv config [ns] k2=v2 in name server[{closed}] Failed, unreachable: "
        )),
        "{run:?}"
    );
    assert_eq!(kv_value(&first, "ns", "k2").await.as_deref(), Some("v2"));
}

#[actix::test]
async fn status_summarizes_each_name_server_from_the_remoting_port() {
    let server = start_server(test_config());
    let ns = addr(&server);
    let _brokers = two_brokers(&server).await;
    let _slave = register(
        &server,
        FakeBroker::slave("broker-a", 10912, &["TopicA", "TopicB"]),
    )
    .await;
    let other = FakeBroker::new(
        "OtherCluster",
        "broker-c",
        0,
        10931,
        vec!["TopicD".to_owned(), "OrderTopic".to_owned()],
    );
    let _other = register(&server, other).await;
    admin(
        &ns,
        &[
            "updateKvConfig",
            "-s",
            "ORDER_TOPIC_CONFIG",
            "-k",
            "OrderTopic",
            "-v",
            "broker-c:8",
        ],
    )
    .await
    .assert_ok();

    let run = admin(&ns, &["status"]).await;
    run.assert_ok();
    let expected = format!(
        "============{ns}============\n\
         2 clusters, 3 broker groups, 4 brokers (3 masters, 1 slave), 5 topics\n\
         \n\
         #Cluster        #Broker Group  #BID  #Role   #Addr\n\
         DefaultCluster  broker-a       0     master  127.0.0.1:10911\n\
         DefaultCluster  broker-a       1     slave   127.0.0.1:10912\n\
         DefaultCluster  broker-b       0     master  127.0.0.1:10921\n\
         OtherCluster    broker-c       0     master  127.0.0.1:10931\n\
         \n\
         #Cluster        #Broker Groups  #Topics\n\
         DefaultCluster  2               3\n\
         OtherCluster    1               2\n\
         \n\
         KV namespaces: ORDER_TOPIC_CONFIG (1 key)\n\
         #Namespace          #Key        #Value\n\
         ORDER_TOPIC_CONFIG  OrderTopic  broker-c:8\n\
         \n\
         configuration: "
    );
    assert!(run.stdout.starts_with(&expected), "{run:?}");
    let port = ns.rsplit_once(':').map(|(_, p)| p).unwrap_or_default();
    assert!(
        run.stdout
            .contains(&format!("\nlistenPort                   {port}\n")),
        "{run:?}"
    );
    assert!(!run.stdout.contains("note:"), "{run:?}");

    // -t: the matching topics' queues and permissions; -s: other namespaces (empty ones too).
    let run = admin(
        &ns,
        &[
            "status",
            "-t",
            "topicb",
            "-s",
            "nothing-here",
            "-s",
            "ORDER_TOPIC_CONFIG",
        ],
    )
    .await;
    run.assert_ok();
    assert!(
        run.stdout.contains(
            "\ntopics containing \"topicb\": 1 matching, 1 shown\n\
             #Topic  #Broker Group  #Read  #Write  #Perm\n\
             TopicB  broker-a       4      4       RW- (6)\n\
             TopicB  broker-b       4      4       RW- (6)\n"
        ),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("KV namespaces: nothing-here (0 keys), ORDER_TOPIC_CONFIG (1 key)\n"),
        "{run:?}"
    );

    let doc = admin(&ns, &["status", "--json", "--topic", "Order"])
        .await
        .json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["results"][0]["namesrv"], ns.as_str());
    let result = &doc["results"][0]["result"];
    assert_eq!(
        result["counters"],
        serde_json::json!({
            "clusters": 2, "broker_groups": 3, "brokers": 4, "masters": 3, "slaves": 1, "topics": 5
        })
    );
    assert_eq!(result["clusters"][0]["cluster"], "DefaultCluster");
    assert_eq!(result["clusters"][0]["topics"], 3);
    assert_eq!(
        result["clusters"][0]["groups"][0],
        serde_json::json!({
            "name": "broker-a",
            "zone": null,
            "enable_acting_master": false,
            "brokers": [
                { "id": 0, "role": "master", "address": "127.0.0.1:10911" },
                { "id": 1, "role": "slave", "address": "127.0.0.1:10912" },
            ],
        })
    );
    assert_eq!(result["clusters"][1]["cluster"], "OtherCluster");
    assert_eq!(
        result["topics"],
        serde_json::json!({
            "filter": "Order",
            "matched": 1,
            "shown": [{ "topic": "OrderTopic", "queues": [{
                "broker": "broker-c", "read": 4, "write": 4, "perm": 6, "perm_text": "RW-",
            }]}],
        })
    );
    assert_eq!(
        result["kv"],
        serde_json::json!([{ "namespace": "ORDER_TOPIC_CONFIG", "entries": { "OrderTopic": "broker-c:8" } }])
    );
    assert_eq!(result["config"]["listenPort"], port);
    assert_eq!(result["notes"], serde_json::json!([]));

    // Several NameServers: each its own block; an unreachable one exits 3, naming it.
    let second = start_server(test_config());
    let closed = closed_port();
    let list = format!("{ns};{};{closed}", addr(&second));
    let run = admin(&list, &["status"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run.stdout.starts_with(&expected), "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "============{}============\n\
             0 clusters, 0 broker groups, 0 brokers (0 masters, 0 slaves), 0 topics\n",
            addr(&second)
        )),
        "{run:?}"
    );
    assert!(
        run.stderr.starts_with(&format!(
            "status of name server[{closed}] Failed, unreachable: "
        )),
        "{run:?}"
    );
    let run = admin(&list, &["status", "--json"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["results"][2]["error"]["kind"], "unreachable");
    assert_eq!(doc["results"][0]["ok"], true);
    assert_eq!(doc["results"][1]["result"]["counters"]["brokers"], 0);
    assert_eq!(doc["results"][2]["ok"], false);
}

#[test]
fn usage_errors_exit_2_and_help_mentions_admin() {
    let status = |args: &[&str]| {
        let output = Command::new(BIN)
            .args(args)
            .env_remove("NAMESRV_ADDR")
            .stdin(Stdio::null())
            .output()
            .expect("spawn rmq-namesrv");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    for args in [
        &["admin"][..],
        &["admin", "topicRoute"],
        &["admin", "noSuchCommand"],
        &["admin", "clusterList", "-n", "no-port"],
        &["admin", "clusterList", "-n", ";"],
        &["admin", "clusterList", "--timeout", "soon"],
        &["admin", "clusterList", "--timeout", "0s"],
        &["admin", "updateKvConfig", "-s", "ns", "-k", "k"],
        &["--listen", "127.0.0.1:0", "admin", "clusterList"],
    ] {
        let (code, stdout, stderr) = status(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(!stderr.is_empty(), "{args:?}");
    }
    let (code, stdout, _) = status(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("--listen"), "{stdout}");
    assert!(stdout.contains("admin"), "{stdout}");
    let (code, stdout, _) = status(&["admin", "--help"]);
    assert_eq!(code, Some(0));
    for command in [
        "clusterList",
        "topicRoute",
        "topicList",
        "getKvConfig",
        "updateKvConfig",
        "deleteKvConfig",
        "kvList",
        "wipeWritePerm",
        "addWritePerm",
        "deleteTopic",
        "getNamesrvConfig",
        "updateNamesrvConfig",
        "status",
    ] {
        assert!(stdout.contains(command), "{command}: {stdout}");
    }
}
