//! The bodies against Java's bytes: golden vectors, both JSON styles, every REGISTER_BROKER form.

use std::collections::BTreeMap;
use std::io::Read;

use super::{
    is_zlib_stream, to_json, BrokerData, BrokerMemberGroup, ClusterInfo, DataVersion,
    GetBrokerMemberGroupResponseBody, KvTable, QueueData, RegisterBrokerBody, TopicConfig,
    TopicList, TopicRouteData,
};
use crate::fastjson::{self, JsonStyle};

#[test]
fn a_topic_config_of_megabytes_is_split_no_further_than_used_and_quoted_clipped() {
    let spaces = " ".repeat(4 << 20);
    let err = TopicConfig::decode_text(&spaces).unwrap_err().to_string();
    assert!(err.len() < 200, "{err}");
    let long = format!("t 1 1 6 SINGLE_TAG {{}} {}", "x ".repeat(1 << 20));
    assert_eq!(TopicConfig::decode_text(&long).unwrap().topic_name, "t");
    let bad = format!("{} 1 1 6 BAD", "y".repeat(1 << 20));
    assert!(
        TopicConfig::decode_text(&bad)
            .unwrap_err()
            .to_string()
            .len()
            < 200
    );
}

fn route_fixture() -> TopicRouteData {
    TopicRouteData {
        broker_datas: vec![BrokerData {
            broker_addrs: [
                (0, "127.0.0.1:10911".to_owned()),
                (1, "127.0.0.1:10921".to_owned()),
            ]
            .into_iter()
            .collect(),
            broker_name: "broker-a".into(),
            cluster: "DefaultCluster".into(),
            enable_acting_master: false,
            zone_name: None,
        }],
        filter_server_table: BTreeMap::new(),
        order_topic_conf: None,
        queue_datas: vec![QueueData {
            broker_name: "broker-a".into(),
            perm: 6,
            read_queue_nums: 4,
            topic_sys_flag: 0,
            write_queue_nums: 4,
        }],
        topic_queue_mapping_by_broker: None,
    }
}

/// Golden vector V10 (docs/protocol.md#route-bodies): both encodings byte for byte, 280 and
/// 284 bytes.
#[test]
fn route_bodies_match_java_text() {
    let legacy = to_json(&route_fixture(), JsonStyle::Legacy);
    assert_eq!(
        std::str::from_utf8(&legacy).unwrap(),
        r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    assert_eq!(legacy.len(), 280);
    let standard = to_json(&route_fixture(), JsonStyle::Standard);
    assert_eq!(
        std::str::from_utf8(&standard).unwrap(),
        r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
    );
    assert_eq!(standard.len(), 284);
    // Both read back.
    let back: TopicRouteData = fastjson::from_slice(&legacy).unwrap();
    assert_eq!(back, route_fixture());
}

#[test]
fn route_with_order_conf_and_zone() {
    let mut route = route_fixture();
    route.order_topic_conf = Some("broker-a:4;broker-b:4".into());
    route.broker_datas[0].zone_name = Some("zone-a".into());
    let text = String::from_utf8(to_json(&route, JsonStyle::Legacy)).unwrap();
    assert!(
        text.contains(r#""enableActingMaster":false,"zoneName":"zone-a"}"#),
        "{text}"
    );
    assert!(
        text.contains(
            r#""filterServerTable":{},"orderTopicConf":"broker-a:4;broker-b:4","queueDatas""#
        ),
        "{text}"
    );
}

#[test]
fn cluster_info_is_legacy() {
    let mut info = ClusterInfo::default();
    assert_eq!(
        to_json(&info, JsonStyle::Legacy),
        br#"{"brokerAddrTable":{},"clusterAddrTable":{}}"#
    );
    let mut bd = route_fixture().broker_datas.remove(0);
    bd.broker_addrs = [
        (0, "192.168.0.10:10911".to_owned()),
        (1, "192.168.0.11:10911".to_owned()),
    ]
    .into_iter()
    .collect();
    info.broker_addr_table.insert("broker-a".into(), bd);
    info.cluster_addr_table.insert(
        "DefaultCluster".into(),
        ["broker-a".to_owned()].into_iter().collect(),
    );
    assert_eq!(
        std::str::from_utf8(&to_json(&info, JsonStyle::Legacy)).unwrap(),
        r#"{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.10:10911",1:"192.168.0.11:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}"#
    );
}

#[test]
fn small_bodies() {
    let tl = TopicList {
        broker_addr: None,
        topic_list: ["TopicTest".to_owned()].into_iter().collect(),
    };
    assert_eq!(
        to_json(&tl, JsonStyle::Legacy),
        br#"{"topicList":["TopicTest"]}"#
    );
    let kv = KvTable {
        table: [("TopicTest".to_owned(), "broker-a:4;broker-b:4".to_owned())]
            .into_iter()
            .collect(),
    };
    assert_eq!(
        to_json(&kv, JsonStyle::Legacy),
        br#"{"table":{"TopicTest":"broker-a:4;broker-b:4"}}"#
    );
    let group = GetBrokerMemberGroupResponseBody {
        broker_member_group: BrokerMemberGroup {
            broker_addrs: [
                (0, "127.0.0.1:10911".to_owned()),
                (1, "127.0.0.1:10921".to_owned()),
            ]
            .into_iter()
            .collect(),
            broker_name: Some("broker-a".into()),
            cluster: Some("DefaultCluster".into()),
        },
    };
    assert_eq!(
        std::str::from_utf8(&to_json(&group, JsonStyle::Legacy)).unwrap(),
        r#"{"brokerMemberGroup":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}}"#
    );
    let dv = DataVersion {
        counter: 3,
        state_version: 0,
        timestamp: 1_700_000_000_000,
    };
    assert_eq!(
        to_json(&dv, JsonStyle::Legacy),
        br#"{"counter":3,"stateVersion":0,"timestamp":1700000000000}"#
    );
}

const SPEC_BODY: &str = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}},"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}"#;

#[test]
fn register_body_json_versions() {
    assert_eq!(SPEC_BODY.len(), 449);
    let body = RegisterBrokerBody::decode(Some(SPEC_BODY.as_bytes()), false, 479, 1 << 20).unwrap();
    let wrapper = &body.topic_config_wrapper;
    assert_eq!(wrapper.data_version.counter, 1);
    assert_eq!(wrapper.topic_config_table["TopicTest"].read_queue_nums, 4);
    // Version 0: the same bytes read as a bare wrapper find no topics.
    let old = RegisterBrokerBody::decode(Some(SPEC_BODY.as_bytes()), false, 0, 1 << 20).unwrap();
    assert!(old.topic_config_wrapper.topic_config_table.is_empty());
    // No body: empty registration.
    let none = RegisterBrokerBody::decode(None, true, 479, 1 << 20).unwrap();
    assert_eq!(none, RegisterBrokerBody::default());
    // 4.x body without stateVersion and attributes.
    let v4 = r#"{"filterServerList":["10.0.0.1:1"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":5},"topicConfigTable":{"T":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":1,"writeQueueNums":8}}}}"#;
    let body = RegisterBrokerBody::decode(Some(v4.as_bytes()), false, 409, 1 << 20).unwrap();
    assert_eq!(body.filter_server_list, vec!["10.0.0.1:1".to_owned()]);
    assert_eq!(
        body.topic_config_wrapper.topic_config_table["T"].topic_sys_flag,
        1
    );
    // Bare numeric keys inside mapping info.
    let mapped = r#"{"topicConfigSerializeWrapper":{"topicQueueMappingInfoMap":{"S":{"bname":"b","currIdMap":{0:3,1:4},"epoch":9,"topic":"S","totalQueues":2}},"topicQueueMappingDetailMap":{"S":{"hostedQueues":{0:[{"bname":"b"}]}}}}}"#;
    let body = RegisterBrokerBody::decode(Some(mapped.as_bytes()), false, 479, 1 << 20).unwrap();
    let info = &body.topic_config_wrapper.topic_queue_mapping_info_map["S"];
    assert_eq!(info.curr_id_map.as_ref().unwrap()[&1], 4);
}

/// A topic table: sorted, the last of a repeated name kept, `null` and an absent table empty, an
/// array refused, and filter types read as sent (the two known ones without allocating).
#[test]
fn topic_tables_read_as_maps_do() {
    let table = |json: &str| {
        let wrapper = format!(r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{json}}}}}"#);
        RegisterBrokerBody::decode(Some(wrapper.as_bytes()), false, 479, 1 << 20)
            .map(|b| b.topic_config_wrapper.topic_config_table)
    };
    let read = table(
        r#"{"B":{"perm":2,"topicName":"B"},"A":{"perm":6,"topicName":"A","topicFilterType":"MULTI_TAG"},
            "B":{"perm":4,"topicName":"B","topicFilterType":"ODD"}}"#,
    )
    .unwrap();
    assert_eq!(read.keys().collect::<Vec<_>>(), ["A", "B"]);
    assert_eq!(read["B"].perm, 4);
    assert_eq!(read["B"].topic_filter_type, "ODD");
    assert_eq!(read["A"].topic_filter_type, "MULTI_TAG");
    assert_eq!(read["A"].read_queue_nums, 16);
    assert!(table("null").unwrap().is_empty());
    assert!(table("{}").unwrap().is_empty());
    assert!(table(r#"[{"topicName":"A"}]"#).is_err());
    assert!(table(r#"{"A":{"topicFilterType":5}}"#).is_err());
    let absent = RegisterBrokerBody::decode(Some(b"{}"), false, 479, 1 << 20).unwrap();
    assert!(absent.topic_config_wrapper.topic_config_table.is_empty());
}

/// Golden vector V9 (docs/protocol.md#golden-vectors): the inflated bytes and the zlib stream
/// decode to one topic.
#[test]
fn compressed_golden_vector() {
    let zlib: [u8; 97] = [
        0x78, 0xda, 0x63, 0x60, 0x60, 0xb0, 0xa8, 0x56, 0x4a, 0xce, 0x2f, 0xcd, 0x2b, 0x49, 0x2d,
        0x52, 0xb2, 0x32, 0xd4, 0x51, 0x2a, 0x2e, 0x49, 0x2c, 0x49, 0x0d, 0x4b, 0x2d, 0x2a, 0xce,
        0xcc, 0xcf, 0x53, 0xb2, 0x32, 0xd0, 0x51, 0x2a, 0xc9, 0xcc, 0x4d, 0x05, 0x0a, 0xe6, 0x16,
        0x00, 0xa5, 0xcd, 0x0d, 0x10, 0xa0, 0x96, 0x81, 0x81, 0x81, 0x11, 0x88, 0x65, 0x43, 0xf2,
        0x0b, 0x32, 0x93, 0x43, 0x80, 0x6a, 0x14, 0x4c, 0x80, 0xd0, 0x4c, 0x21, 0xd8, 0xd3, 0xcf,
        0xdd, 0xc7, 0x35, 0x3e, 0xc4, 0xd1, 0x5d, 0xa1, 0x1a, 0xa4, 0x88, 0x29, 0x3a, 0x16, 0x48,
        0x32, 0x00, 0x00, 0x52, 0x77, 0x1b, 0x61,
    ];
    assert_eq!(crc32fast::hash(&zlib) & 0x7FFF_FFFF, 164_289_492);
    let body = RegisterBrokerBody::decode(Some(&zlib), true, 479, 1 << 20).unwrap();
    let wrapper = &body.topic_config_wrapper;
    assert_eq!(wrapper.data_version.timestamp, 1_700_000_000_000);
    let t = &wrapper.topic_config_table["TopicTest"];
    assert_eq!((t.read_queue_nums, t.write_queue_nums, t.perm), (4, 4, 6));
    assert!(body.filter_server_list.is_empty());
    // A pre-5.0 request has no mapping section: the trailing count is then ignored.
    assert!(RegisterBrokerBody::decode(Some(&zlib), true, 409, 1 << 20).is_ok());
    // Our encoder inflates to V9's 107 bytes and round-trips.
    let again = body.encode_compressed(true);
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(again.as_slice())
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw.len(), 107);
    assert_eq!(
        RegisterBrokerBody::decode_compressed(&again, true, 1 << 20).unwrap(),
        body
    );
}

/// What a 5.x broker with `compressedRegister=true` sends: the zlib form with `compressed=false`
/// in the header. The body says what it is: every zlib level's header is recognised, no JSON
/// text is taken for one, and the body decodes as the flagged one does.
#[test]
fn a_compressed_body_flagged_plain_is_recognised_by_its_bytes() {
    let zlib = [0x78, 0xda, 0x63, 0x60];
    assert!(is_zlib_stream(&zlib));
    for level in 0..=9 {
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
        std::io::Write::write_all(&mut encoder, b"{}").unwrap();
        assert!(is_zlib_stream(&encoder.finish().unwrap()), "level {level}");
    }
    for json in [
        &b"{}"[..],
        b"[]",
        b" {}",
        b"\t{}",
        b"\n{}",
        b"\r\n{}",
        b"",
        b"x",
    ] {
        assert!(!is_zlib_stream(json), "{json:?}");
    }
    let mut body = RegisterBrokerBody::default();
    body.topic_config_wrapper
        .topic_config_table
        .insert("T".into(), TopicConfig::new("T", 4, 6));
    let bytes = body.encode_compressed(true);
    let flagged = RegisterBrokerBody::decode(Some(&bytes), true, 513, 1 << 20).unwrap();
    let unflagged = RegisterBrokerBody::decode(Some(&bytes), false, 513, 1 << 20).unwrap();
    assert_eq!(flagged, unflagged);
    assert_eq!(unflagged, body);
}

#[test]
fn compressed_garbage_is_an_error() {
    assert!(RegisterBrokerBody::decode(Some(b"not zlib"), true, 479, 1 << 20).is_err());
    let mut body = RegisterBrokerBody::default();
    body.topic_config_wrapper
        .topic_config_table
        .insert("T".into(), TopicConfig::new("T", 4, 6));
    let bytes = body.encode_compressed(true);
    // Inflated size above the limit.
    assert!(RegisterBrokerBody::decode(Some(&bytes), true, 479, 10).is_err());
    // Truncated stream.
    assert!(
        RegisterBrokerBody::decode(Some(&bytes[..bytes.len() / 2]), true, 479, 1 << 20).is_err()
    );
}

#[test]
fn topic_text_form() {
    let t = TopicConfig::decode_text("TopicTest 4 4 6 SINGLE_TAG {}").unwrap();
    assert_eq!(t.encode_text(), "TopicTest 4 4 6 SINGLE_TAG {}");
    let v4 = TopicConfig::decode_text("T 8 8 7 MULTI_TAG").unwrap();
    assert_eq!(v4.perm, 7);
    assert!(TopicConfig::decode_text("T 8 8 7").is_err());
    assert!(TopicConfig::decode_text("T x 8 7 SINGLE_TAG").is_err());
    let odd = TopicConfig::decode_text("T 1 1 6 SINGLE_TAG {bad").unwrap();
    assert!(odd.attributes.is_empty());
}

#[test]
fn crc_examples_of_spec_v6() {
    let body = r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{}}}"#;
    assert_eq!(body.len(), 148);
    assert_eq!(crc32fast::hash(body.as_bytes()) & 0x7FFF_FFFF, 385_843_084);
    assert_eq!(
        crc32fast::hash(SPEC_BODY.as_bytes()) & 0x7FFF_FFFF,
        1_188_899_506
    );
    assert_eq!(crc32fast::hash(b"123456789") & 0x7FFF_FFFF, 1_274_296_614);
}
