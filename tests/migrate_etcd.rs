//! `rmq-namesrv migrate-to-etcd` against a real etcd (support/etcd.rs): a server with the
//! controller's file store and the KV file takes a broker set and KV entries over TCP, stops;
//! the command copies both into etcd (with a user, over the `[etcd]` section); a server started
//! on etcd with the same configuration serves the same broker set and KV entries; a second run
//! refuses the non-empty prefixes, exit 1. Every wait is bounded.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use rmq_namesrv::actors::settings::KvBackend;
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::transport::Secret;
use rmq_namesrv::NameServerHandle;
use support::controller::{controller, controller_config, join_and_elect};
use support::etcd::Options;
use support::*;

const CLUSTER: &str = "migrated";

/// The master id and epoch of broker set `name`, once the controller leads (bounded).
async fn master_of(server: &NameServerHandle, name: &str) -> (Option<String>, Option<String>) {
    let mut ctl = controller(server).await;
    for _ in 0..100 {
        let r = ctl
            .request(
                RemotingCommand::request(RequestCode::CONTROLLER_GET_REPLICA_INFO)
                    .with_ext("brokerName", name),
            )
            .await
            .unwrap();
        if r.code == 0 {
            return (
                r.ext("masterBrokerId").map(str::to_owned),
                r.ext("masterEpoch").map(str::to_owned),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the controller never answered GET_REPLICA_INFO");
}

/// The value GET_KV_CONFIG answers once the server has read etcd (bounded).
async fn value_of(server: &NameServerHandle, ns: &str, key: &str) -> Option<String> {
    let mut conn = connect(server).await;
    for _ in 0..100 {
        let r = conn.request(get_kv(ns, key)).await.unwrap();
        if r.code == 0 {
            return r.ext("value").map(str::to_owned);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Runs the command on `config`, the etcd password (if any) in the environment.
fn migrate(config: &Path, password: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_rmq-namesrv"));
    command
        .arg("migrate-to-etcd")
        .arg("--config")
        .arg(config)
        .args(args);
    match password {
        Some(password) => command.env("NAMESRV__ETCD__PASSWORD", password),
        None => command.env_remove("NAMESRV__ETCD__PASSWORD"),
    };
    command.output().expect("run rmq-namesrv migrate-to-etcd")
}

#[actix::test]
async fn the_file_state_and_kv_file_move_into_etcd_once() {
    let dir = test_dir("migrate");
    // Before: a single controller on its files, the KV in its file.
    let files = controller_config(&dir.join("controller"));
    let server = start_server(files.clone());
    let mut ctl = controller(&server).await;
    join_and_elect(&mut ctl, CLUSTER, "broker-m", "127.0.0.1:10911").await;
    let mut conn = connect(&server).await;
    for (ns, key, value) in [
        ("ns-a", "k1", "v1"),
        ("ns-a", "k2", "v2"),
        ("ns/b", "k", "v"),
    ] {
        let r = conn.request(put_kv(ns, key, value)).await.unwrap();
        assert_eq!(r.code, 0, "{r:?}");
    }
    server.stop().await;

    // The same configuration switched to etcd, with a user.
    let etcd = support::etcd::start_with(&Options::default());
    etcd.enable_auth("mig", "mig-pw");
    let mut on_etcd: Config = files;
    on_etcd.controller.etcd_endpoints = etcd.endpoint();
    on_etcd.controller.etcd_prefix = "/migrated/controller".into();
    on_etcd.kv.backend = KvBackend::Etcd;
    on_etcd.kv.etcd_endpoints = etcd.endpoint();
    on_etcd.kv.etcd_prefix = "/migrated/kv".into();
    on_etcd.etcd.user = "mig".into();
    let path = dir.join("namesrv.toml");
    std::fs::write(&path, toml::to_string(&on_etcd).expect("TOML")).unwrap();

    // A dry run says what it would copy and writes nothing.
    let out = migrate(&path, Some("mig-pw"), &["--dry-run"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("controller: would copy 1 broker set(s)"),
        "{stdout}"
    );

    let out = migrate(&path, Some("mig-pw"), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("controller: copied 1 broker set(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("kv: copied 2 namespace(s), 3 entr(y/ies)"),
        "{stdout}"
    );

    // Once only: the prefixes now hold keys.
    let out = migrate(&path, Some("mig-pw"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("already holds keys") && stderr.contains("/migrated/controller/"),
        "{stderr}"
    );

    // After: a server on etcd serves the same broker set and KV.
    on_etcd.etcd.password = Some(Secret::new("mig-pw"));
    let server = start_server(on_etcd);
    assert_eq!(
        master_of(&server, "broker-m").await,
        (Some("1".into()), Some("1".into()))
    );
    let mut ctl = controller(&server).await;
    let r = ctl
        .request(request(
            RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
            "broker-m",
        ))
        .await
        .unwrap();
    assert_eq!(r.ext("nextBrokerId"), Some("2"), "{r:?}");
    assert_eq!(value_of(&server, "ns-a", "k2").await.as_deref(), Some("v2"));
    assert_eq!(value_of(&server, "ns/b", "k").await.as_deref(), Some("v"));
    server.stop().await;
}

#[test]
fn a_configuration_without_etcd_has_nothing_to_migrate() {
    let dir = test_dir("migrate-none");
    let path = dir.join("namesrv.toml");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&path, "[server]\nlisten = \"127.0.0.1:0\"\n").unwrap();
    let out = migrate(&path, None, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("nothing to migrate"), "{stderr}");
}

fn request(code: RequestCode, name: &str) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
}
