//! Large registrations and unregistrations walked a slice at a time end exactly where the same
//! change done at once ends, and in between every topic shows either its old or its new state.

use super::*;

/// Every topic's route and the cluster view, comparable.
fn snapshot(
    tables: &RouteTables,
) -> (
    Vec<(String, Option<rmq_protocol::body::TopicRouteData>)>,
    String,
) {
    let names = list(tables.all_topics()).topic_list;
    let routes = names
        .into_iter()
        .map(|name| {
            let route = tables.topic_route(&name);
            (name, route)
        })
        .collect();
    (routes, format!("{:?}", tables.cluster_info()))
}

fn many(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:05}")).collect()
}

fn reg_with(names: &[String], perm_bits: i32, dv: DataVersion) -> Reg {
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut reg = Reg::master(&refs).version(dv);
    for config in reg.topics.topic_config_table.values_mut() {
        config.perm = perm_bits;
    }
    reg
}

/// Registers in slices of `slice` topics, checking between slices that each topic shows either
/// `old` or `new` permission.
fn register_in_slices(tables: &mut RouteTables, reg: Reg, slice: usize, old: i32, new: i32) {
    let now = Instant::now();
    let start = tables.register_start(reg.into_reg(), now);
    let Ok(Registering::Walk(mut walk)) = start else {
        panic!("a full table walks");
    };
    let mut steps = 0;
    while !tables.register_step(&mut walk, slice) {
        steps += 1;
        for name in list(tables.all_topics()).topic_list {
            let perm = perm_of(tables, &name, BROKER);
            assert!(perm == old || perm == new, "{name} shows perm {perm}");
        }
    }
    assert!(steps > 1, "the walk took several slices");
    let outcome = tables.register_finish(walk);
    assert!(matches!(outcome, RegisterOutcome::Registered { .. }));
}

#[test]
fn a_registration_in_slices_ends_as_one_at_once() {
    let names = many("sliced", 300);
    let rw = perm::READ | perm::WRITE;
    let mut at_once = RouteTables::default();
    let mut sliced = RouteTables::default();
    register(&mut at_once, reg_with(&names, rw, version(1)));
    register(&mut sliced, reg_with(&names, rw, version(1)));
    assert_eq!(snapshot(&at_once), snapshot(&sliced));

    // A new data version with other permissions and more topics.
    let more = many("sliced", 450);
    register(&mut at_once, reg_with(&more, perm::READ, version(2)));
    register_in_slices(
        &mut sliced,
        reg_with(&more, perm::READ, version(2)),
        37,
        rw,
        perm::READ,
    );
    assert_eq!(snapshot(&at_once), snapshot(&sliced));
    assert_eq!(at_once.live_count(), sliced.live_count());

    // The re-registration of what was just applied is recognised as unchanged either way.
    let again = reg_with(&more, perm::READ, version(2)).into_reg();
    let Ok(Registering::Walk(walk)) = sliced.register_start(again, Instant::now()) else {
        panic!("a registration that writes routes walks (possibly nothing)");
    };
    let mut walk = walk;
    assert!(
        sliced.register_step(&mut walk, 1),
        "an unchanged table has nothing to walk"
    );
    sliced.register_finish(walk);
    assert_eq!(snapshot(&at_once), snapshot(&sliced));
}

#[test]
fn a_first_registration_in_slices_creates_every_topic() {
    let names = many("first", 100);
    let mut sliced = RouteTables::default();
    register_in_slices(&mut sliced, reg_with(&names, 6, version(1)), 9, 6, 6);
    // Every topic of the table, plus the base topic every test registration carries.
    assert_eq!(sliced.topic_count(), 101);
}

#[test]
fn an_unregistration_in_slices_ends_as_one_at_once() {
    // Larger than one slice of the registry, so the sweep is left to the caller.
    let names = many("swept", TOPICS_PER_STEP + 500);
    let rw = perm::READ | perm::WRITE;
    let build = || {
        let mut t = acting_tables();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        register(&mut t, Reg::master(&refs).acting_master(Some(true)));
        register(&mut t, Reg::slave(&refs).acting_master(Some(true)));
        register(&mut t, Reg::new("Other", "127.0.0.1:50911", 0, &["other"]));
        t
    };
    let mut at_once = build();
    let mut sliced = build();
    at_once.unregister(&[unreg(BROKER, MASTER, 0)]);
    let mut sweep = sliced
        .unregister_start(&[unreg(BROKER, MASTER, 0)])
        .expect("a large table is swept in slices");
    let mut steps = 0;
    while !sliced.sweep_step(&mut sweep, 1000) {
        steps += 1;
        // The slave is left: each topic shows it with write permission or without.
        let perm = perm_of(&sliced, &names[names.len() - 1], BROKER);
        assert!(perm == rw || perm == perm::READ);
    }
    assert!(steps >= 4);
    assert_eq!(snapshot(&at_once), snapshot(&sliced));
    assert_eq!(perm_of(&sliced, &names[0], BROKER), perm::READ);

    // The last instance goes: every topic of the group with it, the other group's stays.
    at_once.unregister(&[unreg(BROKER, SLAVE, 1)]);
    let mut sweep = sliced
        .unregister_start(&[unreg(BROKER, SLAVE, 1)])
        .expect("a large table is swept in slices");
    while !sliced.sweep_step(&mut sweep, 777) {}
    assert_eq!(snapshot(&at_once), snapshot(&sliced));
    let left: Vec<String> = list(sliced.all_topics()).topic_list.into_iter().collect();
    assert_eq!(left, vec!["baseTopic".to_owned(), "other".to_owned()]);
}

#[test]
fn a_small_unregistration_is_done_at_once() {
    let mut t = RouteTables::default();
    register(&mut t, Reg::master(&["a", "b"]));
    assert!(t.unregister_start(&[unreg(BROKER, MASTER, 0)]).is_none());
    assert_eq!(t.topic_count(), 0);
}
