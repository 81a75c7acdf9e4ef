//! Warm restart: the tables as a snapshot and back (route/snapshot.rs).

use super::*;

const NOW_MS: u64 = 1_800_000_000_000;
const GRACE: Duration = Duration::from_secs(60);

fn filled() -> RouteTables {
    let mut tables = RouteTables::default();
    register(&mut tables, Reg::master(&["orders", "payments"]));
    register(&mut tables, Reg::slave(&["orders", "payments"]));
    register(
        &mut tables,
        Reg::new("broker-b", "127.0.0.1:10921", 0, &["orders"]).cluster("other"),
    );
    tables
}

fn through_json(snapshot: &RouteSnapshot) -> RouteSnapshot {
    let text = serde_json::to_vec(snapshot).unwrap();
    serde_json::from_slice(&text).unwrap()
}

#[test]
fn a_restored_table_answers_every_route_as_before() {
    let before = filled();
    let snapshot = through_json(&before.snapshot(NOW_MS));
    let mut after = RouteTables::default();
    let restored = after
        .restore(snapshot, Instant::now(), NOW_MS + 1_000, GRACE)
        .unwrap();
    assert_eq!(restored, 3);
    assert_eq!(after.unconfirmed_count(), 3);
    for topic in ["orders", "payments", BASE_TOPIC] {
        assert_eq!(
            before.topic_route(topic),
            after.topic_route(topic),
            "{topic}"
        );
    }
    assert_eq!(before.cluster_info(), after.cluster_info());
    assert!(after.take_changes().all, "every cached route goes");
}

#[test]
fn a_registration_confirms_a_restored_broker_and_the_others_expire_after_the_grace() {
    let mut tables = RouteTables::default();
    let start = Instant::now();
    tables
        .restore(filled().snapshot(NOW_MS), start, NOW_MS, GRACE)
        .unwrap();
    register_at(
        &mut tables,
        Reg::master(&["orders", "payments"]).conn(7),
        start,
    );
    assert_eq!(tables.unconfirmed_count(), 2);
    let master = BrokerInstance::new(CLUSTER, MASTER);
    assert!(!tables.live_broker(&master).unwrap().unconfirmed);

    assert!(tables.scan_inactive(start + GRACE / 2).is_empty());
    let gone = tables.scan_inactive(start + GRACE + Duration::from_secs(1));
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(gone.iter().all(|g| g.conn == NO_CONNECTION));
    assert_eq!(tables.unconfirmed_count(), 0);
    assert_eq!(addrs(&tables, "orders"), vec![(0, MASTER.to_owned())]);
    // The confirmed master keeps its own expiry (120 s from its registration).
    assert!(tables
        .scan_inactive(start + Duration::from_secs(119))
        .is_empty());
}

#[test]
fn old_future_and_foreign_snapshots_are_refused_and_leave_the_tables_empty() {
    let snapshot = filled().snapshot(NOW_MS);
    let cases = [
        (NOW_MS + DEFAULT_BROKER_EXPIRY.as_millis() as u64 + 1, None),
        (NOW_MS - 60_000, None),
        (NOW_MS, Some(SNAPSHOT_FORMAT + 1)),
    ];
    for (now_ms, format) in cases {
        let mut snapshot = snapshot.clone();
        if let Some(format) = format {
            snapshot.format = format;
        }
        let mut tables = RouteTables::default();
        let refused = tables.restore(snapshot, Instant::now(), now_ms, GRACE);
        assert!(refused.is_err(), "{now_ms} {format:?}");
        assert_eq!(tables.live_count(), 0);
        assert_eq!(tables.topic_count(), 0);
    }
    let mut twice = snapshot.clone();
    twice.brokers.push(twice.brokers[0].clone());
    let refused = RouteTables::default().restore(twice, Instant::now(), NOW_MS, GRACE);
    assert!(
        matches!(refused, Err(Unusable::Duplicate { .. })),
        "{refused:?}"
    );
}
