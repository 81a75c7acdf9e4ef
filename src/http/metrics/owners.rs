//! The families whose figures other owners keep (the registry, the KV store, the limits,
//! housekeeping, the actors' health) and this build's: each declared once, with how its
//! samples are read from a [`Scrape`]. The connection threads' families are declared in
//! rmq_actors::metrics.

use rmq_actors::limits::Limit;
use rmq_actors::metrics::{Family, Kind, Sample};
use rmq_tools::fleet::DriftKind;

use super::figures::Scrape;

/// A family and how to read its samples from a scrape.
pub(super) struct Owned {
    pub family: Family,
    pub samples: fn(&Scrape) -> Vec<Sample>,
}

const fn owned(
    kind: Kind,
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    samples: fn(&Scrape) -> Vec<Sample>,
) -> Owned {
    Owned {
        family: Family::new(name, help, kind, labels),
        samples,
    }
}

/// Shown first.
pub(super) const BUILD_INFO: Owned = owned(
    Kind::Gauge,
    "build_info",
    "This build (value 1).",
    &["version", "rocketmq_version"],
    |_| vec![sample([env!("CARGO_PKG_VERSION"), "V5_5_0"], 1)],
);

/// Shown after the connection threads' families, in this order.
pub(super) const OWNED: [Owned; 18] = [
    owned(
        Kind::Counter,
        "registrations",
        "REGISTER_BROKER applied: new instance, refreshed (body decoded), unchanged body (not decoded).",
        &["kind"],
        |s| {
            let c = &s.registry.counters;
            vec![
                sample(["new"], c.registrations_new),
                sample(["refreshed"], c.registrations_refreshed),
                sample(["unchanged_body"], c.registrations_unchanged_body),
            ]
        },
    ),
    owned(
        Kind::Counter,
        "broker_expiries",
        "Brokers dropped by the expiry scan.",
        &[],
        |s| Sample::one(s.registry.counters.expiries),
    ),
    owned(
        Kind::Counter,
        "broker_channel_close_removals",
        "Brokers removed because their connection closed.",
        &[],
        |s| Sample::one(s.registry.counters.channel_close_removals),
    ),
    owned(
        Kind::Gauge,
        "live_brokers",
        "Live broker instances per cluster.",
        &["cluster"],
        |s| {
            let live = s.registry.live_by_cluster.iter();
            live.map(|(cluster, n)| Sample::number(vec![cluster.clone()], *n as u64))
                .collect()
        },
    ),
    owned(
        Kind::Gauge,
        "brokers_unconfirmed",
        "Live brokers restored from the route snapshot at start and not registered since.",
        &[],
        |s| Sample::one(s.registry.stats.unconfirmed_brokers as u64),
    ),
    owned(
        Kind::Gauge,
        "broker_groups",
        "Broker groups (broker names).",
        &[],
        |s| Sample::one(s.registry.stats.broker_groups as u64),
    ),
    owned(Kind::Gauge, "clusters", "Clusters.", &[], |s| {
        Sample::one(s.registry.stats.clusters as u64)
    }),
    owned(Kind::Gauge, "topics", "Topics in the route table.", &[], |s| {
        Sample::one(s.registry.stats.topics as u64)
    }),
    owned(
        Kind::Gauge,
        "connections_open",
        "Open client connections.",
        &[],
        |s| Sample::one(s.open_connections as u64),
    ),
    owned(
        Kind::Counter,
        "connections_refused",
        "Connections refused at accept, by reason.",
        &["reason"],
        |s| {
            vec![
                sample(["max_connections"], refused(s, Limit::Connections)),
                sample(
                    ["max_connections_per_source"],
                    refused(s, Limit::ConnectionsPerSource),
                ),
            ]
        },
    ),
    owned(
        Kind::Counter,
        "limit_refusals",
        "Refusals of docs/limits.md, by limit.",
        &["limit"],
        |s| {
            let limits = Limit::ALL.iter();
            limits.map(|limit| sample([limit.name()], refused(s, *limit))).collect()
        },
    ),
    owned(
        Kind::Gauge,
        "kv_entries",
        "KV entries, all namespaces.",
        &[],
        |s| Sample::one(s.kv.entries as u64),
    ),
    owned(
        Kind::Counter,
        "kv_save_failures",
        "KV file writes that failed.",
        &[],
        |s| Sample::one(s.kv.save_failures),
    ),
    owned(
        Kind::Counter,
        "actor_panics",
        "Handler panics contained, by actor.",
        &["actor"],
        |s| {
            let actors = s.health.iter().flat_map(|h| h.actors.iter());
            actors.map(|a| sample([a.actor], a.panics)).collect()
        },
    ),
    owned(
        Kind::Gauge,
        "actor_alive",
        "1 while the actor answers, 0 once it is lost.",
        &["actor"],
        |s| {
            let actors = s.health.iter().flat_map(|h| h.actors.iter());
            actors.map(|a| sample([a.actor], u64::from(a.alive))).collect()
        },
    ),
    owned(
        Kind::Counter,
        "go_away",
        "Requests answered GO_AWAY during a graceful drain.",
        &[],
        |s| Sample::one(s.go_away),
    ),
    owned(
        Kind::Gauge,
        "fleet_drift",
        "Differences between this server and its peers at the latest fleet check, by kind (with [fleet]).",
        &["kind"],
        |s| {
            let Some(fleet) = &s.fleet else {
                return Vec::new();
            };
            let kinds = DriftKind::ALL.iter();
            kinds
                .map(|k| sample([k.label()], fleet.view.counts.get(k).copied().unwrap_or(0)))
                .collect()
        },
    ),
    owned(
        Kind::Gauge,
        "fleet_unreachable",
        "Name servers of the fleet that could not be asked at the latest fleet check (with [fleet]).",
        &[],
        |s| {
            let fleet = s.fleet.iter();
            fleet.map(|f| Sample::number(Vec::new(), f.view.failures.len() as u64)).collect()
        },
    ),
];

/// The families only a NameServer has (its registry, KV store and port's housekeeping): a
/// standalone controller's scrape leaves them out.
pub(super) const NAMESRV_ONLY: &[&str] = &[
    "registrations",
    "broker_expiries",
    "broker_channel_close_removals",
    "live_brokers",
    "brokers_unconfirmed",
    "broker_groups",
    "clusters",
    "topics",
    "connections_open",
    "kv_entries",
    "kv_save_failures",
    "go_away",
];

fn sample<const N: usize>(labels: [&str; N], n: u64) -> Sample {
    Sample::number(labels.iter().map(|l| (*l).to_owned()).collect(), n)
}

/// Refusals of `limit` counted by the limits.
fn refused(scrape: &Scrape, limit: Limit) -> u64 {
    let mut counts = scrape.limits.iter();
    counts.find(|(l, _)| *l == limit).map_or(0, |(_, n)| *n)
}
