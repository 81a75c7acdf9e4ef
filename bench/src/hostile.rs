//! `hostile`: while hostile connections send the most expensive frames the server's limits allow,
//! is every other connection still answered within 100 ms?
//!
//! 1. Registers one broker with two topics (held, re-registering) and puts one KV entry.
//! 2. Opens `--probes` probe connections. The server assigns connections to its worker threads
//!    round-robin, so consecutive probes land on every worker (32 cover up to 32 workers). Each
//!    probe sends one request every `--interval` (open loop, at its own offset in the interval),
//!    rotating GET_ROUTEINFO_BY_TOPIC (answered on the connection's thread from its route
//!    cache), GET_BROKER_CLUSTER_INFO (the route registry) and GET_KV_CONFIG (the KV store), so a
//!    stall shows which thread it is on (`--probe-kinds` narrows them). Latency runs from the
//!    write of a request to its reply; how late the writes were against their schedule is
//!    reported apart (generator lag).
//! 3. A baseline phase with the probes alone, then one phase per hostile kind and per count of
//!    hostile connections (`--hostile 1,2`): each hostile connection sends its frame, waits for
//!    the answer (or the close), and sends again until the phase ends. Frames alternate between
//!    two variants where the server would otherwise recognise a repeated registration body.
//! 4. Per phase: the probes' p50/p99/max, how many replies took longer than `--slow` (100 ms)
//!    and on how many probe connections, per request kind; the hostile frames sent, answered
//!    (by response code), closed and timed out; the server's CPU and memory, and its busiest
//!    threads (CPU per thread from `/proc/<pid>/task`, sampled every 200 ms).
//!
//! Plain TCP or, with `--tls`, TLS on every connection.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use clap::{Args, ValueEnum};
use rmq_protocol::codec::{encode_frame, DEFAULT_MAX_FRAME};
use rmq_protocol::custom_headers::{CommandHeader, RegisterBrokerHeader};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rustls::ClientConfig;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;

use crate::broker::{self, Broker, CLUSTER};
use crate::cost::build::{
    compressed_raw, numbered, raw_frame, text, topic_entry, unit, zlib, HEADER_TAIL,
};
use crate::stats::{memory_json, mib, micros, CpuWindow, Latencies};
use crate::wire::{self, next_reply, route_request, RequestTemplate};
use crate::{BenchError, Common};

/// The probes' topic, on the probes' broker.
const PROBE_TOPIC: &str = "BenchHostile-00000";
const PROBE_GROUP: &str = "bench-hostile";
/// The KV entry the probes read.
const KV_NAMESPACE: &str = "bench-hostile";
const KV_KEY: &str = "probe";
/// The opaque of every hostile frame (one in flight per connection).
const HOSTILE_OPAQUE: i32 = 1;
/// Most frames one hostile connection sends in one phase.
const MAX_HOSTILE_FRAMES: u64 = 100_000;
/// Pause between phases (not measured): the server finishes what the last phase left.
const SETTLE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Kind {
    /// GET_ROUTEINFO_BY_TOPIC whose JSON header fills the frame with ext fields, read on the
    /// serde path (its first field a numeric string).
    HeaderFields,
    /// GET_ROUTEINFO_BY_TOPIC whose JSON header fills the frame with one ext value of arrays
    /// nested 100 deep (a serde_json tree, then its text).
    HeaderNested,
    /// PUT_KV_CONFIG whose header carries a frame-size value of unicode escapes.
    KvValue,
    /// REGISTER_BROKER with a frame-size JSON body (a 5.x broker with ~100k topics).
    RegisterPlain,
    /// Compressed REGISTER_BROKER inflating to the inflation limit, distinct topics.
    RegisterCompressed,
    /// Compressed REGISTER_BROKER inflating to the inflation limit: one topic whose text runs
    /// on in spaces, a few KiB on the wire.
    RegisterCompressedSmall,
    /// REGISTER_TOPIC_IN_NAMESRV with a frame-size TopicRouteData body.
    TopicRoute,
    /// QUERY_DATA_VERSION with a frame-size DataVersion body of unknown fields.
    DataVersion,
    /// UPDATE_NAMESRV_CONFIG with a frame-size properties body of distinct keys.
    Config,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::HeaderFields => "header-fields",
            Kind::HeaderNested => "header-nested",
            Kind::KvValue => "kv-value",
            Kind::RegisterPlain => "register-plain",
            Kind::RegisterCompressed => "register-compressed",
            Kind::RegisterCompressedSmall => "register-compressed-small",
            Kind::TopicRoute => "topic-route",
            Kind::DataVersion => "data-version",
            Kind::Config => "config",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct HostileArgs {
    /// Probe connections (consecutive connections land on every worker thread).
    #[arg(long, default_value_t = 32)]
    pub probes: usize,
    /// Each probe sends one request this often.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10ms")]
    pub interval: Duration,
    /// Hostile connections in a phase: one phase per kind and per count given.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub hostile: Vec<usize>,
    /// The hostile kinds (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kinds: Vec<Kind>,
    /// Length of each hostile phase.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub phase: Duration,
    /// The probes alone before the first hostile phase.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub baseline: Duration,
    /// The server's frame limit (server.max_frame_bytes), length field included.
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    pub max_frame: usize,
    /// The server's inflation limit (server.max_inflated_body_bytes).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_inflated: usize,
    /// What the probes ask, in turn (default: all three).
    #[arg(long, value_delimiter = ',')]
    pub probe_kinds: Vec<ProbeKind>,
    /// A probe reply later than this is slow.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "100ms")]
    pub slow: Duration,
}

/// The frames of one hostile kind: per hostile connection, the variants it alternates.
struct Hostile {
    kind: Kind,
    /// What the frames are, for the report.
    what: String,
    wire_bytes: usize,
    frames: Vec<Vec<Bytes>>,
}

/// Builds the frames of `kind` for `conns` connections.
fn hostile_frames(kind: Kind, conns: usize, args: &HostileArgs) -> Result<Hostile, BenchError> {
    // Room for the length field and header-length word; a header is at most 24 bits long.
    let frame_room = args.max_frame.saturating_sub(8);
    let header_room = frame_room.min(0x00FF_FFFF).saturating_sub(64);
    let shared = |frame: Vec<u8>| vec![Bytes::from(frame)];
    let (what, per_conn): (String, Vec<Vec<Bytes>>) = match kind {
        Kind::HeaderFields => {
            let prefix = format!(r#"{{"code":"105","extFields":{{"topic":"{PROBE_TOPIC}","#);
            let suffix = format!("}}{HEADER_TAIL}");
            let header = text(
                header_room,
                prefix.as_bytes(),
                b",",
                numbered(r#""k"#, r#"":"v""#),
                suffix.as_bytes(),
            );
            let what = format!("route query, {} ext fields", header.len() / 15);
            (what, vec![shared(raw_frame(0, &header, b""))])
        }
        Kind::HeaderNested => {
            let prefix = format!(r#"{{"code":105,"extFields":{{"topic":"{PROBE_TOPIC}","n":["#);
            let suffix = format!("]}}{HEADER_TAIL}");
            // Arrays nested 100 deep (within serde_json's limit of 128), side by side.
            let block = [vec![b'['; 100], vec![b']'; 100]].concat();
            let header = text(
                header_room,
                prefix.as_bytes(),
                b",",
                |_, out| out.extend_from_slice(&block),
                suffix.as_bytes(),
            );
            let what = format!(
                "route query, one ext value of {} arrays nested 100 deep",
                header.len() / 201
            );
            (what, vec![shared(raw_frame(0, &header, b""))])
        }
        Kind::KvValue => {
            let prefix = format!(
                r#"{{"code":100,"extFields":{{"namespace":"{KV_NAMESPACE}-big","key":"big","value":""#
            );
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            let header = text(
                header_room,
                prefix.as_bytes(),
                b"",
                unit(br"\u0041"),
                suffix.as_bytes(),
            );
            let what = format!(
                "PUT_KV_CONFIG, value of {} unicode escapes",
                header.len() / 6
            );
            (what, vec![shared(raw_frame(0, &header, b""))])
        }
        Kind::RegisterPlain => {
            let mut variants = Vec::new();
            let mut topics = 0;
            for counter in [1, 2] {
                let prefix = format!(
                    r#"{{"filterServerList":[],"topicConfigSerializeWrapper":{{"dataVersion":{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}},"mappingDataVersion":{{"counter":1,"stateVersion":0,"timestamp":1700000000000}},"topicConfigTable":{{"#
                );
                let suffix =
                    br#"},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;
                let mut body = Vec::with_capacity(frame_room);
                body.extend_from_slice(prefix.as_bytes());
                topics = crate::cost::build::repeat(
                    &mut body,
                    frame_room.saturating_sub(suffix.len() + 512),
                    b",",
                    topic_entry(|i| format!("BenchHostileP{i:07}")),
                );
                body.extend_from_slice(suffix);
                variants.push(body);
            }
            let frames = register_frames(&variants, false, conns, "plain")?;
            (format!("JSON body, {topics} topics"), frames)
        }
        Kind::RegisterCompressed | Kind::RegisterCompressedSmall => {
            let small = kind == Kind::RegisterCompressedSmall;
            let mut variants = Vec::new();
            let mut topics = 0;
            for counter in [1, 2] {
                let version = format!(
                    r#"{{"counter":{counter},"stateVersion":0,"timestamp":1700000000000}}"#
                );
                let target = args.max_inflated.saturating_sub(64);
                let raw = if small {
                    // One topic whose text runs on in spaces to the limit, and a plain one (a
                    // broker's first registration may not carry exactly one topic).
                    let mut text = b"BenchHostileSpaces 8 8 6 SINGLE_TAG".to_vec();
                    text.resize(target.saturating_sub(256), b' ');
                    let mut texts =
                        vec![text, b"BenchHostileSpaces2 8 8 6 SINGLE_TAG".to_vec()].into_iter();
                    compressed_raw(
                        target,
                        version.as_bytes(),
                        move |_, out| {
                            if let Some(text) = texts.next() {
                                out.extend_from_slice(&text);
                            }
                        },
                        &[],
                    )
                } else {
                    compressed_raw(
                        target,
                        version.as_bytes(),
                        numbered("BenchHostileC", " 8 8 6 SINGLE_TAG {}"),
                        &[],
                    )
                };
                topics = raw.len() / 40;
                variants.push(zlib(&raw)?);
            }
            let frames =
                register_frames(&variants, true, conns, if small { "small" } else { "zlib" })?;
            let what = if small {
                format!(
                    "zlib body inflating to {}, one topic text of spaces",
                    human(args.max_inflated)
                )
            } else {
                format!(
                    "zlib body inflating to {}, ~{topics} topics",
                    human(args.max_inflated)
                )
            };
            (what, frames)
        }
        Kind::TopicRoute => {
            let header =
                format!(r#"{{"code":217,"extFields":{{"topic":"BenchHostileRoute"}}{HEADER_TAIL}"#);
            let body = text(
                frame_room.saturating_sub(header.len() + 64),
                br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":["#,
                b",",
                numbered(
                    r#"{"brokerName":"b"#,
                    r#"","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}"#,
                ),
                b"]}",
            );
            let what = format!("TopicRouteData of {} queueDatas", body.len() / 80);
            (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
        }
        Kind::DataVersion => {
            let header = format!(
                r#"{{"code":322,"extFields":{{"brokerAddr":"127.0.0.1:20000","brokerName":"{PROBE_GROUP}-000","clusterName":"{CLUSTER}","brokerId":"0"}}{HEADER_TAIL}"#
            );
            let body = text(
                frame_room.saturating_sub(header.len() + 64),
                br#"{"counter":1"#,
                b"",
                numbered(r#","x"#, r#"":1"#),
                b"}",
            );
            let what = format!("DataVersion with {} unknown fields", body.len() / 14);
            (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
        }
        Kind::Config => {
            let header = format!(r#"{{"code":318{HEADER_TAIL}"#);
            let body = text(
                frame_room.saturating_sub(header.len() + 64),
                b"",
                b"",
                numbered("benchHostile", "=v\n"),
                b"",
            );
            let what = format!("properties of {} distinct keys", body.len() / 23);
            (what, vec![shared(raw_frame(0, header.as_bytes(), &body))])
        }
    };
    let wire_bytes = per_conn
        .first()
        .and_then(|v| v.first())
        .map_or(0, Bytes::len);
    let frames = if per_conn.len() >= conns {
        per_conn
    } else {
        // One set of frames shared by every connection (the Bytes are reference-counted).
        let first = per_conn.into_iter().next().unwrap_or_default();
        vec![first; conns]
    };
    Ok(Hostile {
        kind,
        what,
        wire_bytes,
        frames,
    })
}

/// REGISTER_BROKER frames of the body variants, one broker per connection.
fn register_frames(
    bodies: &[Vec<u8>],
    compressed: bool,
    conns: usize,
    tag: &str,
) -> Result<Vec<Vec<Bytes>>, BenchError> {
    (0..conns)
        .map(|conn| {
            bodies
                .iter()
                .map(|body| {
                    let header = RegisterBrokerHeader {
                        broker_name: format!("bench-hostile-{tag}-{conn}"),
                        broker_addr: format!("127.0.0.1:{}", 30_000 + conn),
                        cluster_name: CLUSTER.to_owned(),
                        ha_server_addr: None,
                        broker_id: 0,
                        heartbeat_timeout_millis: None,
                        enable_acting_master: Some(false),
                        compressed,
                        body_crc32: rmq_tools::broker::body_crc32(body),
                        zone_name: None,
                    };
                    let cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER)
                        .with_opaque(HOSTILE_OPAQUE)
                        .with_ext_fields(header.to_ext())
                        .with_body(body.clone());
                    let mut frame = BytesMut::new();
                    encode_frame(&cmd, &mut frame).map_err(|e| {
                        BenchError::Protocol(format!("cannot encode registration: {e}"))
                    })?;
                    Ok(frame.freeze())
                })
                .collect()
        })
        .collect()
}

fn human(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

// ---------------------------------------------------------------------------------------------
// Probes

/// The request kinds a probe can rotate through, in [`ProbeKind`] order.
const PROBE_KINDS: [&str; 3] = ["route", "cluster", "kv"];

/// What a probe asks, and so which server thread answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum ProbeKind {
    /// GET_ROUTEINFO_BY_TOPIC: the connection's thread, from its route cache.
    Route,
    /// GET_BROKER_CLUSTER_INFO: the route registry.
    Cluster,
    /// GET_KV_CONFIG: the KV store.
    Kv,
}

impl ProbeKind {
    fn index(self) -> usize {
        match self {
            ProbeKind::Route => 0,
            ProbeKind::Cluster => 1,
            ProbeKind::Kv => 2,
        }
    }
}

/// What one probe connection saw: per slot (request `k`, due at `offset + k * interval`), how
/// late its write was and its latency from the write (`None`: no reply).
struct ProbeRecord {
    offset: Duration,
    write_lag_us: Vec<u32>,
    latency_us: Vec<Option<u32>>,
    /// The response code of each answered slot (SUCCESS otherwise).
    codes: Vec<i32>,
    failure: Option<String>,
}

/// Shared between a probe's writer and its reader.
struct ProbeShared {
    sent: AtomicU64,
    writer_done: AtomicBool,
    /// When each slot was written, in µs from the run's start.
    written_us: Vec<AtomicU64>,
}

fn micros_u32(d: Duration) -> u32 {
    u32::try_from(d.as_micros()).unwrap_or(u32::MAX)
}

/// One probe: writes a request per slot until `stop` (at most `slots`), reads the replies until
/// every written one is answered or `stop` + `timeout` has passed.
#[allow(clippy::too_many_arguments)]
async fn probe<S: AsyncRead + AsyncWrite + Send + 'static>(
    stream: S,
    templates: Arc<Vec<RequestTemplate>>,
    start: Instant,
    offset: Duration,
    interval: Duration,
    slots: usize,
    stop: Arc<AtomicBool>,
    timeout: Duration,
) -> ProbeRecord {
    let (mut rd, mut wr) = tokio::io::split(stream);
    let shared = Arc::new(ProbeShared {
        sent: AtomicU64::new(0),
        writer_done: AtomicBool::new(false),
        written_us: (0..slots).map(|_| AtomicU64::new(0)).collect(),
    });
    let writer_shared = Arc::clone(&shared);
    let writer_stop = Arc::clone(&stop);
    let writer = tokio::spawn(async move {
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
    });

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
    let (write_lag_us, writer_failure) = match writer.await {
        Ok((lag, failure, _wr)) => (lag, failure),
        Err(e) => (Vec::new(), Some(format!("writer task: {e}"))),
    };
    ProbeRecord {
        offset,
        write_lag_us,
        latency_us: latency,
        codes,
        failure: failure.or(writer_failure),
    }
}

/// The probes' figures over a window of due times.
#[derive(Default)]
struct ProbeWindow {
    all: Latencies,
    by_kind: [Latencies; 3],
    slow: [u64; 3],
    lost: u64,
    /// Answers other than SUCCESS, by response code.
    errors: BTreeMap<i32, u64>,
    lag: Latencies,
    /// Probe connections with at least one slow reply.
    affected: usize,
}

fn window(
    records: &[ProbeRecord],
    kinds: &[usize],
    interval: Duration,
    from: Duration,
    to: Duration,
    slow: Duration,
    stopped: Duration,
) -> ProbeWindow {
    let mut w = ProbeWindow::default();
    let slow_us = micros_u32(slow);
    for record in records {
        let mut affected = false;
        for (k, latency) in record.latency_us.iter().enumerate() {
            let due = record.offset + interval * u32::try_from(k).unwrap_or(u32::MAX);
            if due < from || due >= to {
                continue;
            }
            let kind = kinds.get(k % kinds.len().max(1)).copied().unwrap_or(0);
            if let Some(lag) = record.write_lag_us.get(k) {
                w.lag.record(Duration::from_micros(u64::from(*lag)));
            } else {
                // Never written (the writer stopped or failed).
                continue;
            }
            match latency {
                Some(us) => {
                    let d = Duration::from_micros(u64::from(*us));
                    w.all.record(d);
                    w.by_kind[kind].record(d);
                    if *us > slow_us {
                        w.slow[kind] += 1;
                        affected = true;
                    }
                    let code = record
                        .codes
                        .get(k)
                        .copied()
                        .unwrap_or(ResponseCode::SUCCESS.0);
                    if code != ResponseCode::SUCCESS.0 {
                        *w.errors.entry(code).or_default() += 1;
                    }
                }
                // Written but never answered: slow (unless written after the probes stopped).
                None if due < stopped => {
                    w.lost += 1;
                    w.slow[kind] += 1;
                    affected = true;
                }
                None => {}
            }
        }
        if affected {
            w.affected += 1;
        }
    }
    w
}

impl ProbeWindow {
    fn slow_total(&self) -> u64 {
        self.slow.iter().sum()
    }

    fn to_json(&self, probes: usize) -> Value {
        let kinds: serde_json::Map<String, Value> = PROBE_KINDS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                (
                    (*name).to_owned(),
                    json!({"latency_us": self.by_kind[i].to_json(), "slow": self.slow[i]}),
                )
            })
            .collect();
        json!({
            "latency_us": self.all.to_json(),
            "slow": self.slow_total(),
            "lost": self.lost,
            "errors": self.errors.iter().map(|(c, n)| (c.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "probes_affected": self.affected,
            "probes": probes,
            "by_kind": kinds,
            "write_lag_us": self.lag.to_json(),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile connections

#[derive(Default)]
struct HostileStats {
    sent: u64,
    answered: u64,
    codes: BTreeMap<i32, u64>,
    closed: u64,
    timeouts: u64,
    connect_errors: u64,
    /// Write of the frame to its answer.
    exchange: Latencies,
}

impl HostileStats {
    fn merge(&mut self, other: HostileStats) {
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
async fn hostile_conn(
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

// ---------------------------------------------------------------------------------------------
// Server threads

/// How often the server's threads are sampled (blocking-pool threads come and go).
const THREAD_SAMPLE: Duration = Duration::from_millis(200);

/// CPU time of each thread of `pid` (tid -> (name, CPU)), from `/proc/<pid>/task`.
fn thread_times(pid: u32) -> BTreeMap<u32, (String, Duration)> {
    let mut times = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return times;
    };
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat.get(open + 1..close).unwrap_or("?").to_owned();
        let fields: Vec<&str> = stat
            .get(close + 1..)
            .unwrap_or("")
            .split_whitespace()
            .collect();
        // utime, stime: fields 14 and 15 of stat(5); nice: 19 (`fields` starts at field 3).
        let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok());
        let (Some(utime), Some(stime)) = (ticks(11), ticks(12)) else {
            continue;
        };
        let nice = fields.get(16).copied().unwrap_or("0");
        let label = if tid == pid {
            format!("{name} (main)")
        } else if nice == "0" {
            name
        } else {
            format!("{name} (nice {nice})")
        };
        // USER_HZ is 100 on every Linux ABI that matters here.
        times.insert(tid, (label, Duration::from_millis((utime + stime) * 10)));
    }
    times
}

/// Samples the server's threads until `stop`, adding each thread's CPU time to the phase that
/// `phase` names when it was used: per phase, tid -> (name, CPU).
async fn sample_threads(
    pid: u32,
    phase: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    until: Instant,
) -> BTreeMap<u64, BTreeMap<u32, (String, Duration)>> {
    let mut per_phase: BTreeMap<u64, BTreeMap<u32, (String, Duration)>> = BTreeMap::new();
    let mut last = thread_times(pid);
    // Bounded by `stop` and `until`.
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        tokio::time::sleep(THREAD_SAMPLE).await;
        let now = thread_times(pid);
        let bucket = per_phase.entry(phase.load(Ordering::Relaxed)).or_default();
        for (tid, (name, cpu)) in &now {
            let before = last.get(tid).map_or(Duration::ZERO, |(_, c)| *c);
            let used = cpu.saturating_sub(before);
            if !used.is_zero() {
                let entry = bucket.entry(*tid).or_insert((name.clone(), Duration::ZERO));
                entry.1 += used;
            }
        }
        last = now;
    }
    per_phase
}

/// The busiest threads of a phase, most CPU first: `[(tid, name, CPU seconds)]`.
fn busiest(
    threads: Option<&BTreeMap<u32, (String, Duration)>>,
    n: usize,
) -> Vec<(u32, String, f64)> {
    let mut list: Vec<(u32, String, f64)> = threads
        .into_iter()
        .flatten()
        .map(|(tid, (name, cpu))| (*tid, name.clone(), cpu.as_secs_f64()))
        .collect();
    list.sort_by(|a, b| b.2.total_cmp(&a.2));
    list.truncate(n);
    list
}

// ---------------------------------------------------------------------------------------------
// The run

struct PhaseResult {
    name: String,
    kind: Option<Kind>,
    conns: usize,
    what: String,
    wire_bytes: usize,
    from: Duration,
    to: Duration,
    hostile: HostileStats,
    cpu: Value,
    memory: Value,
}

pub async fn run(common: &Common, args: &HostileArgs) -> Result<Value, BenchError> {
    if args.probes == 0 || args.interval.is_zero() || args.phase.is_zero() {
        return Err(BenchError::Usage(
            "probes, interval and phase must be positive".into(),
        ));
    }
    let kinds: Vec<Kind> = if args.kinds.is_empty() {
        Kind::value_variants().to_vec()
    } else {
        args.kinds.clone()
    };
    let counts: Vec<usize> = args.hostile.iter().copied().filter(|c| *c > 0).collect();
    let addr = common.addr;
    let tls = common.tls_config.as_ref();

    // 1. The probes' broker, topic and KV entry.
    // Two topics: a broker's first registration may not carry exactly one.
    let topics = vec![PROBE_TOPIC.to_owned(), format!("{PROBE_TOPIC}-b")];
    let probe_broker = Arc::new(Broker::new(PROBE_GROUP, 0, &topics, 8)?);
    let (registered, _) =
        broker::register_all(addr, tls, vec![probe_broker], 1, common.timeout).await?;
    let phases_total = kinds.len() * counts.len();
    let hard_end = Instant::now()
        + args.baseline
        + (args.phase + common.timeout * 2 + SETTLE)
            * u32::try_from(phases_total + 1).unwrap_or(u32::MAX)
        + Duration::from_secs(60);
    let keepers = broker::keep_alive(
        registered,
        Duration::from_secs(30),
        hard_end,
        common.timeout,
    );
    let mut setup = wire::connect_stream(addr, tls, common.timeout).await?;
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_opaque(1)
        .with_ext("namespace", KV_NAMESPACE)
        .with_ext("key", KV_KEY)
        .with_ext("value", "1");
    let mut frame = BytesMut::new();
    encode_frame(&put, &mut frame)
        .map_err(|e| BenchError::Protocol(format!("cannot encode KV put: {e}")))?;
    let mut buf = BytesMut::new();
    let reply = wire::call(&mut setup, &frame, 1, &mut buf, common.timeout).await?;
    if reply.code != ResponseCode::SUCCESS.0 {
        return Err(BenchError::Protocol(format!(
            "KV put answered code {}",
            reply.code
        )));
    }
    drop(setup);

    let mut probe_kinds: Vec<usize> = if args.probe_kinds.is_empty() {
        vec![0, 1, 2]
    } else {
        args.probe_kinds.iter().map(|k| k.index()).collect()
    };
    probe_kinds.dedup();
    let templates = Arc::new(
        probe_kinds
            .iter()
            .map(|kind| match kind {
                0 => RequestTemplate::new(&route_request(PROBE_TOPIC)),
                1 => RequestTemplate::new(&RemotingCommand::request(
                    RequestCode::GET_BROKER_CLUSTER_INFO,
                )),
                _ => RequestTemplate::new(
                    &RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                        .with_ext("namespace", KV_NAMESPACE)
                        .with_ext("key", KV_KEY),
                ),
            })
            .collect::<Result<Vec<_>, _>>()?,
    );

    // 2. The probes, connected one after the other (round-robin over the server's workers).
    let mut streams = Vec::with_capacity(args.probes);
    for _ in 0..args.probes {
        streams.push(wire::connect_stream(addr, tls, common.timeout).await?);
    }
    let start = Instant::now() + Duration::from_millis(100);
    let stop = Arc::new(AtomicBool::new(false));
    let slots = usize::try_from(
        (hard_end.saturating_duration_since(start)).as_micros() / args.interval.as_micros().max(1),
    )
    .unwrap_or(usize::MAX)
    .saturating_add(1);
    let mut probes = JoinSet::new();
    for (i, stream) in streams.into_iter().enumerate() {
        let offset =
            args.interval * u32::try_from(i).unwrap_or(0) / u32::try_from(args.probes).unwrap_or(1);
        let (templates, stop, interval, timeout) = (
            Arc::clone(&templates),
            Arc::clone(&stop),
            args.interval,
            common.timeout,
        );
        probes.spawn(probe(
            stream, templates, start, offset, interval, slots, stop, timeout,
        ));
    }
    println!(
        "hostile: {} probe connections, one request each per {} ({} in turn); \
         slow = over {}; baseline {}, then {} phases of {}",
        args.probes,
        humantime::format_duration(args.interval),
        probe_kinds
            .iter()
            .filter_map(|k| PROBE_KINDS.get(*k))
            .copied()
            .collect::<Vec<_>>()
            .join(" / "),
        humantime::format_duration(args.slow),
        humantime::format_duration(args.baseline),
        phases_total,
        humantime::format_duration(args.phase)
    );

    // 3. Baseline, then the hostile phases; the server's threads sampled throughout (phase 0 is
    // the baseline, phase i the i-th hostile phase, odd numbers from 1001 the pauses between).
    let phase_id = Arc::new(AtomicU64::new(0));
    let sampler = common.pid.map(|pid| {
        tokio::spawn(sample_threads(
            pid,
            Arc::clone(&phase_id),
            Arc::clone(&stop),
            hard_end,
        ))
    });
    let mut phases = Vec::new();
    tokio::time::sleep_until(start.into()).await;
    let cpu = CpuWindow::start(common.pid);
    tokio::time::sleep(args.baseline).await;
    phases.push(PhaseResult {
        name: "baseline".into(),
        kind: None,
        conns: 0,
        what: "probes only".into(),
        wire_bytes: 0,
        from: Duration::ZERO,
        to: start.elapsed(),
        hostile: HostileStats::default(),
        cpu: cpu.finish(),
        memory: memory_json(common.pid),
    });
    let mut failure = None;
    'phases: for &kind in &kinds {
        for &conns in &counts {
            if Instant::now() + args.phase > hard_end {
                failure = Some("the run's time bound was reached".to_owned());
                break 'phases;
            }
            let hostile = hostile_frames(kind, conns, args)?;
            phase_id.store(1000 + phases.len() as u64, Ordering::Relaxed);
            tokio::time::sleep(SETTLE).await;
            phase_id.store(phases.len() as u64, Ordering::Relaxed);
            let from = start.elapsed();
            let until = Instant::now() + args.phase;
            let cpu = CpuWindow::start(common.pid);
            let mut tasks = JoinSet::new();
            for frames in hostile.frames.iter().take(conns) {
                tasks.spawn(hostile_conn(
                    addr,
                    common.tls_config.clone(),
                    frames.clone(),
                    until,
                    common.timeout,
                ));
            }
            let mut stats = HostileStats::default();
            while let Some(joined) = tasks.join_next().await {
                stats
                    .merge(joined.map_err(|e| BenchError::Protocol(format!("hostile task: {e}")))?);
            }
            let to = start.elapsed();
            let result = PhaseResult {
                name: format!("{} x{conns}", hostile.kind.name()),
                kind: Some(hostile.kind),
                conns,
                what: hostile.what.clone(),
                wire_bytes: hostile.wire_bytes,
                from,
                to,
                hostile: stats,
                cpu: cpu.finish(),
                memory: memory_json(common.pid),
            };
            println!(
                "  {}: {} ({} on the wire): sent {}, answered {}, closed {}, timed out {}; \
                 exchange p50 {}",
                result.name,
                result.what,
                human(result.wire_bytes),
                result.hostile.sent,
                result.hostile.answered,
                result.hostile.closed,
                result.hostile.timeouts,
                micros(result.hostile.exchange.quantile(0.5))
            );
            phases.push(result);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let stopped = start.elapsed();
    let threads = match sampler {
        Some(task) => task
            .await
            .map_err(|e| BenchError::Protocol(format!("thread sampler: {e}")))?,
        None => BTreeMap::new(),
    };
    let mut records = Vec::new();
    while let Some(joined) = probes.join_next().await {
        records.push(joined.map_err(|e| BenchError::Protocol(format!("probe task: {e}")))?);
    }
    drop(keepers);
    let probe_failures: Vec<String> = records.iter().filter_map(|r| r.failure.clone()).collect();

    // 4. The report.
    println!(
        "{:<30} {:>9} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>11} {:>8} {:>6} {:>9} {:>9} {:>9} {:>10}",
        "phase",
        "frame",
        "sent",
        "answered",
        "clos/tmo",
        "probe p50",
        "p99",
        "max",
        "slow",
        "affected",
        "errors",
        "route max",
        "clust max",
        "kv max",
        "server HWM"
    );
    let mut rows = Vec::new();
    let mut thread_lines = Vec::new();
    for (i, phase) in phases.iter().enumerate() {
        let busy = busiest(threads.get(&(i as u64)), 4);
        let w = window(
            &records,
            &probe_kinds,
            args.interval,
            phase.from,
            phase.to,
            args.slow,
            stopped,
        );
        let hwm = phase.memory["hwm_kib"].as_u64().map_or("-".into(), mib);
        let kind_max = |i: usize| {
            if w.by_kind[i].count() == 0 {
                "-".to_owned()
            } else {
                micros(w.by_kind[i].max())
            }
        };
        println!(
            "{:<30} {:>9} {:>6} {:>8} {:>8} {:>9} {:>9} {:>9} {:>11} {:>8} {:>6} {:>9} {:>9} {:>9} {:>10}",
            phase.name,
            if phase.wire_bytes > 0 {
                human(phase.wire_bytes)
            } else {
                "-".into()
            },
            phase.hostile.sent,
            phase.hostile.answered,
            phase.hostile.closed + phase.hostile.timeouts,
            micros(w.all.quantile(0.5)),
            micros(w.all.quantile(0.99)),
            micros(w.all.max()),
            format!("{}/{}", w.slow_total(), w.all.count() + w.lost),
            format!("{}/{}", w.affected, args.probes),
            w.errors.values().sum::<u64>(),
            kind_max(0),
            kind_max(1),
            kind_max(2),
            hwm
        );
        rows.push(json!({
            "phase": phase.name,
            "kind": phase.kind.map(Kind::name),
            "hostile_connections": phase.conns,
            "frame": phase.what,
            "frame_wire_bytes": phase.wire_bytes,
            "window_s": [phase.from.as_secs_f64(), phase.to.as_secs_f64()],
            "hostile": {
                "sent": phase.hostile.sent,
                "answered": phase.hostile.answered,
                "codes": phase.hostile.codes.iter().map(|(c, n)| (c.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "closed": phase.hostile.closed,
                "timeouts": phase.hostile.timeouts,
                "connect_errors": phase.hostile.connect_errors,
                "exchange_us": phase.hostile.exchange.to_json(),
            },
            "probes": w.to_json(args.probes),
            "cpu": phase.cpu,
            "server": phase.memory,
            "server_threads_cpu_s": busy.iter().map(|(tid, name, cpu)| json!({
                "tid": tid, "name": name, "cpu_s": (cpu * 100.0).round() / 100.0,
            })).collect::<Vec<_>>(),
        }));
        thread_lines.push(format!(
            "{:<30} {}",
            phase.name,
            busy.iter()
                .map(|(tid, name, cpu)| format!("{tid} {name} {cpu:.2} s"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if common.pid.is_some() {
        println!("server threads, CPU in each phase (busiest first; tid name CPU):");
        for line in &thread_lines {
            println!("{line}");
        }
    }
    let over: Vec<String> = rows
        .iter()
        .filter(|r| r["probes"]["slow"].as_u64().unwrap_or(0) > 0)
        .map(|r| r["phase"].as_str().unwrap_or("?").to_owned())
        .collect();
    println!(
        "phases with probe replies over {}: {}",
        humantime::format_duration(args.slow),
        if over.is_empty() {
            "none".to_owned()
        } else {
            over.join(", ")
        }
    );
    if !probe_failures.is_empty() {
        println!("probe failures: {}", probe_failures.join("; "));
    }
    if let Some(why) = &failure {
        println!("stopped early: {why}");
    }
    Ok(json!({
        "workload": "hostile",
        "probes": args.probes,
        "interval_ms": args.interval.as_secs_f64() * 1e3,
        "slow_ms": args.slow.as_secs_f64() * 1e3,
        "max_frame": args.max_frame,
        "max_inflated": args.max_inflated,
        "phases": rows,
        "phases_with_slow_probes": over,
        "probe_failures": probe_failures,
        "stopped_early": failure,
    }))
}
