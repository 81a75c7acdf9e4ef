//! The encoded-route cache: each topic keeps its route encoded in both JSON styles, filled on
//! first query and dropped whenever anything the route shows changes, within a byte budget.

use bytes::Bytes;
use rmq_protocol::body::to_json;
use rmq_protocol::fastjson::JsonStyle;

use super::ids::BrokerName;
use super::tables::{style_slot, RouteChanges, RouteTables, TopicEntry};

impl RouteTables {
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
            Self::drop_encoded(topic, entry, &mut self.cached_bytes, &mut self.changes);
        }
    }

    /// Drops every encoded route.
    pub fn invalidate_all(&mut self) {
        for entry in self.topics.values_mut() {
            entry.encoded = Default::default();
        }
        self.cached_bytes = 0;
        self.changes.all = true;
        self.changes.topics.clear();
    }

    /// Drops the encoded routes of the topics a group serves (its addresses or flags changed).
    pub(super) fn invalidate_broker_topics(&mut self, name: &BrokerName) {
        for (topic, entry) in self.topics.iter_mut() {
            if entry.queues.contains_key(name) {
                Self::drop_encoded(
                    topic.as_str(),
                    entry,
                    &mut self.cached_bytes,
                    &mut self.changes,
                );
            }
        }
    }

    pub(super) fn encoded_len(entry: &TopicEntry) -> usize {
        entry.encoded.iter().flatten().map(Bytes::len).sum()
    }

    /// Drops a topic's encoded routes, here and (through the recorded change) everywhere.
    pub(super) fn drop_encoded(
        topic: &str,
        entry: &mut TopicEntry,
        cached_bytes: &mut usize,
        changes: &mut RouteChanges,
    ) {
        *cached_bytes = cached_bytes.saturating_sub(Self::encoded_len(entry));
        entry.encoded = Default::default();
        changes.topic(topic);
    }

    /// Whether routes changed since the last [`RouteTables::take_changes`].
    pub fn has_changes(&self) -> bool {
        !self.changes.is_empty()
    }

    /// The routes changed since the last call (emptied).
    pub fn take_changes(&mut self) -> RouteChanges {
        std::mem::take(&mut self.changes)
    }

    /// The groups whose smallest broker id changed since the last call (emptied).
    pub fn take_min_id_changes(&mut self) -> Vec<super::MinIdChange> {
        std::mem::take(&mut self.min_id_changes)
    }
}
