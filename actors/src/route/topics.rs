//! Edits of topics that do not come from a broker's registration: REGISTER_TOPIC_IN_NAMESRV,
//! the write-permission wipe and restore, DELETE_TOPIC_IN_NAMESRV
//! (docs/route-rules.md#registering-a-topic, #write-permission, #deleting-a-topic).

use crate::logging::Clipped;
use rmq_protocol::body::{perm, QueueData};
use tracing::{info, warn};

use super::ids::BrokerName;
use super::tables::RouteTables;
use super::topic_map::Queues;

impl RouteTables {
    /// REGISTER_TOPIC_IN_NAMESRV (docs/route-rules.md#registering-a-topic): every QueueData's broker group must be known.
    pub fn register_topic(&mut self, topic: &str, queue_datas: &[QueueData]) {
        if queue_datas.is_empty() {
            return;
        }
        let exists = self.topics.contains(topic);
        if !exists
            && !queue_datas
                .iter()
                .all(|q| self.brokers.contains_key(q.broker_name.as_str()))
        {
            warn!(topic = %Clipped(topic), "register topic names an unknown broker, ignored");
            return;
        }
        for q in queue_datas {
            // Java applies entries in order and stops at the first unknown broker.
            if !self.brokers.contains_key(q.broker_name.as_str()) {
                warn!(topic = %Clipped(topic), broker = %q.broker_name, "register topic names an unknown broker, stopped");
                return;
            }
            let name = self.intern_broker_name(&BrokerName::new(&q.broker_name));
            let queues = Queues {
                read: q.read_queue_nums,
                write: q.write_queue_nums,
                perm: q.perm,
                sys_flag: q.topic_sys_flag,
            };
            let mut anywhere = usize::MAX;
            if self.upsert_queues(topic, &name, queues, &mut anywhere) {
                info!(topic = %Clipped(topic), broker = %name, "new topic registered");
            }
        }
    }

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
        for (topic, topic_queues) in self.topics.iter_mut() {
            if let Some(queues) = topic_queues.get_mut(name) {
                count += 1;
                let perm = update(queues.perm);
                if perm != queues.perm {
                    queues.perm = perm;
                    self.changes.topic(topic);
                }
            }
        }
        info!(broker = name, topics = count, "write permission changed");
        count
    }

    /// DELETE_TOPIC_IN_NAMESRV (docs/route-rules.md#deleting-a-topic): the whole topic, or only the queues of one cluster's
    /// groups. Returns whether anything was removed.
    pub fn delete_topic(&mut self, topic: &str, cluster: Option<&str>) -> bool {
        let Some(cluster) = cluster.filter(|c| !c.is_empty()) else {
            let removed = self.topics.remove(topic);
            if removed.is_some() {
                self.changes.topic(topic);
                self.queue_removals += 1;
                info!(topic = %Clipped(topic), "topic deleted");
            }
            return removed.is_some();
        };
        let Some(names) = self.clusters.get(cluster).filter(|n| !n.is_empty()) else {
            return false;
        };
        let Some(queues) = self.topics.get_mut(topic) else {
            return false;
        };
        let before = queues.len();
        queues.retain(|name| !names.contains(name));
        if queues.len() == before {
            return false;
        }
        let emptied = queues.is_empty();
        self.queue_removals += 1;
        self.changes.topic(topic);
        if emptied {
            self.topics.remove(topic);
        }
        info!(topic = %Clipped(topic), cluster = %Clipped(cluster), "topic deleted from cluster");
        true
    }
}
