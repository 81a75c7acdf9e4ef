//! [`StandaloneController`]: the 5.x controller as a process of its own (Java's `mqcontroller`,
//! `rmq-namesrv controller`): the controller's port with the NameServer's front door (TLS, PROXY,
//! access control, limits, drain), the HTTP port and the ACL and certificate reloads, without the
//! NameServer's tables or port.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::guard::AccessGuard;
use rmq_actors::controller::Controller;
use rmq_actors::listener::Listener;
use rmq_actors::messages::{CloseAll, DrainAll, StopAccepting};
use rmq_actors::route_cache::RouteCacheKeeper;
use rmq_actors::tls_reload::TlsReloader;
use tracing::{info, warn};

use super::front::{self, Front};
use super::handle::{ask, reload_accounts, reload_tls};
use super::preflight::{self, StartError};
use crate::config::Config;
use crate::controller_port::{self, ControllerPort, ControllerStartError};
use crate::health::{ActorStatus, Health};
use crate::http::{HttpPort, Observed};
use crate::java_keys::JAVA_KEYS;

/// The sections only a NameServer uses.
const NAMESRV_SECTIONS: [&str; 4] = ["registry", "kv", "cluster_test", "admin"];

/// Keys of those sections the controller reads too.
const USED_BY_THE_CONTROLLER: &[&str] = &[
    // `scanNotActiveBrokerInterval`: the controller's heartbeat-expiry scan.
    "registry.scan_interval",
    // `configStorePath`: the controller's config store (see `StandaloneController::new`).
    "kv.config_store_path",
];

/// A standalone controller to start: `config`'s `[controller]` (turned on whatever
/// `controller.enabled` says), front door (`server`, `tls`, `proxy_protocol`, `access`), `http`
/// and `log`; the NameServer's sections (`registry` but its scan interval, `kv`,
/// `cluster_test`, `admin`, `server.listen`) are not used.
#[derive(Debug, Clone)]
pub struct StandaloneController {
    config: Config,
}

impl StandaloneController {
    pub fn new(mut config: Config) -> Self {
        config.controller.enabled = true;
        // In a controller's file, as in Java's `ControllerConfig`, `configStorePath` is where
        // UPDATE_CONTROLLER_CONFIG persists (a NameServer's file maps it to kv.config_store_path).
        let defaults = Config::default();
        if config.controller.config_store_path == defaults.controller.config_store_path
            && config.kv.config_store_path != defaults.kv.config_store_path
        {
            config.controller.config_store_path = config.kv.config_store_path.clone();
        }
        Self { config }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The settings given (changed from their defaults) that a standalone controller does not
    /// use: the NameServer's, by our key and the Java property when there is one, for a warning
    /// at start as the daemon gives for a Java key without effect.
    pub fn unused_settings(&self) -> Vec<String> {
        let given = toml::Value::try_from(&self.config).ok();
        let default = toml::Value::try_from(Config::default()).ok();
        let (Some(given), Some(default)) = (given, default) else {
            return Vec::new();
        };
        let mut unused = Vec::new();
        for section in NAMESRV_SECTIONS {
            let (Some(mine), Some(base)) = (given.get(section), default.get(section)) else {
                continue;
            };
            let Some(mine) = mine.as_table() else {
                continue;
            };
            for (key, value) in mine {
                let ours = format!("{section}.{key}");
                if base.get(key) != Some(value) && !USED_BY_THE_CONTROLLER.contains(&&*ours) {
                    unused.push(ours);
                }
            }
        }
        if self.config.server.listen != Config::default().server.listen {
            // Java's controller also listens on its controllerDLegerPeers address only.
            unused.push("server.listen (listenPort)".to_owned());
        }
        unused
            .into_iter()
            .map(|ours| match JAVA_KEYS.iter().find(|k| k.ours == ours) {
                Some(key) => format!("{ours} ({})", key.java),
                None => ours,
            })
            .collect()
    }

    /// Binds this node's address in `controller.peers` (and `http.listen`) and starts. Call from
    /// inside a running actix System: the controller and its store run on an arbiter of their
    /// own, connections on `server.workers` worker arbiters, the audit log and access guard on a
    /// `state` arbiter, the listeners and the HTTP port on the current one. Everything that can
    /// fail is checked before any actor starts.
    pub fn start(self) -> Result<ControllerHandle, StartError> {
        if System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        let config = self.config;
        config
            .controller
            .validate()
            .map_err(|e| ControllerStartError::Config(e.to_string()))?;
        let admitted = preflight::admit(&config)?;
        let prepared = controller_port::prepare(&config)?.ok_or_else(|| {
            ControllerStartError::Config("no address for this node in controller.peers".into())
        })?;
        let http = preflight::bind_http(&config)?;
        let front = front::start(&config, admitted);
        let started = prepared.start(front.notifier.clone().recipient());
        let services = front.controller_services(started.controller(), None);
        let port = started.listen(front.front_door.clone(), &front.workers, services);
        front::log_policies(&config);
        info!(
            addr = %port.addr,
            workers = front.workers.len(),
            tls = ?config.tls.mode,
            certificate = front.server_tls.as_ref().map_or("none", |t| t.source.as_str()),
            proxy_protocol = ?config.proxy_protocol.mode,
            "standalone controller started"
        );
        Ok(launch(&config, front, port, http))
    }
}

/// Starts the HTTP port and the certificate reloader of a started controller.
fn launch(
    config: &Config,
    front: Front,
    port: ControllerPort,
    http: Option<(tokio::net::TcpListener, SocketAddr)>,
) -> ControllerHandle {
    let (accepting, accepting_rx) = tokio::sync::watch::channel(true);
    let parts = Parts {
        keepers: front.keepers.clone(),
        controller: port.controller.clone(),
        listener: port.listener.clone(),
    };
    let http = http.map(|(bound, addr)| {
        let observed = Observed {
            namesrv: None,
            limits: front.limits.clone(),
            keepers: front.keepers.clone(),
            health: parts.probe(),
            accepting: accepting_rx,
            remoting: port.addr,
            started: Instant::now(),
            http: config.http.clone(),
            access: std::sync::Arc::clone(&front.access),
            access_guard: front.access_guard.clone(),
            addresses: None,
            controller: Some(port.controller.clone()),
            // A standalone controller has no route tables to compare.
            fleet: None,
        };
        crate::http::start(bound, addr, front.http_door(config), observed)
    });
    let mut tls_listeners = vec![port.listener.clone().recipient()];
    tls_listeners.extend(http.as_ref().map(HttpPort::tls_listener));
    let tls_reloader = front::start_tls_reloader(config, tls_listeners);
    let mut arbiters = front.workers;
    arbiters.push(front.state);
    arbiters.push(port.arbiter);
    ControllerHandle {
        addr: port.addr,
        parts,
        tls_reloader,
        access_guard: front.access_guard,
        audit: front.audit,
        arbiters,
        shutdown_grace: config.server.shutdown_grace,
        drain: config
            .server
            .shutdown_gracefully
            .then_some(config.server.shutdown_wait),
        http,
        accepting,
    }
}

/// The actors whose health the handle and `/health` report.
#[derive(Clone)]
struct Parts {
    keepers: Vec<Addr<RouteCacheKeeper>>,
    controller: Addr<Controller>,
    listener: Addr<Listener>,
}

impl Parts {
    async fn health(&self) -> Health {
        let mut actors = Vec::with_capacity(self.keepers.len() + 2);
        for keeper in &self.keepers {
            actors.push(ask(keeper).await);
        }
        actors.push(ActorStatus {
            actor: "controller",
            alive: self.controller.connected(),
            panics: 0,
        });
        actors.push(ActorStatus {
            actor: "listener",
            alive: self.listener.connected(),
            panics: 0,
        });
        Health { actors }
    }

    fn probe(&self) -> crate::http::HealthProbe {
        let parts = self.clone();
        std::sync::Arc::new(move || {
            let parts = parts.clone();
            Box::pin(async move { parts.health().await })
        })
    }
}

/// A running standalone controller: its address, its actor, and a graceful stop.
pub struct ControllerHandle {
    addr: SocketAddr,
    parts: Parts,
    tls_reloader: Option<Addr<TlsReloader>>,
    access_guard: Option<Addr<AccessGuard>>,
    audit: Addr<AuditLog>,
    arbiters: Vec<Arbiter>,
    shutdown_grace: Duration,
    /// `server.shutdown_wait` when `server.shutdown_gracefully`.
    drain: Option<Duration>,
    http: Option<HttpPort>,
    /// Tells the HTTP port's `/ready` that a stop began.
    accepting: tokio::sync::watch::Sender<bool>,
}

impl ControllerHandle {
    /// The controller's address (this node's in `controller.peers`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The controller actor: send it the typed requests of [`rmq_actors::controller`].
    pub fn controller(&self) -> &Addr<Controller> {
        &self.parts.controller
    }

    /// The HTTP port's address, when `http.listen` is set.
    pub fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(HttpPort::local_addr)
    }

    /// Whether every actor is alive, and the handler panics each has contained.
    pub async fn health(&self) -> Health {
        self.parts.health().await
    }

    /// Reloads the TLS certificates now (what SIGHUP does); answers what happened.
    pub async fn reload_tls(&self) -> Result<String, String> {
        reload_tls(self.tls_reloader.as_ref()).await
    }

    /// Reloads the ACL file now (SIGHUP does); answers what happened.
    pub async fn reload_accounts(&self) -> Result<String, String> {
        reload_accounts(self.access_guard.as_ref()).await
    }

    /// Audit events written so far.
    pub async fn audit_count(&self) -> u64 {
        self.audit
            .send(rmq_actors::access::audit::AuditCount)
            .await
            .unwrap_or_default()
    }

    /// As the NameServer's stop: with `server.shutdown_gracefully`, 5.x brokers on the open
    /// connections are answered GO_AWAY for `server.shutdown_wait`; then the port stops
    /// accepting, the controller steps down and closes its connections (waiting up to
    /// `server.shutdown_grace`), and the arbiters stop.
    pub async fn stop(self) {
        let _ = self.accepting.send(false);
        let controller = &self.parts.controller;
        if let Some(wait) = self.drain {
            let told = controller.send(DrainAll).await.unwrap_or(0);
            info!(connections = told, wait = ?wait, "draining: 5.x clients are answered GO_AWAY");
            tokio::time::sleep(wait).await;
        }
        self.parts.listener.do_send(StopAccepting);
        let deadline = Instant::now() + self.shutdown_grace;
        // The controller steps down first, so the closes are not read as masters lost.
        match controller.send(CloseAll { deadline }).await {
            Ok(told) => info!(connections = told, "connections closed"),
            Err(err) => warn!(error = %err, "controller unavailable during stop"),
        }
        if let Some(http) = &self.http {
            http.stop().await;
        }
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
        info!(addr = %self.addr, "standalone controller stopped");
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_nameserver_s_settings_are_named_unused_but_the_scan_interval() {
        let mut config = Config::default();
        assert!(StandaloneController::new(config.clone())
            .unused_settings()
            .is_empty());
        config.server.listen = "127.0.0.1:19876".parse().unwrap();
        config.kv.path = "/data/kv.json".into();
        config.registry.scan_interval = Duration::from_secs(2);
        config.registry.enable_topic_list = false;
        let unused = StandaloneController::new(config).unused_settings();
        assert_eq!(
            unused,
            [
                "registry.enable_topic_list (enableTopicList)",
                "kv.path (kvConfigPath)",
                "server.listen (listenPort)",
            ]
        );
    }
}
