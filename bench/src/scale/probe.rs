//! Route probes: a few connections asking GET_ROUTEINFO_BY_TOPIC one at a time, for topics
//! sampled across the whole table, until told to stop.
//!
//! Paced probes measure latency: together they ask at a fixed rate, each connection on its own
//! grid of send times, and a request that was due while the one before it was still unanswered
//! counts from when it was due, so a stall of the server counts for every request it delayed
//! (no coordinated omission). Closed-loop probes (rate 0) ask as fast as they are answered: a
//! throughput figure, whose latencies are mostly the queueing of a saturated machine (at 1,000
//! groups a route is 177 KB, and four connections in a closed loop move 2 GB/s through loopback
//! on two cores).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::codec::encode_frame;
use rmq_protocol::ResponseCode;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::scale::fleet::Shape;
use crate::stats::Latencies;
use crate::wire::{self, route_request};
use crate::BenchError;

/// Topics sampled for the probes.
const SAMPLES: usize = 256;

/// What the probes saw.
#[derive(Debug, Default)]
pub struct ProbeResult {
    pub latencies: Latencies,
    /// Answers other than SUCCESS (TOPIC_NOT_EXIST: a topic lost from the table).
    pub not_success: u64,
    /// Bytes of answer bodies read.
    pub bytes: u64,
    pub errors: Vec<String>,
}

impl ProbeResult {
    pub fn to_json(&self) -> Value {
        json!({
            "latency_us": self.latencies.to_json(),
            "not_success": self.not_success,
            "errors": self.errors,
        })
    }

    /// Answers and body bytes per second over `took` (a closed loop's throughput).
    pub fn throughput_json(&self, took: Duration) -> Value {
        let secs = took.as_secs_f64().max(1e-9);
        json!({
            "answers_per_s": self.latencies.count() as f64 / secs,
            "mib_per_s": self.bytes as f64 / 1048576.0 / secs,
            "not_success": self.not_success,
            "errors": self.errors,
        })
    }
}

/// Pre-encoded route requests for topics spread over the whole table (opaque = index).
pub fn requests(shape: &Shape) -> Result<Arc<Vec<Bytes>>, BenchError> {
    let total = shape.distinct();
    let step = (total / SAMPLES).max(1);
    (0..SAMPLES.min(total))
        .map(|i| {
            let mut frame = BytesMut::new();
            let opaque = i32::try_from(i).unwrap_or(0);
            encode_frame(
                &route_request(&shape.topic(i * step)).with_opaque(opaque),
                &mut frame,
            )
            .map_err(|e| BenchError::Protocol(format!("cannot encode route request: {e}")))?;
            Ok(frame.freeze())
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Arc::new)
}

/// Running probes; [`Probes::stop`] ends them and merges what they saw.
pub struct Probes {
    stop: Arc<AtomicBool>,
    tasks: JoinSet<ProbeResult>,
}

impl Probes {
    /// `connections` probes, each one request at a time (bounded by `timeout` each) until
    /// stopped or `limit` has passed; together `rate` requests a second, or as fast as they are
    /// answered when `rate` is 0.
    pub fn start(
        addr: SocketAddr,
        (connections, rate): (usize, f64),
        frames: &Arc<Vec<Bytes>>,
        timeout: Duration,
        limit: Duration,
    ) -> Self {
        Self::spawn(
            addr,
            (connections, rate),
            frames,
            (timeout, limit, usize::MAX),
        )
    }

    /// `connections` probes, each asking every topic once, one request at a time: the first
    /// asks after a registration, each of which the server answers without a cached body.
    pub async fn once(
        addr: SocketAddr,
        connections: usize,
        frames: &Arc<Vec<Bytes>>,
        timeout: Duration,
    ) -> ProbeResult {
        let limit = timeout * 4 + Duration::from_secs(60);
        let bounds = (timeout, limit, frames.len());
        Self::spawn(addr, (connections, 0.0), frames, bounds)
            .joined()
            .await
    }

    /// The probe tasks, each within `bounds` (see [`probe`]).
    fn spawn(
        addr: SocketAddr,
        (connections, rate): (usize, f64),
        frames: &Arc<Vec<Bytes>>,
        bounds: (Duration, Duration, usize),
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = JoinSet::new();
        let started = Instant::now();
        for c in 0..connections {
            let stop = Arc::clone(&stop);
            let frames = Arc::clone(frames);
            let pace = Pace::new(started, c, connections, rate);
            tasks.spawn(async move {
                let mut out = ProbeResult::default();
                let run = probe(addr, (c, pace), &frames, &stop, bounds, &mut out);
                if let Err(e) = run.await {
                    out.errors.push(e.to_string());
                }
                out
            });
        }
        Self { stop, tasks }
    }

    pub async fn stop(self) -> ProbeResult {
        self.stop.store(true, Ordering::Relaxed);
        self.joined().await
    }

    async fn joined(mut self) -> ProbeResult {
        let mut all = ProbeResult::default();
        while let Some(joined) = self.tasks.join_next().await {
            match joined {
                Ok(r) => {
                    all.latencies.merge(&r.latencies);
                    all.not_success += r.not_success;
                    all.bytes += r.bytes;
                    all.errors.extend(r.errors);
                }
                Err(e) => all.errors.push(format!("probe task: {e}")),
            }
        }
        all
    }
}

/// When a paced connection's requests are due: every `interval`, from `first`.
#[derive(Debug, Clone, Copy)]
struct Pace {
    first: Instant,
    interval: Duration,
}

impl Pace {
    /// Connection `index` of `connections` asking together `rate` a second, their grids
    /// interleaved; `None` for a closed loop.
    fn new(start: Instant, index: usize, connections: usize, rate: f64) -> Option<Self> {
        if !(rate.is_finite() && rate > 0.0) {
            return None;
        }
        let interval = Duration::from_secs_f64(connections.max(1) as f64 / rate);
        let offset = interval.mul_f64(index as f64 / connections.max(1) as f64);
        Some(Self {
            first: start + offset,
            interval,
        })
    }

    /// The due time of request `n`.
    fn due(&self, n: usize) -> Instant {
        self.first + self.interval * u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// One probe connection: up to `most` requests, each bounded by `timeout`, for at most `limit`.
async fn probe(
    addr: SocketAddr,
    (index, pace): (usize, Option<Pace>),
    frames: &[Bytes],
    stop: &AtomicBool,
    (timeout, limit, most): (Duration, Duration, usize),
    out: &mut ProbeResult,
) -> Result<(), BenchError> {
    let until = Instant::now() + limit;
    let mut stream = wire::connect(addr, timeout).await?;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut next = index * 37;
    let mut asked = 0;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until && asked < most {
        let i = next % frames.len().max(1);
        next += 1;
        let Some(frame) = frames.get(i) else {
            return Ok(());
        };
        // Still answering when this request was due: the server held it back, and its latency
        // counts from then. Otherwise from the send: the timer's own lateness (up to a
        // millisecond) is the prober's, not the server's.
        let sent = match pace.map(|pace| pace.due(asked)) {
            Some(due) if Instant::now() > due => due,
            Some(due) => {
                tokio::time::sleep_until(due.into()).await;
                Instant::now()
            }
            None => Instant::now(),
        };
        asked += 1;
        let opaque = i32::try_from(i).unwrap_or(0);
        let reply = wire::call(&mut stream, frame, opaque, &mut buf, timeout).await?;
        out.latencies.record(sent.elapsed());
        out.bytes += reply.body_len as u64;
        if reply.code != ResponseCode::SUCCESS.0 {
            out.not_success += 1;
        }
    }
    Ok(())
}
