//! A throwaway single-member etcd for tests, std only: started on two free 127.0.0.1 ports with a
//! fresh data directory, ready (its `/health` answers) within [`READY_LIMIT`], killed by PID and
//! its directory removed on drop. The controller's store tests in the actors crate include this
//! file too (`#[path]` in `actors/src/controller/etcd/tests.rs`): std only, no `support` items.
//!
//! A missing `etcd` binary fails the test that asked for one, saying so: a test of failover that
//! silently skips proves nothing. `ETCD_BIN` names another binary than the `etcd` on `PATH`.
//!
//! [`start_with`] serves clients over TLS (etcd's `--cert-file`/`--key-file`, and with a client
//! CA `--client-cert-auth --trusted-ca-file`), and [`Etcd::enable_auth`] turns etcd's
//! authentication on through its JSON gateway (`/v3/auth/...`, what `etcdctl user add`,
//! `role grant-permission` and `auth enable` send), so no `etcdctl` is needed. Readiness is asked
//! of the metrics port (`--listen-metrics-urls`, plain HTTP whatever the client port speaks).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long etcd gets to answer its health check after being started.
pub const READY_LIMIT: Duration = Duration::from_secs(10);

/// Starts tried when a port found free was taken before etcd bound it (see [`free_ports`]).
const START_ATTEMPTS: u32 = 5;

/// A running etcd; dropping it kills it and removes its files.
pub struct Etcd {
    child: Child,
    dir: PathBuf,
    client_port: u16,
    metrics_port: u16,
    tls: bool,
    killed: bool,
}

/// How [`start_with`] starts etcd.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Clients over TLS: the server's certificate and key (PEM files).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// With TLS: require client certificates signed by this CA (`--client-cert-auth`).
    pub client_ca: Option<PathBuf>,
    /// etcd's `--auth-token-ttl` (seconds an unused simple token lives; etcd's default 300).
    pub auth_token_ttl: Option<u32>,
}

/// Starts an etcd on 127.0.0.1 and waits until it is healthy. Panics (failing the test) when
/// `etcd` is not installed or does not become ready.
pub fn start() -> Etcd {
    start_with(&Options::default())
}

/// [`start`] with TLS or a token TTL.
pub fn start_with(options: &Options) -> Etcd {
    remove_stale_dirs();
    let mut attempt = 1;
    loop {
        match try_start(options) {
            Ok(etcd) => return etcd,
            Err(log) if attempt < START_ATTEMPTS && log.contains("address already in use") => {
                eprintln!("etcd: a port found free was taken before etcd bound it; again");
                attempt += 1;
            }
            Err(log) => panic!("etcd exited before it was ready:\n{log}"),
        }
    }
}

/// One start on ports found free now: the end of etcd's log if it exited before it was ready.
fn try_start(options: &Options) -> Result<Etcd, String> {
    let (client_port, peer_port) = free_ports();
    let (metrics_port, _) = free_ports();
    let dir = std::env::temp_dir().join(format!(
        "rmq-namesrv-etcd-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("etcd test dir");
    let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log file");
    let log_err = log.try_clone().expect("etcd log file");
    let scheme = if options.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let client = format!("{scheme}://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let binary = std::env::var_os("ETCD_BIN").unwrap_or_else(|| "etcd".into());
    let mut command = Command::new(&binary);
    command
        .arg("--name")
        .arg("default")
        // etcd creates it, with the permissions it insists on.
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--listen-client-urls")
        .arg(&client)
        .arg("--advertise-client-urls")
        .arg(&client)
        .arg("--listen-peer-urls")
        .arg(&peer)
        .arg("--initial-advertise-peer-urls")
        .arg(&peer)
        .arg("--initial-cluster")
        .arg(format!("default={peer}"))
        .arg("--initial-cluster-state")
        .arg("new")
        .arg("--listen-metrics-urls")
        .arg(format!("http://127.0.0.1:{metrics_port}"))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    if let Some((cert, key)) = &options.tls {
        command
            .arg("--cert-file")
            .arg(cert)
            .arg("--key-file")
            .arg(key);
    }
    if let Some(ca) = &options.client_ca {
        command
            .arg("--client-cert-auth")
            .arg("--trusted-ca-file")
            .arg(ca);
    }
    if let Some(ttl) = options.auth_token_ttl {
        command.arg("--auth-token-ttl").arg(ttl.to_string());
    }
    // Hermetic: etcd reads every flag from an ETCD_* variable too.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("ETCD_") {
            command.env_remove(name);
        }
    }
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = std::fs::remove_dir_all(&dir);
            panic!(
                "etcd is not installed ({} not found): the controller's etcd tests need it \
                 (Debian: apt-get install etcd-server)",
                binary.to_string_lossy()
            );
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            panic!("cannot start {}: {e}", binary.to_string_lossy());
        }
    };
    let mut etcd = Etcd {
        child,
        dir,
        client_port,
        metrics_port,
        tls: options.tls.is_some(),
        killed: false,
    };
    etcd.wait_ready()?;
    Ok(etcd)
}

impl Etcd {
    /// The client address, as an endpoint setting takes it (`127.0.0.1:port`).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// The client URL (`http://127.0.0.1:port`, `https://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.endpoint())
    }

    /// Turns authentication on (plain-HTTP etcd only): a `root` user (which `auth enable`
    /// requires), and `user` with `password` and a role that may read and write every key
    /// starting with `/`.
    pub fn enable_auth(&self, user: &str, password: &str) {
        assert!(!self.tls, "enable_auth speaks plain HTTP");
        // Keys are bytes, base64 in JSON: "/" and "0" (the end of the range of "/...").
        let steps = [
            (
                "user/add",
                r#"{"name":"root","password":"root-secret"}"#.to_owned(),
            ),
            ("user/grant", r#"{"user":"root","role":"root"}"#.to_owned()),
            ("role/add", r#"{"name":"rmq"}"#.to_owned()),
            (
                "role/grant",
                r#"{"name":"rmq","perm":{"permType":"READWRITE","key":"Lw==","range_end":"MA=="}}"#
                    .to_owned(),
            ),
            (
                "user/add",
                format!(r#"{{"name":"{user}","password":"{password}"}}"#),
            ),
            ("user/grant", format!(r#"{{"user":"{user}","role":"rmq"}}"#)),
            ("enable", "{}".to_owned()),
        ];
        for (path, body) in steps {
            let answer = post(self.client_port, &format!("/v3/auth/{path}"), &body);
            assert!(
                answer.starts_with("HTTP/1.1 200"),
                "etcd /v3/auth/{path} failed:\n{answer}"
            );
        }
    }

    /// The etcd process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills etcd (SIGKILL, this process only) and reaps it; its files stay until the drop.
    pub fn kill(&mut self) {
        if !self.killed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.killed = true;
        }
    }

    /// Freezes etcd (SIGSTOP): its connections stay open and nothing answers.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Lets a paused etcd run again (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        self::signal(self.pid(), signal);
    }

    /// Whether etcd answers its health check now.
    pub fn healthy(&self) -> bool {
        health(self.metrics_port)
    }

    /// The end of etcd's log, for a failure message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits until etcd is healthy; the end of its log if it exited first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.killed = true;
                return Err(format!("({status})\n{}", self.log_tail()));
            }
            if self.healthy() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                self.kill();
                panic!(
                    "etcd was not ready within {READY_LIMIT:?}:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One GET /health over plain TCP: `{"health":"true"}` once the member has a leader.
fn health(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let request = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    answer.starts_with("HTTP/1.1 200") && answer.replace(' ', "").contains("\"health\":\"true\"")
}

/// One POST over plain TCP with a JSON body: the whole answer (status line, headers, body).
fn post(port: u16, path: &str, body: &str) -> String {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).expect("connect to etcd");
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send to etcd");
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

/// Two distinct free ports (both held while the second is found). etcd binds them itself, so
/// another process may take one in between: etcd then exits saying so, and [`start_with`]
/// starts it again on other ports.
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let b = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let ports = (
        a.local_addr().expect("local addr").port(),
        b.local_addr().expect("local addr").port(),
    );
    drop((a, b));
    ports
}

/// Sends `signal` (as `kill` takes it: `-STOP`, `-CONT`, ...) to process `pid`.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(signal)
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid} failed");
}

/// A number no other call in this process got (for directory names).
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Removes the directories of earlier test processes that are gone (killed before their drop).
fn remove_stale_dirs() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| remove_dirs_of_gone_processes("rmq-namesrv-etcd-"));
}

/// Removes the temp-dir entries named `<prefix><pid>-...` whose process is gone.
pub fn remove_dirs_of_gone_processes(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(prefix)
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !std::path::Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
