//! Outbound oneway calls to brokers: NOTIFY_BROKER_ROLE_CHANGED (1008) after an election, and
//! NOTIFY_MIN_BROKER_ID_CHANGE (905) for slave-acting-master. Each is one frame on a connection
//! of its own, sent within a bounded time; a broker that cannot be reached is logged and
//! skipped (it learns its role from its own 1004 poll, as in Java).

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use rmq_protocol::codec::encode_frame;
use rmq_protocol::command::FLAG_ONEWAY;
use rmq_protocol::controller::{ControllerBody, NotifyBrokerRoleChangedHeader, SyncStateSet};
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode};
use rustls::ClientConfig;
use tokio::io::AsyncWriteExt;
use tracing::{debug, warn};

/// Java's send timeout of these notifications.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

/// The 1008 frame of an election's answer.
pub fn role_changed(header: &NotifyBrokerRoleChangedHeader, set: &SyncStateSet) -> RemotingCommand {
    RemotingCommand::request(RequestCode::NOTIFY_BROKER_ROLE_CHANGED)
        .with_flag(FLAG_ONEWAY)
        .with_ext_fields(header.to_ext())
        .with_body(set.encode())
}

/// Sends `cmd` oneway to `addr` (TLS when `tls` is given), within [`SEND_TIMEOUT`].
pub async fn send_oneway(addr: String, cmd: RemotingCommand, tls: Option<Arc<ClientConfig>>) {
    let sent = tokio::time::timeout(SEND_TIMEOUT, async {
        let mut frame = BytesMut::new();
        encode_frame(&cmd, &mut frame).map_err(std::io::Error::other)?;
        let mut stream = rmq_transport::client::connect(&addr, tls.as_ref()).await?;
        stream.write_all(&frame).await?;
        stream.flush().await?;
        stream.shutdown().await
    })
    .await;
    match sent {
        Ok(Ok(())) => debug!(broker = %addr, code = %cmd.request_code(), "notification sent"),
        Ok(Err(e)) => {
            warn!(broker = %addr, code = %cmd.request_code(), error = %e, "notification not sent")
        }
        Err(_) => {
            warn!(broker = %addr, code = %cmd.request_code(), "notification not sent: timed out")
        }
    }
}
