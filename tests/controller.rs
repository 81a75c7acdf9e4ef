//! The embedded controller over TCP (docs/controller.md): every controller code on the
//! controller's own port, the NameServer port refusing them, broker-id allocation, elections
//! with and without in-sync replicas, SyncStateSet epochs, the failover a closed master
//! connection starts with its NOTIFY_BROKER_ROLE_CHANGED, and the state surviving a restart.

mod support;

use std::path::Path;
use std::time::Duration;

use futures_util::StreamExt;
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::controller::{
    BrokerReplicasInfo, ControllerBody, ElectMasterResponseBody, SyncStateSet,
};
use rmq_namesrv::protocol::{properties, RemotingCodec, RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use support::controller::{controller, controller_config, free_port};
use support::*;
use tokio_util::codec::FramedRead;

const CLUSTER: &str = "ctl-cluster";

fn code(c: i32) -> RequestCode {
    RequestCode(c)
}

fn next_id(name: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_GET_NEXT_BROKER_ID)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
}

fn apply_id(name: &str, id: i64, check: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
        .with_ext("appliedBrokerId", id.to_string())
        .with_ext("registerCheckCode", check)
}

fn register(name: &str, id: i64, addr: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_REGISTER_BROKER)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
        .with_ext("brokerId", id.to_string())
        .with_ext("brokerAddress", addr)
}

fn heartbeat(name: &str, id: i64, addr: &str, epoch: i32, offset: i64) -> RemotingCommand {
    RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
        .with_ext("brokerId", id.to_string())
        .with_ext("brokerAddr", addr)
        .with_ext("epoch", epoch.to_string())
        .with_ext("maxOffset", offset.to_string())
        .with_ext("heartbeatTimeoutMills", "10000")
}

fn elect(name: &str, id: i64, designate: bool) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
        .with_ext("brokerId", id.to_string())
        .with_ext("designateElect", designate.to_string())
}

fn replica_info(name: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_GET_REPLICA_INFO).with_ext("brokerName", name)
}

fn alter(name: &str, master: i64, master_epoch: i32, set: &[i64], epoch: i32) -> RemotingCommand {
    let body = SyncStateSet {
        sync_state_set: set.iter().copied().collect(),
        sync_state_set_epoch: epoch,
    };
    RemotingCommand::request(RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET)
        .with_ext("brokerName", name)
        .with_ext("masterBrokerId", master.to_string())
        .with_ext("masterEpoch", master_epoch.to_string())
        .with_body(body.encode())
}

/// Gets broker `name`'s id `id` registered and alive (on `conn`), as a broker does at start.
async fn join(conn: &mut Client, name: &str, id: i64, addr: &str) {
    let r = conn.request(next_id(name)).await.unwrap();
    assert_eq!(
        (r.code, r.ext("nextBrokerId")),
        (0, Some(id.to_string().as_str())),
        "{r:?}"
    );
    let r = conn
        .request(apply_id(name, id, &format!("{addr};1700000000000")))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let r = conn.request(register(name, id, addr)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    conn.oneway(heartbeat(name, id, addr, 0, 0)).await.unwrap();
}

async fn master_of(conn: &mut Client, name: &str) -> (Option<String>, Option<String>) {
    let r = conn.request(replica_info(name)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    (
        r.ext("masterBrokerId").map(str::to_owned),
        r.ext("masterEpoch").map(str::to_owned),
    )
}

#[actix::test]
async fn the_nameserver_port_refuses_controller_codes_and_metadata_names_the_leader() {
    let dir = test_dir("ctl-meta");
    let server = start_server(controller_config(&dir));
    let mut ns = connect(&server).await;
    for c in [
        1001, 1002, 1003, 1004, 1005, 1006, 1009, 1010, 1011, 1012, 1013,
    ] {
        let r = ns.request(RemotingCommand::request(code(c))).await.unwrap();
        assert_eq!(r.code, 3, "code {c} on the NameServer port: {r:?}");
    }
    let mut ctl = controller(&server).await;
    let r = ctl
        .request(RemotingCommand::request(
            RequestCode::CONTROLLER_GET_METADATA_INFO,
        ))
        .await
        .unwrap();
    let addr = server.controller_addr().unwrap().to_string();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.ext("group"), Some("group-test"));
    assert_eq!(r.ext("controllerLeaderId"), Some("n0"));
    assert_eq!(r.ext("controllerLeaderAddress"), Some(addr.as_str()));
    assert_eq!(r.ext("isLeader"), Some("true"));
    assert_eq!(r.ext("peers"), Some(format!("n0:{addr};").as_str()));
    // The NameServer's own codes are not served on the controller's port.
    let r = ctl.request(route_request("TopicA")).await.unwrap();
    assert_eq!(r.code, 3, "{r:?}");
    // A heartbeat sent as a request without a broker id.
    let r = ctl
        .request(
            RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
                .with_ext("clusterName", CLUSTER)
                .with_ext("brokerAddr", "127.0.0.1:1"),
        )
        .await
        .unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (2005, Some("Heart beat with empty brokerId"))
    );
    // A broker id that is not a number is none, as Java's header decoder leaves it.
    let r = ctl
        .request(heartbeat("b", 1, "127.0.0.1:1", 0, 0).with_ext("brokerId", "x"))
        .await
        .unwrap();
    assert_eq!(r.code, 2005, "{r:?}");
}

#[actix::test]
async fn broker_ids_elections_and_sync_state_sets_follow_java_rules() {
    let dir = test_dir("ctl-rules");
    let server = start_server(controller_config(&dir));
    let mut ctl = controller(&server).await;
    let name = "broker-rules";

    // Unknown set: register and elect need registration; replica info says so.
    let r = ctl.request(register(name, 1, "127.0.0.1:1")).await.unwrap();
    assert_eq!(r.code, 2010, "{r:?}");
    let r = ctl.request(replica_info(name)).await.unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (2008, Some("Broker metadata is not existed"))
    );
    let r = ctl
        .request(apply_id(name, 2, "127.0.0.1:1;1"))
        .await
        .unwrap();
    assert_eq!(r.code, 2014, "only id 1 creates a set: {r:?}");

    join(&mut ctl, name, 1, "127.0.0.1:10911").await;
    // A retry of the same claim succeeds; another check code for the same id does not.
    let r = ctl
        .request(apply_id(name, 1, "127.0.0.1:10911;1700000000000"))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let r = ctl
        .request(apply_id(name, 1, "127.0.0.1:9;5"))
        .await
        .unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (
            2014,
            Some("Fail to apply brokerId: 1 in broker-set: broker-rules")
        )
    );

    // The first election makes the asking broker master.
    let r = ctl.request(elect(name, 1, false)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.ext("masterBrokerId"), Some("1"));
    assert_eq!(r.ext("masterEpoch"), Some("1"));
    assert_eq!(r.ext("syncStateSetEpoch"), Some("1"));
    let body = ElectMasterResponseBody::decode(r.body.as_deref()).unwrap();
    assert_eq!(body.sync_state_set.into_iter().collect::<Vec<_>>(), vec![1]);
    let group = body.broker_member_group.unwrap();
    assert_eq!(
        group.broker_addrs.get(&1).map(String::as_str),
        Some("127.0.0.1:10911")
    );
    // Asked again: the master is still alive.
    let r = ctl.request(elect(name, 1, false)).await.unwrap();
    assert_eq!(r.code, 2011, "{r:?}");
    assert_eq!(r.ext("masterEpoch"), Some("1"));

    join(&mut ctl, name, 2, "127.0.0.1:10921").await;
    let r = ctl
        .request(register(name, 2, "127.0.0.1:10921"))
        .await
        .unwrap();
    assert_eq!(
        (r.ext("masterBrokerId"), r.ext("masterAddress")),
        (Some("1"), Some("127.0.0.1:10911"))
    );
    assert_eq!(
        master_of(&mut ctl, name).await,
        (Some("1".into()), Some("1".into()))
    );

    // SyncStateSet changes: fenced by both epochs, by the master id, by membership.
    let r = ctl.request(alter(name, 1, 0, &[1, 2], 1)).await.unwrap();
    assert_eq!(r.code, 2000, "stale master epoch: {r:?}");
    let r = ctl.request(alter(name, 1, 1, &[1, 2], 0)).await.unwrap();
    assert_eq!(r.code, 2001, "stale SyncStateSet epoch: {r:?}");
    let r = ctl.request(alter(name, 2, 1, &[1, 2], 1)).await.unwrap();
    assert_eq!(r.code, 2002, "not the master: {r:?}");
    let r = ctl.request(alter(name, 1, 1, &[1, 7], 1)).await.unwrap();
    assert_eq!(r.code, 2003, "no such replica: {r:?}");
    let r = ctl.request(alter(name, 1, 1, &[1], 1)).await.unwrap();
    assert_eq!(r.code, 2013, "unchanged: {r:?}");
    let r = ctl.request(alter(name, 1, 1, &[1, 2], 1)).await.unwrap();
    assert_eq!(
        (r.code, r.ext("newSyncStateSetEpoch")),
        (0, Some("2")),
        "{r:?}"
    );
    let r = ctl.request(alter(name, 1, 1, &[1, 2], 1)).await.unwrap();
    assert_eq!(r.code, 2013, "{r:?}");

    // The admin's view (1006).
    let r = ctl
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_GET_SYNC_STATE_DATA)
                .with_body(format!("[\"{name}\",\"unknown\"]").into_bytes()),
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let info = BrokerReplicasInfo::decode(r.body.as_deref()).unwrap();
    let set = &info.replicas_info_table[name];
    assert_eq!(info.replicas_info_table.len(), 1);
    assert_eq!(set.in_sync_replicas.len(), 2);
    assert_eq!((set.master_epoch, set.sync_state_set_epoch), (1, 2));
    let r = ctl
        .request(RemotingCommand::request(
            RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
        ))
        .await
        .unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (1, Some("not set any response code"))
    );

    // A designated election moves the master to 2 (alive, in sync).
    let r = ctl.request(elect(name, 2, true)).await.unwrap();
    assert_eq!(
        (r.code, r.ext("masterBrokerId"), r.ext("masterEpoch")),
        (0, Some("2"), Some("2")),
        "{r:?}"
    );
    // The deposed master's report is fenced.
    let r = ctl.request(alter(name, 1, 1, &[1], 3)).await.unwrap();
    assert_eq!(r.code, 2002, "{r:?}");

    // Cleaning: living brokers are protected unless asked.
    let clean = |ids: Option<&str>, living: bool| {
        let mut c = RemotingCommand::request(RequestCode::CLEAN_BROKER_DATA)
            .with_ext("clusterName", CLUSTER)
            .with_ext("brokerName", name)
            .with_ext("isCleanLivingBroker", living.to_string());
        if let Some(ids) = ids {
            c = c.with_ext("brokerControllerIdsToClean", ids);
        }
        c
    };
    let r = ctl.request(clean(None, false)).await.unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (
            2009,
            Some("Broker broker-rules is still alive, clean up failure")
        )
    );
    let r = ctl.request(clean(Some("1"), false)).await.unwrap();
    assert_eq!(r.code, 2009, "{r:?}");
    let r = ctl.request(clean(None, true)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let r = ctl.request(replica_info(name)).await.unwrap();
    assert_eq!(r.code, 2008, "{r:?}");
}

#[actix::test]
async fn a_closed_master_connection_elects_the_in_sync_slave_and_notifies_it() {
    let dir = test_dir("ctl-failover");
    let server = start_server(controller_config(&dir));
    let name = "broker-failover";
    // The slave's broker port: where NOTIFY_BROKER_ROLE_CHANGED arrives.
    let slave_port = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let slave_addr = slave_port.local_addr().unwrap().to_string();
    let mut master = controller(&server).await;
    let mut slave = controller(&server).await;
    join(&mut master, name, 1, "127.0.0.1:10911").await;
    let r = master.request(elect(name, 1, false)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    join(&mut slave, name, 2, &slave_addr).await;
    let r = master.request(alter(name, 1, 1, &[1, 2], 1)).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    slave
        .oneway(heartbeat(name, 2, &slave_addr, 1, 4096))
        .await
        .unwrap();

    drop(master); // kill -9: the connection closes
    let accepted = tokio::time::timeout(Duration::from_secs(10), slave_port.accept()).await;
    let (stream, _) = accepted.expect("a notification within 10 s").unwrap();
    let mut frames = FramedRead::new(stream, RemotingCodec::default());
    let frame = tokio::time::timeout(TIMEOUT, frames.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(frame.code, 1008, "{frame:?}");
    assert_eq!(frame.ext("masterBrokerId"), Some("2"));
    assert_eq!(frame.ext("masterAddress"), Some(slave_addr.as_str()));
    assert_eq!(frame.ext("masterEpoch"), Some("2"));
    let set = SyncStateSet::decode(frame.body.as_deref()).unwrap();
    assert_eq!(
        (
            set.sync_state_set.into_iter().collect::<Vec<_>>(),
            set.sync_state_set_epoch
        ),
        (vec![2], 3)
    );
    assert_eq!(
        master_of(&mut slave, name).await,
        (Some("2".into()), Some("2".into()))
    );
}

#[actix::test]
async fn without_in_sync_replicas_the_master_is_lost_unless_unclean_election_is_on() {
    for unclean in [false, true] {
        let dir = test_dir("ctl-unclean");
        let mut config = controller_config(&dir);
        config.controller.elect_unclean_master = unclean;
        config.controller.notify_broker_role_changed = false;
        let server = start_server(config);
        let name = "broker-unclean";
        let mut master = controller(&server).await;
        let mut slave = controller(&server).await;
        join(&mut master, name, 1, "127.0.0.1:10911").await;
        let r = master.request(elect(name, 1, false)).await.unwrap();
        assert_eq!(r.code, 0, "{r:?}");
        // The slave is alive but never joined the SyncStateSet.
        join(&mut slave, name, 2, "127.0.0.1:10921").await;
        drop(master);
        let expected = if unclean { Some("2".to_owned()) } else { None };
        let mut last = (None, None);
        let mut settled = false;
        for _ in 0..100 {
            last = master_of(&mut slave, name).await;
            if last.0 == expected && last.1.as_deref() != Some("1") {
                settled = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(settled, "unclean={unclean}: master/epoch now {last:?}");
        // Without unclean election the set has no master: a broker's own request fails.
        if !unclean {
            let r = slave.request(elect(name, 2, false)).await.unwrap();
            assert_eq!(
                (r.code, r.remark.as_deref()),
                (2012, Some("Failed to elect a new master"))
            );
        }
    }
}

#[actix::test]
async fn config_codes_and_the_state_survives_a_restart() {
    let dir = test_dir("ctl-restart");
    let config = controller_config(&dir);
    let config_store = config.controller.config_store_path.clone();
    {
        let server = start_server(config.clone());
        let mut ctl = controller(&server).await;
        join(&mut ctl, "broker-kept", 1, "127.0.0.1:10911").await;
        let r = ctl.request(elect("broker-kept", 1, false)).await.unwrap();
        assert_eq!(r.code, 0);

        assert_eq!(setting(&mut ctl, "controllerDLegerSelfId").await, "n0");
        assert_eq!(setting(&mut ctl, "enableElectUncleanMaster").await, "false");
        let update = |text: &str| {
            RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
                .with_body(text.as_bytes().to_vec())
        };
        let r = ctl
            .request(update("configStorePath=/tmp/x\n"))
            .await
            .unwrap();
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (16, Some("Can not update config in black list."))
        );
        let r = ctl
            .request(update("enableElectUncleanMaster=true\n"))
            .await
            .unwrap();
        assert_eq!(r.code, 0, "{r:?}");
        assert_eq!(setting(&mut ctl, "enableElectUncleanMaster").await, "true");
        server.stop().await;
    }
    let server = start_server(config);
    let mut ctl = controller(&server).await;
    assert_eq!(
        master_of(&mut ctl, "broker-kept").await,
        (Some("1".into()), Some("1".into()))
    );
    let r = ctl.request(next_id("broker-kept")).await.unwrap();
    assert_eq!(r.ext("nextBrokerId"), Some("2"));
    // The update is kept: taken back from the config store file at start.
    assert_eq!(setting(&mut ctl, "enableElectUncleanMaster").await, "true");
    server.stop().await;
    updates_are_kept_by_a_start_from_the_config_store_file(&config_store).await;
}

/// One setting as GET_CONTROLLER_CONFIG (1010) shows it (empty when absent).
async fn setting(ctl: &mut Client, key: &str) -> String {
    let r = ctl
        .request(RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG))
        .await
        .unwrap();
    let props = properties::parse(&body_text(&r)).unwrap();
    props.get(key).cloned().unwrap_or_default()
}

/// UPDATE_CONTROLLER_CONFIG wrote the whole configuration to `controller.config_store_path`, as
/// Java writes its `configStorePath`: a start with `--config` of that file has the update, and
/// the NameServer's settings, too.
async fn updates_are_kept_by_a_start_from_the_config_store_file(store: &Path) {
    let text = std::fs::read_to_string(store).expect("the controller's config store file");
    let stored = properties::parse(&text).unwrap();
    assert_eq!(stored["enableElectUncleanMaster"], "true", "{text}");
    assert_eq!(stored["enableControllerInNamesrv"], "true", "{text}");
    assert_eq!(stored["controllerDLegerSelfId"], "n0", "{text}");
    assert_eq!(
        stored["controllerConfigStorePath"],
        store.display().to_string(),
        "a start from the file persists to it again: {text}"
    );
    let mut config =
        Config::load(Some(store), Vec::new(), &Default::default()).expect("the stored file loads");
    config.server.listen = "127.0.0.1:0".parse().unwrap();
    config.http.listen = None;
    let server = start_server(config);
    let mut ctl = controller(&server).await;
    assert_eq!(setting(&mut ctl, "enableElectUncleanMaster").await, "true");
    server.stop().await;
}

#[test]
fn several_controllers_without_etcd_are_refused_naming_the_key() {
    let mut config = test_config();
    config.controller.enabled = true;
    config.controller.peers = "n0-127.0.0.1:19878;n1-127.0.0.1:19879".into();
    config.controller.self_id = "n0".into();
    let err = config.validate().unwrap_err().to_string();
    assert!(
        err.contains("controller.peers") && err.contains("etcd"),
        "{err}"
    );
    config.controller.peers = "n0-127.0.0.1:19878".into();
    config.controller.self_id = "n9".into();
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("controller.self_id"), "{err}");
    config.controller.self_id = "n0".into();
    config.controller.etcd_endpoints = "https://127.0.0.1:2379".into();
    let err = config.validate().unwrap_err().to_string();
    assert!(
        err.contains("controller.etcd_endpoints") && err.contains("TLS"),
        "{err}"
    );
}

/// Two NameServers' controllers sharing one etcd (started here from the OS package).
fn etcd_config(dir: &Path, etcd: &support::etcd::Etcd, peers: &str, me: &str) -> Config {
    let mut config = controller_config(dir);
    config.controller.peers = peers.to_owned();
    config.controller.self_id = me.to_owned();
    config.controller.etcd_endpoints = etcd.endpoint();
    config.controller.etcd_prefix = format!("/rmq-test/{}", dir.display());
    config.controller.etcd_lease_ttl = Duration::from_secs(2);
    config
}

async fn metadata(server: &NameServerHandle) -> RemotingCommand {
    let mut ctl = controller(server).await;
    ctl.request(RemotingCommand::request(
        RequestCode::CONTROLLER_GET_METADATA_INFO,
    ))
    .await
    .unwrap()
}

/// Waits (bounded) until `server`'s controller reports itself leader.
async fn leads(server: &NameServerHandle) -> bool {
    for _ in 0..100 {
        if metadata(server).await.ext("isLeader") == Some("true") {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[actix::test]
async fn two_controllers_on_one_etcd_have_one_leader_and_the_other_takes_over() {
    let etcd = support::etcd::start();
    let dir = test_dir("ctl-etcd");
    let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{}", free_port(), free_port());
    let first = start_server(etcd_config(&dir, &etcd, &peers, "n0"));
    assert!(
        leads(&first).await,
        "the first controller never became leader"
    );
    let second = start_server(etcd_config(&dir, &etcd, &peers, "n1"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let m = metadata(&second).await;
    assert_eq!(m.ext("isLeader"), Some("false"), "{m:?}");
    assert_eq!(m.ext("controllerLeaderId"), Some("n0"), "{m:?}");

    // The leader serves; the follower refuses leader-only codes.
    let mut leader = controller(&first).await;
    join(&mut leader, "broker-etcd", 1, "127.0.0.1:10911").await;
    let r = leader
        .request(elect("broker-etcd", 1, false))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let mut follower = controller(&second).await;
    let r = follower.request(replica_info("broker-etcd")).await.unwrap();
    assert_eq!(
        (r.code, r.remark.as_deref()),
        (2007, Some("The controller is not in leader state"))
    );

    // The leader's NameServer stops: the other takes over with the state.
    first.stop().await;
    assert!(
        leads(&second).await,
        "the second controller never took over"
    );
    let mut follower = controller(&second).await;
    assert_eq!(
        master_of(&mut follower, "broker-etcd").await,
        (Some("1".into()), Some("1".into()))
    );
    let r = follower.request(next_id("broker-etcd")).await.unwrap();
    assert_eq!(r.ext("nextBrokerId"), Some("2"));
    second.stop().await;
}

#[actix::test]
async fn bad_controller_requests_get_clear_errors_and_the_controller_keeps_going() {
    let dir = test_dir("ctl-hostile");
    let server = start_server(controller_config(&dir));
    let mut ctl = controller(&server).await;
    // An absurd heartbeat timeout is clamped, not an overflow.
    let mut beat = heartbeat("broker-h", 1, "127.0.0.1:1", 0, 0);
    beat = beat.with_ext("heartbeatTimeoutMills", i64::MAX.to_string());
    ctl.oneway(beat).await.unwrap();
    let cases = [
        (
            RemotingCommand::request(RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET)
                .with_ext("brokerName", "b")
                .with_ext("masterEpoch", "1")
                .with_body(b"{not json".to_vec()),
            1,
        ),
        (
            RemotingCommand::request(RequestCode::CONTROLLER_GET_SYNC_STATE_DATA)
                .with_body(b"[1, {".to_vec()),
            1,
        ),
        (
            RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID),
            1,
        ),
        (
            RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER)
                .with_ext("clusterName", CLUSTER)
                .with_ext("brokerName", "b")
                .with_ext("brokerId", "not-a-number"),
            1,
        ),
        (
            RemotingCommand::request(RequestCode::CONTROLLER_GET_SYNC_STATE_DATA)
                .with_body(vec![b' '; (1 << 20) + 1]),
            1,
        ),
        (
            RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
                .with_body(vec![0xff, 0xfe]),
            1,
        ),
    ];
    for (request, expected) in cases {
        let r = ctl.request(request).await.unwrap();
        assert_eq!(r.code, expected, "{r:?}");
        assert!(r.remark.as_deref().is_some_and(|t| !t.is_empty()), "{r:?}");
    }
    // Still serving, on the same connection.
    let r = ctl
        .request(RemotingCommand::request(
            RequestCode::CONTROLLER_GET_METADATA_INFO,
        ))
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    join(&mut ctl, "broker-after", 1, "127.0.0.1:10911").await;
}

#[actix::test]
async fn the_controller_port_has_the_nameserver_port_s_front_door() {
    use rmq_namesrv::config::{ClientTlsSettings, PolicyKind, TlsMode};
    use rmq_namesrv::transport::client::client_config;
    use support::pki::{serving, Pki};

    let dir = test_dir("ctl-door");
    let pki = Pki::new(&dir);
    let cert = pki.issue("server", 7);
    let mut config = controller_config(&dir);
    config.tls = serving(TlsMode::Enforcing, &cert);
    config.access.admin_write.policy = Some(PolicyKind::Networks);
    config.access.admin_write.networks = vec!["10.0.0.0/8".parse().unwrap()];
    let server = start_server(config);
    let addr = server.controller_addr().unwrap().to_string();
    let metadata = || RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO);

    // Enforcing TLS: a plaintext request gets no answer.
    let mut plain = Client::connect(&addr, Duration::from_secs(2))
        .await
        .unwrap();
    assert!(plain.request(metadata()).await.is_err());
    let tls = client_config(&ClientTlsSettings {
        enable: true,
        auth_server: true,
        trust_cert_path: Some(pki.ca_path.clone()),
        ..ClientTlsSettings::default()
    })
    .unwrap();
    let mut ctl = Client::connect_with(&addr, TIMEOUT, Some(&tls))
        .await
        .unwrap();
    let r = ctl.request(metadata()).await.unwrap();
    assert_eq!((r.code, r.ext("isLeader")), (0, Some("true")), "{r:?}");
    // Access classes: a configuration change is admin_write, refused from this network.
    let r = ctl
        .request(
            RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
                .with_body(b"enableElectUncleanMaster=true\n".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(r.code, 16, "{r:?}");
    assert!(
        r.remark.as_deref().is_some_and(|t| t.contains("[access]")),
        "{r:?}"
    );
    server.stop().await;
}

#[actix::test]
async fn a_leader_that_loses_etcd_stops_serving_and_serves_again_when_it_is_back() {
    let etcd = support::etcd::start();
    let dir = test_dir("ctl-etcd-lost");
    let peers = format!("n0-127.0.0.1:{}", free_port());
    let server = start_server(etcd_config(&dir, &etcd, &peers, "n0"));
    assert!(leads(&server).await, "never became leader");
    let mut ctl = controller(&server).await;
    join(&mut ctl, "broker-lost", 1, "127.0.0.1:10911").await;
    // etcd frozen: the lease cannot be renewed; within its TTL (2 s) the node steps down.
    etcd.pause();
    let mut refused = None;
    for _ in 0..60 {
        let r = ctl.request(replica_info("broker-lost")).await.unwrap();
        if r.code == 2007 {
            refused = Some(r);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let r = refused.expect("still answering as leader 6 s after etcd froze");
    assert_eq!(
        r.remark.as_deref(),
        Some("The controller is not in leader state")
    );
    // Nothing it proposes while not leading can commit.
    let r = ctl.request(elect("broker-lost", 1, false)).await.unwrap();
    assert_eq!(r.code, 2007, "{r:?}");
    etcd.resume();
    assert!(
        leads(&server).await,
        "not leading again after etcd came back"
    );
    let mut ctl = controller(&server).await;
    let r = ctl.request(replica_info("broker-lost")).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    server.stop().await;
}

#[actix::test]
async fn a_draining_server_sends_its_controller_peers_away_too() {
    let dir = test_dir("ctl-drain");
    let mut config = controller_config(&dir);
    config.server.shutdown_gracefully = true;
    config.server.shutdown_wait = Duration::from_secs(1);
    let server = start_server(config);
    let mut ctl = controller(&server).await;
    let mut metadata = RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO);
    metadata.version = 513; // 5.5.0: a peer that understands GO_AWAY
    assert_eq!(ctl.request(metadata.clone()).await.unwrap().code, 0);
    let stopping = actix::spawn(server.stop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = ctl.request(metadata).await.unwrap();
    assert_eq!(r.code, 1500, "GO_AWAY during the drain: {r:?}");
    stopping.await.unwrap();
}

#[actix::test]
async fn a_config_update_that_cannot_be_persisted_says_so() {
    let dir = test_dir("ctl-store-fails");
    let mut config = controller_config(&dir);
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"not a directory").unwrap();
    config.controller.config_store_path = blocker.join("controller.properties");
    let server = start_server(config);
    let mut ctl = controller(&server).await;
    let r = ctl
        .request(
            RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
                .with_body(b"enableElectUncleanMaster=true\n".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(r.code, 1, "{r:?}");
    let remark = r.remark.unwrap_or_default();
    assert!(remark.contains("not persisted"), "{remark}");
    // The server goes on answering.
    let r = ctl.request(next_id("broker-after")).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    server.stop().await;
}

/// The test support's own guard against a port race: a controller port taken between the test
/// finding it free and the server binding it is replaced by another free one.
#[actix::test]
async fn a_controller_port_taken_before_the_start_is_replaced() {
    let dir = test_dir("ctl-port-taken");
    let mut config = controller_config(&dir);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    config.controller.peers = format!("n0-127.0.0.1:{port}");
    let server = start_server(config);
    assert_ne!(server.controller_addr().map(|a| a.port()), Some(port));
    let mut ctl = controller(&server).await;
    let r = ctl.request(next_id("after-the-move")).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    server.stop().await;
    drop(taken);
}
