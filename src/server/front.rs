//! The front door every port of this process shares, started for a NameServer and for a
//! standalone controller alike: the connection threads (each with its keeper of the thread's
//! accounts, blocks and metrics), the limits, the audit log, the access guard of the ACL file,
//! the notifier of brokers, the TLS/PROXY admission of connections, the certificate reloader.

use std::path::PathBuf;
use std::sync::Arc;

use actix::prelude::*;
use rmq_actors::access::accounts::Accounts;
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::guard::{AccessGuard, GuardSubscribers};
use rmq_actors::access::{AccessClass, AccessControl};
use rmq_actors::limits::Limits;
use rmq_actors::messages::TlsConfigChanged;
use rmq_actors::outbound::Notifier;
use rmq_actors::route_cache::{CacheId, RouteCacheKeeper};
use rmq_actors::services::{NamesrvServices, Port, Services};
use rmq_actors::tls_reload::TlsReloader;
use rmq_transport::front_door::FrontDoor;
use rmq_transport::server::ServerTls;
use rmq_transport::{ProxyProtocolSettings, TlsMode};
use rustls::ClientConfig;
use tracing::info;

use super::preflight::Admitted;
use crate::config::Config;

/// The running front door: the threads and owners every port's connections use.
pub(super) struct Front {
    pub workers: Vec<Arbiter>,
    /// This server's id for its per-thread state (route cache, accounts, metrics).
    pub route_cache: CacheId,
    /// One per connection thread.
    pub keepers: Vec<Addr<RouteCacheKeeper>>,
    /// Runs the audit log, the access guard and the NameServer's other owners of state.
    pub state: Arbiter,
    pub limits: Addr<Limits>,
    pub audit: Addr<AuditLog>,
    pub access: Arc<AccessControl>,
    /// Reloads the ACL file (when there is one).
    pub access_guard: Option<Addr<AccessGuard>>,
    /// Sends the registry's and the controller's notifications to brokers.
    pub notifier: Addr<Notifier>,
    /// TLS of the server's outbound calls.
    pub client_tls: Option<Arc<ClientConfig>>,
    pub server_tls: Option<ServerTls>,
    pub front_door: FrontDoor,
}

/// Starts the front door of a checked start (the HTTP socket stays with the caller).
pub(super) fn start(config: &Config, admitted: Admitted) -> Front {
    let Admitted {
        acl_path,
        accounts,
        access,
        audit,
        server_tls,
        client_tls,
        http: _,
    } = admitted;
    let workers: Vec<Arbiter> = (0..config.server.worker_count())
        .map(|_| Arbiter::new())
        .collect();
    let route_cache = CacheId::next();
    let keepers = start_keepers(config, &workers, route_cache, (&accounts, &access));
    let state = Arbiter::new();
    let access_guard = acl_path.map(|path| {
        rmq_actors::access::guard::describe(&accounts, "loaded");
        start_guard(config, (&state, &keepers), path, &accounts, &access)
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
    Front {
        workers,
        route_cache,
        keepers,
        limits: Limits::new(config.server.max_decoding_bytes).start(),
        audit: AuditLog::start_in_arbiter(&state.handle(), move |_| audit),
        state,
        access,
        access_guard,
        notifier: Notifier::new(client_tls.clone()).start(),
        client_tls,
        server_tls,
        front_door,
    }
}

/// What a connection's handling does beyond answering it: the connection lifecycle's
/// listeners, and which rows it answers.
pub(super) struct PortRole {
    pub namesrv: Option<NamesrvServices>,
    pub opened: Recipient<rmq_actors::messages::ConnectionOpened>,
    pub closed: Recipient<rmq_actors::messages::ConnectionClosed>,
    pub went_away: Option<Recipient<rmq_actors::messages::WentAway>>,
    pub port: Port,
    pub controller: Option<Addr<rmq_actors::controller::Controller>>,
}

impl Front {
    /// The services of a port whose connections come through this front door.
    pub fn services(&self, role: PortRole) -> Services {
        Services {
            namesrv: role.namesrv,
            opened: role.opened,
            closed: role.closed,
            went_away: role.went_away,
            limits: self.limits.clone(),
            route_cache: self.route_cache,
            access: Arc::clone(&self.access),
            failed_attempts: self.access_guard.clone().map(Addr::recipient),
            audit: self.audit.clone().recipient(),
            port: role.port,
            controller: role.controller,
            #[cfg(debug_assertions)]
            faults: Vec::new(),
        }
    }

    /// The controller port's services: the controller answers every request and is told of
    /// every connection; no NameServer row is served there.
    pub fn controller_services(
        &self,
        controller: &Addr<rmq_actors::controller::Controller>,
        went_away: Option<Recipient<rmq_actors::messages::WentAway>>,
    ) -> Services {
        self.services(PortRole {
            namesrv: None,
            opened: controller.clone().recipient(),
            closed: controller.clone().recipient(),
            went_away,
            port: Port::Controller,
            controller: Some(controller.clone()),
        })
    }

    /// The HTTP port's door: it admits as the remoting port does (TLS mode, certificate),
    /// without PROXY. HTTP clients speak at once: a silent one gets the handshake timeout.
    pub fn http_door(&self, config: &Config) -> FrontDoor {
        FrontDoor {
            proxy: Arc::new(ProxyProtocolSettings::default()),
            first_byte_timeout: Some(config.tls.handshake_timeout),
            ..self.front_door.clone()
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

/// The ACL file's guard, on the state arbiter: it tells every connection thread's keeper the
/// new accounts and blocks.
fn start_guard(
    config: &Config,
    (state, keepers): (&Arbiter, &[Addr<RouteCacheKeeper>]),
    path: PathBuf,
    accounts: &Arc<Accounts>,
    access: &Arc<AccessControl>,
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

/// The certificate reloader, telling every port that serves TLS (`listeners`).
pub(super) fn start_tls_reloader(
    config: &Config,
    listeners: Vec<Recipient<TlsConfigChanged>>,
) -> Option<Addr<TlsReloader>> {
    (config.tls.mode != TlsMode::Disabled).then(|| {
        let base = config.tls.clone();
        let settings = config.tls.clone();
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
pub(super) fn log_policies(config: &Config) {
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
