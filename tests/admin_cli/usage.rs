//! Usage errors exit with code 2, and the help mentions `admin`.

use std::process::{Command, Stdio};

use crate::run::*;

#[test]
fn usage_errors_exit_2_and_help_mentions_admin() {
    let status = |args: &[&str]| {
        let output = Command::new(BIN)
            .args(args)
            .env_remove("NAMESRV_ADDR")
            .stdin(Stdio::null())
            .output()
            .expect("spawn rmq-namesrv");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    for args in [
        &["admin"][..],
        &["admin", "topicRoute"],
        &["admin", "noSuchCommand"],
        &["admin", "clusterList", "-n", "no-port"],
        &["admin", "clusterList", "-n", ";"],
        &["admin", "clusterList", "--timeout", "soon"],
        &["admin", "clusterList", "--timeout", "0s"],
        &["admin", "updateKvConfig", "-s", "ns", "-k", "k"],
        &["--listen", "127.0.0.1:0", "admin", "clusterList"],
    ] {
        let (code, stdout, stderr) = status(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stdout, "", "{args:?}");
        assert!(!stderr.is_empty(), "{args:?}");
    }
    let (code, stdout, _) = status(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.contains("--listen"), "{stdout}");
    assert!(stdout.contains("admin"), "{stdout}");
    let (code, stdout, _) = status(&["admin", "--help"]);
    assert_eq!(code, Some(0));
    for command in [
        "clusterList",
        "topicRoute",
        "topicList",
        "getKvConfig",
        "updateKvConfig",
        "deleteKvConfig",
        "kvList",
        "wipeWritePerm",
        "addWritePerm",
        "deleteTopic",
        "getNamesrvConfig",
        "updateNamesrvConfig",
        "status",
    ] {
        assert!(stdout.contains(command), "{command}: {stdout}");
    }
}
