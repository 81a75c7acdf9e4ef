//! Frames cut, sized and counted: split at every byte, at the size limit, lengths that overflow,
//! the header-length word and serialize-type byte, lengths 0 to 7, frames never completed, a
//! thousand tiny frames in one write.

use std::time::Duration;

use rmq_namesrv::protocol::SerializeType;
use rmq_namesrv::tools::broker::FakeBroker;

use crate::frames::*;
use crate::harness::*;
use crate::raw::*;
use crate::support::*;

#[actix::test]
async fn requests_split_at_every_byte_boundary() {
    let mut h = Harness::new().await;

    let case = "a JSON and a ROCKETMQ request back to back, split in two writes at every position";
    let mut pair = wire(&route_request(WITNESS_TOPIC).with_opaque(1));
    pair.extend(wire(
        &route_request("NoSuchTopic")
            .with_opaque(2)
            .with_serialize_type(SerializeType::RocketMq),
    ));
    let mut raw = Raw::open(h.addr, case).await;
    for cut in 1..pair.len() {
        raw.must_send(&pair[..cut]).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        raw.must_send(&pair[cut..]).await;
        let mut answers = [raw.response().await, raw.response().await];
        answers.sort_by_key(|r| r.opaque);
        let got: Vec<_> = answers
            .iter()
            .map(|r| (r.opaque, r.code, r.serialize_type))
            .collect();
        assert_eq!(
            got,
            [
                (1, 0, SerializeType::Json),
                (2, 17, SerializeType::RocketMq)
            ],
            "{case}: cut at {cut}"
        );
    }
    drop(raw);
    h.check(case).await;

    let case = "REGISTER_BROKER (ROCKETMQ header, JSON body) delivered one byte per write";
    let split = FakeBroker::master("broker-split", 10921, &["SplitTopic", "SplitTopic2"]);
    let bytes = wire(
        &split
            .register()
            .with_opaque(9)
            .with_serialize_type(SerializeType::RocketMq),
    );
    let mut raw = Raw::open(h.addr, case).await;
    for byte in &bytes {
        raw.must_send(std::slice::from_ref(byte)).await;
    }
    let resp = raw.response().await;
    assert_eq!(
        (resp.opaque, resp.code, resp.serialize_type),
        (9, 0, SerializeType::RocketMq),
        "{case}: {}",
        summary(&resp)
    );
    let route = h.before.request(route_request("SplitTopic")).await.unwrap();
    assert_eq!(route.code, 0, "{case}: the witness sees the new route");
    assert!(body_text(&route).contains("127.0.0.1:10921"), "{case}");
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn frames_at_the_size_limit() {
    let mut h = Harness::new().await;
    let max = h.max_frame;

    let case = "a frame of exactly server.max_frame_bytes whose header is all `{`";
    let header_len = (max - 8).min(0xFF_FFFF);
    let bytes = frame_bytes(
        0,
        &vec![b'{'; header_len],
        &vec![b'{'; max - 8 - header_len],
    );
    assert_eq!(bytes.len(), max);
    h.closes(case, &bytes).await;
    drop(bytes);
    h.check(case).await;

    let case = "a route query padded with a body to exactly server.max_frame_bytes";
    let head = wire(&route_request(WITNESS_TOPIC).with_opaque(3)).len();
    let bytes = wire(
        &route_request(WITNESS_TOPIC)
            .with_opaque(3)
            .with_body(vec![b'x'; max - head]),
    );
    assert_eq!(bytes.len(), max);
    let resp = h.answers(case, &bytes).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (3, 0),
        "{case}: {}",
        summary(&resp)
    );
    drop(bytes);
    h.check(case).await;

    let case = "a length one byte past the limit, sent alone (refused before buffering)";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&((max - 3) as u32).to_be_bytes()).await;
    raw.expect_closed().await;
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn lengths_that_overflow_when_4_is_added() {
    let lengths: [u32; 8] = [
        0x7FFF_FFFF,
        0x7FFF_FFFD,
        0x7FFF_FFFC,
        0x8000_0000,
        0x8000_0004,
        0xFFFF_FFFC,
        0xFFFF_FFFD,
        0xFFFF_FFFE,
    ];
    let mut largest = test_config();
    largest.server.max_frame_bytes = i32::MAX as usize;
    largest.server.max_inflated_body_bytes = i32::MAX as usize;
    for (server, config) in [
        ("default limit", test_config()),
        ("limit i32::MAX", largest),
    ] {
        let mut h = Harness::start(config).await;
        let case = format!("{server}: length fields that overflow 32 bits with the 4 added");
        for length in lengths {
            let what = format!("{case}: {length:#010x}");
            h.closes(&what, &frame_word(length, 0x0000_0002, b"{}"))
                .await;
        }
        h.check(&case).await;
        h.stop().await;
    }
}

#[actix::test]
async fn header_length_and_serialize_type_byte() {
    let mut h = Harness::new().await;
    let header = json_route_header(41, WITNESS_TOPIC).into_bytes();
    let n = header.len() as u32;

    let case = "a header length of 0xFFFFFF in a small frame";
    h.closes(case, &frame_word(4 + n, 0x00FF_FFFF, &header))
        .await;
    h.check(case).await;

    let case = "a JSON header length one byte more than the frame holds";
    h.closes(case, &frame_word(4 + n, n + 1, &header)).await;
    h.check(case).await;

    let case = "a ROCKETMQ header length one byte more than the frame holds";
    let binary = binary_header(105, 41, 0, b"", &[(b"topic", WITNESS_TOPIC.as_bytes())]);
    let b = binary.len() as u32;
    h.closes(case, &frame_word(4 + b, 0x0100_0000 | (b + 1), &binary))
        .await;
    h.check(case).await;

    let case = "a header length that cuts the JSON short (the rest would be the body)";
    h.closes(case, &frame_word(4 + n, n - 1, &header)).await;
    h.check(case).await;

    let case = "a header length that takes body bytes into the JSON";
    let mut with_body = header.clone();
    with_body.extend_from_slice(b"xyz");
    h.closes(case, &frame_word(4 + n + 3, n + 3, &with_body))
        .await;
    h.check(case).await;

    let case = "a header length 0 with a body";
    h.closes(case, &frame_word(4 + n, 0, &header)).await;
    h.check(case).await;

    let case = "trailing whitespace inside the header length is accepted";
    let mut padded = header.clone();
    padded.extend_from_slice(b" \n\t\r ");
    let resp = h.answers(case, &json_frame(&padded)).await;
    assert_eq!(
        (resp.opaque, resp.code),
        (41, 0),
        "{case}: {}",
        summary(&resp)
    );
    h.check(case).await;

    let case = "every unknown serialize-type byte (2..=255) on a valid JSON header";
    for type_byte in 2..=255u8 {
        let what = format!("{case}: {type_byte}");
        h.closes(&what, &frame_bytes(type_byte, &header, &[])).await;
    }
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn frames_of_length_0_to_7() {
    let mut h = Harness::new().await;
    let case = "length 0..=7 followed by that many zero bytes";
    for length in 0..=7u32 {
        let mut bytes = length.to_be_bytes().to_vec();
        bytes.resize(4 + length as usize, 0);
        h.closes(&format!("{case}: {length}"), &bytes).await;
    }
    h.check(case).await;

    let case = "length 4 with a ROCKETMQ word and no header";
    h.closes(case, &frame_word(4, 0x0100_0000, &[])).await;
    h.check(case).await;

    let case = "length 5 with a one-byte header `{`";
    h.closes(case, &frame_word(5, 1, b"{")).await;
    h.check(case).await;

    let case = "the smallest valid frames: header `{}` (6), `{}` + 1 body byte (7), `{ }` (7)";
    for bytes in [
        frame_word(6, 2, b"{}"),
        frame_word(7, 2, b"{}x"),
        frame_word(7, 3, b"{ }"),
    ] {
        let resp = h.answers(case, &bytes).await;
        assert_eq!(
            (resp.opaque, resp.code, resp.remark.as_deref()),
            (0, 3, Some(" request type 0 not supported")),
            "{case}: {}",
            summary(&resp)
        );
    }
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn never_completing_frames() {
    // An idle timeout of 1 s closes a stalled connection within this test's patience; the
    // witnesses talk every 300 ms, which keeps them open.
    let mut config = test_config();
    config.server.idle_timeout = Duration::from_secs(1);
    config.tls.handshake_timeout = Duration::from_secs(1);
    let mut h = Harness::start(config).await;

    let stalls: [(&str, Vec<u8>); 4] = [
        ("a frame announcing 100 bytes, 10 sent", {
            let mut bytes = 100u32.to_be_bytes().to_vec();
            bytes.extend_from_slice(&[0, 0, 0, 2, b'{', b'}', 0, 0, 0, 0]);
            bytes
        }),
        ("two bytes of a length field", vec![0, 0]),
        ("a frame announcing 16 MiB - 4, its header word sent", {
            let mut bytes = ((h.max_frame - 4) as u32).to_be_bytes().to_vec();
            bytes.extend_from_slice(&[0, 0, 0, 2]);
            bytes
        }),
        ("a connection that never sends a byte", Vec::new()),
    ];
    for (case, bytes) in stalls {
        let mut raw = Raw::open(h.addr, case).await;
        raw.must_send(&bytes).await;
        h.wait_closed(&mut raw, Duration::from_secs(5)).await;
        drop(raw);
        h.check(case).await;
    }

    let case = "a request answered, then a frame that never completes";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(91)))
        .await;
    raw.must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(92))[..30])
        .await;
    let resp = raw.response().await;
    assert_eq!((resp.opaque, resp.code), (91, 0), "{case}");
    h.wait_closed(&mut raw, Duration::from_secs(5)).await;
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn a_thousand_tiny_frames_in_one_write() {
    for max_in_flight in [None, Some(1)] {
        let mut config = test_config();
        if let Some(limit) = max_in_flight {
            config.server.max_in_flight = limit;
        }
        let mut h = Harness::start(config).await;
        let case = format!("1,000 tiny frames in one write, max_in_flight {max_in_flight:?}");
        let mut bytes = Vec::new();
        for i in 0..1000 {
            match i % 3 {
                // Code 0: not supported.
                0 => bytes.extend(json_frame(format!(r#"{{"opaque":{i}}}"#).as_bytes())),
                // A ROCKETMQ route query without a topic: TOPIC_NOT_EXIST, via the registry.
                1 => bytes.extend(frame_bytes(1, &binary_header(105, i, 0, b"", &[]), &[])),
                _ => bytes.extend(json_frame(
                    format!(
                        r#"{{"code":105,"opaque":{i},"extFields":{{"topic":"{WITNESS_TOPIC}"}}}}"#
                    )
                    .as_bytes(),
                )),
            }
        }
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&bytes).await;
        let mut seen = vec![false; 1000];
        for _ in 0..1000 {
            let resp = raw.response().await;
            let i = usize::try_from(resp.opaque).expect("an opaque we sent");
            let expected = [3, 17, 0][i % 3];
            assert_eq!(resp.code, expected, "{case}: opaque {i}");
            assert!(!seen[i], "{case}: opaque {i} answered twice");
            seen[i] = true;
        }
        raw.expect_silence(Duration::from_millis(100)).await;
        drop(raw);
        h.check(&case).await;
        h.stop().await;
    }
}
