//! A topic's route put together from shared parts: each broker group's `BrokerData` encoded once
//! (in both JSON styles) and shared by the routes of all its topics, and queue entries naming
//! their group by a shared name. With 1,000 groups a route is 177 KB; encoding it from its
//! parts copies the groups' encodings instead of building and encoding 1,000 `BrokerData`s per
//! topic. The bytes are exactly those of the [`TopicRouteData`] it stands for (tests below).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::json::to_json;
use super::route::{BrokerData, ClusterInfo, QueueData, TopicRouteData};
use super::topic_config::TopicQueueMappingInfo;
use crate::fastjson::{self, JsonStyle};

/// A broker group's `BrokerData` and its encodings in both styles, immutable once made.
#[derive(Debug)]
pub struct EncodedBrokerData {
    data: BrokerData,
    legacy: Box<[u8]>,
    standard: Box<[u8]>,
}

impl EncodedBrokerData {
    pub fn new(data: BrokerData) -> Self {
        let legacy = to_json(&data, JsonStyle::Legacy).into_boxed_slice();
        let standard = to_json(&data, JsonStyle::Standard).into_boxed_slice();
        Self {
            data,
            legacy,
            standard,
        }
    }

    pub fn data(&self) -> &BrokerData {
        &self.data
    }

    fn json(&self, style: JsonStyle) -> &[u8] {
        match style {
            JsonStyle::Legacy => &self.legacy,
            JsonStyle::Standard => &self.standard,
        }
    }
}

/// One group's queues of one topic (a `QueueData`, its group named by a shared string).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedQueueData {
    pub broker_name: Arc<str>,
    pub perm: i32,
    pub read_queue_nums: i32,
    pub topic_sys_flag: i32,
    pub write_queue_nums: i32,
}

impl SharedQueueData {
    /// Appends the `QueueData` it stands for: its fields in order, the name in `style`.
    fn write(&self, out: &mut Vec<u8>, style: JsonStyle) {
        out.extend_from_slice(b"{\"brokerName\":");
        write_to(out, &*self.broker_name, style);
        for (key, value) in [
            (&b",\"perm\":"[..], self.perm),
            (b",\"readQueueNums\":", self.read_queue_nums),
            (b",\"topicSysFlag\":", self.topic_sys_flag),
            (b",\"writeQueueNums\":", self.write_queue_nums),
        ] {
            out.extend_from_slice(key);
            fastjson::write_int(out, i64::from(value));
        }
        out.push(b'}');
    }

    fn to_data(&self) -> QueueData {
        QueueData {
            broker_name: self.broker_name.as_ref().to_owned(),
            perm: self.perm,
            read_queue_nums: self.read_queue_nums,
            topic_sys_flag: self.topic_sys_flag,
            write_queue_nums: self.write_queue_nums,
        }
    }
}

/// A route as the registry hands it out: the groups' `BrokerData` shared, the rest its own.
#[derive(Debug, Clone, Default)]
pub struct SharedRoute {
    pub broker_datas: Vec<Arc<EncodedBrokerData>>,
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    pub order_topic_conf: Option<String>,
    pub queue_datas: Vec<SharedQueueData>,
    pub topic_queue_mapping_by_broker: Option<BTreeMap<String, TopicQueueMappingInfo>>,
}

impl SharedRoute {
    /// The route as a `TopicRouteData` (a copy of every part).
    pub fn to_data(&self) -> TopicRouteData {
        TopicRouteData {
            broker_datas: self.broker_datas.iter().map(|b| b.data.clone()).collect(),
            filter_server_table: self.filter_server_table.clone(),
            order_topic_conf: self.order_topic_conf.clone(),
            queue_datas: self
                .queue_datas
                .iter()
                .map(SharedQueueData::to_data)
                .collect(),
            topic_queue_mapping_by_broker: self.topic_queue_mapping_by_broker.clone(),
        }
    }

    /// The body: the same bytes as `to_json(&self.to_data(), style)`. [`TopicRouteData`]'s
    /// fields in their order, the groups' encodings copied in; the field names are plain ASCII,
    /// written alike in both styles.
    pub fn to_json(&self, style: JsonStyle) -> Vec<u8> {
        let groups: usize = self
            .broker_datas
            .iter()
            .map(|g| g.json(style).len() + 1)
            .sum();
        let mut out = Vec::with_capacity(groups + 64 * self.queue_datas.len() + 128);
        out.extend_from_slice(b"{\"brokerDatas\":[");
        for (i, group) in self.broker_datas.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(group.json(style));
        }
        out.extend_from_slice(b"],\"filterServerTable\":");
        write_to(&mut out, &self.filter_server_table, style);
        if let Some(conf) = &self.order_topic_conf {
            out.extend_from_slice(b",\"orderTopicConf\":");
            write_to(&mut out, conf, style);
        }
        out.extend_from_slice(b",\"queueDatas\":[");
        for (i, queue) in self.queue_datas.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            queue.write(&mut out, style);
        }
        out.push(b']');
        if let Some(mappings) = &self.topic_queue_mapping_by_broker {
            out.extend_from_slice(b",\"topicQueueMappingByBroker\":");
            write_to(&mut out, mappings, style);
        }
        out.push(b'}');
        out
    }
}

/// GET_BROKER_CLUSTER_INFO as the registry hands it out: every group's `BrokerData` shared
/// with the routes (no copy of the groups is made to answer it), sorted by group name, and the
/// clusters' group names shared. With 1,000 groups the body is 0.17 MiB and the groups' copies
/// were three times that.
#[derive(Debug, Clone, Default)]
pub struct SharedClusterInfo {
    /// Sorted by group name, as `ClusterInfo.broker_addr_table` is.
    pub brokers: Vec<Arc<EncodedBrokerData>>,
    /// Sorted by cluster name, each cluster's group names sorted.
    pub clusters: Vec<(Arc<str>, Vec<Arc<str>>)>,
}

impl SharedClusterInfo {
    /// The answer as a `ClusterInfo` (a copy of every part).
    pub fn to_data(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self
                .brokers
                .iter()
                .map(|b| (b.data.broker_name.clone(), b.data.clone()))
                .collect(),
            cluster_addr_table: self
                .clusters
                .iter()
                .map(|(cluster, names)| {
                    let names = names.iter().map(|n| n.as_ref().to_owned()).collect();
                    (cluster.as_ref().to_owned(), names)
                })
                .collect(),
        }
    }

    /// The body: the same bytes as `to_json(&self.to_data(), style)`, the groups' encodings
    /// copied in.
    pub fn to_json(&self, style: JsonStyle) -> Vec<u8> {
        let groups: usize = self
            .brokers
            .iter()
            .map(|g| g.json(style).len() + g.data.broker_name.len() + 4)
            .sum();
        let names: usize = self
            .clusters
            .iter()
            .flat_map(|(_, names)| names)
            .map(|n| n.len() + 3)
            .sum();
        let mut out = Vec::with_capacity(groups + names + 64 * self.clusters.len() + 64);
        out.extend_from_slice(b"{\"brokerAddrTable\":{");
        for (i, group) in self.brokers.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_to(&mut out, group.data.broker_name.as_str(), style);
            out.push(b':');
            out.extend_from_slice(group.json(style));
        }
        out.extend_from_slice(b"},\"clusterAddrTable\":{");
        for (i, (cluster, names)) in self.clusters.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_to(&mut out, &**cluster, style);
            out.extend_from_slice(b":[");
            for (j, name) in names.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                write_to(&mut out, &**name, style);
            }
            out.push(b']');
        }
        out.extend_from_slice(b"}}");
        out
    }
}

/// Appends a part. Its types (strings, numbers, maps with string keys) always serialize; a
/// failure, which cannot occur, would append nothing rather than panic.
fn write_to<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T, style: JsonStyle) {
    let _ = fastjson::write_to(out, value, style);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names that each style writes differently: `/`, non-ASCII, quotes, control characters.
    const NAMES: [&str; 5] = ["broker-a", "b/c", "zoné-ü", "q\"uote\\", "tab\there\u{1}"];

    fn group(i: usize, name: &str) -> BrokerData {
        let mut addrs = BTreeMap::new();
        for id in 0..(i % 3) as i64 {
            addrs.insert(
                id * (i as i64 % 2 + 1),
                format!("127.0.0.1:{}/{name}", 10911 + id),
            );
        }
        BrokerData {
            broker_addrs: addrs,
            broker_name: name.to_owned(),
            cluster: format!("cluster/{}", i % 2),
            enable_acting_master: i % 2 == 1,
            zone_name: (i % 3 == 0).then(|| format!("zone-{name}")),
        }
    }

    /// Routes of 0 to 5 groups, with and without each optional part.
    fn routes() -> Vec<SharedRoute> {
        let mut out = Vec::new();
        for n in 0..=NAMES.len() {
            for extras in 0..4 {
                let names = &NAMES[..n];
                let mut route = SharedRoute {
                    broker_datas: names
                        .iter()
                        .enumerate()
                        .map(|(i, name)| Arc::new(EncodedBrokerData::new(group(i + extras, name))))
                        .collect(),
                    queue_datas: names
                        .iter()
                        .enumerate()
                        .map(|(i, name)| SharedQueueData {
                            broker_name: Arc::from(*name),
                            perm: 6 - i as i32,
                            read_queue_nums: 8,
                            topic_sys_flag: i as i32,
                            write_queue_nums: -1,
                        })
                        .collect(),
                    ..SharedRoute::default()
                };
                if extras & 1 == 1 {
                    route.order_topic_conf = Some("broker/a:4;é".to_owned());
                    route
                        .filter_server_table
                        .insert("127.0.0.1:10911".to_owned(), vec!["fs/1".to_owned()]);
                }
                if extras & 2 == 2 {
                    let info = TopicQueueMappingInfo {
                        bname: Some("b/c".to_owned()),
                        curr_id_map: Some(BTreeMap::from([(0, 1), (-2, 3)])),
                        ..TopicQueueMappingInfo::default()
                    };
                    route.topic_queue_mapping_by_broker =
                        Some(BTreeMap::from([("b/c".to_owned(), info)]));
                }
                out.push(route);
            }
        }
        out
    }

    #[test]
    fn a_route_from_shared_parts_is_the_bytes_of_its_topic_route_data() {
        for route in routes() {
            let data = route.to_data();
            for style in [JsonStyle::Legacy, JsonStyle::Standard] {
                let ours = route.to_json(style);
                let whole = to_json(&data, style);
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&whole),
                    "{style:?}"
                );
            }
        }
    }

    /// Cluster tables of 0 to 6 groups (one named as a number) in up to three clusters.
    fn cluster_infos() -> Vec<SharedClusterInfo> {
        let mut names: Vec<&str> = NAMES.iter().copied().chain(["123"]).collect();
        names.sort_unstable();
        (0..=names.len())
            .map(|n| {
                let groups: Vec<BrokerData> = names[..n]
                    .iter()
                    .enumerate()
                    .map(|(i, name)| group(i, name))
                    .collect();
                let mut clusters: BTreeMap<&str, Vec<Arc<str>>> = BTreeMap::new();
                for g in &groups {
                    clusters
                        .entry(&g.cluster)
                        .or_default()
                        .push(Arc::from(&*g.broker_name));
                }
                SharedClusterInfo {
                    clusters: clusters
                        .into_iter()
                        .map(|(c, n)| (Arc::from(c), n))
                        .collect(),
                    brokers: groups
                        .into_iter()
                        .map(|g| Arc::new(EncodedBrokerData::new(g)))
                        .collect(),
                }
            })
            .collect()
    }

    #[test]
    fn cluster_info_from_shared_parts_is_the_bytes_of_its_cluster_info() {
        for info in cluster_infos() {
            let data = info.to_data();
            assert_eq!(data.broker_addr_table.len(), info.brokers.len());
            for style in [JsonStyle::Legacy, JsonStyle::Standard] {
                let ours = info.to_json(style);
                let whole = to_json(&data, style);
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&whole),
                    "{style:?}"
                );
            }
            let read: ClusterInfo =
                crate::fastjson::from_slice(&info.to_json(JsonStyle::Legacy)).unwrap();
            assert_eq!(read, data);
        }
    }

    #[test]
    fn the_shared_parts_read_back_as_the_route() {
        for route in routes() {
            let data = route.to_data();
            let body = route.to_json(JsonStyle::Legacy);
            let read: TopicRouteData = crate::fastjson::from_slice(&body).unwrap();
            assert_eq!(read, data);
            assert_eq!(data.broker_datas.len(), route.broker_datas.len());
            for (shared, copied) in route.broker_datas.iter().zip(&data.broker_datas) {
                assert_eq!(shared.data(), copied);
            }
        }
    }
}
