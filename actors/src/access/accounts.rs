//! The accounts of `access.acl_file`: the 4.x `plain_acl.yml` format and an ACL 2.0-style users
//! list, in one YAML file (docs/access.md#the-acl-file):
//!
//! ```yaml
//! globalWhiteRemoteAddresses:      # RocketMQ's bypass: a matching client needs no signature
//!   - 10.10.103.*
//! accounts:                        # 4.x plain ACL
//!   - accessKey: rocketmq2
//!     secretKey: 12345678          # every scalar is read as the text written (0x1F stays 0x1F)
//!     whiteRemoteAddress: 192.168.1.*
//!     admin: true
//! users:                           # ACL 2.0 shape
//!   - username: ops
//!     password: s3cret
//!     userType: Super              # Super (admin) or Normal
//!     userStatus: enable           # enable or disable
//! ```
//!
//! Everything else of those formats (topic and group permissions, data versions) has no
//! meaning to a NameServer and is ignored. The parsed [`Accounts`] are an immutable snapshot;
//! secrets are kept in [`Secret`] (the transport's, for key passwords), whose `Debug` prints
//! `***`.

use std::collections::HashMap;
use std::path::Path;

use rmq_transport::Secret;
use serde::Deserialize;

use super::patterns::AddressPattern;

/// ACL files larger than this are refused (accounts are a few hundred bytes each).
pub const MAX_ACL_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub secret: Secret,
    /// 4.x `admin: true`, or an ACL 2.0 `Super` user: may send admin requests.
    pub admin: bool,
    /// ACL 2.0 `userStatus: disable`: every request with this key is refused.
    pub enabled: bool,
    /// 4.x `whiteRemoteAddress`: requests of this account from a matching address need no
    /// signature.
    pub white: AddressPattern,
}

/// What the ACL file grants: accounts by access key, and the global bypass patterns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accounts {
    pub by_key: HashMap<String, Account>,
    /// `globalWhiteRemoteAddresses`, with their text for logs.
    pub global_white: Vec<(String, AddressPattern)>,
}

/// Why an ACL file cannot be used; names the file and the entry, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum AclFileError {
    #[error("cannot read ACL file {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("ACL file {path}: {reason}")]
    Invalid { path: String, reason: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct AclFile {
    global_white_remote_addresses: Option<Vec<Option<Scalar>>>,
    accounts: Option<Vec<PlainAccount>>,
    users: Option<Vec<User>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlainAccount {
    access_key: Option<Scalar>,
    secret_key: Option<Scalar>,
    white_remote_address: Option<Scalar>,
    admin: Option<Scalar>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct User {
    username: Option<Scalar>,
    password: Option<Scalar>,
    user_type: Option<Scalar>,
    user_status: Option<Scalar>,
}

/// A scalar exactly as written in the file (quotes removed): `0x1F`, `1e3`, `1.10`, `+12`
/// and `0o17` stay that text, as Java's loader keeps the text of a String field, where YAML's
/// own typing would read numbers (and secrets signed with their text would no longer match).
/// A sequence or a mapping is an error naming the field, never its content.
struct Scalar(String);

impl std::fmt::Debug for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // It may be a secret.
        f.write_str("Scalar(..)")
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = Scalar;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a scalar (text, number or boolean)")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_owned()))
            }

            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// The text of a scalar; `None` for null.
fn scalar(value: Option<&Scalar>) -> Option<String> {
    value.map(|s| s.0.clone())
}

/// A parse error without any of the file's content: what the parser quotes (between backticks
/// or double quotes) may be a secret, so it is left out; the path (`accounts[8].secretKey`),
/// the kind of error and the position stay.
fn redacted(error: &serde_yaml_ng::Error) -> String {
    let text = error.to_string();
    let mut out = String::with_capacity(text.len());
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match quote {
            // Inside double quotes the text is Rust's debug form: `\"` is a quote of the value.
            Some('"') if c == '\\' => {
                chars.next();
            }
            Some(q) if c == q => {
                out.push_str("(value not shown)");
                quote = None;
            }
            Some(_) => {}
            None if c == '`' || c == '"' => quote = Some(c),
            None => out.push(c),
        }
    }
    if quote.is_some() {
        out.push_str("(value not shown)");
    }
    out
}

impl Accounts {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, AclFileError> {
        let shown = path.display().to_string();
        let read = |reason: String| AclFileError::Read {
            path: shown.clone(),
            reason,
        };
        let len = std::fs::metadata(path)
            .map_err(|e| read(e.to_string()))?
            .len();
        if len > MAX_ACL_FILE_BYTES {
            return Err(read(format!("larger than {MAX_ACL_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| read(e.to_string()))?;
        Self::parse(&text).map_err(|reason| AclFileError::Invalid {
            path: shown,
            reason,
        })
    }

    /// Parses the text of an ACL file.
    pub fn parse(text: &str) -> Result<Self, String> {
        let file: AclFile = if text.trim().is_empty() {
            AclFile::default()
        } else {
            // `null` or a document of only comments parses as unit: no accounts.
            serde_yaml_ng::from_str::<Option<AclFile>>(text)
                .map_err(|e| redacted(&e))?
                .unwrap_or_default()
        };
        let mut accounts = Accounts::default();
        for (i, entry) in file
            .global_white_remote_addresses
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let Some(text) = scalar(entry.as_ref()) else {
                continue;
            };
            let pattern = AddressPattern::parse(&text)
                .map_err(|e| format!("globalWhiteRemoteAddresses[{i}]: {e}"))?;
            accounts.global_white.push((text, pattern));
        }
        for (i, plain) in file.accounts.unwrap_or_default().iter().enumerate() {
            let at = format!("accounts[{i}]");
            let key = required(scalar(plain.access_key.as_ref()), &at, "accessKey")?;
            let secret = required(scalar(plain.secret_key.as_ref()), &at, "secretKey")?;
            let white = match scalar(plain.white_remote_address.as_ref()) {
                Some(text) => AddressPattern::parse(&text)
                    .map_err(|e| format!("{at} ({key}) whiteRemoteAddress: {e}"))?,
                None => AddressPattern::Nothing,
            };
            let admin = match scalar(plain.admin.as_ref()).as_deref() {
                None | Some("false") => false,
                Some("true") => true,
                Some(other) => {
                    return Err(format!(
                        "{at} ({key}) admin: {other:?} is not true or false"
                    ))
                }
            };
            accounts.insert(
                key,
                Account {
                    secret: Secret::new(secret),
                    admin,
                    enabled: true,
                    white,
                },
                &at,
            )?;
        }
        for (i, user) in file.users.unwrap_or_default().iter().enumerate() {
            let at = format!("users[{i}]");
            let name = required(scalar(user.username.as_ref()), &at, "username")?;
            let password = required(scalar(user.password.as_ref()), &at, "password")?;
            let admin = match scalar(user.user_type.as_ref()).as_deref() {
                None => false,
                Some(t) if t.eq_ignore_ascii_case("super") => true,
                Some(t) if t.eq_ignore_ascii_case("normal") => false,
                Some(other) => {
                    return Err(format!(
                        "{at} ({name}) userType: {other:?} is not Super or Normal"
                    ))
                }
            };
            let enabled = match scalar(user.user_status.as_ref()).as_deref() {
                None => true,
                Some(s) if s.eq_ignore_ascii_case("enable") => true,
                Some(s) if s.eq_ignore_ascii_case("disable") => false,
                Some(other) => {
                    return Err(format!(
                        "{at} ({name}) userStatus: {other:?} is not enable or disable"
                    ))
                }
            };
            accounts.insert(
                name,
                Account {
                    secret: Secret::new(password),
                    admin,
                    enabled,
                    white: AddressPattern::Nothing,
                },
                &at,
            )?;
        }
        Ok(accounts)
    }

    fn insert(&mut self, key: String, account: Account, at: &str) -> Result<(), String> {
        if self.by_key.contains_key(&key) {
            return Err(format!("{at}: access key {key:?} is defined twice"));
        }
        self.by_key.insert(key, account);
        Ok(())
    }

    /// The account of `access_key`.
    pub fn get(&self, access_key: &str) -> Option<&Account> {
        self.by_key.get(access_key)
    }

    /// Whether `ip` matches a global white pattern (and which).
    pub fn globally_white(&self, ip: std::net::IpAddr) -> bool {
        self.global_white.iter().any(|(_, p)| p.matches(ip))
    }
}

fn required(value: Option<String>, at: &str, field: &str) -> Result<String, String> {
    value
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| format!("{at}: {field} is missing or empty"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAIN_ACL: &str = r#"
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
    groupPerms:
      - groupA=DENY

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
dataVersion:
  - counter: 1
    timestamp: 1
"#;

    #[test]
    fn a_4x_plain_acl_file_reads_as_java_reads_it() {
        let accounts = Accounts::parse(PLAIN_ACL).unwrap();
        assert_eq!(accounts.global_white.len(), 2);
        assert!(accounts.globally_white("10.10.103.7".parse().unwrap()));
        let plain = accounts.get("RocketMQ").unwrap();
        assert_eq!(plain.secret.expose(), "12345678");
        assert!(!plain.admin && plain.enabled);
        assert_eq!(plain.white, AddressPattern::Nothing);
        let admin = accounts.get("rocketmq2").unwrap();
        assert!(admin.admin);
        assert!(admin.white.matches("192.168.1.20".parse().unwrap()));
        // Secrets never print.
        assert!(!format!("{accounts:?}").contains("12345678"));
    }

    #[test]
    fn empty_and_null_white_lists_and_users_are_valid() {
        for text in [
            "",
            "# nothing\n",
            "globalWhiteRemoteAddresses:\naccounts:\n",
            "globalWhiteRemoteAddresses: []\n",
            "globalWhiteRemoteAddresses: null\n",
        ] {
            let accounts = Accounts::parse(text).unwrap();
            assert!(accounts.by_key.is_empty() && accounts.global_white.is_empty());
        }
        let users = Accounts::parse(
            "users:\n  - username: ops\n    password: s3cret\n    userType: Super\n  - username: app\n    password: 123456\n    userType: Normal\n    userStatus: disable\n",
        )
        .unwrap();
        assert!(users.get("ops").unwrap().admin);
        let app = users.get("app").unwrap();
        assert!(!app.admin && !app.enabled);
        assert_eq!(app.secret.expose(), "123456");
    }

    #[test]
    fn bad_files_name_the_entry_and_not_the_secret() {
        for (text, expected) in [
            ("accounts:\n  - accessKey: a\n", "accounts[0]: secretKey"),
            (
                "accounts:\n  - accessKey: a\n    secretKey: topsecret\n  - accessKey: a\n    secretKey: other\n",
                "defined twice",
            ),
            ("globalWhiteRemoteAddresses: ['10.0.*.1']\n", "globalWhiteRemoteAddresses[0]"),
            (
                "users:\n  - username: u\n    password: topsecret\n    userType: Root\n",
                "userType",
            ),
            ("accounts: [1, 2", "accounts"),
        ] {
            let err = Accounts::parse(text).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(!err.contains("topsecret"), "{err}");
        }
    }

    #[test]
    fn numeric_looking_secrets_keep_their_text() {
        for secret in [
            "0x1F",
            "1e3",
            "1.10",
            "0o17",
            "+12",
            "00123456",
            "12345678",
            "1_000",
            "98765432109876543210987",
            ".inf",
            "-.5",
            "true",
            "~x",
        ] {
            let text = format!("accounts:\n  - accessKey: k\n    secretKey: {secret}\n");
            let accounts = Accounts::parse(&text).unwrap();
            assert_eq!(accounts.get("k").unwrap().secret.expose(), secret);
        }
        // Quoted, the same text.
        let accounts =
            Accounts::parse("accounts:\n  - accessKey: 007\n    secretKey: '0x1F'\n").unwrap();
        assert_eq!(accounts.get("007").unwrap().secret.expose(), "0x1F");
    }

    #[test]
    fn parse_errors_never_show_a_value() {
        for text in [
            "accounts:\n  - accessKey: k\n    secretKey: [98765432109876543210987]\n",
            "accounts:\n  - accessKey: k\n    secretKey: {a: 98765432109876543210987}\n",
            "accounts:\n  - accessKey: k\n    secretKey: \"98765432109876543210987\n",
            "accounts: 98765432109876543210987\n",
            "accounts:\n  - 98765432109876543210987\n",
            "users:\n  - username: u\n    password:\n      - 98765432109876543210987\n",
            "accounts:\n  - accessKey: k\n    secretKey: 98765432109876543210987\n   bad: [\n",
            "*\nacco+nts:\u{da} password:\"x12 F0ed\n",
            "accounts:\n  - \"a\\\"98765432109876543210987\"\n",
        ] {
            let err = Accounts::parse(text).unwrap_err();
            assert!(!err.contains("98765"), "{err}");
        }
        let err = Accounts::parse(
            "accounts:\n  - accessKey: k\n    secretKey: [98765432109876543210987]\n",
        )
        .unwrap_err();
        assert!(err.contains("accounts[0].secretKey"), "{err}");
    }

    #[test]
    fn a_billion_laughs_file_is_refused() {
        let mut text = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let mut previous = 'a';
        for name in 'b'..='j' {
            text.push_str(&format!(
                "{name}: &{name} [*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous},*{previous}]\n"
            ));
            previous = name;
        }
        text.push_str("accounts: *j\n");
        assert!(Accounts::parse(&text).is_err());
    }
}
