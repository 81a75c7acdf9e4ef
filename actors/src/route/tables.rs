//! `RouteTables`: the NameServer's route state and every rule that changes or reads it
//! (spec §5, Java `RouteInfoManager`). Pure: no actix, no I/O; time is passed in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_protocol::body::{
    perm, sys_flag, to_json, BrokerData, BrokerMemberGroup, ClusterInfo, DataVersion, QueueData,
    TopicConfigWrapper, TopicList, TopicQueueMappingInfo, TopicRouteData,
};
use rmq_protocol::fastjson::JsonStyle;
use tracing::{debug, info, warn};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName, MASTER_ID,
};

/// Java's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`: a broker silent for this long is dropped.
pub const DEFAULT_BROKER_EXPIRY: Duration = Duration::from_secs(120);

/// Topics with this prefix are never rewritten for acting masters (`TopicValidator`).
pub const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// The runtime switches the route rules read (Java `NamesrvConfig`, both live-updatable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteOptions {
    /// A registration that omits a topic removes this broker from it (§5.2 step 10).
    pub delete_topic_with_broker_registration: bool,
    /// Show the lowest-id slave of a master-less group as id 0 (§5.7 step 6).
    pub support_acting_master: bool,
}

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
    /// again: only what the tables need to recognise it. The registry answers
    /// [`RegisterOutcome::NeedTopics`] if it cannot take it without the table.
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
    /// SUCCESS with no addresses (§5.2 step 6).
    StaleStateVersion,
    /// A first registration of this broker id carrying exactly one topic (§5.2 step 7): the
    /// request fails with "register broker failed".
    SingleTopicFirstRegistration,
    /// A [`TopicsPayload::Same`] registration that needs its table after all (its instance is
    /// new or moved, its data version differs, or topics were removed since it applied them).
    /// Nothing was changed; the sender decodes the body and registers again. Never sent on
    /// the wire.
    NeedTopics,
}

/// One broker instance to remove (UNREGISTER_BROKER, connection close, expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unregistration {
    pub cluster: ClusterName,
    pub addr: BrokerAddr,
    pub name: BrokerName,
    pub id: BrokerId,
}

/// A broker the expiry scan dropped, and the connection to close.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiredBroker {
    pub instance: BrokerInstance,
    pub conn: ConnId,
}

/// A broker group: its addresses by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerGroup {
    /// The cluster of the group's first registration; later registrations never change it.
    pub cluster: ClusterName,
    pub addrs: BTreeMap<BrokerId, BrokerAddr>,
    pub enable_acting_master: bool,
    pub zone_name: Option<String>,
}

impl BrokerGroup {
    fn to_broker_data(&self, name: &BrokerName) -> BrokerData {
        BrokerData {
            broker_addrs: self
                .addrs
                .iter()
                .map(|(id, a)| (*id, a.as_str().to_owned()))
                .collect(),
            broker_name: name.as_str().to_owned(),
            cluster: self.cluster.as_str().to_owned(),
            enable_acting_master: self.enable_acting_master,
            zone_name: self.zone_name.clone(),
        }
    }

    fn min_id(&self) -> Option<BrokerId> {
        self.addrs.keys().next().copied()
    }
}

/// Liveness of one broker instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub last_update: Instant,
    pub timeout: Duration,
    pub data_version: DataVersion,
    pub conn: ConnId,
    pub ha_server_addr: Option<String>,
    /// The topic set this instance last put into the route tables as master or prime slave
    /// (its fingerprint) and the table's removal count at that moment.
    applied: Option<(u64, u64)>,
}

impl LiveBroker {
    fn is_expired(&self, now: Instant) -> bool {
        // Java: last + timeout < now. A timeout too large to add never expires.
        self.last_update
            .checked_add(self.timeout)
            .is_some_and(|deadline| deadline < now)
    }
}

/// The queues one broker group serves for one topic (a QueueData without its broker name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queues {
    pub read: i32,
    pub write: i32,
    pub perm: i32,
    pub sys_flag: i32,
}

/// Number of cached route encodings per topic: legacy and standard JSON.
const STYLES: usize = 2;

fn style_slot(style: JsonStyle) -> usize {
    match style {
        JsonStyle::Legacy => 0,
        JsonStyle::Standard => 1,
    }
}

/// One topic: its queues per broker group, and its encoded route bodies, filled on first query and
/// dropped whenever anything the route shows changes.
#[derive(Debug, Default)]
struct TopicEntry {
    queues: BTreeMap<BrokerName, Queues>,
    encoded: [Option<Bytes>; STYLES],
}

/// All route state of a NameServer. See the module docs.
#[derive(Debug)]
pub struct RouteTables {
    topics: HashMap<TopicName, TopicEntry>,
    brokers: BTreeMap<BrokerName, BrokerGroup>,
    clusters: BTreeMap<ClusterName, BTreeSet<BrokerName>>,
    live: HashMap<BrokerInstance, LiveBroker>,
    filter_servers: HashMap<BrokerInstance, Vec<String>>,
    mappings: HashMap<TopicName, BTreeMap<String, TopicQueueMappingInfo>>,
    options: RouteOptions,
    /// Bytes held by encoded routes, and the most they may hold.
    cached_bytes: usize,
    cache_limit: usize,
    /// Expiry of brokers that registered no timeout of their own.
    default_expiry: Duration,
    /// Counts every removal of a QueueData: a re-registration may skip re-checking its topics
    /// only if nothing was removed since it last applied them.
    queue_removals: u64,
}

impl Default for RouteTables {
    fn default() -> Self {
        Self::new(RouteOptions::default(), 64 * 1024 * 1024)
    }
}

impl RouteTables {
    /// Empty tables; encoded routes are cached up to `cache_limit` bytes in all.
    pub fn new(options: RouteOptions, cache_limit: usize) -> Self {
        Self {
            topics: HashMap::new(),
            brokers: BTreeMap::new(),
            clusters: BTreeMap::new(),
            live: HashMap::new(),
            filter_servers: HashMap::new(),
            mappings: HashMap::new(),
            options,
            cached_bytes: 0,
            cache_limit,
            default_expiry: DEFAULT_BROKER_EXPIRY,
            queue_removals: 0,
        }
    }

    /// Sets the expiry of brokers that register no `heartbeatTimeoutMillis` (default 120 s).
    pub fn with_default_expiry(mut self, expiry: Duration) -> Self {
        self.default_expiry = expiry;
        self
    }

    pub fn options(&self) -> RouteOptions {
        self.options
    }

    /// Changes the runtime switches; routes are re-encoded if their rewrite rule changed.
    pub fn set_options(&mut self, options: RouteOptions) {
        if options.support_acting_master != self.options.support_acting_master {
            self.invalidate_all();
        }
        self.options = options;
    }

    // -----------------------------------------------------------------------------------------
    // Registration

    /// REGISTER_BROKER (§5.2).
    pub fn register(&mut self, reg: Registration, now: Instant) -> RegisterOutcome {
        let summary = reg.topics.summary();
        if matches!(reg.topics, TopicsPayload::Same(_)) && !self.can_skip_topics(&reg, &summary) {
            return RegisterOutcome::NeedTopics;
        }
        let name = self.intern_broker_name(&reg.name);
        let instance = BrokerInstance {
            cluster: reg.cluster.clone(),
            addr: reg.addr.clone(),
        };

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
            }
        });
        let mut group_changed = register_first;

        // 3. Acting-master flag and zone follow the latest registration.
        let old_version = reg.enable_acting_master.is_none();
        let enable_acting_master = reg.enable_acting_master == Some(true);
        if group.enable_acting_master != enable_acting_master || group.zone_name != reg.zone_name {
            group.enable_acting_master = enable_acting_master;
            group.zone_name.clone_from(&reg.zone_name);
            group_changed = true;
        }

        // 4. Did a smaller id join? (min-id notifications are not sent; see the README.)
        let prev_min = group.min_id().unwrap_or(MASTER_ID);
        if reg.id < prev_min {
            debug!(broker = %name, id = reg.id, prev_min, "min broker id changed");
        }

        // 5. One address appears under one id only: a slave turned master drops its old id.
        let before = group.addrs.len();
        group
            .addrs
            .retain(|id, addr| !(*addr == reg.addr && *id != reg.id));
        group_changed |= group.addrs.len() != before;

        // 6. Another address under this id with a newer state version wins.
        if let Some(old_addr) = group.addrs.get(&reg.id).filter(|old| **old != reg.addr) {
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
                    self.live.remove(&instance);
                    if group_changed {
                        self.invalidate_broker_topics(&name);
                    }
                    return RegisterOutcome::StaleStateVersion;
                }
            }
        }

        // 7. A one-topic registration must not be a broker id's first.
        if !group.addrs.contains_key(&reg.id) && summary.topic_count == 1 {
            warn!(broker = %name, id = reg.id, addr = %reg.addr, "single-topic registration of an unregistered broker refused");
            if group_changed {
                self.invalidate_broker_topics(&name);
            }
            return RegisterOutcome::SingleTopicFirstRegistration;
        }

        // 8. Record the address.
        let old_addr = group.addrs.insert(reg.id, reg.addr.clone());
        register_first |= old_addr.as_ref().is_none_or(|a| a.as_str().is_empty());
        group_changed |= old_addr.as_ref() != Some(&reg.addr);

        // 9. Who may write routes: the master, or a new-version slave with the lowest id.
        let is_master = reg.id == MASTER_ID;
        let is_prime_slave = !old_version && !is_master && group.min_id() == Some(reg.id);
        let wipe_write = is_prime_slave && group.enable_acting_master;

        // 10. Topics.
        let mut applied = None;
        if is_master || is_prime_slave {
            let previous = self.live.get(&instance);
            let broker_changed = previous.map(|l| l.data_version) != Some(summary.data_version);
            // The same instance re-registering the same topic set under the same data version,
            // with no QueueData removed since it last applied them, would change nothing: every
            // topic already has its QueueData. Skip the walk (10,000 topics per broker at scale).
            let unchanged = !register_first
                && !broker_changed
                && !self.options.delete_topic_with_broker_registration
                && previous.and_then(|l| l.applied)
                    == Some((summary.fingerprint, self.queue_removals));
            if !unchanged {
                // `can_skip_topics` let no `Same` payload get here.
                if let TopicsPayload::Full(table) = &reg.topics {
                    self.apply_topics(
                        &table.wrapper,
                        &name,
                        register_first || broker_changed,
                        wipe_write,
                    );
                }
            }
            applied = Some((summary.fingerprint, self.queue_removals));
        }
        if group_changed {
            self.invalidate_broker_topics(&name);
        }

        // 11. Liveness, over the connection of this registration.
        let previous = self.live.insert(
            instance.clone(),
            LiveBroker {
                last_update: now,
                timeout: reg.heartbeat_timeout.unwrap_or(self.default_expiry),
                data_version: summary.data_version,
                conn: reg.conn,
                ha_server_addr: reg.ha_server_addr.clone(),
                applied,
            },
        );
        if previous.is_none() {
            info!(broker = %name, id = reg.id, addr = %reg.addr, cluster = %reg.cluster, conn = %reg.conn, "new broker registered");
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
            && live.applied == Some((summary.fingerprint, self.queue_removals))
    }

    /// §5.2 step 10 for a master or prime slave: puts the incoming topics into the tables (all of
    /// them when `changed`, else only those missing for this group), removes omitted ones if
    /// configured, and records static-topic mappings.
    fn apply_topics(
        &mut self,
        wrapper: &TopicConfigWrapper,
        name: &BrokerName,
        changed: bool,
        wipe_write: bool,
    ) {
        let table = &wrapper.topic_config_table;
        if self.options.delete_topic_with_broker_registration
            && wrapper.topic_queue_mapping_info_map.is_empty()
        {
            self.remove_omitted_topics(name, |topic| table.contains_key(topic));
        }
        for (key, config) in table {
            let topic = if config.topic_name.is_empty() {
                key.as_str()
            } else {
                config.topic_name.as_str()
            };
            let has_queues = self
                .topics
                .get(topic)
                .is_some_and(|t| t.queues.contains_key(name));
            if changed || !has_queues {
                let mut perm = config.perm;
                if wipe_write {
                    perm &= !perm::WRITE;
                }
                let queues = Queues {
                    read: config.read_queue_nums,
                    write: config.write_queue_nums,
                    perm,
                    sys_flag: config.topic_sys_flag,
                };
                self.upsert_queues(topic, name, queues);
            }
        }
        if changed {
            for (topic, mapping) in &wrapper.topic_queue_mapping_info_map {
                let bname = mapping.bname.clone().unwrap_or_default();
                self.mappings
                    .entry(TopicName::new(topic))
                    .or_default()
                    .insert(bname, mapping.clone());
                self.invalidate_topic(topic);
            }
        }
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
    fn intern_broker_name(&self, name: &BrokerName) -> BrokerName {
        self.brokers
            .get_key_value(name.as_str())
            .map_or_else(|| name.clone(), |(k, _)| k.clone())
    }

    /// Puts one broker group's queues into a topic, creating the topic; replaces only when
    /// different, so an unchanged registration leaves the encoded route in place.
    fn upsert_queues(&mut self, topic: &str, name: &BrokerName, queues: Queues) {
        if !self.topics.contains_key(topic) {
            info!(topic, broker = %name, "new topic registered");
            self.topics
                .insert(TopicName::new(topic), TopicEntry::default());
        }
        if let Some(entry) = self.topics.get_mut(topic) {
            if entry.queues.get(name) != Some(&queues) {
                entry.queues.insert(name.clone(), queues);
                Self::drop_encoded(entry, &mut self.cached_bytes);
            }
        }
    }

    /// Removes `name` from every topic `keep` rejects; drops topics left empty.
    fn remove_omitted_topics(&mut self, name: &BrokerName, keep: impl Fn(&str) -> bool) {
        let cached_bytes = &mut self.cached_bytes;
        let removals = &mut self.queue_removals;
        self.topics.retain(|topic, entry| {
            if keep(topic.as_str()) || entry.queues.remove(name).is_none() {
                return true;
            }
            *removals += 1;
            info!(topic = %topic, broker = %name, "topic omitted by its broker's registration, removed");
            Self::drop_encoded(entry, cached_bytes);
            !entry.queues.is_empty()
        });
    }

    /// REGISTER_TOPIC_IN_NAMESRV (§5.3): every QueueData's broker group must be known.
    pub fn register_topic(&mut self, topic: &str, queue_datas: &[QueueData]) {
        if queue_datas.is_empty() {
            return;
        }
        let exists = self.topics.contains_key(topic);
        if !exists
            && !queue_datas
                .iter()
                .all(|q| self.brokers.contains_key(q.broker_name.as_str()))
        {
            warn!(topic, "register topic names an unknown broker, ignored");
            return;
        }
        for q in queue_datas {
            // Java applies entries in order and stops at the first unknown broker.
            if !self.brokers.contains_key(q.broker_name.as_str()) {
                warn!(topic, broker = %q.broker_name, "register topic names an unknown broker, stopped");
                return;
            }
            let name = self.intern_broker_name(&BrokerName::new(&q.broker_name));
            let queues = Queues {
                read: q.read_queue_nums,
                write: q.write_queue_nums,
                perm: q.perm,
                sys_flag: q.topic_sys_flag,
            };
            self.upsert_queues(topic, &name, queues);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Liveness

    /// BROKER_HEARTBEAT: refreshes a live entry; unknown instances are ignored.
    pub fn heartbeat(&mut self, instance: &BrokerInstance, now: Instant) -> bool {
        match self.live.get_mut(instance) {
            Some(live) => {
                live.last_update = now;
                true
            }
            None => false,
        }
    }

    /// QUERY_DATA_VERSION (§3.18): whether `version` differs from the stored one (or none is
    /// stored), and the stored one. Always refreshes the live entry (5.x).
    pub fn query_data_version(
        &mut self,
        instance: &BrokerInstance,
        version: Option<&DataVersion>,
        now: Instant,
    ) -> (bool, Option<DataVersion>) {
        match self.live.get_mut(instance) {
            Some(live) => {
                let changed = version != Some(&live.data_version);
                live.last_update = now;
                (changed, Some(live.data_version))
            }
            None => (true, None),
        }
    }

    /// The live entry of a broker instance.
    pub fn live_broker(&self, instance: &BrokerInstance) -> Option<&LiveBroker> {
        self.live.get(instance)
    }

    /// Expiry scan (§5.5): drops every broker whose last heartbeat is older than its timeout and
    /// returns them with the connections to close.
    pub fn scan_inactive(&mut self, now: Instant) -> Vec<ExpiredBroker> {
        let mut expired: Vec<ExpiredBroker> = self
            .live
            .iter()
            .filter(|(_, live)| live.is_expired(now))
            .map(|(instance, live)| ExpiredBroker {
                instance: instance.clone(),
                conn: live.conn,
            })
            .collect();
        if expired.is_empty() {
            return expired;
        }
        expired.sort_by(|a, b| a.instance.cmp(&b.instance));
        let mut requests = Vec::with_capacity(expired.len());
        for gone in &expired {
            warn!(broker = %gone.instance, conn = %gone.conn, "broker expired");
            match self.resolve(&gone.instance) {
                Some(request) => requests.push(request),
                // No group lists it (Java keeps such an entry forever); drop it.
                None => {
                    self.live.remove(&gone.instance);
                    if self.filter_servers.remove(&gone.instance).is_some() {
                        self.invalidate_all();
                    }
                }
            }
        }
        self.unregister(&requests);
        expired
    }

    /// A connection closed (§5.6): unregisters the first broker instance whose latest
    /// registration came over it. Returns that instance. Unknown connections are a no-op.
    pub fn channel_closed(&mut self, conn: ConnId) -> Option<BrokerInstance> {
        let instance = self
            .live
            .iter()
            .filter(|(_, live)| live.conn == conn)
            .map(|(instance, _)| instance)
            .min()?
            .clone();
        match self.resolve(&instance) {
            Some(request) => {
                info!(broker = %instance, conn = %conn, "broker connection closed, unregistering");
                self.unregister(std::slice::from_ref(&request));
            }
            None => {
                self.live.remove(&instance);
            }
        }
        Some(instance)
    }

    /// Finds the group name and id of a live instance (Java `setupUnRegisterRequest`): the first
    /// group of the same cluster that lists the address.
    fn resolve(&self, instance: &BrokerInstance) -> Option<Unregistration> {
        self.brokers
            .iter()
            .filter(|(_, group)| group.cluster == instance.cluster)
            .find_map(|(name, group)| {
                group
                    .addrs
                    .iter()
                    .find(|(_, addr)| **addr == instance.addr)
                    .map(|(id, _)| Unregistration {
                        cluster: instance.cluster.clone(),
                        addr: instance.addr.clone(),
                        name: name.clone(),
                        id: *id,
                    })
            })
    }

    // -----------------------------------------------------------------------------------------
    // Unregistration

    /// Removes broker instances as one batch (§5.4): live entries, addresses (by address, not by
    /// id), emptied groups and clusters, then the routes of removed groups; a group with
    /// acting-master enabled that lost its master loses write permission.
    pub fn unregister(&mut self, requests: &[Unregistration]) {
        if requests.is_empty() {
            return;
        }
        let mut removed: BTreeSet<BrokerName> = BTreeSet::new();
        let mut reduced: BTreeSet<BrokerName> = BTreeSet::new();
        let mut filters_changed = false;
        for request in requests {
            let instance = BrokerInstance {
                cluster: request.cluster.clone(),
                addr: request.addr.clone(),
            };
            let was_live = self.live.remove(&instance).is_some();
            filters_changed |= self.filter_servers.remove(&instance).is_some();
            let mut group_emptied = false;
            if let Some(group) = self.brokers.get_mut(request.name.as_str()) {
                group.addrs.retain(|_, addr| *addr != request.addr);
                group_emptied = group.addrs.is_empty();
            }
            info!(broker = %request.name, id = request.id, addr = %request.addr, cluster = %request.cluster, was_live, "broker unregistered");
            if group_emptied {
                self.brokers.remove(request.name.as_str());
                if let Some(names) = self.clusters.get_mut(request.cluster.as_str()) {
                    names.remove(request.name.as_str());
                    if names.is_empty() {
                        self.clusters.remove(request.cluster.as_str());
                    }
                }
                removed.insert(request.name.clone());
            } else {
                reduced.insert(request.name.clone());
            }
        }
        if filters_changed {
            self.invalidate_all();
        }
        // Groups without a master whose queues must lose write permission.
        let wipe: BTreeSet<&BrokerName> = reduced
            .iter()
            .filter(|name| {
                self.brokers.get(name.as_str()).is_some_and(|g| {
                    g.enable_acting_master && g.min_id().is_none_or(|id| id > MASTER_ID)
                })
            })
            .collect();
        let cached_bytes = &mut self.cached_bytes;
        let removals = &mut self.queue_removals;
        self.topics.retain(|topic, entry| {
            let mut touched = false;
            for name in &removed {
                if entry.queues.remove(name).is_some() {
                    *removals += 1;
                    touched = true;
                }
            }
            for name in &reduced {
                if let Some(queues) = entry.queues.get_mut(name) {
                    // The group's addresses changed: the route shows them.
                    touched = true;
                    if wipe.contains(name) {
                        queues.perm &= !perm::WRITE;
                    }
                }
            }
            if touched {
                Self::drop_encoded(entry, cached_bytes);
            }
            if entry.queues.is_empty() {
                debug!(topic = %topic, "topic has no broker left, removed");
                return false;
            }
            true
        });
    }

    // -----------------------------------------------------------------------------------------
    // Topics and permissions

    /// WIPE_WRITE_PERM_OF_BROKER: clears WRITE on every topic of the group; returns how many
    /// topics the group has.
    pub fn wipe_write_perm(&mut self, name: &str) -> usize {
        self.update_perm(name, |perm| perm & !perm::WRITE)
    }

    /// ADD_WRITE_PERM_OF_BROKER: sets perm to exactly READ|WRITE on every topic of the group.
    pub fn add_write_perm(&mut self, name: &str) -> usize {
        self.update_perm(name, |_| perm::READ | perm::WRITE)
    }

    fn update_perm(&mut self, name: &str, update: impl Fn(i32) -> i32) -> usize {
        let mut count = 0;
        for entry in self.topics.values_mut() {
            if let Some(queues) = entry.queues.get_mut(name) {
                count += 1;
                let perm = update(queues.perm);
                if perm != queues.perm {
                    queues.perm = perm;
                    Self::drop_encoded(entry, &mut self.cached_bytes);
                }
            }
        }
        info!(broker = name, topics = count, "write permission changed");
        count
    }

    /// DELETE_TOPIC_IN_NAMESRV (§5.9): the whole topic, or only the queues of one cluster's
    /// groups. Returns whether anything was removed.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) -> bool {
        let Some(cluster) = cluster.filter(|c| !c.is_empty()) else {
            let removed = self.topics.remove(topic);
            if let Some(entry) = &removed {
                self.cached_bytes = self.cached_bytes.saturating_sub(Self::encoded_len(entry));
                self.queue_removals += 1;
                info!(topic, "topic deleted");
            }
            return removed.is_some();
        };
        let Some(names) = self.clusters.get(cluster).filter(|n| !n.is_empty()) else {
            return false;
        };
        let Some(entry) = self.topics.get_mut(topic) else {
            return false;
        };
        let before = entry.queues.len();
        entry.queues.retain(|name, _| !names.contains(name));
        if entry.queues.len() == before {
            return false;
        }
        self.queue_removals += 1;
        Self::drop_encoded(entry, &mut self.cached_bytes);
        if entry.queues.is_empty() {
            self.topics.remove(topic);
        }
        info!(topic, cluster, "topic deleted from cluster");
        true
    }

    /// Every topic name (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
    pub fn all_topics(&self) -> TopicList {
        TopicList {
            broker_addr: None,
            topic_list: self.topics.keys().map(|t| t.as_str().to_owned()).collect(),
        }
    }

    /// Topics served by any group of `cluster` (GET_TOPICS_BY_CLUSTER); unknown → empty.
    pub fn topics_by_cluster(&self, cluster: &str) -> TopicList {
        let names = self.clusters.get(cluster);
        let topic_list = self
            .topics
            .iter()
            .filter(|(_, entry)| {
                names.is_some_and(|names| entry.queues.keys().any(|n| names.contains(n)))
            })
            .map(|(t, _)| t.as_str().to_owned())
            .collect();
        TopicList {
            broker_addr: None,
            topic_list,
        }
    }

    /// Cluster and group names plus one broker address (GET_SYSTEM_TOPIC_LIST_FROM_NS).
    pub fn system_topics(&self) -> TopicList {
        let mut topic_list = BTreeSet::new();
        for (cluster, names) in &self.clusters {
            topic_list.insert(cluster.as_str().to_owned());
            topic_list.extend(names.iter().map(|n| n.as_str().to_owned()));
        }
        let broker_addr = self
            .brokers
            .values()
            .find_map(|g| g.addrs.values().next())
            .map(|a| a.as_str().to_owned());
        TopicList {
            broker_addr,
            topic_list,
        }
    }

    /// Topics whose first QueueData's system flag passes `keep` (GET_UNIT_TOPIC_LIST & co).
    pub fn topics_by_sys_flag(&self, keep: impl Fn(i32) -> bool) -> TopicList {
        let topic_list = self
            .topics
            .iter()
            .filter(|(_, entry)| {
                entry
                    .queues
                    .values()
                    .next()
                    .is_some_and(|q| keep(q.sys_flag))
            })
            .map(|(t, _)| t.as_str().to_owned())
            .collect();
        TopicList {
            broker_addr: None,
            topic_list,
        }
    }

    pub fn unit_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT != 0)
    }

    pub fn has_unit_sub_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT_SUB != 0)
    }

    pub fn has_unit_sub_ununit_topics(&self) -> TopicList {
        self.topics_by_sys_flag(|flag| flag & sys_flag::UNIT == 0 && flag & sys_flag::UNIT_SUB != 0)
    }

    // -----------------------------------------------------------------------------------------
    // Reads

    /// GET_BROKER_CLUSTER_INFO body.
    pub fn cluster_info(&self) -> ClusterInfo {
        ClusterInfo {
            broker_addr_table: self
                .brokers
                .iter()
                .map(|(name, g)| (name.as_str().to_owned(), g.to_broker_data(name)))
                .collect(),
            cluster_addr_table: self
                .clusters
                .iter()
                .map(|(c, names)| {
                    (
                        c.as_str().to_owned(),
                        names.iter().map(|n| n.as_str().to_owned()).collect(),
                    )
                })
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

    pub fn topic_count(&self) -> usize {
        self.topics.len()
    }

    pub fn live_count(&self) -> usize {
        self.live.len()
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

    pub fn broker_group_count(&self) -> usize {
        self.brokers.len()
    }

    pub fn cluster_count(&self) -> usize {
        self.clusters.len()
    }

    /// The route of a topic (§5.7), or `None` if no queue with a known group exists.
    pub fn topic_route(&self, topic: &str) -> Option<TopicRouteData> {
        let entry = self.topics.get(topic)?;
        let mut route = TopicRouteData {
            queue_datas: entry
                .queues
                .iter()
                .map(|(name, q)| QueueData {
                    broker_name: name.as_str().to_owned(),
                    perm: q.perm,
                    read_queue_nums: q.read,
                    topic_sys_flag: q.sys_flag,
                    write_queue_nums: q.write,
                })
                .collect(),
            ..TopicRouteData::default()
        };
        for name in entry.queues.keys() {
            let Some(group) = self.brokers.get(name) else {
                continue;
            };
            route.broker_datas.push(group.to_broker_data(name));
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

    /// The encoded route body of a topic in `style`, from the cache when the route has not
    /// changed since it was last encoded. `order_topic_conf` is put into the route; the caller
    /// invalidates the topic whenever the value it passes changes.
    pub fn route_body(
        &mut self,
        topic: &str,
        style: JsonStyle,
        order_topic_conf: Option<&str>,
    ) -> Option<Bytes> {
        let slot = style_slot(style);
        if let Some(bytes) = self.topics.get(topic).and_then(|e| e.encoded[slot].clone()) {
            return Some(bytes);
        }
        let mut route = self.topic_route(topic)?;
        route.order_topic_conf = order_topic_conf.map(str::to_owned);
        let bytes = Bytes::from(to_json(&route, style));
        if self.cached_bytes + bytes.len() <= self.cache_limit {
            if let Some(entry) = self.topics.get_mut(topic) {
                self.cached_bytes += bytes.len();
                entry.encoded[slot] = Some(bytes.clone());
            }
        }
        Some(bytes)
    }

    /// Bytes currently held by encoded routes.
    pub fn cached_bytes(&self) -> usize {
        self.cached_bytes
    }

    /// Drops the encoded route of one topic.
    pub fn invalidate_topic(&mut self, topic: &str) {
        if let Some(entry) = self.topics.get_mut(topic) {
            Self::drop_encoded(entry, &mut self.cached_bytes);
        }
    }

    /// Drops every encoded route.
    pub fn invalidate_all(&mut self) {
        for entry in self.topics.values_mut() {
            entry.encoded = Default::default();
        }
        self.cached_bytes = 0;
    }

    /// Drops the encoded routes of the topics a group serves (its addresses or flags changed).
    fn invalidate_broker_topics(&mut self, name: &BrokerName) {
        for entry in self.topics.values_mut() {
            if entry.queues.contains_key(name) {
                Self::drop_encoded(entry, &mut self.cached_bytes);
            }
        }
    }

    fn encoded_len(entry: &TopicEntry) -> usize {
        entry.encoded.iter().flatten().map(Bytes::len).sum()
    }

    fn drop_encoded(entry: &mut TopicEntry, cached_bytes: &mut usize) {
        *cached_bytes = cached_bytes.saturating_sub(Self::encoded_len(entry));
        entry.encoded = Default::default();
    }
}

/// §5.7 step 6: in a master-less group with acting master enabled whose queue is read-only, the
/// lowest-id slave is shown as id 0.
fn rewrite_acting_masters(route: &mut TopicRouteData) {
    let needs = route
        .broker_datas
        .iter()
        .any(|b| !b.broker_addrs.is_empty() && !b.broker_addrs.contains_key(&MASTER_ID));
    if !needs {
        return;
    }
    for broker in &mut route.broker_datas {
        if broker.broker_addrs.is_empty()
            || broker.broker_addrs.contains_key(&MASTER_ID)
            || !broker.enable_acting_master
        {
            continue;
        }
        let read_only = route
            .queue_datas
            .iter()
            .find(|q| q.broker_name == broker.broker_name)
            .is_some_and(|q| !perm::is_writeable(q.perm));
        if read_only {
            if let Some((_, addr)) = broker.broker_addrs.pop_first() {
                broker.broker_addrs.insert(MASTER_ID, addr);
            }
        }
    }
}
