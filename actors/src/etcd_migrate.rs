//! The one-shot copy of local state into etcd (`rmq-namesrv migrate-to-etcd`,
//! docs/controller.md#moving-from-the-file-store-to-etcd): the controller's file state
//! ([`FileStore`](crate::controller::file_store::FileStore)) and the KV file, written under
//! their empty etcd prefixes in the layouts the etcd stores read
//! ([`record_key`](crate::controller::etcd::record_key), [`etcd_layout`](crate::kv::etcd_layout)).
//!
//! A prefix that holds any key is refused: nothing is overwritten. Every write creates its key
//! (its transaction requires the key absent, and the first one the whole prefix empty), so a
//! writer that appears under the prefix meanwhile stops the copy instead of being overwritten.
//! A copy that fits one transaction (what real states are: a handful of broker sets, a few KV
//! namespaces) is all or nothing; a larger one goes in batches, and a failure says how much was
//! written.

use std::time::Duration;

use crate::etcd_api::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp};
use crate::etcd_call::within;

/// Keys per transaction: below etcd's default `--max-txn-ops` (128).
const BATCH_KEYS: usize = 64;

/// Bytes of keys and values per transaction: below etcd's default `--max-request-bytes`
/// (1.5 MiB).
const BATCH_BYTES: usize = 1 << 20;

/// Why a copy stopped.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error(
        "etcd already holds keys under {dir} (e.g. {example}): refusing to overwrite them; \
         migrate into an empty prefix (or delete that prefix first)"
    )]
    NotEmpty { dir: String, example: String },
    #[error("a key under {dir} appeared while copying (another writer?): stopped after {written} of {total} keys")]
    Raced {
        dir: String,
        written: usize,
        total: usize,
    },
    #[error("etcd: {reason} (after {written} of {total} keys under {dir})")]
    Etcd {
        dir: String,
        reason: String,
        written: usize,
        total: usize,
    },
}

/// What is to be written under one prefix.
#[derive(Debug, Clone)]
pub struct Copy {
    /// Every key written is under it (`prefix/`); it must hold none.
    pub dir: String,
    pub writes: Vec<(String, Vec<u8>)>,
}

/// Refuses a `dir` that holds any key.
pub async fn ensure_empty(client: &Client, dir: &str, limit: Duration) -> Result<(), MigrateError> {
    let mut kv = client.kv_client();
    let read = within(
        limit,
        kv.get(dir, Some(GetOptions::new().with_prefix().with_limit(1))),
    )
    .await
    .map_err(|e| MigrateError::Etcd {
        dir: dir.to_owned(),
        reason: format!("cannot read: {e}"),
        written: 0,
        total: 0,
    })?;
    match read.kvs().first() {
        None => Ok(()),
        Some(kv) => Err(MigrateError::NotEmpty {
            dir: dir.to_owned(),
            example: String::from_utf8_lossy(kv.key()).into_owned(),
        }),
    }
}

/// Writes `copy` in create-only transactions; the number of keys written.
pub async fn write(client: &Client, copy: &Copy, limit: Duration) -> Result<usize, MigrateError> {
    let mut kv = client.kv_client();
    let total = copy.writes.len();
    let mut written = 0;
    for batch in batches(&copy.writes) {
        let mut guards: Vec<Compare> = batch
            .iter()
            .map(|(key, _)| Compare::version(key.clone(), CompareOp::Equal, 0))
            .collect();
        if written == 0 {
            guards.push(Compare::none_under(copy.dir.clone()));
        }
        let puts: Vec<TxnOp> = batch
            .iter()
            .map(|(key, value)| TxnOp::put(key.clone(), value.clone(), None))
            .collect();
        let answer = within(limit, kv.txn(Txn::new().when(guards).and_then(puts)))
            .await
            .map_err(|e| MigrateError::Etcd {
                dir: copy.dir.clone(),
                reason: e.to_string(),
                written,
                total,
            })?;
        if !answer.succeeded() {
            return Err(MigrateError::Raced {
                dir: copy.dir.clone(),
                written,
                total,
            });
        }
        written += batch.len();
    }
    Ok(written)
}

/// `writes` cut into transactions of at most [`BATCH_KEYS`] keys and (but for a single large
/// one) [`BATCH_BYTES`] bytes.
fn batches(writes: &[(String, Vec<u8>)]) -> Vec<&[(String, Vec<u8>)]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut bytes = 0;
    for (i, (key, value)) in writes.iter().enumerate() {
        let size = key.len() + value.len();
        let full = i - start >= BATCH_KEYS || (i > start && bytes + size > BATCH_BYTES);
        if full {
            out.push(&writes[start..i]);
            start = i;
            bytes = 0;
        }
        bytes += size;
    }
    if start < writes.len() {
        out.push(&writes[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_at_most_their_keys_and_bytes() {
        let small: Vec<(String, Vec<u8>)> =
            (0..150).map(|i| (format!("/k/{i}"), vec![0; 10])).collect();
        let sizes: Vec<usize> = batches(&small).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![64, 64, 22]);
        let large: Vec<(String, Vec<u8>)> = (0..5)
            .map(|i| (format!("/k/{i}"), vec![0; 400_000]))
            .collect();
        let sizes: Vec<usize> = batches(&large).iter().map(|b| b.len()).collect();
        assert_eq!(sizes, vec![2, 2, 1]);
        assert!(batches(&[]).is_empty());
    }
}
