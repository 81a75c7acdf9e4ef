//! One commit as one etcd transaction, guarded by the set's revision and our leader key.

use std::time::Duration;

use super::super::store::{Commit, Revision, StoreError};
use crate::etcd_api::{Compare, CompareOp, KeyValue, KvClient, Txn, TxnOp};
use crate::etcd_call::within;

/// The leader key as this node created it: a commit requires it unchanged.
pub(super) struct OurLeaderKey {
    pub(super) key: String,
    /// Its create revision: a key deleted (lease expired or revoked) and created again, by
    /// anyone, has another one.
    pub(super) created: Revision,
    /// Our lease, which it must still be attached to.
    pub(super) lease: i64,
}

impl OurLeaderKey {
    fn holds(&self, kv: Option<&KeyValue>) -> bool {
        kv.is_some_and(|kv| kv.create_revision() == self.created && kv.lease() == self.lease)
    }
}

/// One commit: the set's key at `expected` and our leader key still there, in one transaction;
/// when it fails, which of the two did.
pub(super) async fn commit(
    mut kv: KvClient,
    key: String,
    ours: OurLeaderKey,
    msg: Commit,
    limit: Duration,
) -> Result<Revision, StoreError> {
    let unavailable = StoreError::Unavailable;
    let set_guard = if msg.expected == 0 {
        Compare::version(key.clone(), CompareOp::Equal, 0)
    } else {
        Compare::mod_revision(key.clone(), CompareOp::Equal, msg.expected)
    };
    let created_guard = Compare::create_revision(ours.key.clone(), CompareOp::Equal, ours.created);
    let lease_guard = Compare::lease(ours.key.clone(), CompareOp::Equal, ours.lease);
    let write = match &msg.record {
        Some(record) => {
            let value = serde_json::to_vec(record)
                .map_err(|e| unavailable(format!("cannot encode the record: {e}")))?;
            TxnOp::put(key.clone(), value, None)
        }
        None => TxnOp::delete(key.clone()),
    };
    let txn = Txn::new()
        .when([set_guard, created_guard, lease_guard])
        .and_then([write]);
    let answer = within(limit, kv.txn(txn))
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if answer.succeeded() {
        return answer
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| unavailable("etcd answered the commit without a revision".into()));
    }
    // Which guard failed: the leader key first (a deposed leader must hear NotLeader, not be
    // invited to retry), then the set's revision now.
    let holder = within(limit, kv.get(ours.key.clone(), None))
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    if !ours.holds(holder.kvs().first()) {
        return Err(StoreError::NotLeader);
    }
    let set = within(limit, kv.get(key, None))
        .await
        .map_err(|e| unavailable(e.to_string()))?;
    Err(StoreError::Conflict {
        current: set.kvs().first().map_or(0, KeyValue::mod_revision),
    })
}
