//! The RocketMQ credentials a tool signs its requests with (`--access-key`, `--secret-key`,
//! `--credentials-file`): requests get the `AccessKey` and `Signature` ext fields that Java's
//! `AclClientRPCHook` adds, so a NameServer (or broker) that checks signatures accepts them.
//! The credentials file is mqadmin's `conf/tools.yml`:
//!
//! ```yaml
//! accessKey: rocketmq2
//! secretKey: 12345678
//! ```

use std::path::PathBuf;

use clap::Args;
use rmq_protocol::signature::sign_command;
use rmq_protocol::RemotingCommand;
use serde::Deserialize;

/// Credentials files larger than this are refused.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// Signing options.
#[derive(Debug, Clone, Default, Args)]
pub struct CredentialArgs {
    /// Sign requests with this access key (needs --secret-key).
    #[arg(
        long,
        value_name = "KEY",
        env = "RMQ_ACCESS_KEY",
        requires = "secret_key",
        global = true
    )]
    pub access_key: Option<String>,
    /// The secret key of --access-key.
    #[arg(
        long,
        value_name = "SECRET",
        env = "RMQ_SECRET_KEY",
        hide_env_values = true,
        requires = "access_key",
        global = true
    )]
    pub secret_key: Option<String>,
    /// Read accessKey and secretKey from a file in mqadmin's tools.yml format.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "access_key",
        global = true
    )]
    pub credentials_file: Option<PathBuf>,
}

/// An access key and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub access_key: String,
    secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsYml {
    access_key: Option<serde_yaml_ng::Value>,
    secret_key: Option<serde_yaml_ng::Value>,
}

fn text(value: Option<serde_yaml_ng::Value>) -> Option<String> {
    match value? {
        serde_yaml_ng::Value::String(s) => Some(s),
        serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Credentials {
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
        }
    }

    /// Signs `request` (adds `AccessKey` and `Signature`).
    pub fn sign(&self, request: &mut RemotingCommand) -> Result<(), String> {
        sign_command(request, &self.access_key, &self.secret_key, None).map_err(|e| e.to_string())
    }

    /// Parses a tools.yml.
    pub fn parse_tools_yml(text_of_file: &str) -> Result<Self, String> {
        let parsed: ToolsYml = serde_yaml_ng::from_str(text_of_file).map_err(|e| e.to_string())?;
        match (text(parsed.access_key), text(parsed.secret_key)) {
            (Some(ak), Some(sk)) if !ak.is_empty() && !sk.is_empty() => Ok(Self::new(ak, sk)),
            _ => Err("needs accessKey and secretKey".to_owned()),
        }
    }
}

impl CredentialArgs {
    /// The credentials these options give, `None` when requests go unsigned; an unusable file
    /// is an error naming it.
    pub fn credentials(&self) -> Result<Option<Credentials>, String> {
        if let (Some(ak), Some(sk)) = (&self.access_key, &self.secret_key) {
            return Ok(Some(Credentials::new(ak, sk)));
        }
        let Some(path) = &self.credentials_file else {
            return Ok(None);
        };
        let fail = |why: String| format!("credentials file {}: {why}", path.display());
        let len = std::fs::metadata(path)
            .map_err(|e| fail(e.to_string()))?
            .len();
        if len > MAX_FILE_BYTES {
            return Err(fail(format!("larger than {MAX_FILE_BYTES} bytes")));
        }
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        Credentials::parse_tools_yml(&text).map(Some).map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mqadmin_s_tools_yml_reads_and_secrets_do_not_print() {
        let creds =
            Credentials::parse_tools_yml("accessKey: rocketmq2\nsecretKey: 12345678\n").unwrap();
        assert_eq!(creds.access_key, "rocketmq2");
        assert!(!format!("{creds:?}").contains("12345678"));
        assert!(Credentials::parse_tools_yml("accessKey: a\n").is_err());
    }
}
