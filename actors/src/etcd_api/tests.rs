//! The client without etcd: key ranges, endpoints, and the bytes of its messages, compared with
//! those of etcd's own API definition (etcd-io/etcd api/etcdserverpb/rpc.proto, encoded by
//! `protoc --encode` from the text format quoted with each vector), so that a field number
//! mistyped in `actors/proto/` fails here and not against a real etcd.

use prost::Message;

use super::pb::etcdserverpb::{watch_request::RequestUnion, WatchProgressRequest, WatchRequest};
use super::*;

#[test]
fn a_prefix_ends_after_its_last_byte_below_0xff() {
    assert_eq!(prefix_end(b"/kv/"), b"/kv0");
    assert_eq!(prefix_end(b"a\xFF\xFF"), b"b");
    assert_eq!(prefix_end(b"\xFF"), b"\0");
    assert_eq!(RangeEnd::Prefix.of(Vec::new()), (vec![0], vec![0]));
    assert_eq!(RangeEnd::Key.of(b"k".to_vec()), (b"k".to_vec(), Vec::new()));
}

#[test]
fn endpoints_without_a_scheme_are_plain_http() {
    let options = ConnectOptions::new();
    let plain = endpoint("127.0.0.1:2379", &options).unwrap();
    assert_eq!(plain.uri().to_string(), "http://127.0.0.1:2379/");
    let given = endpoint("http://etcd-1:2379", &options).unwrap();
    assert_eq!(given.uri().to_string(), "http://etcd-1:2379/");
    assert!(matches!(
        endpoint("https://etcd-1:2379", &options),
        Err(Error::InvalidArgs(_))
    ));
}

#[test]
fn with_a_ca_endpoints_are_tls_and_plain_http_is_refused() {
    // Any PEM text will do for building the endpoint; it is parsed when a connection is made.
    let options = ConnectOptions::new().with_security(Security {
        ca_pem: Some(b"-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".to_vec()),
        ..Security::default()
    });
    let bare = endpoint("127.0.0.1:2379", &options).unwrap();
    assert_eq!(bare.uri().to_string(), "https://127.0.0.1:2379/");
    let given = endpoint("https://etcd-1:2379", &options).unwrap();
    assert_eq!(given.uri().to_string(), "https://etcd-1:2379/");
    assert!(matches!(
        endpoint("http://etcd-1:2379", &options),
        Err(Error::InvalidArgs(_))
    ));
    assert!(matches!(
        endpoint("unix://etcd", &ConnectOptions::new()),
        Err(Error::InvalidArgs(_))
    ));
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// compare { result: EQUAL target: MOD key: "/c/sets/a" mod_revision: 7 }
/// compare { result: EQUAL target: CREATE key: "/c/leader" create_revision: 5 }
/// compare { result: EQUAL target: LEASE key: "/c/leader" lease: 42 }
/// compare { result: GREATER target: VERSION key: "/kv/ns" version: 0 }
/// success { request_put { key: "/c/sets/a" value: "{}" lease: 42 } }
/// failure { request_delete_range { key: "/c/sets/a" } }
const TXN: &str = "0a0f10021a092f632f736574732f6130070a0f10011a092f632f6c656164657228050a0f\
                   10041a092f632f6c6561646572402a0a0c08011a062f6b762f6e732000121312110a092f\
                   632f736574732f6112027b7d182a1a0d1a0b0a092f632f736574732f61";

/// key: "/kv/" range_end: "/kv0" limit: 500 revision: 12
const RANGE: &str = "0a042f6b762f12042f6b763018f403200c";

/// create_request { key: "/c/" range_end: "/c0" start_revision: 13 }
const WATCH: &str = "0a0c0a032f632f12032f6330180d";

/// progress_request {}
const PROGRESS: &str = "1a00";

/// header { cluster_id: 3 member_id: 4 revision: 9 raft_term: 2 } watch_id: 1 canceled: true
/// compact_revision: 6 cancel_reason: "compacted"
/// events { type: DELETE kv { key: "/c/leader" mod_revision: 9 }
///          prev_kv { key: "/c/leader" value: "x" } }
/// events { kv { key: "/c/sets/a" create_revision: 8 mod_revision: 9 version: 2 value: "{}"
///               lease: 42 } }
const WATCHED: &str = "0a0808031004180920021001200128063209636f6d7061637465645a210801120d0a092f\
                       632f6c656164657218091a0e0a092f632f6c65616465722a01785a1912170a092f632f73\
                       6574732f611008180920022a027b7d302a";

/// header { revision: 9 } kvs { key: "a" value: "b" version: 1 } more: true count: 3
const RANGED: &str = "0a02180912080a016120012a016218012003";

#[test]
fn requests_encode_as_etcds_own_definition_does() {
    let txn = Txn::new()
        .when([
            Compare::mod_revision("/c/sets/a", CompareOp::Equal, 7),
            Compare::create_revision("/c/leader", CompareOp::Equal, 5),
            Compare::lease("/c/leader", CompareOp::Equal, 42),
            Compare::version("/kv/ns", CompareOp::Greater, 0),
        ])
        .and_then([TxnOp::put(
            "/c/sets/a",
            "{}",
            Some(PutOptions::new().with_lease(42)),
        )])
        .or_else([TxnOp::delete("/c/sets/a")]);
    assert_eq!(txn.0.encode_to_vec(), hex(TXN));

    let page = GetOptions::new()
        .with_range("/kv0")
        .with_limit(500)
        .with_revision(12);
    assert_eq!(page.request(b"/kv/".to_vec()).encode_to_vec(), hex(RANGE));

    let watch = WatchOptions::new().with_prefix().with_start_revision(13);
    let watch = WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(watch.request(b"/c/".to_vec()))),
    };
    assert_eq!(watch.encode_to_vec(), hex(WATCH));
    let progress = WatchRequest {
        request_union: Some(RequestUnion::ProgressRequest(WatchProgressRequest {})),
    };
    assert_eq!(progress.encode_to_vec(), hex(PROGRESS));
}

#[test]
fn answers_decode_skipping_the_fields_left_out() {
    let watched = WatchResponse::decode(hex(WATCHED).as_slice()).expect("a watch response");
    assert!(watched.canceled());
    assert_eq!(watched.compact_revision(), 6);
    assert_eq!(watched.cancel_reason(), "compacted");
    let kvs: Vec<&KeyValue> = watched.events().iter().filter_map(Event::kv).collect();
    assert_eq!(kvs.len(), 2);
    assert_eq!(
        (kvs[0].key(), kvs[0].version(), kvs[0].mod_revision()),
        (&b"/c/leader"[..], 0, 9)
    );
    assert_eq!(
        (
            kvs[1].key(),
            kvs[1].value(),
            kvs[1].create_revision(),
            kvs[1].version(),
            kvs[1].lease()
        ),
        (&b"/c/sets/a"[..], &b"{}"[..], 8, 2, 42)
    );

    let ranged = GetResponse::decode(hex(RANGED).as_slice()).expect("a range response");
    assert_eq!(ranged.header().map(|h| h.revision()), Some(9));
    assert!(ranged.more());
    assert_eq!(
        (ranged.kvs()[0].key(), ranged.kvs()[0].value()),
        (&b"a"[..], &b"b"[..])
    );
}

/// authenticate { name: "u" password: "p" }; compare { key: "/a/" range_end: "/a0" } (field
/// 64: tag 0x82 0x04), as etcd's rpc.proto numbers them.
#[test]
fn auth_and_range_compares_encode_with_etcds_numbers() {
    let auth = super::pb::etcdserverpb::AuthenticateRequest {
        name: "u".into(),
        password: "p".into(),
    };
    assert_eq!(auth.encode_to_vec(), hex("0a0175120170"));
    let compare = Compare::none_under("/a/");
    // result EQUAL (0) and target VERSION (0) are defaults, left out; version 0 is set in the
    // oneof, so it is sent (field 4, 0).
    assert_eq!(
        compare.encode_to_vec(),
        hex("1a032f612f2000820403 2f6130".replace(' ', "").as_str())
    );
}
