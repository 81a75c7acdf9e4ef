//! NameServer configuration commands: `getNamesrvConfig` and `updateNamesrvConfig`, on every
//! NameServer.

use std::collections::BTreeMap;

use rmq_protocol::{properties, RemotingCommand, RequestCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::format::config_block;
use super::report::{Answer, Cause, Report};

/// `getNamesrvConfig` (GET_NAMESRV_CONFIG): one `key = value` block per NameServer.
pub(super) async fn get_namesrv_config(ask: &Ask<'_>) -> Report {
    configs_of_each(ask, RequestCode::GET_NAMESRV_CONFIG, config_block, |addr| {
        format!("get name server config of name server[{addr}]")
    })
    .await
}

/// `updateNamesrvConfig -k KEY -v VALUE` (UPDATE_NAMESRV_CONFIG).
pub(super) async fn update_namesrv_config(ask: &Ask<'_>, key: &str, value: &str) -> Report {
    update_config(
        ask,
        RequestCode::UPDATE_NAMESRV_CONFIG,
        "name server",
        key,
        value,
    )
    .await
}

/// A configuration read (`code` answers a properties body) from every server asked, each shown
/// as `block` lays it out; `what` names the request in errors. The NameServer's and the
/// controller's get commands.
pub(super) async fn configs_of_each(
    ask: &Ask<'_>,
    code: RequestCode,
    block: fn(&str, &BTreeMap<String, String>) -> String,
    what: impl Fn(&str) -> String,
) -> Report {
    ask.each(
        RemotingCommand::request(code),
        |addr, resp| {
            let text = String::from_utf8_lossy(resp.body_bytes());
            let config = properties::parse(&text)
                .map_err(|e| Cause::BadResponse(format!("bad properties body: {e}")))?;
            Ok(Answer {
                text: block(addr, &config),
                json: json!(config),
            })
        },
        what,
    )
    .await
}

/// A configuration update (`code`) of one key on every server asked, each on its own line: the
/// pair sent as a properties body, escaped as `Properties.store` escapes, so that Java's
/// `Properties.load` reads back exactly `key` and `value`. `server` names the kind in the line.
pub(super) async fn update_config(
    ask: &Ask<'_>,
    code: RequestCode,
    server: &str,
    key: &str,
    value: &str,
) -> Report {
    let body = properties::store([(key, value)]);
    let request = RemotingCommand::request(code).with_body(body.into_bytes());
    let what = format!("update {server} config {key}={value}");
    ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
        .await
}
