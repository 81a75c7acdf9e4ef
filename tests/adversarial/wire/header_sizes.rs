//! Headers of hostile size: JSON nested as deep as it goes (in headers and bodies), 100,000 ext
//! fields, remarks and ext values of several MiB.

use std::fmt::Write as _;

use rmq_namesrv::protocol::{RemotingCommand, RequestCode, SerializeType};
use rmq_namesrv::tools::broker::FakeBroker;

use crate::frames::*;
use crate::harness::*;
use crate::logs::assert_not_logged_whole;
use crate::support::*;

#[actix::test]
async fn deeply_nested_json_in_headers_and_bodies() {
    let mut h = Harness::new().await;
    const DEEP: usize = 100_000;

    let case = "an ext value nested 50 deep (kept as its JSON text)";
    let header = format!(
        r#"{{"code":105,"opaque":11,"extFields":{{"deep":{},"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(50, "[", "1", "]")
    );
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (11, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "an ext value nested 100,000 arrays deep";
    let header = format!(
        r#"{{"code":105,"opaque":12,"extFields":{{"topic":"{WITNESS_TOPIC}","deep":{}}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (12, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "an unknown header key holding objects nested 100,000 deep";
    let header = format!(
        r#"{{"code":105,"opaque":13,"zz":{},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(DEEP, r#"{"a":"#, "1", "}")
    );
    if let Some(resp) = h
        .answers_or_closes(case, &json_frame(header.as_bytes()))
        .await
    {
        assert_eq!(
            (resp.opaque, resp.code),
            (13, 0),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;

    let case = "a header that is nothing but 100,000 nested objects";
    let header = nested(DEEP, r#"{"extFields":"#, "{}", "}");
    h.answers_or_closes(case, &json_frame(header.as_bytes()))
        .await;
    h.check(case).await;

    let case = "a remark of 100,000 nested arrays (a key of the wrong type)";
    let header = format!(
        r#"{{"code":105,"opaque":14,"remark":{},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    h.closes(case, &json_frame(header.as_bytes())).await;
    h.check(case).await;

    // Unknown properties are skipped (docs/protocol.md#json-bodies), however deep: serde_json
    // skips them without recursing. Typed positions fail at the first wrong token.
    let broker = FakeBroker::master("broker-deep", 10931, &["DeepA", "DeepB"]);
    let case = "REGISTER_BROKER whose JSON body nests 100,000 objects under an unknown property";
    let body = format!(
        r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{{"DeepA":{{"topicName":"DeepA","zz":{}}},"DeepB":{{"topicName":"DeepB"}}}}}}}}"#,
        nested(DEEP, r#"{"a":"#, "1", "}")
    );
    let cmd = register_with_body(&broker, body.into_bytes(), false, 479);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert!(
        resp.code == 0
            || (resp.code == 1
                && resp
                    .remark
                    .as_deref()
                    .unwrap_or("")
                    .starts_with("bad JSON body")),
        "{case}: {}",
        summary(&resp)
    );
    drop(conn);
    h.check(case).await;

    let case = "REGISTER_BROKER whose topic table is 100,000 nested arrays";
    let body = format!(
        r#"{{"topicConfigSerializeWrapper":{{"topicConfigTable":{}}}}}"#,
        nested(DEEP, "[", "", "]")
    );
    let cmd = register_with_body(&broker, body.into_bytes(), false, 479);
    h.register_refused(case, cmd, &broker.addr, "bad JSON body")
        .await;

    let case = "REGISTER_TOPIC_IN_NAMESRV whose body nests 100,000 arrays";
    let body = format!(r#"{{"queueDatas":{}}}"#, nested(DEEP, "[", "", "]"));
    let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "DeepTopic")
        .with_body(body.into_bytes());
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad TopicRouteData body");
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose body nests 100,000 objects with bare numeric keys";
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(nested(DEEP, "{0:", "1", "}").into_bytes());
    // An unknown property `0` of a DataVersion: skipped, or refused; answered either way.
    let resp = h.request_on_new(case, cmd).await;
    assert!(
        resp.code == 0
            || resp
                .remark
                .as_deref()
                .unwrap_or("")
                .starts_with("bad DataVersion body"),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "QUERY_DATA_VERSION whose counter is 100,000 nested arrays";
    let body = format!(r#"{{"counter":{}}}"#, nested(DEEP, "[", "", "]"));
    let cmd = h
        .broker
        .query_data_version(&h.broker.version)
        .with_body(body.into_bytes());
    let resp = h.request_on_new(case, cmd).await;
    assert_refused(case, &resp, "bad DataVersion body");
    h.check(case).await;

    let case = "a compressed registration whose DataVersion nests 100,000 arrays";
    let raw = compressed_layout(
        nested(DEEP, "[", "", "]").as_bytes(),
        &[b"DeepA 4 4 6 SINGLE_TAG", b"DeepB 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    // The remark's wording is the subject of its own case (register_broker_checksums_...).
    h.register_refused(case, cmd, &broker.addr, "").await;
    h.stop().await;
}

#[actix::test]
async fn ext_fields_with_100k_entries() {
    let mut h = Harness::new().await;
    const N: usize = 100_000;

    let case = "a JSON header with 100,000 distinct ext entries";
    let mut header = String::from(r#"{"code":105,"opaque":21,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""key{i}":"value{i}","#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (21, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON header with 100,000 numeric ext values (the serde path)";
    let mut header = String::from(r#"{"code":105,"opaque":22,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""key{i}":{i},"#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (22, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON header repeating `topic` 100,000 times (the last one counts)";
    let mut header = String::from(r#"{"code":105,"opaque":23,"extFields":{"#);
    for i in 0..N {
        write!(header, r#""topic":"NoSuchTopic{i}","#).unwrap();
    }
    write!(header, r#""topic":"{WITNESS_TOPIC}"}}}}"#).unwrap();
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (23, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a ROCKETMQ header with 100,000 ext entries";
    let mut ext = Vec::new();
    for i in 0..N {
        ext.extend(ext_entry(
            format!("key{i}").as_bytes(),
            format!("value{i}").as_bytes(),
        ));
    }
    ext.extend(ext_entry(b"topic", WITNESS_TOPIC.as_bytes()));
    let header = binary_header_raw(105, 24, 0, b"", &ext);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code, resp.serialize_type),
        (24, 0, SerializeType::RocketMq),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn remarks_and_ext_values_of_several_mib() {
    let mut h = Harness::new().await;
    let big = |seed: &str| -> String {
        let mut text = String::with_capacity(4 << 20);
        let mut i = 0u64;
        while text.len() < 4 << 20 {
            write!(text, "{seed}{i:08}").unwrap();
            i += 1;
        }
        text
    };

    let case = "a JSON route query with a 4 MiB remark";
    let remark = big("remark");
    let cmd = route_request(WITNESS_TOPIC).with_opaque(71);
    let cmd = RemotingCommand {
        remark: Some(remark.clone()),
        ..cmd
    };
    let resp = h.answers(case, &wire(&cmd)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (71, 0),
        "{case}: {}",
        summary(&resp)
    );
    assert_not_logged_whole(case, &remark);
    h.check(case).await;

    let case = "a JSON route query with a 4 MiB remark full of escapes";
    let escaped = format!(
        r#"{{"code":105,"opaque":72,"remark":"{}","extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#,
        "\\n\\u0041\\\"".repeat(400_000)
    );
    let resp = h.answers(case, &json_frame(escaped.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (72, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "a JSON route query with a 4 MiB ext value";
    let value = big("extvalue");
    let cmd = route_request(WITNESS_TOPIC)
        .with_ext("bulk", value.clone())
        .with_opaque(73);
    let resp = h.answers(case, &wire(&cmd)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (73, 0),
        "{case}: {}",
        summary(&resp)
    );
    assert_not_logged_whole(case, &value);
    h.check(case).await;

    let case = "a ROCKETMQ route query with a 4 MiB remark and a 4 MiB ext value";
    let header = binary_header(
        105,
        74,
        0,
        remark.as_bytes(),
        &[
            (b"bulk", value.as_bytes()),
            (b"topic", WITNESS_TOPIC.as_bytes()),
        ],
    );
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (74, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}
