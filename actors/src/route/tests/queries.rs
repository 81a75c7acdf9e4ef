//! Routes, cluster info, topic lists, member groups, and the admin edits of topics and permissions.

use std::collections::BTreeMap;
use std::sync::Arc;

use rmq_protocol::body::to_json;
use rmq_protocol::fastjson::JsonStyle;

use super::*;

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
    assert!(list(t.all_topics()).topic_list.is_empty());
    register(&mut t, Reg::master(&["a", "b", "c"]));
    let topics = list(t.all_topics()).topic_list;
    assert!(["a", "b", "c", BASE_TOPIC]
        .iter()
        .all(|x| topics.contains(*x)));
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
    assert_eq!(names(list(t.unit_topics())), vec!["both", "unit"]);
    assert_eq!(names(list(t.has_unit_sub_topics())), vec!["both", "sub"]);
    assert_eq!(names(list(t.has_unit_sub_ununit_topics())), vec!["sub"]);
    assert_eq!(
        names(list(t.topics_by_cluster("c2"))),
        vec![BASE_TOPIC, "other"]
    );
    assert!(list(t.topics_by_cluster("nope")).topic_list.is_empty());
    let sys = list(t.system_topics());
    assert_eq!(names(sys.clone()), vec!["b1", "b2", "c1", "c2"]);
    assert_eq!(sys.broker_addr.as_deref(), Some("127.0.0.1:1"));
    assert_eq!(
        list(RouteTables::default().system_topics()).broker_addr,
        None
    );
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
    let route = t.topic_route("t").unwrap();
    assert_eq!(
        route.filter_server_table.get(MASTER),
        Some(&vec!["127.0.0.1:7000".to_owned()])
    );
    t.take_changes();
    // An empty list removes them, and the route counts as changed.
    register(&mut t, Reg::master(&["t"]));
    assert!(t.topic_route("t").unwrap().filter_server_table.is_empty());
    let changes = t.take_changes();
    assert!(changes.all || changes.topics.iter().any(|topic| topic.as_str() == "t"));
}

#[test]
fn a_groups_encoding_is_shared_by_its_topics_and_follows_every_change() {
    let mut t = acting_tables();
    register(&mut t, Reg::master(&["a", "b"]).acting_master(Some(true)));
    let (a, b) = (t.shared_route("a").unwrap(), t.shared_route("b").unwrap());
    assert!(Arc::ptr_eq(&a.broker_datas[0], &b.broker_datas[0]));
    // Cluster info answers from the same encoding: no group is copied to answer it.
    assert!(Arc::ptr_eq(
        &t.shared_cluster_info().brokers[0],
        &a.broker_datas[0]
    ));
    let was = Arc::clone(&a.broker_datas[0]);

    // A slave joins: the next route shows it, from a new encoding.
    register(&mut t, Reg::slave(&["a", "b"]).acting_master(Some(true)));
    let a = t.shared_route("a").unwrap();
    assert!(!Arc::ptr_eq(&a.broker_datas[0], &was));
    assert_eq!(addrs(&t, "a"), vec![(0, MASTER.into()), (1, SLAVE.into())]);

    // The master leaves: the slave acts as master in these routes only.
    t.unregister(&[unreg(BROKER, MASTER, 0)]);
    assert_eq!(addrs(&t, "a"), vec![(0, SLAVE.into())]);
    let group = &t.brokers[BROKER];
    let kept = group.encoded.of(&BrokerName::new(BROKER), group);
    let slave_only = BTreeMap::from([(1, SLAVE.to_owned())]);
    assert_eq!(kept.data().broker_addrs, slave_only);

    // The group goes and comes back with another cluster and address.
    t.unregister(&[unreg(BROKER, SLAVE, 1)]);
    assert!(t.shared_route("a").is_none());
    assert!(!t.brokers.contains_key(BROKER));
    register(
        &mut t,
        Reg::new(BROKER, "127.0.0.1:20911", 0, &["a"]).cluster("other"),
    );
    let route = t.topic_route("a").unwrap();
    assert_eq!(route.broker_datas[0].cluster, "other");
    assert!(!route.broker_datas[0].enable_acting_master);
    assert_eq!(addrs(&t, "a"), vec![(0, "127.0.0.1:20911".into())]);
    for style in [JsonStyle::Legacy, JsonStyle::Standard] {
        let shared = t.shared_route("a").unwrap().to_json(style);
        assert_eq!(shared, to_json(&route, style));
        let info = t.shared_cluster_info().to_json(style);
        assert_eq!(info, to_json(&t.cluster_info(), style));
    }
    assert_eq!(t.cluster_info().broker_addr_table[BROKER].cluster, "other");
}
