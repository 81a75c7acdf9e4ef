//! Cluster-test mode: `ProductEnv` looks up routes the local tables do not have on the product
//! environment's NameServers (Java 4.x `ClusterTestRequestProcessor`).

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use rmq_actors::contain::{contain, Contained, Recover};
use rmq_actors::contained_actor;
use rmq_actors::messages::LookupProductEnvRoute;
use rmq_protocol::body::TopicRouteData;
use rmq_protocol::custom_headers::{CommandHeader, GetRouteInfoHeader};
use rmq_protocol::fastjson;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use tracing::{debug, info};

use rmq_tools::client::Client;
use rustls::ClientConfig;

/// The product-environment lookup actor.
pub struct ProductEnv {
    name: String,
    addrs: Vec<String>,
    timeout: Duration,
    /// TLS of the lookups (Java: `tls.enable`, `tls.client.*`).
    tls: Option<Arc<ClientConfig>>,
    /// Handler panics contained so far.
    panics: u64,
}

impl ProductEnv {
    pub fn new(
        name: String,
        addrs: Vec<String>,
        timeout: Duration,
        tls: Option<Arc<ClientConfig>>,
    ) -> Self {
        Self {
            name,
            addrs,
            timeout,
            tls,
            panics: 0,
        }
    }
}

impl Actor for ProductEnv {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Self::Context) {
        info!(env = %self.name, namesrv = ?self.addrs, "cluster-test mode: route misses go to the product environment");
    }
}

impl Supervised for ProductEnv {}

impl Recover for ProductEnv {
    const NAME: &'static str = "product env";

    /// It holds nothing that a lookup changes.
    fn recover(&mut self, _: &mut Self::Context) {}

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(ProductEnv);

/// Asks each address in turn; the first route found wins.
async fn lookup(
    addrs: Vec<String>,
    topic: String,
    timeout: Duration,
    tls: Option<Arc<ClientConfig>>,
) -> Option<TopicRouteData> {
    let header = GetRouteInfoHeader {
        topic: Some(topic.clone()),
        ..GetRouteInfoHeader::default()
    };
    for addr in addrs {
        let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
            .with_ext_fields(header.to_ext());
        let response = match Client::connect_with(&addr, timeout, tls.as_ref()).await {
            Ok(mut client) => client.request(request).await,
            Err(err) => Err(err),
        };
        match response {
            Ok(resp) if resp.response_code() == ResponseCode::SUCCESS => {
                match fastjson::from_slice::<TopicRouteData>(resp.body_bytes()) {
                    Ok(route) => return Some(route),
                    Err(err) => {
                        debug!(addr, error = %err, "product environment sent an unreadable route")
                    }
                }
            }
            Ok(resp) => debug!(
                addr,
                topic,
                code = resp.code,
                "product environment has no route"
            ),
            Err(err) => info!(addr, error = %err, "product environment lookup failed"),
        }
    }
    None
}

impl Handler<LookupProductEnvRoute> for ProductEnv {
    type Result = Contained<ResponseFuture<Option<TopicRouteData>>>;

    fn handle(&mut self, msg: LookupProductEnvRoute, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "LookupProductEnvRoute",
            move |this, _| -> ResponseFuture<Option<TopicRouteData>> {
                Box::pin(lookup(
                    this.addrs.clone(),
                    msg.topic,
                    this.timeout,
                    this.tls.clone(),
                ))
            },
        )
    }
}
