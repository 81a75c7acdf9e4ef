//! The NameServer processes of the run: the `rmq-namesrv` daemon (built with the `soak` profile,
//! so that it answers FAULT_INJECTION) on 127.0.0.1, first on an ephemeral port and, for the pair,
//! restarted on the same one; killed with SIGKILL, stopped with SIGTERM. Every PID goes to the
//! run's PID file, which `bench/soak.sh` reads to clean up whatever the driver left.

use std::cell::{Cell, RefCell};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What the daemon prints on stdout once it accepts connections.
const READY_LINE: &str = "rmq-namesrv listening on ";

/// A restart on a fixed port retries this long while the port is still taken.
const BIND_RETRY: Duration = Duration::from_secs(20);

/// Where a server is in its life, as the driver sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Not running (never started, killed or stopped by the driver).
    Down,
    Starting,
    Running,
    /// Being killed or stopped by the driver: its exit is expected.
    Stopping,
}

/// One NameServer process slot.
#[derive(Debug)]
pub struct Server {
    pub name: String,
    bin: PathBuf,
    dir: PathBuf,
    pidfile: PathBuf,
    /// Extra `NAMESRV__...` settings.
    env: Vec<(String, String)>,
    /// Restarts keep the port the first start got.
    fixed_port: bool,
    addr: Cell<Option<SocketAddr>>,
    child: RefCell<Option<Child>>,
    phase: Cell<Phase>,
    starts: Cell<u32>,
}

impl Server {
    pub fn new(
        name: &str,
        bin: &Path,
        dir: &Path,
        pidfile: &Path,
        fixed_port: bool,
        env: Vec<(String, String)>,
    ) -> Result<Self, String> {
        let dir = dir.join(name);
        fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        Ok(Self {
            name: name.to_owned(),
            bin: bin.to_owned(),
            dir,
            pidfile: pidfile.to_owned(),
            env,
            fixed_port,
            addr: Cell::new(None),
            child: RefCell::new(None),
            phase: Cell::new(Phase::Down),
            starts: Cell::new(0),
        })
    }

    pub fn kv_path(&self) -> PathBuf {
        self.dir.join("kvConfig.json")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// The address as clients take it; empty before the first start.
    pub fn addr_text(&self) -> String {
        self.addr.get().map(|a| a.to_string()).unwrap_or_default()
    }

    pub fn phase(&self) -> Phase {
        self.phase.get()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.borrow().as_ref().map(Child::id)
    }

    /// Starts the process and waits for its ready line, at most `within`. A restart on a fixed
    /// port that finds the port still taken is retried (bounded).
    pub async fn start(&self, within: Duration) -> Result<SocketAddr, String> {
        let began = Instant::now();
        // Bounded: every attempt ends in at most `within`, and attempts stop after BIND_RETRY.
        loop {
            match self.start_once(within).await {
                Ok(addr) => return Ok(addr),
                Err(err)
                    if self.fixed_port
                        && err.contains("in use")
                        && began.elapsed() < BIND_RETRY =>
                {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(err) => return Err(err),
            }
        }
    }

    async fn start_once(&self, within: Duration) -> Result<SocketAddr, String> {
        let listen = match (self.fixed_port, self.addr.get()) {
            (true, Some(addr)) => addr,
            _ => SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let stdout_path = self.dir.join("stdout.txt");
        let stdout = File::create(&stdout_path)
            .map_err(|e| format!("cannot create {}: {e}", stdout_path.display()))?;
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|e| format!("cannot open {}: {e}", self.log_path().display()))?;
        let n = self.starts.get() + 1;
        self.starts.set(n);
        let _ = writeln!(log, "=== rmq-soak: start #{n} of {} on {listen}", self.name);
        let mut command = Command::new(&self.bin);
        command
            .arg("--listen")
            .arg(listen.to_string())
            .arg("--kv-config-path")
            .arg(self.kv_path())
            .arg("--config-store-path")
            .arg(self.dir.join("namesrv.properties"))
            .arg("--log-level")
            .arg("warn")
            .env_remove("RUST_LOG")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(log);
        for (key, value) in &self.env {
            command.env(key, value);
        }
        self.phase.set(Phase::Starting);
        let child = command.spawn().map_err(|e| {
            self.phase.set(Phase::Down);
            format!("cannot start {}: {e}", self.bin.display())
        })?;
        let pid = child.id();
        if let Ok(mut pids) = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.pidfile)
        {
            let _ = writeln!(pids, "{pid}");
        }
        *self.child.borrow_mut() = Some(child);
        let deadline = Instant::now() + within;
        // Bounded by `deadline`.
        loop {
            if let Some(addr) = read_ready(&stdout_path) {
                self.addr.set(Some(addr));
                self.phase.set(Phase::Running);
                return Ok(addr);
            }
            if let Some(status) = self.reap() {
                self.phase.set(Phase::Down);
                return Err(format!(
                    "{} (pid {pid}) exited at start ({status}): {}",
                    self.name,
                    self.log_tail(3)
                ));
            }
            if Instant::now() >= deadline {
                self.kill_now();
                self.phase.set(Phase::Down);
                return Err(format!(
                    "{} (pid {pid}) not listening within {within:?}",
                    self.name
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The exit status, if the process has exited (it is then reaped and forgotten).
    fn reap(&self) -> Option<ExitStatus> {
        let mut child = self.child.borrow_mut();
        let status = child.as_mut().and_then(|c| c.try_wait().ok().flatten());
        if status.is_some() {
            *child = None;
        }
        status
    }

    /// An exit the driver did not cause: the status, once, while the server should be running.
    pub fn unexpected_exit(&self) -> Option<ExitStatus> {
        if self.phase.get() != Phase::Running {
            return None;
        }
        let status = self.reap()?;
        self.phase.set(Phase::Down);
        Some(status)
    }

    /// SIGKILL, then waits for the process to be gone (bounded).
    pub async fn kill9(&self) -> Result<(), String> {
        self.phase.set(Phase::Stopping);
        let Some(pid) = self.pid() else {
            self.phase.set(Phase::Down);
            return Err(format!("{} is not running", self.name));
        };
        signal(pid, libc::SIGKILL);
        let result = self.wait_exit(Duration::from_secs(10)).await.map(|_| ());
        self.phase.set(Phase::Down);
        result.map_err(|e| format!("{} (pid {pid}): {e}", self.name))
    }

    /// SIGTERM (a graceful stop), then waits at most `within` for the exit status; past that the
    /// process is killed and the stop reported as failed.
    pub async fn stop(&self, within: Duration) -> Result<ExitStatus, String> {
        self.phase.set(Phase::Stopping);
        let Some(pid) = self.pid() else {
            self.phase.set(Phase::Down);
            return Err(format!("{} was not running", self.name));
        };
        signal(pid, libc::SIGTERM);
        let result = self.wait_exit(within).await;
        if result.is_err() {
            self.kill_now();
        }
        self.phase.set(Phase::Down);
        result.map_err(|e| format!("{} (pid {pid}): {e}", self.name))
    }

    async fn wait_exit(&self, within: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + within;
        // Bounded by `deadline`.
        loop {
            if let Some(status) = self.reap() {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                return Err(format!("still running {within:?} after the signal"));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// SIGKILL and a blocking wait (clean-up paths).
    pub fn kill_now(&self) {
        if let Some(mut child) = self.child.borrow_mut().take() {
            signal(child.id(), libc::SIGKILL);
            let _ = child.wait();
        }
        self.phase.set(Phase::Down);
    }

    /// The last `lines` lines of the server's log, on one line.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(self.log_path()).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// The address of the ready line in the server's stdout, once it is there.
fn read_ready(stdout: &Path) -> Option<SocketAddr> {
    let text = fs::read_to_string(stdout).ok()?;
    let at = text.find(READY_LINE)? + READY_LINE.len();
    // Only a whole line: the address may still be being written.
    let (line, _) = text.get(at..)?.split_once('\n')?;
    line.trim().parse().ok()
}

fn signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill(2) only reads its two integer arguments; `pid` is a child this process
        // spawned and has not reaped yet, so the PID cannot have been reused.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_line_gives_the_address() {
        let dir = std::env::temp_dir().join(format!("rmq-soak-ready-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("stdout.txt");
        fs::write(&path, "").unwrap();
        assert_eq!(read_ready(&path), None);
        fs::write(&path, "rmq-namesrv listening on 127.0.0.1:401").unwrap();
        assert_eq!(read_ready(&path), None);
        fs::write(&path, "rmq-namesrv listening on 127.0.0.1:40123\n").unwrap();
        assert_eq!(read_ready(&path), Some("127.0.0.1:40123".parse().unwrap()));
        let _ = fs::remove_dir_all(&dir);
    }
}
