//! [`FakeBroker`]: the requests a RocketMQ broker sends a NameServer, built the way real brokers
//! build them. The one broker builder of the workspace: the integration tests, the simulated
//! brokers of the dev cluster (the `sim` module) and the load generator (which encodes its frames
//! once from it) all use it.

use std::collections::BTreeMap;

use rmq_protocol::body::{perm, to_json, DataVersion, RegisterBrokerBody, TopicConfig};
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, CommandHeader, RegisterBrokerHeader,
};
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::{RemotingCommand, RequestCode};

/// The cluster of [`FakeBroker::master`] and [`FakeBroker::slave`], as a broker's default.
pub const DEFAULT_CLUSTER: &str = "DefaultCluster";

/// The `MQVersion` ordinal of a 4.9.x broker (V4_9_4), for the compressed registration form.
const BROKER_4X_VERSION: i32 = 409;

/// One broker instance: who it is and which topics it serves. Nothing listens at its addresses (a
/// NameServer never dials a broker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeBroker {
    pub cluster: String,
    /// The broker group (`brokerName`).
    pub name: String,
    /// 0 = master.
    pub id: i64,
    pub addr: String,
    pub ha_addr: String,
    pub topics: Vec<String>,
    /// Read and write queues of every topic.
    pub queues: i32,
    /// Permission bits of every topic.
    pub perm: i32,
    pub version: DataVersion,
    /// `None` sends no `enableActingMaster` field, as a 4.x broker.
    pub enable_acting_master: Option<bool>,
    pub heartbeat_timeout_millis: Option<i64>,
    pub zone: Option<String>,
}

impl FakeBroker {
    /// Broker `id` of group `name` in `cluster`, advertising `127.0.0.1:<port>` (HA on the next
    /// port), 4 read/write queues per topic, as a 5.x broker registers it.
    pub fn new(cluster: &str, name: &str, id: i64, port: u16, topics: Vec<String>) -> Self {
        Self {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
            id,
            addr: format!("127.0.0.1:{port}"),
            ha_addr: format!("127.0.0.1:{}", port.saturating_add(1)),
            topics,
            queues: 4,
            perm: perm::READ | perm::WRITE,
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

    /// The master (id 0) of `name` in the default cluster.
    pub fn master(name: &str, port: u16, topics: &[&str]) -> Self {
        let topics = topics.iter().map(|t| (*t).to_owned()).collect();
        Self::new(DEFAULT_CLUSTER, name, 0, port, topics)
    }

    /// A slave (id 1) of `name` in the default cluster.
    pub fn slave(name: &str, port: u16, topics: &[&str]) -> Self {
        Self {
            id: 1,
            ..Self::master(name, port, topics)
        }
    }

    fn topic_table(&self) -> BTreeMap<String, TopicConfig> {
        self.topics
            .iter()
            .map(|t| {
                (
                    t.clone(),
                    TopicConfig::new(t.as_str(), self.queues, self.perm),
                )
            })
            .collect()
    }

    /// The registration body as data.
    pub fn body(&self) -> RegisterBrokerBody {
        let mut body = RegisterBrokerBody::default();
        body.topic_config_wrapper.data_version = self.version;
        body.topic_config_wrapper.topic_config_table = self.topic_table();
        body
    }

    /// The registration body as a 5.x broker writes it: the filter-server list, then the
    /// topic-config-and-mapping wrapper with both data versions, the topic table and the two
    /// (empty) static-topic maps, keys in fastjson's alphabetical order.
    pub fn body_json(&self) -> Vec<u8> {
        let version = to_json(&self.version, JsonStyle::Legacy);
        let table = to_json(&self.topic_table(), JsonStyle::Legacy);
        let mut body = Vec::with_capacity(table.len() + 2 * version.len() + 200);
        body.extend_from_slice(
            br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":"#,
        );
        body.extend_from_slice(&version);
        body.extend_from_slice(br#","mappingDataVersion":"#);
        body.extend_from_slice(&version);
        body.extend_from_slice(br#","topicConfigTable":"#);
        body.extend_from_slice(&table);
        body.extend_from_slice(
            br#","topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#,
        );
        body
    }

    /// The REGISTER_BROKER header for `body` (its CRC included).
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
            body_crc32: body_crc32(body),
            zone_name: self.zone.clone(),
        }
    }

    /// REGISTER_BROKER as a 5.x broker sends it: JSON body, CRC, `enableActingMaster`.
    pub fn register(&self) -> RemotingCommand {
        let body = self.body_json();
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_ext_fields(self.header(&body, false).to_ext())
            .with_body(body)
    }

    /// One registration round as a 5.x broker with `enableSplitRegistration=true` sends it
    /// (`BrokerController.registerBrokerAll`): a REGISTER_BROKER of `chunk` topics each time its
    /// table reaches `chunk` (`splitRegistrationSize`, 800 by default), then one with the rest,
    /// sent even when the rest is empty. Every request carries the broker's one DataVersion and
    /// is an ordinary 5.x registration otherwise. A `chunk` of 0 counts as 1.
    pub fn register_split(&self, chunk: usize) -> Vec<RemotingCommand> {
        let chunk = chunk.max(1);
        let mut round: Vec<RemotingCommand> = self
            .topics
            .chunks(chunk)
            .filter(|part| part.len() == chunk)
            .map(|part| self.with_topics(part).register())
            .collect();
        let rest = &self.topics[round.len() * chunk..];
        round.push(self.with_topics(rest).register());
        round
    }

    /// This broker serving only `topics`.
    fn with_topics(&self, topics: &[String]) -> Self {
        // Field by field: cloning `self` would copy the whole topic list once per chunk.
        Self {
            cluster: self.cluster.clone(),
            name: self.name.clone(),
            id: self.id,
            addr: self.addr.clone(),
            ha_addr: self.ha_addr.clone(),
            topics: topics.to_vec(),
            queues: self.queues,
            perm: self.perm,
            version: self.version,
            enable_acting_master: self.enable_acting_master,
            heartbeat_timeout_millis: self.heartbeat_timeout_millis,
            zone: self.zone.clone(),
        }
    }

    /// REGISTER_BROKER as a 4.9 broker with `compressedRegister=true` sends it.
    pub fn register_compressed(&self) -> RemotingCommand {
        let body = self.body().encode_compressed(false);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_version(BROKER_4X_VERSION)
            .with_ext_fields(self.header(&body, true).to_ext())
            .with_body(body)
    }

    /// REGISTER_BROKER as a 5.x broker with `compressedRegister=true` sends it: the body
    /// compressed (with the mapping section), the header's `compressed` false (its
    /// `BrokerOuterAPI` always sets false).
    pub fn register_compressed_unflagged(&self) -> RemotingCommand {
        let body = self.body().encode_compressed(true);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_ext_fields(self.header(&body, false).to_ext())
            .with_body(body)
    }

    /// UNREGISTER_BROKER, as a broker shutting down sends it.
    pub fn unregister(&self) -> RemotingCommand {
        let header = BrokerIdentityHeader {
            broker_name: self.name.clone(),
            broker_addr: self.addr.clone(),
            cluster_name: self.cluster.clone(),
            broker_id: self.id,
        };
        RemotingCommand::request(RequestCode::UNREGISTER_BROKER).with_ext_fields(header.to_ext())
    }

    /// BROKER_HEARTBEAT (acting-master brokers send it between registrations).
    pub fn heartbeat(&self) -> RemotingCommand {
        let header = BrokerHeartbeatHeader {
            cluster_name: self.cluster.clone(),
            broker_addr: self.addr.clone(),
            broker_name: Some(self.name.clone()),
            broker_id: Some(self.id),
            ..BrokerHeartbeatHeader::default()
        };
        RemotingCommand::request(RequestCode::BROKER_HEARTBEAT).with_ext_fields(header.to_ext())
    }

    /// QUERY_DATA_VERSION with `version` as its body.
    pub fn query_data_version(&self, version: &DataVersion) -> RemotingCommand {
        RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext("brokerName", self.name.clone())
            .with_ext("brokerAddr", self.addr.clone())
            .with_ext("clusterName", self.cluster.clone())
            .with_ext("brokerId", self.id.to_string())
            .with_body(to_json(version, JsonStyle::Legacy))
    }
}

/// The `bodyCrc32` a broker puts in REGISTER_BROKER: CRC32 of the body, sign bit cleared.
pub fn body_crc32(body: &[u8]) -> i32 {
    (crc32fast::hash(body) & 0x7FFF_FFFF) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registrations_decode_as_the_server_reads_them() {
        let broker = FakeBroker::master("b", 10911, &["T1", "T2"]);
        let cmd = broker.register();
        let header = RegisterBrokerHeader::decode(&cmd).unwrap();
        assert_eq!(header.broker_name, "b");
        assert_eq!(header.enable_acting_master, Some(false));
        assert_eq!(header.body_crc32, body_crc32(cmd.body_bytes()));
        let body =
            RegisterBrokerBody::decode(cmd.body.as_deref(), false, cmd.version, 1 << 20).unwrap();
        assert_eq!(body, broker.body());
        let text = std::str::from_utf8(cmd.body_bytes()).unwrap();
        assert!(text.contains(r#""mappingDataVersion":{"#));

        let zipped = broker.register_compressed();
        let header = RegisterBrokerHeader::decode(&zipped).unwrap();
        assert!(header.compressed);
        let body =
            RegisterBrokerBody::decode(zipped.body.as_deref(), true, zipped.version, 1 << 20)
                .unwrap();
        assert_eq!(
            body.topic_config_wrapper.topic_config_table.len(),
            2,
            "{body:?}"
        );
    }

    #[test]
    fn split_rounds_chunk_as_a_5x_broker() {
        let topics: Vec<String> = (0..5).map(|i| format!("T{i}")).collect();
        let broker = FakeBroker::new(DEFAULT_CLUSTER, "b", 0, 10911, topics);
        let sizes = |round: Vec<RemotingCommand>| -> Vec<usize> {
            round
                .iter()
                .map(|cmd| {
                    let body = RegisterBrokerBody::decode(
                        cmd.body.as_deref(),
                        false,
                        cmd.version,
                        1 << 20,
                    )
                    .unwrap();
                    assert_eq!(body.topic_config_wrapper.data_version, broker.version);
                    body.topic_config_wrapper.topic_config_table.len()
                })
                .collect()
        };
        assert_eq!(sizes(broker.register_split(2)), [2, 2, 1]);
        // The last request is sent even when the table divides evenly.
        assert_eq!(sizes(broker.register_split(5)), [5, 0]);
        assert_eq!(sizes(broker.register_split(800)), [5]);
    }
}
