//! The surfaces added after the first hostile suite (issue 21), one module each: every case is
//! a regression test of a hole an independent hostile suite found, over TCP or HTTP against the
//! running server, and checks the class of the hole as well as the case.

mod config_store;
mod http_paths;

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
