//! NameServer configuration commands: `getNamesrvConfig` and `updateNamesrvConfig`, on every
//! NameServer.

use rmq_protocol::{properties, RemotingCommand, RequestCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::format::config_block;
use super::report::{Answer, Cause, Report};

/// `getNamesrvConfig` (GET_NAMESRV_CONFIG): one `key = value` block per NameServer.
pub(super) async fn get_namesrv_config(ask: &Ask<'_>) -> Report {
    let request = RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG);
    ask.each(
        request,
        |addr, resp| {
            let text = String::from_utf8_lossy(resp.body_bytes());
            let config = properties::parse(&text)
                .map_err(|e| Cause::BadResponse(format!("bad properties body: {e}")))?;
            Ok(Answer {
                text: config_block(addr, &config),
                json: json!(config),
            })
        },
        |addr| format!("get name server config of name server[{addr}]"),
    )
    .await
}

/// `updateNamesrvConfig -k KEY -v VALUE` (UPDATE_NAMESRV_CONFIG): the pair sent as a properties
/// body, escaped as `Properties.store` escapes, so that Java's `Properties.load` reads back
/// exactly `key` and `value`.
pub(super) async fn update_namesrv_config(ask: &Ask<'_>, key: &str, value: &str) -> Report {
    let body = properties::store([(key, value)]);
    let request =
        RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG).with_body(body.into_bytes());
    let what = format!("update name server config {key}={value}");
    ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
        .await
}
