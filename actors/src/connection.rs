//! Connection: one actor per TCP (or TLS) connection. Frames in, typed messages out to the
//! actor that owns the state, responses back with the request's opaque.

use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_protocol::{FrameError, LanguageCode, RemotingCodec, RemotingCommand};
use tokio::io::AsyncWrite;
use tokio_util::codec::FramedRead;
use tracing::{debug, error, info, info_span, warn, Span};

use crate::dispatch::{dispatch, Responder, Services};
use crate::messages::{CloseConnection, ConnectionClosed, ConnectionOpened, Drain, WentAway};
use crate::outbox::{Outbox, MAX_SLICES};
use crate::registration::{self, BodyMemo, RegistrationError};
use crate::response::{go_away, system_error, IntoResponse};
use crate::route::ConnId;
use crate::route_cache::WorkerCache;
use crate::settings::ServerSettings;

pub use rmq_transport::front_door::{BoxedRead, BoxedWrite};

/// Where and how to send the answer to one request.
#[derive(Debug, Clone, Copy)]
struct ReplyTo {
    opaque: i32,
    oneway: bool,
    serialize_type: rmq_protocol::SerializeType,
}

/// One connection. See the module docs.
pub struct Connection {
    id: ConnId,
    /// The client: the address of its PROXY header, or the socket's peer.
    peer: SocketAddr,
    tls: bool,
    services: Rc<Services>,
    /// This thread's route cache of the server (absent only off the worker threads).
    route_cache: Option<WorkerCache>,
    /// Told when the connection stops, to free its slot.
    listener: Recipient<ConnectionClosed>,
    settings: Rc<ServerSettings>,
    write: BoxedWrite,
    outbox: Outbox,
    /// The last registration body decoded on this connection (a broker's own connection).
    last_body: Option<BodyMemo>,
    /// A `Flush` is running.
    flushing: bool,
    in_flight: usize,
    /// Frames read and responses written so far; the idle check compares it between checks
    /// instead of reading the clock per request.
    activity: u64,
    /// The activity count at the last idle check, and when it last changed.
    idle_since: (u64, Instant),
    /// Whether its close was announced (normally in `stopped`).
    closed_told: bool,
    /// The server is draining and this connection was open when it began: 5.x clients get
    /// GO_AWAY.
    going_away: bool,
    span: Span,
}

impl Connection {
    /// Starts a connection actor on the current arbiter over the two halves of a stream, from
    /// `peer` (with `tls` when the stream is TLS).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        id: ConnId,
        peer: SocketAddr,
        tls: bool,
        read: BoxedRead,
        write: BoxedWrite,
        services: Rc<Services>,
        listener: Recipient<ConnectionClosed>,
        settings: Rc<ServerSettings>,
    ) -> Addr<Self> {
        Connection::create(move |ctx| {
            let codec = RemotingCodec::new(settings.max_frame_bytes);
            ctx.add_stream(FramedRead::new(read, codec));
            Connection {
                id,
                peer,
                tls,
                route_cache: WorkerCache::of_this_thread(services.route_cache),
                services,
                listener,
                settings,
                write,
                outbox: Outbox::new(),
                last_body: None,
                flushing: false,
                in_flight: 0,
                activity: 0,
                idle_since: (0, Instant::now()),
                closed_told: false,
                going_away: false,
                span: info_span!("conn", conn = %id, peer = %peer, tls),
            }
        })
    }

    fn on_request(&mut self, cmd: RemotingCommand, ctx: &mut Context<Self>) {
        let _entered = self.span.enter();
        if cmd.is_response() {
            // We send no requests, so no response can be ours (Java logs and drops it too).
            debug!(
                code = cmd.code,
                opaque = cmd.opaque,
                "unexpected response frame dropped"
            );
            return;
        }
        debug!(code = %cmd.request_code(), opaque = cmd.opaque, oneway = cmd.is_oneway(), "request");
        if self.going_away && cmd.version > GO_AWAY_AFTER_VERSION {
            // As Java's NettyRemotingAbstract: answered GO_AWAY (a oneway request is dropped),
            // not processed; the client reconnects and sends it again.
            debug!(code = %cmd.request_code(), "draining: GO_AWAY");
            self.services.went_away.do_send(WentAway);
            if !cmd.is_oneway() {
                let reply_to = ReplyTo {
                    opaque: cmd.opaque,
                    oneway: false,
                    serialize_type: cmd.serialize_type,
                };
                drop(_entered);
                self.reply(reply_to, go_away(), ctx);
            }
            return;
        }
        let reply_to = ReplyTo {
            opaque: cmd.opaque,
            oneway: cmd.is_oneway(),
            serialize_type: cmd.serialize_type,
        };
        drop(_entered);
        let services = Rc::clone(&self.services);
        let mut responder = Answering {
            conn: self,
            ctx,
            reply_to,
            request: &cmd,
        };
        dispatch(&cmd, &services, &mut responder);
    }

    /// REGISTER_BROKER through `crate::registration`, with this connection's memory of the body
    /// it registered last.
    fn register_broker(
        &mut self,
        cmd: RemotingCommand,
        reply_to: ReplyTo,
        ctx: &mut Context<Self>,
    ) {
        let registered = registration::register(
            self.services.routes.clone(),
            cmd,
            self.id,
            self.settings.max_inflated_body_bytes,
            self.last_body.clone(),
        );
        self.in_flight += 1;
        let fut = registered.into_actor(self).map(
            move |result: Result<_, RegistrationError>, act, ctx| {
                act.in_flight -= 1;
                let response = match result {
                    Ok((reply, memo)) => {
                        act.last_body = Some(memo);
                        reply.into_response()
                    }
                    Err(err) => {
                        let _entered = act.span.enter();
                        err.into_response()
                    }
                };
                act.reply(reply_to, response, ctx);
            },
        );
        self.spawn_or_wait(fut, ctx);
    }

    /// Waits for the reply of a message sent to the actor that answers it and writes it. Beyond
    /// `max_in_flight` outstanding requests the connection stops reading until this one is done.
    fn forward<F, R>(&mut self, reply: F, reply_to: ReplyTo, ctx: &mut Context<Self>)
    where
        F: Future<Output = Result<R, MailboxError>> + 'static,
        R: IntoResponse,
    {
        self.in_flight += 1;
        let fut = reply.into_actor(self).map(move |result, act, ctx| {
            act.in_flight -= 1;
            let response = match result {
                Ok(reply) => reply.into_response(),
                Err(err) => {
                    warn!(parent: &act.span, error = %err, "actor unavailable");
                    system_error(format!("name server busy or restarting: {err}"))
                }
            };
            act.reply(reply_to, response, ctx);
        });
        self.spawn_or_wait(fut, ctx);
    }

    /// Runs a request's future; beyond `max_in_flight` outstanding ones, reading pauses until it
    /// is done.
    fn spawn_or_wait(
        &mut self,
        fut: impl ActorFuture<Self, Output = ()> + 'static,
        ctx: &mut Context<Self>,
    ) {
        if self.in_flight >= self.settings.max_in_flight {
            ctx.wait(fut);
        } else {
            ctx.spawn(fut);
        }
    }

    fn reply(&mut self, reply_to: ReplyTo, mut response: RemotingCommand, ctx: &mut Context<Self>) {
        if reply_to.oneway {
            return;
        }
        response.opaque = reply_to.opaque;
        response.flag = rmq_protocol::command::FLAG_RESPONSE;
        response.version = self.settings.advertised_version;
        response.language = LanguageCode::Java;
        response.serialize_type = self
            .settings
            .response_serialize
            .for_request(reply_to.serialize_type);
        self.activity = self.activity.wrapping_add(1);
        if let Err(err) = self.outbox.push(&response) {
            warn!(parent: &self.span, error = %err, "cannot encode a response, closing");
            ctx.stop();
            return;
        }
        if self.outbox.queued() > OUTBOX_HIGH_WATER {
            // The peer does not read: stop everything else until it has taken what is queued.
            ctx.wait(Flush);
        } else if !self.flushing {
            self.flushing = true;
            ctx.spawn(Flush);
        }
    }

    fn check_idle(&mut self, ctx: &mut Context<Self>, idle_timeout: Duration) {
        if self.activity != self.idle_since.0 {
            self.idle_since = (self.activity, Instant::now());
            return;
        }
        if self.idle_since.1.elapsed() >= idle_timeout && self.in_flight == 0 {
            info!(parent: &self.span, idle = ?idle_timeout, "closing idle connection");
            ctx.stop();
        }
    }
}

/// A request being handed to the actor that answers it (see [`dispatch`]).
struct Answering<'a> {
    conn: &'a mut Connection,
    ctx: &'a mut Context<Connection>,
    reply_to: ReplyTo,
    request: &'a RemotingCommand,
}

impl Responder for Answering<'_> {
    fn answer(&mut self, response: RemotingCommand) {
        debug!(parent: &self.conn.span, remark = ?response.remark, "answered without an actor");
        self.conn.reply(self.reply_to, response, self.ctx);
    }

    fn answer_later<F, R>(&mut self, reply: F)
    where
        F: Future<Output = Result<R, MailboxError>> + 'static,
        R: IntoResponse + 'static,
    {
        self.conn.forward(reply, self.reply_to, self.ctx);
    }

    fn register_broker(&mut self) {
        self.conn
            .register_broker(self.request.clone(), self.reply_to, self.ctx);
    }

    fn route_cache(&self) -> Option<&WorkerCache> {
        self.conn.route_cache.as_ref()
    }
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        debug!(parent: &self.span, "connection opened");
        self.services.opened.do_send(ConnectionOpened {
            conn: self.id,
            peer: self.peer,
            tls: self.tls,
            close: ctx.address().recipient(),
            drain: ctx.address().recipient(),
        });
        if let Some(idle_timeout) = self.settings.idle_timeout() {
            let period = (idle_timeout / 4).max(Duration::from_millis(100));
            ctx.run_interval(period, move |act, ctx| act.check_idle(ctx, idle_timeout));
        }
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        debug!(parent: &self.span, peer = %self.peer, "connection closed");
        self.tell_closed();
    }
}

impl Connection {
    /// Frees the connection's slot and has its broker unregistered, once.
    fn tell_closed(&mut self) {
        if std::mem::replace(&mut self.closed_told, true) {
            return;
        }
        self.services
            .closed
            .do_send(ConnectionClosed { conn: self.id });
        self.listener.do_send(ConnectionClosed { conn: self.id });
    }
}

impl Drop for Connection {
    /// A connection whose task died without stopping (a panic in its handling) is still
    /// closed for everyone else: its socket goes with it, and its slot and broker are freed.
    fn drop(&mut self) {
        if !self.closed_told {
            error!(parent: &self.span, "connection ended abnormally (a panic); closed");
            self.tell_closed();
        }
    }
}

impl StreamHandler<Result<RemotingCommand, FrameError>> for Connection {
    fn handle(&mut self, item: Result<RemotingCommand, FrameError>, ctx: &mut Context<Self>) {
        self.activity = self.activity.wrapping_add(1);
        match item {
            Ok(cmd) => self.on_request(cmd, ctx),
            Err(FrameError::Io(err)) => {
                debug!(parent: &self.span, error = %err, "read failed, closing");
                ctx.stop();
            }
            Err(err) => {
                warn!(parent: &self.span, error = %err, "bad frame, closing connection");
                ctx.stop();
            }
        }
    }
}

/// Bytes queued for a peer beyond which its connection waits for the socket before anything else.
const OUTBOX_HIGH_WATER: usize = 4 * 1024 * 1024;

/// Writes the outbox with vectored writes until it is empty, as an actor future: it runs inside
/// the connection actor, with direct access to its socket and outbox.
struct Flush;

impl ActorFuture<Connection> for Flush {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut Connection,
        ctx: &mut Context<Connection>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<()> {
        let Connection { write, outbox, .. } = act;
        loop {
            while !outbox.is_empty() {
                let mut slices = [IoSlice::new(&[]); MAX_SLICES];
                let n = outbox.slices(&mut slices);
                match Pin::new(&mut *write).poll_write_vectored(task, &slices[..n]) {
                    Poll::Ready(Ok(0)) => {
                        debug!(parent: &act.span, "peer stopped reading, closing");
                        return act.abandon(ctx);
                    }
                    Poll::Ready(Ok(written)) => outbox.consume(written),
                    Poll::Ready(Err(err)) => {
                        debug!(parent: &act.span, error = %err, "write failed, closing");
                        return act.abandon(ctx);
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            // A TLS stream may still hold records; a TCP stream answers at once.
            match Pin::new(&mut *write).poll_flush(task) {
                Poll::Ready(Ok(())) if outbox.is_empty() => break,
                Poll::Ready(Ok(())) => continue,
                Poll::Ready(Err(err)) => {
                    debug!(parent: &act.span, error = %err, "flush failed, closing");
                    return act.abandon(ctx);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        act.flushing = false;
        Poll::Ready(())
    }
}

impl Connection {
    /// Gives up writing: drops what is queued and stops.
    fn abandon(&mut self, ctx: &mut Context<Self>) -> Poll<()> {
        self.outbox.clear();
        self.flushing = false;
        ctx.stop();
        Poll::Ready(())
    }
}

/// Clients of versions above this (Java: `MQVersion.Version.V5_3_1`) understand GO_AWAY.
const GO_AWAY_AFTER_VERSION: i32 = 475;

impl Handler<Drain> for Connection {
    type Result = ();

    fn handle(&mut self, _: Drain, _: &mut Context<Self>) {
        debug!(parent: &self.span, "draining");
        self.going_away = true;
    }
}

impl Handler<CloseConnection> for Connection {
    type Result = ();

    fn handle(&mut self, msg: CloseConnection, ctx: &mut Context<Self>) {
        info!(parent: &self.span, reason = msg.reason, "closing connection");
        // Write what is queued first (a peer that does not read gets a second), then stop.
        ctx.wait(Flush.map(|(), _, ctx: &mut Context<Self>| ctx.stop()));
        ctx.run_later(Duration::from_secs(1), |_, ctx| ctx.stop());
    }
}
