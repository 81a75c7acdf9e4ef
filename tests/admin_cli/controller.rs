//! The controller commands (mqadmin's names and options) against our embedded controller: every
//! command in text (mqadmin's layout) and `--json`, refused requests (exit 1 with the remark),
//! unreachable controllers and brokers (exit 3), reads that follow the leader from a follower of
//! two controllers on a real etcd, a controller that lost its etcd lease (no leader), TLS and
//! signing to the controller port, and getBrokerEpoch against a listener answering
//! GET_BROKER_EPOCH_CACHE as a broker does (the interop scenario controller-admin5 asks real
//! 5.5.0 brokers).

use std::process::Command;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rmq_namesrv::protocol::controller::{
    ControllerBody, EpochEntry, EpochEntryCache, SyncStateSet,
};
use rmq_namesrv::protocol::{RemotingCodec, RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use tokio_util::codec::Framed;

use crate::fixtures::*;
use crate::run::*;
use crate::support::controller::{controller, controller_config, free_port};
use crate::support::*;

const CLUSTER: &str = "ctl-cluster";

fn ctl_addr(server: &NameServerHandle) -> String {
    server
        .controller_addr()
        .expect("controller enabled")
        .to_string()
}

/// `rmq-namesrv admin --timeout 2s <args>` (the NameServer of `-n` only where `args` say).
async fn ctl_admin(args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["admin", "--timeout", "2s"])
        .args(args)
        .env_remove("NAMESRV_ADDR");
    run_bin(cmd).await
}

/// Broker `name`'s id `id` at `addr` registered with the controller and alive, as a broker
/// does at start (next id, apply it, register, heartbeat).
async fn join(conn: &mut Client, name: &str, id: i64, addr: &str) {
    let r = conn
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID)
                .with_ext("clusterName", CLUSTER)
                .with_ext("brokerName", name)
                .with_ext("appliedBrokerId", id.to_string())
                .with_ext("registerCheckCode", format!("{addr};1700000000000")),
        )
        .await
        .expect("apply id");
    assert_eq!(r.code, 0, "{r:?}");
    let r = conn
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_REGISTER_BROKER)
                .with_ext("clusterName", CLUSTER)
                .with_ext("brokerName", name)
                .with_ext("brokerId", id.to_string())
                .with_ext("brokerAddress", addr),
        )
        .await
        .expect("register");
    assert_eq!(r.code, 0, "{r:?}");
    conn.oneway(
        RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
            .with_ext("clusterName", CLUSTER)
            .with_ext("brokerName", name)
            .with_ext("brokerId", id.to_string())
            .with_ext("brokerAddr", addr)
            .with_ext("epoch", "0")
            .with_ext("maxOffset", "0")
            .with_ext("heartbeatTimeoutMills", "60000"),
    )
    .await
    .expect("heartbeat");
}

/// broker-x: id 1 (127.0.0.1:10911) master, id 2 (127.0.0.1:10912) in its SyncStateSet; both
/// alive as long as `conn` is open.
async fn broker_set(conn: &mut Client) {
    join(conn, "broker-x", 1, "127.0.0.1:10911").await;
    join(conn, "broker-x", 2, "127.0.0.1:10912").await;
    let r = conn
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER)
                .with_ext("clusterName", CLUSTER)
                .with_ext("brokerName", "broker-x")
                .with_ext("brokerId", "1")
                .with_ext("designateElect", "false"),
        )
        .await
        .expect("elect");
    assert_eq!(r.code, 0, "{r:?}");
    both_in_sync(conn, 1, 1, 1).await;
}

/// Master `master` (of `master_epoch`) puts both brokers of broker-x in the SyncStateSet.
async fn both_in_sync(conn: &mut Client, master: i64, master_epoch: i32, set_epoch: i32) {
    let set = SyncStateSet {
        sync_state_set: [1, 2].into_iter().collect(),
        sync_state_set_epoch: set_epoch,
    };
    let r = conn
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET)
                .with_ext("brokerName", "broker-x")
                .with_ext("masterBrokerId", master.to_string())
                .with_ext("masterEpoch", master_epoch.to_string())
                .with_body(set.encode()),
        )
        .await
        .expect("alter");
    assert_eq!(r.code, 0, "{r:?}");
}

fn replica(id: i64, port: u16) -> String {
    format!(
        "ReplicaIdentity{{brokerName='broker-x', brokerId={id}, \
         brokerAddress='127.0.0.1:{port}', alive=true}}"
    )
}

#[actix::test]
async fn reads_print_mqadmin_s_layout_and_json() {
    let server = start_server(controller_config(&test_dir("adm-ctl-read")));
    let (ns, ctl) = (addr(&server), ctl_addr(&server));
    let mut conn = controller(&server).await;
    broker_set(&mut conn).await;
    let _brokers = register(
        &server,
        FakeBroker::new(
            CLUSTER,
            "broker-x",
            0,
            10911,
            vec!["T1".into(), "T2".into()],
        ),
    )
    .await;

    let run = ctl_admin(&["getControllerMetaData", "-a", &ctl]).await;
    run.assert_ok();
    let head = format!(
        "\n#ControllerGroup\tgroup-test\n#ControllerLeaderId\tn0\n#ControllerLeaderAddress\t{ctl}\n#Peer:\t"
    );
    assert!(run.stdout.starts_with(&head), "{run:?}");
    assert!(run.stdout.ends_with(&format!("{ctl}\n")), "{run:?}");
    let doc = ctl_admin(&["getControllerMetaData", "-a", &ctl, "--json"])
        .await
        .json();
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["controller"], ctl.as_str());
    assert_eq!(doc["result"]["controllerLeaderAddress"], ctl.as_str());
    assert_eq!(doc["result"]["isLeader"], true);
    assert_eq!(doc["result"]["peers"].as_array().map(Vec::len), Some(1));

    let expected = format!(
        "\n#brokerName\tbroker-x\n#MasterBrokerId\t1\n#MasterAddr\t127.0.0.1:10911\n\
         #MasterEpoch\t1\n#SyncStateSetEpoch\t2\n#SyncStateSetNums\t2\n\
         \nInSyncReplica:\t{}\n\nInSyncReplica:\t{}\n",
        replica(1, 10911),
        replica(2, 10912)
    );
    let run = ctl_admin(&["getSyncStateSet", "-a", &ctl, "-b", "broker-x"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, expected);
    // -c: the broker names come from the NameServer.
    let run = ctl_admin(&["-n", &ns, "getSyncStateSet", "-a", &ctl, "-c", CLUSTER]).await;
    run.assert_ok();
    assert_eq!(run.stdout, expected);
    let doc = ctl_admin(&["getSyncStateSet", "-a", &ctl, "-b", "broker-x", "--json"])
        .await
        .json();
    let info = &doc["result"]["replicasInfoTable"]["broker-x"];
    assert_eq!(info["masterBrokerId"], 1);
    assert_eq!(info["inSyncReplicas"].as_array().map(Vec::len), Some(2));
    let run = ctl_admin(&["-n", &ns, "getSyncStateSet", "-a", &ctl, "-c", "nope"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!("rmq-namesrv admin: name server {ns} knows no broker set of cluster nope\n")
    );

    let run = ctl_admin(&["getControllerConfig", "-a", &ctl]).await;
    run.assert_ok();
    assert!(
        run.stdout
            .starts_with(&format!("============{ctl}============\n")),
        "{run:?}"
    );
    let line = format!("{:<50}=  n0\n", "controllerDLegerSelfId");
    assert!(run.stdout.contains(&line), "{run:?}");
    let doc = ctl_admin(&["getControllerConfig", "-a", &ctl, "--json"])
        .await
        .json();
    assert_eq!(doc["results"][0]["controller"], ctl.as_str());
    assert_eq!(doc["results"][0]["result"]["controllerDLegerSelfId"], "n0");
    server.stop().await;
}

#[actix::test]
async fn writes_elect_clean_and_update_or_say_why_not() {
    let server = start_server(controller_config(&test_dir("adm-ctl-write")));
    let ctl = ctl_addr(&server);
    let mut conn = controller(&server).await;
    broker_set(&mut conn).await;

    let doc = ctl_admin(&[
        "electMaster",
        "-a",
        &ctl,
        "-b",
        "2",
        "--brokerName",
        "broker-x",
        "-c",
        CLUSTER,
        "--json",
    ])
    .await
    .json();
    assert_eq!(doc["ok"], true, "{doc}");
    assert_eq!(doc["controller"], ctl.as_str());
    assert_eq!(doc["result"]["masterBrokerId"], 2);
    assert_eq!(doc["result"]["masterEpoch"], 2);
    assert_eq!(doc["result"]["brokerAddrs"]["1"], "127.0.0.1:10911");
    // The master stays: refused with the remark.
    let run = ctl_admin(&[
        "electMaster",
        "-a",
        &ctl,
        "-b",
        "2",
        "-bn",
        "broker-x",
        "-c",
        CLUSTER,
    ])
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("CONTROLLER_MASTER_STILL_EXIST(2011)"),
        "{run:?}"
    );
    both_in_sync(&mut conn, 2, 2, 3).await;
    let run = ctl_admin(&[
        "electMaster",
        "-a",
        &ctl,
        "-b",
        "1",
        "-bn",
        "broker-x",
        "-c",
        CLUSTER,
    ])
    .await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!(
            "\n#ClusterName\t{CLUSTER}\n#BrokerName\tbroker-x\n#BrokerMasterAddr\t127.0.0.1:10911\
             \n#MasterEpoch\t3\n#SyncStateSetEpoch\t5\n\
             \t#Broker\t1\t127.0.0.1:10911\n\t#Broker\t2\t127.0.0.1:10912\n"
        )
    );

    let run = ctl_admin(&[
        "electMaster",
        "-a",
        &ctl,
        "-b",
        "1",
        "-bn",
        "broker-none",
        "-c",
        CLUSTER,
    ])
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "rmq-namesrv admin: controller {ctl} answered \
             CONTROLLER_BROKER_NEED_TO_BE_REGISTERED(2010): Broker hasn't been registered\n"
        )
    );

    // Living brokers are refused without -l.
    let run = ctl_admin(&[
        "cleanBrokerMetadata",
        "-a",
        &ctl,
        "-bn",
        "broker-x",
        "-b",
        "2",
        "-c",
        CLUSTER,
    ])
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("CONTROLLER_INVALID_CLEAN_BROKER_METADATA(2009)"),
        "{run:?}"
    );
    let run = ctl_admin(&["cleanBrokerMetadata", "-a", &ctl, "-bn", "broker-x", "-l"]).await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        "clear broker broker-x metadata from controller success! \n"
    );
    let run = ctl_admin(&["getSyncStateSet", "-a", &ctl, "-b", "broker-x", "--json"]).await;
    assert_eq!(
        run.json()["result"]["replicasInfoTable"],
        serde_json::json!({})
    );

    let run = ctl_admin(&[
        "updateControllerConfig",
        "-a",
        &ctl,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ])
    .await;
    run.assert_ok();
    assert_eq!(
        run.stdout,
        format!("update controller config enableElectUncleanMaster=true in controller[{ctl}] OK\n")
    );
    let run = ctl_admin(&["getControllerConfig", "-a", &ctl]).await;
    let line = format!("{:<50}=  true\n", "enableElectUncleanMaster");
    assert!(run.stdout.contains(&line), "{run:?}");
    let run = ctl_admin(&[
        "updateControllerConfig",
        "-a",
        &ctl,
        "-k",
        "configStorePath",
        "-v",
        "/tmp/x",
        "--json",
    ])
    .await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "update controller config configStorePath=/tmp/x in controller[{ctl}] Failed, \
             answered NO_PERMISSION(16): Can not update config in black list.\n"
        )
    );
    let error = &run.json()["results"][0]["error"];
    assert_eq!(error["name"], "NO_PERMISSION");
    assert_eq!(error["remark"], "Can not update config in black list.");
    server.stop().await;
}

#[actix::test]
async fn usage_errors_exit_2() {
    for args in [
        // cleanBrokerMetadata needs -c unless -l.
        &["cleanBrokerMetadata", "-a", "127.0.0.1:1", "-bn", "b"][..],
        &[
            "cleanBrokerMetadata",
            "-a",
            "127.0.0.1:1",
            "-bn",
            "b",
            "-l",
            "-b",
            "1;x",
        ],
        &["getSyncStateSet", "-a", "127.0.0.1:1"],
        &["getBrokerEpoch"],
        &[
            "electMaster",
            "-a",
            "127.0.0.1:1",
            "-b",
            "one",
            "-bn",
            "b",
            "-c",
            "c",
        ],
        &["getControllerMetaData", "-a", ";"],
    ] {
        let run = ctl_admin(args).await;
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
    }
}

#[actix::test]
async fn unreachable_controllers_exit_3_and_a_read_uses_the_next() {
    let server = start_server(controller_config(&test_dir("adm-ctl-down")));
    let ctl = ctl_addr(&server);
    let closed = closed_port();

    let run = ctl_admin(&["getControllerMetaData", "-a", &closed]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: cannot reach controller {closed}: "
        )),
        "{run:?}"
    );
    let doc = ctl_admin(&[
        "electMaster",
        "-a",
        &closed,
        "-b",
        "1",
        "-bn",
        "b",
        "-c",
        "c",
        "--json",
    ])
    .await
    .json();
    assert_eq!(doc["results"][0]["controller"], closed.as_str());
    assert_eq!(doc["results"][0]["error"]["kind"], "unreachable");

    // A read: the closed controller is skipped with a warning.
    let list = format!("{closed};{ctl}");
    let run = ctl_admin(&["getSyncStateSet", "-a", &list, "-b", "broker-none"]).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "rmq-namesrv admin: warning: cannot reach controller {closed}"
        )),
        "{run:?}"
    );
    // Every controller: one block, one failure line, the worst exit.
    let run = ctl_admin(&["getControllerConfig", "-a", &format!("{ctl};{closed}")]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(run
        .stdout
        .starts_with(&format!("============{ctl}============\n")));
    assert!(
        run.stderr.starts_with(&format!(
            "get controller config of controller[{closed}] Failed, unreachable: "
        )),
        "{run:?}"
    );
    server.stop().await;
}

/// Serves GET_BROKER_EPOCH_CACHE on `listener` as a broker does, `cache` for each, until the
/// test ends (one connection at a time, each bounded by the test's run).
fn serve_epoch_cache(listener: tokio::net::TcpListener, cache: EpochEntryCache) {
    actix::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let mut frames = Framed::new(stream, RemotingCodec::default());
            while let Some(Ok(request)) = frames.next().await {
                let response = if request.code == RequestCode::GET_BROKER_EPOCH_CACHE.0 {
                    RemotingCommand::success().with_body(cache.encode())
                } else {
                    RemotingCommand::response(
                        rmq_namesrv::protocol::ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
                        None,
                    )
                };
                if frames
                    .send(response.answering(request.opaque))
                    .await
                    .is_err()
                {
                    break;
                }
            }
        }
    });
}

#[actix::test]
async fn get_broker_epoch_asks_each_broker_the_name_server_lists() {
    let server = start_server(controller_config(&test_dir("adm-ctl-epoch")));
    let ns = addr(&server);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let cache = EpochEntryCache {
        broker_id: 1,
        broker_name: Some("broker-e".into()),
        cluster_name: Some(CLUSTER.into()),
        epoch_list: vec![
            EpochEntry {
                epoch: 1,
                start_offset: 0,
                end_offset: 100,
            },
            EpochEntry {
                epoch: 2,
                start_offset: 100,
                end_offset: i64::MAX,
            },
        ],
        max_offset: 250,
    };
    serve_epoch_cache(listener, cache);
    let _brokers = register(
        &server,
        FakeBroker::new(CLUSTER, "broker-e", 1, port, vec!["T1".into(), "T2".into()]),
    )
    .await;

    let expected = format!(
        "\n#clusterName\t{CLUSTER}\n#brokerName\tbroker-e\n#brokerAddr\t127.0.0.1:{port}\n#brokerId\t1\
         \n#Epoch: EpochEntry{{epoch=1, startOffset=0, endOffset=100}}\
         \n#Epoch: EpochEntry{{epoch=2, startOffset=100, endOffset=250}}\n"
    );
    let run = ctl_admin(&["-n", &ns, "getBrokerEpoch", "-b", "broker-e"]).await;
    run.assert_ok();
    assert_eq!(run.stdout, expected);
    let run = ctl_admin(&["-n", &ns, "getBrokerEpoch", "-c", CLUSTER]).await;
    run.assert_ok();
    assert_eq!(run.stdout, expected);
    let doc = ctl_admin(&["-n", &ns, "getBrokerEpoch", "-c", CLUSTER, "--json"])
        .await
        .json();
    assert_eq!(doc["results"][0]["broker"], format!("127.0.0.1:{port}"));
    assert_eq!(
        doc["results"][0]["result"]["epochList"][1]["endOffset"],
        250
    );

    let run = ctl_admin(&["-n", &ns, "getBrokerEpoch", "-b", "broker-none"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    // A broker the NameServer lists that is gone: exit 3 naming it.
    let gone = free_port();
    let _gone = register(
        &server,
        FakeBroker::new(
            CLUSTER,
            "broker-gone",
            0,
            gone,
            vec!["T3".into(), "T4".into()],
        ),
    )
    .await;
    let run = ctl_admin(&["-n", &ns, "getBrokerEpoch", "-b", "broker-gone"]).await;
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.starts_with(&format!(
            "get broker epoch of broker[127.0.0.1:{gone}] Failed, unreachable: "
        )),
        "{run:?}"
    );
    server.stop().await;
}

/// Two controllers on one etcd: commands given only the follower reach the leader.
#[actix::test]
async fn reads_and_writes_given_a_follower_reach_the_leader() {
    let etcd = crate::support::etcd::start();
    let dir = test_dir("adm-ctl-etcd");
    let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{}", free_port(), free_port());
    let config = |me: &str| {
        let mut config = controller_config(&dir);
        config.controller.peers = peers.clone();
        config.controller.self_id = me.to_owned();
        // Each controller writes UPDATE_CONTROLLER_CONFIG to a file of its own.
        config.controller.config_store_path = dir.join(format!("controller-{me}.properties"));
        config.controller.etcd_endpoints = etcd.endpoint();
        config.controller.etcd_prefix = format!("/rmq-test/{}", dir.display());
        config.controller.etcd_lease_ttl = Duration::from_secs(2);
        config
    };
    let first = start_server(config("n0"));
    let leader = ctl_addr(&first);
    let leads = eventually(Duration::from_secs(10), || {
        let leader = leader.clone();
        async move {
            let run = ctl_admin(&["getControllerMetaData", "-a", &leader, "--json"]).await;
            run.code == 0 && run.json()["result"]["isLeader"] == true
        }
    })
    .await;
    assert!(leads, "the first controller never became leader");
    let second = start_server(config("n1"));
    let follower = ctl_addr(&second);
    let mut conn = controller(&first).await;
    broker_set(&mut conn).await;

    let run = ctl_admin(&["getControllerMetaData", "-a", &follower]).await;
    run.assert_ok();
    assert!(
        run.stdout
            .contains(&format!("#ControllerLeaderAddress\t{leader}\n")),
        "{run:?}"
    );
    let doc = ctl_admin(&[
        "getSyncStateSet",
        "-a",
        &follower,
        "-b",
        "broker-x",
        "--json",
    ])
    .await
    .json();
    assert_eq!(doc["controller"], leader.as_str(), "{doc}");
    assert_eq!(
        doc["result"]["replicasInfoTable"]["broker-x"]["masterBrokerId"],
        1
    );
    let run = ctl_admin(&[
        "electMaster",
        "-a",
        &follower,
        "-b",
        "2",
        "-bn",
        "broker-x",
        "-c",
        CLUSTER,
    ])
    .await;
    run.assert_ok();
    assert!(
        run.stdout.contains("#BrokerMasterAddr\t127.0.0.1:10912\n"),
        "{run:?}"
    );
    // updateControllerConfig goes to every controller listed, one line each.
    let both = format!("{leader};{follower}");
    let run = ctl_admin(&[
        "updateControllerConfig",
        "-a",
        &both,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ])
    .await;
    run.assert_ok();
    assert_eq!(run.stdout.lines().count(), 2, "{run:?}");
    second.stop().await;
    first.stop().await;
}

/// A controller whose etcd froze steps down: leader-only commands then end with exit 1 and say
/// why, and work again once etcd is back.
#[actix::test]
async fn a_controller_without_leadership_is_exit_1_naming_why() {
    let etcd = crate::support::etcd::start();
    let dir = test_dir("adm-ctl-lost");
    let mut config = controller_config(&dir);
    config.controller.etcd_endpoints = etcd.endpoint();
    config.controller.etcd_prefix = format!("/rmq-test/{}", dir.display());
    config.controller.etcd_lease_ttl = Duration::from_secs(2);
    let server = start_server(config);
    let ctl = ctl_addr(&server);
    let sync_state = || {
        let ctl = ctl.clone();
        async move { ctl_admin(&["getSyncStateSet", "-a", &ctl, "-b", "broker-x", "--json"]).await }
    };
    assert!(
        eventually(Duration::from_secs(10), || async {
            sync_state().await.code == 0
        })
        .await,
        "never served as leader"
    );
    etcd.pause();
    // Bounded: 50 tries, 200 ms apart (the lease TTL is 2 s).
    let mut run = sync_state().await;
    for _ in 0..50 {
        if run.code != 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        run = sync_state().await;
    }
    // Its metadata names no leader: nobody to send the request to.
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stderr,
        format!("rmq-namesrv admin: controller {ctl} knows no controller leader\n")
    );
    assert_eq!(run.json()["results"][0]["error"]["kind"], "no_leader");
    etcd.resume();
    assert!(
        eventually(Duration::from_secs(10), || async {
            sync_state().await.code == 0
        })
        .await,
        "not serving again after etcd came back"
    );
    server.stop().await;
}

/// The controller port behind enforcing TLS and the secure access profile: the commands reach it
/// with --tls-ca, and a configuration change needs an admin's signature (--access-key).
#[actix::test]
async fn tls_and_signing_options_reach_the_controller_port() {
    use crate::support::pki::{serving, Pki};
    use rmq_namesrv::config::{Profile, TlsMode};

    let dir = test_dir("adm-ctl-tls");
    let pki = Pki::new(&dir);
    let cert = pki.issue("server", 7);
    let mut config = controller_config(&dir);
    config.tls = serving(TlsMode::Enforcing, &cert);
    let acl = dir.join("plain_acl.yml");
    std::fs::write(
        &acl,
        "accounts:\n  - accessKey: adminKey\n    secretKey: adminSecret\n    admin: true\n",
    )
    .expect("write the ACL file");
    config.access.acl_file = acl;
    config.access.profile = Profile::Secure;
    let server = start_server(config);
    let ctl = ctl_addr(&server);
    let ca = pki.ca_path.to_string_lossy().into_owned();

    let run = ctl_admin(&["--tls-ca", &ca, "getControllerMetaData", "-a", &ctl]).await;
    run.assert_ok();
    assert!(
        run.stdout
            .contains(&format!("#ControllerLeaderAddress\t{ctl}\n")),
        "{run:?}"
    );
    // Plaintext to an enforcing port: no answer, exit 3.
    let run = ctl_admin(&["getControllerMetaData", "-a", &ctl]).await;
    assert_eq!(run.code, 3, "{run:?}");

    let update = [
        "updateControllerConfig",
        "-a",
        &ctl,
        "-k",
        "enableElectUncleanMaster",
        "-v",
        "true",
    ];
    let mut unsigned = vec!["--tls-ca", &ca];
    unsigned.extend(update);
    let run = ctl_admin(&unsigned).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("NO_PERMISSION(16)"), "{run:?}");
    let mut signed = vec![
        "--tls-ca",
        &ca,
        "--access-key",
        "adminKey",
        "--secret-key",
        "adminSecret",
    ];
    signed.extend(update);
    let run = ctl_admin(&signed).await;
    run.assert_ok();
    server.stop().await;
}
