//! The address list that follows DNS (`http.nsaddr_dns`): the A and AAAA records of one name,
//! each with the configured port, resolved at start and every `http.nsaddr_refresh`, for
//! `/rocketmq/nsaddr`. On Kubernetes the name is the StatefulSet's headless service, so clients
//! and brokers polling `rocketmq.namesrv.domain` follow the fleet as it scales. A failed or empty
//! resolution keeps the last list: a DNS outage never empties what clients are told.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfigGroup, ResolverConfig, ResolverOpts,
};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::{Resolver, TokioResolver};
use tracing::{info, warn};

use crate::config::HttpConfig;

/// Owns the DNS-derived address list; the HTTP port asks it with [`CurrentAddresses`].
pub(crate) struct AddressBook {
    name: String,
    port: u16,
    refresh: Duration,
    /// `http.nsaddr_dns_server`; `None`: the system's resolver.
    server: Option<SocketAddr>,
    resolver: Option<TokioResolver>,
    /// The last non-empty answer, `;`-separated.
    list: Option<Arc<str>>,
    /// Why the last resolution gave nothing, until one succeeds again.
    failure: Option<String>,
    /// A resolution is under way: ticks do not pile up behind a slow DNS server.
    resolving: bool,
}

/// The current list, or why there is none yet.
#[derive(Message)]
#[rtype(result = "Result<Arc<str>, String>")]
pub(crate) struct CurrentAddresses;

impl AddressBook {
    /// The address book of `http`, when `http.nsaddr_dns` is set.
    pub(crate) fn of(http: &HttpConfig) -> Option<Self> {
        let (name, port) = http.nsaddr_dns_target()?;
        Some(Self {
            name: name.to_owned(),
            port,
            refresh: http.nsaddr_refresh,
            server: http.nsaddr_dns_server,
            resolver: None,
            list: None,
            failure: None,
            resolving: false,
        })
    }

    /// The resolver, built at the first resolution (and again at each one until the system's
    /// DNS configuration can be read: a pod's `/etc/resolv.conf` is there, a bare root file
    /// system may have none; the server serves meanwhile, `/rocketmq/nsaddr` says why not).
    fn resolver(&mut self) -> Result<TokioResolver, String> {
        if let Some(resolver) = &self.resolver {
            return Ok(resolver.clone());
        }
        let mut builder = match self.server {
            Some(server) => {
                let servers =
                    NameServerConfigGroup::from_ips_clear(&[server.ip()], server.port(), true);
                Resolver::builder_with_config(
                    ResolverConfig::from_parts(None, Vec::new(), servers),
                    TokioConnectionProvider::default(),
                )
            }
            None => Resolver::builder_tokio()
                .map_err(|e| format!("cannot read the system's DNS configuration: {e}"))?,
        };
        fresh_answers(builder.options_mut());
        let resolver = builder.build();
        self.resolver = Some(resolver.clone());
        Ok(resolver)
    }

    fn resolve(&mut self, ctx: &mut Context<Self>) {
        if self.resolving {
            return;
        }
        let resolver = match self.resolver() {
            Ok(resolver) => resolver,
            Err(why) => return self.resolved(Err(why)),
        };
        self.resolving = true;
        let name = self.name.clone();
        let lookup = async move {
            resolver
                .lookup_ip(name)
                .await
                .map(|found| found.iter().collect::<Vec<_>>())
                .map_err(|e| e.to_string())
        };
        ctx.spawn(lookup.into_actor(self).map(|found, book, _| {
            book.resolving = false;
            book.resolved(found);
        }));
    }

    fn resolved(&mut self, found: Result<Vec<IpAddr>, String>) {
        let list = found.and_then(|ips| {
            address_list(&ips, self.port).ok_or_else(|| "no A or AAAA record".to_owned())
        });
        match list {
            Ok(list) => {
                if self.list.as_deref() != Some(list.as_str()) {
                    info!(name = %self.name, addresses = %list, "address list resolved from DNS");
                }
                self.list = Some(list.into());
                self.failure = None;
            }
            Err(why) => {
                if self.failure.as_deref() != Some(why.as_str()) {
                    warn!(name = %self.name, error = %why, kept = ?self.list.as_deref(),
                        "cannot resolve http.nsaddr_dns; the last address list is kept");
                }
                self.failure = Some(why);
            }
        }
    }
}

/// Fresh answers at every refresh (no cache past the server's own), A and AAAA both.
fn fresh_answers(options: &mut ResolverOpts) {
    options.cache_size = 0;
    options.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
}

/// `ip:port;[ip6]:port`, sorted and without repeats, so that an unchanged fleet reads the same
/// at every poll; `None` when there is no address.
fn address_list(ips: &[IpAddr], port: u16) -> Option<String> {
    let mut addrs: Vec<SocketAddr> = ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
    addrs.sort_unstable();
    addrs.dedup();
    let list: Vec<String> = addrs.iter().map(SocketAddr::to_string).collect();
    (!list.is_empty()).then(|| list.join(";"))
}

impl Actor for AddressBook {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.resolve(ctx);
        ctx.run_interval(self.refresh, Self::resolve);
    }
}

/// The server stops: no more resolutions.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopResolving;

impl Handler<StopResolving> for AddressBook {
    type Result = ();

    fn handle(&mut self, _: StopResolving, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

impl Handler<CurrentAddresses> for AddressBook {
    type Result = Result<Arc<str>, String>;

    fn handle(&mut self, _: CurrentAddresses, _: &mut Self::Context) -> Self::Result {
        match (&self.list, &self.failure) {
            (Some(list), _) => Ok(Arc::clone(list)),
            (None, Some(why)) => Err(format!("{} does not resolve: {why}", self.name)),
            (None, None) => Err(format!("{} is being resolved", self.name)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_sorted_without_repeats_and_brackets_ipv6() {
        let ips: Vec<IpAddr> = ["10.0.0.2", "10.0.0.1", "::1", "10.0.0.2"]
            .iter()
            .map(|ip| ip.parse().unwrap())
            .collect();
        assert_eq!(
            address_list(&ips, 9876).as_deref(),
            Some("10.0.0.1:9876;10.0.0.2:9876;[::1]:9876")
        );
        assert_eq!(address_list(&[], 9876), None);
    }
}
