//! Simulated brokers: REGISTER_BROKER requests as a 5.x master sends them, encoded once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::body::{perm, to_json, DataVersion, TopicConfig};
use rmq_protocol::codec::encode_frame;
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::headers::{CommandHeader, RegisterBrokerHeader};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::wire::{self, Reply};
use crate::BenchError;

/// The cluster every simulated broker belongs to.
pub const CLUSTER: &str = "BenchCluster";

/// `count` topic names, the same on every broker.
pub fn topic_names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i:05}")).collect()
}

/// One simulated broker (a master, id 0) and its REGISTER_BROKER frame.
#[derive(Debug, Clone)]
pub struct Broker {
    pub name: String,
    /// The opaque of its registrations (one outstanding at a time, like a broker).
    pub opaque: i32,
    pub frame: Bytes,
}

impl Broker {
    /// Broker `index` of `group` with `topics`, advertising `127.0.0.1:<port>` (nothing listens
    /// there; a NameServer never dials brokers).
    pub fn new(
        group: &str,
        index: usize,
        topics: &[String],
        queues: i32,
    ) -> Result<Self, BenchError> {
        let name = format!("{group}-{index:03}");
        let port = 20_000 + index * 4;
        let body = register_body(topics, queues);
        let header = RegisterBrokerHeader {
            broker_name: name.clone(),
            broker_addr: format!("127.0.0.1:{port}"),
            cluster_name: CLUSTER.into(),
            ha_server_addr: Some(format!("127.0.0.1:{}", port + 1)),
            broker_id: 0,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: false,
            body_crc32: (crc32fast::hash(&body) & 0x7FFF_FFFF) as i32,
            zone_name: None,
        };
        let opaque = i32::try_from(index).unwrap_or(i32::MAX);
        let cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_opaque(opaque)
            .with_ext_fields(header.to_ext())
            .with_body(body);
        let mut frame = BytesMut::new();
        encode_frame(&cmd, &mut frame)
            .map_err(|e| BenchError::Protocol(format!("cannot encode registration: {e}")))?;
        Ok(Self {
            name,
            opaque,
            frame: frame.freeze(),
        })
    }

    /// Sends the registration on `stream` and waits for its reply; an answer other than SUCCESS
    /// is an error.
    pub async fn register(
        &self,
        stream: &mut TcpStream,
        buf: &mut BytesMut,
        timeout: Duration,
    ) -> Result<Reply, BenchError> {
        let reply = wire::call(stream, &self.frame, self.opaque, buf, timeout).await?;
        if reply.code != ResponseCode::SUCCESS.0 {
            return Err(BenchError::Protocol(format!(
                "registration of {} answered code {}",
                self.name, reply.code
            )));
        }
        Ok(reply)
    }
}

/// The RegisterBrokerBody JSON of a 5.x broker (spec §4.3): filter-server list, then the
/// topic-config-and-mapping wrapper with both data versions, the topic table and the two (empty)
/// static-topic maps, keys in fastjson's alphabetical order.
fn register_body(topics: &[String], queues: i32) -> Vec<u8> {
    let version = DataVersion {
        counter: 1,
        state_version: 0,
        timestamp: 1_700_000_000_000,
    };
    let table: BTreeMap<&str, TopicConfig> = topics
        .iter()
        .map(|t| {
            (
                t.as_str(),
                TopicConfig::new(t.as_str(), queues, perm::READ | perm::WRITE),
            )
        })
        .collect();
    let version = to_json(&version, JsonStyle::Legacy);
    let mut body = Vec::with_capacity(200 * topics.len() + 400);
    body.extend_from_slice(
        br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":"#,
    );
    body.extend_from_slice(&version);
    body.extend_from_slice(br#","mappingDataVersion":"#);
    body.extend_from_slice(&version);
    body.extend_from_slice(br#","topicConfigTable":"#);
    body.extend_from_slice(&to_json(&table, JsonStyle::Legacy));
    body.extend_from_slice(br#","topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#);
    body
}

/// A registered broker with its open connection (closing it would unregister the broker).
pub struct Registered {
    pub broker: Arc<Broker>,
    pub stream: TcpStream,
    pub buf: BytesMut,
}

/// Connects and registers every broker, at most `concurrency` at a time, each registration
/// bounded by `timeout`. Returns them in their original order and how long it took.
pub async fn register_all(
    addr: SocketAddr,
    brokers: Vec<Arc<Broker>>,
    concurrency: usize,
    timeout: Duration,
) -> Result<(Vec<Registered>, Duration), BenchError> {
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for (i, broker) in brokers.into_iter().enumerate() {
        let permits = Arc::clone(&permits);
        tasks.spawn(async move {
            let _permit = permits
                .acquire()
                .await
                .map_err(|_| BenchError::Protocol("setup cancelled".into()))?;
            let mut stream = wire::connect(addr, timeout).await?;
            let mut buf = BytesMut::with_capacity(4096);
            broker.register(&mut stream, &mut buf, timeout).await?;
            Ok::<_, BenchError>((
                i,
                Registered {
                    broker,
                    stream,
                    buf,
                },
            ))
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        done.push(joined.map_err(|e| BenchError::Protocol(format!("setup task: {e}")))??);
    }
    done.sort_by_key(|(i, _)| *i);
    Ok((
        done.into_iter().map(|(_, r)| r).collect(),
        started.elapsed(),
    ))
}

/// Keeps registered brokers alive like real ones: each re-registers every `period` until
/// `until` (Java expires a silent broker after 120 s), then its connection closes.
pub fn keep_alive(
    brokers: Vec<Registered>,
    period: Duration,
    until: Instant,
    timeout: Duration,
) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    for mut reg in brokers {
        tasks.spawn(async move {
            let mut next = Instant::now() + period;
            while next < until {
                tokio::time::sleep_until(next.into()).await;
                let Registered {
                    broker,
                    stream,
                    buf,
                } = &mut reg;
                if let Err(err) = broker.register(stream, buf, timeout).await {
                    eprintln!("# broker {}: re-registration failed: {err}", broker.name);
                }
                next += period;
            }
            tokio::time::sleep_until(until.into()).await;
        });
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::RegisterBrokerBody;

    /// Decodes a whole frame with the protocol crate, as a server would.
    fn decode(frame: &Bytes) -> RemotingCommand {
        rmq_protocol::codec::decode_frame(frame.slice(4..)).unwrap()
    }

    #[test]
    fn registration_decodes_as_a_5x_body() {
        let topics = topic_names("T-", 3);
        let broker = Broker::new("b", 7, &topics, 8).unwrap();
        let cmd = decode(&broker.frame);
        assert_eq!(cmd.request_code(), RequestCode::REGISTER_BROKER);
        assert_eq!(cmd.opaque, 7);
        let header = RegisterBrokerHeader::decode(&cmd).unwrap();
        assert_eq!(header.broker_name, "b-007");
        assert_eq!(header.enable_acting_master, Some(false));
        assert_eq!(
            header.body_crc32 as u32,
            crc32fast::hash(cmd.body_bytes()) & 0x7FFF_FFFF
        );
        let body =
            RegisterBrokerBody::decode(cmd.body.as_deref(), false, cmd.version, 1 << 20).unwrap();
        let table = &body.topic_config_wrapper.topic_config_table;
        assert_eq!(table.len(), 3);
        assert_eq!(table["T-00001"].read_queue_nums, 8);
        let text = std::str::from_utf8(cmd.body_bytes()).unwrap();
        assert!(text.contains(r#""mappingDataVersion":{"#));
        assert!(
            text.ends_with(r#""topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#)
        );
    }
}
