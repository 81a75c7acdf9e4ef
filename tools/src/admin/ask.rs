//! How a request reaches the NameServers of `-n` and becomes a [`Report`]: a read goes to the
//! first NameServer that answers, a write to every NameServer at once, each reported on its own
//! line.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::RemotingCommand;
use rustls::ClientConfig;
use serde_json::{json, Value};

use super::report::{failure_entry, json_line, AdminError, Answer, Cause, Report};
use super::{Target, EXIT_OK, EXIT_UNREACHABLE};
use crate::client::Client;
use crate::credentials::Credentials;

/// The NameServers to ask and how.
pub(super) struct Ask<'a> {
    addrs: &'a [String],
    timeout: Duration,
    json: bool,
    tls: Option<Arc<ClientConfig>>,
    /// Requests are signed with these, when given.
    credentials: Option<Credentials>,
}

impl<'a> Ask<'a> {
    /// The NameServers, timeout, TLS and output format of `target`; an unusable TLS file is an
    /// error naming it.
    pub(super) fn new(target: &'a Target) -> Result<Self, String> {
        Ok(Self {
            addrs: target.namesrv.addrs(),
            timeout: target.timeout,
            json: target.json,
            tls: target.tls.client_config()?,
            credentials: target.credentials.credentials()?,
        })
    }

    /// Sends `request` to one NameServer and waits for its response.
    async fn request_one(
        &self,
        addr: &str,
        mut request: RemotingCommand,
    ) -> Result<RemotingCommand, Cause> {
        if let Some(credentials) = &self.credentials {
            credentials.sign(&mut request).map_err(|e| {
                Cause::Unreachable(format!("request not sent: cannot sign it: {e}"))
            })?;
        }
        let mut client = Client::connect_with(addr, self.timeout, self.tls.as_ref())
            .await
            .map_err(|e| Cause::from_client(&e))?;
        client
            .request(request)
            .await
            .map_err(|e| Cause::from_client(&e))
    }

    /// A read: the first NameServer that answers decides; unreachable ones are skipped.
    pub(super) async fn read<F>(&self, request: RemotingCommand, decode: F) -> Report
    where
        F: Fn(&RemotingCommand) -> Result<Answer, Cause>,
    {
        let mut failures: Vec<AdminError> = Vec::new();
        for addr in self.addrs {
            let outcome = match self.request_one(addr, request.clone()).await {
                Err(cause @ Cause::Unreachable(_)) => {
                    failures.push(AdminError {
                        addr: addr.clone(),
                        cause,
                    });
                    continue;
                }
                Err(cause) => Err(cause),
                Ok(resp) => match Cause::of_response(&resp) {
                    Some(cause) => Err(cause),
                    None => decode(&resp),
                },
            };
            return match outcome {
                Ok(answer) => self.read_answered(addr, answer, &failures),
                Err(cause) => {
                    failures.push(AdminError {
                        addr: addr.clone(),
                        cause,
                    });
                    self.read_failed(&failures)
                }
            };
        }
        self.read_failed(&failures)
    }

    fn read_answered(&self, addr: &str, answer: Answer, skipped: &[AdminError]) -> Report {
        let stderr = skipped
            .iter()
            .map(|e| format!("rmq-namesrv admin: warning: {e}\n"))
            .collect();
        let stdout = if self.json {
            json_line(&json!({ "ok": true, "namesrv": addr, "result": answer.json }))
        } else {
            answer.text
        };
        Report {
            stdout,
            stderr,
            exit: EXIT_OK,
        }
    }

    fn read_failed(&self, failures: &[AdminError]) -> Report {
        let stderr = failures
            .iter()
            .map(|e| format!("rmq-namesrv admin: {e}\n"))
            .collect();
        let stdout = if self.json {
            let results: Vec<Value> = failures.iter().map(failure_entry).collect();
            json_line(&json!({ "ok": false, "results": results }))
        } else {
            String::new()
        };
        let exit = failures
            .iter()
            .map(|e| e.cause.exit_code())
            .max()
            .unwrap_or(EXIT_UNREACHABLE);
        Report {
            stdout,
            stderr,
            exit,
        }
    }

    /// A write: sent to every NameServer at once; one line per NameServer,
    /// `<what> in name server[addr] OK<detail>` or `... Failed, <cause>`.
    pub(super) async fn write<F>(&self, what: &str, request: RemotingCommand, detail: F) -> Report
    where
        F: Fn(&RemotingCommand) -> Result<(String, Value), Cause>,
    {
        self.each(
            request,
            |addr, resp| {
                let (suffix, json) = detail(resp)?;
                Ok(Answer {
                    text: format!("{what} in name server[{addr}] OK{suffix}\n"),
                    json,
                })
            },
            |addr| format!("{what} in name server[{addr}]"),
        )
        .await
    }

    /// Sends `request` to every NameServer concurrently and reports each in list order.
    pub(super) async fn each<F, L>(&self, request: RemotingCommand, decode: F, label: L) -> Report
    where
        F: Fn(&str, &RemotingCommand) -> Result<Answer, Cause>,
        L: Fn(&str) -> String,
    {
        let decode = &decode;
        let asks = self.addrs.iter().map(|addr| {
            let request = request.clone();
            async move {
                let outcome = match self.request_one(addr, request).await {
                    Ok(resp) => match Cause::of_response(&resp) {
                        Some(cause) => Err(cause),
                        None => decode(addr, &resp),
                    },
                    Err(cause) => Err(cause),
                };
                (addr.as_str(), outcome)
            }
        });
        let outcomes = futures_util::future::join_all(asks).await;
        self.each_report(outcomes, label)
    }

    /// Runs `survey` (several requests on one connection) against every NameServer
    /// concurrently and reports each in list order, as [`Ask::each`] does.
    pub(super) async fn each_session<F, Fut, L>(&self, survey: F, label: L) -> Report
    where
        F: Fn(String, Client) -> Fut,
        Fut: std::future::Future<Output = Result<Answer, Cause>>,
        L: Fn(&str) -> String,
    {
        let survey = &survey;
        let asks = self.addrs.iter().map(|addr| async move {
            let outcome = match Client::connect_with(addr, self.timeout, self.tls.as_ref()).await {
                Ok(client) => survey(addr.clone(), client).await,
                Err(e) => Err(Cause::from_client(&e)),
            };
            (addr.as_str(), outcome)
        });
        let outcomes = futures_util::future::join_all(asks).await;
        self.each_report(outcomes, label)
    }

    fn each_report<L>(&self, outcomes: Vec<(&str, Result<Answer, Cause>)>, label: L) -> Report
    where
        L: Fn(&str) -> String,
    {
        let mut report = Report::default();
        let mut entries = Vec::new();
        for (addr, outcome) in outcomes {
            match outcome {
                Ok(answer) => {
                    report.stdout.push_str(&answer.text);
                    entries.push(json!({ "namesrv": addr, "ok": true, "result": answer.json }));
                }
                Err(cause) => {
                    report.exit = report.exit.max(cause.exit_code());
                    report
                        .stderr
                        .push_str(&format!("{} Failed, {cause}\n", label(addr)));
                    entries.push(failure_entry(&AdminError {
                        addr: addr.to_owned(),
                        cause,
                    }));
                }
            }
        }
        if self.json {
            let ok = report.exit == EXIT_OK;
            report.stdout = json_line(&json!({ "ok": ok, "results": entries }));
        }
        report
    }
}
