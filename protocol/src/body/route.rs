//! The answers about brokers and topics: a topic's route (also the REGISTER_TOPIC_IN_NAMESRV
//! body), the cluster table, topic lists and a broker group's members.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::json::{json_objects, null_default};
use super::topic_config::TopicQueueMappingInfo;

json_objects!(
    QueueData,
    BrokerData,
    TopicRouteData,
    ClusterInfo,
    TopicList,
    BrokerMemberGroup,
    GetBrokerMemberGroupResponseBody
);

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
