//! `scale`: one point of the scale curve. A table shape (topics on each of G broker groups, master
//! and slave each, every topic on every group or spread over a few) is registered, timed, then
//! the server is measured: its RSS per topic-broker entry against the data's own size, one full
//! re-registration round of every broker (the brokers' 30 s tick) with route probes during it,
//! steady-state route latency, and the big reads (cluster info, topic lists) with the server's
//! peak RSS while it answers them, past the 16 MiB client frame limit if the table is that big.
//!
//! ```text
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> scale --groups 2 --topics 100000
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> scale --groups 100 --topics 1000 --spread 2
//! ```
//!
//! Bodies over 16 MiB are sent as a 5.x broker with `enableSplitRegistration=true` sends them
//! (`--split auto`): 800 topics a request, the same DataVersion on each. With `--hold` the brokers
//! stay connected (registered) after the measurements until stdin closes, so that a driver can
//! look at the server with its tables full (bench/scale.py: Java's live heap, stop time).

mod fleet;
mod probe;
mod reads;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Args;
use serde_json::{json, Value};

use crate::stats::{mib, micros, CpuWindow, Memory};
use crate::{BenchError, Common};
use fleet::{Shape, Split};
use probe::Probes;

#[derive(Debug, Clone, Args)]
pub struct ScaleArgs {
    /// Broker groups (a master and a slave each).
    #[arg(long, default_value_t = 2)]
    pub groups: usize,
    /// Topics on each group.
    #[arg(long, default_value_t = 10_000)]
    pub topics: usize,
    /// Each topic on this many groups (0: every topic on every group).
    #[arg(long, default_value_t = 0)]
    pub spread: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// Split registration rounds as a 5.x broker with `enableSplitRegistration` does.
    #[arg(long, value_enum, default_value = "auto")]
    pub split: Split,
    /// Topics per request of a split round (the broker's `splitRegistrationSize`).
    #[arg(long, default_value_t = 800)]
    pub split_size: usize,
    /// Brokers registering at once.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Route probe connections (one request at a time each).
    #[arg(long, default_value_t = 4)]
    pub probes: usize,
    /// Route requests a second of all the probes together, during the round and at steady state
    /// (latency at a fixed rate; 0: as fast as they are answered).
    #[arg(long, default_value_t = 1000.0)]
    pub probe_rate: f64,
    /// Steady-state route probing after the re-registration round.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3s")]
    pub steady: Duration,
    /// Closed-loop route probing after the steady state (answers and bytes a second; 0s: none).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub throughput: Duration,
    /// Times each big read is asked.
    #[arg(long, default_value_t = 3)]
    pub reads: usize,
    /// The largest answer read (answers past 16 MiB are still read up to this, to see them).
    #[arg(long, default_value_t = 1 << 30)]
    pub read_limit: usize,
    /// Names of topics and groups start with this (a warm-up run uses another).
    #[arg(long, default_value = "Scale")]
    pub prefix: String,
    /// After measuring, print `holding` and keep the brokers registered until stdin closes, at
    /// most this long.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub hold: Option<Duration>,
}

pub async fn run(common: &Common, args: &ScaleArgs) -> Result<Value, BenchError> {
    if common.tls_config.is_some() {
        return Err(BenchError::Usage("scale runs plain TCP only".into()));
    }
    let shape = Shape::new(args.groups, args.topics, args.spread, &args.prefix)?;
    let built = Instant::now();
    let (members, split) = fleet::members(&shape, args.queues, args.split, args.split_size)?;
    let (requests, bytes) = fleet::round_size(&members);
    let floor = shape.floor_bytes();
    println!(
        "shape: {} groups x {} topics (each on {} groups): {} topics, {} entries, 2 brokers a \
         group; a round is {requests} requests, {:.1} MiB{} (built in {:.1} s)",
        shape.groups,
        shape.per_group,
        shape.spread,
        shape.distinct(),
        shape.entries(),
        bytes as f64 / 1048576.0,
        if split { ", split" } else { "" },
        built.elapsed().as_secs_f64()
    );
    let pid = common.pid;
    let idle = pid.and_then(Memory::of);
    let cpu = CpuWindow::start(pid);
    let (members, took) =
        fleet::round(members, common.addr, args.concurrency, common.timeout).await?;
    let register = json!({"s": took.as_secs_f64(), "cpu": cpu.finish()});
    println!("registered in {:.2} s", took.as_secs_f64());
    tokio::time::sleep(TRANSIENT_AFTER).await;
    let transient = pid.and_then(Memory::of);
    tokio::time::sleep(SETTLED_AFTER - TRANSIENT_AFTER).await;
    let after = pid.and_then(Memory::of);
    let memory = memory_json(idle, transient, after, shape.entries(), floor);
    let probe_frames = probe::requests(&shape)?;
    // Routes are asked before the round, as the clients of a running cluster ask them every
    // 30 s: the round is then measured as the brokers' tick is met in service. These first asks
    // are a figure of their own (each answer made afresh).
    let first = Probes::once(common.addr, args.probes, &probe_frames, common.timeout).await;
    println!("first route asks: {}", first.latencies.summary());
    let limit = common.timeout * 4 + Duration::from_secs(600);
    let pace = (args.probes, args.probe_rate);
    let probes = Probes::start(common.addr, pace, &probe_frames, common.timeout, limit);
    let cpu = CpuWindow::start(pid);
    let (members, took) =
        fleet::round(members, common.addr, args.concurrency, common.timeout).await?;
    let cpu = cpu.finish();
    let during = probes.stop().await;
    println!(
        "re-registration round {:.2} s; routes during it: {}",
        took.as_secs_f64(),
        during.latencies.summary()
    );
    let reregister = json!({"s": took.as_secs_f64(), "cpu": cpu, "routes": during.to_json()});
    let probes = Probes::start(
        common.addr,
        pace,
        &probe_frames,
        common.timeout,
        args.steady,
    );
    tokio::time::sleep(args.steady).await;
    let steady = probes.stop().await;
    println!("steady routes: {}", steady.latencies.summary());
    let throughput = route_throughput(common, args, &probe_frames).await;
    let big = big_reads(common, args).await;
    if let Some(hold) = args.hold {
        hold_until_stdin_closes(hold).await;
    }
    drop(members);
    Ok(json!({
        "workload": "scale",
        "groups": shape.groups,
        "topics_per_group": shape.per_group,
        "spread": shape.spread,
        "topics": shape.distinct(),
        "entries": shape.entries(),
        "brokers": 2 * shape.groups,
        "split": split,
        "round_requests": requests,
        "round_bytes": bytes,
        "memory": memory,
        "register": register,
        "reregister": reregister,
        "first_routes": first.to_json(),
        "steady_routes": steady.to_json(),
        "route_throughput": throughput,
        "reads": big,
    }))
}

/// The probes in a closed loop for `--throughput`: route answers and body bytes a second.
async fn route_throughput(common: &Common, args: &ScaleArgs, frames: &Arc<Vec<Bytes>>) -> Value {
    if args.throughput.is_zero() {
        return Value::Null;
    }
    let closed = (args.probes, 0.0);
    let started = Instant::now();
    let probes = Probes::start(common.addr, closed, frames, common.timeout, args.throughput);
    tokio::time::sleep(args.throughput).await;
    let result = probes.stop().await;
    let figures = result.throughput_json(started.elapsed());
    println!(
        "route throughput, closed loop: {:.0} answers/s, {:.1} MiB/s",
        figures["answers_per_s"].as_f64().unwrap_or(0.0),
        figures["mib_per_s"].as_f64().unwrap_or(0.0)
    );
    figures
}

/// When RSS is read after the registration: once while the decoded bodies may still be held
/// (the transient figure), and once settled, after our server has given free heap pages back
/// (2 s after the last large body: actors/src/limits.rs), as Java's live heap is read after a
/// full GC. Java's RSS does not shrink either way.
const TRANSIENT_AFTER: Duration = Duration::from_secs(1);
const SETTLED_AFTER: Duration = Duration::from_secs(4);

/// RSS before, shortly after and settled after, bytes per entry above idle (settled and
/// transient), and the data floor per entry.
fn memory_json(
    idle: Option<Memory>,
    transient: Option<Memory>,
    after: Option<Memory>,
    entries: usize,
    floor: usize,
) -> Value {
    let per_entry = |after: Option<Memory>| {
        idle.zip(after).map(|(i, a)| {
            (a.rss_kib.saturating_sub(i.rss_kib) * 1024) as f64 / entries.max(1) as f64
        })
    };
    let (settled, early) = (per_entry(after), per_entry(transient));
    let floor_per_entry = floor as f64 / entries.max(1) as f64;
    if let (Some(i), Some(a), Some(per)) = (idle, after, settled) {
        println!(
            "RSS idle {} -> {} settled after registering ({:.0} B per entry {}s after): {per:.0} B \
             per entry (data floor {floor_per_entry:.1} B)",
            mib(i.rss_kib),
            mib(a.rss_kib),
            early.unwrap_or(f64::NAN),
            TRANSIENT_AFTER.as_secs()
        );
    }
    json!({
        "idle_rss_kib": idle.map(|m| m.rss_kib),
        "transient_rss_kib": transient.map(|m| m.rss_kib),
        "transient_bytes_per_entry": early.map(|v| v.round()),
        "rss_kib": after.map(|m| m.rss_kib),
        "hwm_kib": after.map(|m| m.hwm_kib),
        "bytes_per_entry": settled.map(|v| v.round()),
        "floor_bytes": floor,
        "floor_per_entry": (floor_per_entry * 10.0).round() / 10.0,
    })
}

/// The three big reads, each `args.reads` times.
async fn big_reads(common: &Common, args: &ScaleArgs) -> Value {
    let mut out = serde_json::Map::new();
    for (name, cmd) in reads::requests() {
        let r = reads::measure(
            common.addr,
            common.pid,
            cmd,
            args.reads,
            args.read_limit,
            common.timeout * 6,
        )
        .await;
        let ms = r["ms_median"].as_f64();
        println!(
            "{name}: {} ms median, code {}, {} bytes{}{}",
            ms.map_or("-".into(), |v| format!("{v:.1}")),
            r["code"],
            r["frame_bytes"],
            if r["over_client_limit"] == json!(true) {
                " (past the 16 MiB client frame limit)"
            } else {
                ""
            },
            r["error"]
                .as_str()
                .map_or(String::new(), |e| format!("; error: {e}"))
        );
        out.insert(name.to_owned(), r);
    }
    Value::Object(out)
}

/// Prints `holding` (the driver waits for it) and waits until stdin closes or `hold` passes.
async fn hold_until_stdin_closes(hold: Duration) {
    println!("holding: brokers stay registered until stdin closes (at most {hold:?})");
    let (closed, wait) = tokio::sync::oneshot::channel::<()>();
    // A plain thread (the runtime has no stdin support): it ends at EOF or with the process.
    std::thread::spawn(move || {
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        // Bounded by the input: each read returns data, EOF or an error.
        while matches!(std::io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
        let _ = closed.send(());
    });
    if tokio::time::timeout(hold, wait).await.is_err() {
        println!("hold ended after {}", micros(hold.as_micros() as u64));
    }
}
