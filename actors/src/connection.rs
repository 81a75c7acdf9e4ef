//! Connection: one actor per TCP (or TLS) connection. Frames in, typed messages out to the
//! actor that owns the state, responses back with the request's opaque.

use std::future::Future;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_protocol::body::TopicConfigWrapper;
use rmq_protocol::{FrameError, LanguageCode, RemotingCodec, RemotingCommand};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;
use tracing::{debug, info, info_span, warn, Span};

use crate::dispatch::{decode_registration, dispatch, BodyMemo, Request};
use crate::housekeeping::Housekeeping;
use crate::kv::KvStore;
use crate::messages::{
    CloseConnection, ConnectionClosed, ConnectionOpened, GetNamesrvConfig, GetRouteInfo,
    LookupProductEnvRoute, RegisterBroker, RegisterBrokerReply, RouteBody, RouteError,
    UpdateNamesrvConfig,
};
use crate::outbox::{Outbox, MAX_SLICES};
use crate::registry::RouteRegistry;
use crate::response::{system_error, IntoResponse};
use crate::route::{ConnId, RegisterOutcome, TopicsPayload};
use crate::settings::{ConnectionSettings, ResponseSerialize};

/// The read half of a connection's stream.
pub type BoxedRead = Box<dyn AsyncRead + Unpin>;
/// The write half of a connection's stream.
pub type BoxedWrite = Box<dyn AsyncWrite + Unpin>;

/// The actors that answer requests, shared by all connections.
#[derive(Clone)]
pub struct Services {
    pub routes: Addr<RouteRegistry>,
    pub kv: Addr<KvStore>,
    /// GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG go to the runtime-config owner.
    pub config_reader: Recipient<GetNamesrvConfig>,
    pub config_writer: Recipient<UpdateNamesrvConfig>,
    /// Cluster-test mode: where route misses are looked up.
    pub product_env: Option<Recipient<LookupProductEnvRoute>>,
    pub housekeeping: Addr<Housekeeping>,
}

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
    peer: SocketAddr,
    peers: Services,
    /// Told when the connection stops, to free its slot.
    listener: Recipient<ConnectionClosed>,
    settings: Rc<ConnectionSettings>,
    write: BoxedWrite,
    outbox: Outbox,
    /// The last registration body decoded on this connection (a broker's own connection).
    last_body: Option<BodyMemo>,
    /// A `Flush` is running.
    flushing: bool,
    in_flight: usize,
    last_activity: Instant,
    span: Span,
}

impl Connection {
    /// Starts a connection actor on the current arbiter over the two halves of a stream.
    pub fn start(
        id: ConnId,
        peer: SocketAddr,
        read: BoxedRead,
        write: BoxedWrite,
        peers: Services,
        listener: Recipient<ConnectionClosed>,
        settings: Rc<ConnectionSettings>,
    ) -> Addr<Self> {
        Connection::create(move |ctx| {
            let codec = RemotingCodec::new(settings.max_frame);
            ctx.add_stream(FramedRead::new(read, codec));
            Connection {
                id,
                peer,
                peers,
                listener,
                settings,
                write,
                outbox: Outbox::new(),
                last_body: None,
                flushing: false,
                in_flight: 0,
                last_activity: Instant::now(),
                span: info_span!("conn", conn = %id, peer = %peer),
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
        let reply_to = ReplyTo {
            opaque: cmd.opaque,
            oneway: cmd.is_oneway(),
            serialize_type: cmd.serialize_type,
        };
        drop(_entered);
        let decoded = dispatch(&cmd);
        self.dispatched(decoded, reply_to, ctx);
    }

    /// REGISTER_BROKER: decoded off the event loop when large, and not decoded at all when the
    /// body is byte-identical to this connection's previous one (the registry then takes the
    /// remembered summary, or asks for the table, and the body is decoded after all).
    fn register_broker(
        &mut self,
        cmd: RemotingCommand,
        reply_to: ReplyTo,
        ctx: &mut Context<Self>,
    ) {
        let routes = self.peers.routes.clone();
        let settings = ConnectionSettings::clone(&self.settings);
        let conn = self.id;
        let previous = self.last_body.clone();
        let registered = async move {
            let mut previous = previous;
            // At most two rounds: the second always carries the decoded table.
            for _ in 0..2 {
                let (msg, memo) =
                    match decode_off_loop(cmd.clone(), conn, settings.clone(), previous.take())
                        .await
                    {
                        Ok(decoded) => decoded,
                        Err(response) => return Ok((Err(response), None)),
                    };
                // The registry drops its reference before answering; ours is then the last, and a
                // large table is freed off the event loop.
                let table = match &msg.registration.topics {
                    TopicsPayload::Full(table) => Some(Arc::clone(&table.wrapper)),
                    TopicsPayload::Same(_) => None,
                };
                let reply = routes.send(msg).await?;
                if let Some(table) = table {
                    release(table);
                }
                if reply.outcome != RegisterOutcome::NeedTopics {
                    return Ok((Ok(reply), Some(memo)));
                }
            }
            Ok((Err(system_error("registration could not be applied")), None))
        };
        self.in_flight += 1;
        let fut = registered
            .into_actor(self)
            .map(move |result: RegistrationResult, act, ctx| {
                act.in_flight -= 1;
                let response = match result {
                    Ok((reply, memo)) => {
                        if memo.is_some() {
                            act.last_body = memo;
                        }
                        reply.into_response()
                    }
                    Err(err) => {
                        warn!(parent: &act.span, error = %err, "route registry unavailable");
                        system_error(format!("name server busy or restarting: {err}"))
                    }
                };
                act.reply(reply_to, response, ctx);
            });
        self.spawn_or_wait(fut, ctx);
    }

    /// Sends a decoded request to the actor that answers it, or answers a request that could
    /// not be decoded.
    fn dispatched(
        &mut self,
        decoded: Result<Request, RemotingCommand>,
        reply_to: ReplyTo,
        ctx: &mut Context<Self>,
    ) {
        let request = match decoded {
            Ok(request) => request,
            Err(response) => {
                debug!(parent: &self.span, remark = ?response.remark, "answered without dispatch");
                self.reply(reply_to, response, ctx);
                return;
            }
        };
        let p = &self.peers;
        match request {
            Request::RegisterBroker(cmd) => self.register_broker(cmd, reply_to, ctx),
            Request::UnregisterBroker(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::BrokerHeartbeat(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::QueryDataVersion(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::GetRouteInfo(m) => match p.product_env.clone() {
                Some(product_env) => self.forward(
                    route_with_fallback(p.routes.clone(), product_env, m),
                    reply_to,
                    ctx,
                ),
                None => self.forward(p.routes.send(m), reply_to, ctx),
            },
            Request::GetClusterInfo(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::GetBrokerMemberGroup(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::WipeWritePerm(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::AddWritePerm(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::GetTopicList(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::DeleteTopic(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::RegisterTopic(m) => self.forward(p.routes.send(m), reply_to, ctx),
            Request::PutKvConfig(m) => self.forward(p.kv.send(m), reply_to, ctx),
            Request::GetKvConfig(m) => self.forward(p.kv.send(m), reply_to, ctx),
            Request::DeleteKvConfig(m) => self.forward(p.kv.send(m), reply_to, ctx),
            Request::GetKvList(m) => self.forward(p.kv.send(m), reply_to, ctx),
            Request::UpdateNamesrvConfig(m) => self.forward(p.config_writer.send(m), reply_to, ctx),
            Request::GetNamesrvConfig(m) => self.forward(p.config_reader.send(m), reply_to, ctx),
        }
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
        response.serialize_type = match self.settings.response_serialize {
            ResponseSerialize::Mirror => reply_to.serialize_type,
            ResponseSerialize::Fixed(serialize_type) => serialize_type,
        };
        self.last_activity = Instant::now();
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
        if self.last_activity.elapsed() >= idle_timeout && self.in_flight == 0 {
            info!(parent: &self.span, idle = ?idle_timeout, "closing idle connection");
            ctx.stop();
        }
    }
}

/// Registration bodies of at least this size are decoded on the blocking pool.
const OFFLOAD_BODY_BYTES: usize = 64 * 1024;

/// What a registration round trip ends with: the registry's answer (or an error answer) and what
/// to remember of the body.
type RegistrationResult = Result<
    (
        Result<RegisterBrokerReply, RemotingCommand>,
        Option<BodyMemo>,
    ),
    MailboxError,
>;

/// Decodes a registration, on the blocking pool when its body is large.
async fn decode_off_loop(
    cmd: RemotingCommand,
    conn: ConnId,
    settings: ConnectionSettings,
    previous: Option<BodyMemo>,
) -> Result<(RegisterBroker, BodyMemo), RemotingCommand> {
    if cmd.body_bytes().len() < OFFLOAD_BODY_BYTES {
        return decode_registration(&cmd, conn, &settings, previous.as_ref());
    }
    let job = crate::background::spawn(move || {
        decode_registration(&cmd, conn, &settings, previous.as_ref())
    });
    match job.await {
        Ok(decoded) => decoded,
        Err(err) => Err(system_error(format!("decoding failed: {err}"))),
    }
}

/// Drops a registration's topic table; a large one on the blocking pool.
fn release(topics: Arc<TopicConfigWrapper>) {
    if topics.topic_config_table.len() >= 1024 {
        drop(crate::background::spawn(move || drop(topics)));
    }
}

/// Cluster-test mode: a local route miss is looked up on the product environment's NameServer
/// and answered in legacy JSON, as Java 4.x's `ClusterTestRequestProcessor` does.
async fn route_with_fallback(
    routes: Addr<RouteRegistry>,
    product_env: Recipient<LookupProductEnvRoute>,
    msg: GetRouteInfo,
) -> Result<Result<RouteBody, RouteError>, MailboxError> {
    let local = routes.send(msg).await?;
    let Err(RouteError::TopicNotExist(topic)) = local else {
        return Ok(local);
    };
    let remote = product_env
        .send(LookupProductEnvRoute {
            topic: topic.clone(),
        })
        .await?;
    Ok(match remote {
        Some(route) => Ok(RouteBody(bytes::Bytes::from(rmq_protocol::body::to_json(
            &route,
            rmq_protocol::fastjson::JsonStyle::Legacy,
        )))),
        None => Err(RouteError::TopicNotExist(topic)),
    })
}

impl Actor for Connection {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        debug!(parent: &self.span, "connection opened");
        self.peers.housekeeping.do_send(ConnectionOpened {
            conn: self.id,
            addr: ctx.address(),
        });
        if let Some(idle_timeout) = self.settings.idle_timeout {
            let period = (idle_timeout / 4).max(Duration::from_millis(100));
            ctx.run_interval(period, move |act, ctx| act.check_idle(ctx, idle_timeout));
        }
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        debug!(parent: &self.span, peer = %self.peer, "connection closed");
        self.peers
            .housekeeping
            .do_send(ConnectionClosed { conn: self.id });
        self.listener.do_send(ConnectionClosed { conn: self.id });
    }
}

impl StreamHandler<Result<RemotingCommand, FrameError>> for Connection {
    fn handle(&mut self, item: Result<RemotingCommand, FrameError>, ctx: &mut Context<Self>) {
        self.last_activity = Instant::now();
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
        while !outbox.is_empty() {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let n = outbox.slices(&mut slices);
            match Pin::new(&mut *write).poll_write_vectored(task, &slices[..n]) {
                Poll::Ready(Ok(0)) => {
                    debug!(parent: &act.span, "peer stopped reading, closing");
                    act.outbox.clear();
                    act.flushing = false;
                    ctx.stop();
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(written)) => outbox.consume(written),
                Poll::Ready(Err(err)) => {
                    debug!(parent: &act.span, error = %err, "write failed, closing");
                    act.outbox.clear();
                    act.flushing = false;
                    ctx.stop();
                    return Poll::Ready(());
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        act.flushing = false;
        Poll::Ready(())
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
