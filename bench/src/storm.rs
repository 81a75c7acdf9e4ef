//! `storm`: the registration storm of apache/rocketmq#4245 on one machine. Many brokers carrying
//! the same large topic set re-register with full bodies (the 30 s period compressed), while
//! clients query routes at a fixed rate; route latency is compared with an idle phase before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::broker::{self, Broker, Registered};
use crate::openloop::{self, Phase, Schedule};
use crate::routes::print_server;
use crate::stats::{memory_json, mib, micros, CpuWindow, Latencies, Memory};
use crate::wire::{route_request, RequestTemplate};
use crate::{BenchError, Common};

#[derive(Debug, Clone, Args)]
pub struct StormArgs {
    /// Brokers (each its own group, one master, its own connection).
    #[arg(long, default_value_t = 100)]
    pub brokers: usize,
    /// Topics on every broker (the same names on all: each topic has every broker).
    #[arg(long, default_value_t = 10_000)]
    pub topics: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Every broker re-registers this often during the storm (real brokers: 30 s).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3s")]
    pub period: Duration,
    /// Route queries per second, all phases.
    #[arg(long, default_value_t = 1000)]
    pub query_rate: u64,
    /// Route query connections.
    #[arg(long, default_value_t = 8)]
    pub query_connections: usize,
    /// Queries before the idle phase (not recorded).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3s")]
    pub warmup: Duration,
    /// The idle phase: queries only, brokers connected but silent.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub idle: Duration,
    /// The storm phase.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub duration: Duration,
    /// Initial registrations in flight at once during setup.
    #[arg(long, default_value_t = 4)]
    pub setup_concurrency: usize,
}

struct BrokerStorm {
    latencies: Latencies,
    ok: u64,
    errors: Vec<String>,
    late: u64,
}

pub async fn run(common: &Common, args: &StormArgs) -> Result<Value, BenchError> {
    if args.brokers == 0 || args.topics == 0 || args.query_rate == 0 || args.period.is_zero() {
        return Err(BenchError::Usage(
            "brokers, topics, query rate and period must be positive".into(),
        ));
    }
    let addr = common.addr;
    let topics = broker::topic_names("BenchStorm-", args.topics);
    let encode_started = Instant::now();
    let brokers: Vec<Arc<Broker>> = (0..args.brokers)
        .map(|i| Broker::new("bench-storm", i, &topics, args.queues).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let body_bytes = brokers.first().map_or(0, |b| b.frame.len());
    println!(
        "storm: {} brokers x {} topics, registration frame {} each (encoded in {:.2} s){}",
        args.brokers,
        args.topics,
        mib(body_bytes as u64 / 1024),
        encode_started.elapsed().as_secs_f64(),
        if common.tls_config.is_some() {
            "; every connection TLS"
        } else {
            ""
        }
    );
    let setup_timeout = common.timeout.max(Duration::from_secs(60));
    let tls = common.tls_config.as_ref();
    let (registered, setup) =
        broker::register_all(addr, tls, brokers, args.setup_concurrency, setup_timeout).await?;
    let after_setup = memory_json(common.pid);
    println!(
        "setup: initial registrations took {:.2} s; server {}",
        setup.as_secs_f64(),
        common
            .pid
            .and_then(Memory::of)
            .map_or("?".into(), |m| format!("RSS {}", mib(m.rss_kib)))
    );

    let templates: Arc<Vec<RequestTemplate>> = Arc::new(
        topics
            .iter()
            .map(|t| RequestTemplate::new(&route_request(t)))
            .collect::<Result<_, _>>()?,
    );
    let connections =
        openloop::Connections::open(addr, tls, args.query_connections, common.timeout).await?;
    let idle_from = args.warmup;
    let storm_from = idle_from + args.idle;
    let storm_to = storm_from + args.duration;
    let schedule = Schedule {
        start: Instant::now() + Duration::from_millis(50),
        rate: args.query_rate,
        total: (args.query_rate as f64 * storm_to.as_secs_f64()).round() as u64,
    };
    let phases = vec![
        Phase {
            name: "idle",
            from: idle_from,
            to: storm_from,
        },
        Phase {
            name: "storm",
            from: storm_from,
            to: storm_to,
        },
    ];
    println!(
        "queries: {} req/s on {} connections; warm-up {}, idle {}, storm {} (every broker every {})",
        args.query_rate,
        args.query_connections,
        humantime::format_duration(args.warmup),
        humantime::format_duration(args.idle),
        humantime::format_duration(args.duration),
        humantime::format_duration(args.period)
    );

    // Brokers: silent until the storm starts, then each re-registers every period, spread.
    let storm_start = schedule.start + storm_from;
    let storm_end = schedule.start + storm_to;
    let mut storm_tasks = JoinSet::new();
    let count = registered.len() as u32;
    for (i, reg) in registered.into_iter().enumerate() {
        let first = storm_start + args.period * i as u32 / count.max(1);
        let (period, timeout) = (args.period, setup_timeout);
        storm_tasks.spawn(storm_broker(reg, first, period, storm_end, timeout));
    }
    // Server memory and CPU, per phase.
    let pid = common.pid;
    let idle_at = schedule.start + idle_from;
    let sampler = tokio::spawn(async move {
        tokio::time::sleep_until(idle_at.into()).await;
        let idle_cpu = CpuWindow::start(pid);
        tokio::time::sleep_until(storm_start.into()).await;
        let idle_cpu = idle_cpu.finish();
        let idle_mem = memory_json(pid);
        let storm_cpu = CpuWindow::start(pid);
        let mut peak_rss = 0;
        // Bounded: one sample every 250 ms until the storm ends.
        while Instant::now() < storm_end {
            if let Some(mem) = pid.and_then(Memory::of) {
                peak_rss = peak_rss.max(mem.rss_kib);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        (idle_cpu, idle_mem, storm_cpu.finish(), peak_rss)
    });

    let queries = openloop::run(connections, templates, schedule, phases, common.timeout).await?;
    let mut registrations = Latencies::new();
    let (mut reg_ok, mut late) = (0u64, 0u64);
    let mut reg_errors = Vec::new();
    let mut keep = Vec::new();
    while let Some(joined) = storm_tasks.join_next().await {
        let (b, reg) = joined.map_err(|e| BenchError::Protocol(format!("broker task: {e}")))?;
        registrations.merge(&b.latencies);
        reg_ok += b.ok;
        late += b.late;
        reg_errors.extend(b.errors);
        keep.push(reg);
    }
    let (idle_cpu, idle_mem, storm_cpu, peak_sampled) = sampler
        .await
        .map_err(|e| BenchError::Protocol(format!("sampler: {e}")))?;
    let end_mem = memory_json(common.pid);
    drop(keep);

    let idle = queries.phase("idle").cloned().unwrap_or_default();
    let storm = queries.phase("storm").cloned().unwrap_or_default();
    let p99_ratio = ratio(
        storm.latencies.quantile(0.99),
        idle.latencies.quantile(0.99),
    );
    let storm_seconds = args.duration.as_secs_f64();
    let reg_rate = reg_ok as f64 / storm_seconds;
    println!(
        "  route queries idle:  {} ({} errors)",
        idle.latencies.summary(),
        idle.errors
    );
    println!(
        "  route queries storm: {} ({} errors)",
        storm.latencies.summary(),
        storm.errors
    );
    println!(
        "  storm p99 / idle p99 = {}; never answered {}; pacer lag {}",
        p99_ratio.map_or("?".into(), |r| format!("{r:.2}")),
        queries.missing,
        queries.pacer_lag.summary()
    );
    println!(
        "  registrations: {} ok, {} failed, {:.1}/s (offered {:.1}/s), {} started late; latency {}",
        reg_ok,
        reg_errors.len(),
        reg_rate,
        args.brokers as f64 / args.period.as_secs_f64(),
        late,
        registrations.summary()
    );
    if let Some(first) = reg_errors.first() {
        println!("  first registration error: {first}");
    }
    print_server(common.pid, &storm_cpu);
    if peak_sampled > 0 {
        println!(
            "  server RSS peak sampled during the storm {}",
            mib(peak_sampled)
        );
    }
    if registrations.count() > 0 {
        println!(
            "  registration p50 {} p99 {}",
            micros(registrations.quantile(0.5)),
            micros(registrations.quantile(0.99))
        );
    }
    Ok(json!({
        "workload": "storm",
        "tls": tls.is_some(),
        "brokers": args.brokers,
        "topics": args.topics,
        "registration_frame_bytes": body_bytes,
        "period_s": args.period.as_secs_f64(),
        "query_rate": args.query_rate,
        "query_connections": args.query_connections,
        "warmup_s": args.warmup.as_secs_f64(),
        "idle_s": args.idle.as_secs_f64(),
        "storm_s": storm_seconds,
        "setup_s": setup.as_secs_f64(),
        "route_idle": {"ok": idle.ok, "errors": idle.errors, "latency_us": idle.latencies.to_json()},
        "route_storm": {"ok": storm.ok, "errors": storm.errors, "latency_us": storm.latencies.to_json()},
        "route_p99_storm_over_idle": p99_ratio,
        "queries": queries.to_json(&schedule),
        "registrations": {
            "ok": reg_ok,
            "failed": reg_errors.len(),
            "first_error": reg_errors.first(),
            "late_starts": late,
            "offered_per_s": args.brokers as f64 / args.period.as_secs_f64(),
            "throughput_per_s": (reg_rate * 10.0).round() / 10.0,
            "latency_us": registrations.to_json(),
        },
        "cpu_idle": idle_cpu,
        "cpu_storm": storm_cpu,
        "server_after_setup": after_setup,
        "server_after_idle": idle_mem,
        "server_rss_peak_sampled_kib": (peak_sampled > 0).then_some(peak_sampled),
        "server": end_mem,
    }))
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| (a as f64 / b as f64 * 100.0).round() / 100.0)
}

/// One broker during the storm: a registration every `period` from `first` until `until`, each
/// waited for (brokers register synchronously); a late one starts at once after the previous.
async fn storm_broker(
    mut reg: Registered,
    first: Instant,
    period: Duration,
    until: Instant,
    timeout: Duration,
) -> (BrokerStorm, Registered) {
    let mut out = BrokerStorm {
        latencies: Latencies::new(),
        ok: 0,
        errors: Vec::new(),
        late: 0,
    };
    let mut next = first;
    // Bounded: one registration per period until `until`.
    while next < until {
        tokio::time::sleep_until(next.into()).await;
        let started = Instant::now();
        if started.saturating_duration_since(next) > Duration::from_millis(100) {
            out.late += 1;
        }
        let Registered {
            broker,
            stream,
            buf,
        } = &mut reg;
        match broker.register(stream, buf, timeout).await {
            Ok(_) => {
                out.latencies.record(started.elapsed());
                out.ok += 1;
            }
            Err(e) => {
                out.errors.push(format!("{}: {e}", broker.name));
                // The connection may be unusable now; stop this broker.
                break;
            }
        }
        next += period;
    }
    (out, reg)
}
