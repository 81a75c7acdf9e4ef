//! The controller's store in etcd, shared by several NameServers (docs/controller.md, "A design
//! for us"): [`EtcdStore`] speaks the [store protocol](super::store) over one etcd client.
//!
//! Under a configurable prefix there is one key per broker set, `<prefix>/sets/<broker name>`,
//! holding the JSON of its [`BrokerSet`], so that every change is one transaction on one key;
//! and one leader key, `<prefix>/leader`, holding the [`LeaderInfo`] of the active controller and
//! attached to that node's lease, so it disappears when the node stops renewing it.
//!
//! Every [`Commit`] is guarded twice in the same transaction: the set's key must still be at the
//! `mod_revision` the change was computed from (which also covers both epochs: an epoch can only
//! move from the value the change was computed from), and the leader key must still be the one
//! this node created. A deposed leader's write therefore cannot commit, whatever it believes: the
//! guarantee is etcd's, not this actor's timing.
//!
//! Every node reads the sets at revision R and watches the prefix from R + 1, so a follower's view
//! is current (it answers reads) and a new leader starts warm. The watch is also how the
//! leadership is learnt: the events come in revision order, so when this node sees its own
//! leader key created at revision W, every change below W has already been reported, and
//! `Leadership { is_self: true, caught_up: W }` arrives after them.
//!
//! A watch or a keep-alive stream that breaks at the transport (its etcd member killed or cut
//! off) is opened again on the next endpoint, the watch from the revision after the last one it
//! reported and the lease while it certainly lives, so a minority member lost costs no
//! leadership. Whatever else breaks (every endpoint, the lease, a compacted watch), the actor
//! starts over from a fresh connection, lease and read, after a bounded backoff. A leader first
//! reports that it is no longer one: stepping down early is harmless, serving as a leader on a
//! lease that may be gone is not.

use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::broker_set::BrokerSet;
use super::store::{Commit, LeaderInfo, Revision, StoreError, StoreEvent};
use crate::etcd_api::{
    Client, Compare, CompareOp, GetOptions, GetResponse, KeyValue, LeaseKeepAliveStream,
    LeaseKeeper, PutOptions, Txn, TxnOp, WatchOptions, WatchResponse, WatchStream,
};
use crate::etcd_call::{connect, within, FIRST_BACKOFF, MAX_BACKOFF};

mod settings;
mod txn;

#[cfg(test)]
mod tests;

pub use settings::{EtcdSettings, DEFAULT_PREFIX, MIN_LEASE_TTL};
use txn::{commit, OurLeaderKey};

/// The keys under the prefix.
#[derive(Debug, Clone)]
struct Keys {
    /// `<prefix>/`: what is read and watched (the trailing slash keeps a sibling prefix such as
    /// `<prefix>2` out of the range).
    dir: String,
    /// `<prefix>/sets/`, followed by a broker set's name.
    sets: String,
    /// `<prefix>/leader`.
    leader: String,
}

impl Keys {
    fn new(prefix: &str) -> Self {
        let base = prefix.trim_end_matches('/');
        Keys {
            dir: format!("{base}/"),
            sets: format!("{base}/sets/"),
            leader: format!("{base}/leader"),
        }
    }

    fn set(&self, name: &str) -> String {
        format!("{}{name}", self.sets)
    }

    /// The broker set name a key is the record of, if it is one.
    fn set_name(&self, key: &[u8]) -> Option<String> {
        let name = key.strip_prefix(self.sets.as_bytes())?;
        match std::str::from_utf8(name) {
            Ok(name) if !name.is_empty() => Some(name.to_owned()),
            _ => None,
        }
    }
}

/// Where a store under `prefix` keeps what, for a copy into etcd (`etcd_migrate`): every key
/// under the first, broker set `name`'s record at `record_key(prefix, name)` (its JSON).
pub fn state_dir(prefix: &str) -> String {
    Keys::new(prefix).dir
}

/// The key of broker set `name`'s record under `prefix`.
pub fn record_key(prefix: &str, name: &str) -> String {
    Keys::new(prefix).set(name)
}

/// The active controller as last reported to the controller (reported again only on a change).
#[derive(Debug, Clone, Default, PartialEq)]
struct LeaderView {
    leader: Option<LeaderInfo>,
    is_self: bool,
    /// The create revision of our leader key while `is_self` (the revision at which we won, and
    /// what a [`Commit`] checks is still there); 0 otherwise.
    caught_up: Revision,
}

/// What is connected now: dropped (and its lease revoked on the next start) when starting over.
struct Session {
    client: Client,
    lease: i64,
}

/// The futures of the current session, cancelled when starting over so that no old watch or
/// keep-alive stream outlives it.
#[derive(Default)]
struct Tasks {
    open: Option<SpawnHandle>,
    keep_alive: Option<SpawnHandle>,
    watch: Option<SpawnHandle>,
    campaign: Option<SpawnHandle>,
}

impl Tasks {
    fn cancel(&mut self, ctx: &mut Context<EtcdStore>) {
        let handles = [
            self.open.take(),
            self.keep_alive.take(),
            self.watch.take(),
            self.campaign.take(),
        ];
        for handle in handles.into_iter().flatten() {
            ctx.cancel_future(handle);
        }
    }
}

/// The controller's state in etcd, and its leader election (see the module docs). It owns its
/// etcd client; the controller talks to it only by [`Commit`] and hears from it only by
/// [`StoreEvent`]s.
pub struct EtcdStore {
    settings: EtcdSettings,
    me: LeaderInfo,
    events: Recipient<StoreEvent>,
    keys: Keys,
    /// Bumped on every start over: a future of an older session finds it changed and does
    /// nothing.
    generation: u64,
    session: Option<Session>,
    tasks: Tasks,
    /// The lease of the session given up, revoked first thing by the next one so that the leader
    /// key (if ours) goes at once instead of at the end of its TTL.
    stale_lease: Option<i64>,
    backoff: Duration,
    view: LeaderView,
    campaigning: bool,
    /// The revision the watch delivers from when it is opened again: one past the last change
    /// it reported.
    watch_from: Revision,
    /// Streams opened again in a row without an answer on them (watch and keep-alive counted
    /// apart): past one per endpoint, every endpoint failed and the session starts over.
    reopened: Reopened,
}

#[derive(Default)]
struct Reopened {
    watch: usize,
    keep_alive: usize,
}

impl EtcdStore {
    /// A store for node `me` (its id and controller address, which the leader key holds while it
    /// leads), reporting to `events`. Nothing happens before it is started.
    pub fn new(settings: EtcdSettings, me: LeaderInfo, events: Recipient<StoreEvent>) -> Self {
        let keys = Keys::new(&settings.prefix);
        EtcdStore {
            settings,
            me,
            events,
            keys,
            generation: 0,
            session: None,
            tasks: Tasks::default(),
            stale_lease: None,
            backoff: FIRST_BACKOFF,
            view: LeaderView::default(),
            campaigning: false,
            watch_from: 0,
            reopened: Reopened::default(),
        }
    }

    /// Reports the leadership if it changed.
    fn set_view(&mut self, view: LeaderView) {
        if view == self.view {
            return;
        }
        info!(
            leader = ?view.leader.as_ref().map(|l| &l.id),
            is_self = view.is_self,
            caught_up = view.caught_up,
            "controller leadership"
        );
        self.view = view.clone();
        self.events.do_send(StoreEvent::Leadership {
            leader: view.leader,
            is_self: view.is_self,
            caught_up: view.caught_up,
        });
    }

    /// Tells the controller until when the lease certainly lives (`None`: lost), for
    /// `/metrics`.
    fn lease_until(&self, deadline: Option<Instant>) {
        self.events.do_send(StoreEvent::Lease {
            until: deadline.map(Instant::into_std),
        });
    }

    /// Gives up the session and opens a new one after the backoff. A leader says first that it
    /// no longer is one: the controller must stop answering as leader before anything else.
    fn start_over(&mut self, ctx: &mut Context<Self>, reason: &str) {
        if self.view.is_self {
            self.set_view(LeaderView::default());
        }
        warn!(reason, retry_in = ?self.backoff, "etcd store: starting over");
        self.lease_until(None);
        self.generation += 1;
        self.tasks.cancel(ctx);
        if let Some(session) = self.session.take() {
            self.stale_lease = Some(session.lease);
        }
        self.campaigning = false;
        self.reopened = Reopened::default();
        let delay = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        let generation = self.generation;
        self.tasks.open = Some(ctx.run_later(delay, move |act, ctx| {
            if act.generation == generation {
                act.open(ctx);
            }
        }));
    }

    /// Connects, takes a lease and reads the state.
    fn open(&mut self, ctx: &mut Context<Self>) {
        let generation = self.generation;
        let opening = open_session(
            self.settings.clone(),
            self.keys.dir.clone(),
            self.stale_lease,
        );
        self.tasks.open = Some(
            ctx.spawn(opening.into_actor(self).map(move |opened, act, ctx| {
                if act.generation != generation {
                    return;
                }
                match opened {
                    Ok(opened) => act.opened(ctx, opened),
                    Err(reason) => act.start_over(ctx, &reason),
                }
            })),
        );
    }

    /// The session is open: reports the state read, the leader, and follows both.
    fn opened(&mut self, ctx: &mut Context<Self>, opened: Opened) {
        let Opened {
            client,
            lease,
            ttl,
            keeper,
            stream,
            deadline,
            snapshot,
        } = opened;
        let Some(revision) = snapshot.header().map(|h| h.revision()) else {
            self.start_over(ctx, "etcd answered the read without a revision");
            return;
        };
        info!(lease, revision, "etcd store: session open");
        self.lease_until(Some(deadline));
        self.stale_lease = None;
        self.session = Some(Session { client, lease });

        let mut sets = Vec::new();
        let mut leader = None;
        for kv in snapshot.kvs() {
            if kv.key() == self.keys.leader.as_bytes() {
                leader = Some(kv);
            } else if let Some(name) = self.keys.set_name(kv.key()) {
                if let Some(set) = decode_set(&name, kv.value()) {
                    sets.push((set, kv.mod_revision()));
                }
            }
        }
        self.events.do_send(StoreEvent::Loaded { sets });
        self.leader_key(ctx, leader);

        self.keep_alive(ctx, keeper, stream, (ttl, deadline), ttl / 3);
        self.watch_from = revision + 1;
        self.watch(ctx);
    }

    /// The leader key is now `kv` (`None`: nobody holds it, so we run).
    fn leader_key(&mut self, ctx: &mut Context<Self>, kv: Option<&KeyValue>) {
        let Some(kv) = kv else {
            self.set_view(LeaderView::default());
            self.campaign(ctx);
            return;
        };
        let ours = self.session.as_ref().map(|s| s.lease);
        let is_self = kv.lease() != 0 && ours == Some(kv.lease());
        let leader = match serde_json::from_slice::<LeaderInfo>(kv.value()) {
            Ok(leader) => Some(leader),
            Err(e) => {
                warn!(error = %e, "etcd store: the leader key does not hold a controller");
                None
            }
        };
        self.set_view(LeaderView {
            leader,
            is_self,
            caught_up: if is_self { kv.create_revision() } else { 0 },
        });
    }

    /// Creates the leader key with our lease if nobody holds it. Whether we won is learnt from
    /// the watch (in order with the changes before it), not from the answer.
    fn campaign(&mut self, ctx: &mut Context<Self>) {
        if self.campaigning {
            return;
        }
        let Some(session) = &self.session else {
            return;
        };
        let value = match serde_json::to_vec(&self.me) {
            Ok(value) => value,
            Err(e) => {
                warn!(error = %e, "etcd store: cannot encode this controller's address");
                return;
            }
        };
        let leader = self.keys.leader.clone();
        let txn = Txn::new()
            .when([Compare::create_revision(
                leader.clone(),
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(
                leader,
                value,
                Some(PutOptions::new().with_lease(session.lease)),
            )]);
        let mut kv = session.client.kv_client();
        let limit = self.settings.timeout;
        let generation = self.generation;
        self.campaigning = true;
        let running = async move { within(limit, kv.txn(txn)).await };
        self.tasks.campaign = Some(ctx.spawn(running.into_actor(self).map(
            move |answer, act, ctx| {
                if act.generation != generation {
                    return;
                }
                act.campaigning = false;
                match answer {
                    Ok(answer) => debug!(won = answer.succeeded(), "etcd store: campaigned"),
                    Err(e) => act.start_over(ctx, &format!("campaign failed: {e}")),
                }
            },
        )));
    }

    /// Renews the lease every third of its TTL (the first time after `wait`); a renewal that
    /// fails or does not come back before the lease's deadline loses the lease, unless only its
    /// stream broke: then it is opened again.
    fn keep_alive(
        &mut self,
        ctx: &mut Context<Self>,
        keeper: LeaseKeeper,
        stream: LeaseKeepAliveStream,
        (ttl, deadline): (Duration, Instant),
        wait: Duration,
    ) {
        let generation = self.generation;
        let renewing = renew(keeper, stream, wait, deadline);
        self.tasks.keep_alive = Some(ctx.spawn(renewing.into_actor(self).map(
            move |(keeper, stream, renewed), act, ctx| {
                if act.generation != generation {
                    return;
                }
                match renewed {
                    Renewal::Renewed(ttl, deadline) => {
                        // A session that lasted a renewal was a good one: the next failure
                        // starts over quickly again.
                        act.backoff = FIRST_BACKOFF;
                        act.reopened.keep_alive = 0;
                        act.lease_until(Some(deadline));
                        act.keep_alive(ctx, keeper, stream, (ttl, deadline), ttl / 3)
                    }
                    Renewal::Broken(e) => act.reopen_keep_alive(ctx, (ttl, deadline), &e),
                    Renewal::Lost(e) => act.start_over(ctx, &format!("lease lost: {e}")),
                }
            },
        )));
    }

    /// Opens the lease's keep-alive stream again (on the next endpoint: the client moved on
    /// when this one failed) and renews at once, while the lease certainly lives.
    fn reopen_keep_alive(
        &mut self,
        ctx: &mut Context<Self>,
        (ttl, deadline): (Duration, Instant),
        reason: &str,
    ) {
        let Some(session) = &self.session else {
            return;
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || self.reopened.keep_alive >= self.settings.endpoints.len() {
            return self.start_over(ctx, &format!("lease lost: {reason}"));
        }
        self.reopened.keep_alive += 1;
        info!(reason, "etcd store: opening the lease's keep-alive again");
        let mut leases = session.client.lease_client();
        let lease = session.lease;
        let generation = self.generation;
        let opening = async move { within(left, leases.keep_alive(lease)).await };
        self.tasks.keep_alive = Some(ctx.spawn(opening.into_actor(self).map(
            move |opened, act, ctx| {
                if act.generation != generation {
                    return;
                }
                match opened {
                    Ok((keeper, stream)) => {
                        act.keep_alive(ctx, keeper, stream, (ttl, deadline), Duration::ZERO)
                    }
                    Err(e) => act.reopen_keep_alive(ctx, (ttl, deadline), &e.to_string()),
                }
            },
        )));
    }

    /// Opens the watch of the prefix from revision `watch_from`.
    fn watch(&mut self, ctx: &mut Context<Self>) {
        let Some(session) = &self.session else {
            return;
        };
        let mut client = session.client.watch_client();
        let dir = self.keys.dir.clone();
        let limit = self.settings.timeout;
        let generation = self.generation;
        let options = WatchOptions::new()
            .with_prefix()
            .with_start_revision(self.watch_from);
        let opening = async move { within(limit, client.watch(dir, Some(options))).await };
        self.tasks.watch = Some(ctx.spawn(opening.into_actor(self).map(
            move |stream, act, ctx| {
                if act.generation != generation {
                    return;
                }
                match stream {
                    Ok(stream) => act.next_watched(ctx, stream),
                    Err(e) => act.reopen_watch(ctx, &format!("watch failed: {e}")),
                }
            },
        )));
    }

    /// Waits for the watch's next answer.
    fn next_watched(&mut self, ctx: &mut Context<Self>, mut stream: WatchStream) {
        let generation = self.generation;
        let next = async move {
            let answer = stream.message().await;
            (stream, answer)
        };
        self.tasks.watch = Some(ctx.spawn(next.into_actor(self).map(
            move |(stream, answer), act, ctx| {
                if act.generation != generation {
                    return;
                }
                let answer = match answer {
                    Ok(Some(answer)) => answer,
                    Ok(None) => return act.reopen_watch(ctx, "the watch ended"),
                    Err(e) => return act.reopen_watch(ctx, &format!("watch failed: {e}")),
                };
                act.reopened.watch = 0;
                match act.watched(ctx, &answer) {
                    Ok(()) if act.generation == generation => act.next_watched(ctx, stream),
                    Ok(()) => {}
                    Err(reason) => act.start_over(ctx, &reason),
                }
            },
        )));
    }

    /// Opens the watch again from where it stopped (on the next endpoint: the client moved on
    /// when this one failed); after one try per endpoint, starts over.
    fn reopen_watch(&mut self, ctx: &mut Context<Self>, reason: &str) {
        if self.reopened.watch >= self.settings.endpoints.len() {
            return self.start_over(ctx, reason);
        }
        self.reopened.watch += 1;
        info!(
            reason,
            from = self.watch_from,
            "etcd store: opening the watch again"
        );
        self.watch(ctx);
    }

    /// Reports the changes of one watch answer, in order.
    fn watched(&mut self, ctx: &mut Context<Self>, answer: &WatchResponse) -> Result<(), String> {
        if answer.canceled() {
            return Err(format!(
                "the watch was cancelled ({}; compacted at revision {})",
                answer.cancel_reason(),
                answer.compact_revision()
            ));
        }
        for event in answer.events() {
            let Some(kv) = event.kv() else {
                continue;
            };
            // A removal's key-value is the tombstone: its key and the removal's revision, with
            // version 0 (every live key has a version of 1 or more).
            let removed = kv.version() == 0;
            self.watch_from = self.watch_from.max(kv.mod_revision() + 1);
            if kv.key() == self.keys.leader.as_bytes() {
                self.leader_key(ctx, (!removed).then_some(kv));
            } else if let Some(name) = self.keys.set_name(kv.key()) {
                let record = if removed {
                    None
                } else {
                    match decode_set(&name, kv.value()) {
                        Some(set) => Some(set),
                        None => continue,
                    }
                };
                self.events.do_send(StoreEvent::Changed {
                    name,
                    record,
                    revision: kv.mod_revision(),
                });
            }
        }
        Ok(())
    }

    /// Forgets the session, for a restart by a supervisor or a stop; the lease is revoked on a
    /// detached task (best effort: it expires by itself otherwise).
    fn close(&mut self) {
        if self.view.is_self {
            self.set_view(LeaderView::default());
        }
        self.generation += 1;
        self.tasks = Tasks::default();
        self.campaigning = false;
        if let Some(session) = self.session.take() {
            let mut leases = session.client.lease_client();
            let limit = self.settings.timeout;
            let lease = session.lease;
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = within(limit, leases.revoke(lease)).await;
                });
            }
        }
    }
}

impl Actor for EtcdStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if !self.settings.enabled() {
            warn!("etcd store started without endpoints: every commit fails");
            return;
        }
        self.open(ctx);
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.close();
    }
}

impl actix::Supervised for EtcdStore {
    fn restarting(&mut self, _: &mut Self::Context) {
        self.close();
        self.backoff = FIRST_BACKOFF;
    }
}

impl Handler<Commit> for EtcdStore {
    type Result = ResponseFuture<Result<Revision, StoreError>>;

    fn handle(&mut self, msg: Commit, _: &mut Context<Self>) -> Self::Result {
        let (kv, ours) = match &self.session {
            Some(_) if !self.view.is_self => return Box::pin(async { Err(StoreError::NotLeader) }),
            Some(session) => (
                session.client.kv_client(),
                OurLeaderKey {
                    key: self.keys.leader.clone(),
                    created: self.view.caught_up,
                    lease: session.lease,
                },
            ),
            None if !self.settings.enabled() => {
                return Box::pin(async {
                    Err(StoreError::Unavailable(
                        "no etcd endpoints configured".into(),
                    ))
                })
            }
            None => return Box::pin(async { Err(StoreError::NotLeader) }),
        };
        debug!(set = %msg.name, expected = msg.expected, removal = msg.record.is_none(), "commit");
        let key = self.keys.set(&msg.name);
        Box::pin(commit(kv, key, ours, msg, self.settings.timeout))
    }
}

/// A record read from etcd, or `None` (logged) when it is not one: the rest of the state is
/// still served.
fn decode_set(name: &str, value: &[u8]) -> Option<BrokerSet> {
    match serde_json::from_slice::<BrokerSet>(value) {
        Ok(set) if set.name == name => Some(set),
        Ok(set) => {
            warn!(key = name, name = %set.name, "etcd store: a broker set under another name's key; ignored");
            None
        }
        Err(e) => {
            warn!(key = name, error = %e, "etcd store: not a broker set record; ignored");
            None
        }
    }
}

/// An open session, before the actor takes it.
struct Opened {
    client: Client,
    lease: i64,
    ttl: Duration,
    keeper: LeaseKeeper,
    stream: LeaseKeepAliveStream,
    /// Before this instant the lease is certainly alive in etcd.
    deadline: Instant,
    snapshot: GetResponse,
}

/// Connects, revokes the last session's lease (best effort), grants and starts renewing a new
/// one, and reads everything under `dir`.
async fn open_session(
    settings: EtcdSettings,
    dir: String,
    stale_lease: Option<i64>,
) -> Result<Opened, String> {
    let limit = settings.timeout;
    let client = connect(&settings.endpoints, &settings.security, limit).await?;
    let mut leases = client.lease_client();
    if let Some(stale) = stale_lease {
        if let Err(e) = within(limit, leases.revoke(stale)).await {
            debug!(lease = stale, error = %e, "etcd store: the last lease was not revoked");
        }
    }
    let asked = Instant::now();
    let granted = within(limit, leases.grant(settings.ttl_seconds()))
        .await
        .map_err(|e| format!("cannot take a lease: {e}"))?;
    if granted.ttl() <= 0 || !granted.error().is_empty() {
        return Err(format!("etcd refused the lease: {}", granted.error()));
    }
    let lease = granted.id();
    // The lease lives at least its TTL from the moment it was asked for.
    let ttl = Duration::from_secs(granted.ttl().unsigned_abs());
    let deadline = asked + ttl;
    let (keeper, stream) = within(limit, leases.keep_alive(lease))
        .await
        .map_err(|e| format!("cannot renew the lease: {e}"))?;
    let mut kv = client.kv_client();
    let snapshot = within(limit, kv.get(dir, Some(GetOptions::new().with_prefix())))
        .await
        .map_err(|e| format!("cannot read the state: {e}"))?;
    Ok(Opened {
        client,
        lease,
        ttl,
        keeper,
        stream,
        deadline,
        snapshot,
    })
}

/// How a renewal ended.
enum Renewal {
    /// The new TTL and the deadline before which the lease certainly lives.
    Renewed(Duration, Instant),
    /// The stream broke (its endpoint failed): the lease may still live.
    Broken(String),
    /// The lease is gone, or may be.
    Lost(String),
}

/// One renewal, after `wait`. The keeper and its stream come back for the next one.
async fn renew(
    mut keeper: LeaseKeeper,
    mut stream: LeaseKeepAliveStream,
    wait: Duration,
    deadline: Instant,
) -> (LeaseKeeper, LeaseKeepAliveStream, Renewal) {
    tokio::time::sleep(wait).await;
    let asked = Instant::now();
    if let Err(e) = keeper.keep_alive().await {
        return (keeper, stream, Renewal::Broken(e.to_string()));
    }
    let left = deadline.saturating_duration_since(Instant::now());
    let renewed = match tokio::time::timeout(left, stream.message()).await {
        Err(_) => Renewal::Lost("no renewal before the lease's deadline".to_owned()),
        Ok(Err(e)) => Renewal::Broken(e.to_string()),
        Ok(Ok(None)) => Renewal::Broken("the keep-alive stream ended".to_owned()),
        Ok(Ok(Some(answer))) if answer.ttl() <= 0 => {
            Renewal::Lost("the lease expired or was revoked".to_owned())
        }
        Ok(Ok(Some(answer))) => {
            let ttl = Duration::from_secs(answer.ttl().unsigned_abs());
            Renewal::Renewed(ttl, asked + ttl)
        }
    };
    (keeper, stream, renewed)
}
