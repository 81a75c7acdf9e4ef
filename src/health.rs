//! What `NameServerHandle::health` and the HTTP port's `/health` report.

/// The health of a running server (`NameServerHandle::health`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    /// Every long-lived actor: the route registry, KV store, housekeeping, runtime config, the
    /// product-environment client (cluster-test mode), each connection thread's route cache
    /// keeper, then the listener.
    pub actors: Vec<ActorStatus>,
}

impl Health {
    /// Whether every actor is alive: a server that is not cannot answer some requests and will
    /// not recover by itself (the daemon exits non-zero when it sees this).
    pub fn serving(&self) -> bool {
        self.actors.iter().all(|a| a.alive)
    }

    /// The actors that are gone, by name.
    pub fn lost(&self) -> Vec<&'static str> {
        self.actors
            .iter()
            .filter(|a| !a.alive)
            .map(|a| a.actor)
            .collect()
    }

    /// Handler panics contained so far, all actors together.
    pub fn panics(&self) -> u64 {
        self.actors.iter().map(|a| a.panics).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActorStatus {
    pub actor: &'static str,
    pub alive: bool,
    pub panics: u64,
}
