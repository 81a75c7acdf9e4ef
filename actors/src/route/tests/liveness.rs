//! Liveness, expiry, connection closes and unregistration.

use super::*;

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
    register_at(&mut t, Reg::master(&["t"]).conn(7), start);
    register_at(
        &mut t,
        Reg::slave(&["t"]).conn(8).timeout(Duration::from_secs(30)),
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
    register_at(&mut t, Reg::master(&["t"]), start);
    let inst = BrokerInstance::new(CLUSTER, MASTER);
    t.query_data_version(&inst, Some(&version(5)), start + Duration::from_secs(100));
    assert!(t.scan_inactive(start + Duration::from_secs(150)).is_empty());
}

#[test]
fn absurd_timeouts_do_not_panic() {
    let mut t = RouteTables::default();
    let start = Instant::now();
    register_at(&mut t, Reg::master(&["t"]).timeout(Duration::MAX), start);
    assert!(t
        .scan_inactive(start + Duration::from_secs(1_000_000))
        .is_empty());
    register_at(&mut t, Reg::slave(&["t"]).timeout(Duration::ZERO), start);
    assert_eq!(t.scan_inactive(start + Duration::from_millis(1)).len(), 1);
}

#[test]
fn registrations_keep_the_broker_software_version_heartbeats_do_not_change_it() {
    use rmq_protocol::code::version;
    let mut t = RouteTables::default();
    let master = BrokerInstance::new(CLUSTER, MASTER);
    let slave = BrokerInstance::new(CLUSTER, SLAVE);
    register(&mut t, Reg::master(&["t"]).mq_version(version::V4_9_4));
    register(&mut t, Reg::slave(&["t"]).mq_version(version::V5_0_0));
    assert_eq!(t.live_broker(&master).unwrap().mq_version, version::V4_9_4);
    assert_eq!(t.live_broker(&slave).unwrap().mq_version, version::V5_0_0);

    // Heartbeats and data-version queries refresh liveness, not the version.
    let later = Instant::now() + Duration::from_secs(5);
    assert!(t.heartbeat(&master, later));
    t.query_data_version(&master, Some(&version(1)), later);
    let live = t.live_broker(&master).unwrap();
    assert_eq!(
        (live.last_update, live.mq_version),
        (later, version::V4_9_4)
    );

    // The broker upgraded: its next registration (same topics, same data version) says so.
    register(&mut t, Reg::master(&["t"]).mq_version(version::V5_3_3));
    assert_eq!(t.live_broker(&master).unwrap().mq_version, version::V5_3_3);
    assert_eq!(
        t.live_instances()
            .into_iter()
            .map(|(instance, _, live)| (instance.addr.as_str().to_owned(), live.mq_version))
            .collect::<Vec<_>>(),
        vec![
            (MASTER.to_owned(), version::V5_3_3),
            (SLAVE.to_owned(), version::V5_0_0)
        ]
    );
}
