//! Test support: a real server on a pre-bound 127.0.0.1:0 listener, a client, and request
//! builders in the shape real brokers and clients send.
#![allow(dead_code)]

use std::time::Duration;

use rmq_namesrv::client::Client;
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::body::{to_json, DataVersion, RegisterBrokerBody, TopicConfig};
use rmq_namesrv::protocol::fastjson::JsonStyle;
use rmq_namesrv::protocol::headers::{BrokerIdentityHeader, CommandHeader, RegisterBrokerHeader};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::{NameServer, NameServerHandle};

pub const TIMEOUT: Duration = Duration::from_secs(5);

/// Removes the KV directories earlier test processes left behind (their PID is gone), once.
fn remove_stale_dirs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("rmq-namesrv-test-")
                .and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            if !std::path::Path::new("/proc").join(pid).exists() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    });
}

/// A configuration for tests: loopback, a private KV file, one worker.
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
    config
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Starts a server on a listener bound to 127.0.0.1:0 before the server sees it.
pub fn start_server(config: Config) -> NameServerHandle {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    NameServer::new(config)
        .start(listener)
        .expect("server starts")
}

pub async fn connect(server: &NameServerHandle) -> Client {
    Client::connect(&server.local_addr().to_string(), TIMEOUT)
        .await
        .expect("connect")
}

/// One broker instance as a test registers it.
#[derive(Debug, Clone)]
pub struct Broker {
    pub cluster: String,
    pub name: String,
    pub addr: String,
    pub ha_addr: String,
    pub id: i64,
    pub topics: Vec<String>,
    pub version: DataVersion,
    pub enable_acting_master: Option<bool>,
    pub heartbeat_timeout_millis: Option<i64>,
    pub zone: Option<String>,
}

impl Broker {
    pub fn master(name: &str, port: u16, topics: &[&str]) -> Self {
        Self {
            cluster: "DefaultCluster".into(),
            name: name.into(),
            addr: format!("127.0.0.1:{port}"),
            ha_addr: format!("127.0.0.1:{}", port + 1),
            id: 0,
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            version: DataVersion {
                counter: 1,
                state_version: 0,
                timestamp: 1_700_000_000_000,
            },
            enable_acting_master: Some(false),
            heartbeat_timeout_millis: None,
            zone: None,
        }
    }

    pub fn slave(name: &str, port: u16, topics: &[&str]) -> Self {
        Self {
            id: 1,
            ..Self::master(name, port, topics)
        }
    }

    pub fn body(&self) -> RegisterBrokerBody {
        let mut body = RegisterBrokerBody::default();
        body.topic_config_wrapper.data_version = self.version;
        for topic in &self.topics {
            body.topic_config_wrapper
                .topic_config_table
                .insert(topic.clone(), TopicConfig::new(topic.as_str(), 4, 6));
        }
        body
    }

    pub fn header(&self, body: &[u8], compressed: bool) -> RegisterBrokerHeader {
        RegisterBrokerHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            ha_server_addr: Some(self.ha_addr.clone()),
            broker_id: self.id,
            heartbeat_timeout_millis: self.heartbeat_timeout_millis,
            enable_acting_master: self.enable_acting_master,
            compressed,
            body_crc32: (crc32fast::hash(body) & 0x7FFF_FFFF) as i32,
            zone_name: self.zone.clone(),
        }
    }

    /// REGISTER_BROKER as a 5.x broker sends it: JSON body, CRC, enableActingMaster.
    pub fn register(&self) -> RemotingCommand {
        let body = to_json(&self.body(), JsonStyle::Legacy);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_ext_fields(self.header(&body, false).to_ext())
            .with_body(body)
    }

    /// REGISTER_BROKER as a 4.x broker with compressedRegister sends it.
    pub fn register_compressed(&self) -> RemotingCommand {
        let body = self.body().encode_compressed(false);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_version(409)
            .with_ext_fields(self.header(&body, true).to_ext())
            .with_body(body)
    }

    pub fn unregister(&self) -> RemotingCommand {
        RemotingCommand::request(RequestCode::UNREGISTER_BROKER).with_ext_fields(
            BrokerIdentityHeader {
                broker_name: self.name.clone(),
                broker_addr: self.addr.clone(),
                cluster_name: self.cluster.clone(),
                broker_id: self.id,
            }
            .to_ext(),
        )
    }

    pub fn heartbeat(&self) -> RemotingCommand {
        RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
            .with_ext("clusterName", self.cluster.clone())
            .with_ext("brokerAddr", self.addr.clone())
            .with_ext("brokerName", self.name.clone())
    }

    pub fn query_data_version(&self, version: &DataVersion) -> RemotingCommand {
        RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext("brokerName", self.name.clone())
            .with_ext("brokerAddr", self.addr.clone())
            .with_ext("clusterName", self.cluster.clone())
            .with_ext("brokerId", self.id.to_string())
            .with_body(to_json(version, JsonStyle::Legacy))
    }
}

pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
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
