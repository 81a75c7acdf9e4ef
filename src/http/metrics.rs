//! `GET /metrics`: a scrape asks each actor for its figures (every connection thread for its
//! counters, the registry, the KV store, the limits, housekeeping), merges them into one
//! [`Scrape`] and encodes it with prometheus-client. Nothing is counted on the request path but
//! the connection threads' own counters (docs/metrics.md).

mod figures;

use std::collections::BTreeMap;

use actix_web::http::header::{CacheControl, CacheDirective};
use actix_web::{web, HttpResponse};
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use rmq_actors::access::{AccessClass, Refusal};
use rmq_actors::limits::Limit;
use rmq_actors::metrics::{WorkerSnapshot, LATENCY_BOUNDS, OTHER_CODE};
use rmq_protocol::RequestCode;

use super::Observed;
pub(crate) use figures::collect;
use figures::Scrape;

pub(crate) async fn scrape(observed: web::Data<Observed>) -> HttpResponse {
    let scrape = collect(&observed, false).await;
    let mut registry = Registry::with_prefix("rmq_namesrv");
    registry.register_collector(Box::new(Collected(scrape)));
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => HttpResponse::Ok()
            .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
            .insert_header(CacheControl(vec![CacheDirective::NoStore]))
            .body(text),
        Err(err) => HttpResponse::InternalServerError().body(format!("cannot encode: {err}\n")),
    }
}

/// One scrape as a prometheus-client collector.
#[derive(Debug)]
struct Collected(Scrape);

/// A value with its labels, encoded as one sample of a family.
fn sample(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: &[(Vec<(&'static str, String)>, u64)],
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in samples {
        let mut metric = family.encode_family(labels)?;
        match kind {
            MetricType::Counter => metric.encode_counter::<NoLabelSet, _, u64>(value, None)?,
            _ => metric.encode_gauge(&i64::try_from(*value).unwrap_or(i64::MAX))?,
        }
    }
    Ok(())
}

fn one(value: u64) -> Vec<(Vec<(&'static str, String)>, u64)> {
    vec![(Vec::new(), value)]
}

/// The `code` and `request` labels of a request code.
fn code_names(code: i32) -> (String, &'static str) {
    if code == OTHER_CODE {
        ("other".to_owned(), "OTHER")
    } else {
        (
            code.to_string(),
            RequestCode(code).name().unwrap_or("UNKNOWN"),
        )
    }
}

fn code_labels(code: i32) -> Vec<(&'static str, String)> {
    let (code, name) = code_names(code);
    vec![("code", code), ("request", name.to_owned())]
}

impl prometheus_client::collector::Collector for Collected {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use MetricType::{Counter, Gauge};
        let s = &self.0;
        let e = &mut encoder;

        sample(
            e,
            "build_info",
            "This build (value 1).",
            Gauge,
            &[(
                vec![
                    ("version", env!("CARGO_PKG_VERSION").to_owned()),
                    ("rocketmq_version", "V5_3_3".to_owned()),
                ],
                1,
            )],
        )?;

        let mut requests = Vec::new();
        for (code, stats) in &s.workers.requests {
            for (response, n) in &stats.responses {
                let mut labels = code_labels(*code);
                labels.push((
                    "response_code",
                    response.map_or_else(|| "none".to_owned(), |r| r.to_string()),
                ));
                requests.push((labels, *n));
            }
        }
        sample(
            e,
            "requests",
            "Requests answered, by request and response code.",
            Counter,
            &requests,
        )?;

        {
            let mut durations = e.encode_descriptor(
                "request_duration_seconds",
                "From a request's frame read to its answer queued.",
                None,
                MetricType::Histogram,
            )?;
            for (code, stats) in &s.workers.requests {
                let labels = code_labels(*code);
                let buckets: Vec<(f64, u64)> = LATENCY_BOUNDS
                    .iter()
                    .copied()
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(stats.buckets.iter().copied())
                    .collect();
                durations
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(
                        stats.sum_seconds(),
                        stats.count,
                        &buckets,
                        None,
                    )?;
            }
        }

        let c = &s.registry.counters;
        sample(
            e,
            "registrations",
            "REGISTER_BROKER applied: new instance, refreshed (body decoded), unchanged body (not decoded).",
            Counter,
            &[
                (vec![("kind", "new".to_owned())], c.registrations_new),
                (vec![("kind", "refreshed".to_owned())], c.registrations_refreshed),
                (vec![("kind", "unchanged_body".to_owned())], c.registrations_unchanged_body),
            ],
        )?;
        sample(
            e,
            "broker_expiries",
            "Brokers dropped by the expiry scan.",
            Counter,
            &one(c.expiries),
        )?;
        sample(
            e,
            "broker_channel_close_removals",
            "Brokers removed because their connection closed.",
            Counter,
            &one(c.channel_close_removals),
        )?;
        let live: Vec<_> = s
            .registry
            .live_by_cluster
            .iter()
            .map(|(cluster, n)| (vec![("cluster", cluster.clone())], *n as u64))
            .collect();
        sample(
            e,
            "live_brokers",
            "Live broker instances per cluster.",
            Gauge,
            &live,
        )?;
        let stats = &s.registry.stats;
        sample(
            e,
            "broker_groups",
            "Broker groups (broker names).",
            Gauge,
            &one(stats.broker_groups as u64),
        )?;
        sample(
            e,
            "clusters",
            "Clusters.",
            Gauge,
            &one(stats.clusters as u64),
        )?;
        sample(
            e,
            "topics",
            "Topics in the route table.",
            Gauge,
            &one(stats.topics as u64),
        )?;

        sample(
            e,
            "connections_open",
            "Open client connections.",
            Gauge,
            &one(s.open_connections as u64),
        )?;
        sample(
            e,
            "connections_accepted",
            "Connections accepted.",
            Counter,
            &one(s.workers.connections_opened),
        )?;
        let refused_by = |limit: Limit| {
            s.limits
                .iter()
                .find(|(l, _)| *l == limit)
                .map_or(0, |(_, n)| *n)
        };
        sample(
            e,
            "connections_refused",
            "Connections refused at accept, by reason.",
            Counter,
            &[
                (
                    vec![("reason", "max_connections".to_owned())],
                    refused_by(Limit::Connections),
                ),
                (
                    vec![("reason", "max_connections_per_source".to_owned())],
                    refused_by(Limit::ConnectionsPerSource),
                ),
            ],
        )?;
        let frame_errors: Vec<_> = ["too_large", "length", "serialize_type", "header", "other"]
            .iter()
            .map(|kind| {
                let n = s.workers.frame_errors.get(kind).copied().unwrap_or(0);
                (vec![("kind", (*kind).to_owned())], n)
            })
            .collect();
        sample(
            e,
            "frame_errors",
            "Bad frames that closed their connection, by kind.",
            Counter,
            &frame_errors,
        )?;
        let limits: Vec<_> = Limit::ALL
            .iter()
            .map(|limit| (vec![("limit", limit.name().to_owned())], refused_by(*limit)))
            .collect();
        sample(
            e,
            "limit_refusals",
            "Refusals of docs/limits.md, by limit.",
            Counter,
            &limits,
        )?;
        // Every class and reason, zeros included, so alerts can rate() them from the start.
        let access: Vec<_> = AccessClass::ALL
            .iter()
            .flat_map(|class| {
                Refusal::ALL.iter().map(move |reason| {
                    let n = s
                        .workers
                        .access_refusals
                        .get(&(class.name(), reason.name()))
                        .copied()
                        .unwrap_or(0);
                    (
                        vec![
                            ("class", class.name().to_owned()),
                            ("reason", reason.name().to_owned()),
                        ],
                        n,
                    )
                })
            })
            .collect();
        sample(
            e,
            "access_refusals",
            "Requests refused by access control (docs/access.md), by class and reason.",
            Counter,
            &access,
        )?;

        sample(
            e,
            "route_cache_hits",
            "Route queries answered from a connection thread's cache.",
            Counter,
            &one(s.workers.route_cache_hits),
        )?;
        sample(
            e,
            "route_cache_misses",
            "Route queries asked of the registry.",
            Counter,
            &one(s.workers.route_cache_misses),
        )?;
        sample(
            e,
            "route_cache_bytes",
            "Bytes of encoded routes held by the connection threads' caches.",
            Gauge,
            &one(s.workers.route_cache_bytes as u64),
        )?;
        sample(
            e,
            "kv_entries",
            "KV entries, all namespaces.",
            Gauge,
            &one(s.kv.entries as u64),
        )?;
        sample(
            e,
            "kv_save_failures",
            "KV file writes that failed.",
            Counter,
            &one(s.kv.save_failures),
        )?;
        sample(
            e,
            "pending_requests",
            "Requests waiting for an actor (the registry's and KV store's mailboxes).",
            Gauge,
            &one(s.workers.pending_requests as u64),
        )?;
        if let Some(health) = &s.health {
            let panics: Vec<_> = health
                .actors
                .iter()
                .map(|a| (vec![("actor", a.actor.to_owned())], a.panics))
                .collect();
            sample(
                e,
                "actor_panics",
                "Handler panics contained, by actor.",
                Counter,
                &panics,
            )?;
            let alive: Vec<_> = health
                .actors
                .iter()
                .map(|a| (vec![("actor", a.actor.to_owned())], u64::from(a.alive)))
                .collect();
            sample(
                e,
                "actor_alive",
                "1 while the actor answers, 0 once it is lost.",
                Gauge,
                &alive,
            )?;
        }
        sample(
            e,
            "go_away",
            "Requests answered GO_AWAY during a graceful drain.",
            Counter,
            &one(s.go_away),
        )?;
        Ok(())
    }
}

/// Requests answered per request name, all response codes together (the status page).
pub(crate) fn requests_by_name(workers: &WorkerSnapshot) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (code, stats) in &workers.requests {
        let (code, name) = code_names(*code);
        *out.entry(format!("{name} ({code})")).or_insert(0) += stats.count;
    }
    out
}
