//! The options of `hostile`: the hostile kinds, the probes' request kinds and the phases.

use std::time::Duration;

use clap::{Args, ValueEnum};
use rmq_protocol::codec::DEFAULT_MAX_FRAME;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Kind {
    /// GET_ROUTEINFO_BY_TOPIC whose JSON header fills the frame with ext fields, read on the
    /// serde path (its first field a numeric string).
    HeaderFields,
    /// GET_ROUTEINFO_BY_TOPIC whose JSON header fills the frame with one ext value of arrays
    /// nested 100 deep (a serde_json tree, then its text).
    HeaderNested,
    /// PUT_KV_CONFIG whose header carries a frame-size value of unicode escapes.
    KvValue,
    /// REGISTER_BROKER with a frame-size JSON body (a 5.x broker with ~100k topics).
    RegisterPlain,
    /// Compressed REGISTER_BROKER inflating to the inflation limit, distinct topics.
    RegisterCompressed,
    /// Compressed REGISTER_BROKER inflating to the inflation limit: one topic whose text runs
    /// on in spaces, a few KiB on the wire.
    RegisterCompressedSmall,
    /// REGISTER_TOPIC_IN_NAMESRV with a frame-size TopicRouteData body.
    TopicRoute,
    /// QUERY_DATA_VERSION with a frame-size DataVersion body of unknown fields.
    DataVersion,
    /// UPDATE_NAMESRV_CONFIG with a frame-size properties body of distinct keys.
    Config,
    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER and GET_TOPICS_BY_CLUSTER in turn: the largest answers
    /// of a server with many topics (populate it first, e.g. with `rmq-bench brokers`).
    TopicLists,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::HeaderFields => "header-fields",
            Kind::HeaderNested => "header-nested",
            Kind::KvValue => "kv-value",
            Kind::RegisterPlain => "register-plain",
            Kind::RegisterCompressed => "register-compressed",
            Kind::RegisterCompressedSmall => "register-compressed-small",
            Kind::TopicRoute => "topic-route",
            Kind::DataVersion => "data-version",
            Kind::Config => "config",
            Kind::TopicLists => "topic-lists",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct HostileArgs {
    /// Probe connections (consecutive connections land on every worker thread).
    #[arg(long, default_value_t = 32)]
    pub probes: usize,
    /// Each probe sends one request this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10ms")]
    pub interval: Duration,
    /// Hostile connections in a phase: one phase per kind and per count given.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub hostile: Vec<usize>,
    /// The hostile kinds (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<Kind>,
    /// Length of each hostile phase.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub phase: Duration,
    /// The probes alone before the first hostile phase.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub baseline: Duration,
    /// The server's frame limit (server.max_frame_bytes), length field included.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    pub max_frame: usize,
    /// The server's inflation limit (server.max_inflated_body_bytes).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_inflated: usize,
    /// What the probes ask, in turn (default: all three).
    #[arg(long, value_delimiter = ',')]
    pub probe_kinds: Vec<ProbeKind>,
    /// A probe reply later than this is slow.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "100ms")]
    pub slow: Duration,
}

/// The request kinds a probe can rotate through, in [`ProbeKind`] order.
pub(super) const PROBE_KINDS: [&str; 3] = ["route", "cluster", "kv"];

/// What a probe asks, and so which server thread answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum ProbeKind {
    /// GET_ROUTEINFO_BY_TOPIC: the connection's thread, from its route cache.
    Route,
    /// GET_BROKER_CLUSTER_INFO: the route registry.
    Cluster,
    /// GET_KV_CONFIG: the KV store.
    Kv,
}

impl ProbeKind {
    pub(super) fn index(self) -> usize {
        match self {
            ProbeKind::Route => 0,
            ProbeKind::Cluster => 1,
            ProbeKind::Kv => 2,
        }
    }
}
