//! The `[etcd]` section: how this server reaches etcd — TLS (a CA, a client certificate for
//! etcd's `--client-cert-auth`) and a user and password (etcd's `auth enable`) — shared by every
//! user of etcd in the server, the controller's store (`controller.etcd_endpoints`) and the KV
//! store's etcd backend (`kv.etcd_endpoints`): one etcd cluster per fleet, one identity for the
//! server, the endpoints and prefixes staying with each user.
//!
//! The files are read once, at start ([`EtcdAccess::load`]); a missing or unusable one stops the
//! start naming its key. So does what only etcd can tell, checked with one request before
//! anything starts ([`check_with_etcd`]): a CA that did not sign etcd's certificate, a client
//! certificate etcd refuses, a wrong password, a user without access to the prefix. An etcd that
//! is merely down is not an error there: the stores start without it and catch up.
//!
//! The password is never shown: not serialized (`--print-config`), `***` in `Debug` (here and in
//! the client's [`Security`]), never in a log line or an error.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmq_transport::pem::{certificates, private_key, read_bounded};
use rmq_transport::Secret;
use serde::{Deserialize, Serialize};

use crate::etcd_api::{self, GetOptions, Security};
use crate::etcd_call::within;
use crate::settings::InvalidSetting;

/// The `[etcd]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct EtcdAccess {
    /// PEM file of the CA(s) that signed etcd's server certificate (etcd's
    /// `--trusted-ca-file`). Set: TLS to every etcd endpoint (a bare `host:port` means
    /// `https://`); required by `https://` endpoints.
    pub ca_file: Option<PathBuf>,
    /// PEM file of this server's client certificate (chain), for etcd's `--client-cert-auth`.
    pub cert_file: Option<PathBuf>,
    /// PEM file of its private key (PKCS#8, PKCS#1 RSA or SEC1 EC; not encrypted).
    pub key_file: Option<PathBuf>,
    /// etcd user (etcd's `auth enable`); empty: no authentication.
    pub user: String,
    /// Its password. Better kept out of the file: `NAMESRV__ETCD__PASSWORD` in the environment,
    /// or `password_file`. Never printed.
    #[serde(skip_serializing)]
    pub password: Option<Secret>,
    /// A file holding the password (its first line; a trailing newline is not part of it), e.g.
    /// a mounted Kubernetes secret.
    pub password_file: Option<PathBuf>,
}

/// The largest password file read.
const MAX_PASSWORD_FILE: u64 = 64 * 1024;

fn invalid(key: &'static str, reason: impl Into<String>) -> InvalidSetting {
    InvalidSetting::new(key, reason)
}

impl EtcdAccess {
    /// Whether TLS is configured.
    pub fn tls(&self) -> bool {
        self.ca_file.is_some()
    }

    /// Checks what can be checked without reading a file.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.cert_file.is_some() != self.key_file.is_some() {
            let key = if self.cert_file.is_some() {
                "etcd.key_file"
            } else {
                "etcd.cert_file"
            };
            return Err(invalid(
                key,
                "a client certificate needs both etcd.cert_file and etcd.key_file",
            ));
        }
        if self.cert_file.is_some() && self.ca_file.is_none() {
            return Err(invalid(
                "etcd.ca_file",
                "a client certificate (etcd.cert_file) is only sent over TLS: set the CA that \
                 signed etcd's certificate",
            ));
        }
        if self.password.is_some() && self.password_file.is_some() {
            return Err(invalid(
                "etcd.password_file",
                "give the password once: etcd.password (or NAMESRV__ETCD__PASSWORD) or \
                 etcd.password_file",
            ));
        }
        let has_password = self.password.is_some() || self.password_file.is_some();
        if self.user.trim().is_empty() && has_password {
            return Err(invalid("etcd.user", "a password is set but no user"));
        }
        if !self.user.trim().is_empty() && !has_password {
            return Err(invalid(
                "etcd.password",
                format!(
                    "etcd.user is {:?} but no password is given (etcd.password, \
                     NAMESRV__ETCD__PASSWORD or etcd.password_file)",
                    self.user
                ),
            ));
        }
        Ok(())
    }

    /// Checks the endpoints of `key` against the TLS setting: `https://` needs the CA, an
    /// explicit `http://` contradicts it.
    pub fn check_endpoints(
        &self,
        key: &'static str,
        endpoints: &[String],
    ) -> Result<(), InvalidSetting> {
        for endpoint in endpoints {
            if endpoint.starts_with("https://") && !self.tls() {
                return Err(invalid(
                    key,
                    format!(
                        "{endpoint}: TLS (https://) needs the CA that signed etcd's certificate \
                         (etcd.ca_file, Java-style etcdCaFile)"
                    ),
                ));
            }
            if endpoint.starts_with("http://") && self.tls() {
                return Err(invalid(
                    key,
                    format!(
                        "{endpoint}: http:// while etcd.ca_file turns TLS on (use https:// or \
                         host:port)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Reads the files: what the etcd clients use. An unreadable or unusable file is an error
    /// naming its key.
    pub fn load(&self) -> Result<Security, InvalidSetting> {
        self.validate()?;
        let ca_pem = match &self.ca_file {
            None => None,
            Some(path) => Some(pem_file("etcd.ca_file", path, |p| {
                certificates(p).map(drop)
            })?),
        };
        let identity = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => {
                let cert = pem_file("etcd.cert_file", cert, |p| certificates(p).map(drop))?;
                let key_pem = pem_file("etcd.key_file", key, |p| {
                    if read_bounded(p)?.windows(9).any(|w| w == b"ENCRYPTED") {
                        return Err(rmq_transport::pem::PemError::Invalid {
                            path: p.to_owned(),
                            reason: "an encrypted key is not supported for etcd: decrypt it \
                                     (openssl pkey -in KEY -out KEY.plain)"
                                .into(),
                        });
                    }
                    private_key(p, None).map(drop)
                })?;
                let key_pem = String::from_utf8(key_pem)
                    .map_err(|_| invalid("etcd.key_file", "not a PEM text file"))?;
                Some((cert, Secret::new(key_pem)))
            }
            _ => None,
        };
        let user = match self.user.trim() {
            "" => None,
            user => Some((user.to_owned(), self.password()?)),
        };
        Ok(Security {
            ca_pem,
            identity,
            user,
        })
    }

    /// The password, from the setting or the file.
    fn password(&self) -> Result<Secret, InvalidSetting> {
        if let Some(password) = &self.password {
            return Ok(password.clone());
        }
        let Some(path) = &self.password_file else {
            return Err(invalid("etcd.password", "no password given"));
        };
        let unreadable = |e: std::io::Error| {
            invalid(
                "etcd.password_file",
                format!("cannot read {}: {e}", path.display()),
            )
        };
        let len = std::fs::metadata(path).map_err(unreadable)?.len();
        if len > MAX_PASSWORD_FILE {
            return Err(invalid(
                "etcd.password_file",
                format!("{} is {len} bytes: not a password file", path.display()),
            ));
        }
        let text = std::fs::read_to_string(path).map_err(unreadable)?;
        let line = text.lines().next().unwrap_or_default();
        if line.is_empty() {
            return Err(invalid(
                "etcd.password_file",
                format!("{} is empty", path.display()),
            ));
        }
        Ok(Secret::new(line))
    }
}

/// The bytes of the PEM file at `path` once `check` found it usable; an error names `key`.
fn pem_file(
    key: &'static str,
    path: &Path,
    check: impl Fn(&Path) -> Result<(), rmq_transport::pem::PemError>,
) -> Result<Vec<u8>, InvalidSetting> {
    check(path).map_err(|e| invalid(key, e.to_string()))?;
    read_bounded(path).map_err(|e| invalid(key, e.to_string()))
}

/// What one request to etcd at start said about the settings.
#[derive(Debug)]
pub enum Checked {
    /// etcd answered: TLS, certificate and user are right.
    Fine,
    /// etcd could not be reached (down, or not answering in time): the settings are not known
    /// to be wrong; the stores start and keep trying.
    Unreachable(String),
}

/// Connects to each of `endpoints` in turn as `security` says and reads one key under
/// `prefix`: a refusal that settles a setting (CA, client certificate, password, permissions)
/// is an error naming its key (`endpoints_key` for a scheme the server does not speak); one
/// endpoint that answers is [`Checked::Fine`]; none reachable is [`Checked::Unreachable`].
pub async fn check_with_etcd(
    endpoints_key: &'static str,
    endpoints: &[String],
    prefix: &str,
    security: &Security,
    limit: Duration,
) -> Result<Checked, InvalidSetting> {
    let mut unreachable = Vec::new();
    for endpoint in endpoints {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let reason = match check_one(endpoint, prefix, security, limit).await {
                Ok(()) => return Ok(Checked::Fine),
                Err(reason) => settled(endpoints_key, security, format!("{endpoint}: {reason}"))?,
            };
            if !closed_after_handshake(security, &reason) {
                unreachable.push(reason);
                break;
            }
            if attempt == CLOSED_ATTEMPTS {
                return Err(refused_client(security, &reason));
            }
        }
    }
    Ok(Checked::Unreachable(unreachable.join("; ")))
}

/// How many connections etcd may close right after their TLS handshake before the check
/// concludes that it refuses the client certificate.
const CLOSED_ATTEMPTS: u32 = 3;

/// Whether etcd closed the connection right after a TLS handshake that went through: what etcd
/// with `--client-cert-auth` does when the client certificate is missing or not signed by its
/// `--trusted-ca-file`. Under TLS 1.3 its alert comes once the client's side of the handshake is
/// done: it reaches the request as the alert (then [`settled`] names it) or, as often, only as
/// a closed connection.
fn closed_after_handshake(security: &Security, reason: &str) -> bool {
    security.tls()
        && [
            "connection closed",
            "operation was canceled",
            "broken pipe",
            "connection reset",
        ]
        .iter()
        .any(|words| reason.contains(words))
}

fn refused_client(security: &Security, reason: &str) -> InvalidSetting {
    let what = if security.identity.is_some() {
        "does not accept this client certificate (not signed by its --trusted-ca-file?)"
    } else {
        "requires a client certificate (--client-cert-auth): set etcd.cert_file and \
         etcd.key_file"
    };
    invalid(
        "etcd.cert_file",
        format!("etcd closed every connection right after the TLS handshake: it {what} ({reason})"),
    )
}

/// One endpoint connected now, and a read of `prefix` answered.
async fn check_one(
    endpoint: &str,
    prefix: &str,
    security: &Security,
    limit: Duration,
) -> Result<(), String> {
    let options = etcd_api::ConnectOptions::new()
        .with_connect_timeout(limit)
        .with_security(security.clone());
    let client = within(limit, etcd_api::Client::connect_now(endpoint, options))
        .await
        .map_err(|e| e.to_string())?;
    let mut kv = client.kv_client();
    within(
        limit,
        kv.get(prefix, Some(GetOptions::new().with_prefix().with_limit(1))),
    )
    .await
    .map(drop)
    .map_err(|e| format!("cannot read {prefix}: {e}"))
}

/// The setting a failure settles, as an error; `Ok(reason)` when it settles none.
fn settled(
    endpoints_key: &'static str,
    security: &Security,
    reason: String,
) -> Result<String, InvalidSetting> {
    let says = |needle: &str| reason.contains(needle);
    if says("authentication failed, invalid user ID or password") {
        let user = security.user.as_ref().map_or("", |(user, _)| user.as_str());
        return Err(invalid(
            "etcd.password",
            format!(
                "etcd refused user {user:?} with this password (etcd.password, \
                 NAMESRV__ETCD__PASSWORD or etcd.password_file)"
            ),
        ));
    }
    if says("etcdserver: user name is empty") || says("etcdserver: invalid auth token") {
        return Err(invalid(
            "etcd.user",
            "etcd has authentication on: set etcd.user and its password",
        ));
    }
    if says("etcdserver: permission denied") {
        return Err(invalid(
            "etcd.user",
            format!("etcd denies this user access to the prefix: {reason}"),
        ));
    }
    if says("invalid peer certificate") {
        let key = if says("NotValidForName") {
            endpoints_key
        } else {
            "etcd.ca_file"
        };
        return Err(invalid(
            key,
            format!("etcd's certificate is not accepted: {}", tls_cause(&reason)),
        ));
    }
    if says("received fatal alert") {
        return Err(invalid(
            "etcd.cert_file",
            format!(
                "etcd refused the TLS handshake ({}): with --client-cert-auth it needs a client \
                 certificate signed by its --trusted-ca-file (etcd.cert_file, etcd.key_file)",
                tls_cause(&reason)
            ),
        ));
    }
    if says("corrupt message") || says("InvalidContentType") || says("HTTP/1.1") {
        return Err(invalid(
            endpoints_key,
            format!("etcd does not speak TLS there (or speaks it where we do not): {reason}"),
        ));
    }
    Ok(reason)
}

/// The TLS part of a failure's text: rustls' words, e.g. `invalid peer certificate:
/// UnknownIssuer` or `received fatal alert: BadCertificate`, up to the end of their cause.
fn tls_cause(reason: &str) -> &str {
    let Some(start) = ["invalid peer certificate", "received fatal alert"]
        .iter()
        .find_map(|words| reason.find(words))
    else {
        return reason;
    };
    let rest = &reason[start..];
    let end = rest.find(['"', ')', ',']).unwrap_or(rest.len());
    &rest[..end]
}

/// [`check_with_etcd`] from synchronous code (the start, inside an actix System): on a thread
/// of its own with a runtime of its own, waited for (at most `limit` for each connect and read
/// of each endpoint).
pub fn check_with_etcd_blocking(
    endpoints_key: &'static str,
    endpoints: &[String],
    prefix: &str,
    security: &Security,
    limit: Duration,
) -> Result<Checked, InvalidSetting> {
    let endpoints = endpoints.to_vec();
    let prefix = prefix.to_owned();
    let security = security.clone();
    let thread = std::thread::Builder::new()
        .name("etcd-check".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            Ok::<_, String>(runtime.block_on(check_with_etcd(
                endpoints_key,
                &endpoints,
                &prefix,
                &security,
                limit,
            )))
        });
    match thread.map(std::thread::JoinHandle::join) {
        Ok(Ok(Ok(checked))) => checked,
        Ok(Ok(Err(reason))) => Ok(Checked::Unreachable(reason)),
        Ok(Err(_)) => Ok(Checked::Unreachable("the etcd check panicked".into())),
        Err(e) => Ok(Checked::Unreachable(format!(
            "cannot start the etcd check: {e}"
        ))),
    }
}

/// How long the start waits for etcd's answer to the check (each of connect and read).
pub const START_CHECK_LIMIT: Duration = Duration::from_secs(3);

impl EtcdAccess {
    /// What a user of etcd (`endpoints_key`, its endpoints, its prefix) connects with: the files
    /// read, and — when TLS or a user is set — the settings checked with etcd
    /// ([`check_with_etcd`]). An etcd that cannot be reached is logged, not an error.
    pub fn load_checked(
        &self,
        endpoints_key: &'static str,
        endpoints: &[String],
        prefix: &str,
    ) -> Result<Security, InvalidSetting> {
        self.check_endpoints(endpoints_key, endpoints)?;
        let security = self.load()?;
        if security == Security::default() {
            return Ok(security);
        }
        match check_with_etcd_blocking(
            endpoints_key,
            endpoints,
            prefix,
            &security,
            START_CHECK_LIMIT,
        )? {
            Checked::Fine => tracing::info!(
                endpoints = ?endpoints,
                tls = security.tls(),
                client_certificate = security.identity.is_some(),
                user = ?security.user.as_ref().map(|(user, _)| user),
                "etcd: TLS and user accepted"
            ),
            Checked::Unreachable(reason) => tracing::warn!(
                endpoints = ?endpoints,
                reason = %reason,
                "etcd: could not check the TLS and user settings now (etcd unreachable); \
                 starting anyway, the stores keep trying"
            ),
        }
        Ok(security)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("rmq-etcd-access-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn settings_that_do_not_fit_together_name_their_key() {
        let key = |access: EtcdAccess| access.validate().unwrap_err().key;
        let cert_only = EtcdAccess {
            ca_file: Some("ca.pem".into()),
            cert_file: Some("c.pem".into()),
            ..EtcdAccess::default()
        };
        assert_eq!(key(cert_only), "etcd.key_file");
        let no_ca = EtcdAccess {
            cert_file: Some("c.pem".into()),
            key_file: Some("c.key".into()),
            ..EtcdAccess::default()
        };
        assert_eq!(key(no_ca), "etcd.ca_file");
        let no_password = EtcdAccess {
            user: "u".into(),
            ..EtcdAccess::default()
        };
        assert_eq!(key(no_password), "etcd.password");
        let twice = EtcdAccess {
            user: "u".into(),
            password: Some(Secret::new("p")),
            password_file: Some("p.txt".into()),
            ..EtcdAccess::default()
        };
        assert_eq!(key(twice), "etcd.password_file");
        let tls = EtcdAccess {
            ca_file: Some("ca.pem".into()),
            ..EtcdAccess::default()
        };
        let plain = EtcdAccess::default();
        let endpoints = |e: &str| vec![e.to_owned()];
        assert!(plain
            .check_endpoints("kv.etcd_endpoints", &endpoints("https://e:2379"))
            .is_err());
        assert!(tls
            .check_endpoints("kv.etcd_endpoints", &endpoints("http://e:2379"))
            .is_err());
        assert!(tls
            .check_endpoints("kv.etcd_endpoints", &endpoints("e:2379"))
            .is_ok());
    }

    #[test]
    fn files_are_read_at_load_and_the_password_never_shows() {
        let dir = dir("load");
        let missing = EtcdAccess {
            ca_file: Some(dir.join("missing-ca.pem")),
            ..EtcdAccess::default()
        };
        let err = missing.load().unwrap_err();
        assert_eq!(err.key, "etcd.ca_file");
        assert!(err.reason.contains("missing-ca.pem"), "{err}");
        std::fs::write(dir.join("not-pem.pem"), "hello").unwrap();
        let garbage = EtcdAccess {
            ca_file: Some(dir.join("not-pem.pem")),
            ..EtcdAccess::default()
        };
        assert_eq!(garbage.load().unwrap_err().key, "etcd.ca_file");

        std::fs::write(dir.join("password"), "from-a-file\nignored\n").unwrap();
        let access = EtcdAccess {
            user: "namesrv".into(),
            password_file: Some(dir.join("password")),
            ..EtcdAccess::default()
        };
        let security = access.load().unwrap();
        let (user, password) = security.user.clone().unwrap();
        assert_eq!(
            (user.as_str(), password.expose()),
            ("namesrv", "from-a-file")
        );
        assert!(!format!("{security:?}").contains("from-a-file"));
        let inline = EtcdAccess {
            user: "namesrv".into(),
            password: Some(Secret::new("inline-secret")),
            ..EtcdAccess::default()
        };
        assert!(!format!("{inline:?}").contains("inline-secret"));
        let text = serde_json::to_string(&inline).unwrap();
        assert!(
            !text.contains("inline-secret") && !text.contains("password\""),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn tls_causes_are_cut_to_rustls_words() {
        let reason =
            "transport error: Custom { error: \"invalid peer certificate: UnknownIssuer\" }";
        assert_eq!(tls_cause(reason), "invalid peer certificate: UnknownIssuer");
        assert_eq!(tls_cause("other"), "other");
    }
}
