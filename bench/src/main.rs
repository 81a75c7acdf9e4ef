//! `rmq-bench`: a load generator for RocketMQ NameServers (ours or Java's), over the real wire
//! protocol on many TCP connections.
//!
//! ```text
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> routes [--rate R]
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> storm
//! rmq-bench --addr 127.0.0.1:9876 startup -- <server command>
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> conns --connections 10000   # idle, then polling
//! rmq-bench --tls [--tls-ca CA.pem] --addr 127.0.0.1:9876 --pid <server pid> routes|storm
//! rmq-bench --addr 127.0.0.1:9876 brokers --brokers 10 --topics 1000     # until SIGTERM
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> routes --preregistered --connections 4 --pipeline 8
//! rmq-bench cost [--max-bytes 16777216] [--only "json header"]      # in process, no server
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> hostile [--hostile 1,2] [--kinds ...]
//! rmq-bench reference-server --listen 127.0.0.1:9877 --workers 2 --brokers 10  # until SIGTERM
//! rmq-bench --addr 127.0.0.1:9876 --pid <server pid> scale --groups 2 --topics 100000 [--spread 2]
//! ```
//!
//! `brokers` registers the broker groups of `routes` and holds them (connections open,
//! re-registering) until SIGTERM/SIGINT, so that many `routes --preregistered` runs (other
//! shapes, interleaved with other servers) query one populated server. `reference-server` is the
//! ceiling those runs are compared with: it answers every request with one pre-encoded route reply
//! of the same size (see `reference.rs`).
//!
//! With `--tls` every connection of `routes` and `storm` (route queries and the simulated
//! brokers) is TLS, with Java's client semantics (any server certificate unless `--tls-ca`);
//! without it the connections are plain TCP on exactly the code path they always took (the
//! connection code is generic over the stream, not a run-time switch). `startup` only waits for
//! the port to accept TCP and ignores `--tls`.
//!
//! Every workload is bounded in time, prints a human summary and ends with one JSON line (the
//! last line of stdout). Latencies are microseconds from HDR histograms; the server's memory is
//! VmRSS / VmHWM of `/proc/<pid>/status`. See `bench/compare.py` for the side-by-side run.

mod broker;
mod conns;
mod cost;
mod hold;
mod hostile;
mod openloop;
mod reference;
mod routes;
mod scale;
mod startup;
mod stats;
mod storm;
mod wire;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use rmq_tools::tls_args::TlsArgs;
use rustls::ClientConfig;

/// Why a run failed.
#[derive(Debug)]
pub enum BenchError {
    Io(std::io::Error),
    Protocol(String),
    Timeout(String),
    Usage(String),
}

impl std::fmt::Display for BenchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "i/o: {e}"),
            Self::Protocol(s) => write!(f, "{s}"),
            Self::Timeout(s) => write!(f, "timed out: {s}"),
            Self::Usage(s) => write!(f, "usage: {s}"),
        }
    }
}

impl std::error::Error for BenchError {}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "rmq-bench",
    version,
    about = "Load generator for RocketMQ NameServers"
)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    workload: Workload,
}

/// Options of every workload.
#[derive(Debug, Clone, clap::Args)]
pub struct Common {
    /// The NameServer (127.0.0.1 only in this project's runs).
    #[arg(long, global = true, default_value = "127.0.0.1:9876")]
    pub addr: SocketAddr,
    /// The server's PID, for RSS (VmRSS/VmHWM) and CPU figures.
    #[arg(long, global = true)]
    pub pid: Option<u32>,
    /// Connect and per-request timeout.
    #[arg(long, global = true, value_parser = humantime::parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Worker threads of the generator's runtime.
    #[arg(long, global = true, default_value_t = 2)]
    pub threads: usize,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// The client configuration `tls` describes, built once in `main`; `None`: plain TCP.
    #[arg(skip)]
    pub tls_config: Option<Arc<ClientConfig>>,
}

#[derive(Debug, Subcommand)]
enum Workload {
    /// GET_ROUTEINFO_BY_TOPIC load: closed loop with pipelining, or open loop with --rate.
    Routes(routes::RoutesArgs),
    /// Registration storm (many brokers, full bodies) with open-loop route queries.
    Storm(storm::StormArgs),
    /// Spawn a server command, time until it accepts, then its idle RSS; kills it at the end.
    Startup(startup::StartupArgs),
    /// Hold many connections: the server's RSS per idle connection, then route polls on all.
    Conns(conns::ConnsArgs),
    /// Register the broker groups of `routes` and keep them registered until SIGTERM/SIGINT.
    Brokers(hold::HoldArgs),
    /// In process, no server: each decoder's time and memory against its input size, up to
    /// the frame limit, for every adversarial shape (growth ratio; superlinear ones flagged).
    Cost(cost::CostArgs),
    /// Probe connections' latency while hostile connections send the costliest frames allowed.
    Hostile(hostile::HostileArgs),
    /// A server answering every request with one pre-encoded route reply: the ceiling.
    ReferenceServer(reference::ReferenceArgs),
    /// One point of the scale curve: register a table shape, then memory per entry, a
    /// re-registration round with route probes, steady routes and the big reads.
    Scale(scale::ScaleArgs),
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let result = match cli.common.tls.client_config() {
        Ok(config) => {
            cli.common.tls_config = config;
            run(&cli)
        }
        Err(e) => Err(BenchError::Usage(format!("TLS: {e}"))),
    };
    match result {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("rmq-bench: {err}");
            println!("{}", serde_json::json!({"error": err.to_string()}));
            ExitCode::FAILURE
        }
    }
}

fn run(cli: &Cli) -> Result<serde_json::Value, BenchError> {
    match &cli.workload {
        Workload::Startup(args) => startup::run(cli.common.addr, args),
        Workload::ReferenceServer(args) => reference::run(args),
        Workload::Cost(args) => cost::run(args),
        Workload::Routes(_)
        | Workload::Storm(_)
        | Workload::Brokers(_)
        | Workload::Conns(_)
        | Workload::Hostile(_)
        | Workload::Scale(_) => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cli.common.threads.max(1))
            .enable_all()
            .build()
            .map_err(BenchError::from)
            .and_then(|rt| {
                rt.block_on(async {
                    match &cli.workload {
                        Workload::Routes(args) => routes::run(&cli.common, args).await,
                        Workload::Storm(args) => storm::run(&cli.common, args).await,
                        Workload::Brokers(args) => hold::run(&cli.common, args).await,
                        Workload::Conns(args) => conns::run(&cli.common, args).await,
                        Workload::Hostile(args) => hostile::run(&cli.common, args).await,
                        Workload::Scale(args) => scale::run(&cli.common, args).await,
                        Workload::Startup(_) | Workload::ReferenceServer(_) | Workload::Cost(_) => {
                            Err(BenchError::Usage("unreachable".into()))
                        }
                    }
                })
            }),
    }
}
