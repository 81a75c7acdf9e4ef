//! Certificates and the ACL file mounted from Kubernetes Secrets: the kubelet never rewrites a
//! projected file, it writes a new timestamped directory, points `..data` at it by renaming a
//! symlink over it, and the visible names (`tls.crt -> ..data/tls.crt`) never change. A server
//! configured with the visible names takes each update from the file-system events alone (the
//! periodic checks are set to an hour here), for new TLS connections and for signed requests.

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rmq_namesrv::config::{ClientTlsSettings, Profile, TlsMode};
use rmq_namesrv::protocol::signature::sign_command;
use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::transport::client::client_config;
use support::pki::{serial_of, serving, Pki};
use support::*;

/// Longer than any test: only file-system events can bring a change in time.
const NO_PERIODIC_CHECK: Duration = Duration::from_secs(3600);

/// A Secret volume as the kubelet's atomic writer keeps it.
struct SecretVolume {
    dir: PathBuf,
    generation: u32,
}

impl SecretVolume {
    fn new(dir: PathBuf) -> Self {
        std::fs::create_dir_all(&dir).expect("volume dir");
        Self { dir, generation: 0 }
    }

    /// The visible path of `name`.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Publishes `files` as the kubelet does: a new `..<timestamp>` directory, a `..data_tmp`
    /// symlink to it renamed over `..data`, the visible symlinks created once, the old
    /// directory removed.
    fn project(&mut self, files: &[(&str, &str)]) {
        self.generation += 1;
        let stamped = format!(
            "..2026_12_05_00_00_{:02}.{}",
            self.generation,
            1000 + self.generation
        );
        std::fs::create_dir(self.dir.join(&stamped)).expect("timestamped dir");
        for (name, content) in files {
            std::fs::write(self.dir.join(&stamped).join(name), content).expect("projected file");
        }
        let old = std::fs::read_link(self.dir.join("..data")).ok();
        std::os::unix::fs::symlink(&stamped, self.dir.join("..data_tmp")).expect("..data_tmp");
        std::fs::rename(self.dir.join("..data_tmp"), self.dir.join("..data")).expect("swap ..data");
        for (name, _) in files {
            let visible = self.dir.join(name);
            if std::fs::symlink_metadata(&visible).is_err() {
                std::os::unix::fs::symlink(Path::new("..data").join(name), &visible)
                    .expect("visible symlink");
            }
        }
        if let Some(old) = old {
            std::fs::remove_dir_all(self.dir.join(old)).expect("remove the old generation");
        }
    }
}

#[actix::test]
async fn a_certificate_secret_updated_by_the_kubelet_is_served_to_new_connections() {
    let dir = test_dir("kubelet-tls");
    let pki = Pki::new(&dir.join("pki"));
    let (first, second) = (pki.issue("first", 201), pki.issue("second", 202));
    let mut volume = SecretVolume::new(dir.join("tls-secret"));
    volume.project(&[("tls.crt", &first.cert_pem), ("tls.key", &first.key_pem)]);

    let mut config = test_config();
    config.tls = serving(TlsMode::Enforcing, &first);
    config.tls.cert_path = Some(volume.path("tls.crt"));
    config.tls.key_path = Some(volume.path("tls.key"));
    config.tls.reload_check_interval = NO_PERIODIC_CHECK;
    let server = start_server(config);
    let tls = client_config(&ClientTlsSettings {
        enable: true,
        auth_server: true,
        trust_cert_path: Some(pki.ca_path.clone()),
        ..ClientTlsSettings::default()
    })
    .expect("client config");
    assert_eq!(served_serial(&server, &tls).await, 201);

    volume.project(&[("tls.crt", &second.cert_pem), ("tls.key", &second.key_pem)]);
    let seen = eventually(Duration::from_secs(5), || async {
        served_serial(&server, &tls).await == 202
    })
    .await;
    assert!(seen, "the kubelet's update was not taken");
    server.stop().await;
}

async fn served_serial(
    server: &rmq_namesrv::NameServerHandle,
    tls: &Arc<rustls::ClientConfig>,
) -> u64 {
    let addr = server.local_addr().to_string();
    let mut client = Client::connect_with(&addr, TIMEOUT, Some(tls))
        .await
        .expect("TLS connection served");
    let route =
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", "T");
    assert_eq!(client.request(route).await.expect("answer").code, 17);
    serial_of(&client.peer_certificates().expect("a peer certificate")[0])
}

#[actix::test]
async fn an_acl_secret_updated_by_the_kubelet_rotates_the_keys() {
    let dir = test_dir("kubelet-acl");
    let mut volume = SecretVolume::new(dir.join("acl-secret"));
    let account = |key: &str, secret: &str| {
        format!("accounts:\n  - accessKey: {key}\n    secretKey: {secret}\n    admin: true\n")
    };
    volume.project(&[("plain_acl.yml", &account("oldKey", "oldSecret"))]);

    let mut config = test_config();
    config.access.profile = Profile::Secure;
    config.access.acl_file = volume.path("plain_acl.yml");
    config.access.audit_log = dir.join("audit.log");
    config.access.reload_check_interval = NO_PERIODIC_CHECK;
    // The polling below sends the old key until the reload: not a guesser.
    config.access.max_failures = 10_000;
    let server = start_server(config);
    let put = |key: &str, secret: &str| {
        let mut cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "ns")
            .with_ext("key", "k")
            .with_ext("value", "v");
        sign_command(&mut cmd, key, secret, None).expect("signed");
        cmd
    };
    let mut conn = connect(&server).await;
    assert_eq!(
        conn.request(put("oldKey", "oldSecret"))
            .await
            .expect("answer")
            .code,
        0
    );

    volume.project(&[("plain_acl.yml", &account("newKey", "newSecret"))]);
    let rotated = eventually(TIMEOUT, || {
        let (old, new) = (put("oldKey", "oldSecret"), put("newKey", "newSecret"));
        let addr = server.local_addr().to_string();
        async move {
            let mut c = Client::connect(&addr, TIMEOUT).await.expect("connect");
            c.request(new).await.expect("answer").code == 0
                && c.request(old).await.expect("answer").code != 0
        }
    })
    .await;
    assert!(
        rotated,
        "the kubelet's update of the ACL file was not taken"
    );
    server.stop().await;
}
