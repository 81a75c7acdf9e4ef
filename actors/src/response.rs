//! Turning the typed replies of `crate::messages` into response commands (codes, remarks, headers
//! and bodies as Java sends them), all in one place. The connection then stamps opaque, version
//! and serialize type.

use rmq_protocol::body::{to_json, GetBrokerMemberGroupResponseBody, SharedClusterInfo, TopicList};
use rmq_protocol::custom_headers::{CommandHeader, HeaderFieldError, RegisterBrokerResponseHeader};
use rmq_protocol::fastjson::JsonStyle;
use rmq_protocol::{ExtFields, RemotingCommand, ResponseCode};

use crate::messages::{
    AddTopicCount, Body, ConfigUpdateError, DataVersionReply, Disabled, KvReplyError, KvValue,
    RegisterBrokerReply, RouteError, WipeTopicCount,
};
use crate::route::RegisterOutcome;

/// The suffix Java's `FAQUrl.suggestTodo` adds to TOPIC_NOT_EXIST remarks.
pub const FAQ_SUFFIX: &str =
    "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.";

/// A typed reply that becomes a response.
pub trait IntoResponse {
    fn into_response(self) -> RemotingCommand;
}

/// SYSTEM_ERROR with a remark.
pub fn system_error(remark: impl Into<String>) -> RemotingCommand {
    RemotingCommand::response(ResponseCode::SYSTEM_ERROR, Some(remark.into()))
}

/// Reads a custom header; a missing or unparsable required field is a SYSTEM_ERROR naming it.
pub fn read_header<H: CommandHeader>(cmd: &RemotingCommand) -> Result<H, RemotingCommand> {
    H::decode(cmd).map_err(|e: HeaderFieldError| system_error(e.to_string()))
}

/// Largest body of the requests whose body is read on the connection's thread or by an actor:
/// a DataVersion, a topic route, a runtime update are a few KiB; a body of megabytes would hold
/// up every connection of the thread (or the actor) while it is parsed. REGISTER_BROKER bodies,
/// the only large ones, are decoded on the CPU runtime (registration.rs).
pub const MAX_SMALL_BODY_BYTES: usize = 1 << 20;

/// Refuses a body over [`MAX_SMALL_BODY_BYTES`] with a SYSTEM_ERROR saying so.
pub fn small_body(cmd: &RemotingCommand, what: &str) -> Result<(), RemotingCommand> {
    let len = cmd.body_bytes().len();
    if len > MAX_SMALL_BODY_BYTES {
        return Err(system_error(format!(
            "{what} body of {len} bytes exceeds {MAX_SMALL_BODY_BYTES}"
        )));
    }
    Ok(())
}

/// SYSTEM_BUSY with Java 5.x's "[OVERLOAD]" prefix: a request shed by a limit
/// (docs/limits.md). Clients treat it as a failed attempt and retry later.
pub fn overloaded(what: impl std::fmt::Display) -> RemotingCommand {
    RemotingCommand::response(
        ResponseCode::SYSTEM_BUSY,
        Some(format!("[OVERLOAD]system busy, {what}, try again later")),
    )
}

/// GO_AWAY, as Java's server answers while it drains.
pub fn go_away() -> RemotingCommand {
    RemotingCommand::response(ResponseCode::GO_AWAY, Some("please go away".to_owned()))
}

/// REQUEST_CODE_NOT_SUPPORTED, with Java's remark (leading space included).
pub fn not_supported(code: i32) -> RemotingCommand {
    RemotingCommand::response(
        ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
        Some(format!(" request type {code} not supported")),
    )
}

impl IntoResponse for RemotingCommand {
    fn into_response(self) -> RemotingCommand {
        self
    }
}

/// SUCCESS without header or body (UNREGISTER_BROKER, BROKER_HEARTBEAT, DELETE_TOPIC, ...).
impl IntoResponse for () {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success()
    }
}

impl IntoResponse for Body {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success().with_body(self.0)
    }
}

/// A SUCCESS whose body is `value` in Java's (legacy) JSON.
fn json_success(value: &impl serde::Serialize) -> RemotingCommand {
    RemotingCommand::success().with_body(to_json(value, JsonStyle::Legacy))
}

/// Encoded from the groups' shared encodings: the same bytes as `ClusterInfo`'s.
impl IntoResponse for SharedClusterInfo {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success().with_body(self.to_json(JsonStyle::Legacy))
    }
}

impl IntoResponse for TopicList {
    fn into_response(self) -> RemotingCommand {
        json_success(&self)
    }
}

/// Java's GET_BROKER_MEMBER_GROUP handler sets only the code, so its SUCCESS keeps the default
/// remark of a new response.
impl IntoResponse for GetBrokerMemberGroupResponseBody {
    fn into_response(self) -> RemotingCommand {
        let mut response = json_success(&self);
        response.remark = Some("not set any response code".to_owned());
        response
    }
}

impl IntoResponse for RouteError {
    fn into_response(self) -> RemotingCommand {
        match self {
            RouteError::TopicNotExist(_) => RemotingCommand::response(
                ResponseCode::TOPIC_NOT_EXIST,
                Some(format!("{self}{FAQ_SUFFIX}")),
            ),
            RouteError::NotReady => system_error(self.to_string()),
        }
    }
}

impl IntoResponse for Disabled {
    fn into_response(self) -> RemotingCommand {
        system_error("disable")
    }
}

impl IntoResponse for WipeTopicCount {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success()
            .with_ext_fields(ExtFields::new().with("wipeTopicCount", self.0.to_string()))
    }
}

impl IntoResponse for AddTopicCount {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success()
            .with_ext_fields(ExtFields::new().with("addTopicCount", self.0.to_string()))
    }
}

impl IntoResponse for DataVersionReply {
    fn into_response(self) -> RemotingCommand {
        let resp = RemotingCommand::success()
            .with_ext_fields(ExtFields::new().with("changed", self.changed.to_string()));
        match self.stored {
            Some(version) => resp.with_body(to_json(&version, JsonStyle::Legacy)),
            None => resp,
        }
    }
}

impl IntoResponse for RegisterBrokerReply {
    fn into_response(self) -> RemotingCommand {
        let header = match self.outcome {
            RegisterOutcome::SingleTopicFirstRegistration => {
                // With the response-header class's empty extFields, as Java sends it.
                return system_error("register broker failed").with_ext_fields(ExtFields::new());
            }
            RegisterOutcome::StaleStateVersion => RegisterBrokerResponseHeader::default(),
            RegisterOutcome::Registered {
                ha_server_addr,
                master_addr,
            } => RegisterBrokerResponseHeader {
                ha_server_addr,
                master_addr,
            },
        };
        let resp = RemotingCommand::success().with_ext_fields(header.to_ext());
        match self.order_topic_config {
            Some(table) => resp.with_body(to_json(&*table, JsonStyle::Legacy)),
            None => resp,
        }
    }
}

impl IntoResponse for KvValue {
    fn into_response(self) -> RemotingCommand {
        RemotingCommand::success().with_ext_fields(ExtFields::new().with("value", self.0))
    }
}

impl IntoResponse for KvReplyError {
    fn into_response(self) -> RemotingCommand {
        match self {
            Self::NamespaceOrKeyNull => system_error("namespace or key is null"),
            Self::NoItem { namespace, key } => RemotingCommand::response(
                ResponseCode::QUERY_NOT_FOUND,
                Some(format!("No config item, Namespace: {namespace} Key: {key}")),
            )
            .with_ext_fields(ExtFields::new()),
            Self::NoNamespace { namespace } => RemotingCommand::response(
                ResponseCode::QUERY_NOT_FOUND,
                Some(format!("No config item, Namespace: {namespace}")),
            ),
            Self::NotPersisted(reason) => system_error(format!(
                "the change is applied but could not be saved (it is retried with the next change): {reason}"
            )),
            Self::StoreUnavailable(reason) => {
                system_error(format!("the KV store (etcd) is unavailable: {reason}"))
            }
            Self::Refused(reason) => system_error(format!("[LIMIT] KV change refused: {reason}")),
        }
    }
}

impl IntoResponse for ConfigUpdateError {
    fn into_response(self) -> RemotingCommand {
        match self {
            ConfigUpdateError::BlackListed { .. } => {
                RemotingCommand::response(ResponseCode::NO_PERMISSION, Some(self.to_string()))
            }
            _ => system_error(self.to_string()),
        }
    }
}

impl<T: IntoResponse, E: IntoResponse> IntoResponse for Result<T, E> {
    fn into_response(self) -> RemotingCommand {
        match self {
            Ok(reply) => reply.into_response(),
            Err(err) => err.into_response(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remarks_match_java() {
        let r = RouteError::TopicNotExist("TopicTest".into()).into_response();
        assert_eq!(r.code, 17);
        assert_eq!(
            r.remark.as_deref(),
            Some("No topic route info in name server for the topic: TopicTest\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details.")
        );
        assert_eq!(
            not_supported(10).remark.as_deref(),
            Some(" request type 10 not supported")
        );
        assert_eq!(Disabled.into_response().remark.as_deref(), Some("disable"));
        assert_eq!(
            RouteError::NotReady.into_response().remark.as_deref(),
            Some("name server not ready")
        );
    }

    #[test]
    fn master_registration_has_empty_ext_fields() {
        let r = RegisterBrokerReply {
            outcome: RegisterOutcome::Registered {
                ha_server_addr: None,
                master_addr: None,
            },
            order_topic_config: None,
            routes_changed: true,
        }
        .into_response();
        assert_eq!(r.ext_fields, Some(ExtFields::new()));
        assert_eq!(r.body, None);
    }

    #[test]
    fn kv_replies_match_java() {
        let r = KvReplyError::NoItem {
            namespace: "namespace".into(),
            key: "key".into(),
        }
        .into_response();
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (22, Some("No config item, Namespace: namespace Key: key"))
        );
        assert_eq!(r.ext_fields, Some(ExtFields::new()));
        let r = KvReplyError::NoNamespace {
            namespace: "x".into(),
        }
        .into_response();
        assert_eq!(
            (r.code, r.remark.as_deref()),
            (22, Some("No config item, Namespace: x"))
        );
        assert!(r.ext_fields.is_none());
        assert_eq!(KvValue("v".into()).into_response().ext("value"), Some("v"));
    }
}
