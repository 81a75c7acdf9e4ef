//! Listener: accepts connections, numbers them, caps how many are open, and starts each one's
//! Connection actor on a worker arbiter (round robin).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context as TaskContext, Poll};

use actix::prelude::*;
use futures_util::Stream;
use tokio::net::{TcpListener, TcpStream};
use tracing::{debug, error, info, warn};

use crate::connection::{BoxedRead, BoxedWrite, Connection, Services};
use crate::messages::{ConnectionClosed, StopAccepting};
use crate::route::ConnId;
use crate::settings::ConnectionSettings;

/// The accepted sockets of a listener, as a stream.
struct Incoming(TcpListener);

impl Stream for Incoming {
    type Item = io::Result<(TcpStream, SocketAddr)>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.0.poll_accept(cx).map(Some)
    }
}

/// Everything a listener needs to start connections.
pub struct ListenerSetup {
    pub listener: TcpListener,
    pub max_connections: usize,
    /// Arbiters that run connection actors; empty means the listener's own.
    pub workers: Vec<ArbiterHandle>,
    pub settings: ConnectionSettings,
    /// The actors connections talk to.
    pub services: Services,
}

/// The listener actor.
pub struct Listener {
    incoming: Option<Incoming>,
    local_addr: Option<SocketAddr>,
    max_connections: usize,
    workers: Vec<ArbiterHandle>,
    next_worker: usize,
    next_id: u64,
    open: usize,
    settings: ConnectionSettings,
    services: Services,
}

impl Listener {
    pub fn new(setup: ListenerSetup) -> Self {
        Self {
            local_addr: setup.listener.local_addr().ok(),
            incoming: Some(Incoming(setup.listener)),
            max_connections: setup.max_connections,
            workers: setup.workers,
            next_worker: 0,
            next_id: 0,
            open: 0,
            settings: setup.settings,
            services: setup.services,
        }
    }

    fn accept(&mut self, stream: TcpStream, peer: SocketAddr, ctx: &mut Context<Self>) {
        if self.open >= self.max_connections {
            warn!(peer = %peer, open = self.open, max = self.max_connections, "connection limit reached, refusing");
            return;
        }
        self.next_id += 1;
        self.open += 1;
        let id = ConnId(self.next_id);
        if let Err(err) = stream.set_nodelay(true) {
            debug!(peer = %peer, error = %err, "cannot set TCP_NODELAY");
        }
        let services = self.services.clone();
        let listener: Recipient<ConnectionClosed> = ctx.address().recipient();
        let settings = self.settings.clone();
        if self.workers.is_empty() {
            start_connection(id, peer, stream, services, listener, settings);
            return;
        }
        let worker = &self.workers[self.next_worker % self.workers.len()];
        self.next_worker = self.next_worker.wrapping_add(1);
        // A tokio socket belongs to the reactor that accepted it: move it as a std socket.
        match stream.into_std() {
            Ok(std_stream) => {
                let spawned = worker.spawn(async move {
                    match TcpStream::from_std(std_stream) {
                        Ok(stream) => {
                            start_connection(id, peer, stream, services, listener, settings)
                        }
                        Err(err) => {
                            warn!(peer = %peer, error = %err, "cannot adopt accepted socket");
                            listener.do_send(ConnectionClosed { conn: id });
                        }
                    }
                });
                if !spawned {
                    error!(peer = %peer, "worker arbiter is gone; connection dropped");
                    self.open -= 1;
                }
            }
            Err(err) => {
                warn!(peer = %peer, error = %err, "cannot move accepted socket to a worker");
                self.open -= 1;
            }
        }
    }
}

fn start_connection(
    id: ConnId,
    peer: SocketAddr,
    stream: TcpStream,
    services: Services,
    listener: Recipient<ConnectionClosed>,
    settings: ConnectionSettings,
) {
    let (read, write) = stream.into_split();
    let read: BoxedRead = Box::new(read);
    let write: BoxedWrite = Box::new(write);
    Connection::start(id, peer, read, write, services, listener, Rc::new(settings));
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
            // Running out of file descriptors and the like: keep listening.
            Err(err) => warn!(error = %err, "accept failed"),
        }
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The accept stream never ends by itself; nothing to do.
    }
}

impl Handler<ConnectionClosed> for Listener {
    type Result = ();

    fn handle(&mut self, _: ConnectionClosed, _: &mut Context<Self>) {
        self.open = self.open.saturating_sub(1);
    }
}

impl Handler<StopAccepting> for Listener {
    type Result = ();

    fn handle(&mut self, _: StopAccepting, ctx: &mut Context<Self>) {
        // Stopping drops the accept stream and with it the listening socket.
        ctx.stop();
    }
}
