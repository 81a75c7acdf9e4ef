//! A broker's topic table as REGISTER_BROKER carries it: each topic's configuration (with the
//! text form of the compressed registration), the table's version and static-topic mappings.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::error::BodyError;
use super::json::{json_objects, null_default};
use super::perm;

json_objects!(
    DataVersion,
    TopicConfig,
    TopicQueueMappingInfo,
    TopicConfigWrapper
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
    /// `SINGLE_TAG` or `MULTI_TAG` (borrowed: no allocation per topic), or what a peer sent.
    #[serde(rename = "topicFilterType", deserialize_with = "filter_type")]
    pub topic_filter_type: Cow<'static, str>,
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
            topic_filter_type: Cow::Borrowed(SINGLE_TAG),
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
        let Some(filter) = known_filter_type(tokens[4]) else {
            return Err(BodyError::Compressed(format!(
                "topic config {}: bad filter type",
                clip(text)
            )));
        };
        Ok(Self {
            topic_name: tokens[0].to_owned(),
            read_queue_nums: number(1)?,
            write_queue_nums: number(2)?,
            perm: number(3)?,
            topic_filter_type: Cow::Borrowed(filter),
            attributes: tokens
                .get(5)
                .and_then(|a| serde_json::from_str(a).ok())
                .unwrap_or_default(),
            ..Self::default()
        })
    }
}

const SINGLE_TAG: &str = "SINGLE_TAG";
const MULTI_TAG: &str = "MULTI_TAG";

/// The filter types Java knows, as static text.
fn known_filter_type(text: &str) -> Option<&'static str> {
    [SINGLE_TAG, MULTI_TAG].into_iter().find(|t| *t == text)
}

/// Reads `topicFilterType` without allocating for the two values every broker sends.
fn filter_type<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Cow<'static, str>, D::Error> {
    struct Text;
    impl serde::de::Visitor<'_> for Text {
        type Value = Cow<'static, str>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a filter type string")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
            Ok(known_filter_type(text).map_or_else(|| Cow::Owned(text.to_owned()), Cow::Borrowed))
        }
    }
    deserializer.deserialize_str(Text)
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
