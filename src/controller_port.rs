//! The embedded controller's port (docs/controller.md): when `controller.enabled`, a
//! [`Controller`] actor with its store (a local file, or etcd) on an arbiter of their own, and a
//! second listener on this node's address in `controller.peers`, with the NameServer port's
//! front door (TLS, PROXY, access classes, limits) and connection threads.

use std::net::SocketAddr;

use actix::prelude::*;
use rmq_actors::controller::config_update::restore;
use rmq_actors::controller::etcd::{EtcdSettings, EtcdStore};
use rmq_actors::controller::file_store::{FileStore, FileStoreError};
use rmq_actors::controller::Controller;
use rmq_actors::listener::{Listener, ListenerSetup};
use rmq_actors::outbound::Notify;
use rmq_actors::services::Services;
use rmq_transport::front_door::FrontDoor;
use tracing::{info, warn};

use crate::config::{expand_home, Config};
use crate::java_props::config_to_properties;

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum ControllerStartError {
    #[error(
        "cannot listen on {addr} (controller.peers, this node's controller address): {source}"
    )]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] FileStoreError),
    #[error("controller: {0}")]
    Config(String),
}

/// A running controller and its port.
pub struct ControllerPort {
    pub addr: SocketAddr,
    pub controller: Addr<Controller>,
    pub listener: Addr<Listener>,
    /// Runs the controller and its store.
    pub arbiter: Arbiter,
}

/// A controller ready to start: everything that can fail is done (its address bound, its state
/// file read, its settings checked), no actor runs yet.
pub struct Prepared {
    addr: SocketAddr,
    incoming: tokio::net::TcpListener,
    settings: rmq_actors::controller::ControllerSettings,
    etcd: EtcdSettings,
    file: Option<FileStore>,
    store_name: String,
    server: rmq_actors::settings::ServerSettings,
}

/// Prepares the controller when `config.controller.enabled` (inside a running System): binds
/// its address and reads its state, so that a bad file or a taken port stops the start before
/// any actor runs.
pub fn prepare(config: &Config) -> Result<Option<Prepared>, ControllerStartError> {
    let section = &config.controller;
    let Some(addr) = section
        .listen()
        .map_err(|e| ControllerStartError::Config(e.to_string()))?
    else {
        return Ok(None);
    };
    let mut settings = section.settings(config.registry.scan_interval);
    // UPDATE_CONTROLLER_CONFIG's file holds the NameServer's properties too, as Java's holds its
    // whole `-c` file: starting with `--config` of it keeps the updates.
    settings.config_store.with = config_to_properties(config, config.server.listen);
    // ... and where it is itself: a start from it persists to the same file.
    settings.config_store.with.insert(
        "controllerConfigStorePath".to_owned(),
        expand_home(&section.config_store_path)
            .display()
            .to_string(),
    );
    match restore(&mut settings) {
        Ok(taken) => {
            for (key, value) in taken {
                info!(%key, %value, file = %section.config_store_path.display(),
                    "controller setting kept from an UPDATE_CONTROLLER_CONFIG of an earlier run");
            }
        }
        Err(why) => warn!(error = %why,
            "controller config store not read: starting with the configured settings"),
    }
    let mut etcd = EtcdSettings {
        endpoints: section.etcd_list(),
        prefix: section.etcd_prefix.clone(),
        lease_ttl: section.etcd_lease_ttl,
        ..EtcdSettings::default()
    };
    if etcd.enabled() {
        // The [etcd] section's files read, and TLS and user checked with etcd now: a wrong CA
        // or password stops the start, naming its key.
        etcd.security = config
            .etcd
            .load_checked("controller.etcd_endpoints", &etcd.endpoints, &etcd.prefix)
            .map_err(|e| ControllerStartError::Config(e.to_string()))?;
    }
    etcd.validate().map_err(ControllerStartError::Config)?;
    // Without etcd, one controller and its local file, read before the port is bound: a bad
    // file stops start-up, and says so whether or not the port is free.
    let (file, store_name) = if etcd.enabled() {
        let name = format!("etcd {} under {}", etcd.endpoints.join(","), etcd.prefix);
        (None, name)
    } else {
        let dir = expand_home(&section.store_path);
        let file = FileStore::open(&dir, settings.me())?;
        (Some(file), dir.display().to_string())
    };
    let bound = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .map_err(|source| ControllerStartError::Bind { addr, source })?;
    let incoming = tokio::net::TcpListener::from_std(bound)
        .map_err(|source| ControllerStartError::Bind { addr, source })?;
    Ok(Some(Prepared {
        addr,
        incoming,
        settings,
        etcd,
        file,
        store_name,
        server: config.server.clone(),
    }))
}

impl Prepared {
    /// Starts the controller and its store on an arbiter of their own (cannot fail: [`prepare`]
    /// did what can); its port listens once [`Started::listen`] is given the port's services.
    pub fn start(self, notifier: Recipient<Notify>) -> Started {
        let Prepared {
            addr,
            incoming,
            settings,
            etcd,
            file,
            store_name,
            server,
        } = self;
        let me = settings.me();
        let initial = file
            .as_ref()
            .map(FileStore::initial_events)
            .unwrap_or_default();
        let arbiter = Arbiter::new();
        let me_store = me.clone();
        let controller = Controller::start_in_arbiter(&arbiter.handle(), move |ctx| {
            let events = ctx.address().recipient();
            let store = match file {
                Some(file) => file.reporting_to(events).start().recipient(),
                None => EtcdStore::new(etcd, me_store, events).start().recipient(),
            };
            Controller::new(settings, store, notifier)
        });
        for event in initial {
            controller.do_send(event);
        }
        Started {
            addr,
            incoming,
            controller,
            arbiter,
            server,
            id: me.id,
            store_name,
        }
    }
}

/// A controller running, its port not yet listening.
pub struct Started {
    addr: SocketAddr,
    incoming: tokio::net::TcpListener,
    controller: Addr<Controller>,
    arbiter: Arbiter,
    server: rmq_actors::settings::ServerSettings,
    id: String,
    store_name: String,
}

impl Started {
    /// The controller actor.
    pub fn controller(&self) -> &Addr<Controller> {
        &self.controller
    }

    /// Listens with `front_door` on the connection threads `workers`; `services` are the
    /// controller port's (`Port::Controller`, the controller told of every connection).
    pub fn listen(
        self,
        front_door: FrontDoor,
        workers: &[Arbiter],
        services: Services,
    ) -> ControllerPort {
        let listener = Listener::new(ListenerSetup {
            listener: self.incoming,
            front_door,
            workers: workers.iter().map(Arbiter::handle).collect(),
            settings: self.server,
            services,
        })
        .start();
        info!(addr = %self.addr, id = %self.id, store = %self.store_name, "controller listening");
        ControllerPort {
            addr: self.addr,
            controller: self.controller,
            listener,
            arbiter: self.arbiter,
        }
    }
}
