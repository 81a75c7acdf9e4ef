use std::collections::HashMap;

use super::*;
use crate::controller::liveness::LiveInfo;

/// Liveness from a table: id -> (epoch, max offset, priority); absent ids are dead.
struct Live(HashMap<i64, LiveInfo>);

impl Live {
    fn of(entries: &[(i64, i32, i64, i32)]) -> Self {
        Live(
            entries
                .iter()
                .map(|&(id, epoch, max_offset, priority)| {
                    (
                        id,
                        LiveInfo {
                            epoch,
                            max_offset,
                            priority,
                        },
                    )
                })
                .collect(),
        )
    }
}

impl Liveness for Live {
    fn alive(&self, _: &str, _: &str, id: i64) -> bool {
        self.0.contains_key(&id)
    }

    fn info(&self, _: &str, _: &str, id: i64) -> Option<LiveInfo> {
        self.0.get(&id).copied()
    }
}

/// A set with members 1..=n, master `master` (epoch 1) and SyncStateSet `in_sync`.
fn tables(n: i64, master: Option<i64>, in_sync: &[i64]) -> ReplicaTables {
    let mut set = BrokerSet::new("c", "b");
    for id in 1..=n {
        set.members.insert(
            id,
            Member {
                address: format!("127.0.0.1:{}", 10_000 + id),
                check_code: format!("x;{id}"),
            },
        );
    }
    set.next_id = n + 1;
    set.master = master;
    set.master_epoch = 1;
    set.sync_state_set = in_sync.iter().copied().collect();
    set.sync_state_set_epoch = 1;
    let mut t = ReplicaTables::default();
    t.load(vec![(set, 7)]);
    t
}

fn elected(d: &Decision) -> Option<i64> {
    d.change.as_ref()?.record.as_ref()?.master
}

#[test]
fn the_best_in_sync_replica_wins_by_epoch_then_offset_then_priority() {
    let t = tables(4, Some(1), &[1, 2, 3, 4]);
    let live = Live::of(&[(2, 3, 10, 5), (3, 4, 5, 9), (4, 4, 5, 1)]);
    let d = t.elect_master("b", None, false, false, &live);
    assert_eq!(d.response.code, 0);
    assert_eq!(
        elected(&d),
        Some(4),
        "same epoch and offset: lower priority"
    );
    let change = d.change.unwrap();
    assert_eq!(change.expected, 7);
    let set = change.record.unwrap();
    assert_eq!((set.master_epoch, set.sync_state_set_epoch), (2, 2));
    assert_eq!(set.sync_state_set, BTreeSet::from([4]));
    assert_eq!(
        d.elected.unwrap().members.len(),
        3,
        "the live members are told"
    );
}

#[test]
fn a_lost_master_without_in_sync_replicas_leaves_the_set_masterless_unless_unclean() {
    let t = tables(2, Some(1), &[1]);
    let live = Live::of(&[(2, 1, 0, 0)]);
    let d = t.elect_master("b", None, false, false, &live);
    assert_eq!(
        d.response.code,
        ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE.0
    );
    let set = d.change.unwrap().record.unwrap();
    assert_eq!((set.master, set.master_epoch), (None, 2));
    assert_eq!(set.sync_state_set, BTreeSet::from([1]), "the set is kept");
    // A broker asking gets a failure and nothing changes.
    let d = t.elect_master("b", Some(2), false, false, &live);
    assert_eq!(
        d.response.code,
        ResponseCode::CONTROLLER_ELECT_MASTER_FAILED.0
    );
    assert!(d.change.is_none());
    // Unclean: any live member.
    let d = t.elect_master("b", None, false, true, &live);
    assert_eq!(elected(&d), Some(2));
}

#[test]
fn a_designated_broker_wins_only_if_alive_and_eligible() {
    let t = tables(3, Some(1), &[1, 2]);
    let live = Live::of(&[(1, 1, 0, 0), (2, 1, 0, 0), (3, 1, 0, 0)]);
    assert_eq!(
        elected(&t.elect_master("b", Some(2), true, false, &live)),
        Some(2)
    );
    let d = t.elect_master("b", Some(3), true, false, &live);
    assert_eq!(
        d.response.code,
        ResponseCode::CONTROLLER_ELECT_MASTER_FAILED.0,
        "3 is not in sync"
    );
    let d = t.elect_master("b", Some(1), false, false, &live);
    assert_eq!(
        d.response.code,
        ResponseCode::CONTROLLER_MASTER_STILL_EXIST.0
    );
}

#[test]
fn stale_reports_are_ignored_and_removal_forgets_the_revision() {
    let mut t = tables(1, None, &[]);
    let set = t.get("b").unwrap().clone();
    assert!(!t.apply("b", Some(set.clone()), 7));
    assert!(t.apply("b", Some(set), 8));
    assert!(t.apply("b", None, 9));
    assert_eq!(t.revision("b"), 0);
    assert!(t.get("b").is_none());
}

#[test]
fn the_sweep_finds_sets_whose_master_died_while_a_member_lives() {
    let t = tables(2, Some(1), &[1, 2]);
    assert_eq!(
        t.needing_election(&Live::of(&[(2, 0, 0, 0)])),
        vec!["b".to_owned()]
    );
    assert!(t.needing_election(&Live::of(&[(1, 0, 0, 0)])).is_empty());
    assert!(t.needing_election(&Live::of(&[])).is_empty());
}

#[test]
fn the_state_is_bounded_in_bytes_and_shrinking_is_always_taken() {
    let mut tables = ReplicaTables::default();
    let code = "c".repeat(1024);
    let mut revision = 0;
    let mut refused = None;
    for i in 0..MAX_SETS as i64 {
        let header = ApplyBrokerIdHeader {
            cluster_name: "c".into(),
            broker_name: format!("b{i}"),
            applied_broker_id: FIRST_BROKER_ID,
            register_check_code: code.clone(),
        };
        let decision = tables.apply_broker_id(&header);
        let change = decision.change.expect("a new set");
        if let Err(why) = tables.admits(&change) {
            refused = Some((i, why));
            break;
        }
        revision += 1;
        tables.apply(&change.name, change.record, revision);
    }
    let (at, why) = refused.expect("the byte bound is reached before the set bound");
    assert!(why.contains("state"), "{why}");
    assert!(tables.stored_bytes() <= MAX_STATE_BYTES);
    assert!(at > 1000, "real-sized sets fit by thousands: {at}");
    // Removing a set is always taken, and frees its bytes.
    let before = tables.stored_bytes();
    let removal = Change {
        name: "b0".into(),
        expected: tables.revision("b0"),
        record: None,
    };
    assert!(tables.admits(&removal).is_ok());
    tables.apply("b0", None, revision + 1);
    assert!(tables.stored_bytes() < before);
}

#[test]
fn one_set_is_bounded_in_bytes() {
    let mut set = BrokerSet::new("c", "b");
    for id in 1..=MAX_MEMBERS as i64 {
        set.members.insert(
            id,
            Member {
                address: "a".repeat(1024),
                check_code: "c".repeat(1024),
            },
        );
    }
    let change = Change {
        name: "b".into(),
        expected: 0,
        record: Some(set),
    };
    let why = ReplicaTables::default().admits(&change).unwrap_err();
    assert!(why.contains("limit of a set"), "{why}");
}
