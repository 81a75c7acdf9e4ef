//! `RouteTables`: the NameServer's route state (Java `RouteInfoManager`'s tables) and the rules
//! that change or read it, one file per concern: registration (`register.rs`), liveness and
//! unregistration (`liveness.rs`), topic edits (`topics.rs`), queries (`queries.rs`) and the
//! record of what changed (`changes.rs`). Pure: no actix, no I/O; time is passed in. The rules are
//! described in docs/route-rules.md.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_protocol::body::{BrokerData, DataVersion, EncodedBrokerData, TopicQueueMappingInfo};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName,
};
use super::topic_map::TopicMap;

/// Java's `DEFAULT_BROKER_CHANNEL_EXPIRED_TIME`: a broker silent for this long is dropped.
pub const DEFAULT_BROKER_EXPIRY: Duration = Duration::from_secs(120);

/// Topics with this prefix are never rewritten for acting masters (`TopicValidator`).
pub const SYNC_BROKER_MEMBER_GROUP_PREFIX: &str = "rmq_sys_SYNC_BROKER_MEMBER_";

/// The runtime switches the route rules read (Java `NamesrvConfig`, both live-updatable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RouteOptions {
    /// A registration that omits a topic removes this broker from it (docs/route-rules.md#registering-a-broker, step 10).
    pub delete_topic_with_broker_registration: bool,
    /// Show the lowest-id slave of a master-less group as id 0 (docs/route-rules.md#route-lookup, step 6).
    pub support_acting_master: bool,
}

/// A broker group: its addresses by broker id (0 = master).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerGroup {
    /// The cluster of the group's first registration; later registrations never change it.
    pub cluster: ClusterName,
    pub addrs: BTreeMap<BrokerId, BrokerAddr>,
    pub enable_acting_master: bool,
    pub zone_name: Option<String>,
    /// Its `BrokerData`, encoded, as the routes of its topics share it.
    pub encoded: EncodedGroup,
}

/// A group's encoded `BrokerData`: made by the first route asked after the group changed, and
/// checked against the group at every use, so that no change can leave it stale. Not part of
/// the group's value: a copy starts empty, and it never makes two groups unequal.
#[derive(Default)]
pub struct EncodedGroup(RefCell<Option<Arc<EncodedBrokerData>>>);

impl EncodedGroup {
    /// The encoding of `group` (named `name`): the one kept if it still describes the group.
    pub(super) fn of(&self, name: &BrokerName, group: &BrokerGroup) -> Arc<EncodedBrokerData> {
        let kept = self.0.try_borrow().ok().and_then(|kept| kept.clone());
        if let Some(kept) = kept.filter(|kept| group.is_described_by(name, kept.data())) {
            return kept;
        }
        let made = Arc::new(EncodedBrokerData::new(group.to_broker_data(name)));
        if let Ok(mut slot) = self.0.try_borrow_mut() {
            *slot = Some(Arc::clone(&made));
        }
        made
    }
}

impl Clone for EncodedGroup {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl PartialEq for EncodedGroup {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for EncodedGroup {}

impl std::fmt::Debug for EncodedGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncodedGroup")
    }
}

impl BrokerGroup {
    pub(super) fn to_broker_data(&self, name: &BrokerName) -> BrokerData {
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

    /// Whether `data` is this group's `BrokerData` as [`Self::to_broker_data`] makes it.
    pub(super) fn is_described_by(&self, name: &BrokerName, data: &BrokerData) -> bool {
        data.broker_name == name.as_str()
            && data.cluster == self.cluster.as_str()
            && data.enable_acting_master == self.enable_acting_master
            && data.zone_name == self.zone_name
            && data.broker_addrs.len() == self.addrs.len()
            && data
                .broker_addrs
                .iter()
                .zip(&self.addrs)
                .all(|((id, addr), (our_id, our_addr))| id == our_id && addr == our_addr.as_str())
    }

    pub(super) fn min_id(&self) -> Option<BrokerId> {
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
    /// The client address of that connection, for the logs.
    pub peer: Option<std::net::SocketAddr>,
    pub ha_server_addr: Option<String>,
    /// The `MQVersion` ordinal of its latest registration (heartbeats do not carry it).
    pub mq_version: i32,
    /// The topic sets this instance put into the route tables as master or prime slave under
    /// its current data version.
    pub(super) applied: Option<Applied>,
    /// Restored from a snapshot at start and not registered since (route/snapshot.rs).
    pub unconfirmed: bool,
}

/// The topic sets (their fingerprints) one broker instance put into the route tables under one
/// data version while the table's removal count stood at `removals`: applying any of them again
/// would change nothing. A broker registering plainly has one; a 5.x broker registering split
/// (`enableSplitRegistration`) sends its table in parts, one set each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Applied {
    removals: u64,
    /// A set, not a list: each part of a split round is looked up among all the parts kept
    /// (1,250 of them for a million topics), which a list would make quadratic in the parts.
    fingerprints: HashSet<u64>,
}

impl Applied {
    /// The most sets kept (a split broker's parts hold 800 topics: 3.2 million topics); past
    /// it the sets start again from one.
    const MAX_SETS: usize = 4096;

    /// `kept` (what the instance had applied under the same data version) and `fingerprint`.
    pub(super) fn with(kept: Option<Applied>, fingerprint: u64, removals: u64) -> Applied {
        match kept {
            Some(mut applied)
                if applied.removals == removals && applied.fingerprints.len() < Self::MAX_SETS =>
            {
                applied.fingerprints.insert(fingerprint);
                applied
            }
            _ => Applied {
                removals,
                fingerprints: HashSet::from([fingerprint]),
            },
        }
    }

    /// Whether the set `fingerprint` was applied and no queue data removed since.
    pub(super) fn holds(&self, fingerprint: u64, removals: u64) -> bool {
        self.removals == removals && self.fingerprints.contains(&fingerprint)
    }
}

impl LiveBroker {
    pub(super) fn is_expired(&self, now: Instant) -> bool {
        // Java: last + timeout < now. A timeout too large to add never expires.
        self.last_update
            .checked_add(self.timeout)
            .is_some_and(|deadline| deadline < now)
    }
}

/// Routes that changed: some topics, or all of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteChanges {
    pub all: bool,
    pub topics: Vec<TopicName>,
}

impl RouteChanges {
    pub fn is_empty(&self) -> bool {
        !self.all && self.topics.is_empty()
    }
}

/// The route changes the tables made since they were last taken, of the routes that were handed
/// out. An encoded route can be held by a connection thread only if the registry handed it out
/// since it last changed, so the changes of the others are not sent: registering 1,000 groups of
/// 1,000 topics that nobody asked for yet sends nothing, where every topic of every group used
/// to be listed (and looked up by every thread).
#[derive(Debug, Default)]
pub(super) struct ChangeLog {
    pub(super) pending: RouteChanges,
    /// Topics whose route was handed out since it last changed.
    pub(super) served: HashSet<TopicName>,
    /// Counts every change, sent or not: an answer read from the tables (a topic list) is
    /// current as long as it stays the same.
    pub(super) version: u64,
}

impl ChangeLog {
    /// The route of `topic` changed.
    pub(super) fn topic(&mut self, topic: &str) {
        self.version += 1;
        // (`is_empty` first: a removal hashes the name even from an empty set.)
        if !self.pending.all && !self.served.is_empty() && self.served.remove(topic) {
            self.pending.topics.push(TopicName::new(topic));
        }
    }

    /// Every route changed.
    pub(super) fn all(&mut self) {
        self.version += 1;
        self.pending.all = true;
        self.pending.topics.clear();
        self.served.clear();
    }

    /// The route of `topic` was handed out: its next change is sent.
    pub(super) fn served(&mut self, topic: &str) {
        if !self.served.contains(topic) {
            self.served.insert(TopicName::new(topic));
        }
    }
}

/// What the tables counted since the server started (they survive a registry reset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteCounters {
    /// Registrations of a broker instance not live before.
    pub registrations_new: u64,
    /// Re-registrations of a live instance whose body was decoded.
    pub registrations_refreshed: u64,
    /// Re-registrations recognised byte for byte, taken without decoding their body.
    pub registrations_unchanged_body: u64,
    /// Brokers dropped by the expiry scan.
    pub expiries: u64,
    /// Brokers removed because their connection closed.
    pub channel_close_removals: u64,
}

/// All route state of a NameServer. See the module docs.
#[derive(Debug)]
pub struct RouteTables {
    pub(super) topics: TopicMap,
    pub(super) brokers: BTreeMap<BrokerName, BrokerGroup>,
    pub(super) clusters: BTreeMap<ClusterName, BTreeSet<BrokerName>>,
    pub(super) live: HashMap<BrokerInstance, LiveBroker>,
    pub(super) filter_servers: HashMap<BrokerInstance, Vec<String>>,
    pub(super) mappings: HashMap<TopicName, BTreeMap<String, TopicQueueMappingInfo>>,
    pub(super) options: RouteOptions,
    /// Topics whose route changed since [`RouteTables::take_changes`] last ran, of those whose
    /// route was handed out (the connection threads' caches may hold it): it must go.
    pub(super) changes: ChangeLog,
    /// Expiry of brokers that registered no timeout of their own.
    pub(super) default_expiry: Duration,
    /// Counts every removal of a QueueData: a re-registration may skip re-checking its topics
    /// only if nothing was removed since it last applied them.
    pub(super) queue_removals: u64,
    pub(super) counters: RouteCounters,
    /// Broker groups whose smallest broker id changed since [`RouteTables::take_min_id_changes`]
    /// last ran (NOTIFY_MIN_BROKER_ID_CHANGE, when the registry sends it).
    pub(super) min_id_changes: Vec<MinIdChange>,
}

/// A broker group's smallest broker id changed (Java's `RouteInfoManager`, slave-acting-master):
/// by a registration of a smaller id (`offline` is `None`) or the removal of the smallest one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinIdChange {
    pub name: BrokerName,
    /// The group's addresses after the change, by id.
    pub addrs: BTreeMap<BrokerId, BrokerAddr>,
    /// The removed broker's address.
    pub offline: Option<BrokerAddr>,
    /// The registering broker's HA address.
    pub ha: Option<String>,
}

impl MinIdChange {
    /// Java's `chooseBrokerAddrsToNotify`: after a removal (or with one broker left) every
    /// broker of the group; after a registration the brokers other than the new smallest.
    pub fn recipients(&self) -> Vec<&BrokerAddr> {
        let min = self.addrs.keys().next().copied();
        self.addrs
            .iter()
            .filter(|(id, _)| self.offline.is_some() || self.addrs.len() == 1 || Some(**id) != min)
            .map(|(_, addr)| addr)
            .collect()
    }
}

impl Default for RouteTables {
    fn default() -> Self {
        Self::new(RouteOptions::default())
    }
}
impl RouteTables {
    /// Empty tables.
    pub fn new(options: RouteOptions) -> Self {
        Self {
            topics: TopicMap::default(),
            brokers: BTreeMap::new(),
            clusters: BTreeMap::new(),
            live: HashMap::new(),
            filter_servers: HashMap::new(),
            mappings: HashMap::new(),
            options,
            changes: ChangeLog::default(),
            min_id_changes: Vec::new(),
            default_expiry: DEFAULT_BROKER_EXPIRY,
            queue_removals: 0,
            counters: RouteCounters::default(),
        }
    }

    /// Sets the expiry of brokers that register no `heartbeatTimeoutMillis` (default 120 s).
    pub fn with_default_expiry(mut self, expiry: Duration) -> Self {
        self.default_expiry = expiry;
        self
    }

    /// Continues the counts of earlier tables (after a reset).
    pub fn with_counters(mut self, counters: RouteCounters) -> Self {
        self.counters = counters;
        self
    }

    pub fn counters(&self) -> RouteCounters {
        self.counters
    }

    pub fn options(&self) -> RouteOptions {
        self.options
    }

    /// Changes the runtime switches; every route counts as changed if their rewrite rule changed.
    pub fn set_options(&mut self, options: RouteOptions) {
        if options.support_acting_master != self.options.support_acting_master {
            self.invalidate_all();
        }
        self.options = options;
    }

    /// Sets the expiry of brokers that register no `heartbeatTimeoutMillis`, from their next
    /// registration on.
    pub fn set_default_expiry(&mut self, expiry: Duration) {
        self.default_expiry = expiry;
    }
}
