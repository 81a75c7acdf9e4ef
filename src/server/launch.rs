//! Starting the actors of a NameServer whose start was checked ([`preflight`](super::preflight)):
//! nothing here can fail. Threads: the connection workers (each with its route cache keeper),
//! the route registry's arbiter, a `state` arbiter for the other owners of state (KV store,
//! runtime configuration, access guard, audit log), and the current arbiter for the listener,
//! housekeeping, the limits and the HTTP port. No owner of state shares the thread that accepts
//! connections, so a large KV write or ACL reload never delays an accept.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_actors::access::accounts::Accounts;
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::guard::{AccessGuard, GuardSubscribers};
use rmq_actors::access::{AccessClass, AccessControl};
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::{KvSource, KvStore};
use rmq_actors::limits::Limits;
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::messages::InvalidateRoutes;
use rmq_actors::outbound::Notifier;
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::{CacheId, RouteCacheKeeper};
use rmq_actors::services::{Port, Services};
use rmq_actors::tls_reload::TlsReloader;
use rmq_transport::front_door::FrontDoor;
use rmq_transport::{ProxyProtocolSettings, TlsMode};
use rustls::ClientConfig;
use tracing::{info, warn};

use super::handle::{health_of, Contained, NameServerHandle};
use super::preflight::Ready;
use crate::config::Config;
use crate::controller_port::{ControllerPort, Shared};
use crate::fleet::FleetWatch;
use crate::http::addresses::AddressBook;
use crate::http::{HttpPort, Observed};
use crate::product_env::ProductEnv;
use crate::runtime_config::RuntimeConfig;

/// How long a cluster-test lookup waits for each product-environment NameServer.
const PRODUCT_ENV_TIMEOUT: Duration = Duration::from_secs(3);

/// Starts every actor of a checked start and answers the running server's handle.
pub(super) fn launch(ready: Ready) -> NameServerHandle {
    let Ready {
        config,
        kv_source,
        acl_path,
        accounts,
        access,
        audit,
        listener,
        local_addr,
        server_tls,
        client_tls,
        controller,
        http,
    } = ready;
    let owners = start_owners(
        &config,
        (kv_source, audit),
        local_addr,
        &client_tls,
        (&accounts, &access),
    );
    let access_guard = acl_path.map(|path| {
        rmq_actors::access::guard::describe(&accounts, "loaded");
        start_guard(&config, &owners, path, &accounts, &access)
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
    let services = owners.services(&access, access_guard.as_ref());
    let (listener, services) = start_listener(&config, listener, &front_door, &owners, services);
    let controller = controller.map(|prepared| {
        prepared.start(Shared {
            front_door: front_door.clone(),
            workers: &owners.workers,
            services,
            notifier: owners.notifier.clone().recipient(),
        })
    });
    log_policies(&config);
    info!(
        addr = %local_addr,
        workers = owners.workers.len(),
        tls = ?config.tls.mode,
        certificate = server_tls.as_ref().map_or("none", |t| t.source.as_str()),
        proxy_protocol = ?config.proxy_protocol.mode,
        "name server started"
    );
    let (accepting, accepting_rx) = tokio::sync::watch::channel(true);
    let http = http.map(|(bound, addr)| {
        let observed = Observed {
            routes: owners.contained.routes.clone(),
            kv: owners.contained.kv.clone(),
            housekeeping: owners.contained.housekeeping.clone(),
            limits: owners.limits.clone(),
            keepers: owners.contained.keepers.clone(),
            health: health_probe(&owners.contained, &listener),
            accepting: accepting_rx,
            remoting: local_addr,
            started: Instant::now(),
            http: config.http.clone(),
            access: Arc::clone(&access),
            access_guard: access_guard.clone(),
            addresses: AddressBook::of(&config.http).map(Actor::start),
            fleet: FleetWatch::of(&config, local_addr, client_tls.clone()).map(Actor::start),
        };
        // The HTTP port admits as the remoting port does (TLS mode, certificate), without
        // PROXY. HTTP clients speak at once: a silent one gets the handshake timeout.
        let http_door = FrontDoor {
            proxy: Arc::new(ProxyProtocolSettings::default()),
            first_byte_timeout: Some(config.tls.handshake_timeout),
            ..front_door
        };
        crate::http::start(bound, addr, http_door, observed)
    });
    let tls_reloader = start_tls_reloader(&config, &listener, http.as_ref(), controller.as_ref());
    let ports = Ports {
        local_addr,
        listener,
        http,
        accepting,
        tls_reloader,
        access_guard,
        controller,
    };
    owners.into_handle(&config, ports)
}

/// The owners of the server's state, with the threads they run on.
struct Owners {
    workers: Vec<Arbiter>,
    route_cache: CacheId,
    registry_arbiter: Arbiter,
    /// Runs the KV store, the runtime configuration, the access guard and the audit log.
    state: Arbiter,
    contained: Contained,
    limits: Addr<Limits>,
    audit: Addr<AuditLog>,
    /// Sends the registry's and the controller's notifications to brokers.
    notifier: Addr<Notifier>,
}

/// What serves the outside: the listeners, the HTTP port, the reloader of their certificate.
struct Ports {
    local_addr: std::net::SocketAddr,
    listener: Addr<Listener>,
    http: Option<HttpPort>,
    accepting: tokio::sync::watch::Sender<bool>,
    tls_reloader: Option<Addr<TlsReloader>>,
    access_guard: Option<Addr<AccessGuard>>,
    controller: Option<ControllerPort>,
}

/// Starts the connection threads (with their keepers), the registry, housekeeping, the limits
/// and the `state` arbiter's actors.
fn start_owners(
    config: &Config,
    (kv_source, audit): (KvSource, AuditLog),
    local_addr: std::net::SocketAddr,
    client_tls: &Option<Arc<ClientConfig>>,
    access: (&Arc<Accounts>, &Arc<AccessControl>),
) -> Owners {
    let workers: Vec<Arbiter> = (0..config.server.worker_count())
        .map(|_| Arbiter::new())
        .collect();
    let route_cache = CacheId::next();
    let keepers = start_keepers(config, &workers, route_cache, access);
    let registry_arbiter = Arbiter::new();
    let notifier = Notifier::new(client_tls.clone()).start();
    let routes = start_registry(config, &registry_arbiter, &keepers, &notifier);
    let housekeeping = start_housekeeping(config, &routes);
    let state = Arbiter::new();
    let kv = start_kv(config, &state, kv_source, &routes);
    let rc_config = config.clone();
    let rc_routes = routes.clone();
    let runtime = Supervisor::start_in_arbiter(&state.handle(), move |_| {
        RuntimeConfig::new(rc_config.clone(), local_addr, rc_routes.clone().recipient())
    });
    Owners {
        route_cache,
        registry_arbiter,
        limits: Limits::new(config.server.max_decoding_bytes).start(),
        audit: AuditLog::start_in_arbiter(&state.handle(), move |_| audit),
        contained: Contained {
            routes,
            kv,
            housekeeping,
            runtime,
            product_env: start_product_env(config, client_tls),
            keepers,
        },
        state,
        workers,
        notifier,
    }
}

impl Owners {
    /// What the connections of the remoting port use.
    fn services(&self, access: &Arc<AccessControl>, guard: Option<&Addr<AccessGuard>>) -> Services {
        let contained = &self.contained;
        Services {
            routes: contained.routes.clone(),
            kv: contained.kv.clone(),
            config_reader: contained.runtime.clone().recipient(),
            config_writer: contained.runtime.clone().recipient(),
            product_env: contained.product_env.clone().map(Addr::recipient),
            opened: contained.housekeeping.clone().recipient(),
            closed: contained.housekeeping.clone().recipient(),
            went_away: contained.housekeeping.clone().recipient(),
            limits: self.limits.clone(),
            route_cache: self.route_cache,
            access: Arc::clone(access),
            failed_attempts: guard.cloned().map(Addr::recipient),
            audit: self.audit.clone().recipient(),
            port: Port::NameServer,
            controller: None,
            #[cfg(debug_assertions)]
            faults: Vec::new(),
        }
    }

    /// The running server's handle.
    fn into_handle(self, config: &Config, ports: Ports) -> NameServerHandle {
        let mut arbiters = self.workers;
        arbiters.push(self.registry_arbiter);
        arbiters.push(self.state);
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
            limits: self.limits,
            contained: self.contained,
            listener: ports.listener,
            tls_reloader: ports.tls_reloader,
            access_guard: ports.access_guard,
            audit: self.audit,
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

/// One route cache keeper per connection thread, each installing this server's accounts and
/// failed-attempt ledger on its thread before any connection there.
fn start_keepers(
    config: &Config,
    workers: &[Arbiter],
    route_cache: CacheId,
    (accounts, access): (&Arc<Accounts>, &Arc<AccessControl>),
) -> Vec<Addr<RouteCacheKeeper>> {
    let cache_limit = config.registry.route_cache_bytes;
    workers
        .iter()
        .map(|worker| {
            let accounts = Arc::clone(accounts);
            let access = Arc::clone(access);
            RouteCacheKeeper::start_in_arbiter(&worker.handle(), move |_| {
                rmq_actors::access::install_on_this_thread(route_cache, accounts, &access);
                RouteCacheKeeper::new(route_cache, cache_limit)
            })
        })
        .collect()
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

/// The ACL file's guard, on the state arbiter: it tells every connection thread's keeper the
/// new accounts and blocks.
fn start_guard(
    config: &Config,
    owners: &Owners,
    path: std::path::PathBuf,
    accounts: &Arc<Accounts>,
    access: &Arc<AccessControl>,
) -> Addr<AccessGuard> {
    let keepers = owners.contained.keepers.clone();
    let every = config.access.reload_check_interval;
    let accounts = Arc::clone(accounts);
    let control = Arc::clone(access);
    Supervisor::start_in_arbiter(&owners.state.handle(), move |_| {
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
}

/// The remoting port's listener, on the current arbiter; answers it and the services its
/// connections use (with, in debug builds, the actors a fault can be injected into).
fn start_listener(
    config: &Config,
    listener: tokio::net::TcpListener,
    front_door: &FrontDoor,
    owners: &Owners,
    services: Services,
) -> (Addr<Listener>, Services) {
    let ctx = Context::new();
    #[cfg(debug_assertions)]
    let services = {
        let mut faults = owners.contained.fault_targets();
        faults.push(("listener", ctx.address().recipient()));
        Services { faults, ..services }
    };
    let listener = ctx.run(Listener::new(ListenerSetup {
        listener,
        front_door: front_door.clone(),
        workers: owners.workers.iter().map(Arbiter::handle).collect(),
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

/// The certificate reloader, telling every port that serves TLS.
fn start_tls_reloader(
    config: &Config,
    listener: &Addr<Listener>,
    http: Option<&HttpPort>,
    controller: Option<&ControllerPort>,
) -> Option<Addr<TlsReloader>> {
    (config.tls.mode != TlsMode::Disabled).then(|| {
        let base = config.tls.clone();
        let settings = config.tls.clone();
        let mut listeners = vec![listener.clone().recipient()];
        listeners.extend(http.map(HttpPort::tls_listener));
        // The controller's port serves the same, reloaded certificate.
        listeners.extend(controller.map(|port| port.listener.clone().recipient()));
        Supervisor::start(move |_| {
            let base = base.clone();
            TlsReloader::new(
                Arc::new(move || crate::java_keys::tls_with_config_file(&base)),
                settings.clone(),
                listeners.clone(),
            )
        })
    })
}

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
