//! Typed custom headers: the `extFields` of each request and response
//! (docs/protocol.md#custom-headers, #request-codes).
//!
//! Parsing follows Java's `decodeCommandCustomHeader`: fields are looked up by exact name, unknown
//! keys are ignored, booleans are true only for `"true"` (any case), an unparsable optional number
//! reads as absent. Where Java would go on with a null required field and fail later with a
//! `NullPointerException`, we stop at once with a [`HeaderFieldError`] that names the field; the
//! server answers it with `SYSTEM_ERROR` and that text as the remark.

use crate::code::version;
use crate::command::{ExtFields, RemotingCommand};
use crate::fastjson::JsonStyle;

/// A required field is missing or cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderFieldError {
    #[error("the custom field <{0}> is null")]
    Missing(&'static str),
    #[error("the custom field <{field}> is not a valid {expected}: {value:?}")]
    Invalid {
        field: &'static str,
        expected: &'static str,
        value: String,
    },
}

/// Typed access to a command's ext fields with Java's parsing rules.
#[derive(Debug, Clone, Copy)]
pub struct ExtReader<'a> {
    fields: Option<&'a ExtFields>,
}

impl<'a> ExtReader<'a> {
    pub fn new(fields: Option<&'a ExtFields>) -> Self {
        Self { fields }
    }

    pub fn of(cmd: &'a RemotingCommand) -> Self {
        Self::new(cmd.ext_fields.as_ref())
    }

    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.fields.and_then(|f| f.get(name))
    }

    pub fn string(&self, name: &str) -> Option<String> {
        self.get(name).map(str::to_owned)
    }

    pub fn required_string(&self, name: &'static str) -> Result<String, HeaderFieldError> {
        self.string(name).ok_or(HeaderFieldError::Missing(name))
    }

    /// An optional Long: absent or unparsable is `None` (Java logs and leaves it null).
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(|v| v.trim().parse().ok())
    }

    pub fn required_i64(&self, name: &'static str) -> Result<i64, HeaderFieldError> {
        let value = self.get(name).ok_or(HeaderFieldError::Missing(name))?;
        value.trim().parse().map_err(|_| HeaderFieldError::Invalid {
            field: name,
            expected: "long",
            value: value.to_owned(),
        })
    }

    /// An optional Integer: absent or unparsable is `None`.
    pub fn i32(&self, name: &str) -> Option<i32> {
        self.get(name).and_then(|v| v.trim().parse().ok())
    }

    /// An optional Boolean: `Boolean.parseBoolean`, so anything but "true" (any case) is false.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.get(name).map(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// A custom header that can be read from and written to ext fields.
pub trait CommandHeader: Sized {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError>;
    fn to_ext(&self) -> ExtFields;

    /// Reads this header from a command.
    fn decode(cmd: &RemotingCommand) -> Result<Self, HeaderFieldError> {
        Self::from_ext(ExtReader::of(cmd))
    }
}

fn put_opt(fields: &mut ExtFields, key: &str, value: Option<impl ToString>) {
    if let Some(v) = value {
        fields.insert(key, v.to_string());
    }
}

/// Declares a header whose fields are all strings; `req` fields are required, `opt` fields not.
macro_rules! string_header {
    ($(#[$doc:meta])* $name:ident { $(req $rfield:ident : $rkey:literal,)* $(opt $ofield:ident : $okey:literal,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $(pub $rfield: String,)*
            $(pub $ofield: Option<String>,)*
        }

        impl CommandHeader for $name {
            fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
                Ok(Self {
                    $($rfield: ext.required_string($rkey)?,)*
                    $($ofield: ext.string($okey),)*
                })
            }

            fn to_ext(&self) -> ExtFields {
                #[allow(unused_mut)]
                let mut fields = ExtFields::new();
                $(fields.insert($rkey, self.$rfield.clone());)*
                $(put_opt(&mut fields, $okey, self.$ofield.as_ref());)*
                fields
            }
        }
    };
}

string_header! {
    /// PUT_KV_CONFIG (100). Java checks namespace and key itself (remark "namespace or key is
    /// null"), so all three are optional here.
    PutKvConfigHeader { opt namespace: "namespace", opt key: "key", opt value: "value", }
}

string_header! {
    /// GET_KV_CONFIG (101). Missing fields print as "null" in the not-found remark, as in Java.
    GetKvConfigHeader { opt namespace: "namespace", opt key: "key", }
}

string_header! {
    /// DELETE_KV_CONFIG (102).
    DeleteKvConfigHeader { opt namespace: "namespace", opt key: "key", }
}

string_header! {
    /// GET_KVLIST_BY_NAMESPACE (219).
    GetKvListByNamespaceHeader { opt namespace: "namespace", }
}

string_header! {
    /// WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327).
    BrokerNameHeader { req broker_name: "brokerName", }
}

string_header! {
    /// DELETE_TOPIC_IN_NAMESRV (216).
    DeleteTopicHeader { req topic: "topic", opt cluster_name: "clusterName", }
}

string_header! {
    /// REGISTER_TOPIC_IN_NAMESRV (217).
    RegisterTopicHeader { req topic: "topic", }
}

string_header! {
    /// GET_TOPICS_BY_CLUSTER (224). The key is `cluster`, not `clusterName`.
    GetTopicsByClusterHeader { req cluster: "cluster", }
}

string_header! {
    /// GET_BROKER_MEMBER_GROUP (901).
    GetBrokerMemberGroupHeader { req cluster_name: "clusterName", req broker_name: "brokerName", }
}

/// REGISTER_BROKER (103) request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterBrokerHeader {
    pub broker_name: String,
    pub broker_addr: String,
    pub cluster_name: String,
    /// Java keeps a null haServerAddr; slaves of such a master then get none in their replies.
    pub ha_server_addr: Option<String>,
    pub broker_id: i64,
    /// Per-broker expiry; `None` means the server default (120 s).
    pub heartbeat_timeout_millis: Option<i64>,
    /// `None` marks an old-version (4.x) broker.
    pub enable_acting_master: Option<bool>,
    pub compressed: bool,
    /// CRC-32 of the body masked to 31 bits; 0 means unchecked.
    pub body_crc32: i32,
    /// Ext `__ZONE_NAME`.
    pub zone_name: Option<String>,
}

impl CommandHeader for RegisterBrokerHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            broker_name: ext.required_string("brokerName")?,
            broker_addr: ext.required_string("brokerAddr")?,
            cluster_name: ext.required_string("clusterName")?,
            ha_server_addr: ext.string("haServerAddr"),
            broker_id: ext.required_i64("brokerId")?,
            heartbeat_timeout_millis: ext.i64("heartbeatTimeoutMillis"),
            enable_acting_master: ext.bool("enableActingMaster"),
            compressed: ext.bool("compressed").unwrap_or(false),
            body_crc32: ext.i32("bodyCrc32").unwrap_or(0),
            zone_name: ext.string(ZONE_NAME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new()
            .with("brokerName", self.broker_name.clone())
            .with("brokerAddr", self.broker_addr.clone())
            .with("clusterName", self.cluster_name.clone());
        put_opt(&mut f, "haServerAddr", self.ha_server_addr.as_ref());
        f.insert("brokerId", self.broker_id.to_string());
        put_opt(
            &mut f,
            "heartbeatTimeoutMillis",
            self.heartbeat_timeout_millis,
        );
        put_opt(&mut f, "enableActingMaster", self.enable_acting_master);
        f.insert("compressed", self.compressed.to_string());
        f.insert("bodyCrc32", self.body_crc32.to_string());
        put_opt(&mut f, ZONE_NAME, self.zone_name.as_ref());
        f
    }
}

/// Ext key carrying a broker's or client's zone.
pub const ZONE_NAME: &str = "__ZONE_NAME";
/// Ext key switching on zone filtering of routes.
pub const ZONE_MODE: &str = "__ZONE_MODE";

/// The (cluster, address, name, id) identity of a broker instance: UNREGISTER_BROKER (104) and
/// QUERY_DATA_VERSION (322) request headers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerIdentityHeader {
    pub broker_name: String,
    pub broker_addr: String,
    pub cluster_name: String,
    pub broker_id: i64,
}

impl CommandHeader for BrokerIdentityHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            broker_name: ext.required_string("brokerName")?,
            broker_addr: ext.required_string("brokerAddr")?,
            cluster_name: ext.required_string("clusterName")?,
            broker_id: ext.required_i64("brokerId")?,
        })
    }

    fn to_ext(&self) -> ExtFields {
        ExtFields::new()
            .with("brokerName", self.broker_name.clone())
            .with("brokerAddr", self.broker_addr.clone())
            .with("clusterName", self.cluster_name.clone())
            .with("brokerId", self.broker_id.to_string())
    }
}

/// QUERY_DATA_VERSION (322): only cluster and address are needed to find the live entry; Java
/// reads the name and id too but never uses them, so they are optional here.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryDataVersionHeader {
    pub broker_name: Option<String>,
    pub broker_addr: String,
    pub cluster_name: String,
    pub broker_id: Option<i64>,
}

impl CommandHeader for QueryDataVersionHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            broker_name: ext.string("brokerName"),
            broker_addr: ext.required_string("brokerAddr")?,
            cluster_name: ext.required_string("clusterName")?,
            broker_id: ext.i64("brokerId"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        f.insert("brokerAddr", self.broker_addr.clone());
        f.insert("clusterName", self.cluster_name.clone());
        put_opt(&mut f, "brokerId", self.broker_id);
        f
    }
}

/// GET_ROUTEINFO_BY_TOPIC (105) request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetRouteInfoHeader {
    /// `None` when absent: Java answers TOPIC_NOT_EXIST for topic "null".
    pub topic: Option<String>,
    pub accept_standard_json_only: Option<bool>,
    /// Ext `__ZONE_MODE` parsed as a Java boolean.
    pub zone_mode: bool,
    /// Ext `__ZONE_NAME`.
    pub zone_name: Option<String>,
}

impl CommandHeader for GetRouteInfoHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            topic: ext.string("topic"),
            accept_standard_json_only: ext.bool("acceptStandardJsonOnly"),
            zone_mode: ext.bool(ZONE_MODE).unwrap_or(false),
            zone_name: ext.string(ZONE_NAME),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "topic", self.topic.as_ref());
        put_opt(
            &mut f,
            "acceptStandardJsonOnly",
            self.accept_standard_json_only,
        );
        if self.zone_mode {
            f.insert(ZONE_MODE, "true");
        }
        put_opt(&mut f, ZONE_NAME, self.zone_name.as_ref());
        f
    }
}

/// GET_ROUTEINFO_BY_TOPIC (105) as the server reads it, borrowed from the header: nothing is
/// copied or allocated. [`GetRouteInfoHeader`] is the owned form a client writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteQuery<'a> {
    /// `None` when absent.
    pub topic: Option<&'a str>,
    /// Standard JSON for V4_9_4+ requests or when `acceptStandardJsonOnly`, legacy otherwise.
    pub style: JsonStyle,
    /// The zone, only in zone mode and when not blank.
    pub zone: Option<&'a str>,
}

impl<'a> RouteQuery<'a> {
    pub fn of(cmd: &'a RemotingCommand) -> RouteQuery<'a> {
        let ext = ExtReader::of(cmd);
        let standard =
            cmd.version >= version::V4_9_4 || ext.bool("acceptStandardJsonOnly") == Some(true);
        let style = if standard {
            JsonStyle::Standard
        } else {
            JsonStyle::Legacy
        };
        let zone = ext
            .get(ZONE_NAME)
            .filter(|zone| ext.bool(ZONE_MODE) == Some(true) && !zone.trim().is_empty());
        RouteQuery {
            topic: ext.get("topic"),
            style,
            zone,
        }
    }
}

/// BROKER_HEARTBEAT (904) request header. The NameServer uses only cluster and address.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrokerHeartbeatHeader {
    pub cluster_name: String,
    pub broker_addr: String,
    pub broker_name: Option<String>,
    pub broker_id: Option<i64>,
    pub epoch: Option<i32>,
    pub max_offset: Option<i64>,
    pub confirm_offset: Option<i64>,
    /// Java spells it `heartbeatTimeoutMills` in this header.
    pub heartbeat_timeout_mills: Option<i64>,
    pub election_priority: Option<i32>,
}

impl CommandHeader for BrokerHeartbeatHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            cluster_name: ext.required_string("clusterName")?,
            broker_addr: ext.required_string("brokerAddr")?,
            broker_name: ext.string("brokerName"),
            broker_id: ext.i64("brokerId"),
            epoch: ext.i32("epoch"),
            max_offset: ext.i64("maxOffset"),
            confirm_offset: ext.i64("confirmOffset"),
            heartbeat_timeout_mills: ext.i64("heartbeatTimeoutMills"),
            election_priority: ext.i32("electionPriority"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new()
            .with("clusterName", self.cluster_name.clone())
            .with("brokerAddr", self.broker_addr.clone());
        put_opt(&mut f, "brokerName", self.broker_name.as_ref());
        put_opt(&mut f, "brokerId", self.broker_id);
        put_opt(&mut f, "epoch", self.epoch);
        put_opt(&mut f, "maxOffset", self.max_offset);
        put_opt(&mut f, "confirmOffset", self.confirm_offset);
        put_opt(
            &mut f,
            "heartbeatTimeoutMills",
            self.heartbeat_timeout_mills,
        );
        put_opt(&mut f, "electionPriority", self.election_priority);
        f
    }
}

/// REGISTER_BROKER response header: set for a slave whose master is alive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RegisterBrokerResponseHeader {
    pub ha_server_addr: Option<String>,
    pub master_addr: Option<String>,
}

impl CommandHeader for RegisterBrokerResponseHeader {
    fn from_ext(ext: ExtReader<'_>) -> Result<Self, HeaderFieldError> {
        Ok(Self {
            ha_server_addr: ext.string("haServerAddr"),
            master_addr: ext.string("masterAddr"),
        })
    }

    fn to_ext(&self) -> ExtFields {
        let mut f = ExtFields::new();
        put_opt(&mut f, "haServerAddr", self.ha_server_addr.as_ref());
        put_opt(&mut f, "masterAddr", self.master_addr.as_ref());
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::RequestCode;

    #[test]
    fn register_header_round_trip_and_leniency() {
        let h = RegisterBrokerHeader {
            broker_name: "broker-a".into(),
            broker_addr: "127.0.0.1:10911".into(),
            cluster_name: "DefaultCluster".into(),
            ha_server_addr: Some("127.0.0.1:10912".into()),
            broker_id: 0,
            heartbeat_timeout_millis: None,
            enable_acting_master: Some(false),
            compressed: false,
            body_crc32: 12345,
            zone_name: None,
        };
        let cmd =
            RemotingCommand::request(RequestCode::REGISTER_BROKER).with_ext_fields(h.to_ext());
        assert_eq!(RegisterBrokerHeader::decode(&cmd).unwrap(), h);

        let lenient = RemotingCommand::request(RequestCode::REGISTER_BROKER).with_ext_fields(
            h.to_ext()
                .with("enableActingMaster", "TRUE")
                .with("compressed", "yes")
                .with("bodyCrc32", "not-a-number")
                .with("heartbeatTimeoutMillis", "x")
                .with("AccessKey", "ak"),
        );
        let parsed = RegisterBrokerHeader::decode(&lenient).unwrap();
        assert_eq!(parsed.enable_acting_master, Some(true));
        assert!(!parsed.compressed);
        assert_eq!(parsed.body_crc32, 0);
        assert_eq!(parsed.heartbeat_timeout_millis, None);
    }

    #[test]
    fn missing_and_invalid_required_fields_are_named() {
        let cmd = RemotingCommand::request(RequestCode::REGISTER_BROKER)
            .with_ext("brokerName", "b")
            .with_ext("brokerAddr", "a")
            .with_ext("clusterName", "c");
        assert_eq!(
            RegisterBrokerHeader::decode(&cmd).unwrap_err(),
            HeaderFieldError::Missing("brokerId")
        );
        let cmd = cmd.with_ext("brokerId", "zero");
        let err = RegisterBrokerHeader::decode(&cmd).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the custom field <brokerId> is not a valid long: \"zero\""
        );
        let none = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER);
        assert_eq!(
            BrokerNameHeader::decode(&none).unwrap_err().to_string(),
            "the custom field <brokerName> is null"
        );
    }

    #[test]
    fn route_header_reads_zone_keys() {
        let cmd = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext("topic", "T")
            .with_ext(ZONE_MODE, "True")
            .with_ext(ZONE_NAME, "z1")
            .with_ext("acceptStandardJsonOnly", "false");
        let h = GetRouteInfoHeader::decode(&cmd).unwrap();
        assert_eq!(h.topic.as_deref(), Some("T"));
        assert!(h.zone_mode);
        assert_eq!(h.zone_name.as_deref(), Some("z1"));
        assert_eq!(h.accept_standard_json_only, Some(false));
        assert_eq!(
            GetRouteInfoHeader::decode(&RemotingCommand::request(RequestCode(105)))
                .unwrap()
                .topic,
            None
        );
    }
}
