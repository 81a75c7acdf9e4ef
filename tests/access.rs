//! Access control over TCP against the real server (docs/access.md): every class under every
//! policy, signatures good and bad, replays, white addresses, the failed-attempt limit, the ACL
//! file reloaded while running, the audit log, and the black list that binds signed callers too.

mod support;

use std::path::Path;
use std::time::Duration;

use rmq_namesrv::config::{Config, PolicyKind, Profile};
use rmq_namesrv::protocol::signature::sign_command;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use support::pki::replace_file;
use support::*;

const NO_PERMISSION: i32 = ResponseCode::NO_PERMISSION.0;

const ACL: &str = r#"
globalWhiteRemoteAddresses:
accounts:
  - accessKey: adminKey
    secretKey: adminSecret
    admin: true
  - accessKey: userKey
    secretKey: 12345678
    admin: false
users:
  - username: ops
    password: opsPassword
    userType: Super
  - username: retired
    password: retiredPassword
    userType: Super
    userStatus: disable
"#;

fn acl_config(dir: &Path, acl: &str) -> Config {
    let path = dir.join("plain_acl.yml");
    std::fs::write(&path, acl).unwrap();
    let mut config = test_config();
    config.access.acl_file = path;
    config.access.audit_log = dir.join("audit.log");
    config.access.reload_check_interval = Duration::from_millis(200);
    config
}

fn signed(mut cmd: RemotingCommand, ak: &str, sk: &str) -> RemotingCommand {
    sign_command(&mut cmd, ak, sk, None).unwrap();
    cmd
}

fn put_kv(key: &str, value: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "ns")
        .with_ext("key", key)
        .with_ext("value", value)
}

fn get_kv(key: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_KV_CONFIG)
        .with_ext("namespace", "ns")
        .with_ext("key", key)
}

fn wipe(broker: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER).with_ext("brokerName", broker)
}

fn get_config() -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG)
}

async fn ask(conn: &mut Client, cmd: RemotingCommand) -> RemotingCommand {
    conn.request(cmd).await.expect("an answer")
}

fn remark(resp: &RemotingCommand) -> &str {
    resp.remark.as_deref().unwrap_or("")
}

fn assert_refused(resp: &RemotingCommand, why: &str) {
    assert_eq!(resp.code, NO_PERMISSION, "{:?}", resp.remark);
    assert!(
        remark(resp).contains(why),
        "{:?} lacks {why:?}",
        resp.remark
    );
}

#[actix::test]
async fn the_open_profile_changes_nothing_and_audits_admin_writes() {
    let dir = test_dir("access-open");
    let mut config = test_config();
    config.access.audit_log = dir.join("audit.log");
    let server = start_server(config);
    let mut conn = connect(&server).await;
    assert_eq!(ask(&mut conn, put_kv("k", "v")).await.code, 0);
    assert_eq!(ask(&mut conn, get_kv("k")).await.code, 0);
    assert_eq!(ask(&mut conn, get_config()).await.code, 0);
    // A key claimed on an open class is recorded as claimed, not verified.
    let claimed = put_kv("k2", "v2").with_ext("AccessKey", "whoever");
    assert_eq!(ask(&mut conn, claimed).await.code, 0);
    let broker = FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]);
    assert_eq!(ask(&mut conn, broker.register()).await.code, 0);
    // An unchanged refresh is not audited.
    assert_eq!(ask(&mut conn, broker.register()).await.code, 0);
    // Two KV writes and the new broker; the unchanged refresh is not audited.
    let lines = audit_lines(&dir.join("audit.log"), 3).await;
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(server.audit_count().await, 3);
    assert_eq!(lines[0]["request"], "PUT_KV_CONFIG");
    assert_eq!(lines[0]["target"]["key"], "k");
    assert_eq!(lines[0]["result"], "SUCCESS");
    assert!(lines[0]["source"]
        .as_str()
        .unwrap()
        .starts_with("127.0.0.1:"));
    assert!(lines[0]["access_key"].is_null());
    assert_eq!(lines[1]["claimed_access_key"], "whoever");
    assert_eq!(lines[2]["request"], "REGISTER_BROKER");
    assert_eq!(lines[2]["target"]["broker"], "broker-a");
    server.stop().await;
}

/// The audit file's lines as JSON, once the writer thread has written at least `at_least`.
async fn audit_lines(path: &Path, at_least: usize) -> Vec<serde_json::Value> {
    let read = || -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    };
    eventually(TIMEOUT, || {
        let n = read().len();
        async move { n >= at_least }
    })
    .await;
    read()
}

#[actix::test]
async fn the_secure_profile_signs_admin_requests_only() {
    let dir = test_dir("access-secure");
    let mut config = acl_config(&dir, ACL);
    config.access.profile = Profile::Secure;
    let server = start_server(config);
    let mut conn = connect(&server).await;

    // Reads and broker traffic stay open.
    let broker = FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]);
    assert_eq!(ask(&mut conn, broker.register()).await.code, 0);
    assert_eq!(ask(&mut conn, route_request("TopicA")).await.code, 0);
    assert_ne!(ask(&mut conn, get_kv("k")).await.code, NO_PERMISSION);

    // Admin writes: unsigned, unknown key, wrong secret, non-admin, disabled: refused.
    assert_refused(&ask(&mut conn, wipe("broker-a")).await, "no signature");
    let unknown = signed(wipe("broker-a"), "nobody", "x");
    assert_refused(&ask(&mut conn, unknown).await, "unknown access key");
    let wrong = signed(wipe("broker-a"), "adminKey", "guess");
    assert_refused(&ask(&mut conn, wrong).await, "bad signature");
    let user = signed(wipe("broker-a"), "userKey", "12345678");
    assert_refused(&ask(&mut conn, user).await, "admin account");
    let retired = signed(wipe("broker-a"), "retired", "retiredPassword");
    assert_refused(&ask(&mut conn, retired).await, "disabled");
    // A 4.x admin account and an ACL 2.0 super user succeed.
    let good = signed(wipe("broker-a"), "adminKey", "adminSecret");
    assert_eq!(ask(&mut conn, good).await.code, 0);
    let ops = signed(put_kv("k", "v"), "ops", "opsPassword");
    assert_eq!(ask(&mut conn, ops).await.code, 0);

    // A signature replayed over a changed request fails; the same bytes again pass (no nonce).
    let original = signed(put_kv("k", "v1"), "adminKey", "adminSecret");
    assert_eq!(ask(&mut conn, original.clone()).await.code, 0);
    let mut tampered = original.clone();
    if let Some(fields) = tampered.ext_fields.as_mut() {
        fields.insert("value", "evil");
    }
    assert_refused(&ask(&mut conn, tampered).await, "bad signature");
    let with_body = original.clone().with_body(&b"appended"[..]);
    assert_refused(&ask(&mut conn, with_body).await, "bad signature");

    // Admin reads (the configuration) too, and the remark never says how a signature differed.
    let resp = ask(&mut conn, get_config()).await;
    assert_refused(&resp, "no signature");
    let resp = ask(&mut conn, signed(get_config(), "adminKey", "adminSecret")).await;
    assert_eq!(resp.code, 0);
    assert!(!body_text(&resp).contains("adminSecret"));

    // The black list binds signed callers: no request switches access control off.
    let update = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG)
        .with_body(&b"access.profile=open"[..]);
    let resp = ask(&mut conn, signed(update, "adminKey", "adminSecret")).await;
    assert_ne!(resp.code, 0, "access.* must not be updatable");

    // The audit log names the source, the verified key, the target and the result.
    let lines = audit_lines(&dir.join("audit.log"), 12).await;
    let wipes: Vec<_> = lines
        .iter()
        .filter(|l| l["request"] == "WIPE_WRITE_PERM_OF_BROKER")
        .collect();
    assert_eq!(wipes.len(), 6, "{wipes:?}");
    assert_eq!(wipes[0]["result"], "NO_PERMISSION");
    let ok = wipes.iter().find(|l| l["result"] == "SUCCESS").unwrap();
    assert_eq!(ok["access_key"], "adminKey");
    assert_eq!(ok["target"]["broker"], "broker-a");
    let text = std::fs::read_to_string(dir.join("audit.log")).unwrap();
    for secret in ["adminSecret", "opsPassword", "12345678", "evil"] {
        assert!(!text.contains(secret), "audit log shows {secret}");
    }
    server.stop().await;
}

/// A code no row of the port answers is refused before access control, whatever the policies:
/// it is not audited, does not count as a failed attempt, and reaches no actor.
#[actix::test]
async fn a_code_without_a_row_is_refused_before_anything_else() {
    let dir = test_dir("access-unrowed");
    let mut config = acl_config(&dir, ACL);
    for class in [
        &mut config.access.broker,
        &mut config.access.read,
        &mut config.access.admin_read,
        &mut config.access.admin_write,
    ] {
        class.policy = Some(PolicyKind::Signed);
    }
    config.access.max_failures = 3;
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let not_supported = ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0;
    // Unknown, a controller code on the NameServer port, a broker's code: never answered here,
    // signed (wrongly) or not.
    for code in [424_242, RequestCode::CONTROLLER_ELECT_MASTER.0, 10] {
        for _ in 0..5 {
            let request = RemotingCommand::request(RequestCode(code)).with_ext("topic", "T");
            assert_eq!(ask(&mut conn, request.clone()).await.code, not_supported);
            let guessed = signed(request, "adminKey", "guess");
            assert_eq!(ask(&mut conn, guessed).await.code, not_supported);
        }
    }
    // Fifteen wrong signatures on unanswered codes did not use up the three failed attempts.
    let good = signed(put_kv("k", "v"), "adminKey", "adminSecret");
    assert_eq!(ask(&mut conn, good).await.code, 0);
    let lines = audit_lines(&dir.join("audit.log"), 1).await;
    assert!(
        lines.iter().all(|l| l["request"] == "PUT_KV_CONFIG"),
        "{lines:?}"
    );
    server.stop().await;
}

#[actix::test]
async fn every_class_under_every_policy() {
    let dir = test_dir("access-classes");
    // (class setter, a request of the class, what a success looks like)
    let requests: Vec<(&str, RemotingCommand)> = vec![
        (
            "broker",
            FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]).register(),
        ),
        ("read", route_request("TopicA")),
        ("admin_read", get_config()),
        ("admin_write", put_kv("k", "v")),
    ];
    let inside = vec!["127.0.0.0/8".parse().unwrap()];
    let outside = vec!["10.0.0.0/8".parse().unwrap()];
    for (class, request) in &requests {
        for policy in [
            PolicyKind::Open,
            PolicyKind::Networks,
            PolicyKind::Signed,
            PolicyKind::NetworksAndSigned,
        ] {
            for networks in [&inside, &outside] {
                if matches!(policy, PolicyKind::Open | PolicyKind::Signed) && networks == &outside {
                    continue;
                }
                let mut config = acl_config(&dir, ACL);
                let setting = match *class {
                    "broker" => &mut config.access.broker,
                    "read" => &mut config.access.read,
                    "admin_read" => &mut config.access.admin_read,
                    _ => &mut config.access.admin_write,
                };
                setting.policy = Some(policy);
                setting.networks = networks.clone();
                let server = start_server(config);
                let mut conn = connect(&server).await;
                let case = format!("{class} {policy:?} {networks:?}");
                let network_ok =
                    !matches!(policy, PolicyKind::Networks | PolicyKind::NetworksAndSigned)
                        || networks == &inside;
                let needs_signature =
                    matches!(policy, PolicyKind::Signed | PolicyKind::NetworksAndSigned);
                let unsigned = ask(&mut conn, request.clone()).await;
                if !network_ok {
                    assert_refused(&unsigned, "address not allowed");
                } else if needs_signature {
                    assert_refused(&unsigned, "no signature");
                } else {
                    assert_ne!(unsigned.code, NO_PERMISSION, "{case}");
                }
                let good = ask(
                    &mut conn,
                    signed(request.clone(), "adminKey", "adminSecret"),
                )
                .await;
                if network_ok {
                    assert_ne!(good.code, NO_PERMISSION, "{case}: {:?}", good.remark);
                } else {
                    assert_refused(&good, "address not allowed");
                }
                if needs_signature && network_ok {
                    let bad = ask(&mut conn, signed(request.clone(), "adminKey", "nope")).await;
                    assert_refused(&bad, "bad signature");
                    // Normal accounts may send broker traffic and reads, not admin requests.
                    let user = ask(&mut conn, signed(request.clone(), "userKey", "12345678")).await;
                    if class.starts_with("admin") {
                        assert_refused(&user, "admin account");
                    } else {
                        assert_ne!(user.code, NO_PERMISSION, "{case}");
                    }
                }
                // Other classes are untouched: a KV read is always open here.
                if *class != "read" {
                    assert_ne!(
                        ask(&mut conn, get_kv("k")).await.code,
                        NO_PERMISSION,
                        "{case}"
                    );
                }
                server.stop().await;
            }
        }
    }
}

#[actix::test]
async fn white_addresses_are_bypasses_and_networks_are_not() {
    let dir = test_dir("access-white");
    let acl = "globalWhiteRemoteAddresses:\n  - 127.0.0.*\naccounts:\n  - accessKey: adminKey\n    secretKey: adminSecret\n    admin: true\n";
    let mut config = acl_config(&dir, acl);
    config.access.admin_write.policy = Some(PolicyKind::Signed);
    let server = start_server(config);
    let mut conn = connect(&server).await;
    // 127.0.0.1 is globally white: no signature needed.
    assert_eq!(ask(&mut conn, put_kv("k", "v")).await.code, 0);
    server.stop().await;

    // An account's own white address skips its signature, not the admin check.
    let acl = "accounts:\n  - accessKey: adminKey\n    secretKey: adminSecret\n    admin: true\n    whiteRemoteAddress: 127.0.0.1\n  - accessKey: userKey\n    secretKey: userSecret\n    whiteRemoteAddress: 127.0.0.{1,2}\n";
    let mut config = acl_config(&dir, acl);
    config.access.admin_write.policy = Some(PolicyKind::NetworksAndSigned);
    config.access.admin_write.networks = vec!["127.0.0.1/32".parse().unwrap()];
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let keyed = put_kv("k", "v").with_ext("AccessKey", "adminKey");
    assert_eq!(ask(&mut conn, keyed).await.code, 0);
    let user = put_kv("k", "v").with_ext("AccessKey", "userKey");
    assert_refused(&ask(&mut conn, user).await, "admin account");
    assert_refused(&ask(&mut conn, put_kv("k", "v")).await, "no signature");
    server.stop().await;
}

#[actix::test]
async fn failed_attempts_are_limited_per_source() {
    let dir = test_dir("access-failures");
    let mut config = acl_config(&dir, ACL);
    config.access.profile = Profile::Secure;
    config.access.max_failures = 3;
    config.access.failure_window = Duration::from_secs(600);
    let server = start_server(config);
    let mut conn = connect(&server).await;
    for _ in 0..3 {
        let guess = signed(wipe("b"), "adminKey", "guess");
        assert_refused(&ask(&mut conn, guess).await, "bad signature");
    }
    // Now even the right secret is refused unchecked, on this and any new connection.
    let good = signed(wipe("b"), "adminKey", "adminSecret");
    assert_refused(
        &ask(&mut conn, good.clone()).await,
        "too many failed attempts",
    );
    let mut other = connect(&server).await;
    assert_refused(&ask(&mut other, good).await, "too many failed attempts");
    // Open classes are not affected.
    assert_eq!(ask(&mut other, route_request("T")).await.code, 17);
    let counts = server.limit_counts().await;
    let access = counts.iter().find(|(name, _)| *name == "access").unwrap().1;
    assert_eq!(access, 5);
    server.stop().await;
}

#[actix::test]
async fn the_acl_file_reloads_while_running_and_a_bad_one_keeps_the_old() {
    let dir = test_dir("access-reload");
    let mut config = acl_config(&dir, ACL);
    config.access.profile = Profile::Secure;
    // The polling below sends the old key until the reload: not a guesser.
    config.access.max_failures = 10_000;
    let acl_path = config.access.acl_file.clone();
    let server = start_server(config);
    let mut conn = connect(&server).await;
    let old = signed(put_kv("k", "v"), "adminKey", "adminSecret");
    assert_eq!(ask(&mut conn, old.clone()).await.code, 0);

    // Rotate: the old key goes, a new one comes.
    replace_file(
        &acl_path,
        "accounts:\n  - accessKey: newKey\n    secretKey: newSecret\n    admin: true\n",
    );
    let new = signed(put_kv("k", "v"), "newKey", "newSecret");
    let rotated = eventually(TIMEOUT, || {
        let (old, new) = (old.clone(), new.clone());
        let addr = server.local_addr().to_string();
        async move {
            let mut c = Client::connect(&addr, TIMEOUT).await.unwrap();
            c.request(new).await.unwrap().code == 0
                && c.request(old).await.unwrap().code == NO_PERMISSION
        }
    })
    .await;
    assert!(rotated, "the new ACL file was not applied");
    // The live connection got it too.
    let resp = ask(
        &mut conn,
        signed(put_kv("k", "v"), "adminKey", "adminSecret"),
    )
    .await;
    assert_refused(&resp, "unknown access key");

    // A broken file keeps the accounts in force.
    replace_file(&acl_path, "accounts:\n  - accessKey: [broken\n");
    let outcome = server.reload_accounts().await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert_eq!(ask(&mut conn, new.clone()).await.code, 0);
    server.stop().await;
}

#[test]
fn bad_access_settings_name_their_key() {
    let dir = test_dir("access-config");
    let write = |text: &str| {
        let path = dir.join("c.toml");
        std::fs::write(&path, text).unwrap();
        path
    };
    let err = Config::load(
        Some(&write("[access.broker]\npolicy = \"networks\"\n")),
        Vec::new(),
        &Default::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("access.broker.networks"), "{err}");
    let err = Config::load(
        Some(&write("[access]\nprofile = \"secure\"\n")),
        Vec::new(),
        &Default::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("access.acl_file"), "{err}");
    let err = Config::load(
        Some(&write("[access.read]\npolicy = \"sometimes\"\n")),
        Vec::new(),
        &Default::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("policy"), "{err}");
    // An ACL file that does not parse stops start-up, naming it.
    let acl = dir.join("bad.yml");
    std::fs::write(&acl, "accounts:\n  - accessKey: a\n").unwrap();
    let mut config = test_config();
    config.access.acl_file = acl;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let system = actix::System::new();
    let started = system.block_on(async move {
        rmq_namesrv::NameServer::new(config)
            .start(listener)
            .map(|_| ())
    });
    let err = started.unwrap_err().to_string();
    assert!(
        err.contains("bad.yml") && err.contains("secretKey"),
        "{err}"
    );
}

const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");

/// Runs `rmq-namesrv admin -n <addr> <args>` with `env`, off the actix thread.
async fn admin(addr: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(["admin", "-n", addr, "--timeout", "2s"])
        .args(args)
        .env_remove("NAMESRV_ADDR")
        .env_remove("RMQ_ACCESS_KEY")
        .env_remove("RMQ_SECRET_KEY")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let waiting = tokio::task::spawn_blocking(move || cmd.output());
    tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the admin command finishes")
        .expect("join")
        .expect("spawn rmq-namesrv")
}

#[actix::test]
async fn the_admin_cli_signs_with_flags_env_or_a_tools_yml() {
    let dir = test_dir("access-cli");
    let mut config = acl_config(&dir, ACL);
    config.access.profile = Profile::Secure;
    let server = start_server(config);
    let ns = server.local_addr().to_string();
    let put = ["updateKvConfig", "-s", "ns", "-k", "k1", "-v", "v1"];

    let unsigned = admin(&ns, &put, &[]).await;
    assert_ne!(unsigned.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&unsigned.stderr);
    assert!(stderr.contains("no signature"), "{stderr}");

    let mut flags = vec!["--access-key", "adminKey", "--secret-key", "adminSecret"];
    flags.extend(put);
    let signed = admin(&ns, &flags, &[]).await;
    assert_eq!(signed.status.code(), Some(0), "{signed:?}");

    let env = [("RMQ_ACCESS_KEY", "ops"), ("RMQ_SECRET_KEY", "opsPassword")];
    let by_env = admin(&ns, &["getNamesrvConfig"], &env).await;
    assert_eq!(by_env.status.code(), Some(0), "{by_env:?}");

    let tools_yml = dir.join("tools.yml");
    std::fs::write(&tools_yml, "accessKey: adminKey\nsecretKey: wrong\n").unwrap();
    let file = tools_yml.to_string_lossy().into_owned();
    let mut args = vec!["--credentials-file", file.as_str()];
    args.extend(put);
    let wrong = admin(&ns, &args, &[]).await;
    assert_ne!(wrong.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("bad signature"));
    std::fs::write(&tools_yml, "accessKey: adminKey\nsecretKey: adminSecret\n").unwrap();
    let right = admin(&ns, &args, &[]).await;
    assert_eq!(right.status.code(), Some(0), "{right:?}");
    server.stop().await;
}

/// `GET path` with optional Basic credentials; the status code and the whole answer.
async fn http_get(addr: std::net::SocketAddr, path: &str, basic: Option<&str>) -> (u16, String) {
    let auth = basic
        .map(|b| format!("Authorization: Basic {b}\r\n"))
        .unwrap_or_default();
    let answer = support::http::get(addr, path, &auth).await;
    (
        answer.status,
        format!("{}\r\n\r\n{}", answer.head, answer.body),
    )
}

#[actix::test]
async fn the_http_port_s_status_and_probe_classes() {
    let dir = test_dir("access-http");
    let mut config = acl_config(&dir, ACL);
    config.access.profile = Profile::Secure;
    config.http.listen = Some("127.0.0.1:0".parse().unwrap());
    let server = start_server(config);
    let http = server.http_addr().expect("an HTTP port");
    // Probes stay open in the secure profile.
    assert_eq!(http_get(http, "/health", None).await.0, 200);
    assert_eq!(http_get(http, "/metrics", None).await.0, 200);
    // The status page and its JSON need an admin's Basic credentials.
    let (status, head) = http_get(http, "/", None).await;
    assert_eq!(status, 401);
    assert!(
        head.to_ascii_lowercase()
            .contains("www-authenticate: basic"),
        "{head}"
    );
    assert_eq!(http_get(http, "/api/status", None).await.0, 401);
    let admin = "YWRtaW5LZXk6YWRtaW5TZWNyZXQ="; // adminKey:adminSecret
    let user = "dXNlcktleToxMjM0NTY3OA=="; // userKey:12345678
    let wrong = "YWRtaW5LZXk6bm9wZQ=="; // adminKey:nope
    assert_eq!(http_get(http, "/api/status", Some(admin)).await.0, 200);
    assert_eq!(http_get(http, "/", Some(admin)).await.0, 200);
    assert_eq!(http_get(http, "/", Some(user)).await.0, 403);
    let (status, text) = http_get(http, "/", Some(wrong)).await;
    assert_eq!(status, 401);
    assert!(!text.contains("adminSecret"));
    // Refusals are counted on /metrics.
    let (_, metrics) = http_get(http, "/metrics", None).await;
    assert!(
        metrics.contains(
            "rmq_namesrv_access_refusals_total{class=\"admin_write\",reason=\"bad_signature\"} 0"
        ),
        "the refusal family lists every class and reason"
    );
    assert!(metrics.contains("rmq_namesrv_limit_refusals_total{limit=\"access\"}"));
    server.stop().await;

    // Probes by network: this client (127.0.0.1) is outside.
    let mut config = test_config();
    config.http.listen = Some("127.0.0.1:0".parse().unwrap());
    config.access.probe.policy = Some(PolicyKind::Networks);
    config.access.probe.networks = vec!["10.0.0.0/8".parse().unwrap()];
    let server = start_server(config);
    let http = server.http_addr().expect("an HTTP port");
    assert_eq!(http_get(http, "/metrics", None).await.0, 403);
    assert_eq!(http_get(http, "/rocketmq/nsaddr", None).await.0, 403);
    assert_eq!(http_get(http, "/", None).await.0, 200);
    server.stop().await;
}

#[actix::test]
async fn behind_a_proxy_the_client_s_address_is_judged_and_audited() {
    use rmq_namesrv::config::{ProxyMode, ProxyProtocolSettings};
    use rmq_namesrv::protocol::codec::{encode_frame, RemotingCodec};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::codec::Decoder;

    let dir = test_dir("access-proxy");
    let mut config = test_config();
    config.access.audit_log = dir.join("audit.log");
    config.proxy_protocol = ProxyProtocolSettings {
        mode: ProxyMode::Optional,
        trusted_networks: vec!["127.0.0.0/8".parse().unwrap()],
    };
    // Admin writes only from 203.0.113.0/24: the balancer's own address (127.0.0.1) is not it.
    config.access.admin_write.policy = Some(PolicyKind::Networks);
    config.access.admin_write.networks = vec!["203.0.113.0/24".parse().unwrap()];
    let server = start_server(config);

    // One request after a PROXY v1 header naming `client`; its answer.
    let send = |client: &'static str, key: &'static str| {
        let addr = server.local_addr();
        async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let mut bytes = format!("PROXY TCP4 {client} 127.0.0.1 40000 9876\r\n").into_bytes();
            let mut frame = bytes::BytesMut::new();
            encode_frame(&put_kv(key, "v").with_opaque(5), &mut frame).unwrap();
            bytes.extend_from_slice(&frame);
            stream.write_all(&bytes).await.unwrap();
            let mut buf = bytes::BytesMut::new();
            let mut codec = RemotingCodec::default();
            let read = async {
                loop {
                    if let Ok(Some(cmd)) = codec.decode(&mut buf) {
                        return cmd;
                    }
                    let mut chunk = [0u8; 4096];
                    let n = stream.read(&mut chunk).await.unwrap();
                    assert!(n > 0, "closed without an answer");
                    buf.extend_from_slice(&chunk[..n]);
                }
            };
            tokio::time::timeout(TIMEOUT, read)
                .await
                .expect("an answer")
        }
    };
    assert_eq!(send("203.0.113.9", "from-inside").await.code, 0);
    assert_refused(&send("198.51.100.7", "from-outside").await, "198.51.100.7");
    // Without a header the balancer's address is the client's: outside too.
    let mut direct = connect(&server).await;
    assert_refused(
        &ask(&mut direct, put_kv("direct", "v")).await,
        "address not allowed",
    );

    let lines = audit_lines(&dir.join("audit.log"), 3).await;
    let sources: Vec<&str> = lines
        .iter()
        .map(|l| l["source"].as_str().unwrap())
        .collect();
    assert!(sources[0].starts_with("203.0.113.9:"), "{sources:?}");
    assert!(sources[1].starts_with("198.51.100.7:"), "{sources:?}");
    assert_eq!(lines[1]["result"], "NO_PERMISSION");
    server.stop().await;
}
