//! The controller's replicated state and its rules, pure: one record per broker set
//! ([`BrokerSet`]), and one function per request that reads the record and returns the answer
//! and the change to commit (never applying it; the store does, see [`store`](super::store)). Java's
//! `ReplicasInfoManager` and `DefaultElectPolicy` are the specification (docs/controller.md).

use std::collections::{BTreeMap, BTreeSet};

use rmq_protocol::controller::{
    remark, AlterSyncStateSetHeader, AlterSyncStateSetResponseHeader, ApplyBrokerIdHeader,
    ApplyBrokerIdResponseHeader, BrokerReplicasInfo, CleanBrokerDataHeader, ControllerBody,
    ElectMasterResponseBody, ElectMasterResponseHeader, GetNextBrokerIdHeader,
    GetNextBrokerIdResponseHeader, GetReplicaInfoHeader, GetReplicaInfoResponseHeader,
    RegisterBrokerToControllerHeader, RegisterBrokerToControllerResponseHeader, ReplicaIdentity,
    ReplicasInfo, SyncStateSet,
};
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};

use super::broker_set::{BrokerSet, Member, FIRST_BROKER_ID};
use super::elect::elect;
use super::liveness::Liveness;
use super::store::Revision;

/// Most broker sets, and members of one set, the controller keeps: far above real fleets, and
/// what keeps a flood of invented registrations from growing the state (and each commit of the
/// local file) without bound.
pub const MAX_SETS: usize = 10_000;
pub const MAX_MEMBERS: usize = 1_000;

/// The most bytes the whole state, and one broker set, may take as stored (about, see
/// [`BrokerSet::stored_bytes`]): the state file stays well under what a start reads (64 MiB),
/// a set's record under etcd's request limit (1.5 MiB), whatever requests were sent.
pub const MAX_STATE_BYTES: usize = 16 << 20;
pub const MAX_SET_BYTES: usize = 1 << 20;

/// A change to commit: set `name`'s new record (`None`: removed), computed from the record at
/// `expected`.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub name: String,
    pub expected: Revision,
    pub record: Option<BrokerSet>,
}

/// After a successful election: the answer's header, for NOTIFY_BROKER_ROLE_CHANGED to the
/// set's live members.
#[derive(Debug, Clone, PartialEq)]
pub struct Elected {
    pub header: ElectMasterResponseHeader,
    pub sync_state: SyncStateSet,
    /// The members' (id, address) to tell.
    pub members: Vec<(i64, String)>,
}

/// The answer to a request and what it changes: `response` is sent once `change` (if any) is
/// committed.
#[derive(Debug, Clone)]
pub struct Decision {
    pub response: RemotingCommand,
    pub change: Option<Change>,
    pub elected: Option<Elected>,
}

impl Decision {
    fn answer(response: RemotingCommand) -> Self {
        Decision {
            response,
            change: None,
            elected: None,
        }
    }

    fn commit(response: RemotingCommand, change: Change) -> Self {
        Decision {
            response,
            change: Some(change),
            elected: None,
        }
    }
}

/// A response of `code` carrying `header`'s fields (Java builds failures from the response
/// header too), `remark` when given.
fn respond(
    code: ResponseCode,
    remark: Option<String>,
    header: &impl CommandHeader,
) -> RemotingCommand {
    RemotingCommand::response(code, remark).with_ext_fields(header.to_ext())
}

fn ok(header: &impl CommandHeader) -> RemotingCommand {
    respond(ResponseCode::SUCCESS, None, header)
}

/// Every broker set, each with its store revision.
#[derive(Debug, Clone, Default)]
pub struct ReplicaTables {
    sets: BTreeMap<String, (BrokerSet, Revision)>,
    /// The sum of the sets' [`BrokerSet::stored_bytes`].
    bytes: usize,
}

impl ReplicaTables {
    pub fn get(&self, name: &str) -> Option<&BrokerSet> {
        self.sets.get(name).map(|(set, _)| set)
    }

    pub fn revision(&self, name: &str) -> Revision {
        self.sets.get(name).map_or(0, |(_, rev)| *rev)
    }

    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    pub fn sets(&self) -> impl Iterator<Item = &BrokerSet> {
        self.sets.values().map(|(set, _)| set)
    }

    /// Replaces everything (a store's full load).
    pub fn load(&mut self, sets: Vec<(BrokerSet, Revision)>) {
        self.sets = sets
            .into_iter()
            .map(|(set, rev)| (set.name.clone(), (set, rev)))
            .collect();
        self.bytes = self.sets().map(BrokerSet::stored_bytes).sum();
    }

    /// The bytes the state takes as stored, about.
    pub fn stored_bytes(&self) -> usize {
        self.bytes
    }

    /// Whether `change` keeps the state and its set within [`MAX_STATE_BYTES`] and
    /// [`MAX_SET_BYTES`] (a change that does not grow them always does); the reason if not.
    pub fn admits(&self, change: &Change) -> Result<(), String> {
        let Some(record) = &change.record else {
            return Ok(());
        };
        let after = record.stored_bytes();
        let before = self.get(&change.name).map_or(0, BrokerSet::stored_bytes);
        if after <= before {
            return Ok(());
        }
        if after > MAX_SET_BYTES {
            return Err(format!(
                "broker set {} would take {after} bytes, over the {MAX_SET_BYTES}-byte limit of a set",
                change.name
            ));
        }
        let total = self.bytes - before + after;
        if total > MAX_STATE_BYTES {
            return Err(format!(
                "the controller's state would take {total} bytes, over its {MAX_STATE_BYTES}-byte limit"
            ));
        }
        Ok(())
    }

    /// Applies a committed change reported at `revision`; a report not newer than what is held
    /// is stale and ignored (answers whether it applied). A removal's revision is not kept, so
    /// a set created again later starts from revision 0's expectation.
    pub fn apply(&mut self, name: &str, record: Option<BrokerSet>, revision: Revision) -> bool {
        if revision <= self.revision(name) {
            return false;
        }
        let added = record.as_ref().map_or(0, BrokerSet::stored_bytes);
        let replaced = match record {
            Some(set) => self.sets.insert(name.to_owned(), (set, revision)),
            None => self.sets.remove(name),
        };
        let removed = replaced.map_or(0, |(set, _)| set.stored_bytes());
        self.bytes = (self.bytes + added).saturating_sub(removed);
        true
    }

    fn change(&self, name: &str, record: Option<BrokerSet>) -> Change {
        Change {
            name: name.to_owned(),
            expected: self.revision(name),
            record,
        }
    }

    // -----------------------------------------------------------------------------------------
    // One function per request.

    /// 1012 CONTROLLER_GET_NEXT_BROKER_ID.
    pub fn next_broker_id(&self, h: &GetNextBrokerIdHeader) -> Decision {
        let next = self
            .get(&h.broker_name)
            .map_or(FIRST_BROKER_ID, |s| s.next_id);
        Decision::answer(ok(&GetNextBrokerIdResponseHeader {
            cluster_name: h.cluster_name.clone(),
            broker_name: Some(h.broker_name.clone()),
            next_broker_id: Some(next),
        }))
    }

    /// 1013 CONTROLLER_APPLY_BROKER_ID.
    pub fn apply_broker_id(&self, h: &ApplyBrokerIdHeader) -> Decision {
        let header = ApplyBrokerIdResponseHeader {
            cluster_name: Some(h.cluster_name.clone()),
            broker_name: Some(h.broker_name.clone()),
        };
        let address = h.registered_address().unwrap_or_default().to_owned();
        let member = Member {
            address,
            check_code: h.register_check_code.clone(),
        };
        let id = h.applied_broker_id;
        let full = match self.get(&h.broker_name) {
            None => (self.sets.len() >= MAX_SETS).then_some("broker sets"),
            Some(set) => (set.members.len() >= MAX_MEMBERS && !set.members.contains_key(&id))
                .then_some("members in this broker set"),
        };
        if let Some(what) = full {
            return Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                Some(format!(
                    "Fail to apply brokerId: {id} in broker-set: {}: the controller holds its maximum of {what}",
                    h.broker_name
                )),
                &header,
            ));
        }
        let Some(set) = self.get(&h.broker_name) else {
            if id != FIRST_BROKER_ID {
                return Decision::answer(respond(
                    ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                    Some(format!(
                        "Broker-set: {} hasn't been registered in controller, but broker try to apply brokerId: {id}",
                        h.broker_name
                    )),
                    &header,
                ));
            }
            let mut set = BrokerSet::new(&h.cluster_name, &h.broker_name);
            set.members.insert(id, member);
            set.next_id = set.next_id.wrapping_add(1);
            return Decision::commit(ok(&header), self.change(&h.broker_name, Some(set)));
        };
        match set.members.get(&id) {
            None => {
                let mut set = set.clone();
                set.members.insert(id, member);
                set.next_id = set.next_id.wrapping_add(1);
                Decision::commit(ok(&header), self.change(&h.broker_name, Some(set)))
            }
            // A retry of the same claim: nothing changes.
            Some(held) if held.check_code == h.register_check_code => Decision::answer(ok(&header)),
            Some(_) => Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_ID_INVALID,
                Some(format!(
                    "Fail to apply brokerId: {id} in broker-set: {}",
                    h.broker_name
                )),
                &header,
            )),
        }
    }

    /// 1003 CONTROLLER_REGISTER_BROKER.
    pub fn register_broker(
        &self,
        h: &RegisterBrokerToControllerHeader,
        live: &impl Liveness,
    ) -> Decision {
        let mut header = RegisterBrokerToControllerResponseHeader {
            cluster_name: Some(h.cluster_name.clone()),
            broker_name: Some(h.broker_name.clone()),
            ..Default::default()
        };
        let Some(set) = self.get(&h.broker_name) else {
            return Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                Some(format!(
                    "Broker-set: {} hasn't been registered in controller",
                    h.broker_name
                )),
                &header,
            ));
        };
        let Some(member) = set.members.get(&h.broker_id) else {
            return Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                Some(format!(
                    "BrokerId: {} hasn't been registered in broker-set: {}",
                    h.broker_id, h.broker_name
                )),
                &header,
            ));
        };
        if let Some(master) = set
            .master
            .filter(|m| live.alive(&h.cluster_name, &h.broker_name, *m))
        {
            header.master_broker_id = Some(master);
            header.master_address = set.address(Some(master));
            header.master_epoch = Some(set.master_epoch);
            header.sync_state_set_epoch = Some(set.sync_state_set_epoch);
        }
        let response = ok(&header).with_body(set.sync_state().encode());
        if member.address == h.broker_address {
            return Decision::answer(response);
        }
        let mut set = set.clone();
        if let Some(m) = set.members.get_mut(&h.broker_id) {
            m.address = h.broker_address.clone();
        }
        Decision::commit(response, self.change(&h.broker_name, Some(set)))
    }

    /// 1004 CONTROLLER_GET_REPLICA_INFO.
    pub fn replica_info(&self, h: &GetReplicaInfoHeader) -> Decision {
        let Some(set) = self.get(&h.broker_name) else {
            return Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_METADATA_NOT_EXIST,
                Some(remark::BROKER_METADATA_NOT_EXIST.to_owned()),
                &GetReplicaInfoResponseHeader::default(),
            ));
        };
        let header = GetReplicaInfoResponseHeader {
            master_broker_id: set.master,
            master_address: set.address(set.master),
            master_epoch: Some(set.master_epoch),
        };
        Decision::answer(ok(&header).with_body(set.sync_state().encode()))
    }

    /// 1006 CONTROLLER_GET_SYNC_STATE_DATA, for the known names among `names`.
    pub fn sync_state_data(&self, names: &[String], live: &impl Liveness) -> RemotingCommand {
        let mut info = BrokerReplicasInfo::default();
        for name in names {
            let Some(set) = self.get(name) else {
                continue;
            };
            let (mut in_sync, mut not_in_sync) = (Vec::new(), Vec::new());
            for (id, member) in &set.members {
                let replica = ReplicaIdentity {
                    alive: Some(live.alive(&set.cluster, name, *id)),
                    broker_address: member.address.clone(),
                    broker_id: *id,
                    broker_name: name.clone(),
                };
                if set.sync_state_set.contains(id) {
                    in_sync.push(replica);
                } else {
                    not_in_sync.push(replica);
                }
            }
            info.replicas_info_table.insert(
                name.clone(),
                ReplicasInfo {
                    in_sync_replicas: in_sync,
                    master_address: set.address(set.master),
                    master_broker_id: set.master,
                    master_epoch: set.master_epoch,
                    not_in_sync_replicas: not_in_sync,
                    sync_state_set_epoch: set.sync_state_set_epoch,
                },
            );
        }
        RemotingCommand::success().with_body(info.encode())
    }

    /// 1001 CONTROLLER_ALTER_SYNC_STATE_SET.
    pub fn alter_sync_state_set(
        &self,
        h: &AlterSyncStateSetHeader,
        proposed: &SyncStateSet,
        live: &impl Liveness,
    ) -> Decision {
        let failed = |code: ResponseCode, text: String| {
            Decision::answer(respond(
                code,
                Some(text),
                &AlterSyncStateSetResponseHeader::default(),
            ))
        };
        let Some(set) = self.get(&h.broker_name) else {
            return failed(
                ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                remark::BROKER_METADATA_NOT_EXIST.to_owned(),
            );
        };
        if set.sync_state_set == proposed.sync_state_set {
            return failed(
                ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                remark::SYNC_STATE_SET_UNCHANGED.to_owned(),
            );
        }
        if set.master.is_none() || set.master != h.master_broker_id {
            return failed(
                ResponseCode::CONTROLLER_INVALID_MASTER,
                format!(
                    "Rejecting alter syncStateSet request because the current leader is:{{{}}}, not {{{}}}",
                    java_long(set.master),
                    java_long(h.master_broker_id)
                ),
            );
        }
        if h.master_epoch != set.master_epoch {
            return failed(
                ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH,
                format!(
                    "Rejecting alter syncStateSet request because the current master epoch is:{{{}}}, not {{{}}}",
                    set.master_epoch, h.master_epoch
                ),
            );
        }
        if proposed.sync_state_set_epoch != set.sync_state_set_epoch {
            return failed(
                ResponseCode::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
                format!(
                    "Rejecting alter syncStateSet request because the current syncStateSet epoch is:{{{}}}, not {{{}}}",
                    set.sync_state_set_epoch, proposed.sync_state_set_epoch
                ),
            );
        }
        for id in &proposed.sync_state_set {
            if !set.members.contains_key(id) {
                return failed(
                    ResponseCode::CONTROLLER_INVALID_REPLICAS,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't exist"),
                );
            }
            if !live.alive(&set.cluster, &set.name, *id) {
                return failed(
                    ResponseCode::CONTROLLER_BROKER_NOT_ALIVE,
                    format!("Rejecting alter syncStateSet request because the replicas {{{id}}} don't alive"),
                );
            }
        }
        if !set
            .master
            .is_some_and(|m| proposed.sync_state_set.contains(&m))
        {
            return failed(
                ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
                format!(
                    "Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {{{}}}",
                    java_long(set.master)
                ),
            );
        }
        let epoch = set.sync_state_set_epoch.wrapping_add(1);
        let mut next = set.clone();
        next.sync_state_set = proposed.sync_state_set.clone();
        next.sync_state_set_epoch = epoch;
        let response = ok(&AlterSyncStateSetResponseHeader {
            new_sync_state_set_epoch: epoch,
        })
        .with_body(next.sync_state().encode());
        Decision::commit(response, self.change(&h.broker_name, Some(next)))
    }

    /// 1002 CONTROLLER_ELECT_MASTER, from a broker or an admin (`broker_id` set), or from the
    /// controller itself on a lost master (`broker_id` -1 or `None`).
    pub fn elect_master(
        &self,
        broker_name: &str,
        broker_id: Option<i64>,
        designate: bool,
        unclean: bool,
        live: &impl Liveness,
    ) -> Decision {
        let Some(set) = self.get(broker_name) else {
            return Decision::answer(respond(
                ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
                Some(remark::BROKER_NOT_REGISTERED.to_owned()),
                &ElectMasterResponseHeader::default(),
            ));
        };
        match choose_master(set, broker_id, designate, unclean, live) {
            Some(new) if set.master == Some(new) => master_still_alive(set, broker_name, new),
            Some(new) => self.master_elected(set, broker_name, new, live),
            None => self.no_master(set, broker_name, broker_id),
        }
    }

    /// An election made `new` master: both epochs move, the SyncStateSet is `new` alone, and
    /// the set's live members are to be told.
    fn master_elected(
        &self,
        set: &BrokerSet,
        broker_name: &str,
        new: i64,
        live: &impl Liveness,
    ) -> Decision {
        let mut next = set.clone();
        next.master = Some(new);
        next.master_epoch = next.master_epoch.wrapping_add(1);
        next.sync_state_set = BTreeSet::from([new]);
        next.sync_state_set_epoch = next.sync_state_set_epoch.wrapping_add(1);
        let header = ElectMasterResponseHeader {
            master_broker_id: Some(new),
            master_address: set.address(Some(new)),
            master_epoch: Some(next.master_epoch),
            sync_state_set_epoch: Some(next.sync_state_set_epoch),
        };
        let body = ElectMasterResponseBody {
            broker_member_group: Some(set.member_group()),
            sync_state_set: next.sync_state_set.clone(),
        };
        let elected = Elected {
            header: header.clone(),
            sync_state: next.sync_state(),
            members: set
                .members
                .iter()
                .filter(|(id, _)| live.alive(&set.cluster, broker_name, **id))
                .map(|(id, m)| (*id, m.address.clone()))
                .collect(),
        };
        let mut decision = Decision::commit(
            ok(&header).with_body(body.encode()),
            self.change(broker_name, Some(next)),
        );
        decision.elected = Some(elected);
        decision
    }

    /// Nobody could be elected. The controller's own election (`broker_id` -1 or `None`)
    /// records that the set has no master (its master epoch moves); a broker's or an admin's
    /// request fails and changes nothing.
    fn no_master(&self, set: &BrokerSet, broker_name: &str, broker_id: Option<i64>) -> Decision {
        let header = ElectMasterResponseHeader::default();
        if broker_id.is_none_or(|id| id == -1) {
            let mut next = set.clone();
            next.master = None;
            next.master_epoch = next.master_epoch.wrapping_add(1);
            return Decision::commit(
                respond(
                    ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE,
                    Some(remark::MASTER_NOT_AVAILABLE.to_owned()),
                    &header,
                ),
                self.change(broker_name, Some(next)),
            );
        }
        Decision::answer(respond(
            ResponseCode::CONTROLLER_ELECT_MASTER_FAILED,
            Some(remark::ELECT_MASTER_FAILED.to_owned()),
            &header,
        ))
    }

    /// 1011 CLEAN_BROKER_DATA.
    pub fn clean_broker_data(&self, h: &CleanBrokerDataHeader, live: &impl Liveness) -> Decision {
        let invalid = |text: String| {
            Decision::answer(RemotingCommand::response(
                ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                Some(text),
            ))
        };
        let blank = h
            .broker_controller_ids_to_clean
            .as_deref()
            .is_none_or(|s| s.trim().is_empty());
        let mut ids = None;
        if !h.clean_living_broker {
            if blank && self.get(&h.broker_name).is_some_and(|s| s.master.is_some()) {
                return invalid(format!(
                    "Broker {} is still alive, clean up failure",
                    h.broker_name
                ));
            }
            if !blank {
                match h.ids_to_clean() {
                    Ok(parsed) => ids = parsed,
                    Err(e) => {
                        return invalid(format!(
                        "Please set the option <brokerControllerIdsToClean> according to the format, exception: {e}"
                    ))
                    }
                }
                let cluster = h.cluster_name.as_deref().unwrap_or_default();
                for id in ids.iter().flatten() {
                    if live.alive(cluster, &h.broker_name, *id) {
                        return invalid(format!(
                            "Broker [{},  {id}] is still alive, clean up failure",
                            h.broker_name
                        ));
                    }
                }
            }
        } else if !blank {
            // Java parses the ids only for a living-broker check; with the check skipped it
            // removes the whole set.
            ids = None;
        }
        let Some(set) = self.get(&h.broker_name) else {
            return invalid(format!(
                "Broker {} is not existed,clean broker data failure.",
                h.broker_name
            ));
        };
        let record = match ids.filter(|ids| !ids.is_empty()) {
            None => None,
            Some(ids) => {
                let mut next = set.clone();
                for id in &ids {
                    next.members.remove(id);
                    next.sync_state_set.remove(id);
                }
                (!next.members.is_empty() && !next.sync_state_set.is_empty()).then_some(next)
            }
        };
        Decision::commit(
            RemotingCommand::success(),
            self.change(&h.broker_name, record),
        )
    }

    /// The sets whose master is not alive while another member is (the leader's sweep).
    pub fn needing_election(&self, live: &impl Liveness) -> Vec<String> {
        self.sets()
            .filter(|set| {
                set.master
                    .is_some_and(|m| !live.alive(&set.cluster, &set.name, m))
                    && set
                        .members
                        .keys()
                        .any(|id| live.alive(&set.cluster, &set.name, *id))
            })
            .map(|set| set.name.clone())
            .collect()
    }
}

/// Who an election makes master: on the set's first election (master epoch 0) the broker that
/// asked, else (or when that is -1) the election policy's choice, preferring `broker_id` when the
/// request designates it.
fn choose_master(
    set: &BrokerSet,
    broker_id: Option<i64>,
    designate: bool,
    unclean: bool,
    live: &impl Liveness,
) -> Option<i64> {
    let first = broker_id.filter(|_| set.master_epoch == 0);
    if first.is_some_and(|id| id != -1) {
        return first;
    }
    let preferred = if designate { broker_id } else { None };
    elect(set, set.master, preferred, unclean, live)
}

/// The election chose the set's `master` again: nothing changes.
fn master_still_alive(set: &BrokerSet, broker_name: &str, master: i64) -> Decision {
    let header = ElectMasterResponseHeader {
        master_broker_id: Some(master),
        master_address: set.address(Some(master)),
        master_epoch: Some(set.master_epoch),
        sync_state_set_epoch: Some(set.sync_state_set_epoch),
    };
    let body = ElectMasterResponseBody {
        broker_member_group: None,
        sync_state_set: set.sync_state_set.clone(),
    };
    let text = format!(
        "The old master {master} is still alive, not need to elect new master for broker {broker_name}"
    );
    Decision::answer(
        respond(
            ResponseCode::CONTROLLER_MASTER_STILL_EXIST,
            Some(text),
            &header,
        )
        .with_body(body.encode()),
    )
}

/// A Java `Long` in a format string: its number, or `null`.
fn java_long(v: Option<i64>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

#[cfg(test)]
mod tests;
