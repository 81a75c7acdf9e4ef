//! JSON bodies of NameServer requests and responses (docs/protocol.md#json-bodies).
//!
//! Field order in every struct is alphabetical by wire name, because fastjson writes bean
//! properties alphabetically; `Option` fields are omitted when `None`, as fastjson omits nulls.
//! Maps are `BTreeMap`s: sorted output is what standard JSON requires and a legal order for legacy
//! JSON. Encode with [`crate::fastjson::to_vec`], decode with [`crate::fastjson::from_slice`].

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::code::version;
use crate::fastjson;

/// Permission bits (`PermName`).
pub mod perm {
    pub const PRIORITY: i32 = 8;
    pub const READ: i32 = 4;
    pub const WRITE: i32 = 2;
    pub const INHERIT: i32 = 1;

    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE == WRITE
    }

    /// Read, write and inherit as `RWX`, `-` for each one off (`6` is `RW-`), as the status
    /// page and `admin status` show a queue's permission.
    pub fn text(perm: i32) -> String {
        [(READ, 'R'), (WRITE, 'W'), (INHERIT, 'X')]
            .iter()
            .map(|&(bit, c)| if perm & bit != 0 { c } else { '-' })
            .collect()
    }
}

/// Topic system flags (`TopicSysFlag`).
pub mod sys_flag {
    pub const UNIT: i32 = 1;
    pub const UNIT_SUB: i32 = 2;
}

/// The KV namespace holding order-topic layouts (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const ORDER_TOPIC_CONFIG_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";

/// Reads `null` as the type's default: fastjson never writes nulls, but other peers may.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// Every body struct is read from a JSON object only: serde's derive would also read one from an
/// array of its field values (`[]` as an empty registration), which fastjson refuses. Each
/// derives with `remote = "Self"` and gets its trait impls here.
macro_rules! json_objects {
    ($($name:ident),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $name::deserialize(fastjson::ObjectOnly(deserializer))
            }
        }
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $name::serialize(self, serializer)
            }
        }
    )*};
}

json_objects!(
    DataVersion,
    TopicConfig,
    TopicQueueMappingInfo,
    TopicConfigWrapper,
    RegisterBrokerBody,
    QueueData,
    BrokerData,
    TopicRouteData,
    ClusterInfo,
    TopicList,
    KvTable,
    BrokerMemberGroup,
    GetBrokerMemberGroupResponseBody
);

/// A broker's topic-config version; "changed" means any of the three fields differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct DataVersion {
    pub counter: i64,
    #[serde(rename = "stateVersion")]
    pub state_version: i64,
    pub timestamp: i64,
}

/// One topic's configuration as a broker reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct TopicConfig {
    #[serde(deserialize_with = "null_default")]
    pub attributes: BTreeMap<String, String>,
    pub order: bool,
    pub perm: i32,
    #[serde(rename = "readQueueNums")]
    pub read_queue_nums: i32,
    #[serde(rename = "topicFilterType")]
    pub topic_filter_type: String,
    #[serde(rename = "topicName")]
    pub topic_name: String,
    #[serde(rename = "topicSysFlag")]
    pub topic_sys_flag: i32,
    #[serde(rename = "writeQueueNums")]
    pub write_queue_nums: i32,
}

impl Default for TopicConfig {
    /// Java's `new TopicConfig()`: 16/16 queues, read-write, SINGLE_TAG.
    fn default() -> Self {
        Self {
            attributes: BTreeMap::new(),
            order: false,
            perm: perm::READ | perm::WRITE,
            read_queue_nums: 16,
            topic_filter_type: "SINGLE_TAG".to_owned(),
            topic_name: String::new(),
            topic_sys_flag: 0,
            write_queue_nums: 16,
        }
    }
}

impl TopicConfig {
    pub fn new(topic: impl Into<String>, queues: i32, perm: i32) -> Self {
        Self {
            topic_name: topic.into(),
            read_queue_nums: queues,
            write_queue_nums: queues,
            perm,
            ..Self::default()
        }
    }

    /// The space-separated text form of the compressed registration body (`TopicConfig.encode`):
    /// `name read write perm filterType attributesJson`. Sys flag and order are not transmitted.
    pub fn encode_text(&self) -> String {
        let attributes = serde_json::to_string(&self.attributes).unwrap_or_else(|_| "{}".into());
        format!(
            "{} {} {} {} {} {}",
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type,
            attributes
        )
    }

    /// Parses the text form; fewer than five tokens or a bad number is an error, an unparsable
    /// attributes token is ignored (as Java does).
    pub fn decode_text(text: &str) -> Result<Self, BodyError> {
        // Java reads the first six space-separated fields and ignores the rest: split no
        // further than that (the text may be megabytes of separators).
        let tokens: Vec<&str> = text.splitn(7, ' ').collect();
        // Java's String.split drops trailing empty strings.
        let used = tokens
            .iter()
            .rposition(|t| !t.is_empty())
            .map_or(0, |p| p + 1);
        let tokens = &tokens[..used];
        if tokens.len() < 5 {
            return Err(BodyError::Compressed(format!(
                "topic config {} has fewer than 5 fields",
                clip(text)
            )));
        }
        let number = |i: usize| -> Result<i32, BodyError> {
            tokens[i].parse().map_err(|_| {
                BodyError::Compressed(format!(
                    "topic config {}: bad number {}",
                    clip(text),
                    clip(tokens[i])
                ))
            })
        };
        let filter = tokens[4];
        if filter != "SINGLE_TAG" && filter != "MULTI_TAG" {
            return Err(BodyError::Compressed(format!(
                "topic config {}: bad filter type",
                clip(text)
            )));
        }
        Ok(Self {
            topic_name: tokens[0].to_owned(),
            read_queue_nums: number(1)?,
            write_queue_nums: number(2)?,
            perm: number(3)?,
            topic_filter_type: filter.to_owned(),
            attributes: tokens
                .get(5)
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_default(),
            ..Self::default()
        })
    }
}

/// Static-topic mapping of one broker for one topic (`TopicQueueMappingInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct TopicQueueMappingInfo {
    pub bname: Option<String>,
    #[serde(rename = "currIdMap", skip_serializing_if = "Option::is_none")]
    pub curr_id_map: Option<BTreeMap<i32, i32>>,
    pub dirty: bool,
    pub epoch: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    #[serde(rename = "totalQueues")]
    pub total_queues: i32,
}

impl Default for TopicQueueMappingInfo {
    fn default() -> Self {
        Self {
            bname: None,
            curr_id_map: None,
            dirty: false,
            epoch: 0,
            scope: Some("__global__".to_owned()),
            topic: None,
            total_queues: 0,
        }
    }
}

/// A broker's topic table with its version and static-topic mappings
/// (`TopicConfigAndMappingSerializeWrapper`; 4.x brokers send the first two fields only).
/// `topicQueueMappingDetailMap` and `mappingDataVersion` are not used by a NameServer and are
/// skipped when reading.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct TopicConfigWrapper {
    #[serde(rename = "dataVersion", deserialize_with = "null_default")]
    pub data_version: DataVersion,
    #[serde(rename = "topicConfigTable", deserialize_with = "null_default")]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
    #[serde(rename = "topicQueueMappingInfoMap", deserialize_with = "null_default")]
    pub topic_queue_mapping_info_map: BTreeMap<String, TopicQueueMappingInfo>,
}

/// REGISTER_BROKER body (docs/protocol.md#registerbrokerbody).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct RegisterBrokerBody {
    #[serde(rename = "filterServerList", deserialize_with = "null_default")]
    pub filter_server_list: Vec<String>,
    #[serde(
        rename = "topicConfigSerializeWrapper",
        deserialize_with = "null_default"
    )]
    pub topic_config_wrapper: TopicConfigWrapper,
}

/// A body that cannot be decoded; answered with SYSTEM_ERROR.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("bad JSON body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("Failed to decode RegisterBrokerBody: {0}")]
    Compressed(String),
}

impl RegisterBrokerBody {
    /// Decodes a REGISTER_BROKER body as Java does for a request of `request_version`
    /// (docs/protocol.md#registerbrokerbody): below V3_0_11 the body is a bare topic-config
    /// wrapper; otherwise JSON or, when `compressed`, the zlib form. `max_inflated` bounds the
    /// inflated size of a compressed body (a zlib bomb is an error, not an allocation).
    pub fn decode(
        body: Option<&[u8]>,
        compressed: bool,
        request_version: i32,
        max_inflated: usize,
    ) -> Result<Self, BodyError> {
        let Some(bytes) = body.filter(|b| !b.is_empty()) else {
            return Ok(Self::default());
        };
        if request_version < version::V3_0_11 {
            let wrapper: TopicConfigWrapper = fastjson::from_slice(bytes)?;
            return Ok(Self {
                filter_server_list: Vec::new(),
                topic_config_wrapper: wrapper,
            });
        }
        if !compressed {
            return Ok(fastjson::from_slice(bytes)?);
        }
        Self::decode_compressed(bytes, request_version >= version::V5_0_0, max_inflated)
    }

    /// The compressed form: zlib over `len|DataVersion JSON`, `count × (len|topic text)`,
    /// `len|filter-server JSON array`, and from 5.0.0 `count × (len|mapping JSON)`. Inflated as
    /// it is read, one chunk at a time into one reused buffer: what it holds at most is the
    /// decoded result plus the largest chunk, and it stops as soon as the chunks read add up to
    /// more than `max_inflated` bytes (a zlib bomb costs the time to inflate `max_inflated`
    /// bytes, never the memory).
    pub fn decode_compressed(
        bytes: &[u8],
        with_mappings: bool,
        max_inflated: usize,
    ) -> Result<Self, BodyError> {
        let mut stream = Inflating::new(bytes, max_inflated);
        let data_version: DataVersion = chunk_json(stream.chunk()?, "DataVersion")?;
        let topic_count = stream.count()?;
        let mut topic_config_table = BTreeMap::new();
        for _ in 0..topic_count {
            let text = std::str::from_utf8(stream.chunk()?)
                .map_err(|_| BodyError::Compressed("topic config is not UTF-8".into()))?;
            let config = TopicConfig::decode_text(text)?;
            topic_config_table.insert(config.topic_name.clone(), config);
        }
        // Java logs and ignores a bad filter-server list.
        let filter_server_list = fastjson::from_slice(stream.chunk()?).unwrap_or_default();
        let mut topic_queue_mapping_info_map = BTreeMap::new();
        if with_mappings {
            let mapping_count = stream.count()?;
            for _ in 0..mapping_count {
                let info: TopicQueueMappingInfo =
                    chunk_json(stream.chunk()?, "TopicQueueMappingInfo")?;
                topic_queue_mapping_info_map.insert(info.topic.clone().unwrap_or_default(), info);
            }
        }
        Ok(Self {
            filter_server_list,
            topic_config_wrapper: TopicConfigWrapper {
                data_version,
                topic_config_table,
                topic_queue_mapping_info_map,
            },
        })
    }

    /// Encodes the compressed form (what a 4.x broker with `compressedRegister=true` sends).
    pub fn encode_compressed(&self, with_mappings: bool) -> Vec<u8> {
        use std::io::Write;
        let mut raw = Vec::new();
        let put_chunk = |raw: &mut Vec<u8>, bytes: &[u8]| {
            raw.extend_from_slice(&len_i32(bytes.len()).to_be_bytes());
            raw.extend_from_slice(bytes);
        };
        let wrapper = &self.topic_config_wrapper;
        put_chunk(
            &mut raw,
            &to_json(&wrapper.data_version, fastjson::JsonStyle::Legacy),
        );
        raw.extend_from_slice(&len_i32(wrapper.topic_config_table.len()).to_be_bytes());
        for config in wrapper.topic_config_table.values() {
            put_chunk(&mut raw, config.encode_text().as_bytes());
        }
        put_chunk(
            &mut raw,
            &to_json(&self.filter_server_list, fastjson::JsonStyle::Legacy),
        );
        if with_mappings {
            raw.extend_from_slice(
                &len_i32(wrapper.topic_queue_mapping_info_map.len()).to_be_bytes(),
            );
            for info in wrapper.topic_queue_mapping_info_map.values() {
                put_chunk(&mut raw, &to_json(info, fastjson::JsonStyle::Legacy));
            }
        }
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        // Writing to a Vec cannot fail.
        let _ = encoder.write_all(&raw);
        encoder.finish().unwrap_or_default()
    }
}

fn len_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// Input quoted in an error: at most 64 bytes of it, then its length.
fn clip(text: &str) -> String {
    const SHOWN: usize = 64;
    if text.len() <= SHOWN {
        return format!("{text:?}");
    }
    let mut end = SHOWN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}... ({} bytes)", &text[..end], text.len())
}

/// A chunk of the compressed form read as JSON; its errors are errors of the compressed body.
fn chunk_json<T: serde::de::DeserializeOwned>(chunk: &[u8], what: &str) -> Result<T, BodyError> {
    fastjson::from_slice(chunk).map_err(|e| BodyError::Compressed(format!("bad {what}: {e}")))
}

/// A zlib stream read as the compressed registration's length-prefixed chunks, with a budget of
/// inflated bytes.
struct Inflating<'a> {
    zlib: flate2::read::ZlibDecoder<&'a [u8]>,
    /// Inflated bytes still allowed.
    left: usize,
    limit: usize,
    chunk: Vec<u8>,
}

impl<'a> Inflating<'a> {
    fn new(bytes: &'a [u8], limit: usize) -> Self {
        Inflating {
            zlib: flate2::read::ZlibDecoder::new(bytes),
            left: limit,
            limit,
            chunk: Vec::new(),
        }
    }

    /// Takes `n` more inflated bytes from the budget.
    fn spend(&mut self, n: usize) -> Result<(), BodyError> {
        self.left = self.left.checked_sub(n).ok_or_else(|| {
            BodyError::Compressed(format!("inflates to more than {} bytes", self.limit))
        })?;
        Ok(())
    }

    /// The next big-endian `i32`, which must not be negative.
    fn count(&mut self) -> Result<usize, BodyError> {
        self.spend(4)?;
        let mut word = [0u8; 4];
        self.zlib.read_exact(&mut word).map_err(inflate_error)?;
        let n = i32::from_be_bytes(word);
        usize::try_from(n).map_err(|_| BodyError::Compressed(format!("negative count {n}")))
    }

    /// The next length-prefixed chunk, valid until the next call.
    fn chunk(&mut self) -> Result<&[u8], BodyError> {
        let len = self.count()?;
        self.spend(len)?;
        self.chunk.clear();
        // `len` is within the budget, but the stream may end sooner: read, do not reserve.
        let read = (&mut self.zlib)
            .take(len as u64)
            .read_to_end(&mut self.chunk)
            .map_err(inflate_error)?;
        if read < len {
            return Err(end_of_data());
        }
        Ok(&self.chunk)
    }
}

fn end_of_data() -> BodyError {
    BodyError::Compressed("End of compressed data has reached".into())
}

fn inflate_error(err: std::io::Error) -> BodyError {
    if err.kind() == std::io::ErrorKind::UnexpectedEof {
        end_of_data()
    } else {
        BodyError::Compressed(format!("bad zlib stream: {err}"))
    }
}

/// Encodes a body in the given style. Our body types contain only strings, numbers and maps with
/// string or integer keys, which always serialize; an empty body is the fallback that cannot occur.
pub fn to_json<T: Serialize + ?Sized>(value: &T, style: fastjson::JsonStyle) -> Vec<u8> {
    fastjson::to_vec(value, style).unwrap_or_default()
}

/// One broker group's queues of one topic.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct QueueData {
    #[serde(rename = "brokerName")]
    pub broker_name: String,
    pub perm: i32,
    #[serde(rename = "readQueueNums")]
    pub read_queue_nums: i32,
    #[serde(rename = "topicSysFlag")]
    pub topic_sys_flag: i32,
    #[serde(rename = "writeQueueNums")]
    pub write_queue_nums: i32,
}

/// A broker group: its addresses by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct BrokerData {
    #[serde(rename = "brokerAddrs", deserialize_with = "null_default")]
    pub broker_addrs: BTreeMap<i64, String>,
    #[serde(rename = "brokerName")]
    pub broker_name: String,
    pub cluster: String,
    #[serde(rename = "enableActingMaster")]
    pub enable_acting_master: bool,
    #[serde(rename = "zoneName", skip_serializing_if = "Option::is_none")]
    pub zone_name: Option<String>,
}

/// GET_ROUTEINFO_BY_TOPIC response body (and REGISTER_TOPIC_IN_NAMESRV request body).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct TopicRouteData {
    #[serde(rename = "brokerDatas", deserialize_with = "null_default")]
    pub broker_datas: Vec<BrokerData>,
    #[serde(rename = "filterServerTable", deserialize_with = "null_default")]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    #[serde(rename = "orderTopicConf", skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    #[serde(rename = "queueDatas", deserialize_with = "null_default")]
    pub queue_datas: Vec<QueueData>,
    #[serde(
        rename = "topicQueueMappingByBroker",
        skip_serializing_if = "Option::is_none"
    )]
    pub topic_queue_mapping_by_broker: Option<BTreeMap<String, TopicQueueMappingInfo>>,
}

/// GET_BROKER_CLUSTER_INFO response body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct ClusterInfo {
    #[serde(rename = "brokerAddrTable", deserialize_with = "null_default")]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    #[serde(rename = "clusterAddrTable", deserialize_with = "null_default")]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// Topic-list response bodies; `brokerAddr` only in GET_SYSTEM_TOPIC_LIST_FROM_NS.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct TopicList {
    #[serde(rename = "brokerAddr", skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    #[serde(rename = "topicList", deserialize_with = "null_default")]
    pub topic_list: BTreeSet<String>,
}

/// KV namespace contents (`KVTable`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct KvTable {
    #[serde(deserialize_with = "null_default")]
    pub table: BTreeMap<String, String>,
}

/// One broker group's members (`BrokerMemberGroup`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct BrokerMemberGroup {
    #[serde(rename = "brokerAddrs", deserialize_with = "null_default")]
    pub broker_addrs: BTreeMap<i64, String>,
    #[serde(rename = "brokerName", skip_serializing_if = "Option::is_none")]
    pub broker_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

/// GET_BROKER_MEMBER_GROUP response body.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct GetBrokerMemberGroupResponseBody {
    #[serde(rename = "brokerMemberGroup", deserialize_with = "null_default")]
    pub broker_member_group: BrokerMemberGroup,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_config_of_megabytes_is_split_no_further_than_used_and_quoted_clipped() {
        let spaces = " ".repeat(4 << 20);
        let err = TopicConfig::decode_text(&spaces).unwrap_err().to_string();
        assert!(err.len() < 200, "{err}");
        let long = format!("t 1 1 6 SINGLE_TAG {{}} {}", "x ".repeat(1 << 20));
        assert_eq!(TopicConfig::decode_text(&long).unwrap().topic_name, "t");
        let bad = format!("{} 1 1 6 BAD", "y".repeat(1 << 20));
        assert!(
            TopicConfig::decode_text(&bad)
                .unwrap_err()
                .to_string()
                .len()
                < 200
        );
    }
    use crate::fastjson::JsonStyle;

    fn route_fixture() -> TopicRouteData {
        TopicRouteData {
            broker_datas: vec![BrokerData {
                broker_addrs: [
                    (0, "127.0.0.1:10911".to_owned()),
                    (1, "127.0.0.1:10921".to_owned()),
                ]
                .into_iter()
                .collect(),
                broker_name: "broker-a".into(),
                cluster: "DefaultCluster".into(),
                enable_acting_master: false,
                zone_name: None,
            }],
            filter_server_table: BTreeMap::new(),
            order_topic_conf: None,
            queue_datas: vec![QueueData {
                broker_name: "broker-a".into(),
                perm: 6,
                read_queue_nums: 4,
                topic_sys_flag: 0,
                write_queue_nums: 4,
            }],
            topic_queue_mapping_by_broker: None,
        }
    }

    /// Golden vector V10 (docs/protocol.md#route-bodies): both encodings byte for byte, 280 and
    /// 284 bytes.
    #[test]
    fn route_bodies_match_java_text() {
        let legacy = to_json(&route_fixture(), JsonStyle::Legacy);
        assert_eq!(
            std::str::from_utf8(&legacy).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        assert_eq!(legacy.len(), 280);
        let standard = to_json(&route_fixture(), JsonStyle::Standard);
        assert_eq!(
            std::str::from_utf8(&standard).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        assert_eq!(standard.len(), 284);
        // Both read back.
        let back: TopicRouteData = fastjson::from_slice(&legacy).unwrap();
        assert_eq!(back, route_fixture());
    }

    #[test]
    fn route_with_order_conf_and_zone() {
        let mut route = route_fixture();
        route.order_topic_conf = Some("broker-a:4;broker-b:4".into());
        route.broker_datas[0].zone_name = Some("zone-a".into());
        let text = String::from_utf8(to_json(&route, JsonStyle::Legacy)).unwrap();
        assert!(
            text.contains(r#""enableActingMaster":false,"zoneName":"zone-a"}"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#""filterServerTable":{},"orderTopicConf":"broker-a:4;broker-b:4","queueDatas""#
            ),
            "{text}"
        );
    }

    #[test]
    fn cluster_info_is_legacy() {
        let mut info = ClusterInfo::default();
        assert_eq!(
            to_json(&info, JsonStyle::Legacy),
            br#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#
        );
        let mut bd = route_fixture().broker_datas.remove(0);
        bd.broker_addrs = [
            (0, "192.168.0.10:10911".to_owned()),
            (1, "192.168.0.11:10911".to_owned()),
        ]
        .into_iter()
        .collect();
        info.broker_addr_table.insert("broker-a".into(), bd);
        info.cluster_addr_table.insert(
            "DefaultCluster".into(),
            ["broker-a".to_owned()].into_iter().collect(),
        );
        assert_eq!(
            std::str::from_utf8(&to_json(&info, JsonStyle::Legacy)).unwrap(),
            r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.10:10911",1:"192.168.0.11:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
        );
    }

    #[test]
    fn small_bodies() {
        let tl = TopicList {
            broker_addr: None,
            topic_list: ["TopicTest".to_owned()].into_iter().collect(),
        };
        assert_eq!(
            to_json(&tl, JsonStyle::Legacy),
            br#"{"topicList":["TopicTest"]}"#
        );
        let kv = KvTable {
            table: [("TopicTest".to_owned(), "broker-a:4;broker-b:4".to_owned())]
                .into_iter()
                .collect(),
        };
        assert_eq!(
            to_json(&kv, JsonStyle::Legacy),
            br#"{"table":{"TopicTest":"broker-a:4;broker-b:4"}}"#
        );
        let group = GetBrokerMemberGroupResponseBody {
            broker_member_group: BrokerMemberGroup {
                broker_addrs: [
                    (0, "127.0.0.1:10911".to_owned()),
                    (1, "127.0.0.1:10921".to_owned()),
                ]
                .into_iter()
                .collect(),
                broker_name: Some("broker-a".into()),
                cluster: Some("DefaultCluster".into()),
            },
        };
        assert_eq!(
            std::str::from_utf8(&to_json(&group, JsonStyle::Legacy)).unwrap(),
            r#"{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
        );
        let dv = DataVersion {
            counter: 3,
            state_version: 0,
            timestamp: 1_700_000_000_000,
        };
        assert_eq!(
            to_json(&dv, JsonStyle::Legacy),
            br#"{"counter":3,"stateVersion":0,"timestamp":1700000000000}"#
        );
    }

    const SPEC_BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;

    #[test]
    fn register_body_json_versions() {
        assert_eq!(SPEC_BODY.len(), 449);
        let body =
            RegisterBrokerBody::decode(Some(SPEC_BODY.as_bytes()), false, 479, 1 << 20).unwrap();
        let wrapper = &body.topic_config_wrapper;
        assert_eq!(wrapper.data_version.counter, 1);
        assert_eq!(wrapper.topic_config_table["TopicTest"].read_queue_nums, 4);
        // Version 0: the same bytes read as a bare wrapper find no topics.
        let old =
            RegisterBrokerBody::decode(Some(SPEC_BODY.as_bytes()), false, 0, 1 << 20).unwrap();
        assert!(old.topic_config_wrapper.topic_config_table.is_empty());
        // No body: empty registration.
        let none = RegisterBrokerBody::decode(None, true, 479, 1 << 20).unwrap();
        assert_eq!(none, RegisterBrokerBody::default());
        // 4.x body without stateVersion and attributes.
        let v4 = r#"{"filterServerList":["10.0.0.1:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":5},"topicConfigTable":{"T":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":1,"writeQueueNums":8}}}}"#;
        let body = RegisterBrokerBody::decode(Some(v4.as_bytes()), false, 409, 1 << 20).unwrap();
        assert_eq!(body.filter_server_list, vec!["10.0.0.1:1".to_owned()]);
        assert_eq!(
            body.topic_config_wrapper.topic_config_table["T"].topic_sys_flag,
            1
        );
        // Bare numeric keys inside mapping info.
        let mapped = r#"{"topicConfigSerializeWrapper":{"topicQueueMappingInfoMap":{"S":{"bname":"b","currIdMap":{0:3,1:4},"epoch":9,"topic":"S","totalQueues":2}},"topicQueueMappingDetailMap":{"S":{"hostedQueues":{0:[{"bname":"b"}]}}}}}"#;
        let body =
            RegisterBrokerBody::decode(Some(mapped.as_bytes()), false, 479, 1 << 20).unwrap();
        let info = &body.topic_config_wrapper.topic_queue_mapping_info_map["S"];
        assert_eq!(info.curr_id_map.as_ref().unwrap()[&1], 4);
    }

    /// Golden vector V9 (docs/protocol.md#golden-vectors): the inflated bytes and the zlib stream
    /// decode to one topic.
    #[test]
    fn compressed_golden_vector() {
        let zlib: [u8; 97] = [
            0x78, 0xda, 0x63, 0x60, 0x60, 0xb0, 0xa8, 0x56, 0x4a, 0xce, 0x2f, 0xcd, 0x2b, 0x49,
            0x2d, 0x52, 0xb2, 0x32, 0xd4, 0x51, 0x2a, 0x2e, 0x49, 0x2c, 0x49, 0x0d, 0x4b, 0x2d,
            0x2a, 0xce, 0xcc, 0xcf, 0x53, 0xb2, 0x32, 0xd0, 0x51, 0x2a, 0xc9, 0xcc, 0x4d, 0x05,
            0x0a, 0xe6, 0x16, 0x00, 0xa5, 0xcd, 0x0d, 0x10, 0xa0, 0x96, 0x81, 0x81, 0x81, 0x11,
            0x88, 0x65, 0x43, 0xf2, 0x0b, 0x32, 0x93, 0x43, 0x80, 0x6a, 0x14, 0x4c, 0x80, 0xd0,
            0x4c, 0x21, 0xd8, 0xd3, 0xcf, 0xdd, 0xc7, 0x35, 0x3e, 0xc4, 0xd1, 0x5d, 0xa1, 0x1a,
            0xa4, 0x88, 0x29, 0x3a, 0x16, 0x48, 0x32, 0x00, 0x00, 0x52, 0x77, 0x1b, 0x61,
        ];
        assert_eq!(crc32fast::hash(&zlib) & 0x7FFF_FFFF, 164_289_492);
        let body = RegisterBrokerBody::decode(Some(&zlib), true, 479, 1 << 20).unwrap();
        let wrapper = &body.topic_config_wrapper;
        assert_eq!(wrapper.data_version.timestamp, 1_700_000_000_000);
        let t = &wrapper.topic_config_table["TopicTest"];
        assert_eq!((t.read_queue_nums, t.write_queue_nums, t.perm), (4, 4, 6));
        assert!(body.filter_server_list.is_empty());
        // A pre-5.0 request has no mapping section: the trailing count is then ignored.
        assert!(RegisterBrokerBody::decode(Some(&zlib), true, 409, 1 << 20).is_ok());
        // Our encoder inflates to V9's 107 bytes and round-trips.
        let again = body.encode_compressed(true);
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(again.as_slice())
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(raw.len(), 107);
        assert_eq!(
            RegisterBrokerBody::decode_compressed(&again, true, 1 << 20).unwrap(),
            body
        );
    }

    #[test]
    fn compressed_garbage_is_an_error() {
        assert!(RegisterBrokerBody::decode(Some(b"not zlib"), true, 479, 1 << 20).is_err());
        let mut body = RegisterBrokerBody::default();
        body.topic_config_wrapper
            .topic_config_table
            .insert("T".into(), TopicConfig::new("T", 4, 6));
        let bytes = body.encode_compressed(true);
        // Inflated size above the limit.
        assert!(RegisterBrokerBody::decode(Some(&bytes), true, 479, 10).is_err());
        // Truncated stream.
        assert!(
            RegisterBrokerBody::decode(Some(&bytes[..bytes.len() / 2]), true, 479, 1 << 20)
                .is_err()
        );
    }

    #[test]
    fn topic_text_form() {
        let t = TopicConfig::decode_text("TopicTest 4 4 6 SINGLE_TAG {}").unwrap();
        assert_eq!(t.encode_text(), "TopicTest 4 4 6 SINGLE_TAG {}");
        let v4 = TopicConfig::decode_text("T 8 8 7 MULTI_TAG").unwrap();
        assert_eq!(v4.perm, 7);
        assert!(TopicConfig::decode_text("T 8 8 7").is_err());
        assert!(TopicConfig::decode_text("T x 8 7 SINGLE_TAG").is_err());
        let odd = TopicConfig::decode_text("T 1 1 6 SINGLE_TAG {bad").unwrap();
        assert!(odd.attributes.is_empty());
    }

    #[test]
    fn crc_examples_of_spec_v6() {
        let body = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{}}}"#;
        assert_eq!(body.len(), 148);
        assert_eq!(crc32fast::hash(body.as_bytes()) & 0x7FFF_FFFF, 385_843_084);
        assert_eq!(
            crc32fast::hash(SPEC_BODY.as_bytes()) & 0x7FFF_FFFF,
            1_188_899_506
        );
        assert_eq!(crc32fast::hash(b"123456789") & 0x7FFF_FFFF, 1_274_296_614);
    }
}
