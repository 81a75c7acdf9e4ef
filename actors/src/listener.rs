//! Listener: accepts connections, numbers them, caps how many are open, and starts each one's
//! Connection actor on a worker arbiter (round robin). When accepting fails (out of file
//! descriptors, EMFILE/ENFILE, and the like) it pauses before trying again, doubling the pause up
//! to a cap, and never gives up.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use actix::prelude::*;
use futures_util::Stream;
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, error, info, warn};

use rmq_transport::front_door::{FrontDoor, Refused};

use crate::connection::Connection;
use crate::limits::{Limit, Refused as LimitRefused};
use crate::messages::{ConnectionClosed, StopAccepting, TlsConfigChanged};
use crate::route::ConnId;
use crate::services::Services;
use crate::settings::ServerSettings;
use crate::worker::WorkerShare;

/// The first pause after a failed accept.
const ACCEPT_BACKOFF_START: Duration = Duration::from_millis(5);
/// The longest pause between failed accepts.
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Something that accepts connections: a [`TcpListener`], or a fake in tests.
trait Accept {
    type Conn;
    fn poll_accept(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<Self::Conn>>;
}

impl Accept for TcpListener {
    type Conn = (TcpStream, SocketAddr);

    fn poll_accept(&mut self, cx: &mut TaskContext<'_>) -> Poll<io::Result<Self::Conn>> {
        TcpListener::poll_accept(self, cx)
    }
}

/// The accepted connections of a listener, as a stream. After an error it yields the error and
/// waits before accepting again: a listener out of file descriptors would otherwise spin.
struct Incoming<A> {
    accept: A,
    backoff: Duration,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<A: Accept> Incoming<A> {
    fn new(accept: A) -> Self {
        Self {
            accept,
            backoff: ACCEPT_BACKOFF_START,
            pause: None,
        }
    }
}

/// The accepted connections of `listener`, pausing after a failed accept as [`Listener`] does
/// (the HTTP port accepts through it too).
pub fn incoming(
    listener: TcpListener,
) -> impl Stream<Item = io::Result<(TcpStream, SocketAddr)>> + Unpin {
    Incoming::new(listener)
}

impl<A: Accept + Unpin> Stream for Incoming<A> {
    type Item = io::Result<A::Conn>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(pause) = this.pause.as_mut() {
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.pause = None;
        }
        match this.accept.poll_accept(cx) {
            Poll::Ready(Ok(conn)) => {
                this.backoff = ACCEPT_BACKOFF_START;
                Poll::Ready(Some(Ok(conn)))
            }
            Poll::Ready(Err(err)) => {
                this.pause = Some(Box::pin(tokio::time::sleep(this.backoff)));
                this.backoff = (this.backoff * 2).min(ACCEPT_BACKOFF_MAX);
                Poll::Ready(Some(Err(err)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Everything a listener needs to start connections.
pub struct ListenerSetup {
    pub listener: TcpListener,
    /// PROXY header and TLS handling of new connections.
    pub front_door: FrontDoor,
    /// Arbiters that run connection actors; empty means the listener's own.
    pub workers: Vec<ArbiterHandle>,
    /// `max_connections` and every connection's limits.
    pub settings: ServerSettings,
    /// The actors connections talk to.
    pub services: Services,
}

/// The listener actor.
pub struct Listener {
    incoming: Option<Incoming<TcpListener>>,
    local_addr: Option<SocketAddr>,
    max_connections: usize,
    workers: Vec<ArbiterHandle>,
    next_worker: usize,
    next_id: u64,
    open: usize,
    /// With `server.max_connections_per_source`: open connections by source address, and the
    /// source of each.
    per_source: HashMap<IpAddr, usize>,
    sources: HashMap<ConnId, IpAddr>,
    front_door: FrontDoor,
    settings: ServerSettings,
    services: Services,
}

impl Listener {
    pub fn new(setup: ListenerSetup) -> Self {
        Self {
            local_addr: setup.listener.local_addr().ok(),
            incoming: Some(Incoming::new(setup.listener)),
            max_connections: setup.settings.max_connections,
            workers: setup.workers,
            next_worker: 0,
            next_id: 0,
            open: 0,
            per_source: HashMap::new(),
            sources: HashMap::new(),
            front_door: setup.front_door,
            settings: setup.settings,
            services: setup.services,
        }
    }

    fn accept(&mut self, stream: TcpStream, peer: SocketAddr, ctx: &mut Context<Self>) {
        if self.open >= self.max_connections {
            self.refuse(
                Limit::Connections,
                peer,
                format!("{} connections open, refusing another", self.open),
            );
            return;
        }
        let per_source_cap = self.settings.max_connections_per_source;
        if per_source_cap > 0 {
            let open = self.per_source.get(&peer.ip()).copied().unwrap_or(0);
            if open >= per_source_cap {
                self.refuse(
                    Limit::ConnectionsPerSource,
                    peer,
                    format!("{open} connections open from this address, refusing another"),
                );
                return;
            }
        }
        self.next_id += 1;
        self.open += 1;
        let id = ConnId(self.next_id);
        if per_source_cap > 0 {
            *self.per_source.entry(peer.ip()).or_default() += 1;
            self.sources.insert(id, peer.ip());
        }
        if let Err(err) = stream.set_nodelay(true) {
            debug!(peer = %peer, error = %err, "cannot set TCP_NODELAY");
        }
        let admission = Admission {
            id,
            peer,
            front_door: self.front_door.clone(),
            services: self.services.clone(),
            listener: ctx.address().recipient(),
            settings: self.settings.clone(),
        };
        if self.workers.is_empty() {
            actix_rt::spawn(admission.run(stream));
            return;
        }
        let worker = &self.workers[self.next_worker % self.workers.len()];
        self.next_worker = self.next_worker.wrapping_add(1);
        // A tokio socket belongs to the reactor that accepted it: move it as a std socket.
        match stream.into_std() {
            Ok(std_stream) => {
                let spawned = worker.spawn(async move {
                    match TcpStream::from_std(std_stream) {
                        Ok(stream) => admission.run(stream).await,
                        Err(err) => {
                            warn!(peer = %peer, error = %err, "cannot adopt accepted socket");
                            admission.listener.do_send(ConnectionClosed { conn: id });
                        }
                    }
                });
                if !spawned {
                    error!(peer = %peer, "worker arbiter is gone; connection dropped");
                    self.closed(id);
                }
            }
            Err(err) => {
                warn!(peer = %peer, error = %err, "cannot move accepted socket to a worker");
                self.closed(id);
            }
        }
    }

    /// A connection refused at accept: dropped (closing it), counted and logged (rate-limited).
    fn refuse(&self, limit: Limit, peer: SocketAddr, detail: String) {
        self.services.limits.do_send(LimitRefused {
            limit,
            source: Some(peer.ip()),
            detail,
        });
    }

    /// Frees the slot of connection `id`.
    fn closed(&mut self, id: ConnId) {
        self.open = self.open.saturating_sub(1);
        if let Some(ip) = self.sources.remove(&id) {
            if let Some(open) = self.per_source.get_mut(&ip) {
                *open = open.saturating_sub(1);
                if *open == 0 {
                    self.per_source.remove(&ip);
                }
            }
        }
    }
}

/// A new connection on its way in: through the front door (PROXY header, TLS), then its
/// Connection actor starts on the current arbiter.
struct Admission {
    id: ConnId,
    peer: SocketAddr,
    front_door: FrontDoor,
    services: Services,
    listener: Recipient<ConnectionClosed>,
    settings: ServerSettings,
}

impl Admission {
    async fn run(self, stream: TcpStream) {
        let admitted = match self.front_door.admit(stream, self.peer).await {
            Ok(admitted) => admitted,
            Err(refused) => {
                log_refusal(self.id, self.peer, &refused);
                self.listener.do_send(ConnectionClosed { conn: self.id });
                return;
            }
        };
        if admitted.client != self.peer {
            debug!(conn = %self.id, socket_peer = %self.peer, client = %admitted.client, "PROXY header names the client");
        }
        Connection::start(
            self.id,
            admitted.client,
            admitted.security(),
            (admitted.read, admitted.write),
            WorkerShare::of_this_thread(&self.services, &self.settings, &self.listener),
        );
    }
}

/// Policy refusals are warnings (an operator wants to see them); a client that closes before
/// its first byte (a TCP health check) is not.
fn log_refusal(conn: ConnId, peer: SocketAddr, refused: &Refused) {
    match refused {
        Refused::Closed | Refused::Io(_) => {
            debug!(conn = %conn, peer = %peer, reason = %refused, "connection closed before its first frame")
        }
        Refused::Timeout(_) | Refused::Silent(_) | Refused::Handshake(_) => {
            info!(conn = %conn, peer = %peer, reason = %refused, "connection closed")
        }
        _ => warn!(conn = %conn, peer = %peer, reason = %refused, "connection refused"),
    }
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(incoming) = self.incoming.take() {
            ctx.add_stream(incoming);
        }
        info!(addr = ?self.local_addr, workers = self.workers.len(), "listening");
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        info!(addr = ?self.local_addr, "listener stopped");
    }
}

impl StreamHandler<io::Result<(TcpStream, SocketAddr)>> for Listener {
    fn handle(&mut self, item: io::Result<(TcpStream, SocketAddr)>, ctx: &mut Context<Self>) {
        match item {
            Ok((stream, peer)) => self.accept(stream, peer, ctx),
            // Running out of file descriptors and the like: keep listening, after a pause.
            Err(err) => warn!(error = %err, "accept failed; pausing before the next accept"),
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The accept stream never ends by itself; nothing to do.
    }
}

/// Not contained on purpose: a panic here ends the listener, which is how tests check that such
/// a loss is reported (health) and ends the daemon (non-zero exit) instead of going unnoticed.
#[cfg(debug_assertions)]
impl Handler<crate::contain::InjectPanic> for Listener {
    type Result = ();

    fn handle(&mut self, _: crate::contain::InjectPanic, _: &mut Context<Self>) {
        panic!("injected fault in the listener (not contained)");
    }
}

impl Handler<ConnectionClosed> for Listener {
    type Result = ();

    fn handle(&mut self, msg: ConnectionClosed, _: &mut Context<Self>) {
        self.closed(msg.conn);
    }
}

impl Handler<TlsConfigChanged> for Listener {
    type Result = ();

    fn handle(&mut self, msg: TlsConfigChanged, _: &mut Context<Self>) {
        self.front_door.tls = msg.config;
    }
}

impl Handler<StopAccepting> for Listener {
    type Result = ();

    fn handle(&mut self, _: StopAccepting, ctx: &mut Context<Self>) {
        // Stopping drops the accept stream and with it the listening socket.
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use futures_util::StreamExt;

    use super::*;

    /// Accepts from a script: `Err` for a failure, `Ok(n)` for connection `n`.
    struct Script(VecDeque<io::Result<u32>>);

    impl Accept for Script {
        type Conn = u32;

        fn poll_accept(&mut self, _: &mut TaskContext<'_>) -> Poll<io::Result<u32>> {
            match self.0.pop_front() {
                Some(next) => Poll::Ready(next),
                None => Poll::Pending,
            }
        }
    }

    fn emfile() -> io::Result<u32> {
        Err(io::Error::from_raw_os_error(24))
    }

    #[tokio::test(start_paused = true)]
    async fn failed_accepts_back_off_exponentially_up_to_a_cap_and_recover() {
        let mut script: VecDeque<io::Result<u32>> = (0..12).map(|_| emfile()).collect();
        script.push_back(Ok(1));
        script.push_back(emfile());
        script.push_back(Ok(2));
        let mut incoming = Incoming::new(Script(script));
        let start = tokio::time::Instant::now();
        let mut failures_at = Vec::new();
        for _ in 0..12 {
            assert!(incoming.next().await.is_some_and(|r| r.is_err()));
            failures_at.push(start.elapsed());
        }
        let gaps: Vec<Duration> = failures_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps[0], ACCEPT_BACKOFF_START);
        assert_eq!(gaps[1], ACCEPT_BACKOFF_START * 2);
        assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "{gaps:?}");
        assert_eq!(*gaps.last().unwrap(), ACCEPT_BACKOFF_MAX, "{gaps:?}");
        // It never gives up: the next connection is accepted, and a success resets the pause.
        assert_eq!(incoming.next().await.unwrap().unwrap(), 1);
        let before = tokio::time::Instant::now();
        assert!(incoming.next().await.unwrap().is_err());
        assert_eq!(incoming.next().await.unwrap().unwrap(), 2);
        assert_eq!(before.elapsed(), ACCEPT_BACKOFF_START);
    }
}
