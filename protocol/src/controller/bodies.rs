//! The JSON bodies of the controller codes, as Java's fastjson writes and reads them.

use super::*;
use crate::body::null_default;

/// A controller body that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ControllerBodyError {
    #[error("the command carries no {0} body")]
    Missing(&'static str),
    #[error("bad {body} body: {source}")]
    Json {
        body: &'static str,
        source: serde_json::Error,
    },
}

/// A JSON body of the controller codes, as Java's `RemotingSerializable` writes and reads it.
pub trait ControllerBody: Serialize + DeserializeOwned {
    /// The Java class, for error messages.
    const JAVA_NAME: &'static str;

    /// fastjson's default output.
    fn encode(&self) -> Vec<u8> {
        to_json(self, JsonStyle::Legacy)
    }

    /// Reads a command's body; none, or an empty one, is an error.
    fn decode(body: Option<&[u8]>) -> Result<Self, ControllerBodyError> {
        let bytes = body
            .filter(|b| !b.is_empty())
            .ok_or(ControllerBodyError::Missing(Self::JAVA_NAME))?;
        fastjson::from_slice(bytes).map_err(|source| ControllerBodyError::Json {
            body: Self::JAVA_NAME,
            source,
        })
    }
}

/// Body structs are read from JSON objects only (not from arrays of field values, which serde's
/// derive would accept and fastjson refuses), as in `body.rs`.
macro_rules! json_objects {
    ($($name:ident => $java:literal),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $name::deserialize(fastjson::ObjectOnly(deserializer))
            }
        }
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $name::serialize(self, serializer)
            }
        }
        impl ControllerBody for $name {
            const JAVA_NAME: &'static str = $java;
        }
    )*};
}

json_objects!(
    SyncStateSet => "SyncStateSet",
    ElectMasterResponseBody => "ElectMasterResponseBody",
    BrokerReplicasInfo => "BrokerReplicasInfo",
    ReplicasInfo => "ReplicasInfo",
    ReplicaIdentity => "ReplicaIdentity",
    EpochEntryCache => "EpochEntryCache",
    EpochEntry => "EpochEntry",
);

/// The in-sync replicas of a broker set and their epoch (`SyncStateSet`): the body of 1001 (both
/// ways), 1003, 1004 and 1008.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct SyncStateSet {
    /// Broker ids. Required: Java cannot build the object without it.
    #[serde(rename = "syncStateSet")]
    pub sync_state_set: BTreeSet<i64>,
    #[serde(rename = "syncStateSetEpoch", default)]
    pub sync_state_set_epoch: i32,
}

/// CONTROLLER_ELECT_MASTER (1002) response body. After an election: the new set (the new master
/// alone) and the broker set's members; with CONTROLLER_MASTER_STILL_EXIST: the current set only.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct ElectMasterResponseBody {
    #[serde(rename = "brokerMemberGroup", skip_serializing_if = "Option::is_none")]
    pub broker_member_group: Option<BrokerMemberGroup>,
    #[serde(rename = "syncStateSet", deserialize_with = "null_default")]
    pub sync_state_set: BTreeSet<i64>,
}

/// CONTROLLER_GET_SYNC_STATE_DATA (1006) request body: the broker sets asked about, a JSON array
/// of names.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BrokerNameList(pub Vec<String>);

impl ControllerBody for BrokerNameList {
    const JAVA_NAME: &'static str = "List<String>";
}

/// CONTROLLER_GET_SYNC_STATE_DATA (1006) response body: the known broker sets among those asked
/// about (unknown names are left out).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, remote = "Self")]
pub struct BrokerReplicasInfo {
    #[serde(rename = "replicasInfoTable", deserialize_with = "null_default")]
    pub replicas_info_table: BTreeMap<String, ReplicasInfo>,
}

/// One broker set in [`BrokerReplicasInfo`] (`BrokerReplicasInfo.ReplicasInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ReplicasInfo {
    /// Required (mqadmin iterates it).
    #[serde(rename = "inSyncReplicas")]
    pub in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(
        rename = "masterAddress",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub master_address: Option<String>,
    #[serde(
        rename = "masterBrokerId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub master_broker_id: Option<i64>,
    #[serde(rename = "masterEpoch", default)]
    pub master_epoch: i32,
    /// Required (mqadmin iterates it).
    #[serde(rename = "notInSyncReplicas")]
    pub not_in_sync_replicas: Vec<ReplicaIdentity>,
    #[serde(rename = "syncStateSetEpoch", default)]
    pub sync_state_set_epoch: i32,
}

/// One broker of a broker set (`BrokerReplicasInfo.ReplicaIdentity`). Name, id and address are
/// its identity (Java's `equals` fails without them) and required.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct ReplicaIdentity {
    /// Whether the controller has a live heartbeat from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alive: Option<bool>,
    #[serde(rename = "brokerAddress")]
    pub broker_address: String,
    #[serde(rename = "brokerId")]
    pub broker_id: i64,
    #[serde(rename = "brokerName")]
    pub broker_name: String,
}

/// GET_BROKER_EPOCH_CACHE (1007) response body, from a broker: its epoch history.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct EpochEntryCache {
    /// The broker's role id (`brokerConfig.brokerId`: 0 on the master), not its controller id.
    #[serde(rename = "brokerId", default)]
    pub broker_id: i64,
    #[serde(
        rename = "brokerName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub broker_name: Option<String>,
    #[serde(
        rename = "clusterName",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster_name: Option<String>,
    /// Required (mqadmin iterates it). Oldest first.
    #[serde(rename = "epochList")]
    pub epoch_list: Vec<EpochEntry>,
    /// The broker's commit-log max offset (mqadmin shows it as the last entry's end).
    #[serde(rename = "maxOffset", default)]
    pub max_offset: i64,
}

/// One master epoch and the commit-log range written under it (`EpochEntry`). All three are
/// required: Java always writes them, and which default Java would give a missing one depends on
/// the constructor fastjson picks (the open entry's `endOffset` is `Long.MAX_VALUE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(remote = "Self")]
pub struct EpochEntry {
    #[serde(rename = "endOffset")]
    pub end_offset: i64,
    pub epoch: i32,
    #[serde(rename = "startOffset")]
    pub start_offset: i64,
}
