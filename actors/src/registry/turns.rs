//! How every change of the route tables runs: one mechanism, so no handler chooses its own
//! (docs/actors.md#large-registrations).
//!
//! A message that changes the tables implements [`Change`]; one blanket handler runs them all:
//!
//! - A change begins at once when no other is under way; otherwise it waits, with its reply
//!   channel, and runs in arrival order once the one under way is done. So changes apply in the
//!   order they arrived, as with one handler each.
//! - A change that is too large for one handler (a broker table of 100,000 topics takes tens of
//!   milliseconds to walk) begins with a [`Walk`] and is stepped [`TOPICS_PER_STEP`] topics per
//!   turn, the registry yielding to its mailbox between turns: questions that only read the
//!   tables are answered between turns and see each topic either old or new, as with any change
//!   not answered yet.
//! - Each turn's route changes go to the connection threads' caches at once (bounded messages,
//!   not one list of 100,000 topics); the change is answered once all of them are applied.
//! - Every turn is contained (crate::contain): a panic resets the registry and drops the reply.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use actix::dev::{MessageResponse, OneshotSender};
use actix::fut::wrap_future;
use actix::prelude::*;
use tokio::sync::oneshot;

use super::RouteRegistry;
use crate::contain::{contain, contain_unit, Contained};

pub use crate::route::TOPICS_PER_STEP;

/// A message that changes the route tables.
pub trait Change: Message<Result: Send> + Send + 'static {
    /// The message's name in logs.
    const NAME: &'static str;

    /// Applies the change, or its first part: the answer, or the walk of the rest.
    fn begin(self, registry: &mut RouteRegistry) -> Step<Self::Result>;
}

/// Where a change stands after a turn.
pub enum Step<R> {
    /// Applied; its answer.
    Done(R),
    /// More to apply, in the next turns.
    More(Box<dyn Walk<R>>),
}

/// The rest of a large change, taken [`TOPICS_PER_STEP`] topics per turn.
pub trait Walk<R> {
    /// One turn's worth of the change.
    fn step(self: Box<Self>, registry: &mut RouteRegistry) -> Step<R>;
}

/// A change's reply: once its route changes are everywhere.
pub enum Reply<R: 'static> {
    /// It ran now; the reply follows its route changes.
    Now(ResponseFuture<R>),
    /// It waited for, or walked in, turns.
    Later(oneshot::Receiver<R>),
}

impl<M> MessageResponse<RouteRegistry, M> for Reply<M::Result>
where
    M: Message + 'static,
    M::Result: Send,
{
    fn handle(self, ctx: &mut Context<RouteRegistry>, tx: Option<OneshotSender<M::Result>>) {
        match self {
            Self::Now(reply) => MessageResponse::<RouteRegistry, M>::handle(reply, ctx, tx),
            Self::Later(rx) => {
                // A change dropped before its answer (the registry was reset) leaves its asker a
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

impl<M: Change> Handler<M> for RouteRegistry {
    type Result = Contained<Reply<M::Result>>;

    fn handle(&mut self, msg: M, ctx: &mut Context<Self>) -> Self::Result {
        if self.turns.walking.is_none() && self.turns.waiting.is_empty() {
            return contain(self, ctx, M::NAME, |this, ctx| this.begin(msg, ctx));
        }
        let (tx, rx) = oneshot::channel();
        self.turns.waited += 1;
        self.turns.waiting.push_back(Box::new(move |this, ctx| {
            let began = contain(this, ctx, M::NAME, |this, ctx| this.begin(msg, ctx));
            if let Some(reply) = began.into_reply() {
                MessageResponse::<RouteRegistry, M>::handle(reply, ctx, Some(tx));
            }
        }));
        Contained::reply(Reply::Later(rx))
    }
}

/// A change waiting for the one under way.
type Waiting = Box<dyn FnOnce(&mut RouteRegistry, &mut Context<RouteRegistry>)>;

type Published = Pin<Box<dyn Future<Output = ()>>>;

/// The walk under way, its answer's way back, and the cache updates of its turns so far (all
/// awaited before the answer).
pub(super) struct Walking {
    turn: Box<dyn Turn>,
    published: Vec<Published>,
}

/// A walk with its reply channel, its answer's type hidden.
trait Turn {
    /// One turn; when the walk is done, how to deliver its answer.
    fn take(
        self: Box<Self>,
        registry: &mut RouteRegistry,
    ) -> Result<Box<dyn FnOnce()>, Box<dyn Turn>>;
}

struct Walked<R> {
    walk: Box<dyn Walk<R>>,
    reply: oneshot::Sender<R>,
}

impl<R: 'static> Turn for Walked<R> {
    fn take(
        self: Box<Self>,
        registry: &mut RouteRegistry,
    ) -> Result<Box<dyn FnOnce()>, Box<dyn Turn>> {
        let Walked { walk, reply } = *self;
        match walk.step(registry) {
            Step::Done(value) => Ok(Box::new(move || {
                let _ = reply.send(value);
            })),
            Step::More(walk) => Err(Box::new(Walked { walk, reply })),
        }
    }
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
    /// Changes walked in turns so far.
    pub(super) fn sliced(&self) -> u64 {
        self.sliced
    }

    /// Changes that waited for another so far.
    pub(super) fn waited(&self) -> u64 {
        self.waited
    }
}

impl RouteRegistry {
    /// Runs a change's first turn; a walk goes on in the next ones.
    fn begin<M: Change>(&mut self, msg: M, ctx: &mut Context<Self>) -> Reply<M::Result> {
        match msg.begin(self) {
            Step::Done(value) => Reply::Now(self.answer(value)),
            Step::More(walk) => {
                let (reply, rx) = oneshot::channel();
                let first: Published = Box::pin(self.publish());
                self.turns.sliced += 1;
                self.turns.walking = Some(Walking {
                    turn: Box::new(Walked { walk, reply }),
                    published: vec![first],
                });
                self.next_turn(ctx);
                Reply::Later(rx)
            }
        }
    }

    /// Forgets the walk under way (its asker sees a closed reply channel); the waiting changes
    /// then run against the reset tables.
    pub(super) fn abandon_walk(&mut self, ctx: &mut Context<Self>) {
        self.turns.walking = None;
        if !self.turns.waiting.is_empty() {
            self.next_turn(ctx);
        }
    }

    /// The next turn, after the mailbox had its say (and the thread's other tasks theirs).
    fn next_turn(&mut self, ctx: &mut Context<Self>) {
        ctx.spawn(
            wrap_future::<_, Self>(actix_rt::task::yield_now()).map(|(), this, ctx| {
                contain_unit(this, ctx, "change turn", |this, ctx| this.turn(ctx));
            }),
        );
    }

    /// One turn of the walk; when it is done, its answer and the changes that waited.
    fn turn(&mut self, ctx: &mut Context<Self>) {
        if let Some(Walking {
            turn,
            mut published,
        }) = self.turns.walking.take()
        {
            match turn.take(self) {
                Err(turn) => {
                    published.push(Box::pin(self.publish()));
                    self.turns.walking = Some(Walking { turn, published });
                    self.next_turn(ctx);
                    return;
                }
                Ok(deliver) => {
                    let last = self.publish();
                    actix::spawn(async move {
                        for turn in published {
                            turn.await;
                        }
                        last.await;
                        deliver();
                    });
                }
            }
        }
        while self.turns.walking.is_none() {
            let Some(change) = self.turns.waiting.pop_front() else {
                break;
            };
            change(self, ctx);
        }
    }
}
