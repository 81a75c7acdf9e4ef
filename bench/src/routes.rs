//! `routes`: GET_ROUTEINFO_BY_TOPIC throughput and latency, closed loop (pipelined) or open loop
//! (`--rate`), against broker groups registered by the generator itself.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::Args;
use rmq_protocol::ResponseCode;
use rmq_transport::client::ClientStream;
use rustls::ClientConfig;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::task::JoinSet;

use crate::broker::{self, Broker};
use crate::openloop::{self, Phase, Schedule};
use crate::stats::{memory_json, mib, CpuWindow, Latencies, Memory};
use crate::wire::{self, next_reply, route_request, RequestTemplate};
use crate::{BenchError, Common};

/// The topics of the route workloads, and the broker group their brokers belong to.
pub const TOPIC_PREFIX: &str = "BenchRoute-";
pub const GROUP: &str = "bench-route";

/// The topics and brokers `routes` (and `brokers`) register: `brokers` masters, each carrying the
/// same `topics` topics with `queues` queues.
pub fn route_brokers(
    brokers: usize,
    topics: usize,
    queues: i32,
) -> Result<(Vec<String>, Vec<Arc<Broker>>), BenchError> {
    let topics = broker::topic_names(TOPIC_PREFIX, topics);
    let brokers = (0..brokers)
        .map(|i| Broker::new(GROUP, i, &topics, queues).map(Arc::new))
        .collect::<Result<_, _>>()?;
    Ok((topics, brokers))
}

#[derive(Debug, Clone, Args)]
pub struct RoutesArgs {
    /// Broker groups (one master each) registered before the queries.
    #[arg(long, default_value_t = 10)]
    pub brokers: usize,
    /// Topics on every broker (the same names on all).
    #[arg(long, default_value_t = 1000)]
    pub topics: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Query connections.
    #[arg(long, default_value_t = 64)]
    pub connections: usize,
    /// Requests in flight per connection (closed loop).
    #[arg(long, default_value_t = 16)]
    pub pipeline: usize,
    /// Warm-up before the measured window (not recorded).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub warmup: Duration,
    /// The measured window.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    pub duration: Duration,
    /// Open loop: this many requests per second in total, on a fixed schedule (latency counted
    /// from each request's due time). Without it: closed loop.
    #[arg(long)]
    pub rate: Option<u64>,
    /// The brokers re-register this often, as real ones do (every 30 s).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub register_period: Duration,
    /// Register nothing: the topics are already there (registered by a running `rmq-bench
    /// brokers` with the same --topics, or a reference server, which needs none). The probe still
    /// checks that the first topic has a route; --brokers is then only reported.
    #[arg(long)]
    pub preregistered: bool,
}

pub async fn run(common: &Common, args: &RoutesArgs) -> Result<Value, BenchError> {
    if args.brokers == 0 || args.topics == 0 || args.connections == 0 || args.pipeline == 0 {
        return Err(BenchError::Usage(
            "brokers, topics, connections and pipeline must be positive".into(),
        ));
    }
    let addr = common.addr;
    let tls = common.tls_config.as_ref();
    let (topics, keepers) = if args.preregistered {
        println!(
            "setup: none, {} topics expected to be registered already",
            args.topics
        );
        (broker::topic_names(TOPIC_PREFIX, args.topics), None)
    } else {
        let (topics, brokers) = route_brokers(args.brokers, args.topics, args.queues)?;
        let (registered, setup) =
            broker::register_all(addr, tls, brokers, args.brokers, common.timeout).await?;
        println!(
            "setup: {} broker groups x {} topics registered in {:.2} s{}",
            args.brokers,
            args.topics,
            setup.as_secs_f64(),
            if tls.is_some() { " over TLS" } else { "" }
        );
        let run_end = Instant::now() + args.warmup + args.duration + common.timeout * 2;
        let keepers = broker::keep_alive(registered, args.register_period, run_end, common.timeout);
        (topics, Some(keepers))
    };

    let templates: Arc<Vec<RequestTemplate>> = Arc::new(
        topics
            .iter()
            .map(|t| RequestTemplate::new(&route_request(t)))
            .collect::<Result<_, _>>()?,
    );
    // One probe: the route must exist before anything is measured.
    let tls_info = probe(addr, tls, &templates, common.timeout).await?;

    let result = match args.rate {
        None => closed_loop(common, args, templates).await,
        Some(rate) => open_loop(common, args, templates, rate).await,
    };
    drop(keepers);
    result.map(|mut json| {
        json["tls"] = tls_info;
        json["preregistered"] = args.preregistered.into();
        json
    })
}

/// Asks for the first topic's route once; returns what TLS negotiated (`null`: plain TCP).
async fn probe(
    addr: SocketAddr,
    tls: Option<&Arc<ClientConfig>>,
    templates: &[RequestTemplate],
    timeout: Duration,
) -> Result<Value, BenchError> {
    let mut stream = wire::connect_stream(addr, tls, timeout).await?;
    let tls_info = wire::tls_json(&stream);
    let mut frame = BytesMut::new();
    if let Some(first) = templates.first() {
        first.encode(1, &mut frame);
    }
    let mut buf = BytesMut::new();
    let reply = wire::call(&mut stream, &frame, 1, &mut buf, timeout).await?;
    if reply.code != ResponseCode::SUCCESS.0 || reply.body_len == 0 {
        return Err(BenchError::Protocol(format!(
            "route probe answered code {} with {} body bytes",
            reply.code, reply.body_len
        )));
    }
    match &tls_info {
        Value::Null => println!(
            "probe: route of the first topic is {} bytes",
            reply.body_len
        ),
        info => println!(
            "probe: route of the first topic is {} bytes, over {} {}",
            reply.body_len,
            info["protocol"].as_str().unwrap_or("TLS"),
            info["cipher_suite"].as_str().unwrap_or("?")
        ),
    }
    Ok(tls_info)
}

struct ClosedConn {
    latencies: Latencies,
    ok: u64,
    errors: u64,
    unanswered: u64,
}

async fn closed_loop(
    common: &Common,
    args: &RoutesArgs,
    templates: Arc<Vec<RequestTemplate>>,
) -> Result<Value, BenchError> {
    // Every connection is opened (a TLS one with its handshake) before the warm-up starts; one
    // that cannot be opened counts as a failed connection, as one that fails later does.
    let mut connecting = JoinSet::new();
    for conn in 0..args.connections {
        let (addr, timeout, tls) = (common.addr, common.timeout, common.tls_config.clone());
        connecting.spawn(async move {
            (
                conn,
                wire::connect_stream(addr, tls.as_ref(), timeout).await,
            )
        });
    }
    let mut streams = Vec::with_capacity(args.connections);
    while let Some(joined) = connecting.join_next().await {
        streams.push(joined.map_err(|e| BenchError::Protocol(format!("connect task: {e}")))?);
    }
    let start = Instant::now();
    let measure_from = start + args.warmup;
    let measure_to = measure_from + args.duration;
    println!(
        "routes closed loop: {} {} connections x {} in flight, warm-up {}, measured {}",
        args.connections,
        if common.tls_config.is_some() {
            "TLS"
        } else {
            "TCP"
        },
        args.pipeline,
        humantime::format_duration(args.warmup),
        humantime::format_duration(args.duration)
    );
    let mut tasks = JoinSet::new();
    for (conn, stream) in streams {
        let templates = Arc::clone(&templates);
        let (pipeline, timeout) = (args.pipeline, common.timeout);
        let first_topic = conn * templates.len() / args.connections;
        tasks.spawn(async move {
            let window = (measure_from, measure_to);
            // One monomorphic loop per kind of stream: plain TCP runs the `TcpStream` code.
            match stream? {
                ClientStream::Plain(stream) => {
                    closed_conn(stream, templates, first_topic, pipeline, window, timeout).await
                }
                ClientStream::Tls(stream) => {
                    closed_conn(stream, templates, first_topic, pipeline, window, timeout).await
                }
            }
        });
    }
    // CPU use is measured over the window only.
    tokio::time::sleep_until(measure_from.into()).await;
    let cpu = CpuWindow::start(common.pid);
    tokio::time::sleep_until(measure_to.into()).await;
    let cpu = cpu.finish();
    let memory = memory_json(common.pid);

    let mut latencies = Latencies::new();
    let (mut ok, mut errors, mut unanswered) = (0, 0, 0);
    let mut failures = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined.map_err(|e| BenchError::Protocol(format!("connection task: {e}")))? {
            Ok(conn) => {
                latencies.merge(&conn.latencies);
                ok += conn.ok;
                errors += conn.errors;
                unanswered += conn.unanswered;
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    let seconds = args.duration.as_secs_f64();
    let throughput = (ok + errors) as f64 / seconds;
    println!(
        "  answered {} in the window ({} errors, {} failed connections): {:.0} req/s",
        ok + errors,
        errors,
        failures.len(),
        throughput
    );
    println!("  latency {}", latencies.summary());
    print_server(common.pid, &cpu);
    let per_request = per_request_us(&cpu, ok + errors);
    Ok(json!({
        "workload": "routes",
        "mode": "closed",
        "brokers": args.brokers,
        "topics": args.topics,
        "connections": args.connections,
        "pipeline": args.pipeline,
        "warmup_s": args.warmup.as_secs_f64(),
        "duration_s": seconds,
        "ok": ok,
        "errors": errors,
        "unanswered_at_end": unanswered,
        "failed_connections": failures,
        "throughput_rps": throughput.round(),
        "latency_us": latencies.to_json(),
        "cpu": cpu,
        "cpu_us_per_request": per_request,
        "server": memory,
    }))
}

/// CPU time per answered request in µs, of the server and of the generator, over the window
/// (`/proc` counts CPU time in 10 ms ticks: a window should hold a second of CPU or more).
fn per_request_us(cpu: &Value, answered: u64) -> Value {
    let per = |key: &str| {
        cpu[key]
            .as_f64()
            .filter(|_| answered > 0)
            .map(|s| (s * 1e7 / answered as f64).round() / 10.0)
    };
    json!({"server": per("server_cpu_s"), "bench": per("bench_cpu_s")})
}

/// One pipelined connection: keeps `pipeline` requests in flight; a reply is answered by the
/// next request until `window.1`; replies arriving inside `window` are recorded.
async fn closed_conn<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    templates: Arc<Vec<RequestTemplate>>,
    first_topic: usize,
    pipeline: usize,
    window: (Instant, Instant),
    timeout: Duration,
) -> Result<ClosedConn, BenchError> {
    let (measure_from, measure_to) = window;
    let mut rbuf = BytesMut::with_capacity(64 * 1024);
    let mut wbuf = BytesMut::with_capacity(pipeline * 160);
    let mut inflight: HashMap<i32, Instant> = HashMap::with_capacity(pipeline * 2);
    let mut topic = first_topic;
    let mut opaque: i32 = 0;
    let mut send = |wbuf: &mut BytesMut, inflight: &mut HashMap<i32, Instant>, now: Instant| {
        opaque = opaque.wrapping_add(1);
        templates[topic].encode(opaque, wbuf);
        topic = (topic + 1) % templates.len();
        inflight.insert(opaque, now);
    };
    let now = Instant::now();
    for _ in 0..pipeline {
        send(&mut wbuf, &mut inflight, now);
    }
    stream.write_all(&wbuf).await?;
    // TLS may keep the end of a record buffered; a no-op on TCP.
    stream.flush().await?;
    wbuf.clear();
    let mut conn = ClosedConn {
        latencies: Latencies::new(),
        ok: 0,
        errors: 0,
        unanswered: 0,
    };
    // Bounded by time: sends stop at `measure_to`; the rest is drained for at most `timeout`.
    while !inflight.is_empty() {
        let now = Instant::now();
        let deadline = if now < measure_to {
            now + timeout
        } else {
            measure_to + timeout
        };
        let read = tokio::time::timeout_at(deadline.into(), stream.read_buf(&mut rbuf)).await;
        match read {
            Err(_) if Instant::now() >= measure_to => break,
            Err(_) => return Err(BenchError::Timeout("route replies".into())),
            Ok(Ok(0)) => {
                return Err(BenchError::Protocol(
                    "the server closed a query connection".into(),
                ))
            }
            Ok(read) => {
                read?;
            }
        }
        let now = Instant::now();
        while let Some(reply) = next_reply(&mut rbuf)? {
            let Some(sent) = inflight.remove(&reply.opaque) else {
                continue;
            };
            if now >= measure_from && now < measure_to {
                conn.latencies.record(now - sent);
                if reply.code == ResponseCode::SUCCESS.0 && reply.body_len > 0 {
                    conn.ok += 1;
                } else {
                    conn.errors += 1;
                }
            }
            if now < measure_to {
                send(&mut wbuf, &mut inflight, now);
            }
        }
        if !wbuf.is_empty() {
            stream.write_all(&wbuf).await?;
            stream.flush().await?;
            wbuf.clear();
        }
    }
    conn.unanswered = inflight.len() as u64;
    Ok(conn)
}

async fn open_loop(
    common: &Common,
    args: &RoutesArgs,
    templates: Arc<Vec<RequestTemplate>>,
    rate: u64,
) -> Result<Value, BenchError> {
    if rate == 0 {
        return Err(BenchError::Usage("--rate must be positive".into()));
    }
    let total_time = args.warmup + args.duration;
    let total = (rate as f64 * total_time.as_secs_f64()).round() as u64;
    let tls = common.tls_config.as_ref();
    println!(
        "routes open loop: {} req/s on {} {} connections, warm-up {}, measured {}",
        rate,
        args.connections,
        if tls.is_some() { "TLS" } else { "TCP" },
        humantime::format_duration(args.warmup),
        humantime::format_duration(args.duration)
    );
    let connections =
        openloop::Connections::open(common.addr, tls, args.connections, common.timeout).await?;
    let schedule = Schedule {
        start: Instant::now() + Duration::from_millis(50),
        rate,
        total,
    };
    let phases = vec![Phase {
        name: "measured",
        from: args.warmup,
        to: total_time,
    }];
    let cpu_at = schedule.start + args.warmup;
    let cpu_until = schedule.start + total_time;
    let pid = common.pid;
    let cpu_task = tokio::spawn(async move {
        tokio::time::sleep_until(cpu_at.into()).await;
        let cpu = CpuWindow::start(pid);
        tokio::time::sleep_until(cpu_until.into()).await;
        (cpu.finish(), memory_json(pid))
    });
    let result = openloop::run(connections, templates, schedule, phases, common.timeout).await?;
    let (cpu, memory) = cpu_task
        .await
        .map_err(|e| BenchError::Protocol(format!("cpu sampler: {e}")))?;
    let measured = result.phase("measured").cloned().unwrap_or_default();
    let achieved = (measured.ok + measured.errors) as f64 / args.duration.as_secs_f64();
    println!(
        "  answered {} of the window ({} errors, {} never answered): {:.0} req/s",
        measured.ok + measured.errors,
        measured.errors,
        result.missing,
        achieved
    );
    println!("  latency {}", measured.latencies.summary());
    println!(
        "  pacer lag (due to {}) {}",
        if common.tls_config.is_some() {
            "handed to the connection's TLS writer"
        } else {
            "written"
        },
        result.pacer_lag.summary()
    );
    print_server(common.pid, &cpu);
    Ok(json!({
        "workload": "routes",
        "mode": "open",
        "brokers": args.brokers,
        "topics": args.topics,
        "connections": args.connections,
        "warmup_s": args.warmup.as_secs_f64(),
        "duration_s": args.duration.as_secs_f64(),
        "rate": rate,
        "ok": measured.ok,
        "errors": measured.errors,
        "missing": result.missing,
        "throughput_rps": achieved.round(),
        "latency_us": measured.latencies.to_json(),
        "open_loop": result.to_json(&schedule),
        "cpu": cpu,
        "server": memory,
    }))
}

/// The server line of the human summary.
pub fn print_server(pid: Option<u32>, cpu: &Value) {
    let cores = |key: &str| cpu[key].as_f64().map_or("?".into(), |c| format!("{c:.2}"));
    match pid.and_then(Memory::of) {
        Some(mem) => println!(
            "  server pid {}: RSS {} (peak {}), {} cores busy; generator {} cores",
            pid.unwrap_or_default(),
            mib(mem.rss_kib),
            mib(mem.hwm_kib),
            cores("server_cores"),
            cores("bench_cores")
        ),
        None => println!("  generator {} cores busy", cores("bench_cores")),
    }
}
