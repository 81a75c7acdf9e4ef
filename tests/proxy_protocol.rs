//! The PROXY protocol on the remoting port, over TCP against the real server: v1 and v2 headers
//! with plaintext and with TLS behind them, the client address they carry, a truncated header, a
//! header from an untrusted source, a connection without one where it is required.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmq_namesrv::config::{ClientTlsSettings, ProxyMode, ProxyProtocolSettings, TlsMode};
use rmq_namesrv::protocol::codec::{encode_frame, RemotingCodec};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::transport::client::client_config;
use rmq_namesrv::NameServerHandle;
use rustls_pki_types::ServerName;
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::codec::Decoder;

fn start(mode: ProxyMode, trusted: &[&str], tls: TlsMode) -> NameServerHandle {
    let mut config = test_config();
    config.proxy_protocol = ProxyProtocolSettings {
        mode,
        trusted_networks: trusted.iter().map(|n| n.parse().unwrap()).collect(),
    };
    config.tls.mode = tls;
    config.tls.handshake_timeout = Duration::from_millis(500);
    start_server(config)
}

fn v1(client: &str) -> Vec<u8> {
    format!("PROXY TCP4 {client} 127.0.0.1 40000 9876\r\n").into_bytes()
}

fn v2(client: [u8; 4], port: u16) -> Vec<u8> {
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(&[0x21, 0x11, 0, 12]);
    out.extend_from_slice(&client);
    out.extend_from_slice(&[127, 0, 0, 1]);
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&9876u16.to_be_bytes());
    out
}

fn route_frame() -> Vec<u8> {
    let cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
        .with_opaque(7)
        .with_ext("topic", "T");
    let mut out = bytes::BytesMut::new();
    encode_frame(&cmd, &mut out).unwrap();
    out.to_vec()
}

/// Reads one response frame, at most 3 s; `None` if the connection closed instead.
async fn read_response<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> Option<RemotingCommand> {
    let mut buf = bytes::BytesMut::new();
    let mut codec = RemotingCodec::default();
    let read = async {
        loop {
            if let Ok(Some(cmd)) = codec.decode(&mut buf) {
                return Some(cmd);
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(3), read)
        .await
        .ok()
        .flatten()
}

/// Sends `prefix` then a route request in plaintext; answers the response, if any, and the
/// connection (kept open while the caller looks at the connection list).
async fn plaintext_after(
    server: &NameServerHandle,
    prefix: &[u8],
) -> (Option<RemotingCommand>, TcpStream) {
    let mut stream = TcpStream::connect(server.local_addr()).await.unwrap();
    let mut bytes = prefix.to_vec();
    bytes.extend_from_slice(&route_frame());
    stream.write_all(&bytes).await.unwrap();
    (read_response(&mut stream).await, stream)
}

async fn client_addrs(server: &NameServerHandle) -> Vec<SocketAddr> {
    server.connections().await.iter().map(|c| c.peer).collect()
}

#[actix::test]
async fn v1_and_v2_headers_name_the_client_in_plaintext() {
    let server = start(ProxyMode::Optional, &["127.0.0.1/32"], TlsMode::Permissive);
    let (resp, _v1) = plaintext_after(&server, &v1("10.1.2.3")).await;
    let resp = resp.expect("answered");
    assert_eq!((resp.code, resp.opaque), (17, 7));
    let (resp, _v2) = plaintext_after(&server, &v2([10, 9, 8, 7], 41000)).await;
    assert_eq!(resp.expect("answered").code, 17);
    // Optional: a connection without a header is served with its socket address.
    let (resp, _plain) = plaintext_after(&server, b"").await;
    assert_eq!(resp.expect("answered").code, 17);
    let seen = eventually(Duration::from_secs(3), || async {
        let addrs = client_addrs(&server).await;
        addrs.contains(&"10.1.2.3:40000".parse().unwrap())
            && addrs.contains(&"10.9.8.7:41000".parse().unwrap())
            && addrs.iter().any(|a| a.ip().is_loopback())
    })
    .await;
    assert!(seen, "{:?}", server.connections().await);
    server.stop().await;
}

#[actix::test]
async fn a_header_comes_before_tls() {
    let server = start(ProxyMode::Required, &["127.0.0.0/8"], TlsMode::Enforcing);
    let tls = client_config(&ClientTlsSettings {
        enable: true,
        ..ClientTlsSettings::default()
    })
    .unwrap();
    let mut open = Vec::new();
    for header in [v1("10.5.5.5"), v2([10, 6, 6, 6], 42000)] {
        let mut tcp = TcpStream::connect(server.local_addr()).await.unwrap();
        tcp.write_all(&header).await.unwrap();
        let mut stream = tokio_rustls::TlsConnector::from(Arc::clone(&tls))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .expect("TLS after the PROXY header");
        stream.write_all(&route_frame()).await.unwrap();
        let resp = read_response(&mut stream).await.expect("answered over TLS");
        assert_eq!(resp.code, 17);
        open.push(stream);
    }
    let seen = eventually(Duration::from_secs(3), || async {
        let conns = server.connections().await;
        conns
            .iter()
            .any(|c| c.tls && c.peer == "10.5.5.5:40000".parse().unwrap())
            && conns
                .iter()
                .any(|c| c.tls && c.peer == "10.6.6.6:42000".parse().unwrap())
    })
    .await;
    assert!(seen, "{:?}", server.connections().await);
    server.stop().await;
}

#[actix::test]
async fn bad_and_untrusted_headers_are_refused() {
    let required = start(ProxyMode::Required, &["127.0.0.1/32"], TlsMode::Permissive);
    // No header where one is required.
    assert!(plaintext_after(&required, b"").await.0.is_none());
    // A truncated header: nothing more comes, closed at the handshake timeout.
    let mut truncated = TcpStream::connect(required.local_addr()).await.unwrap();
    truncated
        .write_all(b"PROXY TCP4 10.1.2.3 127.0.0.1 40")
        .await
        .unwrap();
    assert!(read_response(&mut truncated).await.is_none());
    // A malformed one.
    assert!(plaintext_after(&required, b"PROXY TCP4 not an address\r\n")
        .await
        .0
        .is_none());
    // A good one still works.
    assert!(plaintext_after(&required, &v1("10.1.2.3"))
        .await
        .0
        .is_some());
    required.stop().await;

    // From a source outside the trusted networks, a header is refused: anyone could claim any
    // address otherwise.
    let untrusted = start(ProxyMode::Optional, &["10.0.0.0/8"], TlsMode::Permissive);
    assert!(plaintext_after(&untrusted, &v1("10.1.2.3"))
        .await
        .0
        .is_none());
    assert!(plaintext_after(&untrusted, &v2([10, 1, 2, 3], 1))
        .await
        .0
        .is_none());
    // Without a header the same source is served.
    assert!(plaintext_after(&untrusted, b"").await.0.is_some());
    untrusted.stop().await;

    // Off: a header is just a malformed frame.
    let off = start(ProxyMode::Off, &[], TlsMode::Permissive);
    assert!(plaintext_after(&off, &v1("10.1.2.3")).await.0.is_none());
    off.stop().await;
}
