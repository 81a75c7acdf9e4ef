//! REGISTER_BROKER against the tables (docs/route-rules.md#registering-a-broker), and the types a
//! registration carries. The connection side of a registration (body memo, off-loop decode, the
//! second round when the table is needed after all) is `crate::registration`.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::logging::Clipped;
use rmq_protocol::body::{perm, DataVersion, TopicConfigWrapper};
use tracing::{debug, info, warn};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName, MASTER_ID,
};
use super::tables::{Applied, BrokerGroup, EncodedGroup, LiveBroker, MinIdChange, RouteTables};
use super::topic_map::Queues;

/// A registration's topic table: shared, so the registry never has to free a large one on its
/// own thread (the connection that decoded it drops the last reference), and fingerprinted, so a
/// re-registration of the same topic set is recognised without walking it.
#[derive(Debug, Clone)]
pub struct TopicTable {
    pub wrapper: Arc<TopicConfigWrapper>,
    /// A hash of the topic names.
    pub fingerprint: u64,
}

impl TopicTable {
    /// Fingerprints `wrapper` (the caller does this off the registry, where the body was decoded).
    pub fn new(wrapper: TopicConfigWrapper) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        wrapper.topic_config_table.len().hash(&mut hasher);
        for name in wrapper.topic_config_table.keys() {
            name.hash(&mut hasher);
        }
        Self {
            fingerprint: hasher.finish(),
            wrapper: Arc::new(wrapper),
        }
    }
}

/// What a registration says about its topics.
#[derive(Debug, Clone)]
pub enum TopicsPayload {
    /// The decoded topic table.
    Full(TopicTable),
    /// The body is byte-identical to the one the same connection sent last, so it was not decoded
    /// again: only what the tables need to recognise it. [`RouteTables::register`] answers
    /// [`NeedTopics`] if it cannot take it without the table.
    Same(TopicSummary),
}

/// What a registration body that was not decoded again is known to contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicSummary {
    pub data_version: DataVersion,
    pub fingerprint: u64,
    pub topic_count: usize,
}

impl TopicsPayload {
    pub fn summary(&self) -> TopicSummary {
        match self {
            Self::Full(table) => TopicSummary {
                data_version: table.wrapper.data_version,
                fingerprint: table.fingerprint,
                topic_count: table.wrapper.topic_config_table.len(),
            },
            Self::Same(summary) => *summary,
        }
    }
}

/// One REGISTER_BROKER, decoded.
#[derive(Debug, Clone)]
pub struct Registration {
    pub cluster: ClusterName,
    pub addr: BrokerAddr,
    pub name: BrokerName,
    pub id: BrokerId,
    pub ha_server_addr: Option<String>,
    pub zone_name: Option<String>,
    /// `None`: the default expiry.
    pub heartbeat_timeout: Option<Duration>,
    /// `None` marks an old-version (4.x) broker.
    pub enable_acting_master: Option<bool>,
    pub topics: TopicsPayload,
    /// `None` leaves the broker's filter servers unchanged; empty removes them.
    pub filter_servers: Option<Vec<String>>,
    /// The connection the registration arrived on; closing it unregisters the broker.
    pub conn: ConnId,
    /// That connection's client address, for the logs.
    pub peer: Option<SocketAddr>,
    /// The request's `version`: the broker's software version, a `MQVersion.Version` ordinal
    /// (`rmq_protocol::code::version::name`). Shown on the status page; no rule reads it.
    pub mq_version: i32,
}

/// What a registration did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegisterOutcome {
    /// Registered. For a slave whose master is alive: the master's HA and broker addresses.
    Registered {
        ha_server_addr: Option<String>,
        master_addr: Option<String>,
    },
    /// Another address holds this broker id with a newer state version: ignored, but answered
    /// SUCCESS with no addresses (docs/route-rules.md#registering-a-broker, step 6).
    StaleStateVersion,
    /// A first registration of this broker id carrying exactly one topic (docs/route-rules.md#registering-a-broker, step 7): the
    /// request fails with "register broker failed".
    SingleTopicFirstRegistration,
}

/// A [`TopicsPayload::Same`] registration that needs its table after all (its instance is new or
/// moved, its data version differs, or topics were removed since it applied them). Nothing was
/// changed; the sender decodes the body and registers again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeedTopics;

/// Topics a registration applies per [`RouteTables::register_step`] when its caller walks them
/// in slices (the registry does, so a table of 100,000 topics never holds it for long).
pub const TOPICS_PER_STEP: usize = 4096;

/// New topics of one registration logged one by one; the rest are counted in one line.
const NEW_TOPICS_LOGGED: usize = 16;

/// A registration under way: the group and its addresses are recorded, its topics are being
/// put into the tables a slice at a time ([`RouteTables::register_step`]), and liveness, filter
/// servers and the answer follow ([`RouteTables::register_finish`]). Between steps the tables
/// are consistent topic by topic: a topic shows either its old or its new queues.
#[derive(Debug)]
pub struct RegisterWalk {
    reg: Registration,
    name: BrokerName,
    instance: BrokerInstance,
    now: Instant,
    /// `None` when this registration writes no topics (a slave, or nothing changed).
    topics: Option<TopicCursor>,
    /// Whether this registration writes routes (master or prime slave): it records the topic
    /// set it applied.
    writes_routes: bool,
}

/// Where a registration's topic walk stands.
#[derive(Debug)]
struct TopicCursor {
    table: Arc<TopicConfigWrapper>,
    /// Write every topic (the broker is new or its data version changed), not just the missing.
    changed: bool,
    wipe_write: bool,
    /// The last topic key applied; the walk goes on after it.
    after: Option<String>,
    finished: bool,
    new_topics: usize,
    /// The group's place among the groups of the topic written last.
    rank: usize,
}

/// What joining its group (steps 1 to 5) found out: whether the group is new or changed, and
/// its lowest id before this registration.
#[derive(Debug)]
struct Joined {
    /// The group was made by this registration.
    register_first: bool,
    /// The routes that show the group have to go (see [`Role::group_changed`]).
    group_changed: bool,
    prev_min: BrokerId,
}

/// What recording its address (steps 8 and 9) made of a registration.
#[derive(Debug)]
struct Role {
    /// A first registration of this broker (a new group, or an id without an address before).
    register_first: bool,
    /// The group's routes have to go: its members, addresses or flags changed. Never for a
    /// group made by this registration: it serves no topic yet (a topic names only groups that
    /// exist, a group's queues go with its last broker), so no route shows it.
    group_changed: bool,
    /// The master, or a new-version slave with the group's lowest id: writes the topics.
    writes_routes: bool,
    /// A prime slave of a group with acting master: its topics are written without write
    /// permission.
    wipe_write: bool,
}

/// The first part of a registration: decided at once, or topics to walk.
#[derive(Debug)]
pub enum Registering {
    Done(RegisterOutcome),
    Walk(Box<RegisterWalk>),
}

impl RouteTables {
    /// REGISTER_BROKER (docs/route-rules.md#registering-a-broker) in one go.
    pub fn register(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<RegisterOutcome, NeedTopics> {
        match self.register_start(reg, now)? {
            Registering::Done(outcome) => Ok(outcome),
            Registering::Walk(mut walk) => {
                while !self.register_step(&mut walk, usize::MAX) {}
                Ok(self.register_finish(walk))
            }
        }
    }

    /// REGISTER_BROKER steps 1 to 9 (docs/route-rules.md#registering-a-broker): the cluster,
    /// the group and its address. Cheap whatever the topic count; the topics follow in
    /// [`RouteTables::register_step`].
    pub fn register_start(
        &mut self,
        reg: Registration,
        now: Instant,
    ) -> Result<Registering, NeedTopics> {
        let summary = reg.topics.summary();
        if matches!(reg.topics, TopicsPayload::Same(_)) && !self.can_skip_topics(&reg, &summary) {
            return Err(NeedTopics);
        }
        let name = self.intern_broker_name(&reg.name);
        let instance = BrokerInstance {
            cluster: reg.cluster.clone(),
            addr: reg.addr.clone(),
        };
        let joined = self.join_group(&reg, &name);
        if let Some(refused) = self.refusal(&reg, &name, &instance, &summary) {
            if joined.group_changed {
                self.invalidate_broker_topics(&name);
            }
            return Ok(Registering::Done(refused));
        }
        let role = self.record_address(&reg, &name, joined);
        // The routes of the group's topics show its addresses and flags: they go now, before
        // any topic of the walk is shown with the new ones.
        if role.group_changed {
            self.invalidate_broker_topics(&name);
        }
        let topics = if role.writes_routes {
            self.topics_to_write(&reg, &name, &instance, &summary, &role)
        } else {
            None
        };
        Ok(Registering::Walk(Box::new(RegisterWalk {
            reg,
            name,
            instance,
            now,
            topics,
            writes_routes: role.writes_routes,
        })))
    }

    /// REGISTER_BROKER steps 1 to 5: the cluster lists the group, the group exists and follows
    /// the registration's flags, and the registration's address is under no other id.
    fn join_group(&mut self, reg: &Registration, name: &BrokerName) -> Joined {
        // 1. The cluster lists the broker group.
        self.clusters
            .entry(reg.cluster.clone())
            .or_default()
            .insert(name.clone());

        // 2. The group, created on first sight.
        let mut register_first = false;
        let group = self.brokers.entry(name.clone()).or_insert_with(|| {
            register_first = true;
            BrokerGroup {
                cluster: reg.cluster.clone(),
                addrs: BTreeMap::new(),
                enable_acting_master: false,
                zone_name: None,
                encoded: EncodedGroup::default(),
            }
        });
        let mut group_changed = false;

        // 3. Acting-master flag and zone follow the latest registration.
        let enable_acting_master = reg.enable_acting_master == Some(true);
        if group.enable_acting_master != enable_acting_master || group.zone_name != reg.zone_name {
            group.enable_acting_master = enable_acting_master;
            group.zone_name.clone_from(&reg.zone_name);
            group_changed = true;
        }

        // 4. Did a smaller id join? (Recorded once the address is, step 8.)
        let prev_min = group.min_id().unwrap_or(MASTER_ID);

        // 5. One address appears under one id only: a slave turned master drops its old id.
        let before = group.addrs.len();
        group
            .addrs
            .retain(|id, addr| !(*addr == reg.addr && *id != reg.id));
        group_changed |= group.addrs.len() != before;
        Joined {
            register_first,
            group_changed: group_changed && !register_first,
            prev_min,
        }
    }

    /// REGISTER_BROKER steps 6 and 7: why the registration is refused, if it is (nothing more
    /// is recorded then).
    fn refusal(
        &mut self,
        reg: &Registration,
        name: &BrokerName,
        instance: &BrokerInstance,
        summary: &TopicSummary,
    ) -> Option<RegisterOutcome> {
        let held = self.brokers.get(name).and_then(|g| g.addrs.get(&reg.id));

        // 6. Another address under this id with a newer state version wins.
        if let Some(old_addr) = held.filter(|old| **old != reg.addr) {
            let old_instance = BrokerInstance {
                cluster: reg.cluster.clone(),
                addr: old_addr.clone(),
            };
            if let Some(old_live) = self.live.get(&old_instance) {
                let incoming = summary.data_version.state_version;
                if old_live.data_version.state_version > incoming {
                    warn!(
                        broker = %name, id = reg.id, old_addr = %old_addr, new_addr = %reg.addr,
                        old_state_version = old_live.data_version.state_version,
                        new_state_version = incoming,
                        "registration conflicts with a newer broker, ignored"
                    );
                    self.live.remove(instance);
                    return Some(RegisterOutcome::StaleStateVersion);
                }
            }
        }

        // 7. A one-topic registration must not be a broker id's first.
        if held.is_none() && summary.topic_count == 1 {
            warn!(broker = %name, id = reg.id, addr = %reg.addr, "single-topic registration of an unregistered broker refused");
            return Some(RegisterOutcome::SingleTopicFirstRegistration);
        }
        None
    }

    /// REGISTER_BROKER steps 8 and 9: the address recorded under its id, and whether this
    /// broker writes its group's routes.
    fn record_address(&mut self, reg: &Registration, name: &BrokerName, joined: Joined) -> Role {
        let Joined {
            mut register_first,
            mut group_changed,
            prev_min,
        } = joined;
        let group = self
            .brokers
            .get_mut(name)
            .expect("join_group created the group");

        // 8. Record the address.
        let old_addr = group.addrs.insert(reg.id, reg.addr.clone());
        if reg.id < prev_min {
            debug!(broker = %name, id = reg.id, prev_min, "min broker id changed");
            self.min_id_changes.push(MinIdChange {
                name: name.clone(),
                addrs: group.addrs.clone(),
                offline: None,
                ha: reg.ha_server_addr.clone(),
            });
        }
        // (`register_first` still says whether the group is new: no route shows a new one.)
        group_changed |= !register_first && old_addr.as_ref() != Some(&reg.addr);
        register_first |= old_addr.as_ref().is_none_or(|a| a.as_str().is_empty());

        // 9. Who may write routes: the master, or a new-version slave with the lowest id.
        let old_version = reg.enable_acting_master.is_none();
        let is_master = reg.id == MASTER_ID;
        let is_prime_slave = !old_version && !is_master && group.min_id() == Some(reg.id);
        Role {
            register_first,
            group_changed,
            writes_routes: is_master || is_prime_slave,
            wipe_write: is_prime_slave && group.enable_acting_master,
        }
    }

    /// REGISTER_BROKER step 10, first part: the topics a registration that writes routes is to
    /// walk (`None` when it would change nothing), after dropping the topics it no longer lists
    /// if the options say so.
    fn topics_to_write(
        &mut self,
        reg: &Registration,
        name: &BrokerName,
        instance: &BrokerInstance,
        summary: &TopicSummary,
        role: &Role,
    ) -> Option<TopicCursor> {
        let previous = self.live.get(instance);
        let broker_changed = previous.map(|l| l.data_version) != Some(summary.data_version);
        // The same instance re-registering the same topic set under the same data version,
        // with no QueueData removed since it last applied them, would change nothing: every
        // topic already has its QueueData. Skip the walk (10,000 topics per broker at scale).
        let unchanged = !role.register_first
            && !broker_changed
            && !self.options.delete_topic_with_broker_registration
            && previous
                .and_then(|l| l.applied.as_ref())
                .is_some_and(|a| a.holds(summary.fingerprint, self.queue_removals));
        // `can_skip_topics` let no `Same` payload get here unless it is unchanged.
        let (false, TopicsPayload::Full(table)) = (unchanged, &reg.topics) else {
            return None;
        };
        let table = Arc::clone(&table.wrapper);
        if self.options.delete_topic_with_broker_registration
            && table.topic_queue_mapping_info_map.is_empty()
        {
            let keep = &table.topic_config_table;
            self.remove_omitted_topics(name, |topic| keep.contains_key(topic));
        }
        Some(TopicCursor {
            table,
            changed: role.register_first || broker_changed,
            wipe_write: role.wipe_write,
            after: None,
            finished: false,
            new_topics: 0,
            rank: 0,
        })
    }

    /// REGISTER_BROKER step 10 for up to `max_topics` topics of the walk (all of them when
    /// `changed`, else only those missing for this group); true once every topic is done.
    pub fn register_step(&mut self, walk: &mut RegisterWalk, max_topics: usize) -> bool {
        let Some(cursor) = walk.topics.as_mut() else {
            return true;
        };
        if cursor.finished {
            return true;
        }
        let table = Arc::clone(&cursor.table);
        let configs = &table.topic_config_table;
        let rest = match cursor.after.as_deref() {
            None => configs.range::<str, _>(..),
            Some(after) => configs.range::<str, _>((Bound::Excluded(after), Bound::Unbounded)),
        };
        let mut last: Option<&String> = None;
        for (done, (key, config)) in rest.enumerate() {
            if done == max_topics {
                cursor.after = last.cloned();
                return false;
            }
            last = Some(key);
            let topic = if config.topic_name.is_empty() {
                key.as_str()
            } else {
                config.topic_name.as_str()
            };
            // (A changed table writes every topic: no need to look first.)
            if cursor.changed
                || !self
                    .topics
                    .get(topic)
                    .is_some_and(|t| t.contains(walk.name.as_str()))
            {
                let mut perm = config.perm;
                if cursor.wipe_write {
                    perm &= !perm::WRITE;
                }
                let queues = Queues {
                    read: config.read_queue_nums,
                    write: config.write_queue_nums,
                    perm,
                    sys_flag: config.topic_sys_flag,
                };
                if self.upsert_queues(topic, &walk.name, queues, &mut cursor.rank) {
                    cursor.new_topics += 1;
                    if cursor.new_topics <= NEW_TOPICS_LOGGED {
                        info!(topic = %Clipped(topic), broker = %walk.name, "new topic registered");
                    }
                }
            }
        }
        cursor.finished = true;
        true
    }

    /// The rest of REGISTER_BROKER once its topics are walked: static-topic mappings (10),
    /// liveness (11), filter servers (12) and a slave's master (13).
    pub fn register_finish(&mut self, walk: Box<RegisterWalk>) -> RegisterOutcome {
        let RegisterWalk {
            reg,
            name,
            instance,
            now,
            topics,
            writes_routes,
        } = *walk;
        let summary = reg.topics.summary();

        // 10, the rest.
        if let Some(cursor) = topics {
            if cursor.new_topics > NEW_TOPICS_LOGGED {
                info!(
                    broker = %name,
                    new_topics = cursor.new_topics,
                    "{} more new topics registered (not logged one by one)",
                    cursor.new_topics - NEW_TOPICS_LOGGED
                );
            }
            if cursor.changed {
                for (topic, mapping) in &cursor.table.topic_queue_mapping_info_map {
                    let bname = mapping.bname.clone().unwrap_or_default();
                    self.mappings
                        .entry(TopicName::new(topic))
                        .or_default()
                        .insert(bname, mapping.clone());
                    self.invalidate_topic(topic);
                }
            }
        }
        let applied = writes_routes.then(|| {
            let kept = self
                .live
                .get_mut(&instance)
                .filter(|live| live.data_version == summary.data_version)
                .and_then(|live| live.applied.take());
            Applied::with(kept, summary.fingerprint, self.queue_removals)
        });

        // 11. Liveness, over the connection of this registration.
        let previous = self.live.insert(
            instance.clone(),
            LiveBroker {
                last_update: now,
                timeout: reg.heartbeat_timeout.unwrap_or(self.default_expiry),
                data_version: summary.data_version,
                conn: reg.conn,
                peer: reg.peer,
                ha_server_addr: reg.ha_server_addr.clone(),
                mq_version: reg.mq_version,
                applied,
                unconfirmed: false,
            },
        );
        if previous.as_ref().is_some_and(|p| p.unconfirmed) {
            info!(broker = %name, id = reg.id, addr = %reg.addr, cluster = %reg.cluster, conn = %reg.conn, "restored broker confirmed by its registration");
        }
        if previous.is_none() {
            self.counters.registrations_new += 1;
            info!(broker = %name, id = reg.id, addr = %reg.addr, cluster = %reg.cluster, conn = %reg.conn, peer = ?reg.peer, "new broker registered");
        } else if matches!(reg.topics, TopicsPayload::Same(_)) {
            self.counters.registrations_unchanged_body += 1;
        } else {
            self.counters.registrations_refreshed += 1;
        }

        // 12. Filter servers.
        if let Some(list) = reg.filter_servers {
            let changed = if list.is_empty() {
                self.filter_servers.remove(&instance).is_some()
            } else {
                self.filter_servers.insert(instance, list.clone()) != Some(list)
            };
            if changed {
                self.invalidate_all();
            }
        }

        // 13. A slave learns its master.
        let (ha_server_addr, master_addr) = if reg.id == MASTER_ID {
            (None, None)
        } else {
            self.live_master_of(&name, &reg.cluster)
        };
        RegisterOutcome::Registered {
            ha_server_addr,
            master_addr,
        }
    }

    /// Whether a registration whose body was not decoded again can be taken as it is: the same
    /// instance at the same id with the same data version, and, if it writes routes, the same
    /// topic set applied with nothing removed since. Then its topics would change nothing.
    fn can_skip_topics(&self, reg: &Registration, summary: &TopicSummary) -> bool {
        let Some(group) = self.brokers.get(reg.name.as_str()) else {
            return false;
        };
        if group.addrs.get(&reg.id) != Some(&reg.addr) {
            return false;
        }
        let instance = BrokerInstance {
            cluster: reg.cluster.clone(),
            addr: reg.addr.clone(),
        };
        let Some(live) = self.live.get(&instance) else {
            return false;
        };
        if live.data_version != summary.data_version {
            return false;
        }
        let is_master = reg.id == MASTER_ID;
        let is_prime_slave =
            reg.enable_acting_master.is_some() && !is_master && group.min_id() == Some(reg.id);
        if !(is_master || is_prime_slave) {
            return true;
        }
        !self.options.delete_topic_with_broker_registration
            && live
                .applied
                .as_ref()
                .is_some_and(|a| a.holds(summary.fingerprint, self.queue_removals))
    }

    /// The HA and broker address of a group's master, if it is alive in `cluster`.
    fn live_master_of(
        &self,
        name: &BrokerName,
        cluster: &ClusterName,
    ) -> (Option<String>, Option<String>) {
        let Some(master_addr) = self.brokers.get(name).and_then(|g| g.addrs.get(&MASTER_ID)) else {
            return (None, None);
        };
        let master = BrokerInstance {
            cluster: cluster.clone(),
            addr: master_addr.clone(),
        };
        match self.live.get(&master) {
            Some(live) => (
                live.ha_server_addr.clone(),
                Some(master_addr.as_str().to_owned()),
            ),
            None => (None, None),
        }
    }

    /// The shared name of a known broker group, so all tables hold one allocation per name.
    pub(super) fn intern_broker_name(&self, name: &BrokerName) -> BrokerName {
        self.brokers
            .get_key_value(name.as_str())
            .map_or_else(|| name.clone(), |(k, _)| k.clone())
    }

    /// Puts one broker group's queues into a topic, creating the topic; replaces only when
    /// different, so an unchanged registration leaves the route unchanged (and cached). The
    /// group is looked for at `rank` first (its place in the caller's previous topic; updated).
    /// True when the topic is new.
    pub(super) fn upsert_queues(
        &mut self,
        topic: &str,
        name: &BrokerName,
        queues: Queues,
        rank: &mut usize,
    ) -> bool {
        let (topic_queues, created) = self.topics.get_or_insert(topic);
        if topic_queues.set_from(name, queues, rank) {
            self.changes.topic(topic);
        }
        created
    }

    /// Removes `name` from every topic `keep` rejects; drops topics left empty.
    fn remove_omitted_topics(&mut self, name: &BrokerName, keep: impl Fn(&str) -> bool) {
        let changes = &mut self.changes;
        let removals = &mut self.queue_removals;
        self.topics.retain(|topic, queues| {
            if keep(topic) || queues.remove(name.as_str()).is_none() {
                return true;
            }
            *removals += 1;
            info!(topic = %Clipped(topic), broker = %name, "topic omitted by its broker's registration, removed");
            changes.topic(topic);
            !queues.is_empty()
        });
    }
}
