//! Connection: one actor per TCP (or TLS) connection. Frames in, typed messages out to the
//! actor that owns the state, responses back with the request's opaque.

use std::cell::RefCell;
use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use actix::prelude::*;
use bytes::BytesMut;
use rmq_protocol::{FrameError, LanguageCode, RemotingCodec, RemotingCommand, RequestCode};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;
use tokio_util::codec::Decoder;
use tracing::{debug, error, info, info_span, warn, Span};

use crate::access::audit::AuditDraft;
use crate::codes::{Asking, Class, Outcome};
use crate::dispatch;
use crate::limits::{Limit, Refused};
use crate::messages::{CloseConnection, ConnectionClosed, ConnectionOpened, WentAway};
use crate::outbox::{Outbox, MAX_SLICES};
use crate::registration::{self, BodyMemos, RegistrationError};
use crate::response::{go_away, not_supported, overloaded, system_error, IntoResponse};
use crate::route::ConnId;
use crate::route_cache::WorkerCache;
use crate::worker::WorkerShare;

pub use rmq_transport::front_door::{BoxedRead, BoxedWrite, Security};

mod io;
mod policy;

use io::{Flush, ReadFrames};

/// Where and how to send the answer to one request.
#[derive(Debug, Clone, Copy)]
struct ReplyTo {
    opaque: i32,
    oneway: bool,
    serialize_type: rmq_protocol::SerializeType,
    /// The request's code and when its frame was read, for the metrics.
    code: i32,
    read_at: Instant,
    /// Answered while its frame is being handled (not by an actor): its latency is taken once
    /// for the whole batch of frames read together (crate::metrics).
    at_once: bool,
    /// The slot of its audit draft in [`Connection::audits`], when it is audited.
    audit: Option<u32>,
}

/// One connection. See the module docs.
///
/// Memory: an idle connection holds no buffer. Bytes are read into the thread's scratch buffer
/// and copied into a buffer of exactly their size, which the frames decoded from them own; a
/// frame that spans reads grows a buffer of its own, given back once it is decoded and nothing
/// more is there to read; the write buffer is given back once everything is written
/// (docs/limits.md#memory-per-connection).
pub struct Connection {
    id: ConnId,
    /// The client: the address of its PROXY header, or the socket's peer.
    peer: SocketAddr,
    /// TLS, and a verified client certificate.
    security: Security,
    /// The services, settings and bounds of this thread's connections.
    share: Rc<WorkerShare>,
    /// This thread's route cache of the server (absent only off the worker threads).
    route_cache: Option<WorkerCache>,
    read: BoxedRead,
    codec: RemotingCodec,
    /// Bytes read and not yet decoded: the start of a frame, or nothing.
    inbox: BytesMut,
    /// When the frame at the start of `inbox` was found incomplete (slowloris check).
    partial_since: Option<Instant>,
    /// When the bytes being decoded were read (request latency starts there).
    read_at: Instant,
    /// The peer closed its side (EOF): answer what was asked, then close.
    read_closed: bool,
    write: BoxedWrite,
    outbox: Outbox,
    /// The part of the outbox charged to the thread's outbound budget.
    charged: usize,
    /// Bytes written so far.
    written: u64,
    /// The reading, when it paused (see [`Connection::read_paused`]).
    read_waker: Option<std::task::Waker>,
    /// Since when nothing has been written while answers wait (`written` then): the write
    /// timeout counts from it.
    stall: Option<(u64, Instant)>,
    /// The registration bodies decoded on this connection (a broker's own connection); behind
    /// a pointer, as most connections are clients' and never have one.
    bodies: Option<Arc<BodyMemos>>,
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
    /// Audit drafts of requests not answered yet, by slot (crate::access::audit); a handful at
    /// most, as only admin writes and registrations are audited.
    audits: Vec<(u32, AuditDraft)>,
    next_audit: u32,
    /// The server is draining and this connection was open when it began: 5.x clients get
    /// GO_AWAY.
    going_away: bool,
    span: Span,
}

impl Connection {
    /// Starts a connection actor on the current arbiter over the two halves of a stream, from
    /// `peer` (with `security` saying whether the stream is TLS, with a client certificate).
    pub fn start(
        id: ConnId,
        peer: SocketAddr,
        security: Security,
        (read, write): (BoxedRead, BoxedWrite),
        share: Rc<WorkerShare>,
    ) -> Addr<Self> {
        Connection::create(move |ctx| {
            ctx.spawn(ReadFrames);
            let tls = security.tls;
            Connection {
                id,
                peer,
                security,
                // Cluster-test mode looks routes up elsewhere too: nothing is cached.
                route_cache: share
                    .services
                    .namesrv
                    .as_ref()
                    .is_some_and(|namesrv| namesrv.product_env.is_none())
                    .then(|| WorkerCache::of_this_thread(share.services.route_cache))
                    .flatten(),
                codec: RemotingCodec::new(share.settings.max_frame_bytes),
                share,
                read,
                inbox: BytesMut::new(),
                partial_since: None,
                read_at: Instant::now(),
                read_closed: false,
                write,
                outbox: Outbox::default(),
                charged: 0,
                written: 0,
                read_waker: None,
                stall: None,
                bodies: None,
                flushing: false,
                in_flight: 0,
                activity: 0,
                idle_since: (0, Instant::now()),
                closed_told: false,
                audits: Vec::new(),
                next_audit: 0,
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
            if let Some(went_away) = &self.share.services.went_away {
                went_away.do_send(WentAway);
            }
            if !cmd.is_oneway() {
                let reply_to = ReplyTo {
                    opaque: cmd.opaque,
                    oneway: false,
                    serialize_type: cmd.serialize_type,
                    code: cmd.code,
                    read_at: self.read_at,
                    at_once: true,
                    audit: None,
                };
                drop(_entered);
                self.reply(reply_to, go_away(), ctx);
            }
            return;
        }
        let mut reply_to = ReplyTo {
            opaque: cmd.opaque,
            oneway: cmd.is_oneway(),
            serialize_type: cmd.serialize_type,
            code: cmd.code,
            read_at: self.read_at,
            at_once: true,
            audit: None,
        };
        drop(_entered);
        let answer = self.answer(&cmd, &mut reply_to);
        match answer {
            Outcome::Now(response) => self.reply(reply_to, response, ctx),
            Outcome::Later(reply) => self.forward(reply, reply_to, ctx),
            Outcome::Register => self.register_broker(cmd, reply_to, ctx),
        }
    }

    /// One request, in the order it is handled: its row, access control, the route cache,
    /// admission, then the actor that answers it.
    fn answer(&mut self, cmd: &RemotingCommand, reply_to: &mut ReplyTo) -> Outcome {
        let Some(row) = dispatch::lookup(self.share.services.port, cmd.request_code()) else {
            return Outcome::Now(not_supported(cmd.code));
        };
        let services = &self.share.services;
        if !services.access.policies.all_open() || row.audit.audited() {
            if let Err(refused) = self.authorize(row, cmd, reply_to) {
                return refused;
            }
        }
        if row.code == RequestCode::GET_ROUTEINFO_BY_TOPIC {
            if let Some(asked) = self.route_cache.as_ref().and_then(|c| c.answer(cmd)) {
                self.share.count(|m| match asked {
                    Some(_) => m.route_cache_hit(),
                    None => m.route_cache_miss(),
                });
                if let Some(body) = asked {
                    return Outcome::Now(RemotingCommand::success().with_body(body));
                }
            }
        }
        if let Some(class) = row.admission {
            if let Err(busy) = self.admit(class) {
                return Outcome::Now(busy);
            }
        }
        let share = Rc::clone(&self.share);
        let asking = Asking {
            services: &share.services,
            conn: self.id,
            route_cache: self.route_cache.as_ref(),
        };
        (row.answer)(cmd, &asking)
    }

    /// Whether a request of `class` may wait for an actor now; if not, it is counted and the
    /// answer is SYSTEM_BUSY "[OVERLOAD]".
    fn admit(&mut self, class: Class) -> Result<(), RemotingCommand> {
        if self.share.bounds.admits(class, self.in_flight) {
            return Ok(());
        }
        let limit = match class {
            Class::Read => Limit::OverloadReads,
            Class::Write => Limit::OverloadWrites,
        };
        self.refused(
            limit,
            format!("{} request shed: too many requests waiting", class.name()),
        );
        Err(overloaded(format_args!(
            "too many {} requests waiting (server.{limit})",
            class.name()
        )))
    }

    /// Counts (and maybe logs, rate-limited per source) something a limit refused.
    fn refused(&self, limit: Limit, detail: String) {
        self.share.services.limits.do_send(Refused {
            limit,
            source: Some(self.peer.ip()),
            detail,
        });
    }

    /// REGISTER_BROKER through `crate::registration`, with this connection's memory of the body
    /// it registered last.
    fn register_broker(
        &mut self,
        cmd: RemotingCommand,
        reply_to: ReplyTo,
        ctx: &mut Context<Self>,
    ) {
        let Some(namesrv) = &self.share.services.namesrv else {
            let answer = crate::response::system_error("no NameServer on this port");
            self.reply(reply_to, answer, ctx);
            return;
        };
        let registered = registration::register(
            registration::Registrar {
                routes: namesrv.routes.clone(),
                limits: self.share.services.limits.clone(),
                max_inflated_body: self.share.settings.max_inflated_body_bytes,
                peer: self.peer,
            },
            cmd,
            self.id,
            self.bodies.clone(),
        );
        self.waiting_started();
        let fut = registered.into_actor(self).map(
            move |result: Result<_, RegistrationError>, act, ctx| {
                let response = match result {
                    Ok((reply, memo)) => {
                        let bodies = act.bodies.get_or_insert_with(Default::default);
                        Arc::make_mut(bodies).keep(memo);
                        if !reply.routes_changed {
                            // An unchanged refresh is not audited.
                            act.take_audit(reply_to.audit);
                        }
                        reply.into_response()
                    }
                    Err(err) => {
                        let _entered = act.span.enter();
                        err.into_response()
                    }
                };
                act.answer_waited(reply_to, response, ctx);
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
        self.waiting_started();
        let fut = reply.into_actor(self).map(move |result, act, ctx| {
            let response = match result {
                Ok(reply) => reply.into_response(),
                Err(err) => {
                    warn!(parent: &act.span, error = %err, "actor unavailable");
                    system_error(format!("name server busy or restarting: {err}"))
                }
            };
            act.answer_waited(reply_to, response, ctx);
        });
        self.spawn_or_wait(fut, ctx);
    }

    /// A request starts waiting for an actor: it holds an in-flight place and counts as pending
    /// on the thread until [`Connection::answer_waited`].
    fn waiting_started(&mut self) {
        self.in_flight += 1;
        self.share.bounds.pending_started();
    }

    /// The answer of a request that waited for an actor: its places are given back (reading
    /// resumes if it paused for them), the answer is written, timed from its read.
    fn answer_waited(
        &mut self,
        reply_to: ReplyTo,
        response: RemotingCommand,
        ctx: &mut Context<Self>,
    ) {
        self.in_flight -= 1;
        self.maybe_resume();
        self.share.bounds.pending_done();
        let reply_to = ReplyTo {
            at_once: false,
            ..reply_to
        };
        self.reply(reply_to, response, ctx);
        self.finish_if_done(ctx);
    }

    /// Runs a request's future. Beyond `max_in_flight` outstanding ones, reading pauses (see
    /// [`Connection::read_paused`]); the others keep running, so their answers reach the outbox,
    /// where its bounds apply, instead of waiting in reply channels.
    fn spawn_or_wait(
        &mut self,
        fut: impl ActorFuture<Self, Output = ()> + 'static,
        ctx: &mut Context<Self>,
    ) {
        ctx.spawn(fut);
    }

    /// Times the requests answered at once since the last read (one clock read for them all).
    fn settle_metrics(&self) {
        self.share.count(|m| m.settle());
    }

    /// Whether the connection reads no more for now: too many requests in flight, or too many
    /// bytes queued for a peer that reads slowly.
    fn read_paused(&self) -> bool {
        self.in_flight >= self.share.settings.max_in_flight
            || self.outbox.queued() > OUTBOX_HIGH_WATER
    }

    /// Wakes the reading if it paused and may go on.
    fn maybe_resume(&mut self) {
        if self.read_waker.is_some() && !self.read_paused() {
            if let Some(waker) = self.read_waker.take() {
                waker.wake();
            }
        }
    }

    fn reply(&mut self, reply_to: ReplyTo, mut response: RemotingCommand, ctx: &mut Context<Self>) {
        if let Some(draft) = self.take_audit(reply_to.audit) {
            self.share.services.audit.do_send(draft.finish(&response));
        }
        let answered = (!reply_to.oneway).then_some(response.code);
        self.share.count(|m| {
            if reply_to.at_once {
                m.answered_at_once(reply_to.code, answered, reply_to.read_at);
            } else {
                m.request(reply_to.code, answered, reply_to.read_at.elapsed());
            }
        });
        if reply_to.oneway {
            return;
        }
        response.opaque = reply_to.opaque;
        response.flag = rmq_protocol::command::FLAG_RESPONSE;
        response.version = self.share.settings.advertised_version;
        response.language = LanguageCode::Java;
        response.serialize_type = self
            .share
            .settings
            .response_serialize
            .for_request(reply_to.serialize_type);
        self.activity = self.activity.wrapping_add(1);
        if let Some(remark) = &mut response.remark {
            clip_remark(remark);
        }
        let queued_before = self.outbox.queued();
        if let Err(err) = self.outbox.push(&response) {
            // An answer too large for a frame (a header past 16 MiB): say so instead.
            warn!(parent: &self.span, error = %err, "cannot encode a response; answering the error");
            let mut error = system_error(format!("the answer cannot be encoded: {err}"));
            error.opaque = response.opaque;
            error.flag = response.flag;
            error.version = response.version;
            error.serialize_type = response.serialize_type;
            if self.outbox.push(&error).is_err() {
                ctx.stop();
                return;
            }
        }
        self.charge();
        let queued = self.outbox.queued();
        let over_budget = queued > OUTBOX_ALLOWANCE && self.share.bounds.over_queued_budget();
        // One answer may be larger than OUTBOX_MAX on its own (a list of a million topics):
        // only a peer that left earlier answers unread is behind.
        let behind = queued > OUTBOX_MAX && queued_before > 0;
        if behind || over_budget {
            // A peer this far behind (or behind while the server's outbound budget is used up)
            // is not reading: close it and release what it holds.
            self.refused(
                Limit::QueuedBytes,
                format!(
                    "{queued} bytes queued for a peer that does not take them{}; closing",
                    if over_budget {
                        " while the outbound budget is used up"
                    } else {
                        ""
                    }
                ),
            );
            let _ = self.abandon(ctx);
            return;
        }
        // Past OUTBOX_HIGH_WATER reading pauses until the peer has taken what is queued.
        if !self.flushing {
            self.flushing = true;
            ctx.spawn(Flush::new());
        }
    }

    /// Charges what the outbox holds beyond the allowance to the thread's outbound budget.
    fn charge(&mut self) {
        let charged = self.outbox.queued().saturating_sub(OUTBOX_ALLOWANCE);
        if charged != self.charged {
            self.share.bounds.queued_changed(self.charged, charged);
            self.charged = charged;
        }
    }

    /// The peer closed its side and every answer is queued: write them, then close.
    fn finish_if_done(&mut self, ctx: &mut Context<Self>) {
        if self.read_closed && self.in_flight == 0 {
            ctx.wait(Flush::new().map(|(), _, ctx: &mut Context<Self>| ctx.stop()));
        }
    }

    /// The periodic check: idle timeout, frame timeout, and buffers given back when quiet.
    fn tick(&mut self, ctx: &mut Context<Self>) {
        let settings = &self.share.settings;
        if let (Some(timeout), Some(since)) = (settings.frame_timeout(), self.partial_since) {
            if since.elapsed() >= timeout {
                self.refused(
                    Limit::FrameTimeout,
                    format!(
                        "frame begun and not completed within {timeout:?} ({} bytes of it); closing",
                        self.inbox.len()
                    ),
                );
                ctx.stop();
                return;
            }
        }
        if self.activity != self.idle_since.0 {
            self.idle_since = (self.activity, Instant::now());
            return;
        }
        // Quiet since the last tick: give the buffers back.
        if self.inbox.is_empty() && self.inbox.capacity() > 0 {
            self.inbox = BytesMut::new();
        }
        self.outbox.release();
        if let Some(idle_timeout) = settings.idle_timeout() {
            if self.idle_since.1.elapsed() >= idle_timeout && self.in_flight == 0 {
                info!(parent: &self.span, idle = ?idle_timeout, "closing idle connection");
                ctx.stop();
            }
        }
    }

    /// Reads more bytes into the inbox. Without a buffer (idle), reads into the thread's
    /// scratch buffer first and takes a buffer only for what arrived.
    fn poll_fill(&mut self, task: &mut std::task::Context<'_>) -> Poll<std::io::Result<usize>> {
        if self.inbox.capacity() - self.inbox.len() >= MIN_READ {
            return tokio_util::io::poll_read_buf(Pin::new(&mut self.read), task, &mut self.inbox);
        }
        if !self.inbox.is_empty() {
            self.inbox.reserve(READ_BUFFER);
            return tokio_util::io::poll_read_buf(Pin::new(&mut self.read), task, &mut self.inbox);
        }
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let mut buf = ReadBuf::new(&mut scratch[..]);
            match Pin::new(&mut self.read).poll_read(task, &mut buf) {
                Poll::Ready(Ok(())) => {
                    let filled = buf.filled();
                    // Exactly what arrived: the frames decoded from it own it, and it is freed
                    // with them.
                    self.inbox.extend_from_slice(filled);
                    Poll::Ready(Ok(filled.len()))
                }
                Poll::Ready(Err(err)) => Poll::Ready(Err(err)),
                Poll::Pending => Poll::Pending,
            }
        })
    }

    /// One decoded frame (or the error that ends the connection).
    fn on_frame(&mut self, item: Result<RemotingCommand, FrameError>, ctx: &mut Context<Self>) {
        self.activity = self.activity.wrapping_add(1);
        match item {
            Ok(cmd) => self.on_request(cmd, ctx),
            Err(FrameError::Io(err)) => {
                debug!(parent: &self.span, error = %err, "read failed, closing");
                ctx.stop();
            }
            Err(err) => {
                self.share.count(|m| m.frame_error(&err));
                self.refused(
                    Limit::BadInput,
                    format!("bad frame, closing connection: {err}"),
                );
                ctx.stop();
            }
        }
    }

    /// The peer closed its side.
    fn read_ended(&mut self, ctx: &mut Context<Self>) {
        if !self.inbox.is_empty() {
            debug!(parent: &self.span, bytes = self.inbox.len(), "peer closed in the middle of a frame, closing");
            ctx.stop();
            return;
        }
        debug!(parent: &self.span, in_flight = self.in_flight, "peer closed its side; answering what it asked, then closing");
        self.read_closed = true;
        self.finish_if_done(ctx);
    }
}

/// Bytes read at once into a connection buffer.
const READ_BUFFER: usize = 8 * 1024;

/// Room below which a buffer is grown before reading into it.
const MIN_READ: usize = 1024;

thread_local! {
    /// What idle connections read into: one buffer per thread instead of one per connection.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; 64 * 1024].into_boxed_slice());
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        debug!(parent: &self.span, "connection opened");
        self.share.count(|m| m.connection_opened());
        self.share.services.opened.do_send(ConnectionOpened {
            conn: self.id,
            peer: self.peer,
            tls: self.security.tls,
            close: ctx.address().recipient(),
        });
        let settings = &self.share.settings;
        let period = [
            settings.idle_timeout(),
            settings.frame_timeout(),
            Some(TICK * 4),
        ]
        .into_iter()
        .flatten()
        .min()
        .map_or(TICK, |shortest| {
            (shortest / 4).clamp(Duration::from_millis(100), TICK)
        });
        ctx.run_interval(period, |act, ctx| act.tick(ctx));
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
        self.share.count(|m| m.connection_closed());
        // Its queued bytes and pending requests no longer count against the thread's bounds.
        self.outbox.clear();
        self.charge();
        for _ in 0..self.in_flight {
            self.share.bounds.pending_done();
        }
        self.share
            .services
            .closed
            .do_send(ConnectionClosed { conn: self.id });
        self.share
            .listener
            .do_send(ConnectionClosed { conn: self.id });
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

/// The period of a connection's check (idle, frame and write timeouts, buffers given back),
/// shorter when a timeout is shorter.
const TICK: Duration = Duration::from_secs(5);

/// Bytes queued for a peer beyond which its connection waits for the socket before anything else.
const OUTBOX_HIGH_WATER: usize = 4 * 1024 * 1024;

/// Bytes a connection may queue without charging the outbound budget (`server.max_queued_bytes`).
pub const OUTBOX_ALLOWANCE: usize = 256 * 1024;

/// Bytes queued for one peer beyond which it is closed: it stopped reading long ago (reading
/// stops at [`OUTBOX_HIGH_WATER`]; only answers already being computed arrive after that).
const OUTBOX_MAX: usize = 4 * OUTBOX_HIGH_WATER;

/// Longest remark sent: error texts that quote input are clipped to this, with their length.
const MAX_REMARK_BYTES: usize = 16 * 1024;

fn clip_remark(remark: &mut String) {
    if remark.len() <= MAX_REMARK_BYTES {
        return;
    }
    let len = remark.len();
    let mut end = MAX_REMARK_BYTES;
    while !remark.is_char_boundary(end) {
        end -= 1;
    }
    remark.truncate(end);
    remark.push_str(&format!("... ({len} bytes)"));
}

/// Clients of versions above this (Java: `MQVersion.Version.V5_3_1`) understand GO_AWAY.
const GO_AWAY_AFTER_VERSION: i32 = 475;

impl Handler<CloseConnection> for Connection {
    type Result = ();

    fn handle(&mut self, msg: CloseConnection, ctx: &mut Context<Self>) {
        let reason = match msg {
            CloseConnection::Drain => {
                debug!(parent: &self.span, "draining");
                self.going_away = true;
                return;
            }
            CloseConnection::Close { reason } => reason,
        };
        info!(parent: &self.span, reason, "closing connection");
        // Write what is queued first (a peer that does not read gets a second), then stop.
        ctx.wait(Flush::new().map(|(), _, ctx: &mut Context<Self>| ctx.stop()));
        ctx.run_later(Duration::from_secs(1), |_, ctx| ctx.stop());
    }
}
