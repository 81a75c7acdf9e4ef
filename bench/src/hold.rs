//! `brokers`: registers the broker groups of the `routes` workload and keeps them registered
//! (connections open, re-registering like real brokers) until SIGTERM or SIGINT, so that several
//! `routes --preregistered` runs can query one populated server (a closed broker connection
//! unregisters its broker, so each `routes` run would otherwise register and drop them anew).

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};
use tokio::signal::unix::{signal, SignalKind};

use crate::broker;
use crate::routes::route_brokers;
use crate::{BenchError, Common};

#[derive(Debug, Clone, Args)]
pub struct HoldArgs {
    /// Broker groups (one master each), as `routes --brokers`.
    #[arg(long, default_value_t = 10)]
    pub brokers: usize,
    /// Topics on every broker (the same names on all), as `routes --topics`.
    #[arg(long, default_value_t = 1000)]
    pub topics: usize,
    /// Queue count of each topic.
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
    /// The brokers re-register this often, as real ones do (every 30 s; Java drops a broker
    /// silent for 120 s).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30s")]
    pub register_period: Duration,
    /// At most this long (the run is bounded): then the connections close, unregistering the
    /// brokers, as on SIGTERM or SIGINT.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2h")]
    pub hold: Duration,
}

pub async fn run(common: &Common, args: &HoldArgs) -> Result<Value, BenchError> {
    if args.brokers == 0 || args.topics == 0 {
        return Err(BenchError::Usage(
            "brokers and topics must be positive".into(),
        ));
    }
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let tls = common.tls_config.as_ref();
    let (_, brokers) = route_brokers(args.brokers, args.topics, args.queues)?;
    let (registered, setup) =
        broker::register_all(common.addr, tls, brokers, args.brokers, common.timeout).await?;
    let held_from = Instant::now();
    let until = held_from + args.hold;
    // compare.py waits for this line.
    println!(
        "registered: {} broker groups x {} topics in {:.2} s{}; holding them until SIGTERM/SIGINT \
         (at most {})",
        args.brokers,
        args.topics,
        setup.as_secs_f64(),
        if tls.is_some() { " over TLS" } else { "" },
        humantime::format_duration(args.hold)
    );
    let keepers = broker::keep_alive(registered, args.register_period, until, common.timeout);
    let ended_by = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
        () = tokio::time::sleep_until(until.into()) => "--hold",
    };
    drop(keepers);
    println!(
        "released after {:.1} s ({ended_by})",
        held_from.elapsed().as_secs_f64()
    );
    Ok(json!({
        "workload": "brokers",
        "brokers": args.brokers,
        "topics": args.topics,
        "setup_s": setup.as_secs_f64(),
        "held_s": held_from.elapsed().as_secs_f64(),
        "ended_by": ended_by,
    }))
}
