//! Warm restart (docs/route-rules.md#warm-restart): the route tables as a [`RouteSnapshot`], a
//! plain value the registry writes to disk, and the tables rebuilt from one at start. Pure: the
//! caller passes the clocks and does the I/O.
//!
//! Every broker instance a snapshot restores is *unconfirmed*: it has no connection, and it
//! expires `grace` after the restore unless it registers first, which confirms it (its own
//! timeout applies from then on, as for any registration).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use rmq_protocol::body::{DataVersion, TopicQueueMappingInfo};
use serde::{Deserialize, Serialize};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName,
};
use super::tables::{BrokerGroup, EncodedGroup, LiveBroker, RouteTables};
use super::topic_map::{GroupQueues, Queues};

/// The format of the snapshots this build writes; another one is ignored at start.
pub const SNAPSHOT_FORMAT: u32 = 1;

/// The connection of a restored broker: none (the listener numbers connections from 1).
pub const NO_CONNECTION: ConnId = ConnId(0);

/// The route tables at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteSnapshot {
    pub format: u32,
    /// When it was taken, in milliseconds since the Unix epoch.
    pub taken_at_ms: u64,
    pub groups: Vec<GroupRecord>,
    pub brokers: Vec<LiveRecord>,
    pub topics: Vec<TopicRecord>,
    #[serde(default)]
    pub filter_servers: Vec<FilterRecord>,
    #[serde(default)]
    pub mappings: Vec<MappingRecord>,
}

/// A broker group (BrokerData).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    pub name: String,
    pub cluster: String,
    pub addrs: BTreeMap<BrokerId, String>,
    #[serde(default)]
    pub enable_acting_master: bool,
    #[serde(default)]
    pub zone_name: Option<String>,
}

/// A live broker instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveRecord {
    pub cluster: String,
    pub addr: String,
    pub data_version: DataVersion,
    #[serde(default)]
    pub ha_server_addr: Option<String>,
    #[serde(default)]
    pub mq_version: i32,
}

/// One topic's queues, by broker group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub topic: String,
    /// (broker name, read queues, write queues, perm, topic sys flag).
    pub queues: Vec<(String, i32, i32, i32, i32)>,
}

/// The filter servers of a broker instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterRecord {
    pub cluster: String,
    pub addr: String,
    pub servers: Vec<String>,
}

/// A static topic's queue mappings, by broker name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingRecord {
    pub topic: String,
    pub by_broker: BTreeMap<String, TopicQueueMappingInfo>,
}

/// Why a snapshot is not restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("written in format {found}, this build reads format {SNAPSHOT_FORMAT}")]
    Format { found: u32 },
    #[error(
        "taken {age:?} ago, longer than a broker's expiry ({expiry:?}): its brokers may be gone"
    )]
    TooOld { age: Duration, expiry: Duration },
    #[error("taken {ahead:?} in the future (a clock set back, or a foreign file)")]
    FromTheFuture { ahead: Duration },
    #[error("broker {addr} of cluster {cluster} is listed twice")]
    Duplicate { cluster: String, addr: String },
}

/// How much a snapshot's time may be ahead of the clock (clock steps, NTP slew).
const FUTURE_TOLERANCE: Duration = Duration::from_secs(5);

impl RouteTables {
    /// The tables as a snapshot taken at `now_ms` (milliseconds since the Unix epoch).
    pub fn snapshot(&self, now_ms: u64) -> RouteSnapshot {
        let groups = self
            .brokers
            .iter()
            .map(|(name, group)| GroupRecord {
                name: name.as_str().to_owned(),
                cluster: group.cluster.as_str().to_owned(),
                addrs: group
                    .addrs
                    .iter()
                    .map(|(id, addr)| (*id, addr.as_str().to_owned()))
                    .collect(),
                enable_acting_master: group.enable_acting_master,
                zone_name: group.zone_name.clone(),
            })
            .collect();
        let mut brokers: Vec<LiveRecord> = self
            .live
            .iter()
            .map(|(instance, live)| LiveRecord {
                cluster: instance.cluster.as_str().to_owned(),
                addr: instance.addr.as_str().to_owned(),
                data_version: live.data_version,
                ha_server_addr: live.ha_server_addr.clone(),
                mq_version: live.mq_version,
            })
            .collect();
        brokers.sort_by(|a, b| (&a.cluster, &a.addr).cmp(&(&b.cluster, &b.addr)));
        let topics = self
            .topics
            .iter()
            .map(|(topic, queues)| TopicRecord {
                topic: topic.to_owned(),
                queues: queues
                    .iter()
                    .map(|(name, q)| {
                        (
                            name.as_str().to_owned(),
                            q.read,
                            q.write,
                            q.perm,
                            q.sys_flag,
                        )
                    })
                    .collect(),
            })
            .collect();
        let filter_servers = self
            .filter_servers
            .iter()
            .map(|(instance, servers)| FilterRecord {
                cluster: instance.cluster.as_str().to_owned(),
                addr: instance.addr.as_str().to_owned(),
                servers: servers.clone(),
            })
            .collect();
        let mappings = self
            .mappings
            .iter()
            .map(|(topic, by_broker)| MappingRecord {
                topic: topic.as_str().to_owned(),
                by_broker: by_broker.clone(),
            })
            .collect();
        RouteSnapshot {
            format: SNAPSHOT_FORMAT,
            taken_at_ms: now_ms,
            groups,
            brokers,
            topics,
            filter_servers,
            mappings,
        }
    }

    /// Tables with the options of `self` (empty) rebuilt from `snapshot`, taken at most one
    /// broker expiry before `now_ms`; every broker unconfirmed, expiring `grace` after `now`.
    /// Answers how many broker instances were restored.
    pub fn restore(
        &mut self,
        snapshot: RouteSnapshot,
        now: Instant,
        now_ms: u64,
        grace: Duration,
    ) -> Result<usize, Unusable> {
        check_usable(&snapshot, now_ms, self.default_expiry)?;
        let mut live = HashMap::with_capacity(snapshot.brokers.len());
        for record in snapshot.brokers {
            let instance = BrokerInstance::new(record.cluster.as_str(), record.addr.as_str());
            let entry = LiveBroker {
                last_update: now,
                timeout: grace,
                data_version: record.data_version,
                conn: NO_CONNECTION,
                peer: None,
                ha_server_addr: record.ha_server_addr,
                mq_version: record.mq_version,
                applied: None,
                unconfirmed: true,
            };
            if live.insert(instance, entry).is_some() {
                return Err(Unusable::Duplicate {
                    cluster: record.cluster,
                    addr: record.addr,
                });
            }
        }
        let mut clusters: BTreeMap<ClusterName, BTreeSet<BrokerName>> = BTreeMap::new();
        for group in snapshot.groups {
            let name = BrokerName::new(&group.name);
            let cluster = ClusterName::new(&group.cluster);
            clusters
                .entry(cluster.clone())
                .or_default()
                .insert(name.clone());
            let addrs = group
                .addrs
                .into_iter()
                .map(|(id, addr)| (id, BrokerAddr::new(&addr)))
                .collect();
            self.brokers.insert(
                name,
                BrokerGroup {
                    cluster,
                    addrs,
                    enable_acting_master: group.enable_acting_master,
                    zone_name: group.zone_name,
                    encoded: EncodedGroup::default(),
                },
            );
        }
        for record in snapshot.topics {
            let mut entry = GroupQueues::default();
            for (broker, read, write, perm, sys_flag) in record.queues {
                let name = self.intern_broker_name(&BrokerName::new(&broker));
                let queues = Queues {
                    read,
                    write,
                    perm,
                    sys_flag,
                };
                entry.set(&name, queues);
            }
            self.topics.insert(&record.topic, entry);
        }
        for record in snapshot.filter_servers {
            let instance = BrokerInstance::new(record.cluster.as_str(), record.addr.as_str());
            self.filter_servers.insert(instance, record.servers);
        }
        for record in snapshot.mappings {
            self.mappings
                .insert(TopicName::new(&record.topic), record.by_broker);
        }
        let restored = live.len();
        self.live = live;
        self.clusters = clusters;
        self.invalidate_all();
        Ok(restored)
    }

    /// How many live broker instances no registration has confirmed since a restore.
    pub fn unconfirmed_count(&self) -> usize {
        self.live.values().filter(|live| live.unconfirmed).count()
    }
}

/// Whether a snapshot may be restored at `now_ms` with brokers expiring after `expiry`.
fn check_usable(snapshot: &RouteSnapshot, now_ms: u64, expiry: Duration) -> Result<(), Unusable> {
    if snapshot.format != SNAPSHOT_FORMAT {
        return Err(Unusable::Format {
            found: snapshot.format,
        });
    }
    if snapshot.taken_at_ms > now_ms {
        let ahead = Duration::from_millis(snapshot.taken_at_ms - now_ms);
        if ahead > FUTURE_TOLERANCE {
            return Err(Unusable::FromTheFuture { ahead });
        }
    }
    let age = Duration::from_millis(now_ms.saturating_sub(snapshot.taken_at_ms));
    if age > expiry {
        return Err(Unusable::TooOld { age, expiry });
    }
    Ok(())
}
