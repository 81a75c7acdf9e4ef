//! Counters of the connection threads, for `/metrics` (docs/metrics.md). Each worker thread
//! keeps its own [`WorkerMetrics`] per NameServer (a thread-local, like the route cache): the
//! connections of that thread count into it with no lock, no atomic and no shared map, and a
//! scrape asks every thread's [`RouteCacheKeeper`](crate::route_cache::RouteCacheKeeper) for a
//! copy ([`CollectWorkerMetrics`]) and merges the copies ([`WorkerSnapshot::merge`]).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::Message;
use rmq_protocol::codec::FrameError;

use crate::route_cache::CacheId;

/// Upper bounds of the request-latency histogram buckets, in seconds (the last bucket, +Inf, is
/// implied).
pub const LATENCY_BOUNDS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

/// [`LATENCY_BOUNDS`] in nanoseconds (what the request path compares).
const LATENCY_BOUNDS_NANOS: [u64; 14] = [
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
];

/// Request codes counted one by one; any other code is counted under [`OTHER_CODE`].
const TRACKED_CODES: usize = 512;

/// The code label of requests whose code is outside `0..512`.
pub const OTHER_CODE: i32 = -1;

/// One request code's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CodeStats {
    /// Answers by response code; `None`: a oneway request (no answer).
    pub responses: Vec<(Option<i32>, u64)>,
    /// Requests per latency bucket ([`LATENCY_BOUNDS`], then +Inf); not cumulative.
    pub buckets: [u64; LATENCY_BOUNDS.len() + 1],
    pub sum_nanos: u64,
    pub count: u64,
}

impl CodeStats {
    /// `n` requests answered `response` after `elapsed`.
    fn record(&mut self, response: Option<i32>, elapsed: Duration, n: u64) {
        match self
            .responses
            .iter_mut()
            .find(|(code, _)| *code == response)
        {
            Some((_, count)) => *count += n,
            None => self.responses.push((response, n)),
        }
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_NANOS
            .iter()
            .position(|bound| nanos <= *bound)
            .unwrap_or(LATENCY_BOUNDS_NANOS.len());
        if let Some(slot) = self.buckets.get_mut(bucket) {
            *slot += n;
        }
        self.sum_nanos = self.sum_nanos.saturating_add(nanos.saturating_mul(n));
        self.count += n;
    }

    /// The sum of the latencies, in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_nanos as f64 / 1e9
    }

    fn merge(&mut self, other: &CodeStats) {
        for (response, n) in &other.responses {
            match self.responses.iter_mut().find(|(code, _)| code == response) {
                Some((_, mine)) => *mine += n,
                None => self.responses.push((*response, *n)),
            }
        }
        for (mine, theirs) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *mine += theirs;
        }
        self.sum_nanos = self.sum_nanos.saturating_add(other.sum_nanos);
        self.count += other.count;
    }
}

/// What the connections of one thread counted, for one NameServer.
#[derive(Debug, Default)]
pub struct WorkerMetrics {
    /// Indexed by request code (`0..512`), then one slot for every other code.
    codes: Vec<Option<Box<CodeStats>>>,
    route_cache_hits: u64,
    route_cache_misses: u64,
    frame_errors: BTreeMap<&'static str, u64>,
    connections_opened: u64,
    connections_closed: u64,
    /// Requests refused by access control, by class and reason.
    access_refusals: BTreeMap<(&'static str, &'static str), u64>,
    /// Requests answered at once and not yet timed: code, response code, when read, how many
    /// (consecutive requests alike share an entry: a pipelined batch of route queries is one).
    at_once: Vec<(i32, Option<i32>, Instant, u64)>,
}

/// Requests answered at once that wait for [`WorkerMetrics::settle`] at most; beyond, they are
/// timed at once.
const AT_ONCE_BATCH: usize = 1024;

impl WorkerMetrics {
    /// A request answered while its frame was being handled (a cached route, an error): timed
    /// by the next [`WorkerMetrics::settle`], with one clock read for all of them.
    pub fn answered_at_once(&mut self, code: i32, response: Option<i32>, read_at: Instant) {
        if let Some(last) = self.at_once.last_mut() {
            if last.0 == code && last.1 == response && last.2 == read_at {
                last.3 += 1;
                return;
            }
        }
        self.at_once.push((code, response, read_at, 1));
        if self.at_once.len() >= AT_ONCE_BATCH {
            self.settle();
        }
    }

    /// Times the requests answered at once since the last call.
    pub fn settle(&mut self) {
        if self.at_once.is_empty() {
            return;
        }
        let now = Instant::now();
        // The buffer is kept (it is the thread's, not a connection's).
        let mut pending = std::mem::take(&mut self.at_once);
        for (code, response, read_at, n) in pending.drain(..) {
            self.record(code, response, now.saturating_duration_since(read_at), n);
        }
        self.at_once = pending;
    }

    /// One request answered (`response`: its code; `None` for a oneway request).
    pub fn request(&mut self, code: i32, response: Option<i32>, elapsed: Duration) {
        self.record(code, response, elapsed, 1);
    }

    fn record(&mut self, code: i32, response: Option<i32>, elapsed: Duration, n: u64) {
        if self.codes.is_empty() {
            self.codes.resize_with(TRACKED_CODES + 1, || None);
        }
        let index = usize::try_from(code)
            .ok()
            .filter(|i| *i < TRACKED_CODES)
            .unwrap_or(TRACKED_CODES);
        if let Some(slot) = self.codes.get_mut(index) {
            slot.get_or_insert_with(Box::default)
                .record(response, elapsed, n);
        }
    }

    pub fn route_cache_hit(&mut self) {
        self.route_cache_hits += 1;
    }

    pub fn route_cache_miss(&mut self) {
        self.route_cache_misses += 1;
    }

    /// A bad frame closed a connection.
    pub fn frame_error(&mut self, err: &FrameError) {
        *self.frame_errors.entry(frame_error_kind(err)).or_insert(0) += 1;
    }

    /// Access control refused a request of `class` for `reason`.
    pub fn access_refused(&mut self, class: &'static str, reason: &'static str) {
        *self.access_refusals.entry((class, reason)).or_insert(0) += 1;
    }

    pub fn connection_opened(&mut self) {
        self.connections_opened += 1;
    }

    pub fn connection_closed(&mut self) {
        self.connections_closed += 1;
    }

    /// A copy, to send to the scraper.
    pub fn snapshot(&self) -> WorkerSnapshot {
        let mut requests = BTreeMap::new();
        for (index, stats) in self.codes.iter().enumerate() {
            if let Some(stats) = stats {
                let code = i32::try_from(index)
                    .ok()
                    .filter(|_| index < TRACKED_CODES)
                    .unwrap_or(OTHER_CODE);
                requests.insert(code, (**stats).clone());
            }
        }
        WorkerSnapshot {
            requests,
            route_cache_hits: self.route_cache_hits,
            route_cache_misses: self.route_cache_misses,
            frame_errors: self.frame_errors.clone(),
            connections_opened: self.connections_opened,
            connections_closed: self.connections_closed,
            access_refusals: self.access_refusals.clone(),
            ..WorkerSnapshot::default()
        }
    }
}

/// The `kind` label of a frame error.
pub fn frame_error_kind(err: &FrameError) -> &'static str {
    match err {
        FrameError::TooLarge { .. } | FrameError::HeaderTooLarge { .. } => "too_large",
        FrameError::BadLength(_) | FrameError::HeaderTooLong { .. } => "length",
        FrameError::SerializeType(_) => "serialize_type",
        FrameError::Header(_) => "header",
        FrameError::Encode(_) | FrameError::Io(_) => "other",
    }
}

/// The figures of one or more worker threads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerSnapshot {
    /// By request code ([`OTHER_CODE`] for codes outside `0..512`).
    pub requests: BTreeMap<i32, CodeStats>,
    pub route_cache_hits: u64,
    pub route_cache_misses: u64,
    pub frame_errors: BTreeMap<&'static str, u64>,
    pub connections_opened: u64,
    pub connections_closed: u64,
    /// Requests refused by access control, by class and reason.
    pub access_refusals: BTreeMap<(&'static str, &'static str), u64>,
    /// Bytes of encoded routes the thread's cache holds.
    pub route_cache_bytes: usize,
    /// Requests of the thread's connections waiting for an actor.
    pub pending_requests: usize,
}

impl WorkerSnapshot {
    /// Adds another thread's figures.
    pub fn merge(&mut self, other: &WorkerSnapshot) {
        for (code, stats) in &other.requests {
            self.requests.entry(*code).or_default().merge(stats);
        }
        self.route_cache_hits += other.route_cache_hits;
        self.route_cache_misses += other.route_cache_misses;
        for (kind, n) in &other.frame_errors {
            *self.frame_errors.entry(kind).or_insert(0) += n;
        }
        self.connections_opened += other.connections_opened;
        self.connections_closed += other.connections_closed;
        for (key, n) in &other.access_refusals {
            *self.access_refusals.entry(*key).or_insert(0) += n;
        }
        self.route_cache_bytes += other.route_cache_bytes;
        self.pending_requests += other.pending_requests;
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
}
