//! Certificates for TLS tests, generated into a test's own directory: a CA, certificates it
//! signs (for 127.0.0.1 and localhost, with chosen serial numbers) and a stranger's self-signed
//! ones. Nothing is committed; every run makes its own.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SerialNumber};
use rmq_namesrv::config::{TlsMode, TlsSettings};

/// A test CA and the directory its files go to.
pub struct Pki {
    pub dir: PathBuf,
    ca_params: CertificateParams,
    ca_key: KeyPair,
    pub ca_path: PathBuf,
}

/// A certificate and key on disk.
#[derive(Debug, Clone)]
pub struct Issued {
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    pub cert_pem: String,
    pub key_pem: String,
}

fn params(name: &str, serial: u64) -> CertificateParams {
    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("valid names");
    params.distinguished_name.push(DnType::CommonName, name);
    params.serial_number = Some(SerialNumber::from(serial));
    params
}

impl Pki {
    pub fn new(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("pki dir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = params("rmq-test-ca", 1);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("CA cert");
        let ca_path = dir.join("ca.pem");
        std::fs::write(&ca_path, ca.pem()).expect("write CA");
        Self {
            dir: dir.to_owned(),
            ca_params,
            ca_key,
            ca_path,
        }
    }

    /// A certificate signed by the CA, written as `<name>.pem` / `<name>.key`.
    pub fn issue(&self, name: &str, serial: u64) -> Issued {
        let key = KeyPair::generate().expect("key");
        let issuer = Issuer::from_params(&self.ca_params, &self.ca_key);
        let cert = params(name, serial)
            .signed_by(&key, &issuer)
            .expect("signed cert");
        self.write(name, cert.pem(), key.serialize_pem())
    }

    /// A self-signed certificate no CA of the test vouches for.
    pub fn stranger(&self, name: &str) -> Issued {
        let key = KeyPair::generate().expect("key");
        let cert = params(name, 666).self_signed(&key).expect("self-signed");
        self.write(name, cert.pem(), key.serialize_pem())
    }

    fn write(&self, name: &str, cert_pem: String, key_pem: String) -> Issued {
        let cert_path = self.dir.join(format!("{name}.pem"));
        let key_path = self.dir.join(format!("{name}.key"));
        std::fs::write(&cert_path, &cert_pem).expect("write cert");
        std::fs::write(&key_path, &key_pem).expect("write key");
        Issued {
            cert_path,
            key_path,
            cert_pem,
            key_pem,
        }
    }
}

/// Replaces `path` with `content` the way deployment tools do: a new file renamed over it.
pub fn replace_file(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp-new");
    std::fs::write(&tmp, content).expect("write new file");
    std::fs::rename(&tmp, path).expect("rename over");
}

/// The serial number of a DER certificate, as an integer.
pub fn serial_of(der: &[u8]) -> u64 {
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("a certificate");
    cert.tbs_certificate
        .serial
        .to_u64_digits()
        .first()
        .copied()
        .unwrap_or(0)
}

/// TLS settings serving `cert` in `mode`, no test mode, quick timeouts and reload checks.
pub fn serving(mode: TlsMode, cert: &Issued) -> TlsSettings {
    TlsSettings {
        mode,
        cert_path: Some(cert.cert_path.clone()),
        key_path: Some(cert.key_path.clone()),
        test_mode: false,
        config_file: None,
        handshake_timeout: Duration::from_millis(500),
        reload_check_interval: Duration::from_millis(200),
        ..TlsSettings::default()
    }
}
