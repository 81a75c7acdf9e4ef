//! The wire layer of the RocketMQ 5.x controller (RIP-44; issue 15, docs/controller.md): typed
//! headers and JSON bodies of every controller request code, its response codes, and the two
//! notifications a NameServer or controller sends to brokers. Only the protocol: no state, no
//! I/O; what each code does is in docs/controller.md.
//!
//! Headers follow [`crate::custom_headers`]: read from ext fields by Java's field names with
//! [`ExtReader`] (unknown keys ignored, booleans `true` in any case, an unparsable optional
//! number is absent), written back as Java's `makeCustomHeaderToNet` does (every non-null field as
//! its text; Java's primitive fields always). Which fields are **required**: those Java marks
//! `@CFNotNull`, and those without which Java's controller fails (a `NullPointerException`,
//! answered SYSTEM_ERROR) or stores a broker without its identity. A missing required field is a
//! [`HeaderFieldError`] naming it; a field Java does without stays an `Option`, so the server can
//! answer exactly as Java does (e.g. an absent `masterBrokerId` of 1001 is
//! CONTROLLER_INVALID_MASTER, not an error). Java's `invokeTime` (the sender's clock, used only by
//! Java's jRaft controller) is kept as an optional field so that a header round-trips.
//!
//! Bodies follow [`crate::body`]: fields in alphabetical order of the wire name (fastjson sorts
//! bean properties), `None` omitted (fastjson omits nulls), sets and maps sorted; written in
//! fastjson's default (legacy) style, as Java's `RemotingSerializable.encode` does: the only map
//! with integer keys, [`BrokerMemberGroup`]'s `brokerAddrs`, has bare keys. Fields of Java
//! primitive type default to Java's zero when absent; a field without which Java's reader fails
//! is required and its absence is an error naming it; everything else defaults. Encode and decode
//! with [`ControllerBody`].
//!
//! | Code | Name | From → to | Request header | Request body | Response header | Response body |
//! |---|---|---|---|---|---|---|
//! | 904 | BROKER_HEARTBEAT | broker → every controller, oneway | [`BrokerHeartbeatHeader`] | – | – (remark `Heart beat success`) | – |
//! | 1001 | CONTROLLER_ALTER_SYNC_STATE_SET | master → leader | [`AlterSyncStateSetHeader`] | [`SyncStateSet`]: the new set, the current epoch | [`AlterSyncStateSetResponseHeader`] | [`SyncStateSet`]: the new set, the new epoch |
//! | 1002 | CONTROLLER_ELECT_MASTER | broker, `mqadmin electMaster` → leader | [`ElectMasterHeader`] | – | [`ElectMasterResponseHeader`] | [`ElectMasterResponseBody`] |
//! | 1003 | CONTROLLER_REGISTER_BROKER | broker → leader | [`RegisterBrokerToControllerHeader`] | – | [`RegisterBrokerToControllerResponseHeader`] | [`SyncStateSet`] |
//! | 1004 | CONTROLLER_GET_REPLICA_INFO | broker → leader | [`GetReplicaInfoHeader`] | – | [`GetReplicaInfoResponseHeader`] | [`SyncStateSet`] |
//! | 1005 | CONTROLLER_GET_METADATA_INFO | broker, mqadmin → any controller | – | – | [`GetMetadataResponseHeader`] | – |
//! | 1006 | CONTROLLER_GET_SYNC_STATE_DATA | `mqadmin getSyncStateSet` → leader | – | [`BrokerNameList`] | – | [`BrokerReplicasInfo`] |
//! | 1007 | GET_BROKER_EPOCH_CACHE | `mqadmin getBrokerEpoch` → broker | – | – | – | [`EpochEntryCache`] |
//! | 1008 | NOTIFY_BROKER_ROLE_CHANGED | controller → broker, oneway | [`NotifyBrokerRoleChangedHeader`] | [`SyncStateSet`] | – | – |
//! | 1009 | UPDATE_CONTROLLER_CONFIG | mqadmin → each controller | – | properties text ([`crate::properties`]) | – | – |
//! | 1010 | GET_CONTROLLER_CONFIG | mqadmin → each controller | – | – | – | properties text |
//! | 1011 | CLEAN_BROKER_DATA | `mqadmin cleanBrokerMetadata` → leader | [`CleanBrokerDataHeader`] | – | – (no ext) | – |
//! | 1012 | CONTROLLER_GET_NEXT_BROKER_ID | broker → leader | [`GetNextBrokerIdHeader`] | – | [`GetNextBrokerIdResponseHeader`] | – |
//! | 1013 | CONTROLLER_APPLY_BROKER_ID | broker → leader | [`ApplyBrokerIdHeader`] | – | [`ApplyBrokerIdResponseHeader`] | – |
//! | 905 | NOTIFY_MIN_BROKER_ID_CHANGE | NameServer → broker, oneway | [`NotifyMinBrokerIdChangeHeader`] | – | – | – |
//!
//! A Java controller attaches its response header to failures too (1001 then carries
//! `newSyncStateSetEpoch=0`, 1003 the cluster and broker names), and 1002's
//! CONTROLLER_MASTER_STILL_EXIST carries the current master in the header and the current set in
//! the body. CONTROLLER_NOT_LEADER ([`remark::NOT_LEADER`]) has no ext fields.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

pub use crate::body::BrokerMemberGroup;
pub use crate::custom_headers::BrokerHeartbeatHeader;

use crate::body::to_json;
use crate::code::{RequestCode, ResponseCode};
use crate::command::ExtFields;
use crate::custom_headers::{CommandHeader, ExtReader, HeaderFieldError};
use crate::fastjson::{self, JsonStyle};

/// The request codes a Java controller answers (`ControllerManager.registerProcessor`), in
/// numeric order. 1007 and 1008 are answered by brokers, not by the controller.
pub const CONTROLLER_CODES: [RequestCode; 12] = [
    RequestCode::BROKER_HEARTBEAT,
    RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
    RequestCode::CONTROLLER_ELECT_MASTER,
    RequestCode::CONTROLLER_REGISTER_BROKER,
    RequestCode::CONTROLLER_GET_REPLICA_INFO,
    RequestCode::CONTROLLER_GET_METADATA_INFO,
    RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
    RequestCode::UPDATE_CONTROLLER_CONFIG,
    RequestCode::GET_CONTROLLER_CONFIG,
    RequestCode::CLEAN_BROKER_DATA,
    RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
    RequestCode::CONTROLLER_APPLY_BROKER_ID,
];

/// The controller's response codes (Java `ResponseCode`, 2000 to 2016).
impl ResponseCode {
    /// 1001: the request's `masterEpoch` is not the current one.
    pub const CONTROLLER_FENCED_MASTER_EPOCH: Self = Self(2000);
    /// 1001: the body's `syncStateSetEpoch` is not the current one.
    pub const CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH: Self = Self(2001);
    /// 1001: the sender is not the current master.
    pub const CONTROLLER_INVALID_MASTER: Self = Self(2002);
    /// 1001: the new set names a broker id the broker set does not have.
    pub const CONTROLLER_INVALID_REPLICAS: Self = Self(2003);
    /// 1002 from the controller itself: the master is gone and nobody could be elected.
    pub const CONTROLLER_MASTER_NOT_AVAILABLE: Self = Self(2004);
    /// 904 without `brokerId`.
    pub const CONTROLLER_INVALID_REQUEST: Self = Self(2005);
    /// 1001: the new set names a broker that is not alive.
    pub const CONTROLLER_BROKER_NOT_ALIVE: Self = Self(2006);
    /// Every leader-only code on a controller that is not the leader.
    pub const CONTROLLER_NOT_LEADER: Self = Self(2007);
    /// 1004 for a broker set the controller does not know.
    pub const CONTROLLER_BROKER_METADATA_NOT_EXIST: Self = Self(2008);
    /// 1011 refused (still alive, unknown broker set, bad id list).
    pub const CONTROLLER_INVALID_CLEAN_BROKER_METADATA: Self = Self(2009);
    /// 1002 and 1003 for an unknown broker set or broker id.
    pub const CONTROLLER_BROKER_NEED_TO_BE_REGISTERED: Self = Self(2010);
    /// 1002: the current master stays (header and body describe it).
    pub const CONTROLLER_MASTER_STILL_EXIST: Self = Self(2011);
    /// 1002 from a broker or admin: nobody could be elected.
    pub const CONTROLLER_ELECT_MASTER_FAILED: Self = Self(2012);
    /// 1001 for an unknown broker set, an unchanged set, or a set without the master.
    pub const CONTROLLER_ALTER_SYNC_STATE_SET_FAILED: Self = Self(2013);
    /// 1013: the id is taken by another broker, or not 1 for a new broker set.
    pub const CONTROLLER_BROKER_ID_INVALID: Self = Self(2014);
    /// Java's jRaft controller only.
    pub const CONTROLLER_JRAFT_INTERNAL_ERROR: Self = Self(2015);
    /// Java's jRaft controller only.
    pub const CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS: Self = Self(2016);
}

/// The controller's response codes with their Java names, in numeric order.
pub const CONTROLLER_RESPONSE_CODES: [(ResponseCode, &str); 17] = [
    (
        ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH,
        "CONTROLLER_FENCED_MASTER_EPOCH",
    ),
    (
        ResponseCode::CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
        "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
    ),
    (
        ResponseCode::CONTROLLER_INVALID_MASTER,
        "CONTROLLER_INVALID_MASTER",
    ),
    (
        ResponseCode::CONTROLLER_INVALID_REPLICAS,
        "CONTROLLER_INVALID_REPLICAS",
    ),
    (
        ResponseCode::CONTROLLER_MASTER_NOT_AVAILABLE,
        "CONTROLLER_MASTER_NOT_AVAILABLE",
    ),
    (
        ResponseCode::CONTROLLER_INVALID_REQUEST,
        "CONTROLLER_INVALID_REQUEST",
    ),
    (
        ResponseCode::CONTROLLER_BROKER_NOT_ALIVE,
        "CONTROLLER_BROKER_NOT_ALIVE",
    ),
    (ResponseCode::CONTROLLER_NOT_LEADER, "CONTROLLER_NOT_LEADER"),
    (
        ResponseCode::CONTROLLER_BROKER_METADATA_NOT_EXIST,
        "CONTROLLER_BROKER_METADATA_NOT_EXIST",
    ),
    (
        ResponseCode::CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
        "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
    ),
    (
        ResponseCode::CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
        "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
    ),
    (
        ResponseCode::CONTROLLER_MASTER_STILL_EXIST,
        "CONTROLLER_MASTER_STILL_EXIST",
    ),
    (
        ResponseCode::CONTROLLER_ELECT_MASTER_FAILED,
        "CONTROLLER_ELECT_MASTER_FAILED",
    ),
    (
        ResponseCode::CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
        "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
    ),
    (
        ResponseCode::CONTROLLER_BROKER_ID_INVALID,
        "CONTROLLER_BROKER_ID_INVALID",
    ),
    (
        ResponseCode::CONTROLLER_JRAFT_INTERNAL_ERROR,
        "CONTROLLER_JRAFT_INTERNAL_ERROR",
    ),
    (
        ResponseCode::CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS,
        "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
    ),
];

/// The Java name of a controller response code (`ResponseCode::name` knows the NameServer's).
pub fn response_code_name(code: ResponseCode) -> Option<&'static str> {
    CONTROLLER_RESPONSE_CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, name)| *name)
}

/// Java's fixed remarks (docs/controller.md has the ones with values in them).
pub mod remark {
    /// CONTROLLER_NOT_LEADER, on every leader-only code of a follower.
    pub const NOT_LEADER: &str = "The controller is not in leader state";
    /// SUCCESS to BROKER_HEARTBEAT.
    pub const HEARTBEAT_SUCCESS: &str = "Heart beat success";
    /// CONTROLLER_INVALID_REQUEST to a BROKER_HEARTBEAT without `brokerId`.
    pub const HEARTBEAT_WITHOUT_BROKER_ID: &str = "Heart beat with empty brokerId";
    /// SYSTEM_ERROR when a handler produced no answer (e.g. 1006 with no or an empty name list).
    pub const NOT_SET: &str = "not set any response code";
    /// CONTROLLER_BROKER_METADATA_NOT_EXIST to 1004; CONTROLLER_ALTER_SYNC_STATE_SET_FAILED to
    /// 1001 for an unknown broker set.
    pub const BROKER_METADATA_NOT_EXIST: &str = "Broker metadata is not existed";
    /// CONTROLLER_BROKER_NEED_TO_BE_REGISTERED to 1002 for an unknown broker set.
    pub const BROKER_NOT_REGISTERED: &str = "Broker hasn't been registered";
    /// CONTROLLER_MASTER_NOT_AVAILABLE to an election the controller started.
    pub const MASTER_NOT_AVAILABLE: &str =
        "Old master has down and failed to elect a new broker master";
    /// CONTROLLER_ELECT_MASTER_FAILED to an election a broker or admin asked for.
    pub const ELECT_MASTER_FAILED: &str = "Failed to elect a new master";
    /// CONTROLLER_ALTER_SYNC_STATE_SET_FAILED when the new set equals the current one.
    pub const SYNC_STATE_SET_UNCHANGED: &str =
        "The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet";
    /// NO_PERMISSION to UPDATE_CONTROLLER_CONFIG naming a black-listed key.
    pub const CONFIG_BLACK_LIST: &str = "Can not update config in black list.";
}

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

/// Reads `null` as the type's default: fastjson never writes nulls, but other peers may.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::RemotingCommand;

    /// Java's ext fields as a header class writes them, key by key.
    fn java_ext(code: RequestCode, pairs: &[(&str, &str)]) -> RemotingCommand {
        RemotingCommand::request(code).with_ext_fields(pairs.iter().copied().collect())
    }

    /// Writes `header` into a command and reads it back.
    fn round_trip<H: CommandHeader + PartialEq + fmt::Debug>(header: &H) {
        let cmd = RemotingCommand::request(RequestCode(0)).with_ext_fields(header.to_ext());
        assert_eq!(&H::decode(&cmd).unwrap(), header);
    }

    /// The ext keys `header` writes, sorted.
    fn keys<H: CommandHeader>(header: &H) -> Vec<String> {
        let mut keys: Vec<String> = header.to_ext().iter().map(|(k, _)| k.to_owned()).collect();
        keys.sort();
        keys
    }

    /// Every required field of `H`, removed one at a time from `full`, is named by the error.
    fn each_required_field_is_named<H: CommandHeader + fmt::Debug>(
        full: &[(&str, &str)],
        required: &[&'static str],
    ) {
        for missing in required {
            let pairs: Vec<(&str, &str)> =
                full.iter().copied().filter(|(k, _)| k != missing).collect();
            let err = H::decode(&java_ext(RequestCode(0), &pairs)).unwrap_err();
            assert_eq!(err, HeaderFieldError::Missing(missing));
            assert_eq!(
                err.to_string(),
                format!("the custom field <{missing}> is null")
            );
        }
        H::decode(&java_ext(RequestCode(0), full)).unwrap();
    }

    #[test]
    fn request_codes_have_java_names() {
        for (code, name) in [
            (1001, "CONTROLLER_ALTER_SYNC_STATE_SET"),
            (1002, "CONTROLLER_ELECT_MASTER"),
            (1003, "CONTROLLER_REGISTER_BROKER"),
            (1004, "CONTROLLER_GET_REPLICA_INFO"),
            (1005, "CONTROLLER_GET_METADATA_INFO"),
            (1006, "CONTROLLER_GET_SYNC_STATE_DATA"),
            (1007, "GET_BROKER_EPOCH_CACHE"),
            (1008, "NOTIFY_BROKER_ROLE_CHANGED"),
            (1009, "UPDATE_CONTROLLER_CONFIG"),
            (1010, "GET_CONTROLLER_CONFIG"),
            (1011, "CLEAN_BROKER_DATA"),
            (1012, "CONTROLLER_GET_NEXT_BROKER_ID"),
            (1013, "CONTROLLER_APPLY_BROKER_ID"),
        ] {
            assert_eq!(RequestCode(code).name(), Some(name));
        }
        assert!(CONTROLLER_CODES.windows(2).all(|w| w[0] < w[1]));
        for code in CONTROLLER_CODES {
            assert!(code.name().is_some(), "{code:?}");
            // None of them is a NameServer code but the heartbeat both answer.
            assert_eq!(
                RequestCode::NAMESRV_CODES.contains(&code),
                code == RequestCode::BROKER_HEARTBEAT
            );
        }
    }

    #[test]
    fn response_codes_are_2000_to_2016_with_java_names() {
        for (i, (code, name)) in CONTROLLER_RESPONSE_CODES.iter().enumerate() {
            assert_eq!(code.0, 2000 + i as i32);
            assert_eq!(response_code_name(*code), Some(*name));
            assert_eq!(code.name(), None, "not a NameServer code");
        }
        assert_eq!(ResponseCode::CONTROLLER_NOT_LEADER.0, 2007);
        assert_eq!(
            response_code_name(ResponseCode::CONTROLLER_MASTER_STILL_EXIST),
            Some("CONTROLLER_MASTER_STILL_EXIST")
        );
        assert_eq!(response_code_name(ResponseCode::SUCCESS), None);
        assert_eq!(response_code_name(ResponseCode(2017)), None);
    }

    #[test]
    fn alter_sync_state_set_header() {
        let java = [
            ("brokerName", "broker-a"),
            ("masterBrokerId", "1"),
            ("masterEpoch", "3"),
            ("invokeTime", "1700000000000"),
        ];
        let h = AlterSyncStateSetHeader::decode(&java_ext(
            RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
            &java,
        ))
        .unwrap();
        assert_eq!(
            h,
            AlterSyncStateSetHeader {
                broker_name: "broker-a".into(),
                master_broker_id: Some(1),
                master_epoch: 3,
                invoke_time: Some(1_700_000_000_000),
            }
        );
        round_trip(&h);
        assert_eq!(
            keys(&h),
            ["brokerName", "invokeTime", "masterBrokerId", "masterEpoch"]
        );
        each_required_field_is_named::<AlterSyncStateSetHeader>(
            &java,
            &["brokerName", "masterEpoch"],
        );
        // Without masterBrokerId Java answers CONTROLLER_INVALID_MASTER: not a header error.
        let no_master = AlterSyncStateSetHeader::decode(&java_ext(
            RequestCode(0),
            &[("brokerName", "b"), ("masterEpoch", "1")],
        ))
        .unwrap();
        assert_eq!(no_master.master_broker_id, None);
        round_trip(&no_master);
        let bad = AlterSyncStateSetHeader::decode(&java_ext(
            RequestCode(0),
            &[("brokerName", "b"), ("masterEpoch", "one")],
        ))
        .unwrap_err();
        assert_eq!(
            bad.to_string(),
            "the custom field <masterEpoch> is not a valid int: \"one\""
        );

        let resp = AlterSyncStateSetResponseHeader {
            new_sync_state_set_epoch: 4,
        };
        round_trip(&resp);
        assert_eq!(
            resp.to_ext().iter().collect::<Vec<_>>(),
            [("newSyncStateSetEpoch", "4")]
        );
        // A failure answer carries Java's primitive zero; reading an absent one gives it too.
        assert_eq!(
            AlterSyncStateSetResponseHeader::decode(&RemotingCommand::success())
                .unwrap()
                .new_sync_state_set_epoch,
            0
        );
    }

    #[test]
    fn elect_master_headers() {
        // ElectMasterRequestHeader.ofBrokerTrigger and ofAdminTrigger.
        let broker = [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("brokerId", "2"),
            ("designateElect", "false"),
            ("invokeTime", "1700000000000"),
        ];
        let h = ElectMasterHeader::decode(&java_ext(RequestCode::CONTROLLER_ELECT_MASTER, &broker))
            .unwrap();
        assert_eq!(
            h,
            ElectMasterHeader {
                cluster_name: "DefaultCluster".into(),
                broker_name: "broker-a".into(),
                broker_id: 2,
                designate_elect: false,
                invoke_time: Some(1_700_000_000_000),
            }
        );
        round_trip(&h);
        let admin = ElectMasterHeader {
            designate_elect: true,
            invoke_time: None,
            ..h.clone()
        };
        round_trip(&admin);
        assert_eq!(
            keys(&admin),
            ["brokerId", "brokerName", "clusterName", "designateElect"]
        );
        each_required_field_is_named::<ElectMasterHeader>(
            &broker,
            &["clusterName", "brokerName", "brokerId", "designateElect"],
        );
        let bad = ElectMasterHeader::decode(&java_ext(
            RequestCode(0),
            &[
                ("clusterName", "c"),
                ("brokerName", "b"),
                ("brokerId", "x"),
                ("designateElect", "TRUE"),
            ],
        ))
        .unwrap_err();
        assert_eq!(
            bad.to_string(),
            "the custom field <brokerId> is not a valid long: \"x\""
        );

        let resp = ElectMasterResponseHeader {
            master_broker_id: Some(2),
            master_address: Some("127.0.0.1:10921".into()),
            master_epoch: Some(5),
            sync_state_set_epoch: Some(6),
        };
        round_trip(&resp);
        assert_eq!(
            keys(&resp),
            [
                "masterAddress",
                "masterBrokerId",
                "masterEpoch",
                "syncStateSetEpoch"
            ]
        );
        // A failed election: Java's header with every field null, written as no keys.
        round_trip(&ElectMasterResponseHeader::default());
        assert!(ElectMasterResponseHeader::default().to_ext().is_empty());

        let notify = NotifyBrokerRoleChangedHeader::from(&resp);
        assert_eq!(notify.master_broker_id, Some(2));
        assert_eq!(notify.master_epoch, Some(5));
        assert_eq!(notify.sync_state_set_epoch, Some(6));
        assert_eq!(notify.master_address.as_deref(), Some("127.0.0.1:10921"));
    }

    #[test]
    fn register_broker_to_controller_headers() {
        let java = [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("brokerId", "1"),
            ("brokerAddress", "192.168.0.10:10911"),
            ("invokeTime", "1700000000000"),
        ];
        let h = RegisterBrokerToControllerHeader::decode(&java_ext(
            RequestCode::CONTROLLER_REGISTER_BROKER,
            &java,
        ))
        .unwrap();
        assert_eq!(h.broker_id, 1);
        assert_eq!(h.broker_address, "192.168.0.10:10911");
        round_trip(&h);
        each_required_field_is_named::<RegisterBrokerToControllerHeader>(
            &java,
            &["clusterName", "brokerName", "brokerId", "brokerAddress"],
        );

        // The master exists and is alive.
        let java_resp = [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("masterBrokerId", "1"),
            ("masterAddress", "192.168.0.10:10911"),
            ("masterEpoch", "1"),
            ("syncStateSetEpoch", "2"),
        ];
        let resp =
            RegisterBrokerToControllerResponseHeader::decode(&java_ext(RequestCode(0), &java_resp))
                .unwrap();
        assert_eq!(resp.master_epoch, Some(1));
        assert_eq!(resp.sync_state_set_epoch, Some(2));
        round_trip(&resp);
        // No master: only the names.
        let names = RegisterBrokerToControllerResponseHeader {
            cluster_name: Some("DefaultCluster".into()),
            broker_name: Some("broker-a".into()),
            ..Default::default()
        };
        round_trip(&names);
        assert_eq!(keys(&names), ["brokerName", "clusterName"]);
    }

    #[test]
    fn replica_info_and_metadata_headers() {
        let h = GetReplicaInfoHeader::decode(&java_ext(
            RequestCode::CONTROLLER_GET_REPLICA_INFO,
            &[("brokerName", "broker-a")],
        ))
        .unwrap();
        assert_eq!(h.broker_name, "broker-a");
        round_trip(&h);
        each_required_field_is_named::<GetReplicaInfoHeader>(
            &[("brokerName", "broker-a")],
            &["brokerName"],
        );

        let resp = GetReplicaInfoResponseHeader::decode(&java_ext(
            RequestCode(0),
            &[
                ("masterBrokerId", "1"),
                ("masterAddress", "127.0.0.1:10911"),
                ("masterEpoch", "2"),
            ],
        ))
        .unwrap();
        assert_eq!(
            resp,
            GetReplicaInfoResponseHeader {
                master_broker_id: Some(1),
                master_address: Some("127.0.0.1:10911".into()),
                master_epoch: Some(2),
            }
        );
        round_trip(&resp);
        // After a failed election: no master, the epoch only.
        let no_master = GetReplicaInfoResponseHeader {
            master_epoch: Some(3),
            ..Default::default()
        };
        round_trip(&no_master);
        assert_eq!(keys(&no_master), ["masterEpoch"]);

        // DLedger's answer on a follower.
        let java_meta = [
            ("group", "DefaultControllerGroup"),
            ("controllerLeaderId", "n1"),
            ("controllerLeaderAddress", "127.0.0.1:9879"),
            ("isLeader", "false"),
            ("peers", "n0:127.0.0.1:9878;n1:127.0.0.1:9879;"),
        ];
        let meta =
            GetMetadataResponseHeader::decode(&java_ext(RequestCode(0), &java_meta)).unwrap();
        assert_eq!(
            meta,
            GetMetadataResponseHeader {
                group: Some("DefaultControllerGroup".into()),
                controller_leader_id: Some("n1".into()),
                controller_leader_address: Some("127.0.0.1:9879".into()),
                is_leader: false,
                peers: Some("n0:127.0.0.1:9878;n1:127.0.0.1:9879;".into()),
            }
        );
        round_trip(&meta);
        // No leader yet: the boolean is still written.
        let leaderless = GetMetadataResponseHeader {
            group: Some("g".into()),
            peers: Some("n0:127.0.0.1:9878;".into()),
            ..Default::default()
        };
        round_trip(&leaderless);
        assert_eq!(keys(&leaderless), ["group", "isLeader", "peers"]);
        assert_eq!(leaderless.to_ext().get("isLeader"), Some("false"));
        let leader =
            GetMetadataResponseHeader::decode(&java_ext(RequestCode(0), &[("isLeader", "true")]))
                .unwrap();
        assert!(leader.is_leader);
    }

    #[test]
    fn broker_id_headers() {
        let next = GetNextBrokerIdHeader::decode(&java_ext(
            RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
            &[
                ("clusterName", "DefaultCluster"),
                ("brokerName", "broker-a"),
            ],
        ))
        .unwrap();
        assert_eq!(next.cluster_name.as_deref(), Some("DefaultCluster"));
        round_trip(&next);
        each_required_field_is_named::<GetNextBrokerIdHeader>(
            &[
                ("clusterName", "DefaultCluster"),
                ("brokerName", "broker-a"),
            ],
            &["brokerName"],
        );
        let next_resp = GetNextBrokerIdResponseHeader {
            cluster_name: Some("DefaultCluster".into()),
            broker_name: Some("broker-a".into()),
            next_broker_id: Some(1),
        };
        round_trip(&next_resp);
        assert_eq!(
            GetNextBrokerIdResponseHeader::decode(&java_ext(
                RequestCode(0),
                &[("nextBrokerId", "3")]
            ))
            .unwrap()
            .next_broker_id,
            Some(3)
        );

        let java_apply = [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("appliedBrokerId", "2"),
            ("registerCheckCode", "192.168.0.11:10911;1700000000000"),
        ];
        let apply = ApplyBrokerIdHeader::decode(&java_ext(
            RequestCode::CONTROLLER_APPLY_BROKER_ID,
            &java_apply,
        ))
        .unwrap();
        assert_eq!(apply.applied_broker_id, 2);
        assert_eq!(apply.registered_address(), Some("192.168.0.11:10911"));
        round_trip(&apply);
        each_required_field_is_named::<ApplyBrokerIdHeader>(
            &java_apply,
            &[
                "clusterName",
                "brokerName",
                "appliedBrokerId",
                "registerCheckCode",
            ],
        );
        for (code, address) in [
            ("a:1", Some("a:1")),
            ("", Some("")),
            (";5", Some("")),
            (";", None),
            (";;", None),
        ] {
            let h = ApplyBrokerIdHeader {
                register_check_code: code.into(),
                ..apply.clone()
            };
            assert_eq!(h.registered_address(), address, "{code:?}");
        }
        let apply_resp = ApplyBrokerIdResponseHeader {
            cluster_name: Some("DefaultCluster".into()),
            broker_name: Some("broker-a".into()),
        };
        round_trip(&apply_resp);
        assert_eq!(keys(&apply_resp), ["brokerName", "clusterName"]);
    }

    #[test]
    fn clean_broker_data_header() {
        let java = [
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
            ("brokerControllerIdsToClean", "1;2;3"),
            ("isCleanLivingBroker", "false"),
            ("invokeTime", "1700000000000"),
        ];
        let h = CleanBrokerDataHeader::decode(&java_ext(RequestCode::CLEAN_BROKER_DATA, &java))
            .unwrap();
        assert_eq!(h.cluster_name.as_deref(), Some("DefaultCluster"));
        assert!(!h.clean_living_broker);
        assert_eq!(h.ids_to_clean().unwrap(), Some(BTreeSet::from([1, 2, 3])));
        round_trip(&h);
        each_required_field_is_named::<CleanBrokerDataHeader>(&java, &["brokerName"]);
        // Only brokerName given (the admin passed neither -c nor -b): the whole set.
        let bare = CleanBrokerDataHeader::decode(&java_ext(
            RequestCode(0),
            &[("brokerName", "broker-a"), ("isCleanLivingBroker", "true")],
        ))
        .unwrap();
        assert!(bare.clean_living_broker);
        assert_eq!(bare.ids_to_clean().unwrap(), None);
        round_trip(&bare);
        assert_eq!(keys(&bare), ["brokerName", "isCleanLivingBroker"]);

        let ids = |text: &str| {
            CleanBrokerDataHeader {
                broker_controller_ids_to_clean: Some(text.into()),
                ..Default::default()
            }
            .ids_to_clean()
        };
        assert_eq!(ids("  ").unwrap(), None);
        assert_eq!(ids("7").unwrap(), Some(BTreeSet::from([7])));
        assert_eq!(ids("1;2;;").unwrap(), Some(BTreeSet::from([1, 2])));
        assert_eq!(ids(";").unwrap(), Some(BTreeSet::new()));
        assert_eq!(ids("1;;2").unwrap_err(), InvalidBrokerId(String::new()));
        let err = ids("1; 2").unwrap_err();
        assert_eq!(
            format!(
                "Please set the option <brokerControllerIdsToClean> according to the format, exception: {err}"
            ),
            "Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \" 2\""
        );
    }

    #[test]
    fn notification_headers() {
        let java = [
            ("masterAddress", "127.0.0.1:10921"),
            ("masterEpoch", "2"),
            ("syncStateSetEpoch", "3"),
            ("masterBrokerId", "2"),
        ];
        let h = NotifyBrokerRoleChangedHeader::decode(&java_ext(
            RequestCode::NOTIFY_BROKER_ROLE_CHANGED,
            &java,
        ))
        .unwrap();
        assert_eq!(
            h,
            NotifyBrokerRoleChangedHeader {
                master_address: Some("127.0.0.1:10921".into()),
                master_epoch: Some(2),
                sync_state_set_epoch: Some(3),
                master_broker_id: Some(2),
            }
        );
        round_trip(&h);

        // RouteInfoManager.notifyMinBrokerIdChanged sets all but brokerName.
        let java_min = [
            ("minBrokerId", "1"),
            ("minBrokerAddr", "127.0.0.1:10921"),
            ("offlineBrokerAddr", "127.0.0.1:10911"),
            ("haBrokerAddr", "127.0.0.1:10922"),
        ];
        let min = NotifyMinBrokerIdChangeHeader::decode(&java_ext(
            RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE,
            &java_min,
        ))
        .unwrap();
        assert_eq!(min.min_broker_id, Some(1));
        assert_eq!(min.broker_name, None);
        assert_eq!(min.offline_broker_addr.as_deref(), Some("127.0.0.1:10911"));
        round_trip(&min);
        assert_eq!(
            keys(&min),
            [
                "haBrokerAddr",
                "minBrokerAddr",
                "minBrokerId",
                "offlineBrokerAddr"
            ]
        );
        round_trip(&NotifyMinBrokerIdChangeHeader::default());
    }

    #[test]
    fn heartbeat_reuses_the_namesrv_header() {
        // BrokerOuterAPI.sendHeartbeatToController: every field set.
        let java = [
            ("clusterName", "DefaultCluster"),
            ("brokerAddr", "127.0.0.1:10911"),
            ("brokerName", "broker-a"),
            ("brokerId", "1"),
            ("epoch", "2"),
            ("maxOffset", "4096"),
            ("confirmOffset", "4000"),
            ("heartbeatTimeoutMills", "10000"),
            ("electionPriority", "2147483647"),
        ];
        let h =
            BrokerHeartbeatHeader::decode(&java_ext(RequestCode::BROKER_HEARTBEAT, &java)).unwrap();
        assert_eq!(h.broker_id, Some(1));
        assert_eq!(h.heartbeat_timeout_mills, Some(10_000));
        assert_eq!(h.election_priority, Some(i32::MAX));
        round_trip(&h);
    }

    /// Decodes a Java-shaped sample, checks it re-encodes to the same bytes, returns it.
    fn java_body<T: ControllerBody + fmt::Debug + PartialEq>(java: &str) -> T {
        let value = T::decode(Some(java.as_bytes())).unwrap();
        assert_eq!(std::str::from_utf8(&value.encode()).unwrap(), java);
        value
    }

    #[test]
    fn sync_state_set_body() {
        let set: SyncStateSet = java_body(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#);
        assert_eq!(
            set,
            SyncStateSet {
                sync_state_set: BTreeSet::from([1, 2]),
                sync_state_set_epoch: 3,
            }
        );
        // After a failed election the set may be empty.
        let empty: SyncStateSet = java_body(r#"{"syncStateSet":[],"syncStateSetEpoch":0}"#);
        assert!(empty.sync_state_set.is_empty());
        // Java's HashSet order is not ours; a set reads the same in any order.
        let unordered =
            SyncStateSet::decode(Some(br#"{"syncStateSetEpoch":3,"syncStateSet":[2,1]}"#)).unwrap();
        assert_eq!(unordered, set);
        // The epoch is a Java int: absent is 0. The set is required.
        assert_eq!(
            SyncStateSet::decode(Some(br#"{"syncStateSet":[1]}"#))
                .unwrap()
                .sync_state_set_epoch,
            0
        );
        let err = SyncStateSet::decode(Some(br#"{"syncStateSetEpoch":1}"#)).unwrap_err();
        assert!(
            err.to_string().contains("missing field `syncStateSet`"),
            "{err}"
        );
        assert!(
            err.to_string().starts_with("bad SyncStateSet body: "),
            "{err}"
        );
        let none = SyncStateSet::decode(None).unwrap_err();
        assert_eq!(none.to_string(), "the command carries no SyncStateSet body");
        assert!(SyncStateSet::decode(Some(b"")).is_err());
        // Not an array of field values, as fastjson.
        assert!(SyncStateSet::decode(Some(b"[[1],1]")).is_err());
    }

    #[test]
    fn elect_master_body() {
        // A new master: the set is the master alone, with the broker set's members.
        let elected: ElectMasterResponseBody = java_body(
            r#"{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:10911",2:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#,
        );
        let group = elected.broker_member_group.as_ref().unwrap();
        assert_eq!(group.broker_addrs[&2], "127.0.0.1:10921");
        assert_eq!(group.cluster.as_deref(), Some("DefaultCluster"));
        assert_eq!(elected.sync_state_set, BTreeSet::from([2]));
        // CONTROLLER_MASTER_STILL_EXIST: the current set only.
        let kept: ElectMasterResponseBody = java_body(r#"{"syncStateSet":[1,2]}"#);
        assert_eq!(kept.broker_member_group, None);
        // Standard JSON (quoted keys) reads the same.
        let quoted = ElectMasterResponseBody::decode(Some(
            br#"{"brokerMemberGroup":{"brokerAddrs":{"1":"127.0.0.1:10911","2":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#,
        ))
        .unwrap();
        assert_eq!(quoted, elected);
        // Everything has a Java default.
        assert_eq!(
            ElectMasterResponseBody::decode(Some(b"{}")).unwrap(),
            ElectMasterResponseBody::default()
        );
    }

    #[test]
    fn sync_state_data_bodies() {
        let names: BrokerNameList = java_body(r#"["broker-a","broker-b"]"#);
        assert_eq!(names.0, ["broker-a", "broker-b"]);
        assert!(BrokerNameList::decode(Some(br#"{"a":1}"#)).is_err());

        let java = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"127.0.0.1:10911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"127.0.0.1:10911","masterBrokerId":1,"masterEpoch":2,"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:10921","brokerId":2,"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}"#;
        let info: BrokerReplicasInfo = java_body(java);
        let a = &info.replicas_info_table["broker-a"];
        assert_eq!(a.master_broker_id, Some(1));
        assert_eq!(a.master_epoch, 2);
        assert_eq!(a.sync_state_set_epoch, 3);
        assert_eq!(a.in_sync_replicas[0].alive, Some(true));
        assert_eq!(a.not_in_sync_replicas[0].broker_id, 2);
        // No master after a failed election: Java leaves both out.
        let leaderless: BrokerReplicasInfo = java_body(
            r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[],"masterEpoch":3,"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:10911","brokerId":1,"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}"#,
        );
        assert_eq!(
            leaderless.replicas_info_table["broker-a"].master_address,
            None
        );
        let _: BrokerReplicasInfo = java_body(r#"{"replicasInfoTable":{}}"#);

        let missing_list = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[],"masterEpoch":1,"syncStateSetEpoch":1}}}"#;
        let err = BrokerReplicasInfo::decode(Some(missing_list.as_bytes())).unwrap_err();
        assert!(
            err.to_string()
                .contains("missing field `notInSyncReplicas`"),
            "{err}"
        );
        let missing_id = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"a","brokerName":"broker-a"}],"notInSyncReplicas":[]}}}"#;
        let err = BrokerReplicasInfo::decode(Some(missing_id.as_bytes())).unwrap_err();
        assert!(
            err.to_string().contains("missing field `brokerId`"),
            "{err}"
        );
    }

    #[test]
    fn epoch_cache_body() {
        let java = r#"{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":[{"endOffset":1024,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}],"maxOffset":2048}"#;
        let cache: EpochEntryCache = java_body(java);
        assert_eq!(cache.broker_name.as_deref(), Some("broker-a"));
        assert_eq!(cache.max_offset, 2048);
        assert_eq!(
            cache.epoch_list,
            [
                EpochEntry {
                    end_offset: 1024,
                    epoch: 1,
                    start_offset: 0
                },
                EpochEntry {
                    end_offset: i64::MAX,
                    epoch: 2,
                    start_offset: 1024
                },
            ]
        );
        let err = EpochEntryCache::decode(Some(br#"{"brokerId":0,"maxOffset":1}"#)).unwrap_err();
        assert!(
            err.to_string().contains("missing field `epochList`"),
            "{err}"
        );
        let err = EpochEntryCache::decode(Some(br#"{"epochList":[{"epoch":1,"startOffset":0}]}"#))
            .unwrap_err();
        assert!(
            err.to_string().contains("missing field `endOffset`"),
            "{err}"
        );
        // Names are display-only in Java (printed as null): optional.
        let bare: EpochEntryCache = java_body(r#"{"brokerId":1,"epochList":[],"maxOffset":0}"#);
        assert_eq!(bare.cluster_name, None);
    }

    #[test]
    fn bodies_are_legacy_json() {
        // The one integer-keyed map stays bare in what we write, as fastjson's default.
        let body = ElectMasterResponseBody {
            broker_member_group: Some(BrokerMemberGroup {
                broker_addrs: BTreeMap::from([(1, "h:1".to_owned())]),
                broker_name: None,
                cluster: None,
            }),
            sync_state_set: BTreeSet::from([1]),
        };
        assert_eq!(
            body.encode(),
            br#"{"brokerMemberGroup":{"brokerAddrs":{1:"h:1"}},"syncStateSet":[1]}"#
        );
    }
}
