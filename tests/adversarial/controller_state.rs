//! The embedded controller's state: every string a request stores is bounded in bytes (so is
//! the heartbeat table, and the state as a whole), configuration updates cannot plant values,
//! and a start is never made impossible by what clients sent; a corrupt state file stops the
//! daemon with a message naming it, and nothing else.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rmq_namesrv::protocol::{properties, RemotingCommand, RequestCode};

use crate::support::controller::{controller, controller_config};
use crate::support::*;

const CONTROLLER_INVALID_REQUEST: i32 = 2005;
const NO_PERMISSION: i32 = 16;

fn apply_id(name: &str, id: i64, check: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::CONTROLLER_APPLY_BROKER_ID)
        .with_ext("clusterName", "c1")
        .with_ext("brokerName", name)
        .with_ext("appliedBrokerId", id.to_string())
        .with_ext("registerCheckCode", check)
}

fn heartbeat(name: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::BROKER_HEARTBEAT)
        .with_ext("clusterName", "c1")
        .with_ext("brokerName", name)
        .with_ext("brokerId", "1")
        .with_ext("brokerAddr", "127.0.0.1:10911")
        .with_ext("heartbeatTimeoutMills", "10000")
}

fn update(body: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
        .with_body(body.as_bytes().to_vec())
}

#[actix::test]
async fn requests_cannot_grow_the_state_past_what_a_start_reads() {
    let dir = test_dir("controller-state");
    let server = start_server(controller_config(&dir));
    let mut ctl = controller(&server).await;
    // Five 14 MiB check codes: each refused, nothing stored.
    let huge = "c".repeat(14 << 20);
    for i in 0..5 {
        let answer = ctl
            .request(apply_id(&format!("b{i}"), 1, &huge))
            .await
            .unwrap();
        assert_eq!(
            answer.code, CONTROLLER_INVALID_REQUEST,
            "{:?}",
            answer.remark
        );
        assert!(answer
            .remark
            .as_deref()
            .is_some_and(|r| r.contains("registerCheckCode of 14680064 bytes exceeds 1024")));
    }
    // 200 heartbeats naming distinct 1 MiB brokers: refused, the table stays as it was.
    let name = "n".repeat(1 << 20);
    for i in 0..200 {
        let answer = ctl.request(heartbeat(&format!("{i}{name}"))).await.unwrap();
        assert_eq!(answer.code, CONTROLLER_INVALID_REQUEST);
    }
    assert_eq!(ctl.request(heartbeat("b-ok")).await.unwrap().code, 0);
    // What a real broker sends is taken.
    let answer = ctl
        .request(apply_id("b-ok", 1, "127.0.0.1:10911;1733380000000"))
        .await
        .unwrap();
    assert_eq!((answer.code, answer.remark.as_deref()), (0, None));
    // UPDATE_CONTROLLER_CONFIG: no path key, no control character, nothing shown that was not
    // a setting.
    let answer = ctl
        .request(update("controllerStorePath=/ATT"))
        .await
        .unwrap();
    assert_eq!(answer.code, NO_PERMISSION);
    let answer = ctl
        .request(update(
            "notifyBrokerRoleChanged=true\\u000acontrollerStorePath=/ATT",
        ))
        .await
        .unwrap();
    assert_ne!(answer.code, 0);
    let shown = ctl
        .request(RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG))
        .await
        .unwrap();
    let shown = properties::parse(&body_text(&shown)).unwrap();
    assert!(shown.values().all(|v| !v.contains("/ATT")), "{shown:?}");
    server.stop().await;

    let state = std::fs::metadata(dir.join("controller-state.json"))
        .unwrap()
        .len();
    assert!(state < 64 * 1024, "the state file is {state} bytes");
    // The next start reads it.
    let server = start_server(controller_config(&dir));
    let mut ctl = controller(&server).await;
    let answer = ctl
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_GET_NEXT_BROKER_ID)
                .with_ext("clusterName", "c1")
                .with_ext("brokerName", "b-ok"),
        )
        .await
        .unwrap();
    assert_eq!(answer.ext("nextBrokerId"), Some("2"));
    server.stop().await;
}

/// The daemon, started on `properties`, exits by itself within 20 s: its exit code and stderr.
fn run_daemon(dir: &Path, properties: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rmq-namesrv"))
        .args(["--listen", "127.0.0.1:0", "-c"])
        .arg(properties)
        .env("HOME", dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the daemon runs");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("status").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    if child.try_wait().expect("status").is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("output");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_corrupt_state_file_stops_the_start_cleanly() {
    let dir = test_dir("controller-corrupt");
    let store = dir.join("ctl");
    std::fs::create_dir_all(&store).unwrap();
    let props = dir.join("namesrv.properties");
    // The controller's port is held by this test: the state file is read before the port is
    // bound, so its error is the one reported (and no other test can take the port meanwhile).
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    std::fs::write(
        &props,
        format!(
            "enableControllerInNamesrv=true\ncontrollerDLegerGroup=g\n\
             controllerDLegerPeers=n0-127.0.0.1:{}\ncontrollerDLegerSelfId=n0\n\
             controllerStorePath={}\nkvConfigPath={}\n",
            held.local_addr().unwrap().port(),
            store.display(),
            dir.join("kv.json").display()
        ),
    )
    .unwrap();
    for content in [
        "{\"revision\": 3, \"sets\": [",
        "",
        "not json",
        "[1, 2, 3]",
        "{\"revision\": \"x\"}",
        "{\"revision\": 1, \"sets\": [{\"revision\": 1, \"set\": {\"name\": 5}}]}",
    ] {
        std::fs::write(store.join("controller-state.json"), content).unwrap();
        let (code, stderr) = run_daemon(&dir, &props);
        assert_eq!(code, Some(1), "{content:?}: {stderr}");
        assert!(
            stderr.contains("controller-state.json"),
            "{content:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{content:?}: {stderr}");
    }
    // The journal of commits since the snapshot: a corrupt line (not the last one, which a
    // crash may cut) stops the start the same way.
    std::fs::write(
        store.join("controller-state.json"),
        "{\"revision\": 0, \"sets\": []}",
    )
    .unwrap();
    std::fs::write(store.join("controller-state.log"), "garbage\n{}\n").unwrap();
    let (code, stderr) = run_daemon(&dir, &props);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("controller-state.log"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
