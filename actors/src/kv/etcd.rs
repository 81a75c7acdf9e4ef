//! The etcd backend of the KV store (`kv.backend = "etcd"`, docs/kv-and-config.md#etcd-backend):
//! one KV config shared by every NameServer of a fleet, where Java keeps one file per NameServer
//! (files that drift apart when one was down during an update).
//!
//! Keys under the prefix `P` (its trailing `/` trimmed):
//!
//! - `P/<namespace>`: the namespace's marker, an empty value. A namespace exists while it does,
//!   so a namespace emptied by deletes stays, as with the file;
//! - `P/<namespace>/<key>`: one value, stored as it is.
//!
//! The namespace segment is percent-encoded (`%` as `%25`, `/` as `%2F`), so a `/` in a
//! namespace cannot be taken for the separator; the key is everything after the separator, as
//! it is.
//!
//! The actor keeps its tables in memory as with the file: filled by a range read at revision S
//! when a session opens, kept current by a watch of the prefix from S + 1 (another NameServer's
//! change arrives in milliseconds). A PUT or DELETE is one etcd transaction, answered once etcd
//! confirms it; the change is applied to the memory view at once, so a client reads its own
//! write, and the watch brings it again. Reads never wait for etcd.
//!
//! The confirmation and the watch are two gRPC streams, so they can arrive in either order; every
//! change carries its etcd revision. The watch reports revisions in order, so a confirmed change
//! at revision r that the view has already seen (r at most `watched`) is skipped, and one it has
//! not seen is remembered (`ahead`) until it has, so that an older event of the same key arriving
//! in between does not undo it.
//!
//! Whatever breaks (connect, read, watch, a progress request that gets no answer), the actor
//! starts over after a bounded backoff with a fresh connection and read; in between it answers
//! reads from its last view and refuses changes. Everything runs as futures on the actor's own
//! context: no thread ever waits for etcd.

use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_protocol::body::ORDER_TOPIC_CONFIG_NAMESPACE;
use tokio::sync::oneshot;
use tracing::{debug, info, warn};

use super::{Backend, Change, KvStore};
use crate::contain::contain_unit;
use crate::etcd_api::{
    Client, Compare, CompareOp, GetOptions, Security, Txn, TxnOp, WatchOptions, WatchRequestSender,
    WatchResponse, WatchResponseStream,
};
use crate::etcd_call::{connect, within, EtcdFailure, FIRST_BACKOFF, MAX_BACKOFF};
use crate::logging::Clipped;
use crate::messages::KvReplyError;

mod keys;
mod view;

#[cfg(test)]
mod tests;

use keys::Keys;
use view::{tables_of, View};

/// The limit of each request to etcd (connect, read, write, opening the watch).
const TIMEOUT: Duration = Duration::from_secs(3);

/// How often the watch is asked for a progress report. A watch whose connection died without a
/// word (a frozen etcd, a lost network) says nothing either; one that does not answer within
/// [`TIMEOUT`] is given up.
const PROBE_EVERY: Duration = Duration::from_secs(5);

/// How often the actor notes that it runs; a longer gap than [`FROZEN`] between two notes means
/// the process was frozen (SIGSTOP, a paused VM) or starved.
const AWAKE_EVERY: Duration = Duration::from_secs(1);

/// A freeze this long makes the changes that arrive in the same span after it refused: they may
/// have waited in a socket while their clients gave up on them (the client's timeout is shorter),
/// and taken now they would overwrite the changes acknowledged meanwhile by another NameServer.
const FROZEN: Duration = TIMEOUT;

/// Keys per page of the range read, so that no answer grows with the table.
const PAGE: i64 = 500;

/// The largest answer (a page of the read, a batch of watch events) accepted; etcd refuses
/// values above 1.5 MiB by default.
const MAX_MESSAGE: usize = 64 << 20;

// ---------------------------------------------------------------------------------------------
// The actor's side

/// A connection whose read is loaded and whose watch is (being) opened.
struct Session {
    client: Client,
    /// The watch's request side, for progress requests; `None` until the watch is open and while
    /// a request is being sent.
    requests: Option<WatchRequestSender>,
    /// When the unanswered progress request was sent.
    asked: Option<Instant>,
    /// When the watch last said anything.
    heard: Instant,
}

/// The futures of the current session, cancelled when starting over so that no old watch
/// outlives it. Writes are not among them: a write etcd confirms is applied whenever the
/// confirmation comes.
#[derive(Default)]
struct Tasks {
    open: Option<SpawnHandle>,
    watch: Option<SpawnHandle>,
    probe: Option<SpawnHandle>,
}

impl Tasks {
    fn cancel(&mut self, ctx: &mut Context<KvStore>) {
        for handle in [self.open.take(), self.watch.take(), self.probe.take()]
            .into_iter()
            .flatten()
        {
            ctx.cancel_future(handle);
        }
    }
}

/// The etcd backend's state in the KV store actor.
pub(super) struct EtcdSync {
    endpoints: Vec<String>,
    /// TLS and user; never logged.
    security: Security,
    keys: Keys,
    view: View,
    /// Bumped on every start over: a future of an older session finds it changed and does
    /// nothing.
    generation: u64,
    session: Option<Session>,
    tasks: Tasks,
    backoff: Duration,
    /// When the actor last noted that it runs (every [`AWAKE_EVERY`]).
    awake: Instant,
    /// When it last woke from a freeze longer than [`FROZEN`].
    woke: Option<Instant>,
}

impl EtcdSync {
    pub(super) fn new(endpoints: Vec<String>, prefix: &str, security: Security) -> Self {
        EtcdSync {
            endpoints,
            security,
            keys: Keys::new(prefix),
            view: View::default(),
            generation: 0,
            session: None,
            tasks: Tasks::default(),
            backoff: FIRST_BACKOFF,
            awake: Instant::now(),
            woke: None,
        }
    }

    /// Every [`AWAKE_EVERY`]: notes that the actor runs, and a freeze if the last note is older
    /// than [`FROZEN`].
    fn note_awake(&mut self) {
        let now = Instant::now();
        let gap = now.saturating_duration_since(self.awake);
        self.awake = now;
        if gap > FROZEN {
            self.woke = Some(now);
            warn!(
                frozen = ?gap,
                refusing_for = ?FROZEN,
                "KV store (etcd): this NameServer was frozen (SIGSTOP, a paused VM or starvation); \
                 the changes that arrive now are refused, their clients may have given up on them"
            );
        }
    }

    /// Why a change must be refused because the process was just frozen, if it must.
    fn just_frozen(&self) -> Option<String> {
        let now = Instant::now();
        let gap = now.saturating_duration_since(self.awake);
        let since_wake = self.woke.map(|woke| now.saturating_duration_since(woke));
        if gap <= FROZEN && since_wake.is_none_or(|since| since >= FROZEN) {
            return None;
        }
        Some(format!(
            "this NameServer was frozen for more than {} and has just woken; a change that arrives \
             now may have waited while its client gave up, so it is refused (nothing was changed; \
             send it again)",
            humantime::format_duration(FROZEN)
        ))
    }
}

/// A session opened and its state read, before the actor takes it.
struct Opened {
    client: Client,
    revision: i64,
    cluster: u64,
    read: Vec<(Vec<u8>, Vec<u8>)>,
}

impl KvStore {
    fn etcd(&mut self) -> Option<&mut EtcdSync> {
        match &mut self.backend {
            Backend::Etcd(sync) => Some(sync),
            Backend::File(_) => None,
        }
    }

    fn etcd_generation(&mut self) -> Option<u64> {
        self.etcd().map(|sync| sync.generation)
    }

    /// From `started`: connects, and asks the watch for progress from now on.
    pub(super) fn etcd_started(&mut self, ctx: &mut Context<Self>) {
        if let Some(sync) = self.etcd() {
            info!(endpoints = ?sync.endpoints, prefix = %sync.keys.dir, "KV store started (etcd)");
        }
        ctx.run_interval(PROBE_EVERY, |act, ctx| {
            contain_unit(act, ctx, "etcd progress probe", |act, ctx| {
                act.etcd_probe(ctx)
            })
        });
        ctx.run_interval(AWAKE_EVERY, |act, _| {
            if let Some(sync) = act.etcd() {
                sync.note_awake();
            }
        });
        self.etcd_open(ctx);
    }

    /// Before a supervised restart: the context's futures are gone; `started` opens anew. The
    /// view stays until the new read replaces it.
    pub(super) fn etcd_restarting(&mut self) {
        if let Some(sync) = self.etcd() {
            sync.generation += 1;
            sync.tasks = Tasks::default();
            sync.session = None;
            sync.backoff = FIRST_BACKOFF;
            sync.awake = Instant::now();
        }
    }

    /// After a contained panic: the view is read again.
    pub(super) fn etcd_recover(&mut self, ctx: &mut Context<Self>) {
        if let Some(sync) = self.etcd() {
            sync.backoff = FIRST_BACKOFF;
        }
        self.etcd_start_over(ctx, "recovering from a panic");
    }

    /// Gives up the session and opens a new one after the backoff.
    fn etcd_start_over(&mut self, ctx: &mut Context<Self>, reason: &str) {
        let Some(sync) = self.etcd() else {
            return;
        };
        warn!(
            reason,
            retry_in = ?sync.backoff,
            "KV store (etcd) unavailable: reads answered from the last view, changes refused until it is back"
        );
        sync.generation += 1;
        sync.tasks.cancel(ctx);
        sync.session = None;
        let delay = sync.backoff;
        sync.backoff = (sync.backoff * 2).min(MAX_BACKOFF);
        let generation = sync.generation;
        let open = ctx.run_later(delay, move |act, ctx| {
            if act.etcd_generation() == Some(generation) {
                act.etcd_open(ctx);
            }
        });
        if let Some(sync) = self.etcd() {
            sync.tasks.open = Some(open);
        }
    }

    /// Connects and reads everything under the prefix.
    fn etcd_open(&mut self, ctx: &mut Context<Self>) {
        let Some(sync) = self.etcd() else {
            return;
        };
        let generation = sync.generation;
        let opening = open_session(
            sync.endpoints.clone(),
            sync.security.clone(),
            sync.keys.clone(),
        );
        let open = ctx.spawn(opening.into_actor(self).map(move |opened, act, ctx| {
            if act.etcd_generation() != Some(generation) {
                return;
            }
            match opened {
                Ok(opened) => act.etcd_opened(ctx, opened),
                Err(reason) => act.etcd_start_over(ctx, &reason),
            }
        }));
        if let Some(sync) = self.etcd() {
            sync.tasks.open = Some(open);
        }
    }

    /// The state is read: it becomes the view, the registry hears ORDER_TOPIC_CONFIG, and the
    /// watch starts after the read's revision.
    fn etcd_opened(&mut self, ctx: &mut Context<Self>, opened: Opened) {
        let Opened {
            client,
            revision,
            cluster,
            read,
        } = opened;
        let Self {
            tables, backend, ..
        } = self;
        let Backend::Etcd(sync) = backend else {
            return;
        };
        let read_tables = tables_of(&sync.keys, &read);
        sync.view.loaded(tables, read_tables, revision, cluster);
        info!(
            revision,
            keys = read.len(),
            "KV store (etcd): view loaded; watching for changes"
        );
        sync.session = Some(Session {
            client,
            requests: None,
            asked: None,
            heard: Instant::now(),
        });
        self.publish_order_conf();
        self.etcd_watch(ctx, revision + 1);
    }

    /// Opens the watch of the prefix from revision `from`.
    fn etcd_watch(&mut self, ctx: &mut Context<Self>, from: i64) {
        let Some(sync) = self.etcd() else {
            return;
        };
        let Some(session) = &sync.session else {
            return;
        };
        let mut watches = session
            .client
            .watch_client()
            .max_decoding_message_size(MAX_MESSAGE);
        let dir = sync.keys.dir.clone();
        let generation = sync.generation;
        let options = WatchOptions::new().with_prefix().with_start_revision(from);
        let opening = async move { within(TIMEOUT, watches.watch(dir, Some(options))).await };
        let watch = ctx.spawn(opening.into_actor(self).map(move |stream, act, ctx| {
            if act.etcd_generation() != Some(generation) {
                return;
            }
            match stream {
                Ok(stream) => {
                    let (requests, responses) = stream.split();
                    if let Some(session) = act.etcd().and_then(|sync| sync.session.as_mut()) {
                        session.requests = Some(requests);
                    }
                    act.etcd_next_watched(ctx, responses);
                }
                Err(e) => act.etcd_start_over(ctx, &format!("cannot watch: {e}")),
            }
        }));
        if let Some(sync) = self.etcd() {
            sync.tasks.watch = Some(watch);
        }
    }

    /// Waits for the watch's next answer.
    fn etcd_next_watched(&mut self, ctx: &mut Context<Self>, mut responses: WatchResponseStream) {
        let Some(generation) = self.etcd_generation() else {
            return;
        };
        let next = async move {
            let answer = responses.message().await;
            (responses, answer)
        };
        let watch = ctx.spawn(
            next.into_actor(self)
                .map(move |(responses, answer), act, ctx| {
                    if act.etcd_generation() != Some(generation) {
                        return;
                    }
                    let handled = match answer {
                        Ok(Some(answer)) => act.etcd_watched(&answer),
                        Ok(None) => Err("the watch ended".to_owned()),
                        Err(e) => Err(format!("the watch failed: {e}")),
                    };
                    match handled {
                        Ok(()) => act.etcd_next_watched(ctx, responses),
                        Err(reason) => act.etcd_start_over(ctx, &reason),
                    }
                }),
        );
        if let Some(sync) = self.etcd() {
            sync.tasks.watch = Some(watch);
        }
    }

    /// Applies one watch answer; the registry hears of a change of ORDER_TOPIC_CONFIG as of a
    /// local one.
    fn etcd_watched(&mut self, answer: &WatchResponse) -> Result<(), String> {
        if answer.canceled() {
            return Err(format!(
                "the watch was cancelled ({}; compacted at revision {})",
                answer.cancel_reason(),
                answer.compact_revision()
            ));
        }
        let Self {
            tables, backend, ..
        } = self;
        let Backend::Etcd(sync) = backend else {
            return Ok(());
        };
        if let Some(session) = &mut sync.session {
            session.heard = Instant::now();
        }
        // A watch that answers is a good session: the next failure starts over quickly again.
        sync.backoff = FIRST_BACKOFF;
        let mut order_changed = false;
        for event in answer.events() {
            let Some(kv) = event.kv() else {
                continue;
            };
            let Some(entry) = sync.keys.parse(kv.key()) else {
                debug!(key = %String::from_utf8_lossy(kv.key()), "KV store (etcd): not a KV key; ignored");
                continue;
            };
            // A removal's key-value is the tombstone: version 0 (a live key has 1 or more).
            let value = (kv.version() != 0).then(|| kv.value());
            debug!(entry = ?entry, revision = kv.mod_revision(), removed = value.is_none(), "KV store (etcd): watched");
            sync.view.event(tables, &entry, value, kv.mod_revision());
            order_changed |= entry.namespace() == ORDER_TOPIC_CONFIG_NAMESPACE;
        }
        sync.view.caught_up();
        if order_changed {
            self.publish_order_conf();
        }
        Ok(())
    }

    /// Every [`PROBE_EVERY`]: gives up a watch that left the last progress request unanswered
    /// for [`TIMEOUT`], else asks for progress again.
    fn etcd_probe(&mut self, ctx: &mut Context<Self>) {
        let Some(sync) = self.etcd() else {
            return;
        };
        let generation = sync.generation;
        let Some(session) = &mut sync.session else {
            return;
        };
        if let Some(asked) = session.asked {
            if session.heard < asked {
                if asked.elapsed() >= TIMEOUT {
                    let reason = format!(
                        "the watch did not answer a progress request within {}",
                        humantime::format_duration(TIMEOUT)
                    );
                    self.etcd_start_over(ctx, &reason);
                }
                return;
            }
            session.asked = None;
        }
        // None: the watch is not open yet, or the last request is still being sent.
        let Some(mut requests) = session.requests.take() else {
            return;
        };
        let sending = async move {
            let sent = within(TIMEOUT, requests.request_progress()).await;
            (requests, sent)
        };
        let probe = ctx.spawn(
            sending
                .into_actor(self)
                .map(move |(requests, sent), act, ctx| {
                    if act.etcd_generation() != Some(generation) {
                        return;
                    }
                    match sent {
                        Ok(()) => {
                            if let Some(session) = act.etcd().and_then(|sync| sync.session.as_mut())
                            {
                                session.requests = Some(requests);
                                session.asked = Some(Instant::now());
                            }
                        }
                        Err(e) => {
                            act.etcd_start_over(ctx, &format!("progress request failed: {e}"))
                        }
                    }
                }),
        );
        if let Some(sync) = self.etcd() {
            sync.tasks.probe = Some(probe);
        }
    }

    /// PUT_KV_CONFIG or DELETE_KV_CONFIG: one transaction in etcd, applied to the view and
    /// answered once etcd confirms it.
    pub(super) fn etcd_write(
        &mut self,
        namespace: String,
        key: String,
        change: Change,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<(), KvReplyError>> {
        if let Some(reason) = self.etcd().and_then(|sync| sync.just_frozen()) {
            self.save_failures += 1;
            return Box::pin(async { Err(KvReplyError::StoreUnavailable(reason)) });
        }
        let Some(sync) = self.etcd() else {
            return Box::pin(async { Ok(()) });
        };
        let Some(session) = &sync.session else {
            self.save_failures += 1;
            return Box::pin(async {
                Err(KvReplyError::StoreUnavailable(
                    "not connected to etcd (reconnecting); nothing was changed".into(),
                ))
            });
        };
        let marker = sync.keys.namespace(&namespace);
        let target = sync.keys.value(&namespace, &key);
        let write = match &change {
            Change::Put(Some(value)) => TxnOp::put(target.clone(), value.clone(), None),
            Change::Put(None) | Change::Delete => TxnOp::delete(target.clone()),
        };
        let txn = match &change {
            // A put creates the namespace's marker too, if it is missing.
            Change::Put(_) => Txn::new()
                .when([Compare::version(marker.clone(), CompareOp::Greater, 0)])
                .and_then([write.clone()])
                .or_else([TxnOp::put(marker, "", None), write]),
            Change::Delete => Txn::new().and_then([write]),
        };
        let mut kv = session
            .client
            .kv_client()
            .max_decoding_message_size(MAX_MESSAGE);
        let (tx, rx) = oneshot::channel();
        let writing = async move { within(TIMEOUT, kv.txn(txn)).await };
        ctx.spawn(writing.into_actor(self).map(move |answer, act, _| {
            let outcome = match answer {
                Ok(answer) => {
                    let revision = answer.header().map(|h| h.revision());
                    let Self {
                        tables, backend, ..
                    } = &mut *act;
                    if let Backend::Etcd(sync) = backend {
                        sync.view
                            .confirmed(tables, &namespace, &key, change, revision);
                    }
                    Ok(act.routes_update(&namespace, &key))
                }
                Err(failure) => {
                    act.save_failures += 1;
                    warn!(namespace = %Clipped(&namespace), key = %Clipped(&key), error = %failure, "KV change not written to etcd");
                    Err(KvReplyError::StoreUnavailable(change_failed(&failure)))
                }
            };
            let _ = tx.send(outcome);
        }));
        Box::pin(async move {
            match rx.await {
                Ok(Ok(routes_updated)) => {
                    if let Some(updated) = routes_updated {
                        // Unreachable only while the registry is gone; its supervisor brings it
                        // back.
                        let _ = updated.await;
                    }
                    Ok(())
                }
                Ok(Err(e)) => Err(e),
                Err(_) => Err(KvReplyError::StoreUnavailable(
                    "the KV store restarted before etcd answered; the change may or may not be \
                     in etcd"
                        .into(),
                )),
            }
        })
    }
}

/// Connects and reads everything under the prefix, page by page at one revision.
async fn open_session(
    endpoints: Vec<String>,
    security: Security,
    keys: Keys,
) -> Result<Opened, String> {
    let client = connect(&endpoints, &security, TIMEOUT).await?;
    let mut kv = client.kv_client().max_decoding_message_size(MAX_MESSAGE);
    let end = keys.end();
    let mut from = keys.dir.clone().into_bytes();
    let mut read = Vec::new();
    let mut at: Option<(i64, u64)> = None;
    loop {
        let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if let Some((revision, _)) = at {
            options = options.with_revision(revision);
        }
        let mut page = within(TIMEOUT, kv.get(from.clone(), Some(options)))
            .await
            .map_err(|e| format!("cannot read the KV config: {e}"))?;
        if at.is_none() {
            let header = page
                .header()
                .ok_or("etcd answered the read without a revision")?;
            at = Some((header.revision(), header.cluster_id()));
        }
        let more = page.more();
        let kvs = page.take_kvs();
        let last = kvs.last().map(|kv| kv.key().to_vec());
        read.extend(
            kvs.into_iter()
                .map(|kv| (kv.key().to_vec(), kv.value().to_vec())),
        );
        match last {
            Some(mut last) if more => {
                // The next page starts just after the last key.
                last.push(0);
                from = last;
            }
            _ => break,
        }
    }
    let (revision, cluster) = at.ok_or("etcd answered no read")?;
    Ok(Opened {
        client,
        revision,
        cluster,
        read,
    })
}

/// The etcd keys and values that hold `tables` under `prefix`, as the backend writes them: each
/// namespace's marker (empty) and each value; plus the range every key is in (`prefix/`), for
/// a copy into etcd (`etcd_migrate`).
pub fn etcd_layout(prefix: &str, tables: &super::KvTables) -> (String, Vec<(String, Vec<u8>)>) {
    let keys = Keys::new(prefix);
    let mut writes = Vec::new();
    for (namespace, entries) in tables.namespaces() {
        writes.push((keys.namespace(namespace), Vec::new()));
        for (key, value) in entries {
            writes.push((keys.value(namespace, key), value.clone().into_bytes()));
        }
    }
    (keys.dir, writes)
}

/// What became of a change that failed so: refused, or perhaps applied after all.
fn change_failed(failure: &EtcdFailure) -> String {
    match failure {
        EtcdFailure::Refused(e) => {
            format!("etcd did not take the change ({e}); nothing was changed")
        }
        EtcdFailure::TimedOut(_) => format!(
            "{failure}; the change is not applied here and may or may not have reached etcd \
             (read it back)"
        ),
    }
}
