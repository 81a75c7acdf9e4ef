//! Connection: one actor per TCP (or TLS) connection. Frames in, typed messages out to the
//! actor that owns the state, responses back with the request's opaque.

use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::dev::ToEnvelope;
use actix::io::{FramedWrite, WriteHandler};
use actix::prelude::*;
use rmq_protocol::{FrameError, LanguageCode, RemotingCodec, RemotingCommand};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::FramedRead;
use tracing::{debug, info, info_span, warn, Span};

use crate::dispatch::{dispatch, Request};
use crate::housekeeping::Housekeeping;
use crate::messages::{CloseConnection, ConnectionClosed, ConnectionOpened};
use crate::registry::RouteRegistry;
use crate::response::{system_error, IntoResponse};
use crate::route::ConnId;
use crate::settings::{ConnectionSettings, ResponseSerialize};

/// The read half of a connection's stream.
pub type BoxedRead = Box<dyn AsyncRead + Unpin>;
/// The write half of a connection's stream.
pub type BoxedWrite = Box<dyn AsyncWrite + Unpin>;

/// The actors a connection talks to.
#[derive(Clone)]
pub struct Peers {
    pub routes: Addr<RouteRegistry>,
    pub housekeeping: Addr<Housekeeping>,
    /// Told when the connection stops, to free its slot.
    pub listener: Recipient<ConnectionClosed>,
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
    peers: Peers,
    settings: Rc<ConnectionSettings>,
    writer: FramedWrite<RemotingCommand, BoxedWrite, RemotingCodec>,
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
        peers: Peers,
        settings: Rc<ConnectionSettings>,
    ) -> Addr<Self> {
        Connection::create(move |ctx| {
            let codec = RemotingCodec::new(settings.max_frame);
            ctx.add_stream(FramedRead::new(read, codec.clone()));
            let mut writer = FramedWrite::new(write, codec, ctx);
            writer.set_buffer_capacity(64 * 1024, 4 * 1024 * 1024);
            Connection {
                id,
                peer,
                peers,
                settings,
                writer,
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
        let request = match dispatch(&cmd, self.id, &self.settings) {
            Ok(request) => request,
            Err(response) => {
                debug!(code = cmd.code, remark = ?response.remark, "answered without dispatch");
                drop(_entered);
                self.reply(reply_to, response);
                return;
            }
        };
        drop(_entered);
        let routes = self.peers.routes.clone();
        match request {
            Request::RegisterBroker(m) => self.forward(&routes, m, reply_to, ctx),
            Request::UnregisterBroker(m) => self.forward(&routes, m, reply_to, ctx),
            Request::BrokerHeartbeat(m) => self.forward(&routes, m, reply_to, ctx),
            Request::QueryDataVersion(m) => self.forward(&routes, m, reply_to, ctx),
            Request::GetRouteInfo(m) => self.forward(&routes, m, reply_to, ctx),
            Request::GetClusterInfo(m) => self.forward(&routes, m, reply_to, ctx),
            Request::GetBrokerMemberGroup(m) => self.forward(&routes, m, reply_to, ctx),
            Request::WipeWritePerm(m) => self.forward(&routes, m, reply_to, ctx),
            Request::AddWritePerm(m) => self.forward(&routes, m, reply_to, ctx),
            Request::GetTopicList(m) => self.forward(&routes, m, reply_to, ctx),
            Request::DeleteTopic(m) => self.forward(&routes, m, reply_to, ctx),
            Request::RegisterTopic(m) => self.forward(&routes, m, reply_to, ctx),
        }
    }

    /// Sends `msg` to the actor that answers it and writes the reply when it comes. Beyond
    /// `max_in_flight` outstanding requests the connection stops reading until this one is done.
    fn forward<A, M>(&mut self, to: &Addr<A>, msg: M, reply_to: ReplyTo, ctx: &mut Context<Self>)
    where
        A: Handler<M>,
        A::Context: ToEnvelope<A, M>,
        M: Message + Send + 'static,
        M::Result: IntoResponse + Send,
    {
        self.in_flight += 1;
        let fut = to.send(msg).into_actor(self).map(move |result, act, _| {
            act.in_flight -= 1;
            let response = match result {
                Ok(reply) => reply.into_response(),
                Err(err) => {
                    warn!(parent: &act.span, error = %err, "actor unavailable");
                    system_error(format!("name server busy or restarting: {err}"))
                }
            };
            act.reply(reply_to, response);
        });
        if self.in_flight >= self.settings.max_in_flight {
            ctx.wait(fut);
        } else {
            ctx.spawn(fut);
        }
    }

    fn reply(&mut self, reply_to: ReplyTo, mut response: RemotingCommand) {
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
        self.writer.write(response);
    }

    fn check_idle(&mut self, ctx: &mut Context<Self>, idle_timeout: Duration) {
        if self.last_activity.elapsed() >= idle_timeout && self.in_flight == 0 {
            info!(parent: &self.span, idle = ?idle_timeout, "closing idle connection");
            ctx.stop();
        }
    }
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
        self.peers
            .listener
            .do_send(ConnectionClosed { conn: self.id });
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

impl WriteHandler<FrameError> for Connection {
    fn error(&mut self, err: FrameError, _: &mut Context<Self>) -> Running {
        debug!(parent: &self.span, error = %err, "write failed, closing");
        Running::Stop
    }
}

impl Handler<CloseConnection> for Connection {
    type Result = ();

    fn handle(&mut self, msg: CloseConnection, ctx: &mut Context<Self>) {
        info!(parent: &self.span, reason = msg.reason, "closing connection");
        // Flush what is written; the writer stops the actor when done, or we do after a second.
        self.writer.close();
        ctx.run_later(Duration::from_secs(1), |_, ctx| ctx.stop());
    }
}
