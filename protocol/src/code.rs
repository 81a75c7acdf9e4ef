//! Numeric codes of the remoting protocol: request codes, response codes, languages, serialize types
//! and the `MQVersion` ordinals the NameServer cares about (docs/protocol.md#language-and-version,
//! #request-codes, #response-codes).

use std::fmt;

/// A request code as sent in the `code` header field of a request.
///
/// Kept as a newtype over the raw integer: an unknown code is still a valid request (it is answered
/// with `REQUEST_CODE_NOT_SUPPORTED`), so it must round-trip unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestCode(pub i32);

impl RequestCode {
    pub const PUT_KV_CONFIG: Self = Self(100);
    pub const GET_KV_CONFIG: Self = Self(101);
    pub const DELETE_KV_CONFIG: Self = Self(102);
    pub const REGISTER_BROKER: Self = Self(103);
    pub const UNREGISTER_BROKER: Self = Self(104);
    pub const GET_ROUTEINFO_BY_TOPIC: Self = Self(105);
    pub const GET_BROKER_CLUSTER_INFO: Self = Self(106);
    pub const WIPE_WRITE_PERM_OF_BROKER: Self = Self(205);
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: Self = Self(206);
    pub const DELETE_TOPIC_IN_NAMESRV: Self = Self(216);
    pub const REGISTER_TOPIC_IN_NAMESRV: Self = Self(217);
    pub const GET_KVLIST_BY_NAMESPACE: Self = Self(219);
    pub const GET_TOPICS_BY_CLUSTER: Self = Self(224);
    pub const GET_SYSTEM_TOPIC_LIST_FROM_NS: Self = Self(304);
    pub const GET_UNIT_TOPIC_LIST: Self = Self(311);
    pub const GET_HAS_UNIT_SUB_TOPIC_LIST: Self = Self(312);
    pub const GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: Self = Self(313);
    pub const UPDATE_NAMESRV_CONFIG: Self = Self(318);
    pub const GET_NAMESRV_CONFIG: Self = Self(319);
    pub const QUERY_DATA_VERSION: Self = Self(322);
    pub const ADD_WRITE_PERM_OF_BROKER: Self = Self(327);
    pub const GET_BROKER_MEMBER_GROUP: Self = Self(901);
    pub const BROKER_HEARTBEAT: Self = Self(904);
    /// Sent by a Java NameServer to brokers (docs/route-rules.md#registering-a-broker, step 4);
    /// never answered by one.
    pub const NOTIFY_MIN_BROKER_ID_CHANGE: Self = Self(905);

    // The 5.x controller's codes (docs/controller.md, `controller/`). A Java NameServer does not
    // answer them on its own port, even with `enableControllerInNamesrv`: the embedded controller
    // listens on its own address.
    pub const CONTROLLER_ALTER_SYNC_STATE_SET: Self = Self(1001);
    pub const CONTROLLER_ELECT_MASTER: Self = Self(1002);
    pub const CONTROLLER_REGISTER_BROKER: Self = Self(1003);
    pub const CONTROLLER_GET_REPLICA_INFO: Self = Self(1004);
    pub const CONTROLLER_GET_METADATA_INFO: Self = Self(1005);
    pub const CONTROLLER_GET_SYNC_STATE_DATA: Self = Self(1006);
    /// Sent by admin tools to a broker, not to the controller.
    pub const GET_BROKER_EPOCH_CACHE: Self = Self(1007);
    /// Sent by the controller to brokers.
    pub const NOTIFY_BROKER_ROLE_CHANGED: Self = Self(1008);
    pub const UPDATE_CONTROLLER_CONFIG: Self = Self(1009);
    pub const GET_CONTROLLER_CONFIG: Self = Self(1010);
    pub const CLEAN_BROKER_DATA: Self = Self(1011);
    pub const CONTROLLER_GET_NEXT_BROKER_ID: Self = Self(1012);
    pub const CONTROLLER_APPLY_BROKER_ID: Self = Self(1013);

    /// Every request code a 5.x NameServer answers (docs/protocol.md#request-codes), in numeric
    /// order.
    pub const NAMESRV_CODES: [Self; 23] = [
        Self::PUT_KV_CONFIG,
        Self::GET_KV_CONFIG,
        Self::DELETE_KV_CONFIG,
        Self::REGISTER_BROKER,
        Self::UNREGISTER_BROKER,
        Self::GET_ROUTEINFO_BY_TOPIC,
        Self::GET_BROKER_CLUSTER_INFO,
        Self::WIPE_WRITE_PERM_OF_BROKER,
        Self::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        Self::DELETE_TOPIC_IN_NAMESRV,
        Self::REGISTER_TOPIC_IN_NAMESRV,
        Self::GET_KVLIST_BY_NAMESPACE,
        Self::GET_TOPICS_BY_CLUSTER,
        Self::GET_SYSTEM_TOPIC_LIST_FROM_NS,
        Self::GET_UNIT_TOPIC_LIST,
        Self::GET_HAS_UNIT_SUB_TOPIC_LIST,
        Self::GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        Self::UPDATE_NAMESRV_CONFIG,
        Self::GET_NAMESRV_CONFIG,
        Self::QUERY_DATA_VERSION,
        Self::ADD_WRITE_PERM_OF_BROKER,
        Self::GET_BROKER_MEMBER_GROUP,
        Self::BROKER_HEARTBEAT,
    ];

    /// The Java constant name of a known code, for logs and tables.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            100 => "PUT_KV_CONFIG",
            101 => "GET_KV_CONFIG",
            102 => "DELETE_KV_CONFIG",
            103 => "REGISTER_BROKER",
            104 => "UNREGISTER_BROKER",
            105 => "GET_ROUTEINFO_BY_TOPIC",
            106 => "GET_BROKER_CLUSTER_INFO",
            205 => "WIPE_WRITE_PERM_OF_BROKER",
            206 => "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
            216 => "DELETE_TOPIC_IN_NAMESRV",
            217 => "REGISTER_TOPIC_IN_NAMESRV",
            219 => "GET_KVLIST_BY_NAMESPACE",
            224 => "GET_TOPICS_BY_CLUSTER",
            304 => "GET_SYSTEM_TOPIC_LIST_FROM_NS",
            311 => "GET_UNIT_TOPIC_LIST",
            312 => "GET_HAS_UNIT_SUB_TOPIC_LIST",
            313 => "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST",
            318 => "UPDATE_NAMESRV_CONFIG",
            319 => "GET_NAMESRV_CONFIG",
            322 => "QUERY_DATA_VERSION",
            327 => "ADD_WRITE_PERM_OF_BROKER",
            901 => "GET_BROKER_MEMBER_GROUP",
            904 => "BROKER_HEARTBEAT",
            905 => "NOTIFY_MIN_BROKER_ID_CHANGE",
            1001 => "CONTROLLER_ALTER_SYNC_STATE_SET",
            1002 => "CONTROLLER_ELECT_MASTER",
            1003 => "CONTROLLER_REGISTER_BROKER",
            1004 => "CONTROLLER_GET_REPLICA_INFO",
            1005 => "CONTROLLER_GET_METADATA_INFO",
            1006 => "CONTROLLER_GET_SYNC_STATE_DATA",
            1007 => "GET_BROKER_EPOCH_CACHE",
            1008 => "NOTIFY_BROKER_ROLE_CHANGED",
            1009 => "UPDATE_CONTROLLER_CONFIG",
            1010 => "GET_CONTROLLER_CONFIG",
            1011 => "CLEAN_BROKER_DATA",
            1012 => "CONTROLLER_GET_NEXT_BROKER_ID",
            1013 => "CONTROLLER_APPLY_BROKER_ID",
            _ => return None,
        })
    }
}

impl fmt::Display for RequestCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "{}", self.0),
        }
    }
}

/// A response code as sent in the `code` header field of a response
/// (docs/protocol.md#response-codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResponseCode(pub i32);

impl ResponseCode {
    pub const SUCCESS: Self = Self(0);
    pub const SYSTEM_ERROR: Self = Self(1);
    pub const SYSTEM_BUSY: Self = Self(2);
    pub const REQUEST_CODE_NOT_SUPPORTED: Self = Self(3);
    pub const NO_PERMISSION: Self = Self(16);
    pub const TOPIC_NOT_EXIST: Self = Self(17);
    pub const QUERY_NOT_FOUND: Self = Self(22);
    pub const GO_AWAY: Self = Self(1500);

    /// The Java constant name of a code a NameServer sends.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "SUCCESS",
            1 => "SYSTEM_ERROR",
            2 => "SYSTEM_BUSY",
            3 => "REQUEST_CODE_NOT_SUPPORTED",
            16 => "NO_PERMISSION",
            17 => "TOPIC_NOT_EXIST",
            22 => "QUERY_NOT_FOUND",
            1500 => "GO_AWAY",
            _ => return None,
        })
    }
}

impl fmt::Display for ResponseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "code {}", self.0),
        }
    }
}

/// The sender's language (docs/protocol.md#language-and-version). Unknown codes and names decode
/// to [`LanguageCode::Unknown`], as Java decodes them to `null` without failing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum LanguageCode {
    #[default]
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
    NodeJs,
    Unknown(u8),
}

impl LanguageCode {
    const NAMES: [&'static str; 14] = [
        "JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO",
        "PHP", "OMS", "RUST", "NODE_JS",
    ];

    pub fn from_code(code: u8) -> Self {
        match code {
            0 => Self::Java,
            1 => Self::Cpp,
            2 => Self::Dotnet,
            3 => Self::Python,
            4 => Self::Delphi,
            5 => Self::Erlang,
            6 => Self::Ruby,
            7 => Self::Other,
            8 => Self::Http,
            9 => Self::Go,
            10 => Self::Php,
            11 => Self::Oms,
            12 => Self::Rust,
            13 => Self::NodeJs,
            other => Self::Unknown(other),
        }
    }

    pub fn code(self) -> u8 {
        match self {
            Self::Java => 0,
            Self::Cpp => 1,
            Self::Dotnet => 2,
            Self::Python => 3,
            Self::Delphi => 4,
            Self::Erlang => 5,
            Self::Ruby => 6,
            Self::Other => 7,
            Self::Http => 8,
            Self::Go => 9,
            Self::Php => 10,
            Self::Oms => 11,
            Self::Rust => 12,
            Self::NodeJs => 13,
            Self::Unknown(code) => code,
        }
    }

    pub fn from_name(name: &str) -> Self {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|i| u8::try_from(i).ok())
            .map_or(Self::Unknown(u8::MAX), Self::from_code)
    }

    /// The Java enum name, or `None` for an unknown language (Java writes nothing for null).
    pub fn name(self) -> Option<&'static str> {
        Self::NAMES.get(usize::from(self.code())).copied()
    }
}

/// Header serialization, the high byte of the header-length word (docs/protocol.md#frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    #[default]
    Json,
    RocketMq,
}

impl SerializeType {
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }

    pub fn byte(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::RocketMq => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::RocketMq => "ROCKETMQ",
        }
    }
}

/// `MQVersion.Version` ordinals that change NameServer behaviour
/// (docs/protocol.md#language-and-version).
pub mod version {
    /// Below it REGISTER_BROKER carries a bare TopicConfigSerializeWrapper.
    pub const V3_0_11: i32 = 37;
    /// From it GET_ROUTEINFO_BY_TOPIC answers in standard JSON.
    pub const V4_9_4: i32 = 401;
    pub const V4_9_8: i32 = 409;
    /// From it a compressed RegisterBrokerBody carries the static-topic mapping section.
    pub const V5_0_0: i32 = 413;
    /// What a Java 5.3.3 NameServer advertises in its responses.
    pub const V5_3_3: i32 = 479;
    /// What a Java 5.5.0 NameServer advertises in its responses: our default, as the release
    /// we are a drop-in for (`server.advertised_version`).
    pub const V5_5_0: i32 = 513;

    /// The last ordinal of Java's enum: `HIGHER_VERSION`, after `V5_9_9`.
    pub const HIGHER_VERSION: i32 = 612;

    /// The `MQVersion.Version` name of `ordinal` (`475` is `V5_3_1`), as Java's
    /// `MQVersion.getVersionDesc`: an ordinal at or past the end of the enum is
    /// `HIGHER_VERSION`. A negative one (Java throws) is `UNKNOWN`.
    ///
    /// The enum is regular but for its start: `V3_0_0_SNAPSHOT`, `V3_0_0_ALPHA1`, the betas and
    /// `V3_0_0_FINAL` (0 to 15); from then on each release is its `_SNAPSHOT` followed by
    /// itself, patches 1 to 15 of 3.0, 0 to 9 of 3.1 and 3.2, 1 to 9 of 3.3 to 3.9, 0 to 9 of
    /// every minor of 4 and 5.
    pub fn name(ordinal: i32) -> String {
        const V3_0_0: [&str; 16] = [
            "SNAPSHOT",
            "ALPHA1",
            "BETA1",
            "BETA2",
            "BETA3",
            "BETA4",
            "BETA5",
            "BETA6_SNAPSHOT",
            "BETA6",
            "BETA7_SNAPSHOT",
            "BETA7",
            "BETA8_SNAPSHOT",
            "BETA8",
            "BETA9_SNAPSHOT",
            "BETA9",
            "FINAL",
        ];
        let Ok(index) = usize::try_from(ordinal) else {
            return "UNKNOWN".to_owned();
        };
        if let Some(suffix) = V3_0_0.get(index) {
            return format!("V3_0_0_{suffix}");
        }
        let mut rest = index - V3_0_0.len();
        for (major, minor, patches) in releases() {
            let len = 2 * patches.clone().count();
            if rest < len {
                let patch = patches.start() + rest / 2;
                let snapshot = if rest % 2 == 0 { "_SNAPSHOT" } else { "" };
                return format!("V{major}_{minor}_{patch}{snapshot}");
            }
            rest -= len;
        }
        "HIGHER_VERSION".to_owned()
    }

    /// The releases after V3_0_0_FINAL, in enum order: major, minor and their patch numbers.
    fn releases() -> impl Iterator<Item = (usize, usize, std::ops::RangeInclusive<usize>)> {
        std::iter::once((3, 0, 1..=15))
            .chain((1..=9).map(|minor| (3, minor, if minor <= 2 { 0..=9 } else { 1..=9 })))
            .chain((4..=5).flat_map(|major| (0..=9).map(move |minor| (major, minor, 0..=9))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_names_and_codes_round_trip() {
        for code in 0..=13u8 {
            let lang = LanguageCode::from_code(code);
            assert_eq!(lang.code(), code);
            let name = lang.name().expect("known languages have names");
            assert_eq!(LanguageCode::from_name(name), lang);
        }
        assert_eq!(LanguageCode::from_name("GO"), LanguageCode::Go);
        assert_eq!(LanguageCode::from_name("KLINGON").name(), None);
        assert_eq!(LanguageCode::from_code(200).name(), None);
    }

    #[test]
    fn mq_version_names_follow_the_java_enum() {
        // Ordinals read off MQVersion.Version (apache/rocketmq, common/.../MQVersion.java).
        for (ordinal, name) in [
            (0, "V3_0_0_SNAPSHOT"),
            (1, "V3_0_0_ALPHA1"),
            (7, "V3_0_0_BETA6_SNAPSHOT"),
            (15, "V3_0_0_FINAL"),
            (16, "V3_0_1_SNAPSHOT"),
            (17, "V3_0_1"),
            (36, "V3_0_11_SNAPSHOT"),
            (37, "V3_0_11"),
            (45, "V3_0_15"),
            (46, "V3_1_0_SNAPSHOT"),
            (85, "V3_2_9"),
            (86, "V3_3_1_SNAPSHOT"),
            (211, "V3_9_9"),
            (212, "V4_0_0_SNAPSHOT"),
            (213, "V4_0_0"),
            (401, "V4_9_4"),
            (409, "V4_9_8"),
            (413, "V5_0_0"),
            (453, "V5_2_0"),
            (475, "V5_3_1"),
            (479, "V5_3_3"),
            (513, "V5_5_0"),
            (611, "V5_9_9"),
        ] {
            assert_eq!(version::name(ordinal), name, "{ordinal}");
        }
        // The named constants agree.
        assert_eq!(version::name(version::V3_0_11), "V3_0_11");
        assert_eq!(version::name(version::V4_9_4), "V4_9_4");
        assert_eq!(version::name(version::V4_9_8), "V4_9_8");
        assert_eq!(version::name(version::V5_0_0), "V5_0_0");
        assert_eq!(version::name(version::V5_3_3), "V5_3_3");
        // Past the enum: Java's getVersionDesc names the last entry; negative is no version.
        for ordinal in [version::HIGHER_VERSION, 613, 10_000, i32::MAX] {
            assert_eq!(version::name(ordinal), "HIGHER_VERSION", "{ordinal}");
        }
        assert_eq!(version::name(-1), "UNKNOWN");
        assert_eq!(version::name(i32::MIN), "UNKNOWN");
        // Every ordinal below HIGHER_VERSION has a name of its own.
        let names: std::collections::HashSet<String> =
            (0..version::HIGHER_VERSION).map(version::name).collect();
        assert_eq!(names.len(), version::HIGHER_VERSION as usize);
        assert!(!names.contains("HIGHER_VERSION"));
    }

    #[test]
    fn all_namesrv_codes_have_names() {
        for code in RequestCode::NAMESRV_CODES {
            assert!(code.name().is_some(), "{code:?}");
        }
        assert_eq!(RequestCode(10).to_string(), "10");
        assert_eq!(
            RequestCode::GET_ROUTEINFO_BY_TOPIC.to_string(),
            "GET_ROUTEINFO_BY_TOPIC(105)"
        );
    }
}
