//! What the tables record as changed: the topics whose encoded routes must go.

use super::*;

/// Hands out the routes of `topics`, as a route query does: their changes are sent from now on.
fn serve(t: &mut RouteTables, topics: &[&str]) {
    for topic in topics {
        t.route_served(topic);
    }
}

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
    let all = [BASE_TOPIC, "t", "u"];
    serve(&mut t, &all);
    register(&mut t, Reg::master(&["t", "u", "v"]));
    // A new topic: nobody was handed its route.
    assert!(changed(&mut t).is_empty());

    // An unchanged re-registration changes no route.
    register(&mut t, Reg::master(&["t", "u", "v"]));
    assert!(!t.has_changes());

    // A slave joining changes the group's addresses: every topic of the group handed out.
    register(&mut t, Reg::slave(&["t", "u", "v"]));
    assert_eq!(changed(&mut t), all);

    // A perm change.
    serve(&mut t, &all);
    t.wipe_write_perm(BROKER);
    assert_eq!(changed(&mut t), all);

    // An explicit change (order conf), of a known topic only; a deletion.
    serve(&mut t, &all);
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
    serve(&mut t, &names);
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

#[test]
fn a_change_of_a_route_nobody_was_given_is_counted_and_not_sent() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["t", "u"]));
    // Nothing was handed out: no thread can hold a route, so nothing is sent.
    assert!(!t.has_changes());
    let version = t.route_version();
    register(&mut t, Reg::slave(&["t", "u"]));
    t.wipe_write_perm(BROKER);
    assert!(!t.has_changes());
    // Topic lists read from the tables still see that something changed.
    assert!(t.route_version() > version);

    // A route handed out is sent at its next change, once: the change after that is not.
    serve(&mut t, &["t"]);
    t.delete_topic("t", None);
    assert_eq!(changed(&mut t), ["t"]);
    register(&mut t, Reg::master(&["t", "u"]));
    assert!(!t.has_changes());

    // A change of every route forgets what was handed out.
    serve(&mut t, &["u"]);
    t.invalidate_all();
    assert!(t.take_changes().all);
    t.wipe_write_perm(BROKER);
    assert!(!t.has_changes());
}
