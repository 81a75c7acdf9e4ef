//! The surfaces added after the first hostile suite (issue 21), one module each: every case is
//! a regression test of a hole an independent hostile suite found, over TCP or HTTP against the
//! running server, and checks the class of the hole as well as the case.

mod acl_file;
mod config_store;
mod controller_state;
mod failed_attempts;
mod http_paths;
mod http_slots;
mod kv_flood;
mod proxy_split;
mod signatures;

use std::path::Path;
use std::time::Duration;

use rmq_namesrv::config::{Config, Profile};
use rmq_namesrv::protocol::signature::sign_command;
use rmq_namesrv::protocol::RemotingCommand;

use crate::support::*;

/// An admin account, a plain one, and what they sign with.
const ACL: &str = "accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: userKey
    secretKey: userSecret
";

/// The secure profile with [`ACL`] in `dir`, and the HTTP port on 127.0.0.1:0.
fn secure_config(dir: &Path) -> Config {
    let acl = dir.join("plain_acl.yml");
    std::fs::write(&acl, ACL).expect("ACL file");
    let mut config = test_config();
    config.access.profile = Profile::Secure;
    config.access.acl_file = acl;
    config.access.audit_log = dir.join("audit.log");
    config.access.reload_check_interval = Duration::from_secs(3600);
    config.http.listen = Some("127.0.0.1:0".parse().expect("loopback"));
    config
}

fn signed(mut cmd: RemotingCommand, access_key: &str, secret_key: &str) -> RemotingCommand {
    sign_command(&mut cmd, access_key, secret_key, None).expect("signed");
    cmd
}

/// ADD_WRITE_PERM for broker `b1`, signed by the admin with `secret_key`.
fn add_write_perm(secret_key: &str) -> RemotingCommand {
    signed(
        RemotingCommand::request(rmq_namesrv::protocol::RequestCode::ADD_WRITE_PERM_OF_BROKER)
            .with_ext("brokerName", "b1"),
        "adminKey",
        secret_key,
    )
}

/// Sends `requests` on one fresh connection to `addr`, after a PROXY v1 header naming `client`
/// when given, all at once; answers their answers in arrival order (closed early: fewer).
async fn ask_raw(
    addr: std::net::SocketAddr,
    client: Option<&str>,
    requests: &[RemotingCommand],
) -> Vec<RemotingCommand> {
    let mut conn = RawConn::open(addr, client).await;
    conn.ask(requests).await
}

/// A connection that sends frames in batches, pipelined, and reads their answers.
struct RawConn {
    stream: tokio::net::TcpStream,
    buf: bytes::BytesMut,
    codec: rmq_namesrv::protocol::codec::RemotingCodec,
    /// Written before the first batch (a PROXY header).
    prefix: Vec<u8>,
    next_opaque: i32,
}

impl RawConn {
    async fn open(addr: std::net::SocketAddr, client: Option<&str>) -> Self {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let prefix = client.map_or_else(Vec::new, |client| {
            format!("PROXY TCP4 {client} 127.0.0.1 40000 9876\r\n").into_bytes()
        });
        Self {
            stream,
            buf: bytes::BytesMut::new(),
            codec: Default::default(),
            prefix,
            next_opaque: 1,
        }
    }

    /// Sends `requests` at once and reads as many answers (fewer if the server closes).
    async fn ask(&mut self, requests: &[RemotingCommand]) -> Vec<RemotingCommand> {
        use rmq_namesrv::protocol::codec::encode_frame;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        use tokio_util::codec::Decoder;

        let mut bytes = bytes::BytesMut::from(&std::mem::take(&mut self.prefix)[..]);
        for cmd in requests {
            let cmd = cmd.clone().with_opaque(self.next_opaque);
            self.next_opaque = self.next_opaque.wrapping_add(1);
            encode_frame(&cmd, &mut bytes).expect("encodable");
        }
        if self.stream.write_all(&bytes).await.is_err() {
            return Vec::new();
        }
        let mut answers = Vec::new();
        let read = async {
            while answers.len() < requests.len() {
                if let Ok(Some(cmd)) = self.codec.decode(&mut self.buf) {
                    answers.push(cmd);
                    continue;
                }
                let mut chunk = [0u8; 8192];
                match self.stream.read(&mut chunk).await {
                    Ok(n) if n > 0 => self.buf.extend_from_slice(&chunk[..n]),
                    _ => break,
                }
            }
        };
        let _ = tokio::time::timeout(TIMEOUT * 4, read).await;
        answers
    }
}
