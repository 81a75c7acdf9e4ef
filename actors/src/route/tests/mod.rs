//! The route scenarios of Java's RouteInfoManager*Test (docs/route-rules.md#acceptance-scenarios),
//! against the pure tables, one file per concern of the tables.

use std::time::{Duration, Instant};

use rmq_protocol::body::{
    perm, DataVersion, QueueData, TopicConfig, TopicConfigWrapper, TopicQueueMappingInfo,
};

use super::*;

mod changes;
mod liveness;
mod queries;
mod register;
mod slices;
mod snapshot;

const CLUSTER: &str = "Default_Cluster";
const BROKER: &str = "Default_Broker";
const MASTER: &str = "127.0.0.1:10911";
const MASTER_HA: &str = "127.0.0.1:20911";
const SLAVE: &str = "127.0.0.1:30911";
const SLAVE_HA: &str = "127.0.0.1:40911";
const BASE_TOPIC: &str = "baseTopic";

fn version(counter: i64) -> DataVersion {
    DataVersion {
        counter,
        state_version: 0,
        timestamp: 1_700_000_000_000,
    }
}

fn topics(names: &[&str], dv: DataVersion) -> TopicConfigWrapper {
    let mut wrapper = TopicConfigWrapper {
        data_version: dv,
        ..TopicConfigWrapper::default()
    };
    for name in names.iter().chain(std::iter::once(&BASE_TOPIC)) {
        wrapper.topic_config_table.insert(
            (*name).to_owned(),
            TopicConfig::new(*name, 8, perm::READ | perm::WRITE),
        );
    }
    wrapper
}

/// A registration in the style of RouteInfoManagerNewTest: every one also carries `baseTopic`.
struct Reg {
    inner: Registration,
    topics: TopicConfigWrapper,
}

impl Reg {
    fn new(name: &str, addr: &str, id: i64, topic_names: &[&str]) -> Self {
        Self {
            inner: Registration {
                cluster: CLUSTER.into(),
                addr: addr.into(),
                name: name.into(),
                id,
                ha_server_addr: Some(if id == 0 { MASTER_HA } else { SLAVE_HA }.to_owned()),
                zone_name: None,
                heartbeat_timeout: None,
                enable_acting_master: Some(false),
                topics: TopicsPayload::Full(TopicTable::new(TopicConfigWrapper::default())),
                filter_servers: Some(Vec::new()),
                conn: ConnId(id as u64 + 1),
                peer: None,
                mq_version: rmq_protocol::code::version::V5_3_3,
            },
            topics: topics(topic_names, version(1)),
        }
    }
    fn master(topic_names: &[&str]) -> Self {
        Self::new(BROKER, MASTER, 0, topic_names)
    }
    fn slave(topic_names: &[&str]) -> Self {
        Self::new(BROKER, SLAVE, 1, topic_names)
    }
    fn cluster(mut self, cluster: &str) -> Self {
        self.inner.cluster = cluster.into();
        self
    }
    fn acting_master(mut self, on: Option<bool>) -> Self {
        self.inner.enable_acting_master = on;
        self
    }
    fn version(mut self, dv: DataVersion) -> Self {
        self.topics.data_version = dv;
        self
    }
    fn conn(mut self, conn: u64) -> Self {
        self.inner.conn = ConnId(conn);
        self
    }
    fn mq_version(mut self, ordinal: i32) -> Self {
        self.inner.mq_version = ordinal;
        self
    }
    fn timeout(mut self, timeout: Duration) -> Self {
        self.inner.heartbeat_timeout = Some(timeout);
        self
    }
    fn into_reg(self) -> Registration {
        Registration {
            topics: TopicsPayload::Full(TopicTable::new(self.topics)),
            ..self.inner
        }
    }
}

fn register(tables: &mut RouteTables, reg: Reg) -> RegisterOutcome {
    register_at(tables, reg, Instant::now())
}

fn register_at(tables: &mut RouteTables, reg: Reg, now: Instant) -> RegisterOutcome {
    tables
        .register(reg.into_reg(), now)
        .expect("a decoded table is always taken")
}

fn unreg(name: &str, addr: &str, id: i64) -> Unregistration {
    Unregistration {
        cluster: CLUSTER.into(),
        addr: addr.into(),
        name: name.into(),
        id,
    }
}

fn addrs(tables: &RouteTables, topic: &str) -> Vec<(i64, String)> {
    let route = tables.topic_route(topic).expect("route exists");
    route
        .broker_datas
        .iter()
        .flat_map(|b| b.broker_addrs.iter().map(|(id, a)| (*id, a.clone())))
        .collect()
}

fn perm_of(tables: &RouteTables, topic: &str, broker: &str) -> i32 {
    let route = tables.topic_route(topic).expect("route exists");
    route
        .queue_datas
        .iter()
        .find(|q| q.broker_name == broker)
        .map(|q| q.perm)
        .expect("queue data")
}

fn acting_tables() -> RouteTables {
    RouteTables::new(RouteOptions {
        support_acting_master: true,
        ..RouteOptions::default()
    })
}

/// A topic-list body, read back.
fn list(body: Vec<u8>) -> rmq_protocol::body::TopicList {
    rmq_protocol::fastjson::from_slice(&body).expect("a topic list")
}
