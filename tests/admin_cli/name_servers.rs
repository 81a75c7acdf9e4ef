//! Several NameServers in `-n`: an unreachable one is named with exit code 3, reads use the first
//! that answers, writes reach every one.

use std::process::Command;

use rmq_namesrv::tools::broker::FakeBroker;

use crate::fixtures::*;
use crate::run::*;
use crate::support::*;

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
