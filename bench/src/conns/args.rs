//! The options of `conns`, and the client poll period they compress.

use std::time::Duration;

use clap::Args;

/// How often a RocketMQ client asks the NameServer for the route of each of its topics (Java:
/// `ClientConfig.pollNameServerInterval`, 30 s); `--poll-period` compresses it.
pub(super) const CLIENT_POLL_PERIOD: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Args)]
pub struct ConnsArgs {
    /// Client connections to open and hold.
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
    /// Connects in flight at once while opening (at most a listen backlog of 128: beyond it a
    /// busy server drops SYNs and the connect waits for a retransmit, 1 s at least).
    #[arg(long, default_value_t = 128)]
    pub concurrency: usize,
    /// Bound of each connect (10 s: a SYN dropped three times is answered after 7 s); the first
    /// request is bounded by --timeout.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub connect_timeout: Duration,
    /// No connect is started after this long; the connections open by then are used (keep it
    /// well below the server's idle timeout, 120 s for both servers).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "60s")]
    pub open_timeout: Duration,
    /// Idle time after the last connect before the server's RSS is read.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3s")]
    pub settle: Duration,
    /// Every connection sends one route query per period, at its own offset in it: the 30 s of
    /// a real client compressed (5 s: 6x).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub poll_period: Duration,
    /// Polling before the measured window; its latencies are reported apart (a JVM needs a few
    /// seconds to keep up with 10,000 fresh connections).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub warmup: Duration,
    /// The measured polling window (at least one period).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s")]
    pub duration: Duration,
    /// After closing every connection, wait this long before reading the server's RSS.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1s")]
    pub close_settle: Duration,
    /// Broker groups (one master each) registered first, as `routes --brokers`.
    #[arg(long, default_value_t = 2)]
    pub brokers: usize,
    /// Topics on every broker; connection `i` polls topic `i % topics`.
    #[arg(long, default_value_t = 100)]
    pub topics: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// The brokers re-register this often, as real ones do.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub register_period: Duration,
    /// Register nothing: the topics are there already (a running `rmq-bench brokers` with the
    /// same --topics).
    #[arg(long)]
    pub preregistered: bool,
    /// Send nothing on a new connection before the polling starts (the server's cost of a
    /// connection that never spoke).
    #[arg(long)]
    pub silent: bool,
}
