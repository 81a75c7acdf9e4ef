//! Our etcd v3 client: the requests the controller's store and the KV store's etcd backend make,
//! over one gRPC channel (tonic), with nothing else.
//!
//! The messages and stubs are generated at build time (`build.rs`) from `actors/proto/`, a trimmed
//! copy of etcd's API with etcd's package names and field numbers, by protox, a protobuf compiler
//! in Rust: building needs no `protoc` (the `etcd-client` crate needs one). This module shapes
//! them the way the callers use them: [`Client`] hands out a [`KvClient`], a [`WatchClient`] and a
//! [`LeaseClient`] on one channel; requests are built from options ([`GetOptions`],
//! [`PutOptions`], [`WatchOptions`], [`Txn`] of [`Compare`]s and [`TxnOp`]s); answers are etcd's
//! messages with accessors (`kv.key()`, `answer.header()`).
//!
//! Nothing here holds a connection open or retries: the channel connects on the first request and
//! again after a failure, and what to do about a failure is the caller's (`etcd_call`).

use std::time::Duration;

use tonic::codegen::http::uri::{InvalidUri, Uri};
use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::channel::Change;
use tonic::transport::Endpoint;

mod kv;
mod lease;
mod watch;

pub use kv::{
    Compare, CompareOp, GetOptions, GetResponse, KeyValue, KvClient, PutOptions, PutResponse,
    ResponseHeader, Txn, TxnOp, TxnResponse,
};
pub use lease::{
    LeaseClient, LeaseGrantResponse, LeaseKeepAliveResponse, LeaseKeepAliveStream, LeaseKeeper,
};
pub use watch::{
    Event, WatchClient, WatchOptions, WatchRequestSender, WatchResponse, WatchResponseStream,
    WatchStream,
};

/// The code generated from `actors/proto/`, one module per protobuf package (`etcdserverpb`
/// names `super::mvccpb`).
#[allow(clippy::all, clippy::pedantic, missing_docs)]
mod pb {
    pub mod mvccpb {
        include!(concat!(env!("OUT_DIR"), "/mvccpb.rs"));
    }
    pub mod etcdserverpb {
        include!(concat!(env!("OUT_DIR"), "/etcdserverpb.rs"));
    }
}

/// Why a request to etcd failed (the wording is the `etcd-client` crate's, which logs used to
/// show).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The client was asked for something it cannot do (no endpoints, an `https://` one).
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    #[error("invalid uri: {0}")]
    InvalidUri(#[from] InvalidUri),
    /// The channel could not be set up.
    #[error("transport error: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// etcd answered with an error, or the connection to it failed.
    #[error("grpc request error: {0}")]
    Status(#[from] tonic::Status),
    /// The request side of a watch is closed.
    #[error("watch error: {0}")]
    Watch(String),
    /// The request side of a lease's keep-alive stream is closed, or the lease is gone.
    #[error("lease keep alive error: {0}")]
    KeepAlive(String),
}

/// How [`Client::connect`] sets up the channel.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectOptions {
    connect_timeout: Option<Duration>,
    require_leader: bool,
}

impl ConnectOptions {
    pub const fn new() -> Self {
        ConnectOptions {
            connect_timeout: None,
            require_leader: false,
        }
    }

    /// The longest wait for a TCP connection to an endpoint.
    pub const fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Every request carries `hasleader: true`: a member cut off from its cluster's leader
    /// refuses it instead of answering from a state that may be stale.
    pub const fn with_require_leader(mut self, require_leader: bool) -> Self {
        self.require_leader = require_leader;
        self
    }
}

/// Adds the metadata every request carries.
#[derive(Debug, Clone, Copy)]
struct Metadata {
    require_leader: bool,
}

impl tonic::service::Interceptor for Metadata {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if self.require_leader {
            request
                .metadata_mut()
                .append("hasleader", AsciiMetadataValue::from_static("true"));
        }
        Ok(request)
    }
}

/// The channel every service client of one [`Client`] shares.
type Channel = InterceptedService<tonic::transport::Channel, Metadata>;

/// A client of one etcd cluster; cloning it shares its channel.
#[derive(Clone)]
pub struct Client {
    kv: KvClient,
    watch: WatchClient,
    lease: LeaseClient,
}

impl Client {
    /// A client of `endpoints` (`host:port` or `http://host:port`), its requests balanced over
    /// them. The channel connects lazily: an endpoint that is down fails the requests sent to it,
    /// not this call.
    pub async fn connect<E: AsRef<str>, S: AsRef<[E]>>(
        endpoints: S,
        options: Option<ConnectOptions>,
    ) -> Result<Self, Error> {
        let options = options.unwrap_or_default();
        let endpoints = endpoints
            .as_ref()
            .iter()
            .map(|url| endpoint(url.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        if endpoints.is_empty() {
            return Err(Error::InvalidArgs("empty endpoints".into()));
        }
        let (channel, changes) = tonic::transport::Channel::balance_channel(endpoints.len());
        for endpoint in endpoints {
            // Room for every endpoint was made above, and the receiver lives in `channel`.
            changes
                .try_send(Change::Insert(endpoint.uri().clone(), endpoint))
                .map_err(|e| Error::InvalidArgs(format!("cannot add an endpoint: {e}")))?;
        }
        let channel = InterceptedService::new(
            channel,
            Metadata {
                require_leader: options.require_leader,
            },
        );
        Ok(Client {
            kv: KvClient::new(channel.clone()),
            watch: WatchClient::new(channel.clone()),
            lease: LeaseClient::new(channel),
        })
    }

    pub fn kv_client(&self) -> KvClient {
        self.kv.clone()
    }

    pub fn watch_client(&self) -> WatchClient {
        self.watch.clone()
    }

    pub fn lease_client(&self) -> LeaseClient {
        self.lease.clone()
    }
}

/// The endpoint of `url`: plain HTTP/2 (there is no TLS to etcd).
fn endpoint(url: &str, options: &ConnectOptions) -> Result<Endpoint, Error> {
    if url.starts_with("https://") {
        return Err(Error::InvalidArgs(format!(
            "{url}: TLS to etcd is not supported"
        )));
    }
    let uri: Uri = if url.starts_with("http://") {
        url.parse()?
    } else {
        format!("http://{url}").parse()?
    };
    let endpoint = tonic::transport::Channel::builder(uri);
    Ok(match options.connect_timeout {
        Some(timeout) => endpoint.connect_timeout(timeout),
        None => endpoint,
    })
}

/// The end of the range of every key starting with `prefix`: the prefix with its last byte below
/// 0xFF incremented and what follows dropped; `\0` (no end) when there is no such byte.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    match prefix.iter().rposition(|&b| b < 0xFF) {
        Some(last) => {
            let mut end = prefix[..=last].to_vec();
            end[last] += 1;
            end
        }
        None => vec![0],
    }
}

/// The `(key, range_end)` of a request for `key` alone, every key starting with it, or the keys
/// up to an end.
#[derive(Debug, Clone, Default)]
enum RangeEnd {
    #[default]
    Key,
    Prefix,
    End(Vec<u8>),
}

impl RangeEnd {
    fn of(self, key: Vec<u8>) -> (Vec<u8>, Vec<u8>) {
        match self {
            RangeEnd::Key => (key, Vec::new()),
            // Every key: from `\0` to no end.
            RangeEnd::Prefix if key.is_empty() => (vec![0], vec![0]),
            RangeEnd::Prefix => {
                let end = prefix_end(&key);
                (key, end)
            }
            RangeEnd::End(end) => (key, end),
        }
    }
}

#[cfg(test)]
mod tests;
