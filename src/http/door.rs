//! `HttpDoor`: the HTTP port's acceptor. It owns the listening socket and the port's front door
//! (`rmq_transport::front_door`, the remoting port's: `tls.mode` decides between plain HTTP,
//! HTTPS, or both told apart by the first byte; no PROXY header), takes each new certificate by
//! message (`TlsConfigChanged`, from the `TlsReloader`) for the connections that arrive after,
//! caps how many connections are open, and serves each admitted stream with actix-http on a
//! task of its own thread. It knows nothing of the routes: it serves the app it is given.
//!
//! No connection lives forever: the front door has `tls.handshake_timeout`, the first request
//! head `REQUEST_HEAD_TIMEOUT`, an idle keep-alive connection `KEEP_ALIVE`; and since actix-http
//! times only the first request head, reads end (as if the client had half-closed) once a
//! connection is `MAX_AGE` old, which finishes the request in flight and closes it, and a
//! connection still there `LINGER` later is dropped. A stop ends the reads the same way at once,
//! then drops what is still open after its grace.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
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
use rmq_transport::front_door::{BoxedRead, BoxedWrite, FrontDoor, Refused};
use tokio::io::{AsyncRead, AsyncWrite, Join, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

/// Open HTTP connections at most; more are closed at accept.
const MAX_CONNECTIONS: usize = 256;
/// How long a new connection has to send its first request head (actix-http's
/// `client_request_timeout`).
const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an idle connection is kept open between requests.
const KEEP_ALIVE: Duration = Duration::from_secs(5);
/// How long closing a connection may take (flushing the last bytes, the TLS close_notify).
const DISCONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// A connection's reads end this long after it was admitted (see the module docs).
const MAX_AGE: Duration = Duration::from_secs(60);
/// A connection still open this long after its reads ended is dropped.
const LINGER: Duration = Duration::from_secs(10);
/// At most one "too many connections" line per this period.
const REFUSAL_LOG_PERIOD: Duration = Duration::from_secs(10);

/// An admitted connection as actix-http reads and writes it.
type Io = ReadEnd<Join<BoxedRead, BoxedWrite>>;
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
    /// The open connections' tasks, by number.
    open: HashMap<u64, JoinHandle<()>>,
    next_id: u64,
    /// True once a stop began: every connection's reads end.
    stopping: watch::Sender<bool>,
    /// Who waits for the stop to finish.
    stopped: Vec<oneshot::Sender<()>>,
    refused: u64,
    refusal_logged: Option<Instant>,
}

impl HttpDoor {
    /// Starts serving `app` on `listener` through `front_door`, on the current arbiter.
    pub(crate) fn start<I, S, B>(
        listener: TcpListener,
        front_door: FrontDoor,
        app: I,
    ) -> io::Result<Addr<Self>>
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
        let local_addr = listener.local_addr()?;
        let app = app
            .into_factory()
            .map_err(|err| err.into().error_response());
        let factory = HttpService::build()
            .keep_alive(KEEP_ALIVE)
            .client_request_timeout(REQUEST_HEAD_TIMEOUT)
            .client_disconnect_timeout(DISCONNECT_TIMEOUT)
            .local_addr(local_addr)
            .finish(map_config(app, |_| AppConfig::default()));
        let init = async move { factory.new_service(()).await.map(boxed::service) };
        let (stopping, _) = watch::channel(false);
        Ok(Self {
            local_addr,
            listener: Some(listener),
            accepting: None,
            front_door,
            serve: None,
            init: Some(Box::pin(init)),
            open: HashMap::new(),
            next_id: 0,
            stopping,
            stopped: Vec::new(),
            refused: 0,
            refusal_logged: None,
        }
        .start())
    }

    fn accept(&mut self, stream: TcpStream, peer: SocketAddr, ctx: &mut Context<Self>) {
        if self.open.len() >= MAX_CONNECTIONS {
            self.refuse(peer);
            return;
        }
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
        };
        let door = ctx.address();
        // A local task on this thread: the admitted halves and the app are not `Send`. It cannot
        // run before the handle is recorded below.
        let task = actix::spawn(async move {
            connection.run(stream, peer).await;
            door.do_send(ConnectionDone { id });
        });
        self.open.insert(id, task);
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
                "HTTP port: {MAX_CONNECTIONS} connections open, refusing more"
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
        for (_, task) in self.open.drain() {
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
        self.open.remove(&msg.id);
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
}

impl Connection {
    async fn run(self, stream: TcpStream, peer: SocketAddr) {
        let admitted = match self.front_door.admit(stream, peer).await {
            Ok(admitted) => admitted,
            Err(refused) => return log_refusal(peer, &refused),
        };
        let tls = admitted.tls;
        let mut stopping = self.stopping;
        let read_end = Box::pin(async move {
            tokio::select! {
                () = tokio::time::sleep(MAX_AGE) => {}
                _ = stopping.wait_for(|stop| *stop) => {}
            }
        });
        let io = ReadEnd {
            inner: tokio::io::join(admitted.read, admitted.write),
            end: Some(read_end),
        };
        let serve = self.serve;
        let served = async {
            std::future::poll_fn(|cx| serve.poll_ready(cx)).await?;
            serve
                .call((io, Protocol::Http1, Some(admitted.client)))
                .await
        };
        match tokio::time::timeout(MAX_AGE + LINGER, served).await {
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

/// A stream whose reads end (as at a half-close by the client) once `end` resolves; writes go
/// on, so a request in flight is still answered.
struct ReadEnd<S> {
    inner: S,
    end: Option<LocalBoxFuture<'static, ()>>,
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadEnd<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.end.as_mut().map(|end| end.as_mut().poll(cx)) {
            Some(Poll::Pending) => Pin::new(&mut this.inner).poll_read(cx, buf),
            Some(Poll::Ready(())) | None => {
                this.end = None;
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadEnd<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
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

    #[tokio::test]
    async fn reads_end_when_the_end_comes_and_writes_go_on() {
        let (near, mut far) = tokio::io::duplex(64);
        let (end, ended) = oneshot::channel::<()>();
        let mut stream = ReadEnd {
            inner: near,
            end: Some(Box::pin(async move {
                let _ = ended.await;
            })),
        };
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
