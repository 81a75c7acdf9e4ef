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
