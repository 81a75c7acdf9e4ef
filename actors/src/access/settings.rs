//! `[access]`: who may send which requests (docs/access.md). A profile picks each class's
//! policy; each class can be set one by one.

use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::{AccessClass, Policy};
use crate::settings::InvalidSetting;

/// The defaults of every class's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Everything open: the Java NameServer's behaviour, and the default.
    #[default]
    Open,
    /// Admin reads and writes and the status page signed; reads, broker traffic and the
    /// probes open (restrict broker traffic by network with `access.broker`).
    Secure,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Open => "open",
            Profile::Secure => "secure",
        }
    }

    /// The policy this profile gives `class`.
    pub fn policy_of(self, class: AccessClass) -> PolicyKind {
        match (self, class) {
            (Profile::Open, _) => PolicyKind::Open,
            (
                Profile::Secure,
                AccessClass::AdminRead | AccessClass::AdminWrite | AccessClass::Status,
            ) => PolicyKind::Signed,
            (Profile::Secure, _) => PolicyKind::Open,
        }
    }
}

impl std::str::FromStr for Profile {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "open" => Ok(Profile::Open),
            "secure" => Ok(Profile::Secure),
            other => Err(format!("{other:?} is not open or secure")),
        }
    }
}

/// What a class requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
pub enum PolicyKind {
    /// Anyone.
    #[serde(rename = "open")]
    Open,
    /// Clients from the class's `networks`.
    #[serde(rename = "networks")]
    Networks,
    /// Requests signed with valid RocketMQ credentials (admin classes: an admin account).
    #[serde(rename = "signed")]
    Signed,
    /// Both.
    #[serde(rename = "networks+signed", alias = "signed+networks")]
    NetworksAndSigned,
}

impl PolicyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::Open => "open",
            PolicyKind::Networks => "networks",
            PolicyKind::Signed => "signed",
            PolicyKind::NetworksAndSigned => "networks+signed",
        }
    }

    fn needs_networks(self) -> bool {
        matches!(self, PolicyKind::Networks | PolicyKind::NetworksAndSigned)
    }

    pub fn signed(self) -> bool {
        matches!(self, PolicyKind::Signed | PolicyKind::NetworksAndSigned)
    }
}

/// One class's setting: its policy (the profile's when unset) and its source networks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClassSetting {
    /// `open`, `networks`, `signed` or `networks+signed`; empty: the profile's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyKind>,
    /// Source networks (CIDR) for the `networks` policies.
    pub networks: Vec<IpNet>,
}

/// The `[access]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSettings {
    /// `open` (the default) or `secure`.
    pub profile: Profile,
    /// Accounts: a 4.x `plain_acl.yml` and/or an ACL 2.0-style `users` list; reloaded on
    /// change. Empty: no accounts (a `signed` class then refuses everything, so that is an
    /// error).
    pub acl_file: PathBuf,
    /// The audit log (JSON lines); empty: `audit.log` in `log.dir`, or the main log when that
    /// is empty too.
    pub audit_log: PathBuf,
    /// An audit file reaching this many bytes is rotated (it also rotates daily).
    pub audit_max_file_size: u64,
    /// Audit files kept, the current one included.
    pub audit_max_files: usize,
    /// Failed signature checks (unknown key, bad signature) a source address may make within
    /// `failure_window` before its signed requests are refused unchecked until the window ends.
    pub max_failures: u32,
    #[serde(with = "humantime_serde")]
    pub failure_window: Duration,
    /// How often the ACL file is checked when file-system events do not come.
    #[serde(with = "humantime_serde")]
    pub reload_check_interval: Duration,
    /// Requests of a `signed` class are accepted over TLS only: a RocketMQ signature does not
    /// cover the request code nor where one field ends and the next begins, so a signed request
    /// seen on the wire could be sent again changed (docs/access.md#what-a-signature-covers).
    /// Needs `tls.mode` permissive or enforcing.
    pub signed_needs_tls: bool,
    /// `admin_write` requests are accepted only over TLS with a client certificate the server
    /// verified (mutual TLS). Needs `tls.mode` permissive or enforcing and
    /// `tls.server.need_client_auth` optional or require.
    pub admin_write_needs_client_cert: bool,
    /// REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT, QUERY_DATA_VERSION.
    pub broker: ClassSetting,
    /// Routes, cluster info, member groups, topic lists, KV reads.
    pub read: ClassSetting,
    /// GET_NAMESRV_CONFIG (it shows the configuration).
    pub admin_read: ClassSetting,
    /// KV writes, write-permission wipes and adds, topic deletes and registrations,
    /// UPDATE_NAMESRV_CONFIG.
    pub admin_write: ClassSetting,
    /// The HTTP port's status page and `/api/...` (they show KV values and addresses).
    pub status: ClassSetting,
    /// The HTTP port's `/metrics`, `/health`, `/ready` and `/rocketmq/...`.
    pub probe: ClassSetting,
}

impl Default for AccessSettings {
    fn default() -> Self {
        Self {
            profile: Profile::Open,
            acl_file: PathBuf::new(),
            audit_log: PathBuf::new(),
            audit_max_file_size: 128 * 1024 * 1024,
            audit_max_files: 10,
            max_failures: 10,
            failure_window: Duration::from_secs(60),
            reload_check_interval: Duration::from_secs(10),
            signed_needs_tls: false,
            admin_write_needs_client_cert: false,
            broker: ClassSetting::default(),
            read: ClassSetting::default(),
            admin_read: ClassSetting::default(),
            admin_write: ClassSetting::default(),
            status: ClassSetting::default(),
            probe: ClassSetting::default(),
        }
    }
}

impl AccessSettings {
    /// The setting of `class`.
    pub fn class(&self, class: AccessClass) -> &ClassSetting {
        match class {
            AccessClass::Broker => &self.broker,
            AccessClass::Read => &self.read,
            AccessClass::AdminRead => &self.admin_read,
            AccessClass::AdminWrite => &self.admin_write,
            AccessClass::Status => &self.status,
            AccessClass::Probe => &self.probe,
        }
    }

    /// The policy in force for `class`: its own, or the profile's.
    pub fn policy_kind(&self, class: AccessClass) -> PolicyKind {
        self.class(class)
            .policy
            .unwrap_or_else(|| self.profile.policy_of(class))
    }

    /// The policies in force, one per class.
    pub fn policies(&self) -> [Policy; AccessClass::COUNT] {
        AccessClass::ALL.map(|class| {
            let kind = self.policy_kind(class);
            Policy {
                networks: kind
                    .needs_networks()
                    .then(|| self.class(class).networks.clone()),
                signed: kind.signed(),
                needs_tls: kind.signed() && self.signed_needs_tls,
                needs_client_cert: class == AccessClass::AdminWrite
                    && self.admin_write_needs_client_cert,
            }
        })
    }

    /// Whether any class asks for signatures.
    pub fn any_signed(&self) -> bool {
        AccessClass::ALL
            .iter()
            .any(|c| self.policy_kind(*c).signed())
    }

    pub fn validate(&self) -> Result<(), InvalidSetting> {
        for class in AccessClass::ALL {
            let kind = self.policy_kind(class);
            if kind.needs_networks() && self.class(class).networks.is_empty() {
                return Err(InvalidSetting::new(
                    class.networks_key(),
                    format!("policy {} needs at least one network (CIDR)", kind.as_str()),
                ));
            }
        }
        if self.any_signed() && self.acl_file.as_os_str().is_empty() {
            return Err(InvalidSetting::new(
                "access.acl_file",
                "a class's policy is signed, so accounts are needed: set access.acl_file (--acl-file)",
            ));
        }
        if self.max_failures == 0 {
            return Err(InvalidSetting::new(
                "access.max_failures",
                "must be at least 1",
            ));
        }
        if self.failure_window.is_zero() {
            return Err(InvalidSetting::new(
                "access.failure_window",
                "must be positive",
            ));
        }
        if self.reload_check_interval < Duration::from_millis(100) {
            return Err(InvalidSetting::new(
                "access.reload_check_interval",
                "must be at least 100ms",
            ));
        }
        if self.audit_max_files == 0 || self.audit_max_file_size < 4096 {
            return Err(InvalidSetting::new(
                "access.audit_max_files",
                "audit files: at least one file of at least 4096 bytes",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secure_profile_signs_admin_requests_and_leaves_reads_open() {
        let settings = AccessSettings {
            profile: Profile::Secure,
            acl_file: "acl.yml".into(),
            ..AccessSettings::default()
        };
        settings.validate().unwrap();
        assert_eq!(
            settings.policy_kind(AccessClass::AdminWrite),
            PolicyKind::Signed
        );
        assert_eq!(
            settings.policy_kind(AccessClass::AdminRead),
            PolicyKind::Signed
        );
        assert_eq!(settings.policy_kind(AccessClass::Read), PolicyKind::Open);
        assert_eq!(settings.policy_kind(AccessClass::Broker), PolicyKind::Open);
        assert_eq!(settings.policy_kind(AccessClass::Probe), PolicyKind::Open);
    }

    #[test]
    fn a_bad_setting_names_its_key() {
        let mut settings = AccessSettings::default();
        settings.broker.policy = Some(PolicyKind::Networks);
        assert_eq!(
            settings.validate().unwrap_err().key,
            "access.broker.networks"
        );
        settings.broker.networks = vec!["127.0.0.1/32".parse().unwrap()];
        settings.validate().unwrap();
        settings.admin_write.policy = Some(PolicyKind::Signed);
        assert_eq!(settings.validate().unwrap_err().key, "access.acl_file");
    }
}
