//! Certificates and private keys from PEM files, in the forms Java users have: a certificate
//! chain; a PKCS#8 key, plain or encrypted with a password (PBES2: PBKDF2 with AES-CBC, what
//! `openssl pkcs8 -topk8 -v2 aes-256-cbc` and Java write), a PKCS#1 RSA key or a SEC1 EC key.
//! Not supported, each with an error saying so: OpenSSL's traditional encrypted PEM
//! (`Proc-Type: 4,ENCRYPTED`), PBES1 and other legacy encryption schemes, PKCS#12 and JKS stores.

use std::path::{Path, PathBuf};

use pkcs8::der::Decode;
use pkcs8::EncryptedPrivateKeyInfo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::settings::Secret;

/// Largest PEM file read: certificates and keys are a few KiB; a bundle of CAs some 100 KiB.
const MAX_PEM_BYTES: u64 = 4 * 1024 * 1024;

/// A certificate or key file that cannot be used; the message names the file.
#[derive(Debug, thiserror::Error)]
pub enum PemError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is larger than {MAX_PEM_BYTES} bytes; not a PEM certificate or key")]
    TooLarge { path: PathBuf },
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

fn invalid(path: &Path, reason: impl Into<String>) -> PemError {
    PemError::Invalid {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Reads a whole file, bounded.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, PemError> {
    let read = |source| PemError::Read {
        path: path.to_owned(),
        source,
    };
    let len = std::fs::metadata(path).map_err(read)?.len();
    if len > MAX_PEM_BYTES {
        return Err(PemError::TooLarge {
            path: path.to_owned(),
        });
    }
    std::fs::read(path).map_err(read)
}

/// The certificates of a PEM file, in order (a chain: the end-entity certificate first).
pub fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let bytes = read_bounded(path)?;
    certificates_from(path, &bytes)
}

fn certificates_from(path: &Path, bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, PemError> {
    let certs = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| invalid(path, format!("bad PEM: {e}")))?;
    if certs.is_empty() {
        return Err(invalid(path, "no CERTIFICATE in the file"));
    }
    Ok(certs)
}

/// The private key of a PEM file; `password` decrypts an encrypted PKCS#8 key (and is ignored
/// for a plain one).
pub fn private_key(
    path: &Path,
    password: Option<&Secret>,
) -> Result<PrivateKeyDer<'static>, PemError> {
    let bytes = read_bounded(path)?;
    private_key_from(path, &bytes, password)
}

fn private_key_from(
    path: &Path,
    bytes: &[u8],
    password: Option<&Secret>,
) -> Result<PrivateKeyDer<'static>, PemError> {
    let text = String::from_utf8_lossy(bytes);
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(invalid(
            path,
            "a traditional OpenSSL encrypted key is not supported; convert it to encrypted \
             PKCS#8: openssl pkcs8 -topk8 -v2 aes-256-cbc -in KEY -out KEY.p8",
        ));
    }
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        let Some(password) = password else {
            return Err(invalid(
                path,
                "the key is encrypted: give its password (tls.key_password, Java \
                 tls.server.keyPassword / tls.client.keyPassword)",
            ));
        };
        return decrypt_pkcs8(path, &text, password);
    }
    PrivateKeyDer::from_pem_slice(bytes).map_err(|e| {
        invalid(
            path,
            format!("no usable private key (PKCS#8, PKCS#1 RSA or SEC1 EC PEM): {e}"),
        )
    })
}

fn decrypt_pkcs8(
    path: &Path,
    text: &str,
    password: &Secret,
) -> Result<PrivateKeyDer<'static>, PemError> {
    const BEGIN: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";
    const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
    let section = text
        .find(BEGIN)
        .and_then(|start| {
            let end = text[start..].find(END)?;
            Some(&text[start..start + end + END.len()])
        })
        .ok_or_else(|| invalid(path, "unterminated ENCRYPTED PRIVATE KEY"))?;
    let (label, der) = pkcs8::der::pem::decode_vec(section.as_bytes())
        .map_err(|e| invalid(path, format!("bad PEM: {e}")))?;
    if label != "ENCRYPTED PRIVATE KEY" {
        return Err(invalid(path, format!("unexpected PEM label {label}")));
    }
    let info = EncryptedPrivateKeyInfo::from_der(&der).map_err(|e| {
        invalid(
            path,
            format!(
                "the key's encryption scheme is not supported ({e}): only PBES2 (PBKDF2 with \
                 AES-CBC) is. Keys encrypted with PBES1 schemes (`openssl pkcs8 -topk8 -v1 \
                 PBE-SHA1-RC4-128` or `PBE-SHA1-3DES`, what Java 4.9 and Java's TLS guide use) \
                 must be converted: openssl pkcs8 -topk8 -v2 aes-256-cbc -in KEY -out KEY.p8"
            ),
        )
    })?;
    let document = info.decrypt(password.expose().as_bytes()).map_err(|e| {
        invalid(
            path,
            format!(
                "cannot decrypt the key (wrong password, or an encryption scheme other than \
                 PBES2 with PBKDF2 and AES-CBC): {e}"
            ),
        )
    })?;
    Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        document.as_bytes().to_vec(),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_pem() -> (rcgen::KeyPair, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let pem = key.serialize_pem();
        (key, pem)
    }

    #[test]
    fn plain_keys_and_certificates_load() {
        let (key, pem) = key_pem();
        let loaded = private_key_from(Path::new("k.pem"), pem.as_bytes(), None).unwrap();
        assert_eq!(loaded.secret_der(), key.serialize_der().as_slice());
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let chain = format!("{}{}", cert.pem(), cert.pem());
        let certs = certificates_from(Path::new("c.pem"), chain.as_bytes()).unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0].as_ref(), cert.der().as_ref());
    }

    #[test]
    fn bad_files_name_themselves() {
        let err = certificates_from(Path::new("empty.pem"), b"").unwrap_err();
        assert!(err.to_string().contains("empty.pem"), "{err}");
        let err = private_key_from(Path::new("junk.pem"), b"junk", None).unwrap_err();
        assert!(err.to_string().contains("junk.pem"), "{err}");
        let legacy = b"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
        let err = private_key_from(Path::new("old.pem"), legacy, None).unwrap_err();
        assert!(err.to_string().contains("not supported"), "{err}");
        let encrypted =
            b"-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n";
        let err = private_key_from(Path::new("enc.pem"), encrypted, None).unwrap_err();
        assert!(err.to_string().contains("password"), "{err}");
        let err = private_key_from(Path::new("enc.pem"), encrypted, Some(&Secret::new("pw")))
            .unwrap_err();
        assert!(err.to_string().contains("enc.pem"), "{err}");
    }
}
