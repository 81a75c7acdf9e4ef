//! Running the built binary as an operator does: `rmq-namesrv admin -n ... --timeout 2s ...`
//! off the actix thread, its exit code and output kept.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");
/// Bound on one run of the binary (its own --timeout is far shorter).
pub(crate) const RUN_LIMIT: Duration = Duration::from_secs(30);

/// One finished run of the binary.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        assert_eq!(
            self.stdout.lines().count(),
            1,
            "one JSON document: {self:?}"
        );
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }

    pub(crate) fn assert_ok(&self) {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.stderr, "", "{self:?}");
    }
}

/// Runs the binary off the actix thread, so the in-process servers keep serving.
pub(crate) async fn run_bin(mut cmd: Command) -> Run {
    cmd.stdin(Stdio::null());
    let waiting = tokio::task::spawn_blocking(move || cmd.output());
    let output = tokio::time::timeout(RUN_LIMIT, waiting)
        .await
        .expect("the admin command finishes")
        .expect("join")
        .expect("spawn rmq-namesrv");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `rmq-namesrv admin -n <namesrv> --timeout 2s <args>`.
pub(crate) async fn admin(namesrv: &str, args: &[&str]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(["admin", "-n", namesrv, "--timeout", "2s"])
        .args(args)
        .env_remove("NAMESRV_ADDR");
    run_bin(cmd).await
}
