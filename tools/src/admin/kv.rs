//! KV config commands: `getKvConfig`, `kvList` (reads), `updateKvConfig`, `deleteKvConfig`
//! (writes to every NameServer).

use rmq_protocol::body::KvTable;
use rmq_protocol::custom_headers::{
    CommandHeader, DeleteKvConfigHeader, GetKvConfigHeader, GetKvListByNamespaceHeader,
    PutKvConfigHeader,
};
use rmq_protocol::{RemotingCommand, RequestCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::format::table;
use super::report::{decode_body, Answer, Cause, Report};

/// `getKvConfig -s NAMESPACE -k KEY` (GET_KV_CONFIG): the value on one line.
pub(super) async fn get_kv_config(ask: &Ask<'_>, namespace: &str, key: &str) -> Report {
    let header = GetKvConfigHeader {
        namespace: Some(namespace.to_owned()),
        key: Some(key.to_owned()),
    };
    let request =
        RemotingCommand::request(RequestCode::GET_KV_CONFIG).with_ext_fields(header.to_ext());
    ask.read(request, |resp| {
        let value = resp
            .ext("value")
            .ok_or_else(|| Cause::BadResponse("no value in the response".to_owned()))?;
        Ok(Answer {
            text: format!("{value}\n"),
            json: json!({ "namespace": namespace, "key": key, "value": value }),
        })
    })
    .await
}

/// `kvList -s NAMESPACE` (GET_KVLIST_BY_NAMESPACE): a `#Key  #Value` table.
pub(super) async fn kv_list(ask: &Ask<'_>, namespace: &str) -> Report {
    let header = GetKvListByNamespaceHeader {
        namespace: Some(namespace.to_owned()),
    };
    let request = RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
        .with_ext_fields(header.to_ext());
    ask.read(request, |resp| {
        let kv: KvTable = decode_body(resp)?;
        let rows = kv
            .table
            .iter()
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect::<Vec<_>>();
        Ok(Answer {
            text: table(&["#Key", "#Value"], &rows),
            json: json!({ "namespace": namespace, "table": kv.table }),
        })
    })
    .await
}

/// `updateKvConfig -s NAMESPACE -k KEY -v VALUE` (PUT_KV_CONFIG) on every NameServer.
pub(super) async fn update_kv_config(
    ask: &Ask<'_>,
    namespace: &str,
    key: &str,
    value: &str,
) -> Report {
    let header = PutKvConfigHeader {
        namespace: Some(namespace.to_owned()),
        key: Some(key.to_owned()),
        value: Some(value.to_owned()),
    };
    let request =
        RemotingCommand::request(RequestCode::PUT_KV_CONFIG).with_ext_fields(header.to_ext());
    let what = format!("update kv config [{namespace}] {key}={value}");
    ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
        .await
}

/// `deleteKvConfig -s NAMESPACE -k KEY` (DELETE_KV_CONFIG) on every NameServer.
pub(super) async fn delete_kv_config(ask: &Ask<'_>, namespace: &str, key: &str) -> Report {
    let header = DeleteKvConfigHeader {
        namespace: Some(namespace.to_owned()),
        key: Some(key.to_owned()),
    };
    let request =
        RemotingCommand::request(RequestCode::DELETE_KV_CONFIG).with_ext_fields(header.to_ext());
    let what = format!("delete kv config [{namespace}] {key}");
    ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
        .await
}
