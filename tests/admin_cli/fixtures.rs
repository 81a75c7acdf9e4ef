//! What the cases set up and read back: registered brokers, a closed port, KV values and the
//! permissions of a route.

use rmq_namesrv::protocol::{RemotingCommand, RequestCode};
use rmq_namesrv::tools::broker::FakeBroker;
use rmq_namesrv::tools::client::Client;
use rmq_namesrv::NameServerHandle;
use serde_json::Value;

use crate::support::*;

pub(crate) fn addr(server: &NameServerHandle) -> String {
    server.local_addr().to_string()
}

/// Registers `broker` on its own connection; the broker lives as long as the connection.
pub(crate) async fn register(server: &NameServerHandle, broker: FakeBroker) -> Client {
    let mut conn = connect(server).await;
    let resp = conn.request(broker.register()).await.expect("register");
    assert_eq!(resp.code, 0, "{resp:?}");
    conn
}

/// broker-a: TopicA, TopicB; broker-b: TopicB, TopicC (a first registration needs two topics).
pub(crate) async fn two_brokers(server: &NameServerHandle) -> (Client, Client) {
    let a = register(
        server,
        FakeBroker::master("broker-a", 10911, &["TopicA", "TopicB"]),
    )
    .await;
    let b = register(
        server,
        FakeBroker::master("broker-b", 10921, &["TopicB", "TopicC"]),
    )
    .await;
    (a, b)
}

/// A port on 127.0.0.1 with nothing listening.
pub(crate) fn closed_port() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    drop(listener);
    addr.to_string()
}

pub(crate) async fn kv_value(server: &NameServerHandle, ns: &str, key: &str) -> Option<String> {
    let mut conn = connect(server).await;
    let resp = conn
        .request(
            RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                .with_ext("namespace", ns)
                .with_ext("key", key),
        )
        .await
        .expect("GET_KV_CONFIG");
    resp.ext("value").map(str::to_owned)
}

pub(crate) fn perms(route: &Value) -> Vec<(String, i64)> {
    route["queueDatas"]
        .as_array()
        .expect("queueDatas")
        .iter()
        .map(|q| {
            (
                q["brokerName"].as_str().unwrap_or_default().to_owned(),
                q["perm"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}
