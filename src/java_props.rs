//! The Java view of the configuration: the `NamesrvConfig` / `NettyServerConfig` property names
//! our keys replace, for loading a Java `namesrv.properties` with `--config`, for
//! GET_NAMESRV_CONFIG and for UPDATE_NAMESRV_CONFIG.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use toml::Value;

use crate::config::{expand_home, Config};

/// How a Java value maps onto ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `true`/`false` (any case).
    Bool,
    /// A non-negative integer.
    Count,
    /// Milliseconds in Java, a duration in ours.
    Millis,
    /// Seconds in Java, a duration in ours.
    Seconds,
    /// A file path.
    Path,
    /// Free text.
    Text,
}

/// One Java property with an equivalent of ours.
#[derive(Debug, Clone, Copy)]
pub struct JavaKey {
    pub java: &'static str,
    /// Our key, `section.key`.
    pub ours: &'static str,
    pub kind: Kind,
    /// UPDATE_NAMESRV_CONFIG changes behaviour at once; otherwise at the next start.
    pub live: bool,
}

const fn key(java: &'static str, ours: &'static str, kind: Kind, live: bool) -> JavaKey {
    JavaKey {
        java,
        ours,
        kind,
        live,
    }
}

/// Every Java property we map, except `bindAddress`/`listenPort` (together `server.listen`).
pub const JAVA_KEYS: &[JavaKey] = &[
    key(
        "orderMessageEnable",
        "registry.order_message_enable",
        Kind::Bool,
        true,
    ),
    key(
        "returnOrderTopicConfigToBroker",
        "registry.return_order_topic_config_to_broker",
        Kind::Bool,
        true,
    ),
    key(
        "supportActingMaster",
        "registry.support_acting_master",
        Kind::Bool,
        true,
    ),
    key(
        "enableAllTopicList",
        "registry.enable_all_topic_list",
        Kind::Bool,
        true,
    ),
    key(
        "enableTopicList",
        "registry.enable_topic_list",
        Kind::Bool,
        true,
    ),
    key(
        "notifyMinBrokerIdChanged",
        "registry.notify_min_broker_id_changed",
        Kind::Bool,
        true,
    ),
    key(
        "needWaitForService",
        "registry.need_wait_for_service",
        Kind::Bool,
        true,
    ),
    key(
        "waitSecondsForService",
        "registry.wait_for_service",
        Kind::Seconds,
        true,
    ),
    key(
        "deleteTopicWithBrokerRegistration",
        "registry.delete_topic_with_broker_registration",
        Kind::Bool,
        true,
    ),
    key(
        "scanNotActiveBrokerInterval",
        "registry.scan_interval",
        Kind::Millis,
        false,
    ),
    key("kvConfigPath", "kv.path", Kind::Path, false),
    key("configStorePath", "kv.config_store_path", Kind::Path, false),
    key(
        "configBlackList",
        "admin.config_black_list",
        Kind::Text,
        false,
    ),
    key("clusterTest", "cluster_test.enabled", Kind::Bool, false),
    key(
        "productEnvName",
        "cluster_test.product_env_name",
        Kind::Text,
        false,
    ),
    key("serverWorkerThreads", "server.workers", Kind::Count, false),
    key(
        "serverChannelMaxIdleTimeSeconds",
        "server.idle_timeout",
        Kind::Seconds,
        false,
    ),
];

/// Keys no UPDATE_NAMESRV_CONFIG may touch, whatever `configBlackList` says.
pub const ALWAYS_BLACK_LISTED: &[&str] = &[
    "configBlackList",
    "configStorePath",
    "kvConfigPath",
    "rocketmqHome",
];

/// A Java value that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {key}: {reason}")]
pub struct JavaValueError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

fn value_error(key: &str, value: &str, reason: impl Into<String>) -> JavaValueError {
    JavaValueError {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

pub fn find(java: &str) -> Option<&'static JavaKey> {
    JAVA_KEYS.iter().find(|k| k.java == java)
}

/// Converts a Java value to the TOML value of our key.
fn to_ours(key: &JavaKey, text: &str) -> Result<Value, JavaValueError> {
    let text = text.trim();
    let number = || {
        text.parse::<u64>()
            .map_err(|_| value_error(key.java, text, "expected a non-negative integer"))
    };
    Ok(match key.kind {
        Kind::Bool => match text.to_ascii_lowercase().as_str() {
            "true" => Value::Boolean(true),
            "false" => Value::Boolean(false),
            _ => return Err(value_error(key.java, text, "expected true or false")),
        },
        Kind::Count => Value::Integer(
            i64::try_from(number()?).map_err(|_| value_error(key.java, text, "too large"))?,
        ),
        Kind::Millis => Value::String(format!("{}ms", number()?)),
        Kind::Seconds => Value::String(format!("{}s", number()?)),
        Kind::Path | Kind::Text => Value::String(text.to_owned()),
    })
}

/// Converts our TOML value to Java's text.
fn to_java(key: &JavaKey, value: &Value) -> String {
    let duration = || match value {
        Value::String(s) => humantime::parse_duration(s).unwrap_or(Duration::ZERO),
        _ => Duration::ZERO,
    };
    match (key.kind, value) {
        (Kind::Millis, _) => duration().as_millis().to_string(),
        (Kind::Seconds, _) => duration().as_secs().to_string(),
        (Kind::Path, Value::String(s)) => expand_home(Path::new(s)).display().to_string(),
        (_, Value::String(s)) => s.clone(),
        (_, other) => other.to_string(),
    }
}

fn get_path<'a>(root: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(root, |v, part| v.get(part))
}

fn set_path(root: &mut Value, dotted: &str, value: Value) {
    let mut parts: Vec<&str> = dotted.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut node = root;
    for part in parts {
        let Value::Table(table) = node else { return };
        node = table
            .entry(part.to_owned())
            .or_insert_with(|| Value::Table(toml::Table::new()));
    }
    if let Value::Table(table) = node {
        table.insert(last.to_owned(), value);
    }
}

/// Java properties as a TOML table of our keys (for `--config namesrv.properties`), plus the
/// properties we have no equivalent for (kept and shown by GET_NAMESRV_CONFIG, as Java does).
pub fn properties_to_toml(
    props: &BTreeMap<String, String>,
) -> Result<(toml::Table, BTreeMap<String, String>), JavaValueError> {
    let mut root = Value::Table(toml::Table::new());
    let mut extra = BTreeMap::new();
    let bind = props.get("bindAddress").map(|s| s.trim());
    let port = props.get("listenPort").map(|s| s.trim());
    if bind.is_some() || port.is_some() {
        let ip: IpAddr = bind.unwrap_or("0.0.0.0").parse().map_err(|_| {
            value_error("bindAddress", bind.unwrap_or(""), "expected an IP address")
        })?;
        let port: u16 = port
            .unwrap_or("9876")
            .parse()
            .map_err(|_| value_error("listenPort", port.unwrap_or(""), "expected a port number"))?;
        set_path(
            &mut root,
            "server.listen",
            Value::String(SocketAddr::new(ip, port).to_string()),
        );
    }
    for (java, text) in props {
        match find(java) {
            Some(key) => set_path(&mut root, key.ours, to_ours(key, text)?),
            None if java == "bindAddress" || java == "listenPort" => {}
            None => {
                extra.insert(java.clone(), text.clone());
            }
        }
    }
    let Value::Table(table) = root else {
        return Ok((toml::Table::new(), extra));
    };
    Ok((table, extra))
}

/// The configuration as Java properties (GET_NAMESRV_CONFIG), with the address actually bound.
pub fn config_to_properties(config: &Config, bound: SocketAddr) -> BTreeMap<String, String> {
    let mut out = config.java_extra.clone();
    let root = Value::try_from(config).unwrap_or(Value::Table(toml::Table::new()));
    for key in JAVA_KEYS {
        if let Some(value) = get_path(&root, key.ours) {
            out.insert(key.java.to_owned(), to_java(key, value));
        }
    }
    out.insert("bindAddress".into(), config.server.listen.ip().to_string());
    out.insert("listenPort".into(), bound.port().to_string());
    // 0 means "one per CPU": show the number actually running, as Java shows its 8.
    out.insert(
        "serverWorkerThreads".into(),
        config.worker_count().to_string(),
    );
    if let Some(home) = std::env::var_os("ROCKETMQ_HOME") {
        out.insert("rocketmqHome".into(), home.to_string_lossy().into_owned());
    }
    out
}

/// The keys UPDATE_NAMESRV_CONFIG refuses: the fixed ones, `configBlackList` as configured at
/// start, and (beyond Java) any key that names a file, path, directory or home.
#[derive(Debug, Clone)]
pub struct BlackList {
    keys: BTreeSet<String>,
}

impl BlackList {
    pub fn new(config_black_list: &str) -> Self {
        let mut keys: BTreeSet<String> = ALWAYS_BLACK_LISTED
            .iter()
            .map(|k| (*k).to_owned())
            .collect();
        keys.extend(
            config_black_list
                .split(';')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned),
        );
        Self { keys }
    }

    pub fn contains(&self, key: &str) -> bool {
        let lower = key.to_ascii_lowercase();
        self.keys.contains(key)
            || ["path", "file", "dir", "home"]
                .iter()
                .any(|w| lower.contains(w))
    }
}

/// Applies an UPDATE_NAMESRV_CONFIG to a copy of `config`: known keys are converted and
/// validated, keys kept from the loaded file are updated, others are ignored (as in Java).
/// Returns the new configuration and whether a start-only key changed.
pub fn apply_update(
    config: &Config,
    props: &BTreeMap<String, String>,
) -> Result<(Config, Vec<&'static str>), JavaValueError> {
    let mut root =
        Value::try_from(config).map_err(|e| value_error("(config)", "", e.to_string()))?;
    let mut extra = config.java_extra.clone();
    let mut restart_needed = Vec::new();
    for (java, text) in props {
        match find(java) {
            Some(key) => {
                let value = to_ours(key, text)?;
                if get_path(&root, key.ours) != Some(&value) && !key.live {
                    restart_needed.push(key.java);
                }
                set_path(&mut root, key.ours, value);
            }
            None => {
                if let Some(slot) = extra.get_mut(java) {
                    slot.clone_from(text);
                }
            }
        }
    }
    let mut updated: Config = root
        .try_into()
        .map_err(|e: toml::de::Error| value_error("(config)", "", e.to_string()))?;
    updated.java_extra = extra;
    updated
        .validate()
        .map_err(|e| value_error(&java_name_of(&e.to_string()), "", e.to_string()))?;
    Ok((updated, restart_needed))
}

/// The Java key a validation message is about, if it names one of ours.
fn java_name_of(message: &str) -> String {
    JAVA_KEYS
        .iter()
        .find(|k| message.contains(k.ours))
        .map_or_else(|| "(config)".to_owned(), |k| k.java.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn java_file_maps_to_our_keys() {
        let (table, extra) = properties_to_toml(&props(&[
            ("listenPort", "19876"),
            ("scanNotActiveBrokerInterval", "2500"),
            ("waitSecondsForService", "10"),
            ("enableTopicList", "FALSE"),
            ("kvConfigPath", "/data/kv.json"),
            ("clientRequestThreadPoolNums", "8"),
        ]))
        .unwrap();
        let config: Config = Value::Table(table).try_into().unwrap();
        assert_eq!(config.server.listen, "0.0.0.0:19876".parse().unwrap());
        assert_eq!(config.registry.scan_interval, Duration::from_millis(2500));
        assert_eq!(config.registry.wait_for_service, Duration::from_secs(10));
        assert!(!config.registry.enable_topic_list);
        assert_eq!(config.kv.path, Path::new("/data/kv.json"));
        assert_eq!(
            extra.get("clientRequestThreadPoolNums").map(String::as_str),
            Some("8")
        );
        let err =
            properties_to_toml(&props(&[("scanNotActiveBrokerInterval", "soon")])).unwrap_err();
        assert_eq!(err.key, "scanNotActiveBrokerInterval");
    }

    #[test]
    fn properties_of_the_default_config() {
        let p = config_to_properties(&Config::default(), "0.0.0.0:41234".parse().unwrap());
        assert_eq!(p["listenPort"], "41234");
        assert_eq!(p["bindAddress"], "0.0.0.0");
        assert_eq!(p["scanNotActiveBrokerInterval"], "5000");
        assert_eq!(p["waitSecondsForService"], "45");
        assert_eq!(p["serverChannelMaxIdleTimeSeconds"], "120");
        assert_eq!(p["enableAllTopicList"], "true");
        assert_eq!(
            p["configBlackList"],
            "configBlackList;configStorePath;kvConfigPath"
        );
        assert_eq!(p["productEnvName"], "center");
        assert!(p["kvConfigPath"].ends_with("namesrv/kvConfig.json"));
        assert!(!p["kvConfigPath"].starts_with('~'));
    }

    #[test]
    fn updates_validate_and_report_restart_keys() {
        let config = Config::default();
        let (updated, restart) = apply_update(
            &config,
            &props(&[("enableTopicList", "false"), ("unknownKey", "1")]),
        )
        .unwrap();
        assert!(!updated.registry.enable_topic_list);
        assert!(restart.is_empty());
        let (updated, restart) =
            apply_update(&config, &props(&[("scanNotActiveBrokerInterval", "1000")])).unwrap();
        assert_eq!(updated.registry.scan_interval, Duration::from_secs(1));
        assert_eq!(restart, vec!["scanNotActiveBrokerInterval"]);
        let err = apply_update(&config, &props(&[("enableTopicList", "maybe")])).unwrap_err();
        assert_eq!(err.key, "enableTopicList");
        let err =
            apply_update(&config, &props(&[("scanNotActiveBrokerInterval", "0")])).unwrap_err();
        assert_eq!(err.key, "scanNotActiveBrokerInterval");
    }

    #[test]
    fn black_list() {
        let list =
            BlackList::new("configBlackList;configStorePath;kvConfigPath;orderMessageEnable");
        for key in [
            "kvConfigPath",
            "configStorePath",
            "configBlackList",
            "rocketmqHome",
            "orderMessageEnable",
            "tls.server.certPath",
            "storePathRootDir",
            "logFile",
        ] {
            assert!(list.contains(key), "{key}");
        }
        assert!(!list.contains("enableTopicList"));
    }
}
