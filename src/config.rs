//! Configuration: embedded defaults <- config file (`--config`) <- environment (`NAMESRV__...`)
//! <- command-line flags. `config.toml` at the repository root documents every key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

mod fleet;
mod http;
pub use fleet::FleetConfig;
use http::check_host_port;
pub use http::HttpConfig;

pub use crate::controller_config::ControllerConfig;
pub use rmq_actors::access::settings::{AccessSettings, ClassSetting, PolicyKind, Profile};
pub use rmq_actors::etcd_access::EtcdAccess;
pub use rmq_actors::settings::{
    expand_home, InvalidSetting, KvSettings, RegistrySettings, ResponseSerialize, ServerSettings,
};
pub use rmq_transport::{
    ClientAuth, ClientTlsSettings, ProxyMode, ProxyProtocolSettings, TlsMode, TlsSettings,
};

/// A configuration that cannot be used; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Load(#[from] config::ConfigError),
    #[error(transparent)]
    Invalid(#[from] InvalidSetting),
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("config file {path}: {reason}")]
    Properties { path: PathBuf, reason: String },
}

fn invalid(key: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid(InvalidSetting {
        key,
        reason: reason.into(),
    })
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerSettings,
    pub registry: RegistrySettings,
    pub kv: KvSettings,
    pub tls: TlsSettings,
    pub proxy_protocol: ProxyProtocolSettings,
    pub admin: AdminConfig,
    pub cluster_test: ClusterTestConfig,
    pub log: LogConfig,
    pub http: HttpConfig,
    /// The periodic fleet check: drift between this server and its peers (crate::fleet).
    pub fleet: FleetConfig,
    /// Access control: request classes, policies, accounts, the audit log (docs/access.md).
    pub access: AccessSettings,
    /// The embedded 5.x controller (docs/controller.md).
    pub controller: ControllerConfig,
    /// How the server reaches etcd (TLS, user), for the controller's store and the KV store's
    /// etcd backend alike.
    pub etcd: EtcdAccess,
    /// Properties of a Java `namesrv.properties` we have no equivalent for; GET_NAMESRV_CONFIG
    /// shows them, as Java does.
    #[serde(skip)]
    pub java_extra: BTreeMap<String, String>,
}

/// Runtime administration (Java: the `configBlackList` of `NamesrvConfig`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdminConfig {
    /// `;`-separated keys UPDATE_NAMESRV_CONFIG refuses, besides configBlackList,
    /// configStorePath, kvConfigPath, rocketmqHome and any key naming a path or file.
    pub config_black_list: String,
}

impl Default for AdminConfig {
    fn default() -> Self {
        Self {
            config_black_list: "configBlackList;configStorePath;kvConfigPath".into(),
        }
    }
}

/// Cluster-test mode (Java: `clusterTest`, `productEnvName`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClusterTestConfig {
    /// Look route misses up on the product environment's NameServer.
    pub enabled: bool,
    /// Name of the product environment (Java: `productEnvName`).
    pub product_env_name: String,
    /// `;`-separated addresses of the product environment's NameServers (Java finds them with
    /// the client's discovery: NAMESRV_ADDR or an address server).
    pub product_env_namesrv: String,
}

impl Default for ClusterTestConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            product_env_name: "center".into(),
            product_env_namesrv: String::new(),
        }
    }
}

/// Logging (Java: logback, `rmq.namesrv.logback.xml`): stderr, or rotating files in `dir`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter: "info", "debug", "rmq_actors=debug,info", ... (`RUST_LOG` wins).
    pub level: String,
    /// Directory of `rmq-namesrv.log` and its rotated copies (`rmq-namesrv.log.1` is the
    /// newest); created if missing. Empty (the default): log to stderr. With a directory, log
    /// lines go to the files only, as Java's do.
    pub dir: PathBuf,
    /// A file reaching this many bytes is rotated (it also rotates at local midnight).
    pub max_file_size: u64,
    /// Files kept, the current one included; the oldest is deleted at rotation.
    pub max_files: usize,
    /// Line format: text for people, JSON (one object a line) for log shippers.
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".into(),
            dir: PathBuf::new(),
            max_file_size: 128 * 1024 * 1024,
            max_files: 10,
            format: LogFormat::Text,
        }
    }
}

/// Most files `log.max_files` may keep: every rotation renames each of them.
pub const MAX_LOG_FILES: usize = 1000;

impl LogConfig {
    /// The directory of the log files (`~` expanded), or `None` for stderr.
    pub fn file_dir(&self) -> Option<PathBuf> {
        (!self.dir.as_os_str().is_empty()).then(|| expand_home(&self.dir))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if let Err(err) = tracing_subscriber::EnvFilter::try_new(&self.level) {
            return Err(invalid("log.level", err.to_string()));
        }
        if self.max_file_size == 0 {
            return Err(invalid("log.max_file_size", "must be positive"));
        }
        if !(2..=MAX_LOG_FILES).contains(&self.max_files) {
            return Err(invalid(
                "log.max_files",
                format!("must be 2 to {MAX_LOG_FILES} (the current file and rotated ones)"),
            ));
        }
        Ok(())
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// tracing's human-readable lines.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (`message` and the
    /// event's fields), `span`/`spans`.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "text" => Ok(Self::Text),
            "json" => Ok(Self::Json),
            other => Err(format!("{other:?} is not a log format (text or json)")),
        }
    }
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
        }
    }
}

/// Values given on the command line; they override every other layer.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub listen: Option<SocketAddr>,
    pub kv_path: Option<PathBuf>,
    pub config_store_path: Option<PathBuf>,
    pub log_level: Option<String>,
    pub http_listen: Option<SocketAddr>,
    pub log_dir: Option<PathBuf>,
    pub log_format: Option<LogFormat>,
    pub access_profile: Option<Profile>,
    pub acl_file: Option<PathBuf>,
    /// `controller.enabled` (a standalone controller turns it on whatever the file says).
    pub controller_enabled: Option<bool>,
}

/// Prefix of environment overrides: `NAMESRV__SERVER__LISTEN=127.0.0.1:9876`.
pub const ENV_PREFIX: &str = "NAMESRV";

impl Config {
    /// Loads the layers and validates the result. `env` is the environment to read (the real one
    /// in the daemon; a fixed one in tests).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &Overrides,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        let mut java_extra = BTreeMap::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            let toml_text = if path.extension().is_some_and(|e| e == "properties") {
                // A Java namesrv.properties: its keys become ours.
                let (table, extra) = properties_file_to_toml(path, &text)?;
                java_extra = extra;
                table
            } else {
                text
            };
            builder =
                builder.add_source(config::File::from_str(&toml_text, config::FileFormat::Toml));
        }
        let env_map: std::collections::HashMap<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with(&format!("{ENV_PREFIX}__")))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix(ENV_PREFIX)
                .prefix_separator("__")
                .separator("__")
                .try_parsing(true)
                .source(Some(env_map)),
        );
        if let Some(listen) = overrides.listen {
            builder = builder.set_override("server.listen", listen.to_string())?;
        }
        if let Some(path) = &overrides.kv_path {
            builder = builder.set_override("kv.path", path.to_string_lossy().into_owned())?;
        }
        if let Some(path) = &overrides.config_store_path {
            builder = builder
                .set_override("kv.config_store_path", path.to_string_lossy().into_owned())?;
        }
        if let Some(level) = &overrides.log_level {
            builder = builder.set_override("log.level", level.clone())?;
        }
        if let Some(listen) = overrides.http_listen {
            builder = builder.set_override("http.listen", listen.to_string())?;
        }
        if let Some(dir) = &overrides.log_dir {
            builder = builder.set_override("log.dir", dir.to_string_lossy().into_owned())?;
        }
        if let Some(format) = overrides.log_format {
            builder = builder.set_override("log.format", format.as_str())?;
        }
        if let Some(profile) = overrides.access_profile {
            builder = builder.set_override("access.profile", profile.as_str())?;
        }
        if let Some(path) = &overrides.acl_file {
            builder =
                builder.set_override("access.acl_file", path.to_string_lossy().into_owned())?;
        }
        if let Some(enabled) = overrides.controller_enabled {
            builder = builder.set_override("controller.enabled", enabled)?;
        }
        let mut config: Config = builder.build()?.try_deserialize()?;
        config.java_extra = java_extra;
        // Java's tls.config.file: its tls.* keys win over the other layers.
        config.tls = crate::java_keys::tls_with_config_file(&config.tls).map_err(|reason| {
            ConfigError::Invalid(InvalidSetting::new("tls.config_file", reason))
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks ranges and relations the types cannot express, section by section.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.server.validate()?;
        self.registry.validate()?;
        self.kv.validate()?;
        self.tls.validate()?;
        self.proxy_protocol.validate()?;
        self.http.validate()?;
        self.fleet.validate(&self.http)?;
        self.log.validate()?;
        self.access.validate()?;
        self.controller.validate()?;
        self.etcd.validate()?;
        self.etcd
            .check_endpoints("kv.etcd_endpoints", &self.kv.etcd_endpoint_list())?;
        self.etcd
            .check_endpoints("controller.etcd_endpoints", &self.controller.etcd_list())?;
        self.validate_transport_needs()?;
        let ct = &self.cluster_test;
        if ct.enabled && ct.product_env_addrs().is_empty() {
            return Err(invalid(
                "cluster_test.product_env_namesrv",
                "cluster_test.enabled needs the product environment's NameServer addresses",
            ));
        }
        Ok(())
    }
}

impl Config {
    /// Access settings that need TLS need it configured.
    fn validate_transport_needs(&self) -> Result<(), ConfigError> {
        let tls_off = self.tls.mode == TlsMode::Disabled;
        if self.access.signed_needs_tls && tls_off {
            return Err(invalid(
                "access.signed_needs_tls",
                "needs TLS: set tls.mode to permissive or enforcing",
            ));
        }
        // A certificate counts only when verified against a CA: without one any certificate
        // would do (Java's InsecureTrustManagerFactory).
        let verified_clients = self.tls.need_client_auth != ClientAuth::None
            && self.tls.auth_client
            && self.tls.trust_cert_path.is_some();
        if self.access.admin_write_needs_client_cert && (tls_off || !verified_clients) {
            return Err(invalid(
                "access.admin_write_needs_client_cert",
                "needs TLS with verified client certificates: tls.mode permissive or enforcing, \
                 tls.need_client_auth optional or require, tls.auth_client = true and \
                 tls.trust_cert_path",
            ));
        }
        Ok(())
    }
}

impl ClusterTestConfig {
    /// The product environment's NameServer addresses.
    pub fn product_env_addrs(&self) -> Vec<String> {
        self.product_env_namesrv
            .split(';')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// Reads a Java properties file as TOML text of our keys, plus the properties we do not map.
fn properties_file_to_toml(
    path: &Path,
    text: &str,
) -> Result<(String, BTreeMap<String, String>), ConfigError> {
    let fail = |reason: String| ConfigError::Properties {
        path: path.to_owned(),
        reason,
    };
    let props = rmq_protocol::properties::parse(text).map_err(|e| fail(e.to_string()))?;
    let (table, extra) =
        crate::java_keys::properties_to_toml(&props).map_err(|e| fail(e.to_string()))?;
    let toml_text = toml::to_string(&table).map_err(|e| fail(e.to_string()))?;
    Ok((toml_text, extra))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn load(
        file: Option<&str>,
        env: &[(&str, &str)],
        overrides: &Overrides,
    ) -> Result<Config, ConfigError> {
        // One file per call (tests run in parallel), removed once read.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = file.map(|text| {
            let path = std::env::temp_dir()
                .join(format!("rmq-config-test-{}-{n}.toml", std::process::id()));
            std::fs::write(&path, text).unwrap();
            path
        });
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()));
        let loaded = Config::load(path.as_deref(), env, overrides);
        if let Some(path) = path {
            let _ = std::fs::remove_file(path);
        }
        loaded
    }

    #[test]
    fn repository_config_toml_is_the_default() {
        let text = include_str!("../config.toml");
        let parsed: Config = toml_like(text);
        assert_eq!(parsed, Config::default());
    }

    fn toml_like(text: &str) -> Config {
        config::Config::builder()
            .add_source(config::File::from_str(text, config::FileFormat::Toml))
            .build()
            .unwrap()
            .try_deserialize()
            .unwrap()
    }

    #[test]
    fn no_layers_gives_defaults() {
        let config = load(None, &[], &Overrides::default()).unwrap();
        assert_eq!(config, Config::default());
        assert_eq!(config.server.listen.port(), 9876);
    }

    #[test]
    fn layers_override_in_order() {
        let file = "[server]\nlisten = \"127.0.0.1:1000\"\nworkers = 3\n[registry]\nscan_interval = \"2s\"\n";
        let env = [
            ("NAMESRV__SERVER__WORKERS", "5"),
            ("NAMESRV__REGISTRY__BROKER_EXPIRY", "30s"),
            ("OTHER", "x"),
        ];
        let overrides = Overrides {
            listen: Some("127.0.0.1:2000".parse().unwrap()),
            ..Overrides::default()
        };
        let config = load(Some(file), &env, &overrides).unwrap();
        assert_eq!(config.server.listen.port(), 2000);
        assert_eq!(config.server.workers, 5);
        assert_eq!(config.registry.scan_interval, Duration::from_secs(2));
        assert_eq!(config.registry.broker_expiry, Duration::from_secs(30));
    }

    #[test]
    fn bad_values_name_the_key() {
        let err = load(
            Some("[registry]\nscan_interval = \"soon\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("registry.scan_interval"), "{err}");
        let err = load(Some("[server]\nworkers = -1\n"), &[], &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("server.workers"), "{err}");
        let err = load(
            Some("[server]\nlisten = \"nowhere\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("server.listen"), "{err}");
        let err = load(
            Some("[server]\nmax_frame_bytes = 10\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("server.max_frame_bytes"), "{err}");
        let err = load(
            Some("[registry]\nscan_interval = \"0s\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("registry.scan_interval"), "{err}");
        let err = load(Some("[server]\nbogus = 1\n"), &[], &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("bogus"), "{err}");
        let err = load(
            None,
            &[("NAMESRV__SERVER__MAX_IN_FLIGHT", "many")],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("server.max_in_flight"), "{err}");
        let err = load(
            Some("[log]\nlevel = \"rmq=nonsense=1\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("log.level"), "{err}");
    }

    #[test]
    fn java_properties_file_loads_with_aliases() {
        let dir = std::env::temp_dir().join(format!("rmq-config-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("namesrv.properties");
        std::fs::write(
            &path,
            "# Java mqnamesrv config\nlistenPort=19876\nbindAddress=127.0.0.1\nscanNotActiveBrokerInterval=3000\norderMessageEnable=true\ndefaultThreadPoolNums=16\n",
        )
        .unwrap();
        let config = Config::load(Some(&path), Vec::new(), &Overrides::default()).unwrap();
        assert_eq!(config.server.listen, "127.0.0.1:19876".parse().unwrap());
        assert_eq!(config.registry.scan_interval, Duration::from_secs(3));
        assert!(config.registry.order_message_enable);
        assert_eq!(
            config
                .java_extra
                .get("defaultThreadPoolNums")
                .map(String::as_str),
            Some("16")
        );
        std::fs::write(&path, "scanNotActiveBrokerInterval=fast\n").unwrap();
        let err = Config::load(Some(&path), Vec::new(), &Overrides::default()).unwrap_err();
        assert!(
            err.to_string().contains("scanNotActiveBrokerInterval"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn java_tls_keys_load_from_properties_and_the_tls_config_file() {
        let dir = std::env::temp_dir().join(format!("rmq-config-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tls_file = dir.join("tls.properties");
        std::fs::write(
            &tls_file,
            "tls.server.need.client.auth=REQUIRE\ntls.server.trustCertPath=/pki/ca.pem\n\
             tls.server.authClient=true\ntls.client.keyPassword=from-file\n",
        )
        .unwrap();
        let path = dir.join("namesrv.properties");
        std::fs::write(
            &path,
            format!(
                "listenPort=19876\ntls.server.mode=Enforcing\ntls.server.certPath=/pki/s.pem\n\
                 tls.server.keyPath=/pki/s.key\ntls.server.keyPassword=hunter2\n\
                 tls.test.mode.enable=false\ntls.enable=true\ntls.config.file={}\n",
                tls_file.display()
            ),
        )
        .unwrap();
        let config = Config::load(Some(&path), Vec::new(), &Overrides::default()).unwrap();
        let tls = &config.tls;
        assert_eq!(tls.mode, TlsMode::Enforcing);
        assert_eq!(tls.cert_path.as_deref(), Some(Path::new("/pki/s.pem")));
        assert_eq!(
            tls.key_password.as_ref().map(|p| p.expose()),
            Some("hunter2")
        );
        assert!(!tls.test_mode);
        assert!(tls.client.enable);
        // From the file tls.config.file names, which wins.
        assert_eq!(tls.need_client_auth, ClientAuth::Require);
        assert!(tls.auth_client);
        assert_eq!(
            tls.client.key_password.as_ref().map(|p| p.expose()),
            Some("from-file")
        );
        // Passwords are never printed.
        let printed = toml::to_string(&config).unwrap();
        assert!(
            !printed.contains("hunter2") && !printed.contains("from-file"),
            "{printed}"
        );
        assert!(!format!("{config:?}").contains("hunter2"));
        // A bad value names its Java key.
        std::fs::write(&path, "tls.server.authClient=perhaps\n").unwrap();
        let err = Config::load(Some(&path), Vec::new(), &Overrides::default()).unwrap_err();
        assert!(err.to_string().contains("tls.server.authClient"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tls_and_proxy_checks_name_their_keys() {
        let err = load(
            Some("[tls]\ncert_path = \"/x.pem\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("tls.key_path"), "{err}");
        let err = load(
            Some("[proxy_protocol]\nmode = \"required\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("proxy_protocol.trusted_networks"),
            "{err}"
        );
        let err = load(
            Some("[proxy_protocol]\nmode = \"optional\"\ntrusted_networks = [\"10.0.0.0/33\"]\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("proxy_protocol"), "{err}");
        let err = load(
            Some("[tls]\nmode = \"sometimes\"\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("tls"), "{err}");
    }

    #[test]
    fn cluster_test_needs_product_env_addresses() {
        let err = load(
            Some("[cluster_test]\nenabled = true\n"),
            &[],
            &Overrides::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("cluster_test.product_env_namesrv"),
            "{err}"
        );
    }

    #[test]
    fn log_keys_validate_and_flags_override() {
        for (file, key) in [
            ("[log]\nmax_file_size = 0\n", "log.max_file_size"),
            ("[log]\nmax_file_size = -5\n", "log.max_file_size"),
            ("[log]\nmax_files = 1\n", "log.max_files"),
            ("[log]\nmax_files = 100000\n", "log.max_files"),
            ("[log]\nformat = \"xml\"\n", "log.format"),
        ] {
            let err = load(Some(file), &[], &Overrides::default()).unwrap_err();
            assert!(err.to_string().contains(key), "{file}: {err}");
        }
        let config = load(
            Some("[log]\ndir = \"/var/log/a\"\nformat = \"text\"\nmax_files = 3\n"),
            &[("NAMESRV__LOG__MAX_FILE_SIZE", "4096")],
            &Overrides {
                log_dir: Some(PathBuf::from("/var/log/b")),
                log_format: Some(LogFormat::Json),
                ..Overrides::default()
            },
        )
        .unwrap();
        assert_eq!(config.log.file_dir(), Some(PathBuf::from("/var/log/b")));
        assert_eq!(config.log.format, LogFormat::Json);
        assert_eq!(config.log.max_file_size, 4096);
        assert_eq!(config.log.max_files, 3);
        assert_eq!(LogConfig::default().file_dir(), None);
        assert_eq!("json".parse(), Ok(LogFormat::Json));
        assert!("JSON ".parse::<LogFormat>().is_err());
    }
}
