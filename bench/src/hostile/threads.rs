//! The server's threads: CPU time per thread from `/proc/<pid>/task`, sampled per phase.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
pub(super) async fn sample_threads(
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
pub(super) fn busiest(
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
