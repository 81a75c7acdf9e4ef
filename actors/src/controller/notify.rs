//! NOTIFY_BROKER_ROLE_CHANGED (1008): what the controller tells a broker set's live members
//! after an election; sent with [`crate::outbound`].

use std::time::Duration;

use rmq_protocol::command::FLAG_ONEWAY;
use rmq_protocol::controller::{ControllerBody, NotifyBrokerRoleChangedHeader, SyncStateSet};
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode};

/// Java's send timeout of these notifications.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(3);

/// The 1008 frame of an election's answer.
pub fn role_changed(header: &NotifyBrokerRoleChangedHeader, set: &SyncStateSet) -> RemotingCommand {
    RemotingCommand::request(RequestCode::NOTIFY_BROKER_ROLE_CHANGED)
        .with_flag(FLAG_ONEWAY)
        .with_ext_fields(header.to_ext())
        .with_body(set.encode())
}
