//! Failed signature checks (unknown access key, bad signature) by source: past
//! `access.max_failures` within `access.failure_window`, a source's signed requests are refused
//! unchecked until its window ends. Counted per source address and per network prefix (an IPv4
//! /24, an IPv6 /56: addresses a client can easily hold many of) with [`PREFIX_FACTOR`] times
//! the limit, so that rotating through neighbouring addresses does not multiply the attempts.
//!
//! One ledger is server-wide, owned by the `AccessGuard` (every failure is reported to it; a
//! source or prefix that uses up its attempts is announced to every connection thread). Each
//! connection thread also keeps one, fed by its own failures and by those announcements, so that
//! the check on the request path is a local lookup and a flood on one connection is stopped at
//! once, without waiting for a message. Both outlive every connection.
//!
//! Memory is bounded ([`MAX_ENTRIES`]), and a full ledger never stops counting: expired windows
//! are dropped first, then the oldest unblocked entries, then the oldest blocked ones, an
//! eighth of the table at a time (so each insertion costs O(1) amortized).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

use super::patterns;

/// Sources and prefixes one ledger remembers at most.
pub const MAX_ENTRIES: usize = 16_384;

/// A prefix may fail this many times the per-source limit.
pub const PREFIX_FACTOR: u32 = 4;

/// What a window counts: one address, or the prefix it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counted {
    Source(IpAddr),
    /// An IPv4 /24 or an IPv6 /56, as its first address.
    Prefix(IpAddr),
}

impl Counted {
    /// The prefix of `ip` (IPv4-mapped addresses count as IPv4).
    pub fn prefix_of(ip: IpAddr) -> Counted {
        Counted::Prefix(match patterns::canonical(ip) {
            IpAddr::V4(v4) => {
                let [a, b, c, _] = v4.octets();
                IpAddr::V4(Ipv4Addr::new(a, b, c, 0))
            }
            IpAddr::V6(v6) => {
                let bits = u128::from(v6) & !((1u128 << 72) - 1);
                IpAddr::V6(Ipv6Addr::from(bits))
            }
        })
    }

    fn source(ip: IpAddr) -> Counted {
        Counted::Source(patterns::canonical(ip))
    }
}

/// A source or prefix that used up its attempts, until `until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub counted: Counted,
    pub until: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
    /// Set once the limit is reached (here or, announced, elsewhere).
    blocked_until: Option<Instant>,
}

/// Failed attempts by source and prefix.
#[derive(Debug)]
pub struct FailureLedger {
    limit: u32,
    window: Duration,
    capacity: usize,
    entries: HashMap<Counted, Window>,
}

impl FailureLedger {
    /// `limit` failures per `window` per source.
    pub fn new(limit: u32, window: Duration) -> Self {
        Self::with_capacity(limit, window, MAX_ENTRIES)
    }

    pub fn with_capacity(limit: u32, window: Duration, capacity: usize) -> Self {
        Self {
            limit: limit.max(1),
            window,
            capacity: capacity.max(8),
            entries: HashMap::new(),
        }
    }

    fn limit_of(&self, counted: Counted) -> u32 {
        match counted {
            Counted::Source(_) => self.limit,
            Counted::Prefix(_) => self.limit.saturating_mul(PREFIX_FACTOR),
        }
    }

    /// Whether `source` (or its prefix) has used up its failed attempts at `now`.
    pub fn blocked(&self, source: IpAddr, now: Instant) -> bool {
        [Counted::source(source), Counted::prefix_of(source)]
            .iter()
            .any(|c| {
                self.entries
                    .get(c)
                    .and_then(|w| w.blocked_until)
                    .is_some_and(|until| now < until)
            })
    }

    /// Counts a failed attempt of `source` at `now`; answers the blocks it caused (the source's
    /// and/or its prefix's), each once.
    pub fn failed(&mut self, source: IpAddr, now: Instant) -> Vec<Block> {
        [Counted::source(source), Counted::prefix_of(source)]
            .into_iter()
            .filter_map(|counted| self.count(counted, now))
            .collect()
    }

    fn count(&mut self, counted: Counted, now: Instant) -> Option<Block> {
        let limit = self.limit_of(counted);
        let window = self.window;
        let entry = self.entry(counted, now);
        if now.saturating_duration_since(entry.started) >= window
            && entry.blocked_until.is_none_or(|until| now >= until)
        {
            *entry = fresh(now);
        }
        entry.failures = entry.failures.saturating_add(1);
        if entry.failures == limit && entry.blocked_until.is_none() {
            let until = entry.started + window;
            entry.blocked_until = Some(until);
            return Some(Block { counted, until });
        }
        None
    }

    /// Applies a block announced by the server-wide ledger.
    pub fn block(&mut self, block: Block, now: Instant) {
        if block.until <= now {
            return;
        }
        let entry = self.entry(block.counted, now);
        entry.blocked_until = Some(
            entry
                .blocked_until
                .map_or(block.until, |u| u.max(block.until)),
        );
    }

    /// The entry of `counted`, made room for when the ledger is full.
    fn entry(&mut self, counted: Counted, now: Instant) -> &mut Window {
        if !self.entries.contains_key(&counted) && self.entries.len() >= self.capacity {
            self.make_room(now);
        }
        self.entries.entry(counted).or_insert_with(|| fresh(now))
    }

    /// Drops expired entries; if that frees less than an eighth of the table, the oldest
    /// unblocked entries go, then the oldest blocked ones, until an eighth is free.
    fn make_room(&mut self, now: Instant) {
        let window = self.window;
        self.entries.retain(|_, w| {
            now.saturating_duration_since(w.started) < window
                || w.blocked_until.is_some_and(|until| now < until)
        });
        let target = self.capacity - self.capacity / 8;
        if self.entries.len() <= target {
            return;
        }
        let mut order: Vec<(bool, Instant, Counted)> = self
            .entries
            .iter()
            .map(|(c, w)| (w.blocked_until.is_some(), w.started, *c))
            .collect();
        let excess = self.entries.len() - target;
        order.select_nth_unstable(excess - 1);
        for (_, _, counted) in &order[..excess] {
            self.entries.remove(counted);
        }
    }

    /// Entries remembered now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn fresh(now: Instant) -> Window {
    Window {
        started: now,
        failures: 0,
        blocked_until: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_source_is_blocked_after_its_failures_until_its_window_ends() {
        let mut ledger = FailureLedger::new(3, Duration::from_secs(60));
        let (a, b) = (ip("10.0.0.1"), ip("10.0.1.2"));
        let t0 = Instant::now();
        assert!(ledger.failed(a, t0).is_empty());
        assert!(ledger.failed(a, t0).is_empty());
        assert!(!ledger.blocked(a, t0));
        let blocks = ledger.failed(a, t0);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].counted, Counted::Source(a));
        assert!(ledger.blocked(a, t0 + Duration::from_secs(59)));
        assert!(
            ledger.blocked(ip("::ffff:10.0.0.1"), t0),
            "IPv4-mapped is the same source"
        );
        assert!(!ledger.blocked(b, t0));
        assert!(!ledger.blocked(a, t0 + Duration::from_secs(60)));
        assert!(ledger.failed(a, t0 + Duration::from_secs(61)).is_empty());
        assert!(!ledger.blocked(a, t0 + Duration::from_secs(61)));
    }

    #[test]
    fn neighbours_share_their_prefix_s_attempts() {
        let mut ledger = FailureLedger::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        let mut blocks = Vec::new();
        for i in 0..8u8 {
            blocks.extend(ledger.failed(IpAddr::from([192, 0, 2, i]), t0));
        }
        assert!(blocks.contains(&Block {
            counted: Counted::Prefix(ip("192.0.2.0")),
            until: t0 + Duration::from_secs(60)
        }));
        assert!(ledger.blocked(ip("192.0.2.200"), t0));
        assert!(!ledger.blocked(ip("192.0.3.1"), t0));
        // IPv6: a /56.
        for i in 0..8u16 {
            ledger.failed(IpAddr::from([0x2001, 0xdb8, 0, 0x00ff, i, 0, 0, 1]), t0);
        }
        assert!(ledger.blocked(ip("2001:db8:0:ff:ffff::9"), t0));
        assert!(!ledger.blocked(ip("2001:db8:0:100::9"), t0));
    }

    #[test]
    fn a_full_ledger_still_counts_a_fresh_source() {
        let mut ledger = FailureLedger::with_capacity(10, Duration::from_secs(60), 4096);
        let t0 = Instant::now();
        // 8,600 sources, one failure each, spread over many prefixes.
        for i in 0..8600u32 {
            ledger.failed(IpAddr::from((i << 8).to_be_bytes()), t0);
        }
        assert!(ledger.len() <= 4096);
        let fresh = ip("198.51.100.7");
        let checked = (0..500)
            .take_while(|_| {
                let blocked = ledger.blocked(fresh, t0);
                if !blocked {
                    ledger.failed(fresh, t0);
                }
                !blocked
            })
            .count();
        assert_eq!(checked, 10);
    }

    #[test]
    fn announced_blocks_apply_and_expire() {
        let mut ledger = FailureLedger::new(10, Duration::from_secs(60));
        let t0 = Instant::now();
        let a = ip("203.0.113.9");
        ledger.block(
            Block {
                counted: Counted::Source(a),
                until: t0 + Duration::from_secs(30),
            },
            t0,
        );
        assert!(ledger.blocked(a, t0 + Duration::from_secs(29)));
        assert!(!ledger.blocked(a, t0 + Duration::from_secs(30)));
    }
}
