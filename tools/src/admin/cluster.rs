//! `clusterList`: clusters, broker groups and broker addresses.

use rmq_protocol::body::ClusterInfo;
use rmq_protocol::{RemotingCommand, RequestCode};

use super::ask::Ask;
use super::format::cluster_table;
use super::report::{decode_body, to_value, Answer, Report};

/// `clusterList` (GET_BROKER_CLUSTER_INFO): mqadmin's table, one row per broker instance.
pub(super) async fn cluster_list(ask: &Ask<'_>) -> Report {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO);
    ask.read(request, |resp| {
        let info: ClusterInfo = decode_body(resp)?;
        Ok(Answer {
            text: cluster_table(&info),
            json: to_value(&info)?,
        })
    })
    .await
}
