//! The KV store's bodies: a namespace's contents, and the namespace of order-topic layouts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::json::{json_objects, null_default};

json_objects!(KvTable);

/// The KV namespace holding order-topic layouts (`NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG`).
pub const ORDER_TOPIC_CONFIG_NAMESPACE: &str = "ORDER_TOPIC_CONFIG";

/// KV namespace contents (`KVTable`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct KvTable {
    #[serde(deserialize_with = "null_default")]
    pub table: BTreeMap<String, String>,
}
