//! Liveness and removal (docs/route-rules.md#liveness-and-expiry, #connection-closed,
//! #unregistering): heartbeats, data-version queries, the expiry scan, connection closes and the
//! batch unregistration they all end in.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use rmq_protocol::body::{perm, DataVersion};
use tracing::{debug, info, warn};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, MASTER_ID,
};
use super::register::TOPICS_PER_STEP;
use super::tables::{ChangeLog, LiveBroker, MinIdChange, RouteTables};
use super::topic_map::GroupQueues;

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

impl RouteTables {
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

    /// QUERY_DATA_VERSION (docs/route-rules.md#liveness-and-expiry): whether `version` differs from the stored one (or none is
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

    /// Expiry scan (docs/route-rules.md#liveness-and-expiry): drops every broker whose last heartbeat is older than its timeout and
    /// returns them with the connections to close.
    pub fn scan_inactive(&mut self, now: Instant) -> Vec<ExpiredBroker> {
        let (expired, sweep) = self.scan_inactive_start(now);
        self.sweep_all(sweep);
        expired
    }

    /// [`RouteTables::scan_inactive`], leaving the topics to [`RouteTables::sweep_step`].
    pub fn scan_inactive_start(&mut self, now: Instant) -> (Vec<ExpiredBroker>, Option<Sweep>) {
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
            return (expired, None);
        }
        self.counters.expiries += expired.len() as u64;
        expired.sort_by(|a, b| a.instance.cmp(&b.instance));
        let mut requests = Vec::with_capacity(expired.len());
        for gone in &expired {
            let live = self.live.get(&gone.instance);
            let peer = live.and_then(|l| l.peer);
            if live.is_some_and(|l| l.unconfirmed) {
                warn!(broker = %gone.instance, "restored broker not confirmed by a registration within the restore grace; removed");
            } else {
                warn!(broker = %gone.instance, conn = %gone.conn, peer = ?peer, "broker expired");
            }
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
        let sweep = self.unregister_start(&requests);
        (expired, sweep)
    }

    /// A connection closed (docs/route-rules.md#connection-closed): unregisters the first broker instance whose latest
    /// registration came over it. Returns that instance. Unknown connections are a no-op.
    pub fn channel_closed(&mut self, conn: ConnId) -> Option<BrokerInstance> {
        let (instances, sweep) = self.channel_closed_start(&[conn]);
        self.sweep_all(sweep);
        instances.into_iter().next()
    }

    /// [`RouteTables::channel_closed`] for several connections at once, leaving the topics to
    /// [`RouteTables::sweep_step`]: one sweep of the table for all of them (a thousand brokers
    /// cut off together cost one walk of the topics, not a thousand). Returns the instances
    /// unregistered.
    pub fn channel_closed_start(
        &mut self,
        conns: &[ConnId],
    ) -> (Vec<BrokerInstance>, Option<Sweep>) {
        let mut instances = Vec::new();
        let mut requests = Vec::new();
        for &conn in conns {
            let Some(instance) = self
                .live
                .iter()
                .filter(|(_, live)| live.conn == conn)
                .map(|(instance, _)| instance)
                .min()
                .cloned()
            else {
                continue;
            };
            match self.resolve(&instance) {
                Some(request) => {
                    self.counters.channel_close_removals += 1;
                    let peer = self.live.get(&instance).and_then(|l| l.peer);
                    info!(broker = %instance, conn = %conn, peer = ?peer, "broker connection closed, unregistering");
                    requests.push(request);
                }
                None => {
                    self.live.remove(&instance);
                }
            }
            instances.push(instance);
        }
        let sweep = self.unregister_start(&requests);
        (instances, sweep)
    }

    /// Finds the group name and id of a live instance (Java `setupUnRegisterRequest`): the first
    /// group of the same cluster that lists the address.
    pub(super) fn resolve(&self, instance: &BrokerInstance) -> Option<Unregistration> {
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

    /// Removes broker instances as one batch (docs/route-rules.md#unregistering): live entries, addresses (by address, not by
    /// id), emptied groups and clusters, then the routes of removed groups; a group with
    /// acting-master enabled that lost its master loses write permission.
    pub fn unregister(&mut self, requests: &[Unregistration]) {
        let sweep = self.unregister_start(requests);
        self.sweep_all(sweep);
    }

    /// [`RouteTables::unregister`] up to the topics: the groups, clusters and liveness at once;
    /// the topics of a large table are left to [`RouteTables::sweep_step`] (a small one is done
    /// here and `None` returned).
    pub fn unregister_start(&mut self, requests: &[Unregistration]) -> Option<Sweep> {
        if requests.is_empty() {
            return None;
        }
        let mut removed: BTreeSet<BrokerName> = BTreeSet::new();
        let mut reduced: BTreeSet<BrokerName> = BTreeSet::new();
        let mut filters_changed = false;
        // Groups that lost their smallest id, with the address that went (the last one wins).
        let mut min_lost: BTreeMap<BrokerName, BrokerAddr> = BTreeMap::new();
        for request in requests {
            let instance = BrokerInstance {
                cluster: request.cluster.clone(),
                addr: request.addr.clone(),
            };
            let was_live = self.live.remove(&instance).is_some();
            filters_changed |= self.filter_servers.remove(&instance).is_some();
            let mut group_emptied = false;
            if let Some(group) = self.brokers.get_mut(request.name.as_str()) {
                let was_min = group.min_id() == Some(request.id);
                group.addrs.retain(|_, addr| *addr != request.addr);
                group_emptied = group.addrs.is_empty();
                if was_min && !group_emptied {
                    min_lost.insert(request.name.clone(), request.addr.clone());
                }
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
        // Only groups of acting-master brokers are told of a removal, with their addresses once
        // every request is applied (Java).
        for (name, offline) in min_lost {
            let Some(group) = self.brokers.get(name.as_str()) else {
                continue;
            };
            if group.enable_acting_master && !group.addrs.is_empty() {
                self.min_id_changes.push(MinIdChange {
                    name,
                    addrs: group.addrs.clone(),
                    offline: Some(offline),
                    ha: None,
                });
            }
        }
        if filters_changed {
            self.invalidate_all();
        }
        // Groups without a master whose queues must lose write permission.
        let wipe: BTreeSet<BrokerName> = reduced
            .iter()
            .filter(|name| {
                self.brokers.get(name.as_str()).is_some_and(|g| {
                    g.enable_acting_master && g.min_id().is_none_or(|id| id > MASTER_ID)
                })
            })
            .cloned()
            .collect();
        let sweep = Sweep {
            removed,
            reduced,
            wipe,
            next: 0,
        };
        if self.topics.len() <= TOPICS_PER_STEP {
            let changes = &mut self.changes;
            let removals = &mut self.queue_removals;
            self.topics
                .retain(|topic, entry| sweep.keep(topic, entry, changes, removals));
            return None;
        }
        Some(sweep)
    }

    /// Up to `max_topics` topics of an unregistration's sweep; true once all are done.
    /// The table cannot change between the steps of a sweep (changes wait for the one under
    /// way), so the sweep walks positions: a topic it removes leaves its place to the last
    /// topic, which is looked at next.
    pub fn sweep_step(&mut self, sweep: &mut Sweep, max_topics: usize) -> bool {
        for _ in 0..max_topics {
            let Some((topic, queues)) = self.topics.at_mut(sweep.next) else {
                return true;
            };
            if sweep.keep(topic, queues, &mut self.changes, &mut self.queue_removals) {
                sweep.next += 1;
            } else {
                self.topics.remove_at(sweep.next);
            }
        }
        sweep.next >= self.topics.len()
    }

    fn sweep_all(&mut self, sweep: Option<Sweep>) {
        if let Some(mut sweep) = sweep {
            while !self.sweep_step(&mut sweep, usize::MAX) {}
        }
    }
}

/// The topics of an unregistration still to go through: the groups gone or reduced are taken
/// out of, or marked changed in, each topic (docs/route-rules.md#unregistering). A topic shows
/// the group until its turn comes.
#[derive(Debug)]
pub struct Sweep {
    removed: BTreeSet<BrokerName>,
    reduced: BTreeSet<BrokerName>,
    /// Reduced groups without a master whose queues lose write permission.
    wipe: BTreeSet<BrokerName>,
    /// The position of the next topic to go through.
    next: usize,
}

impl Sweep {
    /// Applies the unregistration to one topic; false when the topic has no group left.
    fn keep(
        &self,
        topic: &str,
        entry: &mut GroupQueues,
        changes: &mut ChangeLog,
        removals: &mut u64,
    ) -> bool {
        let mut touched = false;
        for name in &self.removed {
            if entry.remove(name.as_str()).is_some() {
                *removals += 1;
                touched = true;
            }
        }
        for name in &self.reduced {
            if let Some(queues) = entry.get_mut(name.as_str()) {
                // The group's addresses changed: the route shows them.
                touched = true;
                if self.wipe.contains(name) {
                    queues.perm &= !perm::WRITE;
                }
            }
        }
        if touched {
            changes.topic(topic);
        }
        if entry.is_empty() {
            debug!(topic = %topic, "topic has no broker left, removed");
            return false;
        }
        true
    }
}
