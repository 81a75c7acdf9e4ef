//! Who hosts what: the dev cluster's simulated brokers and the two victims, and whether a
//! route lists an instance.

use rmq_protocol::body::TopicRouteData;
use rmq_tools::broker::FakeBroker;

use crate::ledger::Inst;

pub const CLUSTER: &str = "SoakCluster";
/// Hosted by every broker group.
pub const SHARED_TOPIC: &str = "soak-shared";
/// Hosted by nobody: must always be TOPIC_NOT_EXIST.
pub const NO_SUCH_TOPIC: &str = "soak-no-such-topic";

/// One broker instance of the topology.
#[derive(Debug, Clone)]
pub struct Instance {
    pub broker: FakeBroker,
    /// Driven by the soak itself (its connections are killed mid-frame), not a `SimBroker`.
    pub victim: bool,
    /// A victim registering in the 4.x compressed form.
    pub compressed: bool,
}

impl Instance {
    pub fn label(&self) -> String {
        format!("{}#{}", self.broker.name, self.broker.id)
    }
}

/// Who hosts what.
#[derive(Debug)]
pub struct Topology {
    pub instances: Vec<Instance>,
    /// Every topic a broker hosts.
    pub topics: Vec<String>,
}

impl Topology {
    /// Three groups of the dev cluster's simulated brokers (a master and a slave each, two
    /// topics of their own and the shared one) and two victim masters (one registering as 5.x,
    /// one in the 4.x compressed form).
    pub fn new() -> Self {
        let mut instances = Vec::new();
        let mut topics = vec![SHARED_TOPIC.to_owned()];
        for (g, group) in ["a", "b", "c"].iter().enumerate() {
            let own: Vec<String> = (0..2).map(|t| format!("soak-{group}-{t}")).collect();
            topics.extend(own.iter().cloned());
            let mut hosted = own;
            hosted.push(SHARED_TOPIC.to_owned());
            for id in 0..2u16 {
                // Advertised only: a NameServer never dials a broker.
                let port = 10_911 + g as u16 * 100 + id * 10;
                instances.push(Instance {
                    broker: FakeBroker::new(
                        CLUSTER,
                        &format!("broker-{group}"),
                        i64::from(id),
                        port,
                        hosted.clone(),
                    ),
                    victim: false,
                    compressed: false,
                });
            }
        }
        for (v, name) in ["x", "y"].iter().enumerate() {
            let own = format!("soak-victim-{name}");
            topics.push(own.clone());
            instances.push(Instance {
                broker: FakeBroker::new(
                    CLUSTER,
                    &format!("victim-{name}"),
                    0,
                    11_911 + v as u16 * 100,
                    vec![own, SHARED_TOPIC.to_owned()],
                ),
                victim: true,
                compressed: v == 1,
            });
        }
        Self { instances, topics }
    }

    pub fn all(&self) -> impl Iterator<Item = Inst> {
        (0..self.instances.len()).map(Inst)
    }

    pub fn get(&self, inst: Inst) -> Option<&Instance> {
        self.instances.get(inst.0)
    }

    pub fn label(&self, inst: Inst) -> String {
        self.get(inst).map(Instance::label).unwrap_or_default()
    }

    pub fn hosting<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = Inst> + 'a {
        self.all().filter(move |i| {
            self.get(*i)
                .is_some_and(|inst| inst.broker.topics.iter().any(|t| t == topic))
        })
    }

    /// The master of a slave's group (`None` for a master).
    pub fn master_of(&self, inst: Inst) -> Option<Inst> {
        let slave = self.get(inst).filter(|i| i.broker.id != 0)?;
        self.all().find(|m| {
            self.get(*m)
                .is_some_and(|i| i.broker.id == 0 && i.broker.name == slave.broker.name)
        })
    }

    pub fn victims(&self) -> Vec<Inst> {
        self.all()
            .filter(|i| self.get(*i).is_some_and(|x| x.victim))
            .collect()
    }
}

/// Whether `route` lists `inst` (and, for a master, its queues).
pub fn lists(route: &TopicRouteData, instance: &Instance) -> bool {
    let b = &instance.broker;
    let addr = route.broker_datas.iter().any(|bd| {
        bd.broker_name == b.name && bd.broker_addrs.get(&b.id).is_some_and(|a| *a == b.addr)
    });
    let queues = b.id != 0 || route.queue_datas.iter().any(|q| q.broker_name == b.name);
    addr && queues
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topology_hosts_the_shared_topic_everywhere() {
        let topo = Topology::new();
        assert_eq!(topo.hosting(SHARED_TOPIC).count(), topo.instances.len());
        assert_eq!(topo.hosting("soak-a-0").count(), 2);
        assert_eq!(topo.hosting(NO_SUCH_TOPIC).count(), 0);
        assert_eq!(topo.victims().len(), 2);
        assert_eq!(topo.master_of(Inst(1)), Some(Inst(0)));
        assert_eq!(topo.master_of(Inst(0)), None);
    }
}
