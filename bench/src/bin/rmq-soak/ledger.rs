//! What the soak run knows at any moment: the fault windows (when a failure is excused), what was
//! lost (when it is not), and the counters of the summary. One `Ledger` per run, shared by every
//! task of the driver's single thread; a borrow never lasts across an `.await`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// A NameServer of the pair (0 = ns-a, 1 = ns-b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ns(pub usize);

impl std::fmt::Display for Ns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => f.write_str("ns-a"),
            1 => f.write_str("ns-b"),
            n => write!(f, "ns-{n}"),
        }
    }
}

/// A broker instance of the topology (an index into `Topology::instances`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Inst(pub usize);

/// What a fault window excuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The NameServer is down (from the SIGKILL until it accepts again): requests to it fail,
    /// and connections opened before it fail too.
    Down(Ns),
    /// Its route registry panicked and is being reset: any answer of that server may be an error
    /// until the panic is shown contained.
    Registry(Ns),
    /// The broker instance may be missing from that NameServer's routes: from the fault until the
    /// broker's first registration sent after it was acknowledged.
    Broker(Ns, Inst),
}

/// Identifies an open window, to close it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowId(u64);

#[derive(Debug)]
struct Window {
    id: WindowId,
    scope: Scope,
    opened: Instant,
    closed: Option<Instant>,
}

/// The kinds of loss; every one must stay at zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Loss {
    LookupFailed,
    BrokerMissing,
    BrokerMissingAtEnd,
    KvWriteMissing,
    KvFileUnparsable,
    ServerDied,
    PanicNotContained,
    UncleanStop,
}

impl Loss {
    pub const ALL: [Loss; 8] = [
        Loss::LookupFailed,
        Loss::BrokerMissing,
        Loss::BrokerMissingAtEnd,
        Loss::KvWriteMissing,
        Loss::KvFileUnparsable,
        Loss::ServerDied,
        Loss::PanicNotContained,
        Loss::UncleanStop,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Loss::LookupFailed => "route lookups failed outside fault windows",
            Loss::BrokerMissing => "brokers missing from routes outside fault windows",
            Loss::BrokerMissingAtEnd => "brokers missing after the re-registration period",
            Loss::KvWriteMissing => "acknowledged KV writes missing",
            Loss::KvFileUnparsable => "KV files that did not parse",
            Loss::ServerDied => "server processes that died without being killed",
            Loss::PanicNotContained => "panics not contained",
            Loss::UncleanStop => "servers that did not stop cleanly on SIGTERM",
        }
    }
}

/// Losses printed as they happen; the rest are only counted.
const PRINTED_LOSSES: u64 = 50;

/// Counters for the summary (what was done and seen; none of them fails the run).
#[derive(Debug, Default)]
pub struct Stats {
    pub lookups: u64,
    pub lookups_ok: u64,
    pub lookups_excused: u64,
    pub lookups_slow: u64,
    pub mid_frame_kills: u64,
    pub cut_in: BTreeMap<&'static str, u64>,
    pub resets: u64,
    pub sigkills: BTreeMap<String, u64>,
    pub downtime: Duration,
    pub restart_time_max: Duration,
    pub panics: BTreeMap<&'static str, u64>,
    pub panics_contained: u64,
    /// Contained panics of actors (not of a connection): each is logged by the server.
    pub actor_panics_contained: u64,
    pub faults_skipped: u64,
    pub kv_sent: u64,
    pub kv_acked: u64,
    pub kv_refused: u64,
    pub kv_unanswered: u64,
    pub kv_checks: u64,
    pub kv_keys_checked: u64,
    pub kv_file_parses: u64,
    pub kv_rounds: u64,
    pub kv_round_panics: u64,
    pub windows: u64,
    pub window_max: Duration,
}

#[derive(Debug)]
struct Inner {
    started: Instant,
    next_id: u64,
    windows: Vec<Window>,
    losses: BTreeMap<Loss, u64>,
    printed: u64,
    stats: Stats,
    /// The fault most recently injected, named in loss reports.
    last_fault: String,
}

/// The run's shared ledger (cheap to clone: one `Rc`).
#[derive(Debug, Clone)]
pub struct Ledger(Rc<RefCell<Inner>>);

/// Windows closed longer ago than this are forgotten: no request lasts that long (every request
/// has a timeout well below it).
const WINDOW_MEMORY: Duration = Duration::from_secs(120);

impl Ledger {
    pub fn new() -> Self {
        Self(Rc::new(RefCell::new(Inner {
            started: Instant::now(),
            next_id: 0,
            windows: Vec::new(),
            losses: BTreeMap::new(),
            printed: 0,
            stats: Stats::default(),
            last_fault: "none yet".into(),
        })))
    }

    /// Seconds since the start, for log lines.
    pub fn at(&self) -> f64 {
        self.0.borrow().started.elapsed().as_secs_f64()
    }

    /// Prints one timestamped line.
    pub fn say(&self, text: impl AsRef<str>) {
        println!("[{:7.1}s] {}", self.at(), text.as_ref());
    }

    pub fn set_last_fault(&self, text: impl Into<String>) {
        self.0.borrow_mut().last_fault = text.into();
    }

    pub fn last_fault(&self) -> String {
        self.0.borrow().last_fault.clone()
    }

    /// Opens a window now.
    pub fn open(&self, scope: Scope) -> WindowId {
        let mut inner = self.0.borrow_mut();
        let now = Instant::now();
        inner.windows.retain(|w| {
            w.closed
                .is_none_or(|c| now.duration_since(c) < WINDOW_MEMORY)
        });
        let id = WindowId(inner.next_id);
        inner.next_id += 1;
        inner.windows.push(Window {
            id,
            scope,
            opened: now,
            closed: None,
        });
        inner.stats.windows += 1;
        id
    }

    /// Closes a window now (a closed or forgotten one is left alone).
    pub fn close(&self, id: WindowId) {
        let mut inner = self.0.borrow_mut();
        let now = Instant::now();
        let mut length = None;
        if let Some(w) = inner
            .windows
            .iter_mut()
            .find(|w| w.id == id && w.closed.is_none())
        {
            w.closed = Some(now);
            length = Some(now.duration_since(w.opened));
        }
        if let Some(length) = length {
            inner.stats.window_max = inner.stats.window_max.max(length);
        }
    }

    /// Whether a window whose scope `matches` was open at any moment of `[from, to]`.
    pub fn excused(&self, from: Instant, to: Instant, matches: impl Fn(Scope) -> bool) -> bool {
        self.0.borrow().windows.iter().any(|w| {
            matches(w.scope) && w.opened <= to && w.closed.is_none_or(|closed| closed >= from)
        })
    }

    /// Windows still open.
    pub fn open_windows(&self) -> usize {
        self.0
            .borrow()
            .windows
            .iter()
            .filter(|w| w.closed.is_none())
            .count()
    }

    /// Records a loss and prints it (the first ones).
    pub fn lost(&self, kind: Loss, text: impl AsRef<str>) {
        let print = {
            let mut inner = self.0.borrow_mut();
            *inner.losses.entry(kind).or_default() += 1;
            inner.printed += 1;
            inner.printed <= PRINTED_LOSSES
        };
        if print {
            self.say(format!("LOST ({}): {}", kind.label(), text.as_ref()));
        }
    }

    pub fn losses(&self, kind: Loss) -> u64 {
        self.0.borrow().losses.get(&kind).copied().unwrap_or(0)
    }

    pub fn total_losses(&self) -> u64 {
        self.0.borrow().losses.values().sum()
    }

    /// Updates the counters.
    pub fn stat(&self, update: impl FnOnce(&mut Stats)) {
        update(&mut self.0.borrow_mut().stats);
    }

    /// Reads the counters.
    pub fn stats<R>(&self, read: impl FnOnce(&Stats) -> R) -> R {
        read(&self.0.borrow().stats)
    }
}

/// A small xorshift64* generator: the fault schedule is reproducible from its seed (timing
/// aside).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Never zero; spread small seeds.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Another generator for another task, derived from this one.
    pub fn fork(&mut self) -> Self {
        Self::new(self.next_u64())
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// Uniform in `[low, high]`.
    pub fn between(&mut self, low: Duration, high: Duration) -> Duration {
        let span = high.saturating_sub(low).as_micros() as u64;
        low + Duration::from_micros(self.next_u64() % (span + 1))
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_excuses_what_overlaps_it() {
        let ledger = Ledger::new();
        let before = Instant::now();
        let w = ledger.open(Scope::Down(Ns(0)));
        let during = Instant::now();
        ledger.close(w);
        let after = Instant::now() + Duration::from_millis(1);
        let down_a = |s| s == Scope::Down(Ns(0));
        assert!(ledger.excused(before, during, down_a));
        assert!(ledger.excused(during, after, down_a));
        assert!(!ledger.excused(after, after, down_a));
        assert!(!ledger.excused(before, after, |s| s == Scope::Down(Ns(1))));
        assert_eq!(ledger.open_windows(), 0);
    }

    #[test]
    fn an_open_window_excuses_everything_after_it() {
        let ledger = Ledger::new();
        ledger.open(Scope::Broker(Ns(1), Inst(3)));
        let later = Instant::now() + Duration::from_secs(5);
        assert!(ledger.excused(later, later, |s| s == Scope::Broker(Ns(1), Inst(3))));
        assert_eq!(ledger.open_windows(), 1);
    }

    #[test]
    fn losses_are_counted_by_kind() {
        let ledger = Ledger::new();
        ledger.lost(Loss::KvWriteMissing, "k");
        ledger.lost(Loss::KvWriteMissing, "j");
        assert_eq!(ledger.losses(Loss::KvWriteMissing), 2);
        assert_eq!(ledger.losses(Loss::LookupFailed), 0);
        assert_eq!(ledger.total_losses(), 2);
    }

    #[test]
    fn the_generator_is_reproducible_and_in_range() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let d = a.between(Duration::from_millis(5), Duration::from_millis(9));
            b.between(Duration::from_millis(5), Duration::from_millis(9));
            assert!(d >= Duration::from_millis(5) && d <= Duration::from_millis(9));
        }
    }
}
