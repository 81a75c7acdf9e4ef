//! The run: the probes' broker and KV entry, the probes, a baseline phase, then one phase per
//! hostile kind and count of hostile connections.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::ValueEnum;
use rmq_protocol::codec::encode_frame;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use serde_json::Value;
use tokio::task::JoinSet;

use super::args::{HostileArgs, Kind, PROBE_KINDS};
use super::conn::{hostile_conn, HostileStats};
use super::frames::{hostile_frames, human};
use super::names::{KV_KEY, KV_NAMESPACE, PROBE_GROUP, PROBE_TOPIC};
use super::probe::{probe, ProbeRecord};
use super::report::{report, Observed, PhaseResult};
use super::threads::sample_threads;
use crate::broker::{self, Broker, Registered};
use crate::stats::{memory_json, micros, CpuWindow};
use crate::wire::{self, route_request, RequestTemplate};
use crate::{BenchError, Common};

/// Pause between phases (not measured): the server finishes what the last phase left.
const SETTLE: Duration = Duration::from_secs(2);

/// The probes running: their tasks, when their first slot is due, and the flag that stops them.
struct Probes {
    tasks: JoinSet<ProbeRecord>,
    start: Instant,
    stop: Arc<AtomicBool>,
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

    // 1. The probes' broker, topic and KV entry.
    let registered = register_probe_broker(common).await?;
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
    put_probe_kv(common).await?;
    let (probe_kinds, templates) = probe_templates(args)?;

    // 2. The probes, connected one after the other (round-robin over the server's workers).
    let mut probes = start_probes(common, args, hard_end, templates).await?;
    print_plan(args, &probe_kinds, phases_total);

    // 3. Baseline, then the hostile phases; the server's threads sampled throughout (phase 0 is
    // the baseline, phase i the i-th hostile phase, odd numbers from 1001 the pauses between).
    let phase_id = Arc::new(AtomicU64::new(0));
    let sampler = common.pid.map(|pid| {
        tokio::spawn(sample_threads(
            pid,
            Arc::clone(&phase_id),
            Arc::clone(&probes.stop),
            hard_end,
        ))
    });
    let mut phases = Vec::new();
    tokio::time::sleep_until(probes.start.into()).await;
    phases.push(baseline(common, args, probes.start).await);
    let mut failure = None;
    'phases: for &kind in &kinds {
        for &conns in &counts {
            if Instant::now() + args.phase > hard_end {
                failure = Some("the run's time bound was reached".to_owned());
                break 'phases;
            }
            let index = phases.len();
            let phase = hostile_phase(common, args, kind, conns, probes.start, &phase_id, index);
            phases.push(phase.await?);
        }
    }
    probes.stop.store(true, Ordering::Relaxed);
    let stopped = probes.start.elapsed();
    let threads = match sampler {
        Some(task) => task
            .await
            .map_err(|e| BenchError::Protocol(format!("thread sampler: {e}")))?,
        None => BTreeMap::new(),
    };
    let mut records = Vec::new();
    while let Some(joined) = probes.tasks.join_next().await {
        records.push(joined.map_err(|e| BenchError::Protocol(format!("probe task: {e}")))?);
    }
    drop(keepers);

    // 4. The report.
    Ok(report(
        common,
        args,
        &Observed {
            phases,
            records,
            probe_kinds,
            threads,
            stopped,
            failure,
        },
    ))
}

/// The probes' broker with two topics: a broker's first registration may not carry exactly one.
async fn register_probe_broker(common: &Common) -> Result<Vec<Registered>, BenchError> {
    let topics = vec![PROBE_TOPIC.to_owned(), format!("{PROBE_TOPIC}-b")];
    let probe_broker = Arc::new(Broker::new(PROBE_GROUP, 0, &topics, 8)?);
    let (registered, _) = broker::register_all(
        common.addr,
        common.tls_config.as_ref(),
        vec![probe_broker],
        1,
        common.timeout,
    )
    .await?;
    Ok(registered)
}

/// The KV entry the probes read.
async fn put_probe_kv(common: &Common) -> Result<(), BenchError> {
    let mut setup =
        wire::connect_stream(common.addr, common.tls_config.as_ref(), common.timeout).await?;
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
    Ok(())
}

/// The probes' request kinds (indices into [`PROBE_KINDS`]) and a template for each, in turn.
fn probe_templates(
    args: &HostileArgs,
) -> Result<(Vec<usize>, Arc<Vec<RequestTemplate>>), BenchError> {
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
    Ok((probe_kinds, templates))
}

/// Connects the probes one after the other, then starts each at its own offset in the
/// interval, with as many slots as fit before `hard_end`.
async fn start_probes(
    common: &Common,
    args: &HostileArgs,
    hard_end: Instant,
    templates: Arc<Vec<RequestTemplate>>,
) -> Result<Probes, BenchError> {
    let mut streams = Vec::with_capacity(args.probes);
    for _ in 0..args.probes {
        streams.push(
            wire::connect_stream(common.addr, common.tls_config.as_ref(), common.timeout).await?,
        );
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
    Ok(Probes {
        tasks: probes,
        start,
        stop,
    })
}

fn print_plan(args: &HostileArgs, probe_kinds: &[usize], phases_total: usize) {
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
}

/// The probes alone for `--baseline`.
async fn baseline(common: &Common, args: &HostileArgs, start: Instant) -> PhaseResult {
    let cpu = CpuWindow::start(common.pid);
    tokio::time::sleep(args.baseline).await;
    PhaseResult {
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
    }
}

/// One hostile phase (the `index`-th of the run): after a pause, `conns` hostile connections
/// of `kind` for `--phase`.
async fn hostile_phase(
    common: &Common,
    args: &HostileArgs,
    kind: Kind,
    conns: usize,
    start: Instant,
    phase_id: &AtomicU64,
    index: usize,
) -> Result<PhaseResult, BenchError> {
    let hostile = hostile_frames(kind, conns, args)?;
    phase_id.store(1000 + index as u64, Ordering::Relaxed);
    tokio::time::sleep(SETTLE).await;
    phase_id.store(index as u64, Ordering::Relaxed);
    let from = start.elapsed();
    let until = Instant::now() + args.phase;
    let cpu = CpuWindow::start(common.pid);
    let mut tasks = JoinSet::new();
    for frames in hostile.frames.iter().take(conns) {
        tasks.spawn(hostile_conn(
            common.addr,
            common.tls_config.clone(),
            frames.clone(),
            until,
            common.timeout,
        ));
    }
    let mut stats = HostileStats::default();
    while let Some(joined) = tasks.join_next().await {
        stats.merge(joined.map_err(|e| BenchError::Protocol(format!("hostile task: {e}")))?);
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
    Ok(result)
}
