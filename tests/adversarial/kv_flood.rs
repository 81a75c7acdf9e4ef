//! A flood of KV writes: linear in its size (one save per write round, not one copy of the
//! table per change), off the thread that accepts connections, and bounded (namespaces,
//! entries, bytes) with a clear answer past a bound.

use std::time::{Duration, Instant};

use rmq_namesrv::protocol::RemotingCommand;

use crate::support::*;

use super::{ask_raw, RawConn};

/// Sends `requests` on one connection, `window` at a time, as a client that keeps that many
/// requests in flight; answers every answer.
async fn windowed(
    addr: std::net::SocketAddr,
    requests: Vec<RemotingCommand>,
    window: usize,
) -> Vec<RemotingCommand> {
    let mut conn = RawConn::open(addr, None).await;
    let mut answers = Vec::with_capacity(requests.len());
    for batch in requests.chunks(window) {
        answers.extend(conn.ask(batch).await);
    }
    answers
}

#[actix::test]
async fn a_flood_of_kv_writes_is_linear_bounded_and_does_not_stall_accepts() {
    let config = test_config();
    let kv_file = config.kv.path.clone();
    let server = start_server(config);
    let addr = server.local_addr();
    // Namespaces are bounded: past the bound a new one is refused, with a clear remark.
    let puts: Vec<RemotingCommand> = (0..10_001)
        .map(|i| put_kv(&format!("ns-{i}"), "k", "v"))
        .collect();
    let answers = windowed(addr, puts, 128).await;
    let refused: Vec<&RemotingCommand> = answers.iter().filter(|a| a.code != 0).collect();
    assert_eq!(refused.len(), 1);
    let remark = refused[0].remark.as_deref().unwrap_or("");
    assert!(
        remark.contains("[LIMIT]") && remark.contains("namespaces"),
        "{remark}"
    );
    // 100,000 distinct keys (in a namespace it holds), pipelined on 8 connections, while fresh
    // connections ask routes.
    let started = Instant::now();
    let writers = (0..8).map(|c| {
        let puts: Vec<RemotingCommand> = (0..12_500)
            .map(|i| put_kv("ns-0", &format!("key-{c}-{i}"), "value"))
            .collect();
        // 8 x 64 in flight stays under half the write bound, where fair admission starts.
        async move { windowed(addr, puts, 64).await }
    });
    let flood = futures_util::future::join_all(writers);
    let probes = async {
        let mut slowest = Duration::ZERO;
        for _ in 0..20 {
            let asked = Instant::now();
            let answers = ask_raw(addr, None, &[route_request("T")]).await;
            assert_eq!(
                answers.first().map(|a| a.code),
                Some(17),
                "a fresh connection answered"
            );
            slowest = slowest.max(asked.elapsed());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        slowest
    };
    let (answers, slowest_probe) = tokio::join!(flood, probes);
    let took = started.elapsed();
    let failed: Vec<String> = answers
        .iter()
        .flatten()
        .filter(|r| r.code != 0)
        .map(|r| format!("{}: {:?}", r.code, r.remark))
        .collect();
    let answered: usize = answers.iter().map(Vec::len).sum();
    assert_eq!(answered, 100_000, "every write answered");
    assert!(
        failed.is_empty(),
        "{} not SUCCESS: {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
    println!("100,000 KV writes in {took:?}; slowest fresh route query {slowest_probe:?}");
    assert!(took < Duration::from_secs(120), "{took:?}");
    let mut conn = connect(&server).await;
    let answer = conn.request(get_kv("ns-0", "key-7-12499")).await.unwrap();
    assert_eq!(answer.code, 0);

    // A value or key past its bound likewise; the store still works.
    let answer = conn
        .request(put_kv("ns-0", "big", &"v".repeat(64 * 1024 + 1)))
        .await
        .unwrap();
    assert!(answer
        .remark
        .as_deref()
        .is_some_and(|r| r.contains("value of 65537 bytes")));
    assert_eq!(
        conn.request(put_kv("ns-0", "k", "v")).await.unwrap().code,
        0
    );
    server.stop().await;
    let saved = std::fs::read_to_string(&kv_file).unwrap();
    assert!(saved.contains("key-7-12499"));
}
