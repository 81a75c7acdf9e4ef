//! Hostile bodies: zlib bombs sized from the configured limit, a 10 MiB KV value, topic names at
//! and over the usual maximum, registration checksums and compression flags, JSON of the wrong
//! types.

use std::fmt::Write as _;
use std::time::Duration;

use rmq_namesrv::protocol::custom_headers::CommandHeader;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::{body_crc32, FakeBroker};
use rmq_namesrv::tools::client::Client;

use crate::frames::*;
use crate::harness::*;
use crate::logs::{self, assert_not_logged_whole};
use crate::support::*;

#[actix::test]
async fn zlib_bomb_sized_from_the_configured_limit() {
    // The bomb is built from the limit the test server runs with, whatever the default is; a
    // default above 16 MiB is lowered to what a debug build inflates in well under a second.
    let mut config = test_config();
    if config.server.max_inflated_body_bytes > 16 << 20 {
        config.server.max_inflated_body_bytes = config.server.max_frame_bytes.max(16 << 20);
    }
    let mut h = Harness::start(config).await;
    let limit = h.max_inflated;

    // The construction itself, checked on a small size.
    let small = 2 * (1 << 20) + 7;
    let mut inflated = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::ZlibDecoder::new(zlib_zeros(small).as_slice()),
        &mut inflated,
    )
    .expect("a valid zlib stream");
    assert!(inflated.len() == small && inflated.iter().all(|b| *b == 0));

    let bomber = FakeBroker::master("broker-bomb", 10951, &["BombA", "BombB"]);
    let case = "a compressed REGISTER_BROKER body inflating to exactly the limit (not a bomb)";
    let bomb = zlib_zeros(limit);
    assert!(
        bomb.len() < h.max_frame / 2,
        "{} bytes compressed",
        bomb.len()
    );
    let cmd = register_with_body(&bomber, bomb, true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    let remark = resp.remark.clone().unwrap_or_default();
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    // Zeros are no registration: refused, but not for its size (the wording of a bad inner
    // part is the subject of its own case in register_broker_checksums_...).
    assert!(!remark.contains("inflates"), "{case}: {remark}");
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;

    // Inflated as it is read, zeros are refused at their first chunk, long before the limit.
    let case = "a compressed REGISTER_BROKER body inflating one byte past the limit";
    let cmd = register_with_body(&bomber, zlib_zeros(limit + 1), true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    let remark = resp.remark.clone().unwrap_or_default();
    assert!(
        remark.starts_with("Failed to decode RegisterBrokerBody"),
        "{case}: {remark}"
    );
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;

    // A well-formed start whose topic chunk declares one byte more than the limit leaves: refused
    // for its size before a byte of it is inflated.
    let case = "a compressed REGISTER_BROKER body whose chunk declares more than the limit";
    let mut raw = Vec::new();
    raw.extend_from_slice(&2i32.to_be_bytes());
    raw.extend_from_slice(b"{}");
    raw.extend_from_slice(&1i32.to_be_bytes());
    let declared = i32::try_from(limit - 10 + 1).unwrap_or(i32::MAX);
    raw.extend_from_slice(&declared.to_be_bytes());
    raw.extend_from_slice(&[b'x'; 64]);
    let cmd = register_with_body(&bomber, zlib(&raw), true, 409);
    let mut conn = h.client(case).await;
    let resp = conn.request(cmd).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    let remark = resp.remark.clone().unwrap_or_default();
    assert!(
        remark.starts_with("Failed to decode RegisterBrokerBody")
            && remark.contains(&format!("inflates to more than {limit} bytes")),
        "{case}: {remark}"
    );
    h.not_registered(case, &bomber.addr).await;
    drop(conn);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn kv_put_of_a_10_mib_value() {
    let mut h = Harness::new().await;
    let case = "PUT_KV_CONFIG with a 10 MiB value (refused: a KV value is at most 64 KiB)";
    let mut value = String::with_capacity(10 << 20);
    let mut i = 0u64;
    while value.len() < 10 << 20 {
        write!(value, "kv-{i:012}|").unwrap();
        i += 1;
    }
    // A header this large is decoded, and the file written, at background priority: on a busy
    // machine that takes longer than the usual timeout.
    let mut conn = Client::connect(&h.addr.to_string(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("{case}: connect: {e}"));
    let put = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "big")
        .with_ext("value", value.clone());
    let resp = conn.request(put).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    assert!(
        resp.remark
            .as_deref()
            .is_some_and(|r| r.contains("[LIMIT]") && r.contains("exceeds 65536")),
        "{case}: {}",
        summary(&resp)
    );
    let get = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "adversarial")
        .with_ext("key", "big");
    let resp = conn.request(get).await.expect("answered");
    assert_eq!(resp.code, 22, "{case}: nothing stored: {}", summary(&resp));
    drop(conn);
    h.check(case).await;

    // The log: the capture works (the KV store logs its start), and the value is not in it whole.
    assert!(
        !logs::lines_with("KV store started").is_empty(),
        "{case}: the log capture sees the server"
    );
    assert_not_logged_whole(case, &value);
    h.stop().await;
}

#[actix::test]
async fn topic_names_at_and_over_the_usual_maximum() {
    let mut h = Harness::new().await;
    // Java's TopicValidator allows 127 characters (retry topics of a 255-character group 262);
    // the registry keeps names of up to 1 KiB (docs/limits.md#what-requests-can-store).
    let t127 = "L".repeat(127);
    let t128 = "M".repeat(128);
    let t1k = "K".repeat(1024);
    let t64k = "N".repeat(64 * 1024);

    let case = "a broker registering topics of 127, 128 and 1,024 characters";
    let long = FakeBroker::master("broker-long", 10961, &[t127.as_str(), &t128, &t1k]);
    let mut conn = h.client(case).await;
    let resp = conn.request(long.register()).await.expect("answered");
    assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
    for topic in [&t127, &t128, &t1k] {
        let resp = h.before.request(route_request(topic)).await.unwrap();
        assert_eq!(resp.code, 0, "{case}: {} characters", topic.len());
        assert!(body_text(&resp).contains("127.0.0.1:10961"), "{case}");
    }
    let case = "a broker registering a topic of 65,536 characters: refused whole";
    let longer = FakeBroker::master("broker-longer", 10962, &[t127.as_str(), &t64k]);
    let resp = conn.request(longer.register()).await.expect("answered");
    assert_eq!(resp.code, 1, "{case}: {}", summary(&resp));
    assert!(
        resp.remark
            .as_deref()
            .is_some_and(|r| r.contains("a topic name of 65536 bytes exceeds 1024")),
        "{case}: {}",
        summary(&resp)
    );
    let resp = h.before.request(route_request(&t64k)).await.unwrap();
    assert_eq!(resp.code, 17, "{case}: not registered");
    drop(conn);
    h.check(case).await;

    let case = "route queries for unknown topics of 128 characters and 1 MiB";
    let t1m = "O".repeat(1 << 20);
    for topic in [&t128.replace('M', "P"), &t1m] {
        let resp = h.request_on_new(case, route_request(topic)).await;
        assert_eq!(resp.code, 17, "{case}: {} characters", topic.len());
    }
    let header = binary_header(105, 81, 0, b"", &[(b"topic", t1m.as_bytes())]);
    let resp = h.answers(case, &frame_bytes(1, &header, &[])).await;
    assert_eq!((resp.opaque, resp.code), (81, 17), "{case}: ROCKETMQ");
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn register_broker_checksums_and_compression_flags() {
    let mut h = Harness::new().await;
    // Every wrong answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    let broker = FakeBroker::master("broker-crc", 10971, &["CrcA", "CrcB"]);
    let json = broker.body_json();
    let zipped = broker.body().encode_compressed(false);
    let with_ext = |body: Vec<u8>, compressed: bool, key: &str, value: String| {
        let mut ext = broker.header(&body, compressed).to_ext();
        ext.insert(key, value);
        RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_version(409)
            .with_ext_fields(ext)
            .with_body(body)
    };

    let case = "bodyCrc32 = -1";
    let cmd = with_ext(json.clone(), false, "bodyCrc32", "-1".into());
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body with bodyCrc32 one off";
    let crc = body_crc32(&zipped);
    let cmd = with_ext(zipped.clone(), true, "bodyCrc32", (crc ^ 1).to_string());
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body with the CRC of its inflated bytes";
    let inflated = {
        let mut out = Vec::new();
        std::io::Read::read_to_end(
            &mut flate2::read::ZlibDecoder::new(zipped.as_slice()),
            &mut out,
        )
        .unwrap();
        out
    };
    let cmd = with_ext(
        zipped.clone(),
        true,
        "bodyCrc32",
        body_crc32(&inflated).to_string(),
    );
    if let Err(failure) = h
        .register_outcome(case, cmd, &broker.addr, "crc32 not match")
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on a JSON body";
    let cmd = register_with_body(&broker, json.clone(), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on a truncated zlib stream";
    let cmd = register_with_body(&broker, zipped[..zipped.len() / 2].to_vec(), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "compressed=true on an empty-looking zlib stream (header only)";
    let cmd = register_with_body(&broker, vec![0x78, 0xDA], true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    let case = "a compressed body whose DataVersion part is not JSON";
    let raw = compressed_layout(
        b"not json",
        &[b"CrcA 4 4 6 SINGLE_TAG", b"CrcB 4 4 6 SINGLE_TAG"],
    );
    let cmd = register_with_body(&broker, zlib(&raw), true, 409);
    if let Err(failure) = h
        .register_outcome(
            case,
            cmd,
            &broker.addr,
            "Failed to decode RegisterBrokerBody",
        )
        .await
    {
        failures.push(failure);
    }

    // An unparsable optional number reads as absent: bodyCrc32 absent means unchecked.
    for (case, value) in [
        (
            "bodyCrc32 that is not a number (unchecked)",
            "abc".to_owned(),
        ),
        (
            "bodyCrc32 beyond 32 bits (unchecked)",
            (i64::from(body_crc32(&json)) + (1 << 31)).to_string(),
        ),
    ] {
        let mut conn = h.client(case).await;
        let cmd = with_ext(json.clone(), false, "bodyCrc32", value);
        let resp = conn.request(cmd).await.expect("answered");
        assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
        let route = h.before.request(route_request("CrcA")).await.unwrap();
        assert_eq!(route.code, 0, "{case}: registered");
        assert_eq!(
            conn.request(broker.unregister()).await.unwrap().code,
            0,
            "{case}: unregistered"
        );
        drop(conn);
        h.check(case).await;
    }
    // A zlib body whose flag says plain (a 5.x broker with compressedRegister=true always sends
    // compressed=false): read by its bytes, registered (Java refuses it; docs/protocol.md).
    for (case, cmd) in [
        (
            "a zlib body flagged compressed=false",
            register_with_body(&broker, zipped.clone(), false, 409),
        ),
        (
            "a zlib body flagged compressed=\"TRUE \" (false, as Boolean.parseBoolean)",
            with_ext(zipped.clone(), false, "compressed", "TRUE ".into()),
        ),
    ] {
        let mut conn = h.client(case).await;
        let resp = conn.request(cmd).await.expect("answered");
        assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
        let route = h.before.request(route_request("CrcA")).await.unwrap();
        assert_eq!(route.code, 0, "{case}: registered");
        assert_eq!(
            conn.request(broker.unregister()).await.unwrap().code,
            0,
            "{case}: unregistered"
        );
        drop(conn);
        h.check(case).await;
    }
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[actix::test]
async fn bodies_that_are_json_of_the_wrong_types() {
    let mut h = Harness::new().await;
    let broker = FakeBroker::master("broker-types", 10981, &["TypeA", "TypeB"]);
    // Every wrong answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    for body in [
        "[]",
        "42",
        r#""text""#,
        "true",
        r#"{"topicConfigSerializeWrapper":[]}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":[1,2]}}"#,
        r#"{"topicConfigSerializeWrapper":{"dataVersion":"x"}}"#,
        r#"{"topicConfigSerializeWrapper":{"dataVersion":{"counter":"one"}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":{"readQueueNums":"many"}}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":{"perm":4294967296}}}}"#,
        r#"{"topicConfigSerializeWrapper":{"topicConfigTable":{"TypeA":[]}}}"#,
        r#"{"filterServerList":{"a":1}}"#,
        r#"{"filterServerList":[1,2]}"#,
    ] {
        let case = format!("REGISTER_BROKER body {body}");
        let cmd = register_with_body(&broker, body.as_bytes().to_vec(), false, 479);
        if let Err(failure) = h
            .register_outcome(&case, cmd, &broker.addr, "bad JSON body")
            .await
        {
            failures.push(failure);
        }
    }

    for body in [
        "[]",
        r#"{"queueDatas":{}}"#,
        r#"{"queueDatas":[{"perm":"rw"}]}"#,
        r#"{"queueDatas":[{"brokerName":7}]}"#,
    ] {
        let case = format!("REGISTER_TOPIC_IN_NAMESRV body {body}");
        let cmd = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
            .with_ext("topic", "TypeTopic")
            .with_body(body.as_bytes().to_vec());
        let resp = h.request_on_new(&case, cmd).await;
        let remark = resp.remark.as_deref().unwrap_or("");
        if resp.code != 1 || !remark.starts_with("bad TopicRouteData body") {
            failures.push(format!("{case}: answered {}", summary(&resp)));
        }
        h.check(&case).await;
    }

    for body in [
        "[1]",
        r#"{"counter":"one"}"#,
        r#"{"timestamp":1.5}"#,
        r#"{"stateVersion":{}}"#,
    ] {
        let case = format!("QUERY_DATA_VERSION body {body}");
        let cmd = h
            .broker
            .query_data_version(&h.broker.version)
            .with_body(body.as_bytes().to_vec());
        let resp = h.request_on_new(&case, cmd).await;
        let remark = resp.remark.as_deref().unwrap_or("");
        if resp.code != 1 || !remark.starts_with("bad DataVersion body") {
            failures.push(format!("{case}: answered {}", summary(&resp)));
        }
        h.check(&case).await;
    }
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} wrong answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
