//! What a command ends with: why a NameServer gave no usable answer ([`Cause`], [`AdminError`]),
//! one NameServer's usable answer ([`Answer`]), and what to print and exit with ([`Report`]).

use std::fmt;

use rmq_protocol::controller::response_code_name;
use rmq_protocol::{fastjson, RemotingCommand, ResponseCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::{EXIT_ANSWERED, EXIT_UNREACHABLE};
use crate::client::ClientError;

/// Why one NameServer gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Refused, timed out, closed, or not speaking the protocol.
    Unreachable(String),
    /// A response with a non-success code.
    Answered { code: i32, remark: Option<String> },
    /// A success response whose body or header cannot be read.
    BadResponse(String),
    /// A controller that answers but knows no leader (none elected yet, or the peers are split).
    NoLeader,
}

/// What kind of server a command talks to: named in messages, the key of its `--json` entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    NameServer,
    Controller,
    Broker,
}

impl Peer {
    /// How messages name it: `name server`, `controller`, `broker`.
    pub fn noun(self) -> &'static str {
        match self {
            Self::NameServer => "name server",
            Self::Controller => "controller",
            Self::Broker => "broker",
        }
    }

    /// The key of its address in `--json`: `namesrv`, `controller`, `broker`.
    pub fn json_key(self) -> &'static str {
        match self {
            Self::NameServer => "namesrv",
            Self::Controller => "controller",
            Self::Broker => "broker",
        }
    }
}

impl Cause {
    pub(super) fn from_client(err: &ClientError) -> Self {
        Self::Unreachable(match err {
            ClientError::Connect { source, .. } => source.to_string(),
            ClientError::Timeout(limit) => {
                format!("no response within {}", humantime::format_duration(*limit))
            }
            other => other.to_string(),
        })
    }

    /// A non-success response, or `None` for SUCCESS.
    pub(super) fn of_response(resp: &RemotingCommand) -> Option<Self> {
        (resp.response_code() != ResponseCode::SUCCESS).then(|| Self::Answered {
            code: resp.code,
            remark: resp.remark.clone(),
        })
    }

    pub(super) fn exit_code(&self) -> u8 {
        match self {
            Self::Unreachable(_) => EXIT_UNREACHABLE,
            Self::Answered { .. } | Self::BadResponse(_) | Self::NoLeader => EXIT_ANSWERED,
        }
    }
}

/// The short form, after "Failed, " in per-server lines.
impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreachable(reason) => write!(f, "unreachable: {reason}"),
            Self::Answered { code, remark } => {
                write!(f, "answered {}: {}", CodeText(*code), RemarkText(remark))
            }
            Self::BadResponse(reason) => write!(f, "unreadable response: {reason}"),
            Self::NoLeader => f.write_str("knows no controller leader"),
        }
    }
}

/// One server's failure, naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    pub peer: Peer,
    pub addr: String,
    pub cause: Cause,
}

impl std::error::Error for AdminError {}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (peer, addr) = (self.peer.noun(), &self.addr);
        match &self.cause {
            Cause::Unreachable(reason) => write!(f, "cannot reach {peer} {addr}: {reason}"),
            Cause::Answered { code, remark } => write!(
                f,
                "{peer} {addr} answered {}: {}",
                CodeText(*code),
                RemarkText(remark)
            ),
            Cause::BadResponse(reason) => {
                write!(f, "{peer} {addr} sent an unreadable response: {reason}")
            }
            Cause::NoLeader => write!(f, "{peer} {addr} knows no controller leader"),
        }
    }
}

impl AdminError {
    fn to_json(&self) -> Value {
        let message = self.to_string();
        match &self.cause {
            Cause::Unreachable(_) => json!({ "kind": "unreachable", "message": message }),
            Cause::Answered { code, remark } => json!({
                "kind": "answered",
                "message": message,
                "code": code,
                "name": code_name(*code),
                "remark": remark,
            }),
            Cause::BadResponse(_) => json!({ "kind": "bad_response", "message": message }),
            Cause::NoLeader => json!({ "kind": "no_leader", "message": message }),
        }
    }
}

/// The Java name of a response code, the controller's (2000-2016) included.
fn code_name(code: i32) -> Option<&'static str> {
    let code = ResponseCode(code);
    code.name().or_else(|| response_code_name(code))
}

/// A response code as printed: `NAME(code)`, or `code N` for one without a name.
struct CodeText(i32);

impl fmt::Display for CodeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match code_name(self.0) {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "{}", ResponseCode(self.0)),
        }
    }
}

/// A response's remark as printed: `(no remark)` when missing or empty.
struct RemarkText<'a>(&'a Option<String>);

impl fmt::Display for RemarkText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_deref() {
            Some(remark) if !remark.is_empty() => f.write_str(remark),
            _ => f.write_str("(no remark)"),
        }
    }
}

/// What a command prints and how it exits, built before anything is printed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub stdout: String,
    pub stderr: String,
    pub exit: u8,
}

/// One NameServer's successful answer: its text and its JSON form.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) json: Value,
}

/// The `--json` entry of one NameServer that failed.
pub(super) fn failure_entry(error: &AdminError) -> Value {
    let mut entry = serde_json::Map::new();
    entry.insert(error.peer.json_key().to_owned(), json!(error.addr));
    entry.insert("ok".to_owned(), json!(false));
    entry.insert("error".to_owned(), error.to_json());
    Value::Object(entry)
}

/// A JSON document on one line, as `--json` prints it.
pub(super) fn json_line(value: &Value) -> String {
    format!("{value}\n")
}

/// The JSON (fastjson) body of a success response.
pub(super) fn decode_body<T: DeserializeOwned>(resp: &RemotingCommand) -> Result<T, Cause> {
    if resp.body_bytes().is_empty() {
        return Err(Cause::BadResponse("no body".to_owned()));
    }
    fastjson::from_slice(resp.body_bytes()).map_err(|e| Cause::BadResponse(e.to_string()))
}

/// `value` as JSON, for `--json`.
pub(super) fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, Cause> {
    serde_json::to_value(value).map_err(|e| Cause::BadResponse(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_name_code_and_address() {
        let answered = AdminError {
            peer: Peer::NameServer,
            addr: "127.0.0.1:9876".to_owned(),
            cause: Cause::Answered {
                code: 22,
                remark: Some("No config item, Namespace: ns Key: k".to_owned()),
            },
        };
        assert_eq!(
            answered.to_string(),
            "name server 127.0.0.1:9876 answered QUERY_NOT_FOUND(22): No config item, Namespace: ns Key: k"
        );
        assert_eq!(answered.cause.exit_code(), EXIT_ANSWERED);
        let json = answered.to_json();
        assert_eq!(json["kind"], "answered");
        assert_eq!(json["code"], 22);
        assert_eq!(json["name"], "QUERY_NOT_FOUND");
        let unknown = Cause::Answered {
            code: 77,
            remark: None,
        };
        assert_eq!(unknown.to_string(), "answered code 77: (no remark)");
        let refused = AdminError {
            peer: Peer::NameServer,
            addr: "127.0.0.1:1".to_owned(),
            cause: Cause::Unreachable("Connection refused (os error 111)".to_owned()),
        };
        assert_eq!(
            refused.to_string(),
            "cannot reach name server 127.0.0.1:1: Connection refused (os error 111)"
        );
        assert_eq!(refused.cause.exit_code(), EXIT_UNREACHABLE);
        assert_eq!(refused.to_json()["kind"], "unreachable");
    }
}
