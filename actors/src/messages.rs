//! Every message between the actors, and the typed replies they answer with. Request/reply
//! messages travel with `send` (a one-shot reply channel); events with `do_send`. This file sits at
//! the bottom of the actors: it names data types only (route, settings, protocol), never an actor;
//! a message that carries a way back holds a [`Recipient`], not an actor's address. How a reply
//! becomes a wire response is the response module's concern. docs/actors.md lists who sends what to whom.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::body::{
    DataVersion, GetBrokerMemberGroupResponseBody, KvTable, QueueData, SharedClusterInfo,
    SharedRoute,
};

use crate::route::{
    BrokerInstance, ConnId, ExpiredBroker, NeedTopics, RegisterOutcome, Registration, RouteChanges,
    Unregistration,
};
use crate::settings::RegistrySettings;

// ---------------------------------------------------------------------------------------------
// Connection -> RouteRegistry: one message per request code.

/// REGISTER_BROKER, with its body decoded (or recognised as the previous one) by
/// the registration module. [`NeedTopics`] asks for the decoded table after all.
#[derive(Debug, Message)]
#[rtype(result = "Result<RegisterBrokerReply, NeedTopics>")]
pub struct RegisterBroker {
    pub registration: Registration,
}

/// What REGISTER_BROKER answers: the outcome and, if configured, the ORDER_TOPIC_CONFIG table.
#[derive(Debug)]
pub struct RegisterBrokerReply {
    pub outcome: RegisterOutcome,
    /// The ORDER_TOPIC_CONFIG namespace, when it exists and `returnOrderTopicConfigToBroker` is
    /// on (the reply's body).
    pub order_topic_config: Option<Arc<KvTable>>,
    /// Whether the registration changed any route (a new broker, new or changed topics, ...);
    /// false for a refresh that changed nothing (it is not audited).
    pub routes_changed: bool,
}

/// UNREGISTER_BROKER.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct UnregisterBroker {
    pub request: Unregistration,
}

/// BROKER_HEARTBEAT.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct BrokerHeartbeat {
    pub instance: BrokerInstance,
}

/// QUERY_DATA_VERSION.
#[derive(Debug, Message)]
#[rtype(result = "DataVersionReply")]
pub struct QueryDataVersion {
    pub instance: BrokerInstance,
    /// The broker's version from the request body; `None` always reads as changed.
    pub version: Option<DataVersion>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataVersionReply {
    pub changed: bool,
    pub stored: Option<DataVersion>,
}

/// GET_ROUTEINFO_BY_TOPIC.
#[derive(Debug, Message)]
#[rtype(result = "Result<RouteReply, RouteError>")]
pub struct GetRouteInfo {
    /// `None` when the request had no topic: answered TOPIC_NOT_EXIST for "null", as Java does.
    pub topic: Option<String>,
}

/// A topic's route, and the registry's generation when it answered (a worker cache refuses its
/// encoding if the topic changed after that).
#[derive(Debug, Clone)]
pub struct RouteReply {
    /// Shared parts: encoded with `SharedRoute::to_json`, copied out with `to_data`.
    pub route: SharedRoute,
    pub generation: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error("No topic route info in name server for the topic: {0}")]
    TopicNotExist(String),
    #[error("name server not ready")]
    NotReady,
}

/// GET_BROKER_CLUSTER_INFO.
#[derive(Debug, Message)]
#[rtype(result = "SharedClusterInfo")]
pub struct GetClusterInfo;

/// GET_BROKER_MEMBER_GROUP.
#[derive(Debug, Message)]
#[rtype(result = "GetBrokerMemberGroupResponseBody")]
pub struct GetBrokerMemberGroup {
    pub cluster: String,
    pub name: String,
}

/// A SUCCESS response body.
#[derive(Debug, Clone)]
pub struct Body(pub Bytes);

/// WIPE_WRITE_PERM_OF_BROKER.
#[derive(Debug, Message)]
#[rtype(result = "WipeTopicCount")]
pub struct WipeWritePerm {
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WipeTopicCount(pub usize);

/// ADD_WRITE_PERM_OF_BROKER.
#[derive(Debug, Message)]
#[rtype(result = "AddTopicCount")]
pub struct AddWritePerm {
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddTopicCount(pub usize);

/// The topic-list queries (codes 206, 224, 304, 311, 312, 313).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicListKind {
    All,
    ByCluster(String),
    System,
    Unit,
    HasUnitSub,
    HasUnitSubUnUnit,
}

/// One of the topic-list queries; refused with "disable" when switched off.
#[derive(Debug, Message)]
#[rtype(result = "Result<Body, Disabled>")]
pub struct GetTopicList {
    pub kind: TopicListKind,
}

/// A query switched off by `enableAllTopicList` / `enableTopicList`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disabled;

/// DELETE_TOPIC_IN_NAMESRV.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct DeleteTopic {
    pub topic: String,
    pub cluster: Option<String>,
}

/// REGISTER_TOPIC_IN_NAMESRV.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct RegisterTopic {
    pub topic: String,
    pub queue_datas: Vec<QueueData>,
}

// ---------------------------------------------------------------------------------------------
// RouteRegistry -> the route cache of every connection thread.

/// Routes changed at `generation`: drop them from the worker's cache. Answered once applied; the
/// registry waits for every worker before it answers the request that caused the change.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct InvalidateRoutes {
    pub generation: u64,
    pub changes: Arc<RouteChanges>,
}

// ---------------------------------------------------------------------------------------------
// Housekeeping <-> RouteRegistry, Connection, Listener.

/// Periodic expiry scan; returns the brokers dropped, whose connections Housekeeping closes.
#[derive(Debug, Message)]
#[rtype(result = "Vec<ExpiredBroker>")]
pub struct ScanInactive {
    pub now: Instant,
}

/// Asks Housekeeping to run an expiry scan now, as if the clock read `now`, and close the
/// expired brokers' connections (tests and tools drive expiry with it instead of waiting).
#[derive(Debug, Message)]
#[rtype(result = "Vec<ExpiredBroker>")]
pub struct RunScan {
    pub now: Instant,
}

/// From Housekeeping when a connection stops (EOF, bad frame, expiry, shutdown).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ChannelClosed {
    /// One or more: the connections that stopped while the registry took the last ones.
    pub conns: Vec<ConnId>,
}

/// A connection started; Housekeeping tracks it to close it on expiry or shutdown.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ConnectionOpened {
    pub conn: ConnId,
    /// The client: the address of its PROXY header, or the socket's peer.
    pub peer: SocketAddr,
    pub tls: bool,
    /// Where to ask the connection to close or drain.
    pub close: Recipient<CloseConnection>,
}

/// Drain every connection open now; connections opened later are served as usual (to
/// Housekeeping). Answers how many connections were told.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct DrainAll;

/// A connection answered GO_AWAY (to Housekeeping, which counts them).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct WentAway;

/// How many GO_AWAY answers the server has given (Housekeeping).
#[derive(Debug, Message)]
#[rtype(result = "u64")]
pub struct GoAwayCount;

/// The open connections, by number.
#[derive(Debug, Message)]
#[rtype(result = "Vec<OpenConnection>")]
pub struct ListConnections;

/// One open connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenConnection {
    pub conn: ConnId,
    /// The client: the address of its PROXY header, or the socket's peer.
    pub peer: SocketAddr,
    pub tls: bool,
}

/// A connection stopped.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ConnectionClosed {
    pub conn: ConnId,
}

/// Asks a connection to flush what it has written and close, or to drain (one message type,
/// so that Housekeeping holds one recipient per connection).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub enum CloseConnection {
    /// Flush, then close.
    Close { reason: &'static str },
    /// Start draining: answer GO_AWAY to 5.x clients from now on.
    Drain,
}

/// Closes every connection; answers once all have stopped or `deadline` has passed, with the
/// number still open.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct CloseAll {
    pub deadline: Instant,
}

/// How many connections are open.
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct OpenConnections;

/// Stops accepting new connections.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct StopAccepting;

// ---------------------------------------------------------------------------------------------
// TLS: TlsReloader -> Listener; the daemon (SIGHUP) -> TlsReloader.

/// A new TLS server configuration for the connections that arrive from now on (`None`: no
/// certificate to serve).
#[derive(Message)]
#[rtype(result = "()")]
pub struct TlsConfigChanged {
    pub config: Option<Arc<rustls::ServerConfig>>,
}

/// Reload the certificates now, changed or not (SIGHUP). Answers what happened.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, String>")]
pub struct ReloadTls;

// ---------------------------------------------------------------------------------------------
// Configuration and KV -> RouteRegistry.

/// The server stops: with `registry.warm_restart`, the registry writes its tables for the next
/// start (docs/route-rules.md#warm-restart); answers whether they were written.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), String>")]
pub struct SaveRoutes;

/// New registry settings (UPDATE_NAMESRV_CONFIG changed some); the registry takes them whole.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ApplySettings {
    pub settings: RegistrySettings,
}

/// The ORDER_TOPIC_CONFIG namespace changed; the registry keeps a copy for routes and
/// registration replies.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct OrderTopicConfChanged {
    pub change: OrderTopicConf,
}

/// A change of the ORDER_TOPIC_CONFIG namespace: one entry (what a KV request changes, so a
/// change costs the registry its own size, not the namespace's), or the whole of it (at start,
/// after a reload).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderTopicConf {
    /// `None` when the namespace does not exist (REGISTER_BROKER replies then carry no body).
    Whole(Option<BTreeMap<String, String>>),
    /// The namespace exists and `key` now holds `value` (`None`: nothing).
    Entry { key: String, value: Option<String> },
}

// ---------------------------------------------------------------------------------------------
// Connection -> KvStore.

/// PUT_KV_CONFIG.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), KvReplyError>")]
pub struct PutKvConfig {
    pub namespace: Option<String>,
    pub key: Option<String>,
    pub value: Option<String>,
}

/// DELETE_KV_CONFIG.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), KvReplyError>")]
pub struct DeleteKvConfig {
    pub namespace: Option<String>,
    pub key: Option<String>,
}

/// GET_KV_CONFIG.
#[derive(Debug, Message)]
#[rtype(result = "Result<KvValue, KvReplyError>")]
pub struct GetKvConfig {
    pub namespace: Option<String>,
    pub key: Option<String>,
}

/// GET_KVLIST_BY_NAMESPACE.
#[derive(Debug, Message)]
#[rtype(result = "Result<Body, KvReplyError>")]
pub struct GetKvList {
    pub namespace: Option<String>,
}

/// Waits until every change made so far is on disk (or its write failed); answers whether the
/// file is up to date.
#[derive(Debug, Message)]
#[rtype(result = "bool")]
pub struct FlushKv;

/// A found KV value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvValue(pub String);

/// Why a KV request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvReplyError {
    /// Namespace or key missing from the request.
    NamespaceOrKeyNull,
    /// GET_KV_CONFIG miss.
    NoItem { namespace: String, key: String },
    /// GET_KVLIST_BY_NAMESPACE miss.
    NoNamespace { namespace: String },
    /// The change is applied in memory but the file could not be written.
    NotPersisted(String),
    /// The shared store (etcd) did not take the change; the reason says whether it may still
    /// have reached it.
    StoreUnavailable(String),
    /// The change would take the store past one of its bounds (kv::MAX_NAMESPACES, ...):
    /// nothing changed.
    Refused(String),
}

// ---------------------------------------------------------------------------------------------
// Connection -> runtime configuration (an actor of the embedding crate).

/// GET_NAMESRV_CONFIG: the configuration as Java properties text.
#[derive(Debug, Message)]
#[rtype(result = "Body")]
pub struct GetNamesrvConfig;

/// UPDATE_NAMESRV_CONFIG with its properties body.
#[derive(Debug, Message)]
#[rtype(result = "Result<(), ConfigUpdateError>")]
pub struct UpdateNamesrvConfig {
    pub body: Option<Bytes>,
}

/// Why an UPDATE_NAMESRV_CONFIG was refused or only half done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigUpdateError {
    /// The body is not properties text (Java: `string2Properties error`).
    #[error("string2Properties error")]
    Unparsable,
    /// A black-listed key: nothing changed.
    #[error("Can not update config in black list.")]
    BlackListed { key: String },
    /// A value that does not parse or is out of range: nothing changed.
    #[error("invalid value for {key}: {reason}")]
    Invalid { key: String, reason: String },
    /// A key or value no update may hold (a control character, too long): nothing changed.
    #[error("{0}")]
    Refused(String),
    /// Applied, but the config store file could not be written.
    #[error("the update is applied but could not be saved: {0}")]
    NotPersisted(String),
}

// ---------------------------------------------------------------------------------------------
// Connection -> product-environment lookup (cluster-test mode).

/// Cluster-test mode: look a topic up on the product environment's NameServer after a local
/// miss. Answers the route, or `None`.
#[derive(Debug, Message)]
#[rtype(result = "Option<rmq_protocol::body::TopicRouteData>")]
pub struct LookupProductEnvRoute {
    pub topic: String,
}

// ---------------------------------------------------------------------------------------------
// Embedding applications -> RouteRegistry / KvStore.

/// The decoded route of a topic (what GET_ROUTEINFO_BY_TOPIC would encode), or `None`.
#[derive(Debug, Message)]
#[rtype(result = "Option<rmq_protocol::body::TopicRouteData>")]
pub struct QueryRoute {
    pub topic: String,
}

/// Every live broker instance.
#[derive(Debug, Message)]
#[rtype(result = "Vec<BrokerStatus>")]
pub struct ListBrokers;

/// One live broker instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerStatus {
    pub cluster: String,
    /// `None` if no broker group lists this address (it expires at the next scan).
    pub name: Option<String>,
    pub id: Option<i64>,
    pub addr: String,
    /// Time since its last registration, heartbeat or data-version query.
    pub since_last_update: std::time::Duration,
    pub data_version: DataVersion,
    /// Its software version: the `MQVersion` ordinal of its latest REGISTER_BROKER request.
    pub mq_version: i32,
    pub conn: ConnId,
    /// How long it may stay silent before the expiry scan drops it.
    pub timeout: std::time::Duration,
    /// Restored from a snapshot at start and not registered since (warm restart).
    pub unconfirmed: bool,
}

/// Topics for the status page: those whose name contains `filter` (case-insensitive), sorted.
#[derive(Debug, Message)]
#[rtype(result = "TopicsOverview")]
pub struct ListTopics {
    pub filter: String,
    pub limit: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsOverview {
    /// Each topic with its queues per broker group.
    pub topics: Vec<crate::route::TopicQueues>,
    /// Topics that matched, shown or not.
    pub matched: usize,
}

/// The KV store's size and health, for `/metrics` and the status page.
#[derive(Debug, Message)]
#[rtype(result = "KvStats")]
pub struct GetKvStats {
    /// Also a copy of every namespace (the status page).
    pub with_table: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvStats {
    pub entries: usize,
    /// Writes of the KV file that failed since start.
    pub save_failures: u64,
    pub table: Option<BTreeMap<String, BTreeMap<String, String>>>,
}

/// What the registry counted and holds, for `/metrics` and the status page.
#[derive(Debug, Message)]
#[rtype(result = "RegistryMetrics")]
pub struct GetRegistryMetrics;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryMetrics {
    pub stats: RouteStats,
    pub counters: crate::route::RouteCounters,
    /// Live broker instances per cluster.
    pub live_by_cluster: BTreeMap<String, usize>,
    /// Whether route queries are answered (false during the `need_wait_for_service` window).
    pub ready: bool,
}

/// Table sizes of the registry.
#[derive(Debug, Message)]
#[rtype(result = "RouteStats")]
pub struct GetRouteStats;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteStats {
    pub topics: usize,
    pub broker_groups: usize,
    pub clusters: usize,
    pub live_brokers: usize,
    /// Live brokers restored from a snapshot and not registered since (warm restart).
    pub unconfirmed_brokers: usize,
    /// Registrations and unregistrations so large that their topics were walked in slices,
    /// with questions answered in between (docs/actors.md#large-registrations).
    pub sliced_changes: u64,
    /// Changes that waited for such a walk to end before they ran.
    pub waited_changes: u64,
}

/// Stops an actor on purpose; its Supervisor restarts it at once. The route registry comes back
/// empty (brokers re-register within 30 s); the KV store reloads its file.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Restart;
