//! The daemon binary as an operator runs it: start-up line, bad configuration, a corrupt KV
//! file, SIGKILL in the middle of KV writes, graceful SIGTERM.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rmq_namesrv::actors::kv::KvTables;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use support::{spawn_listening, TIMEOUT};

const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rmq-daemon-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A daemon started by this test; killed by PID when dropped.
struct Daemon {
    child: Child,
    addr: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The daemon on loopback at `log_level`, its KV and config store files under `dir`.
fn command(dir: &Path, log_level: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["--listen", "127.0.0.1:0", "--log-level", log_level])
        .arg("--kv-config-path")
        .arg(dir.join("kvConfig.json"))
        .arg("--config-store-path")
        .arg(dir.join("namesrv.properties"));
    command
}

fn spawn(dir: &Path, extra: &[&str]) -> Daemon {
    let (child, addr) = spawn_listening(
        command(dir, "warn").args(extra).stderr(Stdio::null()),
        "rmq-namesrv listening on ",
    );
    Daemon { child, addr }
}

fn put(key: &str, value: String) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "crash")
        .with_ext("key", key)
        .with_ext("value", value)
}

/// One daemon run killed with SIGKILL in the middle of a KV save; returns whether the kill landed
/// inside the save (its temp file is left behind) after checking the main file is whole.
async fn kill_during_save(attempt: u32) -> bool {
    let dir = temp_dir(&format!("kill{attempt}"));
    // A large table makes every save (a full snapshot) take a while.
    let mut bulk = KvTables::default();
    for i in 0..100 {
        bulk.put("bulk", &format!("b{i:03}"), Some("x".repeat(100 * 1024)));
    }
    std::fs::write(dir.join("kvConfig.json"), bulk.to_json()).unwrap();
    let mut daemon = spawn(&dir, &[]);
    let mut client = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    // The killer watches for the temp file of a save in progress and SIGKILLs the daemon the
    // moment it appears (bounded: at most 20 s).
    let pid = daemon.child.id().to_string();
    let temp = dir.join("kvConfig.json.tmp");
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !temp.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        Command::new("kill").args(["-KILL", &pid]).status()
    });
    let mut acknowledged = 0;
    for i in 0..200 {
        match client
            .request(put(&format!("k{i:03}"), "v".repeat(1024)))
            .await
        {
            Ok(resp) if resp.code == 0 => acknowledged = i + 1,
            Ok(resp) => panic!("put failed: {:?}", resp.remark),
            Err(_) => break,
        }
    }
    assert!(killer.join().unwrap().unwrap().success());
    let _ = daemon.child.wait();
    let landed_inside = dir.join("kvConfig.json.tmp").exists();

    // The main file is whole: it parses, holds the table it started with and every acknowledged
    // key (each save is a full snapshot: at most the changes of the interrupted save are missing).
    let tables =
        KvTables::load(&dir.join("kvConfig.json")).expect("main KV file intact after SIGKILL");
    assert_eq!(tables.namespace("bulk").map(|ns| ns.len()), Some(100));
    for i in 0..acknowledged {
        assert!(
            tables.get("crash", &format!("k{i:03}")).is_some(),
            "acknowledged key k{i:03} lost"
        );
    }

    // A restart on the same files (temp file included) works and serves the data.
    let daemon = spawn(&dir, &[]);
    let mut client = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    let get = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "bulk")
        .with_ext("key", "b099");
    let resp = client.request(get).await.unwrap();
    assert_eq!(resp.ext("value").map(str::len), Some(100 * 1024));
    assert_eq!(
        client
            .request(put("after", "restart".into()))
            .await
            .unwrap()
            .code,
        0
    );
    drop(daemon);
    let _ = std::fs::remove_dir_all(&dir);
    landed_inside
}

#[actix::test]
async fn sigkill_during_kv_writes_leaves_a_whole_file() {
    // The kill races the save's last steps; a few attempts make sure one lands inside a save.
    let mut landed = false;
    for attempt in 0..5 {
        if kill_during_save(attempt).await {
            landed = true;
            break;
        }
    }
    assert!(landed, "no SIGKILL landed inside a save in 5 attempts");
}

#[test]
fn corrupt_kv_file_and_bad_config_stop_the_daemon_with_a_clear_error() {
    let dir = temp_dir("corrupt");
    let kv = dir.join("kvConfig.json");
    std::fs::write(&kv, b"{\"configTable\":").unwrap();
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--kv-config-path"])
        .arg(&kv)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&kv.display().to_string()) && stderr.contains("corrupt"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "never listened");

    let config = dir.join("bad.toml");
    std::fs::write(&config, "[registry]\nscan_interval = \"often\"\n").unwrap();
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("registry.scan_interval"), "{stderr}");

    let out = Command::new(BIN)
        .env("NAMESRV__SERVER__MAX_IN_FLIGHT", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("server.max_in_flight"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix::test]
async fn sigterm_stops_gracefully_and_flushes() {
    let dir = temp_dir("term");
    let mut daemon = spawn(&dir, &[]);
    let mut client = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    assert_eq!(client.request(put("k", "v".into())).await.unwrap().code, 0);
    let pid = daemon.child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = daemon.child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            Instant::now() < deadline,
            "daemon did not stop within 10 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    assert!(client
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO
        ))
        .await
        .is_err());
    let tables = KvTables::load(&dir.join("kvConfig.json")).unwrap();
    assert_eq!(tables.get("crash", "k"), Some("v"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits up to `limit` for the daemon to exit.
fn exit_within(daemon: &mut Daemon, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(exit) = daemon.child.try_wait().unwrap() {
            return Some(exit);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[actix::test]
async fn a_contained_panic_keeps_the_daemon_serving_and_a_lost_actor_ends_it_non_zero() {
    use rmq_namesrv::actors::dispatch::FAULT_INJECTION;
    let dir = temp_dir("panic");
    let mut daemon = spawn(&dir, &[]);
    let mut client = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    let inject = |actor: &str| RemotingCommand::request(FAULT_INJECTION).with_ext("actor", actor);

    // A registry panic is contained: the daemon goes on answering.
    assert_eq!(client.request(inject("registry")).await.unwrap().code, 0);
    assert_eq!(exit_within(&mut daemon, Duration::from_millis(2500)), None);
    assert_eq!(client.request(put("k", "v".into())).await.unwrap().code, 0);

    // A lost listener cannot be contained: the daemon exits at once, non-zero (70).
    assert_eq!(client.request(inject("listener")).await.unwrap().code, 0);
    let exit = exit_within(&mut daemon, Duration::from_secs(5))
        .expect("the daemon exits within 5 s of losing an actor");
    assert_eq!(exit.code(), Some(70), "{exit:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn java_properties_file_runs_the_daemon() {
    let dir = temp_dir("props");
    let props = dir.join("namesrv.properties");
    std::fs::write(
        &props,
        "listenPort=0\nbindAddress=127.0.0.1\nenableAllTopicList=false\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("-c")
        .arg(&props)
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("listen = \"127.0.0.1:0\""), "{text}");
    assert!(text.contains("enable_all_topic_list = false"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The certificate a new TLS connection to `addr` is served (any certificate is accepted).
async fn served_certificate(addr: &str) -> Vec<u8> {
    let tls =
        rmq_namesrv::transport::client::client_config(&rmq_namesrv::config::ClientTlsSettings {
            enable: true,
            ..Default::default()
        })
        .unwrap();
    let mut client = Client::connect_with(addr, TIMEOUT, Some(&tls))
        .await
        .expect("TLS connection");
    let resp = client
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO,
        ))
        .await
        .expect("answered over TLS");
    assert_eq!(resp.code, 0);
    client.peer_certificates().expect("a certificate")[0].clone()
}

#[actix::test]
async fn sighup_reloads_tls_and_passwords_are_never_printed() {
    let dir = temp_dir("tls");
    // Test mode (Java's default) without certificate files: only a reload makes a new one, so
    // the only thing that can change the served certificate here is SIGHUP.
    let config = dir.join("tls.toml");
    std::fs::write(
        &config,
        "[tls]\nmode = \"enforcing\"\nconfig_file = \"tls-missing.properties\"\n\
         [tls.client]\nkey_password = \"hunter2\"\n",
    )
    .unwrap();
    let config_arg = config.to_string_lossy().into_owned();
    let daemon = spawn(&dir, &["--config", &config_arg]);
    let before = served_certificate(&daemon.addr).await;
    assert_eq!(served_certificate(&daemon.addr).await, before, "stable");
    let status = Command::new("kill")
        .args(["-HUP", &daemon.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut after = before.clone();
    while after == before && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = served_certificate(&daemon.addr).await;
    }
    assert_ne!(
        after, before,
        "SIGHUP gave new connections a new certificate"
    );
    // Plaintext is refused in enforcing mode; the daemon lives on.
    let mut plain = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    assert!(plain
        .request(RemotingCommand::request(
            RequestCode::GET_BROKER_CLUSTER_INFO
        ))
        .await
        .is_err());
    assert_eq!(served_certificate(&daemon.addr).await, after);
    drop(daemon);

    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .arg("--print-config")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("mode = \"enforcing\""), "{text}");
    assert!(!text.contains("hunter2"), "{text}");

    // A certificate that cannot be read stops start-up, naming the file.
    std::fs::write(
        &config,
        "[tls]\ncert_path = \"no-such-cert.pem\"\nkey_path = \"no-such-key.pem\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--kv-config-path")
        .arg(dir.join("kv.json"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-cert.pem"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Java's controller quick-start configuration (namesrv.properties with
/// enableControllerInNamesrv and the controllerDLeger* keys) runs the embedded controller on
/// its own address; two peers without etcd are refused at start naming the key.
#[actix::test]
async fn java_controller_properties_run_the_embedded_controller() {
    let dir = temp_dir("controller");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let props = dir.join("controller.properties");
    std::fs::write(
        &props,
        format!(
            "enableControllerInNamesrv=true\ncontrollerDLegerGroup=group1\n\
             controllerDLegerPeers=n0-127.0.0.1:{port}\ncontrollerDLegerSelfId=n0\n\
             controllerStorePath={}\n",
            dir.join("ctl").display()
        ),
    )
    .unwrap();
    let _daemon = spawn(&dir, &["-c", props.to_str().unwrap()]);
    let mut ctl = Client::connect(&format!("127.0.0.1:{port}"), Duration::from_secs(5))
        .await
        .unwrap();
    let r = ctl
        .request(RemotingCommand::request(
            RequestCode::CONTROLLER_GET_METADATA_INFO,
        ))
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.ext("group"), Some("group1"));
    assert_eq!(r.ext("controllerLeaderId"), Some("n0"));

    std::fs::write(
        &props,
        "enableControllerInNamesrv=true\ncontrollerDLegerPeers=n0-127.0.0.1:1;n1-127.0.0.1:2\n\
         controllerDLegerSelfId=n0\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "-c", props.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("controller.peers") && err.contains("etcd"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The malloc settings an operator may give glibc (src/allocator.rs keeps them when present).
const MALLOC_SETTINGS: [&str; 5] = [
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_MAX_",
    "GLIBC_TUNABLES",
];

/// The first stderr line of a daemon started with `env` that contains `wanted`, read until the
/// daemon says it started (or TIMEOUT).
fn start_up_line(dir: &Path, env: &[(&str, &str)], wanted: &str) -> Option<String> {
    let mut command = command(dir, "info");
    command
        .env("NAMESRV__TLS__CONFIG_FILE", "")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for name in MALLOC_SETTINGS {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let mut child = Daemon {
        child: command.spawn().expect("spawn rmq-namesrv"),
        addr: String::new(),
    };
    let stderr = child.child.stderr.take().expect("piped stderr");
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + TIMEOUT;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let line = received.recv_timeout(left).ok()?;
        if line.contains(wanted) {
            return Some(line);
        }
        if line.contains("name server started") {
            return None;
        }
    }
    None
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_start_up_log_says_how_the_allocator_is_set() {
    let dir = temp_dir("allocator");
    let fixed = start_up_line(&dir, &[], "glibc malloc thresholds");
    assert!(
        fixed.as_deref().is_some_and(|l| l.contains("fixed")),
        "{fixed:?}"
    );
    for env in [
        ("MALLOC_TRIM_THRESHOLD_", "1048576"),
        ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4194304"),
    ] {
        let kept = start_up_line(&dir, &[env], "glibc malloc thresholds");
        assert!(
            kept.as_deref()
                .is_some_and(|l| l.contains("as the environment sets them")),
            "{env:?}: {kept:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
