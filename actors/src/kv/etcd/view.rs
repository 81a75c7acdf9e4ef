//! The memory view and how it follows etcd: pure rules, no I/O.

use std::collections::BTreeMap;

use tracing::warn;

use super::keys::{Entry, Keys};
use crate::kv::{Change, KvTables};

/// A confirmed change the watch has not reported yet.
#[derive(Debug, Clone)]
pub(super) struct Ahead {
    revision: i64,
    change: Change,
}

/// How the memory view follows etcd (see the module docs); no I/O, tested without etcd.
#[derive(Debug, Default)]
pub(super) struct View {
    /// Every change up to this revision is in the view (read or watched).
    pub(super) watched: i64,
    /// The cluster the view was read from: a different one (etcd replaced) has other revisions.
    pub(super) cluster: Option<u64>,
    /// Confirmed changes above `watched`, by (namespace, key).
    pub(super) ahead: BTreeMap<(String, String), Ahead>,
}

impl View {
    /// A change etcd confirmed at `revision` (`None`: the answer carried none): applied unless
    /// the watch has already reported it.
    pub(super) fn confirmed(
        &mut self,
        tables: &mut KvTables,
        namespace: &str,
        key: &str,
        change: Change,
        revision: Option<i64>,
    ) {
        if let Some(revision) = revision {
            if revision <= self.watched {
                return;
            }
            self.ahead.insert(
                (namespace.to_owned(), key.to_owned()),
                Ahead {
                    revision,
                    change: change.clone(),
                },
            );
        }
        change.apply(tables, namespace, key);
    }

    /// The whole state read at `revision` of `cluster`: replaces the view, keeping the confirmed
    /// changes it does not contain yet.
    pub(super) fn loaded(
        &mut self,
        tables: &mut KvTables,
        read: KvTables,
        revision: i64,
        cluster: u64,
    ) {
        if self.cluster.is_some_and(|known| known != cluster) {
            self.ahead.clear();
        }
        self.cluster = Some(cluster);
        self.watched = revision;
        self.ahead.retain(|_, ahead| ahead.revision > revision);
        *tables = read;
        for ((namespace, key), ahead) in &self.ahead {
            ahead.change.apply(tables, namespace, key);
        }
    }

    /// One watched event at `revision`: `value` `None` for a removal.
    pub(super) fn event(
        &mut self,
        tables: &mut KvTables,
        entry: &Entry,
        value: Option<&[u8]>,
        revision: i64,
    ) {
        self.watched = self.watched.max(revision);
        match (entry, value) {
            (Entry::Namespace(namespace), Some(_)) => tables.ensure_namespace(namespace),
            (Entry::Namespace(namespace), None) => tables.remove_namespace_if_empty(namespace),
            (Entry::Value { namespace, key }, value) => {
                let id = (namespace.clone(), key.clone());
                if self.ahead.get(&id).is_some_and(|a| a.revision > revision) {
                    return;
                }
                match value {
                    Some(value) => tables.put(namespace, key, Some(text(value))),
                    None => tables.delete(namespace, key),
                }
            }
        }
    }

    /// After a watch answer: confirmed changes it covers are no longer ahead.
    pub(super) fn caught_up(&mut self) {
        let watched = self.watched;
        self.ahead.retain(|_, ahead| ahead.revision > watched);
    }
}

/// A value as text (we store UTF-8; anything else, written by another tool, is shown lossily).
fn text(value: &[u8]) -> String {
    String::from_utf8_lossy(value).into_owned()
}

/// The tables a range read holds.
pub(super) fn tables_of(keys: &Keys, read: &[(Vec<u8>, Vec<u8>)]) -> KvTables {
    let mut tables = KvTables::default();
    for (key, value) in read {
        match keys.parse(key) {
            Some(Entry::Namespace(namespace)) => tables.ensure_namespace(&namespace),
            Some(Entry::Value { namespace, key }) => {
                tables.put(&namespace, &key, Some(text(value)))
            }
            None => {
                warn!(key = %String::from_utf8_lossy(key), "KV store (etcd): not a KV key; ignored")
            }
        }
    }
    tables
}
