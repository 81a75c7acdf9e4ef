//! The actors that answer requests and the lifecycle of connections, as every connection of a
//! port sees them.

use std::sync::Arc;

use actix::prelude::*;

use crate::access::audit::AuditEvent;
use crate::access::AccessControl;
use crate::controller::Controller;
use crate::kv::KvStore;
use crate::limits::Limits;
use crate::messages::{
    ConnectionClosed, ConnectionOpened, GetNamesrvConfig, LookupProductEnvRoute,
    UpdateNamesrvConfig, WentAway,
};
use crate::registry::RouteRegistry;
use crate::route_cache::CacheId;

/// The port a connection was accepted on; each has its own rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Port {
    /// The NameServer's port (Java's DefaultRequestProcessor and ClientRequestProcessor).
    NameServer,
    /// The embedded controller's port (Java's ControllerRequestProcessor).
    Controller,
}

/// The owners of the NameServer's tables, which answer the NameServer port's rows.
#[derive(Clone)]
pub struct NamesrvServices {
    pub routes: Addr<RouteRegistry>,
    pub kv: Addr<KvStore>,
    /// GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG go to the runtime-config owner.
    pub config_reader: Recipient<GetNamesrvConfig>,
    pub config_writer: Recipient<UpdateNamesrvConfig>,
    /// Cluster-test mode: where route misses are looked up.
    pub product_env: Option<Recipient<LookupProductEnvRoute>>,
}

/// The actors that answer requests, and the lifecycle of connections; shared by all connections.
#[derive(Clone)]
pub struct Services {
    /// The NameServer's owners; none in a standalone controller, whose port answers the
    /// controller's codes only.
    pub namesrv: Option<NamesrvServices>,
    /// Told when a connection opens and closes (Housekeeping).
    pub opened: Recipient<ConnectionOpened>,
    pub closed: Recipient<ConnectionClosed>,
    /// Told of every GO_AWAY answer (Housekeeping counts them; none in a standalone controller).
    pub went_away: Option<Recipient<WentAway>>,
    /// Server-wide budgets, and the count of what every limit refused.
    pub limits: Addr<Limits>,
    /// This NameServer's route cache on each connection thread (and its id for the thread's
    /// other per-server state: metrics, accounts).
    pub route_cache: CacheId,
    /// Who may send which requests (docs/access.md).
    pub access: Arc<AccessControl>,
    /// The server-wide failed-attempt ledger's owner (the access guard), when there are
    /// accounts to fail against.
    pub failed_attempts: Option<Recipient<crate::access::AttemptFailed>>,
    /// Where audited requests are written.
    pub audit: Recipient<AuditEvent>,
    /// The port whose rows (crate::dispatch) these services answer.
    pub port: Port,
    /// The controller, which answers every request of the controller's port (the NameServer's
    /// codes are not served there, as on Java's controller port).
    pub controller: Option<Addr<Controller>>,
    /// Builds with debug assertions only: the actors a [`FAULT_INJECTION`] request can make
    /// panic, by name (docs/actors.md#supervision-and-panics).
    #[cfg(debug_assertions)]
    pub faults: Vec<(&'static str, Recipient<crate::contain::InjectPanic>)>,
}
