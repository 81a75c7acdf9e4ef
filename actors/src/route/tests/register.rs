//! Registration: Java's RouteInfoManager registration tests, and the unchanged-body fast path.

use super::*;

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
fn keep_topic_with_broker_registration_by_default() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t1", "t2"]));
    register(&mut t, Reg::master(&["t1"]).version(version(2)));
    assert!(t.topic_route("t2").is_some());
}

#[test]
fn delete_topic_with_broker_registration() {
    let mut t = RouteTables::new(RouteOptions {
        delete_topic_with_broker_registration: true,
        ..RouteOptions::default()
    });
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
    let mut t = RouteTables::new(RouteOptions {
        delete_topic_with_broker_registration: true,
        ..RouteOptions::default()
    });
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
    assert_eq!(list(t.system_topics()).topic_list.len(), 4);
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
fn each_part_of_a_split_registration_is_taken_again_without_its_table() {
    let mut t = RouteTables::default();
    let parts = [&["a1", "a2"][..], &["b1", "b2"], &["c1"]];
    for part in parts {
        register(&mut t, Reg::master(part));
    }
    // The next round, under the same data version: every part is known as applied.
    for part in parts {
        assert!(
            matches!(
                t.register(same_body(Reg::master(part)), Instant::now()),
                Ok(RegisterOutcome::Registered { .. })
            ),
            "{part:?}"
        );
    }
    // A removal anywhere: each part is needed with its table again.
    t.delete_topic("b1", None);
    assert_eq!(
        t.register(same_body(Reg::master(parts[0])), Instant::now()),
        Err(NeedTopics)
    );
    register(&mut t, Reg::master(parts[1]));
    assert!(t.topic_route("b1").is_some());
    // A new data version forgets the parts applied under the old one.
    register(&mut t, Reg::master(parts[0]).version(version(2)));
    assert_eq!(
        t.register(
            same_body(Reg::master(parts[1]).version(version(2))),
            Instant::now()
        ),
        Err(NeedTopics)
    );
}

#[test]
fn identical_bodies_are_taken_without_their_table_only_when_exact() {
    let mut t = RouteTables::default();
    // Never registered: the table is needed.
    assert_eq!(
        t.register(same_body(Reg::master(&["t"])), Instant::now()),
        Err(NeedTopics)
    );
    assert_eq!(t.live_count(), 0, "nothing changed");
    register(&mut t, Reg::master(&["t", "u"]));
    // The same body again: taken, liveness refreshed, routes intact.
    let later = Instant::now() + Duration::from_secs(100);
    assert!(matches!(
        t.register(same_body(Reg::master(&["t", "u"])), later),
        Ok(RegisterOutcome::Registered { .. })
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
        Ok(RegisterOutcome::Registered { .. })
    ));
    // After a removal the table is needed again, and the full registration restores the topic.
    t.delete_topic("u", None);
    assert_eq!(
        t.register(same_body(Reg::master(&["t", "u"])), Instant::now()),
        Err(NeedTopics)
    );
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(t.topic_route("u").is_some());
    // A new data version, another id or address: needed.
    let newer = Reg::master(&["t", "u"]).version(version(2));
    assert_eq!(
        t.register(same_body(newer), Instant::now()),
        Err(NeedTopics)
    );
    let moved = Reg::new(BROKER, "127.0.0.1:1", 0, &["t", "u"]);
    assert_eq!(
        t.register(same_body(moved), Instant::now()),
        Err(NeedTopics)
    );
}
