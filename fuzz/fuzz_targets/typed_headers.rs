//! Every typed request and response header (custom_headers.rs, controller/headers.rs) read from
//! the ext fields of one command. The input is `key=value` lines, turned into a ROCKETMQ header
//! and decoded (see `rmq_fuzz::command_from_lines`). Each header that reads must write ext
//! fields that read back to the same header. The same command is also read as every request code
//! of both ports, with the readers the server runs (the `read` of each row of
//! actors/src/dispatch.rs: the route query, the registration, every message, the controller's
//! decoder), which may refuse it but never panic.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, BrokerNameHeader, CommandHeader,
    DeleteKvConfigHeader, DeleteTopicHeader, ExtReader, GetBrokerMemberGroupHeader,
    GetKvConfigHeader, GetKvListByNamespaceHeader, GetRouteInfoHeader, GetTopicsByClusterHeader,
    PutKvConfigHeader, QueryDataVersionHeader, RegisterBrokerHeader, RegisterBrokerResponseHeader,
    RegisterTopicHeader, RouteQuery,
};
use rmq_namesrv::actors::dispatch::{CONTROLLER, NAMESRV};
use rmq_protocol::controller::{
    AlterSyncStateSetHeader, AlterSyncStateSetResponseHeader, ApplyBrokerIdHeader,
    ApplyBrokerIdResponseHeader, CleanBrokerDataHeader, ElectMasterHeader,
    ElectMasterResponseHeader, GetMetadataResponseHeader, GetNextBrokerIdHeader,
    GetNextBrokerIdResponseHeader, GetReplicaInfoHeader, GetReplicaInfoResponseHeader,
    NotifyBrokerRoleChangedHeader, NotifyMinBrokerIdChangeHeader,
    RegisterBrokerToControllerHeader, RegisterBrokerToControllerResponseHeader,
};
use rmq_protocol::RemotingCommand;

fn check<H: CommandHeader + PartialEq + Debug>(cmd: &RemotingCommand) {
    let Ok(header) = H::decode(cmd) else {
        return;
    };
    let fields = header.to_ext();
    let again = H::from_ext(ExtReader::new(Some(&fields)))
        .unwrap_or_else(|err| panic!("{header:?} writes fields it cannot read: {err}"));
    assert_eq!(header, again);
}

fuzz_target!(|data: &[u8]| {
    let Some(cmd) = rmq_fuzz::command_from_lines(data) else {
        return;
    };
    check::<PutKvConfigHeader>(&cmd);
    check::<GetKvConfigHeader>(&cmd);
    check::<DeleteKvConfigHeader>(&cmd);
    check::<GetKvListByNamespaceHeader>(&cmd);
    check::<BrokerNameHeader>(&cmd);
    check::<DeleteTopicHeader>(&cmd);
    check::<RegisterTopicHeader>(&cmd);
    check::<GetTopicsByClusterHeader>(&cmd);
    check::<GetBrokerMemberGroupHeader>(&cmd);
    check::<RegisterBrokerHeader>(&cmd);
    check::<BrokerIdentityHeader>(&cmd);
    check::<QueryDataVersionHeader>(&cmd);
    check::<GetRouteInfoHeader>(&cmd);
    check::<BrokerHeartbeatHeader>(&cmd);
    check::<RegisterBrokerResponseHeader>(&cmd);
    check::<AlterSyncStateSetHeader>(&cmd);
    check::<AlterSyncStateSetResponseHeader>(&cmd);
    check::<ElectMasterHeader>(&cmd);
    check::<ElectMasterResponseHeader>(&cmd);
    check::<RegisterBrokerToControllerHeader>(&cmd);
    check::<RegisterBrokerToControllerResponseHeader>(&cmd);
    check::<GetReplicaInfoHeader>(&cmd);
    check::<GetReplicaInfoResponseHeader>(&cmd);
    check::<GetMetadataResponseHeader>(&cmd);
    check::<NotifyBrokerRoleChangedHeader>(&cmd);
    check::<CleanBrokerDataHeader>(&cmd);
    check::<GetNextBrokerIdHeader>(&cmd);
    check::<GetNextBrokerIdResponseHeader>(&cmd);
    check::<ApplyBrokerIdHeader>(&cmd);
    check::<ApplyBrokerIdResponseHeader>(&cmd);
    check::<NotifyMinBrokerIdChangeHeader>(&cmd);
    if let Ok(h) = CleanBrokerDataHeader::decode(&cmd) {
        let _ = h.ids_to_clean();
    }
    let query = RouteQuery::of(&cmd);
    if let (Some(topic), Ok(header)) = (query.topic, GetRouteInfoHeader::decode(&cmd)) {
        assert_eq!(header.topic.as_deref(), Some(topic));
    }
    for row in NAMESRV.iter().chain(CONTROLLER) {
        let mut request = cmd.clone();
        request.code = row.code.0;
        let _ = (row.read)(&request);
    }
});
