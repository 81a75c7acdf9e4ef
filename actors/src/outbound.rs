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
use rmq_protocol::RemotingCommand;
use rustls::ClientConfig;
use tokio::io::AsyncWriteExt;
use tracing::{debug, warn};

/// One notification: `cmd` (flagged oneway by the sender) to each of `to`, each within `timeout`.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct Notify {
    pub to: Vec<String>,
    pub cmd: RemotingCommand,
    pub timeout: Duration,
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
