//! TLS on the remoting port, over TCP against the real server: each mode with TLS and plaintext
//! clients, client certificates (mTLS), the handshake timeout, garbage instead of a ClientHello,
//! encrypted keys, and certificate hot reload (a new connection sees the new certificate, an old
//! one keeps working, a broken key keeps the old certificate).

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_namesrv::config::{ClientAuth, ClientTlsSettings, TlsMode, TlsSettings};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::{Client, ClientError};
use rmq_namesrv::transport::client::client_config;
use rmq_namesrv::transport::Secret;
use rmq_namesrv::NameServerHandle;
use rustls::ClientConfig;
use support::pki::{replace_file, serial_of, serving, Issued, Pki};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn start(tls: TlsSettings) -> NameServerHandle {
    let mut config = test_config();
    config.tls = tls;
    start_server(config)
}

/// A client that trusts the test CA (or anything, without one) and offers `cert` if given.
fn client(ca: Option<&Path>, cert: Option<&Issued>) -> Arc<ClientConfig> {
    client_config(&ClientTlsSettings {
        enable: true,
        cert_path: cert.map(|c| c.cert_path.clone()),
        key_path: cert.map(|c| c.key_path.clone()),
        key_password: None,
        auth_server: ca.is_some(),
        trust_cert_path: ca.map(Path::to_owned),
    })
    .expect("client config")
}

/// Connects (with `tls`) and asks for a route; any answer means the server served it.
async fn ask(
    server: &NameServerHandle,
    tls: Option<&Arc<ClientConfig>>,
) -> Result<Client, ClientError> {
    let addr = server.local_addr().to_string();
    let mut client = Client::connect_with(&addr, Duration::from_secs(3), tls).await?;
    let resp = client
        .request(
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T"),
        )
        .await?;
    assert_eq!(resp.code, 17, "an unknown topic is TOPIC_NOT_EXIST");
    Ok(client)
}

/// The serial of the certificate a new TLS connection is served.
async fn served_serial(server: &NameServerHandle, tls: &Arc<ClientConfig>) -> u64 {
    let client = ask(server, Some(tls)).await.expect("TLS connection served");
    let chain = client.peer_certificates().expect("a TLS peer certificate");
    serial_of(&chain[0])
}

#[actix::test]
async fn each_mode_takes_and_refuses_what_it_says() {
    let pki = Pki::new(&test_dir("tls-modes"));
    let cert = pki.issue("server", 10);
    let verified = client(Some(&pki.ca_path), None);

    let enforcing = start(serving(TlsMode::Enforcing, &cert));
    ask(&enforcing, Some(&verified)).await.expect("TLS served");
    assert!(ask(&enforcing, None).await.is_err(), "plaintext refused");
    enforcing.stop().await;

    let permissive = start(serving(TlsMode::Permissive, &cert));
    ask(&permissive, Some(&verified)).await.expect("TLS served");
    ask(&permissive, None).await.expect("plaintext served");
    permissive.stop().await;

    let disabled = start(serving(TlsMode::Disabled, &cert));
    assert!(
        ask(&disabled, Some(&verified)).await.is_err(),
        "TLS refused"
    );
    ask(&disabled, None).await.expect("plaintext served");
    disabled.stop().await;

    // Java's defaults: permissive, with a self-signed certificate when none is configured.
    let defaults = start(TlsSettings {
        config_file: None,
        ..TlsSettings::default()
    });
    ask(&defaults, Some(&client(None, None)))
        .await
        .expect("self-signed TLS");
    ask(&defaults, None).await.expect("plaintext");
    // A client that verifies against the test CA does not trust the self-signed one.
    assert!(ask(&defaults, Some(&verified)).await.is_err());
    defaults.stop().await;
}

#[actix::test]
async fn client_certificates_are_required_and_verified() {
    let pki = Pki::new(&test_dir("tls-mtls"));
    let cert = pki.issue("server", 10);
    let good = pki.issue("client", 20);
    let stranger = pki.stranger("stranger");
    let mtls = |need: ClientAuth, verify: bool| TlsSettings {
        need_client_auth: need,
        auth_client: verify,
        trust_cert_path: Some(pki.ca_path.clone()),
        ..serving(TlsMode::Enforcing, &cert)
    };

    let server = start(mtls(ClientAuth::Require, true));
    ask(&server, Some(&client(Some(&pki.ca_path), Some(&good))))
        .await
        .expect("a trusted client certificate");
    assert!(
        ask(&server, Some(&client(Some(&pki.ca_path), None)))
            .await
            .is_err(),
        "no client certificate"
    );
    assert!(
        ask(&server, Some(&client(Some(&pki.ca_path), Some(&stranger))))
            .await
            .is_err(),
        "an untrusted client certificate"
    );
    // Everyone else is still served.
    ask(&server, Some(&client(Some(&pki.ca_path), Some(&good))))
        .await
        .expect("still served");
    server.stop().await;

    let optional = start(mtls(ClientAuth::Optional, true));
    ask(&optional, Some(&client(Some(&pki.ca_path), None)))
        .await
        .expect("optional: none is fine");
    assert!(
        ask(
            &optional,
            Some(&client(Some(&pki.ca_path), Some(&stranger)))
        )
        .await
        .is_err(),
        "optional: a bad one is not"
    );
    optional.stop().await;

    // Java's require + authClient=false: a certificate must be shown, any will do.
    let unverified = start(mtls(ClientAuth::Require, false));
    ask(
        &unverified,
        Some(&client(Some(&pki.ca_path), Some(&stranger))),
    )
    .await
    .expect("any certificate");
    assert!(ask(&unverified, Some(&client(Some(&pki.ca_path), None)))
        .await
        .is_err());
    unverified.stop().await;
}

/// Reads until the server closes the connection, at most `limit`; `None` if it stays open.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(limit, read).await.ok().map(|()| got)
}

#[actix::test]
async fn silent_and_garbage_handshakes_close_only_their_connection() {
    let pki = Pki::new(&test_dir("tls-timeout"));
    let cert = pki.issue("server", 10);
    let server = start(serving(TlsMode::Permissive, &cert));
    let verified = client(Some(&pki.ca_path), None);
    let mut healthy = ask(&server, Some(&verified)).await.expect("served");

    // Connected, nothing sent: still open past the handshake timeout (500 ms), as a broker
    // that speaks later needs; closed at the idle timeout (1.5 s on a server of its own).
    let mut config = test_config();
    config.tls = serving(TlsMode::Permissive, &cert);
    config.server.idle_timeout = Duration::from_millis(1500);
    let short_idle = start_server(config);
    let mut silent = TcpStream::connect(short_idle.local_addr()).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_millis(1000))
        .await
        .is_none());
    assert!(closed_within(&mut silent, Duration::from_secs(5))
        .await
        .is_some());
    short_idle.stop().await;

    // A handshake that stops half-way: closed too.
    let mut stalled = TcpStream::connect(server.local_addr()).await.unwrap();
    stalled
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .await
        .unwrap();
    assert!(closed_within(&mut stalled, Duration::from_secs(5))
        .await
        .is_some());

    // Garbage after the TLS byte: an alert at most, then closed.
    let mut garbage = TcpStream::connect(server.local_addr()).await.unwrap();
    let mut bytes = vec![0x16, 0x03, 0x01, 0x00, 0x40];
    bytes.extend_from_slice(&[0xAB; 64]);
    garbage.write_all(&bytes).await.unwrap();
    let reply = closed_within(&mut garbage, Duration::from_secs(5))
        .await
        .expect("closed");
    assert!(reply.len() < 64, "at most an alert: {reply:?}");

    // The healthy TLS connection was never disturbed.
    let resp = healthy
        .request(
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T"),
        )
        .await
        .expect("still served");
    assert_eq!(resp.code, 17);
    server.stop().await;
}

#[actix::test]
async fn certificates_reload_for_new_connections_only_and_never_half_written() {
    let pki = Pki::new(&test_dir("tls-reload"));
    let first = pki.issue("server", 101);
    let server = start(serving(TlsMode::Enforcing, &first));
    let verified = client(Some(&pki.ca_path), None);
    assert_eq!(served_serial(&server, &verified).await, 101);
    let mut old = ask(&server, Some(&verified)).await.expect("served");

    // Replace certificate and key by renaming new files over them.
    let second = pki.issue("next", 102);
    replace_file(&first.cert_path, &second.cert_pem);
    replace_file(&first.key_path, &second.key_pem);
    let seen = eventually(Duration::from_secs(5), || async {
        served_serial(&server, &verified).await == 102
    })
    .await;
    assert!(
        seen,
        "a new connection gets the new certificate within seconds"
    );
    let resp = old
        .request(
            RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T"),
        )
        .await
        .expect("an old connection keeps working");
    assert_eq!(resp.code, 17);

    // Half a pair: the certificate changes, the key does not. The old pair stays.
    let third = pki.issue("third", 103);
    replace_file(&first.cert_path, &third.cert_pem);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(served_serial(&server, &verified).await, 102);
    assert!(
        server.reload_tls().await.is_err(),
        "a mismatched pair is refused"
    );
    // A broken key file: still the old pair.
    replace_file(
        &first.key_path,
        "-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n",
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(served_serial(&server, &verified).await, 102);
    // The key arrives: the pair is complete and taken.
    replace_file(&first.key_path, &third.key_pem);
    let seen = eventually(Duration::from_secs(5), || async {
        served_serial(&server, &verified).await == 103
    })
    .await;
    assert!(seen, "the completed pair is taken");
    server.stop().await;
}

#[actix::test]
async fn encrypted_pkcs8_keys_need_their_password() {
    use pkcs8::der::Decode;
    let pki = Pki::new(&test_dir("tls-encrypted"));
    let cert = pki.issue("server", 10);
    // Encrypt the key as `openssl pkcs8 -topk8 -v2 aes-256-cbc` does (PBES2, PBKDF2-SHA256).
    let (_, der) = pkcs8::der::pem::decode_vec(cert.key_pem.as_bytes()).expect("PEM key");
    let info = pkcs8::PrivateKeyInfo::from_der(&der).expect("PKCS#8");
    let params = pkcs8::pkcs5::pbes2::Parameters::pbkdf2_sha256_aes256cbc(2048, &[7; 16], &[9; 16])
        .expect("PBES2 parameters");
    let encrypted = info
        .encrypt_with_params(params, b"s3cret")
        .expect("encrypted");
    let pem = encrypted
        .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
        .expect("PEM");
    let key_path = pki.dir.join("server-encrypted.key");
    std::fs::write(&key_path, pem.as_bytes()).unwrap();

    let mut tls = serving(TlsMode::Enforcing, &cert);
    tls.key_path = Some(key_path);
    tls.key_password = Some(Secret::new("s3cret"));
    let server = start(tls.clone());
    ask(&server, Some(&client(Some(&pki.ca_path), None)))
        .await
        .expect("served with the decrypted key");
    server.stop().await;

    // A wrong password stops start-up with an error naming the file.
    tls.key_password = Some(Secret::new("wrong"));
    let mut config = test_config();
    config.tls = tls;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let err = rmq_namesrv::NameServer::new(config)
        .start(listener)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("server-encrypted.key"), "{err}");
}
