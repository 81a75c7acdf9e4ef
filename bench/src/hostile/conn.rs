//! One hostile connection: its frames in turn, one at a time, and what came of them.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rustls::ClientConfig;

use super::names::HOSTILE_OPAQUE;
use crate::stats::Latencies;
use crate::wire;
use crate::BenchError;

/// Most frames one hostile connection sends in one phase.
const MAX_HOSTILE_FRAMES: u64 = 100_000;

#[derive(Default)]
pub(super) struct HostileStats {
    pub(super) sent: u64,
    pub(super) answered: u64,
    pub(super) codes: BTreeMap<i32, u64>,
    pub(super) closed: u64,
    pub(super) timeouts: u64,
    pub(super) connect_errors: u64,
    /// Write of the frame to its answer.
    pub(super) exchange: Latencies,
}

impl HostileStats {
    pub(super) fn merge(&mut self, other: HostileStats) {
        self.sent += other.sent;
        self.answered += other.answered;
        for (code, n) in other.codes {
            *self.codes.entry(code).or_default() += n;
        }
        self.closed += other.closed;
        self.timeouts += other.timeouts;
        self.connect_errors += other.connect_errors;
        self.exchange.merge(&other.exchange);
    }
}

/// One hostile connection: sends its frames in turn, one at a time, until `until`; reconnects
/// when the server closes the connection.
pub(super) async fn hostile_conn(
    addr: SocketAddr,
    tls: Option<Arc<ClientConfig>>,
    frames: Vec<Bytes>,
    until: Instant,
    timeout: Duration,
) -> HostileStats {
    let mut stats = HostileStats::default();
    let mut stream = None;
    let mut buf = BytesMut::with_capacity(64 * 1024);
    // Bounded by `until`, each exchange by `timeout`, and by MAX_HOSTILE_FRAMES.
    while Instant::now() < until && stats.sent < MAX_HOSTILE_FRAMES && !frames.is_empty() {
        let mut conn = match stream.take() {
            Some(conn) => conn,
            None => match wire::connect_stream(addr, tls.as_ref(), timeout).await {
                Ok(conn) => {
                    buf.clear();
                    conn
                }
                Err(_) => {
                    stats.connect_errors += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let frame = &frames[(stats.sent as usize) % frames.len()];
        stats.sent += 1;
        let started = Instant::now();
        match wire::call(&mut conn, frame, HOSTILE_OPAQUE, &mut buf, timeout).await {
            Ok(reply) => {
                stats.answered += 1;
                *stats.codes.entry(reply.code).or_default() += 1;
                stats.exchange.record(started.elapsed());
                stream = Some(conn);
            }
            Err(BenchError::Timeout(_)) => stats.timeouts += 1,
            Err(_) => stats.closed += 1,
        }
    }
    stats
}
