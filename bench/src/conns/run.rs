//! The run in its phases (idle, polling, closed), each printed as it ends, and the JSON result.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::net::TcpStream;

use super::args::{ConnsArgs, CLIENT_POLL_PERIOD};
use super::figures::{bytes_text, cores_text, memory_value, per_connection, rss};
use super::limits::fd_limits;
use super::open::{open_all, still_open, Opened};
use super::poll::{poll_all, Polled, Polls};
use super::setup::setup;
use crate::stats::{mib, CpuWindow, Latencies, Memory};
use crate::wire::RequestTemplate;
use crate::{BenchError, Common};

/// What the idle phase gave: the connections opened, and what holding them idle cost.
struct Idle {
    /// How opening went (its streams taken: the ones still open are polled).
    opened: Opened,
    failed: u64,
    open_count: usize,
    not_attempted: usize,
    server_before: Option<Memory>,
    own_before: Option<Memory>,
    server_idle: Option<Memory>,
    own_idle: Option<Memory>,
    idle_cpu: Value,
    closed_idle: u64,
    /// RSS growth per idle connection: the server's, the generator's.
    per_conn: Option<f64>,
    own_per_conn: Option<f64>,
}

/// What the polling phase gave, counted and summed.
struct Polling {
    held: usize,
    compression: f64,
    offered: f64,
    polled: Polled,
    ok: u64,
    ok_measured: u64,
    sent: u64,
    skipped: u64,
    errors: BTreeMap<String, u64>,
    error_count: u64,
    latencies: Latencies,
    warmup: Latencies,
    lag: Latencies,
    warmup_lag: Latencies,
    throughput: f64,
    polling_per_conn: Option<f64>,
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
    let pid = common.pid;
    let limits = fd_limits(args.connections, pid);

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

    let (idle, streams) = idle_phase(common, args, &templates).await;
    let mut polling = polling_phase(streams, &templates, common, args, idle.server_before).await;

    // --- closed ---
    let still = polling.polled.kept.len();
    drop(std::mem::take(&mut polling.polled.kept));
    tokio::time::sleep(args.close_settle).await;
    let server_closed = pid.and_then(Memory::of);
    println!(
        "  {} after closing them: server RSS {}",
        humantime::format_duration(args.close_settle),
        rss(server_closed)
    );
    drop(keepers);

    let per_conn = idle.per_conn;
    Ok(json!({
        "workload": "conns",
        "brokers": args.brokers,
        "topics": args.topics,
        "preregistered": args.preregistered,
        "route_body_bytes": body_bytes,
        "fd_limit": {
            "generator_soft": limits.own.map(|l| l.0),
            "generator_hard": limits.own.map(|l| l.1),
            "server_soft": limits.server.as_ref().map(|l| l.0.clone()),
            "server_hard": limits.server.as_ref().map(|l| l.1.clone()),
        },
        "connections": connections_json(args, &idle, polling.held, still),
        "server": {
            "pid": pid,
            "before": memory_value(idle.server_before),
            "idle": memory_value(idle.server_idle),
            "polling_end": memory_value(polling.polled.end),
            "polling_max_rss_kib": polling.polled.max_rss_kib,
            "after_close": memory_value(server_closed),
        },
        "settle_s": args.settle.as_secs_f64(),
        "bytes_per_idle_connection": per_conn,
        "kib_per_idle_connection": per_conn.map(|b| (b / 1024.0 * 100.0).round() / 100.0),
        "bytes_per_polling_connection": polling.polling_per_conn,
        "cpu_idle": idle.idle_cpu,
        "generator": {
            "rss_before_kib": idle.own_before.map(|m| m.rss_kib),
            "rss_idle_kib": idle.own_idle.map(|m| m.rss_kib),
            "bytes_per_connection": idle.own_per_conn,
        },
        "poll": poll_json(args, &polling),
    }))
}

/// Opens the connections, each sending its first request unless `--silent`; prints how it went.
async fn open_connections(
    common: &Common,
    args: &ConnsArgs,
    templates: &[RequestTemplate],
    server_before: Option<Memory>,
) -> Opened {
    let addr = common.addr;
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
    open_all(addr, args, templates, common.timeout).await
}

/// The connections opened and held idle for `--settle`: the server's RSS before and after, and
/// the connections it closed meanwhile. Returns the ones still open.
async fn idle_phase(
    common: &Common,
    args: &ConnsArgs,
    templates: &[RequestTemplate],
) -> (Idle, Vec<TcpStream>) {
    let pid = common.pid;
    let me = std::process::id();
    let server_before = pid.and_then(Memory::of);
    let own_before = Memory::of(me);
    let mut opened = open_connections(common, args, templates, server_before).await;
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
    for stream in std::mem::take(&mut opened.streams) {
        if still_open(&stream).await {
            streams.push(stream);
        } else {
            closed_idle += 1;
        }
    }
    let idle = Idle {
        per_conn: per_connection(
            server_before.map(|m| m.rss_kib),
            server_idle.map(|m| m.rss_kib),
            open_count,
        ),
        own_per_conn: per_connection(
            own_before.map(|m| m.rss_kib),
            own_idle.map(|m| m.rss_kib),
            open_count,
        ),
        opened,
        failed,
        open_count,
        not_attempted,
        server_before,
        own_before,
        server_idle,
        own_idle,
        idle_cpu,
        closed_idle,
    };
    print_idle(args, &idle);
    (idle, streams)
}

fn print_idle(args: &ConnsArgs, idle: &Idle) {
    let (open_count, closed_idle) = (idle.open_count, idle.closed_idle);
    println!(
        "  idle {}: server RSS {} -> {} with {open_count} connections: {} per idle connection \
         (peak {}, {} cores); {closed_idle} closed by the server; generator RSS {} -> {} ({})",
        humantime::format_duration(args.settle),
        rss(idle.server_before),
        rss(idle.server_idle),
        bytes_text(idle.per_conn),
        idle.server_idle.map_or("?".into(), |m| mib(m.hwm_kib)),
        cores_text(&idle.idle_cpu, "server_cores"),
        rss(idle.own_before),
        rss(idle.own_idle),
        bytes_text(idle.own_per_conn),
    );
    if closed_idle > 0 {
        println!("  CLOSED BY THE SERVER WHILE IDLE: {closed_idle}");
    }
}

/// Every connection still open polls: warm-up, then the measured window; prints the figures.
async fn polling_phase(
    streams: Vec<TcpStream>,
    templates: &[RequestTemplate],
    common: &Common,
    args: &ConnsArgs,
    server_before: Option<Memory>,
) -> Polling {
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
    let polled = poll_all(streams, templates, common, args).await;
    let polls = &polled.polls;
    let ok_measured = polls.ok_measured.load(Ordering::Relaxed);
    let errors = polls.errors.lock().map(|e| e.clone()).unwrap_or_default();
    let polling = Polling {
        held,
        compression,
        offered,
        ok: polls.ok.load(Ordering::Relaxed),
        ok_measured,
        sent: polls.sent.load(Ordering::Relaxed),
        skipped: polls.skipped.load(Ordering::Relaxed),
        error_count: errors.values().sum::<u64>() + polled.task_failures,
        errors,
        latencies: Polls::snapshot(&polls.latencies),
        warmup: Polls::snapshot(&polls.warmup),
        lag: Polls::snapshot(&polls.lag),
        warmup_lag: Polls::snapshot(&polls.warmup_lag),
        throughput: ok_measured as f64 / args.duration.as_secs_f64(),
        polling_per_conn: per_connection(
            server_before.map(|m| m.rss_kib),
            polled.max_rss_kib,
            held,
        ),
        polled,
    };
    print_polling(&polling);
    polling
}

fn print_polling(p: &Polling) {
    let (ok, sent, error_count, skipped, throughput) =
        (p.ok, p.sent, p.error_count, p.skipped, p.throughput);
    let polled = &p.polled;
    println!(
        "  answered {ok} of {sent} sent ({error_count} errors, {skipped} skipped on failed \
         connections); measured window {throughput:.0} req/s; {} connections still open",
        polled.kept.len()
    );
    for (error, n) in &p.errors {
        println!("  ERRORS: {n} x {error}");
    }
    println!("  latency warm-up {}", p.warmup.summary());
    println!("  latency measured {}", p.latencies.summary());
    println!(
        "  poll lag (due to written) warm-up {}; measured {}",
        p.warmup_lag.summary(),
        p.lag.summary()
    );
    println!(
        "  server RSS while polling: max {} ({} per connection), at end {} (peak {}), {} cores; \
         generator {} cores",
        polled.max_rss_kib.map_or("?".into(), mib),
        bytes_text(p.polling_per_conn),
        rss(polled.end),
        polled.end.map_or("?".into(), |m| mib(m.hwm_kib)),
        cores_text(&polled.cpu, "server_cores"),
        cores_text(&polled.cpu, "bench_cores"),
    );
}

fn connections_json(args: &ConnsArgs, idle: &Idle, held: usize, still: usize) -> Value {
    let opened = &idle.opened;
    json!({
        "target": args.connections,
        "attempted": opened.attempted,
        "opened": idle.open_count,
        "failed": idle.failed,
        "not_attempted": idle.not_attempted,
        "failures": opened.failures,
        "open_s": (opened.took.as_secs_f64() * 1000.0).round() / 1000.0,
        "concurrency": args.concurrency,
        "silent": args.silent,
        "connect_latency_us": opened.connect.to_json(),
        "first_request_latency_us": (!args.silent).then(|| opened.first_request.to_json()),
        "closed_by_server_while_idle": idle.closed_idle,
        "held_for_polling": held,
        "open_after_polling": still,
    })
}

fn poll_json(args: &ConnsArgs, p: &Polling) -> Value {
    json!({
        "client_period_s": CLIENT_POLL_PERIOD.as_secs_f64(),
        "period_s": args.poll_period.as_secs_f64(),
        "compression": (p.compression * 100.0).round() / 100.0,
        "offered_rps": p.offered.round(),
        "warmup_s": args.warmup.as_secs_f64(),
        "duration_s": args.duration.as_secs_f64(),
        "connections": p.held,
        "sent": p.sent,
        "ok": p.ok,
        "ok_measured": p.ok_measured,
        "errors": p.error_count,
        "error_kinds": p.errors,
        "skipped": p.skipped,
        "throughput_rps": p.throughput.round(),
        "warmup_latency_us": p.warmup.to_json(),
        "latency_us": p.latencies.to_json(),
        "lag_us": p.lag.to_json(),
        "warmup_lag_us": p.warmup_lag.to_json(),
        "cpu": p.polled.cpu,
    })
}
