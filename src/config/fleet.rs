//! The fleet check's settings (`[fleet]`): which NameServers this server compares itself with,
//! and how often (crate::fleet).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{check_host_port, invalid, ConfigError, HttpConfig};

/// The periodic fleet check (off by default).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct FleetConfig {
    /// The other NameServers of the fleet, `HOST:PORT` each; empty: `http.nsaddr` minus this
    /// server.
    pub peers: Vec<String>,
    /// How often this server compares itself with its peers; 0s (the default): never.
    #[serde(with = "humantime_serde")]
    pub check_interval: Duration,
    /// Bound on connecting to each peer and on each response.
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// KV namespaces compared (the protocol cannot list them).
    pub namespaces: Vec<String>,
    /// Configuration keys not compared, beyond those that differ per server by nature.
    pub ignore_keys: Vec<String>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            peers: Vec::new(),
            check_interval: Duration::ZERO,
            timeout: Duration::from_secs(5),
            namespaces: vec!["ORDER_TOPIC_CONFIG".to_owned()],
            ignore_keys: Vec::new(),
        }
    }
}

impl FleetConfig {
    /// True when the periodic check runs.
    pub fn enabled(&self) -> bool {
        !self.check_interval.is_zero()
    }

    pub(super) fn validate(&self, http: &HttpConfig) -> Result<(), ConfigError> {
        for peer in &self.peers {
            check_host_port(peer).map_err(|reason| invalid("fleet.peers", reason))?;
        }
        if self.timeout.is_zero() {
            return Err(invalid("fleet.timeout", "must be positive"));
        }
        if let Some(ns) = self.namespaces.iter().find(|ns| ns.trim().is_empty()) {
            return Err(invalid(
                "fleet.namespaces",
                format!("{ns:?} is not a namespace name"),
            ));
        }
        if !self.enabled() {
            return Ok(());
        }
        if self.check_interval < Duration::from_secs(1) {
            return Err(invalid(
                "fleet.check_interval",
                "must be at least 1s (or 0s: off)",
            ));
        }
        if http.listen.is_none() {
            return Err(invalid(
                "fleet.check_interval",
                "the fleet check is shown on the HTTP port: set http.listen",
            ));
        }
        if self.peers.is_empty() && http.nsaddr_list().is_empty() {
            return Err(invalid(
                "fleet.check_interval",
                "needs fleet.peers, or http.nsaddr listing the fleet",
            ));
        }
        Ok(())
    }
}
