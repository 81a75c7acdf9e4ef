//! Bad input over TCP: every malformed frame closes only its own connection, with no reply, and
//! the server and every other connection keep going.

mod support;

use std::time::Duration;

use rmq_namesrv::protocol::body::to_json;
use rmq_namesrv::protocol::custom_headers::CommandHeader;
use rmq_namesrv::protocol::fastjson::JsonStyle;
use rmq_namesrv::tools::broker::FakeBroker;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Writes `bytes` and reads until EOF; returns what the server sent before closing, or `None` if
/// it kept the connection open past the timeout.
async fn send_raw_expect_close(addr: std::net::SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    // The server may close mid-write for an oversize frame: ignore write errors.
    let _ = stream.write_all(bytes).await;
    let mut received = Vec::new();
    match tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut received)).await {
        Ok(_) => Some(received),
        Err(_) => None,
    }
}

fn frame(length: i32, word: u32, rest: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&word.to_be_bytes());
    out.extend_from_slice(rest);
    out
}

#[actix::test]
async fn malformed_frames_close_only_their_connection() {
    // A plaintext-only port: a TLS ClientHello is one more malformed frame here.
    let mut config = test_config();
    config.tls.mode = rmq_namesrv::config::TlsMode::Disabled;
    let server = start_server(config);
    let addr = server.local_addr();

    // A healthy broker and client stay connected throughout.
    let mut healthy = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);
    assert_eq!(healthy.request(broker.register()).await.unwrap().code, 0);

    let mut oversize = vec![0x01, 0x00, 0x00, 0x01];
    oversize.extend_from_slice(&[0u8; 64]);
    let mut tls_hello = vec![
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    tls_hello.extend_from_slice(&[0u8; 32]);
    let mut binary_bad_remark = [0u8; 21];
    binary_bad_remark[13..17].copy_from_slice(&100i32.to_be_bytes());
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("length above 16 MiB", oversize),
        ("negative length", vec![0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]),
        (
            "length shorter than the header word",
            vec![0, 0, 0, 2, 0, 0],
        ),
        ("serialize type 2", frame(8, 0x0200_0004, b"{}\0\0")),
        (
            "header longer than the frame",
            frame(8, 0x0000_0010, b"{}\0\0"),
        ),
        ("header not JSON", frame(6, 0x0000_0002, b"{{")),
        ("header JSON array", frame(6, 0x0000_0002, b"[]")),
        (
            "binary header with a remark longer than the header",
            frame(25, 0x0100_0015, &binary_bad_remark),
        ),
        ("TLS ClientHello on a plaintext port", tls_hello),
    ];
    for (name, bytes) in cases {
        let received = send_raw_expect_close(addr, &bytes).await;
        assert_eq!(
            received,
            Some(Vec::new()),
            "{name}: closed without any reply"
        );
        // Everyone else is fine.
        let resp = healthy.request(route_request("TopicTest")).await.unwrap();
        assert_eq!(resp.code, 0, "{name}: healthy connection still served");
    }

    // A frame split into single bytes is still one valid request.
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut wire = bytes::BytesMut::new();
    rmq_namesrv::protocol::codec::encode_frame(
        &route_request("TopicTest").with_opaque(77),
        &mut wire,
    )
    .unwrap();
    for byte in wire.iter() {
        stream.write_all(&[*byte]).await.unwrap();
        stream.flush().await.unwrap();
    }
    let mut len = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut len))
        .await
        .unwrap()
        .unwrap();
    assert!(u32::from_be_bytes(len) > 100);
    server.stop().await;
}

#[actix::test]
async fn golden_oneway_heartbeat_gets_no_reply() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);
    // Register with the exact identity golden vector V8 refers to (docs/protocol.md#golden-vectors).
    let mut reg = broker.clone();
    reg.cluster = "DefaultCluster".into();
    assert_eq!(conn.request(reg.register()).await.unwrap().code, 0);

    // V8: oneway BROKER_HEARTBEAT in ROCKETMQ form, then a JSON route request on the same socket.
    let v8: Vec<u8> = [
        "00 00 00 6f 01 00 00 6b 03 88 00 01 df 00 00 00 2a 00 00 00 02 00 00 00 00 00 00 00 56 00 0b 63",
        "6c 75 73 74 65 72 4e 61 6d 65 00 00 00 0e 44 65 66 61 75 6c 74 43 6c 75 73 74 65 72 00 0a 62 72",
        "6f 6b 65 72 41 64 64 72 00 00 00 0f 31 32 37 2e 30 2e 30 2e 31 3a 31 30 39 31 31 00 0a 62 72 6f",
        "6b 65 72 4e 61 6d 65 00 00 00 08 62 72 6f 6b 65 72 2d 61",
    ]
    .iter()
    .flat_map(|line| line.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()))
    .collect();
    assert_eq!(v8.len(), 115);
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    stream.write_all(&v8).await.unwrap();
    let mut wire = bytes::BytesMut::new();
    rmq_namesrv::protocol::codec::encode_frame(
        &route_request("TopicTest").with_opaque(5),
        &mut wire,
    )
    .unwrap();
    stream.write_all(&wire).await.unwrap();
    // The first (and only) frame back answers opaque 5, not 42.
    let mut len = [0u8; 4];
    tokio::time::timeout(TIMEOUT, stream.read_exact(&mut len))
        .await
        .unwrap()
        .unwrap();
    let mut rest = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut rest).await.unwrap();
    let resp = rmq_namesrv::protocol::codec::decode_frame(bytes::Bytes::from(rest)).unwrap();
    assert_eq!((resp.opaque, resp.code), (5, 0));
    server.stop().await;
}

#[actix::test]
async fn bad_bodies_and_headers_get_error_responses() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["TopicTest", "T2"]);

    // Garbage body with a correct CRC: SYSTEM_ERROR, connection stays.
    let garbage = b"{\"topicConfigSerializeWrapper\": [not json".to_vec();
    let header = broker.header(&garbage, false);
    let cmd = rmq_namesrv::protocol::RemotingCommand::request(
        rmq_namesrv::protocol::RequestCode::REGISTER_BROKER,
    )
    .with_ext_fields(header.to_ext())
    .with_body(garbage);
    let resp = conn.request(cmd).await.unwrap();
    assert_eq!(resp.code, 1);
    assert!(resp.remark.unwrap().starts_with("bad JSON body"));

    // A "compressed" body that is not zlib.
    let junk = b"definitely not zlib".to_vec();
    let header = broker.header(&junk, true);
    let cmd = rmq_namesrv::protocol::RemotingCommand::request(
        rmq_namesrv::protocol::RequestCode::REGISTER_BROKER,
    )
    .with_ext_fields(header.to_ext())
    .with_body(junk);
    let resp = conn.request(cmd).await.unwrap();
    assert_eq!(resp.code, 1);
    assert!(resp
        .remark
        .unwrap()
        .contains("Failed to decode RegisterBrokerBody"));

    // A zlib bomb above the inflate limit.
    let mut config_small = test_config();
    config_small.server.max_frame_bytes = 1024 * 1024;
    config_small.server.max_inflated_body_bytes = 1024 * 1024;
    let small = start_server(config_small);
    let mut small_conn = connect(&small).await;
    let mut big = broker.body();
    for i in 0..50_000 {
        let name = format!("topic-{i:08}-{}", "x".repeat(40));
        big.topic_config_wrapper.topic_config_table.insert(
            name.clone(),
            rmq_namesrv::protocol::body::TopicConfig::new(name, 4, 6),
        );
    }
    let zipped = big.encode_compressed(false);
    assert!(
        zipped.len() < 1024 * 1024,
        "{} bytes compressed",
        zipped.len()
    );
    let header = broker.header(&zipped, true);
    let cmd = rmq_namesrv::protocol::RemotingCommand::request(
        rmq_namesrv::protocol::RequestCode::REGISTER_BROKER,
    )
    .with_version(409)
    .with_ext_fields(header.to_ext())
    .with_body(zipped);
    let resp = small_conn.request(cmd).await.unwrap();
    assert_eq!(resp.code, 1, "{:?}", resp.remark);
    assert!(resp.remark.unwrap().contains("inflates to more than"));
    assert_eq!(
        small_conn
            .request(route_request("TopicTest"))
            .await
            .unwrap()
            .code,
        17
    );

    // Still alive and working.
    assert_eq!(conn.request(broker.register()).await.unwrap().code, 0);
    let _ = to_json(&broker.version, JsonStyle::Legacy);
    small.stop().await;
    server.stop().await;
}
