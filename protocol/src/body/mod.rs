//! JSON bodies of NameServer requests and responses (docs/protocol.md#json-bodies).
//!
//! Field order in every struct is alphabetical by wire name, because fastjson writes bean
//! properties alphabetically; `Option` fields are omitted when `None`, as fastjson omits nulls.
//! Maps are `BTreeMap`s: sorted output is what standard JSON requires and a legal order for legacy
//! JSON. Encode with [`crate::fastjson::to_vec`], decode with [`crate::fastjson::from_slice`].
//!
//! One file per family of bodies: `topic_config` (a broker's topic table), `register` (the
//! REGISTER_BROKER body, JSON and compressed), `route` (routes, clusters, topic lists, member
//! groups), `kv` (KV tables); `json` holds what they share, `perm` and `sys_flag` the bits.

mod error;
mod json;
mod kv;
pub mod perm;
mod register;
mod route;
mod shared_route;
pub mod sys_flag;
#[cfg(test)]
mod tests;
mod topic_config;

pub use error::BodyError;
pub(crate) use json::null_default;
pub use json::to_json;
pub use kv::{KvTable, ORDER_TOPIC_CONFIG_NAMESPACE};
pub use register::{is_zlib_stream, RegisterBrokerBody};
pub use route::{
    BrokerData, BrokerMemberGroup, ClusterInfo, GetBrokerMemberGroupResponseBody, QueueData,
    TopicList, TopicRouteData,
};
pub use shared_route::{EncodedBrokerData, SharedClusterInfo, SharedQueueData, SharedRoute};
pub use topic_config::{DataVersion, TopicConfig, TopicConfigWrapper, TopicQueueMappingInfo};
