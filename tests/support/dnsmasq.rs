//! A throwaway DNS server for tests: dnsmasq on a free 127.0.0.1 port answering only from a hosts
//! file of the test's (no forwarding, no /etc/hosts), whose records the test changes with
//! [`Dnsmasq::set_records`] (the file rewritten, then SIGHUP: dnsmasq reads it again). Killed by
//! PID and its directory removed on drop.
//!
//! A missing `dnsmasq` fails the test that asked for one, saying which package to install.

use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::etcd::unique;

/// A running dnsmasq; dropping it kills it and removes its files.
pub struct Dnsmasq {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
    killed: bool,
}

/// Starts dnsmasq on 127.0.0.1 answering `records` (`(ip, name)` pairs). Panics (failing the
/// test) when dnsmasq is not installed or exits at once.
pub fn start(records: &[(&str, &str)]) -> Dnsmasq {
    let dir = std::env::temp_dir().join(format!(
        "rmq-namesrv-dnsmasq-{}-{}",
        std::process::id(),
        unique()
    ));
    std::fs::create_dir_all(&dir).expect("dnsmasq test dir");
    let addr = free_udp_and_tcp_port();
    let hosts = dir.join("hosts");
    write_records(&hosts, records);
    let mut child = match Command::new(binary())
        .arg("--keep-in-foreground")
        .arg("--conf-file=/dev/null")
        .arg(format!("--port={}", addr.port()))
        .arg("--listen-address=127.0.0.1")
        .arg("--bind-interfaces")
        .arg("--no-resolv")
        .arg("--no-hosts")
        .arg("--pid-file=")
        .arg(format!("--addn-hosts={}", hosts.display()))
        .arg(format!(
            "--log-facility={}",
            dir.join("dnsmasq.log").display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = std::fs::remove_dir_all(&dir);
            panic!("dnsmasq is not installed: the DNS tests need it (Debian: apt-get install dnsmasq-base)");
        }
        Err(e) => panic!("cannot start dnsmasq: {e}"),
    };
    // It binds before it would exit with a configuration error.
    std::thread::sleep(Duration::from_millis(200));
    if let Ok(Some(status)) = child.try_wait() {
        let mut err = String::new();
        if let Some(mut stderr) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        panic!("dnsmasq exited ({status}): {err}");
    }
    Dnsmasq {
        child,
        dir,
        addr,
        killed: false,
    }
}

impl Dnsmasq {
    /// Where it answers (UDP and TCP).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replaces the records it answers.
    pub fn set_records(&self, records: &[(&str, &str)]) {
        write_records(&self.dir.join("hosts"), records);
        let status = Command::new("kill")
            .arg("-HUP")
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -HUP {} failed", self.child.id());
    }

    /// Kills dnsmasq (this process only) and reaps it.
    pub fn kill(&mut self) {
        if !self.killed {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.killed = true;
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write_records(path: &std::path::Path, records: &[(&str, &str)]) {
    let text: String = records
        .iter()
        .map(|(ip, name)| format!("{ip} {name}\n"))
        .collect();
    std::fs::write(path, text).expect("write the hosts file");
}

/// `DNSMASQ_BIN`, else Debian's `/usr/sbin/dnsmasq` (not on every user's PATH), else `dnsmasq`.
fn binary() -> std::ffi::OsString {
    std::env::var_os("DNSMASQ_BIN").unwrap_or_else(|| {
        let debian = std::path::Path::new("/usr/sbin/dnsmasq");
        if debian.exists() {
            debian.into()
        } else {
            "dnsmasq".into()
        }
    })
}

/// A 127.0.0.1 port free for UDP and for TCP (dnsmasq serves both) at the time of asking.
fn free_udp_and_tcp_port() -> SocketAddr {
    for _ in 0..100 {
        let udp = UdpSocket::bind("127.0.0.1:0").expect("bind a UDP port");
        let addr = udp.local_addr().expect("its address");
        if TcpListener::bind(addr).is_ok() {
            return addr;
        }
    }
    panic!("no 127.0.0.1 port free for both UDP and TCP in 100 tries");
}
