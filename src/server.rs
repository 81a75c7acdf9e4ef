//! `NameServer`: starts the actor system on a listening socket and returns a handle to it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::access::accounts::{Accounts, AclFileError};
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::guard::{AccessGuard, GuardSubscribers, ReloadAccounts};
use rmq_actors::access::{AccessClass, AccessControl};
#[cfg(debug_assertions)]
use rmq_actors::contain::InjectPanic;
use rmq_actors::contain::{GetHealth, Recover};
use rmq_actors::controller::Controller;
use rmq_actors::dispatch::Services;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::{KvError, KvSource, KvStore};
use rmq_actors::limits::{Limit, LimitCounts, Limits};
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::messages::InvalidateRoutes;
use rmq_actors::messages::{
    CloseAll, DrainAll, FlushKv, GoAwayCount, ListConnections, OpenConnection, OpenConnections,
    ReloadTls, StopAccepting,
};
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::{CacheId, RouteCacheKeeper};
use rmq_actors::tls_reload::TlsReloader;
use rmq_transport::front_door::FrontDoor;
use rmq_transport::server::{server_config, TlsError};
use rmq_transport::{ProxyProtocolSettings, TlsMode};
use tracing::{info, warn};

use crate::config::{expand_home, Config};
use crate::controller_port::{ControllerPort, ControllerStartError, Shared};
pub use crate::health::{ActorStatus, Health};
use crate::http::{HttpPort, Observed};
use crate::product_env::ProductEnv;
use crate::runtime_config::RuntimeConfig;

/// How long a cluster-test lookup waits for each product-environment NameServer.
const PRODUCT_ENV_TIMEOUT: Duration = Duration::from_secs(3);

/// Why a NameServer could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot use the listening socket: {0}")]
    Listener(#[source] std::io::Error),
    #[error(transparent)]
    Kv(#[from] KvError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Acl(#[from] AclFileError),
    #[error("cannot open the audit log {path}: {source}")]
    Audit {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Controller(#[from] ControllerStartError),
    #[error("no actix System is running; start the NameServer from inside one")]
    NoSystem,
    #[error("cannot listen on {addr} (http.listen): {source}")]
    Http {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A NameServer to start. See the crate docs for the three ways to run one.
#[derive(Debug, Clone)]
pub struct NameServer {
    config: Config,
}

impl NameServer {
    pub fn new(config: Config) -> Self {
        Self { config }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Binds `server.listen` and starts. Call from inside a running actix System.
    pub async fn bind(self) -> Result<NameServerHandle, StartError> {
        let addr = self.config.server.listen;
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|source| StartError::Bind { addr, source })?;
        self.start(listener)
    }

    /// Starts on an already bound listener (tests bind `127.0.0.1:0` and pass it here, so the
    /// port is never released between choosing and listening). Call from inside a running actix
    /// System: the listener, housekeeping, KV store and runtime config run on the current
    /// arbiter, the route registry on an arbiter of its own, connections on `server.workers`
    /// worker arbiters.
    pub fn start(self, listener: std::net::TcpListener) -> Result<NameServerHandle, StartError> {
        if System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        let config = self.config;
        // Load the KV file first: a corrupt file stops start-up before anything listens. (With
        // the etcd backend nothing is read here: the store starts without etcd and catches up.)
        let kv_source = KvSource::load(&config.kv)?;
        // So does an ACL file that does not parse, and an audit log that cannot be opened.
        let acl_path = (!config.access.acl_file.as_os_str().is_empty())
            .then(|| expand_home(&config.access.acl_file));
        let accounts = Arc::new(match &acl_path {
            Some(path) => Accounts::load(path)?,
            None => Accounts::default(),
        });
        let access = Arc::new(AccessControl::new(&config.access));
        let audit = start_audit_log(&config)?;

        listener
            .set_nonblocking(true)
            .map_err(StartError::Listener)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(StartError::Listener)?;
        // A certificate that cannot be used stops start-up, naming its file.
        let server_tls = match config.tls.mode {
            TlsMode::Disabled => None,
            _ => server_config(&config.tls)?,
        };
        let local_addr = listener.local_addr().map_err(StartError::Listener)?;

        // The connection threads, each with this server's route cache.
        let workers: Vec<Arbiter> = (0..config.server.worker_count())
            .map(|_| Arbiter::new())
            .collect();
        let route_cache = CacheId::next();
        let cache_limit = config.registry.route_cache_bytes;
        let keepers: Vec<Addr<RouteCacheKeeper>> = workers
            .iter()
            .map(|worker| {
                let accounts = Arc::clone(&accounts);
                let access = Arc::clone(&access);
                RouteCacheKeeper::start_in_arbiter(&worker.handle(), move |_| {
                    // On the keeper's thread, before any connection there: its accounts and
                    // failed-attempt ledger.
                    rmq_actors::access::install_on_this_thread(route_cache, accounts, &access);
                    RouteCacheKeeper::new(route_cache, cache_limit)
                })
            })
            .collect();
        let route_caches: Vec<Recipient<InvalidateRoutes>> =
            keepers.iter().map(|k| k.clone().recipient()).collect();

        // TLS of the server's outbound calls (cluster-test lookups, notifications to brokers).
        let client_tls = if config.tls.client.enable {
            Some(rmq_transport::client::client_config(&config.tls.client)?)
        } else {
            None
        };
        let registry_arbiter = Arbiter::new();
        let registry_settings = config.registry.clone();
        let cluster_test = config.cluster_test.enabled;
        let registry_tls = client_tls.clone();
        let routes = Supervisor::start_in_arbiter(&registry_arbiter.handle(), move |_| {
            RouteRegistry::new(
                registry_settings.clone(),
                cluster_test,
                route_caches.clone(),
            )
            .with_outbound_tls(registry_tls.clone())
        });

        let scan_interval = config.registry.scan_interval;
        let hk_routes = routes.clone();
        let housekeeping = Supervisor::start(move |_| {
            Housekeeping::new(
                hk_routes.clone().recipient(),
                hk_routes.clone().recipient(),
                scan_interval,
            )
        });

        let limits = Limits::new(config.server.max_decoding_bytes).start();

        let kv_routes = routes.clone();
        let print_interval = config.kv.print_interval;
        let kv = Supervisor::start(move |_| {
            KvStore::new(
                kv_source.clone(),
                kv_routes.clone().recipient(),
                print_interval,
            )
        });

        let rc_config = config.clone();
        let rc_routes = routes.clone();
        let runtime = Supervisor::start(move |_| {
            RuntimeConfig::new(rc_config.clone(), local_addr, rc_routes.clone().recipient())
        });

        let env_tls = client_tls.clone();
        let product_env = config.cluster_test.enabled.then(|| {
            let name = config.cluster_test.product_env_name.clone();
            let addrs = config.cluster_test.product_env_addrs();
            Supervisor::start(move |_| {
                ProductEnv::new(
                    name.clone(),
                    addrs.clone(),
                    PRODUCT_ENV_TIMEOUT,
                    env_tls.clone(),
                )
            })
        });
        let contained = Contained {
            routes: routes.clone(),
            kv: kv.clone(),
            housekeeping: housekeeping.clone(),
            runtime: runtime.clone(),
            product_env: product_env.clone(),
            keepers,
        };

        let access_guard = acl_path.map(|path| {
            rmq_actors::access::guard::describe(&accounts, "loaded");
            let keepers = contained.keepers.clone();
            let every = config.access.reload_check_interval;
            let accounts = Arc::clone(&accounts);
            let control = Arc::clone(&access);
            Supervisor::start(move |_| {
                AccessGuard::new(
                    path.clone(),
                    Arc::clone(&accounts),
                    GuardSubscribers {
                        accounts: keepers.iter().map(|k| k.clone().recipient()).collect(),
                        blocks: keepers.iter().map(|k| k.clone().recipient()).collect(),
                    },
                    &control,
                    every,
                )
            })
        });

        let front_door = FrontDoor {
            mode: config.tls.mode,
            tls: server_tls.as_ref().map(|t| Arc::clone(&t.config)),
            proxy: Arc::new(config.proxy_protocol.clone()),
            handshake_timeout: config.tls.handshake_timeout,
            // A broker connects about 10 s before its first registration: silence until the
            // idle timeout is normal, as on Java's port.
            first_byte_timeout: config.server.idle_timeout(),
        };
        // The HTTP port admits as the remoting port does (TLS mode, certificate), without PROXY.
        // HTTP clients speak at once: a silent one gets the handshake timeout, not the idle one.
        let http_door = FrontDoor {
            proxy: Arc::new(ProxyProtocolSettings::default()),
            first_byte_timeout: Some(config.tls.handshake_timeout),
            ..front_door.clone()
        };
        let controller_door = front_door.clone();
        let mut services = None;
        let listener = Listener::create(|_ctx| {
            #[cfg(debug_assertions)]
            let mut faults = contained.fault_targets();
            #[cfg(debug_assertions)]
            faults.push(("listener", _ctx.address().recipient()));
            let these = Services {
                routes: routes.clone(),
                kv: kv.clone(),
                config_reader: runtime.clone().recipient(),
                config_writer: runtime.recipient(),
                product_env: product_env.map(Addr::recipient),
                opened: housekeeping.clone().recipient(),
                closed: housekeeping.clone().recipient(),
                went_away: housekeeping.clone().recipient(),
                limits: limits.clone(),
                route_cache,
                access: Arc::clone(&access),
                failed_attempts: access_guard.clone().map(Addr::recipient),
                audit: audit.clone().recipient(),
                controller: None,
                #[cfg(debug_assertions)]
                faults,
            };
            services = Some(these.clone());
            Listener::new(ListenerSetup {
                listener,
                front_door,
                workers: workers.iter().map(Arbiter::handle).collect(),
                settings: config.server.clone(),
                services: these,
            })
        });
        let controller = match services {
            Some(services) => crate::controller_port::start(
                &config,
                Shared {
                    front_door: controller_door,
                    workers: &workers,
                    services,
                    client_tls,
                },
            )?,
            None => None,
        };
        log_policies(&config);
        info!(
            addr = %local_addr,
            workers = workers.len(),
            tls = ?config.tls.mode,
            certificate = server_tls.as_ref().map_or("none", |t| t.source.as_str()),
            proxy_protocol = ?config.proxy_protocol.mode,
            "name server started"
        );

        let (accepting, accepting_rx) = tokio::sync::watch::channel(true);
        let http = match config.http.listen {
            None => None,
            Some(addr) => {
                let bound = std::net::TcpListener::bind(addr)
                    .and_then(|l| l.set_nonblocking(true).map(|()| l))
                    .map_err(|source| StartError::Http { addr, source })?;
                let probe_contained = contained.clone();
                let probe_listener = listener.clone();
                let observed = Observed {
                    routes: routes.clone(),
                    kv: kv.clone(),
                    housekeeping: housekeeping.clone(),
                    limits: limits.clone(),
                    keepers: contained.keepers.clone(),
                    health: Arc::new(move || {
                        let contained = probe_contained.clone();
                        let listener = probe_listener.clone();
                        Box::pin(async move { health_of(&contained, &listener).await })
                    }),
                    accepting: accepting_rx,
                    remoting: local_addr,
                    started: Instant::now(),
                    http: config.http.clone(),
                    access: Arc::clone(&access),
                    access_guard: access_guard.clone(),
                };
                Some(
                    crate::http::start(bound, http_door, observed)
                        .map_err(|source| StartError::Http { addr, source })?,
                )
            }
        };
        let tls_reloader = (config.tls.mode != TlsMode::Disabled).then(|| {
            let base = config.tls.clone();
            let settings = config.tls.clone();
            let mut listeners = vec![listener.clone().recipient()];
            listeners.extend(http.as_ref().map(HttpPort::tls_listener));
            // The controller's port serves the same, reloaded certificate.
            listeners.extend(
                controller
                    .as_ref()
                    .map(|port| port.listener.clone().recipient()),
            );
            Supervisor::start(move |_| {
                let base = base.clone();
                TlsReloader::new(
                    Arc::new(move || crate::java_keys::tls_with_config_file(&base)),
                    settings.clone(),
                    listeners.clone(),
                )
            })
        });

        let mut arbiters = workers;
        arbiters.push(registry_arbiter);
        let controller = controller.map(|port| {
            let ControllerPort {
                addr,
                controller,
                listener,
                arbiter,
            } = port;
            arbiters.push(arbiter);
            (addr, controller, listener)
        });
        Ok(NameServerHandle {
            local_addr,
            routes,
            kv,
            housekeeping,
            limits,
            contained,
            listener,
            tls_reloader,
            access_guard,
            audit,
            arbiters,
            shutdown_grace: config.server.shutdown_grace,
            drain: config
                .server
                .shutdown_gracefully
                .then_some(config.server.shutdown_wait),
            http,
            accepting,
            controller,
        })
    }
}

/// A running NameServer: its address, its actors, and a graceful stop.
/// The actors whose handler panics are contained, for health reports and fault injection.
#[derive(Clone)]
struct Contained {
    routes: Addr<RouteRegistry>,
    kv: Addr<KvStore>,
    housekeeping: Addr<Housekeeping>,
    runtime: Addr<RuntimeConfig>,
    product_env: Option<Addr<ProductEnv>>,
    keepers: Vec<Addr<RouteCacheKeeper>>,
}

impl Contained {
    /// Each actor's health: alive (its mailbox open) and the panics it contained.
    async fn health(&self) -> Vec<ActorStatus> {
        let mut status = vec![
            ask(&self.routes).await,
            ask(&self.kv).await,
            ask(&self.housekeeping).await,
            ask(&self.runtime).await,
        ];
        if let Some(env) = &self.product_env {
            status.push(ask(env).await);
        }
        for keeper in &self.keepers {
            status.push(ask(keeper).await);
        }
        status
    }

    #[cfg(debug_assertions)]
    fn fault_targets(&self) -> Vec<(&'static str, Recipient<InjectPanic>)> {
        let mut targets = vec![
            ("registry", self.routes.clone().recipient()),
            ("kv", self.kv.clone().recipient()),
            ("housekeeping", self.housekeeping.clone().recipient()),
            ("runtime_config", self.runtime.clone().recipient()),
        ];
        if let Some(env) = &self.product_env {
            targets.push(("product_env", env.clone().recipient()));
        }
        if let Some(keeper) = self.keepers.first() {
            targets.push(("route_cache", keeper.clone().recipient()));
        }
        targets
    }
}

/// Every actor's health: the contained ones, then the listener.
async fn health_of(contained: &Contained, listener: &Addr<Listener>) -> Health {
    let mut actors = contained.health().await;
    actors.push(ActorStatus {
        actor: "listener",
        alive: listener.connected(),
        panics: 0,
    });
    Health { actors }
}

/// One contained actor's health: `alive` unless its task is gone (a panic that could not be
/// contained); `panics` contained so far (0 when it could not be asked).
async fn ask<A>(addr: &Addr<A>) -> ActorStatus
where
    A: Actor<Context = Context<A>> + Recover + Handler<GetHealth>,
{
    let answer = tokio::time::timeout(HEALTH_TIMEOUT, addr.send(GetHealth)).await;
    ActorStatus {
        actor: A::NAME,
        alive: addr.connected(),
        panics: answer.ok().and_then(Result::ok).map_or(0, |h| h.panics),
    }
}

/// How long a health query waits for a busy actor.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);

pub struct NameServerHandle {
    local_addr: SocketAddr,
    routes: Addr<RouteRegistry>,
    kv: Addr<KvStore>,
    housekeeping: Addr<Housekeeping>,
    limits: Addr<Limits>,
    contained: Contained,
    listener: Addr<Listener>,
    tls_reloader: Option<Addr<TlsReloader>>,
    /// Reloads the ACL file (when there is one).
    access_guard: Option<Addr<AccessGuard>>,
    audit: Addr<AuditLog>,
    arbiters: Vec<Arbiter>,
    shutdown_grace: Duration,
    /// `server.shutdown_wait` when `server.shutdown_gracefully`.
    drain: Option<Duration>,
    /// The HTTP port, when `http.listen` is set.
    http: Option<HttpPort>,
    /// Tells the HTTP port's `/ready` that a stop began.
    accepting: tokio::sync::watch::Sender<bool>,
    /// The embedded controller: its address, actor and listener (when enabled).
    controller: Option<(SocketAddr, Addr<Controller>, Addr<Listener>)>,
}

impl NameServerHandle {
    /// The address the server listens on (with the real port when it was bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The embedded controller's address, when `controller.enabled`.
    pub fn controller_addr(&self) -> Option<SocketAddr> {
        self.controller.as_ref().map(|(addr, _, _)| *addr)
    }

    /// The route registry: send it the typed messages of [`rmq_actors::messages`].
    pub fn routes(&self) -> &Addr<RouteRegistry> {
        &self.routes
    }

    /// The KV store: the KV messages of [`rmq_actors::messages`].
    pub fn kv(&self) -> &Addr<KvStore> {
        &self.kv
    }

    /// The housekeeping actor (expiry scans, open connections).
    pub fn housekeeping(&self) -> &Addr<Housekeeping> {
        &self.housekeeping
    }

    /// Whether every actor is alive, and the handler panics each has contained
    /// (docs/actors.md#supervision-and-panics).
    pub async fn health(&self) -> Health {
        health_of(&self.contained, &self.listener).await
    }

    /// The address of the HTTP port (metrics, health, address server, status page), when
    /// `http.listen` is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(HttpPort::local_addr)
    }

    /// Number of open connections.
    pub async fn open_connections(&self) -> usize {
        self.housekeeping.send(OpenConnections).await.unwrap_or(0)
    }

    /// The open connections, with their clients (PROXY-header addresses where given).
    pub async fn connections(&self) -> Vec<OpenConnection> {
        self.housekeeping
            .send(ListConnections)
            .await
            .unwrap_or_default()
    }

    /// Reloads the TLS certificates now (what SIGHUP does); answers what happened.
    pub async fn reload_tls(&self) -> Result<String, String> {
        match &self.tls_reloader {
            Some(reloader) => reloader.send(ReloadTls).await.map_err(|e| e.to_string())?,
            None => Err("TLS is disabled".to_owned()),
        }
    }

    /// Reloads the ACL file now (SIGHUP does); answers what happened.
    pub async fn reload_accounts(&self) -> Result<String, String> {
        match &self.access_guard {
            Some(guard) => guard
                .send(ReloadAccounts)
                .await
                .map_err(|e| e.to_string())?,
            None => Err("no ACL file (access.acl_file)".to_owned()),
        }
    }

    /// Audit events written so far.
    pub async fn audit_count(&self) -> u64 {
        self.audit
            .send(rmq_actors::access::audit::AuditCount)
            .await
            .unwrap_or_default()
    }

    /// What each limit refused so far (connections, timeouts, budgets, overload, bad input), by
    /// the name of its configuration key; every limit is listed.
    pub async fn limit_counts(&self) -> Vec<(&'static str, u64)> {
        let counts = self.limits.send(LimitCounts).await.unwrap_or_default();
        Limit::ALL
            .iter()
            .map(|limit| {
                let n = counts
                    .iter()
                    .find(|(l, _)| l == limit)
                    .map_or(0, |(_, n)| *n);
                (limit.name(), n)
            })
            .collect()
    }

    /// How many GO_AWAY answers a drain has given so far.
    pub async fn go_away_count(&self) -> u64 {
        self.housekeeping.send(GoAwayCount).await.unwrap_or(0)
    }

    /// With `server.shutdown_gracefully`, drains first: for `server.shutdown_wait`, 5.x clients
    /// on the connections open now are answered GO_AWAY and reconnect (to this server, which
    /// serves the new connections as usual, or to another behind the same name). Then stops
    /// accepting, closes every connection (waiting up to `server.shutdown_grace`), waits for the
    /// KV store to be on disk, and stops the server's arbiters.
    pub async fn stop(self) {
        let _ = self.accepting.send(false);
        if let Some(wait) = self.drain {
            let mut told = self.housekeeping.send(DrainAll).await.unwrap_or(0);
            if let Some((_, controller, _)) = &self.controller {
                told += controller.send(DrainAll).await.unwrap_or(0);
            }
            info!(connections = told, wait = ?wait, "draining: 5.x clients are answered GO_AWAY");
            tokio::time::sleep(wait).await;
            info!(
                go_away = self.go_away_count().await,
                "drain over; GO_AWAY answers given"
            );
        }
        self.listener.do_send(StopAccepting);
        let deadline = Instant::now() + self.shutdown_grace;
        if let Some((_, controller, listener)) = &self.controller {
            listener.do_send(StopAccepting);
            let _ = controller.send(CloseAll { deadline }).await;
        }
        match self.housekeeping.send(CloseAll { deadline }).await {
            Ok(0) => info!("all connections closed"),
            Ok(open) => warn!(
                open,
                "connections still open at the end of the shutdown grace"
            ),
            Err(err) => warn!(error = %err, "housekeeping unavailable during stop"),
        }
        match self.kv.send(FlushKv).await {
            Ok(true) => {}
            Ok(false) => warn!("the KV store has changes that could not be saved"),
            Err(err) => warn!(error = %err, "KV store unavailable during stop"),
        }
        if let Some(http) = &self.http {
            http.stop().await;
        }
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
        info!(addr = %self.local_addr, "name server stopped");
    }
}

/// The audit log: `access.audit_log`, else `audit.log` in `log.dir`, else the main log.
fn start_audit_log(config: &Config) -> Result<Addr<AuditLog>, StartError> {
    let access = &config.access;
    let path = if !access.audit_log.as_os_str().is_empty() {
        Some(expand_home(&access.audit_log))
    } else {
        config.log.file_dir().map(|dir| dir.join(AUDIT_FILE_NAME))
    };
    let log = AuditLog::open(
        path.as_deref(),
        access.audit_max_file_size,
        access.audit_max_files,
    )
    .map_err(|source| StartError::Audit {
        path: path.clone().unwrap_or_default(),
        source,
    })?;
    if let Some(path) = &path {
        info!(path = %path.display(), "audit log");
    }
    Ok(log.start())
}

/// The audit file in `log.dir` when `access.audit_log` is empty.
pub const AUDIT_FILE_NAME: &str = "audit.log";

/// One line per class whose policy is not open (nothing when everything is: Java's behaviour).
fn log_policies(config: &Config) {
    for class in AccessClass::ALL {
        let kind = config.access.policy_kind(class);
        if kind != crate::config::PolicyKind::Open {
            info!(
                class = class.name(),
                policy = kind.as_str(),
                networks = ?config.access.class(class).networks,
                "access policy"
            );
        }
    }
}
