//! The HTTP port follows `tls.mode` with the remoting port's certificate (docs/metrics.md), over
//! TCP against the real server: `enforcing` serves HTTPS and closes plaintext without disturbing
//! anyone else; `permissive` serves both on one port; `disabled` refuses a TLS handshake; a
//! replaced certificate is what new HTTPS connections see; a stop closes idle keep-alive
//! connections and the port.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_namesrv::config::{ClientTlsSettings, TlsMode, TlsSettings};
use rmq_namesrv::transport::client::client_config;
use rmq_namesrv::NameServerHandle;
use rustls::pki_types::ServerName;
use rustls::ClientConfig;
use support::http::{exchange, try_get, Answer};
use support::pki::{replace_file, serial_of, serving, Pki};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A server with `tls` and the HTTP port on 127.0.0.1:0; its HTTP address.
fn start(tls: TlsSettings) -> (NameServerHandle, SocketAddr) {
    let mut config = test_config();
    config.tls = tls;
    config.http.listen = Some("127.0.0.1:0".parse().expect("address"));
    let server = start_server(config);
    let addr = server.http_addr().expect("the HTTP port is on");
    (server, addr)
}

/// A client that verifies the server against the test CA.
fn verifying(ca: &Path) -> Arc<ClientConfig> {
    client_config(&ClientTlsSettings {
        enable: true,
        auth_server: true,
        trust_cert_path: Some(ca.to_owned()),
        ..ClientTlsSettings::default()
    })
    .expect("client config")
}

/// GET over HTTPS: the answer and the serial of the certificate served; `Err` when the
/// handshake fails.
async fn https_get(
    addr: SocketAddr,
    tls: &Arc<ClientConfig>,
    path: &str,
) -> Result<(Option<Answer>, u64), std::io::Error> {
    let attempt = async {
        let tcp = TcpStream::connect(addr).await?;
        let name = ServerName::from(addr.ip());
        let mut stream = TlsConnector::from(Arc::clone(tls))
            .connect(name, tcp)
            .await?;
        let serial = {
            let (_, session) = stream.get_ref();
            let chain = session.peer_certificates().expect("a server certificate");
            serial_of(&chain[0])
        };
        Ok((exchange(&mut stream, addr, path, "").await, serial))
    };
    tokio::time::timeout(TIMEOUT, attempt)
        .await
        .expect("answered or refused in time")
}

/// `/health` answered 200 with its body.
fn healthy(answer: Option<Answer>) {
    let answer = answer.expect("an HTTP answer");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.starts_with("ok: "), "{answer:?}");
}

#[actix::test]
async fn enforcing_serves_https_with_the_certificate_and_closes_plaintext() {
    let pki = Pki::new(&test_dir("http-tls-enforcing"));
    let cert = pki.issue("server", 41);
    let (server, addr) = start(serving(TlsMode::Enforcing, &cert));
    let tls = verifying(&pki.ca_path);

    let (answer, serial) = https_get(addr, &tls, "/health").await.expect("HTTPS");
    healthy(answer);
    assert_eq!(serial, 41, "the configured certificate");

    // A keep-alive HTTPS connection opened before the plaintext attempt.
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let mut kept = TlsConnector::from(Arc::clone(&tls))
        .connect(ServerName::from(addr.ip()), tcp)
        .await
        .expect("handshake");

    assert!(
        try_get(addr, "/health", "").await.is_none(),
        "plain HTTP is closed without an answer"
    );
    let (answer, _) = https_get(addr, &tls, "/rocketmq/nsaddr")
        .await
        .expect("HTTPS still served");
    let answer = answer.expect("an HTTP answer");
    assert_eq!(answer.status, 200);
    assert_eq!(answer.body.trim(), server.local_addr().to_string());
    healthy(exchange(&mut kept, addr, "/health", "").await);
    server.stop().await;
}

#[actix::test]
async fn permissive_serves_https_and_plain_http_on_one_port() {
    let pki = Pki::new(&test_dir("http-tls-permissive"));
    let cert = pki.issue("server", 42);
    let (server, addr) = start(serving(TlsMode::Permissive, &cert));
    let tls = verifying(&pki.ca_path);
    for _ in 0..2 {
        let (answer, serial) = https_get(addr, &tls, "/health").await.expect("HTTPS");
        healthy(answer);
        assert_eq!(serial, 42);
        healthy(try_get(addr, "/health", "").await);
    }
    let page = try_get(addr, "/", "").await.expect("the status page");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<html"), "{page:?}");
    server.stop().await;
}

#[actix::test]
async fn disabled_refuses_a_tls_handshake_and_serves_plain_http() {
    let pki = Pki::new(&test_dir("http-tls-disabled"));
    let cert = pki.issue("server", 43);
    let (server, addr) = start(serving(TlsMode::Disabled, &cert));
    let tls = verifying(&pki.ca_path);
    assert!(
        https_get(addr, &tls, "/health").await.is_err(),
        "the TLS handshake is refused"
    );
    healthy(try_get(addr, "/health", "").await);
    server.stop().await;
}

#[actix::test]
async fn a_replaced_certificate_is_served_to_new_https_connections() {
    let pki = Pki::new(&test_dir("http-tls-reload"));
    let first = pki.issue("server", 201);
    let (server, addr) = start(serving(TlsMode::Enforcing, &first));
    let tls = verifying(&pki.ca_path);
    let (answer, serial) = https_get(addr, &tls, "/health").await.expect("HTTPS");
    healthy(answer);
    assert_eq!(serial, 201);

    let second = pki.issue("next", 202);
    replace_file(&first.cert_path, &second.cert_pem);
    replace_file(&first.key_path, &second.key_pem);
    let seen = eventually(Duration::from_secs(5), || async {
        matches!(https_get(addr, &tls, "/health").await, Ok((_, 202)))
    })
    .await;
    assert!(seen, "a new HTTPS connection gets the new certificate");
    let (answer, serial) = https_get(addr, &tls, "/health").await.expect("HTTPS");
    healthy(answer);
    assert_eq!(serial, 202);
    server.stop().await;
}

#[actix::test]
async fn a_stop_closes_idle_keep_alive_connections_and_the_port() {
    let pki = Pki::new(&test_dir("http-tls-stop"));
    let cert = pki.issue("server", 44);
    let (server, addr) = start(serving(TlsMode::Permissive, &cert));

    // One request on a keep-alive connection, its answer read by its length; then idle.
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    idle.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert!(head.len() < 4096, "an answer head");
        let n = tokio::time::timeout(TIMEOUT, idle.read(&mut byte))
            .await
            .expect("in time")
            .expect("read");
        assert_eq!(n, 1, "an answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("a content length");
    let mut body = vec![0u8; length];
    idle.read_exact(&mut body).await.expect("the body");

    tokio::time::timeout(Duration::from_secs(10), server.stop())
        .await
        .expect("stopped in time");
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(1), idle.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the idle connection is closed by the stop");
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the port is closed"
    );
}
