//! What changed since the registry last asked: the topics whose route shows something new (the
//! connection threads drop their encoded copies of them), and the broker groups whose smallest
//! broker id changed (the brokers are told).

use super::ids::BrokerName;
use super::tables::{RouteChanges, RouteTables};

/// The largest table walked for the topics of one changed group (a walk takes about a
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
        self.changes.all = true;
        self.changes.topics.clear();
    }

    /// Records that the topics a group serves changed (its addresses or flags did). Finding
    /// them is a walk of the whole table, so above [`GROUP_WALK_MAX_TOPICS`] every route is
    /// marked changed instead: a cluster of 1,000 groups joining a table of 500,000 topics took
    /// 2,000 walks (11 s of registry time, against Java's 3.7 s), and the routes dropped that
    /// did not change are encoded again when next asked.
    pub(super) fn invalidate_broker_topics(&mut self, name: &BrokerName) {
        if self.changes.all {
            return;
        }
        if self.topics.len() > GROUP_WALK_MAX_TOPICS {
            return self.invalidate_all();
        }
        for (topic, queues) in self.topics.iter() {
            if queues.contains(name.as_str()) {
                self.changes.topic(topic);
            }
        }
    }

    /// Whether routes changed since the last [`RouteTables::take_changes`].
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The routes changed since the last call (emptied).
    pub fn take_changes(&mut self) -> RouteChanges {
        if !self.changes.is_empty() {
            self.changes_taken += 1;
        }
        std::mem::take(&mut self.changes)
    }

    /// Counts the non-empty [`RouteTables::take_changes`]: an answer read from the tables
    /// (a topic list) is current as long as it stays the same.
    pub fn changes_taken(&self) -> u64 {
        self.changes_taken
    }

    /// The groups whose smallest broker id changed since the last call (emptied).
    pub fn take_min_id_changes(&mut self) -> Vec<super::MinIdChange> {
        std::mem::take(&mut self.min_id_changes)
    }
}
