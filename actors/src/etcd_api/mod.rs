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
//! TLS is tonic's (rustls, with ring): a CA, and a client certificate for etcd's
//! `--client-cert-auth` ([`Security`]). With a user, [`Client::connect`] asks etcd's `Authenticate`
//! for a token that every request carries as its `token` metadata; a unary request refused for
//! an expired token gets a new one and is sent again, once.
//!
//! Nothing else here holds a connection open or retries: a client connects to one endpoint when
//! it is made, each other endpoint's channel on the first request sent to it, and any channel
//! again after a failure; requests go to one endpoint until it fails and then to the next
//! (`failover.rs`), and what to do about a failed request is the caller's (`etcd_call`).

use std::sync::Arc;
use std::time::Duration;

use rmq_transport::Secret;
use tonic::codegen::http::uri::{InvalidUri, Uri};
use tonic::metadata::AsciiMetadataValue;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

use pb::etcdserverpb::{auth_client::AuthClient as PbAuthClient, AuthenticateRequest};

mod failover;
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
    /// The client was asked for something it cannot do (no endpoints, a scheme that does not
    /// fit its security).
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    #[error("invalid uri: {0}")]
    InvalidUri(#[from] InvalidUri),
    /// The channel could not be set up, or a connection could not be made (the causes follow).
    #[error("{}", causes("transport error", .0))]
    Transport(#[from] tonic::transport::Error),
    /// etcd answered with an error, or the connection to it failed (the causes follow: a TLS
    /// failure is in them).
    #[error("grpc request error: {}", with_causes(.0))]
    Status(#[from] tonic::Status),
    /// The request side of a watch is closed.
    #[error("watch error: {0}")]
    Watch(String),
    /// The request side of a lease's keep-alive stream is closed, or the lease is gone.
    #[error("lease keep alive error: {0}")]
    KeepAlive(String),
    /// etcd refused our user and password.
    #[error("authentication failed: {}", with_causes(.0))]
    Auth(tonic::Status),
}

/// A status with the chain of its causes: a failed connection's status says only that it
/// failed; what failed (refused, a certificate, a TLS alert) is in its sources.
fn with_causes(status: &tonic::Status) -> String {
    causes(&status.to_string(), status)
}

/// `text` followed by what `error`'s sources say that it does not already.
fn causes(text: &str, error: &dyn std::error::Error) -> String {
    let mut text = text.to_owned();
    let mut cause = error.source();
    // Bounded: a chain is a handful of layers.
    for _ in 0..16 {
        let Some(error) = cause else {
            break;
        };
        let said = error.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        cause = error.source();
    }
    text
}

/// How [`Client::connect`] sets up the channel.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    connect_timeout: Option<Duration>,
    require_leader: bool,
    security: Security,
}

impl ConnectOptions {
    pub fn new() -> Self {
        Self::default()
    }

    /// The longest wait for a TCP connection (and TLS handshake) to an endpoint.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Every request carries `hasleader: true`: a member cut off from its cluster's leader
    /// refuses it instead of answering from a state that may be stale.
    pub fn with_require_leader(mut self, require_leader: bool) -> Self {
        self.require_leader = require_leader;
        self
    }

    /// TLS and authentication (none by default: plain HTTP/2, no token).
    pub fn with_security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }
}

/// How the client proves who it is to etcd and checks that it talks to etcd: what etcd's
/// `--trusted-ca-file`/`--cert-file`, `--client-cert-auth` and `auth enable` ask of a client.
/// Its `Debug` shows which are set, never a key or password.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Security {
    /// PEM of the CA(s) etcd's certificate must chain to. Set: every endpoint is dialled with
    /// TLS (rustls), a bare `host:port` as `https://host:port`.
    pub ca_pem: Option<Vec<u8>>,
    /// PEM of our certificate chain and of its private key, for etcd's `--client-cert-auth`.
    pub identity: Option<(Vec<u8>, Secret)>,
    /// User and password: etcd's `Authenticate` turns them into the token every request carries.
    pub user: Option<(String, Secret)>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("tls", &self.ca_pem.is_some())
            .field("client_certificate", &self.identity.is_some())
            .field("user", &self.user.as_ref().map(|(name, _)| name))
            .finish()
    }
}

impl Security {
    /// Whether the endpoints are dialled with TLS.
    pub fn tls(&self) -> bool {
        self.ca_pem.is_some()
    }

    fn tls_config(&self) -> Option<ClientTlsConfig> {
        let ca = self.ca_pem.as_ref()?;
        let config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
        Some(match &self.identity {
            Some((cert, key)) => config.identity(Identity::from_pem(cert, key.expose())),
            None => config,
        })
    }
}

/// The token of an authenticated client, as every request sends it (`None`: etcd's
/// authentication is off, or none was asked for).
type Token = Option<AsciiMetadataValue>;

/// Adds the metadata every request carries.
#[derive(Debug, Clone)]
struct Metadata {
    require_leader: bool,
    /// The current token. The one piece of state a client's clones share, as they share the
    /// channel's connections: a token renewed by one request serves the next of every clone.
    token: Option<tokio::sync::watch::Receiver<Token>>,
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
        if let Some(token) = self.token.as_ref().and_then(|t| t.borrow().clone()) {
            request.metadata_mut().insert("token", token);
        }
        Ok(request)
    }
}

/// The channel every service client of one [`Client`] shares.
type Channel = InterceptedService<failover::Failover, Metadata>;

/// A client's user, and where its token is renewed: cloned with the service clients.
#[derive(Clone)]
pub(crate) struct Auth {
    name: String,
    password: Secret,
    /// On the same connections, without the token (etcd refuses an `Authenticate` that carries
    /// an expired one).
    client: PbAuthClient<Channel>,
    token: Arc<tokio::sync::watch::Sender<Token>>,
}

/// What etcd answers a request whose token it no longer takes: expired (or lost by a restart),
/// issued before a change of users or roles, or missing.
const TOKEN_REFUSALS: [&str; 3] = [
    "etcdserver: invalid auth token",
    "etcdserver: revision of auth store is old",
    "etcdserver: user name is empty",
];

/// What etcd answers `Authenticate` when its authentication is off: the client goes on without
/// a token.
const AUTH_NOT_ENABLED: &str = "etcdserver: authentication is not enabled";

impl Auth {
    /// A new token from etcd (`None` when etcd's authentication is off).
    async fn authenticate(&mut self) -> Result<Token, Error> {
        let request = AuthenticateRequest {
            name: self.name.clone(),
            password: self.password.expose().to_owned(),
        };
        let answer = match self.client.authenticate(request).await {
            Ok(answer) => answer.into_inner(),
            Err(status) if status.message() == AUTH_NOT_ENABLED => return Ok(None),
            // etcd answered, and refused (a wrong password is InvalidArgument).
            Err(status)
                if matches!(
                    status.code(),
                    tonic::Code::InvalidArgument
                        | tonic::Code::FailedPrecondition
                        | tonic::Code::PermissionDenied
                        | tonic::Code::Unauthenticated
                ) =>
            {
                return Err(Error::Auth(status))
            }
            // etcd could not be asked (down, a TLS failure): not a verdict on the password.
            Err(status) => return Err(Error::Status(status)),
        };
        let token = AsciiMetadataValue::try_from(answer.token)
            .map_err(|_| Error::InvalidArgs("etcd answered a token that is not ASCII".into()))?;
        Ok(Some(token))
    }
}

/// After a request failed with `status`: whether it was refused for its token, and a new one is
/// now in place (send the request again, once). Not with a client without a user.
pub(crate) async fn renewed(
    auth: &mut Option<Auth>,
    status: &tonic::Status,
) -> Result<bool, Error> {
    let Some(auth) = auth else {
        return Ok(false);
    };
    if !TOKEN_REFUSALS.contains(&status.message()) {
        return Ok(false);
    }
    let token = auth.authenticate().await?;
    auth.token.send_replace(token);
    Ok(true)
}

/// A client of one etcd cluster; cloning it shares its channel.
#[derive(Clone)]
pub struct Client {
    kv: KvClient,
    watch: WatchClient,
    lease: LeaseClient,
}

impl Client {
    /// A client of `endpoints` (`host:port`, `http://host:port` or, with TLS,
    /// `https://host:port`): its requests go to one endpoint until it fails, then to the next
    /// (`failover.rs`). One endpoint is connected here (TCP, TLS, HTTP/2): tried from one
    /// drawn at random, each in turn until one connects, so that a member that is down costs
    /// this call one refused connection, not a session; the others connect on their first
    /// request. A client with a user authenticates here too. Every endpoint refused: the last
    /// one's error.
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
        let count = endpoints.len();
        let first = failover::first_choice(count);
        let mut refused = None;
        for at in (0..count).map(|step| (first + step) % count) {
            match endpoints[at].connect().await {
                Ok(connected) => {
                    let channels = endpoints.iter().enumerate().map(|(i, endpoint)| {
                        if i == at {
                            connected.clone()
                        } else {
                            endpoint.connect_lazy()
                        }
                    });
                    let channel = failover::Failover::new(channels.collect(), at);
                    return Self::over(channel, &options).await;
                }
                Err(e) => refused = Some(e),
            }
        }
        Err(refused.map_or_else(|| Error::InvalidArgs("empty endpoints".into()), Error::from))
    }

    /// A client of the one endpoint `url`, connected now (TCP, TLS handshake, HTTP/2): a
    /// connection that fails says why (a certificate refused, a TLS alert) instead of failing
    /// the first request. What the start's check of the settings uses.
    pub async fn connect_now(url: &str, options: ConnectOptions) -> Result<Self, Error> {
        let channel = endpoint(url, &options)?.connect().await?;
        Self::over(failover::Failover::new(vec![channel], 0), &options).await
    }

    /// The service clients on `channel`, authenticated when the options have a user.
    async fn over(channel: failover::Failover, options: &ConnectOptions) -> Result<Self, Error> {
        let plain = Metadata {
            require_leader: options.require_leader,
            token: None,
        };
        let (metadata, auth) = match &options.security.user {
            None => (plain, None),
            Some((name, password)) => {
                let mut auth = Auth {
                    name: name.clone(),
                    password: password.clone(),
                    client: PbAuthClient::new(InterceptedService::new(
                        channel.clone(),
                        plain.clone(),
                    )),
                    token: Arc::new(tokio::sync::watch::channel(None).0),
                };
                let token = auth.authenticate().await?;
                auth.token.send_replace(token);
                let metadata = Metadata {
                    token: Some(auth.token.subscribe()),
                    ..plain
                };
                (metadata, Some(auth))
            }
        };
        let channel = InterceptedService::new(channel, metadata);
        Ok(Client {
            kv: KvClient::new(channel.clone(), auth.clone()),
            watch: WatchClient::new(channel.clone()),
            lease: LeaseClient::new(channel, auth),
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

/// How often an idle connection to etcd is pinged, and how long a ping may go unanswered.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(3);
const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(3);

/// The endpoint of `url`: with TLS when the security has a CA (a bare `host:port` then means
/// `https://`), plain HTTP/2 otherwise; a scheme that contradicts the security is refused.
fn endpoint(url: &str, options: &ConnectOptions) -> Result<Endpoint, Error> {
    let tls = options.security.tls_config();
    let uri: Uri = match (url.split_once("://"), &tls) {
        (Some(("https", _)), None) => {
            return Err(Error::InvalidArgs(format!(
                "{url}: https:// needs the CA that signed etcd's certificate"
            )))
        }
        (Some(("http", _)), Some(_)) => {
            return Err(Error::InvalidArgs(format!(
                "{url}: http:// while TLS to etcd is configured (use https:// or host:port)"
            )))
        }
        (Some(("http" | "https", _)), _) => url.parse()?,
        (Some((scheme, _)), _) => {
            return Err(Error::InvalidArgs(format!(
                "{url}: unknown scheme {scheme}:// (http:// or https://)"
            )))
        }
        (None, None) => format!("http://{url}").parse()?,
        (None, Some(_)) => format!("https://{url}").parse()?,
    };
    // HTTP/2 pings find a member cut off behind an open connection (no reset ever comes): the
    // connection breaks, and the next request goes to another endpoint.
    let mut endpoint = tonic::transport::Channel::builder(uri)
        .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
        .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
        .keep_alive_while_idle(true);
    if let Some(timeout) = options.connect_timeout {
        endpoint = endpoint.connect_timeout(timeout);
    }
    if let Some(tls) = tls {
        let tls = match options.connect_timeout {
            Some(timeout) => tls.timeout(timeout),
            None => tls,
        };
        endpoint = endpoint.tls_config(tls)?;
    }
    Ok(endpoint)
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
