//! Which actor answers which request code, on one screen, like Java's DefaultRequestProcessor
//! switch: [`dispatch`] reads a request's header and body into the typed message of its code and
//! hands it, through a [`Responder`], to the actor that answers it. A request that cannot be read
//! (unknown code, a missing header field, a bad body) is answered at once. The decoding runs on
//! the connection's thread, so JSON parsing stays off the actors' mailboxes.

use std::future::Future;
use std::sync::Arc;

use actix::prelude::*;
use rmq_protocol::body::{DataVersion, TopicRouteData};
use rmq_protocol::code::version;
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, BrokerNameHeader, DeleteKvConfigHeader,
    DeleteTopicHeader, ExtReader, GetBrokerMemberGroupHeader, GetKvConfigHeader,
    GetKvListByNamespaceHeader, GetTopicsByClusterHeader, PutKvConfigHeader,
    QueryDataVersionHeader, RegisterTopicHeader, ZONE_MODE, ZONE_NAME,
};
use rmq_protocol::fastjson::{self, JsonStyle};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::access::audit::{audited, AuditEvent};
use crate::access::{AccessClass, AccessControl};
use crate::controller::{requests, Controller, ControllerRequest};
use crate::kv::KvStore;
use crate::limits::Limits;
use crate::messages::*;
use crate::registry::RouteRegistry;
use crate::response::read_header;
use crate::response::{not_supported, small_body, system_error, IntoResponse};
use crate::route::{BrokerInstance, ConnId, Unregistration};
use crate::route_cache::{CacheId, WorkerCache};

/// The actors that answer requests, and the lifecycle of connections; shared by all connections.
#[derive(Clone)]
pub struct Services {
    pub routes: Addr<RouteRegistry>,
    pub kv: Addr<KvStore>,
    /// GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG go to the runtime-config owner.
    pub config_reader: Recipient<GetNamesrvConfig>,
    pub config_writer: Recipient<UpdateNamesrvConfig>,
    /// Cluster-test mode: where route misses are looked up.
    pub product_env: Option<Recipient<LookupProductEnvRoute>>,
    /// Told when a connection opens and closes (Housekeeping).
    pub opened: Recipient<ConnectionOpened>,
    pub closed: Recipient<ConnectionClosed>,
    /// Told of every GO_AWAY answer (Housekeeping counts them).
    pub went_away: Recipient<WentAway>,
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
    /// On the controller's port only: the controller, which then answers every request (the
    /// NameServer's codes are not served there, as on Java's controller port).
    pub controller: Option<Addr<Controller>>,
    /// Builds with debug assertions only: the actors a [`FAULT_INJECTION`] request can make
    /// panic, by name (docs/actors.md#supervision-and-panics).
    #[cfg(debug_assertions)]
    pub faults: Vec<(&'static str, Recipient<crate::contain::InjectPanic>)>,
}

/// Builds with debug assertions only (tests, dev builds): a request of this code with ext field
/// `actor` makes that actor's handler panic (`connection`: the connection itself), so tests and
/// the soak run can check that the panic is contained. Release builds answer it as any unknown
/// code.
#[cfg(debug_assertions)]
pub const FAULT_INJECTION: RequestCode = RequestCode(1_999_999);

/// The class of a request for admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Route and cluster queries, topic lists, KV and config reads.
    Read,
    /// Registrations, heartbeats and every change.
    Write,
}

impl Class {
    /// Route and cluster queries, topic lists, KV reads (the `read` access class) and
    /// GET_NAMESRV_CONFIG (`admin_read`) are reads; everything else is a write.
    pub fn of(code: RequestCode) -> Class {
        match AccessClass::of(code) {
            Some(AccessClass::Read | AccessClass::AdminRead) => Class::Read,
            _ => Class::Write,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
        }
    }
}

/// Where [`dispatch`] hands a request: the connection that read it.
pub trait Responder {
    /// Answers at once.
    fn answer(&mut self, response: RemotingCommand);
    /// Answers with the reply of the actor `reply` waits for.
    fn answer_later<F, R>(&mut self, reply: F)
    where
        F: Future<Output = Result<R, MailboxError>> + 'static,
        R: IntoResponse + 'static;
    /// REGISTER_BROKER, which the registration module decodes and registers with the connection's
    /// memory of its previous body.
    fn register_broker(&mut self);
    /// The route cache of the connection's thread.
    fn route_cache(&self) -> Option<&WorkerCache>;
    /// Whether a request of `class` may wait for an actor now; the error is the answer
    /// (SYSTEM_BUSY "[OVERLOAD]").
    fn admit(&mut self, class: Class) -> Result<(), RemotingCommand>;
    /// Counts a route query answered from the route cache (`hit`) or asked of the registry.
    fn route_cache_counted(&mut self, _hit: bool) {}
    /// Applies access control to a request of a restricted or audited code
    /// (crate::access); the error is the answer (NO_PERMISSION). No default: a responder that
    /// forgot it would let every request through.
    fn authorize(&mut self, cmd: &RemotingCommand) -> Result<(), RemotingCommand>;
    /// The connection's id.
    fn conn_id(&self) -> ConnId;
}

/// Sends `cmd` to the actor that answers its code, or answers it at once.
pub fn dispatch(cmd: &RemotingCommand, to: &Services, out: &mut impl Responder) {
    if let Err(response) = route(cmd, to, out) {
        out.answer(response);
    }
}

fn route(
    cmd: &RemotingCommand,
    to: &Services,
    out: &mut impl Responder,
) -> Result<(), RemotingCommand> {
    use RequestCode as C;
    if let Some(controller) = &to.controller {
        return controller_route(cmd, controller, to, out);
    }
    let code = cmd.request_code();
    // Access control first, even before a route query from the cache; nothing to do when
    // every class is open and the code is not audited.
    if !to.access.policies.all_open() || audited(code) {
        out.authorize(cmd)?;
    }
    // Everything that waits for an actor is admitted first, but for a route query, which is
    // admitted only when the cache of this thread cannot answer it.
    let cached_route = code == C::GET_ROUTEINFO_BY_TOPIC && to.product_env.is_none();
    #[cfg(debug_assertions)]
    let cached_route = cached_route || code == FAULT_INJECTION;
    // Only codes with a handler here wait for an actor (a named code we do not answer, such as
    // the controller's, gets REQUEST_CODE_NOT_SUPPORTED even under overload).
    if !cached_route && AccessClass::of(code).is_some() {
        out.admit(Class::of(code))?;
    }
    match code {
        // KV config: the KvStore.
        C::PUT_KV_CONFIG => out.answer_later(to.kv.send(put_kv_config(cmd)?)),
        C::GET_KV_CONFIG => out.answer_later(to.kv.send(get_kv_config(cmd)?)),
        C::DELETE_KV_CONFIG => out.answer_later(to.kv.send(delete_kv_config(cmd)?)),
        C::GET_KVLIST_BY_NAMESPACE => out.answer_later(to.kv.send(get_kv_list(cmd)?)),
        // Brokers: the RouteRegistry.
        C::REGISTER_BROKER => out.register_broker(),
        C::UNREGISTER_BROKER => out.answer_later(to.routes.send(unregister_broker(cmd)?)),
        C::BROKER_HEARTBEAT => out.answer_later(to.routes.send(broker_heartbeat(cmd)?)),
        C::QUERY_DATA_VERSION => out.answer_later(to.routes.send(query_data_version(cmd)?)),
        // Routes and cluster: the RouteRegistry (in cluster-test mode a route miss is then looked
        // up on the product environment).
        C::GET_ROUTEINFO_BY_TOPIC => match &to.product_env {
            None => route_query(cmd, to, out),
            Some(env) => {
                out.answer_later(route_with_fallback(&to.routes, env, get_route_info(cmd)?))
            }
        },
        C::GET_BROKER_CLUSTER_INFO => out.answer_later(to.routes.send(GetClusterInfo)),
        C::GET_BROKER_MEMBER_GROUP => out.answer_later(to.routes.send(member_group(cmd)?)),
        C::WIPE_WRITE_PERM_OF_BROKER => out.answer_later(to.routes.send(WipeWritePerm {
            name: read_header::<BrokerNameHeader>(cmd)?.broker_name,
        })),
        C::ADD_WRITE_PERM_OF_BROKER => out.answer_later(to.routes.send(AddWritePerm {
            name: read_header::<BrokerNameHeader>(cmd)?.broker_name,
        })),
        C::DELETE_TOPIC_IN_NAMESRV => out.answer_later(to.routes.send(delete_topic(cmd)?)),
        C::REGISTER_TOPIC_IN_NAMESRV => out.answer_later(to.routes.send(register_topic(cmd)?)),
        // Topic lists: the RouteRegistry.
        C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER
        | C::GET_TOPICS_BY_CLUSTER
        | C::GET_SYSTEM_TOPIC_LIST_FROM_NS
        | C::GET_UNIT_TOPIC_LIST
        | C::GET_HAS_UNIT_SUB_TOPIC_LIST
        | C::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => {
            out.answer_later(to.routes.send(topic_list(cmd)?));
        }
        // Runtime configuration: the runtime-config actor.
        C::UPDATE_NAMESRV_CONFIG => {
            small_body(cmd, "configuration")?;
            out.answer_later(to.config_writer.send(UpdateNamesrvConfig {
                body: cmd.body.clone(),
            }));
        }
        C::GET_NAMESRV_CONFIG => out.answer_later(to.config_reader.send(GetNamesrvConfig)),
        #[cfg(debug_assertions)]
        FAULT_INJECTION => out.answer(inject_fault(cmd, to)),
        _ => return Err(not_supported(cmd.code)),
    }
    Ok(())
}

/// A request on the controller's port: access control, admission, then the controller.
fn controller_route(
    cmd: &RemotingCommand,
    controller: &Addr<Controller>,
    to: &Services,
    out: &mut impl Responder,
) -> Result<(), RemotingCommand> {
    if !to.access.policies.all_open() {
        out.authorize(cmd)?;
    }
    let call = requests::decode(cmd)?;
    if !matches!(call, requests::Call::Heartbeat(_)) {
        out.admit(Class::Write)?;
    }
    out.answer_later(controller.send(ControllerRequest {
        call,
        conn: out.conn_id(),
    }));
    Ok(())
}

/// [`FAULT_INJECTION`]: sends the named actor a panic, or panics here for `connection`.
#[cfg(debug_assertions)]
fn inject_fault(cmd: &RemotingCommand, to: &Services) -> RemotingCommand {
    let actor = ExtReader::of(cmd).get("actor").unwrap_or_default();
    if actor == "connection" {
        panic!("injected fault in a connection");
    }
    match to.faults.iter().find(|(name, _)| *name == actor) {
        Some((_, target)) => {
            let lose = ExtReader::of(cmd).get("lose").is_some_and(|v| v == "true");
            target.do_send(crate::contain::InjectPanic { lose });
            RemotingCommand::success()
        }
        None => system_error(format!("no actor {actor:?} to inject a fault into")),
    }
}

/// GET_ROUTEINFO_BY_TOPIC: from this thread's route cache when it has the route (read from the
/// header without copying anything), else from the registry, whose answer then fills the cache.
/// Zone-filtered queries always ask the registry.
fn route_query(cmd: &RemotingCommand, to: &Services, out: &mut impl Responder) {
    let (topic, style, zone) = route_key(cmd);
    if let (Some(topic), None, Some(cache)) = (topic, zone, out.route_cache()) {
        if let Some(body) = cache.lookup(topic, style) {
            out.route_cache_counted(true);
            out.answer(RemotingCommand::success().with_body(body));
            return;
        }
        out.route_cache_counted(false);
    }
    if let Err(busy) = out.admit(Class::Read) {
        out.answer(busy);
        return;
    }
    let fill = match (topic, zone, out.route_cache()) {
        (Some(topic), None, Some(cache)) => Some((cache.clone(), topic.to_owned())),
        _ => None,
    };
    let reply = to.routes.send(GetRouteInfo {
        topic: topic.map(str::to_owned),
        style,
        zone: zone.map(str::to_owned),
    });
    out.answer_later(async move {
        let reply = reply.await?;
        if let (Ok(route), Some((cache, topic))) = (&reply, fill) {
            cache.fill(&topic, style, route.body.clone(), route.generation);
        }
        Ok(reply)
    });
}

/// Reads a JSON body of type `T` (named `what` in the error), `None` without a body.
fn json_body<T: serde::de::DeserializeOwned>(
    cmd: &RemotingCommand,
    what: &str,
) -> Result<Option<T>, RemotingCommand> {
    small_body(cmd, what)?;
    cmd.body
        .as_deref()
        .map(|bytes| {
            fastjson::from_slice::<T>(bytes)
                .map_err(|e| system_error(format!("bad {what} body: {e}")))
        })
        .transpose()
}

// ---------------------------------------------------------------------------------------------
// One reader per request code: header (and body) -> message.

type Decoded<M> = Result<M, RemotingCommand>;

fn put_kv_config(cmd: &RemotingCommand) -> Decoded<PutKvConfig> {
    let h = read_header::<PutKvConfigHeader>(cmd)?;
    Ok(PutKvConfig {
        namespace: h.namespace,
        key: h.key,
        value: h.value,
    })
}

fn get_kv_config(cmd: &RemotingCommand) -> Decoded<GetKvConfig> {
    let h = read_header::<GetKvConfigHeader>(cmd)?;
    Ok(GetKvConfig {
        namespace: h.namespace,
        key: h.key,
    })
}

fn delete_kv_config(cmd: &RemotingCommand) -> Decoded<DeleteKvConfig> {
    let h = read_header::<DeleteKvConfigHeader>(cmd)?;
    Ok(DeleteKvConfig {
        namespace: h.namespace,
        key: h.key,
    })
}

fn get_kv_list(cmd: &RemotingCommand) -> Decoded<GetKvList> {
    Ok(GetKvList {
        namespace: read_header::<GetKvListByNamespaceHeader>(cmd)?.namespace,
    })
}

fn unregister_broker(cmd: &RemotingCommand) -> Decoded<UnregisterBroker> {
    let h = read_header::<BrokerIdentityHeader>(cmd)?;
    Ok(UnregisterBroker {
        request: Unregistration {
            cluster: h.cluster_name.into(),
            addr: h.broker_addr.into(),
            name: h.broker_name.into(),
            id: h.broker_id,
        },
    })
}

fn broker_heartbeat(cmd: &RemotingCommand) -> Decoded<BrokerHeartbeat> {
    let h = read_header::<BrokerHeartbeatHeader>(cmd)?;
    Ok(BrokerHeartbeat {
        instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
    })
}

fn query_data_version(cmd: &RemotingCommand) -> Decoded<QueryDataVersion> {
    let h = read_header::<QueryDataVersionHeader>(cmd)?;
    Ok(QueryDataVersion {
        instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
        version: json_body::<DataVersion>(cmd, "DataVersion")?,
    })
}

/// What a route query asks, borrowed from its header: the topic, the JSON style (standard for
/// V4_9_4+ requests or when asked for, legacy otherwise) and the zone (only in zone mode and
/// when not blank). Reading it allocates nothing.
fn route_key(cmd: &RemotingCommand) -> (Option<&str>, JsonStyle, Option<&str>) {
    let ext = ExtReader::of(cmd);
    let style =
        if cmd.version >= version::V4_9_4 || ext.bool("acceptStandardJsonOnly") == Some(true) {
            JsonStyle::Standard
        } else {
            JsonStyle::Legacy
        };
    let zone = ext
        .get(ZONE_NAME)
        .filter(|zone| ext.bool(ZONE_MODE) == Some(true) && !zone.trim().is_empty());
    (ext.get("topic"), style, zone)
}

/// GET_ROUTEINFO_BY_TOPIC as a message to the registry.
fn get_route_info(cmd: &RemotingCommand) -> Decoded<GetRouteInfo> {
    let (topic, style, zone) = route_key(cmd);
    Ok(GetRouteInfo {
        topic: topic.map(str::to_owned),
        style,
        zone: zone.map(str::to_owned),
    })
}

fn member_group(cmd: &RemotingCommand) -> Decoded<GetBrokerMemberGroup> {
    let h = read_header::<GetBrokerMemberGroupHeader>(cmd)?;
    Ok(GetBrokerMemberGroup {
        cluster: h.cluster_name,
        name: h.broker_name,
    })
}

fn delete_topic(cmd: &RemotingCommand) -> Decoded<DeleteTopic> {
    let h = read_header::<DeleteTopicHeader>(cmd)?;
    Ok(DeleteTopic {
        topic: h.topic,
        cluster: h.cluster_name,
    })
}

fn register_topic(cmd: &RemotingCommand) -> Decoded<RegisterTopic> {
    let h = read_header::<RegisterTopicHeader>(cmd)?;
    let route = json_body::<TopicRouteData>(cmd, "TopicRouteData")?;
    let names = std::iter::once(h.topic.as_str()).chain(
        route
            .iter()
            .flat_map(|r| r.queue_datas.iter().map(|q| q.broker_name.as_str())),
    );
    for name in names {
        crate::stored::name("a topic or broker name", name)
            .map_err(|e| system_error(format!("refused: {e}")))?;
    }
    Ok(RegisterTopic {
        topic: h.topic,
        queue_datas: route.map(|r| r.queue_datas).unwrap_or_default(),
    })
}

/// The topic-list codes (206, 224, 304, 311, 312, 313).
fn topic_list(cmd: &RemotingCommand) -> Decoded<GetTopicList> {
    use RequestCode as C;
    let kind = match cmd.request_code() {
        C::GET_TOPICS_BY_CLUSTER => {
            TopicListKind::ByCluster(read_header::<GetTopicsByClusterHeader>(cmd)?.cluster)
        }
        C::GET_SYSTEM_TOPIC_LIST_FROM_NS => TopicListKind::System,
        C::GET_UNIT_TOPIC_LIST => TopicListKind::Unit,
        C::GET_HAS_UNIT_SUB_TOPIC_LIST => TopicListKind::HasUnitSub,
        C::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST => TopicListKind::HasUnitSubUnUnit,
        _ => TopicListKind::All,
    };
    Ok(GetTopicList { kind })
}

/// Cluster-test mode: a local route miss is looked up on the product environment's NameServer
/// and answered in legacy JSON, as Java 4.x's `ClusterTestRequestProcessor` does.
fn route_with_fallback(
    routes: &Addr<RouteRegistry>,
    product_env: &Recipient<LookupProductEnvRoute>,
    query: GetRouteInfo,
) -> impl Future<Output = Result<Result<RouteBody, RouteError>, MailboxError>> + 'static {
    let local = routes.send(query);
    let product_env = product_env.clone();
    async move {
        let local = local.await?;
        let Err(RouteError::TopicNotExist(topic)) = local else {
            return Ok(local);
        };
        let remote = product_env
            .send(LookupProductEnvRoute {
                topic: topic.clone(),
            })
            .await?;
        Ok(match remote {
            Some(route) => Ok(RouteBody {
                body: bytes::Bytes::from(rmq_protocol::body::to_json(&route, JsonStyle::Legacy)),
                generation: 0,
            }),
            None => Err(RouteError::TopicNotExist(topic)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_style_by_version_and_flag() {
        let style = |cmd: RemotingCommand| get_route_info(&cmd).map(|m| m.style);
        let req =
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T");
        assert_eq!(style(req.clone()).unwrap(), JsonStyle::Standard);
        assert_eq!(
            style(req.clone().with_version(317)).unwrap(),
            JsonStyle::Legacy
        );
        assert_eq!(
            style(
                req.with_version(317)
                    .with_ext("acceptStandardJsonOnly", "true")
            )
            .unwrap(),
            JsonStyle::Standard
        );
    }

    #[test]
    fn bad_headers_and_bodies_are_answers() {
        let err = unregister_broker(&RemotingCommand::request(RequestCode::UNREGISTER_BROKER))
            .unwrap_err();
        assert_eq!(
            err.remark.as_deref(),
            Some("the custom field <brokerName> is null")
        );
        let bad_version = RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext("brokerAddr", "a")
            .with_ext("clusterName", "c")
            .with_body(&b"{not json"[..]);
        assert_eq!(query_data_version(&bad_version).unwrap_err().code, 1);
        let bad_route = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
            .with_ext("topic", "t")
            .with_body(&b"[1,"[..]);
        assert_eq!(register_topic(&bad_route).unwrap_err().code, 1);
    }

    #[test]
    fn topic_lists_by_code() {
        let kind = |code| {
            topic_list(&RemotingCommand::request(code).with_ext("cluster", "c"))
                .unwrap()
                .kind
        };
        assert_eq!(
            kind(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
            TopicListKind::All
        );
        assert_eq!(
            kind(RequestCode::GET_TOPICS_BY_CLUSTER),
            TopicListKind::ByCluster("c".into())
        );
        assert_eq!(
            kind(RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_NS),
            TopicListKind::System
        );
        assert_eq!(kind(RequestCode::GET_UNIT_TOPIC_LIST), TopicListKind::Unit);
        assert_eq!(
            kind(RequestCode::GET_HAS_UNIT_SUB_TOPIC_LIST),
            TopicListKind::HasUnitSub
        );
        assert_eq!(
            kind(RequestCode::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST),
            TopicListKind::HasUnitSubUnUnit
        );
        let no_cluster = RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER);
        assert_eq!(topic_list(&no_cluster).unwrap_err().code, 1);
    }
}
