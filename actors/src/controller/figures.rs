//! What the controller counts for `/metrics` (docs/metrics.md, "The controller"): Java's
//! `ControllerMetricsManager` figures (requests by type and handling status with their latency,
//! elections by result) and ours (leader changes, store commits, unclean elections, SyncStateSet
//! shrinks). The [`Controller`](super::Controller) owns one [`ControllerFigures`] and counts into
//! it where requests are answered, elections decided, changes committed and applied and the
//! leadership changes; a scrape gets a copy by message. Pure: durations are passed in.

use std::collections::BTreeMap;
use std::time::Duration;

use rmq_protocol::{RequestCode, ResponseCode};

use super::broker_set::BrokerSet;
use super::replicas::Decision;
use super::store::LeaderInfo;

/// Java's `ControllerMetricsConstant.RequestType`, by request code: the `request_type` label
/// (`getLowerCaseNameByCode` answers the enum's name as it is, upper case). Java lists two codes
/// no controller answers (GET_BROKER_EPOCH_CACHE and NOTIFY_BROKER_ROLE_CHANGED go to brokers),
/// so they never count.
pub const REQUEST_TYPES: [(RequestCode, &str); 12] = [
    (
        RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
        "CONTROLLER_ALTER_SYNC_STATE_SET",
    ),
    (
        RequestCode::CONTROLLER_ELECT_MASTER,
        "CONTROLLER_ELECT_MASTER",
    ),
    (
        RequestCode::CONTROLLER_REGISTER_BROKER,
        "CONTROLLER_REGISTER_BROKER",
    ),
    (
        RequestCode::CONTROLLER_GET_REPLICA_INFO,
        "CONTROLLER_GET_REPLICA_INFO",
    ),
    (
        RequestCode::CONTROLLER_GET_METADATA_INFO,
        "CONTROLLER_GET_METADATA_INFO",
    ),
    (
        RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
        "CONTROLLER_GET_SYNC_STATE_DATA",
    ),
    (RequestCode::BROKER_HEARTBEAT, "CONTROLLER_BROKER_HEARTBEAT"),
    (
        RequestCode::UPDATE_CONTROLLER_CONFIG,
        "CONTROLLER_UPDATE_CONTROLLER_CONFIG",
    ),
    (
        RequestCode::GET_CONTROLLER_CONFIG,
        "CONTROLLER_GET_CONTROLLER_CONFIG",
    ),
    (
        RequestCode::CLEAN_BROKER_DATA,
        "CONTROLLER_CLEAN_BROKER_DATA",
    ),
    (
        RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
        "CONTROLLER_GET_NEXT_BROKER_ID",
    ),
    (
        RequestCode::CONTROLLER_APPLY_BROKER_ID,
        "CONTROLLER_APPLY_BROKER_ID",
    ),
];

/// The `request_type` of a request code; `None` for a code that is not a controller request
/// (Java's label is then null and dropped: such requests are not counted here).
pub fn request_type(code: RequestCode) -> Option<&'static str> {
    REQUEST_TYPES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// Java's `RequestHandleStatus`: how a request was handled. Java's processor counts `success`
/// whenever it answers (whatever the response code), `timeout` when waiting for the replicated
/// log timed out and `failed` on any other exception (a header it cannot read, a failed append).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Handled {
    Success,
    Failed,
    Timeout,
}

impl Handled {
    pub const ALL: [Handled; 3] = [Handled::Success, Handled::Failed, Handled::Timeout];

    /// A request refused before the controller saw it, answered `answer`: CONTROLLER_INVALID_REQUEST
    /// is Java's own answer (a heartbeat without a broker id), so `success`; anything else
    /// (SYSTEM_ERROR: a body that is not JSON, which Java's decoder throws on) `failed`.
    pub fn of_refused(answer: ResponseCode) -> Self {
        if answer == ResponseCode::CONTROLLER_INVALID_REQUEST {
            Handled::Success
        } else {
            Handled::Failed
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Handled::Success => "success",
            Handled::Failed => "failed",
            Handled::Timeout => "timeout",
        }
    }
}

/// Java's `ElectionResult`, from the election's response code as Java's `electMaster` maps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ElectionResult {
    NewMasterElected,
    KeepCurrentMaster,
    NoMasterElected,
}

impl ElectionResult {
    pub const ALL: [ElectionResult; 3] = [
        ElectionResult::NewMasterElected,
        ElectionResult::KeepCurrentMaster,
        ElectionResult::NoMasterElected,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ElectionResult::NewMasterElected => "new_master_elected",
            ElectionResult::KeepCurrentMaster => "keep_current_master",
            ElectionResult::NoMasterElected => "no_master_elected",
        }
    }

    /// `None` for an answer Java does not count (not leader, an unknown set, an error).
    pub fn of(code: ResponseCode) -> Option<Self> {
        match code {
            ResponseCode::SUCCESS => Some(ElectionResult::NewMasterElected),
            ResponseCode::CONTROLLER_MASTER_STILL_EXIST => Some(ElectionResult::KeepCurrentMaster),
            ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE
            | ResponseCode::CONTROLLER_ELECT_MASTER_FAILED => Some(ElectionResult::NoMasterElected),
            _ => None,
        }
    }
}

/// Why a change was not committed (the `reason` of `controller_commit_failures_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CommitFailure {
    /// The set changed under the change (compare-and-swap lost).
    Conflict,
    /// The store says this node no longer leads.
    NotLeader,
    /// The store could not be reached or written.
    Unavailable,
    /// The store did not answer in time.
    Timeout,
}

impl CommitFailure {
    pub const ALL: [CommitFailure; 4] = [
        CommitFailure::Conflict,
        CommitFailure::NotLeader,
        CommitFailure::Unavailable,
        CommitFailure::Timeout,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CommitFailure::Conflict => "conflict",
            CommitFailure::NotLeader => "not_leader",
            CommitFailure::Unavailable => "unavailable",
            CommitFailure::Timeout => "timeout",
        }
    }
}

/// Java's request-latency buckets (`ControllerMetricsManager.registerMetricsView`, in µs there),
/// in seconds: 1 µs to 10 s.
pub const LATENCY_BOUNDS: [f64; 22] = [
    0.000_001, 0.000_003, 0.000_005, 0.000_01, 0.000_03, 0.000_05, 0.000_1, 0.000_3, 0.000_5,
    0.001, 0.003, 0.005, 0.01, 0.03, 0.05, 0.1, 0.3, 0.5, 1.0, 3.0, 5.0, 10.0,
];

/// A latency histogram over [`LATENCY_BOUNDS`]: per bucket (not cumulative, the last +Inf).
#[derive(Debug, Clone, PartialEq)]
pub struct Latencies {
    pub buckets: [u64; LATENCY_BOUNDS.len() + 1],
    pub sum: Duration,
    pub count: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            buckets: [0; LATENCY_BOUNDS.len() + 1],
            sum: Duration::ZERO,
            count: 0,
        }
    }
}

impl Latencies {
    pub fn record(&mut self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let bucket = LATENCY_BOUNDS
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(LATENCY_BOUNDS.len());
        if let Some(slot) = self.buckets.get_mut(bucket) {
            *slot += 1;
        }
        self.sum = self.sum.saturating_add(elapsed);
        self.count += 1;
    }
}

/// Most (cluster, broker set) keys a per-set counter keeps; further sets count under
/// [`OTHER_SET`] (sets come and go, a counter must not grow with every name ever seen).
pub const MAX_SET_KEYS: usize = super::replicas::MAX_SETS;

/// The (cluster, broker set) that counts the sets past [`MAX_SET_KEYS`].
pub const OTHER_SET: (&str, &str) = ("", "_other");

/// A (cluster, broker set) key.
pub type SetKey = (String, String);

/// Adds one under `key`, or under [`OTHER_SET`] when the map is full.
fn add_bounded<K: Ord + Clone>(map: &mut BTreeMap<K, u64>, key: K, other: impl FnOnce() -> K) {
    let key = if map.contains_key(&key) || map.len() < MAX_SET_KEYS {
        key
    } else {
        other()
    };
    *map.entry(key).or_insert(0) += 1;
}

fn other_set() -> SetKey {
    (OTHER_SET.0.to_owned(), OTHER_SET.1.to_owned())
}

/// An election being carried out: its set and whether its choice is unclean (a master from
/// outside the set's SyncStateSet, when it had one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionWatch {
    pub set: SetKey,
    pub unclean: bool,
}

impl ElectionWatch {
    /// The election of `decision` in set `name` (held as `set`; `cluster` names it while it is
    /// not): unclean when it makes master a broker outside the SyncStateSet the set had.
    pub fn of(set: Option<&BrokerSet>, name: &str, cluster: &str, decision: &Decision) -> Self {
        let new_master = decision
            .elected
            .as_ref()
            .and_then(|e| e.header.master_broker_id);
        ElectionWatch {
            set: (
                set.map_or_else(|| cluster.to_owned(), |s| s.cluster.clone()),
                name.to_owned(),
            ),
            unclean: set.zip(new_master).is_some_and(|(set, master)| {
                !set.sync_state_set.is_empty() && !set.sync_state_set.contains(&master)
            }),
        }
    }
}

/// Everything the controller counts (module docs). Cloned for a scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControllerFigures {
    /// `request_total`: by `request_type`, `request_handle_status`.
    pub requests: BTreeMap<(&'static str, Handled), u64>,
    /// `request_latency`: by `request_type`, the requests handled with success (as Java).
    pub request_latency: BTreeMap<&'static str, Latencies>,
    /// `election_total`: by (cluster, broker set), result.
    pub elections: BTreeMap<(SetKey, ElectionResult), u64>,
    /// Elections that chose a master from outside the SyncStateSet.
    pub unclean_elections: BTreeMap<SetKey, u64>,
    /// Changes applied that took a broker out of a set's SyncStateSet.
    pub sync_state_set_shrinks: BTreeMap<SetKey, u64>,
    /// A leader seen that differs from the last one seen (the first included).
    pub leader_changes: u64,
    last_leader: Option<LeaderInfo>,
    /// Commits to the store that succeeded, from sent to answered.
    pub commit_latency: Latencies,
    pub commit_failures: BTreeMap<CommitFailure, u64>,
}

impl ControllerFigures {
    /// A request of `request_type` handled `how` after `elapsed`.
    pub fn request(&mut self, request_type: &'static str, how: Handled, elapsed: Duration) {
        *self.requests.entry((request_type, how)).or_insert(0) += 1;
        if how == Handled::Success {
            self.request_latency
                .entry(request_type)
                .or_default()
                .record(elapsed);
        }
    }

    /// An election answered `code` (counted when Java counts it).
    pub fn election(&mut self, watch: &ElectionWatch, code: ResponseCode) {
        let Some(result) = ElectionResult::of(code) else {
            return;
        };
        let other = || (other_set(), result);
        add_bounded(&mut self.elections, (watch.set.clone(), result), other);
        if result == ElectionResult::NewMasterElected && watch.unclean {
            add_bounded(&mut self.unclean_elections, watch.set.clone(), other_set);
        }
    }

    /// A change that took a broker out of `set`'s SyncStateSet was applied.
    pub fn sync_state_set_shrunk(&mut self, set: SetKey) {
        add_bounded(&mut self.sync_state_set_shrinks, set, other_set);
    }

    /// The store reports `leader` as the active controller.
    pub fn leader_seen(&mut self, leader: Option<&LeaderInfo>) {
        if let Some(leader) = leader {
            if self.last_leader.as_ref() != Some(leader) {
                self.leader_changes += 1;
                self.last_leader = Some(leader.clone());
            }
        }
    }

    /// A commit answered after `elapsed`: committed, or why not.
    pub fn commit(&mut self, outcome: Result<(), CommitFailure>, elapsed: Duration) {
        match outcome {
            Ok(()) => self.commit_latency.record(elapsed),
            Err(why) => *self.commit_failures.entry(why).or_insert(0) += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(name: &str, unclean: bool) -> ElectionWatch {
        ElectionWatch {
            set: ("c".into(), name.into()),
            unclean,
        }
    }

    #[test]
    fn requests_elections_and_leaders_count_as_java_counts_them() {
        let mut f = ControllerFigures::default();
        f.request(
            "CONTROLLER_ELECT_MASTER",
            Handled::Success,
            Duration::from_micros(40),
        );
        f.request(
            "CONTROLLER_ELECT_MASTER",
            Handled::Timeout,
            Duration::from_secs(3),
        );
        let latency = &f.request_latency["CONTROLLER_ELECT_MASTER"];
        // 40 µs is in the 50 µs bucket (the sixth); the timed-out request is not timed.
        assert_eq!((latency.count, latency.buckets[5]), (1, 1));
        assert_eq!(f.requests.len(), 2);

        f.election(&watch("b", true), ResponseCode::SUCCESS);
        f.election(
            &watch("b", false),
            ResponseCode::CONTROLLER_MASTER_STILL_EXIST,
        );
        f.election(&watch("b", false), ResponseCode::CONTROLLER_NOT_LEADER);
        f.election(
            &watch("b", false),
            ResponseCode::CONTROLLER_ELECT_MASTER_FAILED,
        );
        assert_eq!(f.elections.values().sum::<u64>(), 3);
        assert_eq!(f.unclean_elections.values().sum::<u64>(), 1);

        let n0 = LeaderInfo {
            id: "n0".into(),
            address: "a".into(),
        };
        let n1 = LeaderInfo {
            id: "n1".into(),
            address: "b".into(),
        };
        for seen in [Some(&n0), None, Some(&n0), Some(&n1), None, Some(&n1)] {
            f.leader_seen(seen);
        }
        assert_eq!(f.leader_changes, 2);
        // Refused before the controller: Java's own refusal is an answer, a bad frame is not.
        let invalid = Handled::of_refused(ResponseCode::CONTROLLER_INVALID_REQUEST);
        assert_eq!(invalid, Handled::Success);
        assert_eq!(
            Handled::of_refused(ResponseCode::SYSTEM_ERROR),
            Handled::Failed
        );
        assert_eq!(
            request_type(RequestCode::BROKER_HEARTBEAT),
            Some("CONTROLLER_BROKER_HEARTBEAT")
        );
        assert_eq!(request_type(RequestCode::GET_ROUTEINFO_BY_TOPIC), None);
    }

    #[test]
    fn per_set_counters_are_bounded() {
        let mut f = ControllerFigures::default();
        for i in 0..MAX_SET_KEYS + 10 {
            f.sync_state_set_shrunk(("c".into(), format!("b{i}")));
        }
        assert_eq!(f.sync_state_set_shrinks.len(), MAX_SET_KEYS + 1);
        assert_eq!(f.sync_state_set_shrinks[&other_set()], 10);
    }
}
