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
use rmq_actors::dispatch::Services;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::{KvSource, KvStore};
use rmq_actors::limits::Limits;
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::messages::InvalidateRoutes;
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::{CacheId, RouteCacheKeeper};
use rmq_actors::tls_reload::TlsReloader;
use rmq_transport::front_door::FrontDoor;
use rmq_transport::{ProxyProtocolSettings, TlsMode};
use rustls::ClientConfig;
use tracing::info;

use super::handle::{health_of, Contained, NameServerHandle};
use super::preflight::Ready;
use crate::config::Config;
use crate::controller_port::{ControllerPort, Shared};
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
    let workers: Vec<Arbiter> = (0..config.server.worker_count())
        .map(|_| Arbiter::new())
        .collect();
    let route_cache = CacheId::next();
    let keepers = start_keepers(&config, &workers, route_cache, &accounts, &access);
    let registry_arbiter = Arbiter::new();
    let routes = start_registry(&config, &registry_arbiter, &keepers, client_tls.clone());
    let housekeeping = start_housekeeping(&config, &routes);
    let limits = Limits::new(config.server.max_decoding_bytes).start();
    let state = Arbiter::new();
    let kv = start_kv(&config, &state, kv_source, &routes);
    let rc_config = config.clone();
    let rc_routes = routes.clone();
    let runtime = Supervisor::start_in_arbiter(&state.handle(), move |_| {
        RuntimeConfig::new(rc_config.clone(), local_addr, rc_routes.clone().recipient())
    });
    let product_env = start_product_env(&config, &client_tls);
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
        start_guard(&config, &state, path, &accounts, &access, &contained.keepers)
    });
    let audit = AuditLog::start_in_arbiter(&state.handle(), move |_| audit);

    let front_door = FrontDoor {
        mode: config.tls.mode,
        tls: server_tls.as_ref().map(|t| Arc::clone(&t.config)),
        proxy: Arc::new(config.proxy_protocol.clone()),
        handshake_timeout: config.tls.handshake_timeout,
        // A broker connects about 10 s before its first registration: silence until the
        // idle timeout is normal, as on Java's port.
        first_byte_timeout: config.server.idle_timeout(),
    };
    let services = Services {
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
        faults: Vec::new(),
    };
    let (listener, services) = start_listener(
        &config,
        listener,
        front_door.clone(),
        &workers,
        &contained,
        services,
    );
    let controller = controller.map(|prepared| {
        prepared.start(Shared {
            front_door: front_door.clone(),
            workers: &workers,
            services,
            client_tls,
        })
    });
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
    let http = http.map(|(bound, addr)| {
        // The HTTP port admits as the remoting port does (TLS mode, certificate), without
        // PROXY. HTTP clients speak at once: a silent one gets the handshake timeout.
        let http_door = FrontDoor {
            proxy: Arc::new(ProxyProtocolSettings::default()),
            first_byte_timeout: Some(config.tls.handshake_timeout),
            ..front_door.clone()
        };
        let observed = Observed {
            routes: routes.clone(),
            kv: kv.clone(),
            housekeeping: housekeeping.clone(),
            limits: limits.clone(),
            keepers: contained.keepers.clone(),
            health: health_probe(&contained, &listener),
            accepting: accepting_rx,
            remoting: local_addr,
            started: Instant::now(),
            http: config.http.clone(),
            access: Arc::clone(&access),
            access_guard: access_guard.clone(),
        };
        crate::http::start(bound, addr, http_door, observed)
    });
    let tls_reloader = start_tls_reloader(&config, &listener, http.as_ref(), controller.as_ref());

    let mut arbiters = workers;
    arbiters.push(registry_arbiter);
    arbiters.push(state);
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
    NameServerHandle {
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
    }
}

/// One route cache keeper per connection thread, each installing this server's accounts and
/// failed-attempt ledger on its thread before any connection there.
fn start_keepers(
    config: &Config,
    workers: &[Arbiter],
    route_cache: CacheId,
    accounts: &Arc<Accounts>,
    access: &Arc<AccessControl>,
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
    client_tls: Option<Arc<ClientConfig>>,
) -> Addr<RouteRegistry> {
    let route_caches: Vec<Recipient<InvalidateRoutes>> =
        keepers.iter().map(|k| k.clone().recipient()).collect();
    let settings = config.registry.clone();
    let cluster_test = config.cluster_test.enabled;
    Supervisor::start_in_arbiter(&arbiter.handle(), move |_| {
        RouteRegistry::new(settings.clone(), cluster_test, route_caches.clone())
            .with_outbound_tls(client_tls.clone())
    })
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
            ProductEnv::new(name.clone(), addrs.clone(), PRODUCT_ENV_TIMEOUT, tls.clone())
        })
    })
}

/// The ACL file's guard, on the state arbiter: it tells every connection thread's keeper the
/// new accounts and blocks.
fn start_guard(
    config: &Config,
    state: &Arbiter,
    path: std::path::PathBuf,
    accounts: &Arc<Accounts>,
    access: &Arc<AccessControl>,
    keepers: &[Addr<RouteCacheKeeper>],
) -> Addr<AccessGuard> {
    let keepers = keepers.to_vec();
    let every = config.access.reload_check_interval;
    let accounts = Arc::clone(accounts);
    let control = Arc::clone(access);
    Supervisor::start_in_arbiter(&state.handle(), move |_| {
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
    front_door: FrontDoor,
    workers: &[Arbiter],
    contained: &Contained,
    services: Services,
) -> (Addr<Listener>, Services) {
    let ctx = Context::new();
    #[cfg(debug_assertions)]
    let services = {
        let mut faults = contained.fault_targets();
        faults.push(("listener", ctx.address().recipient()));
        Services { faults, ..services }
    };
    #[cfg(not(debug_assertions))]
    let _ = contained;
    let listener = ctx.run(Listener::new(ListenerSetup {
        listener,
        front_door,
        workers: workers.iter().map(Arbiter::handle).collect(),
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
