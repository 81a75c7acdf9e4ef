//! Which actor answers which request code, on one screen per port, like Java's
//! DefaultRequestProcessor switch: one [`Row`] per code (crate::codes) with its access class,
//! admission class, audit target, owner, and the reader that turns its header and body into the
//! owner's typed message. A request that cannot be read (a missing header field, a bad body) is
//! answered at once. The reading runs on the connection's thread, so JSON parsing stays off the
//! actors' mailboxes.

use std::future::Future;

use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::body::{to_json, DataVersion, TopicRouteData};
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, BrokerNameHeader, DeleteKvConfigHeader,
    DeleteTopicHeader, GetBrokerMemberGroupHeader, GetKvConfigHeader, GetKvListByNamespaceHeader,
    GetTopicsByClusterHeader, PutKvConfigHeader, QueryDataVersionHeader, RegisterTopicHeader,
    RouteQuery,
};
use rmq_protocol::fastjson::{self, JsonStyle};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::access::AccessClass;
use crate::codes::{Answer, Asking, Audit, Class, Outcome, Reader, Row};
use crate::controller::{requests, ControllerRequest, ControllerRequestUnread};
use crate::kv::KvStore;
use crate::messages::*;
use crate::registry::RouteRegistry;
use crate::response::{read_header, small_body, system_error, IntoResponse};
use crate::route::{filter_by_zone, BrokerInstance, ConnId, Unregistration};

pub use crate::services::Port;
pub use crate::services::{NamesrvServices, Services};

/// The row of `code` on `port`, if the port answers it.
pub fn lookup(port: Port, code: RequestCode) -> Option<&'static Row> {
    let rows = match port {
        Port::NameServer => NAMESRV,
        Port::Controller => CONTROLLER,
    };
    let found = rows.iter().find(|row| row.code == code);
    #[cfg(debug_assertions)]
    let found = found.or_else(|| (code == FAULT_INJECTION).then_some(&FAULT_ROW));
    found
}

#[allow(clippy::too_many_arguments)]
const fn row(
    code: RequestCode,
    access: AccessClass,
    admission: Option<Class>,
    audit: Audit,
    owner: &'static str,
    answer: Answer,
    read: Reader,
) -> Row {
    Row {
        code,
        access,
        admission,
        audit,
        owner,
        answer,
        read,
    }
}

/// The row of a code the RouteRegistry answers with message `M`.
const fn registry<M>(
    code: RequestCode,
    access: AccessClass,
    admission: Option<Class>,
    audit: Audit,
) -> Row
where
    M: FromFrame + Message + Send + 'static,
    RouteRegistry: Handler<M>,
    M::Result: Send + IntoResponse + 'static,
{
    row(
        code,
        access,
        admission,
        audit,
        "RouteRegistry",
        to_routes::<M>,
        read_only::<M>,
    )
}

/// The row of a code the KvStore answers with message `M`.
const fn kv<M>(
    code: RequestCode,
    access: AccessClass,
    admission: Option<Class>,
    audit: Audit,
) -> Row
where
    M: FromFrame + Message + Send + 'static,
    KvStore: Handler<M>,
    M::Result: Send + IntoResponse + 'static,
{
    row(
        code,
        access,
        admission,
        audit,
        "KvStore",
        to_kv::<M>,
        read_only::<M>,
    )
}

/// The row of a controller code: the Controller answers them all.
const fn controller(code: RequestCode, access: AccessClass, admission: Option<Class>) -> Row {
    row(
        code,
        access,
        admission,
        Audit::No,
        "Controller",
        controller_call,
        read_call,
    )
}

use AccessClass::{AdminRead, AdminWrite, Broker, Read};
use RequestCode as C;
const READ: Option<Class> = Some(Class::Read);
const WRITE: Option<Class> = Some(Class::Write);
const CONFIG: &str = "RuntimeConfig";
const BROKER: Audit = Audit::Fields(&[
    ("cluster", "clusterName"),
    ("broker", "brokerName"),
    ("broker_addr", "brokerAddr"),
    ("broker_id", "brokerId"),
]);
const KV_KEY: Audit = Audit::Fields(&[("namespace", "namespace"), ("key", "key")]);
const BROKER_NAME: Audit = Audit::Fields(&[("broker", "brokerName")]);

/// The NameServer port's codes (docs/request-codes.md lists them), route queries first: the
/// lookup reads the rows in order.
#[rustfmt::skip]
pub static NAMESRV: &[Row] = &[
    row(C::GET_ROUTEINFO_BY_TOPIC, Read, READ, Audit::No, "RouteRegistry", route_info, read_route),
    row(C::REGISTER_BROKER, Broker, WRITE, BROKER, "RouteRegistry", |_, _| Outcome::Register, read_registration),
    registry::<BrokerHeartbeat>(C::BROKER_HEARTBEAT, Broker, WRITE, Audit::No),
    registry::<QueryDataVersion>(C::QUERY_DATA_VERSION, Broker, WRITE, Audit::No),
    registry::<UnregisterBroker>(C::UNREGISTER_BROKER, Broker, WRITE, BROKER),
    registry::<GetClusterInfo>(C::GET_BROKER_CLUSTER_INFO, Read, READ, Audit::No),
    registry::<GetBrokerMemberGroup>(C::GET_BROKER_MEMBER_GROUP, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_TOPICS_BY_CLUSTER, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_SYSTEM_TOPIC_LIST_FROM_NS, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_UNIT_TOPIC_LIST, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_HAS_UNIT_SUB_TOPIC_LIST, Read, READ, Audit::No),
    registry::<GetTopicList>(C::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, Read, READ, Audit::No),
    kv::<GetKvConfig>(C::GET_KV_CONFIG, Read, READ, Audit::No),
    kv::<GetKvList>(C::GET_KVLIST_BY_NAMESPACE, Read, READ, Audit::No),
    row(C::GET_NAMESRV_CONFIG, AdminRead, READ, Audit::No, CONFIG, get_namesrv_config, |_| Ok(())),
    kv::<PutKvConfig>(C::PUT_KV_CONFIG, AdminWrite, WRITE, KV_KEY),
    kv::<DeleteKvConfig>(C::DELETE_KV_CONFIG, AdminWrite, WRITE, KV_KEY),
    registry::<WipeWritePerm>(C::WIPE_WRITE_PERM_OF_BROKER, AdminWrite, WRITE, BROKER_NAME),
    registry::<AddWritePerm>(C::ADD_WRITE_PERM_OF_BROKER, AdminWrite, WRITE, BROKER_NAME),
    registry::<DeleteTopic>(C::DELETE_TOPIC_IN_NAMESRV, AdminWrite, WRITE, Audit::Fields(&[("topic", "topic"), ("cluster", "clusterName")])),
    registry::<RegisterTopic>(C::REGISTER_TOPIC_IN_NAMESRV, AdminWrite, WRITE, Audit::Fields(&[("topic", "topic")])),
    row(C::UPDATE_NAMESRV_CONFIG, AdminWrite, WRITE, Audit::ConfigKeys, CONFIG, update_namesrv_config, |cmd| small_body(cmd, "configuration")),
];

/// The controller port's codes: all answered by the Controller; what brokers send is `broker`
/// (1002 included: brokers elect themselves; `mqadmin electMaster` needs the same right), the
/// admin tools' reads `admin_read`, their changes `admin_write`. The heartbeat, oneway, is not
/// held back by admission.
#[rustfmt::skip]
pub static CONTROLLER: &[Row] = &[
    controller(C::BROKER_HEARTBEAT, Broker, None),
    controller(C::CONTROLLER_ALTER_SYNC_STATE_SET, Broker, WRITE),
    controller(C::CONTROLLER_ELECT_MASTER, Broker, WRITE),
    controller(C::CONTROLLER_REGISTER_BROKER, Broker, WRITE),
    controller(C::CONTROLLER_GET_REPLICA_INFO, Broker, WRITE),
    controller(C::CONTROLLER_GET_METADATA_INFO, Broker, WRITE),
    controller(C::CONTROLLER_GET_NEXT_BROKER_ID, Broker, WRITE),
    controller(C::CONTROLLER_APPLY_BROKER_ID, Broker, WRITE),
    controller(C::CONTROLLER_GET_SYNC_STATE_DATA, AdminRead, WRITE),
    controller(C::GET_CONTROLLER_CONFIG, AdminRead, WRITE),
    controller(C::UPDATE_CONTROLLER_CONFIG, AdminWrite, WRITE),
    controller(C::CLEAN_BROKER_DATA, AdminWrite, WRITE),
];

/// Builds with debug assertions only (tests, dev builds): a request of this code with ext field
/// `actor` makes that actor's handler panic (`connection`: the connection itself), so tests and
/// the soak run can check that the panic is contained. Release builds answer it as any unknown
/// code.
#[cfg(debug_assertions)]
pub const FAULT_INJECTION: RequestCode = RequestCode(1_999_999);

#[cfg(debug_assertions)]
static FAULT_ROW: Row = row(
    FAULT_INJECTION,
    AdminWrite,
    None,
    Audit::No,
    "any",
    inject_fault,
    |_| Ok(()),
);

/// Sends `message` to the actor behind `to` and waits for its reply.
fn ask<A, M>(to: &Addr<A>, message: Result<M, RemotingCommand>) -> Outcome
where
    A: Handler<M>,
    A::Context: actix::dev::ToEnvelope<A, M>,
    M: Message + Send + 'static,
    M::Result: Send + IntoResponse + 'static,
{
    match message {
        Ok(message) => Outcome::later(to.send(message)),
        Err(answer) => Outcome::Now(answer),
    }
}

fn to_routes<M>(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome
where
    M: FromFrame + Message + Send + 'static,
    RouteRegistry: Handler<M>,
    M::Result: Send + IntoResponse + 'static,
{
    match namesrv(to) {
        Ok(namesrv) => ask(&namesrv.routes, M::read(cmd)),
        Err(answer) => Outcome::Now(answer),
    }
}

fn to_kv<M>(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome
where
    M: FromFrame + Message + Send + 'static,
    KvStore: Handler<M>,
    M::Result: Send + IntoResponse + 'static,
{
    match namesrv(to) {
        Ok(namesrv) => ask(&namesrv.kv, M::read(cmd)),
        Err(answer) => Outcome::Now(answer),
    }
}

/// The NameServer's owners, which a row of the NameServer port needs (a standalone controller
/// has none, and its port has no such row).
fn namesrv<'a>(to: &'a Asking<'_>) -> Result<&'a NamesrvServices, RemotingCommand> {
    to.services
        .namesrv
        .as_ref()
        .ok_or_else(|| system_error("no NameServer on this port"))
}

fn get_namesrv_config(_: &RemotingCommand, to: &Asking<'_>) -> Outcome {
    match namesrv(to) {
        Ok(namesrv) => Outcome::later(namesrv.config_reader.send(GetNamesrvConfig)),
        Err(answer) => Outcome::Now(answer),
    }
}

fn update_namesrv_config(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome {
    if let Err(answer) = small_body(cmd, "configuration") {
        return Outcome::Now(answer);
    }
    match namesrv(to) {
        Ok(namesrv) => Outcome::later(namesrv.config_writer.send(UpdateNamesrvConfig {
            body: cmd.body.clone(),
        })),
        Err(answer) => Outcome::Now(answer),
    }
}

/// Reads a request of message `M` without answering it.
fn read_only<M: FromFrame>(cmd: &RemotingCommand) -> Result<(), RemotingCommand> {
    M::read(cmd).map(drop)
}

/// Reads a route query (it cannot fail: a missing topic is TOPIC_NOT_EXIST for "null").
fn read_route(cmd: &RemotingCommand) -> Result<(), RemotingCommand> {
    RouteQuery::of(cmd);
    Ok(())
}

/// Reads a registration, as the first of a connection with the default inflation bound.
fn read_registration(cmd: &RemotingCommand) -> Result<(), RemotingCommand> {
    let max_inflated_body = crate::settings::ServerSettings::default().max_inflated_body_bytes;
    crate::registration::decode_registration(cmd, ConnId(0), max_inflated_body, None).map(drop)
}

/// Reads a controller request.
fn read_call(cmd: &RemotingCommand) -> Result<(), RemotingCommand> {
    requests::decode(cmd).map(drop)
}

/// Every code of the controller's port: read into one controller call.
fn controller_call(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome {
    let Some(controller) = &to.services.controller else {
        return Outcome::Now(system_error("no controller on this port"));
    };
    match requests::decode(cmd) {
        Ok(call) => Outcome::later(controller.send(ControllerRequest {
            call,
            conn: to.conn,
        })),
        Err(answer) => {
            controller.do_send(ControllerRequestUnread {
                code: cmd.request_code(),
                answer: answer.response_code(),
            });
            Outcome::Now(answer)
        }
    }
}

/// [`FAULT_INJECTION`]: sends the named actor a panic, or panics here for `connection`.
#[cfg(debug_assertions)]
fn inject_fault(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome {
    use rmq_protocol::custom_headers::ExtReader;
    let actor = ExtReader::of(cmd).get("actor").unwrap_or_default();
    if actor == "connection" {
        panic!("injected fault in a connection");
    }
    Outcome::Now(
        match to.services.faults.iter().find(|(name, _)| *name == actor) {
            Some((_, target)) => {
                let lose = ExtReader::of(cmd).get("lose").is_some_and(|v| v == "true");
                target.do_send(crate::contain::InjectPanic { lose });
                RemotingCommand::success()
            }
            None => system_error(format!("no actor {actor:?} to inject a fault into")),
        },
    )
}

/// GET_ROUTEINFO_BY_TOPIC, when this thread's route cache cannot answer it (see
/// `WorkerCache::answer`): asks the registry for the route, encodes it here and keeps it in the
/// cache. In cluster-test mode a route miss is then looked up on the product environment.
fn route_info(cmd: &RemotingCommand, to: &Asking<'_>) -> Outcome {
    let namesrv = match namesrv(to) {
        Ok(namesrv) => namesrv,
        Err(answer) => return Outcome::Now(answer),
    };
    let query = RouteQuery::of(cmd);
    let topic = query.topic.map(str::to_owned);
    let message = GetRouteInfo {
        topic: topic.clone(),
    };
    if let Some(env) = &namesrv.product_env {
        return Outcome::later(route_with_fallback(&namesrv.routes, env, message));
    }
    let (style, zone) = (query.style, query.zone.map(str::to_owned));
    let cache = to.route_cache.cloned();
    let reply = namesrv.routes.send(message);
    Outcome::later(async move {
        Ok(reply.await?.map(|reply| match (zone, topic, cache) {
            // Java's ZoneRouteRPCHook re-encodes a zone-filtered route in legacy JSON,
            // whatever the request asked.
            (Some(zone), ..) => {
                let mut route = reply.route.to_data();
                filter_by_zone(&mut route, &zone);
                Body(to_json(&route, JsonStyle::Legacy).into())
            }
            (None, Some(topic), Some(cache)) => {
                let body = Bytes::from(reply.route.to_json(style));
                cache.fill(&topic, style, body.clone(), reply.generation);
                Body(body)
            }
            (None, ..) => Body(reply.route.to_json(style).into()),
        }))
    })
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

/// A request message read from its frame (header, and body where it has one).
trait FromFrame: Sized {
    fn read(cmd: &RemotingCommand) -> Decoded<Self>;
}

impl FromFrame for GetClusterInfo {
    fn read(_: &RemotingCommand) -> Decoded<Self> {
        Ok(GetClusterInfo)
    }
}

impl FromFrame for WipeWritePerm {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        Ok(WipeWritePerm {
            name: read_header::<BrokerNameHeader>(cmd)?.broker_name,
        })
    }
}

impl FromFrame for AddWritePerm {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        Ok(AddWritePerm {
            name: read_header::<BrokerNameHeader>(cmd)?.broker_name,
        })
    }
}

impl FromFrame for PutKvConfig {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<PutKvConfigHeader>(cmd)?;
        Ok(PutKvConfig {
            namespace: h.namespace,
            key: h.key,
            value: h.value,
        })
    }
}

impl FromFrame for GetKvConfig {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<GetKvConfigHeader>(cmd)?;
        Ok(GetKvConfig {
            namespace: h.namespace,
            key: h.key,
        })
    }
}

impl FromFrame for DeleteKvConfig {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<DeleteKvConfigHeader>(cmd)?;
        Ok(DeleteKvConfig {
            namespace: h.namespace,
            key: h.key,
        })
    }
}

impl FromFrame for GetKvList {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        Ok(GetKvList {
            namespace: read_header::<GetKvListByNamespaceHeader>(cmd)?.namespace,
        })
    }
}

impl FromFrame for UnregisterBroker {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
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
}

impl FromFrame for BrokerHeartbeat {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<BrokerHeartbeatHeader>(cmd)?;
        Ok(BrokerHeartbeat {
            instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
        })
    }
}

impl FromFrame for QueryDataVersion {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<QueryDataVersionHeader>(cmd)?;
        Ok(QueryDataVersion {
            instance: BrokerInstance::new(h.cluster_name, h.broker_addr),
            version: json_body::<DataVersion>(cmd, "DataVersion")?,
        })
    }
}

impl FromFrame for GetBrokerMemberGroup {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<GetBrokerMemberGroupHeader>(cmd)?;
        Ok(GetBrokerMemberGroup {
            cluster: h.cluster_name,
            name: h.broker_name,
        })
    }
}

impl FromFrame for DeleteTopic {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
        let h = read_header::<DeleteTopicHeader>(cmd)?;
        Ok(DeleteTopic {
            topic: h.topic,
            cluster: h.cluster_name,
        })
    }
}

impl FromFrame for RegisterTopic {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
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
}

/// The topic-list codes (206, 224, 304, 311, 312, 313).
impl FromFrame for GetTopicList {
    fn read(cmd: &RemotingCommand) -> Decoded<Self> {
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
}

/// Cluster-test mode: a local route miss is looked up on the product environment's NameServer;
/// both are answered in legacy JSON, as Java 4.x's `ClusterTestRequestProcessor` does.
fn route_with_fallback(
    routes: &Addr<RouteRegistry>,
    product_env: &Recipient<LookupProductEnvRoute>,
    query: GetRouteInfo,
) -> impl Future<Output = Result<Result<Body, RouteError>, MailboxError>> + 'static {
    let local = routes.send(query);
    let product_env = product_env.clone();
    async move {
        let route = match local.await? {
            Ok(reply) => reply.route.to_data(),
            Err(RouteError::TopicNotExist(topic)) => {
                let asked = LookupProductEnvRoute {
                    topic: topic.clone(),
                };
                match product_env.send(asked).await? {
                    Some(route) => route,
                    None => return Ok(Err(RouteError::TopicNotExist(topic))),
                }
            }
            Err(err) => return Ok(Err(err)),
        };
        Ok(Ok(Body(to_json(&route, JsonStyle::Legacy).into())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_style_by_version_and_flag() {
        let style = |cmd: RemotingCommand| Ok::<_, ()>(RouteQuery::of(&cmd).style);
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
        let err = UnregisterBroker::read(&RemotingCommand::request(RequestCode::UNREGISTER_BROKER))
            .unwrap_err();
        assert_eq!(
            err.remark.as_deref(),
            Some("the custom field <brokerName> is null")
        );
        let bad_version = RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext("brokerAddr", "a")
            .with_ext("clusterName", "c")
            .with_body(&b"{not json"[..]);
        assert_eq!(QueryDataVersion::read(&bad_version).unwrap_err().code, 1);
        let bad_route = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
            .with_ext("topic", "t")
            .with_body(&b"[1,"[..]);
        assert_eq!(RegisterTopic::read(&bad_route).unwrap_err().code, 1);
    }

    #[test]
    fn topic_lists_by_code() {
        let kind = |code| {
            GetTopicList::read(&RemotingCommand::request(code).with_ext("cluster", "c"))
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
        assert_eq!(GetTopicList::read(&no_cluster).unwrap_err().code, 1);
    }

    #[test]
    fn each_port_has_one_row_per_code() {
        for rows in [NAMESRV, CONTROLLER] {
            for (i, row) in rows.iter().enumerate() {
                assert!(row.code.name().is_some(), "{:?} has no name", row.code);
                assert!(
                    rows[..i].iter().all(|earlier| earlier.code != row.code),
                    "{} twice",
                    row.name()
                );
            }
        }
        let controller_codes: Vec<_> = CONTROLLER.iter().map(|row| row.code).collect();
        assert_eq!(
            controller_codes.len(),
            rmq_protocol::controller::CONTROLLER_CODES.len()
        );
        assert!(rmq_protocol::controller::CONTROLLER_CODES
            .iter()
            .all(|code| controller_codes.contains(code)));
        assert!(lookup(Port::NameServer, RequestCode(424_242)).is_none());
        assert!(lookup(Port::NameServer, RequestCode::CONTROLLER_ELECT_MASTER).is_none());
        assert!(lookup(Port::Controller, RequestCode::GET_ROUTEINFO_BY_TOPIC).is_none());
    }

    /// docs/request-codes.md lists the rows: regenerate its tables with
    /// `RMQ_WRITE_DOCS=1 cargo test -p rmq-actors request_codes_doc`.
    #[test]
    fn request_codes_doc_lists_the_rows() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/request-codes.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let marker = "<!-- rows: generated from actors/src/dispatch.rs -->\n";
        let start = doc.find(marker).expect("the marker line") + marker.len();
        let expected = format!(
            "{}\n### The controller's port\n\n{}",
            rows_table(NAMESRV),
            rows_table(CONTROLLER)
        );
        if std::env::var_os("RMQ_WRITE_DOCS").is_some() {
            std::fs::write(path, format!("{}{expected}", &doc[..start])).unwrap();
            return;
        }
        assert_eq!(
            &doc[start..],
            expected,
            "docs/request-codes.md is not the rows (RMQ_WRITE_DOCS=1 rewrites it)"
        );
    }

    fn rows_table(rows: &[Row]) -> String {
        let mut table = String::from(
            "| Code | Request | Access class | Admission | Audited | Answered by |\n|---|---|---|---|---|---|\n",
        );
        for row in rows {
            let admission = row.admission.map_or("none", Class::name);
            let audit = match row.audit {
                Audit::No => "no".to_owned(),
                Audit::Fields(fields) => {
                    let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
                    format!("yes: {}", names.join(", "))
                }
                Audit::ConfigKeys => "yes: config_keys".to_owned(),
            };
            table.push_str(&format!(
                "| {} | {} | `{}` | {admission} | {audit} | {} |\n",
                row.code.0,
                row.name(),
                row.access.name(),
                row.owner
            ));
        }
        table
    }
}
