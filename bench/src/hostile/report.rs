//! The report: one row per phase (the hostile frames and the probes' figures over the phase),
//! the server's busiest threads per phase, and the run's JSON result.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::args::{HostileArgs, Kind};
use super::conn::HostileStats;
use super::frames::human;
use super::probe::ProbeRecord;
use super::threads::busiest;
use super::window::window;
use crate::stats::{mib, micros};
use crate::Common;

/// One phase: what the hostile connections sent, over which window of the run.
pub(super) struct PhaseResult {
    pub(super) name: String,
    pub(super) kind: Option<Kind>,
    pub(super) conns: usize,
    pub(super) what: String,
    pub(super) wire_bytes: usize,
    pub(super) from: Duration,
    pub(super) to: Duration,
    pub(super) hostile: HostileStats,
    pub(super) cpu: Value,
    pub(super) memory: Value,
}

/// What the run observed, for the report.
pub(super) struct Observed {
    pub(super) phases: Vec<PhaseResult>,
    pub(super) records: Vec<ProbeRecord>,
    /// The probes' request kinds in turn (indices into `PROBE_KINDS`).
    pub(super) probe_kinds: Vec<usize>,
    /// Per phase, tid -> (name, CPU) of the server's threads.
    pub(super) threads: BTreeMap<u64, BTreeMap<u32, (String, Duration)>>,
    /// When the probes were stopped, from their start.
    pub(super) stopped: Duration,
    /// Why the phases ended early.
    pub(super) failure: Option<String>,
}

/// Prints the table, the threads and the verdict lines; the run's JSON result.
pub(super) fn report(common: &Common, args: &HostileArgs, observed: &Observed) -> Value {
    let probe_failures: Vec<String> = observed
        .records
        .iter()
        .filter_map(|r| r.failure.clone())
        .collect();
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
    for (i, phase) in observed.phases.iter().enumerate() {
        let (row, line) = phase_report(args, observed, i, phase);
        rows.push(row);
        thread_lines.push(line);
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
    if let Some(why) = &observed.failure {
        println!("stopped early: {why}");
    }
    json!({
        "workload": "hostile",
        "probes": args.probes,
        "interval_ms": args.interval.as_secs_f64() * 1e3,
        "slow_ms": args.slow.as_secs_f64() * 1e3,
        "max_frame": args.max_frame,
        "max_inflated": args.max_inflated,
        "phases": rows,
        "phases_with_slow_probes": over,
        "probe_failures": probe_failures,
        "stopped_early": observed.failure,
    })
}

/// Prints the row of phase `i`; its JSON and its line of busiest threads.
fn phase_report(
    args: &HostileArgs,
    observed: &Observed,
    i: usize,
    phase: &PhaseResult,
) -> (Value, String) {
    let busy = busiest(observed.threads.get(&(i as u64)), 4);
    let w = window(
        &observed.records,
        &observed.probe_kinds,
        args.interval,
        phase.from,
        phase.to,
        args.slow,
        observed.stopped,
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
    let row = json!({
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
    });
    let line = format!(
        "{:<30} {}",
        phase.name,
        busy.iter()
            .map(|(tid, name, cpu)| format!("{tid} {name} {cpu:.2} s"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    (row, line)
}
