//! The HTTP port (docs/metrics.md): `/metrics`, `/health`, `/ready`, `/rocketmq/{subgroup}` (the
//! address server RocketMQ clients poll), the status page `/` and its JSON `/api/...`. An
//! actix-web app on the NameServer's own System: its handlers ask the server's actors by
//! message, exactly as a connection does, and change nothing. The connections come through
//! `door` (the remoting port's front door: `tls.mode` and its certificate, hot reload included).

mod access;
pub(crate) mod addresses;
mod door;
mod fleet_view;
mod metrics;
mod status;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix::{Addr, Recipient};
use actix_web::http::header::{CacheControl, CacheDirective, ContentType};
use actix_web::middleware::from_fn;
use actix_web::{web, App, HttpResponse};
use rmq_actors::access::guard::AccessGuard;
use rmq_actors::access::AccessControl;
use rmq_actors::controller::Controller;
use rmq_actors::housekeeping::Housekeeping;
use rmq_actors::kv::KvStore;
use rmq_actors::limits::Limits;
use rmq_actors::messages::{GetRegistryMetrics, TlsConfigChanged};
use rmq_actors::registry::RouteRegistry;
use rmq_actors::route_cache::RouteCacheKeeper;
use rmq_transport::front_door::FrontDoor;
use tokio::sync::watch;
use tracing::info;

use crate::config::HttpConfig;
use crate::fleet::{FleetWatch, StopChecking};
use crate::health::Health;
use addresses::{AddressBook, CurrentAddresses, StopResolving};
use door::{HttpDoor, StopServing};

/// What the HTTP handlers read: the actors' addresses and fixed facts. Shared by the handlers
/// (`web::Data`); nothing in it is mutable.
#[derive(Clone)]
pub(crate) struct Observed {
    /// The NameServer's owners; none in a standalone controller, whose page and scrape then
    /// show no routes, KV or NameServer connections.
    pub namesrv: Option<NamesrvObserved>,
    pub limits: Addr<Limits>,
    pub keepers: Vec<Addr<RouteCacheKeeper>>,
    /// Each actor's health, as the embedding API reports it.
    pub health: HealthProbe,
    /// False once a stop began (the remoting port no longer accepts).
    pub accepting: watch::Receiver<bool>,
    /// The remoting port's address (a standalone controller's: its controller port).
    pub remoting: SocketAddr,
    pub started: Instant,
    pub http: HttpConfig,
    /// The `status` and `probe` policies (crate::http::access).
    pub access: std::sync::Arc<AccessControl>,
    /// Checks HTTP credentials against the accounts, when there is an ACL file.
    pub access_guard: Option<Addr<AccessGuard>>,
    /// The address list that follows DNS (`http.nsaddr_dns`), when set.
    pub addresses: Option<Addr<AddressBook>>,
    /// The periodic fleet check (`[fleet]`), when on.
    pub fleet: Option<Addr<FleetWatch>>,
    /// The controller, when it runs: its metrics and the status page's controller section
    /// (it needs nothing of the NameServer's route tables).
    pub controller: Option<Addr<Controller>>,
}

/// The owners of the NameServer's tables the HTTP port reads.
#[derive(Clone)]
pub(crate) struct NamesrvObserved {
    pub routes: Addr<RouteRegistry>,
    pub kv: Addr<KvStore>,
    pub housekeeping: Addr<Housekeeping>,
}

/// Asks every actor whether it is alive (the handle's health check, shared with the HTTP port).
pub(crate) type HealthProbe = std::sync::Arc<
    dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Health>>> + Send + Sync,
>;

/// The running HTTP port.
pub struct HttpPort {
    addr: SocketAddr,
    door: Addr<HttpDoor>,
    addresses: Option<Addr<AddressBook>>,
    fleet: Option<Addr<FleetWatch>>,
}

impl HttpPort {
    /// The address it listens on (with the real port when bound to port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the `TlsReloader` sends each new certificate (used by connections that arrive after).
    pub(crate) fn tls_listener(&self) -> Recipient<TlsConfigChanged> {
        self.door.clone().recipient()
    }

    /// Stops serving: no new connection; open requests get `HTTP_SHUTDOWN` to finish.
    pub async fn stop(&self) {
        if let Some(book) = &self.addresses {
            book.do_send(StopResolving);
        }
        if let Some(fleet) = &self.fleet {
            fleet.do_send(StopChecking);
        }
        let _ = self
            .door
            .send(StopServing {
                grace: HTTP_SHUTDOWN,
            })
            .await;
    }
}

/// How long a stop lets open HTTP requests finish.
const HTTP_SHUTDOWN: Duration = Duration::from_secs(2);

/// Starts the HTTP port on `listener` at `addr` (bound by the caller, so a bind error names the
/// address before anything starts), admitting connections through `front_door` (the remoting
/// port's TLS mode and certificate; no PROXY header). Must run inside an actix System: the port
/// is served on the current arbiter.
pub(crate) fn start(
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    front_door: FrontDoor,
    observed: Observed,
) -> HttpPort {
    let tls = front_door.mode;
    let addresses = observed.addresses.clone();
    let fleet = observed.fleet.clone();
    // Access is decided per routed resource (the router's decoded, normalized path), never on
    // the raw request path: `/%61pi/status` is `/api/status` to both.
    let probe = || from_fn(access::probe_class);
    let health_probe = || from_fn(access::health_class);
    let status = || from_fn(access::status_class);
    let app = App::new()
        .app_data(web::Data::new(observed))
        .route("/metrics", web::get().to(metrics::scrape).wrap(probe()))
        .route("/health", web::get().to(health).wrap(health_probe()))
        .route("/ready", web::get().to(ready).wrap(health_probe()))
        .route("/rocketmq/{subgroup}", web::get().to(nsaddr).wrap(probe()))
        // The proxy's default namesrvDomainSubgroup is empty: it asks `/rocketmq/`.
        .route("/rocketmq/", web::get().to(nsaddr).wrap(probe()))
        .route("/", web::get().to(status::page).wrap(status()))
        .route("/api/status", web::get().to(status::api).wrap(status()))
        .default_service(web::route().to(not_found).wrap(probe()));
    let door = HttpDoor::start(listener, addr, front_door, app);
    info!(%addr, ?tls, "HTTP port started (metrics, health, address server, status page)");
    HttpPort {
        addr,
        door,
        addresses,
        fleet,
    }
}

fn text(body: String) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::plaintext())
        .insert_header(CacheControl(vec![CacheDirective::NoStore]))
        .body(body)
}

async fn not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type(ContentType::plaintext())
        .body("not found: see docs/metrics.md for the paths of this port\n")
}

/// 200 when every actor answers, 503 naming those that do not.
async fn health(observed: web::Data<Observed>) -> HttpResponse {
    let health = (observed.health)().await;
    let lost = health.lost();
    if lost.is_empty() {
        text(format!(
            "ok: {} actors alive, {} panics contained\n",
            health.actors.len(),
            health.panics()
        ))
    } else {
        HttpResponse::ServiceUnavailable()
            .content_type(ContentType::plaintext())
            .body(format!("unhealthy: lost {}\n", lost.join(", ")))
    }
}

/// 200 when the remoting port accepts and the registry answers routes (past the
/// `need_wait_for_service` window when that is on; a standalone controller: when its port
/// accepts and every actor is alive); 503 saying why not.
async fn ready(observed: web::Data<Observed>) -> HttpResponse {
    if !*observed.accepting.borrow() {
        return unavailable("stopping: no longer accepting connections");
    }
    let Some(namesrv) = &observed.namesrv else {
        let health = (observed.health)().await;
        return match health.lost().as_slice() {
            [] => text("ready\n".to_owned()),
            lost => unavailable(&format!("lost {}", lost.join(", "))),
        };
    };
    match namesrv.routes.send(GetRegistryMetrics).await {
        Ok(metrics) if metrics.ready => text("ready\n".to_owned()),
        Ok(_) => unavailable("waiting for brokers (registry.need_wait_for_service)"),
        Err(err) => unavailable(&format!("route registry unavailable: {err}")),
    }
}

fn unavailable(why: &str) -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .content_type(ContentType::plaintext())
        .body(format!("not ready: {why}\n"))
}

/// The address list of `rocketmq.namesrv.domain`: `host:port;host:port`, one line. Clients ask
/// `/rocketmq/nsaddr`, `/rocketmq/nsaddr-{unit}?nofix=1` or another subgroup; every subgroup
/// gets the same list (query parameters are ignored). With `http.nsaddr_dns`, the list
/// resolved from DNS (503 until a first resolution succeeds).
async fn nsaddr(observed: web::Data<Observed>) -> HttpResponse {
    if let Some(book) = &observed.addresses {
        return match book.send(CurrentAddresses).await {
            Ok(Ok(list)) => text(format!("{list}\n")),
            Ok(Err(why)) => unavailable(&format!("address list (http.nsaddr_dns): {why}")),
            Err(err) => unavailable(&format!("address book unavailable: {err}")),
        };
    }
    match address_list(&observed.http, observed.remoting) {
        Some(list) => text(format!("{list}\n")),
        None => HttpResponse::NotFound()
            .content_type(ContentType::plaintext())
            .body(
                "no address to announce: set http.nsaddr (the fleet's addresses) or \
                 http.advertised_address, or listen on a specific address\n",
            ),
    }
}

/// What `/rocketmq/nsaddr` answers: `http.nsaddr`; else the remoting address when it is a
/// specific one; else `http.advertised_address`.
pub(crate) fn address_list(http: &HttpConfig, remoting: SocketAddr) -> Option<String> {
    let fleet = http.nsaddr_list();
    if !fleet.is_empty() {
        return Some(fleet.join(";"));
    }
    if !remoting.ip().is_unspecified() {
        return Some(remoting.to_string());
    }
    let advertised = http.advertised_address.trim();
    (!advertised.is_empty()).then(|| advertised.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_list_prefers_the_fleet_then_the_own_address_then_the_advertised() {
        let mut http = HttpConfig::default();
        let any: SocketAddr = "0.0.0.0:9876".parse().unwrap();
        let own: SocketAddr = "10.1.2.3:9876".parse().unwrap();
        assert_eq!(address_list(&http, any), None);
        assert_eq!(address_list(&http, own).as_deref(), Some("10.1.2.3:9876"));
        http.advertised_address = "ns.example:9876".into();
        assert_eq!(address_list(&http, any).as_deref(), Some("ns.example:9876"));
        http.nsaddr = " a:9876 ; b:9876;".into();
        assert_eq!(address_list(&http, own).as_deref(), Some("a:9876;b:9876"));
    }
}
