//! Controller requests read from their frames (on the connection's thread): header and body of
//! each controller code into one [`Call`]. A frame that cannot be read is answered at once, as
//! Java answers a header it cannot build (SYSTEM_ERROR naming the field).

use bytes::Bytes;
use rmq_protocol::controller::{
    remark, AlterSyncStateSetHeader, ApplyBrokerIdHeader, BrokerHeartbeatHeader, BrokerNameList,
    CleanBrokerDataHeader, ControllerBody, ElectMasterHeader, GetNextBrokerIdHeader,
    GetReplicaInfoHeader, RegisterBrokerToControllerHeader, SyncStateSet,
};
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use crate::response::{not_supported, read_header, small_body, system_error};
use crate::stored;

/// One controller request, read.
#[derive(Debug, Clone)]
pub enum Call {
    /// 904, oneway.
    Heartbeat(BrokerHeartbeatHeader),
    /// 1001.
    AlterSyncStateSet(AlterSyncStateSetHeader, SyncStateSet),
    /// 1002.
    ElectMaster(ElectMasterHeader),
    /// 1003.
    RegisterBroker(RegisterBrokerToControllerHeader),
    /// 1004.
    ReplicaInfo(GetReplicaInfoHeader),
    /// 1005.
    Metadata,
    /// 1006; `None` without a body (or an empty list).
    SyncStateData(Option<Vec<String>>),
    /// 1009: properties text.
    UpdateConfig(Bytes),
    /// 1010.
    GetConfig,
    /// 1011.
    CleanBrokerData(CleanBrokerDataHeader),
    /// 1012.
    NextBrokerId(GetNextBrokerIdHeader),
    /// 1013.
    ApplyBrokerId(ApplyBrokerIdHeader),
}

impl Call {
    /// Whether only the leader answers it (docs/controller.md, "Leader-only codes").
    pub fn leader_only(&self) -> bool {
        !matches!(
            self,
            Call::Heartbeat(_) | Call::Metadata | Call::UpdateConfig(_) | Call::GetConfig
        )
    }

    /// Its request code.
    pub fn code(&self) -> RequestCode {
        match self {
            Call::Heartbeat(_) => RequestCode::BROKER_HEARTBEAT,
            Call::AlterSyncStateSet(..) => RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
            Call::ElectMaster(_) => RequestCode::CONTROLLER_ELECT_MASTER,
            Call::RegisterBroker(_) => RequestCode::CONTROLLER_REGISTER_BROKER,
            Call::ReplicaInfo(_) => RequestCode::CONTROLLER_GET_REPLICA_INFO,
            Call::Metadata => RequestCode::CONTROLLER_GET_METADATA_INFO,
            Call::SyncStateData(_) => RequestCode::CONTROLLER_GET_SYNC_STATE_DATA,
            Call::UpdateConfig(_) => RequestCode::UPDATE_CONTROLLER_CONFIG,
            Call::GetConfig => RequestCode::GET_CONTROLLER_CONFIG,
            Call::CleanBrokerData(_) => RequestCode::CLEAN_BROKER_DATA,
            Call::NextBrokerId(_) => RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
            Call::ApplyBrokerId(_) => RequestCode::CONTROLLER_APPLY_BROKER_ID,
        }
    }

    /// Whether it can change the replicated state.
    pub fn writes(&self) -> bool {
        matches!(
            self,
            Call::AlterSyncStateSet(..)
                | Call::ElectMaster(_)
                | Call::RegisterBroker(_)
                | Call::CleanBrokerData(_)
                | Call::ApplyBrokerId(_)
        )
    }
}

/// CONTROLLER_INVALID_REQUEST for a header field longer than [`stored::MAX_NAME_BYTES`].
fn bounded_fields(cmd: &RemotingCommand) -> Result<(), RemotingCommand> {
    let Some(fields) = &cmd.ext_fields else {
        return Ok(());
    };
    for (key, value) in fields.iter() {
        if let Err(too_long) = stored::name(key, value) {
            return Err(RemotingCommand::response(
                ResponseCode::CONTROLLER_INVALID_REQUEST,
                Some(format!("refused: {too_long}")),
            ));
        }
    }
    Ok(())
}

fn body<B: ControllerBody>(cmd: &RemotingCommand) -> Result<B, RemotingCommand> {
    B::decode(cmd.body.as_deref()).map_err(|e| system_error(e.to_string()))
}

/// Reads `cmd` into its [`Call`]; the error is the answer.
pub fn decode(cmd: &RemotingCommand) -> Result<Call, RemotingCommand> {
    use RequestCode as C;
    // A SyncStateSet, a list of broker names or a configuration update are a few KiB.
    small_body(cmd, "controller request")?;
    // Every string a controller request can make the controller keep (names, addresses, check
    // codes) comes from a header field: none may be longer than a name.
    bounded_fields(cmd)?;
    Ok(match cmd.request_code() {
        C::BROKER_HEARTBEAT => {
            // Java's first check: no broker id (absent, or not a number, which Java's header
            // decoder leaves null), no heartbeat.
            let id = cmd.ext("brokerId").map(|v| v.trim().parse::<i64>());
            if !matches!(id, Some(Ok(_))) {
                return Err(RemotingCommand::response(
                    ResponseCode::CONTROLLER_INVALID_REQUEST,
                    Some(remark::HEARTBEAT_WITHOUT_BROKER_ID.to_owned()),
                ));
            }
            Call::Heartbeat(read_header(cmd)?)
        }
        C::CONTROLLER_ALTER_SYNC_STATE_SET => {
            // The body first: one that is not JSON is SYSTEM_ERROR even on a follower.
            let set = body::<SyncStateSet>(cmd)?;
            Call::AlterSyncStateSet(read_header(cmd)?, set)
        }
        C::CONTROLLER_ELECT_MASTER => Call::ElectMaster(read_header(cmd)?),
        C::CONTROLLER_REGISTER_BROKER => Call::RegisterBroker(read_header(cmd)?),
        C::CONTROLLER_GET_REPLICA_INFO => Call::ReplicaInfo(read_header(cmd)?),
        C::CONTROLLER_GET_METADATA_INFO => Call::Metadata,
        C::CONTROLLER_GET_SYNC_STATE_DATA => match cmd.body.as_deref() {
            None | Some([]) => Call::SyncStateData(None),
            Some(_) => {
                let names = body::<BrokerNameList>(cmd)?.0;
                Call::SyncStateData((!names.is_empty()).then_some(names))
            }
        },
        C::UPDATE_CONTROLLER_CONFIG => Call::UpdateConfig(cmd.body.clone().unwrap_or_default()),
        C::GET_CONTROLLER_CONFIG => Call::GetConfig,
        C::CLEAN_BROKER_DATA => Call::CleanBrokerData(read_header(cmd)?),
        C::CONTROLLER_GET_NEXT_BROKER_ID => Call::NextBrokerId(read_header(cmd)?),
        C::CONTROLLER_APPLY_BROKER_ID => Call::ApplyBrokerId(read_header(cmd)?),
        _ => return Err(not_supported(cmd.code)),
    })
}
