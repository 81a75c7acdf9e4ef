//! What a RocketMQ signature does not cover, and the settings that keep signed requests off the
//! wire. The signature is HmacSHA1 over the ext field *values* (sorted by key) and the body: not
//! the request code, not the keys. So a signed request seen on the wire can be sent again as
//! another code, or with the boundary between two fields moved (docs/access.md). Java's clients
//! sign that way, so the format stays; `access.signed_needs_tls` and
//! `access.admin_write_needs_client_cert` make sure nobody sees one.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmq_namesrv::config::{ClientAuth, ClientTlsSettings, TlsMode};
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::transport::client::client_config;
use rustls::ClientConfig;

use crate::support::pki::{serving, Issued, Pki};
use crate::support::*;

use super::{add_write_perm, secure_config, signed};

const NO_PERMISSION: i32 = 16;

/// The signed ADD_WRITE_PERM, resent unchanged as WIPE_WRITE_PERM.
fn as_wipe(mut cmd: RemotingCommand) -> RemotingCommand {
    cmd.code = RequestCode::WIPE_WRITE_PERM_OF_BROKER.0;
    cmd
}

/// A signed PUT_KV of `adv2ns`/`K`/`V`, with the field boundaries moved: `ns`/`Kadv2`/`V`.
fn moved_boundary() -> RemotingCommand {
    let original = signed(put_kv("adv2ns", "K", "V"), "adminKey", "adminSecret");
    let signature = original.ext("Signature").expect("signed").to_owned();
    put_kv("ns", "Kadv2", "V")
        .with_ext("AccessKey", "adminKey")
        .with_ext("Signature", &signature)
}

fn tls_client(ca: &Path, cert: Option<&Issued>) -> Arc<ClientConfig> {
    client_config(&ClientTlsSettings {
        enable: true,
        cert_path: cert.map(|c| c.cert_path.clone()),
        key_path: cert.map(|c| c.key_path.clone()),
        key_password: None,
        auth_server: true,
        trust_cert_path: Some(ca.to_owned()),
    })
    .expect("client config")
}

async fn ask(
    server: &rmq_namesrv::NameServerHandle,
    tls: Option<&Arc<ClientConfig>>,
    cmd: RemotingCommand,
) -> RemotingCommand {
    let addr = server.local_addr().to_string();
    let mut client = Client::connect_with(&addr, Duration::from_secs(3), tls)
        .await
        .expect("connected");
    client.request(cmd).await.expect("an answer")
}

#[actix::test]
async fn signed_requests_seen_on_the_wire_are_refused_off_tls() {
    let dir = test_dir("signatures");
    // Java's format, plaintext: the replay works, as with every RocketMQ component (documented).
    let server = start_server(secure_config(&dir));
    assert_eq!(
        ask(&server, None, add_write_perm("adminSecret")).await.code,
        0
    );
    assert_eq!(
        ask(&server, None, as_wipe(add_write_perm("adminSecret")))
            .await
            .code,
        0
    );
    assert_eq!(ask(&server, None, moved_boundary()).await.code, 0);
    server.stop().await;

    // signed_needs_tls: nothing signed travels in the clear, so nothing can be seen to replay.
    let pki = Pki::new(&dir.join("pki"));
    let cert = pki.issue("server", 10);
    let mut config = secure_config(&dir);
    config.tls = serving(TlsMode::Permissive, &cert);
    config.access.signed_needs_tls = true;
    let server = start_server(config);
    for replay in [
        add_write_perm("adminSecret"),
        as_wipe(add_write_perm("adminSecret")),
        moved_boundary(),
    ] {
        let answer = ask(&server, None, replay).await;
        assert_eq!(answer.code, NO_PERMISSION);
        assert!(
            answer
                .remark
                .as_deref()
                .is_some_and(|r| r.contains("over TLS only")),
            "{:?}",
            answer.remark
        );
    }
    let tls = tls_client(&pki.ca_path, None);
    assert_eq!(
        ask(&server, Some(&tls), add_write_perm("adminSecret"))
            .await
            .code,
        0
    );
    // Open classes are not affected.
    assert_eq!(ask(&server, None, route_request("T")).await.code, 17);
    server.stop().await;
}

#[actix::test]
async fn admin_writes_can_require_a_client_certificate() {
    let dir = test_dir("signatures-mtls");
    let pki = Pki::new(&dir.join("pki"));
    let cert = pki.issue("server", 10);
    let admin = pki.issue("admin", 20);
    let stranger = pki.stranger("stranger");
    let mut config = secure_config(&dir);
    config.tls = serving(TlsMode::Enforcing, &cert);
    config.tls.need_client_auth = ClientAuth::Optional;
    config.tls.auth_client = true;
    config.tls.trust_cert_path = Some(pki.ca_path.clone());
    config.access.signed_needs_tls = true;
    config.access.admin_write_needs_client_cert = true;
    let server = start_server(config);
    let without = tls_client(&pki.ca_path, None);
    let answer = ask(&server, Some(&without), add_write_perm("adminSecret")).await;
    assert_eq!(answer.code, NO_PERMISSION);
    assert!(answer
        .remark
        .as_deref()
        .is_some_and(|r| r.contains("client certificate")));
    // Reads and signed admin reads need no certificate.
    assert_eq!(
        ask(&server, Some(&without), route_request("T")).await.code,
        17
    );
    let with = tls_client(&pki.ca_path, Some(&admin));
    assert_eq!(
        ask(&server, Some(&with), add_write_perm("adminSecret"))
            .await
            .code,
        0
    );
    // A certificate the CA did not issue fails the handshake.
    let strange = tls_client(&pki.ca_path, Some(&stranger));
    let addr = server.local_addr().to_string();
    let refused = async {
        let mut client =
            Client::connect_with(&addr, Duration::from_secs(3), Some(&strange)).await?;
        client.request(add_write_perm("adminSecret")).await
    };
    assert!(refused.await.is_err());
    server.stop().await;

    // Without verified client certificates the setting is a configuration error naming it.
    let mut config = secure_config(&dir);
    config.tls = serving(TlsMode::Enforcing, &cert);
    config.access.admin_write_needs_client_cert = true;
    let err = config.validate().unwrap_err().to_string();
    assert!(
        err.contains("access.admin_write_needs_client_cert"),
        "{err}"
    );
    let mut config = secure_config(&dir);
    config.access.signed_needs_tls = true;
    config.tls.mode = TlsMode::Disabled;
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("access.signed_needs_tls"), "{err}");
}
