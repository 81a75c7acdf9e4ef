//! `[controller]`: the embedded 5.x controller (docs/controller.md), turned on as in Java by
//! `enableControllerInNamesrv=true` (ours: `controller.enabled`). It listens on this node's
//! address in `peers` (Java's `controllerDLegerPeers`, `n0-127.0.0.1:9878;n1-...`), keeps its
//! state in a local file under `store_path`, or in etcd when `etcd_endpoints` is set — which
//! several controllers must do.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use rmq_actors::controller::config_update::ConfigStore;
use rmq_actors::controller::ControllerSettings;
use rmq_actors::settings::{check_etcd_endpoints, etcd_endpoint_list, expand_home, InvalidSetting};
use serde::{Deserialize, Serialize};

/// The `[controller]` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// Java `enableControllerInNamesrv`.
    pub enabled: bool,
    /// Java `controllerType`: `DLedger` or `jRaft`; both run this controller (etcd or a local
    /// file stand in for the replicated log).
    #[serde(rename = "type")]
    pub kind: String,
    /// Java `controllerDLegerGroup`: the group name CONTROLLER_GET_METADATA_INFO reports.
    pub group: String,
    /// Java `controllerDLegerPeers`: every controller, `id-host:port` separated by `;`.
    pub peers: String,
    /// Java `controllerDLegerSelfId`: this node's id in `peers`.
    pub self_id: String,
    /// Java `controllerStorePath`: the directory of the local state file (without etcd).
    pub store_path: PathBuf,
    /// Java `enableElectUncleanMaster`.
    pub elect_unclean_master: bool,
    /// Java `notifyBrokerRoleChanged`.
    pub notify_broker_role_changed: bool,
    /// Java `scanInactiveMasterInterval` (ms in Java).
    #[serde(with = "humantime_serde")]
    pub scan_inactive_master_interval: Duration,
    /// Java `electMasterMaxRetryCount`.
    pub elect_master_max_retry_count: u32,
    /// Ours (`controllerEtcdEndpoints` in a properties file): etcd's client addresses,
    /// `host:port` separated by `,` or `;`. Empty: no etcd, a single controller.
    pub etcd_endpoints: String,
    /// Ours (`controllerEtcdPrefix`): where in etcd the state lives.
    pub etcd_prefix: String,
    /// Ours (`controllerEtcdLeaseTtl`): how long a controller that stopped renewing stays the
    /// leader.
    #[serde(with = "humantime_serde")]
    pub etcd_lease_ttl: Duration,
    /// Java `configStorePath` of `ControllerConfig`: where UPDATE_CONTROLLER_CONFIG writes the
    /// whole configuration, as Java does (docs/controller.md, "Runtime updates").
    pub config_store_path: PathBuf,
    /// Java `configBlackList` of `ControllerConfig`: keys UPDATE_CONTROLLER_CONFIG refuses (a
    /// properties file's `configBlackList` sets it too, as in Java).
    pub config_black_list: String,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            enabled: false,
            kind: "DLedger".into(),
            group: "DefaultControllerGroup".into(),
            peers: String::new(),
            self_id: String::new(),
            store_path: PathBuf::from("~/rmq-namesrv/controller"),
            elect_unclean_master: false,
            notify_broker_role_changed: true,
            scan_inactive_master_interval: Duration::from_secs(5),
            elect_master_max_retry_count: 3,
            etcd_endpoints: String::new(),
            etcd_prefix: "/rmq-namesrv/controller".into(),
            etcd_lease_ttl: Duration::from_secs(5),
            config_store_path: PathBuf::from("~/controller/controller.properties"),
            config_black_list: "configBlackList;configStorePath".into(),
        }
    }
}

fn invalid(key: &'static str, reason: impl Into<String>) -> InvalidSetting {
    InvalidSetting {
        key,
        reason: reason.into(),
    }
}

impl ControllerConfig {
    /// `peers` read: (id, address) in order.
    pub fn peer_list(&self) -> Result<Vec<(String, SocketAddr)>, InvalidSetting> {
        let mut out: Vec<(String, SocketAddr)> = Vec::new();
        for entry in self
            .peers
            .split(';')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let Some((id, addr)) = entry.split_once('-') else {
                return Err(invalid(
                    "controller.peers",
                    format!("{entry:?} is not id-host:port (e.g. n0-127.0.0.1:9878)"),
                ));
            };
            let addr: SocketAddr = addr.trim().parse().map_err(|_| {
                invalid(
                    "controller.peers",
                    format!("{addr:?} in {entry:?} is not an IP address and port"),
                )
            })?;
            let id = id.trim().to_owned();
            if id.is_empty() || out.iter().any(|(other, _)| *other == id) {
                return Err(invalid(
                    "controller.peers",
                    format!("{entry:?}: every controller needs an id of its own"),
                ));
            }
            out.push((id, addr));
        }
        Ok(out)
    }

    /// etcd's endpoints, trimmed, empty entries dropped.
    pub fn etcd_list(&self) -> Vec<String> {
        etcd_endpoint_list(&self.etcd_endpoints)
    }

    /// This node's controller address, when the controller is on.
    pub fn listen(&self) -> Result<Option<SocketAddr>, InvalidSetting> {
        if !self.enabled {
            return Ok(None);
        }
        let peers = self.peer_list()?;
        Ok(peers
            .iter()
            .find(|(id, _)| *id == self.self_id)
            .map(|(_, addr)| *addr))
    }

    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if !matches!(self.kind.to_ascii_lowercase().as_str(), "dledger" | "jraft") {
            return Err(invalid(
                "controller.type",
                format!("{:?} is neither DLedger nor jRaft", self.kind),
            ));
        }
        if self.scan_inactive_master_interval.is_zero() {
            return Err(invalid(
                "controller.scan_inactive_master_interval",
                "must be positive",
            ));
        }
        if self.etcd_lease_ttl < Duration::from_secs(2) {
            return Err(invalid("controller.etcd_lease_ttl", "must be at least 2s"));
        }
        check_etcd_endpoints("controller.etcd_endpoints", &self.etcd_list())?;
        let peers = self.peer_list()?;
        if !self.enabled {
            return Ok(());
        }
        if peers.is_empty() {
            return Err(invalid(
                "controller.peers",
                "the controller needs its address: controllerDLegerPeers, e.g. n0-127.0.0.1:9878",
            ));
        }
        if !peers.iter().any(|(id, _)| *id == self.self_id) {
            return Err(invalid(
                "controller.self_id",
                format!(
                    "{:?} is not one of the ids in controller.peers ({})",
                    self.self_id,
                    peers
                        .iter()
                        .map(|(id, _)| id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if peers.len() > 1 && self.etcd_list().is_empty() {
            return Err(invalid(
                "controller.peers",
                format!(
                    "{} controllers are listed, but without etcd each would keep a state of its \
                     own and they could elect two masters: set controller.etcd_endpoints \
                     (controllerEtcdEndpoints), or list this node alone",
                    peers.len()
                ),
            ));
        }
        if self.config_store_path.as_os_str().is_empty() {
            return Err(invalid("controller.config_store_path", "must not be empty"));
        }
        if !self.etcd_prefix.starts_with('/') {
            return Err(invalid("controller.etcd_prefix", "must start with /"));
        }
        Ok(())
    }

    /// The settings of the controller actor; `scan` is the heartbeat-expiry scan
    /// (`scanNotActiveBrokerInterval`, shared with the route registry as in Java's file).
    pub fn settings(&self, scan: Duration) -> ControllerSettings {
        let black_list = self.config_black_list.as_str();
        let peers = self
            .peer_list()
            .unwrap_or_default()
            .into_iter()
            .map(|(id, addr)| (id, addr.to_string()))
            .collect();
        let ms = |d: Duration| d.as_millis().to_string();
        let props: BTreeMap<String, String> = [
            ("controllerType", self.kind.clone()),
            ("controllerDLegerGroup", self.group.clone()),
            ("controllerDLegerPeers", self.peers.clone()),
            ("controllerDLegerSelfId", self.self_id.clone()),
            ("controllerStorePath", self.store_path.display().to_string()),
            (
                "enableElectUncleanMaster",
                self.elect_unclean_master.to_string(),
            ),
            (
                "notifyBrokerRoleChanged",
                self.notify_broker_role_changed.to_string(),
            ),
            ("scanNotActiveBrokerInterval", ms(scan)),
            (
                "scanInactiveMasterInterval",
                ms(self.scan_inactive_master_interval),
            ),
            (
                "electMasterMaxRetryCount",
                self.elect_master_max_retry_count.to_string(),
            ),
            ("configBlackList", black_list.to_owned()),
            ("processReadEvent", "false".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        ControllerSettings {
            group: self.group.clone(),
            peers,
            self_id: self.self_id.clone(),
            elect_unclean: self.elect_unclean_master,
            notify_role_changed: self.notify_broker_role_changed,
            scan_not_active_broker_interval: scan,
            scan_inactive_master_interval: self.scan_inactive_master_interval,
            elect_max_retry: self.elect_master_max_retry_count,
            properties: props,
            black_list: black_list
                .split(';')
                .map(str::trim)
                .filter(|k| !k.is_empty())
                .map(str::to_owned)
                .collect(),
            config_store: ConfigStore {
                path: Some(expand_home(&self.config_store_path)),
                with: BTreeMap::new(),
            },
        }
    }
}
