//! The route scenarios of spec §10 (Java's RouteInfoManager*Test), against the pure tables.

use std::time::{Duration, Instant};

use rmq_protocol::body::{
    perm, DataVersion, QueueData, TopicConfig, TopicConfigWrapper, TopicQueueMappingInfo,
};
use rmq_protocol::fastjson::JsonStyle;

use super::*;

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
    tables.register(reg.into_reg(), Instant::now())
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
    RouteTables::new(
        RouteOptions {
            support_acting_master: true,
            ..RouteOptions::default()
        },
        1 << 20,
    )
}

#[test]
fn get_all_cluster_info() {
    let mut t = RouteTables::default();
    register(
        &mut t,
        Reg::new("b1", "127.0.0.1:10911", 0, &["t1"]).cluster("c1"),
    );
    register(
        &mut t,
        Reg::new("b2", "127.0.0.1:10921", 0, &["t2"]).cluster("c2"),
    );
    let info = t.cluster_info();
    assert_eq!(info.cluster_addr_table.len(), 2);
    assert!(info.cluster_addr_table["c1"].contains("b1"));
    assert!(info.cluster_addr_table["c2"].contains("b2"));
    assert_eq!(
        info.broker_addr_table["b1"].broker_addrs[&0],
        "127.0.0.1:10911"
    );
    assert_eq!(
        info.broker_addr_table["b2"].broker_addrs[&0],
        "127.0.0.1:10921"
    );
}

#[test]
fn delete_topic_with_and_without_cluster() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    assert!(t.delete_topic("t", None));
    assert!(t.topic_route("t").is_none());

    register(
        &mut t,
        Reg::new("b1", "127.0.0.1:10911", 0, &["t"])
            .cluster("c1")
            .version(version(2)),
    );
    register(
        &mut t,
        Reg::new("b2", "127.0.0.1:10921", 0, &["t"]).cluster("c2"),
    );
    assert!(t.delete_topic("t", Some("c1")));
    let route = t.topic_route("t").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "b2");
    // Unknown cluster: no-op.
    assert!(!t.delete_topic("t", Some("nope")));
    assert!(t.topic_route("t").is_some());
}

#[test]
fn get_all_topic_list() {
    let mut t = RouteTables::default();
    assert!(t.all_topics().topic_list.is_empty());
    register(&mut t, Reg::master(&["a", "b", "c"]));
    let list = t.all_topics().topic_list;
    assert!(["a", "b", "c", BASE_TOPIC]
        .iter()
        .all(|x| list.contains(*x)));
}

#[test]
fn slave_learns_master_ha_address() {
    let mut t = RouteTables::default();
    assert_eq!(
        register(&mut t, Reg::master(&["t"])),
        RegisterOutcome::Registered {
            ha_server_addr: None,
            master_addr: None
        }
    );
    assert_eq!(
        register(&mut t, Reg::slave(&["t"])),
        RegisterOutcome::Registered {
            ha_server_addr: Some(MASTER_HA.into()),
            master_addr: Some(MASTER.into())
        }
    );
    // registerSlaveBroker: ids 0 and 1.
    assert_eq!(addrs(&t, "t"), vec![(0, MASTER.into()), (1, SLAVE.into())]);
}

#[test]
fn slave_without_live_master_gets_no_addresses() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]).cluster("other"));
    // The group's id 0 lives in cluster "other", not in the slave's cluster.
    let outcome = register(&mut t, Reg::slave(&["t"]));
    assert_eq!(
        outcome,
        RegisterOutcome::Registered {
            ha_server_addr: None,
            master_addr: None
        }
    );
}

#[test]
fn unregister_only_broker_removes_routes() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t1", "t2"]));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert!(t.topic_route("t1").is_none());
    assert!(t.topic_route(BASE_TOPIC).is_none());
    assert!(t.cluster_info().cluster_addr_table.is_empty());
    assert_eq!(t.live_count(), 0);
}

#[test]
fn create_new_topic_on_reregistration() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::slave(&["t"]));
    register(&mut t, Reg::master(&["t", "new"]).version(version(2)));
    assert_eq!(
        addrs(&t, "new"),
        vec![(0, MASTER.into()), (1, SLAVE.into())]
    );
}

#[test]
fn new_topic_under_same_data_version_is_still_added() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::master(&["t", "late"]));
    assert!(t.topic_route("late").is_some());
}

#[test]
fn switch_broker_role() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::slave(&["t"]));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(addrs(&t, "t"), vec![(1, SLAVE.into())]);
    // The slave takes over as id 0 with a new data version.
    register(
        &mut t,
        Reg::new(BROKER, SLAVE, 0, &["t"]).version(version(2)),
    );
    assert_eq!(addrs(&t, "t"), vec![(0, SLAVE.into())]);
    // The old master comes back as id 1.
    register(
        &mut t,
        Reg::new(BROKER, MASTER, 1, &["t"]).version(version(2)),
    );
    assert_eq!(addrs(&t, "t"), vec![(0, SLAVE.into()), (1, MASTER.into())]);
}

#[test]
fn switch_broker_role_by_channel_close() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]).conn(10));
    register(&mut t, Reg::slave(&["t"]).conn(11));
    assert_eq!(
        t.channel_closed(ConnId(10)),
        Some(BrokerInstance::new(CLUSTER, MASTER))
    );
    assert_eq!(addrs(&t, "t"), vec![(1, SLAVE.into())]);
    register(
        &mut t,
        Reg::new(BROKER, SLAVE, 0, &["t"])
            .version(version(2))
            .conn(11),
    );
    assert_eq!(addrs(&t, "t"), vec![(0, SLAVE.into())]);
}

#[test]
fn unregister_slave_keeps_master() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::slave(&["t"]));
    t.unregister(&[unreg(BROKER, SLAVE, 1)]);
    assert_eq!(addrs(&t, "t"), vec![(0, MASTER.into())]);
}

#[test]
fn unregister_master_with_acting_master() {
    let mut t = acting_tables();
    register(&mut t, Reg::master(&["t"]).acting_master(Some(true)));
    register(&mut t, Reg::slave(&["t"]).acting_master(Some(true)));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    // The slave is shown as acting master at id 0, read-only.
    assert_eq!(addrs(&t, "t"), vec![(0, SLAVE.into())]);
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ);
}

#[test]
fn unregister_master_old_version() {
    let mut t = acting_tables();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::slave(&["t"]));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(addrs(&t, "t"), vec![(1, SLAVE.into())]);
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ | perm::WRITE);
}

#[test]
fn batch_unregister_of_two_brokers() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::new("b1", "127.0.0.1:1", 0, &["t1"]));
    register(&mut t, Reg::new("b2", "127.0.0.1:2", 0, &["t2"]));
    t.unregister(&[unreg("b1", "127.0.0.1:1", 0), unreg("b2", "127.0.0.1:2", 0)]);
    assert!(t.topic_route("t1").is_none());
    assert!(t.topic_route("t2").is_none());
    assert_eq!(t.topic_count(), 0);
}

#[test]
fn data_version_change_detection() {
    let mut t = RouteTables::default();
    let inst = BrokerInstance::new(CLUSTER, MASTER);
    let now = Instant::now();
    // Before registration: changed, nothing stored.
    assert_eq!(
        t.query_data_version(&inst, Some(&version(1)), now),
        (true, None)
    );
    register(&mut t, Reg::master(&["t"]));
    assert_eq!(
        t.query_data_version(&inst, Some(&version(1)), now),
        (false, Some(version(1)))
    );
    let mut other_ts = version(1);
    other_ts.timestamp += 1;
    assert!(t.query_data_version(&inst, Some(&other_ts), now).0);
    assert!(t.query_data_version(&inst, Some(&version(2)), now).0);
    assert!(t.query_data_version(&inst, None, now).0);
}

#[test]
fn same_address_in_two_clusters_is_independent() {
    let mut t = RouteTables::default();
    register(
        &mut t,
        Reg::new(
            "default-broker",
            "127.0.0.1:10911",
            1234,
            &["unit-test0", "unit-test1"],
        )
        .cluster("default-cluster"),
    );
    let dv2 = DataVersion {
        counter: 20,
        state_version: 0,
        timestamp: 200,
    };
    register(
        &mut t,
        Reg::new(
            "default-broker",
            "127.0.0.1:10911",
            1234,
            &["unit-test0", "unit-test1"],
        )
        .cluster("default-cluster-1")
        .version(dv2),
    );
    let a = BrokerInstance::new("default-cluster", "127.0.0.1:10911");
    let b = BrokerInstance::new("default-cluster-1", "127.0.0.1:10911");
    assert_eq!(t.live_broker(&a).unwrap().data_version, version(1));
    assert_eq!(t.live_broker(&b).unwrap().data_version, dv2);
    t.unregister(&[Unregistration {
        cluster: "default-cluster-1".into(),
        addr: "127.0.0.1:10911".into(),
        name: "default-broker".into(),
        id: 1234,
    }]);
    assert!(t.live_broker(&a).is_some());
    assert!(t.live_broker(&b).is_none());
}

#[test]
fn wipe_and_add_write_perm() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    assert_eq!(t.wipe_write_perm(BROKER), 2);
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ);
    // Already wiped: still counted.
    assert_eq!(t.wipe_write_perm(BROKER), 2);
    assert_eq!(t.add_write_perm(BROKER), 2);
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ | perm::WRITE);
    assert_eq!(t.wipe_write_perm("unknown"), 0);
    // A re-registration with the same data version keeps the wiped perm.
    t.wipe_write_perm(BROKER);
    register(&mut t, Reg::master(&["t"]));
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ);
    // A new data version restores the broker's own perm.
    register(&mut t, Reg::master(&["t"]).version(version(2)));
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ | perm::WRITE);
}

#[test]
fn add_write_perm_replaces_other_bits() {
    let mut t = RouteTables::default();
    let mut reg = Reg::master(&["t"]);
    reg.topics.topic_config_table.get_mut("t").unwrap().perm =
        perm::PRIORITY | perm::READ | perm::INHERIT;
    register(&mut t, reg);
    t.add_write_perm(BROKER);
    assert_eq!(perm_of(&t, "t", BROKER), 6);
}

#[test]
fn pickup_route_data() {
    let mut t = RouteTables::default();
    assert!(t.topic_route("t").is_none());
    register(&mut t, Reg::master(&["t"]));
    let route = t.topic_route("t").unwrap();
    assert_eq!(route.broker_datas.len(), 1);
    assert_eq!(
        route.queue_datas,
        vec![QueueData {
            broker_name: BROKER.into(),
            perm: 6,
            read_queue_nums: 8,
            topic_sys_flag: 0,
            write_queue_nums: 8
        }]
    );
    register(&mut t, Reg::new("other", "127.0.0.1:10999", 0, &["t"]));
    let route = t.topic_route("t").unwrap();
    assert_eq!(route.broker_datas.len(), 2);
    assert_eq!(route.queue_datas.len(), 2);
}

#[test]
fn pickup_route_with_slave() {
    let mut t = acting_tables();
    register(&mut t, Reg::master(&["t"]).acting_master(Some(true)));
    register(&mut t, Reg::slave(&["t"]).acting_master(Some(true)));
    assert_eq!(addrs(&t, "t").len(), 2);
    assert!(perm::is_writeable(perm_of(&t, "t", BROKER)));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(addrs(&t, "t").len(), 1);
    assert!(!perm::is_writeable(perm_of(&t, "t", BROKER)));
    register(
        &mut t,
        Reg::master(&["t"])
            .acting_master(Some(true))
            .version(version(2)),
    );
    assert_eq!(addrs(&t, "t").len(), 2);
    assert!(perm::is_writeable(perm_of(&t, "t", BROKER)));
}

#[test]
fn register_only_slave_broker() {
    let mut t = acting_tables();
    // A lone new-version slave with acting master: read-only route, shown as id 0.
    register(&mut t, Reg::slave(&["t"]).acting_master(Some(true)));
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ);
    assert_eq!(addrs(&t, "t"), vec![(0, SLAVE.into())]);
    register(&mut t, Reg::master(&["t"]).acting_master(Some(true)));
    assert!(perm::is_writeable(perm_of(&t, "t", BROKER)));
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(perm_of(&t, "t", BROKER), perm::READ);
    register(
        &mut t,
        Reg::master(&["t"])
            .acting_master(Some(true))
            .version(version(2)),
    );
    assert!(perm::is_writeable(perm_of(&t, "t", BROKER)));
}

#[test]
fn old_version_slave_never_creates_routes() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::slave(&["t"]).acting_master(None));
    assert!(t.topic_route("t").is_none());
    // A new-version prime slave without acting master keeps its perm.
    register(&mut t, Reg::new("g2", "127.0.0.1:2", 1, &["u"]));
    assert_eq!(perm_of(&t, "u", "g2"), 6);
}

#[test]
fn slave_registration_does_not_change_master_routes() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    let mut slave = Reg::slave(&["t"]).version(version(9));
    slave
        .topics
        .topic_config_table
        .get_mut("t")
        .unwrap()
        .write_queue_nums = 1;
    register(&mut t, slave);
    let route = t.topic_route("t").unwrap();
    assert_eq!(route.queue_datas[0].write_queue_nums, 8);
}

#[test]
fn partition_order_topic_with_acting_master() {
    let mut t = acting_tables();
    register(
        &mut t,
        Reg::new("g1", "127.0.0.1:1", 0, &["order"]).acting_master(Some(true)),
    );
    register(
        &mut t,
        Reg::new("g1", "127.0.0.1:2", 1, &["order"]).acting_master(Some(true)),
    );
    register(
        &mut t,
        Reg::new("g2", "127.0.0.1:3", 0, &["order"]).acting_master(Some(true)),
    );
    register(
        &mut t,
        Reg::new("g2", "127.0.0.1:4", 1, &["order"]).acting_master(Some(true)),
    );
    t.unregister(&[unreg("g1", "127.0.0.1:1", 0)]);
    let route = t.topic_route("order").unwrap();
    let g1 = route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == "g1")
        .unwrap();
    let g2 = route
        .broker_datas
        .iter()
        .find(|b| b.broker_name == "g2")
        .unwrap();
    assert_eq!(
        g1.broker_addrs.iter().collect::<Vec<_>>(),
        vec![(&0, &"127.0.0.1:2".to_owned())]
    );
    assert_eq!(g2.broker_addrs.len(), 2);
    assert_eq!(perm_of(&t, "order", "g1"), perm::READ);
    assert_eq!(perm_of(&t, "order", "g2"), 6);
}

#[test]
fn sync_member_group_topics_are_not_rewritten() {
    let mut t = acting_tables();
    let topic = "rmq_sys_SYNC_BROKER_MEMBER_Default_Broker";
    register(&mut t, Reg::slave(&[topic]).acting_master(Some(true)));
    assert_eq!(addrs(&t, topic), vec![(1, SLAVE.into())]);
}

#[test]
fn channel_close_removes_only_its_broker() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]).conn(10));
    register(&mut t, Reg::slave(&["t"]).conn(11));
    // A client connection: nothing happens.
    assert_eq!(t.channel_closed(ConnId(99)), None);
    t.channel_closed(ConnId(10));
    assert_eq!(addrs(&t, "t"), vec![(1, SLAVE.into())]);
    t.channel_closed(ConnId(11));
    assert!(t.topic_route("t").is_none());
    // Idempotent.
    assert_eq!(t.channel_closed(ConnId(11)), None);
}

#[test]
fn only_the_latest_registration_connection_counts() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]).conn(1));
    register(&mut t, Reg::master(&["t"]).conn(2));
    assert_eq!(t.channel_closed(ConnId(1)), None);
    assert!(t.topic_route("t").is_some());
    assert!(t.channel_closed(ConnId(2)).is_some());
    assert!(t.topic_route("t").is_none());
}

#[test]
fn expiry_scan_with_explicit_time() {
    let mut t = RouteTables::default();
    let start = Instant::now();
    t.register(Reg::master(&["t"]).conn(7).into_reg(), start);
    t.register(
        Reg::slave(&["t"])
            .conn(8)
            .timeout(Duration::from_secs(30))
            .into_reg(),
        start,
    );
    // Exactly at the deadline nothing expires (strictly less than now).
    assert!(t.scan_inactive(start + Duration::from_secs(30)).is_empty());
    let expired = t.scan_inactive(start + Duration::from_secs(31));
    assert_eq!(
        expired,
        vec![ExpiredBroker {
            instance: BrokerInstance::new(CLUSTER, SLAVE),
            conn: ConnId(8)
        }]
    );
    assert_eq!(addrs(&t, "t"), vec![(0, MASTER.into())]);
    // A heartbeat keeps the master alive past its default expiry.
    assert!(t.heartbeat(
        &BrokerInstance::new(CLUSTER, MASTER),
        start + Duration::from_secs(100)
    ));
    assert!(t.scan_inactive(start + Duration::from_secs(200)).is_empty());
    let expired = t.scan_inactive(start + Duration::from_secs(221));
    assert_eq!(expired.len(), 1);
    assert!(t.topic_route("t").is_none());
    assert!(!t.heartbeat(&BrokerInstance::new(CLUSTER, MASTER), start));
}

#[test]
fn query_data_version_refreshes_liveness() {
    let mut t = RouteTables::default();
    let start = Instant::now();
    t.register(Reg::master(&["t"]).into_reg(), start);
    let inst = BrokerInstance::new(CLUSTER, MASTER);
    t.query_data_version(&inst, Some(&version(5)), start + Duration::from_secs(100));
    assert!(t.scan_inactive(start + Duration::from_secs(150)).is_empty());
}

#[test]
fn keep_topic_with_broker_registration_by_default() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t1", "t2"]));
    register(&mut t, Reg::master(&["t1"]).version(version(2)));
    assert!(t.topic_route("t2").is_some());
}

#[test]
fn delete_topic_with_broker_registration() {
    let mut t = RouteTables::new(
        RouteOptions {
            delete_topic_with_broker_registration: true,
            ..RouteOptions::default()
        },
        1 << 20,
    );
    register(&mut t, Reg::new("b1", "127.0.0.1:1", 0, &["t1", "t2"]));
    register(&mut t, Reg::new("b2", "127.0.0.1:2", 0, &["t1", "t2"]));
    register(
        &mut t,
        Reg::new("b1", "127.0.0.1:1", 0, &["t1"]).version(version(2)),
    );
    let route = t.topic_route("t2").unwrap();
    assert_eq!(route.queue_datas.len(), 1);
    assert_eq!(route.queue_datas[0].broker_name, "b2");
    register(
        &mut t,
        Reg::new("b2", "127.0.0.1:2", 0, &["t1"]).version(version(2)),
    );
    assert!(t.topic_route("t2").is_none());
    assert!(t.topic_route("t1").is_some());
}

#[test]
fn register_single_topic() {
    let mut t = RouteTables::new(
        RouteOptions {
            delete_topic_with_broker_registration: true,
            ..RouteOptions::default()
        },
        1 << 20,
    );
    let qd = |name: &str| QueueData {
        broker_name: name.into(),
        perm: 6,
        read_queue_nums: 4,
        topic_sys_flag: 0,
        write_queue_nums: 4,
    };
    t.register_topic("single", &[qd(BROKER)]);
    assert!(t.topic_route("single").is_none());
    register(&mut t, Reg::master(&["t"]));
    t.register_topic("single", &[qd(BROKER)]);
    assert_eq!(
        t.topic_route("single").unwrap().queue_datas[0].read_queue_nums,
        4
    );
    // New topic with one unknown broker: nothing added.
    t.register_topic("mixed", &[qd(BROKER), qd("ghost")]);
    assert!(t.topic_route("mixed").is_none());
    // A full registration without it removes it (flag on).
    register(&mut t, Reg::master(&["t"]).version(version(2)));
    assert!(t.topic_route("single").is_none());
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(t.topic_count(), 0);
}

#[test]
fn single_topic_first_registration_fails() {
    let mut t = RouteTables::default();
    let mut reg = Reg::master(&[]);
    assert_eq!(reg.topics.topic_config_table.len(), 1);
    reg.inner.conn = ConnId(5);
    assert_eq!(
        register(&mut t, reg),
        RegisterOutcome::SingleTopicFirstRegistration
    );
    // The cluster and an empty group remain, as in Java; no route, no liveness.
    let info = t.cluster_info();
    assert!(info.broker_addr_table[BROKER].broker_addrs.is_empty());
    assert_eq!(t.live_count(), 0);
    // Once registered, a one-topic (incremental) registration is accepted.
    register(&mut t, Reg::master(&["t"]));
    assert!(matches!(
        register(&mut t, Reg::master(&[])),
        RegisterOutcome::Registered { .. }
    ));
}

#[test]
fn stale_state_version_is_ignored() {
    let mut t = RouteTables::default();
    let newer = DataVersion {
        state_version: 5,
        ..version(1)
    };
    register(&mut t, Reg::master(&["t"]).version(newer));
    let outcome = register(&mut t, Reg::new(BROKER, "127.0.0.1:9999", 0, &["t"]));
    assert_eq!(outcome, RegisterOutcome::StaleStateVersion);
    assert_eq!(addrs(&t, "t"), vec![(0, MASTER.into())]);
    assert!(t
        .live_broker(&BrokerInstance::new(CLUSTER, "127.0.0.1:9999"))
        .is_none());
    // An equal or newer state version takes the id over.
    register(
        &mut t,
        Reg::new(BROKER, "127.0.0.1:9999", 0, &["t"]).version(newer),
    );
    assert_eq!(addrs(&t, "t"), vec![(0, "127.0.0.1:9999".into())]);
}

#[test]
fn master_change_from_slave_and_unregister_by_address() {
    // TestBase: 3 groups x ids 0,1,2.
    let mut t = RouteTables::default();
    for i in 0..3 {
        for id in 0..3 {
            register(
                &mut t,
                Reg::new(
                    &format!("broker-{i}"),
                    &format!("cluster-broker-{i}:{id}"),
                    id,
                    &["topic-0", "topic-1"],
                ),
            );
        }
    }
    register(
        &mut t,
        Reg::new("broker-0", "cluster-broker-0:1", 0, &["topic-0", "topic-1"]).version(version(2)),
    );
    let group = t.broker_group("broker-0").unwrap();
    assert_eq!(
        group.addrs.get(&0).map(BrokerAddr::as_str),
        Some("cluster-broker-0:1")
    );
    assert_eq!(group.addrs.get(&1), None);
    t.unregister(&[unreg("broker-1", "cluster-broker-1:2", 2)]);
    assert!(!t.broker_group("broker-1").unwrap().addrs.contains_key(&2));
    assert_eq!(t.system_topics().topic_list.len(), 4);
}

#[test]
fn topic_lists() {
    let mut t = RouteTables::default();
    let mut reg = Reg::new("b1", "127.0.0.1:1", 0, &["unit", "sub", "both"]).cluster("c1");
    let table = &mut reg.topics.topic_config_table;
    table.get_mut("unit").unwrap().topic_sys_flag = 1;
    table.get_mut("sub").unwrap().topic_sys_flag = 2;
    table.get_mut("both").unwrap().topic_sys_flag = 3;
    register(&mut t, reg);
    register(
        &mut t,
        Reg::new("b2", "127.0.0.1:2", 0, &["other"]).cluster("c2"),
    );
    let names = |l: rmq_protocol::body::TopicList| l.topic_list.into_iter().collect::<Vec<_>>();
    assert_eq!(names(t.unit_topics()), vec!["both", "unit"]);
    assert_eq!(names(t.has_unit_sub_topics()), vec!["both", "sub"]);
    assert_eq!(names(t.has_unit_sub_ununit_topics()), vec!["sub"]);
    assert_eq!(names(t.topics_by_cluster("c2")), vec![BASE_TOPIC, "other"]);
    assert!(t.topics_by_cluster("nope").topic_list.is_empty());
    let sys = t.system_topics();
    assert_eq!(names(sys.clone()), vec!["b1", "b2", "c1", "c2"]);
    assert_eq!(sys.broker_addr.as_deref(), Some("127.0.0.1:1"));
    assert_eq!(RouteTables::default().system_topics().broker_addr, None);
}

#[test]
fn member_group_by_name_only() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t"]));
    register(&mut t, Reg::slave(&["t"]));
    let g = t.member_group("any-cluster", BROKER);
    assert_eq!(g.broker_addrs.len(), 2);
    assert_eq!(g.cluster.as_deref(), Some("any-cluster"));
    assert!(t.member_group(CLUSTER, "nope").broker_addrs.is_empty());
}

#[test]
fn zone_and_mappings_show_in_routes() {
    let mut t = RouteTables::default();
    let mut reg = Reg::master(&["static"]);
    reg.inner.zone_name = Some("zone-a".into());
    reg.topics.topic_queue_mapping_info_map.insert(
        "static".into(),
        TopicQueueMappingInfo {
            bname: Some(BROKER.into()),
            topic: Some("static".into()),
            total_queues: 8,
            ..TopicQueueMappingInfo::default()
        },
    );
    register(&mut t, reg);
    let route = t.topic_route("static").unwrap();
    assert_eq!(route.broker_datas[0].zone_name.as_deref(), Some("zone-a"));
    assert_eq!(
        route.topic_queue_mapping_by_broker.unwrap()[BROKER].total_queues,
        8
    );
    assert!(t
        .topic_route(BASE_TOPIC)
        .unwrap()
        .topic_queue_mapping_by_broker
        .is_none());
}

#[test]
fn filter_servers_show_in_routes() {
    let mut t = RouteTables::default();
    let mut reg = Reg::master(&["t"]);
    reg.inner.filter_servers = Some(vec!["127.0.0.1:7000".into()]);
    register(&mut t, reg);
    let body = t.route_body("t", JsonStyle::Legacy, None).unwrap();
    assert!(std::str::from_utf8(&body)
        .unwrap()
        .contains(r#""filterServerTable":{"127.0.0.1:10911":["127.0.0.1:7000"]}"#));
    // An empty list removes them, and the cached route with them.
    register(&mut t, Reg::master(&["t"]));
    let body = t.route_body("t", JsonStyle::Legacy, None).unwrap();
    assert!(std::str::from_utf8(&body)
        .unwrap()
        .contains(r#""filterServerTable":{}"#));
}

#[test]
fn encoded_routes_are_cached_until_the_route_changes() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t", "u"]));
    let a = t.route_body("t", JsonStyle::Standard, None).unwrap();
    let b = t.route_body("t", JsonStyle::Standard, None).unwrap();
    assert_eq!(
        a.as_ptr(),
        b.as_ptr(),
        "second query is served from the cache"
    );
    let legacy = t.route_body("t", JsonStyle::Legacy, None).unwrap();
    assert_ne!(legacy, a);
    let u = t.route_body("u", JsonStyle::Standard, None).unwrap();
    assert_eq!(t.cached_bytes(), a.len() + legacy.len() + u.len());

    // An unchanged re-registration keeps the cache.
    register(&mut t, Reg::master(&["t", "u"]));
    assert_eq!(
        t.route_body("t", JsonStyle::Standard, None)
            .unwrap()
            .as_ptr(),
        a.as_ptr()
    );

    // A slave joining changes the group's addresses: every topic of the group is re-encoded.
    register(&mut t, Reg::slave(&["t", "u"]));
    let c = t.route_body("t", JsonStyle::Standard, None).unwrap();
    assert_ne!(c, a);
    assert!(std::str::from_utf8(&c).unwrap().contains(SLAVE));

    // A perm change re-encodes.
    t.wipe_write_perm(BROKER);
    let d = t.route_body("t", JsonStyle::Standard, None).unwrap();
    assert!(std::str::from_utf8(&d).unwrap().contains(r#""perm":4"#));

    // Explicit invalidation (order conf changed) and deletion release the bytes.
    t.invalidate_topic("t");
    t.delete_topic("u", None);
    let cached_now = t.cached_bytes();
    assert_eq!(
        cached_now, 0,
        "t invalidated, u deleted, nothing else cached"
    );
    t.channel_closed(ConnId(1));
    t.channel_closed(ConnId(2));
    assert!(t.route_body("t", JsonStyle::Standard, None).is_none());
}

#[test]
fn cache_limit_is_respected() {
    let mut t = RouteTables::new(RouteOptions::default(), 300);
    register(&mut t, Reg::master(&["t", "u"]));
    let a = t.route_body("t", JsonStyle::Standard, None).unwrap();
    assert!(a.len() < 300);
    let b = t.route_body("u", JsonStyle::Standard, None).unwrap();
    assert!(t.cached_bytes() <= 300);
    // Served anyway, just not cached.
    assert!(b.len() > 100);
}

#[test]
fn unchanged_reregistration_skips_the_topic_walk_but_stays_exact() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t", "u"]));
    // A topic removed by an admin comes back with the next (unchanged) registration.
    t.delete_topic("t", None);
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(t.topic_route("t").is_some());
    // Split registration: same data version, different topic subsets: each subset is applied.
    register(&mut t, Reg::master(&["a1", "a2"]));
    register(&mut t, Reg::master(&["b1", "b2"]));
    for topic in ["a1", "a2", "b1", "b2", "t", "u"] {
        assert!(t.topic_route(topic).is_some(), "{topic}");
    }
    // A wiped permission survives unchanged re-registrations (nothing is rewritten).
    t.wipe_write_perm(BROKER);
    register(&mut t, Reg::master(&["b1", "b2"]));
    register(&mut t, Reg::master(&["b1", "b2"]));
    assert_eq!(perm_of(&t, "b1", BROKER), perm::READ);
    // The unregistration of another group's queues (a removal) makes the next one re-check.
    register(&mut t, Reg::new("other", "127.0.0.1:2", 0, &["b1", "z"]));
    t.unregister(&[unreg("other", "127.0.0.1:2", 0)]);
    t.delete_topic("b2", None);
    register(&mut t, Reg::master(&["b1", "b2"]));
    assert!(t.topic_route("b2").is_some());
}

/// The registration of `reg` with its body "not decoded again".
fn same_body(reg: Reg) -> Registration {
    let mut full = reg.into_reg();
    full.topics = TopicsPayload::Same(full.topics.summary());
    full
}

#[test]
fn identical_bodies_are_taken_without_their_table_only_when_exact() {
    let mut t = RouteTables::default();
    // Never registered: the table is needed.
    assert_eq!(
        t.register(same_body(Reg::master(&["t"])), Instant::now()),
        RegisterOutcome::NeedTopics
    );
    assert_eq!(t.live_count(), 0, "nothing changed");
    register(&mut t, Reg::master(&["t", "u"]));
    // The same body again: taken, liveness refreshed, routes intact.
    let later = Instant::now() + Duration::from_secs(100);
    assert!(matches!(
        t.register(same_body(Reg::master(&["t", "u"])), later),
        RegisterOutcome::Registered { .. }
    ));
    assert!(
        t.scan_inactive(later + Duration::from_secs(100)).is_empty(),
        "liveness refreshed"
    );
    assert!(t.topic_route("u").is_some());
    // A slave's identical body is taken too (slaves never write routes while a master is there).
    register(&mut t, Reg::slave(&["t", "u"]));
    assert!(matches!(
        t.register(same_body(Reg::slave(&["t", "u"])), Instant::now()),
        RegisterOutcome::Registered { .. }
    ));
    // After a removal the table is needed again, and the full registration restores the topic.
    t.delete_topic("u", None);
    assert_eq!(
        t.register(same_body(Reg::master(&["t", "u"])), Instant::now()),
        RegisterOutcome::NeedTopics
    );
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(t.topic_route("u").is_some());
    // A new data version, another id or address: needed.
    let newer = Reg::master(&["t", "u"]).version(version(2));
    assert_eq!(
        t.register(same_body(newer), Instant::now()),
        RegisterOutcome::NeedTopics
    );
    let moved = Reg::new(BROKER, "127.0.0.1:1", 0, &["t", "u"]);
    assert_eq!(
        t.register(same_body(moved), Instant::now()),
        RegisterOutcome::NeedTopics
    );
}

#[test]
fn absurd_timeouts_do_not_panic() {
    let mut t = RouteTables::default();
    let start = Instant::now();
    t.register(Reg::master(&["t"]).timeout(Duration::MAX).into_reg(), start);
    assert!(t
        .scan_inactive(start + Duration::from_secs(1_000_000))
        .is_empty());
    t.register(Reg::slave(&["t"]).timeout(Duration::ZERO).into_reg(), start);
    assert_eq!(t.scan_inactive(start + Duration::from_millis(1)).len(), 1);
}
