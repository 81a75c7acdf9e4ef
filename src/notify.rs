//! systemd readiness (`Type=notify`): READY=1 once the server accepts connections, STOPPING=1
//! when a stop begins. Outside systemd (no `NOTIFY_SOCKET`) both do nothing.

use std::net::SocketAddr;

use sd_notify::NotifyState;
use tracing::warn;

/// The server is listening on `addr`.
pub fn ready(addr: SocketAddr) {
    let status = format!("listening on {addr}");
    send(&[NotifyState::Ready, NotifyState::Status(&status)]);
}

/// A graceful stop has begun (connections drain, the KV store is flushed).
pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("stopping")]);
}

fn send(states: &[NotifyState]) {
    // The server serves either way; systemd's start timeout reports a lost READY=1.
    if let Err(err) = sd_notify::notify(states) {
        warn!(error = %err, "cannot notify systemd (NOTIFY_SOCKET)");
    }
}
