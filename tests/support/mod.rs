//! Test support: a real server on a pre-bound 127.0.0.1:0 listener, a client, and request
//! builders in the shape real brokers and clients send.
#![allow(dead_code)]

pub mod controller;
pub mod dnsmasq;
pub mod etcd;
pub mod http;
pub mod pki;

use std::time::Duration;

use etcd::unique;
use rmq_namesrv::config::Config;
use rmq_namesrv::controller_port::ControllerStartError;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::{NameServer, NameServerHandle, StartError};

pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Removes the KV directories earlier test processes left behind (their PID is gone), once.
fn remove_stale_dirs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| etcd::remove_dirs_of_gone_processes("rmq-namesrv-test-"));
}

/// A configuration for tests: loopback, a private KV file, one worker, no machine TLS file.
pub fn test_config() -> Config {
    remove_stale_dirs();
    let mut config = Config::default();
    config.server.listen = "127.0.0.1:0".parse().expect("loopback address");
    config.server.workers = 1;
    let dir = std::env::temp_dir().join(format!(
        "rmq-namesrv-test-{}-{}",
        std::process::id(),
        unique()
    ));
    config.kv.path = dir.join("kvConfig.json");
    config.kv.config_store_path = dir.join("namesrv.properties");
    // Hermetic: never pick up a machine's /etc/rocketmq/tls.properties.
    config.tls.config_file = None;
    config
}

/// Starts a server on a listener bound to 127.0.0.1:0 before the server sees it. The controller
/// binds the port its `controller.peers` entry names, found free by the test a moment before
/// (`controller::free_port`): if something took it since (another test's connection), the node
/// is given another free port and started again, a few times at most.
pub fn start_server(mut config: Config) -> NameServerHandle {
    const STARTS: usize = 5;
    let mut starts = 1;
    loop {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        match NameServer::new(config.clone()).start(listener) {
            Ok(server) => return server,
            Err(StartError::Controller(ControllerStartError::Bind { source, .. }))
                if source.kind() == std::io::ErrorKind::AddrInUse && starts < STARTS =>
            {
                controller::move_self_to_free_port(&mut config);
                starts += 1;
            }
            Err(e) => panic!("server starts: {e:?}"),
        }
    }
}

pub async fn connect(server: &NameServerHandle) -> Client {
    Client::connect(&server.local_addr().to_string(), TIMEOUT)
        .await
        .expect("connect")
}

pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}

/// The KV requests as Java's admin tools send them.
pub fn put_kv(ns: &str, key: &str, value: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", ns)
        .with_ext("key", key)
        .with_ext("value", value)
}

pub fn get_kv(ns: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", ns)
        .with_ext("key", key)
}

pub fn delete_kv(ns: &str, key: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::DELETE_KV_CONFIG)
        .with_ext("namespace", ns)
        .with_ext("key", key)
}

pub fn kv_list(ns: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE).with_ext("namespace", ns)
}

pub fn body_text(resp: &RemotingCommand) -> String {
    String::from_utf8(resp.body_bytes().to_vec()).expect("UTF-8 body")
}

/// Polls `check` every 20 ms until it returns true, at most `limit`; returns whether it did.
pub async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Spawns `command` with its stdout piped and reads its first line, which must be `prefix`
/// followed by the address it listens on: the child and that address.
pub fn spawn_listening(
    command: &mut std::process::Command,
    prefix: &str,
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn rmq-namesrv");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    let read = BufReader::new(stdout).read_line(&mut line);
    match line.trim().strip_prefix(prefix) {
        Some(addr) if read.is_ok() => {
            let addr = addr.to_owned();
            (child, addr)
        }
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("unexpected start-up line {line:?} ({read:?})");
        }
    }
}

/// A fresh directory for one test's files, under the temp dir (removed by the next run's
/// `test_config` once this process is gone).
pub fn test_dir(name: &str) -> std::path::PathBuf {
    remove_stale_dirs();
    let dir = std::env::temp_dir().join(format!(
        "rmq-namesrv-test-{}-{}-{name}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("test dir");
    dir
}
