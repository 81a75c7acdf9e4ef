//! The HTTP port's connection slots: one client holding connections open (answered once, then a
//! second request head trickled at 1 byte/s) cannot starve the health probes Kubernetes sends,
//! and a trickled request is cut off after the head timeout, not the connection's whole life.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::http::try_get;
use crate::support::*;

/// Opens a connection, asks `/health` (keep-alive) and reads the answer; `None` when the server
/// closed it first (refused at accept).
async fn hold(addr: SocketAddr) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(addr).await.ok()?;
    let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut seen = Vec::new();
    let mut chunk = [0u8; 1024];
    let read = async {
        loop {
            let n = stream.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            seen.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&seen);
            if text.contains("\r\n\r\n") && text.ends_with('\n') {
                return Some(());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(2), read)
        .await
        .ok()??;
    Some(stream)
}

#[actix::test]
async fn one_client_holding_connections_does_not_starve_the_probes() {
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = start_server(config);
    let http = server.http_addr().expect("an HTTP port");

    // 256 connections, each answered once.
    let held: Vec<TcpStream> = futures_util::future::join_all((0..256).map(|_| hold(http)))
        .await
        .into_iter()
        .flatten()
        .collect();
    assert!(!held.is_empty());
    // Each trickles a second request head, a byte a second, for as long as it is let.
    let trickled = held.len();
    let trickle = tokio::spawn(async move {
        let head = b"GET /metrics HTTP/1.1\r\nHost: x\r\n";
        let mut open = held;
        let started = Instant::now();
        for byte in head.iter().cycle() {
            let mut still = Vec::new();
            for mut stream in open {
                if stream.write_all(&[*byte]).await.is_ok() {
                    still.push(stream);
                }
            }
            open = still;
            if open.is_empty() || started.elapsed() > Duration::from_secs(12) {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        (open.len(), started.elapsed())
    });

    // A probe every 250 ms for 8 s, each on a fresh connection (as the kubelet sends them): all
    // answered.
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut probes = 0;
    while Instant::now() < deadline {
        let answer = tokio::time::timeout(Duration::from_secs(1), try_get(http, "/health", ""))
            .await
            .ok()
            .flatten();
        assert_eq!(
            answer.as_ref().map(|a| a.status),
            Some(200),
            "probe {probes} with {trickled} connections held"
        );
        probes += 1;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // The trickled heads were cut off by the head timeout (5 s), not the 60 s connection age.
    let (still_open, took) = trickle.await.unwrap();
    assert_eq!(still_open, 0, "after {took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    server.stop().await;
}
