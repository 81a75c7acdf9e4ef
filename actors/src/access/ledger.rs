//! Failed signature checks per source address, on one connection thread: past
//! `access.max_failures` within `access.failure_window`, a source's signed requests are refused
//! unchecked until its window ends. Each thread holds its share of the limit (connections are
//! spread over the threads round robin), like the other per-thread bounds
//! (the worker share). Memory is bounded: at most [`MAX_SOURCES`] sources are remembered; when
//! full, expired windows are dropped, and a new source that still does not fit is not counted
//! (it is still checked).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Sources one thread remembers at most.
pub const MAX_SOURCES: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

/// One thread's failed attempts by source.
#[derive(Debug)]
pub struct FailureLedger {
    limit: u32,
    window: Duration,
    sources: HashMap<IpAddr, Window>,
}

impl FailureLedger {
    /// `limit` failures per `window` per source.
    pub fn new(limit: u32, window: Duration) -> Self {
        Self {
            limit: limit.max(1),
            window,
            sources: HashMap::new(),
        }
    }

    /// Whether `source` has used up its failed attempts at `now`.
    pub fn blocked(&self, source: IpAddr, now: Instant) -> bool {
        self.sources.get(&source).is_some_and(|w| {
            now.saturating_duration_since(w.started) < self.window && w.failures >= self.limit
        })
    }

    /// Counts a failed attempt of `source` at `now`; true when it just used up its attempts.
    pub fn failed(&mut self, source: IpAddr, now: Instant) -> bool {
        if !self.sources.contains_key(&source) && self.sources.len() >= MAX_SOURCES {
            let window = self.window;
            self.sources
                .retain(|_, w| now.saturating_duration_since(w.started) < window);
            if self.sources.len() >= MAX_SOURCES {
                return false;
            }
        }
        let window = self.sources.entry(source).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now.saturating_duration_since(window.started) >= self.window {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
        window.failures == self.limit
    }

    /// Sources remembered now.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_blocked_after_its_failures_until_its_window_ends() {
        let mut ledger = FailureLedger::new(3, Duration::from_secs(60));
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let t0 = Instant::now();
        assert!(!ledger.failed(a, t0));
        assert!(!ledger.failed(a, t0));
        assert!(!ledger.blocked(a, t0));
        assert!(ledger.failed(a, t0));
        assert!(ledger.blocked(a, t0 + Duration::from_secs(59)));
        assert!(!ledger.blocked(b, t0));
        assert!(!ledger.blocked(a, t0 + Duration::from_secs(60)));
        assert!(!ledger.failed(a, t0 + Duration::from_secs(61)));
        assert!(!ledger.blocked(a, t0 + Duration::from_secs(61)));
    }

    #[test]
    fn memory_stays_bounded_whatever_the_number_of_sources() {
        let mut ledger = FailureLedger::new(1, Duration::from_secs(60));
        let t0 = Instant::now();
        for i in 0..(MAX_SOURCES as u32 + 100) {
            ledger.failed(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert_eq!(ledger.len(), MAX_SOURCES);
        // Once their windows end, new sources are counted again.
        let later = t0 + Duration::from_secs(61);
        assert!(ledger.failed("192.0.2.1".parse().unwrap(), later));
        assert_eq!(ledger.len(), 1);
    }
}
