//! Logging as an operator sees it, over the daemon binary: rotating files in `log.dir` (by size,
//! `log.max_files` kept, flushed at exit), JSON lines, no colour codes off a terminal, one
//! warning per Java key without effect, and systemd's READY=1 / STOPPING=1.

mod support;

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use support::{test_dir, TIMEOUT};

const BIN: &str = env!("CARGO_BIN_EXE_rmq-namesrv");
/// Longest wait for the start-up line, for an exit after SIGTERM, for a notification.
const LIMIT: Duration = Duration::from_secs(20);

/// A daemon started by this test, its stderr collected by a thread; killed by PID when dropped.
struct Daemon {
    child: Child,
    addr: String,
    stderr: Option<JoinHandle<Vec<u8>>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    /// SIGTERM, then the exit status and everything written to stderr.
    fn stop(&mut self) -> (ExitStatus, Vec<u8>) {
        let pid = self.child.id().to_string();
        // The start-up line comes just before the daemon installs its SIGTERM handler: wait
        // until it catches SIGTERM (Linux: bit 15 of SigCgt), or the default action kills it.
        let deadline = Instant::now() + LIMIT;
        while !catches_sigterm(&pid) {
            assert!(
                Instant::now() < deadline,
                "no SIGTERM handler within {LIMIT:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(status.success());
        let deadline = Instant::now() + LIMIT;
        let exit = loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                break exit;
            }
            assert!(
                Instant::now() < deadline,
                "no exit within {LIMIT:?} of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        // The pipe is closed now that the process is gone: the reader ends.
        let stderr = self
            .stderr
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        (exit, stderr)
    }
}

/// Whether process `pid` has a handler for SIGTERM (its `SigCgt` mask in /proc).
fn catches_sigterm(pid: &str) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (15 - 1)) != 0)
}

/// Starts the daemon on 127.0.0.1:0 with files in `dir`, `args` and `env` added, and waits (at
/// most `LIMIT`) for its start-up line.
fn spawn(dir: &Path, args: &[OsString], env: &[(&str, OsString)]) -> Daemon {
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0"])
        .arg("--kv-config-path")
        .arg(dir.join("kvConfig.json"))
        .arg("--config-store-path")
        .arg(dir.join("store.properties"))
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("NOTIFY_SOCKET")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rmq-namesrv");
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.read_to_end(&mut bytes);
        bytes
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let _ = tx.send(lines.next());
        // Keep draining, so that the daemon never writes into a closed pipe.
        for _ in lines {}
    });
    let mut daemon = Daemon {
        child,
        addr: String::new(),
        stderr: Some(stderr),
    };
    let line = rx
        .recv_timeout(LIMIT)
        .expect("start-up line in time")
        .expect("start-up line")
        .expect("start-up line");
    daemon.addr = line
        .strip_prefix("rmq-namesrv listening on ")
        .unwrap_or_else(|| panic!("unexpected start-up line {line:?}"))
        .to_owned();
    daemon
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_owned()).collect()
}

fn put(key: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
        .with_ext("namespace", "logs")
        .with_ext("key", key)
        .with_ext("value", "v".repeat(100))
}

#[actix::test]
async fn files_rotate_by_size_keep_max_files_and_are_flushed_at_exit() {
    let dir = test_dir("rotate");
    let logs = dir.join("logs"); // created by the daemon
    let config = dir.join("log.toml");
    std::fs::write(&config, "[log]\nmax_file_size = 2048\nmax_files = 3\n").unwrap();
    let mut daemon = spawn(&dir, &os(&[&"-c", &config, &"--log-dir", &logs]), &[]);
    let mut client = Client::connect(&daemon.addr, TIMEOUT).await.unwrap();
    // Each put logs a line of about 200 bytes at info: some ten rotations.
    for i in 0..100 {
        let resp = client.request(put(&format!("k{i:03}"))).await.unwrap();
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
    }
    let (exit, stderr) = daemon.stop();
    assert!(exit.success(), "{exit:?}");
    // With a directory, log lines go to the files only.
    assert!(stderr.is_empty(), "{}", String::from_utf8_lossy(&stderr));

    let mut names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The audit log (docs/access.md) lives beside the logs, one JSON line per KV write.
    assert_eq!(
        names,
        [
            "audit.log",
            "rmq-namesrv.log",
            "rmq-namesrv.log.1",
            "rmq-namesrv.log.2"
        ]
    );
    let audit = std::fs::read_to_string(logs.join("audit.log")).unwrap();
    assert_eq!(audit.lines().count(), 100, "{audit}");
    assert!(audit
        .lines()
        .all(|l| l.contains("\"request\":\"PUT_KV_CONFIG\"")));
    names.retain(|n| n != "audit.log");
    let mut first_stamps = Vec::new();
    let mut all = String::new();
    // Oldest first: .2, .1, the current file.
    for name in names.iter().rev() {
        let bytes = std::fs::read(logs.join(name)).unwrap();
        // A file is rotated before the line that would start at or past the limit.
        assert!(
            !bytes.is_empty() && bytes.len() < 2048 + 1024,
            "{name}: {} bytes",
            bytes.len()
        );
        assert!(!bytes.contains(&0x1b), "{name} holds colour codes");
        let text = String::from_utf8(bytes).unwrap();
        first_stamps.push(text.split(' ').next().unwrap().to_owned());
        all.push_str(&text);
    }
    // RFC 3339 UTC stamps sort as text: the rotated files are older, in order.
    let mut sorted = first_stamps.clone();
    sorted.sort();
    assert_eq!(first_stamps, sorted);
    // The newest lines survived and the last ones were written before the exit.
    assert!(all.contains("key=\"k099\""), "{all}");
    assert!(all.contains("shutdown signal received"), "{all}");
    assert!(
        !all.contains("key=\"k000\""),
        "the oldest file was not removed"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn json_lines_carry_level_and_fields() {
    let dir = test_dir("json");
    let mut daemon = spawn(&dir, &os(&[&"--log-format", &"json"]), &[]);
    let addr = daemon.addr.clone();
    let (exit, stderr) = daemon.stop();
    assert!(exit.success(), "{exit:?}");
    let text = String::from_utf8(stderr).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
        })
        .collect();
    assert!(lines.len() >= 3, "{text}");
    for line in &lines {
        let level = line["level"].as_str().unwrap_or_default();
        assert!(
            ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level),
            "{line}"
        );
        assert!(line["timestamp"].is_string(), "{line}");
        assert!(line["fields"]["message"].is_string(), "{line}");
    }
    // Fields stay fields, not text in the message.
    assert!(
        lines.iter().any(|l| l["level"] == "INFO"
            && l["fields"]["message"] == "name server started"
            && l["fields"]["addr"] == addr.as_str()),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l["fields"]["message"] == "shutdown signal received, stopping"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_off_a_terminal_has_no_colour_and_java_keys_without_effect_are_warned_once() {
    let dir = test_dir("javakeys");
    let props = dir.join("namesrv.properties");
    std::fs::write(
        &props,
        "listenPort=0\nbindAddress=127.0.0.1\nscanNotActiveBrokerInterval=5000\n\
         defaultThreadPoolNums=16\nclientRequestThreadPoolNums=8\ncontrollerDLegerHeartBeatTimeoutMs=1000\n",
    )
    .unwrap();
    // stderr is a pipe here: no colour, even with a terminal type set.
    let mut daemon = spawn(
        &dir,
        &os(&[&"-c", &props]),
        &[("TERM", "xterm-256color".into())],
    );
    let (exit, stderr) = daemon.stop();
    assert!(exit.success(), "{exit:?}");
    assert!(
        !stderr.contains(&0x1b),
        "{}",
        String::from_utf8_lossy(&stderr)
    );
    let text = String::from_utf8(stderr).unwrap();
    for key in [
        "defaultThreadPoolNums",
        "clientRequestThreadPoolNums",
        "controllerDLegerHeartBeatTimeoutMs",
    ] {
        let warnings: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(" WARN ") && l.contains(&format!("key={key} ")))
            .collect();
        assert_eq!(warnings.len(), 1, "{key}: {text}");
        assert!(warnings[0].contains("no effect"), "{}", warnings[0]);
    }
    // Keys with an effect are not warned about.
    assert!(!text.contains("key=scanNotActiveBrokerInterval"), "{text}");
    assert!(!text.contains("key=listenPort"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn systemd_hears_ready_once_listening_and_stopping_at_sigterm() {
    let dir = test_dir("notify");
    let socket_path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket.set_read_timeout(Some(LIMIT)).unwrap();
    let mut daemon = spawn(
        &dir,
        &[],
        &[("NOTIFY_SOCKET", socket_path.clone().into_os_string())],
    );
    let mut buf = [0u8; 4096];
    let n = socket.recv(&mut buf).expect("READY=1 within the limit");
    let ready = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    assert!(
        ready
            .lines()
            .any(|l| l == format!("STATUS=listening on {}", daemon.addr)),
        "{ready:?}"
    );
    let (exit, _) = daemon.stop();
    assert!(exit.success(), "{exit:?}");
    let n = socket.recv(&mut buf).expect("STOPPING=1 within the limit");
    let stopping = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_log_dir_that_cannot_be_created_stops_start_up_naming_it() {
    let dir = test_dir("baddir");
    let file = dir.join("a-file");
    std::fs::write(&file, "").unwrap();
    let mut child = Command::new(BIN)
        .args(["--listen", "127.0.0.1:0", "--log-dir"])
        .arg(file.join("logs"))
        .arg("--kv-config-path")
        .arg(dir.join("kvConfig.json"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + LIMIT;
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("started with a log.dir it cannot create");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(exit.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("log.dir"), "{stderr}");
    assert!(out.stdout.is_empty(), "it must not start");
    let _ = std::fs::remove_dir_all(&dir);
}
