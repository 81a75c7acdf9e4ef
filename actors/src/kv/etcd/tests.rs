//! The etcd backend's pure parts (keys, view), tested without etcd.

use std::collections::BTreeMap;

use super::keys::Entry;
use super::*;
use crate::kv::KvTables;

#[test]
fn namespaces_are_encoded_so_no_two_entries_share_a_key() {
    let keys = Keys::new("/rmq/kv/");
    assert_eq!(keys.dir, "/rmq/kv/");
    assert_eq!(keys.end(), "/rmq/kv0");
    for namespace in ["", "ns", "a/b", "a%2Fb", "%", "%%2F/", "ü/中"] {
        let marker = keys.namespace(namespace);
        assert_eq!(
            keys.parse(marker.as_bytes()),
            Some(Entry::Namespace(namespace.to_owned())),
            "{marker}"
        );
        for key in ["", "k", "k/with/slashes", "%2F", "ü"] {
            let value = keys.value(namespace, key);
            assert_eq!(
                keys.parse(value.as_bytes()),
                Some(Entry::Value {
                    namespace: namespace.to_owned(),
                    key: key.to_owned()
                }),
                "{value}"
            );
        }
    }
    assert_ne!(keys.value("a/b", "c"), keys.value("a", "b/c"));
    // Not ours: another prefix, a segment we would not have written, not UTF-8.
    assert_eq!(keys.parse(b"/rmq/kv2/ns"), None);
    assert_eq!(keys.parse(b"/rmq/kv/a%2fb"), None);
    assert_eq!(keys.parse(b"/rmq/kv/a%zz/k"), None);
    assert_eq!(keys.parse(b"/rmq/kv/\xff"), None);
    assert_eq!(keys.parse(b"/rmq/kv"), None);
}

fn value(tables: &KvTables, key: &str) -> Option<String> {
    tables.get("ns", key).map(str::to_owned)
}

#[test]
fn a_confirmed_change_is_not_undone_by_an_older_event() {
    let mut view = View::default();
    let mut tables = KvTables::default();
    let k = Entry::Value {
        namespace: "ns".into(),
        key: "k".into(),
    };
    view.event(&mut tables, &k, Some(b"old"), 5);
    view.caught_up();
    // Ours, confirmed at 7, before the watch brings 6 (someone else's) and 7.
    view.confirmed(
        &mut tables,
        "ns",
        "k",
        Change::Put(Some("ours".into())),
        Some(7),
    );
    assert_eq!(value(&tables, "k").as_deref(), Some("ours"));
    view.event(&mut tables, &k, Some(b"theirs"), 6);
    view.caught_up();
    assert_eq!(value(&tables, "k").as_deref(), Some("ours"));
    view.event(&mut tables, &k, Some(b"ours"), 7);
    view.caught_up();
    assert!(view.ahead.is_empty());
    // Someone else's later change wins as usual.
    view.event(&mut tables, &k, None, 8);
    assert_eq!(value(&tables, "k"), None);
    // A confirmation the watch already reported (and overtook) changes nothing.
    view.confirmed(
        &mut tables,
        "ns",
        "k",
        Change::Put(Some("late".into())),
        Some(7),
    );
    assert_eq!(value(&tables, "k"), None);
    assert!(view.ahead.is_empty());
}

#[test]
fn a_read_replaces_the_view_but_keeps_changes_it_does_not_contain() {
    let mut view = View::default();
    let mut tables = KvTables::default();
    view.confirmed(
        &mut tables,
        "ns",
        "a",
        Change::Put(Some("1".into())),
        Some(10),
    );
    view.confirmed(&mut tables, "ns", "b", Change::Delete, Some(12));
    let mut read = KvTables::default();
    read.put("ns", "b", Some("stale".into()));
    read.put("other", "x", Some("y".into()));
    view.loaded(&mut tables, read, 11, 1);
    // a (10) is in the read, which does not hold it: someone removed it at 11.
    assert_eq!(value(&tables, "a"), None);
    // b's removal (12) is newer than the read.
    assert_eq!(value(&tables, "b"), None);
    assert_eq!(tables.get("other", "x"), Some("y"));
    assert_eq!(view.watched, 11);
    assert_eq!(view.ahead.len(), 1);
    // Another cluster: its revisions say nothing about ours.
    view.loaded(&mut tables, KvTables::default(), 3, 2);
    assert!(view.ahead.is_empty());
    assert!(tables.namespace("ns").is_none());
}

#[test]
fn namespaces_follow_their_markers_and_values() {
    let mut view = View::default();
    let mut tables = KvTables::default();
    let marker = Entry::Namespace("ns".into());
    let k = Entry::Value {
        namespace: "ns".into(),
        key: "k".into(),
    };
    view.event(&mut tables, &marker, Some(b""), 1);
    assert!(tables.namespace("ns").is_some_and(BTreeMap::is_empty));
    view.event(&mut tables, &k, Some(b"v"), 2);
    view.event(&mut tables, &k, None, 3);
    assert!(
        tables.namespace("ns").is_some(),
        "emptied namespace is kept"
    );
    view.event(&mut tables, &marker, None, 4);
    assert!(tables.namespace("ns").is_none());

    let keys = Keys::new("/p");
    let read = vec![
        (keys.namespace("empty").into_bytes(), Vec::new()),
        (keys.value("a/b", "k/1").into_bytes(), b"v".to_vec()),
        (b"/p/bad%".to_vec(), Vec::new()),
    ];
    let tables = tables_of(&keys, &read);
    assert!(tables.namespace("empty").is_some_and(BTreeMap::is_empty));
    assert_eq!(tables.get("a/b", "k/1"), Some("v"));
}
