//! Broken sockets: half-closed connections, resets mid-frame and mid-response, a peer that never
//! reads its answers.

use std::time::Duration;

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use tokio::io::AsyncWriteExt;

use crate::frames::*;
use crate::harness::*;
use crate::raw::*;
use crate::support::*;

#[actix::test]
async fn half_closed_sockets_still_get_their_answers() {
    let mut h = Harness::new().await;
    let requests: Vec<(&str, RemotingCommand, i32)> = vec![
        ("a cached route query", route_request(WITNESS_TOPIC), 0),
        (
            "a route miss (the registry answers)",
            route_request("NoSuchTopic"),
            17,
        ),
        (
            "a topic list (an actor answers)",
            RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
            0,
        ),
        (
            "a KV put (answered once saved)",
            RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                .with_ext("namespace", "adversarial")
                .with_ext("key", "half-closed")
                .with_ext("value", "v"),
            0,
        ),
        (
            "a broker registration",
            FakeBroker::master("broker-half", 10991, &["HalfA", "HalfB"]).register(),
            0,
        ),
    ];
    // Every lost answer is collected, so that one run shows them all.
    let mut failures = Vec::new();
    for (what, cmd, code) in requests {
        let case = format!("shutdown(Write) right after {what}");
        let mut raw = Raw::open(h.addr, &case).await;
        raw.must_send(&wire(&cmd.with_opaque(101))).await;
        raw.stream.shutdown().await.expect("shutdown");
        match raw.next(STEP).await {
            Next::Frame(resp) if (resp.opaque, resp.code) == (101, code) => {
                raw.expect_closed().await;
            }
            Next::Frame(resp) => failures.push(format!("{case}: answered {}", summary(&resp))),
            Next::Closed => failures.push(format!("{case}: closed without the answer")),
            Next::Silent => failures.push(format!("{case}: neither answered nor closed")),
        }
        drop(raw);
        h.check(&case).await;
    }

    let case = "shutdown(Write) after 20 pipelined requests";
    let mut raw = Raw::open(h.addr, case).await;
    let mut bytes = Vec::new();
    for opaque in 0..20 {
        let cmd = if opaque % 2 == 0 {
            route_request(WITNESS_TOPIC)
        } else {
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO)
        };
        bytes.extend(wire(&cmd.with_opaque(opaque)));
    }
    raw.must_send(&bytes).await;
    raw.stream.shutdown().await.expect("shutdown");
    let mut opaques = Vec::new();
    loop {
        match raw.next(STEP).await {
            Next::Frame(resp) => {
                assert_eq!(resp.code, 0, "{case}: {}", summary(&resp));
                opaques.push(resp.opaque);
            }
            Next::Closed => break,
            Next::Silent => panic!("{case}: neither answered nor closed"),
        }
    }
    opaques.sort_unstable();
    if opaques != (0..20).collect::<Vec<_>>() {
        failures.push(format!(
            "{case}: {} of 20 answers before the close: {opaques:?}",
            opaques.len()
        ));
    }
    drop(raw);
    h.check(case).await;
    h.stop().await;
    assert!(
        failures.is_empty(),
        "{} lost answers:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[actix::test]
async fn connections_reset_mid_frame_and_mid_response() {
    let mut h = Harness::new().await;
    let route = wire(&route_request(WITNESS_TOPIC).with_opaque(111));

    let case = "a reset right after connecting";
    let raw = Raw::open(h.addr, case).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of the length field";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&route[..2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of a frame";
    let mut raw = Raw::open(h.addr, case).await;
    raw.must_send(&route[..route.len() / 2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset in the middle of a 1 MiB body";
    let mut raw = Raw::open(h.addr, case).await;
    let big = wire(
        &route_request(WITNESS_TOPIC)
            .with_opaque(112)
            .with_body(vec![b'b'; 1 << 20]),
    );
    raw.must_send(&big[..big.len() / 2]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;

    let case = "a reset while the answers to 200 requests are being written";
    let mut raw = Raw::open(h.addr, case).await;
    let topic = "R".repeat(16 * 1024);
    let mut bytes = Vec::new();
    for opaque in 0..200 {
        bytes.extend(wire(&route_request(&topic).with_opaque(opaque)));
    }
    let _ = raw.send_within(&bytes, STEP).await;
    raw.stream.set_zero_linger().expect("SO_LINGER 0");
    drop(raw);
    h.check(case).await;
    h.stop().await;
}

#[actix::test]
async fn a_peer_that_never_reads_its_answers() {
    let mut h = Harness::new().await;
    let case = "400 requests with 64 KiB answers, none of them read";
    let topic = "S".repeat(64 * 1024);
    let mut bytes = Vec::new();
    for opaque in 0..400 {
        bytes.extend(wire(&route_request(&topic).with_opaque(opaque)));
    }
    let mut raw = Raw::open(h.addr, case).await;
    // The server stops reading once its queue for this peer is full: the write may stall.
    let _ = raw.send_within(&bytes, Duration::from_secs(2)).await;
    h.witnesses_ok(case).await;
    let mut second = Raw::open(h.addr, case).await;
    second
        .must_send(&wire(&route_request(WITNESS_TOPIC).with_opaque(1)))
        .await;
    assert_eq!(second.response().await.code, 0, "{case}: a new connection");
    drop(second);
    drop(raw);
    h.check(case).await;
    h.stop().await;
}
