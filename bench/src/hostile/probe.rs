//! One probe connection: a request per slot on schedule (open loop) from a writer task, the
//! replies read and timed as they come.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmq_protocol::ResponseCode;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::wire::{next_reply, RequestTemplate};

/// What one probe connection saw: per slot (request `k`, due at `offset + k * interval`), how
/// late its write was and its latency from the write (`None`: no reply).
pub(super) struct ProbeRecord {
    pub(super) offset: Duration,
    pub(super) write_lag_us: Vec<u32>,
    pub(super) latency_us: Vec<Option<u32>>,
    /// The response code of each answered slot (SUCCESS otherwise).
    pub(super) codes: Vec<i32>,
    pub(super) failure: Option<String>,
}

/// Shared between a probe's writer and its reader.
struct ProbeShared {
    sent: AtomicU64,
    writer_done: AtomicBool,
    /// When each slot was written, in µs from the run's start.
    written_us: Vec<AtomicU64>,
}

/// When a probe's requests are due: slot `k` at `start + offset + k * interval`, `slots` of them.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    start: Instant,
    offset: Duration,
    interval: Duration,
    slots: usize,
}

/// What the reader found: per slot, the latency from the write and the response code.
struct Replies {
    latency: Vec<Option<u32>>,
    codes: Vec<i32>,
    failure: Option<String>,
}

pub(super) fn micros_u32(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// One probe: writes a request per slot until `stop` (at most `slots`), reads the replies until
/// every written one is answered or `stop` + `timeout` has passed.
#[allow(clippy::too_many_arguments)]
pub(super) async fn probe<S: AsyncRead + AsyncWrite + Send + 'static>(
    stream: S,
    templates: Arc<Vec<RequestTemplate>>,
    start: Instant,
    offset: Duration,
    interval: Duration,
    slots: usize,
    stop: Arc<AtomicBool>,
    timeout: Duration,
) -> ProbeRecord {
    let (mut rd, wr) = tokio::io::split(stream);
    let schedule = Schedule {
        start,
        offset,
        interval,
        slots,
    };
    let shared = Arc::new(ProbeShared {
        sent: AtomicU64::new(0),
        writer_done: AtomicBool::new(false),
        written_us: (0..slots).map(|_| AtomicU64::new(0)).collect(),
    });
    let writer = tokio::spawn(write_slots(
        wr,
        templates,
        schedule,
        Arc::clone(&stop),
        Arc::clone(&shared),
    ));
    let replies = read_replies(&mut rd, schedule, &shared, &stop, timeout).await;
    let (write_lag_us, writer_failure) = match writer.await {
        Ok((lag, failure, _wr)) => (lag, failure),
        Err(e) => (Vec::new(), Some(format!("writer task: {e}"))),
    };
    ProbeRecord {
        offset,
        write_lag_us,
        latency_us: replies.latency,
        codes: replies.codes,
        failure: replies.failure.or(writer_failure),
    }
}

/// The writer: one request per slot when it is due, until `stop`; returns each write's lag
/// behind its due time, why it stopped early, and the write half.
async fn write_slots<W: AsyncWrite + Unpin>(
    mut wr: W,
    templates: Arc<Vec<RequestTemplate>>,
    schedule: Schedule,
    writer_stop: Arc<AtomicBool>,
    writer_shared: Arc<ProbeShared>,
) -> (Vec<u32>, Option<String>, W) {
    let Schedule {
        start,
        offset,
        interval,
        slots,
    } = schedule;
    let mut lag = Vec::with_capacity(slots);
    let mut buf = BytesMut::with_capacity(256);
    let mut failure = None;
    for k in 0..slots {
        if writer_stop.load(Ordering::Relaxed) {
            break;
        }
        let due = start + offset + interval * u32::try_from(k).unwrap_or(u32::MAX);
        tokio::time::sleep_until(due.into()).await;
        let opaque = i32::try_from(k).unwrap_or(i32::MAX);
        buf.clear();
        templates[k % templates.len()].encode(opaque, &mut buf);
        let now = Instant::now();
        writer_shared.written_us[k].store(
            u64::try_from((now - start).as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        lag.push(micros_u32(now.saturating_duration_since(due)));
        let written = async {
            wr.write_all(&buf).await?;
            wr.flush().await
        };
        if let Err(e) = written.await {
            failure = Some(format!("write: {e}"));
            break;
        }
        writer_shared.sent.store(k as u64 + 1, Ordering::Release);
    }
    writer_shared.writer_done.store(true, Ordering::Release);
    (lag, failure, wr)
}

/// The reader: the replies as they come, each timed from its slot's write.
async fn read_replies<R: AsyncRead + Unpin>(
    rd: &mut R,
    schedule: Schedule,
    shared: &ProbeShared,
    stop: &AtomicBool,
    timeout: Duration,
) -> Replies {
    let Schedule { start, slots, .. } = schedule;
    let mut latency = vec![None; slots];
    let mut codes = vec![ResponseCode::SUCCESS.0; slots];
    let mut received = 0u64;
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut failure = None;
    let mut stopped_at: Option<Instant> = None;
    // Bounded: reads end when every written request is answered after the writer is done, or
    // `timeout` after `stop`, or at the first error.
    loop {
        if shared.writer_done.load(Ordering::Acquire)
            && received >= shared.sent.load(Ordering::Acquire)
        {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            let at = *stopped_at.get_or_insert_with(Instant::now);
            if at.elapsed() > timeout {
                break;
            }
        }
        let read = tokio::time::timeout(Duration::from_millis(100), rd.read_buf(&mut rbuf)).await;
        let now = Instant::now();
        match read {
            Err(_) => continue,
            Ok(Ok(0)) => {
                failure = Some("the server closed a probe connection".to_owned());
                break;
            }
            Ok(Err(e)) => {
                failure = Some(format!("read: {e}"));
                break;
            }
            Ok(Ok(_)) => {}
        }
        loop {
            match next_reply(&mut rbuf) {
                Ok(Some(reply)) => {
                    let Some(k) = usize::try_from(reply.opaque).ok().filter(|k| *k < slots) else {
                        continue;
                    };
                    let written = shared.written_us[k].load(Ordering::Relaxed);
                    let written = start + Duration::from_micros(written);
                    latency[k] = Some(micros_u32(now.saturating_duration_since(written)));
                    codes[k] = reply.code;
                    received += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    failure = Some(e.to_string());
                    break;
                }
            }
        }
        if failure.is_some() {
            break;
        }
    }
    Replies {
        latency,
        codes,
        failure,
    }
}
