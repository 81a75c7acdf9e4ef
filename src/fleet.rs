//! The periodic fleet check (`[fleet]`): `FleetWatch` compares this server with its peers every
//! `fleet.check_interval`, with the comparison of `rmq-namesrv admin fleetCheck`
//! (rmq_tools::fleet), and owns the latest findings, which the HTTP port asks it for (the
//! `rmq_namesrv_fleet_drift` gauges, the status page's "fleet" section). It only reads: plain
//! protocol requests, QUERY_DATA_VERSION never (it refreshes a broker's liveness), so
//! NameServers still never change each other's state. This server is asked over its own remoting
//! port like its peers, so that all are compared alike.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use actix::prelude::*;
use rmq_tools::fleet::{check, FleetOptions, FleetView, Reach};
use rustls::ClientConfig;
use tracing::{info, warn};

use crate::config::Config;

/// One finished check.
#[derive(Debug, Clone)]
pub(crate) struct FleetReport {
    pub view: FleetView,
    /// When it finished.
    pub at: SystemTime,
}

/// Owns the fleet list and the latest check's findings.
pub(crate) struct FleetWatch {
    /// This server first, then its peers.
    addrs: Vec<String>,
    interval: Duration,
    reach: Reach,
    options: FleetOptions,
    latest: Option<Arc<FleetReport>>,
    checking: bool,
}

/// The latest check's findings (`None` before the first check ends).
#[derive(Message)]
#[rtype(result = "Option<Arc<FleetReport>>")]
pub(crate) struct LatestFindings;

/// Ends the periodic check (the server stops).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopChecking;

impl FleetWatch {
    /// The check of `config` for the server listening on `remoting` (its TLS client settings,
    /// `[tls.client]`, are those of its peers' connections); `None` when it is off.
    pub(crate) fn of(
        config: &Config,
        remoting: SocketAddr,
        tls: Option<Arc<ClientConfig>>,
    ) -> Option<Self> {
        let fleet = &config.fleet;
        if !fleet.enabled() {
            return None;
        }
        let own = own_addr(remoting);
        let mut addrs = vec![own.clone()];
        let peers = if fleet.peers.is_empty() {
            let me = [
                own,
                remoting.to_string(),
                config.http.advertised_address.clone(),
            ];
            let others = config.http.nsaddr_list().into_iter();
            others
                .filter(|a| !me.contains(a) && !is_loopback_self(a, remoting))
                .collect()
        } else {
            fleet.peers.clone()
        };
        addrs.extend(peers);
        Some(Self {
            addrs,
            interval: fleet.check_interval,
            reach: Reach {
                timeout: fleet.timeout,
                tls,
                credentials: None,
            },
            options: FleetOptions {
                namespaces: fleet.namespaces.clone(),
                ignored_keys: fleet.ignore_keys.clone(),
                ..FleetOptions::default()
            },
            latest: None,
            checking: false,
        })
    }

    fn check(&mut self, ctx: &mut Context<Self>) {
        if self.checking {
            return;
        }
        self.checking = true;
        let (addrs, reach, options) =
            (self.addrs.clone(), self.reach.clone(), self.options.clone());
        let run = async move { check(&addrs, &reach, &options).await };
        ctx.spawn(run.into_actor(self).map(|view, watch, _| {
            watch.checking = false;
            watch.checked(view);
        }));
    }

    fn checked(&mut self, view: FleetView) {
        let before = self
            .latest
            .as_ref()
            .map(|r| (r.view.drift(), r.view.failures.len()));
        let now = (view.drift(), view.failures.len());
        if before != Some(now) {
            let counts: Vec<String> = view
                .counts
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(kind, n)| format!("{}={n}", kind.label()))
                .collect();
            let unreachable: Vec<String> = view.failures.iter().map(|f| f.to_string()).collect();
            if view.agrees() {
                info!(servers = ?view.servers, "fleet check: the name servers agree");
            } else {
                warn!(drift = %counts.join(","), ?unreachable, "fleet check: the name servers differ");
            }
        }
        self.latest = Some(Arc::new(FleetReport {
            view,
            at: SystemTime::now(),
        }));
    }
}

/// The address this server is asked at: its own, 127.0.0.1 when it listens on all interfaces.
fn own_addr(remoting: SocketAddr) -> String {
    if remoting.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), remoting.port()).to_string()
    } else {
        remoting.to_string()
    }
}

/// `localhost:PORT` and loopback addresses with this server's port, when it listens on every
/// interface or on loopback.
fn is_loopback_self(addr: &str, remoting: SocketAddr) -> bool {
    if !(remoting.ip().is_unspecified() || remoting.ip().is_loopback()) {
        return false;
    }
    let Some((host, port)) = addr.rsplit_once(':') else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    loopback && port.parse::<u16>() == Ok(remoting.port())
}

impl Actor for FleetWatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(
            fleet = ?self.addrs,
            interval = %humantime::format_duration(self.interval),
            "fleet check: comparing this server with its peers"
        );
        self.check(ctx);
        ctx.run_interval(self.interval, Self::check);
    }
}

impl Handler<LatestFindings> for FleetWatch {
    type Result = Option<Arc<FleetReport>>;

    fn handle(&mut self, _: LatestFindings, _: &mut Self::Context) -> Self::Result {
        self.latest.clone()
    }
}

impl Handler<StopChecking> for FleetWatch {
    type Result = ();

    fn handle(&mut self, _: StopChecking, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fleet_list_leaves_this_server_out() {
        let mut config = Config::default();
        config.fleet.check_interval = Duration::from_secs(5);
        config.http.nsaddr = "127.0.0.1:9876;localhost:9876;10.0.0.2:9876;10.0.0.3:9876".into();
        let any: SocketAddr = "0.0.0.0:9876".parse().unwrap();
        let watch = FleetWatch::of(&config, any, None).unwrap();
        assert_eq!(
            watch.addrs,
            ["127.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876"]
        );
        config.http.advertised_address = "10.0.0.2:9876".into();
        let watch = FleetWatch::of(&config, any, None).unwrap();
        assert_eq!(watch.addrs, ["127.0.0.1:9876", "10.0.0.3:9876"]);
        config.fleet.peers = vec!["10.0.0.9:9876".into()];
        let watch = FleetWatch::of(&config, any, None).unwrap();
        assert_eq!(watch.addrs, ["127.0.0.1:9876", "10.0.0.9:9876"]);
        config.fleet.check_interval = Duration::ZERO;
        assert!(FleetWatch::of(&config, any, None).is_none());
    }
}
