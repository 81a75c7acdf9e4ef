//! The typed headers of the controller codes (see the table in the parent module).

use super::*;

fn put_opt(fields: &mut ExtFields, key: &str, value: Option<impl ToString>) {
    if let Some(v) = value {
        fields.insert(key, v.to_string());
    }
}

/// A required Integer.
fn required_i32(ext: ExtReader<'_>, name: &'static str) -> Result<i32, HeaderFieldError> {
    let value = ext.get(name).ok_or(HeaderFieldError::Missing(name))?;
    value.trim().parse().map_err(|_| HeaderFieldError::Invalid {
        field: name,
        expected: "int",
        value: value.to_owned(),
    })
}

/// A required Boolean: present is enough, any text but `true` reads as false (Java's
/// `Boolean.parseBoolean`).
fn required_bool(ext: ExtReader<'_>, name: &'static str) -> Result<bool, HeaderFieldError> {
    ext.bool(name).ok_or(HeaderFieldError::Missing(name))
}

/// Ext key of Java's `invokeTime` (milliseconds since the epoch, the sender's clock).
const INVOKE_TIME: &str = "invokeTime";

/// CONTROLLER_ALTER_SYNC_STATE_SET (1001) request header, from the master.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlterSyncStateSetHeader {
    pub broker_name: String,
    /// The sender's broker id; absent, Java answers CONTROLLER_INVALID_MASTER.
    pub master_broker_id: Option<i64>,
    /// The master epoch the sender believes current.
    pub master_epoch: i32,
    pub invoke_time: Option<i64>,
}

impl CommandHeader for AlterSyncStateSetHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            broker_name: ext.required_string("brokerName")?,
            master_broker_id: ext.i64("masterBrokerId"),
            master_epoch: required_i32(ext, "masterEpoch")?,
            invoke_time: ext.i64(INVOKE_TIME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new().with("brokerName", self.broker_name.clone());
        put_opt(&mut f, "masterBrokerId", self.master_broker_id);
        f.insert("masterEpoch", self.master_epoch.to_string());
        put_opt(&mut f, INVOKE_TIME, self.invoke_time);
        f
    }
}

/// CONTROLLER_ALTER_SYNC_STATE_SET (1001) response header. A Java `int`: always written (0 on a
/// failure), read as 0 when absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AlterSyncStateSetResponseHeader {
    pub new_sync_state_set_epoch: i32,
}

impl CommandHeader for AlterSyncStateSetResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            new_sync_state_set_epoch: ext.i32("newSyncStateSetEpoch").unwrap_or(0),
        })
    }

    fn to_ext(&self) -> ExtFields {
        ExtFields::new().with(
            "newSyncStateSetEpoch",
            self.new_sync_state_set_epoch.to_string(),
        )
    }
}

/// CONTROLLER_ELECT_MASTER (1002) request header. All four are `@CFNotNull` and always sent
/// (Java would log a missing one and go on with `""`, `-1`, `false`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElectMasterHeader {
    pub cluster_name: String,
    pub broker_name: String,
    /// From a broker: itself, elected if the set has never had a master. From an admin (with
    /// `designate_elect`): the broker to elect if it is eligible. `-1`: no preference.
    pub broker_id: i64,
    /// True from `mqadmin electMaster`.
    pub designate_elect: bool,
    pub invoke_time: Option<i64>,
}

impl CommandHeader for ElectMasterHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.required_string("clusterName")?,
            broker_name: ext.required_string("brokerName")?,
            broker_id: ext.required_i64("brokerId")?,
            designate_elect: required_bool(ext, "designateElect")?,
            invoke_time: ext.i64(INVOKE_TIME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new()
            .with("clusterName", self.cluster_name.clone())
            .with("brokerName", self.broker_name.clone())
            .with("brokerId", self.broker_id.to_string())
            .with("designateElect", self.designate_elect.to_string());
        put_opt(&mut f, INVOKE_TIME, self.invoke_time);
        f
    }
}

/// CONTROLLER_ELECT_MASTER (1002) response header: the master after the election (also with
/// CONTROLLER_MASTER_STILL_EXIST).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ElectMasterResponseHeader {
    pub master_broker_id: Option<i64>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub sync_state_set_epoch: Option<i32>,
}

impl CommandHeader for ElectMasterResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            master_broker_id: ext.i64("masterBrokerId"),
            master_address: ext.string("masterAddress"),
            master_epoch: ext.i32("masterEpoch"),
            sync_state_set_epoch: ext.i32("syncStateSetEpoch"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "masterBrokerId", self.master_broker_id);
        put_opt(&mut f, "masterAddress", self.master_address.as_ref());
        put_opt(&mut f, "masterEpoch", self.master_epoch);
        put_opt(&mut f, "syncStateSetEpoch", self.sync_state_set_epoch);
        f
    }
}

/// CONTROLLER_REGISTER_BROKER (1003) request header: a broker with an id tells the controller
/// its current address.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterBrokerToControllerHeader {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
    pub broker_address: String,
    pub invoke_time: Option<i64>,
}

impl CommandHeader for RegisterBrokerToControllerHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.required_string("clusterName")?,
            broker_name: ext.required_string("brokerName")?,
            broker_id: ext.required_i64("brokerId")?,
            broker_address: ext.required_string("brokerAddress")?,
            invoke_time: ext.i64(INVOKE_TIME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new()
            .with("clusterName", self.cluster_name.clone())
            .with("brokerName", self.broker_name.clone())
            .with("brokerId", self.broker_id.to_string())
            .with("brokerAddress", self.broker_address.clone());
        put_opt(&mut f, INVOKE_TIME, self.invoke_time);
        f
    }
}

/// CONTROLLER_REGISTER_BROKER (1003) response header: the names echoed, and the master when
/// one exists and is alive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterBrokerToControllerResponseHeader {
    pub cluster_name: Option<String>,
    pub broker_name: Option<String>,
    pub master_broker_id: Option<i64>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub sync_state_set_epoch: Option<i32>,
}

impl CommandHeader for RegisterBrokerToControllerResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.string("clusterName"),
            broker_name: ext.string("brokerName"),
            master_broker_id: ext.i64("masterBrokerId"),
            master_address: ext.string("masterAddress"),
            master_epoch: ext.i32("masterEpoch"),
            sync_state_set_epoch: ext.i32("syncStateSetEpoch"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "clusterName", self.cluster_name.as_ref());
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        put_opt(&mut f, "masterBrokerId", self.master_broker_id);
        put_opt(&mut f, "masterAddress", self.master_address.as_ref());
        put_opt(&mut f, "masterEpoch", self.master_epoch);
        put_opt(&mut f, "syncStateSetEpoch", self.sync_state_set_epoch);
        f
    }
}

/// CONTROLLER_GET_REPLICA_INFO (1004) request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetReplicaInfoHeader {
    pub broker_name: String,
}

impl CommandHeader for GetReplicaInfoHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            broker_name: ext.required_string("brokerName")?,
        })
    }

    fn to_ext(&self) -> ExtFields {
        ExtFields::new().with("brokerName", self.broker_name.clone())
    }
}

/// CONTROLLER_GET_REPLICA_INFO (1004) response header: the current master (none after a failed
/// election; the epoch is always there on SUCCESS).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetReplicaInfoResponseHeader {
    pub master_broker_id: Option<i64>,
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
}

impl CommandHeader for GetReplicaInfoResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            master_broker_id: ext.i64("masterBrokerId"),
            master_address: ext.string("masterAddress"),
            master_epoch: ext.i32("masterEpoch"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "masterBrokerId", self.master_broker_id);
        put_opt(&mut f, "masterAddress", self.master_address.as_ref());
        put_opt(&mut f, "masterEpoch", self.master_epoch);
        f
    }
}

/// CONTROLLER_GET_METADATA_INFO (1005) response header: where the controller leader is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetMetadataResponseHeader {
    /// The controller group (`controllerDLegerGroup`).
    pub group: Option<String>,
    /// The leader's peer id (`n0`); absent while there is none.
    pub controller_leader_id: Option<String>,
    /// The leader's controller address, which brokers send leader-only codes to; absent while
    /// there is none.
    pub controller_leader_address: Option<String>,
    /// Ext key `isLeader` (Java's field name); a Java `boolean`, always written.
    pub is_leader: bool,
    /// Every peer, each followed by `;`: `id:host:port` (DLedger) or `host:port` (jRaft).
    pub peers: Option<String>,
}

impl CommandHeader for GetMetadataResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            group: ext.string("group"),
            controller_leader_id: ext.string("controllerLeaderId"),
            controller_leader_address: ext.string("controllerLeaderAddress"),
            is_leader: ext.bool("isLeader").unwrap_or(false),
            peers: ext.string("peers"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "group", self.group.as_ref());
        put_opt(
            &mut f,
            "controllerLeaderId",
            self.controller_leader_id.as_ref(),
        );
        put_opt(
            &mut f,
            "controllerLeaderAddress",
            self.controller_leader_address.as_ref(),
        );
        f.insert("isLeader", self.is_leader.to_string());
        put_opt(&mut f, "peers", self.peers.as_ref());
        f
    }
}

/// NOTIFY_BROKER_ROLE_CHANGED (1008), from the controller to each live broker of a set after an
/// election; the body is the new [`SyncStateSet`]. A broker ignores it without a master id, or
/// with an epoch not above the one it has.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotifyBrokerRoleChangedHeader {
    pub master_address: Option<String>,
    pub master_epoch: Option<i32>,
    pub sync_state_set_epoch: Option<i32>,
    pub master_broker_id: Option<i64>,
}

impl From<&ElectMasterResponseHeader> for NotifyBrokerRoleChangedHeader {
    /// What Java's controller sends after an election answered with `elected`.
    fn from(elected: &ElectMasterResponseHeader) -> Self {
        Self {
            master_address: elected.master_address.clone(),
            master_epoch: elected.master_epoch,
            sync_state_set_epoch: elected.sync_state_set_epoch,
            master_broker_id: elected.master_broker_id,
        }
    }
}

impl CommandHeader for NotifyBrokerRoleChangedHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            master_address: ext.string("masterAddress"),
            master_epoch: ext.i32("masterEpoch"),
            sync_state_set_epoch: ext.i32("syncStateSetEpoch"),
            master_broker_id: ext.i64("masterBrokerId"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "masterAddress", self.master_address.as_ref());
        put_opt(&mut f, "masterEpoch", self.master_epoch);
        put_opt(&mut f, "syncStateSetEpoch", self.sync_state_set_epoch);
        put_opt(&mut f, "masterBrokerId", self.master_broker_id);
        f
    }
}

/// CLEAN_BROKER_DATA (1011) request header, from `mqadmin cleanBrokerMetadata`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CleanBrokerDataHeader {
    /// `@CFNullable`; only used to check whether the brokers named are alive.
    pub cluster_name: Option<String>,
    pub broker_name: String,
    /// `;`-separated broker ids; blank: the whole broker set (see [`Self::ids_to_clean`]).
    pub broker_controller_ids_to_clean: Option<String>,
    /// Ext key `isCleanLivingBroker`; a Java `boolean`, always written, false when absent.
    pub clean_living_broker: bool,
    pub invoke_time: Option<i64>,
}

/// One piece of `brokerControllerIdsToClean` that is not a number. Displays as the Java
/// exception that the remark quotes: `Please set the option <brokerControllerIdsToClean>
/// according to the format, exception: {this}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidBrokerId(pub String);

impl fmt::Display for InvalidBrokerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "java.lang.NumberFormatException: For input string: \"{}\"",
            self.0
        )
    }
}

impl std::error::Error for InvalidBrokerId {}

impl CleanBrokerDataHeader {
    /// The broker ids to clean as Java parses them: `None` when the field is absent or blank
    /// (the whole broker set); otherwise the `;`-separated pieces, each a decimal long with no
    /// surrounding space. Trailing empty pieces are dropped (Java's `String.split`), so `"1;2;"`
    /// is {1, 2} and `";"` is the empty set, which Java then also treats as the whole set; an
    /// empty piece elsewhere (`"1;;2"`) is an error.
    pub fn ids_to_clean(&self) -> Result<Option<BTreeSet<i64>>, InvalidBrokerId> {
        let Some(text) = self
            .broker_controller_ids_to_clean
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(None);
        };
        let mut pieces: Vec<&str> = text.split(';').collect();
        while pieces.last() == Some(&"") {
            pieces.pop();
        }
        pieces
            .into_iter()
            .map(|p| p.parse().map_err(|_| InvalidBrokerId(p.to_owned())))
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

impl CommandHeader for CleanBrokerDataHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.string("clusterName"),
            broker_name: ext.required_string("brokerName")?,
            broker_controller_ids_to_clean: ext.string("brokerControllerIdsToClean"),
            clean_living_broker: ext.bool("isCleanLivingBroker").unwrap_or(false),
            invoke_time: ext.i64(INVOKE_TIME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "clusterName", self.cluster_name.as_ref());
        f.insert("brokerName", self.broker_name.clone());
        put_opt(
            &mut f,
            "brokerControllerIdsToClean",
            self.broker_controller_ids_to_clean.as_ref(),
        );
        f.insert("isCleanLivingBroker", self.clean_living_broker.to_string());
        put_opt(&mut f, INVOKE_TIME, self.invoke_time);
        f
    }
}

/// CONTROLLER_GET_NEXT_BROKER_ID (1012) request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetNextBrokerIdHeader {
    /// Only echoed in the response.
    pub cluster_name: Option<String>,
    pub broker_name: String,
}

impl CommandHeader for GetNextBrokerIdHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.string("clusterName"),
            broker_name: ext.required_string("brokerName")?,
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "clusterName", self.cluster_name.as_ref());
        f.insert("brokerName", self.broker_name.clone());
        f
    }
}

/// CONTROLLER_GET_NEXT_BROKER_ID (1012) response header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetNextBrokerIdResponseHeader {
    pub cluster_name: Option<String>,
    pub broker_name: Option<String>,
    /// 1 for a broker set the controller does not know yet.
    pub next_broker_id: Option<i64>,
}

impl CommandHeader for GetNextBrokerIdResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.string("clusterName"),
            broker_name: ext.string("brokerName"),
            next_broker_id: ext.i64("nextBrokerId"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "clusterName", self.cluster_name.as_ref());
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        put_opt(&mut f, "nextBrokerId", self.next_broker_id);
        f
    }
}

/// CONTROLLER_APPLY_BROKER_ID (1013) request header: a broker claims an id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyBrokerIdHeader {
    /// Stored as the broker set's cluster when this creates the set.
    pub cluster_name: String,
    pub broker_name: String,
    pub applied_broker_id: i64,
    /// `address;millis`, made by the broker when it chose the id; the same code may claim the
    /// same id again (a retry), another may not.
    pub register_check_code: String,
}

impl ApplyBrokerIdHeader {
    /// The broker address Java takes from the check code: the text before the first `;`.
    /// `None` where Java fails (a code of only `;`s).
    pub fn registered_address(&self) -> Option<&str> {
        let code = &self.register_check_code;
        if !code.is_empty() && code.bytes().all(|b| b == b';') {
            return None;
        }
        code.split(';').next()
    }
}

impl CommandHeader for ApplyBrokerIdHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.required_string("clusterName")?,
            broker_name: ext.required_string("brokerName")?,
            applied_broker_id: ext.required_i64("appliedBrokerId")?,
            register_check_code: ext.required_string("registerCheckCode")?,
        })
    }

    fn to_ext(&self) -> ExtFields {
        ExtFields::new()
            .with("clusterName", self.cluster_name.clone())
            .with("brokerName", self.broker_name.clone())
            .with("appliedBrokerId", self.applied_broker_id.to_string())
            .with("registerCheckCode", self.register_check_code.clone())
    }
}

/// CONTROLLER_APPLY_BROKER_ID (1013) response header: the names echoed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApplyBrokerIdResponseHeader {
    pub cluster_name: Option<String>,
    pub broker_name: Option<String>,
}

impl CommandHeader for ApplyBrokerIdResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.string("clusterName"),
            broker_name: ext.string("brokerName"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "clusterName", self.cluster_name.as_ref());
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        f
    }
}

/// NOTIFY_MIN_BROKER_ID_CHANGE (905), from a NameServer (`notifyMinBrokerIdChanged`) to the
/// brokers of a group with `enableActingMaster` whose smallest broker id changed (RIP-32). Every
/// field is `@CFNullable`; Java never sets `brokerName`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NotifyMinBrokerIdChangeHeader {
    pub min_broker_id: Option<i64>,
    pub broker_name: Option<String>,
    pub min_broker_addr: Option<String>,
    /// The broker whose loss caused the change, if one was lost.
    pub offline_broker_addr: Option<String>,
    pub ha_broker_addr: Option<String>,
}

impl CommandHeader for NotifyMinBrokerIdChangeHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            min_broker_id: ext.i64("minBrokerId"),
            broker_name: ext.string("brokerName"),
            min_broker_addr: ext.string("minBrokerAddr"),
            offline_broker_addr: ext.string("offlineBrokerAddr"),
            ha_broker_addr: ext.string("haBrokerAddr"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "minBrokerId", self.min_broker_id);
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        put_opt(&mut f, "minBrokerAddr", self.min_broker_addr.as_ref());
        put_opt(
            &mut f,
            "offlineBrokerAddr",
            self.offline_broker_addr.as_ref(),
        );
        put_opt(&mut f, "haBrokerAddr", self.ha_broker_addr.as_ref());
        f
    }
}
