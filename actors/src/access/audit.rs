//! The audit log (docs/access.md#audit-log): every admin write, and every broker registration or
//! unregistration that changes routes, as one JSON object a line — time, source address (the
//! PROXY-protocol client where that applies), access key, request code, target and result — in
//! its own file, rotated daily and by size. Refused attempts of those requests are audited too.
//! Secrets and KV values never appear; a target's strings are clipped.
//!
//! The [`AuditLog`] actor owns the file's writer (a background thread of tracing-appender does
//! the writing, so a slow disk never stalls an actor). Without a file it writes the lines to
//! the main log (target `audit`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::SystemTime;

use actix::prelude::*;
use rmq_protocol::custom_headers::ExtReader;
use rmq_protocol::signature::ACCESS_KEY;
use rmq_protocol::{properties, RemotingCommand, RequestCode, ResponseCode};
use serde::Serialize;
use tracing::{info, warn};
use tracing_appender::non_blocking::{NonBlocking, WorkerGuard};

/// Bytes of one target string kept.
const TARGET_BYTES: usize = 256;
/// UPDATE_NAMESRV_CONFIG bodies larger than this are not read for their keys (real ones are a
/// few hundred bytes; the connection thread does not parse megabytes for a log line).
const MAX_CONFIG_BODY: usize = 64 * 1024;
/// Keys of an UPDATE_NAMESRV_CONFIG named at most.
const CONFIG_KEYS: usize = 32;

/// What the audit log records of a request (crate::access::audit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audit {
    /// Not audited.
    No,
    /// Audited, with these targets: (name in the log, ext field).
    Fields(&'static [(&'static str, &'static str)]),
    /// UPDATE_NAMESRV_CONFIG: audited with the keys (never the values) of its body.
    ConfigKeys,
}

impl Audit {
    pub fn audited(self) -> bool {
        self != Audit::No
    }
}

/// One audited request, before its result is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditDraft {
    pub source: SocketAddr,
    /// The access key whose signature was verified.
    pub access_key: Option<String>,
    /// An `AccessKey` the request carried that was not verified (its class is open).
    pub claimed_access_key: Option<String>,
    pub code: i32,
    pub target: Vec<(&'static str, String)>,
}

impl AuditDraft {
    /// The draft of `cmd` from `source`, when its code is audited; `access_key` is the key
    /// whose signature was verified, if any.
    pub fn of(
        audit: Audit,
        cmd: &RemotingCommand,
        source: SocketAddr,
        access_key: Option<&str>,
    ) -> Option<AuditDraft> {
        let fields = match audit {
            Audit::No => return None,
            Audit::Fields(fields) => fields,
            Audit::ConfigKeys => &[],
        };
        let ext = ExtReader::of(cmd);
        let mut target: Vec<(&'static str, String)> = fields
            .iter()
            .filter_map(|(name, field)| ext.get(field).map(|v| (*name, clip(v))))
            .collect();
        if audit == Audit::ConfigKeys {
            target.push(("config_keys", config_keys(cmd.body_bytes())));
        }
        // A key claimed but not verified (an open class) is recorded as claimed.
        let claimed = cmd.ext(ACCESS_KEY).filter(|_| access_key.is_none());
        Some(AuditDraft {
            source,
            access_key: access_key.map(clip),
            claimed_access_key: claimed.map(clip),
            code: cmd.code,
            target,
        })
    }

    /// The event of this draft answered with `response`.
    pub fn finish(self, response: &RemotingCommand) -> AuditEvent {
        AuditEvent {
            time: SystemTime::now(),
            draft: self,
            response_code: response.code,
            remark: response.remark.as_deref().map(clip),
        }
    }
}

/// The keys (never the values) of an UPDATE_NAMESRV_CONFIG body, read with the Java properties
/// parser the update itself uses, sorted, `;`-separated and bounded.
fn config_keys(body: &[u8]) -> String {
    if body.len() > MAX_CONFIG_BODY {
        return format!("(a body of {} bytes)", body.len());
    }
    match properties::parse(&String::from_utf8_lossy(body)) {
        Ok(props) => {
            let keys: Vec<&str> = props.keys().map(String::as_str).take(CONFIG_KEYS).collect();
            clip(&keys.join(";"))
        }
        Err(_) => "(not Java properties)".to_owned(),
    }
}

fn clip(text: &str) -> String {
    if text.len() <= TARGET_BYTES {
        return text.to_owned();
    }
    let mut end = TARGET_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// An audited request and its result.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct AuditEvent {
    pub time: SystemTime,
    pub draft: AuditDraft,
    pub response_code: i32,
    pub remark: Option<String>,
}

#[derive(Serialize)]
struct Line<'a> {
    time: String,
    source: String,
    access_key: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    claimed_access_key: Option<&'a str>,
    code: i32,
    request: &'static str,
    target: serde_json::Map<String, serde_json::Value>,
    result: &'static str,
    response_code: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    remark: Option<&'a str>,
}

impl AuditEvent {
    /// The JSON line of this event (without the newline).
    pub fn to_json(&self) -> String {
        let line = Line {
            time: humantime::format_rfc3339_millis(self.time).to_string(),
            source: self.draft.source.to_string(),
            access_key: self.draft.access_key.as_deref(),
            claimed_access_key: self.draft.claimed_access_key.as_deref(),
            code: self.draft.code,
            request: RequestCode(self.draft.code).name().unwrap_or("UNKNOWN"),
            target: self
                .draft
                .target
                .iter()
                .map(|(k, v)| ((*k).to_owned(), serde_json::Value::String(v.clone())))
                .collect(),
            result: ResponseCode(self.response_code).name().unwrap_or("UNKNOWN"),
            response_code: self.response_code,
            remark: self.remark.as_deref(),
        };
        serde_json::to_string(&line).unwrap_or_default()
    }
}

/// Where audit lines go.
enum Sink {
    File {
        writer: NonBlocking,
        _guard: WorkerGuard,
    },
    Log,
}

/// The audit-log actor. See the module docs.
pub struct AuditLog {
    sink: Sink,
    written: u64,
}

impl AuditLog {
    /// Audits to rotating files at `path` (`max_files` kept, the current one included), or to
    /// the main log when `path` is `None`.
    pub fn open(
        path: Option<&Path>,
        max_file_size: u64,
        max_files: usize,
    ) -> std::io::Result<Self> {
        let sink = match path {
            None => Sink::Log,
            Some(path) => {
                let (writer, guard) = crate::logging::rotating_file(
                    path,
                    max_file_size,
                    max_files,
                    "rmq-audit-writer",
                )?;
                Sink::File {
                    writer,
                    _guard: guard,
                }
            }
        };
        Ok(Self { sink, written: 0 })
    }
}

impl Actor for AuditLog {
    type Context = Context<Self>;
}

impl Handler<AuditEvent> for AuditLog {
    type Result = ();

    fn handle(&mut self, event: AuditEvent, _: &mut Context<Self>) {
        let line = event.to_json();
        self.written += 1;
        match &mut self.sink {
            Sink::Log => info!(target: "audit", "{line}"),
            Sink::File { writer, .. } => {
                use std::io::Write;
                let mut bytes = line.into_bytes();
                bytes.push(b'\n');
                if let Err(err) = writer.write_all(&bytes) {
                    warn!(error = %err, "audit line not written");
                }
            }
        }
    }
}

/// The number of audit events written so far (tests and the status page).
#[derive(Debug, Message)]
#[rtype(result = "u64")]
pub struct AuditCount;

impl Handler<AuditCount> for AuditLog {
    type Result = u64;

    fn handle(&mut self, _: AuditCount, _: &mut Context<Self>) -> u64 {
        self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_admin_write_audits_its_target_key_and_result_but_no_value() {
        let cmd = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
            .with_ext("namespace", "ORDER_TOPIC_CONFIG")
            .with_ext("key", "TopicA")
            .with_ext("value", "secret-value")
            .with_ext(ACCESS_KEY, "ops");
        let source: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let kv_key = Audit::Fields(&[("namespace", "namespace"), ("key", "key")]);
        let draft = AuditDraft::of(kv_key, &cmd, source, Some("ops")).unwrap();
        let event = draft.finish(&RemotingCommand::response(ResponseCode::SUCCESS, None));
        let json: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
        assert_eq!(json["source"], "192.0.2.7:4000");
        assert_eq!(json["access_key"], "ops");
        assert_eq!(json["code"], 100);
        assert_eq!(json["request"], "PUT_KV_CONFIG");
        assert_eq!(json["target"]["namespace"], "ORDER_TOPIC_CONFIG");
        assert_eq!(json["target"]["key"], "TopicA");
        assert_eq!(json["result"], "SUCCESS");
        assert!(!event.to_json().contains("secret-value"));
    }

    #[test]
    fn config_updates_name_their_keys_only_and_reads_are_not_audited() {
        let cmd = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(
            &b"orderMessageEnable=true\nclusterTest = false\nsecretish \\\n  value\n"[..],
        );
        let source = "127.0.0.1:1".parse().unwrap();
        let draft = AuditDraft::of(Audit::ConfigKeys, &cmd, source, None).unwrap();
        // Java properties: `key value` and continued lines count as the update reads them.
        assert_eq!(
            draft.target,
            vec![(
                "config_keys",
                "clusterTest;orderMessageEnable;secretish".to_owned()
            )]
        );
        assert!(!format!("{draft:?}").contains("value"));
        let read = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC);
        assert!(AuditDraft::of(Audit::No, &read, source, None).is_none());
    }
}
