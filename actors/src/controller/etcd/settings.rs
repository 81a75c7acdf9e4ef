//! The `[controller.etcd]` settings ([`EtcdSettings`]) and their limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::etcd_api::Security;

/// The default key prefix: one etcd cluster may serve several NameServer clusters, each under a
/// prefix of its own.
pub const DEFAULT_PREFIX: &str = "/rmq-namesrv/controller";

/// The shortest lease accepted. etcd refuses leases below about 1.5 s with its default election
/// timeout, and a lease renewed every third of its life needs some room for one slow round trip.
pub const MIN_LEASE_TTL: Duration = Duration::from_secs(2);

/// The `[controller.etcd]` settings. No endpoints means etcd is not used (a single controller
/// keeps its state in a local file instead).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct EtcdSettings {
    /// etcd client addresses, `host:port`, `http://host:port` or `https://host:port` (TLS as
    /// `security` says).
    pub endpoints: Vec<String>,
    /// Every key of this controller cluster lives under it.
    pub prefix: String,
    /// The life of this node's lease, which the leader key is attached to: a leader that stops
    /// renewing it (crash, partition) is replaced this long after its last renewal. etcd counts
    /// whole seconds: a fraction is rounded up.
    #[serde(with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// The limit of each request to etcd (connect, read, transaction, lease grant).
    #[serde(with = "humantime_serde")]
    pub timeout: Duration,
    /// TLS and user (the `[etcd]` section, files read at start); never serialized.
    #[serde(skip)]
    pub security: Security,
}

impl Default for EtcdSettings {
    fn default() -> Self {
        EtcdSettings {
            endpoints: Vec::new(),
            prefix: DEFAULT_PREFIX.to_owned(),
            lease_ttl: Duration::from_secs(5),
            timeout: Duration::from_secs(3),
            security: Security::default(),
        }
    }
}

impl EtcdSettings {
    /// Whether etcd is configured at all.
    pub fn enabled(&self) -> bool {
        !self.endpoints.is_empty()
    }

    /// Checks the settings; the error names the bad key.
    pub fn validate(&self) -> Result<(), String> {
        for endpoint in &self.endpoints {
            if endpoint.is_empty() || endpoint.chars().any(char::is_whitespace) {
                return Err(format!(
                    "controller.etcd.endpoints: {endpoint:?} is not an etcd address \
                     (host:port, http://host:port or https://host:port)"
                ));
            }
            if endpoint.starts_with("https://") && !self.security.tls() {
                return Err(format!(
                    "controller.etcd.endpoints: {endpoint}: https:// needs the CA that signed \
                     etcd's certificate (etcd.ca_file)"
                ));
            }
        }
        if self.prefix.trim_end_matches('/').is_empty() {
            return Err(format!(
                "controller.etcd.prefix: must not be empty (e.g. {DEFAULT_PREFIX})"
            ));
        }
        if self.lease_ttl < MIN_LEASE_TTL {
            return Err(format!(
                "controller.etcd.lease_ttl: {} is below the minimum of {}",
                humantime::format_duration(self.lease_ttl),
                humantime::format_duration(MIN_LEASE_TTL)
            ));
        }
        if self.timeout.is_zero() {
            return Err("controller.etcd.timeout: must be above 0".to_owned());
        }
        Ok(())
    }

    /// The lease TTL as etcd takes it: whole seconds, rounded up.
    pub(super) fn ttl_seconds(&self) -> i64 {
        let whole = self.lease_ttl.as_secs() + u64::from(self.lease_ttl.subsec_nanos() > 0);
        i64::try_from(whole).unwrap_or(i64::MAX)
    }
}
