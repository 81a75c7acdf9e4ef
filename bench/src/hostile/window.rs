//! The probes' figures over a window of due times: latency by request kind, slow and lost
//! replies, error answers, write lag, and how many probe connections were affected.

use std::collections::BTreeMap;
use std::time::Duration;

use rmq_protocol::ResponseCode;
use serde_json::{json, Value};

use super::args::PROBE_KINDS;
use super::probe::{micros_u32, ProbeRecord};
use crate::stats::Latencies;

/// The probes' figures over a window of due times.
#[derive(Default)]
pub(super) struct ProbeWindow {
    pub(super) all: Latencies,
    pub(super) by_kind: [Latencies; 3],
    pub(super) slow: [u64; 3],
    pub(super) lost: u64,
    /// Answers other than SUCCESS, by response code.
    pub(super) errors: BTreeMap<i32, u64>,
    pub(super) lag: Latencies,
    /// Probe connections with at least one slow reply.
    pub(super) affected: usize,
}

pub(super) fn window(
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
    pub(super) fn slow_total(&self) -> u64 {
        self.slow.iter().sum()
    }

    pub(super) fn to_json(&self, probes: usize) -> Value {
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
