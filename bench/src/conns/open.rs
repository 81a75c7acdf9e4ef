//! Opening the connections: at most `--concurrency` connects in flight, each sending its first
//! request unless `--silent`, every failure counted by its step and error.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rmq_protocol::ResponseCode;
use tokio::io::ReadBuf;
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::args::ConnsArgs;
use super::figures::count;
use crate::stats::Latencies;
use crate::wire::{self, RequestTemplate};

/// What opening the connections gave.
pub(super) struct Opened {
    pub(super) streams: Vec<TcpStream>,
    pub(super) attempted: usize,
    pub(super) failures: BTreeMap<String, u64>,
    pub(super) connect: Latencies,
    /// Write to reply of the first request of each connection.
    pub(super) first_request: Latencies,
    pub(super) took: Duration,
}

/// A connection as opening it went: connected after `connect`, its first request answered
/// after `first` (none with `--silent`).
struct Fresh {
    stream: TcpStream,
    connect: Duration,
    first: Option<Duration>,
}

/// Connects, then (with a template) sends one request and waits for its successful reply. The
/// error says which step failed.
async fn open_one(
    addr: SocketAddr,
    connect_timeout: Duration,
    first: Option<(RequestTemplate, Duration)>,
) -> Result<Fresh, String> {
    let t0 = Instant::now();
    let mut stream = wire::connect(addr, connect_timeout)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let connect = t0.elapsed();
    let Some((template, timeout)) = first else {
        return Ok(Fresh {
            stream,
            connect,
            first: None,
        });
    };
    let mut frame = BytesMut::with_capacity(template.frame_len(1));
    template.encode(1, &mut frame);
    let mut buf = BytesMut::with_capacity(1024);
    let sent = Instant::now();
    let reply = wire::call(&mut stream, &frame, 1, &mut buf, timeout)
        .await
        .map_err(|e| format!("first request: {e}"))?;
    if reply.code != ResponseCode::SUCCESS.0 || reply.body_len == 0 {
        return Err(format!(
            "first request: code {} with {} body bytes",
            reply.code, reply.body_len
        ));
    }
    Ok(Fresh {
        stream,
        connect,
        first: Some(sent.elapsed()),
    })
}

/// Opens up to `args.connections` connections, at most `args.concurrency` in flight, each
/// sending its first request (topic `i % topics`) unless `--silent`. Bounded: at most
/// `connections` are started, none after `open_timeout`, each connect bounded by
/// `connect_timeout` and each first request by `request_timeout`.
pub(super) async fn open_all(
    addr: SocketAddr,
    args: &ConnsArgs,
    templates: &[RequestTemplate],
    request_timeout: Duration,
) -> Opened {
    let started = Instant::now();
    let deadline = started + args.open_timeout;
    let (target, concurrency) = (args.connections, args.concurrency.max(1));
    let mut connecting = JoinSet::new();
    let mut opened = Opened {
        streams: Vec::with_capacity(target),
        attempted: 0,
        failures: BTreeMap::new(),
        connect: Latencies::new(),
        first_request: Latencies::new(),
        took: Duration::ZERO,
    };
    let step = (target / 10).max(1);
    loop {
        while opened.attempted < target
            && connecting.len() < concurrency
            && Instant::now() < deadline
        {
            let first = match (args.silent, templates.len()) {
                (true, _) | (_, 0) => None,
                (false, n) => templates
                    .get(opened.attempted % n)
                    .map(|t| (t.clone(), request_timeout)),
            };
            connecting.spawn(open_one(addr, args.connect_timeout, first));
            opened.attempted += 1;
        }
        let Some(joined) = connecting.join_next().await else {
            break;
        };
        match joined {
            Ok(Ok(fresh)) => {
                opened.connect.record(fresh.connect);
                if let Some(first) = fresh.first {
                    opened.first_request.record(first);
                }
                opened.streams.push(fresh.stream);
                if opened.streams.len() % step == 0 {
                    println!(
                        "  {} connections open after {:.2} s",
                        opened.streams.len(),
                        started.elapsed().as_secs_f64()
                    );
                }
            }
            Ok(Err(e)) => count(&mut opened.failures, e),
            Err(e) => count(&mut opened.failures, format!("connect task: {e}")),
        }
    }
    opened.took = started.elapsed();
    opened
}

/// Whether the server still holds `stream` open: a pending peek means nothing arrived and no
/// end of stream either (a NameServer sends nothing unasked). Never waits.
pub(super) async fn still_open(stream: &TcpStream) -> bool {
    std::future::poll_fn(|cx| {
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        Poll::Ready(match stream.poll_peek(cx, &mut buf) {
            Poll::Ready(Ok(n)) => n > 0,
            Poll::Ready(Err(_)) => false,
            Poll::Pending => true,
        })
    })
    .await
}
