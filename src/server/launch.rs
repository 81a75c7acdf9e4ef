//! Starting the actors of a NameServer whose start was checked ([`preflight`](super::preflight)):
//! nothing here can fail. Threads: the connection workers (each with its route cache keeper),
//! the route registry's arbiter, a `state` arbiter for the other owners of state (KV store,
//! runtime configuration, access guard, audit log), and the current arbiter for the listener,
//! housekeeping, the limits and the HTTP port. No owner of state shares the thread that accepts
//! connections, so a large KV write or ACL reload never delays an accept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::{KvSource, KvStore};
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::messages::InvalidateRoutes;
use rmq_actors::outbound::Notifier;
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::RouteCacheKeeper;
use rmq_actors::services::{NamesrvServices, Port, Services};
use rmq_actors::tls_reload::TlsReloader;
use rustls::ClientConfig;
use tracing::{info, warn};

use super::front::{self, Front, PortRole};
use super::handle::{health_of, Contained, NameServerHandle};
use super::preflight::Ready;
use crate::config::Config;
use crate::controller_port::ControllerPort;
use crate::fleet::FleetWatch;
use crate::http::addresses::AddressBook;
use crate::http::{HttpPort, NamesrvObserved, Observed};
use crate::product_env::ProductEnv;
use crate::runtime_config::RuntimeConfig;

/// How long a cluster-test lookup waits for each product-environment NameServer.
const PRODUCT_ENV_TIMEOUT: Duration = Duration::from_secs(3);

/// Starts every actor of a checked start and answers the running server's handle.
pub(super) fn launch(ready: Ready) -> NameServerHandle {
    let Ready {
        config,
        kv_source,
        listener,
        local_addr,
        controller,
        mut admitted,
    } = ready;
    let http = admitted.http.take();
    let front = front::start(&config, admitted);
    let owners = start_owners(&config, &front, kv_source, local_addr);
    let services = front.services(owners.role());
    let (listener, services) = start_listener(&config, listener, &front, &owners, services);
    let controller = controller.map(|prepared| {
        let started = prepared.start(front.notifier.clone().recipient());
        let port_services =
            front.controller_services(started.controller(), services.went_away.clone());
        #[cfg(debug_assertions)]
        let port_services = Services {
            faults: services.faults.clone(),
            ..port_services
        };
        started.listen(front.front_door.clone(), &front.workers, port_services)
    });
    front::log_policies(&config);
    info!(
        addr = %local_addr,
        workers = front.workers.len(),
        tls = ?config.tls.mode,
        certificate = front.server_tls.as_ref().map_or("none", |t| t.source.as_str()),
        proxy_protocol = ?config.proxy_protocol.mode,
        "name server started"
    );
    let (accepting, accepting_rx) = tokio::sync::watch::channel(true);
    let http = http.map(|(bound, addr)| {
        let observed = Observed {
            namesrv: Some(NamesrvObserved {
                routes: owners.contained.routes.clone(),
                kv: owners.contained.kv.clone(),
                housekeeping: owners.contained.housekeeping.clone(),
            }),
            limits: front.limits.clone(),
            keepers: front.keepers.clone(),
            health: health_probe(&owners.contained, &listener),
            accepting: accepting_rx,
            remoting: local_addr,
            started: Instant::now(),
            http: config.http.clone(),
            access: Arc::clone(&front.access),
            access_guard: front.access_guard.clone(),
            addresses: AddressBook::of(&config.http).map(Actor::start),
            controller: controller.as_ref().map(|port| port.controller.clone()),
            fleet: FleetWatch::of(&config, local_addr, front.client_tls.clone()).map(Actor::start),
        };
        crate::http::start(bound, addr, front.http_door(&config), observed)
    });
    let mut tls_listeners = vec![listener.clone().recipient()];
    tls_listeners.extend(http.as_ref().map(HttpPort::tls_listener));
    // The controller's port serves the same, reloaded certificate.
    tls_listeners.extend(
        controller
            .as_ref()
            .map(|port| port.listener.clone().recipient()),
    );
    let tls_reloader = front::start_tls_reloader(&config, tls_listeners);
    let ports = Ports {
        local_addr,
        listener,
        http,
        accepting,
        tls_reloader,
        controller,
    };
    owners.into_handle(&config, front, ports)
}

/// The owners of the NameServer's state, with the threads they run on (beyond the front
/// door's).
struct Owners {
    registry_arbiter: Arbiter,
    contained: Contained,
}

/// What serves the outside: the listeners, the HTTP port, the reloader of their certificate.
struct Ports {
    local_addr: std::net::SocketAddr,
    listener: Addr<Listener>,
    http: Option<HttpPort>,
    accepting: tokio::sync::watch::Sender<bool>,
    tls_reloader: Option<Addr<TlsReloader>>,
    controller: Option<ControllerPort>,
}

/// Starts the registry, housekeeping and, on the front door's `state` arbiter, the KV store and
/// the runtime configuration.
fn start_owners(
    config: &Config,
    front: &Front,
    kv_source: KvSource,
    local_addr: std::net::SocketAddr,
) -> Owners {
    let registry_arbiter = Arbiter::new();
    let routes = start_registry(config, &registry_arbiter, &front.keepers, &front.notifier);
    let housekeeping = start_housekeeping(config, &routes);
    let kv = start_kv(config, &front.state, kv_source, &routes);
    let rc_config = config.clone();
    let rc_routes = routes.clone();
    let runtime = Supervisor::start_in_arbiter(&front.state.handle(), move |_| {
        RuntimeConfig::new(rc_config.clone(), local_addr, rc_routes.clone().recipient())
    });
    Owners {
        registry_arbiter,
        contained: Contained {
            routes,
            kv,
            housekeeping,
            runtime,
            product_env: start_product_env(config, &front.client_tls),
            keepers: front.keepers.clone(),
        },
    }
}

impl Owners {
    /// What the connections of the remoting port do with their requests and lifecycle.
    fn role(&self) -> PortRole {
        let contained = &self.contained;
        PortRole {
            namesrv: Some(NamesrvServices {
                routes: contained.routes.clone(),
                kv: contained.kv.clone(),
                config_reader: contained.runtime.clone().recipient(),
                config_writer: contained.runtime.clone().recipient(),
                product_env: contained.product_env.clone().map(Addr::recipient),
            }),
            opened: contained.housekeeping.clone().recipient(),
            closed: contained.housekeeping.clone().recipient(),
            went_away: Some(contained.housekeeping.clone().recipient()),
            port: Port::NameServer,
            controller: None,
        }
    }

    /// The running server's handle.
    fn into_handle(self, config: &Config, front: Front, ports: Ports) -> NameServerHandle {
        let mut arbiters = front.workers;
        arbiters.push(self.registry_arbiter);
        arbiters.push(front.state);
        let controller = ports.controller.map(|port| {
            let ControllerPort {
                addr,
                controller,
                listener,
                arbiter,
            } = port;
            arbiters.push(arbiter);
            (addr, controller, listener)
        });
        NameServerHandle {
            local_addr: ports.local_addr,
            routes: self.contained.routes.clone(),
            kv: self.contained.kv.clone(),
            housekeeping: self.contained.housekeeping.clone(),
            limits: front.limits,
            contained: self.contained,
            listener: ports.listener,
            tls_reloader: ports.tls_reloader,
            access_guard: front.access_guard,
            audit: front.audit,
            arbiters,
            shutdown_grace: config.server.shutdown_grace,
            drain: config
                .server
                .shutdown_gracefully
                .then_some(config.server.shutdown_wait),
            http: ports.http,
            accepting: ports.accepting,
            controller,
        }
    }
}

/// The route registry, on an arbiter of its own.
fn start_registry(
    config: &Config,
    arbiter: &Arbiter,
    keepers: &[Addr<RouteCacheKeeper>],
    notifier: &Addr<Notifier>,
) -> Addr<RouteRegistry> {
    let notifier = notifier.clone().recipient();
    let route_caches: Vec<Recipient<InvalidateRoutes>> =
        keepers.iter().map(|k| k.clone().recipient()).collect();
    let settings = config.registry.clone();
    let cluster_test = config.cluster_test.enabled;
    let snapshot = restorable_snapshot(&settings);
    Supervisor::start_in_arbiter(&arbiter.handle(), move |_| {
        let registry = RouteRegistry::new(settings.clone(), cluster_test, route_caches.clone())
            .with_notifier(notifier.clone());
        match snapshot {
            Some(snapshot) => registry.with_restored(snapshot),
            None => registry,
        }
    })
}

/// With `registry.warm_restart`, the route snapshot of the last run, if there is a readable
/// one (a bad one is logged and ignored: the server starts empty, as without warm restart).
fn restorable_snapshot(
    settings: &rmq_actors::settings::RegistrySettings,
) -> Option<rmq_actors::route::RouteSnapshot> {
    if !settings.warm_restart {
        return None;
    }
    let path = rmq_actors::settings::expand_home(&settings.snapshot_path);
    match rmq_actors::registry::snapshots::load(&path) {
        Ok(Some(snapshot)) => Some(snapshot),
        Ok(None) => {
            info!(path = %path.display(), "no route snapshot to restore; starting empty");
            None
        }
        Err(why) => {
            warn!(error = %why, "route snapshot unreadable; starting empty");
            None
        }
    }
}

fn start_housekeeping(config: &Config, routes: &Addr<RouteRegistry>) -> Addr<Housekeeping> {
    let scan_interval = config.registry.scan_interval;
    let routes = routes.clone();
    Supervisor::start(move |_| {
        Housekeeping::new(
            routes.clone().recipient(),
            routes.clone().recipient(),
            scan_interval,
        )
    })
}

/// The KV store, on the state arbiter.
fn start_kv(
    config: &Config,
    state: &Arbiter,
    source: KvSource,
    routes: &Addr<RouteRegistry>,
) -> Addr<KvStore> {
    let routes = routes.clone();
    let print_interval = config.kv.print_interval;
    Supervisor::start_in_arbiter(&state.handle(), move |_| {
        KvStore::new(source.clone(), routes.clone().recipient(), print_interval)
    })
}

/// Cluster-test mode's lookups in the product environment.
fn start_product_env(
    config: &Config,
    client_tls: &Option<Arc<ClientConfig>>,
) -> Option<Addr<ProductEnv>> {
    config.cluster_test.enabled.then(|| {
        let name = config.cluster_test.product_env_name.clone();
        let addrs = config.cluster_test.product_env_addrs();
        let tls = client_tls.clone();
        Supervisor::start(move |_| {
            ProductEnv::new(
                name.clone(),
                addrs.clone(),
                PRODUCT_ENV_TIMEOUT,
                tls.clone(),
            )
        })
    })
}

/// The remoting port's listener, on the current arbiter; answers it and the services its
/// connections use (with, in debug builds, the actors a fault can be injected into).
fn start_listener(
    config: &Config,
    listener: tokio::net::TcpListener,
    front: &Front,
    owners: &Owners,
    services: Services,
) -> (Addr<Listener>, Services) {
    let ctx = Context::new();
    // Release builds have no fault injection, hence nothing to take from the owners.
    #[cfg(not(debug_assertions))]
    let _ = owners;
    #[cfg(debug_assertions)]
    let services = {
        let mut faults = owners.contained.fault_targets();
        faults.push(("listener", ctx.address().recipient()));
        Services { faults, ..services }
    };
    let listener = ctx.run(Listener::new(ListenerSetup {
        listener,
        front_door: front.front_door.clone(),
        workers: front.workers.iter().map(Arbiter::handle).collect(),
        settings: config.server.clone(),
        services: services.clone(),
    }));
    (listener, services)
}

/// The health check the HTTP port's `/health` runs.
fn health_probe(contained: &Contained, listener: &Addr<Listener>) -> crate::http::HealthProbe {
    let contained = contained.clone();
    let listener = listener.clone();
    Arc::new(move || {
        let contained = contained.clone();
        let listener = listener.clone();
        Box::pin(async move { health_of(&contained, &listener).await })
    })
}
