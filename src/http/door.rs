//! `HttpDoor`: the HTTP port's acceptor. It owns the listening socket and the port's front door
//! (`rmq_transport::front_door`, the remoting port's: `tls.mode` decides between plain HTTP,
//! HTTPS, or both told apart by the first byte; no PROXY header), takes each new certificate by
//! message (`TlsConfigChanged`, from the `TlsReloader`) for the connections that arrive after,
//! caps how many connections are open, in all and per source address, and serves each admitted
//! stream with actix-http on a task of its own thread. It knows nothing of the routes: it serves
//! the app it is given, telling it (as connection data, [`ConnInfo`]) how the connection came
//! in: TLS, a client certificate, and its lane.
//!
//! Two lanes: the ordinary one (`MAX_CONNECTIONS`, at most `MAX_PER_SOURCE` per source), and a
//! small probe lane for the connections that arrive when the ordinary one (or their source's
//! share of it) is full: there only `/health` and `/ready` are answered, one request per
//! connection, with short timeouts, so that no client holding connections open can starve
//! Kubernetes' probes (the app enforces what a lane may ask, `http::access`).
//!
//! No connection lives forever: the front door has `tls.handshake_timeout`; every request
//! (not only the first, which is all actix-http times) must arrive whole within its lane's head
//! timeout of its first byte, or the connection's reads end; an idle keep-alive connection
//! closes after `KEEP_ALIVE`; reads end (as if the client had half-closed) once a connection is
//! its lane's maximum age old, which finishes the request in flight and closes it, and a
//! connection still there `LINGER` later is dropped. A stop ends the reads the same way at once,
//! then drops what is still open after its grace.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use actix::prelude::*;
use actix_http::body::MessageBody;
use actix_http::error::DispatchError;
use actix_http::{HttpService, Protocol, Request, Response};
use actix_service::boxed::{self, BoxService};
use actix_service::{map_config, IntoServiceFactory, Service, ServiceFactory, ServiceFactoryExt};
use actix_web::dev::AppConfig;
use futures_util::future::LocalBoxFuture;
use rmq_actors::messages::TlsConfigChanged;
use rmq_transport::front_door::{BoxedRead, BoxedWrite, FrontDoor, Refused, Security};
use tokio::io::{AsyncRead, AsyncWrite, Join, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Sleep;
use tracing::{debug, info, warn};

/// Open connections of the ordinary lane at most.
const MAX_CONNECTIONS: usize = 256;
/// Ordinary connections one source address may hold.
const MAX_PER_SOURCE: usize = 32;
/// Connections of the probe lane at most, and per source address.
const PROBE_LANE: usize = 32;
const PROBE_LANE_PER_SOURCE: usize = 4;
/// How long a request may take to arrive whole from its first byte, per lane (actix-http's
/// `client_request_timeout` times the first one only; [`ReadEnd`] times each).
const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(5);
const PROBE_HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// How long an idle connection is kept open between requests.
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// How long closing a connection may take (flushing the last bytes, the TLS close_notify).
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A connection's reads end this long after it was admitted (see the module docs), per lane.
const MAX_AGE: Duration = Duration::from_secs(60);
const PROBE_MAX_AGE: Duration = Duration::from_secs(5);
/// A connection still open this long after its reads ended is dropped.
const LINGER: Duration = Duration::from_secs(10);
/// At most one "too many connections" line per this period.
const REFUSAL_LOG_PERIOD: Duration = Duration::from_secs(10);

/// An admitted connection as actix-http reads and writes it.
type Io = ReadEnd<Join<BoxedRead, BoxedWrite>>;

/// Which lane a connection was admitted to (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    Ordinary,
    Probe,
}

impl Lane {
    fn head_timeout(self) -> Duration {
        match self {
            Lane::Ordinary => REQUEST_HEAD_TIMEOUT,
            Lane::Probe => PROBE_HEAD_TIMEOUT,
        }
    }

    fn max_age(self) -> Duration {
        match self {
            Lane::Ordinary => MAX_AGE,
            Lane::Probe => PROBE_MAX_AGE,
        }
    }
}

/// How a connection came in, for the app (`HttpRequest::conn_data`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ConnInfo {
    pub security: Security,
    pub lane: Lane,
}
/// The app, ready to serve connections (built once, shared by the connection tasks).
type Serve = BoxService<(Io, Protocol, Option<SocketAddr>), (), DispatchError>;

/// The HTTP port's acceptor. See the module docs.
pub(crate) struct HttpDoor {
    local_addr: SocketAddr,
    listener: Option<TcpListener>,
    /// The accept stream, until a stop.
    accepting: Option<SpawnHandle>,
    front_door: FrontDoor,
    /// Built when the actor starts (actix-http builds services asynchronously).
    serve: Option<Rc<Serve>>,
    init: Option<LocalBoxFuture<'static, Result<Serve, ()>>>,
    /// The open connections' tasks, by number, with their source and lane.
    open: HashMap<u64, (JoinHandle<()>, IpAddr, Lane)>,
    /// Open connections by source and lane, and of the probe lane in all.
    by_source: HashMap<(IpAddr, Lane), usize>,
    probe_lane: usize,
    next_id: u64,
    /// True once a stop began: every connection's reads end.
    stopping: watch::Sender<bool>,
    /// Who waits for the stop to finish.
    stopped: Vec<oneshot::Sender<()>>,
    refused: u64,
    refusal_logged: Option<Instant>,
}

impl HttpDoor {
    /// Starts serving `app` on `listener` (at `local_addr`) through `front_door`, on the current
    /// arbiter.
    pub(crate) fn start<I, S, B>(
        listener: TcpListener,
        local_addr: SocketAddr,
        front_door: FrontDoor,
        app: I,
    ) -> Addr<Self>
    where
        I: IntoServiceFactory<S, Request>,
        S: ServiceFactory<Request, Config = AppConfig> + 'static,
        S::Error: Into<actix_web::Error> + 'static,
        S::InitError: fmt::Debug,
        S::Response: Into<Response<B>> + 'static,
        S::Service: 'static,
        <S::Service as Service<Request>>::Future: 'static,
        B: MessageBody + 'static,
    {
        let app = app
            .into_factory()
            .map_err(|err| err.into().error_response());
        let factory = HttpService::build()
            .on_connect_ext(|io: &Io, ext: &mut actix_http::Extensions| {
                ext.insert(io.info);
            })
            .keep_alive(KEEP_ALIVE)
            .client_request_timeout(REQUEST_HEAD_TIMEOUT)
            .client_disconnect_timeout(DISCONNECT_TIMEOUT)
            .local_addr(local_addr)
            .finish(map_config(app, |_| AppConfig::default()));
        let init = async move { factory.new_service(()).await.map(boxed::service) };
        let (stopping, _) = watch::channel(false);
        Self {
            local_addr,
            listener: Some(listener),
            accepting: None,
            front_door,
            serve: None,
            init: Some(Box::pin(init)),
            open: HashMap::new(),
            by_source: HashMap::new(),
            probe_lane: 0,
            next_id: 0,
            stopping,
            stopped: Vec::new(),
            refused: 0,
            refusal_logged: None,
        }
        .start()
    }

    /// The lane a new connection from `source` gets, if any (see the module docs).
    fn lane_for(&self, source: IpAddr) -> Option<Lane> {
        let held = |lane| self.by_source.get(&(source, lane)).copied().unwrap_or(0);
        let ordinary = self.open.len() - self.probe_lane;
        if ordinary < MAX_CONNECTIONS && held(Lane::Ordinary) < MAX_PER_SOURCE {
            Some(Lane::Ordinary)
        } else if self.probe_lane < PROBE_LANE && held(Lane::Probe) < PROBE_LANE_PER_SOURCE {
            Some(Lane::Probe)
        } else {
            None
        }
    }

    fn accept(&mut self, stream: TcpStream, peer: SocketAddr, ctx: &mut Context<Self>) {
        let source = peer.ip();
        let Some(lane) = self.lane_for(source) else {
            self.refuse(peer);
            return;
        };
        let Some(serve) = self.serve.clone() else {
            // Not reachable: accepting starts once the app is built.
            warn!(%peer, "HTTP port not ready; connection closed");
            return;
        };
        if let Err(err) = stream.set_nodelay(true) {
            debug!(%peer, error = %err, "cannot set TCP_NODELAY");
        }
        self.next_id += 1;
        let id = self.next_id;
        let connection = Connection {
            front_door: self.front_door.clone(),
            serve,
            stopping: self.stopping.subscribe(),
            lane,
        };
        let door = ctx.address();
        // A local task on this thread: the admitted halves and the app are not `Send`. It cannot
        // run before the handle is recorded below.
        let task = actix::spawn(async move {
            connection.run(stream, peer).await;
            door.do_send(ConnectionDone { id });
        });
        self.open.insert(id, (task, source, lane));
        *self.by_source.entry((source, lane)).or_default() += 1;
        if lane == Lane::Probe {
            self.probe_lane += 1;
        }
    }

    /// Forgets connection `id`.
    fn done(&mut self, id: u64) {
        let Some((_, source, lane)) = self.open.remove(&id) else {
            return;
        };
        if let Some(held) = self.by_source.get_mut(&(source, lane)) {
            *held -= 1;
            if *held == 0 {
                self.by_source.remove(&(source, lane));
            }
        }
        if lane == Lane::Probe {
            self.probe_lane -= 1;
        }
    }

    /// A connection over the cap: closed, and said so at most once per period.
    fn refuse(&mut self, peer: SocketAddr) {
        self.refused += 1;
        let now = Instant::now();
        if self
            .refusal_logged
            .is_none_or(|at| now.duration_since(at) >= REFUSAL_LOG_PERIOD)
        {
            warn!(
                %peer,
                open = self.open.len(),
                refused = self.refused,
                "HTTP port: connections refused (at most {MAX_CONNECTIONS}, {MAX_PER_SOURCE} per source, and {PROBE_LANE} for probes)"
            );
            self.refused = 0;
            self.refusal_logged = Some(now);
        }
    }

    /// Ends the stop: whoever waits is told, the actor stops.
    fn finish(&mut self, ctx: &mut Context<Self>) {
        for waiter in self.stopped.drain(..) {
            let _ = waiter.send(());
        }
        ctx.stop();
    }
}

impl Actor for HttpDoor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let Some(init) = self.init.take() else {
            return;
        };
        // Nothing is accepted before the app is built.
        ctx.wait(init.into_actor(self).map(|built, door, ctx| {
            let Ok(serve) = built else {
                tracing::error!(addr = %door.local_addr, "HTTP port: the app could not be built");
                ctx.stop();
                return;
            };
            door.serve = Some(Rc::new(serve));
            if let Some(listener) = door.listener.take() {
                door.accepting = Some(ctx.add_stream(rmq_actors::listener::incoming(listener)));
            }
        }));
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        for (_, (task, _, _)) in self.open.drain() {
            task.abort();
        }
        info!(addr = %self.local_addr, "HTTP port stopped");
    }
}

impl StreamHandler<io::Result<(TcpStream, SocketAddr)>> for HttpDoor {
    fn handle(&mut self, item: io::Result<(TcpStream, SocketAddr)>, ctx: &mut Context<Self>) {
        match item {
            Ok((stream, peer)) => self.accept(stream, peer, ctx),
            Err(err) => warn!(error = %err, "HTTP port: accept failed; pausing before the next"),
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The accept stream never ends by itself; a stop cancels it.
    }
}

impl Handler<TlsConfigChanged> for HttpDoor {
    type Result = ();

    fn handle(&mut self, msg: TlsConfigChanged, _: &mut Context<Self>) {
        debug!(addr = %self.local_addr, certificate = msg.config.is_some(), "HTTP port: new TLS configuration for new connections");
        self.front_door.tls = msg.config;
    }
}

/// A connection's task ended.
#[derive(Message)]
#[rtype(result = "()")]
struct ConnectionDone {
    id: u64,
}

impl Handler<ConnectionDone> for HttpDoor {
    type Result = ();

    fn handle(&mut self, msg: ConnectionDone, ctx: &mut Context<Self>) {
        self.done(msg.id);
        if *self.stopping.borrow() && self.open.is_empty() {
            self.finish(ctx);
        }
    }
}

/// Stop accepting, end every connection's reads (a request in flight is answered, an idle
/// connection closes), drop what is still open after `grace`. Answers when the port is closed.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopServing {
    pub grace: Duration,
}

impl Handler<StopServing> for HttpDoor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: StopServing, ctx: &mut Context<Self>) -> Self::Result {
        // Dropping the accept stream closes the listening socket.
        if let Some(accepting) = self.accepting.take() {
            ctx.cancel_future(accepting);
        }
        self.listener = None;
        self.stopping.send_replace(true);
        let (done, waited) = oneshot::channel();
        self.stopped.push(done);
        if self.open.is_empty() {
            self.finish(ctx);
        } else {
            debug!(open = self.open.len(), grace = ?msg.grace, "HTTP port: letting open requests finish");
            ctx.run_later(msg.grace, |door, ctx| {
                if !door.open.is_empty() {
                    info!(
                        open = door.open.len(),
                        "HTTP port: connections still open at the end of the stop grace, dropped"
                    );
                }
                door.finish(ctx);
            });
        }
        Box::pin(async move {
            let _ = waited.await;
        })
    }
}

/// One accepted connection: through the front door, then served.
struct Connection {
    front_door: FrontDoor,
    serve: Rc<Serve>,
    stopping: watch::Receiver<bool>,
    lane: Lane,
}

impl Connection {
    async fn run(self, stream: TcpStream, peer: SocketAddr) {
        let admitted = match self.front_door.admit(stream, peer).await {
            Ok(admitted) => admitted,
            Err(refused) => return log_refusal(peer, &refused),
        };
        let tls = admitted.tls;
        let info = ConnInfo {
            security: admitted.security(),
            lane: self.lane,
        };
        let mut stopping = self.stopping;
        let max_age = self.lane.max_age();
        let read_end = Box::pin(async move {
            tokio::select! {
                () = tokio::time::sleep(max_age) => {}
                _ = stopping.wait_for(|stop| *stop) => {}
            }
        });
        let io = ReadEnd::new(
            tokio::io::join(admitted.read, admitted.write),
            read_end,
            self.lane.head_timeout(),
            info,
        );
        let serve = self.serve;
        let served = async {
            std::future::poll_fn(|cx| serve.poll_ready(cx)).await?;
            serve
                .call((io, Protocol::Http1, Some(admitted.client)))
                .await
        };
        match tokio::time::timeout(max_age + LINGER, served).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                debug!(%peer, tls, error = %err, "HTTP connection ended with an error")
            }
            Err(_) => debug!(%peer, tls, "HTTP connection dropped: open too long"),
        }
    }
}

/// Why a connection was not let in: a client that closes before its first byte (a TCP health
/// check) at debug, the rest (plaintext when TLS is enforced, TLS when disabled, a failed or
/// slow handshake) at info: nothing else is affected.
fn log_refusal(peer: SocketAddr, refused: &Refused) {
    match refused {
        Refused::Closed | Refused::Io(_) => {
            debug!(%peer, reason = %refused, "HTTP connection closed before its first byte")
        }
        _ => info!(%peer, reason = %refused, "HTTP connection refused"),
    }
}

/// A stream whose reads end (as at a half-close by the client) once `end` resolves, or once a
/// request that began (bytes read since the last answer was written) has not been answered
/// within `head_timeout` of its first byte; writes go on, so a request in flight is still
/// answered. Carries the connection's [`ConnInfo`] for the app.
struct ReadEnd<S> {
    inner: S,
    /// `None` once the reads ended.
    end: Option<LocalBoxFuture<'static, ()>>,
    head_timeout: Duration,
    /// Set by the first byte of a request, cleared by the answer's first write.
    head_deadline: Option<Pin<Box<Sleep>>>,
    info: ConnInfo,
}

impl<S> ReadEnd<S> {
    fn new(
        inner: S,
        end: LocalBoxFuture<'static, ()>,
        head_timeout: Duration,
        info: ConnInfo,
    ) -> Self {
        Self {
            inner,
            end: Some(end),
            head_timeout,
            head_deadline: None,
            info,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadEnd<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let ended = match this.end.as_mut() {
            None => true,
            Some(end) => {
                end.as_mut().poll(cx).is_ready()
                    || this
                        .head_deadline
                        .as_mut()
                        .is_some_and(|deadline| deadline.as_mut().poll(cx).is_ready())
            }
        };
        if ended {
            this.end = None;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before && this.head_deadline.is_none() {
            let mut deadline = Box::pin(tokio::time::sleep(this.head_timeout));
            // Polled once, so that its end wakes this task.
            let _ = deadline.as_mut().poll(cx);
            this.head_deadline = Some(deadline);
        }
        polled
    }
}

impl<S> ReadEnd<S> {
    /// An answer is being written: the request it answers is whole, the next one's clock
    /// starts with its first byte.
    fn answered(&mut self, written: &Poll<io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.head_deadline = None;
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadEnd<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.answered(&written);
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.answered(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn info() -> ConnInfo {
        ConnInfo {
            security: Security::default(),
            lane: Lane::Ordinary,
        }
    }

    #[tokio::test]
    async fn a_request_that_does_not_arrive_whole_in_time_ends_the_reads() {
        let (near, mut far) = tokio::io::duplex(64);
        let mut stream = ReadEnd::new(
            near,
            Box::pin(std::future::pending()),
            Duration::from_millis(100),
            info(),
        );
        let mut buf = [0u8; 8];
        // A request, answered: the clock stops with the answer.
        far.write_all(b"GET").await.unwrap();
        assert_eq!(stream.read(&mut buf).await.unwrap(), 3);
        stream.write_all(b"200").await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        // The next one trickles: its clock starts with its first byte.
        far.write_all(b"G").await.unwrap();
        assert_eq!(stream.read(&mut buf).await.unwrap(), 1);
        let trickle = async {
            loop {
                tokio::time::sleep(Duration::from_millis(30)).await;
                if far.write_all(b"E").await.is_err() {
                    return;
                }
            }
        };
        let read_all = async {
            let mut total = 0;
            loop {
                match stream.read(&mut buf).await.unwrap() {
                    0 => return total,
                    n => total += n,
                }
            }
        };
        let started = std::time::Instant::now();
        let total = tokio::select! {
            total = read_all => total,
            () = trickle => unreachable!("the far end stays open"),
        };
        let took = started.elapsed();
        assert!(total < 6, "{total} bytes read after the deadline");
        assert!(took < Duration::from_secs(1), "{took:?}");
    }

    #[tokio::test]
    async fn reads_end_when_the_end_comes_and_writes_go_on() {
        let (near, mut far) = tokio::io::duplex(64);
        let (end, ended) = oneshot::channel::<()>();
        let mut stream = ReadEnd::new(
            near,
            Box::pin(async move {
                let _ = ended.await;
            }),
            Duration::from_secs(60),
            info(),
        );
        far.write_all(b"GET").await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(stream.read(&mut buf).await.unwrap(), 3);
        // Nothing more comes: the read waits for the end, then ends.
        let read = tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await;
        assert!(read.is_err(), "the read waits");
        end.send(()).unwrap();
        assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
        // Bytes that come later are not read; the answer is still written.
        far.write_all(b"more").await.unwrap();
        assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
        stream.write_all(b"200").await.unwrap();
        let mut answer = [0u8; 3];
        far.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"200");
    }
}
