//! Limits: the owner of the server-wide budgets and of the count of everything a limit refused
//! (docs/limits.md). Connections ask it for inflation budget before inflating a compressed body
//! and tell it of every refusal; it counts them by limit, and logs them with a rate limit per
//! source address, so that one bad client cannot flood the log. After large bodies were decoded
//! it has the allocator give free heap pages back to the system, so that the memory a
//! registration storm needed for a moment does not stay resident (docs/limits.md).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tracing::warn;

/// Every limit that can refuse something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limit {
    /// `server.max_connections`: a connection refused at accept.
    Connections,
    /// `server.max_connections_per_source`: a connection refused at accept.
    ConnectionsPerSource,
    /// `server.frame_timeout`: a connection closed with a frame begun and never completed.
    FrameTimeout,
    /// `server.write_timeout`: a connection closed that did not read its answers.
    WriteTimeout,
    /// `server.max_decoding_bytes`: a registration body refused for lack of decoding budget.
    Decoding,
    /// `server.max_queued_bytes`: a connection paused because its thread's share of the
    /// outbound budget was used up.
    QueuedBytes,
    /// `server.max_pending_reads`: a read answered SYSTEM_BUSY "[OVERLOAD]".
    OverloadReads,
    /// `server.max_pending_writes`: a registration or admin request answered SYSTEM_BUSY
    /// "[OVERLOAD]".
    OverloadWrites,
    /// A malformed frame or request that closed its connection.
    BadInput,
    /// A request access control refused (docs/access.md).
    Access,
}

impl Limit {
    /// Every limit, in report order.
    pub const ALL: [Limit; 10] = [
        Limit::Connections,
        Limit::ConnectionsPerSource,
        Limit::FrameTimeout,
        Limit::WriteTimeout,
        Limit::Decoding,
        Limit::QueuedBytes,
        Limit::OverloadReads,
        Limit::OverloadWrites,
        Limit::BadInput,
        Limit::Access,
    ];

    /// Its name in reports and logs: the configuration key it counts.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Connections => "max_connections",
            Limit::ConnectionsPerSource => "max_connections_per_source",
            Limit::FrameTimeout => "frame_timeout",
            Limit::WriteTimeout => "write_timeout",
            Limit::Decoding => "max_decoding_bytes",
            Limit::QueuedBytes => "max_queued_bytes",
            Limit::OverloadReads => "max_pending_reads",
            Limit::OverloadWrites => "max_pending_writes",
            Limit::BadInput => "bad_input",
            Limit::Access => "access",
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something a limit refused: counted, and logged unless its source has logged too much lately.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Refused {
    pub limit: Limit,
    /// The client's address, when there is one.
    pub source: Option<IpAddr>,
    /// What was refused, already short (use [`crate::logging::Clipped`] for request data).
    pub detail: String,
}

/// Asks for `bytes` of inflation budget; answers a lease, or `None` when the budget is used up.
/// The lease gives the bytes back when dropped.
#[derive(Debug, Message)]
#[rtype(result = "Option<InflationLease>")]
pub struct ReserveInflation {
    pub bytes: usize,
    /// Where to give it back: the `Limits` actor's own recipient.
    pub release: Recipient<ReleaseInflation>,
}

/// Gives inflation budget back (sent by [`InflationLease`]'s drop).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct ReleaseInflation {
    pub bytes: usize,
}

/// Inflation budget held; given back when dropped.
#[derive(Debug)]
pub struct InflationLease {
    bytes: usize,
    release: Recipient<ReleaseInflation>,
}

impl Drop for InflationLease {
    fn drop(&mut self) {
        self.release.do_send(ReleaseInflation { bytes: self.bytes });
    }
}

/// The refusals counted so far, by limit (every limit listed, zeros included).
#[derive(Debug, Message)]
#[rtype(result = "Vec<(Limit, u64)>")]
pub struct LimitCounts;

/// Warnings logged per source address within [`LOG_WINDOW`]; the rest are counted and summed up
/// in the next warning.
const LOGS_PER_WINDOW: u32 = 5;

/// Free heap pages are given back this long after a large body was decoded (at most once per
/// this period): by then its decoded table has been applied and dropped.
const GIVE_BACK_DELAY: Duration = Duration::from_secs(2);
const LOG_WINDOW: Duration = Duration::from_secs(60);

/// Sources remembered for rate limiting. When that many are remembered, sources whose window
/// ended are forgotten; new ones that still do not fit share one window, so that a flood from
/// many addresses (invented ones behind a trusted PROXY balancer) logs as little as one source.
const MAX_SOURCES: usize = 4096;

#[derive(Debug)]
struct SourceLog {
    window_start: Instant,
    logged: u32,
    suppressed: u64,
}

impl SourceLog {
    fn new(now: Instant) -> Self {
        SourceLog {
            window_start: now,
            logged: 0,
            suppressed: 0,
        }
    }
}

/// The limits actor.
#[derive(Debug)]
pub struct Limits {
    max_inflating: usize,
    inflating: usize,
    counts: HashMap<Limit, u64>,
    sources: HashMap<Option<IpAddr>, SourceLog>,
    /// The shared window of the sources that did not fit.
    overflow: SourceLog,
    /// A give-back of free heap pages is scheduled.
    give_back_pending: bool,
    /// A large body was decoded since the scheduled give-back was planned: another follows it.
    give_back_again: bool,
}

impl Limits {
    pub fn new(max_inflating: usize) -> Self {
        Self {
            max_inflating,
            inflating: 0,
            counts: HashMap::new(),
            sources: HashMap::new(),
            overflow: SourceLog::new(Instant::now()),
            give_back_pending: false,
            give_back_again: false,
        }
    }

    fn count(&mut self, limit: Limit) {
        *self.counts.entry(limit).or_default() += 1;
    }

    /// Whether a warning from `source` may be logged now, and how many were held back before it.
    fn may_log(&mut self, source: Option<IpAddr>, now: Instant) -> Option<u64> {
        if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&source) {
            self.sources
                .retain(|_, log| now.duration_since(log.window_start) < LOG_WINDOW);
        }
        let log = if self.sources.len() >= MAX_SOURCES && !self.sources.contains_key(&source) {
            &mut self.overflow
        } else {
            self.sources
                .entry(source)
                .or_insert_with(|| SourceLog::new(now))
        };
        if now.duration_since(log.window_start) >= LOG_WINDOW {
            log.window_start = now;
            log.logged = 0;
        }
        if log.logged >= LOGS_PER_WINDOW {
            log.suppressed += 1;
            return None;
        }
        log.logged += 1;
        Some(std::mem::take(&mut log.suppressed))
    }
}

impl Actor for Limits {
    type Context = Context<Self>;
}

impl Handler<Refused> for Limits {
    type Result = ();

    fn handle(&mut self, msg: Refused, _: &mut Context<Self>) {
        self.count(msg.limit);
        if let Some(held_back) = self.may_log(msg.source, Instant::now()) {
            let source = msg.source.map(|ip| ip.to_string()).unwrap_or_default();
            warn!(limit = %msg.limit, source, held_back, "{}", msg.detail);
        }
    }
}

impl Handler<ReserveInflation> for Limits {
    type Result = Option<InflationLease>;

    fn handle(&mut self, msg: ReserveInflation, _: &mut Context<Self>) -> Self::Result {
        if self.inflating.saturating_add(msg.bytes) > self.max_inflating {
            return None;
        }
        self.inflating += msg.bytes;
        Some(InflationLease {
            bytes: msg.bytes,
            release: msg.release,
        })
    }
}

impl Handler<ReleaseInflation> for Limits {
    type Result = ();

    fn handle(&mut self, msg: ReleaseInflation, ctx: &mut Context<Self>) {
        self.inflating = self.inflating.saturating_sub(msg.bytes);
        self.plan_give_back(ctx);
    }
}

impl Limits {
    /// Gives free heap pages back [`GIVE_BACK_DELAY`] after a large body was decoded, at most
    /// once per that period; a body decoded while one is planned gets another after it, so the
    /// last body of a registration round (each broker's body, then its re-registration) is
    /// never left resident.
    fn plan_give_back(&mut self, ctx: &mut Context<Self>) {
        if self.give_back_pending {
            self.give_back_again = true;
            return;
        }
        self.give_back_pending = true;
        ctx.run_later(GIVE_BACK_DELAY, |act, ctx| {
            act.give_back_pending = false;
            drop(crate::background::spawn(give_back_free_heap));
            if std::mem::take(&mut act.give_back_again) {
                act.plan_give_back(ctx);
            }
        });
    }
}

impl Handler<LimitCounts> for Limits {
    type Result = Vec<(Limit, u64)>;

    fn handle(&mut self, _: LimitCounts, _: &mut Context<Self>) -> Self::Result {
        Limit::ALL
            .iter()
            .map(|&limit| (limit, self.counts.get(&limit).copied().unwrap_or(0)))
            .collect()
    }
}

/// Has the allocator return the free pages of its heaps to the system. glibc keeps memory freed
/// in the middle of a heap (a decoded table of a million topics, freed after a registration)
/// resident until it is asked; other allocators need nothing.
fn give_back_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes an integer and only walks glibc's own arenas, under their locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_logs_a_few_warnings_per_window_and_the_rest_are_summed_up() {
        let mut limits = Limits::new(0);
        let source = Some(IpAddr::from([10, 0, 0, 1]));
        let start = Instant::now();
        let logged = (0..100)
            .filter(|_| limits.may_log(source, start).is_some())
            .count();
        assert_eq!(logged, LOGS_PER_WINDOW as usize);
        // Another source is not held back by the first.
        assert_eq!(
            limits.may_log(Some(IpAddr::from([10, 0, 0, 2])), start),
            Some(0)
        );
        // The next window logs again, saying how many were held back.
        assert_eq!(limits.may_log(source, start + LOG_WINDOW), Some(95));
    }

    #[test]
    fn remembered_sources_are_bounded() {
        let mut limits = Limits::new(0);
        let now = Instant::now();
        let mut logged = 0;
        for i in 0..(MAX_SOURCES as u32 * 3) {
            logged += usize::from(
                limits
                    .may_log(Some(IpAddr::from(i.to_be_bytes())), now)
                    .is_some(),
            );
        }
        assert!(limits.sources.len() <= MAX_SOURCES);
        // A full table does not turn the limit off: the sources that did not fit share a window.
        assert_eq!(logged, MAX_SOURCES + LOGS_PER_WINDOW as usize);
        // Once the windows end, new sources get windows of their own again.
        let later = now + LOG_WINDOW;
        assert_eq!(
            limits.may_log(Some(IpAddr::from([192, 0, 2, 1])), later),
            Some(0)
        );
        assert_eq!(limits.sources.len(), 1);
    }

    #[actix_rt::test]
    async fn inflation_budget_is_leased_and_given_back() {
        let limits = Limits::new(100).start();
        let reserve = |bytes| ReserveInflation {
            bytes,
            release: limits.clone().recipient(),
        };
        let first = limits.send(reserve(60)).await.ok().flatten();
        assert!(first.is_some());
        assert!(limits.send(reserve(60)).await.ok().flatten().is_none());
        drop(first);
        assert!(limits.send(reserve(60)).await.ok().flatten().is_some());
    }
}
