//! The fleet check: what differs between NameServers that should agree. NameServers never talk
//! to each other, so a broker that cannot reach one of them (a partition, a firewall, an access
//! policy) is missing there only. [`check`] asks every NameServer of a list, with plain
//! protocol reads, for:
//!
//! - cluster info (GET_BROKER_CLUSTER_INFO): the broker instances (cluster, name, id, address);
//! - the topic list (GET_ALL_TOPIC_LIST_FROM_NAMESERVER) and every topic's route
//!   (GET_ROUTEINFO_BY_TOPIC), pipelined on the connection ([`FleetOptions::window`] in flight),
//!   each route reduced at once to a digest of its queue data, so that memory stays a few dozen
//!   bytes per topic; the routes of topics whose digests differ (at most [`FINDINGS_SHOWN`]) are
//!   asked again for the details;
//! - the KV entries of the namespaces given (GET_KVLIST_BY_NAMESPACE; the protocol cannot list
//!   namespaces, Java's NameServer included);
//! - the configuration (GET_NAMESRV_CONFIG), but the keys that differ per server by nature
//!   ([`PER_SERVER_KEYS`]) and those given; a key only some servers have is left out (it is a
//!   difference of implementation or version);
//! - with [`FleetOptions::data_versions`], the data version each NameServer stores of each
//!   broker (QUERY_DATA_VERSION). No pure read gives it: the NameServer refreshes the broker's
//!   liveness on that request (Java's does too), so a dead broker would live one expiry period
//!   longer. Off by default, and never used by the server's own periodic check.
//!
//! and compares them ([`DriftKind`]). Shared by `rmq-namesrv admin fleetCheck` and the server's
//! periodic check (`[fleet]`).

mod compare;
mod survey;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_protocol::body::TopicRouteData;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rustls::ClientConfig;

use crate::client::Client;
use crate::credentials::Credentials;
use crate::outcome::{decode_body, AdminError, Cause, Peer};
pub use survey::{BrokerInstance, Survey};

/// Findings of each kind kept (and printed) at most; the counts are complete.
pub const FINDINGS_SHOWN: usize = 100;

/// Route requests in flight on each connection by default.
pub const DEFAULT_WINDOW: usize = 256;

/// Configuration keys that differ per server by nature: where it listens, its files, its id.
pub const PER_SERVER_KEYS: &[&str] = &[
    "listenPort",
    "bindAddress",
    "rocketmqHome",
    "kvConfigPath",
    "configStorePath",
    "controllerStorePath",
    "controllerConfigStorePath",
    "controllerDLegerSelfId",
    "jRaftServerId",
];

/// What kind of thing differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DriftKind {
    /// A broker instance registered with some NameServers and not others.
    Broker,
    /// A topic known to some and not others.
    Topic,
    /// A topic whose queue data differs (counted per topic).
    Queue,
    /// A broker whose stored data version differs.
    DataVersion,
    /// A KV entry that differs or is missing.
    Kv,
    /// A configuration key whose value differs.
    Config,
}

impl DriftKind {
    pub const ALL: [DriftKind; 6] = [
        Self::Broker,
        Self::Topic,
        Self::Queue,
        Self::DataVersion,
        Self::Kv,
        Self::Config,
    ];

    /// Its name in JSON and in the `kind` label of the metric.
    pub fn label(self) -> &'static str {
        match self {
            Self::Broker => "broker",
            Self::Topic => "topic",
            Self::Queue => "queue",
            Self::DataVersion => "data_version",
            Self::Kv => "kv",
            Self::Config => "config",
        }
    }
}

/// One difference: what (`subject`) and each NameServer's value, in the order of
/// [`FleetView::servers`] (`None`: it has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub kind: DriftKind,
    pub subject: String,
    pub values: Vec<Option<String>>,
}

/// How to reach the NameServers.
#[derive(Clone, Default)]
pub struct Reach {
    /// Bounds connecting and each response.
    pub timeout: Duration,
    pub tls: Option<Arc<ClientConfig>>,
    /// Requests are signed with these, when given.
    pub credentials: Option<Credentials>,
}

impl Reach {
    fn sign(&self, request: &mut RemotingCommand) -> Result<(), Cause> {
        match &self.credentials {
            Some(credentials) => credentials
                .sign(request)
                .map_err(|e| Cause::Unreachable(format!("request not sent: cannot sign it: {e}"))),
            None => Ok(()),
        }
    }
}

/// What to compare.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    /// KV namespaces compared.
    pub namespaces: Vec<String>,
    /// Configuration keys not compared, beyond [`PER_SERVER_KEYS`].
    pub ignored_keys: Vec<String>,
    /// Also compare brokers' data versions (QUERY_DATA_VERSION; see the module docs).
    pub data_versions: bool,
    /// Route requests in flight on each connection.
    pub window: usize,
}

impl Default for FleetOptions {
    fn default() -> Self {
        Self {
            namespaces: vec!["ORDER_TOPIC_CONFIG".to_owned()],
            ignored_keys: Vec::new(),
            data_versions: false,
            window: DEFAULT_WINDOW,
        }
    }
}

/// The outcome of a check.
#[derive(Debug, Clone, Default)]
pub struct FleetView {
    /// The NameServers compared (those that could be asked), in the order given.
    pub servers: Vec<String>,
    /// Those that could not be asked.
    pub failures: Vec<AdminError>,
    /// Differences per kind (every kind present).
    pub counts: BTreeMap<DriftKind, u64>,
    /// At most [`FINDINGS_SHOWN`] findings of each kind.
    pub findings: Vec<Finding>,
    /// Topics known to any NameServer compared.
    pub topics: u64,
    pub elapsed: Duration,
}

impl FleetView {
    /// True when every NameServer was asked and none differs.
    pub fn agrees(&self) -> bool {
        self.failures.is_empty() && self.drift() == 0
    }

    /// The number of differences, all kinds together.
    pub fn drift(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The findings as JSON, each `{"kind","subject","values":{ADDR:VALUE|null}}` (fleetCheck's
    /// `--json` and the status page's fleet section).
    pub fn findings_json(&self) -> Vec<serde_json::Value> {
        self.findings
            .iter()
            .map(|f| {
                let values: serde_json::Map<String, serde_json::Value> = self
                    .servers
                    .iter()
                    .zip(&f.values)
                    .map(|(addr, v)| (addr.clone(), serde_json::json!(v)))
                    .collect();
                serde_json::json!({ "kind": f.kind.label(), "subject": f.subject, "values": values })
            })
            .collect()
    }
}

/// Asks every NameServer of `addrs` (concurrently, one connection each) and compares those
/// that answered.
pub async fn check(addrs: &[String], reach: &Reach, options: &FleetOptions) -> FleetView {
    let started = Instant::now();
    let asks = addrs.iter().map(|addr| async move {
        let mut client = Client::connect_with(addr, reach.timeout, reach.tls.as_ref())
            .await
            .map_err(|e| Cause::from_client(&e))?;
        let survey = survey::survey(&mut client, reach, options).await?;
        Ok::<_, Cause>((client, survey))
    });
    let outcomes = futures_util::future::join_all(asks).await;
    let mut view = FleetView::default();
    let mut clients = Vec::new();
    let mut surveys = Vec::new();
    for (addr, outcome) in addrs.iter().zip(outcomes) {
        match outcome {
            Ok((client, survey)) => {
                view.servers.push(addr.clone());
                clients.push(client);
                surveys.push(survey);
            }
            Err(cause) => view.failures.push(AdminError {
                peer: Peer::NameServer,
                addr: addr.clone(),
                cause,
            }),
        }
    }
    let mut ignored: BTreeSet<String> = PER_SERVER_KEYS.iter().map(|k| (*k).to_owned()).collect();
    ignored.extend(options.ignored_keys.iter().cloned());
    let compared = compare::compare(&surveys, &ignored);
    drop(surveys);
    view.counts = compared.counts;
    view.findings = compared.findings;
    view.topics = compared.topics;
    if !compared.queue_topics.is_empty() {
        let details = queue_details(&mut clients, reach, &compared.queue_topics, options).await;
        *view.counts.entry(DriftKind::Queue).or_insert(0) += compared.queue_topics.len() as u64;
        view.findings.extend(details);
    }
    view.findings.sort_by_key(|f| f.kind);
    view.elapsed = started.elapsed();
    view
}

/// The routes of `topics` from every NameServer again, compared queue by queue.
async fn queue_details(
    clients: &mut [Client],
    reach: &Reach,
    topics: &[String],
    options: &FleetOptions,
) -> Vec<Finding> {
    let asks = clients.iter_mut().map(|client| async move {
        let requests = topics
            .iter()
            .map(|topic| survey::route_request(reach, topic))
            .collect::<Result<Vec<_>, Cause>>()
            .ok()?;
        let mut routes = vec![None; topics.len()];
        client
            .pipeline(requests, options.window, |index, resp| {
                if resp.response_code() == ResponseCode::SUCCESS {
                    routes[index] = decode_body::<TopicRouteData>(&resp)
                        .ok()
                        .map(|route| route.queue_datas);
                }
            })
            .await
            .ok()?;
        Some(routes)
    });
    let per_server = futures_util::future::join_all(asks).await;
    let mut findings = Vec::new();
    for (index, topic) in topics.iter().enumerate() {
        let routes: Vec<_> = per_server
            .iter()
            .map(|routes| routes.as_ref().and_then(|r| r[index].clone()))
            .collect();
        findings.extend(compare::queue_findings(topic, &routes));
    }
    findings
}
