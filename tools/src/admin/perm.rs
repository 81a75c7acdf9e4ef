//! Write-permission commands: `wipeWritePerm` and `addWritePerm`, on every NameServer.

use rmq_protocol::custom_headers::{BrokerNameHeader, CommandHeader};
use rmq_protocol::{RemotingCommand, RequestCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::report::{Cause, Report};

/// `wipeWritePerm -b BROKER` (WIPE_WRITE_PERM_OF_BROKER): clears the write permission of the
/// broker group's topics; each line ends with the count of topics changed.
pub(super) async fn wipe_write_perm(ask: &Ask<'_>, broker_name: &str) -> Report {
    change_write_perm(ask, broker_name, Change::Wipe).await
}

/// `addWritePerm -b BROKER` (ADD_WRITE_PERM_OF_BROKER): restores the write permission of the
/// broker group's topics; each line ends with the count of topics changed.
pub(super) async fn add_write_perm(ask: &Ask<'_>, broker_name: &str) -> Report {
    change_write_perm(ask, broker_name, Change::Add).await
}

#[derive(Debug, Clone, Copy)]
enum Change {
    Wipe,
    Add,
}

async fn change_write_perm(ask: &Ask<'_>, broker_name: &str, change: Change) -> Report {
    let (code, verb, count_field) = match change {
        Change::Wipe => (
            RequestCode::WIPE_WRITE_PERM_OF_BROKER,
            "wipe",
            "wipeTopicCount",
        ),
        Change::Add => (
            RequestCode::ADD_WRITE_PERM_OF_BROKER,
            "add",
            "addTopicCount",
        ),
    };
    let request = RemotingCommand::request(code).with_ext_fields(broker_header(broker_name));
    let what = format!("{verb} write perm of broker[{broker_name}]");
    ask.write(&what, request, |resp| topic_count(resp, count_field))
        .await
}

fn broker_header(broker_name: &str) -> rmq_protocol::ExtFields {
    BrokerNameHeader {
        broker_name: broker_name.to_owned(),
    }
    .to_ext()
}

/// The `wipeTopicCount` / `addTopicCount` of a write-permission answer: `", 3"` and `{name: 3}`.
fn topic_count(resp: &RemotingCommand, name: &str) -> Result<(String, Value), Cause> {
    match resp.ext(name) {
        Some(count) => {
            let count: i64 = count
                .trim()
                .parse()
                .map_err(|_| Cause::BadResponse(format!("{name} {count:?} is not a number")))?;
            Ok((format!(", {count}"), json!({ name: count })))
        }
        None => Ok((String::new(), json!({ name: null }))),
    }
}
