//! `admin status`: the summary of each NameServer from its remoting port.

use rmq_namesrv::tools::broker::FakeBroker;

use crate::fixtures::*;
use crate::run::*;
use crate::support::*;

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
