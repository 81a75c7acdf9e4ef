//! `status`: the summary of the HTTP status page, from the remoting port alone, so it works
//! against any NameServer (ours or Java's, with or without an HTTP port). Every NameServer of
//! `-n` is asked on one connection of its own, concurrently, and reported in its own block:
//!
//! - GET_BROKER_CLUSTER_INFO: clusters, broker groups, each broker's id, role and address;
//! - GET_ALL_TOPIC_LIST_FROM_NAMESERVER: the topic count;
//! - GET_TOPICS_BY_CLUSTER for each cluster: its topic count;
//! - GET_KVLIST_BY_NAMESPACE for each `-s` namespace (ORDER_TOPIC_CONFIG by default; the protocol
//!   cannot list namespaces): its entries;
//! - GET_NAMESRV_CONFIG: the configuration;
//! - with `-t FILTER`, GET_ROUTEINFO_BY_TOPIC for each topic whose name contains FILTER
//!   (case-insensitive, at most [`TOPICS_SHOWN`]): its queues and permission per broker group.
//!
//! What the remoting protocol does not carry (heartbeat ages, expiry countdowns, brokers' RocketMQ
//! and data versions, connections, request counters) is on the HTTP page only. Cluster info and
//! the topic list are required; an error answer to any other request leaves its part out (`null`
//! in `--json`) with a note, as Java's ACL or a disabled `enableTopicList` may refuse them.

use std::collections::BTreeMap;

use rmq_protocol::body::{perm, ClusterInfo, KvTable, TopicList, TopicRouteData};
use rmq_protocol::custom_headers::{
    CommandHeader, GetKvListByNamespaceHeader, GetRouteInfoHeader, GetTopicsByClusterHeader,
};
use rmq_protocol::{properties, RemotingCommand, RequestCode, ResponseCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::format::table;
use super::report::{decode_body, Answer, Cause, Report};
use crate::client::Client;

/// Topics whose routes `-t` asks for at most.
pub const TOPICS_SHOWN: usize = 100;

/// Configuration keys shown in the text summary, when the NameServer has them (`--json` has all).
const NOTABLE_KEYS: &[&str] = &[
    "listenPort",
    "orderMessageEnable",
    "clusterTest",
    "supportActingMaster",
    "enableTopicList",
    "enableAllTopicList",
    "scanNotActiveBrokerInterval",
    "needWaitForService",
    "waitSecondsForService",
];

/// What `status` asks beyond the fixed requests.
#[derive(Debug, Clone)]
pub(super) struct StatusOptions<'a> {
    pub(super) namespaces: &'a [String],
    pub(super) topic_filter: Option<&'a str>,
}

/// `status [-s NAMESPACE]... [-t FILTER]`: one summary per NameServer.
pub(super) async fn status(ask: &Ask<'_>, options: &StatusOptions<'_>) -> Report {
    ask.each_session(
        |addr, client| survey(addr, client, options),
        |addr| format!("status of name server[{addr}]"),
    )
    .await
}

/// One request; a non-success answer is a [`Cause::Answered`].
async fn request(client: &mut Client, request: RemotingCommand) -> Result<RemotingCommand, Cause> {
    let resp = client
        .request(request)
        .await
        .map_err(|e| Cause::from_client(&e))?;
    match Cause::of_response(&resp) {
        Some(cause) => Err(cause),
        None => Ok(resp),
    }
}

/// An optional part: `Ok(None)` (with a note) when the NameServer answered it with an error;
/// a lost connection still fails the whole summary.
fn optional<T>(
    outcome: Result<T, Cause>,
    what: &str,
    notes: &mut Vec<String>,
) -> Result<Option<T>, Cause> {
    match outcome {
        Ok(value) => Ok(Some(value)),
        Err(cause @ Cause::Unreachable(_)) => Err(cause),
        Err(cause) => {
            notes.push(format!("{what}: {cause}"));
            Ok(None)
        }
    }
}

/// Asks one NameServer every part of the summary, in order, on one connection.
async fn survey(
    addr: String,
    mut client: Client,
    options: &StatusOptions<'_>,
) -> Result<Answer, Cause> {
    let mut notes = Vec::new();
    let info: ClusterInfo = decode_body(
        &request(
            &mut client,
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO),
        )
        .await?,
    )?;
    let topics: TopicList = decode_body(
        &request(
            &mut client,
            RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        )
        .await?,
    )?;
    let cluster_topics = cluster_topic_counts(&mut client, &info, &mut notes).await?;
    let kv = kv_namespaces(&mut client, options.namespaces, &mut notes).await?;
    let config = configuration(&mut client, &mut notes).await?;
    let (routes, matched) = match options.topic_filter {
        Some(filter) => matching_routes(&mut client, &topics, filter, &mut notes).await?,
        None => (Vec::new(), 0),
    };

    let summary = Summary {
        info: &info,
        topics: topics.topic_list.len(),
        cluster_topics: &cluster_topics,
        kv: &kv,
        config: config.as_ref(),
        filter: options.topic_filter,
        matched,
        routes: &routes,
        notes: &notes,
    };
    Ok(Answer {
        text: summary.text(&addr),
        json: summary.json(),
    })
}

/// GET_TOPICS_BY_CLUSTER for each cluster: its topic count (`None`: refused, with a note).
async fn cluster_topic_counts<'a>(
    client: &mut Client,
    info: &'a ClusterInfo,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'a str, Option<usize>>, Cause> {
    let mut cluster_topics: BTreeMap<&str, Option<usize>> = BTreeMap::new();
    for cluster in info.cluster_addr_table.keys() {
        let header = GetTopicsByClusterHeader {
            cluster: cluster.clone(),
        };
        let asked = request(
            client,
            RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER)
                .with_ext_fields(header.to_ext()),
        )
        .await
        .and_then(|resp| decode_body::<TopicList>(&resp));
        let count = optional(asked, &format!("topics of cluster {cluster}"), notes)?
            .map(|list| list.topic_list.len());
        cluster_topics.insert(cluster, count);
    }
    Ok(cluster_topics)
}

/// A namespace's entries (`None`: refused, with a note).
type Namespace<'a> = (&'a str, Option<BTreeMap<String, String>>);

/// GET_KVLIST_BY_NAMESPACE for each namespace asked for.
async fn kv_namespaces<'a>(
    client: &mut Client,
    namespaces: &'a [String],
    notes: &mut Vec<String>,
) -> Result<Vec<Namespace<'a>>, Cause> {
    let mut kv = Vec::new();
    for namespace in namespaces {
        let header = GetKvListByNamespaceHeader {
            namespace: Some(namespace.clone()),
        };
        let asked = request(
            client,
            RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
                .with_ext_fields(header.to_ext()),
        )
        .await;
        let table = match asked {
            // An empty namespace is "not found" on the wire.
            Err(Cause::Answered { code, .. }) if code == ResponseCode::QUERY_NOT_FOUND.0 => {
                Some(BTreeMap::new())
            }
            other => optional(
                other.and_then(|resp| decode_body::<KvTable>(&resp)),
                &format!("KV namespace {namespace}"),
                notes,
            )?
            .map(|kv| kv.table),
        };
        kv.push((namespace.as_str(), table));
    }
    Ok(kv)
}

/// GET_NAMESRV_CONFIG (`None`: refused, with a note).
async fn configuration(
    client: &mut Client,
    notes: &mut Vec<String>,
) -> Result<Option<BTreeMap<String, String>>, Cause> {
    optional(
        request(
            client,
            RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG),
        )
        .await
        .and_then(|resp| {
            properties::parse(&String::from_utf8_lossy(resp.body_bytes()))
                .map_err(|e| Cause::BadResponse(format!("bad properties body: {e}")))
        }),
        "configuration",
        notes,
    )
}

/// GET_ROUTEINFO_BY_TOPIC for each topic whose name contains `filter` (case-insensitive), at
/// most [`TOPICS_SHOWN`]: the routes, and how many topics matched.
async fn matching_routes<'a>(
    client: &mut Client,
    topics: &'a TopicList,
    filter: &str,
    notes: &mut Vec<String>,
) -> Result<(Vec<(&'a str, TopicRouteData)>, usize), Cause> {
    let mut routes = Vec::new();
    let mut matched = 0;
    let needle = filter.to_lowercase();
    let wanted = topics
        .topic_list
        .iter()
        .filter(|t| t.to_lowercase().contains(&needle));
    for topic in wanted {
        matched += 1;
        if routes.len() >= TOPICS_SHOWN {
            continue;
        }
        let header = GetRouteInfoHeader {
            topic: Some(topic.clone()),
            ..GetRouteInfoHeader::default()
        };
        let asked = request(
            client,
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
                .with_ext_fields(header.to_ext()),
        )
        .await
        .and_then(|resp| decode_body::<TopicRouteData>(&resp));
        // A topic may lose its last broker between the list and the route.
        if let Some(route) = optional(asked, &format!("route of {topic}"), notes)? {
            routes.push((topic.as_str(), route));
        }
    }
    Ok((routes, matched))
}

/// One NameServer's answers, gathered.
struct Summary<'a> {
    info: &'a ClusterInfo,
    topics: usize,
    cluster_topics: &'a BTreeMap<&'a str, Option<usize>>,
    kv: &'a [Namespace<'a>],
    config: Option<&'a BTreeMap<String, String>>,
    filter: Option<&'a str>,
    matched: usize,
    routes: &'a [(&'a str, TopicRouteData)],
    notes: &'a [String],
}

/// The configuration's size and its notable keys.
fn push_config(out: &mut String, config: &BTreeMap<String, String>) {
    let rows: Vec<Vec<String>> = NOTABLE_KEYS
        .iter()
        .filter_map(|k| config.get(*k).map(|v| vec![(*k).to_owned(), v.clone()]))
        .collect();
    out.push_str(&format!("\nconfiguration: {} keys\n", config.len()));
    if !rows.is_empty() {
        out.push_str(&table(&["#Key", "#Value"], &rows));
    }
}

/// "1 topic", "2 topics".
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A broker id's role: 0 is the master, any other id a slave.
fn role(id: i64) -> &'static str {
    if id == 0 {
        "master"
    } else {
        "slave"
    }
}

impl Summary<'_> {
    /// (cluster, group, id, address) of every broker, sorted; a group name without its
    /// BrokerData is skipped, as mqadmin does.
    fn brokers(&self) -> Vec<(&str, &str, i64, &str)> {
        let mut brokers = Vec::new();
        for (cluster, groups) in &self.info.cluster_addr_table {
            for group in groups {
                let Some(data) = self.info.broker_addr_table.get(group) else {
                    continue;
                };
                for (id, addr) in &data.broker_addrs {
                    brokers.push((cluster.as_str(), group.as_str(), *id, addr.as_str()));
                }
            }
        }
        brokers
    }

    fn counts(&self) -> (usize, usize, usize, usize) {
        let brokers = self.brokers();
        let masters = brokers.iter().filter(|b| b.2 == 0).count();
        let groups: std::collections::BTreeSet<&str> = brokers.iter().map(|b| b.1).collect();
        (
            groups.len(),
            brokers.len(),
            masters,
            brokers.len() - masters,
        )
    }

    fn text(&self, addr: &str) -> String {
        let mut out = format!("============{addr}============\n");
        self.push_counts(&mut out);
        self.push_brokers(&mut out);
        self.push_clusters(&mut out);
        if let Some(filter) = self.filter {
            self.push_routes(&mut out, filter);
        }
        self.push_kv(&mut out);
        if let Some(config) = self.config {
            push_config(&mut out, config);
        }
        for note in self.notes {
            out.push_str(&format!("note: not shown: {note}\n"));
        }
        out
    }

    /// The line of counts: clusters, broker groups, brokers by role, topics.
    fn push_counts(&self, out: &mut String) {
        let (groups, brokers, masters, slaves) = self.counts();
        out.push_str(&format!(
            "{}, {}, {} ({}, {}), {}\n",
            count(self.info.cluster_addr_table.len(), "cluster"),
            count(groups, "broker group"),
            count(brokers, "broker"),
            count(masters, "master"),
            count(slaves, "slave"),
            count(self.topics, "topic"),
        ));
    }

    /// Every broker: cluster, group, id, role and address.
    fn push_brokers(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .brokers()
            .into_iter()
            .map(|(cluster, group, id, addr)| {
                vec![
                    cluster.to_owned(),
                    group.to_owned(),
                    id.to_string(),
                    role(id).to_owned(),
                    addr.to_owned(),
                ]
            })
            .collect();
        if !rows.is_empty() {
            out.push('\n');
            out.push_str(&table(
                &["#Cluster", "#Broker Group", "#BID", "#Role", "#Addr"],
                &rows,
            ));
        }
    }

    /// Each cluster's broker groups and topics.
    fn push_clusters(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .cluster_topics
            .iter()
            .map(|(cluster, topics)| {
                let groups = self
                    .info
                    .cluster_addr_table
                    .get(*cluster)
                    .map_or(0, |g| g.len());
                vec![
                    (*cluster).to_owned(),
                    groups.to_string(),
                    topics.map_or_else(|| "?".to_owned(), |n| n.to_string()),
                ]
            })
            .collect();
        if !rows.is_empty() {
            out.push('\n');
            out.push_str(&table(&["#Cluster", "#Broker Groups", "#Topics"], &rows));
        }
    }

    /// The queues of the topics matching `filter`.
    fn push_routes(&self, out: &mut String, filter: &str) {
        out.push_str(&format!(
            "\ntopics containing {filter:?}: {} matching, {} shown\n",
            self.matched,
            self.routes.len()
        ));
        let rows: Vec<Vec<String>> = self
            .routes
            .iter()
            .flat_map(|(topic, route)| {
                route.queue_datas.iter().map(move |q| {
                    vec![
                        (*topic).to_owned(),
                        q.broker_name.clone(),
                        q.read_queue_nums.to_string(),
                        q.write_queue_nums.to_string(),
                        format!("{} ({})", perm::text(q.perm), q.perm),
                    ]
                })
            })
            .collect();
        out.push_str(&table(
            &["#Topic", "#Broker Group", "#Read", "#Write", "#Perm"],
            &rows,
        ));
    }

    /// The KV namespaces asked for, with their entries.
    fn push_kv(&self, out: &mut String) {
        let rows: Vec<Vec<String>> = self
            .kv
            .iter()
            .flat_map(|(namespace, table)| {
                table
                    .iter()
                    .flatten()
                    .map(move |(k, v)| vec![(*namespace).to_owned(), k.clone(), v.clone()])
            })
            .collect();
        let namespaces: Vec<String> = self
            .kv
            .iter()
            .map(|(ns, table)| match table {
                Some(table) => format!("{ns} ({})", count(table.len(), "key")),
                None => format!("{ns} (?)"),
            })
            .collect();
        out.push_str(&format!("\nKV namespaces: {}\n", namespaces.join(", ")));
        if !rows.is_empty() {
            out.push_str(&table(&["#Namespace", "#Key", "#Value"], &rows));
        }
    }

    fn json(&self) -> Value {
        let (groups, brokers, masters, slaves) = self.counts();
        let clusters: Vec<Value> = self
            .info
            .cluster_addr_table
            .iter()
            .map(|(cluster, names)| {
                let groups: Vec<Value> = names
                    .iter()
                    .filter_map(|name| self.info.broker_addr_table.get(name))
                    .map(|data| {
                        json!({
                            "name": data.broker_name,
                            "zone": data.zone_name,
                            "enable_acting_master": data.enable_acting_master,
                            "brokers": data.broker_addrs.iter().map(|(id, addr)| json!({
                                "id": id,
                                "role": role(*id),
                                "address": addr,
                            })).collect::<Vec<_>>(),
                        })
                    })
                    .collect();
                json!({
                    "cluster": cluster,
                    "topics": self.cluster_topics.get(cluster.as_str()).copied().flatten(),
                    "groups": groups,
                })
            })
            .collect();
        let topics = self.filter.map(|filter| {
            json!({
                "filter": filter,
                "matched": self.matched,
                "shown": self.routes.iter().map(|(topic, route)| json!({
                    "topic": topic,
                    "queues": route.queue_datas.iter().map(|q| json!({
                        "broker": q.broker_name,
                        "read": q.read_queue_nums,
                        "write": q.write_queue_nums,
                        "perm": q.perm,
                        "perm_text": perm::text(q.perm),
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        });
        json!({
            "counters": {
                "clusters": self.info.cluster_addr_table.len(),
                "broker_groups": groups,
                "brokers": brokers,
                "masters": masters,
                "slaves": slaves,
                "topics": self.topics,
            },
            "clusters": clusters,
            "topics": topics,
            "kv": self.kv.iter().map(|(namespace, table)| json!({
                "namespace": namespace,
                "entries": table,
            })).collect::<Vec<_>>(),
            "config": self.config,
            "notes": self.notes,
        })
    }
}
