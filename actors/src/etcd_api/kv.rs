//! The KV service: reads (`Range`), puts and transactions, and the messages they answer with.

use super::pb::etcdserverpb::{
    compare::{CompareTarget, TargetUnion},
    kv_client::KvClient as PbKvClient,
    request_op::Request as Op,
    DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest,
};
use super::{renewed, Auth, Channel, Error, RangeEnd};

pub use super::pb::etcdserverpb::compare::CompareResult as CompareOp;
pub use super::pb::etcdserverpb::{
    Compare, PutResponse, RangeResponse as GetResponse, ResponseHeader, TxnResponse,
};
pub use super::pb::mvccpb::KeyValue;

/// Requests to the KV service; cloning it shares its channel (and its token, when etcd asks for
/// one: a request refused for an expired token is sent again once with a new one).
#[derive(Clone)]
pub struct KvClient(PbKvClient<Channel>, Option<Auth>);

impl KvClient {
    pub(super) fn new(channel: Channel, auth: Option<Auth>) -> Self {
        KvClient(PbKvClient::new(channel), auth)
    }

    /// Answers of up to `limit` bytes are read (the default is 4 MiB).
    pub fn max_decoding_message_size(self, limit: usize) -> Self {
        KvClient(self.0.max_decoding_message_size(limit), self.1)
    }

    /// The key `key`, or the keys the options say.
    pub async fn get(
        &mut self,
        key: impl Into<Vec<u8>>,
        options: Option<GetOptions>,
    ) -> Result<GetResponse, Error> {
        let request = options.unwrap_or_default().request(key.into());
        let answer = match self.0.range(request.clone()).await {
            Err(status) if renewed(&mut self.1, &status).await? => self.0.range(request).await,
            answer => answer,
        };
        Ok(answer?.into_inner())
    }

    pub async fn put(
        &mut self,
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Result<PutResponse, Error> {
        let request = options
            .unwrap_or_default()
            .request(key.into(), value.into());
        let answer = match self.0.put(request.clone()).await {
            Err(status) if renewed(&mut self.1, &status).await? => self.0.put(request).await,
            answer => answer,
        };
        Ok(answer?.into_inner())
    }

    pub async fn txn(&mut self, txn: Txn) -> Result<TxnResponse, Error> {
        let answer = match self.0.txn(txn.0.clone()).await {
            Err(status) if renewed(&mut self.1, &status).await? => self.0.txn(txn.0).await,
            answer => answer,
        };
        Ok(answer?.into_inner())
    }
}

/// Which keys a get reads, at which revision.
#[derive(Debug, Clone, Default)]
pub struct GetOptions {
    range: RangeEnd,
    limit: i64,
    revision: i64,
}

impl GetOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every key starting with the key.
    pub fn with_prefix(mut self) -> Self {
        self.range = RangeEnd::Prefix;
        self
    }

    /// The keys from the key up to `end` (excluded).
    pub fn with_range(mut self, end: impl Into<Vec<u8>>) -> Self {
        self.range = RangeEnd::End(end.into());
        self
    }

    /// At most `limit` keys (the answer says whether there are `more`).
    pub const fn with_limit(mut self, limit: i64) -> Self {
        self.limit = limit;
        self
    }

    /// As of `revision` rather than now.
    pub const fn with_revision(mut self, revision: i64) -> Self {
        self.revision = revision;
        self
    }

    pub(super) fn request(self, key: Vec<u8>) -> RangeRequest {
        let (key, range_end) = self.range.of(key);
        RangeRequest {
            key,
            range_end,
            limit: self.limit,
            revision: self.revision,
        }
    }
}

/// How a put writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct PutOptions {
    lease: i64,
}

impl PutOptions {
    pub const fn new() -> Self {
        PutOptions { lease: 0 }
    }

    /// The key is attached to `lease` and removed when the lease ends.
    pub const fn with_lease(mut self, lease: i64) -> Self {
        self.lease = lease;
        self
    }

    fn request(self, key: Vec<u8>, value: Vec<u8>) -> PutRequest {
        PutRequest {
            key,
            value,
            lease: self.lease,
        }
    }
}

impl Compare {
    fn new(
        key: impl Into<Vec<u8>>,
        op: CompareOp,
        target: CompareTarget,
        value: TargetUnion,
    ) -> Self {
        Compare {
            result: op as i32,
            target: target as i32,
            key: key.into(),
            target_union: Some(value),
            range_end: Vec::new(),
        }
    }

    /// No key starts with `prefix` (every key in its range has version 0: there is none).
    pub fn none_under(prefix: impl Into<Vec<u8>>) -> Self {
        let prefix = prefix.into();
        let (key, range_end) = RangeEnd::Prefix.of(prefix);
        Compare {
            range_end,
            ..Self::version(key, CompareOp::Equal, 0)
        }
    }

    /// The key's version (0 when it does not exist) compared with `version`.
    pub fn version(key: impl Into<Vec<u8>>, op: CompareOp, version: i64) -> Self {
        Self::new(
            key,
            op,
            CompareTarget::Version,
            TargetUnion::Version(version),
        )
    }

    /// The key's create revision (0 when it does not exist) compared with `revision`.
    pub fn create_revision(key: impl Into<Vec<u8>>, op: CompareOp, revision: i64) -> Self {
        Self::new(
            key,
            op,
            CompareTarget::Create,
            TargetUnion::CreateRevision(revision),
        )
    }

    /// The key's last modification revision (0 when it does not exist) compared with `revision`.
    pub fn mod_revision(key: impl Into<Vec<u8>>, op: CompareOp, revision: i64) -> Self {
        Self::new(
            key,
            op,
            CompareTarget::Mod,
            TargetUnion::ModRevision(revision),
        )
    }

    /// The key's lease (0 for none) compared with `lease`.
    pub fn lease(key: impl Into<Vec<u8>>, op: CompareOp, lease: i64) -> Self {
        Self::new(key, op, CompareTarget::Lease, TargetUnion::Lease(lease))
    }
}

/// One write of a transaction.
#[derive(Debug, Clone)]
pub struct TxnOp(Op);

impl TxnOp {
    pub fn put(
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        options: Option<PutOptions>,
    ) -> Self {
        TxnOp(Op::RequestPut(
            options
                .unwrap_or_default()
                .request(key.into(), value.into()),
        ))
    }

    /// Removes the key.
    pub fn delete(key: impl Into<Vec<u8>>) -> Self {
        TxnOp(Op::RequestDeleteRange(DeleteRangeRequest {
            key: key.into(),
        }))
    }
}

/// A transaction: when every compare holds, the `and_then` writes, otherwise the `or_else` ones,
/// all at one revision.
#[derive(Debug, Clone, Default)]
pub struct Txn(pub(super) TxnRequest);

impl Txn {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn when(mut self, compares: impl Into<Vec<Compare>>) -> Self {
        self.0.compare = compares.into();
        self
    }

    pub fn and_then(mut self, ops: impl Into<Vec<TxnOp>>) -> Self {
        self.0.success = requests(ops.into());
        self
    }

    pub fn or_else(mut self, ops: impl Into<Vec<TxnOp>>) -> Self {
        self.0.failure = requests(ops.into());
        self
    }
}

fn requests(ops: Vec<TxnOp>) -> Vec<RequestOp> {
    ops.into_iter()
        .map(|op| RequestOp {
            request: Some(op.0),
        })
        .collect()
}

impl ResponseHeader {
    pub const fn revision(&self) -> i64 {
        self.revision
    }

    pub const fn cluster_id(&self) -> u64 {
        self.cluster_id
    }
}

impl KeyValue {
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    pub fn value(&self) -> &[u8] {
        &self.value
    }

    pub const fn create_revision(&self) -> i64 {
        self.create_revision
    }

    pub const fn mod_revision(&self) -> i64 {
        self.mod_revision
    }

    /// 0 in the key-value of a removal event (a tombstone); 1 or more for a live key.
    pub const fn version(&self) -> i64 {
        self.version
    }

    /// The lease the key is attached to; 0 for none.
    pub const fn lease(&self) -> i64 {
        self.lease
    }
}

impl GetResponse {
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    pub fn kvs(&self) -> &[KeyValue] {
        &self.kvs
    }

    pub fn take_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.kvs)
    }

    /// Keys of the range were left out by the limit.
    pub const fn more(&self) -> bool {
        self.more
    }
}

impl PutResponse {
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }
}

impl TxnResponse {
    pub fn header(&self) -> Option<&ResponseHeader> {
        self.header.as_ref()
    }

    /// Every compare held.
    pub const fn succeeded(&self) -> bool {
        self.succeeded
    }
}
