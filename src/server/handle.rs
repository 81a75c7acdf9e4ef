//! [`NameServerHandle`]: a running NameServer's address, its actors, their health, and the
//! graceful stop.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::guard::{AccessGuard, ReloadAccounts};
#[cfg(debug_assertions)]
use rmq_actors::contain::InjectPanic;
use rmq_actors::contain::{GetHealth, Recover};
use rmq_actors::controller::Controller;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::KvStore;
use rmq_actors::limits::{Limit, LimitCounts, Limits};
use rmq_actors::listener::Listener;
use rmq_actors::messages::{
    CloseAll, DrainAll, FlushKv, GoAwayCount, ListConnections, OpenConnection, OpenConnections,
    ReloadTls, SaveRoutes, StopAccepting,
};
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::RouteCacheKeeper;
use rmq_actors::tls_reload::TlsReloader;
use tracing::{info, warn};

use crate::health::{ActorStatus, Health};
use crate::http::HttpPort;
use crate::product_env::ProductEnv;
use crate::runtime_config::RuntimeConfig;

/// The actors whose handler panics are contained, for health reports and fault injection.
#[derive(Clone)]
pub(super) struct Contained {
    pub routes: Addr<RouteRegistry>,
    pub kv: Addr<KvStore>,
    pub housekeeping: Addr<Housekeeping>,
    pub runtime: Addr<RuntimeConfig>,
    pub product_env: Option<Addr<ProductEnv>>,
    pub keepers: Vec<Addr<RouteCacheKeeper>>,
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
    pub(super) fn fault_targets(&self) -> Vec<(&'static str, Recipient<InjectPanic>)> {
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
pub(super) async fn health_of(contained: &Contained, listener: &Addr<Listener>) -> Health {
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
pub(super) async fn ask<A>(addr: &Addr<A>) -> ActorStatus
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

/// Reloads the TLS certificates with `reloader` (none: TLS is off); answers what happened.
pub(super) async fn reload_tls(reloader: Option<&Addr<TlsReloader>>) -> Result<String, String> {
    match reloader {
        Some(reloader) => reloader.send(ReloadTls).await.map_err(|e| e.to_string())?,
        None => Err("TLS is disabled".to_owned()),
    }
}

/// Reloads the ACL file with `guard` (none: there is no ACL file); answers what happened.
pub(super) async fn reload_accounts(guard: Option<&Addr<AccessGuard>>) -> Result<String, String> {
    match guard {
        Some(guard) => guard
            .send(ReloadAccounts)
            .await
            .map_err(|e| e.to_string())?,
        None => Err("no ACL file (access.acl_file)".to_owned()),
    }
}

/// How long a stop waits for the route snapshot to be written (warm restart).
const SAVE_ROUTES_TIMEOUT: Duration = Duration::from_secs(20);

/// A running NameServer: its address, its actors, and a graceful stop.
pub struct NameServerHandle {
    pub(super) local_addr: SocketAddr,
    pub(super) routes: Addr<RouteRegistry>,
    pub(super) kv: Addr<KvStore>,
    pub(super) housekeeping: Addr<Housekeeping>,
    pub(super) limits: Addr<Limits>,
    pub(super) contained: Contained,
    pub(super) listener: Addr<Listener>,
    pub(super) tls_reloader: Option<Addr<TlsReloader>>,
    /// Reloads the ACL file (when there is one).
    pub(super) access_guard: Option<Addr<AccessGuard>>,
    pub(super) audit: Addr<AuditLog>,
    pub(super) arbiters: Vec<Arbiter>,
    pub(super) shutdown_grace: Duration,
    /// `server.shutdown_wait` when `server.shutdown_gracefully`.
    pub(super) drain: Option<Duration>,
    /// The HTTP port, when `http.listen` is set.
    pub(super) http: Option<HttpPort>,
    /// Tells the HTTP port's `/ready` that a stop began.
    pub(super) accepting: tokio::sync::watch::Sender<bool>,
    /// The embedded controller: its address, actor and listener (when enabled).
    pub(super) controller: Option<(SocketAddr, Addr<Controller>, Addr<Listener>)>,
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

    /// With `registry.warm_restart`, the route tables are written for the next start (bounded:
    /// a disk that hangs does not hold the stop).
    async fn save_routes(&self) {
        let save = self.routes.send(SaveRoutes);
        match tokio::time::timeout(SAVE_ROUTES_TIMEOUT, save).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(why))) => warn!(error = %why, "route snapshot not written at stop"),
            Ok(Err(err)) => warn!(error = %err, "route registry unavailable during stop"),
            Err(_) => {
                warn!(timeout = ?SAVE_ROUTES_TIMEOUT, "route snapshot not written in time at stop")
            }
        }
    }

    /// With `server.shutdown_gracefully`, drains first: for `server.shutdown_wait`, 5.x clients
    /// on the connections open now are answered GO_AWAY and reconnect (to this server, which
    /// serves the new connections as usual, or to another behind the same name). Then stops
    /// accepting, closes every connection (waiting up to `server.shutdown_grace`), waits for the
    /// KV store to be on disk, and stops the server's arbiters.
    pub async fn stop(self) {
        let _ = self.accepting.send(false);
        // Before any connection closes (a closed broker connection removes that broker).
        self.save_routes().await;
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
