//! The Java view of a running configuration: GET_NAMESRV_CONFIG's properties, the black list and
//! the updates of UPDATE_NAMESRV_CONFIG (docs/kv-and-config.md#runtime-updates).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use toml::Value;

use crate::config::{expand_home, Config, ConfigError};
use crate::java_keys::{
    find, get_path, no_effect_reason, set_path, to_ours, value_error, JavaKey, JavaValueError,
    Kind, JAVA_KEYS,
};

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

/// Keys no UPDATE_NAMESRV_CONFIG may touch, whatever `configBlackList` says.
pub const ALWAYS_BLACK_LISTED: &[&str] = &[
    "configBlackList",
    "configStorePath",
    "kvConfigPath",
    "rocketmqHome",
];

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
        config.server.worker_count().to_string(),
    );
    if let Some(home) = std::env::var_os("ROCKETMQ_HOME") {
        out.insert("rocketmqHome".into(), home.to_string_lossy().into_owned());
    }
    out
}

/// The keys UPDATE_NAMESRV_CONFIG refuses: the fixed ones, `configBlackList` as configured at
/// start, and (beyond Java) every `tls.*` and `access.*`/`acl*` key (no request may switch TLS
/// or access control off, signed or not) and any key that names a file, path, directory or
/// home.
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
            || lower.starts_with("tls.")
            || lower.starts_with("access.")
            || lower.starts_with("acl")
            || rmq_actors::settings::names_a_location(key)
    }
}

/// Applies an UPDATE_NAMESRV_CONFIG to a copy of `config`: known keys are converted and
/// validated, keys kept from the loaded file are updated, others are ignored (as in Java).
/// Returns the new configuration and the keys whose change waits for the next start.
pub fn apply_update(
    config: &Config,
    props: &BTreeMap<String, String>,
) -> Result<(Config, Vec<&'static str>), JavaValueError> {
    let mut updated = config.clone();
    let mut restart_needed = Vec::new();
    for (java, text) in props {
        match find(java) {
            Some(key) => {
                let before = updated.clone();
                updated = with_value(&updated, key, text)?;
                if updated != before && !applies_at_once(&before, &updated) {
                    restart_needed.push(key.java);
                }
            }
            None => {
                if let Some(slot) = updated.java_extra.get_mut(java) {
                    slot.clone_from(text);
                }
            }
        }
    }
    updated.validate().map_err(|err| match err {
        ConfigError::Invalid(invalid) => {
            let java = JAVA_KEYS
                .iter()
                .find(|k| k.ours == invalid.key)
                .map_or("(config)", |k| k.java);
            value_error(java, "", invalid.to_string())
        }
        other => value_error("(config)", "", other.to_string()),
    })?;
    Ok((updated, restart_needed))
}

/// `config` with the Java property `key` set to `text`.
fn with_value(config: &Config, key: &JavaKey, text: &str) -> Result<Config, JavaValueError> {
    let mut root =
        Value::try_from(config).map_err(|e| value_error("(config)", "", e.to_string()))?;
    set_path(&mut root, key.ours, to_ours(key, text)?);
    let mut updated: Config = root
        .try_into()
        .map_err(|e: toml::de::Error| value_error(key.java, text, e.to_string()))?;
    updated.java_extra.clone_from(&config.java_extra);
    // Not serialized (its passwords never are), and no update may change it (black list).
    updated.tls.clone_from(&config.tls);
    Ok(updated)
}

/// Whether a running server applies the change from `before` to `after` at once: only the
/// registry settings changed (the registry takes them whole from an `ApplySettings`), and none
/// of those it reads only at start.
pub fn applies_at_once(before: &Config, after: &Config) -> bool {
    let mut rest = after.clone();
    rest.registry.clone_from(&before.registry);
    rest == *before && !before.registry.start_only_changed(&after.registry)
}

/// A Java setting that is accepted but has no effect here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoEffect {
    /// The Java property.
    pub java: String,
    /// Our key, when it has one (set in TOML or the environment just the same).
    pub ours: Option<&'static str>,
    pub reason: &'static str,
}

/// The settings of `config` accepted without effect, for the start-up warnings: every property
/// of a loaded `.properties` file we do not map.
pub fn no_effect_keys(config: &Config) -> Vec<NoEffect> {
    config
        .java_extra
        .keys()
        .map(|java| NoEffect {
            java: java.clone(),
            ours: None,
            reason: no_effect_reason(java),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::java_keys::properties_to_toml;

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

    /// Which Java keys take effect at once follows from where their values land, not from a
    /// flag: this pins the list the README gives.
    #[test]
    fn live_keys_are_those_the_registry_applies() {
        let config = Config::default();
        let live: Vec<&str> = JAVA_KEYS
            .iter()
            .filter(|key| {
                let probe = match key.kind {
                    Kind::Bool => match get_path(&Value::try_from(&config).unwrap(), key.ours) {
                        Some(Value::Boolean(true)) => "false",
                        _ => "true",
                    },
                    Kind::Count | Kind::Millis | Kind::Seconds => "7",
                    Kind::Path | Kind::Text | Kind::Lower => "probe",
                };
                let updated = with_value(&config, key, probe).unwrap();
                assert_ne!(updated, config, "{} must change something", key.java);
                applies_at_once(&config, &updated)
            })
            .map(|key| key.java)
            .collect();
        assert_eq!(
            live,
            [
                "orderMessageEnable",
                "returnOrderTopicConfigToBroker",
                "supportActingMaster",
                "enableAllTopicList",
                "enableTopicList",
                "notifyMinBrokerIdChanged",
                "needWaitForService",
                "waitSecondsForService",
                "deleteTopicWithBrokerRegistration",
            ]
        );
    }

    #[test]
    fn keys_without_effect_are_listed_with_why() {
        let (table, extra) = properties_to_toml(&props(&[
            ("listenPort", "19876"),
            ("defaultThreadPoolNums", "16"),
            ("jRaftElectionTimeoutMs", "1000"),
            ("controllerDLegerPeers", "n0-127.0.0.1:9878"),
            ("lisenPort", "1"),
            ("notifyMinBrokerIdChanged", "true"),
        ]))
        .unwrap();
        let mut config: Config = Value::Table(table).try_into().unwrap();
        config.java_extra = extra;
        let found = no_effect_keys(&config);
        let names: Vec<&str> = found.iter().map(|n| n.java.as_str()).collect();
        assert_eq!(
            names,
            [
                "defaultThreadPoolNums",
                "jRaftElectionTimeoutMs",
                "lisenPort"
            ]
        );
        assert!(config.registry.notify_min_broker_id_changed);
        // controllerDLegerPeers is the controller's (controller.peers), not without effect.
        assert_eq!(config.controller.peers, "n0-127.0.0.1:9878");
        assert!(found[0].reason.contains("thread-pool"));
        assert!(found[1].reason.contains("controller"));
        assert!(found[2].reason.contains("typo"));
        assert!(no_effect_keys(&Config::default()).is_empty());
        // No key is both mapped and listed as without effect.
        for (java, _) in crate::java_keys::NO_EFFECT_KEYS {
            assert!(find(java).is_none(), "{java}");
        }
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
            "tls.server.mode",
            "TLS.ENABLE",
            "storePathRootDir",
            "logFile",
        ] {
            assert!(list.contains(key), "{key}");
        }
        assert!(!list.contains("enableTopicList"));
    }
}
