//! A small async client of the remoting protocol: enough for the admin CLI, the dev cluster's
//! simulated brokers and clients, and the tests. Works against any NameServer (ours or Java's),
//! in plaintext or over TLS.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rmq_protocol::{FrameError, RemotingCodec, RemotingCommand};
use rmq_transport::client::{connect, ClientStream};
use rustls::ClientConfig;
use tokio_util::codec::Framed;

/// Why a request got no response.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error("connection closed by the server")]
    Closed,
    #[error(transparent)]
    Frame(#[from] FrameError),
}

/// One connection to a NameServer. Requests are numbered with increasing opaques.
pub struct Client {
    framed: Framed<ClientStream, RemotingCodec>,
    next_opaque: i32,
    timeout: Duration,
}

impl Client {
    /// Connects in plaintext within `timeout`, which also bounds every later request.
    pub async fn connect(addr: &str, timeout: Duration) -> Result<Self, ClientError> {
        Self::connect_with(addr, timeout, None).await
    }

    /// Connects within `timeout` (the TLS handshake included, with `tls`), which also bounds
    /// every later request.
    pub async fn connect_with(
        addr: &str,
        timeout: Duration,
        tls: Option<&Arc<ClientConfig>>,
    ) -> Result<Self, ClientError> {
        let stream = tokio::time::timeout(timeout, connect(addr, tls))
            .await
            .map_err(|_| ClientError::Timeout(timeout))?
            .map_err(|source| ClientError::Connect {
                addr: addr.to_owned(),
                source,
            })?;
        Ok(Self {
            framed: Framed::new(stream, RemotingCodec::default()),
            next_opaque: 1,
            timeout,
        })
    }

    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.framed.get_ref().tcp().peer_addr().ok()
    }

    /// The certificate chain the server presented (TLS only).
    pub fn peer_certificates(&self) -> Option<Vec<Vec<u8>>> {
        self.framed
            .get_ref()
            .peer_certificates()
            .map(|chain| chain.iter().map(|c| c.as_ref().to_vec()).collect())
    }

    /// Sends `request` with a fresh opaque and waits for the response carrying it.
    pub async fn request(
        &mut self,
        mut request: RemotingCommand,
    ) -> Result<RemotingCommand, ClientError> {
        let opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        request.opaque = opaque;
        self.framed.send(&request).await?;
        let timeout = self.timeout;
        tokio::time::timeout(timeout, async {
            loop {
                match self.framed.next().await {
                    Some(Ok(resp)) if resp.is_response() && resp.opaque == opaque => {
                        return Ok(resp)
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(err)) => return Err(ClientError::Frame(err)),
                    None => return Err(ClientError::Closed),
                }
            }
        })
        .await
        .map_err(|_| ClientError::Timeout(timeout))?
    }

    /// Sends `requests` with at most `window` in flight on this connection and hands each
    /// response to `on_response` with the index of its request (responses may come in any
    /// order). Every wait for a response is bounded by the timeout; memory is bounded by
    /// `window`, however many requests there are.
    pub async fn pipeline<I, F>(
        &mut self,
        requests: I,
        window: usize,
        mut on_response: F,
    ) -> Result<(), ClientError>
    where
        I: IntoIterator<Item = RemotingCommand>,
        F: FnMut(usize, RemotingCommand),
    {
        let window = window.max(1);
        let mut requests = requests.into_iter().enumerate();
        let mut in_flight: std::collections::HashMap<i32, usize> =
            std::collections::HashMap::with_capacity(window);
        let mut exhausted = false;
        loop {
            let mut fed = false;
            while !exhausted && in_flight.len() < window {
                let Some((index, mut request)) = requests.next() else {
                    exhausted = true;
                    break;
                };
                request.opaque = self.next_opaque;
                self.next_opaque = self.next_opaque.wrapping_add(1);
                in_flight.insert(request.opaque, index);
                self.framed.feed(&request).await?;
                fed = true;
            }
            if fed {
                SinkExt::<&RemotingCommand>::flush(&mut self.framed).await?;
            }
            if in_flight.is_empty() {
                return Ok(());
            }
            let frame = tokio::time::timeout(self.timeout, self.framed.next())
                .await
                .map_err(|_| ClientError::Timeout(self.timeout))?;
            match frame {
                Some(Ok(resp)) if resp.is_response() => {
                    if let Some(index) = in_flight.remove(&resp.opaque) {
                        on_response(index, resp);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(ClientError::Frame(err)),
                None => return Err(ClientError::Closed),
            }
        }
    }

    /// Sends a request flagged oneway; nothing comes back.
    pub async fn oneway(&mut self, request: RemotingCommand) -> Result<(), ClientError> {
        let flag = request.flag | rmq_protocol::command::FLAG_ONEWAY;
        let mut request = request.with_flag(flag);
        request.opaque = self.next_opaque;
        self.next_opaque = self.next_opaque.wrapping_add(1);
        self.framed.send(&request).await?;
        Ok(())
    }
}
