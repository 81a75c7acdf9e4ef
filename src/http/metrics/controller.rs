//! The controller's families (docs/metrics.md, "The controller"), shown when the controller
//! runs: Java's `ControllerMetricsManager` names under `rmq_namesrv_controller_`, with Java's
//! labels (every sample carries Java's `address`, `group` and `peer_id`), and ours. Each is
//! declared once, with how its samples are read from the controller's snapshot.

use rmq_actors::controller::figures::{
    CommitFailure, Handled, Latencies, LATENCY_BOUNDS, REQUEST_TYPES,
};
use rmq_actors::controller::observe::ControllerSnapshot;
use rmq_actors::metrics::{Family, Kind, Sample, Value};

/// A family and how to read its samples from the controller's snapshot.
pub(super) struct Owned {
    pub family: Family,
    pub samples: fn(&ControllerSnapshot) -> Vec<Sample>,
}

const fn owned(
    kind: Kind,
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    samples: fn(&ControllerSnapshot) -> Vec<Sample>,
) -> Owned {
    Owned {
        family: Family::new(name, help, kind, labels),
        samples,
    }
}

/// Java's labels of every controller metric (its `LABEL_MAP`: this node's address, group and
/// id), then the family's own.
macro_rules! labels {
    ($($label:literal),*) => { &["address", "group", "peer_id", $($label),*] };
}

/// Shown after the other families, in this order.
pub(super) const FAMILIES: [Owned; 14] = [
    owned(
        Kind::Gauge,
        "controller_role",
        "Role of this controller (Java's values): 0 unknown, 1 candidate, 2 follower, 3 leader.",
        labels!(),
        |c| vec![node(c, [], c.role.value())],
    ),
    owned(
        Kind::Gauge,
        "controller_active_broker_num",
        "Brokers alive per broker set, as their heartbeats to this controller say.",
        labels!("cluster", "broker_set"),
        |c| {
            let active = c.active_brokers.iter();
            active
                .map(|((cluster, set), n)| node(c, [cluster, set], *n as u64))
                .collect()
        },
    ),
    owned(
        Kind::Counter,
        "controller_request",
        "Controller requests handled, by type and handling status (Java's request_total).",
        labels!("request_type", "request_handle_status"),
        |c| {
            let mut samples = Vec::new();
            for (_, kind) in REQUEST_TYPES {
                for how in Handled::ALL {
                    let n = c.figures.requests.get(&(kind, how)).copied().unwrap_or(0);
                    samples.push(node(c, [kind, how.name()], n));
                }
            }
            samples
        },
    ),
    owned(
        Kind::Histogram,
        "controller_request_latency_seconds",
        "Latency of the requests handled with success, by type (Java's request_latency, in seconds).",
        labels!("request_type"),
        |c| {
            let latency = c.figures.request_latency.iter();
            latency.map(|(kind, l)| histogram(c, [kind], l)).collect()
        },
    ),
    owned(
        Kind::Counter,
        "controller_election",
        "Elections by broker set and result (Java's election_total).",
        labels!("cluster", "broker_set", "election_result"),
        |c| {
            let elections = c.figures.elections.iter();
            elections
                .map(|(((cluster, set), result), n)| node(c, [cluster, set, result.name()], *n))
                .collect()
        },
    ),
    owned(
        Kind::Counter,
        "controller_unclean_elections",
        "Elections that made master a broker outside the set's SyncStateSet.",
        labels!("cluster", "broker_set"),
        |c| per_set(c, c.figures.unclean_elections.iter()),
    ),
    owned(
        Kind::Counter,
        "controller_sync_state_set_shrinks",
        "Changes applied that took a broker out of a set's SyncStateSet.",
        labels!("cluster", "broker_set"),
        |c| per_set(c, c.figures.sync_state_set_shrinks.iter()),
    ),
    owned(
        Kind::Gauge,
        "controller_sync_state_set_size",
        "Brokers in each set's SyncStateSet.",
        labels!("cluster", "broker_set"),
        |c| {
            let sets = c.sets.iter();
            sets.map(|s| node(c, [&s.cluster, &s.name], s.sync_state_set.len() as u64))
                .collect()
        },
    ),
    owned(
        Kind::Gauge,
        "controller_broker_set_members",
        "Brokers registered in each set (alive or not).",
        labels!("cluster", "broker_set"),
        |c| {
            let sets = c.sets.iter();
            sets.map(|s| node(c, [&s.cluster, &s.name], s.members.len() as u64))
                .collect()
        },
    ),
    owned(
        Kind::Gauge,
        "controller_master_epoch",
        "Each set's master epoch (moves on every election).",
        labels!("cluster", "broker_set"),
        |c| {
            let sets = c.sets.iter();
            let epoch = |e: i32| u64::try_from(e).unwrap_or(0);
            sets.map(|s| node(c, [&s.cluster, &s.name], epoch(s.master_epoch)))
                .collect()
        },
    ),
    owned(
        Kind::Counter,
        "controller_leader_changes",
        "Leaders this controller saw that differ from the last one it saw (the first included).",
        labels!(),
        |c| vec![node(c, [], c.figures.leader_changes)],
    ),
    owned(
        Kind::Histogram,
        "controller_commit_latency_seconds",
        "Changes committed to the store (the local file or etcd), from sent to committed.",
        labels!(),
        |c| vec![histogram(c, [], &c.figures.commit_latency)],
    ),
    owned(
        Kind::Counter,
        "controller_commit_failures",
        "Changes the store did not commit, by reason.",
        labels!("reason"),
        |c| {
            let failures = &c.figures.commit_failures;
            let reasons = CommitFailure::ALL.iter();
            reasons
                .map(|r| node(c, [r.name()], failures.get(r).copied().unwrap_or(0)))
                .collect()
        },
    ),
    owned(
        Kind::Gauge,
        "controller_lease_remaining_seconds",
        "How long this node's etcd lease certainly lives on (0: lost); etcd store only.",
        labels!(),
        |c| {
            let remaining = c.lease_remaining.iter();
            remaining
                .map(|left| Sample {
                    labels: base(c, []),
                    value: Value::Real(left.as_secs_f64()),
                })
                .collect()
        },
    ),
];

/// Java's node labels, then `own`.
fn base<const N: usize>(c: &ControllerSnapshot, own: [&str; N]) -> Vec<String> {
    let node = [c.me.address.as_str(), c.group.as_str(), c.me.id.as_str()];
    node.iter()
        .chain(own.iter())
        .map(|l| (*l).to_owned())
        .collect()
}

fn node<const N: usize>(c: &ControllerSnapshot, own: [&str; N], n: u64) -> Sample {
    Sample::number(base(c, own), n)
}

fn per_set<'a>(
    c: &ControllerSnapshot,
    counts: impl Iterator<Item = (&'a (String, String), &'a u64)>,
) -> Vec<Sample> {
    counts
        .map(|((cluster, set), n)| node(c, [cluster, set], *n))
        .collect()
}

fn histogram<const N: usize>(c: &ControllerSnapshot, own: [&str; N], l: &Latencies) -> Sample {
    let buckets = LATENCY_BOUNDS
        .iter()
        .copied()
        .chain(std::iter::once(f64::INFINITY))
        .zip(l.buckets.iter().copied())
        .collect();
    Sample {
        labels: base(c, own),
        value: Value::Histogram {
            buckets,
            sum: l.sum.as_secs_f64(),
            count: l.count,
        },
    }
}
