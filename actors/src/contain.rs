//! Panic containment for actor handlers.
//!
//! actix's `Supervisor` restarts an actor that *stops*; a handler that *panics* unwinds through
//! the actor's task instead, and the actor is gone for the rest of the process's life with its
//! mailbox closed. So every handler of a long-lived actor runs its synchronous body through
//! [`contain`]: a panic there is caught at the handler boundary, logged with the message that
//! caused it, counted, and the actor is reset as a supervised restart would reset it
//! ([`Recover::recover`]); the request that panicked gets no reply (its asker sees a closed
//! reply channel and answers SYSTEM_ERROR), and the next message finds a working actor.
//!
//! What cannot be contained this way (a panic inside an actor future of the actor's own context)
//! still ends the actor; the embedding API's health report shows it, and the daemon exits
//! non-zero rather than serve errors (see the daemon's watchdog).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;
use tracing::error;

/// An actor whose handlers are contained: how to come back from a panic.
pub trait Recover: Actor {
    /// The actor's name in logs and health reports.
    const NAME: &'static str;

    /// Resets what a panic may have left half-changed, with the semantics of a supervised
    /// restart (route tables empty, KV reloaded from its file, ...).
    fn recover(&mut self, ctx: &mut Self::Context);

    /// Counts one contained panic.
    fn count_panic(&mut self);

    /// The panics contained so far (the actor's health answer).
    fn panics(&self) -> u64;
}

/// A handler's reply, or nothing when the handler panicked: the asker's reply channel is then
/// dropped, which it sees as a closed mailbox for that one request.
pub struct Contained<R>(Option<R>);

impl<R> Contained<R> {
    /// A reply that did not panic.
    pub fn reply(reply: R) -> Self {
        Self(Some(reply))
    }

    /// The reply, or `None` after a panic.
    pub fn into_reply(self) -> Option<R> {
        self.0
    }
}

impl<A, M, R> MessageResponse<A, M> for Contained<R>
where
    A: Actor,
    M: Message,
    R: MessageResponse<A, M>,
{
    fn handle(self, ctx: &mut A::Context, tx: Option<OneshotSender<M::Result>>) {
        if let Some(reply) = self.0 {
            reply.handle(ctx, tx);
        }
    }
}

/// Runs a handler body; on a panic, logs it with `message` (the message type's name), counts
/// it and recovers the actor. A panic while recovering is logged and swallowed too: the actor
/// then keeps whatever state it has, which is no worse than before.
pub fn contain<A, R>(
    act: &mut A,
    ctx: &mut A::Context,
    message: &'static str,
    body: impl FnOnce(&mut A, &mut A::Context) -> R,
) -> Contained<R>
where
    A: Recover,
{
    match catch_unwind(AssertUnwindSafe(|| body(act, ctx))) {
        Ok(reply) => Contained(Some(reply)),
        Err(payload) => {
            recovered(act, ctx, message, payload.as_ref());
            Contained(None)
        }
    }
}

/// [`contain`] for work that answers nobody (timer ticks, notifications).
pub fn contain_unit<A: Recover>(
    act: &mut A,
    ctx: &mut A::Context,
    what: &'static str,
    body: impl FnOnce(&mut A, &mut A::Context),
) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(|| body(act, ctx))) {
        recovered(act, ctx, what, payload.as_ref());
    }
}

fn recovered<A: Recover>(
    act: &mut A,
    ctx: &mut A::Context,
    message: &'static str,
    payload: &(dyn Any + Send),
) {
    act.count_panic();
    error!(
        actor = A::NAME,
        message,
        panic = panic_text(payload),
        "handler panicked; the actor is reset as after a restart and keeps serving"
    );
    if let Err(again) = catch_unwind(AssertUnwindSafe(|| act.recover(ctx))) {
        error!(
            actor = A::NAME,
            panic = panic_text(again.as_ref()),
            "recovering from a panic panicked too; the actor keeps its current state"
        );
    }
}

/// The text of a panic payload (`panic!` with a literal or a formatted message).
pub fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(not a text)"
    }
}

/// How a long-lived actor is doing: the handler panics it contained so far.
#[derive(Debug, Message)]
#[rtype(result = "ActorHealth")]
pub struct GetHealth;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActorHealth {
    pub actor: &'static str,
    pub panics: u64,
}

/// A fault for tests: the receiving actor's handler panics (and the panic is contained; with
/// `lose`, it is not, and the actor is gone for good, as after a panic that cannot be
/// contained). Only in builds with debug assertions (tests, dev builds); release builds do not
/// have it.
#[cfg(debug_assertions)]
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct InjectPanic {
    pub lose: bool,
}

/// The handlers every contained actor answers: [`GetHealth`] and, with debug assertions,
/// [`InjectPanic`]. The actor implements [`Recover`].
#[macro_export]
macro_rules! contained_actor {
    ($actor:ty) => {
        impl ::actix::Handler<$crate::contain::GetHealth> for $actor {
            type Result = ::actix::MessageResult<$crate::contain::GetHealth>;

            fn handle(
                &mut self,
                _: $crate::contain::GetHealth,
                _: &mut <$actor as ::actix::Actor>::Context,
            ) -> Self::Result {
                ::actix::MessageResult($crate::contain::ActorHealth {
                    actor: <$actor as $crate::contain::Recover>::NAME,
                    panics: <$actor as $crate::contain::Recover>::panics(self),
                })
            }
        }

        #[cfg(debug_assertions)]
        impl ::actix::Handler<$crate::contain::InjectPanic> for $actor {
            type Result = $crate::contain::Contained<()>;

            fn handle(
                &mut self,
                fault: $crate::contain::InjectPanic,
                ctx: &mut <$actor as ::actix::Actor>::Context,
            ) -> Self::Result {
                if fault.lose {
                    panic!("injected fault, not contained");
                }
                $crate::contain::contain(self, ctx, "InjectPanic", |_, _| panic!("injected fault"))
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Counter {
        value: u32,
        panics: u64,
        recovered: u32,
    }

    impl Actor for Counter {
        type Context = Context<Self>;
    }

    impl Recover for Counter {
        const NAME: &'static str = "counter";
        fn recover(&mut self, _: &mut Context<Self>) {
            self.value = 0;
            self.recovered += 1;
        }
        fn count_panic(&mut self) {
            self.panics += 1;
        }
        fn panics(&self) -> u64 {
            self.panics
        }
    }

    #[derive(Message)]
    #[rtype(result = "u32")]
    struct Add(u32);

    impl Handler<Add> for Counter {
        type Result = Contained<u32>;
        fn handle(&mut self, msg: Add, ctx: &mut Context<Self>) -> Self::Result {
            contain(self, ctx, "Add", |this, _| {
                this.value += msg.0;
                if msg.0 == 0 {
                    panic!("zero is not a number to add");
                }
                this.value
            })
        }
    }

    #[derive(Message)]
    #[rtype(result = "(u32, u64, u32)")]
    struct State;

    impl Handler<State> for Counter {
        type Result = MessageResult<State>;
        fn handle(&mut self, _: State, _: &mut Context<Self>) -> Self::Result {
            MessageResult((self.value, self.panics, self.recovered))
        }
    }

    #[actix::test]
    async fn a_panicking_handler_is_contained_and_the_actor_keeps_serving() {
        let counter = Counter::default().start();
        assert_eq!(counter.send(Add(2)).await.ok(), Some(2));
        // The panicking request gets no reply; the actor is reset and still there.
        assert!(counter.send(Add(0)).await.is_err());
        assert!(counter.connected());
        assert_eq!(counter.send(Add(3)).await.ok(), Some(3));
        assert_eq!(counter.send(State).await.ok(), Some((3, 1, 1)));
    }
}
