//! Liveness and removal (docs/route-rules.md#liveness-and-expiry, #connection-closed,
//! #unregistering): heartbeats, data-version queries, the expiry scan, connection closes and the
//! batch unregistration they all end in.

use std::collections::BTreeSet;
use std::time::Instant;

use rmq_protocol::body::{perm, DataVersion};
use tracing::{debug, info, warn};

use super::ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, MASTER_ID,
};
use super::tables::{LiveBroker, RouteTables};

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

    /// A connection closed (docs/route-rules.md#connection-closed): unregisters the first broker instance whose latest
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
        let changes = &mut self.changes;
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
                Self::drop_encoded(topic.as_str(), entry, cached_bytes, changes);
            }
            if entry.queues.is_empty() {
                debug!(topic = %topic, "topic has no broker left, removed");
                return false;
            }
            true
        });
    }
}
