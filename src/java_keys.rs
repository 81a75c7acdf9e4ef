//! The Java names of our settings: the `NamesrvConfig` / `NettyServerConfig` properties our keys
//! replace, how their values convert, and a Java `namesrv.properties` read as our TOML. Pure
//! tables and conversions over TOML values; the `java_props` module builds on them for
//! GET_NAMESRV_CONFIG and UPDATE_NAMESRV_CONFIG.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use rmq_transport::TlsSettings;
use toml::Value;

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
    /// A word of a list (a mode), any case in Java, lower case in ours.
    Lower,
}

/// One Java property with an equivalent of ours.
#[derive(Debug, Clone, Copy)]
pub struct JavaKey {
    pub java: &'static str,
    /// Our key, `section.key`.
    pub ours: &'static str,
    pub kind: Kind,
}

const fn key(java: &'static str, ours: &'static str, kind: Kind) -> JavaKey {
    JavaKey { java, ours, kind }
}

/// Every Java property we map, except `bindAddress`/`listenPort` (together `server.listen`).
pub const JAVA_KEYS: &[JavaKey] = &[
    key(
        "orderMessageEnable",
        "registry.order_message_enable",
        Kind::Bool,
    ),
    key(
        "returnOrderTopicConfigToBroker",
        "registry.return_order_topic_config_to_broker",
        Kind::Bool,
    ),
    key(
        "supportActingMaster",
        "registry.support_acting_master",
        Kind::Bool,
    ),
    key(
        "enableAllTopicList",
        "registry.enable_all_topic_list",
        Kind::Bool,
    ),
    key("enableTopicList", "registry.enable_topic_list", Kind::Bool),
    key(
        "notifyMinBrokerIdChanged",
        "registry.notify_min_broker_id_changed",
        Kind::Bool,
    ),
    key(
        "needWaitForService",
        "registry.need_wait_for_service",
        Kind::Bool,
    ),
    key(
        "waitSecondsForService",
        "registry.wait_for_service",
        Kind::Seconds,
    ),
    key(
        "deleteTopicWithBrokerRegistration",
        "registry.delete_topic_with_broker_registration",
        Kind::Bool,
    ),
    key(
        "scanNotActiveBrokerInterval",
        "registry.scan_interval",
        Kind::Millis,
    ),
    key("kvConfigPath", "kv.path", Kind::Path),
    key("configStorePath", "kv.config_store_path", Kind::Path),
    key("configBlackList", "admin.config_black_list", Kind::Text),
    key("clusterTest", "cluster_test.enabled", Kind::Bool),
    key(
        "productEnvName",
        "cluster_test.product_env_name",
        Kind::Text,
    ),
    key("serverWorkerThreads", "server.workers", Kind::Count),
    key(
        "serverChannelMaxIdleTimeSeconds",
        "server.idle_timeout",
        Kind::Seconds,
    ),
    key(
        "enableShutdownGracefully",
        "server.shutdown_gracefully",
        Kind::Bool,
    ),
    key(
        "shutdownWaitTimeSeconds",
        "server.shutdown_wait",
        Kind::Seconds,
    ),
    key(
        "enableControllerInNamesrv",
        "controller.enabled",
        Kind::Bool,
    ),
];

/// The embedded controller's Java properties (`ControllerConfig`), ours under `[controller]`,
/// and our etcd keys. Read from a `.properties` file given to `--config`; the controller's own
/// GET_CONTROLLER_CONFIG shows them, GET_NAMESRV_CONFIG does not (as in Java).
pub const CONTROLLER_PROPERTY_KEYS: &[JavaKey] = &[
    key("controllerType", "controller.type", Kind::Text),
    key("controllerDLegerGroup", "controller.group", Kind::Text),
    key("controllerDLegerPeers", "controller.peers", Kind::Text),
    key("controllerDLegerSelfId", "controller.self_id", Kind::Text),
    key("controllerStorePath", "controller.store_path", Kind::Path),
    key(
        "enableElectUncleanMaster",
        "controller.elect_unclean_master",
        Kind::Bool,
    ),
    key(
        "notifyBrokerRoleChanged",
        "controller.notify_broker_role_changed",
        Kind::Bool,
    ),
    key(
        "scanInactiveMasterInterval",
        "controller.scan_inactive_master_interval",
        Kind::Millis,
    ),
    key(
        "electMasterMaxRetryCount",
        "controller.elect_master_max_retry_count",
        Kind::Count,
    ),
    key(
        "controllerEtcdEndpoints",
        "controller.etcd_endpoints",
        Kind::Text,
    ),
    key("controllerEtcdPrefix", "controller.etcd_prefix", Kind::Text),
    // Ours: in a NameServer's file `configStorePath` is the NameServer's (kv.config_store_path).
    key(
        "controllerConfigStorePath",
        "controller.config_store_path",
        Kind::Path,
    ),
    key(
        "controllerEtcdLeaseTtl",
        "controller.etcd_lease_ttl",
        Kind::Text,
    ),
];

/// Our KV backend keys (no Java equivalent: Java keeps the KV in each NameServer's own file),
/// ours under `[kv]`. Read from a `.properties` file given to `--config`; not shown by
/// GET_NAMESRV_CONFIG and not updated by UPDATE_NAMESRV_CONFIG, like the controller's.
pub const KV_PROPERTY_KEYS: &[JavaKey] = &[
    key("kvBackend", "kv.backend", Kind::Lower),
    key("kvEtcdEndpoints", "kv.etcd_endpoints", Kind::Text),
    key("kvEtcdPrefix", "kv.etcd_prefix", Kind::Text),
];

/// Our `[etcd]` keys (TLS and user towards etcd, for the controller's store and the KV backend;
/// no Java equivalent). Read from a `.properties` file given to `--config`; never shown by
/// GET_NAMESRV_CONFIG or GET_CONTROLLER_CONFIG, never updated at run time; the password is
/// never printed.
pub const ETCD_PROPERTY_KEYS: &[JavaKey] = &[
    key("etcdCaFile", "etcd.ca_file", Kind::Path),
    key("etcdCertFile", "etcd.cert_file", Kind::Path),
    key("etcdKeyFile", "etcd.key_file", Kind::Path),
    key("etcdUser", "etcd.user", Kind::Text),
    key("etcdPassword", "etcd.password", Kind::Text),
    key("etcdPasswordFile", "etcd.password_file", Kind::Path),
];

/// Java's `tls.*` system properties (Java: `TlsSystemConfig`), ours under `[tls]`. Accepted in a
/// `.properties` file given to `--config` and in the file `tls.config.file` names; never shown by
/// GET_NAMESRV_CONFIG (Java does not show them either) and never updated by
/// UPDATE_NAMESRV_CONFIG.
pub const TLS_KEYS: &[JavaKey] = &[
    key("tls.server.mode", "tls.mode", Kind::Lower),
    key("tls.server.certPath", "tls.cert_path", Kind::Path),
    key("tls.server.keyPath", "tls.key_path", Kind::Path),
    key("tls.server.keyPassword", "tls.key_password", Kind::Text),
    key(
        "tls.server.need.client.auth",
        "tls.need_client_auth",
        Kind::Lower,
    ),
    key("tls.server.authClient", "tls.auth_client", Kind::Bool),
    key(
        "tls.server.trustCertPath",
        "tls.trust_cert_path",
        Kind::Path,
    ),
    key("tls.test.mode.enable", "tls.test_mode", Kind::Bool),
    key("tls.config.file", "tls.config_file", Kind::Path),
    key("tls.enable", "tls.client.enable", Kind::Bool),
    key("tls.client.certPath", "tls.client.cert_path", Kind::Path),
    key("tls.client.keyPath", "tls.client.key_path", Kind::Path),
    key(
        "tls.client.keyPassword",
        "tls.client.key_password",
        Kind::Text,
    ),
    key(
        "tls.client.authServer",
        "tls.client.auth_server",
        Kind::Bool,
    ),
    key(
        "tls.client.trustCertPath",
        "tls.client.trust_cert_path",
        Kind::Path,
    ),
];

/// Java properties (`NamesrvConfig`, `NettyServerConfig`) a `.properties` file may set that we
/// accept and keep (GET_NAMESRV_CONFIG shows them, as Java does) but that change nothing here,
/// each with why; the daemon warns about each one given, at start.
pub const NO_EFFECT_KEYS: &[(&str, &str)] = &[
    (
        "clientRequestThreadPoolNums",
        "thread-pool size: requests are served by the connection threads (server.workers) and the actors",
    ),
    (
        "defaultThreadPoolNums",
        "thread-pool size: requests are served by the connection threads (server.workers) and the actors",
    ),
    (
        "clientRequestThreadPoolQueueCapacity",
        "thread-pool queue: waiting requests are bounded by server.max_pending_reads",
    ),
    (
        "defaultThreadPoolQueueCapacity",
        "thread-pool queue: waiting requests are bounded by server.max_pending_reads",
    ),
    (
        "unRegisterBrokerQueueCapa",
        "unregistrations are applied before the reply, without a queue",
    ),
    (
        "serverCallbackExecutorThreads",
        "thread-pool size: the NameServer sends no requests that take callbacks",
    ),
    (
        "serverSelectorThreads",
        "Netty selector threads: each connection thread (server.workers) polls its own sockets",
    ),
    (
        "serverOnewaySemaphoreValue",
        "Netty semaphore: requests in flight are bounded by server.max_in_flight",
    ),
    (
        "serverAsyncSemaphoreValue",
        "Netty semaphore: requests in flight are bounded by server.max_in_flight",
    ),
    ("serverSocketSndBufSize", "socket buffers are the OS defaults"),
    ("serverSocketRcvBufSize", "socket buffers are the OS defaults"),
    (
        "writeBufferHighWaterMark",
        "Netty write buffer: queued answers are bounded by server.max_queued_bytes",
    ),
    (
        "writeBufferLowWaterMark",
        "Netty write buffer: queued answers are bounded by server.max_queued_bytes",
    ),
    ("serverSocketBacklog", "the listen backlog is the runtime's default"),
    ("serverNettyWorkerGroupEnable", "Netty only"),
    ("serverPooledByteBufAllocatorEnable", "Netty only"),
    ("useEpollNativeSelector", "Netty only (tokio uses epoll on Linux anyway)"),
    (
        "rocketmqHome",
        "Java reads its logback configuration there; logging here is the [log] section",
    ),
];

/// Keys of Java's `ControllerConfig` (read from namesrv.properties when the controller runs in
/// the NameServer) without the `controller`/`jRaft`/`metric` prefixes.
const CONTROLLER_KEYS: &[&str] = &["isProcessReadEvent", "mappedFileSize", "processReadEvent"];

/// Why a Java property we do not map has no effect here: a known Java setting without an
/// equivalent, a key of the embedded controller (not built), or a key we do not know.
pub fn no_effect_reason(java: &str) -> &'static str {
    if let Some((_, reason)) = NO_EFFECT_KEYS.iter().find(|(key, _)| *key == java) {
        reason
    } else if java.starts_with("controller")
        || java.starts_with("jRaft")
        || java.starts_with("jraft")
        || java.starts_with("metric")
        || CONTROLLER_KEYS.contains(&java)
    {
        "a setting of the embedded controller this server does not use (DLedger/jRaft \
         internals, metrics exporters)"
    } else {
        "not a NameServer setting this server knows (a typo?)"
    }
}

/// A Java value that does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid value {value:?} for {key}: {reason}")]
pub struct JavaValueError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

pub fn value_error(key: &str, value: &str, reason: impl Into<String>) -> JavaValueError {
    JavaValueError {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

/// The key of a Java property, `tls.*` ones included.
pub fn find(java: &str) -> Option<&'static JavaKey> {
    JAVA_KEYS.iter().chain(TLS_KEYS).find(|k| k.java == java)
}

/// Converts a Java value to the TOML value of our key.
pub fn to_ours(key: &JavaKey, text: &str) -> Result<Value, JavaValueError> {
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
        Kind::Lower => Value::String(text.to_ascii_lowercase()),
    })
}

pub fn get_path<'a>(root: &'a Value, dotted: &str) -> Option<&'a Value> {
    dotted.split('.').try_fold(root, |v, part| v.get(part))
}

pub fn set_path(root: &mut Value, dotted: &str, value: Value) {
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
        let controller = CONTROLLER_PROPERTY_KEYS
            .iter()
            .chain(KV_PROPERTY_KEYS)
            .chain(ETCD_PROPERTY_KEYS)
            .find(|k| k.java == java);
        match find(java).or(controller) {
            Some(key) => set_path(&mut root, key.ours, to_ours(key, text)?),
            None if java == "bindAddress" || java == "listenPort" => {}
            None => {
                extra.insert(java.clone(), text.clone());
            }
        }
    }
    // Java reads one properties file into the NameServer's and the controller's settings
    // alike: its `configBlackList` is both black lists.
    if let Some(list) = props.get("configBlackList") {
        set_path(
            &mut root,
            "controller.config_black_list",
            Value::String(list.clone()),
        );
    }
    let Value::Table(table) = root else {
        return Ok((toml::Table::new(), extra));
    };
    Ok((table, extra))
}

/// `tls` with the `tls.*` keys of the file `tls.config_file` names applied over it (Java reads
/// that file at start and at every reload, and its values win). A missing file changes nothing.
pub fn tls_with_config_file(tls: &TlsSettings) -> Result<TlsSettings, String> {
    let Some(path) = &tls.config_file else {
        return Ok(tls.clone());
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(tls.clone()),
        Err(err) => {
            return Err(format!(
                "cannot read tls.config.file {}: {err}",
                path.display()
            ))
        }
    };
    let props = rmq_protocol::properties::parse(&text)
        .map_err(|e| format!("tls.config.file {}: {e}", path.display()))?;
    apply_tls_properties(tls, &props)
        .map_err(|e| format!("tls.config.file {}: {e}", path.display()))
}

/// `tls` with the `tls.*` properties of `props` (other keys, and `tls.config.file` itself,
/// ignored).
pub fn apply_tls_properties(
    tls: &TlsSettings,
    props: &BTreeMap<String, String>,
) -> Result<TlsSettings, JavaValueError> {
    let mut root = Value::try_from(tls).map_err(|e| value_error("tls", "", e.to_string()))?;
    for (java, text) in props {
        let Some(key) = TLS_KEYS.iter().find(|k| k.java == java) else {
            continue;
        };
        if key.java == "tls.config.file" {
            continue;
        }
        let ours = key.ours.strip_prefix("tls.").unwrap_or(key.ours);
        set_path(&mut root, ours, to_ours(key, text)?);
    }
    let mut updated: TlsSettings = root
        .try_into()
        .map_err(|e: toml::de::Error| value_error("tls", "", e.to_string()))?;
    // Passwords are never serialized: keep the ones the file did not set.
    if updated.key_password.is_none() {
        updated.key_password.clone_from(&tls.key_password);
    }
    if updated.client.key_password.is_none() {
        updated
            .client
            .key_password
            .clone_from(&tls.client.key_password);
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_keys_are_named_as_the_controller_s() {
        for key in [
            "controllerDLegerHeartBeatTimeoutMs",
            "mappedFileSize",
            "jRaftElectionTimeoutMs",
            "metricsExporterType",
        ] {
            assert!(no_effect_reason(key).contains("controller"), "{key}");
        }
        // The keys the controller uses are mapped, not without effect.
        for key in [
            "enableControllerInNamesrv",
            "controllerDLegerPeers",
            "enableElectUncleanMaster",
            "notifyBrokerRoleChanged",
            "scanInactiveMasterInterval",
            "electMasterMaxRetryCount",
        ] {
            assert!(
                find(key).is_some() || CONTROLLER_PROPERTY_KEYS.iter().any(|k| k.java == key),
                "{key}"
            );
        }
        assert!(no_effect_reason("listenPortt").contains("typo"));
    }

    #[test]
    fn etcd_keys_become_the_etcd_section() {
        let props: BTreeMap<String, String> = [
            ("controllerEtcdEndpoints", "https://etcd-1:2379"),
            ("etcdCaFile", "/etc/etcd/ca.pem"),
            ("etcdCertFile", "/etc/etcd/client.pem"),
            ("etcdKeyFile", "/etc/etcd/client.key"),
            ("etcdUser", "namesrv"),
            ("etcdPasswordFile", "/run/secrets/etcd"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let (table, extra) = properties_to_toml(&props).unwrap();
        assert!(extra.is_empty(), "{extra:?}");
        let root = Value::Table(table);
        for (ours, value) in [
            ("controller.etcd_endpoints", "https://etcd-1:2379"),
            ("etcd.ca_file", "/etc/etcd/ca.pem"),
            ("etcd.cert_file", "/etc/etcd/client.pem"),
            ("etcd.key_file", "/etc/etcd/client.key"),
            ("etcd.user", "namesrv"),
            ("etcd.password_file", "/run/secrets/etcd"),
        ] {
            assert_eq!(
                get_path(&root, ours).and_then(Value::as_str),
                Some(value),
                "{ours}"
            );
        }
    }

    #[test]
    fn kv_backend_keys_become_the_kv_section() {
        let props: BTreeMap<String, String> = [
            ("kvBackend", "ETCD"),
            ("kvEtcdEndpoints", "127.0.0.1:2379;127.0.0.1:22379"),
            ("kvEtcdPrefix", "/fleet/kv"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let (table, extra) = properties_to_toml(&props).unwrap();
        assert!(extra.is_empty(), "{extra:?}");
        let kv = Value::Table(table);
        assert_eq!(
            get_path(&kv, "kv.backend").and_then(Value::as_str),
            Some("etcd")
        );
        assert_eq!(
            get_path(&kv, "kv.etcd_endpoints").and_then(Value::as_str),
            Some("127.0.0.1:2379;127.0.0.1:22379")
        );
        assert_eq!(
            get_path(&kv, "kv.etcd_prefix").and_then(Value::as_str),
            Some("/fleet/kv")
        );
    }
}
