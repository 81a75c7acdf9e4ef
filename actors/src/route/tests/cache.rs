//! The encoded-route cache.

use super::*;

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
