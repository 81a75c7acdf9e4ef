//! The Lease service: grant, revoke, and renewals on a keep-alive stream.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use super::pb::etcdserverpb::{
    lease_client::LeaseClient as PbLeaseClient, LeaseGrantRequest, LeaseKeepAliveRequest,
    LeaseRevokeRequest,
};
use super::{renewed, Auth, Channel, Error};

pub use super::pb::etcdserverpb::{LeaseGrantResponse, LeaseKeepAliveResponse};

/// Renewals queued before [`LeaseKeeper::keep_alive`] waits for room.
const QUEUED: usize = 100;

/// Requests to the Lease service; cloning it shares its channel (and token, as [`KvClient`]'s).
///
/// [`KvClient`]: super::KvClient
#[derive(Clone)]
pub struct LeaseClient(PbLeaseClient<Channel>, Option<Auth>);

impl LeaseClient {
    pub(super) fn new(channel: Channel, auth: Option<Auth>) -> Self {
        LeaseClient(PbLeaseClient::new(channel), auth)
    }

    /// A new lease of `ttl` seconds.
    pub async fn grant(&mut self, ttl: i64) -> Result<LeaseGrantResponse, Error> {
        let request = LeaseGrantRequest { ttl };
        let answer = match self.0.lease_grant(request).await {
            Err(status) if renewed(&mut self.1, &status).await? => {
                self.0.lease_grant(request).await
            }
            answer => answer,
        };
        Ok(answer?.into_inner())
    }

    /// Ends lease `id` now, removing the keys attached to it.
    pub async fn revoke(&mut self, id: i64) -> Result<(), Error> {
        let request = LeaseRevokeRequest { id };
        if let Err(status) = self.0.lease_revoke(request).await {
            if !renewed(&mut self.1, &status).await? {
                return Err(status.into());
            }
            self.0.lease_revoke(request).await?;
        }
        Ok(())
    }

    /// Opens the keep-alive stream of lease `id` and renews it once (refused when the lease is
    /// gone): the keeper sends the next renewals, the stream answers each with the TTL left.
    pub async fn keep_alive(
        &mut self,
        id: i64,
    ) -> Result<(LeaseKeeper, LeaseKeepAliveStream), Error> {
        let (sender, receiver) = mpsc::channel(QUEUED);
        let mut keeper = LeaseKeeper { id, sender };
        keeper.keep_alive().await?;
        let mut stream = LeaseKeepAliveStream(
            self.0
                .lease_keep_alive(ReceiverStream::new(receiver))
                .await?
                .into_inner(),
        );
        match stream.message().await? {
            Some(answer) if answer.ttl() <= 0 => Err(Error::KeepAlive("lease not found".into())),
            Some(_) => Ok((keeper, stream)),
            None => Err(Error::KeepAlive(
                "the keep-alive stream ended before its first answer".into(),
            )),
        }
    }
}

/// The request side of a lease's keep-alive stream.
#[derive(Debug)]
pub struct LeaseKeeper {
    id: i64,
    sender: mpsc::Sender<LeaseKeepAliveRequest>,
}

impl LeaseKeeper {
    /// Sends one renewal; its answer comes on the [`LeaseKeepAliveStream`].
    pub async fn keep_alive(&mut self) -> Result<(), Error> {
        self.sender
            .send(LeaseKeepAliveRequest { id: self.id })
            .await
            .map_err(|e| Error::KeepAlive(e.to_string()))
    }
}

/// The answers to a lease's renewals, in order.
#[derive(Debug)]
pub struct LeaseKeepAliveStream(Streaming<LeaseKeepAliveResponse>);

impl LeaseKeepAliveStream {
    /// The next answer; `None` when etcd ended the stream.
    pub async fn message(&mut self) -> Result<Option<LeaseKeepAliveResponse>, Error> {
        Ok(self.0.message().await?)
    }
}

impl LeaseGrantResponse {
    pub const fn id(&self) -> i64 {
        self.id
    }

    /// Seconds; 0 or less when etcd did not grant it (see [`error`](Self::error)).
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }

    pub fn error(&self) -> &str {
        &self.error
    }
}

impl LeaseKeepAliveResponse {
    /// The seconds left after the renewal; 0 or less when the lease is gone.
    pub const fn ttl(&self) -> i64 {
        self.ttl
    }
}
