//! The big reads: GET_BROKER_CLUSTER_INFO, GET_ALL_TOPIC_LIST_FROM_NAMESERVER and
//! GET_TOPICS_BY_CLUSTER, each timed on a fresh connection, with the server's peak RSS while it
//! answers. Answers past the client's 16 MiB frame limit are still read (up to --read-limit), so
//! what each server does there is recorded: the size it sends, or the code and remark it answers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_protocol::codec::{decode_frame, encode_frame};
use rmq_protocol::{RemotingCommand, RequestCode};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::broker::CLUSTER;
use crate::scale::fleet::FRAME_LIMIT;
use crate::stats::Memory;
use crate::wire;
use crate::BenchError;

/// The three reads, by the name the JSON gives them.
pub fn requests() -> [(&'static str, RemotingCommand); 3] {
    [
        (
            "cluster_info",
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO),
        ),
        (
            "topic_list",
            RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        ),
        (
            "topics_by_cluster",
            RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER)
                .with_ext("cluster", CLUSTER),
        ),
    ]
}

/// Resets the process's VmHWM to its current RSS (`clear_refs` 5, Linux 4.0+); false if not
/// allowed (then the delta is against the old peak and only an upper bound is lost).
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), b"5").is_ok()
}

/// One answer as read off the wire.
struct Answer {
    frame_bytes: usize,
    code: i32,
    remark: Option<String>,
    body_bytes: usize,
}

/// Sends `frame` on a fresh connection and reads the whole answer, however large (up to
/// `limit`); a server closing the connection instead is an error.
async fn exchange(
    addr: SocketAddr,
    frame: &[u8],
    limit: usize,
    timeout: Duration,
) -> Result<Answer, BenchError> {
    let work = async {
        let mut stream = wire::connect(addr, timeout).await?;
        stream.write_all(frame).await?;
        let len = stream.read_i32().await.map_err(|e| {
            BenchError::Protocol(format!(
                "no answer (the server closed the connection?): {e}"
            ))
        })?;
        let len = usize::try_from(len)
            .ok()
            .filter(|l| *l >= 4 && *l <= limit)
            .ok_or_else(|| BenchError::Protocol(format!("answer frame length {len}")))?;
        let mut rest = BytesMut::zeroed(len);
        stream.read_exact(&mut rest).await?;
        let cmd = decode_frame(Bytes::from(rest))
            .map_err(|e| BenchError::Protocol(format!("undecodable answer: {e}")))?;
        Ok::<_, BenchError>(Answer {
            frame_bytes: len + 4,
            code: cmd.code,
            remark: cmd.remark.clone(),
            body_bytes: cmd.body_bytes().len(),
        })
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| BenchError::Timeout("big read".into()))?
}

/// `repeat` reads of `cmd`: latencies (ms), the answer, the server's peak RSS above its RSS
/// before each read.
pub async fn measure(
    addr: SocketAddr,
    pid: Option<u32>,
    cmd: RemotingCommand,
    repeat: usize,
    limit: usize,
    timeout: Duration,
) -> Value {
    let mut frame = BytesMut::new();
    if let Err(e) = encode_frame(&cmd.with_opaque(1), &mut frame) {
        return json!({"error": format!("cannot encode: {e}")});
    }
    let mut ms = Vec::new();
    let mut peak_kib: Option<u64> = None;
    let mut last = None;
    let mut error = None;
    for _ in 0..repeat.max(1) {
        let before = pid.and_then(|p| reset_peak(p).then(|| Memory::of(p)).flatten());
        let sent = Instant::now();
        match exchange(addr, &frame, limit, timeout).await {
            Ok(answer) => {
                ms.push(sent.elapsed().as_secs_f64() * 1000.0);
                last = Some(answer);
            }
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
        if let (Some(b), Some(after)) = (before, pid.and_then(Memory::of)) {
            let delta = after.hwm_kib.saturating_sub(b.rss_kib);
            peak_kib = Some(peak_kib.map_or(delta, |p| p.max(delta)));
        }
    }
    ms.sort_by(f64::total_cmp);
    let round = |v: f64| (v * 100.0).round() / 100.0;
    json!({
        "ms_min": ms.first().copied().map(round),
        "ms_median": ms.get(ms.len() / 2).copied().map(round),
        "ms_max": ms.last().copied().map(round),
        "code": last.as_ref().map(|a| a.code),
        "remark": last.as_ref().and_then(|a| a.remark.clone()),
        "frame_bytes": last.as_ref().map(|a| a.frame_bytes),
        "body_bytes": last.as_ref().map(|a| a.body_bytes),
        "over_client_limit": last.as_ref().map(|a| a.frame_bytes > FRAME_LIMIT),
        "peak_rss_delta_kib": peak_kib,
        "error": error,
    })
}
