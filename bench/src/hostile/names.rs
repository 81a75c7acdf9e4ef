//! What the run names on the server: the probes' broker group, topic and KV entry, and the
//! opaque of every hostile frame.

/// The probes' topic, on the probes' broker.
pub(super) const PROBE_TOPIC: &str = "BenchHostile-00000";
pub(super) const PROBE_GROUP: &str = "bench-hostile";
/// The KV entry the probes read.
pub(super) const KV_NAMESPACE: &str = "bench-hostile";
pub(super) const KV_KEY: &str = "probe";
/// The opaque of every hostile frame (one in flight per connection).
pub(super) const HOSTILE_OPAQUE: i32 = 1;
