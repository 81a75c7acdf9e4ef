//! One NameServer's view of the fleet's state, asked on one connection: what
//! [`super::compare`] compares.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};

use rmq_protocol::body::{ClusterInfo, DataVersion, KvTable, QueueData, TopicList, TopicRouteData};
use rmq_protocol::custom_headers::{
    CommandHeader, GetKvListByNamespaceHeader, GetRouteInfoHeader, QueryDataVersionHeader,
};
use rmq_protocol::{properties, RemotingCommand, RequestCode, ResponseCode};

use super::{FleetOptions, Reach};
use crate::client::Client;
use crate::outcome::{decode_body, Cause};

/// A broker instance as cluster info names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BrokerInstance {
    pub cluster: String,
    pub name: String,
    pub id: i64,
    pub addr: String,
}

impl std::fmt::Display for BrokerInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cluster {} broker {} id {} addr {}",
            self.cluster, self.name, self.id, self.addr
        )
    }
}

/// What one NameServer knows. Topics are kept as a sorted list of (topic, digest of its queue
/// data): a few dozen bytes per topic, however large the routes.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    pub brokers: BTreeSet<BrokerInstance>,
    pub topics: Vec<(String, u64)>,
    pub kv: BTreeMap<String, BTreeMap<String, String>>,
    pub config: BTreeMap<String, String>,
    /// With [`FleetOptions::data_versions`] only.
    pub versions: BTreeMap<BrokerInstance, DataVersion>,
}

/// A request's outcome: the response when SUCCESS, else a [`Cause`].
async fn ask(
    client: &mut Client,
    reach: &Reach,
    mut request: RemotingCommand,
) -> Result<RemotingCommand, Cause> {
    reach.sign(&mut request)?;
    let resp = client
        .request(request)
        .await
        .map_err(|e| Cause::from_client(&e))?;
    match Cause::of_response(&resp) {
        Some(cause) => Err(cause),
        None => Ok(resp),
    }
}

/// Asks one NameServer everything the comparison needs, on `client`.
pub(super) async fn survey(
    client: &mut Client,
    reach: &Reach,
    options: &FleetOptions,
) -> Result<Survey, Cause> {
    let mut survey = Survey::default();
    let info: ClusterInfo = decode_body(
        &ask(
            client,
            reach,
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO),
        )
        .await?,
    )?;
    survey.brokers = instances(&info);
    let list: TopicList = decode_body(
        &ask(
            client,
            reach,
            RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        )
        .await?,
    )?;
    let topics: Vec<String> = list.topic_list.into_iter().collect();
    survey.topics = route_digests(client, reach, topics, options.window).await?;
    for namespace in &options.namespaces {
        survey.kv.insert(
            namespace.clone(),
            kv_namespace(client, reach, namespace).await?,
        );
    }
    let resp = ask(
        client,
        reach,
        RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG),
    )
    .await?;
    survey.config = properties::parse(&String::from_utf8_lossy(resp.body_bytes()))
        .map_err(|e| Cause::BadResponse(format!("bad configuration body: {e}")))?;
    if options.data_versions {
        survey.versions = data_versions(client, reach, &survey.brokers, options.window).await?;
    }
    Ok(survey)
}

/// Every broker instance of cluster info: (cluster, name, id, address).
fn instances(info: &ClusterInfo) -> BTreeSet<BrokerInstance> {
    let mut out = BTreeSet::new();
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                out.insert(BrokerInstance {
                    cluster: cluster.clone(),
                    name: name.clone(),
                    id: *id,
                    addr: addr.clone(),
                });
            }
        }
    }
    out
}

/// GET_ROUTEINFO_BY_TOPIC for every topic, pipelined (`window` in flight), each route reduced
/// to a digest of its queue data at once; sorted by topic. A topic gone between the list and
/// its route (TOPIC_NOT_EXIST) is left out.
async fn route_digests(
    client: &mut Client,
    reach: &Reach,
    topics: Vec<String>,
    window: usize,
) -> Result<Vec<(String, u64)>, Cause> {
    let mut digests: Vec<Option<u64>> = vec![None; topics.len()];
    let mut failure: Option<Cause> = None;
    // Built as they are sent, never all at once. Signing depends on the credentials only: once
    // it works for the first request, it works for every one.
    if let Some(first) = topics.first() {
        route_request(reach, first)?;
    }
    let requests = topics.iter().map(|topic| {
        let mut request = route_command(topic);
        // An unsigned request (cannot be, see above) would be refused and reported.
        let _ = reach.sign(&mut request);
        request
    });
    client
        .pipeline(requests, window, |index, resp| {
            if resp.response_code() == ResponseCode::TOPIC_NOT_EXIST {
                return;
            }
            match Cause::of_response(&resp)
                .map_or_else(|| decode_body::<TopicRouteData>(&resp), Err)
            {
                Ok(route) => digests[index] = Some(queue_digest(&route.queue_datas)),
                Err(cause) => {
                    failure.get_or_insert(cause);
                }
            }
        })
        .await
        .map_err(|e| Cause::from_client(&e))?;
    if let Some(cause) = failure {
        return Err(cause);
    }
    let mut out: Vec<(String, u64)> = topics
        .into_iter()
        .zip(digests)
        .filter_map(|(topic, digest)| digest.map(|d| (topic, d)))
        .collect();
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// A signed GET_ROUTEINFO_BY_TOPIC request.
pub(super) fn route_request(reach: &Reach, topic: &str) -> Result<RemotingCommand, Cause> {
    let mut request = route_command(topic);
    reach.sign(&mut request)?;
    Ok(request)
}

fn route_command(topic: &str) -> RemotingCommand {
    let header = GetRouteInfoHeader {
        topic: Some(topic.to_owned()),
        ..GetRouteInfoHeader::default()
    };
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext_fields(header.to_ext())
}

/// The queue data of a route, in broker-name order, as one number.
fn queue_digest(queues: &[QueueData]) -> u64 {
    let mut sorted: Vec<&QueueData> = queues.iter().collect();
    sorted.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for q in sorted {
        (
            &q.broker_name,
            q.read_queue_nums,
            q.write_queue_nums,
            q.perm,
            q.topic_sys_flag,
        )
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// GET_KVLIST_BY_NAMESPACE: the namespace's entries (none: QUERY_NOT_FOUND).
async fn kv_namespace(
    client: &mut Client,
    reach: &Reach,
    namespace: &str,
) -> Result<BTreeMap<String, String>, Cause> {
    let header = GetKvListByNamespaceHeader {
        namespace: Some(namespace.to_owned()),
    };
    let request = RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
        .with_ext_fields(header.to_ext());
    match ask(client, reach, request).await {
        Ok(resp) => Ok(decode_body::<KvTable>(&resp)?.table.into_iter().collect()),
        Err(Cause::Answered { code, .. }) if code == ResponseCode::QUERY_NOT_FOUND.0 => {
            Ok(BTreeMap::new())
        }
        Err(cause) => Err(cause),
    }
}

/// QUERY_DATA_VERSION for every broker instance: the version the NameServer stores. Not a pure
/// read (the NameServer refreshes the broker's liveness, as Java does), hence opt-in.
async fn data_versions(
    client: &mut Client,
    reach: &Reach,
    brokers: &BTreeSet<BrokerInstance>,
    window: usize,
) -> Result<BTreeMap<BrokerInstance, DataVersion>, Cause> {
    let list: Vec<&BrokerInstance> = brokers.iter().collect();
    let mut requests = Vec::with_capacity(list.len());
    for broker in &list {
        let header = QueryDataVersionHeader {
            broker_name: Some(broker.name.clone()),
            broker_addr: broker.addr.clone(),
            cluster_name: broker.cluster.clone(),
            broker_id: Some(broker.id),
        };
        let body = rmq_protocol::body::to_json(
            &DataVersion::default(),
            rmq_protocol::fastjson::JsonStyle::Legacy,
        );
        let mut request = RemotingCommand::request(RequestCode::QUERY_DATA_VERSION)
            .with_ext_fields(header.to_ext())
            .with_body(body);
        reach.sign(&mut request)?;
        requests.push(request);
    }
    let mut out = BTreeMap::new();
    client
        .pipeline(requests, window, |index, resp| {
            if resp.response_code() != ResponseCode::SUCCESS || resp.body_bytes().is_empty() {
                return;
            }
            if let Ok(version) = decode_body::<DataVersion>(&resp) {
                out.insert(list[index].clone(), version);
            }
        })
        .await
        .map_err(|e| Cause::from_client(&e))?;
    Ok(out)
}
