//! The 5.x controller embedded in the NameServer (RIP-44, docs/controller.md): broker ids,
//! master elections and SyncStateSets for brokers in controller mode.
//!
//! One [`Controller`] actor owns the in-memory view of every broker set ([`replicas`]) and the
//! heartbeat table ([`heartbeats`]). A request that changes a set is checked against the view,
//! its change is committed by the store ([`store`]: a local file, or etcd shared by several
//! NameServers) and only then answered, one change at a time. Elections after a master is lost
//! are its own requests, triggered by a closed connection, an expired heartbeat or the periodic
//! sweep; their outcome is announced to the brokers ([`notify`]).

pub mod broker_set;
pub mod config_update;
mod elect;
pub mod etcd;
pub mod figures;
pub mod file_store;
pub mod heartbeats;
pub mod liveness;
pub mod notify;
pub mod observe;
pub mod replicas;
pub mod requests;
pub mod store;

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::time::{Duration, Instant};

use actix::prelude::*;
use rmq_protocol::controller::{remark, GetMetadataResponseHeader, NotifyBrokerRoleChangedHeader};
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};
use tracing::{error, info, warn};

use crate::messages::{CloseAll, CloseConnection, ConnectionClosed, ConnectionOpened, DrainAll};
use crate::outbound::Notify;
use crate::response::system_error;
use crate::route::ConnId;
use broker_set::BrokerSet;
use figures::{CommitFailure, ControllerFigures, ElectionWatch, Handled};
use heartbeats::{Heartbeats, Lost};
use observe::{ControllerSnapshot, DescribeController, Lease, Role};
use replicas::{Decision, ReplicaTables};
use requests::Call;
use store::{Commit, LeaderInfo, Revision, StoreError, StoreEvent};

/// How long a change may wait for the store before the request is answered SYSTEM_ERROR.
const COMMIT_TIMEOUT: Duration = Duration::from_secs(3);

/// What a [`Commit`] sent with [`COMMIT_TIMEOUT`] comes back as.
type CommitOutcome =
    Result<Result<Result<Revision, StoreError>, MailboxError>, tokio::time::error::Elapsed>;

/// How the controller is configured (Java's `ControllerConfig` keys, docs/controller.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerSettings {
    /// `controllerDLegerGroup`: 1005's `group`.
    pub group: String,
    /// `controllerDLegerPeers`: (node id, controller address) of every node.
    pub peers: Vec<(String, String)>,
    /// `controllerDLegerSelfId`.
    pub self_id: String,
    /// `enableElectUncleanMaster`.
    pub elect_unclean: bool,
    /// `notifyBrokerRoleChanged`.
    pub notify_role_changed: bool,
    /// `scanNotActiveBrokerInterval`: the heartbeat-expiry scan.
    pub scan_not_active_broker_interval: Duration,
    /// `scanInactiveMasterInterval`: the leader's sweep for sets whose master is gone.
    pub scan_inactive_master_interval: Duration,
    /// `electMasterMaxRetryCount`: tries of an election the controller starts itself.
    pub elect_max_retry: u32,
    /// Every setting as properties (1010), Java's names.
    pub properties: BTreeMap<String, String>,
    /// Keys 1009 may not change (`configBlackList`).
    pub black_list: Vec<String>,
    /// Where 1009 persists the configuration (`configStorePath`).
    pub config_store: config_update::ConfigStore,
}

impl ControllerSettings {
    /// This node's id and controller address.
    pub fn me(&self) -> LeaderInfo {
        let address = self
            .peers
            .iter()
            .find(|(id, _)| *id == self.self_id)
            .map(|(_, addr)| addr.clone())
            .unwrap_or_default();
        LeaderInfo {
            id: self.self_id.clone(),
            address,
        }
    }

    /// 1005's `peers`: `n0:host:port;n1:host:port;`.
    fn peers_text(&self) -> String {
        self.peers
            .iter()
            .map(|(id, addr)| format!("{id}:{addr};"))
            .collect()
    }
}

/// A controller request from a connection of the controller's port.
#[derive(Debug, Message)]
#[rtype(result = "RemotingCommand")]
pub struct ControllerRequest {
    pub call: Call,
    pub conn: ConnId,
}

/// A controller request answered at once by the connection, its frame refused (`answer`: the
/// answer's code), counted as Java counts it (`figures::Handled::of_refused`).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ControllerRequestUnread {
    pub code: rmq_protocol::RequestCode,
    pub answer: ResponseCode,
}

/// The state of leadership as this node sees it.
#[derive(Debug, Clone, Default)]
struct Leadership {
    leader: Option<LeaderInfo>,
    is_self: bool,
    /// The store revision the view must reach before a new leader serves.
    caught_up: Revision,
}

/// Owner of the controller's view, heartbeat table and leadership (module docs).
pub struct Controller {
    settings: ControllerSettings,
    store: Recipient<Commit>,
    tables: ReplicaTables,
    /// The highest store revision applied to the view.
    applied: Revision,
    heartbeats: Heartbeats,
    leadership: Leadership,
    /// Connections of the controller port, to close a broker whose heartbeats expired.
    connections: HashMap<ConnId, Recipient<CloseConnection>>,
    /// Where NOTIFY_BROKER_ROLE_CHANGED goes (crate::outbound).
    notifier: Recipient<Notify>,
    /// The server is stopping: no longer the leader, so that closing the brokers' connections
    /// does not read as every master lost (Java shuts its controller down first, too).
    stopping: bool,
    /// What `/metrics` shows of the controller ([`figures`]).
    figures: ControllerFigures,
    /// The etcd lease, as the store last reported it.
    lease: Lease,
}

impl Controller {
    pub fn new(
        settings: ControllerSettings,
        store: Recipient<Commit>,
        notifier: Recipient<Notify>,
    ) -> Self {
        Controller {
            settings,
            store,
            tables: ReplicaTables::default(),
            applied: 0,
            heartbeats: Heartbeats::default(),
            leadership: Leadership::default(),
            connections: HashMap::new(),
            notifier,
            stopping: false,
            figures: ControllerFigures::default(),
            lease: Lease::default(),
        }
    }

    /// This node's role, with Java's values (`observe::Role`).
    fn role(&self) -> Role {
        match &self.leadership {
            _ if self.stopping => Role::Unknown,
            _ if self.serving() => Role::Leader,
            Leadership { is_self: true, .. } | Leadership { leader: None, .. } => Role::Candidate,
            Leadership {
                leader: Some(_), ..
            } => Role::Follower,
        }
    }

    /// Whether leader-only requests are served: leader, and the view caught up.
    fn serving(&self) -> bool {
        self.leadership.is_self && self.applied >= self.leadership.caught_up && !self.stopping
    }

    fn not_leader() -> RemotingCommand {
        RemotingCommand::response(
            ResponseCode::CONTROLLER_NOT_LEADER,
            Some(remark::NOT_LEADER.to_owned()),
        )
    }

    /// 1005.
    fn metadata(&self) -> RemotingCommand {
        let leader = self.leadership.leader.as_ref();
        let header = GetMetadataResponseHeader {
            group: Some(self.settings.group.clone()),
            controller_leader_id: leader.map(|l| l.id.clone()),
            controller_leader_address: leader.map(|l| l.address.clone()),
            is_leader: self.serving(),
            peers: Some(self.settings.peers_text()),
        };
        RemotingCommand::success().with_ext_fields(header.to_ext())
    }

    /// 1010.
    fn config(&self) -> RemotingCommand {
        let text = rmq_protocol::properties::format(
            self.settings
                .properties
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str())),
        );
        RemotingCommand::success().with_body(text.into_bytes())
    }

    /// 1009: the keys that take effect at once are applied, every known key is kept for 1010,
    /// and the whole configuration is written to the config store file (when there is one)
    /// before the answer, as Java persists it (`config_update`).
    fn update_config(
        &mut self,
        body: &[u8],
    ) -> Pin<Box<dyn ActorFuture<Self, Output = RemotingCommand>>> {
        let accepted = match config_update::prepare(&self.settings, body) {
            Ok(accepted) => accepted,
            Err(refused) => {
                warn!(reason = %crate::logging::Clipped(&refused.remark()), "controller config update refused");
                let code = match refused {
                    config_update::Refused::BlackListed { .. } => ResponseCode::NO_PERMISSION,
                    _ => ResponseCode::SYSTEM_ERROR,
                };
                return Box::pin(fut::ready(RemotingCommand::response(
                    code,
                    Some(refused.remark()),
                )));
            }
        };
        for (key, value) in &accepted.applied {
            info!(key = %crate::logging::Clipped(key), value = %crate::logging::Clipped(value), "controller configuration updated");
        }
        self.settings = accepted.settings;
        let Some((path, text)) = accepted.file else {
            return Box::pin(fut::ready(RemotingCommand::success()));
        };
        let shown = path.display().to_string();
        let write = crate::background::spawn(move || {
            crate::persist::write_atomically(&path, text.as_bytes())
        });
        Box::pin(write.into_actor(self).map(move |result, _, _| {
            let failure = match result {
                Ok(Ok(())) => return RemotingCommand::success(),
                Ok(Err(err)) => err.to_string(),
                Err(join) => join.to_string(),
            };
            error!(path = %shown, error = %failure, "controller config store not saved");
            system_error(format!(
                "controller configuration updated but not persisted to {shown}: {failure}"
            ))
        }))
    }

    /// Answers `call`; a change is committed first (the returned future does it).
    fn decide(&mut self, call: Call, conn: ConnId) -> Result<Decision, RemotingCommand> {
        let now = Instant::now();
        if call.leader_only() && !self.serving() {
            return Err(Self::not_leader());
        }
        let live = self.heartbeats.at(now);
        let tables = &self.tables;
        Ok(match call {
            Call::Heartbeat(h) => {
                if let Some(id) = h.broker_id {
                    self.heartbeats.beat(&h, id, conn, now);
                }
                return Err(RemotingCommand::response(
                    ResponseCode::SUCCESS,
                    Some(remark::HEARTBEAT_SUCCESS.to_owned()),
                ));
            }
            Call::Metadata => return Err(self.metadata()),
            Call::GetConfig => return Err(self.config()),
            // Answered by `handle`, which waits for the config store file.
            Call::UpdateConfig(_) => return Err(system_error("misrouted config update")),
            Call::SyncStateData(None) => {
                return Err(system_error(remark::NOT_SET));
            }
            Call::SyncStateData(Some(names)) => {
                return Err(tables.sync_state_data(&names, &live));
            }
            Call::AlterSyncStateSet(h, set) => tables.alter_sync_state_set(&h, &set, &live),
            Call::ElectMaster(h) => tables.elect_master(
                &h.broker_name,
                Some(h.broker_id),
                h.designate_elect,
                self.settings.elect_unclean,
                &live,
            ),
            Call::RegisterBroker(h) => tables.register_broker(&h, &live),
            Call::ReplicaInfo(h) => tables.replica_info(&h),
            Call::CleanBrokerData(h) => tables.clean_broker_data(&h, &live),
            Call::NextBrokerId(h) => tables.next_broker_id(&h),
            Call::ApplyBrokerId(h) => tables.apply_broker_id(&h),
        })
        .and_then(|decision| self.bounded(decision))
    }

    /// A decision whose change would grow the state past its bounds is refused instead
    /// (`replicas::MAX_STATE_BYTES`): what clients send can never make the state too large for
    /// a start to read.
    fn bounded(&self, decision: Decision) -> Result<Decision, RemotingCommand> {
        let Some(change) = &decision.change else {
            return Ok(decision);
        };
        match self.tables.admits(change) {
            Ok(()) => Ok(decision),
            Err(why) => {
                warn!(set = %crate::logging::Clipped(&change.name), reason = %why, "controller change refused");
                Err(system_error(format!("refused: {why}")))
            }
        }
    }

    /// Commits `decision`'s change (if any), applies it, announces an election, and answers
    /// with how the request was handled (`figures::Handled`).
    fn carry_out(
        &mut self,
        decision: Decision,
    ) -> impl ActorFuture<Self, Output = (RemotingCommand, Handled)> + 'static {
        let Decision {
            response,
            change,
            elected,
        } = decision;
        let commit = change.as_ref().map(|c| {
            let send = self.store.send(Commit {
                name: c.name.clone(),
                expected: c.expected,
                record: c.record.clone(),
            });
            tokio::time::timeout(COMMIT_TIMEOUT, send)
        });
        let sent = Instant::now();
        async move {
            match commit {
                Some(commit) => Some(commit.await),
                None => None,
            }
        }
        .into_actor(self)
        .map(move |outcome, act, _| {
            let Some(change) = change else {
                return (response, Handled::Success);
            };
            let committed = match outcome {
                Some(Ok(Ok(Ok(revision)))) => revision,
                other => {
                    let (failure, answer) = Self::not_committed(&change.name, other);
                    act.figures.commit(Err(failure), sent.elapsed());
                    return answer;
                }
            };
            act.figures.commit(Ok(()), sent.elapsed());
            act.apply(&change.name, change.record, committed);
            if let Some(elected) = elected {
                info!(broker = %change.name, master = ?elected.header.master_broker_id,
                    epoch = ?elected.header.master_epoch, "new master elected");
                act.announce(elected);
            }
            (response, Handled::Success)
        })
    }

    /// A commit that did not happen: why (for the figures) and the answer. A deposed leader
    /// answers CONTROLLER_NOT_LEADER (a success for Java's processor); the store's failure is
    /// `failed`, its silence `timeout`.
    fn not_committed(
        set: &str,
        outcome: Option<CommitOutcome>,
    ) -> (CommitFailure, (RemotingCommand, Handled)) {
        match outcome {
            Some(Ok(Ok(Err(StoreError::NotLeader)))) => (
                CommitFailure::NotLeader,
                (Self::not_leader(), Handled::Success),
            ),
            Some(Ok(Ok(Err(e)))) => {
                warn!(set = %set, error = %e, "controller change not committed");
                let failure = match e {
                    StoreError::Conflict { .. } => CommitFailure::Conflict,
                    _ => CommitFailure::Unavailable,
                };
                let answer = system_error(format!("controller change not committed: {e}"));
                (failure, (answer, Handled::Failed))
            }
            Some(Ok(Err(e))) => {
                let answer = system_error(format!("controller store unreachable: {e}"));
                (CommitFailure::Unavailable, (answer, Handled::Failed))
            }
            Some(Ok(Ok(Ok(_)))) | Some(Err(_)) | None => {
                let answer = system_error(format!(
                    "controller store did not answer within {COMMIT_TIMEOUT:?}"
                ));
                (CommitFailure::Timeout, (answer, Handled::Timeout))
            }
        }
    }

    fn apply(&mut self, name: &str, record: Option<BrokerSet>, revision: Revision) {
        let shrunk = match (self.tables.get(name), &record) {
            (Some(old), Some(new)) => old
                .sync_state_set
                .iter()
                .any(|id| !new.sync_state_set.contains(id))
                .then(|| (new.cluster.clone(), name.to_owned())),
            _ => None,
        };
        if self.tables.apply(name, record, revision) {
            if let Some(set) = shrunk {
                self.figures.sync_state_set_shrunk(set);
            }
        }
        self.applied = self.applied.max(revision);
    }

    /// NOTIFY_BROKER_ROLE_CHANGED to the live members of an election's set.
    fn announce(&self, elected: replicas::Elected) {
        if !self.settings.notify_role_changed {
            return;
        }
        let header = NotifyBrokerRoleChangedHeader::from(&elected.header);
        let cmd = notify::role_changed(&header, &elected.sync_state);
        self.notifier.do_send(Notify {
            to: elected.members.into_iter().map(|(_, addr)| addr).collect(),
            cmd,
            timeout: notify::SEND_TIMEOUT,
        });
    }

    /// Brokers lost (connection closed, heartbeat expired): on the leader, a lost master
    /// starts an election.
    fn lost(&mut self, lost: Vec<Lost>, ctx: &mut Context<Self>) {
        for broker in lost {
            info!(cluster = %broker.cluster, broker = %broker.name, id = broker.id,
                addr = %broker.address, "controller: broker no longer alive");
            let is_master = self
                .tables
                .get(&broker.name)
                .is_some_and(|s| s.master == Some(broker.id));
            if is_master && self.serving() {
                self.elect_after_loss(broker.name, self.settings.elect_max_retry.max(1), ctx);
            }
        }
    }

    /// An election the controller starts itself; tried again (up to `tries` in all) while it
    /// does not succeed.
    fn elect_after_loss(&mut self, name: String, tries: u32, ctx: &mut Context<Self>) {
        if !self.serving() || tries == 0 {
            return;
        }
        let live_now = Instant::now();
        let decision = self.tables.elect_master(
            &name,
            None,
            false,
            self.settings.elect_unclean,
            &self.heartbeats.at(live_now),
        );
        let watch = ElectionWatch::of(self.tables.get(&name), &name, "", &decision);
        let fut = self
            .carry_out(decision)
            .map(move |(response, _), act, ctx| {
                let code = response.response_code();
                act.figures.election(&watch, code);
                if code != ResponseCode::SUCCESS
                    && code != ResponseCode::CONTROLLER_MASTER_STILL_EXIST
                {
                    warn!(broker = %name, code = %code, remark = ?response.remark,
                    "controller: election after a lost master failed");
                    if tries > 1 {
                        ctx.run_later(Duration::from_secs(1), move |act, ctx| {
                            act.elect_after_loss(name, tries - 1, ctx)
                        });
                    }
                }
            });
        ctx.wait(fut);
    }

    fn scan(&mut self, ctx: &mut Context<Self>) {
        let lost = self.heartbeats.expire(Instant::now());
        for broker in &lost {
            if let Some(close) = self.connections.get(&broker.conn) {
                close.do_send(CloseConnection::Close {
                    reason: "controller heartbeat expired",
                });
            }
        }
        self.lost(lost, ctx);
    }

    fn sweep(&mut self, ctx: &mut Context<Self>) {
        if !self.serving() {
            return;
        }
        let live = self.heartbeats.at(Instant::now());
        for name in self.tables.needing_election(&live) {
            self.elect_after_loss(name, 1, ctx);
        }
    }
}

impl Actor for Controller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let me = self.settings.me();
        info!(id = %me.id, addr = %me.address, group = %self.settings.group,
            "controller started");
        ctx.run_interval(self.settings.scan_not_active_broker_interval, |act, ctx| {
            act.scan(ctx)
        });
        ctx.run_interval(self.settings.scan_inactive_master_interval, |act, ctx| {
            act.sweep(ctx)
        });
    }
}

impl Handler<ControllerRequest> for Controller {
    type Result = AtomicResponse<Self, RemotingCommand>;

    /// Counted as Java's processor counts: by request type and how it was handled, timed from
    /// here to the answer; an election also by its result.
    fn handle(&mut self, msg: ControllerRequest, _: &mut Context<Self>) -> Self::Result {
        let started = Instant::now();
        let request_type = figures::request_type(msg.call.code());
        if let Call::UpdateConfig(body) = &msg.call {
            // Answered once the config store file is written (Java's processor counts it
            // answered, whatever the write did).
            let updating = self.update_config(body).map(move |answer, act, _| {
                if let Some(kind) = request_type {
                    act.figures
                        .request(kind, Handled::Success, started.elapsed());
                }
                answer
            });
            return AtomicResponse::new(Box::pin(updating));
        }
        let elects = match &msg.call {
            Call::ElectMaster(h) => Some((h.broker_name.clone(), h.cluster_name.clone())),
            _ => None,
        };
        let decision = match self.decide(msg.call, msg.conn) {
            Err(answer) => {
                if let Some(kind) = request_type {
                    self.figures
                        .request(kind, Handled::Success, started.elapsed());
                }
                return AtomicResponse::new(Box::pin(fut::ready(answer)));
            }
            Ok(decision) => decision,
        };
        let watch = elects.map(|(name, cluster)| {
            ElectionWatch::of(self.tables.get(&name), &name, &cluster, &decision)
        });
        let answer = self.carry_out(decision).map(move |(answer, how), act, _| {
            if let Some(kind) = request_type {
                act.figures.request(kind, how, started.elapsed());
            }
            if let Some(watch) = &watch {
                act.figures.election(watch, answer.response_code());
            }
            answer
        });
        AtomicResponse::new(Box::pin(answer))
    }
}

impl Handler<ControllerRequestUnread> for Controller {
    type Result = ();

    fn handle(&mut self, msg: ControllerRequestUnread, _: &mut Context<Self>) {
        if let Some(kind) = figures::request_type(msg.code) {
            let how = Handled::of_refused(msg.answer);
            self.figures.request(kind, how, Duration::ZERO);
        }
    }
}

impl Handler<DescribeController> for Controller {
    type Result = MessageResult<DescribeController>;

    fn handle(&mut self, _: DescribeController, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        let live = self.heartbeats.at(now);
        MessageResult(ControllerSnapshot {
            group: self.settings.group.clone(),
            me: self.settings.me(),
            role: self.role(),
            leader: self.leadership.leader.clone(),
            sets: observe::sets(&self.tables, &live),
            active_brokers: live.active_by_set().into_iter().collect(),
            lease_remaining: self.lease.remaining(now),
            figures: self.figures.clone(),
        })
    }
}

impl Handler<StoreEvent> for Controller {
    type Result = ();

    fn handle(&mut self, event: StoreEvent, _: &mut Context<Self>) {
        match event {
            StoreEvent::Loaded { sets } => {
                self.applied = sets.iter().map(|(_, rev)| *rev).max().unwrap_or(0);
                self.tables.load(sets);
                info!(
                    sets = self.tables.len(),
                    revision = self.applied,
                    "controller view loaded"
                );
            }
            StoreEvent::Changed {
                name,
                record,
                revision,
            } => self.apply(&name, record, revision),
            StoreEvent::Leadership {
                leader,
                is_self,
                caught_up,
            } => {
                if is_self != self.leadership.is_self || leader != self.leadership.leader {
                    info!(leader = ?leader.as_ref().map(|l| &l.id), is_self,
                        "controller leadership changed");
                }
                self.figures.leader_seen(leader.as_ref());
                // A store reports every change below the revision it won at before it reports
                // the win (store.rs): the view is as new as that revision now.
                if is_self {
                    self.applied = self.applied.max(caught_up);
                }
                self.leadership = Leadership {
                    leader,
                    is_self,
                    caught_up,
                };
            }
            StoreEvent::Lease { until } => {
                self.lease = until.map_or(Lease::Lost, Lease::Until);
            }
        }
    }
}

impl Handler<ConnectionOpened> for Controller {
    type Result = ();

    fn handle(&mut self, msg: ConnectionOpened, _: &mut Context<Self>) {
        self.connections.insert(msg.conn, msg.close);
    }
}

impl Handler<ConnectionClosed> for Controller {
    type Result = ();

    fn handle(&mut self, msg: ConnectionClosed, ctx: &mut Context<Self>) {
        self.connections.remove(&msg.conn);
        let lost = self.heartbeats.closed(msg.conn);
        self.lost(lost, ctx);
    }
}

impl Handler<CloseAll> for Controller {
    type Result = usize;

    /// Closes every connection of the controller's port (the server is stopping); answers how
    /// many were told.
    fn handle(&mut self, _: CloseAll, _: &mut Context<Self>) -> usize {
        self.stopping = true;
        for close in self.connections.values() {
            close.do_send(CloseConnection::Close {
                reason: "server stopping",
            });
        }
        self.connections.len()
    }
}

impl Handler<DrainAll> for Controller {
    type Result = usize;

    /// The server drains (`server.shutdown_gracefully`): the controller's connections answer
    /// GO_AWAY to 5.x peers as the NameServer port's do; answers how many were told.
    fn handle(&mut self, _: DrainAll, _: &mut Context<Self>) -> usize {
        for close in self.connections.values() {
            close.do_send(CloseConnection::Drain);
        }
        self.connections.len()
    }
}
