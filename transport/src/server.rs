//! The server side of TLS: a rustls `ServerConfig` built from [`TlsSettings`] the way Java's
//! `TlsHelper.buildSslContext(false)` builds its `SslContext`: the configured certificate and key,
//! or without them a self-signed certificate (test mode); client certificates not asked for,
//! optional or required; a client certificate verified against the trust bundle when
//! `auth_client`, otherwise accepted as it is (Java's `InsecureTrustManagerFactory`: the client
//! must still prove it holds the certificate's key).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};

use crate::pem::{self, PemError};
use crate::settings::{ClientAuth, TlsSettings};

/// Why no TLS configuration could be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error(transparent)]
    Pem(#[from] PemError),
    /// The key is not the certificate's (a pair replaced half-way counts as this).
    #[error("{what}: {reason}")]
    Rejected { what: String, reason: String },
    #[error("cannot generate the test-mode certificate: {0}")]
    SelfSigned(String),
}

/// The crypto provider of every TLS configuration here: ring.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A built server configuration and what it serves, for logs.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub config: Arc<ServerConfig>,
    /// The end-entity certificate served.
    pub certificate: CertificateDer<'static>,
    /// Where it came from: the certificate file, or "self-signed (test mode)".
    pub source: String,
}

/// Builds the server configuration `settings` describe, or `None` when there is no certificate
/// to serve (no certificate configured and test mode off).
pub fn server_config(settings: &TlsSettings) -> Result<Option<ServerTls>, TlsError> {
    let (chain, key, source) = match (&settings.cert_path, &settings.key_path) {
        (Some(cert_path), Some(key_path)) => {
            let chain = pem::certificates(cert_path)?;
            let key = pem::private_key(key_path, settings.key_password.as_ref())?;
            (chain, key, cert_path.display().to_string())
        }
        _ if settings.test_mode => {
            let (chain, key) = self_signed()?;
            (chain, key, "self-signed (test mode)".to_owned())
        }
        _ => return Ok(None),
    };
    let provider = provider();
    let verifier = client_verifier(settings, &provider)?;
    let certificate = chain[0].clone();
    let config = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| rejected("TLS protocol versions", e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| rejected(&source, format!("certificate and key do not fit: {e}")))?;
    Ok(Some(ServerTls {
        config: Arc::new(config),
        certificate,
        source,
    }))
}

fn rejected(what: &str, reason: impl std::fmt::Display) -> TlsError {
    TlsError::Rejected {
        what: what.to_owned(),
        reason: reason.to_string(),
    }
}

/// A self-signed certificate for localhost and 127.0.0.1, and its key (Java's test mode).
pub fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .map_err(|e| TlsError::SelfSigned(e.to_string()))?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        generated.signing_key.serialize_der(),
    ));
    Ok((vec![generated.cert.der().clone()], key))
}

/// The CAs of a PEM bundle.
pub fn root_store(path: &std::path::Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in pem::certificates(path)? {
        roots
            .add(cert)
            .map_err(|e| rejected(&path.display().to_string(), format!("not a usable CA: {e}")))?;
    }
    Ok(roots)
}

fn client_verifier(
    settings: &TlsSettings,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let mandatory = match settings.need_client_auth {
        ClientAuth::None => {
            return Ok(WebPkiClientVerifier::no_client_auth());
        }
        ClientAuth::Optional => false,
        ClientAuth::Require => true,
    };
    match (&settings.trust_cert_path, settings.auth_client) {
        (Some(trust), true) => {
            let roots = Arc::new(root_store(trust)?);
            let builder = WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(provider));
            let builder = if mandatory {
                builder
            } else {
                builder.allow_unauthenticated()
            };
            builder.build().map_err(|e| {
                rejected(
                    &trust.display().to_string(),
                    format!("cannot verify clients with it: {e}"),
                )
            })
        }
        _ => Ok(Arc::new(AnyClientCertificate {
            mandatory,
            algorithms: provider.signature_verification_algorithms,
        })),
    }
}

/// Java's `InsecureTrustManagerFactory` on the server: any client certificate is accepted, but
/// the client must sign the handshake with its key.
#[derive(Debug)]
struct AnyClientCertificate {
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCertificate {
    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
