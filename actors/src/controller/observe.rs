//! What the HTTP port sees of the controller (docs/metrics.md): one [`DescribeController`]
//! answered with a [`ControllerSnapshot`] — this node's role and the leader, every broker set
//! with its master, epochs, SyncStateSet and members' heartbeats, the brokers alive per set, the
//! etcd lease and the [`ControllerFigures`]. A copy: the HTTP port changes nothing.

use std::time::{Duration, Instant};

use actix::Message;

use super::figures::ControllerFigures;
use super::heartbeats::LiveAt;
use super::liveness::Liveness;
use super::replicas::ReplicaTables;
use super::store::LeaderInfo;

/// Asks the controller for a [`ControllerSnapshot`].
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "ControllerSnapshot")]
pub struct DescribeController;

/// This node's role, with Java's values of the `role` gauge (DLedger's `MemberState.Role`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Stopping, or not started.
    #[default]
    Unknown,
    /// No leader known, or won and catching up with the store before serving.
    Candidate,
    /// Another node leads.
    Follower,
    /// Leads and serves.
    Leader,
}

impl Role {
    /// Java's value: UNKNOWN 0, CANDIDATE 1, FOLLOWER 2, LEADER 3.
    pub fn value(self) -> u64 {
        match self {
            Role::Unknown => 0,
            Role::Candidate => 1,
            Role::Follower => 2,
            Role::Leader => 3,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Unknown => "unknown",
            Role::Candidate => "candidate",
            Role::Follower => "follower",
            Role::Leader => "leader",
        }
    }
}

/// The etcd lease as the store last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lease {
    /// No lease: the local file store.
    #[default]
    NotUsed,
    /// Certainly alive in etcd until then.
    Until(Instant),
    /// Lost; the store is starting over.
    Lost,
}

/// One member of a broker set as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberView {
    pub id: i64,
    pub address: String,
    pub alive: bool,
    pub in_sync_state_set: bool,
    /// Since its last heartbeat to this controller, and its timeout (`None`: none held).
    pub heartbeat: Option<(Duration, Duration)>,
}

/// One broker set as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SetView {
    pub cluster: String,
    pub name: String,
    pub master: Option<(i64, String)>,
    pub master_epoch: i32,
    pub sync_state_set: Vec<i64>,
    pub sync_state_set_epoch: i32,
    pub members: Vec<MemberView>,
}

/// The controller at one instant (module docs).
#[derive(Debug, Clone)]
pub struct ControllerSnapshot {
    /// `controllerDLegerGroup`.
    pub group: String,
    /// This node's id and controller address.
    pub me: LeaderInfo,
    pub role: Role,
    pub leader: Option<LeaderInfo>,
    /// Every broker set, by name.
    pub sets: Vec<SetView>,
    /// Brokers alive per (cluster, broker name), as heartbeats to this node say.
    pub active_brokers: Vec<((String, String), usize)>,
    /// How long the etcd lease certainly lives on (`Some(ZERO)`: lost; `None`: no etcd).
    pub lease_remaining: Option<Duration>,
    pub figures: ControllerFigures,
}

impl Lease {
    pub fn remaining(self, now: Instant) -> Option<Duration> {
        match self {
            Lease::NotUsed => None,
            Lease::Until(deadline) => Some(deadline.saturating_duration_since(now)),
            Lease::Lost => Some(Duration::ZERO),
        }
    }
}

/// The broker sets of `tables` with their members' heartbeats in `live`.
pub fn sets(tables: &ReplicaTables, live: &LiveAt<'_>) -> Vec<SetView> {
    tables
        .sets()
        .map(|set| SetView {
            cluster: set.cluster.clone(),
            name: set.name.clone(),
            master: set
                .master
                .map(|m| (m, set.address(Some(m)).unwrap_or_default())),
            master_epoch: set.master_epoch,
            sync_state_set: set.sync_state_set.iter().copied().collect(),
            sync_state_set_epoch: set.sync_state_set_epoch,
            members: set
                .members
                .iter()
                .map(|(id, member)| MemberView {
                    id: *id,
                    address: member.address.clone(),
                    alive: live.alive(&set.cluster, &set.name, *id),
                    in_sync_state_set: set.sync_state_set.contains(id),
                    heartbeat: live.last_beat(&set.cluster, &set.name, *id),
                })
                .collect(),
        })
        .collect()
}
