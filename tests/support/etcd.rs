//! A throwaway single-member etcd for tests, std only: started on two free 127.0.0.1 ports with a
//! fresh data directory, ready (its `/health` answers) within [`READY_LIMIT`], killed by PID and
//! its directory removed on drop. The controller's store tests in the actors crate include this
//! file too (`#[path]` in `actors/src/controller/etcd/tests.rs`): std only, no `support` items.
//!
//! A missing `etcd` binary fails the test that asked for one, saying so: a test of failover that
//! silently skips proves nothing. `ETCD_BIN` names another binary than the `etcd` on `PATH`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long etcd gets to answer its health check after being started.
pub const READY_LIMIT: Duration = Duration::from_secs(10);

/// A running etcd; dropping it kills it and removes its files.
pub struct Etcd {
    child: Child,
    dir: PathBuf,
    client_port: u16,
    killed: bool,
}

/// Starts an etcd on 127.0.0.1 and waits until it is healthy. Panics (failing the test) when
/// `etcd` is not installed or does not become ready.
pub fn start() -> Etcd {
    remove_stale_dirs();
    let (client_port, peer_port) = free_ports();
    let dir = std::env::temp_dir().join(format!(
        "rmq-namesrv-etcd-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("etcd test dir");
    let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log file");
    let log_err = log.try_clone().expect("etcd log file");
    let client = format!("http://127.0.0.1:{client_port}");
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
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
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
        killed: false,
    };
    etcd.wait_ready();
    etcd
}

impl Etcd {
    /// The client address, as an endpoint setting takes it (`127.0.0.1:port`).
    pub fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    /// The client URL (`http://127.0.0.1:port`).
    pub fn url(&self) -> String {
        format!("http://{}", self.endpoint())
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
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.pid().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill {signal} {} failed", self.pid());
    }

    /// Whether etcd answers its health check now.
    pub fn healthy(&self) -> bool {
        health(self.client_port)
    }

    /// The end of etcd's log, for a failure message.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_LIMIT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.killed = true;
                panic!(
                    "etcd exited ({status}) before it was ready:\n{}",
                    self.log_tail()
                );
            }
            if self.healthy() {
                return;
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

/// Two distinct free ports (both held while the second is found). etcd binds them itself, so
/// another process may take one in between; unlikely, and the start then fails loudly.
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
