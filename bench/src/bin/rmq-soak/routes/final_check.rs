//! After the quiet period: every topic's route and the cluster info list every broker instance
//! on every NameServer.

use std::rc::Rc;
use std::time::{Duration, Instant};

use rmq_protocol::body::{ClusterInfo, TopicRouteData};
use rmq_protocol::fastjson;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tools::client::Client;

use super::topology::{lists, Instance, Topology};
use crate::ledger::{Ledger, Loss, Ns};
use crate::servers::Server;

/// After the quiet period: every topic on every NameServer lists every broker instance, and the
/// cluster info every broker (retried until `within`). Returns what is still missing.
pub async fn final_check(
    topo: &Topology,
    servers: &[Rc<Server>],
    ledger: &Ledger,
    timeout: Duration,
    within: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut missing = Vec::new();
    for (n, server) in servers.iter().enumerate() {
        let ns = Ns(n);
        for topic in &topo.topics {
            // Bounded by `deadline`.
            let left = loop {
                let left = missing_in_route(topo, server, topic, timeout).await;
                if left.is_empty() || Instant::now() >= deadline {
                    break left;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            };
            for what in left {
                let text = format!("{ns} {topic}: {what}");
                ledger.lost(Loss::BrokerMissingAtEnd, &text);
                missing.push(text);
            }
        }
        let left = missing_in_cluster(topo, server, timeout).await;
        for what in left {
            let text = format!("{ns} cluster info: {what}");
            ledger.lost(Loss::BrokerMissingAtEnd, &text);
            missing.push(text);
        }
    }
    missing
}

async fn ask(
    server: &Server,
    request: RemotingCommand,
    timeout: Duration,
) -> Result<RemotingCommand, String> {
    let mut client = Client::connect(&server.addr_text(), timeout)
        .await
        .map_err(|e| e.to_string())?;
    client.request(request).await.map_err(|e| e.to_string())
}

async fn missing_in_route(
    topo: &Topology,
    server: &Server,
    topic: &str,
    timeout: Duration,
) -> Vec<String> {
    let request =
        RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic);
    let all: Vec<&Instance> = topo.hosting(topic).filter_map(|i| topo.get(i)).collect();
    match ask(server, request, timeout).await {
        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
            match fastjson::from_slice::<TopicRouteData>(reply.body_bytes()) {
                Ok(route) => all
                    .into_iter()
                    .filter(|i| !lists(&route, i))
                    .map(|i| format!("{} not in the route", i.label()))
                    .collect(),
                Err(e) => vec![format!("unreadable route: {e}")],
            }
        }
        Ok(reply) => vec![format!(
            "code {} ({})",
            reply.code,
            reply.remark.unwrap_or_default()
        )],
        Err(e) => vec![e],
    }
}

async fn missing_in_cluster(topo: &Topology, server: &Server, timeout: Duration) -> Vec<String> {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO);
    match ask(server, request, timeout).await {
        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
            match fastjson::from_slice::<ClusterInfo>(reply.body_bytes()) {
                Ok(info) => topo
                    .instances
                    .iter()
                    .filter(|i| {
                        info.broker_addr_table
                            .get(&i.broker.name)
                            .and_then(|bd| bd.broker_addrs.get(&i.broker.id))
                            != Some(&i.broker.addr)
                    })
                    .map(|i| format!("{} not listed", i.label()))
                    .collect(),
                Err(e) => vec![format!("unreadable cluster info: {e}")],
            }
        }
        Ok(reply) => vec![format!(
            "code {} ({})",
            reply.code,
            reply.remark.unwrap_or_default()
        )],
        Err(e) => vec![e],
    }
}

/// The route request a checker sends (also used by the containment checks).
pub fn route_request(topic: &str) -> RemotingCommand {
    RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC).with_ext("topic", topic)
}
