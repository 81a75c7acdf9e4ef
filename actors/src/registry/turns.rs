//! Large registrations in slices. A broker table of 100,000 topics takes tens of milliseconds to
//! walk; done in one handler it would hold every cluster-info, route-miss and data-version
//! question behind it. So the registry walks a large table [`TOPICS_PER_STEP`] topics per turn
//! and yields to its mailbox between turns (docs/actors.md#large-registrations):
//!
//! - Questions that only read the tables are answered between turns. They see each topic with
//!   either its old or its new queues, as with any registration that has not been answered yet.
//! - Changes wait their turn: a handler that changes the tables runs at once when no walk is
//!   under way, and otherwise is queued with its reply channel and run, in arrival order, once
//!   the walk is done. So changes apply in the order they arrived, as with one handler each.
//! - Each turn's route changes go to the connection threads' caches at once (bounded messages,
//!   not one list of 100,000 topics); the registration is answered once all of them are
//!   applied, as every change is.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use actix::dev::{MessageResponse, OneshotSender};
use actix::fut::wrap_future;
use actix::prelude::*;
use tokio::sync::oneshot;

use super::RouteRegistry;
use crate::contain::{contain, contain_unit, Contained};
use crate::messages::{RegisterBroker, RegisterBrokerReply};
use crate::route::{NeedTopics, RegisterOutcome, RegisterWalk, Registering, Registration, Sweep};

pub use crate::route::TOPICS_PER_STEP;

/// A change's reply: now, or once the walk under way is done and the change has had its turn.
pub enum InTurn<M: Message, R> {
    Now(R),
    Later(oneshot::Receiver<M::Result>),
}

/// What a handler that changes the tables returns.
pub type Turn<M, R> = Contained<InTurn<M, R>>;

impl<M, R> MessageResponse<RouteRegistry, M> for InTurn<M, R>
where
    M: Message + 'static,
    M::Result: Send,
    R: MessageResponse<RouteRegistry, M>,
{
    fn handle(self, ctx: &mut Context<RouteRegistry>, tx: Option<OneshotSender<M::Result>>) {
        match self {
            Self::Now(reply) => reply.handle(ctx, tx),
            Self::Later(rx) => {
                // A change dropped before its turn (the registry was reset) leaves its asker a
                // closed reply channel, as a contained panic does.
                actix::spawn(async move {
                    if let (Ok(value), Some(tx)) = (rx.await, tx) {
                        let _ = tx.send(value);
                    }
                });
            }
        }
    }
}

/// A change waiting for the walk to end.
type Waiting = Box<dyn FnOnce(&mut RouteRegistry, &mut Context<RouteRegistry>)>;

type Published = Pin<Box<dyn Future<Output = ()>>>;

/// A change walked in slices.
enum Job {
    /// A registration's topics; its answer is the outcome.
    Register {
        walk: Box<RegisterWalk>,
        reply: oneshot::Sender<Result<RegisterBrokerReply, NeedTopics>>,
    },
    /// An unregistration's (or expiry's, or connection close's) topics; its answer is known.
    Sweep {
        sweep: Sweep,
        deliver: Box<dyn FnOnce()>,
    },
}

/// The change being walked.
pub(super) struct Walking {
    job: Job,
    /// The cache updates of the turns so far, all awaited before the answer.
    published: Vec<Published>,
}

/// The registry's turn-taking state.
#[derive(Default)]
pub(super) struct Turns {
    walking: Option<Walking>,
    waiting: VecDeque<Waiting>,
    sliced: u64,
    waited: u64,
}

impl Turns {
    /// Changes walked in slices so far.
    pub(super) fn sliced(&self) -> u64 {
        self.sliced
    }

    /// Changes that waited for a walk so far.
    pub(super) fn waited(&self) -> u64 {
        self.waited
    }

    /// Changes waiting for their turn.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Forgets the walk (its asker sees a closed reply channel); waiting changes stay queued
    /// and run against the reset tables.
    pub(super) fn abandon_walk(&mut self) {
        self.walking = None;
    }
}

impl RouteRegistry {
    /// Runs `change` now, or queues it until the walk under way is done.
    pub(super) fn in_turn<M, R>(
        &mut self,
        ctx: &mut Context<Self>,
        message: &'static str,
        change: impl FnOnce(&mut Self, &mut Context<Self>) -> R + 'static,
    ) -> Turn<M, R>
    where
        M: Message + 'static,
        M::Result: Send,
        R: MessageResponse<Self, M> + 'static,
    {
        if self.turns.walking.is_none() && self.turns.waiting.is_empty() {
            return contain(self, ctx, message, |this, ctx| {
                InTurn::Now(change(this, ctx))
            });
        }
        let (tx, rx) = oneshot::channel();
        self.turns.waited += 1;
        self.turns.waiting.push_back(Box::new(move |this, ctx| {
            if let Some(reply) = contain(this, ctx, message, change).into_reply() {
                reply.handle(ctx, Some(tx));
            }
        }));
        Contained::reply(InTurn::Later(rx))
    }

    /// REGISTER_BROKER: the group at once, then the topics, in slices when there are many.
    pub(super) fn register(
        &mut self,
        ctx: &mut Context<Self>,
        registration: Registration,
    ) -> InTurn<RegisterBroker, ResponseFuture<Result<RegisterBrokerReply, NeedTopics>>> {
        let new_before = self.tables.counters().registrations_new;
        let mut walk = match self.tables.register_start(registration, Instant::now()) {
            Err(need) => return InTurn::Now(self.answer(Err(need))),
            Ok(Registering::Done(outcome)) => {
                let reply = self.reply(outcome, new_before);
                return InTurn::Now(self.answer(Ok(reply)));
            }
            Ok(Registering::Walk(walk)) => walk,
        };
        if self.tables.register_step(&mut walk, TOPICS_PER_STEP) {
            let outcome = self.tables.register_finish(walk);
            let reply = self.reply(outcome, new_before);
            return InTurn::Now(self.answer(Ok(reply)));
        }
        let (tx, rx) = oneshot::channel();
        self.walk(ctx, Job::Register { walk, reply: tx });
        InTurn::Later(rx)
    }

    /// An unregistration's answer `value`: now, or after its sweep of a large table.
    pub(super) fn swept<M>(
        &mut self,
        ctx: &mut Context<Self>,
        sweep: Option<Sweep>,
        value: M::Result,
    ) -> InTurn<M, ResponseFuture<M::Result>>
    where
        M: Message + 'static,
        M::Result: Send,
    {
        let Some(sweep) = sweep else {
            return InTurn::Now(self.answer(value));
        };
        let (tx, rx) = oneshot::channel();
        let deliver = Box::new(move || {
            let _ = tx.send(value);
        });
        self.walk(ctx, Job::Sweep { sweep, deliver });
        InTurn::Later(rx)
    }

    /// Starts walking `job`: the changes of its first part go out now, its slices follow.
    fn walk(&mut self, ctx: &mut Context<Self>, job: Job) {
        let first: Published = Box::pin(self.publish());
        self.turns.sliced += 1;
        self.turns.walking = Some(Walking {
            job,
            published: vec![first],
        });
        self.next_turn(ctx);
    }

    /// The answer of a registration; `routes_changed` when it changed routes or added a broker
    /// (the count of new brokers was `new_before` before it).
    fn reply(&self, outcome: RegisterOutcome, new_before: u64) -> RegisterBrokerReply {
        let order_topic_config = if self.settings.return_order_topic_config_to_broker {
            self.order_conf_body()
        } else {
            None
        };
        RegisterBrokerReply {
            outcome,
            order_topic_config,
            routes_changed: self.tables.has_changes()
                || self.tables.counters().registrations_new > new_before,
        }
    }

    /// The next turn after the mailbox had its say (and the thread's other tasks theirs).
    pub(super) fn next_turn(&mut self, ctx: &mut Context<Self>) {
        ctx.spawn(
            wrap_future::<_, Self>(actix_rt::task::yield_now()).map(|(), this, ctx| {
                contain_unit(this, ctx, "registration turn", |this, ctx| this.turn(ctx));
            }),
        );
    }

    /// One slice of the walk; when the walk is done, its answer and the changes that waited.
    fn turn(&mut self, ctx: &mut Context<Self>) {
        if let Some(mut walking) = self.turns.walking.take() {
            let done = match &mut walking.job {
                Job::Register { walk, .. } => self.tables.register_step(walk, TOPICS_PER_STEP),
                Job::Sweep { sweep, .. } => self.tables.sweep_step(sweep, TOPICS_PER_STEP),
            };
            if !done {
                walking.published.push(Box::pin(self.publish()));
                self.turns.walking = Some(walking);
                self.next_turn(ctx);
                return;
            }
            let deliver: Box<dyn FnOnce()> = match walking.job {
                Job::Register { walk, reply } => {
                    let outcome = self.tables.register_finish(walk);
                    // A walk applies topics: it changed routes.
                    let value = Ok(RegisterBrokerReply {
                        routes_changed: true,
                        ..self.reply(outcome, 0)
                    });
                    Box::new(move || {
                        let _ = reply.send(value);
                    })
                }
                Job::Sweep { deliver, .. } => deliver,
            };
            let last = self.publish();
            let published = walking.published;
            actix::spawn(async move {
                for turn in published {
                    turn.await;
                }
                last.await;
                deliver();
            });
        }
        while self.turns.walking.is_none() {
            let Some(change) = self.turns.waiting.pop_front() else {
                break;
            };
            change(self, ctx);
        }
    }
}
