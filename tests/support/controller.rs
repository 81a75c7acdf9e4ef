//! The embedded controller in tests: a one-node configuration and a client of its port.

use std::path::Path;

use rmq_namesrv::config::Config;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;

use super::{test_config, TIMEOUT};

/// A port free now on 127.0.0.1 (for settings that name an address rather than take a
/// listener, as the controller's peers).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    probe.local_addr().expect("addr").port()
}

/// `config`'s own entry of `controller.peers` (`self_id-host:port`) moved to a port free now.
pub fn move_self_to_free_port(config: &mut Config) {
    let section = &config.controller;
    let peers: Vec<String> = section
        .peer_list()
        .expect("the test's controller.peers")
        .into_iter()
        .map(|(id, mut addr)| {
            if id == section.self_id {
                addr.set_port(free_port());
            }
            format!("{id}-{addr}")
        })
        .collect();
    config.controller.peers = peers.join(";");
}

/// A server with the controller on: one node, `n0`, its state under `dir`.
pub fn controller_config(dir: &Path) -> Config {
    let mut config = test_config();
    config.controller.enabled = true;
    config.controller.group = "group-test".into();
    config.controller.peers = format!("n0-127.0.0.1:{}", free_port());
    config.controller.self_id = "n0".into();
    config.controller.store_path = dir.to_path_buf();
    config.controller.config_store_path = dir.join("controller.properties");
    config
}

/// A client of `server`'s controller port.
pub async fn controller(server: &NameServerHandle) -> Client {
    let addr = server.controller_addr().expect("controller enabled");
    Client::connect(&addr.to_string(), TIMEOUT)
        .await
        .expect("connect to the controller")
}

/// The requests a broker in controller mode sends, for broker set `name` of `cluster`.
pub mod requests {
    use rmq_namesrv::protocol::controller::{ControllerBody, SyncStateSet};
    use rmq_namesrv::protocol::{RemotingCommand, RequestCode};

    pub fn next_id(cluster: &str, name: &str) -> RemotingCommand {
        RemotingCommand::request(RequestCode::CONTROLLER_GET_NEXT_BROKER_ID)
            .with_ext("clusterName", cluster)
            .with_ext("brokerName", name)
    }

    pub fn apply_id(cluster: &str, name: &str, id: i64, check: &str) -> RemotingCommand {
        RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID)
            .with_ext("clusterName", cluster)
            .with_ext("brokerName", name)
            .with_ext("appliedBrokerId", id.to_string())
            .with_ext("registerCheckCode", check)
    }

    pub fn register(cluster: &str, name: &str, id: i64, addr: &str) -> RemotingCommand {
        RemotingCommand::request(RequestCode::CONTROLLER_REGISTER_BROKER)
            .with_ext("clusterName", cluster)
            .with_ext("brokerName", name)
            .with_ext("brokerId", id.to_string())
            .with_ext("brokerAddress", addr)
    }

    /// A heartbeat (oneway) that keeps the broker alive for `timeout_ms`.
    pub fn heartbeat(
        cluster: &str,
        name: &str,
        id: i64,
        addr: &str,
        (epoch, offset): (i32, i64),
        timeout_ms: u64,
    ) -> RemotingCommand {
        RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
            .with_ext("clusterName", cluster)
            .with_ext("brokerName", name)
            .with_ext("brokerId", id.to_string())
            .with_ext("brokerAddr", addr)
            .with_ext("epoch", epoch.to_string())
            .with_ext("maxOffset", offset.to_string())
            .with_ext("heartbeatTimeoutMills", timeout_ms.to_string())
    }

    pub fn elect(cluster: &str, name: &str, id: i64) -> RemotingCommand {
        RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER)
            .with_ext("clusterName", cluster)
            .with_ext("brokerName", name)
            .with_ext("brokerId", id.to_string())
            .with_ext("designateElect", "false")
    }

    /// The master's request to make the SyncStateSet `set` (from `epoch`).
    pub fn alter(
        name: &str,
        master: i64,
        master_epoch: i32,
        set: &[i64],
        epoch: i32,
    ) -> RemotingCommand {
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
}

/// Gets broker `id` of set `name` registered and alive (on `conn`, heartbeats kept for
/// `timeout_ms`), as a broker does at start.
pub async fn join(
    conn: &mut Client,
    cluster: &str,
    name: &str,
    id: i64,
    addr: &str,
    timeout_ms: u64,
) {
    let r = conn
        .request(requests::next_id(cluster, name))
        .await
        .expect("next id");
    assert_eq!(
        r.ext("nextBrokerId"),
        Some(id.to_string().as_str()),
        "{r:?}"
    );
    let check = format!("{addr};1700000000000");
    let r = conn
        .request(requests::apply_id(cluster, name, id, &check))
        .await
        .expect("apply id");
    assert_eq!(r.code, 0, "{r:?}");
    let r = conn
        .request(requests::register(cluster, name, id, addr))
        .await
        .expect("register");
    assert_eq!(r.code, 0, "{r:?}");
    let beat = requests::heartbeat(cluster, name, id, addr, (0, 0), timeout_ms);
    conn.oneway(beat).await.expect("heartbeat");
}

/// Broker id 1 of set `name` joined (as [`join`], heartbeats kept for 10 s) and elected master,
/// as a set's first broker is at its start.
pub async fn join_and_elect(conn: &mut Client, cluster: &str, name: &str, addr: &str) {
    join(conn, cluster, name, 1, addr, 10_000).await;
    let r = conn
        .request(requests::elect(cluster, name, 1))
        .await
        .expect("elect");
    assert_eq!(
        (r.code, r.ext("masterBrokerId"), r.ext("masterAddress")),
        (0, Some("1"), Some(addr)),
        "{r:?}"
    );
}
