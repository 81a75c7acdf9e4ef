//! The HTTP port whole, as a client reaches it: the input is sent as the raw bytes of a
//! request (head and whatever follows) to a running server in the secure profile (the status
//! page and its JSON need an admin's credentials), and the answer read. Whatever the path's
//! spelling (percent-encoding, dot segments, doubled slashes, odd methods or versions), the
//! status content is never served without credentials, and the server keeps answering.
#![no_main]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use rmq_namesrv::config::{Config, Profile};
use rmq_namesrv::NameServer;

/// A server in the secure profile with its HTTP port, started once per process on a thread
/// of its own; its HTTP address.
fn http_addr() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let system = actix_rt::System::new();
            system.block_on(async move {
                let dir = std::env::temp_dir().join(format!("rmq-fuzz-http-{}", std::process::id()));
                std::fs::create_dir_all(&dir).expect("a temporary directory");
                let acl = dir.join("plain_acl.yml");
                std::fs::write(&acl, "accounts:\n  - accessKey: admin\n    secretKey: adminSecret\n    admin: true\n")
                    .expect("the ACL file");
                let mut config = Config::default();
                config.server.listen = "127.0.0.1:0".parse().expect("loopback");
                config.server.workers = 1;
                config.kv.path = dir.join("kv.json");
                config.kv.config_store_path = dir.join("namesrv.properties");
                config.tls.config_file = None;
                config.access.profile = Profile::Secure;
                config.access.acl_file = acl;
                config.access.audit_log = dir.join("audit.log");
                config.http.listen = Some("127.0.0.1:0".parse().expect("loopback"));
                let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
                let server = NameServer::new(config).start(listener).expect("the server starts");
                tx.send(server.http_addr().expect("an HTTP port")).expect("told");
                std::future::pending::<()>().await;
            });
        });
        rx.recv().expect("the server's HTTP address")
    })
}

/// Sends `bytes` on a fresh connection and reads the answer until the server closes it, it
/// goes quiet, or 64 KiB came; `None` when the connection could not be made.
fn exchange(addr: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    let _ = stream.write_all(bytes);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let mut chunk = [0u8; 8192];
    while answer.len() < 64 * 1024 {
        match stream.read(&mut chunk) {
            Ok(n) if n > 0 => answer.extend_from_slice(&chunk[..n]),
            _ => break,
        }
    }
    Some(answer)
}

fuzz_target!(|data: &[u8]| {
    let addr = http_addr();
    let Some(answer) = exchange(addr, data) else {
        return;
    };
    let text = String::from_utf8_lossy(&answer);
    // An input may hold several pipelined requests: look at every answer in it.
    for part in text.split("HTTP/1.1 ").skip(1) {
        let served = part.starts_with("200");
        let status_content = part.contains("\"clusters\"") || part.contains("<table");
        assert!(
            !(served && status_content),
            "status content served without credentials to {:?}",
            String::from_utf8_lossy(&data[..data.len().min(256)])
        );
    }
});
