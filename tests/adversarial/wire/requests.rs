//! Hostile use of well-formed requests: interleaved requests with duplicate opaques, oneway on
//! every request code.

use std::time::Duration;

use rmq_namesrv::protocol::command::{FLAG_ONEWAY, FLAG_RESPONSE};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode, SerializeType};

use crate::frames::*;
use crate::harness::*;
use crate::raw::*;
use crate::support::*;

#[actix::test]
async fn interleaved_requests_with_duplicate_opaques() {
    let mut h = Harness::new().await;
    let case = "four kinds of request pipelined, each opaque used 40 times on one connection";
    let mut bytes = Vec::new();
    for round in 0..50 {
        let opaque = round % 5;
        bytes.extend(wire(&route_request(WITNESS_TOPIC).with_opaque(opaque)));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                .with_ext("namespace", "adversarial")
                .with_ext("key", "missing")
                .with_serialize_type(SerializeType::RocketMq)
                .with_opaque(opaque),
        ));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode(10)).with_opaque(opaque),
        ));
        bytes.extend(wire(
            &RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
                .with_opaque(opaque),
        ));
    }
    // A second connection uses the same opaques at the same time.
    let mut other = Raw::open(h.addr, case).await;
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&bytes).await;
    other.must_send(&bytes).await;
    for conn in [&mut raw, &mut other] {
        // Per opaque: (route, KV miss, not supported, topic list) answers.
        let mut seen = [[0u32; 4]; 5];
        for _ in 0..200 {
            let resp = conn.response().await;
            let opaque = usize::try_from(resp.opaque).expect("an opaque we sent");
            assert!(opaque < 5, "{case}: opaque {opaque}");
            let body = body_text(&resp);
            let kind = match (resp.code, resp.serialize_type) {
                (0, SerializeType::Json) if body.contains("brokerDatas") => 0,
                (22, SerializeType::RocketMq) => 1,
                (3, SerializeType::Json) => 2,
                (0, SerializeType::Json) if body.contains("topicList") => 3,
                _ => panic!("{case}: unexpected answer {}", summary(&resp)),
            };
            seen[opaque][kind] += 1;
        }
        assert_eq!(seen, [[10; 4]; 5], "{case}: answers per opaque and kind");
        conn.expect_silence(Duration::from_millis(100)).await;
    }
    drop(raw);
    drop(other);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn oneway_on_every_request_code() {
    let mut h = Harness::new().await;
    for serialize_type in [SerializeType::Json, SerializeType::RocketMq] {
        let case = format!("{serialize_type:?}: every request code flagged oneway, without fields");
        let mut codes: Vec<i32> = RequestCode::NAMESRV_CODES.iter().map(|c| c.0).collect();
        codes.extend([0, -1, 10, 905, 32767, -32768]);
        if serialize_type == SerializeType::Json {
            codes.extend([70_000, i32::MIN, i32::MAX]);
        }
        let mut bytes = Vec::new();
        for (i, code) in codes.iter().enumerate() {
            // Flag 2 alone, then with every other bit but the response bit.
            let flag = if i % 2 == 0 {
                FLAG_ONEWAY
            } else {
                !FLAG_RESPONSE
            };
            bytes.extend(wire(
                &RemotingCommand::request(RequestCode(*code))
                    .with_flag(flag)
                    .with_opaque(1000 + i as i32)
                    .with_serialize_type(serialize_type),
            ));
        }
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&bytes).await;
        raw.must_send(&wire(
            &route_request(WITNESS_TOPIC)
                .with_opaque(7)
                .with_serialize_type(serialize_type),
        ))
        .await;
        let resp = raw.response().await;
        assert_eq!(
            (resp.opaque, resp.code),
            (7, 0),
            "{case}: {}",
            summary(&resp)
        );
        // Oneway requests answered by actors finish later: nothing may come of them either.
        raw.expect_silence(Duration::from_millis(300)).await;
        raw.must_send(&wire(
            &route_request(WITNESS_TOPIC)
                .with_opaque(8)
                .with_serialize_type(serialize_type),
        ))
        .await;
        let resp = raw.response().await;
        assert_eq!(
            (resp.opaque, resp.code),
            (8, 0),
            "{case}: {}",
            summary(&resp)
        );
        drop(raw);
        h.check(&case).await;
    }

    let case = "oneway requests are processed: a oneway KV put is readable afterwards";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&wire(
        &RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "adversarial")
            .with_ext("key", "oneway")
            .with_ext("value", "processed")
            .with_flag(FLAG_ONEWAY),
    ))
    .await;
    raw.expect_silence(Duration::from_millis(200)).await;
    drop(raw);
    let get = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "oneway");
    let resp = h.before.request(get).await.unwrap();
    assert_eq!(
        (resp.code, resp.ext("value")),
        (0, Some("processed")),
        "{case}"
    );
    h.check(case).await;

    let case = "response frames (flag bit 0) on every code are dropped without a reply";
    let mut raw = Raw::open(h.addr, case).await;
    let mut bytes = Vec::new();
    for (i, code) in RequestCode::NAMESRV_CODES.iter().enumerate() {
        for flag in [FLAG_RESPONSE, FLAG_RESPONSE | FLAG_ONEWAY, -1] {
            bytes.extend(wire(
                &RemotingCommand::request(*code)
                    .with_flag(flag)
                    .with_opaque(i as i32),
            ));
        }
    }
    raw.must_send(&bytes).await;
    raw.expect_silence(Duration::from_millis(300)).await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(99)))
        .await;
    let resp = raw.response().await;
    assert_eq!(
        (resp.opaque, resp.code),
        (99, 0),
        "{case}: {}",
        summary(&resp)
    );
    drop(raw);
    h.check(case).await;

    let case = "an unknown flag bit (4) is ignored: the request is answered";
    let header = json_route_header(5, WITNESS_TOPIC).replace(r#""flag":0"#, r#""flag":4"#);
    let resp = h.answers(case, &json_frame(header.as_bytes())).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (5, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;
    h.stop().await;
}
