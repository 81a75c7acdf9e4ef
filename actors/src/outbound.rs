//! Oneway calls from the NameServer to brokers: NOTIFY_MIN_BROKER_ID_CHANGE (905) from the route
//! registry, NOTIFY_BROKER_ROLE_CHANGED (1008) from the controller. Each is one frame on a
//! connection of its own, sent within a bounded time; a broker that cannot be reached is logged
//! and skipped (it learns the same from its own polls, as with Java).

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rmq_protocol::codec::encode_frame;
use rmq_protocol::RemotingCommand;
use rustls::ClientConfig;
use tokio::io::AsyncWriteExt;
use tracing::{debug, warn};

/// Sends `cmd` (flagged oneway by the caller) to `addr` — TLS when `tls` is given — within
/// `timeout`, connecting included.
pub async fn send_oneway(
    addr: String,
    cmd: RemotingCommand,
    tls: Option<Arc<ClientConfig>>,
    timeout: Duration,
) {
    let sent = tokio::time::timeout(timeout, async {
        let mut frame = BytesMut::new();
        encode_frame(&cmd, &mut frame).map_err(std::io::Error::other)?;
        let mut stream = rmq_transport::client::connect(&addr, tls.as_ref()).await?;
        stream.write_all(&frame).await?;
        stream.flush().await?;
        stream.shutdown().await
    })
    .await;
    let code = cmd.request_code();
    match sent {
        Ok(Ok(())) => debug!(broker = %addr, code = %code, "notification sent"),
        Ok(Err(e)) => warn!(broker = %addr, code = %code, error = %e, "notification not sent"),
        Err(_) => warn!(broker = %addr, code = %code, ?timeout, "notification not sent: timed out"),
    }
}
