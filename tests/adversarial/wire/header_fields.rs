//! Header fields of hostile content: invalid UTF-8 in every string field, ROCKETMQ headers cut
//! short or with lengths past the end, JSON numbers out of range.

use std::fmt::Write as _;

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;

use crate::frames::*;
use crate::harness::*;

#[actix::test]
async fn invalid_utf8_in_every_string_field() {
    let mut h = Harness::new().await;

    let case = "invalid UTF-8 in each string of a JSON header";
    let templates = [
        (
            "a top-level key",
            r#"{"co@de":105,"opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "language",
            r#"{"code":105,"language":"JA@VA","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "remark",
            r#"{"code":105,"remark":"r@","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "an ext key",
            r#"{"code":105,"opaque":31,"extFields":{"topic":"WitnessTopic","k@":"v"}}"#,
        ),
        (
            "an ext value",
            r#"{"code":105,"opaque":31,"extFields":{"x":"@","topic":"WitnessTopic"}}"#,
        ),
        (
            "an unknown key",
            r#"{"code":105,"z@z":1,"opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "an unknown key's value",
            r#"{"code":105,"zz":"@","opaque":31,"extFields":{"topic":"WitnessTopic"}}"#,
        ),
        (
            "serializeTypeCurrentRPC",
            r#"{"code":105,"opaque":31,"serializeTypeCurrentRPC":"JS@ON","extFields":{"topic":"WitnessTopic"}}"#,
        ),
    ];
    for (field, template) in templates {
        // The template itself is a good request.
        let resp = h.answers(case, &json_frame(&splice(template, b""))).await;
        assert_eq!((resp.opaque, resp.code), (31, 0), "{case}: {field}, valid");
        for bad in BAD_UTF8 {
            let what = format!("{case}: {field} with {bad:02x?}");
            h.closes(&what, &json_frame(&splice(template, bad))).await;
        }
    }
    h.check(case).await;

    let case = "an escaped lone surrogate (\\ud800) in a JSON remark and ext value";
    for template in [
        r#"{"code":105,"remark":"\ud800","opaque":32,"extFields":{"topic":"WitnessTopic"}}"#,
        r#"{"code":105,"opaque":32,"extFields":{"x":"a\udc00b","topic":"WitnessTopic"}}"#,
    ] {
        if let Some(resp) = h
            .answers_or_closes(case, &json_frame(template.as_bytes()))
            .await
        {
            assert_eq!(
                (resp.opaque, resp.code),
                (32, 0),
                "{case}: {}",
                summary(&resp)
            );
        }
    }
    h.check(case).await;

    let case = "invalid UTF-8 in the ROCKETMQ remark, ext key and ext value";
    let topic = WITNESS_TOPIC.as_bytes();
    let good = binary_header(105, 33, 0, b"remark", &[(b"k", b"v"), (b"topic", topic)]);
    let resp = h.answers(case, &frame_bytes(1, &good, &[])).await;
    assert_eq!((resp.opaque, resp.code), (33, 0), "{case}: valid");
    for bad in BAD_UTF8 {
        let with = |s: &str| splice(s, bad);
        let headers = [
            (
                "remark",
                binary_header(105, 33, 0, &with("re@mark"), &[(b"topic", topic)]),
            ),
            (
                "ext key",
                binary_header(105, 33, 0, b"", &[(&with("k@"), b"v"), (b"topic", topic)]),
            ),
            (
                "ext value",
                binary_header(105, 33, 0, b"", &[(b"k", &with("@v")), (b"topic", topic)]),
            ),
        ];
        for (field, header) in headers {
            let what = format!("{case}: {field} with {bad:02x?}");
            h.closes(&what, &frame_bytes(1, &header, &[])).await;
        }
    }
    h.check(case).await;

    let case = "REGISTER_BROKER whose JSON body has invalid UTF-8 in topic names";
    let broker = FakeBroker::master("broker-utf8", 10941, &["Utf8@A", "Utf8@B"]);
    let body = splice(std::str::from_utf8(&broker.body_json()).unwrap(), b"\xff");
    let cmd = register_with_body(&broker, body, false, 479);
    h.register_refused(case, cmd, &broker.addr, "bad JSON body")
        .await;

    let case = "a compressed registration whose topic text is not UTF-8";
    let raw = compressed_layout(
        br#"{"counter":1,"timestamp":1}"#,
        &[b"Utf8\xffA 4 4 6 SINGLE_TAG", b"Utf8B 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    h.register_refused(
        case,
        cmd,
        &broker.addr,
        "Failed to decode RegisterBrokerBody",
    )
    .await;

    let case = "REGISTER_TOPIC_IN_NAMESRV whose body has invalid UTF-8";
    let body = splice(
        r#"{"queueDatas":[{"brokerName":"b@","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#,
        b"\xff",
    );
    let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "Utf8Topic")
        .with_body(body);
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad TopicRouteData body");
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose body has invalid UTF-8";
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(splice(r#"{"count@er":1}"#, b"\xff"));
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad DataVersion body");
    h.check(case).await;

    let case = "UPDATE_NAMESRV_CONFIG whose properties body is not UTF-8";
    let cmd = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG)
        .with_body(&b"\xff\xfe=\xff\nno\xc0\xafKey=1\n"[..]);
    let resp = h.request_on_new(case, cmd).await;
    assert_ne!(resp.code, 16, "{case}: {}", summary(&resp));
    let config = h
        .before
        .request(RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG))
        .await
        .unwrap();
    assert_eq!(config.code, 0, "{case}: the configuration still reads");
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn rocketmq_header_truncated_and_lengths_past_the_end() {
    let mut h = Harness::new().await;
    let topic = WITNESS_TOPIC.as_bytes();
    let full = binary_header(105, 51, 0, b"r", &[(b"k", b"v"), (b"topic", topic)]);
    let resp = h.answers("control", &frame_bytes(1, &full, &[])).await;
    assert_eq!((resp.opaque, resp.code), (51, 0), "control");

    let case = "a ROCKETMQ header cut at every byte (every field boundary included)";
    for cut in 0..full.len() {
        let what = format!("{case}: {cut} of {} bytes", full.len());
        h.closes(&what, &frame_bytes(1, &full[..cut], &[])).await;
    }
    h.check(case).await;

    let case = "a ROCKETMQ header cut short, the rest of its bytes sent as the body";
    for cut in [1, 5, 13, 17, 20, 25] {
        let what = format!("{case}: header of {cut} bytes");
        h.closes(&what, &frame_bytes(1, &full[..cut], &full[cut..]))
            .await;
    }
    h.check(case).await;

    // Offsets of the fixed part: remark length at 13, remark at 17.
    let with_remark_len = |len: i32| {
        let mut header = full.clone();
        header[13..17].copy_from_slice(&len.to_be_bytes());
        header
    };
    let ext_start = 17 + 1;
    let with_ext_len = |len: i32| {
        let mut header = full.clone();
        header[ext_start..ext_start + 4].copy_from_slice(&len.to_be_bytes());
        header
    };
    let ext_len = (full.len() - ext_start - 4) as i32;
    let entry_start = ext_start + 4;
    let with_key_len = |len: i16| {
        let mut header = full.clone();
        header[entry_start..entry_start + 2].copy_from_slice(&len.to_be_bytes());
        header
    };
    let value_len_at = entry_start + 2 + 1;
    let with_value_len = |len: i32| {
        let mut header = full.clone();
        header[value_len_at..value_len_at + 4].copy_from_slice(&len.to_be_bytes());
        header
    };
    let cases: Vec<(String, Vec<u8>)> = vec![
        ("remark length i32::MAX".into(), with_remark_len(i32::MAX)),
        (
            "remark length one past the header".into(),
            with_remark_len((full.len() - 17 + 1) as i32),
        ),
        ("remark length -1".into(), with_remark_len(-1)),
        ("remark length i32::MIN".into(), with_remark_len(i32::MIN)),
        (
            "ext length one past the header".into(),
            with_ext_len(ext_len + 1),
        ),
        ("ext length -1".into(), with_ext_len(-1)),
        ("ext length i32::MIN".into(), with_ext_len(i32::MIN)),
        (
            "ext length shorter than its entries (leftover bytes)".into(),
            with_ext_len(ext_len - 1),
        ),
        ("ext key length -1".into(), with_key_len(-1)),
        ("ext key length i16::MIN".into(), with_key_len(i16::MIN)),
        (
            "ext key length past the ext section".into(),
            with_key_len(ext_len as i16),
        ),
        ("ext value length -1".into(), with_value_len(-1)),
        ("ext value length i32::MAX".into(), with_value_len(i32::MAX)),
        (
            "ext value length past the ext section".into(),
            with_value_len(ext_len),
        ),
        ("a byte left over after the ext section".into(), {
            let mut header = full.clone();
            header.push(0);
            header
        }),
        (
            "an ext section of one byte".into(),
            binary_header_raw(105, 51, 0, b"", &[0]),
        ),
        (
            "an ext entry cut after its key".into(),
            binary_header_raw(105, 51, 0, b"", &[0, 1, b'k']),
        ),
    ];
    for (what, header) in &cases {
        let what = format!("ROCKETMQ header: {what}");
        h.closes(&what, &frame_bytes(1, header, &[])).await;
    }
    h.check("ROCKETMQ header lengths pointing past the end")
        .await;

    let case = "a ROCKETMQ ext key of 32,767 bytes, the longest a 16-bit length holds";
    let long_key = vec![b'k'; i16::MAX as usize];
    let header = binary_header(105, 52, 0, b"", &[(&long_key, b"v"), (b"topic", topic)]);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (52, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "ROCKETMQ empty keys and values are dropped (an empty `topic` does not replace it)";
    let header = binary_header(
        105,
        53,
        0,
        b"",
        &[(b"", b"x"), (b"topic", topic), (b"topic", b""), (b"y", b"")],
    );
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (53, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn json_header_numbers_out_of_range() {
    let mut h = Harness::new().await;
    let header_with = |field: &str, value: &str| {
        let mut fields = vec![
            ("code", "105"),
            ("flag", "0"),
            ("language", "\"JAVA\""),
            ("opaque", "61"),
            ("version", "479"),
        ];
        for entry in &mut fields {
            if entry.0 == field {
                entry.1 = value;
            }
        }
        let mut header = String::from("{");
        for (key, value) in fields {
            write!(header, r#""{key}":{value},"#).unwrap();
        }
        write!(header, r#""extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
        header.into_bytes()
    };

    let case = "integers beyond 32 bits, fractions and wrong types in code/opaque/flag/version";
    for (field, value) in [
        ("code", "2147483648"),
        ("code", "-2147483649"),
        ("opaque", "4294967296"),
        ("flag", "9223372036854775808"),
        ("version", "18446744073709551616"),
        ("version", "-9223372036854775809"),
        ("code", "105.0"),
        ("opaque", "1e3"),
        ("code", "\"2147483648\""),
        ("opaque", "\"-2147483649\""),
        ("flag", "\"0x10\""),
        ("opaque", "[61]"),
        ("code", "{}"),
        ("opaque", "true"),
    ] {
        let what = format!("{case}: {field}={value}");
        h.closes(&what, &json_frame(&header_with(field, value)))
            .await;
    }
    h.check(case).await;

    let case = "edge values that are valid: answered";
    for (field, value, opaque, code) in [
        ("language", "300", 61, 0),
        ("language", "-1", 61, 0),
        ("language", "\"KLINGON\"", 61, 0),
        ("language", "null", 61, 0),
        ("code", "\"105\"", 61, 0),
        ("opaque", "\" 2147483647 \"", i32::MAX, 0),
        ("opaque", "-2147483648", i32::MIN, 0),
        ("opaque", "null", 0, 0),
        ("version", "2147483647", 61, 0),
        ("version", "-2147483648", 61, 0),
        ("code", "-2147483648", 61, 3),
    ] {
        let what = format!("{case}: {field}={value}");
        let resp = h
            .answers(&what, &json_frame(&header_with(field, value)))
            .await;
        assert_eq!(
            (resp.opaque, resp.code),
            (opaque, code),
            "{what}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "ext values that are huge numbers";
    let header = format!(
        r#"{{"code":105,"opaque":62,"extFields":{{"n":18446744073709551616,"m":-9223372036854775809,"topic":"{WITNESS_TOPIC}"}}}}"#
    );
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (62, 0),
        "{case}: {}",
        summary(&resp)
    );
    let header = format!(
        r#"{{"code":105,"opaque":63,"extFields":{{"n":1e400,"topic":"{WITNESS_TOPIC}"}}}}"#
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (63, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "ROCKETMQ opaques at the 32-bit edges are echoed";
    for opaque in [i32::MIN, -1, 0, i32::MAX] {
        let header = binary_header(105, opaque, 0, b"", &[(b"topic", WITNESS_TOPIC.as_bytes())]);
        let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
        assert_eq!(
            (resp.opaque, resp.code),
            (opaque, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;
    h.stop().await;
}
