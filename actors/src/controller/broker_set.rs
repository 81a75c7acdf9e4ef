//! One broker set as the controller keeps and stores it (Java's `BrokerReplicaInfo` and
//! `SyncStateInfo` together). The rules ([`replicas`](super::replicas), the election policy) read
//! and change it; the stores ([`store`](super::store)) commit it. It names neither, so both can
//! name it.

use std::collections::{BTreeMap, BTreeSet};

use rmq_protocol::body::BrokerMemberGroup;
use rmq_protocol::controller::SyncStateSet;
use serde::{Deserialize, Serialize};

/// The first controller id of a broker set (Java's `MixAll.FIRST_BROKER_CONTROLLER_ID`).
pub const FIRST_BROKER_ID: i64 = 1;

/// One member of a broker set: its current address and the check code it claimed its id with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub address: String,
    pub check_code: String,
}

/// Everything the controller keeps of one broker set (Java's `BrokerReplicaInfo` and
/// `SyncStateInfo` together), as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerSet {
    pub cluster: String,
    pub name: String,
    /// The id 1012 hands out next.
    pub next_id: i64,
    pub members: BTreeMap<i64, Member>,
    pub master: Option<i64>,
    /// Moves by one on every election, successful or not.
    pub master_epoch: i32,
    pub sync_state_set: BTreeSet<i64>,
    /// Moves by one on every change of the set (an election replaces it).
    pub sync_state_set_epoch: i32,
}

impl BrokerSet {
    pub(super) fn new(cluster: &str, name: &str) -> Self {
        BrokerSet {
            cluster: cluster.to_owned(),
            name: name.to_owned(),
            next_id: FIRST_BROKER_ID,
            members: BTreeMap::new(),
            master: None,
            master_epoch: 0,
            sync_state_set: BTreeSet::new(),
            sync_state_set_epoch: 0,
        }
    }

    /// About the bytes the set takes in the state file (pretty JSON) or etcd: its strings, and
    /// a fixed share per member and per set for the keys and numbers around them.
    pub fn stored_bytes(&self) -> usize {
        let members: usize = self
            .members
            .values()
            .map(|m| m.address.len() + m.check_code.len() + 96)
            .sum();
        self.cluster.len() + self.name.len() + members + 16 * self.sync_state_set.len() + 256
    }

    pub(super) fn address(&self, id: Option<i64>) -> Option<String> {
        id.and_then(|id| self.members.get(&id))
            .map(|m| m.address.clone())
    }

    pub(super) fn sync_state(&self) -> SyncStateSet {
        SyncStateSet {
            sync_state_set: self.sync_state_set.clone(),
            sync_state_set_epoch: self.sync_state_set_epoch,
        }
    }

    pub(super) fn member_group(&self) -> BrokerMemberGroup {
        BrokerMemberGroup {
            broker_addrs: self
                .members
                .iter()
                .map(|(id, m)| (*id, m.address.clone()))
                .collect(),
            broker_name: Some(self.name.clone()),
            cluster: Some(self.cluster.clone()),
        }
    }
}
