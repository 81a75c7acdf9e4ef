//! The options of `cost`.

use std::time::Duration;

use clap::Args;
use rmq_protocol::codec::DEFAULT_MAX_FRAME;

#[derive(Debug, Clone, Args)]
pub struct CostArgs {
    /// The largest input, in bytes (default: the frame limit, 16 MiB).
    #[arg(long, default_value_t = DEFAULT_MAX_FRAME)]
    pub max_bytes: usize,
    /// The smallest input; sizes double from it up to --max-bytes.
    #[arg(long, default_value_t = 64 * 1024)]
    pub min_bytes: usize,
    /// Timed runs per size at least (the fastest counts); small sizes run until 50 ms are spent.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// A size whose projected decode time is longer than this is not run.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20s")]
    pub max_decode: Duration,
    /// The whole run stops starting cases after this long (the rest are reported skipped).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    pub time_limit: Duration,
    /// Only the cases whose "decoder / shape" contains this text.
    #[arg(long)]
    pub only: Option<String>,
}
