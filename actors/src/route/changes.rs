//! What changed since the registry last asked: the topics whose route shows something new (the
//! connection threads drop their encoded copies of them), and the broker groups whose smallest
//! broker id changed (the brokers are told).

use super::ids::BrokerName;
use super::tables::{RouteChanges, RouteTables};

/// The most handed-out routes walked for the topics of one changed group (a walk takes about a
/// millisecond at this size); above it a group's change marks every route changed.
pub(super) const GROUP_WALK_MAX_TOPICS: usize = 65_536;

impl RouteTables {
    /// Records that the route of one topic changed (e.g. its ORDER_TOPIC_CONFIG value).
    pub fn invalidate_topic(&mut self, topic: &str) {
        if self.topics.contains(topic) {
            self.changes.topic(topic);
        }
    }

    /// Records that every route changed.
    pub fn invalidate_all(&mut self) {
        self.changes.all();
    }

    /// Records that the route of `topic` was handed out (to be encoded and kept by a connection
    /// thread): its next change is sent to the threads.
    pub fn route_served(&mut self, topic: &str) {
        self.changes.served(topic);
    }

    /// Records that the topics a group serves changed (its addresses or flags did). Only the
    /// routes handed out can be held anywhere, so only they are looked at; above
    /// [`GROUP_WALK_MAX_TOPICS`] of them every route is marked changed instead: a cluster of
    /// 1,000 groups joining a table of 500,000 topics took 2,000 walks (11 s of registry time,
    /// against Java's 3.7 s), and the routes dropped that did not change are encoded again when
    /// next asked.
    pub(super) fn invalidate_broker_topics(&mut self, name: &BrokerName) {
        let log = &mut self.changes;
        log.version += 1;
        if log.pending.all {
            return;
        }
        if log.served.len() > GROUP_WALK_MAX_TOPICS {
            return log.all();
        }
        let topics = &self.topics;
        let pending = &mut log.pending;
        log.served.retain(|topic| {
            let shows = topics
                .get(topic.as_str())
                .is_some_and(|queues| queues.contains(name.as_str()));
            if shows {
                pending.topics.push(topic.clone());
            }
            !shows
        });
    }

    /// Whether routes changed since the last [`RouteTables::take_changes`] (of those handed out).
    pub fn has_changes(&self) -> bool {
        !self.changes.pending.is_empty()
    }

    /// The routes changed since the last call (emptied).
    pub fn take_changes(&mut self) -> RouteChanges {
        std::mem::take(&mut self.changes.pending)
    }

    /// Counts every change of the routes, handed out or not: an answer read from the tables
    /// (a topic list) is current as long as it stays the same.
    pub fn route_version(&self) -> u64 {
        self.changes.version
    }

    /// The groups whose smallest broker id changed since the last call (emptied).
    pub fn take_min_id_changes(&mut self) -> Vec<super::MinIdChange> {
        std::mem::take(&mut self.min_id_changes)
    }
}
