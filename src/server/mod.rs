//! `NameServer`: starts the actor system on a listening socket and returns a handle to it. A
//! start is checked whole first ([`preflight`]: files, sockets, certificates, the controller's
//! state), then its actors start ([`launch`]); [`handle`] is what runs. Its front door
//! ([`front`]) is shared with a [`StandaloneController`] (`rmq-namesrv controller`).

mod front;
mod handle;
mod launch;
mod preflight;
mod standalone;

use actix::System;

use crate::config::Config;
pub use crate::health::{ActorStatus, Health};
pub use handle::NameServerHandle;
pub use preflight::{StartError, AUDIT_FILE_NAME};
pub use standalone::{ControllerHandle, StandaloneController};

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
    /// System: the listener, housekeeping and the HTTP port run on the current arbiter, the
    /// route registry on an arbiter of its own, the KV store, runtime configuration and access
    /// guard on a `state` arbiter, connections on `server.workers` worker arbiters. Everything
    /// that can fail is checked before any actor starts.
    pub fn start(self, listener: std::net::TcpListener) -> Result<NameServerHandle, StartError> {
        if System::try_current().is_none() {
            return Err(StartError::NoSystem);
        }
        let ready = preflight::check(self.config, listener)?;
        Ok(launch::launch(ready))
    }
}
