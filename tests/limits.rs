//! The limits of docs/limits.md over TCP against the running server: overload shedding with
//! SYSTEM_BUSY "[OVERLOAD]" (reads keep priority, one flooding connection does not starve the
//! others), connections per source, the frame timeout (slowloris), the write timeout (a peer
//! that does not read), the inflation budget; each refusal counted by `limit_counts`.

mod support;

use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmq_namesrv::protocol::codec::encode_frame;
use rmq_namesrv::protocol::{RemotingCodec, RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::NameServerHandle;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;

const SYSTEM_BUSY: i32 = 2;

async fn count(server: &NameServerHandle, limit: &str) -> u64 {
    server
        .limit_counts()
        .await
        .into_iter()
        .find(|(name, _)| *name == limit)
        .map_or(0, |(_, n)| n)
}

fn frames(cmds: &[RemotingCommand]) -> Vec<u8> {
    let mut out = BytesMut::new();
    for cmd in cmds {
        encode_frame(cmd, &mut out).expect("encodes");
    }
    out.to_vec()
}

/// Reads `n` response frames from `stream` (bounded by TIMEOUT each).
async fn read_responses(stream: &mut TcpStream, n: usize) -> Vec<RemotingCommand> {
    read_responses_within(stream, n, TIMEOUT).await
}

/// Reads `n` response frames from `stream`, waiting at most `timeout` for each read.
async fn read_responses_within(
    stream: &mut TcpStream,
    n: usize,
    timeout: Duration,
) -> Vec<RemotingCommand> {
    let mut codec = RemotingCodec::new(16 << 20);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    while out.len() < n {
        if let Some(cmd) = codec.decode(&mut buf).expect("a valid frame") {
            out.push(cmd);
            continue;
        }
        let read = tokio::time::timeout(timeout, stream.read_buf(&mut buf))
            .await
            .expect("answered in time")
            .expect("readable");
        assert!(read > 0, "closed after {} of {n} answers", out.len());
    }
    out
}

fn with_opaque(mut cmd: RemotingCommand, opaque: i32) -> RemotingCommand {
    cmd.opaque = opaque;
    cmd
}

#[actix::test]
async fn a_flood_of_writes_is_shed_with_overload_while_reads_and_other_clients_are_served() {
    let mut config = test_config();
    config.server.max_pending_writes = 16;
    config.server.max_pending_reads = 64;
    let server = start_server(config);
    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    let resp = broker_conn.request(broker.register()).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);

    // One connection pipelines 400 writes (heartbeats of the registered broker) in one go.
    let mut flood = TcpStream::connect(server.local_addr()).await.unwrap();
    let writes: Vec<RemotingCommand> = (0..400)
        .map(|i| with_opaque(broker.heartbeat(), i))
        .collect();
    flood.write_all(&frames(&writes)).await.unwrap();
    // Meanwhile another client's reads and a second broker's writes are served.
    let mut client = connect(&server).await;
    for _ in 0..20 {
        assert_eq!(client.request(route_request("T")).await.unwrap().code, 0);
    }
    let mut other_broker = connect(&server).await;
    assert_eq!(
        other_broker.request(broker.heartbeat()).await.unwrap().code,
        0
    );

    let answers = read_responses(&mut flood, 400).await;
    let shed: Vec<&RemotingCommand> = answers.iter().filter(|r| r.code == SYSTEM_BUSY).collect();
    let served = answers.iter().filter(|r| r.code == 0).count();
    assert!(!shed.is_empty(), "some of the flood is shed");
    assert!(served > 0, "the flood is not refused whole");
    assert_eq!(shed.len() + served, 400);
    for busy in &shed {
        let remark = busy.remark.as_deref().unwrap_or_default();
        assert!(remark.starts_with("[OVERLOAD]"), "{remark}");
    }
    assert_eq!(
        count(&server, "max_pending_writes").await,
        shed.len() as u64
    );
    assert_eq!(count(&server, "max_pending_reads").await, 0);
    server.stop().await;
}

#[actix::test]
async fn reads_have_a_higher_bound_than_writes() {
    let mut config = test_config();
    config.server.max_pending_writes = 8;
    config.server.max_pending_reads = 4096;
    let server = start_server(config);
    let mut broker_conn = connect(&server).await;
    let broker = FakeBroker::master("broker-a", 10911, &["T", "U"]);
    let resp = broker_conn.request(broker.register()).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    // 200 pipelined cluster-info reads (each waits for the registry) from one connection: a
    // quarter of the read bound is 1024, so none is shed.
    let mut reader = TcpStream::connect(server.local_addr()).await.unwrap();
    let reads: Vec<RemotingCommand> = (0..200)
        .map(|i| {
            with_opaque(
                RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO),
                i,
            )
        })
        .collect();
    reader.write_all(&frames(&reads)).await.unwrap();
    let answers = read_responses(&mut reader, 200).await;
    assert!(answers.iter().all(|r| r.code == 0));
    server.stop().await;
}

#[actix::test]
async fn connections_per_source_are_capped_when_configured() {
    let mut config = test_config();
    config.server.max_connections_per_source = 2;
    let server = start_server(config);
    let mut first = connect(&server).await;
    let mut second = connect(&server).await;
    // The third from 127.0.0.1 is closed at once.
    let mut third = TcpStream::connect(server.local_addr()).await.unwrap();
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(TIMEOUT, third.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert_eq!(first.request(route_request("T")).await.unwrap().code, 17);
    assert_eq!(second.request(route_request("T")).await.unwrap().code, 17);
    assert!(count(&server, "max_connections_per_source").await >= 1);
    // One closes: another is admitted.
    drop(first);
    assert!(
        eventually(TIMEOUT, || async {
            match rmq_namesrv::tools::client::Client::connect(
                &server.local_addr().to_string(),
                TIMEOUT,
            )
            .await
            {
                Ok(mut c) => c.request(route_request("T")).await.is_ok(),
                Err(_) => false,
            }
        })
        .await
    );
    server.stop().await;
}

#[actix::test]
async fn a_frame_that_never_completes_is_closed_after_the_frame_timeout() {
    let mut config = test_config();
    config.server.frame_timeout = Duration::from_millis(400);
    let server = start_server(config);
    let mut slow = TcpStream::connect(server.local_addr()).await.unwrap();
    // The start of a 1000-byte frame, then nothing.
    slow.write_all(&1000i32.to_be_bytes()).await.unwrap();
    slow.write_all(b"\x00\x00\x00\x10{\"code\"").await.unwrap();
    let started = Instant::now();
    let mut other = connect(&server).await;
    // Another connection keeps working meanwhile.
    assert_eq!(other.request(route_request("T")).await.unwrap().code, 17);
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(TIMEOUT, slow.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(count(&server, "frame_timeout").await, 1);
    assert_eq!(other.request(route_request("T")).await.unwrap().code, 17);
    server.stop().await;
}

#[actix::test]
async fn a_peer_that_does_not_read_is_closed_after_the_write_timeout() {
    let mut config = test_config();
    config.server.write_timeout = Duration::from_millis(500);
    let server = start_server(config);
    // A broker with many topics makes the topic list large (about 300 KB).
    let topics: Vec<String> = (0..10_000).map(|i| format!("TopicNumber{i:06}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let broker = FakeBroker::master("broker-a", 10911, &names);
    let mut broker_conn = connect(&server).await;
    assert_eq!(
        broker_conn.request(broker.register()).await.unwrap().code,
        0
    );

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut deaf = socket.connect(server.local_addr()).await.unwrap();
    let lists: Vec<RemotingCommand> = (0..200)
        .map(|i| {
            with_opaque(
                RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
                i,
            )
        })
        .collect();
    // About 60 MB of answers, never read.
    let _ = tokio::time::timeout(Duration::from_secs(2), deaf.write_all(&frames(&lists))).await;
    // Closed after the write timeout, or sooner for holding 16 MiB it does not take.
    assert!(
        eventually(Duration::from_secs(20), || async {
            count(&server, "write_timeout").await + count(&server, "max_queued_bytes").await == 1
        })
        .await,
        "closed for not reading"
    );
    let mut other = connect(&server).await;
    assert_eq!(
        other
            .request(route_request("TopicNumber000001"))
            .await
            .unwrap()
            .code,
        0
    );
    server.stop().await;
}

#[actix::test]
async fn compressed_bodies_beyond_the_inflation_budget_are_refused_with_overload() {
    let mut config = test_config();
    // Small enough for a debug build to inflate quickly, large enough to take a while.
    config.server.max_frame_bytes = 1 << 20;
    config.server.max_inflated_body_bytes = 4 << 20;
    config.server.max_decoding_bytes = 4 << 20;
    let server = start_server(config);
    // A well-formed start whose one topic chunk is 4 MiB - 64 of zeros: it reserves the whole
    // budget and takes a while to inflate (then fails: zeros are no topic config).
    let mut raw = Vec::new();
    raw.extend_from_slice(&2i32.to_be_bytes());
    raw.extend_from_slice(b"{}");
    raw.extend_from_slice(&1i32.to_be_bytes());
    let chunk = (4 << 20) - 64;
    raw.extend_from_slice(&(chunk as i32).to_be_bytes());
    raw.resize(raw.len() + chunk, 0);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut z, &raw).unwrap();
    let body = z.finish().unwrap();
    let broker = FakeBroker::master("broker-z", 10911, &["Z", "Y"]);
    let register = || {
        let mut cmd = broker
            .register()
            .with_ext("compressed", "true")
            .with_ext("bodyCrc32", "0");
        cmd.body = Some(body.clone().into());
        cmd
    };
    // Several at once from several connections: while one inflates, the others find the budget
    // in use. Bounded: up to 5 rounds.
    let mut refused = 0;
    for _ in 0..5 {
        let mut conns = Vec::new();
        for i in 0..4 {
            let mut c = TcpStream::connect(server.local_addr()).await.unwrap();
            c.write_all(&frames(&[with_opaque(register(), i)]))
                .await
                .unwrap();
            conns.push(c);
        }
        for c in &mut conns {
            // Inflating runs at background priority: on a loaded machine it may take a while.
            let answer = read_responses_within(c, 1, Duration::from_secs(60))
                .await
                .remove(0);
            assert_ne!(answer.code, 0);
            if answer.code == SYSTEM_BUSY {
                let remark = answer.remark.as_deref().unwrap_or_default();
                assert!(remark.starts_with("[OVERLOAD]"), "{remark}");
                refused += 1;
            }
        }
        if refused > 0 {
            break;
        }
    }
    assert!(refused > 0, "some were refused for lack of budget");
    assert_eq!(count(&server, "max_decoding_bytes").await, refused);
    // The budget is given back: a plain registration works, and so does a small compressed one.
    let mut c = connect(&server).await;
    assert_eq!(c.request(broker.register()).await.unwrap().code, 0);
    server.stop().await;
}

#[actix::test]
async fn bodies_read_on_the_connection_thread_are_at_most_1_mib() {
    let server = start_server(test_config());
    let mut conn = connect(&server).await;
    let big = vec![b' '; (1 << 20) + 1];
    let route = RemotingCommand::request(RequestCode::REGISTER_TOPIC_IN_NAMESRV)
        .with_ext("topic", "T")
        .with_body(big.clone());
    let config = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(big);
    for cmd in [route, config] {
        let resp = conn.request(cmd).await.unwrap();
        assert_eq!(resp.code, 1);
        let remark = resp.remark.unwrap_or_default();
        assert!(remark.contains("exceeds 1048576"), "{remark}");
    }
    assert_eq!(conn.request(route_request("T")).await.unwrap().code, 17);
    server.stop().await;
}
