//! `NameServer`: starts the actor system on a listening socket and returns a handle to it.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::messages::{CloseAll, OpenConnections, StopAccepting};
use rmq_actors::registry::{RegistryLimits, RouteRegistry};
use tracing::{info, warn};

use crate::config::Config;

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
    #[error("no actix System is running; start the NameServer from inside one")]
    NoSystem,
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
    /// System: the listener and housekeeping run on the current arbiter, the route registry on
    /// an arbiter of its own, connections on `server.workers` worker arbiters.
    pub fn start(self, listener: std::net::TcpListener) -> Result<NameServerHandle, StartError> {
        if System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        listener
            .set_nonblocking(true)
            .map_err(StartError::Listener)?;
        let listener = tokio::net::TcpListener::from_std(listener).map_err(StartError::Listener)?;
        let local_addr = listener.local_addr().map_err(StartError::Listener)?;
        let config = self.config;

        let registry_arbiter = Arbiter::new();
        let live = config.registry.live_settings();
        let limits = RegistryLimits {
            route_cache_bytes: config.registry.route_cache_bytes,
            broker_expiry: config.registry.broker_expiry,
        };
        let routes = Supervisor::start_in_arbiter(&registry_arbiter.handle(), move |_| {
            RouteRegistry::new(live.clone(), limits)
        });

        let scan_interval = config.registry.scan_interval;
        let routes_for_hk = routes.clone();
        let housekeeping =
            Supervisor::start(move |_| Housekeeping::new(routes_for_hk.clone(), scan_interval));

        let workers: Vec<Arbiter> = (0..config.worker_count()).map(|_| Arbiter::new()).collect();
        let listener = Listener::new(ListenerSetup {
            listener,
            max_connections: config.server.max_connections,
            workers: workers.iter().map(Arbiter::handle).collect(),
            settings: config.connection_settings(),
            routes: routes.clone(),
            housekeeping: housekeeping.clone(),
        })
        .start();
        info!(addr = %local_addr, workers = workers.len(), "name server started");

        let mut arbiters = workers;
        arbiters.push(registry_arbiter);
        Ok(NameServerHandle {
            local_addr,
            routes,
            housekeeping,
            listener,
            arbiters,
            shutdown_grace: config.server.shutdown_grace,
        })
    }
}

/// A running NameServer: its address, its actors, and a graceful stop.
pub struct NameServerHandle {
    local_addr: SocketAddr,
    routes: Addr<RouteRegistry>,
    housekeeping: Addr<Housekeeping>,
    listener: Addr<Listener>,
    arbiters: Vec<Arbiter>,
    shutdown_grace: Duration,
}

impl NameServerHandle {
    /// The address the server listens on (with the real port when it was bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The route registry: send it the typed messages of [`rmq_actors::messages`].
    pub fn routes(&self) -> &Addr<RouteRegistry> {
        &self.routes
    }

    /// The housekeeping actor (expiry scans, open connections).
    pub fn housekeeping(&self) -> &Addr<Housekeeping> {
        &self.housekeeping
    }

    /// Number of open connections.
    pub async fn open_connections(&self) -> usize {
        self.housekeeping.send(OpenConnections).await.unwrap_or(0)
    }

    /// Stops accepting, closes every connection (waiting up to `server.shutdown_grace`), then
    /// stops the server's arbiters.
    pub async fn stop(self) {
        self.listener.do_send(StopAccepting);
        let deadline = Instant::now() + self.shutdown_grace;
        match self.housekeeping.send(CloseAll { deadline }).await {
            Ok(0) => info!("all connections closed"),
            Ok(open) => warn!(
                open,
                "connections still open at the end of the shutdown grace"
            ),
            Err(err) => warn!(error = %err, "housekeeping unavailable during stop"),
        }
        for arbiter in &self.arbiters {
            arbiter.stop();
        }
        info!(addr = %self.local_addr, "name server stopped");
    }
}
