//! `reference-server`: the ceiling a NameServer's route path is measured against. A minimal
//! tokio TCP server that answers every request frame with one reply encoded at start-up: SUCCESS
//! with the JSON header our server writes for a route reply (version 513) and a real route body of
//! `--brokers` broker groups (the ones `routes` registers, encoded by `rmq-protocol` in the
//! standard JSON style), the request's opaque patched in. It reads a request's opaque and nothing
//! else, answers every request of one read with one write, and keeps no state: what it costs per
//! request is the floor of the transport (reads, frame scanning, writes) on this machine.
//!
//! It runs on a multi-thread runtime of `--workers` threads (default one per CPU, as our server's
//! connection threads), accepts on the main thread, prints one line when it listens and stops on
//! SIGTERM or SIGINT, ending with a JSON line like every workload.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use clap::Args;
use rmq_protocol::body::{perm, to_json, BrokerData, QueueData, TopicRouteData};
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::RemotingCommand;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use crate::broker::{self, CLUSTER};
use crate::routes::GROUP;
use crate::wire::{self, RequestTemplate};
use crate::BenchError;

#[derive(Debug, Clone, Args)]
pub struct ReferenceArgs {
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:9876")]
    pub listen: SocketAddr,
    /// Worker threads; 0: one per CPU (the default of rmq-namesrv's `server.workers`).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Broker groups in the route body (as `routes --brokers`).
    #[arg(long, default_value_t = 10)]
    pub brokers: usize,
    /// Queues of the topic on every broker (as `routes --queues`).
    #[arg(long, default_value_t = 8)]
    pub queues: i32,
}

/// The route body a NameServer answers for any topic of `routes` with `brokers` registered
/// broker groups of `queues` queues each: broker data and queue data per group, nothing else.
pub fn route_body(brokers: usize, queues: i32) -> Result<Vec<u8>, BenchError> {
    let mut route = TopicRouteData::default();
    for index in 0..brokers {
        let name = broker::broker_name(GROUP, index);
        let port = broker::broker_port(index)?;
        route.broker_datas.push(BrokerData {
            broker_addrs: [(0, format!("127.0.0.1:{port}"))].into_iter().collect(),
            broker_name: name.clone(),
            cluster: CLUSTER.to_owned(),
            enable_acting_master: false,
            zone_name: None,
        });
        route.queue_datas.push(QueueData {
            broker_name: name,
            perm: perm::READ | perm::WRITE,
            read_queue_nums: queues,
            topic_sys_flag: 0,
            write_queue_nums: queues,
        });
    }
    Ok(to_json(&route, JsonStyle::Standard))
}

/// The reply to every request: SUCCESS with `body`, encoded once.
pub fn reply_template(body: Vec<u8>) -> Result<RequestTemplate, BenchError> {
    RequestTemplate::new(&RemotingCommand::success().with_body(body))
}

pub fn run(args: &ReferenceArgs) -> Result<Value, BenchError> {
    if args.brokers == 0 {
        return Err(BenchError::Usage("--brokers must be positive".into()));
    }
    let workers = match args.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let body = route_body(args.brokers, args.queues)?;
    let body_len = body.len();
    let reply = Arc::new(reply_template(body)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let listener = TcpListener::bind(args.listen).await?;
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        // compare.py waits for this line.
        println!(
            "reference-server listening on {} ({} workers, route of {} brokers: {} body bytes, \
             {}-byte frames)",
            listener.local_addr()?,
            workers,
            args.brokers,
            body_len,
            reply.frame_len(4)
        );
        let stats = Arc::new(Stats::default());
        let started = Instant::now();
        let stop = async {
            tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            }
        };
        let ended_by = serve(listener, Arc::clone(&reply), Arc::clone(&stats), stop).await;
        Ok::<_, BenchError>(json!({
            "workload": "reference-server",
            "workers": workers,
            "brokers": args.brokers,
            "body_bytes": body_len,
            "connections": stats.connections.load(Ordering::Relaxed),
            "answered": stats.answered.load(Ordering::Relaxed),
            "up_s": started.elapsed().as_secs_f64(),
            "ended_by": ended_by,
        }))
    });
    // Connections still open are dropped with the runtime.
    rt.shutdown_timeout(Duration::from_secs(1));
    result
}

#[derive(Debug, Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub answered: AtomicU64,
}

/// Accepts until `stop` completes (returning its value); every connection on its own task.
pub async fn serve<F: std::future::Future>(
    listener: TcpListener,
    reply: Arc<RequestTemplate>,
    stats: Arc<Stats>,
    stop: F,
) -> F::Output {
    tokio::pin!(stop);
    loop {
        tokio::select! {
            ended = &mut stop => return ended,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    stats.connections.fetch_add(1, Ordering::Relaxed);
                    let (reply, stats) = (Arc::clone(&reply), Arc::clone(&stats));
                    tokio::spawn(async move {
                        if let Err(err) = connection(stream, &reply, &stats).await {
                            eprintln!("reference-server: connection: {err}");
                        }
                    });
                }
                // Out of descriptors and the like: try again shortly rather than spin.
                Err(err) => {
                    eprintln!("reference-server: accept: {err}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
}

/// Answers every whole request of each read, in order, with one write.
async fn connection(
    mut stream: TcpStream,
    reply: &RequestTemplate,
    stats: &Stats,
) -> Result<(), BenchError> {
    stream.set_nodelay(true)?;
    let mut rbuf = BytesMut::with_capacity(64 * 1024);
    let mut wbuf = BytesMut::with_capacity(64 * 1024);
    loop {
        if stream.read_buf(&mut rbuf).await? == 0 {
            return Ok(());
        }
        let mut answered = 0;
        while let Some(opaque) = wire::next_request_opaque(&mut rbuf)? {
            reply.encode(opaque, &mut wbuf);
            answered += 1;
        }
        if !wbuf.is_empty() {
            stats.answered.fetch_add(answered, Ordering::Relaxed);
            stream.write_all(&wbuf).await?;
            wbuf.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{next_reply, route_request};
    use rmq_protocol::codec::decode_frame;
    use rmq_protocol::ResponseCode;

    #[test]
    fn body_is_a_route_of_the_registered_brokers() {
        let body = route_body(4, 8).unwrap();
        let route: TopicRouteData = serde_json::from_slice(&body).unwrap();
        assert_eq!(route.broker_datas.len(), 4);
        assert_eq!(route.queue_datas.len(), 4);
        assert_eq!(route.broker_datas[3].broker_name, "bench-route-003");
        assert_eq!(route.broker_datas[3].broker_addrs[&0], "127.0.0.1:20012");
        assert_eq!(route.queue_datas[0].write_queue_nums, 8);
        let text = std::str::from_utf8(&body).unwrap();
        assert!(text.starts_with(r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:20000"}"#));
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_with_their_opaques() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let body = route_body(2, 8).unwrap();
            let reply = Arc::new(reply_template(body.clone()).unwrap());
            let stats = Arc::new(Stats::default());
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(serve(listener, reply, Arc::clone(&stats), stop_rx));

            let template = RequestTemplate::new(&route_request("T")).unwrap();
            let opaques = [1, -7, 123_456_789, i32::MIN, 0];
            let mut frames = BytesMut::new();
            for opaque in opaques {
                template.encode(opaque, &mut frames);
            }
            let mut stream = TcpStream::connect(addr).await.unwrap();
            // Split mid-frame: the server must wait for the rest.
            stream.write_all(&frames[..frames.len() - 3]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            stream.write_all(&frames[frames.len() - 3..]).await.unwrap();

            let mut buf = BytesMut::new();
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(10);
            while seen.len() < opaques.len() && Instant::now() < deadline {
                while let Some(r) = next_reply(&mut buf).unwrap() {
                    assert_eq!(r.code, ResponseCode::SUCCESS.0);
                    assert_eq!(r.body_len, body.len());
                    seen.push(r.opaque);
                }
                if seen.len() < opaques.len() {
                    let read =
                        tokio::time::timeout(Duration::from_secs(5), stream.read_buf(&mut buf));
                    assert!(read.await.unwrap().unwrap() > 0);
                }
            }
            assert_eq!(seen, opaques);

            // One whole reply decodes as a response with the route body.
            let mut one = BytesMut::new();
            reply_template(body.clone()).unwrap().encode(5, &mut one);
            let cmd = decode_frame(one.split_off(4).freeze()).unwrap();
            assert!(cmd.is_response());
            assert_eq!((cmd.opaque, cmd.version), (5, 513));
            assert_eq!(cmd.body_bytes(), &body[..]);

            stop_tx.send(()).unwrap();
            server.await.unwrap().unwrap();
            assert_eq!(stats.answered.load(Ordering::Relaxed), 5);
        });
    }
}
