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

mod bodies;
mod headers;
#[cfg(test)]
mod tests;

pub use bodies::*;
pub use headers::*;
