//! Route probes: a few connections asking GET_ROUTEINFO_BY_TOPIC one at a time, for topics
//! sampled across the whole table, until told to stop.

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
    /// stopped or `limit` has passed.
    pub fn start(
        addr: SocketAddr,
        connections: usize,
        frames: &Arc<Vec<Bytes>>,
        timeout: Duration,
        limit: Duration,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let mut tasks = JoinSet::new();
        for c in 0..connections {
            let stop = Arc::clone(&stop);
            let frames = Arc::clone(frames);
            tasks.spawn(async move {
                let mut out = ProbeResult::default();
                if let Err(e) = probe(addr, c, &frames, &stop, timeout, limit, &mut out).await {
                    out.errors.push(e.to_string());
                }
                out
            });
        }
        Self { stop, tasks }
    }

    pub async fn stop(mut self) -> ProbeResult {
        self.stop.store(true, Ordering::Relaxed);
        let mut all = ProbeResult::default();
        while let Some(joined) = self.tasks.join_next().await {
            match joined {
                Ok(r) => {
                    all.latencies.merge(&r.latencies);
                    all.not_success += r.not_success;
                    all.errors.extend(r.errors);
                }
                Err(e) => all.errors.push(format!("probe task: {e}")),
            }
        }
        all
    }
}

async fn probe(
    addr: SocketAddr,
    index: usize,
    frames: &[Bytes],
    stop: &AtomicBool,
    timeout: Duration,
    limit: Duration,
    out: &mut ProbeResult,
) -> Result<(), BenchError> {
    let until = Instant::now() + limit;
    let mut stream = wire::connect(addr, timeout).await?;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut next = index * 37;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        let i = next % frames.len().max(1);
        next += 1;
        let Some(frame) = frames.get(i) else {
            return Ok(());
        };
        let sent = Instant::now();
        let opaque = i32::try_from(i).unwrap_or(0);
        let reply = wire::call(&mut stream, frame, opaque, &mut buf, timeout).await?;
        out.latencies.record(sent.elapsed());
        if reply.code != ResponseCode::SUCCESS.0 {
            out.not_success += 1;
        }
    }
    Ok(())
}
