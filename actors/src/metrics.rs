//! Counters of the connection threads, for `/metrics` (docs/metrics.md). Each worker thread
//! keeps its own [`WorkerMetrics`] per NameServer (a thread-local, like the route cache): the
//! connections of that thread count into it with no lock, no atomic and no shared map, and a
//! scrape asks every thread's [`RouteCacheKeeper`](crate::route_cache::RouteCacheKeeper) for a
//! copy ([`CollectWorkerMetrics`]) and merges the copies ([`WorkerSnapshot::merge`]).
//!
//! Every metric the threads count is declared once, in the table below: its field, how it is
//! counted, and the families it is shown as. The daemon shows [`WorkerSnapshot::families`] as
//! they are.

mod declare;
mod exposition;
mod requests;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::Message;
use rmq_protocol::codec::FrameError;

use crate::route_cache::CacheId;
use declare::declare_worker_metrics;
pub use exposition::{Count, Counted, Every, Family, Figure, Kind, Labelled, Sample, Value};
pub use requests::{code_names, CodeStats, RequestFigures, Requests, LATENCY_BOUNDS, OTHER_CODE};

declare_worker_metrics! {
    counted {
        /// By request code ([`OTHER_CODE`] for codes outside `0..512`).
        requests: Requests => RequestFigures,
            shown [
                Counter "requests" "Requests answered, by request and response code."
                    ["code", "request", "response_code"],
                Histogram "request_duration_seconds"
                    "From a request's frame read to its answer queued." ["code", "request"]
            ],
            counted by {
                /// A request answered while its frame was being handled (a cached route, an
                /// error): timed by the next [`WorkerMetrics::settle`], with one clock read for
                /// all of them.
                fn answered_at_once(code: i32, response: Option<i32>, read_at: Instant)
                    => answered_at_once(code, response, read_at);
                /// Times the requests answered at once since the last call.
                fn settle() => settle();
                /// One request answered (`response`: its code; `None` for a oneway request).
                fn request(code: i32, response: Option<i32>, elapsed: Duration)
                    => request(code, response, elapsed);
            }

        connections_opened: Count => u64,
            shown [Counter "connections_accepted" "Connections accepted." []],
            counted by { fn connection_opened() => add(); }

        /// Bad frames that closed their connection, by [`frame_error_kind`].
        frame_errors: Labelled<1> => Labelled<1>,
            shown [
                Counter "frame_errors" "Bad frames that closed their connection, by kind."
                    ["kind"] every Every::Listed(FRAME_ERROR_KINDS)
            ],
            counted by {
                /// A bad frame closed a connection.
                fn frame_error(err: &FrameError) => add([frame_error_kind(err)]);
            }

        /// Requests refused by access control, by class and reason.
        access_refusals: Labelled<2> => Labelled<2>,
            shown [
                Counter "access_refusals"
                    "Requests refused by access control (docs/access.md), by class and reason."
                    ["class", "reason"] every Every::AccessClassAndRefusal
            ],
            counted by {
                /// Access control refused a request of `class` for `reason`.
                fn access_refused(class: &'static str, reason: &'static str)
                    => add([class, reason]);
            }

        route_cache_hits: Count => u64,
            shown [
                Counter "route_cache_hits"
                    "Route queries answered from a connection thread's cache." []
            ],
            counted by { fn route_cache_hit() => add(); }

        route_cache_misses: Count => u64,
            shown [Counter "route_cache_misses" "Route queries asked of the registry." []],
            counted by { fn route_cache_miss() => add(); }

        /// Not shown (`connections_open` is housekeeping's count).
        connections_closed: Count => u64,
            shown [],
            counted by { fn connection_closed() => add(); }
    }
    sampled {
        /// Bytes of encoded routes the thread's cache holds.
        route_cache_bytes: usize,
            shown [
                Gauge "route_cache_bytes"
                    "Bytes of encoded routes held by the connection threads' caches." []
            ]

        /// Requests of the thread's connections waiting for an actor.
        pending_requests: usize,
            shown [
                Gauge "pending_requests"
                    "Requests waiting for an actor (the registry's and KV store's mailboxes)." []
            ]
    }
}

/// The `kind` labels of frame errors ([`frame_error_kind`]), in the order shown.
const FRAME_ERROR_KINDS: &[&[&str]] = &[
    &["too_large"],
    &["length"],
    &["serialize_type"],
    &["header"],
    &["other"],
];

/// The `kind` label of a frame error (one of [`FRAME_ERROR_KINDS`]).
pub fn frame_error_kind(err: &FrameError) -> &'static str {
    match err {
        FrameError::TooLarge { .. } | FrameError::HeaderTooLarge { .. } => "too_large",
        FrameError::BadLength(_) | FrameError::HeaderTooLong { .. } => "length",
        FrameError::SerializeType(_) => "serialize_type",
        FrameError::Header(_) => "header",
        FrameError::Encode(_) | FrameError::Io(_) => "other",
    }
}

/// Asks a worker thread for a copy of its figures.
#[derive(Debug, Message)]
#[rtype(result = "WorkerSnapshot")]
pub struct CollectWorkerMetrics;

/// A thread's metrics of one NameServer, shared by the thread's connections and its keeper.
pub type SharedMetrics = Rc<RefCell<WorkerMetrics>>;

thread_local! {
    static METRICS: RefCell<HashMap<CacheId, SharedMetrics>> = RefCell::new(HashMap::new());
}

/// This thread's metrics of NameServer `id`, created on first use.
pub fn of_this_thread(id: CacheId) -> SharedMetrics {
    METRICS.with(|all| {
        Rc::clone(
            all.borrow_mut()
                .entry(id)
                .or_insert_with(|| Rc::new(RefCell::new(WorkerMetrics::default()))),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::requests::LATENCY_BOUNDS_NANOS;
    use super::*;

    #[test]
    fn the_nanosecond_bounds_are_the_published_ones() {
        for (seconds, nanos) in LATENCY_BOUNDS.iter().zip(LATENCY_BOUNDS_NANOS.iter()) {
            assert_eq!((seconds * 1e9).round() as u64, *nanos);
        }
    }

    #[test]
    fn requests_are_counted_by_code_response_and_latency() {
        let mut m = WorkerMetrics::default();
        m.request(105, Some(0), Duration::from_micros(40));
        m.request(105, Some(17), Duration::from_millis(3));
        m.request(105, Some(0), Duration::from_secs(5));
        m.request(70_000, None, Duration::from_micros(1));
        m.route_cache_hit();
        let mut snap = m.snapshot();
        let route = &snap.requests[&105];
        assert_eq!(route.count, 3);
        assert_eq!(route.responses, vec![(Some(0), 2), (Some(17), 1)]);
        assert_eq!(route.buckets[0], 1);
        assert_eq!(route.buckets[LATENCY_BOUNDS.len()], 1);
        assert_eq!(snap.requests[&OTHER_CODE].responses, vec![(None, 1)]);

        let other = snap.clone();
        snap.merge(&other);
        assert_eq!(snap.requests[&105].count, 6);
        assert_eq!(
            snap.requests[&105].responses,
            vec![(Some(0), 4), (Some(17), 2)]
        );
        assert_eq!(snap.route_cache_hits, 2);
    }

    #[test]
    fn every_sample_has_a_value_per_label_of_its_family() {
        let mut m = WorkerMetrics::default();
        m.request(105, Some(0), Duration::from_micros(40));
        m.answered_at_once(105, Some(0), Instant::now());
        m.settle();
        m.connection_opened();
        m.connection_closed();
        m.frame_error(&FrameError::BadLength(-5));
        m.access_refused("read", "no_signature");
        m.route_cache_hit();
        m.route_cache_miss();
        let mut snap = m.snapshot();
        snap.route_cache_bytes = 100;
        snap.pending_requests = 1;
        let families = snap.families();
        let mut names: Vec<_> = families.iter().map(|(family, _)| family.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), families.len(), "a family declared twice");
        for (family, samples) in &families {
            assert!(!samples.is_empty(), "{} shows nothing", family.name);
            for sample in samples {
                assert_eq!(sample.labels.len(), family.labels.len(), "{}", family.name);
                let histogram = matches!(sample.value, Value::Histogram { .. });
                assert_eq!(histogram, family.kind == Kind::Histogram, "{}", family.name);
            }
            if let Every::Listed(sets) = family.every {
                assert!(sets.iter().all(|set| set.len() == family.labels.len()));
            }
        }
    }

    #[test]
    fn every_frame_error_kind_is_listed() {
        let errors = [
            FrameError::TooLarge { len: 2, max: 1 },
            FrameError::HeaderTooLarge { len: 1 },
            FrameError::BadLength(-1),
            FrameError::HeaderTooLong {
                header: 2,
                available: 1,
            },
            FrameError::SerializeType(9),
            FrameError::Io(std::io::Error::other("closed")),
        ];
        for err in &errors {
            let kind = frame_error_kind(err);
            assert!(FRAME_ERROR_KINDS.iter().any(|set| *set == [kind]), "{kind}");
        }
    }
}
