//! `conns`: many concurrent client connections held open, idle and then polling routes.
//!
//! 1. Registers `--brokers` broker groups x `--topics` topics (as `routes` does, held open and
//!    re-registering for the whole run) unless `--preregistered`, and probes the first route.
//! 2. Reads the server's VmRSS/VmHWM, then opens `--connections` TCP connections, at most
//!    `--concurrency` in flight, each connect bounded by `--connect-timeout`, nothing started
//!    after `--open-timeout`. Each connection sends one route query as soon as it is open and
//!    waits for the reply (bounded by `--timeout`), as a client does: it connects to send a
//!    request. A connect or first request that fails (the generator's or the server's fd limit, a
//!    refused or timed-out connect, a closed connection, an error code) is counted by its error,
//!    never fatal. With `--silent` nothing is sent: then the server holds connections that never
//!    spoke (ours waits for the first byte to tell TLS from plaintext, as long as
//!    `server.idle_timeout`, 120 s, like Java's idle close).
//! 3. After `--settle` with every connection idle: the server's RSS again (bytes per idle
//!    connection = RSS growth / connections open), and how many the server closed meanwhile.
//! 4. Polling: every connection sends one GET_ROUTEINFO_BY_TOPIC (Java 5.x client request) per
//!    `--poll-period` at its own offset (connection `i` of `n` at `i / n` of the period). A
//!    RocketMQ client polls every 30 s ([`CLIENT_POLL_PERIOD`]), so the period compresses that by
//!    30 s / period (5 s: 6x, 10,000 connections offer 2,000 req/s instead of 333). Polls due in
//!    the first `--warmup` are recorded apart (a JVM compiles its route path meanwhile); the
//!    measured window is the `--duration` after it. Latency from the write to the reply (HDR,
//!    µs), plus how late each poll was written against its due time; the server's RSS sampled
//!    throughout, its CPU over the measured window.
//! 5. The connections close; the server's RSS a moment later.
//!
//! RSS is the process's resident memory: kernel socket buffers are not in it (for either server).
//! One task per connection, holding no buffer while idle (a poll allocates ~1 KiB for its reply
//! and frees it), so the generator itself costs little per connection; its own RSS growth is
//! reported too. Plain TCP only.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::Args;
use rmq_protocol::ResponseCode;
use serde_json::{json, Value};
use tokio::io::ReadBuf;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::broker;
use crate::routes::{route_brokers, TOPIC_PREFIX};
use crate::stats::{mib, CpuWindow, Latencies, Memory};
use crate::wire::{self, route_request, RequestTemplate};
use crate::{BenchError, Common};

/// How often a RocketMQ client asks the NameServer for the route of each of its topics (Java:
/// `ClientConfig.pollNameServerInterval`, 30 s); `--poll-period` compresses it.
pub const CLIENT_POLL_PERIOD: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Args)]
pub struct ConnsArgs {
    /// Client connections to open and hold.
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
    /// Connects in flight at once while opening (at most a listen backlog of 128: beyond it a
    /// busy server drops SYNs and the connect waits for a retransmit, 1 s at least).
    #[arg(long, default_value_t = 128)]
    pub concurrency: usize,
    /// Bound of each connect (10 s: a SYN dropped three times is answered after 7 s); the first
    /// request is bounded by --timeout.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub connect_timeout: Duration,
    /// No connect is started after this long; the connections open by then are used (keep it
    /// well below the server's idle timeout, 120 s for both servers).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub open_timeout: Duration,
    /// Idle time after the last connect before the server's RSS is read.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3s")]
    pub settle: Duration,
    /// Every connection sends one route query per period, at its own offset in it: the 30 s of
    /// a real client compressed (5 s: 6x).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub poll_period: Duration,
    /// Polling before the measured window; its latencies are reported apart (a JVM needs a few
    /// seconds to keep up with 10,000 fresh connections).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub warmup: Duration,
    /// The measured polling window (at least one period).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s")]
    pub duration: Duration,
    /// After closing every connection, wait this long before reading the server's RSS.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub close_settle: Duration,
    /// Broker groups (one master each) registered first, as `routes --brokers`.
    #[arg(long, default_value_t = 2)]
    pub brokers: usize,
    /// Topics on every broker; connection `i` polls topic `i % topics`.
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// The brokers re-register this often, as real ones do.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub register_period: Duration,
    /// Register nothing: the topics are there already (a running `rmq-bench brokers` with the
    /// same --topics).
    #[arg(long)]
    pub preregistered: bool,
    /// Send nothing on a new connection before the polling starts (the server's cost of a
    /// connection that never spoke).
    #[arg(long)]
    pub silent: bool,
}

/// Raises this process's RLIMIT_NOFILE soft limit to its hard limit; returns (soft, hard) as
/// they are afterwards, `None` if they cannot be read.
fn raise_fd_limit() -> Option<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct passed, which lives on this stack frame.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    if limit.rlim_cur < limit.rlim_max {
        // An infinite hard limit is not a valid soft limit for files: fs.nr_open is the ceiling.
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
            .unwrap_or(1 << 20);
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max.min(nr_open),
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit only reads the struct passed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    // rlim_t is u64 on Linux, the only system with the /proc this generator reads.
    Some((limit.rlim_cur, limit.rlim_max))
}

/// The soft and hard "Max open files" of a process, from `/proc/<pid>/limits`.
fn fd_limit_of(pid: u32) -> Option<(String, String)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let rest = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    let mut fields = rest.split_whitespace();
    Some((fields.next()?.to_owned(), fields.next()?.to_owned()))
}

fn memory_value(mem: Option<Memory>) -> Value {
    json!({
        "rss_kib": mem.map(|m| m.rss_kib),
        "hwm_kib": mem.map(|m| m.hwm_kib),
    })
}

/// Bytes per connection of an RSS growth in KiB (negative when RSS fell).
fn per_connection(before: Option<u64>, after: Option<u64>, connections: usize) -> Option<f64> {
    let (before, after) = (before?, after?);
    (connections > 0).then(|| {
        let bytes = (after as f64 - before as f64) * 1024.0 / connections as f64;
        bytes.round()
    })
}

fn bytes_text(bytes: Option<f64>) -> String {
    bytes.map_or("?".into(), |b| format!("{b:.0} B = {:.2} KiB", b / 1024.0))
}

fn cores_text(cpu: &Value, key: &str) -> String {
    cpu[key].as_f64().map_or("?".into(), |c| format!("{c:.2}"))
}

fn rss(mem: Option<Memory>) -> String {
    mem.map_or_else(|| "?".into(), |m| mib(m.rss_kib))
}

fn count(map: &mut BTreeMap<String, u64>, key: String) {
    *map.entry(key).or_default() += 1;
}

/// What opening the connections gave.
struct Opened {
    streams: Vec<TcpStream>,
    attempted: usize,
    failures: BTreeMap<String, u64>,
    connect: Latencies,
    /// Write to reply of the first request of each connection.
    first_request: Latencies,
    took: Duration,
}

/// A connection as opening it went: connected after `connect`, its first request answered
/// after `first` (none with `--silent`).
struct Fresh {
    stream: TcpStream,
    connect: Duration,
    first: Option<Duration>,
}

/// Connects, then (with a template) sends one request and waits for its successful reply. The
/// error says which step failed.
async fn open_one(
    addr: SocketAddr,
    connect_timeout: Duration,
    first: Option<(RequestTemplate, Duration)>,
) -> Result<Fresh, String> {
    let t0 = Instant::now();
    let mut stream = wire::connect(addr, connect_timeout)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let connect = t0.elapsed();
    let Some((template, timeout)) = first else {
        return Ok(Fresh {
            stream,
            connect,
            first: None,
        });
    };
    let mut frame = BytesMut::with_capacity(template.frame_len(1));
    template.encode(1, &mut frame);
    let mut buf = BytesMut::with_capacity(1024);
    let sent = Instant::now();
    let reply = wire::call(&mut stream, &frame, 1, &mut buf, timeout)
        .await
        .map_err(|e| format!("first request: {e}"))?;
    if reply.code != ResponseCode::SUCCESS.0 || reply.body_len == 0 {
        return Err(format!(
            "first request: code {} with {} body bytes",
            reply.code, reply.body_len
        ));
    }
    Ok(Fresh {
        stream,
        connect,
        first: Some(sent.elapsed()),
    })
}

/// Opens up to `args.connections` connections, at most `args.concurrency` in flight, each
/// sending its first request (topic `i % topics`) unless `--silent`. Bounded: at most
/// `connections` are started, none after `open_timeout`, each connect bounded by
/// `connect_timeout` and each first request by `request_timeout`.
async fn open_all(
    addr: SocketAddr,
    args: &ConnsArgs,
    templates: &[RequestTemplate],
    request_timeout: Duration,
) -> Opened {
    let started = Instant::now();
    let deadline = started + args.open_timeout;
    let (target, concurrency) = (args.connections, args.concurrency.max(1));
    let mut connecting = JoinSet::new();
    let mut opened = Opened {
        streams: Vec::with_capacity(target),
        attempted: 0,
        failures: BTreeMap::new(),
        connect: Latencies::new(),
        first_request: Latencies::new(),
        took: Duration::ZERO,
    };
    let step = (target / 10).max(1);
    loop {
        while opened.attempted < target
            && connecting.len() < concurrency
            && Instant::now() < deadline
        {
            let first = match (args.silent, templates.len()) {
                (true, _) | (_, 0) => None,
                (false, n) => templates
                    .get(opened.attempted % n)
                    .map(|t| (t.clone(), request_timeout)),
            };
            connecting.spawn(open_one(addr, args.connect_timeout, first));
            opened.attempted += 1;
        }
        let Some(joined) = connecting.join_next().await else {
            break;
        };
        match joined {
            Ok(Ok(fresh)) => {
                opened.connect.record(fresh.connect);
                if let Some(first) = fresh.first {
                    opened.first_request.record(first);
                }
                opened.streams.push(fresh.stream);
                if opened.streams.len() % step == 0 {
                    println!(
                        "  {} connections open after {:.2} s",
                        opened.streams.len(),
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            Ok(Err(e)) => count(&mut opened.failures, e),
            Err(e) => count(&mut opened.failures, format!("connect task: {e}")),
        }
    }
    opened.took = started.elapsed();
    opened
}

/// Whether the server still holds `stream` open: a pending peek means nothing arrived and no
/// end of stream either (a NameServer sends nothing unasked). Never waits.
async fn still_open(stream: &TcpStream) -> bool {
    std::future::poll_fn(|cx| {
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        Poll::Ready(match stream.poll_peek(cx, &mut buf) {
            Poll::Ready(Ok(n)) => n > 0,
            Poll::Ready(Err(_)) => false,
            Poll::Pending => true,
        })
    })
    .await
}

/// The figures of the polling phase, shared by every connection's task.
#[derive(Default)]
struct Polls {
    /// Write to reply, of the polls due in the warm-up.
    warmup: Mutex<Latencies>,
    /// Write to reply, of the polls due in the measured window.
    latencies: Mutex<Latencies>,
    /// Due time to write, of the polls due in the warm-up.
    warmup_lag: Mutex<Latencies>,
    /// Due time to write, of the polls due in the measured window.
    lag: Mutex<Latencies>,
    sent: AtomicU64,
    ok: AtomicU64,
    /// Answered polls of the measured window.
    ok_measured: AtomicU64,
    /// Polls never sent because their connection had failed before.
    skipped: AtomicU64,
    errors: Mutex<BTreeMap<String, u64>>,
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

    fn snapshot(histogram: &Mutex<Latencies>) -> Latencies {
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

/// The route templates (one per topic) and the route body size of the first, after the brokers
/// (if any) are registered; the keepers re-register them until `run_end`.
async fn setup(
    common: &Common,
    args: &ConnsArgs,
    run_end: Instant,
) -> Result<(Vec<RequestTemplate>, Option<JoinSet<()>>, usize), BenchError> {
    let addr = common.addr;
    let (topics, keepers) = if args.preregistered {
        println!(
            "setup: none, {} topics expected to be registered already",
            args.topics
        );
        (broker::topic_names(TOPIC_PREFIX, args.topics), None)
    } else {
        let (topics, brokers) = route_brokers(args.brokers, args.topics, args.queues)?;
        let (registered, setup) =
            broker::register_all(addr, None, brokers, args.brokers, common.timeout).await?;
        println!(
            "setup: {} broker groups x {} topics registered in {:.2} s",
            args.brokers,
            args.topics,
            setup.as_secs_f64()
        );
        let keepers = broker::keep_alive(registered, args.register_period, run_end, common.timeout);
        (topics, Some(keepers))
    };
    let templates: Vec<RequestTemplate> = topics
        .iter()
        .map(|t| RequestTemplate::new(&route_request(t)))
        .collect::<Result<_, _>>()?;
    // One probe: the route must exist before anything is measured.
    let first = templates
        .first()
        .ok_or_else(|| BenchError::Usage("no topic to poll".into()))?;
    let mut stream = wire::connect(addr, common.timeout).await?;
    let mut frame = BytesMut::new();
    first.encode(1, &mut frame);
    let mut buf = BytesMut::new();
    let reply = wire::call(&mut stream, &frame, 1, &mut buf, common.timeout).await?;
    if reply.code != ResponseCode::SUCCESS.0 || reply.body_len == 0 {
        return Err(BenchError::Protocol(format!(
            "route probe answered code {} with {} body bytes",
            reply.code, reply.body_len
        )));
    }
    Ok((templates, keepers, reply.body_len))
}

/// What the polling phase gave.
struct Polled {
    polls: Arc<Polls>,
    /// The connections that did not fail, still open.
    kept: Vec<TcpStream>,
    task_failures: u64,
    /// The server's highest RSS sampled every 250 ms through warm-up and window.
    max_rss_kib: Option<u64>,
    /// At the end of the window.
    end: Option<Memory>,
    cpu: Value,
}

/// Every stream polls per `args`: warm-up, then the measured window.
async fn poll_all(
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

pub async fn run(common: &Common, args: &ConnsArgs) -> Result<Value, BenchError> {
    if args.connections == 0 || args.brokers == 0 || args.topics == 0 {
        return Err(BenchError::Usage(
            "connections, brokers and topics must be positive".into(),
        ));
    }
    if args.poll_period.is_zero() || args.duration < args.poll_period {
        return Err(BenchError::Usage(
            "--poll-period must be positive and --duration at least one period".into(),
        ));
    }
    if common.tls_config.is_some() {
        return Err(BenchError::Usage("conns runs plain TCP only".into()));
    }
    let addr = common.addr;
    let pid = common.pid;
    let me = std::process::id();

    // The fd limits: ours raised (soft to hard), the server's as it is.
    let own_limit = raise_fd_limit();
    let server_limit = pid.and_then(fd_limit_of);
    let needed = args.connections as u64 + 64;
    if let Some((soft, hard)) = own_limit {
        println!("generator RLIMIT_NOFILE: soft {soft}, hard {hard}");
        if soft < needed {
            println!(
                "  WARNING: {} connections need ~{needed} descriptors; the generator can open \
                 about {soft}: the rest will fail (counted)",
                args.connections
            );
        }
    }
    if let Some((soft, hard)) = &server_limit {
        println!("server max open files: soft {soft}, hard {hard}");
        if soft.parse::<u64>().is_ok_and(|s| s < needed) {
            println!(
                "  WARNING: the server's soft limit {soft} is below {needed}: it cannot hold {} \
                 connections",
                args.connections
            );
        }
    }

    let run_end = Instant::now()
        + args.open_timeout
        + args.settle
        + args.warmup
        + args.duration
        + args.close_settle
        + common.timeout * 3;
    let (templates, keepers, body_bytes) = setup(common, args, run_end).await?;
    println!("probe: route of the first topic is {body_bytes} bytes");
    // The probe's connection is closed; give the server a moment to drop it.
    tokio::time::sleep(Duration::from_millis(200)).await;

    // --- idle ---
    let server_before = pid.and_then(Memory::of);
    let own_before = Memory::of(me);
    println!(
        "conns: opening {} connections to {addr} ({} in flight, connect bounded by {}), {}; \
         server RSS {}",
        args.connections,
        args.concurrency,
        humantime::format_duration(args.connect_timeout),
        if args.silent {
            "silent until polling"
        } else {
            "one route query on each as soon as it is open"
        },
        rss(server_before)
    );
    let opened = open_all(addr, args, &templates, common.timeout).await;
    let failed: u64 = opened.failures.values().sum();
    let open_count = opened.streams.len();
    let not_attempted = args.connections - opened.attempted;
    println!(
        "  {} of {} open in {:.2} s ({} failed, {} not attempted); connect {}",
        open_count,
        args.connections,
        opened.took.as_secs_f64(),
        failed,
        not_attempted,
        opened.connect.summary()
    );
    if !args.silent {
        println!("  first request {}", opened.first_request.summary());
    }
    for (error, n) in &opened.failures {
        println!("  FAILED CONNECTIONS: {n} x {error}");
    }
    let idle_cpu = CpuWindow::start(pid);
    tokio::time::sleep(args.settle).await;
    let idle_cpu = idle_cpu.finish();
    let server_idle = pid.and_then(Memory::of);
    let own_idle = Memory::of(me);
    let mut streams = Vec::with_capacity(open_count);
    let mut closed_idle = 0u64;
    for stream in opened.streams {
        if still_open(&stream).await {
            streams.push(stream);
        } else {
            closed_idle += 1;
        }
    }
    let per_conn = per_connection(
        server_before.map(|m| m.rss_kib),
        server_idle.map(|m| m.rss_kib),
        open_count,
    );
    let own_per_conn = per_connection(
        own_before.map(|m| m.rss_kib),
        own_idle.map(|m| m.rss_kib),
        open_count,
    );
    println!(
        "  idle {}: server RSS {} -> {} with {open_count} connections: {} per idle connection \
         (peak {}, {} cores); {closed_idle} closed by the server; generator RSS {} -> {} ({})",
        humantime::format_duration(args.settle),
        rss(server_before),
        rss(server_idle),
        bytes_text(per_conn),
        server_idle.map_or("?".into(), |m| mib(m.hwm_kib)),
        cores_text(&idle_cpu, "server_cores"),
        rss(own_before),
        rss(own_idle),
        bytes_text(own_per_conn),
    );
    if closed_idle > 0 {
        println!("  CLOSED BY THE SERVER WHILE IDLE: {closed_idle}");
    }

    // --- polling ---
    let held = streams.len();
    let compression = CLIENT_POLL_PERIOD.as_secs_f64() / args.poll_period.as_secs_f64();
    let offered = held as f64 / args.poll_period.as_secs_f64();
    println!(
        "  polling: {held} connections, one route query each per {} (a client's {} compressed \
         {compression:.1}x: {offered:.0} req/s), {} warm-up + {} measured",
        humantime::format_duration(args.poll_period),
        humantime::format_duration(CLIENT_POLL_PERIOD),
        humantime::format_duration(args.warmup),
        humantime::format_duration(args.duration)
    );
    let polled = poll_all(streams, &templates, common, args).await;
    let polls = &polled.polls;
    let ok = polls.ok.load(Ordering::Relaxed);
    let ok_measured = polls.ok_measured.load(Ordering::Relaxed);
    let sent = polls.sent.load(Ordering::Relaxed);
    let skipped = polls.skipped.load(Ordering::Relaxed);
    let errors = polls.errors.lock().map(|e| e.clone()).unwrap_or_default();
    let error_count: u64 = errors.values().sum::<u64>() + polled.task_failures;
    let latencies = Polls::snapshot(&polls.latencies);
    let warmup = Polls::snapshot(&polls.warmup);
    let lag = Polls::snapshot(&polls.lag);
    let warmup_lag = Polls::snapshot(&polls.warmup_lag);
    let throughput = ok_measured as f64 / args.duration.as_secs_f64();
    let polling_per_conn =
        per_connection(server_before.map(|m| m.rss_kib), polled.max_rss_kib, held);
    println!(
        "  answered {ok} of {sent} sent ({error_count} errors, {skipped} skipped on failed \
         connections); measured window {throughput:.0} req/s; {} connections still open",
        polled.kept.len()
    );
    for (error, n) in &errors {
        println!("  ERRORS: {n} x {error}");
    }
    println!("  latency warm-up {}", warmup.summary());
    println!("  latency measured {}", latencies.summary());
    println!(
        "  poll lag (due to written) warm-up {}; measured {}",
        warmup_lag.summary(),
        lag.summary()
    );
    println!(
        "  server RSS while polling: max {} ({} per connection), at end {} (peak {}), {} cores; \
         generator {} cores",
        polled.max_rss_kib.map_or("?".into(), mib),
        bytes_text(polling_per_conn),
        rss(polled.end),
        polled.end.map_or("?".into(), |m| mib(m.hwm_kib)),
        cores_text(&polled.cpu, "server_cores"),
        cores_text(&polled.cpu, "bench_cores"),
    );

    // --- closed ---
    let still = polled.kept.len();
    drop(polled.kept);
    tokio::time::sleep(args.close_settle).await;
    let server_closed = pid.and_then(Memory::of);
    println!(
        "  {} after closing them: server RSS {}",
        humantime::format_duration(args.close_settle),
        rss(server_closed)
    );
    drop(keepers);

    Ok(json!({
        "workload": "conns",
        "brokers": args.brokers,
        "topics": args.topics,
        "preregistered": args.preregistered,
        "route_body_bytes": body_bytes,
        "fd_limit": {
            "generator_soft": own_limit.map(|l| l.0),
            "generator_hard": own_limit.map(|l| l.1),
            "server_soft": server_limit.as_ref().map(|l| l.0.clone()),
            "server_hard": server_limit.as_ref().map(|l| l.1.clone()),
        },
        "connections": {
            "target": args.connections,
            "attempted": opened.attempted,
            "opened": open_count,
            "failed": failed,
            "not_attempted": not_attempted,
            "failures": opened.failures,
            "open_s": (opened.took.as_secs_f64() * 1000.0).round() / 1000.0,
            "concurrency": args.concurrency,
            "silent": args.silent,
            "connect_latency_us": opened.connect.to_json(),
            "first_request_latency_us": (!args.silent).then(|| opened.first_request.to_json()),
            "closed_by_server_while_idle": closed_idle,
            "held_for_polling": held,
            "open_after_polling": still,
        },
        "server": {
            "pid": pid,
            "before": memory_value(server_before),
            "idle": memory_value(server_idle),
            "polling_end": memory_value(polled.end),
            "polling_max_rss_kib": polled.max_rss_kib,
            "after_close": memory_value(server_closed),
        },
        "settle_s": args.settle.as_secs_f64(),
        "bytes_per_idle_connection": per_conn,
        "kib_per_idle_connection": per_conn.map(|b| (b / 1024.0 * 100.0).round() / 100.0),
        "bytes_per_polling_connection": polling_per_conn,
        "cpu_idle": idle_cpu,
        "generator": {
            "rss_before_kib": own_before.map(|m| m.rss_kib),
            "rss_idle_kib": own_idle.map(|m| m.rss_kib),
            "bytes_per_connection": own_per_conn,
        },
        "poll": {
            "client_period_s": CLIENT_POLL_PERIOD.as_secs_f64(),
            "period_s": args.poll_period.as_secs_f64(),
            "compression": (compression * 100.0).round() / 100.0,
            "offered_rps": offered.round(),
            "warmup_s": args.warmup.as_secs_f64(),
            "duration_s": args.duration.as_secs_f64(),
            "connections": held,
            "sent": sent,
            "ok": ok,
            "ok_measured": ok_measured,
            "errors": error_count,
            "error_kinds": errors,
            "skipped": skipped,
            "throughput_rps": throughput.round(),
            "warmup_latency_us": warmup.to_json(),
            "latency_us": latencies.to_json(),
            "lag_us": lag.to_json(),
            "warmup_lag_us": warmup_lag.to_json(),
            "cpu": polled.cpu,
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_connection() {
        assert_eq!(per_connection(Some(1000), Some(2000), 1024), Some(1000.0));
        assert_eq!(per_connection(Some(2000), Some(1000), 1024), Some(-1000.0));
        assert_eq!(per_connection(Some(1000), None, 10), None);
        assert_eq!(per_connection(Some(1000), Some(1000), 0), None);
    }

    #[test]
    fn own_limits_are_readable() {
        let (soft, hard) = raise_fd_limit().unwrap();
        assert!(soft > 0 && soft <= hard);
        let (soft, hard) = fd_limit_of(std::process::id()).unwrap();
        assert!(soft.parse::<u64>().is_ok() && !hard.is_empty());
    }
}
