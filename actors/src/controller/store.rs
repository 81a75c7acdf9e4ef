//! The controller's state store, seen from the [`Controller`](super::Controller): where each
//! broker set's record is committed, and who is the one active controller.
//!
//! Two stores speak this protocol: the local crash-safe file of a single embedded controller
//! ([`file_store`](super::file_store)) and etcd, shared by several NameServers
//! ([`etcd`](super::etcd)). The controller never changes its view by itself: it asks the store
//! to [`Commit`] a set's new record, guarded by the revision its change was computed from, and
//! applies what the store then reports ([`StoreEvent::Changed`]) — its own commits and, with
//! etcd, the other nodes' too.

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use super::broker_set::BrokerSet;

/// A store revision: etcd's `mod_revision` of the set's key, or the file store's counter. `0`
/// means "no record" (a set not yet created, or removed).
pub type Revision = i64;

/// Replace broker set `name`'s record by `record` (`None` removes it), if the store still holds
/// it at revision `expected` (compare-and-swap; `0`: the set must not exist). Answers the
/// revision of the new record (the store's revision of the removal for `None`).
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Revision, StoreError>")]
pub struct Commit {
    pub name: String,
    pub expected: Revision,
    pub record: Option<BrokerSet>,
}

/// Why a [`Commit`] did not happen. Nothing was written in every case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The set changed since `expected` (another controller, or a commit whose report has not
    /// arrived yet): the request is answered from the fresh state by the caller.
    #[error("the broker set changed concurrently (now at revision {current})")]
    Conflict { current: Revision },
    /// This node does not (or no longer) hold the leadership: nothing it proposes may commit.
    #[error("this controller is not the leader")]
    NotLeader,
    /// The store could not be reached or written; the message says why.
    #[error("controller store unavailable: {0}")]
    Unavailable(String),
}

/// Which controller is active, as the store knows it: the node id of `controllerDLegerPeers`
/// (`n0`) and its controller address (`127.0.0.1:9878`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderInfo {
    pub id: String,
    pub address: String,
}

/// What a store tells its controller, in order.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub enum StoreEvent {
    /// The whole state, each set with its revision: at start, and again whenever the store had
    /// to start over (an etcd watch that was lost). Replaces the controller's view.
    Loaded { sets: Vec<(BrokerSet, Revision)> },
    /// One set changed (`None`: removed) at `revision`, by this node or another. A report at
    /// or below the revision the controller already has is stale and ignored.
    Changed {
        name: String,
        record: Option<BrokerSet>,
        revision: Revision,
    },
    /// The active controller now (`None`: nobody), and whether it is this node. `caught_up` is
    /// the store's revision when this node won; a store sends this event only after every
    /// change below that revision, so the new leader's view is complete when it starts serving
    /// (as Java's new leader first applies every committed entry).
    Leadership {
        leader: Option<LeaderInfo>,
        is_self: bool,
        caught_up: Revision,
    },
    /// The etcd store's lease is certainly alive until `until` (renewed), or lost (`None`).
    /// For `/metrics` only; the file store has no lease and never sends it.
    Lease { until: Option<std::time::Instant> },
}
