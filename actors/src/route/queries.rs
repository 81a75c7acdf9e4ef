//! Reads of the tables: routes (docs/route-rules.md#route-lookup), cluster info, member groups,
//! topic lists, counts.

use std::collections::BTreeSet;
use std::sync::Arc;

use rmq_protocol::body::{
    perm, sys_flag, to_json, BrokerMemberGroup, ClusterInfo, EncodedBrokerData, SharedClusterInfo,
    SharedQueueData, SharedRoute, TopicRouteData,
};
use rmq_protocol::fastjson::JsonStyle;
use serde::Serialize;

use super::ids::{BrokerId, BrokerInstance, BrokerName, MASTER_ID};
use super::tables::{BrokerGroup, LiveBroker, RouteTables, SYNC_BROKER_MEMBER_GROUP_PREFIX};
use super::topic_map::Queues;

/// A topic with its queues per broker group (the status page).
pub type TopicQueues = (String, Vec<(String, Queues)>);

impl RouteTables {
    /// Every topic name (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), as the body.
    pub fn all_topics(&self) -> Vec<u8> {
        topic_list_body(None, || self.topics.names())
    }

    /// Topics served by any group of `cluster` (GET_TOPICS_BY_CLUSTER); unknown → empty.
    pub fn topics_by_cluster(&self, cluster: &str) -> Vec<u8> {
        let Some(names) = self.clusters.get(cluster) else {
            return topic_list_body(None, std::iter::empty);
        };
        topic_list_body(None, || {
            self.topics
                .iter()
                .filter(|(_, queues)| queues.names().any(|n| names.contains(n)))
                .map(|(t, _)| t)
        })
    }

    /// Whether a cluster of this name has groups.
    pub fn has_cluster(&self, cluster: &str) -> bool {
        self.clusters.contains_key(cluster)
    }

    /// Cluster and group names plus one broker address (GET_SYSTEM_TOPIC_LIST_FROM_NS).
    pub fn system_topics(&self) -> Vec<u8> {
        let mut names = BTreeSet::new();
        for (cluster, groups) in &self.clusters {
            names.insert(cluster.as_str());
            names.extend(groups.iter().map(BrokerName::as_str));
        }
        let broker_addr = self
            .brokers
            .values()
            .find_map(|g| g.addrs.values().next())
            .map(|a| a.as_str());
        topic_list_body(broker_addr, || names.iter().copied())
    }

    /// Topics whose first QueueData's system flag passes `keep` (GET_UNIT_TOPIC_LIST & co).
    pub fn topics_by_sys_flag(&self, keep: impl Fn(i32) -> bool) -> Vec<u8> {
        topic_list_body(None, || {
            self.topics
                .iter()
                .filter(|(_, queues)| queues.first().is_some_and(|q| keep(q.sys_flag)))
                .map(|(t, _)| t)
        })
    }

    pub fn unit_topics(&self) -> Vec<u8> {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT != 0)
    }

    pub fn has_unit_sub_topics(&self) -> Vec<u8> {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT_SUB != 0)
    }

    pub fn has_unit_sub_ununit_topics(&self) -> Vec<u8> {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT == 0 && flag & sys_flag::UNIT_SUB != 0)
    }

    /// GET_BROKER_CLUSTER_INFO body, as a copy of every part.
    pub fn cluster_info(&self) -> ClusterInfo {
        self.shared_cluster_info().to_data()
    }

    /// GET_BROKER_CLUSTER_INFO as answered: every group's `BrokerData` the encoding its routes
    /// share, so that answering copies no group.
    pub fn shared_cluster_info(&self) -> SharedClusterInfo {
        SharedClusterInfo {
            brokers: self
                .brokers
                .iter()
                .map(|(name, g)| g.encoded.of(name, g))
                .collect(),
            clusters: self
                .clusters
                .iter()
                .map(|(c, names)| (c.shared(), names.iter().map(BrokerName::shared).collect()))
                .collect(),
        }
    }

    /// GET_BROKER_MEMBER_GROUP body: looked up by name only, as Java does.
    pub fn member_group(&self, cluster: &str, name: &str) -> BrokerMemberGroup {
        BrokerMemberGroup {
            broker_addrs: self
                .brokers
                .get(name)
                .map(|g| {
                    g.addrs
                        .iter()
                        .map(|(id, a)| (*id, a.as_str().to_owned()))
                        .collect()
                })
                .unwrap_or_default(),
            broker_name: Some(name.to_owned()),
            cluster: Some(cluster.to_owned()),
        }
    }

    /// A broker group by name.
    pub fn broker_group(&self, name: &str) -> Option<&BrokerGroup> {
        self.brokers.get(name)
    }

    /// Changes whenever a topic is made or removed (a cached list of all topics is then old).
    pub fn topic_names_version(&self) -> u64 {
        self.topics.names_version()
    }

    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    pub fn live_count(&self) -> usize {
        self.live.len()
    }

    /// Live broker instances per cluster.
    pub fn live_by_cluster(&self) -> std::collections::BTreeMap<String, usize> {
        let mut out = std::collections::BTreeMap::new();
        for instance in self.live.keys() {
            *out.entry(instance.cluster.as_str().to_owned()).or_insert(0) += 1;
        }
        out
    }

    /// Every live broker instance with its group name and id (if a group lists it), sorted.
    #[allow(clippy::type_complexity)]
    pub fn live_instances(
        &self,
    ) -> Vec<(BrokerInstance, Option<(BrokerName, BrokerId)>, LiveBroker)> {
        let mut all: Vec<_> = self
            .live
            .iter()
            .map(|(i, l)| {
                (
                    i.clone(),
                    self.resolve(i).map(|u| (u.name, u.id)),
                    l.clone(),
                )
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Topics whose name contains `filter` (case-insensitive; all when empty), sorted, at most
    /// `limit`, with their queues per broker group; and how many topics matched in all.
    pub fn topics_overview(&self, filter: &str, limit: usize) -> (Vec<TopicQueues>, usize) {
        let filter = filter.to_lowercase();
        let mut matched: Vec<&str> = self
            .topics
            .names()
            .filter(|t| filter.is_empty() || t.to_lowercase().contains(&filter))
            .collect();
        let total = matched.len();
        // The first `limit` in order, without sorting a million names to show a page of them.
        if limit < matched.len() {
            matched.select_nth_unstable(limit);
            matched.truncate(limit);
        }
        matched.sort_unstable();
        let shown = matched
            .into_iter()
            .take(limit)
            .filter_map(|t| {
                let queues = self
                    .topics
                    .get(t)?
                    .iter()
                    .map(|(name, q)| (name.as_str().to_owned(), *q))
                    .collect();
                Some((t.to_owned(), queues))
            })
            .collect();
        (shown, total)
    }

    pub fn broker_group_count(&self) -> usize {
        self.brokers.len()
    }

    pub fn cluster_count(&self) -> usize {
        self.clusters.len()
    }

    /// The route of a topic (docs/route-rules.md#route-lookup), or `None` if no queue with a known group exists.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        self.shared_route(topic).map(|route| route.to_data())
    }

    /// The route of a topic as [`Self::topic_route`], its groups' `BrokerData` shared with the
    /// routes of their other topics, each encoded once.
    pub fn shared_route(&self, topic: &str) -> Option<SharedRoute> {
        let queues = self.topics.get(topic)?;
        let mut route = SharedRoute {
            queue_datas: queues
                .iter()
                .map(|(name, q)| SharedQueueData {
                    broker_name: name.shared(),
                    perm: q.perm,
                    read_queue_nums: q.read,
                    topic_sys_flag: q.sys_flag,
                    write_queue_nums: q.write,
                })
                .collect(),
            ..SharedRoute::default()
        };
        for name in queues.names() {
            let Some(group) = self.brokers.get(name) else {
                continue;
            };
            route.broker_datas.push(group.encoded.of(name, group));
            if self.filter_servers.is_empty() {
                continue;
            }
            for addr in group.addrs.values() {
                let instance = BrokerInstance {
                    cluster: group.cluster.clone(),
                    addr: addr.clone(),
                };
                if let Some(list) = self.filter_servers.get(&instance) {
                    route
                        .filter_server_table
                        .insert(addr.as_str().to_owned(), list.clone());
                }
            }
        }
        if route.queue_datas.is_empty() || route.broker_datas.is_empty() {
            return None;
        }
        route.topic_queue_mapping_by_broker = self.mappings.get(topic).cloned();
        if self.options.support_acting_master && !topic.starts_with(SYNC_BROKER_MEMBER_GROUP_PREFIX)
        {
            rewrite_acting_masters(&mut route);
        }
        Some(route)
    }
}

/// docs/route-rules.md#route-lookup, step 6: in a master-less group with acting master enabled whose queue is read-only, the
/// lowest-id slave is shown as id 0 (in this route only: the group's shared encoding stays).
fn rewrite_acting_masters(route: &mut SharedRoute) {
    let needs = route.broker_datas.iter().any(|b| {
        let addrs = &b.data().broker_addrs;
        !addrs.is_empty() && !addrs.contains_key(&MASTER_ID)
    });
    if !needs {
        return;
    }
    for shared in &mut route.broker_datas {
        let broker = shared.data();
        if broker.broker_addrs.is_empty()
            || broker.broker_addrs.contains_key(&MASTER_ID)
            || !broker.enable_acting_master
        {
            continue;
        }
        let read_only = route
            .queue_datas
            .iter()
            .find(|q| *q.broker_name == *broker.broker_name)
            .is_some_and(|q| !perm::is_writeable(q.perm));
        if read_only {
            let mut acting = broker.clone();
            if let Some((_, addr)) = acting.broker_addrs.pop_first() {
                acting.broker_addrs.insert(MASTER_ID, addr);
            }
            *shared = Arc::new(EncodedBrokerData::new(acting));
        }
    }
}

/// Java's `ZoneRouteRPCHook` (docs/route-rules.md#zone-filtering): keep groups without a master or in `zone`
/// (case-insensitive); drop every other group with its queues and filter servers.
pub fn filter_by_zone(route: &mut TopicRouteData, zone: &str) {
    let mut dropped = Vec::new();
    route.broker_datas.retain(|b| {
        let keep = !b.broker_addrs.contains_key(&0)
            || b.zone_name
                .as_deref()
                .is_some_and(|z| z.eq_ignore_ascii_case(zone));
        if !keep {
            dropped.push(b.clone());
        }
        keep
    });
    for broker in &dropped {
        route
            .queue_datas
            .retain(|q| q.broker_name != broker.broker_name);
        for addr in broker.broker_addrs.values() {
            route.filter_server_table.remove(addr);
        }
    }
}

/// A topic-list body (Java's `TopicList`: `{"brokerAddr":..,"topicList":[..]}`) encoded as the
/// names are read from the tables, in their order there: the names are not copied first, so
/// a list of a million topics costs its body and nothing more.
fn topic_list_body<'a, I>(broker_addr: Option<&'a str>, names: impl Fn() -> I) -> Vec<u8>
where
    I: Iterator<Item = &'a str>,
{
    #[derive(Serialize)]
    struct View<'a, N> {
        #[serde(rename = "brokerAddr", skip_serializing_if = "Option::is_none")]
        broker_addr: Option<&'a str>,
        #[serde(rename = "topicList")]
        topic_list: N,
    }
    struct Names<F>(F);
    impl<'a, I, F> Serialize for Names<F>
    where
        I: Iterator<Item = &'a str>,
        F: Fn() -> I,
    {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serializer.collect_seq((self.0)())
        }
    }
    to_json(
        &View {
            broker_addr,
            topic_list: Names(names),
        },
        JsonStyle::Legacy,
    )
}
