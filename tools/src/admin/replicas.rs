//! Replica commands that may need the NameServers of `-n` to know which brokers there are:
//! `getSyncStateSet` (the controller leader's view of each broker set) and `getBrokerEpoch`
//! (each broker's own epoch cache). Text as mqadmin's sub-commands print it.

use rmq_protocol::body::ClusterInfo;
use rmq_protocol::controller::{
    BrokerNameList, BrokerReplicasInfo, ControllerBody, EpochEntryCache, ReplicaIdentity,
    ReplicasInfo,
};
use rmq_protocol::{RemotingCommand, RequestCode};

use super::ask::Ask;
use super::format::java_text;
use super::report::{decode_body, to_value, AdminError, Answer, Cause, Peer, Report};
use super::EXIT_ANSWERED;

/// Which brokers a command is about: `-b` (broker set names) or `-c` (a cluster).
pub(super) enum Which<'a> {
    BrokerNames(&'a str),
    Cluster(&'a str),
}

impl<'a> Which<'a> {
    /// From the `-b` / `-c` pair clap requires one of.
    pub(super) fn of(broker_name: Option<&'a str>, cluster: Option<&'a str>) -> Self {
        match (broker_name, cluster) {
            (Some(names), _) => Self::BrokerNames(names),
            (None, Some(cluster)) => Self::Cluster(cluster),
            (None, None) => Self::BrokerNames(""),
        }
    }
}

/// The cluster info of the first NameServer of `-n` that answers, or the report of why none did.
async fn cluster_info(namesrv: &Ask<'_>) -> Result<(String, ClusterInfo, Vec<AdminError>), Report> {
    let request = RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO);
    match namesrv.fetch(request, decode_body::<ClusterInfo>).await {
        Ok(fetched) => Ok((fetched.addr, fetched.value, fetched.skipped)),
        Err(failures) => Err(namesrv.read_failed(&failures)),
    }
}

/// A lookup in the NameServer's cluster info that found nothing: exit 1 with what was missing.
fn nothing_found(what: String) -> Report {
    Report {
        stdout: String::new(),
        stderr: format!("rmq-namesrv admin: {what}\n"),
        exit: EXIT_ANSWERED,
    }
}

/// Warnings about the NameServers skipped on the way, ahead of a report.
fn with_warnings(mut report: Report, skipped: &[AdminError]) -> Report {
    let warnings: String = skipped
        .iter()
        .map(|e| format!("rmq-namesrv admin: warning: {e}\n"))
        .collect();
    report.stderr.insert_str(0, &warnings);
    report
}

/// `getSyncStateSet -a ADDRS (-b NAMES | -c CLUSTER)` (CONTROLLER_GET_SYNC_STATE_DATA, on the
/// controller leader): each broker set's master, epochs and replicas.
pub(super) async fn get_sync_state_set(
    namesrv: &Ask<'_>,
    controllers: &Ask<'_>,
    which: Which<'_>,
) -> Report {
    let (names, skipped) = match which {
        Which::BrokerNames(names) => (split_names(names), Vec::new()),
        Which::Cluster(cluster) => match cluster_info(namesrv).await {
            Err(report) => return report,
            Ok((addr, info, skipped)) => match info.cluster_addr_table.get(cluster) {
                Some(names) if !names.is_empty() => (names.iter().cloned().collect(), skipped),
                _ => {
                    let what =
                        format!("name server {addr} knows no broker set of cluster {cluster}");
                    return with_warnings(nothing_found(what), &skipped);
                }
            },
        },
    };
    let request = RemotingCommand::request(RequestCode::CONTROLLER_GET_SYNC_STATE_DATA)
        .with_body(BrokerNameList(names).encode());
    let report = controllers
        .leader_request(request, |resp| {
            let info = BrokerReplicasInfo::decode(Some(resp.body_bytes()))
                .map_err(|e| Cause::BadResponse(e.to_string()))?;
            Ok(Answer {
                text: sync_state_text(&info),
                json: to_value(&info)?,
            })
        })
        .await;
    with_warnings(report, &skipped)
}

fn split_names(names: &str) -> Vec<String> {
    names
        .split(';')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// mqadmin's getSyncStateSet text for every broker set.
pub(super) fn sync_state_text(info: &BrokerReplicasInfo) -> String {
    let mut text = String::new();
    for (name, replicas) in &info.replicas_info_table {
        text.push_str(&replicas_text(name, replicas));
    }
    text
}

fn replicas_text(name: &str, info: &ReplicasInfo) -> String {
    let mut text = format!(
        "\n#brokerName\t{name}\n#MasterBrokerId\t{}\n#MasterAddr\t{}\n#MasterEpoch\t{}\
         \n#SyncStateSetEpoch\t{}\n#SyncStateSetNums\t{}\n",
        java_text(info.master_broker_id),
        java_text(info.master_address.as_deref()),
        info.master_epoch,
        info.sync_state_set_epoch,
        info.in_sync_replicas.len(),
    );
    for member in &info.in_sync_replicas {
        text.push_str(&format!("\nInSyncReplica:\t{}\n", replica_text(member)));
    }
    for member in &info.not_in_sync_replicas {
        text.push_str(&format!("\nNotInSyncReplica:\t{}\n", replica_text(member)));
    }
    text
}

/// Java's `ReplicaIdentity.toString()`.
fn replica_text(r: &ReplicaIdentity) -> String {
    format!(
        "ReplicaIdentity{{brokerName='{}', brokerId={}, brokerAddress='{}', alive={}}}",
        r.broker_name,
        r.broker_id,
        r.broker_address,
        java_text(r.alive)
    )
}

/// `getBrokerEpoch (-b NAME | -c CLUSTER)` (GET_BROKER_EPOCH_CACHE, asked of every broker of
/// the broker set or cluster, whose addresses the NameServers of `-n` give).
pub(super) async fn get_broker_epoch(namesrv: &Ask<'_>, which: Which<'_>) -> Report {
    let (addr, info, skipped) = match cluster_info(namesrv).await {
        Ok(found) => found,
        Err(report) => return report,
    };
    let (names, what) = match which {
        Which::BrokerNames(names) => (split_names(names), "broker set".to_owned()),
        Which::Cluster(cluster) => (
            info.cluster_addr_table
                .get(cluster)
                .map(|names| names.iter().cloned().collect())
                .unwrap_or_default(),
            format!("broker of cluster {cluster}"),
        ),
    };
    let brokers: Vec<String> = names
        .iter()
        .filter_map(|name| info.broker_addr_table.get(name))
        .flat_map(|data| data.broker_addrs.values().cloned())
        .collect();
    if brokers.is_empty() {
        let what = format!(
            "name server {addr} knows no such {what}: {}",
            names.join(";")
        );
        return with_warnings(nothing_found(what), &skipped);
    }
    let request = RemotingCommand::request(RequestCode::GET_BROKER_EPOCH_CACHE);
    let report = namesrv
        .to(&brokers, Peer::Broker)
        .each(
            request,
            |addr, resp| {
                let cache = EpochEntryCache::decode(Some(resp.body_bytes()))
                    .map_err(|e| Cause::BadResponse(e.to_string()))?;
                let cache = with_last_end_offset(cache);
                Ok(Answer {
                    text: epoch_text(addr, &cache),
                    json: to_value(&cache)?,
                })
            },
            |addr| format!("get broker epoch of broker[{addr}]"),
        )
        .await;
    with_warnings(report, &skipped)
}

/// The last epoch ends at the broker's max offset, as mqadmin shows it.
fn with_last_end_offset(mut cache: EpochEntryCache) -> EpochEntryCache {
    let max_offset = cache.max_offset;
    if let Some(last) = cache.epoch_list.last_mut() {
        last.end_offset = max_offset;
    }
    cache
}

/// mqadmin's getBrokerEpoch text of one broker.
pub(super) fn epoch_text(addr: &str, cache: &EpochEntryCache) -> String {
    let mut text = format!(
        "\n#clusterName\t{}\n#brokerName\t{}\n#brokerAddr\t{addr}\n#brokerId\t{}",
        java_text(cache.cluster_name.as_deref()),
        java_text(cache.broker_name.as_deref()),
        cache.broker_id,
    );
    for entry in &cache.epoch_list {
        text.push_str(&format!(
            "\n#Epoch: EpochEntry{{epoch={}, startOffset={}, endOffset={}}}",
            entry.epoch, entry.start_offset, entry.end_offset
        ));
    }
    text.push('\n');
    text
}
