//! The body cases: RegisterBrokerBody as JSON and compressed (its axis the inflated size),
//! TopicRouteData (REGISTER_TOPIC_IN_NAMESRV), DataVersion (QUERY_DATA_VERSION) and the
//! properties of UPDATE_NAMESRV_CONFIG.

use std::io::Write as _;

use crate::cost::build::{
    compressed_input, compressed_raw, filler, find_last, nested, numbered, register_body, text,
    topic_entry, unit, DATA_VERSION,
};
use crate::cost::case::{case, text_case, Case};
use crate::cost::decoders::{
    decode_data_version, decode_properties, decode_register_compressed, decode_register_plain,
    decode_topic_route,
};

const RB: &str = "register body";
const RC: &str = "register compressed";
const TR: &str = "TopicRouteData";
const DV: &str = "DataVersion";
const PR: &str = "properties";

/// RegisterBrokerBody, JSON.
pub(super) fn register_json(all: &mut Vec<Case>) {
    let r = decode_register_plain;
    all.push(text_case(RB, "many topics", r, |t| {
        register_body(t, topic_entry(|i| format!("T{i:08}")), "", "{}", "{}")
    }));
    all.push(text_case(RB, "repeated topic", r, |t| {
        register_body(t, topic_entry(|_| "TopicTest".into()), "", "{}", "{}")
    }));
    all.push(text_case(RB, "long topic name", r, |t| {
        let name = "x".repeat(t.saturating_sub(600) / 2);
        register_body(t, topic_entry(move |_| name.clone()), "", "{}", "{}")
    }));
    all.push(text_case(RB, "many attributes", r, |t| {
        let prefix = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{"T":{"attributes":{"#;
        let suffix = br#"},"topicName":"T"}}}}"#;
        text(t, prefix, b",", numbered(r#""+a"#, r#"":"v""#), suffix)
    }));
    all.push(text_case(RB, "escaped topic names", r, |t| {
        register_body(
            t,
            topic_entry(|i| format!(r"T{i:08}\u00e9\n")),
            "",
            "{}",
            "{}",
        )
    }));
    all.push(text_case(RB, "deep nesting in an ignored field", r, |t| {
        let body = register_body(0, unit(b""), "", "DEEP", "{}");
        let text = String::from_utf8_lossy(&body);
        let (before, after) = text.split_once("DEEP").unwrap_or((&text, ""));
        let before = format!(r#"{before}{{"x":"#);
        let after = format!("}}{after}");
        nested(t, before.as_bytes(), b'[', b']', after.as_bytes())
    }));
    all.push(text_case(RB, "bare numeric keys (legacy)", r, |t| {
        let prefix = br#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{},"topicQueueMappingInfoMap":{"T":{"bname":"b","currIdMap":{"#;
        let suffix = br#"},"topic":"T","totalQueues":8}}}}"#;
        text(t, prefix, b",", |i, out| {
            let _ = write!(out, "{i}:{i}");
        }, suffix)
    }));
    all.push(text_case(RB, "many filter servers", r, |t| {
        let prefix = br#"{"filterServerList":["#;
        let suffix = br#"],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1},"topicConfigTable":{}}}"#;
        text(t, prefix, b",", numbered(r#""127.0.0.1:"#, r#"""#), suffix)
    }));
    all.push(text_case(
        RB,
        "late refusal: many topics, then garbage",
        r,
        |t| {
            let mut body = register_body(
                t.saturating_sub(2),
                topic_entry(|i| format!("T{i:08}")),
                "",
                "{}",
                "{}",
            );
            body.pop();
            body.extend_from_slice(b",!}");
            body
        },
    ));
}

/// RegisterBrokerBody, compressed: topic tables and texts.
pub(super) fn register_compressed_topics(all: &mut Vec<Case>) {
    let c = decode_register_compressed;
    let dv = DATA_VERSION.as_bytes();
    all.push(case(RC, "many topics", c, move |t, limit| {
        compressed_input(
            &compressed_raw(t, dv, numbered("T", " 8 8 6 SINGLE_TAG {}"), &[]),
            limit,
        )
    }));
    all.push(case(
        RC,
        "many topics with attributes",
        c,
        move |t, limit| {
            let topic = numbered("T", r#" 8 8 6 SINGLE_TAG {"+a":"1","+b":"2","+c":"3"}"#);
            compressed_input(&compressed_raw(t, dv, topic, &[]), limit)
        },
    ));
    all.push(case(RC, "repeated topic", c, move |t, limit| {
        compressed_input(
            &compressed_raw(t, dv, unit(b"TopicTest 8 8 6 SINGLE_TAG {}"), &[]),
            limit,
        )
    }));
    all.push(case(RC, "long topic name", c, move |t, limit| {
        let mut text = vec![b'x'; t.saturating_sub(200)];
        text.extend_from_slice(b" 8 8 6 SINGLE_TAG {}");
        let mut once = Some(text);
        compressed_input(
            &compressed_raw(
                t,
                dv,
                move |_, out| {
                    if let Some(text) = once.take() {
                        out.extend_from_slice(&text);
                    }
                },
                &[],
            ),
            limit,
        )
    }));
    all.push(case(RC, "spaces in a topic text", c, move |t, limit| {
        let mut text = b"T 8 8 6 SINGLE_TAG".to_vec();
        text.resize(t.saturating_sub(200), b' ');
        let mut once = Some(text);
        compressed_input(
            &compressed_raw(
                t,
                dv,
                move |_, out| {
                    if let Some(text) = once.take() {
                        out.extend_from_slice(&text);
                    }
                },
                &[],
            ),
            limit,
        )
    }));
    all.push(case(
        RC,
        "whitespace in the DataVersion",
        c,
        move |t, limit| {
            let mut version = br#"{"counter":1"#.to_vec();
            version.resize(t.saturating_sub(200), b' ');
            version.push(b'}');
            compressed_input(&compressed_raw(t, &version, unit(b""), &[]), limit)
        },
    ));
}

/// RegisterBrokerBody, compressed: mappings, the inflation limit, a late refusal.
pub(super) fn register_compressed_limits(all: &mut Vec<Case>) {
    let c = decode_register_compressed;
    let dv = DATA_VERSION.as_bytes();
    all.push(case(RC, "many mappings", c, move |t, limit| {
        let mut mappings = Vec::new();
        let mut total = 0;
        // Bounded by the target: every mapping adds bytes.
        while total + 80 < t.saturating_sub(200) {
            let mapping = format!(
                r#"{{"bname":"b","epoch":0,"topic":"T{:08}","totalQueues":8}}"#,
                mappings.len()
            )
            .into_bytes();
            total += 4 + mapping.len();
            mappings.push(mapping);
        }
        compressed_input(&compressed_raw(t, dv, unit(b""), &mappings), limit)
    }));
    all.push(case(
        RC,
        "past the inflation limit (refused)",
        c,
        move |t, _| {
            // The limit is the size: everything up to it is inflated, then the body is refused.
            let raw = compressed_raw(
                t.saturating_mul(2),
                dv,
                numbered("T", " 8 8 6 SINGLE_TAG {}"),
                &[],
            );
            let mut input = compressed_input(&raw, t)?;
            input.size = t;
            Ok(input)
        },
    ));
    all.push(case(
        RC,
        "late refusal: many topics, then a bad one",
        c,
        move |t, limit| {
            let mut raw = compressed_raw(t, dv, numbered("T", " 8 8 6 SINGLE_TAG {}"), &[]);
            // The last topic text loses its filter type.
            if let Some(at) = find_last(&raw, b"SINGLE_TAG") {
                raw[at..at + 10].copy_from_slice(b"BAD_FILTER");
            }
            compressed_input(&raw, limit)
        },
    ));
}

/// TopicRouteData (REGISTER_TOPIC_IN_NAMESRV).
pub(super) fn topic_route(all: &mut Vec<Case>) {
    let tr = decode_topic_route;
    all.push(text_case(TR, "many queueDatas", tr, |t| {
        text(
            t,
            br#"{"brokerDatas":[],"filterServerTable":{},"queueDatas":["#,
            b",",
            numbered(
                r#"{"brokerName":"b"#,
                r#"","perm":6,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}"#,
            ),
            b"]}",
        )
    }));
    all.push(text_case(
        TR,
        "many brokerDatas, bare keys (legacy)",
        tr,
        |t| {
            text(
                t,
                br#"{"brokerDatas":["#,
                b",",
                numbered(
                    r#"{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"b"#,
                    r#"","cluster":"C","enableActingMaster":false}"#,
                ),
                br#"],"filterServerTable":{},"queueDatas":[]}"#,
            )
        },
    ));
    all.push(text_case(TR, "long orderTopicConf", tr, |t| {
        text(
            t,
            br#"{"orderTopicConf":""#,
            b"",
            filler(),
            br#"","queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "escapes in a string", tr, |t| {
        text(
            t,
            br#"{"orderTopicConf":""#,
            b"",
            unit(br#"\""#),
            br#"","queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "deep nesting in an unknown field", tr, |t| {
        nested(t, br#"{"x":"#, b'[', b']', br#","queueDatas":[]}"#)
    }));
    all.push(text_case(TR, "many filterServerTable entries", tr, |t| {
        text(
            t,
            br#"{"filterServerTable":{"#,
            b",",
            numbered(r#""127.0.0.1:"#, r#"":["a"]"#),
            br#"},"queueDatas":[]}"#,
        )
    }));
    all.push(text_case(TR, "repeated filterServerTable key", tr, |t| {
        text(
            t,
            br#"{"filterServerTable":{"#,
            b",",
            unit(br#""a":["a"]"#),
            br#"},"queueDatas":[]}"#,
        )
    }));
    all.push(text_case(
        TR,
        "late refusal: wrong type at the end",
        tr,
        |t| {
            text(
                t,
                br#"{"queueDatas":["#,
                b",",
                numbered(r#"{"brokerName":"b"#, r#"","perm":6}"#),
                b",1]}",
            )
        },
    ));
}

/// DataVersion (QUERY_DATA_VERSION).
pub(super) fn data_version(all: &mut Vec<Case>) {
    let d = decode_data_version;
    all.push(text_case(DV, "many unknown fields", d, |t| {
        text(
            t,
            br#"{"counter":1"#,
            b"",
            numbered(r#","x"#, r#"":1"#),
            b"}",
        )
    }));
    all.push(text_case(DV, "deep nesting in an unknown field", d, |t| {
        nested(t, br#"{"x":"#, b'[', b']', br#","counter":1}"#)
    }));
    all.push(text_case(DV, "whitespace", d, |t| {
        text(t, br#"{"counter":1"#, b"", unit(b"        "), b"}")
    }));
    all.push(text_case(DV, "long string in an unknown field", d, |t| {
        text(t, br#"{"x":""#, b"", filler(), br#"","counter":1}"#)
    }));
    all.push(text_case(DV, "long integer (refused)", d, |t| {
        text(t, br#"{"counter":1"#, b"", unit(b"1234567890"), b"}")
    }));
    all.push(text_case(
        DV,
        "repeated field at the end (refused)",
        d,
        |t| {
            text(
                t,
                br#"{"counter":1"#,
                b"",
                numbered(r#","x"#, r#"":1"#),
                br#","counter":2}"#,
            )
        },
    ));
}

/// Properties (UPDATE_NAMESRV_CONFIG).
pub(super) fn properties(all: &mut Vec<Case>) {
    let p = decode_properties;
    all.push(text_case(PR, "many keys", p, |t| {
        text(t, b"", b"", numbered("k", "=v\n"), b"")
    }));
    all.push(text_case(PR, "repeated key", p, |t| {
        text(t, b"", b"", unit(b"a=b\n"), b"")
    }));
    all.push(text_case(PR, "many short lines", p, |t| {
        text(t, b"", b"", unit(b"a\n"), b"")
    }));
    all.push(text_case(PR, "long value", p, |t| {
        text(t, b"k=", b"", filler(), b"\n")
    }));
    all.push(text_case(PR, "escapes", p, |t| {
        text(t, b"k=", b"", unit(br"\t"), b"\n")
    }));
    all.push(text_case(PR, "unicode escapes", p, |t| {
        text(t, b"k=", b"", unit(br"\u0041"), b"\n")
    }));
    all.push(text_case(PR, "continuation lines", p, |t| {
        text(t, b"k=", b"", unit(b"x\\\n  "), b"\n")
    }));
    all.push(text_case(PR, "backslash run", p, |t| {
        text(t, b"k=", b"", unit(br"\\"), b"\n")
    }));
    all.push(text_case(PR, "comment lines", p, |t| {
        text(t, b"", b"", unit(b"#c\n"), b"k=v\n")
    }));
    all.push(text_case(PR, "empty lines", p, |t| {
        text(t, b"", b"", unit(b"\n"), b"k=v\n")
    }));
    all.push(text_case(PR, "carriage returns", p, |t| {
        text(t, b"", b"", unit(b"\r"), b"k=v\n")
    }));
    all.push(text_case(PR, "not UTF-8", p, |t| {
        text(t, b"k=", b"", unit(&[0xFF]), b"\n")
    }));
    all.push(text_case(PR, "late refusal: bad unicode escape", p, |t| {
        text(t, b"", b"", numbered("k", "=v\n"), br"z=\u12G4")
    }));
}
