//! What the tables record as changed: the topics whose encoded routes must go.

use super::*;

/// The topics changed since the last call, each once.
fn changed(t: &mut RouteTables) -> Vec<String> {
    let mut topics: Vec<String> = t
        .take_changes()
        .topics
        .iter()
        .map(|topic| topic.as_str().to_owned())
        .collect();
    topics.sort();
    topics.dedup();
    topics
}

#[test]
fn a_route_counts_as_changed_only_when_what_it_shows_changes() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(changed(&mut t).contains(&"t".to_owned()));

    // An unchanged re-registration changes no route.
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(!t.has_changes());

    // A slave joining changes the group's addresses: every topic of the group.
    register(&mut t, Reg::slave(&["t", "u"]));
    assert_eq!(changed(&mut t), [BASE_TOPIC, "t", "u"]);

    // A perm change.
    t.wipe_write_perm(BROKER);
    assert_eq!(changed(&mut t), [BASE_TOPIC, "t", "u"]);

    // An explicit change (order conf), of a known topic only; a deletion.
    t.invalidate_topic("t");
    t.invalidate_topic("unknown");
    t.delete_topic("u", None);
    assert_eq!(changed(&mut t), ["t", "u"]);

    // Everything.
    t.invalidate_all();
    let all = t.take_changes();
    assert!(all.all && all.topics.is_empty());
    assert!(!t.has_changes());
}

#[test]
fn a_group_change_in_a_table_too_large_to_walk_changes_every_route() {
    let mut t = RouteTables::default();
    let topics: Vec<String> = (0..=crate::route::changes::GROUP_WALK_MAX_TOPICS)
        .map(|i| format!("T{i}"))
        .collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    register(&mut t, Reg::master(&names));
    t.take_changes();
    // A slave joining changes the addresses every route of the group shows.
    register(&mut t, Reg::slave(&names));
    let changes = t.take_changes();
    assert!(
        changes.all && changes.topics.is_empty(),
        "{}",
        changes.topics.len()
    );
}
