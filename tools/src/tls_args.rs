//! The TLS options every tool takes (`--tls`, `--tls-ca`, `--tls-cert`, `--tls-key`,
//! `--tls-key-password`), turned into a client configuration with Java's client semantics: with
//! `--tls` alone any server certificate is accepted (Java's default); `--tls-ca` verifies the
//! chain (not the name, as Java's client does not); `--tls-cert`/`--tls-key` offer a client
//! certificate to a server that asks for one.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use rmq_transport::client::client_config;
use rmq_transport::{ClientTlsSettings, Secret};
use rustls::ClientConfig;

/// TLS to the NameServer.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Connect with TLS.
    #[arg(long, global = true)]
    pub tls: bool,
    /// PEM bundle of the CAs the server's certificate must chain to (implies --tls).
    #[arg(long, value_name = "PATH", global = true)]
    pub tls_ca: Option<PathBuf>,
    /// A client certificate chain, PEM, for servers that ask for one (implies --tls).
    #[arg(long, value_name = "PATH", requires = "tls_key", global = true)]
    pub tls_cert: Option<PathBuf>,
    /// The client certificate's private key, PEM.
    #[arg(long, value_name = "PATH", requires = "tls_cert", global = true)]
    pub tls_key: Option<PathBuf>,
    /// The password of an encrypted (PKCS#8) client key.
    #[arg(
        long,
        value_name = "PASSWORD",
        env = "RMQ_TLS_KEY_PASSWORD",
        hide_env_values = true,
        global = true
    )]
    pub tls_key_password: Option<String>,
}

impl TlsArgs {
    /// Whether any TLS option was given.
    pub fn enabled(&self) -> bool {
        self.tls || self.tls_ca.is_some() || self.tls_cert.is_some()
    }

    /// The settings these options describe.
    pub fn settings(&self) -> ClientTlsSettings {
        ClientTlsSettings {
            enable: self.enabled(),
            cert_path: self.tls_cert.clone(),
            key_path: self.tls_key.clone(),
            key_password: self.tls_key_password.clone().map(Secret::new),
            auth_server: self.tls_ca.is_some(),
            trust_cert_path: self.tls_ca.clone(),
        }
    }

    /// The client configuration, `None` without TLS; an unusable file is an error naming it.
    pub fn client_config(&self) -> Result<Option<Arc<ClientConfig>>, String> {
        if !self.enabled() {
            return Ok(None);
        }
        client_config(&self.settings())
            .map(Some)
            .map_err(|e| e.to_string())
    }
}
