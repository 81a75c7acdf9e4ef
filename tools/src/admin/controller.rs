//! Controller commands asked of the controllers of `-a`: `getControllerMetaData` (the first that
//! answers), `electMaster` and `cleanBrokerMetadata` (the leader, see `leader`),
//! `getControllerConfig` and `updateControllerConfig` (every controller). Text as mqadmin's
//! sub-commands print it.

use rmq_protocol::controller::{
    CleanBrokerDataHeader, ControllerBody, ElectMasterHeader, ElectMasterResponseBody,
    ElectMasterResponseHeader, GetMetadataResponseHeader,
};
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode};
use serde_json::json;

use super::ask::Ask;
use super::format::{controller_config_block, java_text};
use super::namesrv_config::{configs_of_each, update_config};
use super::report::{Answer, Cause, Report};
use super::BrokerIds;

/// `getControllerMetaData -a ADDRS`: the group, the leader and each peer, as mqadmin prints them.
pub(super) async fn get_controller_metadata(ask: &Ask<'_>) -> Report {
    let mut failures = Vec::new();
    match ask.metadata(&mut failures).await {
        Some(metadata) => {
            let answer = metadata_answer(&metadata.header);
            ask.read_answered(&metadata.addr, answer, &failures)
        }
        None => ask.read_failed(&failures),
    }
}

fn metadata_answer(header: &GetMetadataResponseHeader) -> Answer {
    let peers: Vec<&str> = header
        .peers
        .as_deref()
        .unwrap_or("")
        .split(';')
        .filter(|p| !p.is_empty())
        .collect();
    let mut text = format!(
        "\n#ControllerGroup\t{}\n#ControllerLeaderId\t{}\n#ControllerLeaderAddress\t{}",
        java_text(header.group.as_deref()),
        java_text(header.controller_leader_id.as_deref()),
        java_text(header.controller_leader_address.as_deref()),
    );
    for peer in &peers {
        text.push_str(&format!("\n#Peer:\t{peer}"));
    }
    text.push('\n');
    Answer {
        text,
        json: json!({
            "group": header.group,
            "controllerLeaderId": header.controller_leader_id,
            "controllerLeaderAddress": header.controller_leader_address,
            "isLeader": header.is_leader,
            "peers": peers,
        }),
    }
}

/// `electMaster -a ADDRS -b ID -bn NAME -c CLUSTER` (CONTROLLER_ELECT_MASTER with
/// `designateElect`, on the leader): the new master, its epochs, and the broker set's members.
pub(super) async fn elect_master(
    ask: &Ask<'_>,
    cluster: &str,
    broker_name: &str,
    broker_id: i64,
) -> Report {
    let header = ElectMasterHeader {
        cluster_name: cluster.to_owned(),
        broker_name: broker_name.to_owned(),
        broker_id,
        designate_elect: true,
        invoke_time: None,
    };
    let request = RemotingCommand::request(RequestCode::CONTROLLER_ELECT_MASTER)
        .with_ext_fields(header.to_ext());
    ask.leader_request(request, |resp| {
        let header = ElectMasterResponseHeader::decode(resp)
            .map_err(|e| Cause::BadResponse(e.to_string()))?;
        // A body is optional to mqadmin (it prints the members when there are some).
        let body = if resp.body_bytes().is_empty() {
            ElectMasterResponseBody::default()
        } else {
            ElectMasterResponseBody::decode(Some(resp.body_bytes()))
                .map_err(|e| Cause::BadResponse(e.to_string()))?
        };
        Ok(elect_answer(cluster, broker_name, &header, &body))
    })
    .await
}

fn elect_answer(
    cluster: &str,
    broker_name: &str,
    header: &ElectMasterResponseHeader,
    body: &ElectMasterResponseBody,
) -> Answer {
    let mut text = format!(
        "\n#ClusterName\t{cluster}\n#BrokerName\t{broker_name}\n#BrokerMasterAddr\t{}\
         \n#MasterEpoch\t{}\n#SyncStateSetEpoch\t{}\n",
        java_text(header.master_address.as_deref()),
        java_text(header.master_epoch),
        java_text(header.sync_state_set_epoch),
    );
    let members = body.broker_member_group.as_ref();
    for (id, addr) in members.map(|g| &g.broker_addrs).into_iter().flatten() {
        text.push_str(&format!("\t#Broker\t{id}\t{addr}\n"));
    }
    Answer {
        text,
        json: json!({
            "clusterName": cluster,
            "brokerName": broker_name,
            "masterBrokerId": header.master_broker_id,
            "masterAddress": header.master_address,
            "masterEpoch": header.master_epoch,
            "syncStateSetEpoch": header.sync_state_set_epoch,
            "brokerAddrs": members.map(|g| &g.broker_addrs),
            "syncStateSet": body.sync_state_set,
        }),
    }
}

/// What `cleanBrokerMetadata` removes.
pub(super) struct CleanTarget<'a> {
    pub(super) cluster: Option<&'a str>,
    pub(super) broker_name: &'a str,
    pub(super) broker_ids: Option<&'a BrokerIds>,
    pub(super) clean_living_broker: bool,
}

/// `cleanBrokerMetadata -a ADDRS -bn NAME [-b IDS] [-c CLUSTER] [-l]` (CLEAN_BROKER_DATA, on
/// the leader).
pub(super) async fn clean_broker_metadata(ask: &Ask<'_>, target: &CleanTarget<'_>) -> Report {
    let header = CleanBrokerDataHeader {
        cluster_name: target.cluster.map(str::to_owned),
        broker_name: target.broker_name.to_owned(),
        broker_controller_ids_to_clean: target.broker_ids.map(|ids| ids.as_str().to_owned()),
        clean_living_broker: target.clean_living_broker,
        invoke_time: None,
    };
    let request =
        RemotingCommand::request(RequestCode::CLEAN_BROKER_DATA).with_ext_fields(header.to_ext());
    let broker_name = target.broker_name;
    ask.leader_request(request, |_| {
        Ok(Answer {
            text: format!("clear broker {broker_name} metadata from controller success! \n"),
            json: json!({ "brokerName": broker_name }),
        })
    })
    .await
}

/// `getControllerConfig -a ADDRS` (GET_CONTROLLER_CONFIG): one block per controller.
pub(super) async fn get_controller_config(ask: &Ask<'_>) -> Report {
    configs_of_each(
        ask,
        RequestCode::GET_CONTROLLER_CONFIG,
        controller_config_block,
        |addr| format!("get controller config of controller[{addr}]"),
    )
    .await
}

/// `updateControllerConfig -a ADDRS -k KEY -v VALUE` (UPDATE_CONTROLLER_CONFIG) on every
/// controller, each on its own line; the pair is trimmed (as mqadmin does) and sent as a
/// properties body.
pub(super) async fn update_controller_config(ask: &Ask<'_>, key: &str, value: &str) -> Report {
    let (key, value) = (key.trim(), value.trim());
    update_config(
        ask,
        RequestCode::UPDATE_CONTROLLER_CONFIG,
        "controller",
        key,
        value,
    )
    .await
}
