//! How a request reaches the controller leader, as mqadmin's do: the controllers of `-a` are
//! asked for CONTROLLER_GET_METADATA_INFO in order until one answers; the request goes to the
//! leader that answer names. A CONTROLLER_NOT_LEADER answer (the leadership moved in between)
//! starts over, at most [`LEADER_ATTEMPTS`] times, [`LEADER_RETRY_PAUSE`] apart.

use std::time::Duration;

use rmq_protocol::controller::GetMetadataResponseHeader;
use rmq_protocol::custom_headers::CommandHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};

use super::ask::Ask;
use super::report::{AdminError, Answer, Cause, Report};

/// How many times a leader-only request is sent before CONTROLLER_NOT_LEADER is the answer.
pub(super) const LEADER_ATTEMPTS: usize = 3;
/// The pause before asking again who leads (a new leader takes an election to be known).
pub(super) const LEADER_RETRY_PAUSE: Duration = Duration::from_millis(300);

/// A controller's metadata and who answered it.
pub(super) struct Metadata {
    pub(super) addr: String,
    pub(super) header: GetMetadataResponseHeader,
}

impl Ask<'_> {
    /// The metadata of the first controller that answers it; the controllers skipped (and, when
    /// none answered, why) in `failures`.
    pub(super) async fn metadata(&self, failures: &mut Vec<AdminError>) -> Option<Metadata> {
        for addr in self.addrs() {
            let request = RemotingCommand::request(RequestCode::CONTROLLER_GET_METADATA_INFO);
            let outcome = match self.request_one(addr, request).await {
                Ok(resp) => match Cause::of_response(&resp) {
                    Some(cause) => Err(cause),
                    None => GetMetadataResponseHeader::decode(&resp)
                        .map_err(|e| Cause::BadResponse(e.to_string())),
                },
                Err(cause) => Err(cause),
            };
            match outcome {
                Ok(header) => {
                    return Some(Metadata {
                        addr: addr.clone(),
                        header,
                    })
                }
                Err(cause) => failures.push(self.error(addr, cause)),
            }
        }
        None
    }

    /// The leader's address as the first controller that answers names it.
    async fn leader(&self, failures: &mut Vec<AdminError>) -> Option<String> {
        let metadata = self.metadata(failures).await?;
        match metadata.header.controller_leader_address {
            Some(leader) if !leader.is_empty() => Some(leader),
            _ => {
                failures.push(self.error(&metadata.addr, Cause::NoLeader));
                None
            }
        }
    }

    /// Sends `request` to the leader (following CONTROLLER_NOT_LEADER) and decodes its success
    /// answer, reported as a read of the leader's address; warnings name the controllers that
    /// could not be asked on the way.
    pub(super) async fn leader_request<F>(&self, request: RemotingCommand, decode: F) -> Report
    where
        F: Fn(&RemotingCommand) -> Result<Answer, Cause>,
    {
        let mut skipped = Vec::new();
        let mut last = None;
        for attempt in 0..LEADER_ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(LEADER_RETRY_PAUSE).await;
            }
            let mut failures = Vec::new();
            let Some(leader) = self.leader(&mut failures).await else {
                skipped.append(&mut failures);
                return self.read_failed(&skipped);
            };
            skipped.append(&mut failures);
            let outcome = match self.request_one(&leader, request.clone()).await {
                Ok(resp) if resp.response_code() == ResponseCode::CONTROLLER_NOT_LEADER => {
                    last = Some(self.error(&leader, not_leader(&resp)));
                    continue;
                }
                Ok(resp) => match Cause::of_response(&resp) {
                    Some(cause) => Err(cause),
                    None => decode(&resp),
                },
                Err(cause) => Err(cause),
            };
            return match outcome {
                Ok(answer) => self.read_answered(&leader, answer, &dedup(skipped)),
                Err(cause) => {
                    let mut failures = dedup(skipped);
                    failures.push(self.error(&leader, cause));
                    self.read_failed(&failures)
                }
            };
        }
        let mut failures = dedup(skipped);
        failures.extend(last);
        self.read_failed(&failures)
    }
}

fn not_leader(resp: &RemotingCommand) -> Cause {
    Cause::Answered {
        code: resp.code,
        remark: resp.remark.clone(),
    }
}

/// The controllers skipped, each once (every attempt asks the list again).
fn dedup(failures: Vec<AdminError>) -> Vec<AdminError> {
    let mut kept: Vec<AdminError> = Vec::new();
    for failure in failures {
        if !kept.contains(&failure) {
            kept.push(failure);
        }
    }
    kept
}
