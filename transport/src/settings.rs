//! The `[tls]` and `[proxy_protocol]` settings (serde, humantime durations), their defaults and
//! checks. The daemon's `Config` composes them; Java's `tls.*` names map onto these fields
//! (docs/transport.md#configuration).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A setting whose value cannot be used: `key` is its dotted name in `config.toml`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value for `{key}`: {reason}")]
pub struct InvalidSetting {
    pub key: &'static str,
    pub reason: String,
}

impl InvalidSetting {
    pub fn new(key: &'static str, reason: impl Into<String>) -> Self {
        Self {
            key,
            reason: reason.into(),
        }
    }
}

fn invalid(key: &'static str, reason: impl Into<String>) -> InvalidSetting {
    InvalidSetting::new(key, reason)
}

/// Java's `TlsMode` (`tls.server.mode`): what the server port accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    /// Plaintext only: a TLS ClientHello closes the connection.
    Disabled,
    /// TLS and plaintext on the same port, told apart by the first byte (0x16 = TLS handshake).
    #[default]
    Permissive,
    /// TLS only: a plaintext connection is closed and the refusal logged.
    Enforcing,
}

/// Java's `tls.server.need.client.auth`: whether the server asks for a client certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    #[default]
    None,
    Optional,
    Require,
}

/// A password: read from the configuration, never printed (its `Debug` is `***`; the structs
/// holding one skip it when serialized).
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// Serialized only as `***`, for the rare path that serializes a whole struct without skipping.
impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str("***")
    }
}

/// The TLS of the server port (Java: `TlsSystemConfig`, `tls.server.*`) and of the server's own
/// outbound connections (`tls.enable`, `tls.client.*`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSettings {
    /// "disabled", "permissive" or "enforcing" (Java: `tls.server.mode`, default permissive).
    pub mode: TlsMode,
    /// The server's certificate chain, PEM (Java: `tls.server.certPath`).
    pub cert_path: Option<PathBuf>,
    /// Its private key, PEM: PKCS#8 (plain or encrypted with PBES2), PKCS#1 RSA or SEC1 EC
    /// (Java: `tls.server.keyPath`).
    pub key_path: Option<PathBuf>,
    /// The password of an encrypted PKCS#8 key (Java: `tls.server.keyPassword`). Never printed.
    #[serde(skip_serializing)]
    pub key_password: Option<Secret>,
    /// Ask clients for a certificate: "none", "optional" or "require" (Java:
    /// `tls.server.need.client.auth`).
    pub need_client_auth: ClientAuth,
    /// Verify client certificates against `trust_cert_path`; when false a client certificate,
    /// if asked for, is accepted unverified (Java: `tls.server.authClient`).
    pub auth_client: bool,
    /// PEM bundle of the CAs client certificates must chain to (Java:
    /// `tls.server.trustCertPath`).
    pub trust_cert_path: Option<PathBuf>,
    /// Without a configured certificate, generate a self-signed one at start (Java:
    /// `tls.test.mode.enable`, default true). A configured certificate always wins.
    pub test_mode: bool,
    /// A Java properties file of `tls.*` keys, read at start and at every reload; its values win
    /// over the others (Java: `tls.config.file`). Skipped when it does not exist.
    pub config_file: Option<PathBuf>,
    /// How long a new connection may take to send its PROXY header and finish its TLS handshake.
    #[serde(with = "humantime_serde")]
    pub handshake_timeout: Duration,
    /// How often the certificate files are hashed, besides change events from the file system.
    #[serde(with = "humantime_serde")]
    pub reload_check_interval: Duration,
    /// The server's own connections to other NameServers (cluster-test lookups).
    pub client: ClientTlsSettings,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            mode: TlsMode::Permissive,
            cert_path: None,
            key_path: None,
            key_password: None,
            need_client_auth: ClientAuth::None,
            auth_client: false,
            trust_cert_path: None,
            test_mode: true,
            config_file: Some(PathBuf::from("/etc/rocketmq/tls.properties")),
            handshake_timeout: Duration::from_secs(10),
            reload_check_interval: Duration::from_secs(1),
            client: ClientTlsSettings::default(),
        }
    }
}

impl TlsSettings {
    /// Whether the server can answer a TLS handshake: a certificate is configured or generated.
    pub fn has_certificate(&self) -> bool {
        self.cert_path.is_some() || self.test_mode
    }

    /// Checks what the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.cert_path.is_some() != self.key_path.is_some() {
            let key = if self.cert_path.is_some() {
                "tls.key_path"
            } else {
                "tls.cert_path"
            };
            return Err(invalid(key, "tls.cert_path and tls.key_path go together"));
        }
        if self.mode == TlsMode::Enforcing && !self.has_certificate() {
            return Err(invalid(
                "tls.cert_path",
                "enforcing mode needs a certificate (or tls.test_mode)",
            ));
        }
        if self.auth_client
            && self.need_client_auth != ClientAuth::None
            && self.trust_cert_path.is_none()
        {
            return Err(invalid(
                "tls.trust_cert_path",
                "verifying client certificates (tls.auth_client) needs the CAs they chain to",
            ));
        }
        if self.handshake_timeout.is_zero() {
            return Err(invalid("tls.handshake_timeout", "must be greater than 0"));
        }
        if self.reload_check_interval < Duration::from_millis(100) {
            return Err(invalid(
                "tls.reload_check_interval",
                "must be at least 100ms",
            ));
        }
        self.client.validate()
    }

    /// The files whose change means a reload: certificate, key, trust bundle.
    pub fn watched_files(&self) -> Vec<PathBuf> {
        [&self.cert_path, &self.key_path, &self.trust_cert_path]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// TLS of outbound connections (Java: `tls.enable`, `tls.client.*`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClientTlsSettings {
    /// Connect with TLS (Java: `tls.enable`).
    pub enable: bool,
    /// A client certificate chain, PEM, for servers that ask for one (Java:
    /// `tls.client.certPath`).
    pub cert_path: Option<PathBuf>,
    /// Its key (Java: `tls.client.keyPath`).
    pub key_path: Option<PathBuf>,
    /// The password of an encrypted PKCS#8 key (Java: `tls.client.keyPassword`). Never printed.
    #[serde(skip_serializing)]
    pub key_password: Option<Secret>,
    /// Verify the server's certificate chain against `trust_cert_path`; when false any server
    /// certificate is accepted, as Java's client does by default (Java: `tls.client.authServer`).
    /// As in Java, the name in the certificate is not checked.
    pub auth_server: bool,
    /// PEM bundle of the CAs server certificates must chain to (Java:
    /// `tls.client.trustCertPath`).
    pub trust_cert_path: Option<PathBuf>,
}

impl ClientTlsSettings {
    /// Checks what the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.cert_path.is_some() != self.key_path.is_some() {
            let key = if self.cert_path.is_some() {
                "tls.client.key_path"
            } else {
                "tls.client.cert_path"
            };
            return Err(invalid(
                key,
                "tls.client.cert_path and tls.client.key_path go together",
            ));
        }
        if self.auth_server && self.trust_cert_path.is_none() {
            return Err(invalid(
                "tls.client.trust_cert_path",
                "verifying the server (tls.client.auth_server) needs the CAs it chains to",
            ));
        }
        Ok(())
    }
}

/// Whether a PROXY protocol header is expected before the first frame (or TLS handshake).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyMode {
    /// No PROXY header is read; one would be a malformed frame.
    #[default]
    Off,
    /// A header is read when present (v1 or v2, detected by its signature), from trusted
    /// networks only.
    Optional,
    /// Every connection must start with a header from a trusted network.
    Required,
}

/// The PROXY protocol (v1 text, v2 binary) of load balancers in front of the server.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProxyProtocolSettings {
    /// "off", "optional" or "required".
    pub mode: ProxyMode,
    /// Source networks (CIDR, e.g. "10.0.0.0/8", "127.0.0.1/32") allowed to send a header; a
    /// header from any other source is refused, or anyone could claim any address.
    pub trusted_networks: Vec<IpNet>,
}

impl ProxyProtocolSettings {
    /// Checks what the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.mode != ProxyMode::Off && self.trusted_networks.is_empty() {
            return Err(invalid(
                "proxy_protocol.trusted_networks",
                "a PROXY header is accepted only from trusted networks: list the load balancers'",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_never_printed() {
        let settings = TlsSettings {
            key_password: Some(Secret::new("hunter2")),
            ..TlsSettings::default()
        };
        assert!(!format!("{settings:?}").contains("hunter2"));
        assert_eq!(format!("{:?}", Secret::new("x")), "***");
    }

    #[test]
    fn checks_name_their_keys() {
        let half = TlsSettings {
            cert_path: Some("c.pem".into()),
            ..TlsSettings::default()
        };
        assert_eq!(half.validate().unwrap_err().key, "tls.key_path");
        let enforcing = TlsSettings {
            mode: TlsMode::Enforcing,
            test_mode: false,
            ..TlsSettings::default()
        };
        assert_eq!(enforcing.validate().unwrap_err().key, "tls.cert_path");
        let verify = TlsSettings {
            need_client_auth: ClientAuth::Require,
            auth_client: true,
            ..TlsSettings::default()
        };
        assert_eq!(verify.validate().unwrap_err().key, "tls.trust_cert_path");
        let proxy = ProxyProtocolSettings {
            mode: ProxyMode::Optional,
            trusted_networks: Vec::new(),
        };
        assert_eq!(
            proxy.validate().unwrap_err().key,
            "proxy_protocol.trusted_networks"
        );
        assert!(TlsSettings::default().validate().is_ok());
        assert!(ProxyProtocolSettings::default().validate().is_ok());
    }
}
