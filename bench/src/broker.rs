//! Simulated brokers: REGISTER_BROKER requests as a 5.x master sends them ([`FakeBroker`]),
//! encoded once.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::codec::encode_frame;
use rmq_protocol::ResponseCode;
use rmq_tools::broker::FakeBroker;
use rmq_transport::client::ClientStream;
use rustls::ClientConfig;
use tokio::io::{AsyncRead, AsyncWrite};
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

/// The name of broker `index` of `group`.
pub fn broker_name(group: &str, index: usize) -> String {
    format!("{group}-{index:03}")
}

/// The port broker `index` advertises (on 127.0.0.1; nothing listens there).
pub fn broker_port(index: usize) -> Result<u16, BenchError> {
    u16::try_from(20_000 + index * 4)
        .map_err(|_| BenchError::Protocol(format!("broker index {index} is too large")))
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
        let name = broker_name(group, index);
        let port = broker_port(index)?;
        let mut broker = FakeBroker::new(CLUSTER, &name, 0, port, topics.to_vec());
        broker.queues = queues;
        let opaque = i32::try_from(index).unwrap_or(i32::MAX);
        let cmd = broker.register().with_opaque(opaque);
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
    pub async fn register<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: &mut S,
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

/// A registered broker with its open connection (closing it would unregister the broker), plain
/// TCP or TLS.
pub struct Registered {
    pub broker: Arc<Broker>,
    pub stream: ClientStream,
    pub buf: BytesMut,
}

/// Connects (with TLS when `tls` is given) and registers every broker, at most `concurrency` at a
/// time, each registration bounded by `timeout`. Returns them in their original order and how
/// long it took.
pub async fn register_all(
    addr: SocketAddr,
    tls: Option<&Arc<ClientConfig>>,
    brokers: Vec<Arc<Broker>>,
    concurrency: usize,
    timeout: Duration,
) -> Result<(Vec<Registered>, Duration), BenchError> {
    let started = Instant::now();
    let permits = Arc::new(Semaphore::new(concurrency.max(1)));
    let mut tasks = JoinSet::new();
    for (i, broker) in brokers.into_iter().enumerate() {
        let permits = Arc::clone(&permits);
        let tls = tls.cloned();
        tasks.spawn(async move {
            let _permit = permits
                .acquire()
                .await
                .map_err(|_| BenchError::Protocol("setup cancelled".into()))?;
            let mut stream = wire::connect_stream(addr, tls.as_ref(), timeout).await?;
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
    use rmq_protocol::custom_headers::{CommandHeader, RegisterBrokerHeader};
    use rmq_protocol::{RemotingCommand, RequestCode};

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
