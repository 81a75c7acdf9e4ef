//! Requests answered, by request code and response code, and their latency: the one row of the
//! table with a type of its own ([`Requests`] on the thread, [`RequestFigures`] in a scrape).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rmq_protocol::RequestCode;

use super::exposition::{Counted, Figure, Kind, Sample, Value};

/// Upper bounds of the request-latency histogram buckets, in seconds (the last bucket, +Inf, is
/// implied).
pub const LATENCY_BOUNDS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

/// [`LATENCY_BOUNDS`] in nanoseconds (what the request path compares).
pub(super) const LATENCY_BOUNDS_NANOS: [u64; 14] = [
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

/// Requests answered at once that wait for [`Requests::settle`] at most; beyond, they are
/// timed at once.
const AT_ONCE_BATCH: usize = 1024;

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

/// What one thread's connections answered.
#[derive(Debug, Default)]
pub struct Requests {
    /// Indexed by request code (`0..512`), then one slot for every other code.
    codes: Vec<Option<Box<CodeStats>>>,
    /// Requests answered at once and not yet timed: code, response code, when read, how many
    /// (consecutive requests alike share an entry: a pipelined batch of route queries is one).
    at_once: Vec<(i32, Option<i32>, Instant, u64)>,
}

impl Requests {
    /// A request answered while its frame was being handled (a cached route, an error): timed
    /// by the next [`Requests::settle`], with one clock read for all of them.
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
}

/// Requests by request code ([`OTHER_CODE`] for codes outside `0..512`): a scrape's copy.
pub type RequestFigures = BTreeMap<i32, CodeStats>;

impl Counted for Requests {
    type Copy = RequestFigures;

    fn copy(&self) -> RequestFigures {
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
        requests
    }
}

/// The counter is `code`, `request`, `response_code` (`none` for a oneway request); the
/// histogram `code`, `request`.
impl Figure for RequestFigures {
    fn merge(&mut self, other: &Self) {
        for (code, stats) in other {
            self.entry(*code).or_default().merge(stats);
        }
    }

    fn samples(&self, kind: Kind) -> Vec<Sample> {
        let mut samples = Vec::new();
        for (code, stats) in self {
            let (code, name) = code_names(*code);
            let labels = vec![code, name.to_owned()];
            if kind == Kind::Histogram {
                let buckets = LATENCY_BOUNDS
                    .iter()
                    .copied()
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(stats.buckets.iter().copied())
                    .collect();
                let value = Value::Histogram {
                    buckets,
                    sum: stats.sum_seconds(),
                    count: stats.count,
                };
                samples.push(Sample { labels, value });
                continue;
            }
            for (response, n) in &stats.responses {
                let mut labels = labels.clone();
                labels.push(response.map_or_else(|| "none".to_owned(), |r| r.to_string()));
                samples.push(Sample::number(labels, *n));
            }
        }
        samples
    }
}

/// The `code` and `request` labels of a request code.
pub fn code_names(code: i32) -> (String, &'static str) {
    if code == OTHER_CODE {
        ("other".to_owned(), "OTHER")
    } else {
        (
            code.to_string(),
            RequestCode(code).name().unwrap_or("UNKNOWN"),
        )
    }
}
