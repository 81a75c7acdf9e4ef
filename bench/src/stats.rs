//! Latency histograms (microseconds, HDR) and what `/proc` says about a process.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Latencies in microseconds, 1 µs to 10 min, 3 significant digits.
#[derive(Debug, Clone)]
pub struct Latencies(Histogram<u64>);

impl Default for Latencies {
    fn default() -> Self {
        Self::new()
    }
}

impl Latencies {
    pub fn new() -> Self {
        // Bounds and precision are constants within hdrhistogram's limits.
        Self(Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds"))
    }

    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.0.saturating_record(micros.max(1));
    }

    pub fn merge(&mut self, other: &Latencies) {
        // Same bounds on both sides, so adding cannot fail; saturate per value otherwise.
        if self.0.add(&other.0).is_err() {
            for v in other.0.iter_recorded() {
                self.0
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    pub fn max(&self) -> u64 {
        self.0.max()
    }

    /// `{"count", "p50", "p99", "p999", "max", "mean"}` in microseconds.
    pub fn to_json(&self) -> Value {
        json!({
            "count": self.count(),
            "p50": self.quantile(0.50),
            "p99": self.quantile(0.99),
            "p999": self.quantile(0.999),
            "max": self.max(),
            "mean": (self.0.mean() * 10.0).round() / 10.0,
        })
    }

    /// `p50 … p99 … p99.9 … max …` in µs (or ms when large).
    pub fn summary(&self) -> String {
        if self.count() == 0 {
            return "no samples".into();
        }
        format!(
            "p50 {} | p99 {} | p99.9 {} | max {} ({} samples)",
            micros(self.quantile(0.50)),
            micros(self.quantile(0.99)),
            micros(self.quantile(0.999)),
            micros(self.max()),
            self.count()
        )
    }
}

/// A microsecond figure for people: `850 µs`, `12.3 ms`.
pub fn micros(us: u64) -> String {
    if us < 10_000 {
        format!("{us} µs")
    } else {
        format!("{:.1} ms", us as f64 / 1000.0)
    }
}

/// VmRSS and VmHWM of a process, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

impl Memory {
    /// Reads `/proc/<pid>/status`; `None` if the process is gone or the fields are missing.
    pub fn of(pid: u32) -> Option<Self> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        Some(Self {
            rss_kib: field("VmRSS:")?,
            hwm_kib: field("VmHWM:")?,
        })
    }
}

/// User + system CPU time of a process (all its threads) from `/proc/<pid>/stat`.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces and parentheses).
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux ABI that matters here.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU use of the server (if a PID is known) and of this generator over a window.
#[derive(Debug, Clone, Copy)]
pub struct CpuWindow {
    pid: Option<u32>,
    started: Instant,
    server: Option<Duration>,
    bench: Option<Duration>,
}

impl CpuWindow {
    pub fn start(pid: Option<u32>) -> Self {
        Self {
            pid,
            started: Instant::now(),
            server: pid.and_then(cpu_time),
            bench: cpu_time(std::process::id()),
        }
    }

    /// `{"server_cpu_s", "server_cores", "bench_cpu_s", "bench_cores"}` since `start`.
    pub fn finish(&self) -> Value {
        let wall = self.started.elapsed().as_secs_f64().max(1e-9);
        let delta = |before: Option<Duration>, pid: Option<u32>| {
            let now = pid.and_then(cpu_time)?;
            Some(now.saturating_sub(before?).as_secs_f64())
        };
        let server = delta(self.server, self.pid);
        let bench = delta(self.bench, Some(std::process::id()));
        let round = |v: f64| (v * 100.0).round() / 100.0;
        json!({
            "server_cpu_s": server.map(round),
            "server_cores": server.map(|s| round(s / wall)),
            "bench_cpu_s": bench.map(round),
            "bench_cores": bench.map(|s| round(s / wall)),
        })
    }
}

/// `{"pid", "rss_kib", "hwm_kib"}` of the server, nulls without a PID.
pub fn memory_json(pid: Option<u32>) -> Value {
    let mem = pid.and_then(Memory::of);
    json!({
        "pid": pid,
        "rss_kib": mem.map(|m| m.rss_kib),
        "hwm_kib": mem.map(|m| m.hwm_kib),
    })
}

/// `12.3 MiB` for a KiB figure.
pub fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_in_micros() {
        let mut a = Latencies::new();
        let mut b = Latencies::new();
        for us in 1..=100 {
            a.record(Duration::from_micros(us));
        }
        b.record(Duration::from_millis(5));
        a.merge(&b);
        assert_eq!(a.count(), 101);
        assert_eq!(a.quantile(0.5), 51);
        assert!(a.max() >= 4_995 && a.max() <= 5_005);
    }

    #[test]
    fn own_process_is_readable() {
        let me = std::process::id();
        let mem = Memory::of(me).unwrap();
        assert!(mem.rss_kib > 0 && mem.hwm_kib >= mem.rss_kib);
        assert!(cpu_time(me).is_some());
    }
}
