//! Housekeeping: the expiry scan timer and the connection lifecycle. It sends the registry a
//! `ScanInactive` every scan interval and closes the connections of the brokers it drops; it
//! relays every connection close as `ChannelClosed`; it closes all connections at shutdown.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tokio::sync::oneshot;
use tracing::{debug, info, warn};

use crate::contain::{contain, contain_unit, Contained, Recover};
use crate::messages::{
    ChannelClosed, CloseAll, CloseConnection, ConnectionClosed, ConnectionOpened, DrainAll,
    GoAwayCount, ListConnections, OpenConnection, OpenConnections, RunScan, ScanInactive, WentAway,
};
use crate::route::{ConnId, ExpiredBroker};

/// What Housekeeping knows of an open connection.
struct Open {
    info: OpenConnection,
    close: Recipient<CloseConnection>,
}

/// The housekeeping actor.
pub struct Housekeeping {
    /// The route registry: expiry scans and connection closes.
    scan: Recipient<ScanInactive>,
    channel_closed: Recipient<ChannelClosed>,
    scan_interval: Duration,
    /// Open connections, to close them on expiry or shutdown.
    connections: HashMap<ConnId, Open>,
    /// Connections closed since the last `ChannelClosed` was sent, and whether the registry
    /// is still taking that one: closes that come meanwhile go together in the next, so the
    /// registry sweeps the topic table once for all of them (as Java's batched unregistration).
    closed: Vec<ConnId>,
    closing: bool,
    /// `CloseAll` callers waiting for the last connection to stop.
    drain_waiters: Vec<oneshot::Sender<usize>>,
    /// Set by `CloseAll`: the server is stopping, no more scans.
    stopping: bool,
    /// GO_AWAY answers given (a drain).
    went_away: u64,
    /// Handler panics contained so far.
    panics: u64,
}

impl Housekeeping {
    pub fn new(
        scan: Recipient<ScanInactive>,
        channel_closed: Recipient<ChannelClosed>,
        scan_interval: Duration,
    ) -> Self {
        Self {
            scan,
            channel_closed,
            scan_interval,
            connections: HashMap::new(),
            closed: Vec::new(),
            closing: false,
            drain_waiters: Vec::new(),
            stopping: false,
            went_away: 0,
            panics: 0,
        }
    }

    /// Tells the registry of the connections closed so far; the ones closed until it answers
    /// wait for the next message.
    fn send_closed(&mut self, ctx: &mut Context<Self>) {
        if self.closed.is_empty() {
            return;
        }
        self.closing = true;
        let conns = std::mem::take(&mut self.closed);
        let sent = self.channel_closed.send(ChannelClosed { conns });
        ctx.spawn(sent.into_actor(self).map(|answer, act, ctx| {
            if let Err(e) = answer {
                warn!(error = %e, "the registry did not take closed connections");
            }
            act.closing = false;
            act.send_closed(ctx);
        }));
    }

    /// The periodic tick: a scan at the current time.
    fn scan(&mut self, ctx: &mut Context<Self>) {
        if !self.stopping {
            ctx.spawn(self.scan_at(Instant::now()).map(|_, _, _| ()));
        }
    }

    /// Asks the registry to drop the brokers expired at `now` and closes their connections.
    fn scan_at(&mut self, now: Instant) -> impl ActorFuture<Self, Output = Vec<ExpiredBroker>> {
        self.scan
            .send(ScanInactive { now })
            .into_actor(self)
            .map(|result, act, ctx| match result {
                Ok(expired) => {
                    contain_unit(act, ctx, "ScanInactive reply", |act, _| {
                        act.close_expired(&expired)
                    });
                    expired
                }
                Err(err) => {
                    warn!(error = %err, "expiry scan not delivered; route registry unavailable");
                    Vec::new()
                }
            })
    }

    fn close_expired(&mut self, expired: &[ExpiredBroker]) {
        for broker in expired {
            if let Some(open) = self.connections.get(&broker.conn) {
                open.close.do_send(CloseConnection::Close {
                    reason: "broker heartbeat expired",
                });
            }
        }
    }

    fn wake_drain_waiters(&mut self) {
        let open = self.connections.len();
        for waiter in self.drain_waiters.drain(..) {
            let _ = waiter.send(open);
        }
    }
}

impl Actor for Housekeeping {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(scan_interval = ?self.scan_interval, "housekeeping started");
        ctx.run_interval(self.scan_interval, |act, ctx| {
            contain_unit(act, ctx, "scan tick", Self::scan)
        });
        // After a restart: closes kept from before it.
        self.send_closed(ctx);
    }
}

impl Supervised for Housekeeping {
    fn restarting(&mut self, _: &mut Self::Context) {
        // Connections re-announce nothing, so keep the map: it is still accurate. A send of
        // closed connections under way may be dropped with the context: `started` sends
        // again what is kept.
        self.closing = false;
        warn!(
            connections = self.connections.len(),
            "housekeeping restarting"
        );
    }
}

impl Recover for Housekeeping {
    const NAME: &'static str = "housekeeping";

    fn recover(&mut self, ctx: &mut Self::Context) {
        <Self as Supervised>::restarting(self, ctx);
        self.send_closed(ctx);
    }

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(Housekeeping);

impl Handler<ConnectionOpened> for Housekeeping {
    type Result = Contained<()>;

    fn handle(&mut self, msg: ConnectionOpened, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ConnectionOpened", move |this, _| {
            let info = OpenConnection {
                conn: msg.conn,
                peer: msg.peer,
                tls: msg.tls,
            };
            this.connections.insert(
                msg.conn,
                Open {
                    info,
                    close: msg.close,
                },
            );
        })
    }
}

impl Handler<DrainAll> for Housekeeping {
    type Result = Contained<usize>;

    fn handle(&mut self, _: DrainAll, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "DrainAll", |this, _| {
            for open in this.connections.values() {
                open.close.do_send(CloseConnection::Drain);
            }
            this.connections.len()
        })
    }
}

impl Handler<WentAway> for Housekeeping {
    type Result = ();

    fn handle(&mut self, _: WentAway, _: &mut Context<Self>) {
        self.went_away += 1;
    }
}

impl Handler<GoAwayCount> for Housekeeping {
    type Result = u64;

    fn handle(&mut self, _: GoAwayCount, _: &mut Context<Self>) -> u64 {
        self.went_away
    }
}

impl Handler<ConnectionClosed> for Housekeeping {
    type Result = Contained<()>;

    fn handle(&mut self, msg: ConnectionClosed, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ConnectionClosed", move |this, ctx| {
            this.connections.remove(&msg.conn);
            this.closed.push(msg.conn);
            if !this.closing {
                this.send_closed(ctx);
            }
            if this.connections.is_empty() {
                this.wake_drain_waiters();
            }
        })
    }
}

impl Handler<RunScan> for Housekeeping {
    type Result = Contained<ResponseActFuture<Self, Vec<ExpiredBroker>>>;

    fn handle(&mut self, msg: RunScan, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "RunScan",
            move |this, _| -> ResponseActFuture<Self, Vec<ExpiredBroker>> {
                Box::pin(this.scan_at(msg.now))
            },
        )
    }
}

impl Handler<OpenConnections> for Housekeeping {
    type Result = Contained<usize>;

    fn handle(&mut self, _: OpenConnections, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "OpenConnections", move |this, _| {
            this.connections.len()
        })
    }
}

impl Handler<ListConnections> for Housekeeping {
    type Result = Contained<Vec<OpenConnection>>;

    fn handle(&mut self, _: ListConnections, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ListConnections", move |this, _| {
            let mut list: Vec<OpenConnection> =
                this.connections.values().map(|o| o.info.clone()).collect();
            list.sort_by_key(|o| o.conn);
            list
        })
    }
}

impl Handler<CloseAll> for Housekeeping {
    type Result = Contained<ResponseFuture<usize>>;

    fn handle(&mut self, msg: CloseAll, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "CloseAll",
            move |this, ctx| -> ResponseFuture<usize> {
                this.stopping = true;
                let open = this.connections.len();
                debug!(open, "closing all connections");
                for open in this.connections.values() {
                    open.close.do_send(CloseConnection::Close {
                        reason: "server stopping",
                    });
                }
                if open == 0 {
                    return Box::pin(async { 0 });
                }
                let (tx, rx) = oneshot::channel();
                this.drain_waiters.push(tx);
                let wait = msg.deadline.saturating_duration_since(Instant::now());
                ctx.run_later(wait, |act, _| act.wake_drain_waiters());
                Box::pin(async move { rx.await.unwrap_or(0) })
            },
        )
    }
}
