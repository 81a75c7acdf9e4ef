//! The client side of TLS, as Java's client builds it (`TlsHelper.buildSslContext(true)`): the
//! server's certificate accepted as it is unless `auth_server` asks for its chain to be verified
//! against a trust bundle; like Java's, the name in the certificate is not checked. A client
//! certificate is offered when one is configured. [`connect`] opens a plaintext or TLS stream.

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

use crate::pem;
use crate::server::{provider, root_store, TlsError};
use crate::settings::ClientTlsSettings;

/// The client configuration `settings` describe (whether `enable` is set or not).
pub fn client_config(settings: &ClientTlsSettings) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    let verifier: Arc<dyn ServerCertVerifier> =
        match (&settings.trust_cert_path, settings.auth_server) {
            (Some(trust), true) => {
                let roots = Arc::new(root_store(trust)?);
                let inner =
                    WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                        .build()
                        .map_err(|e| TlsError::Rejected {
                            what: trust.display().to_string(),
                            reason: format!("cannot verify servers with it: {e}"),
                        })?;
                Arc::new(ChainOnly { inner })
            }
            _ => Arc::new(AnyServerCertificate {
                algorithms: provider.signature_verification_algorithms,
            }),
        };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rejected {
            what: "TLS protocol versions".to_owned(),
            reason: e.to_string(),
        })?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&settings.cert_path, &settings.key_path) {
        (Some(cert_path), Some(key_path)) => {
            let chain = pem::certificates(cert_path)?;
            let key = pem::private_key(key_path, settings.key_password.as_ref())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| TlsError::Rejected {
                    what: cert_path.display().to_string(),
                    reason: format!("client certificate and key do not fit: {e}"),
                })?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// A connection to a server: plaintext or TLS.
#[derive(Debug)]
pub enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl ClientStream {
    /// The TCP socket under it.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            Self::Tls(tls) => tls.get_ref().0,
        }
    }

    /// The certificate chain the server presented (TLS only).
    pub fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        match self {
            Self::Plain(_) => None,
            Self::Tls(tls) => tls.get_ref().1.peer_certificates(),
        }
    }
}

/// Connects to `addr` (`host:port`), then, with `tls`, performs the TLS handshake. The caller
/// bounds the time.
pub async fn connect(addr: &str, tls: Option<&Arc<ClientConfig>>) -> io::Result<ClientStream> {
    let tcp = TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    let Some(config) = tls else {
        return Ok(ClientStream::Plain(tcp));
    };
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = match host.parse::<IpAddr>() {
        Ok(ip) => ServerName::IpAddress(ip.into()),
        Err(_) => ServerName::try_from(host.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?,
    };
    let stream = TlsConnector::from(Arc::clone(config))
        .connect(name, tcp)
        .await?;
    Ok(ClientStream::Tls(Box::new(stream)))
}

impl AsyncRead for ClientStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ClientStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

/// Java's default client trust: any server certificate, with the handshake signature checked.
#[derive(Debug)]
struct AnyServerCertificate {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AnyServerCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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

/// Java's `tls.client.authServer=true`: the chain must lead to a trusted CA; the name is not
/// checked (Java's client does not check it either).
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
