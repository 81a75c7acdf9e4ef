//! etcd with TLS and authentication (the `[etcd]` section, docs/controller.md#etcd-tls-and-authentication)
//! against a real etcd started here (support/etcd.rs) with certificates made here
//! (support/pki.rs): two controllers fail over on an etcd that requires client certificates and
//! on one that requires a user and password (with tokens that expire under them); the KV
//! store's etcd backend over TLS and with a user; and a wrong CA, a refused or missing client
//! certificate, a wrong password stop the start naming the key — also as the daemon's exit
//! code 1. Every wait is bounded.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use rmq_namesrv::actors::settings::KvBackend;
use rmq_namesrv::config::Config;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::{NameServer, NameServerHandle};
use support::controller::{controller, controller_config, free_port, join_and_elect};
use support::etcd::{Etcd, Options};
use support::pki::{Issued, Pki};
use support::*;

const CLUSTER: &str = "tls-cluster";

/// The etcd user's password in these tests.
const PASSWORD: &str = "s3cret-pw";

/// The longest wait for a NameServer's KV store to (re)connect to etcd.
const CONNECTED: Duration = Duration::from_secs(20);

/// A CA, etcd's certificate and this server's client certificate, under `dir`.
struct Certs {
    pki: Pki,
    etcd: Issued,
    client: Issued,
}

fn certs(dir: &Path) -> Certs {
    let pki = Pki::new(&dir.join("pki"));
    let etcd = pki.issue("etcd", 10);
    let client = pki.issue("namesrv", 11);
    Certs { pki, etcd, client }
}

/// An etcd serving TLS and requiring client certificates signed by the test CA.
fn tls_etcd(certs: &Certs) -> Etcd {
    support::etcd::start_with(&Options {
        tls: Some((certs.etcd.cert_path.clone(), certs.etcd.key_path.clone())),
        client_ca: Some(certs.pki.ca_path.clone()),
        ..Options::default()
    })
}

/// `config` reaching etcd with the test CA and client certificate.
fn with_tls(mut config: Config, certs: &Certs) -> Config {
    config.etcd.ca_file = Some(certs.pki.ca_path.clone());
    config.etcd.cert_file = Some(certs.client.cert_path.clone());
    config.etcd.key_file = Some(certs.client.key_path.clone());
    config
}

/// An etcd with authentication on, user `namesrv`, whose unused tokens expire after 1 s.
fn auth_etcd() -> Etcd {
    let etcd = support::etcd::start_with(&Options {
        auth_token_ttl: Some(1),
        ..Options::default()
    });
    etcd.enable_auth("namesrv", PASSWORD);
    etcd
}

/// A controller of a two-node group on `etcd` (`endpoint` as the setting names it).
fn controller_on(dir: &Path, endpoint: &str, peers: &str, me: &str) -> Config {
    let mut config = controller_config(dir);
    config.controller.peers = peers.to_owned();
    config.controller.self_id = me.to_owned();
    config.controller.etcd_endpoints = endpoint.to_owned();
    config.controller.etcd_prefix = format!("/rmq-test/{}", dir.display());
    config.controller.etcd_lease_ttl = Duration::from_secs(2);
    config
}

async fn is_leader(server: &NameServerHandle) -> bool {
    let mut ctl = controller(server).await;
    let m = ctl
        .request(RemotingCommand::request(
            RequestCode::CONTROLLER_GET_METADATA_INFO,
        ))
        .await
        .unwrap();
    m.ext("isLeader") == Some("true")
}

/// Waits (bounded) until `server`'s controller leads.
async fn leads(server: &NameServerHandle) -> bool {
    eventually(Duration::from_secs(15), || is_leader(server)).await
}

/// Two controllers on one etcd: the first leads and elects a master, stops; the second takes
/// over with the state (the master and its epoch).
async fn failover(first: Config, second: Config) {
    let first = start_server(first);
    assert!(leads(&first).await, "the first controller never led");
    let second = start_server(second);
    let mut leader = controller(&first).await;
    // Past the token's life on an etcd with users: the commits below renew it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    join_and_elect(&mut leader, CLUSTER, "broker-tls", "127.0.0.1:10911").await;
    assert!(!is_leader(&second).await, "two leaders");
    first.stop().await;
    assert!(
        leads(&second).await,
        "the second controller never took over"
    );
    let mut ctl = controller(&second).await;
    // No configuration answer shows a password.
    let r = ctl
        .request(RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!body_text(&r).contains(PASSWORD), "{}", body_text(&r));
    let r = connect(&second)
        .await
        .request(RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert!(!body_text(&r).contains(PASSWORD), "{}", body_text(&r));
    let r = ctl
        .request(
            RemotingCommand::request(RequestCode::CONTROLLER_GET_REPLICA_INFO)
                .with_ext("brokerName", "broker-tls"),
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        (r.ext("masterBrokerId"), r.ext("masterEpoch")),
        (Some("1"), Some("1")),
        "{r:?}"
    );
    let r = ctl
        .request(request(
            RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
            "broker-tls",
        ))
        .await
        .unwrap();
    assert_eq!(r.ext("nextBrokerId"), Some("2"), "{r:?}");
    second.stop().await;
}

#[actix::test]
async fn controllers_fail_over_on_an_etcd_requiring_client_certificates() {
    let dir = test_dir("etcd-tls-ctl");
    let certs = certs(&dir);
    let etcd = tls_etcd(&certs);
    let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{}", free_port(), free_port());
    // One names the scheme, the other leaves it to etcd.ca_file.
    let first = with_tls(controller_on(&dir, &etcd.url(), &peers, "n0"), &certs);
    let second = with_tls(controller_on(&dir, &etcd.endpoint(), &peers, "n1"), &certs);
    failover(first, second).await;
}

#[actix::test]
async fn controllers_fail_over_on_an_etcd_with_a_user_and_expiring_tokens() {
    let dir = test_dir("etcd-auth-ctl");
    let etcd = auth_etcd();
    let peers = format!("n0-127.0.0.1:{};n1-127.0.0.1:{}", free_port(), free_port());
    let mut first = controller_on(&dir, &etcd.endpoint(), &peers, "n0");
    first.etcd.user = "namesrv".into();
    first.etcd.password = Some(rmq_namesrv::transport::Secret::new(PASSWORD));
    // The other reads its password from a file, as from a mounted secret.
    let password_file = dir.join("etcd-password");
    std::fs::write(&password_file, format!("{PASSWORD}\n")).unwrap();
    let mut second = controller_on(&dir, &etcd.endpoint(), &peers, "n1");
    second.etcd.user = "namesrv".into();
    second.etcd.password_file = Some(password_file);
    failover(first, second).await;
}

/// Puts until the server answers SUCCESS (it connects to etcd after it starts).
async fn put_when_connected(server: &NameServerHandle, ns: &str, key: &str, value: &str) {
    let mut conn = connect(server).await;
    let deadline = tokio::time::Instant::now() + CONNECTED;
    loop {
        let r = conn.request(put_kv(ns, key, value)).await.unwrap();
        if r.code == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "PUT_KV_CONFIG not taken within {CONNECTED:?}: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn value_of(server: &NameServerHandle, ns: &str, key: &str) -> Option<String> {
    let mut conn = connect(server).await;
    let r = conn.request(get_kv(ns, key)).await.unwrap();
    (r.code == 0).then(|| r.ext("value").unwrap_or_default().to_owned())
}

fn kv_on(endpoint: &str, prefix: &str) -> Config {
    let mut config = test_config();
    config.kv.backend = KvBackend::Etcd;
    config.kv.etcd_endpoints = endpoint.to_owned();
    config.kv.etcd_prefix = prefix.to_owned();
    config
}

#[actix::test]
async fn the_kv_store_shares_its_config_over_tls_and_with_a_user() {
    let dir = test_dir("etcd-tls-kv");
    let certs = certs(&dir);
    let etcd = tls_etcd(&certs);
    let one = start_server(with_tls(kv_on(&etcd.url(), "/tls-kv"), &certs));
    let two = start_server(with_tls(kv_on(&etcd.endpoint(), "/tls-kv"), &certs));
    put_when_connected(&one, "ns", "k", "over-tls").await;
    let seen = eventually(CONNECTED, || async {
        value_of(&two, "ns", "k").await.as_deref() == Some("over-tls")
    })
    .await;
    assert!(seen, "the other NameServer never read the value over TLS");
    one.stop().await;
    two.stop().await;

    // With a user: a token that expired while the store was idle is renewed by the next write.
    let etcd = auth_etcd();
    let mut config = kv_on(&etcd.endpoint(), "/auth-kv");
    config.etcd.user = "namesrv".into();
    config.etcd.password = Some(rmq_namesrv::transport::Secret::new(PASSWORD));
    let server = start_server(config);
    put_when_connected(&server, "ns", "k", "v1").await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut conn = connect(&server).await;
    let r = conn.request(put_kv("ns", "k", "v2")).await.unwrap();
    assert_eq!(r.code, 0, "a write after the token expired: {r:?}");
    assert_eq!(value_of(&server, "ns", "k").await.as_deref(), Some("v2"));
    server.stop().await;
}

/// The start's error, which must come.
fn start_error(config: Config) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    match NameServer::new(config).start(listener) {
        Ok(_) => panic!("the server started"),
        Err(e) => e.to_string(),
    }
}

#[actix::test]
async fn a_wrong_ca_certificate_or_password_stops_the_start_naming_the_key() {
    let dir = test_dir("etcd-tls-bad");
    let certs = certs(&dir);
    let etcd = tls_etcd(&certs);
    let endpoint = etcd.endpoint();
    let ctl = |config: Config| {
        let mut config = config;
        config.controller.etcd_endpoints = endpoint.clone();
        config
    };

    // A CA that did not sign etcd's certificate.
    let stranger = Pki::new(&dir.join("other-pki"));
    let mut config = with_tls(ctl(controller_config(&dir)), &certs);
    config.etcd.ca_file = Some(stranger.ca_path.clone());
    let err = start_error(config);
    assert!(err.contains("etcd.ca_file"), "{err}");

    // No client certificate for an etcd that requires one; a stranger's.
    let mut config = ctl(controller_config(&dir));
    config.etcd.ca_file = Some(certs.pki.ca_path.clone());
    let err = start_error(config);
    assert!(err.contains("etcd.cert_file"), "{err}");
    let other = stranger.issue("impostor", 12);
    let mut config = with_tls(ctl(controller_config(&dir)), &certs);
    config.etcd.cert_file = Some(other.cert_path.clone());
    config.etcd.key_file = Some(other.key_path.clone());
    let err = start_error(config);
    assert!(err.contains("etcd.cert_file"), "{err}");

    // A certificate file that is not there, for the KV store too.
    let mut config = with_tls(kv_on(&endpoint, "/kv"), &certs);
    config.etcd.cert_file = Some(dir.join("missing.pem"));
    let err = start_error(config);
    assert!(
        err.contains("etcd.cert_file") && err.contains("missing.pem"),
        "{err}"
    );

    // A wrong password.
    let etcd = auth_etcd();
    let mut config = kv_on(&etcd.endpoint(), "/kv");
    config.etcd.user = "namesrv".into();
    config.etcd.password = Some(rmq_namesrv::transport::Secret::new("wrong"));
    let err = start_error(config);
    assert!(err.contains("etcd.password"), "{err}");
    assert!(
        !err.contains("wrong"),
        "the password is in the error: {err}"
    );
}

#[test]
fn the_daemon_exits_1_naming_the_key_and_never_shows_the_password() {
    let dir = test_dir("etcd-tls-daemon");
    let etcd = auth_etcd();
    let config = dir.join("namesrv.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n[kv]\npath = \"{kv}\"\nbackend = \"etcd\"\n\
             etcd_endpoints = \"{endpoint}\"\n[etcd]\nuser = \"namesrv\"\n",
            kv = dir.join("kv.json").display(),
            endpoint = etcd.endpoint()
        ),
    )
    .unwrap();
    let run = |password: &str, args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rmq-namesrv"))
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("NAMESRV__ETCD__PASSWORD", password)
            .output()
            .expect("run rmq-namesrv")
    };
    let out = run("not-the-password", &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("etcd.password"), "{stderr}");
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    // --print-config shows the user, never the password.
    let out = run(PASSWORD, &["--print-config"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("user = \"namesrv\""), "{stdout}");
    assert!(!stdout.contains(PASSWORD), "{stdout}");
}

fn request(code: RequestCode, name: &str) -> RemotingCommand {
    RemotingCommand::request(code)
        .with_ext("clusterName", CLUSTER)
        .with_ext("brokerName", name)
}
