//! Every typed request and response header (custom_headers.rs) read from the ext fields of one
//! command. The input is `key=value` lines, turned into a ROCKETMQ header and decoded (see
//! `rmq_fuzz::command_from_lines`). Each header that reads must write ext fields that read back
//! to the same header.
#![no_main]

use std::fmt::Debug;

use libfuzzer_sys::fuzz_target;
use rmq_protocol::custom_headers::{
    BrokerHeartbeatHeader, BrokerIdentityHeader, BrokerNameHeader, CommandHeader,
    DeleteKvConfigHeader, DeleteTopicHeader, ExtReader, GetBrokerMemberGroupHeader,
    GetKvConfigHeader, GetKvListByNamespaceHeader, GetRouteInfoHeader, GetTopicsByClusterHeader,
    PutKvConfigHeader, QueryDataVersionHeader, RegisterBrokerHeader, RegisterBrokerResponseHeader,
    RegisterTopicHeader,
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
});
