//! What one request code needs, as one [`Row`]: its access class, its admission class, what the
//! audit log records of it, the actor that answers it and how. The rows of each port are in
//! crate::dispatch; the connection, access control, admission and the audit read them and
//! nothing else, so a code cannot be answered without a class (a row cannot be built without
//! one) and a code without a row is refused (docs/contributing.md).

use std::future::Future;
use std::pin::Pin;

use actix::MailboxError;
use rmq_protocol::{RemotingCommand, RequestCode};

pub use crate::access::audit::Audit;
use crate::access::AccessClass;
use crate::response::IntoResponse;
use crate::route::ConnId;
use crate::route_cache::WorkerCache;
use crate::services::Services;

/// The class of a request for admission (`server.max_pending_reads` / `_writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Route and cluster queries, topic lists, KV and config reads.
    Read,
    /// Registrations, heartbeats and every change.
    Write,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
        }
    }
}

/// One request code: everything the server needs to answer it.
#[derive(Debug)]
pub struct Row {
    pub code: RequestCode,
    /// Who may send it (docs/access.md).
    pub access: AccessClass,
    /// Its admission class; `None`: it is not bounded by admission (the controller's oneway
    /// heartbeat, the debug builds' fault injection).
    pub admission: Option<Class>,
    pub audit: Audit,
    /// The actor that answers it, as the docs name it.
    pub owner: &'static str,
    /// Reads the request and hands it to its owner.
    pub answer: Answer,
    /// Reads the request as `answer` does, without answering it (the fuzz targets call it).
    pub read: Reader,
}

impl Row {
    /// The code's name, as Java's RequestCode spells it.
    pub fn name(&self) -> &'static str {
        self.code.name().unwrap_or("UNNAMED")
    }
}

/// What a request's handling has at hand.
pub struct Asking<'a> {
    pub services: &'a Services,
    /// The connection it arrived on.
    pub conn: ConnId,
    /// The route cache of the connection's thread.
    pub route_cache: Option<&'a WorkerCache>,
}

/// How one request is answered: reads its header and body (an error is the answer) and sends
/// the typed message to the owner.
pub type Answer = fn(&RemotingCommand, &Asking<'_>) -> Outcome;

/// Reads a request's header and body; the error is the answer.
pub type Reader = fn(&RemotingCommand) -> Result<(), RemotingCommand>;

/// An owner's reply, as the response to write.
pub type Pending = Pin<Box<dyn Future<Output = Result<RemotingCommand, MailboxError>>>>;

/// What became of a request handed to [`Row::answer`].
pub enum Outcome {
    /// Answered at once (a header that cannot be read, a route from the cache).
    Now(RemotingCommand),
    /// The owner's reply, to wait for.
    Later(Pending),
    /// REGISTER_BROKER: registered by the connection (crate::registration), with its memory of
    /// the body it registered last.
    Register,
}

impl Outcome {
    /// The reply of `reply`, turned into a response once it arrives.
    pub fn later<F, R>(reply: F) -> Outcome
    where
        F: Future<Output = Result<R, MailboxError>> + 'static,
        R: IntoResponse + 'static,
    {
        Outcome::Later(Box::pin(async move {
            reply.await.map(IntoResponse::into_response)
        }))
    }
}

impl From<Result<Outcome, RemotingCommand>> for Outcome {
    fn from(answer: Result<Outcome, RemotingCommand>) -> Outcome {
        answer.unwrap_or_else(Outcome::Now)
    }
}
