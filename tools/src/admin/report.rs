//! What a command ends with: why a NameServer gave no usable answer ([`Cause`], [`AdminError`]),
//! one NameServer's usable answer ([`Answer`]), and what to print and exit with ([`Report`]).

use serde_json::{json, Value};

pub(super) use crate::outcome::decode_body;
pub use crate::outcome::{
    AdminError, Cause, Peer, EXIT_ANSWERED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE,
};

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

/// `value` as JSON, for `--json`.
pub(super) fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, Cause> {
    serde_json::to_value(value).map_err(|e| Cause::BadResponse(e.to_string()))
}
