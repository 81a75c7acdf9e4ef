//! What the controller's rules know of the brokers that are alive: the [`Liveness`] the heartbeat
//! table ([`heartbeats`](super::heartbeats)) provides and the rules
//! ([`replicas`](super::replicas), the election policy) read. It names neither.

/// What the election policy knows of a live broker (from its heartbeats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveInfo {
    pub epoch: i32,
    pub max_offset: i64,
    pub priority: i32,
}

/// Liveness and heartbeat data, as the elections and checks see them.
pub trait Liveness {
    /// Whether broker `id` of set (cluster, name) is alive now.
    fn alive(&self, cluster: &str, name: &str, id: i64) -> bool;
    /// Its latest heartbeat data, if it is alive.
    fn info(&self, cluster: &str, name: &str, id: i64) -> Option<LiveInfo>;
}
