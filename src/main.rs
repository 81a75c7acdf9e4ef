//! The rmq-namesrv daemon: flags -> configuration -> logging -> actix System -> NameServer.
//! `rmq-namesrv admin ...` is the mqadmin-style client instead (see `rmq_namesrv::admin`).

mod allocator;
mod logging;
mod notify;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use rmq_namesrv::config::{Config, LogFormat, Overrides, Profile};
use rmq_namesrv::tools::admin::AdminArgs;
use rmq_namesrv::{ControllerHandle, NameServer, NameServerHandle, StandaloneController};
use tracing::{error, info, warn};

/// An Apache RocketMQ NameServer (a drop-in for mqnamesrv).
///
/// Without a command it runs the NameServer with the options below; `rmq-namesrv controller`
/// runs the 5.x controller alone (as mqcontroller); `rmq-namesrv admin` talks to running
/// NameServers instead.
#[derive(Debug, Parser)]
#[command(name = "rmq-namesrv", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Address to listen on, e.g. 0.0.0.0:9876 (overrides server.listen).
    #[arg(long, value_name = "HOST:PORT")]
    listen: Option<SocketAddr>,
    /// KV store file (overrides kv.path).
    #[arg(long, value_name = "PATH")]
    kv_config_path: Option<PathBuf>,
    /// Runtime-config store file (overrides kv.config_store_path).
    #[arg(long, value_name = "PATH")]
    config_store_path: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// The options of both daemons (the NameServer and the standalone controller).
#[derive(Debug, Args)]
struct Common {
    /// Configuration file: TOML (see config.toml), or Java properties when its name ends in
    /// `.properties`.
    #[arg(short = 'c', long = "config", value_name = "PATH")]
    config: Option<PathBuf>,
    /// Log filter, e.g. "debug" (overrides log.level).
    #[arg(long, value_name = "FILTER")]
    log_level: Option<String>,
    /// Write rmq-namesrv.log (rotated) in this directory instead of logging to stderr
    /// (overrides log.dir).
    #[arg(long, value_name = "PATH")]
    log_dir: Option<PathBuf>,
    /// Log line format: text or json (overrides log.format).
    #[arg(long, value_name = "text|json")]
    log_format: Option<LogFormat>,
    /// Serve metrics, health and the status page over HTTP on this address, e.g.
    /// 127.0.0.1:8080 (overrides http.listen; off by default).
    #[arg(long, value_name = "HOST:PORT")]
    http_listen: Option<SocketAddr>,
    /// Access-control defaults: open (everything allowed, as Java) or secure (admin requests
    /// and the status page need an admin's signature); overrides access.profile.
    #[arg(long, value_name = "open|secure")]
    access_profile: Option<Profile>,
    /// Accounts for signed requests: a plain_acl.yml and/or an ACL 2.0-style users list,
    /// reloaded on change (overrides access.acl_file).
    #[arg(long, value_name = "PATH")]
    acl_file: Option<PathBuf>,

    /// Print the effective configuration as TOML and exit.
    #[arg(short = 'p', long)]
    print_config: bool,
}

// Parsed once at start: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    Admin(AdminArgs),
    /// Run the 5.x controller alone, without the NameServer (Java's `mqcontroller -c
    /// controller.properties`): its port is this node's address in controllerDLegerPeers
    /// (controller.peers).
    Controller(ControllerArgs),
    /// Copy the controller's file state and the KV file into their (empty) etcd prefixes, as
    /// the configuration names them; the server stopped (docs/controller.md).
    MigrateToEtcd(MigrateArgs),
}

/// `rmq-namesrv migrate-to-etcd`.
#[derive(Debug, clap::Args)]
struct MigrateArgs {
    /// The server's configuration, already switched to etcd (controller.etcd_endpoints,
    /// kv.etcd_endpoints, [etcd]); the files copied are the ones it names.
    #[arg(short = 'c', long = "config", value_name = "PATH")]
    config: PathBuf,
    /// Say what would be copied, write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Args)]
struct ControllerArgs {
    #[command(flatten)]
    common: Common,
}

impl Common {
    fn overrides(&self) -> Overrides {
        Overrides {
            log_level: self.log_level.clone(),
            http_listen: self.http_listen,
            log_dir: self.log_dir.clone(),
            log_format: self.log_format,
            access_profile: self.access_profile,
            acl_file: self.acl_file.clone(),
            ..Overrides::default()
        }
    }
}

fn main() -> ExitCode {
    // First, before any thread runs.
    let thresholds = allocator::fix_thresholds();
    let cli = Cli::parse_from(rmq_namesrv::tools::admin::mqadmin_args(std::env::args_os()));
    let (common, overrides, mode) = match cli.command {
        Some(Command::Admin(args)) => return admin(args),
        Some(Command::MigrateToEtcd(args)) => return migrate(&args),
        Some(Command::Controller(args)) => {
            let overrides = Overrides {
                controller_enabled: Some(true),
                ..args.common.overrides()
            };
            (args.common, overrides, Mode::Controller)
        }
        None => {
            let overrides = Overrides {
                listen: cli.listen,
                kv_path: cli.kv_config_path.clone(),
                config_store_path: cli.config_store_path.clone(),
                ..cli.common.overrides()
            };
            (cli.common, overrides, Mode::NameServer)
        }
    };
    let config = match Config::load(common.config.as_deref(), std::env::vars(), &overrides) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("rmq-namesrv: configuration error: {err}");
            return ExitCode::from(2);
        }
    };
    if common.print_config {
        return print_config(&config);
    }
    // Kept to the end of main: dropping it writes the log lines still queued.
    let _log_guard = match logging::init(&config.log) {
        Ok(guard) => guard,
        Err(err) => {
            eprintln!("rmq-namesrv: {err}");
            return ExitCode::FAILURE;
        }
    };
    info!("{}", thresholds.describe());
    warn_no_effect_keys(&config);
    let system = actix::System::new();
    let result = system.block_on(async move {
        match mode {
            Mode::NameServer => serve(NameServer::new(config).bind().await).await,
            Mode::Controller => {
                let controller = StandaloneController::new(config);
                for key in controller.unused_settings() {
                    warn!(key = %key, "a NameServer setting: no effect in a standalone controller");
                }
                serve(controller.start()).await
            }
        }
    });
    // Actors still there stop as the System is dropped, and some ask for a timer as they do:
    // drop it inside its runtime's context, so that a failed start or a lost actor ends with
    // its message, not a panic.
    let runtime = system.runtime().tokio_runtime().handle().clone();
    {
        let _entered = runtime.enter();
        drop(system);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            error!(error = %err, "server failed");
            eprintln!("rmq-namesrv: {err}");
            match err {
                RunError::Start(_) => ExitCode::FAILURE,
                // EX_SOFTWARE: an internal error.
                RunError::Lost(_) => ExitCode::from(70),
            }
        }
    }
}

/// Which daemon runs.
#[derive(Debug, Clone, Copy)]
enum Mode {
    NameServer,
    Controller,
}

fn print_config(config: &Config) -> ExitCode {
    match toml::to_string(config) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("rmq-namesrv: cannot print configuration: {err}");
            ExitCode::FAILURE
        }
    }
}

/// The migration into etcd: a single-threaded tokio runtime, no logging; exit 1 with the reason
/// on failure.
fn migrate(args: &MigrateArgs) -> ExitCode {
    let done = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
        .and_then(|runtime| {
            runtime.block_on(rmq_namesrv::migrate::run(&args.config, args.dry_run))
        });
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(reason) => {
            eprintln!("rmq-namesrv migrate-to-etcd: {reason}");
            ExitCode::FAILURE
        }
    }
}

/// The admin client: a single-threaded tokio runtime, no logging; the report goes to stdout/stderr.
fn admin(args: AdminArgs) -> ExitCode {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(rmq_namesrv::tools::admin::run(args)),
        Err(err) => {
            eprintln!("rmq-namesrv admin: cannot start a runtime: {err}");
            ExitCode::FAILURE
        }
    }
}

/// What the daemon runs: a NameServer or a standalone controller.
trait Daemon {
    const WHAT: &'static str;
    fn local_addr(&self) -> SocketAddr;
    async fn health(&self) -> rmq_namesrv::Health;
    async fn reload_tls(&self) -> Result<String, String>;
    async fn reload_accounts(&self) -> Result<String, String>;
    async fn stop(self);
}

impl Daemon for NameServerHandle {
    const WHAT: &'static str = "rmq-namesrv";
    fn local_addr(&self) -> SocketAddr {
        NameServerHandle::local_addr(self)
    }
    async fn health(&self) -> rmq_namesrv::Health {
        NameServerHandle::health(self).await
    }
    async fn reload_tls(&self) -> Result<String, String> {
        NameServerHandle::reload_tls(self).await
    }
    async fn reload_accounts(&self) -> Result<String, String> {
        NameServerHandle::reload_accounts(self).await
    }
    async fn stop(self) {
        NameServerHandle::stop(self).await;
    }
}

impl Daemon for ControllerHandle {
    const WHAT: &'static str = "rmq-namesrv controller";
    fn local_addr(&self) -> SocketAddr {
        ControllerHandle::local_addr(self)
    }
    async fn health(&self) -> rmq_namesrv::Health {
        ControllerHandle::health(self).await
    }
    async fn reload_tls(&self) -> Result<String, String> {
        ControllerHandle::reload_tls(self).await
    }
    async fn reload_accounts(&self) -> Result<String, String> {
        ControllerHandle::reload_accounts(self).await
    }
    async fn stop(self) {
        ControllerHandle::stop(self).await;
    }
}

/// Serves a started daemon until SIGINT/SIGTERM (a graceful stop) or an actor lost.
async fn serve<D: Daemon>(started: Result<D, rmq_namesrv::StartError>) -> Result<(), RunError> {
    // Caught before the server announces itself (see Signals).
    let signals = Signals::catch();
    let server = started.map_err(RunError::Start)?;
    // The one line on stdout: scripts wait for it (logs go to stderr or log.dir).
    println!("{} listening on {}", D::WHAT, server.local_addr());
    let _ = std::io::stdout().flush();
    notify::ready(server.local_addr());
    tokio::select! {
        () = wait_for_signals(&server, signals) => {}
        lost = watch_health(&server) => return Err(RunError::Lost(lost)),
    }
    info!("shutdown signal received, stopping");
    notify::stopping();
    server.stop().await;
    Ok(())
}

#[derive(Debug)]
enum RunError {
    Start(rmq_namesrv::StartError),
    /// An actor is gone (a panic that could not be contained): serving errors until someone
    /// notices is worse than exiting, so the process exits non-zero and its supervisor
    /// (systemd, Kubernetes) starts a fresh one.
    Lost(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Start(err) => err.fmt(f),
            Self::Lost(actors) => write!(f, "actor(s) lost, the server cannot serve: {actors}"),
        }
    }
}

/// Resolves when an actor of the server is gone for good, naming it.
async fn watch_health(server: &impl Daemon) -> String {
    let mut tick = tokio::time::interval(HEALTH_CHECK);
    loop {
        tick.tick().await;
        let health = server.health().await;
        if !health.serving() {
            return health.lost().join(", ");
        }
    }
}

/// How often the daemon checks that every actor is alive.
const HEALTH_CHECK: Duration = Duration::from_secs(1);

/// The stop and reload signals, caught from before the server announces itself, so a SIGTERM
/// sent as soon as the "listening" line appears is a graceful stop, not the default kill.
struct Signals {
    #[cfg(unix)]
    caught: Option<(
        tokio::signal::unix::Signal,
        tokio::signal::unix::Signal,
        tokio::signal::unix::Signal,
    )>,
}

impl Signals {
    fn catch() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let caught = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::hangup()),
            ) {
                (Ok(int), Ok(term), Ok(hup)) => Some((int, term, hup)),
                _ => None,
            };
            Signals { caught }
        }
        #[cfg(not(unix))]
        Signals {}
    }
}

/// Serves signals until SIGINT or SIGTERM: SIGHUP reloads the TLS certificates and the ACL
/// file.
async fn wait_for_signals(server: &impl Daemon, signals: Signals) {
    #[cfg(unix)]
    {
        let Some((mut int, mut term, mut hup)) = signals.caught else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        loop {
            tokio::select! {
                _ = int.recv() => return,
                _ = term.recv() => return,
                _ = hup.recv() => {
                    match server.reload_tls().await {
                        Ok(what) => info!(outcome = %what, "SIGHUP: TLS reload"),
                        Err(why) => warn!(reason = %why, "SIGHUP: TLS not reloaded"),
                    }
                    match server.reload_accounts().await {
                        Ok(what) => info!(outcome = %what, "SIGHUP: ACL reload"),
                        Err(why) => warn!(reason = %why, "SIGHUP: ACL not reloaded"),
                    }
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (server, signals);
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// One warning per Java setting that is accepted but changes nothing here, naming it.
fn warn_no_effect_keys(config: &Config) {
    for key in rmq_namesrv::java_props::no_effect_keys(config) {
        match key.ours {
            Some(ours) => {
                warn!(key = %key.java, ours, reason = key.reason, "Java key accepted, no effect here")
            }
            None => {
                warn!(key = %key.java, reason = key.reason, "Java key accepted, no effect here")
            }
        }
    }
}
