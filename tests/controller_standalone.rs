//! The standalone controller (`rmq-namesrv controller`, Java's `mqcontroller`) as an operator
//! runs it, from a Java properties file and from TOML: the controller's codes answered on its
//! port, the NameServer's refused as Java's controller refuses them, its HTTP port, SIGTERM, a
//! bad configuration naming the key; and, through the embedding API, TLS enforcing and access
//! classes on its port.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use support::controller::{free_port, join_and_elect};
use support::http::get;
use support::{spawn_listening, test_dir, TIMEOUT};

const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");
const CLUSTER: &str = "sa-cluster";

/// A standalone controller started by this test; killed by PID when dropped.
struct Standalone {
    child: Child,
    addr: String,
    http: std::net::SocketAddr,
}

impl Drop for Standalone {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `rmq-namesrv controller -c <file>` with an HTTP port; waits for its start-up line.
fn spawn(file: &Path) -> Standalone {
    let http: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let (child, addr) = spawn_listening(
        Command::new(BIN)
            .arg("controller")
            .arg("-c")
            .arg(file)
            .args(["--log-level", "warn", "--http-listen", &http.to_string()])
            .env("NAMESRV__TLS__CONFIG_FILE", "")
            .stderr(Stdio::null()),
        "rmq-namesrv controller listening on ",
    );
    Standalone { child, addr, http }
}

/// Runs `rmq-namesrv controller -c <file>` expecting it to refuse to start: its exit code and
/// what it wrote on stderr.
fn refused(file: &Path) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .arg("controller")
        .arg("-c")
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rmq-namesrv controller");
    let status = wait_bounded(&mut child, TIMEOUT).expect("a bad configuration exits at once");
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    (status.code(), stderr)
}

/// Waits for `child` at most `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// SIGTERM, then the exit status (within `limit`).
fn terminate(daemon: &mut Standalone, limit: Duration) -> std::process::ExitStatus {
    let pid = daemon.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    wait_bounded(&mut daemon.child, limit).expect("exits after SIGTERM")
}

/// What every start of the process is checked for: the controller's codes, the NameServer's
/// refused, the HTTP port.
async fn serves_the_controller_only(daemon: &Standalone, group: &str) {
    let mut ctl = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    let metadata = RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO);
    let r = ctl.request(metadata).await.unwrap();
    assert_eq!(
        (r.code, r.ext("isLeader"), r.ext("group")),
        (0, Some("true"), Some(group)),
        "{r:?}"
    );
    assert_eq!(r.ext("controllerLeaderAddress"), Some(daemon.addr.as_str()));
    join_and_elect(&mut ctl, CLUSTER, "sa-broker", "127.0.0.1:10911").await;

    // The NameServer's codes: REQUEST_CODE_NOT_SUPPORTED, as Java's controller (its remoting
    // server has no processor for them).
    for code in [
        RequestCode::GET_ROUTEINFO_BY_TOPIC,
        RequestCode::REGISTER_BROKER,
        RequestCode::PUT_KV_CONFIG,
        RequestCode::GET_NAMESRV_CONFIG,
    ] {
        let r = ctl
            .request(RemotingCommand::request(code).with_ext("topic", "T"))
            .await
            .unwrap();
        let remark = format!(" request type {} not supported", code.0);
        assert_eq!((r.code, r.remark.as_deref()), (3, Some(remark.as_str())));
    }

    let health = get(daemon.http, "/health", "").await;
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(health.body.starts_with("ok: "), "{}", health.body);
    let ready = get(daemon.http, "/ready", "").await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    let metrics = get(daemon.http, "/metrics", "").await;
    assert_eq!(metrics.status, 200);
    // Requests are counted (the refused ones by their code); the registry's and KV's
    // families are absent.
    assert!(
        metrics
            .body
            .contains("{code=\"105\",request=\"GET_ROUTEINFO_BY_TOPIC\",response_code=\"3\"} 1"),
        "{}",
        metrics.body
    );
    assert!(metrics
        .body
        .contains("rmq_namesrv_actor_alive{actor=\"controller\"} 1"));
    for absent in [
        "rmq_namesrv_topics ",
        "rmq_namesrv_kv_entries",
        "live_brokers",
    ] {
        assert!(!metrics.body.contains(absent), "{absent}");
    }
    let status = get(daemon.http, "/api/status", "").await;
    let status: serde_json::Value = serde_json::from_str(&status.body).unwrap();
    assert_eq!(status["server"]["mode"], "controller");
    assert_eq!(status["server"]["remoting_address"], daemon.addr.as_str());
    assert!(
        status["clusters"].is_null() && status["kv"].is_null(),
        "{status}"
    );
    let page = get(daemon.http, "/", "").await;
    assert!(page.body.contains("standalone controller"), "{}", page.body);
}

#[actix::test]
async fn from_java_properties_it_serves_the_controller_alone_and_stops_on_sigterm() {
    let dir = test_dir("sa-props");
    let port = free_port();
    let file = dir.join("controller.properties");
    std::fs::write(
        &file,
        format!(
            "controllerDLegerGroup=group-sa\n\
             controllerDLegerPeers=n0-127.0.0.1:{port}\n\
             controllerDLegerSelfId=n0\n\
             controllerStorePath={store}\n\
             controllerType=DLedger\n\
             enableElectUncleanMaster=false\n\
             notifyBrokerRoleChanged=true\n\
             scanNotActiveBrokerInterval=2000\n\
             controllerThreadPoolNums=16\n\
             configStorePath={config_store}\n",
            store = dir.join("store").display(),
            config_store = dir.join("controller-config.properties").display()
        ),
    )
    .unwrap();
    let mut daemon = spawn(&file);
    assert_eq!(daemon.addr, format!("127.0.0.1:{port}"));
    serves_the_controller_only(&daemon, "group-sa").await;
    // As in Java's controller file, configStorePath is where UPDATE_CONTROLLER_CONFIG persists.
    let mut ctl = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    let update = RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
        .with_body(b"enableElectUncleanMaster=true\n".to_vec());
    assert_eq!(ctl.request(update).await.unwrap().code, 0);
    let stored = std::fs::read_to_string(dir.join("controller-config.properties")).unwrap();
    assert!(stored.contains("enableElectUncleanMaster=true"), "{stored}");
    let status = terminate(&mut daemon, TIMEOUT);
    assert_eq!(status.code(), Some(0));
    // The broker set is in the state file: a restart on it knows it (and, its master silent,
    // elects no master: a later epoch).
    let daemon = spawn(&file);
    let mut ctl = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    let info = RemotingCommand::request(RequestCode::CONTROLLER_GET_REPLICA_INFO)
        .with_ext("brokerName", "sa-broker");
    let r = ctl.request(info).await.unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    let epoch: i32 = r.ext("masterEpoch").unwrap_or("0").parse().unwrap();
    assert!(epoch >= 1, "{r:?}");
    // ... and keeps the update.
    let r = ctl
        .request(RemotingCommand::request(RequestCode::GET_CONTROLLER_CONFIG))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(r.body.as_deref().unwrap_or_default()).into_owned();
    assert!(text.contains("enableElectUncleanMaster=true"), "{text}");
}

#[actix::test]
async fn from_toml_it_serves_the_controller_and_drains_before_it_exits() {
    let dir = test_dir("sa-toml");
    let port = free_port();
    let file = dir.join("controller.toml");
    std::fs::write(
        &file,
        format!(
            "[server]\nworkers = 1\nshutdown_gracefully = true\nshutdown_wait = \"1s\"\n\n\
             [controller]\ngroup = \"group-toml\"\npeers = \"c1-127.0.0.1:{port}\"\n\
             self_id = \"c1\"\nstore_path = \"{store}\"\n",
            store = dir.join("store").display()
        ),
    )
    .unwrap();
    let mut daemon = spawn(&file);
    serves_the_controller_only(&daemon, "group-toml").await;
    let started = Instant::now();
    let status = terminate(&mut daemon, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    // server.shutdown_wait: the drain ran before the exit.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_bad_configuration_exits_naming_the_key() {
    let dir = test_dir("sa-bad");
    let cases = [
        (
            "bad-value.properties",
            "controllerDLegerPeers=n0-127.0.0.1:1\ncontrollerDLegerSelfId=n0\n\
             scanNotActiveBrokerInterval=soon\n",
            "scanNotActiveBrokerInterval",
        ),
        (
            "bad-bool.properties",
            "controllerDLegerPeers=n0-127.0.0.1:1\ncontrollerDLegerSelfId=n0\n\
             enableElectUncleanMaster=perhaps\n",
            "enableElectUncleanMaster",
        ),
        (
            "no-peers.properties",
            "controllerDLegerGroup=g\n",
            "controller.peers",
        ),
        (
            "not-mine.properties",
            "controllerDLegerPeers=n0-127.0.0.1:1\ncontrollerDLegerSelfId=n9\n",
            "controller.self_id",
        ),
        (
            "bad-type.toml",
            "[controller]\npeers = \"n0-127.0.0.1:1\"\nself_id = \"n0\"\ntype = \"Paxos\"\n",
            "controller.type",
        ),
        (
            "unknown.toml",
            "[controller]\npeers = \"n0-127.0.0.1:1\"\nself_id = \"n0\"\npeer = \"x\"\n",
            "peer",
        ),
    ];
    for (name, text, key) in cases {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        let (code, stderr) = refused(&file);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains("configuration error"), "{name}: {stderr}");
        assert!(stderr.contains(key), "{name} should name {key}: {stderr}");
    }
    // A port already taken is a start error (1) naming the address.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let file = dir.join("taken.properties");
    std::fs::write(
        &file,
        format!(
            "controllerDLegerPeers=n0-{}\ncontrollerDLegerSelfId=n0\ncontrollerStorePath={}\n",
            taken.local_addr().unwrap(),
            dir.join("store").display()
        ),
    )
    .unwrap();
    let (code, stderr) = refused(&file);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot listen on"), "{stderr}");
}

#[actix::test]
async fn embedded_in_an_application_with_tls_enforcing_and_access_classes() {
    use rmq_namesrv::config::{ClientTlsSettings, PolicyKind, TlsMode};
    use rmq_namesrv::transport::client::client_config;
    use rmq_namesrv::StandaloneController;
    use support::pki::{serving, Pki};

    let dir = test_dir("sa-tls");
    let pki = Pki::new(&dir);
    let cert = pki.issue("server", 11);
    let mut config = support::controller::controller_config(&dir);
    // Whatever the file says, the standalone mode runs the controller.
    config.controller.enabled = false;
    config.tls = serving(TlsMode::Enforcing, &cert);
    config.access.admin_write.policy = Some(PolicyKind::Networks);
    config.access.admin_write.networks = vec!["10.0.0.0/8".parse().unwrap()];
    let controller = StandaloneController::new(config).start().expect("starts");
    let addr = controller.local_addr().to_string();
    let metadata = || RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO);

    // Enforcing TLS: a plaintext request gets no answer.
    let mut plain = Client::connect(&addr, Duration::from_secs(2))
        .await
        .unwrap();
    assert!(plain.request(metadata()).await.is_err());
    let tls = client_config(&ClientTlsSettings {
        enable: true,
        auth_server: true,
        trust_cert_path: Some(pki.ca_path.clone()),
        ..ClientTlsSettings::default()
    })
    .unwrap();
    let mut ctl = Client::connect_with(&addr, TIMEOUT, Some(&tls))
        .await
        .unwrap();
    let r = ctl.request(metadata()).await.unwrap();
    assert_eq!((r.code, r.ext("isLeader")), (0, Some("true")), "{r:?}");
    // Access classes, as on the NameServer port: a configuration change is admin_write,
    // refused from this network.
    let update = RemotingCommand::request(RequestCode::UPDATE_CONTROLLER_CONFIG)
        .with_body(b"enableElectUncleanMaster=true\n".to_vec());
    let r = ctl.request(update).await.unwrap();
    assert_eq!(r.code, 16, "{r:?}");
    assert!(
        r.remark.as_deref().is_some_and(|t| t.contains("[access]")),
        "{r:?}"
    );
    // SIGHUP's reloads, as the daemon runs them.
    assert!(controller.reload_tls().await.is_ok());
    assert!(controller.reload_accounts().await.is_err());
    let health = controller.health().await;
    assert!(health.serving() && health.actors.iter().any(|a| a.actor == "controller"));
    controller.stop().await;
}
