//! `fleetCheck`: two of our NameServers that agree (exit 0), drift of each kind between them
//! (exit 1, in text and `--json`), and a NameServer that cannot be asked (exit 3).

use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use serde_json::Value;

use crate::fixtures::*;
use crate::run::*;
use crate::support::*;

/// Two NameServers with broker-a and broker-b registered on both; the connections keep the
/// brokers alive.
async fn fleet() -> (NameServerHandle, NameServerHandle, String, Vec<Client>) {
    let (one, two) = (start_server(test_config()), start_server(test_config()));
    let mut conns = Vec::new();
    for server in [&one, &two] {
        let (a, b) = two_brokers(server).await;
        conns.extend([a, b]);
    }
    let list = format!("{};{}", addr(&one), addr(&two));
    (one, two, list, conns)
}

/// `fleetCheck --json` with `extra` arguments: exit code and document.
async fn check_json(list: &str, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["fleetCheck", "--json"];
    args.extend_from_slice(extra);
    let run = admin(list, &args).await;
    (run.code, run.json())
}

fn count(doc: &Value, kind: &str) -> u64 {
    doc["counts"][kind].as_u64().unwrap_or(u64::MAX)
}

/// The findings of `kind`.
fn findings<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["kind"] == kind)
        .collect()
}

#[actix::test]
async fn an_agreeing_fleet_exits_0() {
    let (_one, _two, list, _conns) = fleet().await;
    let run = admin(&list, &["fleetCheck"]).await;
    run.assert_ok();
    assert!(run.stdout.contains("3 topic(s)"), "{run:?}");
    assert!(run.stdout.ends_with("the name servers agree\n"), "{run:?}");
    let (code, doc) = check_json(&list, &["--data-versions"]).await;
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["topics"], 3);
    for kind in ["broker", "topic", "queue", "data_version", "kv", "config"] {
        assert_eq!(count(&doc, kind), 0, "{kind}: {doc}");
    }
}

#[actix::test]
async fn a_broker_registered_with_one_only_is_drift() {
    let (one, two, list, _conns) = fleet().await;
    let _c = register(
        &one,
        FakeBroker::master("broker-c", 10931, &["TopicD", "TopicE"]),
    )
    .await;
    let run = admin(&list, &["fleetCheck"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("broker drift: 1\n"), "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "  cluster DefaultCluster broker broker-c id 0 addr 127.0.0.1:10931\n    {}: present\n    {}: (none)\n",
            addr(&one),
            addr(&two)
        )),
        "{run:?}"
    );
    let (code, doc) = check_json(&list, &[]).await;
    assert_eq!(code, 1);
    assert_eq!(doc["ok"], false);
    assert_eq!(count(&doc, "broker"), 1);
    assert_eq!(count(&doc, "topic"), 2, "{doc}");
    let topic = findings(&doc, "topic")[0];
    assert_eq!(topic["subject"], "topic TopicD");
    assert_eq!(topic["values"][addr(&one)], "present");
    assert_eq!(topic["values"][addr(&two)], Value::Null);
}

#[actix::test]
async fn different_queues_of_a_topic_are_drift() {
    let (one, two) = (start_server(test_config()), start_server(test_config()));
    let mut wide = FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]);
    wide.queues = 8;
    let _a1 = register(&one, wide).await;
    let _a2 = register(
        &two,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let list = format!("{};{}", addr(&one), addr(&two));
    let (code, doc) = check_json(&list, &[]).await;
    assert_eq!(code, 1, "{doc}");
    assert_eq!(count(&doc, "queue"), 2, "{doc}");
    assert_eq!(count(&doc, "broker"), 0, "{doc}");
    let queue = findings(&doc, "queue")[0];
    assert_eq!(queue["subject"], "topic TopicA queues on broker broker-a");
    assert_eq!(
        queue["values"][addr(&one)],
        "read 8 write 8 perm 6 sysflag 0"
    );
    assert_eq!(
        queue["values"][addr(&two)],
        "read 4 write 4 perm 6 sysflag 0"
    );
}

#[actix::test]
async fn a_different_data_version_is_drift_when_asked_for() {
    let (one, two) = (start_server(test_config()), start_server(test_config()));
    let _a1 = register(
        &one,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let mut newer = FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]);
    newer.version.counter = 2;
    let _a2 = register(&two, newer).await;
    let list = format!("{};{}", addr(&one), addr(&two));
    // Not compared by default (QUERY_DATA_VERSION refreshes liveness).
    let (code, doc) = check_json(&list, &[]).await;
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = check_json(&list, &["--data-versions"]).await;
    assert_eq!(code, 1, "{doc}");
    assert_eq!(count(&doc, "data_version"), 1, "{doc}");
    let version = findings(&doc, "data_version")[0];
    assert_eq!(
        version["values"][addr(&two)],
        "stateVersion 0 counter 2 timestamp 1700000000000"
    );
}

#[actix::test]
async fn kv_entries_and_configuration_keys_that_differ_are_drift() {
    let (one, two, list, _conns) = fleet().await;
    let mut conn = connect(&one).await;
    let resp = conn
        .request(put_kv("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4"))
        .await
        .expect("PUT_KV_CONFIG");
    assert_eq!(resp.code, 0, "{resp:?}");
    let run = admin(
        &addr(&two),
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

    let (code, doc) = check_json(&list, &[]).await;
    assert_eq!(code, 1, "{doc}");
    assert_eq!(count(&doc, "kv"), 1, "{doc}");
    let kv = findings(&doc, "kv")[0];
    assert_eq!(kv["subject"], "kv ORDER_TOPIC_CONFIG TopicA");
    assert_eq!(kv["values"][addr(&one)], "broker-a:4");
    assert_eq!(kv["values"][addr(&two)], Value::Null);
    assert_eq!(count(&doc, "config"), 1, "{doc}");
    let config = findings(&doc, "config")[0];
    assert_eq!(config["subject"], "config orderMessageEnable");
    assert_eq!(config["values"][addr(&two)], "true");
    // listenPort differs by nature and is not compared; a key can be left out.
    let (code, doc) = check_json(
        &list,
        &["--ignore-key", "orderMessageEnable", "-s", "OTHER"],
    )
    .await;
    assert_eq!(code, 0, "{doc}");
}

#[actix::test]
async fn a_name_server_that_cannot_be_asked_exits_3() {
    let (one, _two, _list, _conns) = fleet().await;
    let closed = closed_port();
    let list = format!("{};{closed}", addr(&one));
    let run = admin(&list, &["fleetCheck"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: cannot reach name server {closed}: "
        )),
        "{run:?}"
    );
    assert!(
        run.stdout.contains(&format!("not asked: {closed}\n")),
        "{run:?}"
    );
    let (code, doc) = check_json(&list, &[]).await;
    assert_eq!(code, 3);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["failures"][0]["namesrv"], closed.as_str());
    assert_eq!(doc["failures"][0]["error"]["kind"], "unreachable");
}
