//! The HTTP port's settings (`[http]`): where it listens and what the address server answers.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{invalid, ConfigError};

/// The HTTP port: metrics, health, the address server, the status page (docs/metrics.md).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpConfig {
    /// Where the HTTP port listens, e.g. "127.0.0.1:8080"; empty (the default): no HTTP port.
    #[serde(with = "optional_addr")]
    pub listen: Option<SocketAddr>,
    /// What `/rocketmq/nsaddr` answers: the fleet's NameServer addresses, `;`-separated
    /// ("10.0.0.1:9876;10.0.0.2:9876"). Empty: this server's remoting address, if it listens on
    /// a specific one, else `advertised_address`.
    pub nsaddr: String,
    /// The remoting address clients should dial, for `/rocketmq/nsaddr` when `nsaddr` is empty
    /// and the server listens on all interfaces.
    pub advertised_address: String,
    /// `HOST:PORT` whose A/AAAA records `/rocketmq/nsaddr` answers instead of `nsaddr`, each
    /// with PORT (e.g. a StatefulSet's headless service,
    /// "rmq-namesrv-headless.rocketmq.svc.cluster.local:9876"); empty (the default): off.
    pub nsaddr_dns: String,
    /// How often `nsaddr_dns` is resolved again; the last answer is kept when resolution fails.
    #[serde(with = "humantime_serde")]
    pub nsaddr_refresh: Duration,
    /// The DNS server asked for `nsaddr_dns` (`IP:PORT`); empty (the default): the system's
    /// (`/etc/resolv.conf`, its search domains included).
    #[serde(with = "optional_addr")]
    pub nsaddr_dns_server: Option<SocketAddr>,
    /// How often the status page reloads itself.
    #[serde(with = "humantime_serde")]
    pub page_refresh: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: None,
            nsaddr: String::new(),
            advertised_address: String::new(),
            nsaddr_dns: String::new(),
            nsaddr_refresh: Duration::from_secs(10),
            nsaddr_dns_server: None,
            page_refresh: Duration::from_secs(5),
        }
    }
}

impl HttpConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        for addr in self.nsaddr_list() {
            check_host_port(&addr).map_err(|reason| invalid("http.nsaddr", reason))?;
        }
        if !self.advertised_address.is_empty() {
            check_host_port(&self.advertised_address)
                .map_err(|reason| invalid("http.advertised_address", reason))?;
        }
        if !self.nsaddr_dns.is_empty() {
            check_host_port(&self.nsaddr_dns)
                .map_err(|reason| invalid("http.nsaddr_dns", reason))?;
            if !self.nsaddr_list().is_empty() {
                return Err(invalid(
                    "http.nsaddr_dns",
                    "set either http.nsaddr (a fixed list) or http.nsaddr_dns, not both",
                ));
            }
        }
        if self.nsaddr_refresh < Duration::from_secs(1) {
            return Err(invalid("http.nsaddr_refresh", "must be at least 1s"));
        }
        if self.page_refresh.is_zero() {
            return Err(invalid("http.page_refresh", "must be positive"));
        }
        Ok(())
    }

    /// The name and port of `nsaddr_dns`, when set.
    pub fn nsaddr_dns_target(&self) -> Option<(&str, u16)> {
        let (host, port) = self.nsaddr_dns.rsplit_once(':')?;
        Some((host, port.parse().ok()?))
    }

    /// The configured fleet addresses, trimmed, empty entries dropped.
    pub fn nsaddr_list(&self) -> Vec<String> {
        self.nsaddr
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// `host:port` with a port number and no spaces (clients split the list on `;` and trim nothing).
pub(super) fn check_host_port(addr: &str) -> Result<(), String> {
    let valid = addr
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        && !addr.contains(char::is_whitespace);
    if valid {
        Ok(())
    } else {
        Err(format!("{addr:?} is not HOST:PORT"))
    }
}

/// An optional socket address where the empty string means none.
mod optional_addr {
    use std::net::SocketAddr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(addr: &Option<SocketAddr>, s: S) -> Result<S::Ok, S::Error> {
        match addr {
            Some(addr) => s.collect_str(addr),
            None => s.serialize_str(""),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
        let text = String::deserialize(d)?;
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        text.parse()
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("{text:?} is not HOST:PORT: {e}")))
    }
}
