//! The settings of the actors, each defined once: the `[server]`, `[registry]` and `[kv]`
//! sections of `config.toml` as serde structs (durations as humantime strings), their defaults
//! and their checks. The daemon's `Config` composes them, as rumqttd's config composes its
//! router's; the actors take them as they are.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rmq_protocol::code::{version, SerializeType};
use rmq_protocol::codec::DEFAULT_MAX_FRAME;
use serde::{Deserialize, Serialize};

use crate::route::{RouteOptions, DEFAULT_BROKER_EXPIRY};

pub use rmq_transport::InvalidSetting;

/// Bytes of encoded route bodies each connection thread's route cache holds by default.
pub const DEFAULT_ROUTE_CACHE_BYTES: usize = 64 * 1024 * 1024;

fn invalid(key: &'static str, reason: impl Into<String>) -> InvalidSetting {
    InvalidSetting::new(key, reason)
}

// ---------------------------------------------------------------------------------------------
// [server]

/// How response headers are serialized (Java: `rocketmq.serialize.type`, always JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseSerialize {
    /// The serialize type of the request (JSON requests, which every C++ client sends, get JSON).
    #[default]
    Mirror,
    /// Always JSON, like a Java server.
    Json,
    /// Always the binary ROCKETMQ form.
    Rocketmq,
}

impl ResponseSerialize {
    /// The serialize type of the response to a request of `request`'s type.
    pub fn for_request(self, request: SerializeType) -> SerializeType {
        match self {
            Self::Mirror => request,
            Self::Json => SerializeType::Json,
            Self::Rocketmq => SerializeType::RocketMq,
        }
    }
}

/// The listening socket, the connection threads and per-connection limits (Java:
/// `NettyServerConfig`). The listener and every connection read it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerSettings {
    /// Address to listen on (Java: `bindAddress` + `listenPort`).
    pub listen: SocketAddr,
    /// Threads running connections; 0 = one per CPU (Java: `serverWorkerThreads`).
    pub workers: usize,
    /// Open connections beyond this are refused.
    pub max_connections: usize,
    /// Open connections from one source address beyond this are refused; 0 = no limit (the
    /// default: brokers and clients behind one NAT or on one host are normal).
    pub max_connections_per_source: usize,
    /// Largest frame accepted, in bytes, length field included (Java:
    /// `com.rocketmq.remoting.frameMaxLength`).
    pub max_frame_bytes: usize,
    /// Largest inflated size of a compressed registration body, in bytes.
    pub max_inflated_body_bytes: usize,
    /// Registration bodies being decoded at once by the whole server, in bytes (a compressed
    /// body counts what it may inflate to, a plain one of 64 KiB or more its length); a body
    /// that does not fit is answered SYSTEM_BUSY "[OVERLOAD]".
    pub max_decoding_bytes: usize,
    /// Bytes queued for peers by the whole server beyond a small allowance per connection; over
    /// it, connections with answers queued stop being read until their peer takes them.
    pub max_queued_bytes: usize,
    /// Requests waiting for an actor, server-wide, beyond which reads are answered
    /// SYSTEM_BUSY "[OVERLOAD]".
    pub max_pending_reads: usize,
    /// The same for registrations and admin requests (lower than reads: reads keep priority).
    pub max_pending_writes: usize,
    /// Requests of one connection processed at once; reading pauses beyond it.
    pub max_in_flight: usize,
    /// Close a connection with no traffic for this long; "0s" never (Java:
    /// `serverChannelMaxIdleTimeSeconds`).
    #[serde(with = "humantime_serde")]
    pub idle_timeout: Duration,
    /// Close a connection that began a frame and did not complete it within this; "0s" never.
    #[serde(with = "humantime_serde")]
    pub frame_timeout: Duration,
    /// Close a connection whose queued answers its peer has not taken for this long; "0s" never.
    #[serde(with = "humantime_serde")]
    pub write_timeout: Duration,
    /// `MQVersion` ordinal put in every response (513 = V5_5_0, what Java 5.5.0 sends).
    pub advertised_version: i32,
    /// Serialize type of response headers: "mirror", "json" or "rocketmq".
    pub response_serialize: ResponseSerialize,
    /// How long a graceful stop waits for connections to close.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// Drain before stopping: for `shutdown_wait`, requests of 5.x clients (newer than 5.3.1) on
    /// connections opened before the stop get GO_AWAY, so they reconnect and retry (Java:
    /// `enableShutdownGracefully`).
    pub shutdown_gracefully: bool,
    /// How long the drain lasts (Java: `shutdownWaitTimeSeconds`).
    #[serde(with = "humantime_serde")]
    pub shutdown_wait: Duration,
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([0, 0, 0, 0], 9876)),
            workers: 0,
            max_connections: 65_536,
            max_connections_per_source: 0,
            max_frame_bytes: DEFAULT_MAX_FRAME,
            max_inflated_body_bytes: DEFAULT_MAX_FRAME,
            max_decoding_bytes: 2 * DEFAULT_MAX_FRAME,
            max_queued_bytes: 256 << 20,
            max_pending_reads: 8192,
            max_pending_writes: 2048,
            max_in_flight: 1024,
            idle_timeout: Duration::from_secs(120),
            frame_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(30),
            advertised_version: version::V5_5_0,
            response_serialize: ResponseSerialize::Mirror,
            shutdown_grace: Duration::from_secs(5),
            shutdown_gracefully: false,
            shutdown_wait: Duration::from_secs(30),
        }
    }
}

impl ServerSettings {
    /// The idle timeout, `None` for never.
    pub fn idle_timeout(&self) -> Option<Duration> {
        (!self.idle_timeout.is_zero()).then_some(self.idle_timeout)
    }

    /// The frame timeout, `None` for never.
    pub fn frame_timeout(&self) -> Option<Duration> {
        (!self.frame_timeout.is_zero()).then_some(self.frame_timeout)
    }

    /// The write timeout, `None` for never.
    pub fn write_timeout(&self) -> Option<Duration> {
        (!self.write_timeout.is_zero()).then_some(self.write_timeout)
    }

    /// Worker threads for connections: the configured number, or one per CPU.
    pub fn worker_count(&self) -> usize {
        match self.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// Checks ranges and relations the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.max_frame_bytes < 1024 || self.max_frame_bytes > i32::MAX as usize {
            return Err(invalid(
                "server.max_frame_bytes",
                "must be between 1024 and 2147483647",
            ));
        }
        if self.max_inflated_body_bytes < self.max_frame_bytes {
            return Err(invalid(
                "server.max_inflated_body_bytes",
                "must be at least server.max_frame_bytes",
            ));
        }
        if self.max_decoding_bytes < self.max_inflated_body_bytes {
            return Err(invalid(
                "server.max_decoding_bytes",
                "must be at least server.max_inflated_body_bytes",
            ));
        }
        if self.max_queued_bytes < 1 << 20 {
            return Err(invalid(
                "server.max_queued_bytes",
                "must be at least 1048576",
            ));
        }
        if self.max_pending_reads == 0 {
            return Err(invalid("server.max_pending_reads", "must be at least 1"));
        }
        if self.max_pending_writes == 0 {
            return Err(invalid("server.max_pending_writes", "must be at least 1"));
        }
        if self.max_in_flight == 0 {
            return Err(invalid("server.max_in_flight", "must be at least 1"));
        }
        if self.max_connections == 0 {
            return Err(invalid("server.max_connections", "must be at least 1"));
        }
        if self.shutdown_wait > Duration::from_secs(3600) {
            return Err(invalid("server.shutdown_wait", "must be at most 1h"));
        }
        if self.workers > 1024 {
            return Err(invalid("server.workers", "must be at most 1024"));
        }
        if !(0..=i32::from(i16::MAX)).contains(&self.advertised_version) {
            return Err(invalid(
                "server.advertised_version",
                "must be between 0 and 32767",
            ));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// [registry]

/// The route registry, expiry and the Java `NamesrvConfig` switches. The registry owns the whole
/// struct: an `ApplySettings` replaces it, and it reads every field from it when it needs it, so
/// everything here takes effect at once except `scan_interval`, which Housekeeping reads when it
/// starts (see [`RegistrySettings::start_only_changed`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct RegistrySettings {
    /// A broker silent for this long is dropped, unless it registered its own timeout (Java:
    /// 120 s, fixed).
    #[serde(with = "humantime_serde")]
    pub broker_expiry: Duration,
    /// Period of the expiry scan (Java: `scanNotActiveBrokerInterval`).
    #[serde(with = "humantime_serde")]
    pub scan_interval: Duration,
    /// Bytes of encoded route bodies each connection thread keeps in its route cache (read at
    /// start).
    pub route_cache_bytes: usize,
    /// Fill `orderTopicConf` in routes from the ORDER_TOPIC_CONFIG KV namespace (Java:
    /// `orderMessageEnable`).
    pub order_message_enable: bool,
    /// Answer REGISTER_BROKER with the ORDER_TOPIC_CONFIG namespace as body (Java:
    /// `returnOrderTopicConfigToBroker`).
    pub return_order_topic_config_to_broker: bool,
    /// Show a master-less group's lowest-id slave as id 0 in routes (Java:
    /// `supportActingMaster`).
    pub support_acting_master: bool,
    /// Answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER (Java: `enableAllTopicList`).
    pub enable_all_topic_list: bool,
    /// Answer GET_TOPICS_BY_CLUSTER and the unit topic lists (Java: `enableTopicList`).
    pub enable_topic_list: bool,
    /// Tell a broker group's members of a change of its smallest broker id with
    /// NOTIFY_MIN_BROKER_ID_CHANGE, by Java's rules (Java: `notifyMinBrokerIdChanged`).
    pub notify_min_broker_id_changed: bool,
    /// Refuse route queries for `wait_for_service` after start (Java: `needWaitForService`).
    pub need_wait_for_service: bool,
    /// Java: `waitSecondsForService`.
    #[serde(with = "humantime_serde")]
    pub wait_for_service: Duration,
    /// A registration that omits a topic removes the broker from it (Java:
    /// `deleteTopicWithBrokerRegistration`).
    pub delete_topic_with_broker_registration: bool,
    /// Warm restart (docs/route-rules.md#warm-restart): the tables are written to
    /// `snapshot_path` at a graceful stop and every `snapshot_interval`, and served at once at
    /// the next start, each broker unconfirmed until it registers.
    pub warm_restart: bool,
    /// The snapshot file (`~/` is the home directory).
    pub snapshot_path: PathBuf,
    /// How often the tables are written, when they changed.
    #[serde(with = "humantime_serde")]
    pub snapshot_interval: Duration,
    /// How long a restored broker is served without a registration confirming it.
    #[serde(with = "humantime_serde")]
    pub restore_grace: Duration,
}

impl Default for RegistrySettings {
    fn default() -> Self {
        Self {
            broker_expiry: DEFAULT_BROKER_EXPIRY,
            scan_interval: Duration::from_secs(5),
            route_cache_bytes: DEFAULT_ROUTE_CACHE_BYTES,
            order_message_enable: false,
            return_order_topic_config_to_broker: true,
            support_acting_master: false,
            enable_all_topic_list: true,
            enable_topic_list: true,
            notify_min_broker_id_changed: false,
            need_wait_for_service: false,
            wait_for_service: Duration::from_secs(45),
            delete_topic_with_broker_registration: false,
            warm_restart: false,
            snapshot_path: PathBuf::from("~/rmq-namesrv/routes.json"),
            snapshot_interval: Duration::from_secs(30),
            restore_grace: Duration::from_secs(60),
        }
    }
}

impl RegistrySettings {
    /// The switches the route rules read.
    pub fn route_options(&self) -> RouteOptions {
        RouteOptions {
            delete_topic_with_broker_registration: self.delete_topic_with_broker_registration,
            support_acting_master: self.support_acting_master,
        }
    }

    /// Whether going from `self` to `new` changes a field a running server reads only at start
    /// (the expiry scan's period); every other field a registry applies from `ApplySettings`.
    pub fn start_only_changed(&self, new: &Self) -> bool {
        self.scan_interval != new.scan_interval
            || self.warm_restart != new.warm_restart
            || self.snapshot_path != new.snapshot_path
            || self.snapshot_interval != new.snapshot_interval
    }

    /// Checks ranges the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.scan_interval < Duration::from_millis(10) {
            return Err(invalid("registry.scan_interval", "must be at least 10ms"));
        }
        if self.broker_expiry.is_zero() {
            return Err(invalid("registry.broker_expiry", "must be greater than 0"));
        }
        if self.snapshot_interval < Duration::from_secs(1) {
            return Err(invalid("registry.snapshot_interval", "must be at least 1s"));
        }
        if self.restore_grace.is_zero() {
            return Err(invalid("registry.restore_grace", "must be greater than 0"));
        }
        if self.warm_restart && self.snapshot_path.as_os_str().is_empty() {
            return Err(invalid("registry.snapshot_path", "must not be empty"));
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// [kv]

/// Where the KV config lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KvBackend {
    /// `kv.path`, this NameServer's own file (Java's behaviour).
    #[default]
    File,
    /// etcd at `kv.etcd_endpoints`, under `kv.etcd_prefix`: one KV config shared by every
    /// NameServer configured alike.
    Etcd,
}

/// The KV store and the runtime-config file (Java: `kvConfigPath`, `configStorePath`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct KvSettings {
    /// The KV file, Java's kvConfig.json format. `~/` means the home directory.
    pub path: PathBuf,
    /// Where UPDATE_NAMESRV_CONFIG persists the configuration, as Java properties.
    pub config_store_path: PathBuf,
    /// Period of the log line listing the whole KV table (Java: 10 minutes).
    #[serde(with = "humantime_serde")]
    pub print_interval: Duration,
    /// Where the KV config lives: "file" (`path`) or "etcd" (shared by a fleet).
    pub backend: KvBackend,
    /// etcd's client addresses, `host:port` separated by `,` or `;`; required with the etcd
    /// backend.
    pub etcd_endpoints: String,
    /// The etcd key prefix the KV config lives under.
    pub etcd_prefix: String,
}

/// The default of `kv.etcd_prefix`.
pub const DEFAULT_KV_ETCD_PREFIX: &str = "/rmq-namesrv/kv";

impl Default for KvSettings {
    fn default() -> Self {
        Self {
            path: PathBuf::from("~/namesrv/kvConfig.json"),
            config_store_path: PathBuf::from("~/namesrv/namesrv.properties"),
            print_interval: Duration::from_secs(600),
            backend: KvBackend::File,
            etcd_endpoints: String::new(),
            etcd_prefix: DEFAULT_KV_ETCD_PREFIX.to_owned(),
        }
    }
}

impl KvSettings {
    /// etcd's endpoints, trimmed, empty entries dropped.
    pub fn etcd_endpoint_list(&self) -> Vec<String> {
        etcd_endpoint_list(&self.etcd_endpoints)
    }

    /// Checks ranges the types cannot express.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if self.print_interval < Duration::from_secs(1) {
            return Err(invalid("kv.print_interval", "must be at least 1s"));
        }
        if self.path.as_os_str().is_empty() {
            return Err(invalid("kv.path", "must not be empty"));
        }
        if self.config_store_path.as_os_str().is_empty() {
            return Err(invalid("kv.config_store_path", "must not be empty"));
        }
        let endpoints = self.etcd_endpoint_list();
        check_etcd_endpoints("kv.etcd_endpoints", &endpoints)?;
        if self.backend == KvBackend::Etcd && endpoints.is_empty() {
            return Err(invalid(
                "kv.etcd_endpoints",
                "required when kv.backend = \"etcd\" (e.g. \"127.0.0.1:2379\")",
            ));
        }
        if !self.etcd_prefix.starts_with('/') || self.etcd_prefix.trim_end_matches('/').is_empty() {
            return Err(invalid(
                "kv.etcd_prefix",
                format!(
                    "must start with / and name more than the root (e.g. {DEFAULT_KV_ETCD_PREFIX})"
                ),
            ));
        }
        Ok(())
    }
}

/// etcd client addresses of a setting (`kv.etcd_endpoints`, `controller.etcd_endpoints`):
/// `host:port` separated by `,` or `;`, trimmed, empty entries dropped.
pub fn etcd_endpoint_list(text: &str) -> Vec<String> {
    text.split([',', ';'])
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Refuses, naming `key`, an etcd address with spaces in it or an unknown scheme (whether
/// `https://` fits the TLS settings is the `[etcd]` section's check,
/// [`EtcdAccess::check_endpoints`](crate::etcd_access::EtcdAccess::check_endpoints)).
pub fn check_etcd_endpoints(key: &'static str, endpoints: &[String]) -> Result<(), InvalidSetting> {
    for endpoint in endpoints {
        if endpoint.chars().any(char::is_whitespace) {
            return Err(invalid(
                key,
                format!("{endpoint:?} is not an etcd address (host:port)"),
            ));
        }
        if let Some((scheme, _)) = endpoint.split_once("://") {
            if scheme != "http" && scheme != "https" {
                return Err(invalid(
                    key,
                    format!("{endpoint}: unknown scheme {scheme}:// (http:// or https://)"),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a configuration key names a place on disk (a file, path, directory or home): no
/// runtime update may change one, whatever the black list says (CVE-2023-37582 wrote a file
/// through such a key).
pub fn names_a_location(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    ["path", "file", "dir", "home"]
        .iter()
        .any(|w| lower.contains(w))
}

/// What every runtime configuration update (UPDATE_NAMESRV_CONFIG, UPDATE_CONTROLLER_CONFIG)
/// must be, whatever its keys: keys and values without line breaks or other control
/// characters (a value holding one has no business in a setting, and would become a line of
/// its own in a writer that forgot to escape it), within `stored::MAX_NAME_BYTES` and
/// `stored::MAX_SETTING_BYTES`. The reason, naming the key, when not.
pub fn check_update(props: &std::collections::BTreeMap<String, String>) -> Result<(), String> {
    use rmq_protocol::properties::control_char;
    for (key, value) in props {
        if let Some(c) = control_char(key).or(control_char(value)) {
            return Err(format!(
                "invalid value for {key}: {c:?}: a line break or control character has no place in a setting"
            ));
        }
        crate::stored::name("a configuration key", key).map_err(|e| e.to_string())?;
        crate::stored::bounded(key, value, crate::stored::MAX_SETTING_BYTES)
            .map_err(|e| format!("invalid value for {e}"))?;
    }
    Ok(())
}

/// Expands a leading `~/` to the home directory (Java's `${user.home}`).
pub fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default()
            .join(rest),
        Err(_) => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_their_keys() {
        let server = ServerSettings {
            max_frame_bytes: 10,
            ..ServerSettings::default()
        };
        assert_eq!(server.validate().unwrap_err().key, "server.max_frame_bytes");
        let registry = RegistrySettings {
            scan_interval: Duration::ZERO,
            ..RegistrySettings::default()
        };
        assert_eq!(
            registry.validate().unwrap_err().key,
            "registry.scan_interval"
        );
        let kv = KvSettings {
            path: PathBuf::new(),
            ..KvSettings::default()
        };
        assert_eq!(kv.validate().unwrap_err().key, "kv.path");
        let etcd = KvSettings {
            backend: KvBackend::Etcd,
            etcd_endpoints: " ; ".into(),
            ..KvSettings::default()
        };
        let err = etcd.validate().unwrap_err();
        assert_eq!(err.key, "kv.etcd_endpoints");
        let etcd = KvSettings {
            etcd_endpoints: "127.0.0.1:2379, 127.0.0.1:22379".into(),
            etcd_prefix: "/".into(),
            ..etcd
        };
        assert_eq!(
            etcd.etcd_endpoint_list(),
            ["127.0.0.1:2379", "127.0.0.1:22379"]
        );
        assert_eq!(etcd.validate().unwrap_err().key, "kv.etcd_prefix");
        assert!(KvSettings {
            etcd_prefix: DEFAULT_KV_ETCD_PREFIX.into(),
            ..etcd
        }
        .validate()
        .is_ok());
        assert!(ServerSettings::default().validate().is_ok());
        assert!(RegistrySettings::default().validate().is_ok());
        assert!(KvSettings::default().validate().is_ok());
    }

    #[test]
    fn response_serialize_follows_the_request_or_is_fixed() {
        use SerializeType::{Json, RocketMq};
        assert_eq!(ResponseSerialize::Mirror.for_request(RocketMq), RocketMq);
        assert_eq!(ResponseSerialize::Json.for_request(RocketMq), Json);
        assert_eq!(ResponseSerialize::Rocketmq.for_request(Json), RocketMq);
    }

    #[test]
    fn idle_timeout_zero_is_never() {
        let server = ServerSettings {
            idle_timeout: Duration::ZERO,
            ..ServerSettings::default()
        };
        assert_eq!(server.idle_timeout(), None);
        assert_eq!(
            ServerSettings::default().idle_timeout(),
            Some(Duration::from_secs(120))
        );
    }

    #[test]
    fn home_expansion() {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        assert_eq!(
            expand_home(Path::new("~/namesrv/kv.json")),
            home.join("namesrv/kv.json")
        );
        assert_eq!(expand_home(Path::new("/tmp/x")), PathBuf::from("/tmp/x"));
    }
}
