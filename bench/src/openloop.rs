//! Open-loop route queries: request `j` is due at `start + j / rate`, whatever the server does.
//!
//! A pacer thread writes each request when it is due (plain `std` sleeps: tokio's timer would
//! round every due time up to the next millisecond) on non-blocking sockets; one tokio task per
//! connection reads the replies. The opaque of request `j` is `j`, so a reply alone tells when its
//! request was due: latency is measured from that time, which keeps a stalled server from hiding
//! its stall (no coordinated omission). How late the pacer itself was is reported too.
//!
//! Over TLS a connection's bytes cannot be written from one thread and read from another
//! without sharing its TLS state, so the pacer hands each due request to a tokio task that owns
//! the connection's writing half (and encrypts); latency still counts from the due time, so the
//! hand-over and the encryption are inside it, and the pacer lag is then due time to hand-over.
//! Plain TCP keeps the direct non-blocking writes (the pacer is generic over its writers).

use std::io::{ErrorKind, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use rmq_protocol::ResponseCode;
use rmq_transport::client::ClientStream;
use rustls::ClientConfig;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::stats::Latencies;
use crate::wire::{self, next_reply, RequestTemplate};
use crate::BenchError;

/// When each request is due.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub start: Instant,
    /// Requests per second in total.
    pub rate: u64,
    /// Requests in all.
    pub total: u64,
}

impl Schedule {
    pub fn due(&self, j: u64) -> Instant {
        let nanos = u128::from(j) * 1_000_000_000 / u128::from(self.rate.max(1));
        self.start + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    pub fn end(&self) -> Instant {
        self.due(self.total)
    }
}

/// A named window of due times, relative to the schedule's start; replies to requests due in it
/// are recorded under its name. Requests due outside every phase (warm-up) are not recorded.
#[derive(Debug, Clone)]
pub struct Phase {
    pub name: &'static str,
    pub from: Duration,
    pub to: Duration,
}

/// What one phase saw.
#[derive(Debug, Clone, Default)]
pub struct PhaseResult {
    pub latencies: Latencies,
    pub ok: u64,
    pub errors: u64,
}

/// The outcome of an open-loop run.
#[derive(Debug, Default)]
pub struct OpenLoopResult {
    pub phases: Vec<(&'static str, PhaseResult)>,
    /// Due time to actual write, per request.
    pub pacer_lag: Latencies,
    pub sent: u64,
    pub received: u64,
    /// Requests never answered before the drain deadline (or lost with a failed connection).
    pub missing: u64,
    pub connection_errors: Vec<String>,
}

impl OpenLoopResult {
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|(n, _)| *n == name).map(|(_, p)| p)
    }

    pub fn to_json(&self, schedule: &Schedule) -> Value {
        let phases: serde_json::Map<String, Value> = self
            .phases
            .iter()
            .map(|(name, p)| {
                (
                    (*name).to_owned(),
                    json!({"ok": p.ok, "errors": p.errors, "latency_us": p.latencies.to_json()}),
                )
            })
            .collect();
        json!({
            "rate": schedule.rate,
            "sent": self.sent,
            "received": self.received,
            "missing": self.missing,
            "pacer_lag_us": self.pacer_lag.to_json(),
            "connection_errors": self.connection_errors,
            "phases": phases,
        })
    }
}

/// The connections of a run, opened before its schedule is made (so that connecting, a TLS
/// handshake above all, does not eat into the first due times).
pub enum Connections {
    Plain(Vec<std::net::TcpStream>),
    /// Every one `ClientStream::Tls`.
    Tls(Vec<ClientStream>),
}

impl Connections {
    /// `count` (at least one) connections to `addr`: plain TCP, or TLS with `tls` (handshakes
    /// in parallel, all of them bounded by `timeout`).
    pub async fn open(
        addr: SocketAddr,
        tls: Option<&Arc<ClientConfig>>,
        count: usize,
        timeout: Duration,
    ) -> Result<Self, BenchError> {
        let count = count.max(1);
        let Some(config) = tls else {
            let mut streams = Vec::with_capacity(count);
            for _ in 0..count {
                let stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
                stream.set_nodelay(true)?;
                streams.push(stream);
            }
            return Ok(Self::Plain(streams));
        };
        let mut handshakes = JoinSet::new();
        for _ in 0..count {
            let config = Arc::clone(config);
            handshakes
                .spawn(async move { wire::connect_stream(addr, Some(&config), timeout).await });
        }
        let mut streams = Vec::with_capacity(count);
        while let Some(joined) = handshakes.join_next().await {
            streams.push(joined.map_err(|e| BenchError::Protocol(format!("connect task: {e}")))??);
        }
        Ok(Self::Tls(streams))
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Plain(streams) => streams.len(),
            Self::Tls(streams) => streams.len(),
        }
    }
}

/// Runs `schedule` over `connections`, request `j` on connection `j % connections` for topic
/// template `j % templates.len()`. Replies are awaited until `drain` after the last due time.
pub async fn run(
    connections: Connections,
    templates: Arc<Vec<RequestTemplate>>,
    schedule: Schedule,
    phases: Vec<Phase>,
    drain: Duration,
) -> Result<OpenLoopResult, BenchError> {
    let count = connections.len();
    if templates.is_empty() || count == 0 {
        return Err(BenchError::Usage(
            "no request templates or no connections".into(),
        ));
    }
    if schedule.total >= i32::MAX as u64 {
        return Err(BenchError::Usage(
            "too many requests for one run (opaques are i32)".into(),
        ));
    }
    let mut readers = JoinSet::new();
    let mut tls_writers = JoinSet::new();
    let deadline = schedule.end() + drain;
    let phases = Arc::new(phases);
    let expected = |conn: usize| {
        schedule.total / count as u64 + u64::from((conn as u64) < schedule.total % count as u64)
    };
    let pacer = match connections {
        Connections::Plain(streams) => {
            let mut writers = Vec::with_capacity(count);
            for (conn, stream) in streams.into_iter().enumerate() {
                let writer = stream.try_clone()?;
                // The flag is shared by both descriptors: the pacer never blocks on a full socket.
                stream.set_nonblocking(true)?;
                writers.push(writer);
                let stream = tokio::net::TcpStream::from_std(stream)?;
                let phases = Arc::clone(&phases);
                readers.spawn(read_replies(
                    stream,
                    schedule,
                    phases,
                    expected(conn),
                    deadline,
                ));
            }
            spawn_pacer(writers, &templates, schedule, deadline)?
        }
        Connections::Tls(streams) => {
            let mut writers = Vec::with_capacity(count);
            for (conn, stream) in streams.into_iter().enumerate() {
                let ClientStream::Tls(stream) = stream else {
                    return Err(BenchError::Protocol("asked for TLS, got plain TCP".into()));
                };
                let (reader, writer) = tokio::io::split(stream);
                let (handoff, frames) = mpsc::unbounded_channel();
                writers.push(Handoff(handoff));
                tls_writers.spawn(write_handed_over(writer, frames, deadline));
                let phases = Arc::clone(&phases);
                readers.spawn(read_replies(
                    reader,
                    schedule,
                    phases,
                    expected(conn),
                    deadline,
                ));
            }
            spawn_pacer(writers, &templates, schedule, deadline)?
        }
    };

    let mut result = OpenLoopResult {
        phases: phases
            .iter()
            .map(|p| (p.name, PhaseResult::default()))
            .collect(),
        ..OpenLoopResult::default()
    };
    while let Some(joined) = readers.join_next().await {
        let conn = joined.map_err(|e| BenchError::Protocol(format!("reader task: {e}")))?;
        for ((_, total), part) in result.phases.iter_mut().zip(&conn.phases) {
            total.latencies.merge(&part.latencies);
            total.ok += part.ok;
            total.errors += part.errors;
        }
        result.received += conn.received;
        result.missing += conn.expected.saturating_sub(conn.received);
        if let Some(err) = conn.error {
            result.connection_errors.push(err);
        }
    }
    let paced = tokio::task::spawn_blocking(move || pacer.join())
        .await
        .map_err(|e| BenchError::Protocol(format!("pacer: {e}")))?
        .map_err(|_| BenchError::Protocol("the pacer thread panicked".into()))?;
    result.pacer_lag = paced.lag;
    result.sent = paced.sent;
    if let Some(err) = paced.error {
        result.connection_errors.push(err);
    }
    // The pacer has dropped its hand-over channels: each TLS writer ends after what it holds.
    while let Some(joined) = tls_writers.join_next().await {
        let written = joined.map_err(|e| BenchError::Protocol(format!("writer task: {e}")))?;
        if let Err(err) = written {
            result.connection_errors.push(err);
        }
    }
    Ok(result)
}

fn spawn_pacer<W: Write + Send + 'static>(
    writers: Vec<W>,
    templates: &Arc<Vec<RequestTemplate>>,
    schedule: Schedule,
    deadline: Instant,
) -> std::io::Result<std::thread::JoinHandle<Paced>> {
    let templates = Arc::clone(templates);
    std::thread::Builder::new()
        .name("pacer".into())
        .spawn(move || pace(writers, &templates, schedule, deadline))
}

/// The pacer's writer of a TLS connection: hands the bytes to the task that owns the
/// connection's writing half; never blocks, fails once that task has stopped.
struct Handoff(mpsc::UnboundedSender<Bytes>);

impl Write for Handoff {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.send(Bytes::copy_from_slice(buf)).map_err(|_| {
            std::io::Error::new(ErrorKind::BrokenPipe, "the connection's writer has stopped")
        })?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes what the pacer hands over, everything waiting at once, until the pacer is done (its
/// channel closed) or `deadline`.
async fn write_handed_over<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut frames: mpsc::UnboundedReceiver<Bytes>,
    deadline: Instant,
) -> Result<(), String> {
    let mut batch = BytesMut::with_capacity(16 * 1024);
    // Bounded: ends when the pacer drops its sender (it stops by `deadline`) or at `deadline`.
    loop {
        let next = tokio::time::timeout_at(deadline.into(), frames.recv()).await;
        let Ok(Some(first)) = next else {
            return Ok(());
        };
        batch.extend_from_slice(&first);
        while let Ok(more) = frames.try_recv() {
            batch.extend_from_slice(&more);
        }
        let write = async {
            writer.write_all(&batch).await?;
            writer.flush().await
        };
        match tokio::time::timeout_at(deadline.into(), write).await {
            Ok(Ok(())) => batch.clear(),
            Ok(Err(e)) => return Err(format!("TLS write: {e}")),
            Err(_) => return Ok(()),
        }
    }
}

struct Paced {
    lag: Latencies,
    sent: u64,
    error: Option<String>,
}

/// Writes every request when due; sleeps in between. Bounded by the schedule and `deadline`.
/// `writers` are non-blocking sockets (plain TCP) or [`Handoff`]s (TLS).
fn pace<W: Write>(
    mut writers: Vec<W>,
    templates: &[RequestTemplate],
    schedule: Schedule,
    deadline: Instant,
) -> Paced {
    let n = writers.len();
    let mut pending: Vec<BytesMut> = (0..n).map(|_| BytesMut::with_capacity(16 * 1024)).collect();
    let mut dead = vec![false; n];
    let mut paced = Paced {
        lag: Latencies::new(),
        sent: 0,
        error: None,
    };
    let mut j = 0u64;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        while j < schedule.total {
            let due = schedule.due(j);
            if due > now {
                break;
            }
            let conn = (j % n as u64) as usize;
            templates[(j % templates.len() as u64) as usize].encode(j as i32, &mut pending[conn]);
            paced.lag.record(now - due);
            paced.sent += 1;
            j += 1;
        }
        for (conn, writer) in writers.iter_mut().enumerate() {
            if dead[conn] {
                pending[conn].clear();
                continue;
            }
            // Bounded: each write either makes progress or stops the loop.
            while !pending[conn].is_empty() {
                match writer.write(&pending[conn]) {
                    Ok(0) => {
                        dead[conn] = true;
                        break;
                    }
                    Ok(written) => pending[conn].advance(written),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => {
                        paced
                            .error
                            .get_or_insert_with(|| format!("write on connection {conn}: {e}"));
                        dead[conn] = true;
                        break;
                    }
                }
            }
        }
        let backlog = pending.iter().any(|p| !p.is_empty());
        if j >= schedule.total && !backlog {
            break;
        }
        let next = if j < schedule.total {
            schedule.due(j)
        } else {
            Instant::now() + Duration::from_millis(1)
        };
        // With a backlog (a full socket), retry within a millisecond.
        let next = if backlog {
            next.min(Instant::now() + Duration::from_millis(1))
        } else {
            next
        };
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
    }
    paced
}

struct ConnResult {
    phases: Vec<PhaseResult>,
    expected: u64,
    received: u64,
    error: Option<String>,
}

async fn read_replies<R: AsyncRead + Unpin>(
    mut stream: R,
    schedule: Schedule,
    phases: Arc<Vec<Phase>>,
    expected: u64,
    deadline: Instant,
) -> ConnResult {
    let mut result = ConnResult {
        phases: phases.iter().map(|_| PhaseResult::default()).collect(),
        expected,
        received: 0,
        error: None,
    };
    let mut buf = BytesMut::with_capacity(64 * 1024);
    // Bounded by `expected` replies and by the deadline.
    while result.received < expected {
        let read = tokio::time::timeout_at(deadline.into(), stream.read_buf(&mut buf)).await;
        match read {
            Err(_) => break,
            Ok(Ok(0)) => {
                result.error = Some("the server closed a query connection".into());
                break;
            }
            Ok(Err(e)) => {
                result.error = Some(format!("read: {e}"));
                break;
            }
            Ok(Ok(_)) => {}
        }
        let now = Instant::now();
        loop {
            let reply = match next_reply(&mut buf) {
                Ok(Some(reply)) => reply,
                Ok(None) => break,
                Err(e) => {
                    result.error = Some(e.to_string());
                    return result;
                }
            };
            result.received += 1;
            let Ok(j) = u64::try_from(reply.opaque) else {
                continue;
            };
            let due = schedule.due(j);
            let offset = due - schedule.start;
            if let Some(i) = phases
                .iter()
                .position(|p| offset >= p.from && offset < p.to)
            {
                let phase = &mut result.phases[i];
                phase.latencies.record(now.saturating_duration_since(due));
                if reply.code == ResponseCode::SUCCESS.0 && reply.body_len > 0 {
                    phase.ok += 1;
                } else {
                    phase.errors += 1;
                }
            }
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_are_exact() {
        let start = Instant::now();
        let s = Schedule {
            start,
            rate: 3,
            total: 7,
        };
        assert_eq!(s.due(0), start);
        assert_eq!(s.due(3), start + Duration::from_secs(1));
        assert_eq!(s.due(1) - start, Duration::from_nanos(333_333_333));
        assert_eq!(s.end(), s.due(7));
    }
}
