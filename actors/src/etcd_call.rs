//! What the controller's etcd store and the KV store's etcd backend share to talk to etcd: one
//! connection setup, one time limit per request with its failure, one back-off range. Each of
//! them owns its own client and session; nothing here holds state.

use std::future::Future;
use std::time::Duration;

use crate::etcd_api::{self, Client, ConnectOptions, Security};

/// The first wait before a session starts over after a failure; doubled on each further one up
/// to [`MAX_BACKOFF`], and reset by the caller once a session has proved good.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The longest wait before starting over: long enough not to hammer an etcd that is down, short
/// enough that a NameServer is back in step seconds after etcd is.
pub const MAX_BACKOFF: Duration = Duration::from_secs(3);

/// Why a request to etcd failed.
#[derive(Debug, thiserror::Error)]
pub enum EtcdFailure {
    /// etcd (or the connection to it) answered with an error.
    #[error(transparent)]
    Refused(#[from] etcd_api::Error),
    /// No answer within the limit: whatever was asked may or may not have happened.
    #[error("no answer from etcd within {}", humantime::format_duration(*.0))]
    TimedOut(Duration),
}

/// `request`, answered within `limit`.
pub async fn within<T>(
    limit: Duration,
    request: impl Future<Output = Result<T, etcd_api::Error>>,
) -> Result<T, EtcdFailure> {
    match tokio::time::timeout(limit, request).await {
        Ok(answer) => Ok(answer?),
        Err(_) => Err(EtcdFailure::TimedOut(limit)),
    }
}

/// A client of `endpoints`, with `security` (TLS, user), connected (and authenticated) within
/// `limit` for each endpoint it tries (the endpoints that are down are tried first at worst).
/// A member cut off from its cluster's leader answers no request rather than stale ones
/// (`require_leader`).
pub async fn connect(
    endpoints: &[String],
    security: &Security,
    limit: Duration,
) -> Result<Client, String> {
    let options = ConnectOptions::new()
        .with_connect_timeout(limit)
        .with_require_leader(true)
        .with_security(security.clone());
    let tries = u32::try_from(endpoints.len().max(1)).unwrap_or(u32::MAX);
    within(
        limit.saturating_mul(tries),
        Client::connect(endpoints, Some(options)),
    )
    .await
    .map_err(|e| format!("cannot connect to etcd: {e}"))
}
