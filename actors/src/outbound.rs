//! Oneway calls from the NameServer to brokers: NOTIFY_MIN_BROKER_ID_CHANGE (905) from the route
//! registry, NOTIFY_BROKER_ROLE_CHANGED (1008) from the controller. The owners of the state send
//! a [`Notify`] event to the one [`Notifier`], which owns the outbound connections and their TLS
//! configuration. Each notification is one frame on a connection of its own, sent within a
//! bounded time; a broker that cannot be reached is logged and skipped (it learns the same from
//! its own polls, as with Java).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use bytes::BytesMut;
use rmq_protocol::codec::encode_frame;
use rmq_protocol::command::FLAG_ONEWAY;
use rmq_protocol::controller::NotifyMinBrokerIdChangeHeader;
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode};
use rustls::ClientConfig;
use tokio::io::AsyncWriteExt;
use tracing::{debug, warn};

use crate::route::MinIdChange;

/// Java's send timeout of NOTIFY_MIN_BROKER_ID_CHANGE.
const MIN_ID_NOTIFY_TIMEOUT: Duration = Duration::from_millis(300);

/// One notification: `cmd` (flagged oneway by the sender) to each of `to`, each within `timeout`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Notify {
    pub to: Vec<String>,
    pub cmd: RemotingCommand,
    pub timeout: Duration,
}

impl Notify {
    /// NOTIFY_MIN_BROKER_ID_CHANGE (905) for a group whose smallest broker id changed, to the
    /// brokers Java tells (oneway, 300 ms, as Java sends it); `None` for a group left empty.
    pub fn min_broker_id_changed(change: &MinIdChange) -> Option<Self> {
        let (min_id, min_addr) = change.addrs.iter().next()?;
        let header = NotifyMinBrokerIdChangeHeader {
            min_broker_id: Some(*min_id),
            broker_name: None,
            min_broker_addr: Some(min_addr.to_string()),
            offline_broker_addr: change.offline.as_ref().map(ToString::to_string),
            ha_broker_addr: change.ha.clone(),
        };
        Some(Self {
            to: change
                .recipients()
                .iter()
                .map(ToString::to_string)
                .collect(),
            cmd: RemotingCommand::request(RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE)
                .with_flag(FLAG_ONEWAY)
                .with_ext_fields(header.to_ext()),
            timeout: MIN_ID_NOTIFY_TIMEOUT,
        })
    }
}

/// The actor that sends notifications to brokers: TLS when brokers are reached over TLS.
pub struct Notifier {
    tls: Option<Arc<ClientConfig>>,
}

impl Notifier {
    pub fn new(tls: Option<Arc<ClientConfig>>) -> Self {
        Notifier { tls }
    }
}

impl Actor for Notifier {
    type Context = Context<Self>;
}

impl Handler<Notify> for Notifier {
    type Result = ();

    fn handle(&mut self, msg: Notify, ctx: &mut Context<Self>) {
        for addr in msg.to {
            let sending = send_oneway(addr, msg.cmd.clone(), self.tls.clone(), msg.timeout);
            ctx.spawn(sending.into_actor(self));
        }
    }
}

/// Sends `cmd` (flagged oneway by the caller) to `addr` — TLS when `tls` is given — within
/// `timeout`, connecting included.
async fn send_oneway(
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
