//! The header cases: the frame codec on a stream, the JSON header (the scanner's shapes, then
//! the serde path's), the ROCKETMQ binary header and the typed headers read from ext fields.

use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, GetRouteInfoHeader, PutKvConfigHeader, QueryDataVersionHeader,
    RegisterBrokerHeader,
};

use crate::cost::build::{
    binary_entry, binary_header, command_input, ext_header, filler, nested, numbered, raw_frame,
    text, unit, HEADER_TAIL, REGISTER_FIELDS, SCAN, SERDE,
};
use crate::cost::case::{case, text_case, Case, Input};
use crate::cost::decoders::{
    decode_binary_header, decode_json_header, decode_stream_1k, decode_stream_64k, typed,
};

const JH: &str = "json header";
const BH: &str = "binary header";
const TH: &str = "typed header";

/// Ext fields `"k00000000":"v"`, `"k00000001":"v"`, …
fn junk() -> impl FnMut(usize, &mut Vec<u8>) {
    numbered(r#""k"#, r#"":"v""#)
}

/// Frame codec on a stream.
pub(super) fn codec(all: &mut Vec<Case>) {
    let one_frame = |target: usize, limit: usize| {
        let header = br#"{"code":103,"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#;
        let body = vec![b'x'; target.saturating_sub(8 + header.len())];
        Ok(Input::plain(raw_frame(0, header, &body), limit))
    };
    all.push(case(
        "codec",
        "one max frame, 64 KiB reads",
        decode_stream_64k,
        one_frame,
    ));
    all.push(case(
        "codec",
        "one max frame, 1 KiB reads",
        decode_stream_1k,
        one_frame,
    ));
    all.push(case("codec", "many small frames, 64 KiB reads", decode_stream_64k, |target, limit| {
        let frame = raw_frame(
            0,
            br#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":479}"#,
            b"",
        );
        let mut data = Vec::with_capacity(target);
        while data.len() + frame.len() <= target {
            data.extend_from_slice(&frame);
        }
        Ok(Input::plain(data, limit))
    }));
}

/// JSON header: ext fields, unknown fields and long strings.
pub(super) fn json_header_fields(all: &mut Vec<Case>) {
    let h = decode_json_header;
    all.push(text_case(JH, "many ext fields", h, move |t| {
        ext_header(t, SCAN, junk())
    }));
    all.push(text_case(JH, "many ext fields (serde)", h, move |t| {
        ext_header(t, SERDE, junk())
    }));
    all.push(text_case(JH, "repeated ext key", h, |t| {
        ext_header(t, SCAN, unit(br#""topic":"T""#))
    }));
    all.push(text_case(JH, "repeated ext key (serde)", h, |t| {
        ext_header(t, SERDE, unit(br#""topic":"T""#))
    }));
    all.push(text_case(JH, "many unknown fields", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            numbered(r#","x"#, r#"":1"#),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "repeated unknown field", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            unit(br#","x":1"#),
            HEADER_TAIL.as_bytes(),
        )
    }));
    let long_value = |lead: &'static str| {
        move |t: usize| {
            let prefix = format!(r#"{{{lead}"extFields":{{"topic":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes())
        }
    };
    all.push(text_case(JH, "long ext value", h, long_value(SCAN)));
    all.push(text_case(
        JH,
        "long ext value (serde)",
        h,
        long_value(SERDE),
    ));
    all.push(text_case(JH, "long ext key", h, |t| {
        let suffix = format!(r#"":"v"}}{HEADER_TAIL}"#);
        text(
            t,
            br#"{"code":105,"extFields":{""#,
            b"",
            filler(),
            suffix.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long remark", h, |t| {
        let suffix = format!(r#""{HEADER_TAIL}"#);
        text(
            t,
            br#"{"code":105,"remark":""#,
            b"",
            filler(),
            suffix.as_bytes(),
        )
    }));
}

/// JSON header: whitespace, long numbers and escapes.
pub(super) fn json_header_numbers_and_escapes(all: &mut Vec<Case>) {
    let h = decode_json_header;
    all.push(text_case(JH, "whitespace", h, |t| {
        text(
            t,
            br#"{"code":105"#,
            b"",
            unit(b"        "),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long integer", h, |t| {
        text(
            t,
            br#"{"code":105,"x":1"#,
            b"",
            unit(b"1234567890"),
            HEADER_TAIL.as_bytes(),
        )
    }));
    all.push(text_case(JH, "long fraction", h, |t| {
        text(
            t,
            br#"{"code":105,"x":0."#,
            b"",
            unit(b"1234567890"),
            HEADER_TAIL.as_bytes(),
        )
    }));
    let escaped = |escape: &'static [u8]| {
        move |t: usize| {
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"topic":""#,
                b"",
                unit(escape),
                suffix.as_bytes(),
            )
        }
    };
    all.push(text_case(JH, "escapes in a value", h, escaped(br"\n")));
    all.push(text_case(
        JH,
        "unicode escapes in a value",
        h,
        escaped(br"\u00e9"),
    ));
    all.push(text_case(
        JH,
        "surrogate pairs in a value",
        h,
        escaped(br"\ud83d\ude00"),
    ));
    all.push(text_case(JH, "escaped keys", h, |t| {
        ext_header(t, SCAN, numbered(r#""k"#, r#"\n":"v""#))
    }));
}

/// JSON header: nested values, as deep as accepted and deeper.
pub(super) fn json_header_nesting(all: &mut Vec<Case>) {
    let h = decode_json_header;
    let nested_value = |piece: Vec<u8>| {
        move |t: usize| {
            let suffix = format!("]}}{HEADER_TAIL}");
            let prefix = br#"{"code":105,"extFields":{"topic":["#;
            text(
                t,
                prefix,
                b",",
                |_, out| out.extend_from_slice(&piece),
                suffix.as_bytes(),
            )
        }
    };
    let block = [vec![b'['; 100], vec![b']'; 100]].concat();
    all.push(text_case(
        JH,
        "nested ext value: depth-100 blocks",
        h,
        nested_value(block),
    ));
    all.push(text_case(
        JH,
        "nested ext value: many objects",
        h,
        nested_value(b"{}".to_vec()),
    ));
    all.push(text_case(
        JH,
        "nested ext value: many numbers",
        h,
        nested_value(b"0".to_vec()),
    ));
    all.push(text_case(JH, "deep nesting in an unknown field", h, |t| {
        nested(
            t,
            br#"{"code":105,"x":"#,
            b'[',
            b']',
            HEADER_TAIL.as_bytes(),
        )
    }));
}

/// JSON header: a long valid run, then what makes the scanner bail or the header fail.
pub(super) fn json_header_late_refusals(all: &mut Vec<Case>) {
    let h = decode_json_header;
    all.push(text_case(
        JH,
        "too deep in an ext value (refused)",
        h,
        |t| {
            nested(
                t,
                br#"{"code":105,"extFields":{"topic":"#,
                b'[',
                b']',
                format!("}}{HEADER_TAIL}").as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late bail: many ext fields, then an escape",
        h,
        move |t| {
            let suffix = format!(r#","z":"\n"}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"#,
                b",",
                junk(),
                suffix.as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late refusal: many ext fields, then garbage",
        h,
        move |t| {
            let suffix = format!(r#","z":!}}{HEADER_TAIL}"#);
            text(
                t,
                br#"{"code":105,"extFields":{"#,
                b",",
                junk(),
                suffix.as_bytes(),
            )
        },
    ));
    all.push(text_case(
        JH,
        "late refusal: many lines, then garbage",
        h,
        |t| {
            text(
                t,
                br#"{"code":105"#,
                b"",
                numbered("\n,\"x", "\":1"),
                b"\n,!}",
            )
        },
    ));
    all.push(text_case(
        JH,
        "repeated known field at the end (refused)",
        h,
        |t| {
            text(
                t,
                br#"{"code":105"#,
                b"",
                numbered(r#","x"#, r#"":1"#),
                br#","code":105}"#,
            )
        },
    ));
}

/// ROCKETMQ binary header.
pub(super) fn binary_headers(all: &mut Vec<Case>) {
    let b = decode_binary_header;
    all.push(text_case(BH, "many ext fields", b, |t| {
        binary_header(
            t,
            b"",
            |i, out| {
                let key = format!("k{i:08}");
                binary_entry(out, key.as_bytes(), b"v");
            },
            b"",
        )
    }));
    all.push(text_case(BH, "repeated ext key", b, |t| {
        binary_header(t, b"", |_, out| binary_entry(out, b"topic", b"T"), b"")
    }));
    all.push(text_case(BH, "empty ext entries", b, |t| {
        binary_header(t, b"", |_, out| binary_entry(out, b"", b""), b"")
    }));
    all.push(text_case(BH, "heap-sized keys (25 bytes)", b, |t| {
        binary_header(
            t,
            b"",
            |i, out| {
                let key = format!("key-{i:021}");
                binary_entry(out, key.as_bytes(), b"v");
            },
            b"",
        )
    }));
    all.push(text_case(BH, "long remark", b, |t| {
        let remark = vec![b'x'; t.saturating_sub(32)];
        binary_header(t, &remark, |_, _| {}, b"")
    }));
    all.push(text_case(BH, "long ext value", b, |t| {
        let mut last = Vec::new();
        binary_entry(&mut last, b"topic", &vec![b'x'; t.saturating_sub(40)]);
        binary_header(t, b"", |_, _| {}, &last)
    }));
    all.push(text_case(
        BH,
        "late refusal: many fields, then bad UTF-8",
        b,
        |t| {
            let mut last = Vec::new();
            binary_entry(&mut last, b"z", &[0xFF, 0xFE]);
            binary_header(
                t,
                b"",
                |i, out| {
                    let key = format!("k{i:08}");
                    binary_entry(out, key.as_bytes(), b"v");
                },
                &last,
            )
        },
    ));
}

/// Typed headers, read from a decoded command's ext fields (what the server does per request).
pub(super) fn typed_headers(all: &mut Vec<Case>) {
    let fields_then_junk = |fields: &'static str| {
        move |t: usize, limit: usize| {
            let lead = format!(r#"{SCAN}"extFields":{{{fields},"#);
            let prefix = format!("{{{lead}");
            let suffix = format!("}}{HEADER_TAIL}");
            let header = text(
                t,
                prefix.as_bytes(),
                b",",
                numbered(r#""k"#, r#"":"v""#),
                suffix.as_bytes(),
            );
            command_input(header, limit)
        }
    };
    all.push(case(
        TH,
        "RegisterBroker: fields first, many others",
        typed::<RegisterBrokerHeader>,
        fields_then_junk(REGISTER_FIELDS),
    ));
    all.push(case(
        TH,
        "RegisterBroker: fields missing (refused)",
        typed::<RegisterBrokerHeader>,
        move |t, limit| command_input(ext_header(t, SCAN, junk()), limit),
    ));
    all.push(case(
        TH,
        "RegisterBroker: long brokerName",
        typed::<RegisterBrokerHeader>,
        |t, limit| {
            let prefix = format!(r#"{{{SCAN}"extFields":{{{REGISTER_FIELDS},"brokerName":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            command_input(
                text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes()),
                limit,
            )
        },
    ));
    all.push(case(
        TH,
        "GetRouteInfo: topic first, many others",
        typed::<GetRouteInfoHeader>,
        fields_then_junk(r#""topic":"TopicTest""#),
    ));
    all.push(case(
        TH,
        "PutKvConfig: long value",
        typed::<PutKvConfigHeader>,
        |t, limit| {
            let prefix = format!(r#"{{{SCAN}"extFields":{{"namespace":"ns","key":"k","value":""#);
            let suffix = format!(r#""}}{HEADER_TAIL}"#);
            command_input(
                text(t, prefix.as_bytes(), b"", filler(), suffix.as_bytes()),
                limit,
            )
        },
    ));
    all.push(case(
        TH,
        "BrokerHeartbeat: fields first, many others",
        typed::<BrokerHeartbeatHeader>,
        fields_then_junk(r#""clusterName":"C","brokerAddr":"127.0.0.1:10911""#),
    ));
    all.push(case(
        TH,
        "QueryDataVersion: fields first, many others",
        typed::<QueryDataVersionHeader>,
        fields_then_junk(r#""clusterName":"C","brokerAddr":"127.0.0.1:10911""#),
    ));
}
