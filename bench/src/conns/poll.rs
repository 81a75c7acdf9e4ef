//! The polling phase: every connection sends one route query per period at its own offset,
//! warm-up first, then the measured window; the server's RSS sampled throughout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmq_protocol::ResponseCode;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::args::ConnsArgs;
use super::figures::count;
use crate::stats::{CpuWindow, Latencies, Memory};
use crate::wire::{self, RequestTemplate};
use crate::Common;

/// The figures of the polling phase, shared by every connection's task.
#[derive(Default)]
pub(super) struct Polls {
    /// Write to reply, of the polls due in the warm-up.
    pub(super) warmup: Mutex<Latencies>,
    /// Write to reply, of the polls due in the measured window.
    pub(super) latencies: Mutex<Latencies>,
    /// Due time to write, of the polls due in the warm-up.
    pub(super) warmup_lag: Mutex<Latencies>,
    /// Due time to write, of the polls due in the measured window.
    pub(super) lag: Mutex<Latencies>,
    pub(super) sent: AtomicU64,
    pub(super) ok: AtomicU64,
    /// Answered polls of the measured window.
    pub(super) ok_measured: AtomicU64,
    /// Polls never sent because their connection had failed before.
    pub(super) skipped: AtomicU64,
    pub(super) errors: Mutex<BTreeMap<String, u64>>,
}

impl Polls {
    fn error(&self, what: String) {
        if let Ok(mut errors) = self.errors.lock() {
            count(&mut errors, what);
        }
    }

    fn record(histogram: &Mutex<Latencies>, latency: Duration) {
        if let Ok(mut h) = histogram.lock() {
            h.record(latency);
        }
    }

    pub(super) fn snapshot(histogram: &Mutex<Latencies>) -> Latencies {
        histogram.lock().map(|h| h.clone()).unwrap_or_default()
    }
}

/// When one connection polls.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    first_due: Instant,
    period: Duration,
    /// Polls due before this are warm-up.
    measure_from: Instant,
    /// No poll is due at or after this.
    end: Instant,
    timeout: Duration,
}

/// One connection's polls: one per `period` from `first_due` while before `end`, each answered
/// within `timeout`. Returns the stream (kept open until every connection is done), `None` once
/// it failed: a failed connection stops polling, its remaining polls counted as skipped.
async fn poll_conn(
    mut stream: TcpStream,
    template: RequestTemplate,
    schedule: Schedule,
    polls: Arc<Polls>,
) -> Option<TcpStream> {
    let Schedule {
        first_due,
        period,
        measure_from,
        end,
        timeout,
    } = schedule;
    let mut due = first_due;
    // Opaque 1 was the first request's.
    let mut opaque: i32 = 1;
    // Bounded by count: one poll per period until `end`.
    while due < end {
        tokio::time::sleep_until(due.into()).await;
        let sent = Instant::now();
        opaque = opaque.wrapping_add(1);
        let mut frame = BytesMut::with_capacity(template.frame_len(11));
        template.encode(opaque, &mut frame);
        let mut buf = BytesMut::with_capacity(1024);
        polls.sent.fetch_add(1, Ordering::Relaxed);
        let result = wire::call(&mut stream, &frame, opaque, &mut buf, timeout).await;
        let answered = Instant::now();
        let warming = due < measure_from;
        let lag = if warming {
            &polls.warmup_lag
        } else {
            &polls.lag
        };
        Polls::record(lag, sent - due);
        match result {
            Ok(reply) if reply.code == ResponseCode::SUCCESS.0 && reply.body_len > 0 => {
                polls.ok.fetch_add(1, Ordering::Relaxed);
                if warming {
                    Polls::record(&polls.warmup, answered - sent);
                } else {
                    polls.ok_measured.fetch_add(1, Ordering::Relaxed);
                    Polls::record(&polls.latencies, answered - sent);
                }
            }
            Ok(reply) => polls.error(format!(
                "code {} with {} body bytes",
                reply.code, reply.body_len
            )),
            Err(e) => {
                polls.error(e.to_string());
                let mut left = 0;
                due += period;
                while due < end {
                    left += 1;
                    due += period;
                }
                polls.skipped.fetch_add(left, Ordering::Relaxed);
                return None;
            }
        }
        due += period;
    }
    Some(stream)
}

/// What the polling phase gave.
pub(super) struct Polled {
    pub(super) polls: Arc<Polls>,
    /// The connections that did not fail, still open.
    pub(super) kept: Vec<TcpStream>,
    pub(super) task_failures: u64,
    /// The server's highest RSS sampled every 250 ms through warm-up and window.
    pub(super) max_rss_kib: Option<u64>,
    /// At the end of the window.
    pub(super) end: Option<Memory>,
    pub(super) cpu: Value,
}

/// Every stream polls per `args`: warm-up, then the measured window.
pub(super) async fn poll_all(
    streams: Vec<TcpStream>,
    templates: &[RequestTemplate],
    common: &Common,
    args: &ConnsArgs,
) -> Polled {
    let pid = common.pid;
    let held = streams.len();
    let polls = Arc::new(Polls::default());
    let start = Instant::now() + Duration::from_millis(100);
    let measure_from = start + args.warmup;
    let end = measure_from + args.duration;
    let mut tasks = JoinSet::new();
    for (i, stream) in streams.into_iter().enumerate() {
        let Some(template) = templates.get(i % templates.len().max(1)) else {
            break;
        };
        let offset_nanos = args.poll_period.as_nanos() * i as u128 / held.max(1) as u128;
        let schedule = Schedule {
            first_due: start + Duration::from_nanos(u64::try_from(offset_nanos).unwrap_or(0)),
            period: args.poll_period,
            measure_from,
            end,
            timeout: common.timeout,
        };
        tasks.spawn(poll_conn(
            stream,
            template.clone(),
            schedule,
            Arc::clone(&polls),
        ));
    }
    // The server's RSS through warm-up and window, every 250 ms (bounded by the window).
    let sampler = tokio::spawn(async move {
        let mut max_rss = None::<u64>;
        let mut at = start;
        while at < end {
            tokio::time::sleep_until(at.into()).await;
            if let Some(mem) = pid.and_then(Memory::of) {
                max_rss = Some(max_rss.map_or(mem.rss_kib, |m| m.max(mem.rss_kib)));
            }
            at += Duration::from_millis(250);
        }
        max_rss
    });
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu = CpuWindow::start(pid);
    tokio::time::sleep_until(end.into()).await;
    let cpu = cpu.finish();
    let end_memory = pid.and_then(Memory::of);
    // Every task ends by `end + timeout` (its last poll is due before `end`).
    let mut kept = Vec::with_capacity(held);
    let mut task_failures = 0u64;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Some(stream)) => kept.push(stream),
            Ok(None) => {}
            Err(_) => task_failures += 1,
        }
    }
    let sampled = sampler.await.ok().flatten();
    let max_rss_kib = match (sampled, end_memory) {
        (Some(s), Some(m)) => Some(s.max(m.rss_kib)),
        (s, m) => s.or(m.map(|m| m.rss_kib)),
    };
    Polled {
        polls,
        kept,
        task_failures,
        max_rss_kib,
        end: end_memory,
        cpu,
    }
}
