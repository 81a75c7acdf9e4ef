//! Settings the actors read: the live NameServer switches and the per-connection limits.
//! The root crate builds them from its `Config`.

use std::time::Duration;

use rmq_protocol::code::{version, SerializeType};
use rmq_protocol::codec::DEFAULT_MAX_FRAME;

use crate::route::RouteOptions;

/// Java `NamesrvConfig` switches that an UPDATE_NAMESRV_CONFIG applies at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSettings {
    /// Fill `orderTopicConf` in routes from the ORDER_TOPIC_CONFIG KV namespace.
    pub order_message_enable: bool,
    /// Answer REGISTER_BROKER with the ORDER_TOPIC_CONFIG namespace as body.
    pub return_order_topic_config_to_broker: bool,
    /// Show a master-less group's lowest-id slave as id 0 in routes.
    pub support_acting_master: bool,
    /// Answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
    pub enable_all_topic_list: bool,
    /// Answer GET_TOPICS_BY_CLUSTER and the unit topic lists.
    pub enable_topic_list: bool,
    /// Accepted and shown for parity; this server sends no NOTIFY_MIN_BROKER_ID_CHANGE.
    pub notify_min_broker_id_changed: bool,
    /// Refuse route queries for `wait_for_service` after start.
    pub need_wait_for_service: bool,
    pub wait_for_service: Duration,
    /// A registration that omits a topic removes the broker from it.
    pub delete_topic_with_broker_registration: bool,
}

impl Default for LiveSettings {
    fn default() -> Self {
        Self {
            order_message_enable: false,
            return_order_topic_config_to_broker: true,
            support_acting_master: false,
            enable_all_topic_list: true,
            enable_topic_list: true,
            notify_min_broker_id_changed: false,
            need_wait_for_service: false,
            wait_for_service: Duration::from_secs(45),
            delete_topic_with_broker_registration: false,
        }
    }
}

impl LiveSettings {
    pub fn route_options(&self) -> RouteOptions {
        RouteOptions {
            delete_topic_with_broker_registration: self.delete_topic_with_broker_registration,
            support_acting_master: self.support_acting_master,
        }
    }
}

/// How response headers are serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseSerialize {
    /// The serialize type of the request (JSON requests, which every C++ client sends, get JSON).
    #[default]
    Mirror,
    /// Always this type, like a Java server with `rocketmq.serialize.type`.
    Fixed(SerializeType),
}

/// Limits and wire choices of every connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// `MQVersion` ordinal put in every response.
    pub advertised_version: i32,
    pub response_serialize: ResponseSerialize,
    /// Largest frame accepted, length field included.
    pub max_frame: usize,
    /// Largest inflated size of a compressed registration body.
    pub max_inflated_body: usize,
    /// Requests of one connection being processed at once; reading pauses beyond it.
    pub max_in_flight: usize,
    /// Close a connection with no read and no write for this long (`None`: never).
    pub idle_timeout: Option<Duration>,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            advertised_version: version::V5_3_3,
            response_serialize: ResponseSerialize::Mirror,
            max_frame: DEFAULT_MAX_FRAME,
            max_inflated_body: 64 * DEFAULT_MAX_FRAME,
            max_in_flight: 1024,
            idle_timeout: Some(Duration::from_secs(120)),
        }
    }
}
