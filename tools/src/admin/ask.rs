//! How a request reaches the NameServers of `-n` and becomes a [`Report`]: a read goes to the
//! first NameServer that answers, a write to every NameServer at once, each reported on its own
//! line.

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::RemotingCommand;
use rustls::ClientConfig;
use serde_json::{json, Value};

use super::report::{failure_entry, json_line, AdminError, Answer, Cause, Peer, Report};
use super::{Target, EXIT_OK, EXIT_UNREACHABLE};
use crate::client::Client;
use crate::credentials::Credentials;

/// A usable answer: who gave it, and the servers skipped before it (unreachable).
pub(super) struct Fetched<T> {
    pub(super) addr: String,
    pub(super) value: T,
    pub(super) skipped: Vec<AdminError>,
}

/// The servers to ask and how.
pub(super) struct Ask<'a> {
    addrs: &'a [String],
    /// What they are, for messages and `--json` keys.
    peer: Peer,
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
            peer: Peer::NameServer,
            timeout: target.timeout,
            json: target.json,
            tls: target.tls.client_config()?,
            credentials: target.credentials.credentials()?,
        })
    }

    /// The same timeout, TLS, signing and output format, asking `addrs` (which are `peer`s).
    pub(super) fn to<'b>(&self, addrs: &'b [String], peer: Peer) -> Ask<'b> {
        Ask {
            addrs,
            peer,
            timeout: self.timeout,
            json: self.json,
            tls: self.tls.clone(),
            credentials: self.credentials.clone(),
        }
    }

    pub(super) fn addrs(&self) -> &[String] {
        self.addrs
    }

    /// An error of the server at `addr`.
    pub(super) fn error(&self, addr: &str, cause: Cause) -> AdminError {
        AdminError {
            peer: self.peer,
            addr: addr.to_owned(),
            cause,
        }
    }

    /// Sends `request` to one server and waits for its response.
    pub(super) async fn request_one(
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

    /// A read: the first server that answers decides; unreachable ones are skipped.
    pub(super) async fn read<F>(&self, request: RemotingCommand, decode: F) -> Report
    where
        F: Fn(&RemotingCommand) -> Result<Answer, Cause>,
    {
        match self.fetch(request, decode).await {
            Ok(fetched) => self.read_answered(&fetched.addr, fetched.value, &fetched.skipped),
            Err(failures) => self.read_failed(&failures),
        }
    }

    /// A read a command goes on with: the first server that answers decides; `Err` holds why
    /// none gave a usable answer.
    pub(super) async fn fetch<T, F>(
        &self,
        request: RemotingCommand,
        decode: F,
    ) -> Result<Fetched<T>, Vec<AdminError>>
    where
        F: Fn(&RemotingCommand) -> Result<T, Cause>,
    {
        let mut failures: Vec<AdminError> = Vec::new();
        for addr in self.addrs {
            let outcome = match self.request_one(addr, request.clone()).await {
                Err(cause @ Cause::Unreachable(_)) => {
                    failures.push(self.error(addr, cause));
                    continue;
                }
                Err(cause) => Err(cause),
                Ok(resp) => match Cause::of_response(&resp) {
                    Some(cause) => Err(cause),
                    None => decode(&resp),
                },
            };
            return match outcome {
                Ok(value) => Ok(Fetched {
                    addr: addr.clone(),
                    value,
                    skipped: failures,
                }),
                Err(cause) => {
                    failures.push(self.error(addr, cause));
                    Err(failures)
                }
            };
        }
        Err(failures)
    }

    /// The report of a read `addr` answered, after the `skipped` servers that could not.
    pub(super) fn read_answered(
        &self,
        addr: &str,
        answer: Answer,
        skipped: &[AdminError],
    ) -> Report {
        let stderr = skipped
            .iter()
            .map(|e| format!("rmq-namesrv admin: warning: {e}\n"))
            .collect();
        let stdout = if self.json {
            let mut doc = serde_json::Map::new();
            doc.insert("ok".to_owned(), json!(true));
            doc.insert(self.peer.json_key().to_owned(), json!(addr));
            doc.insert("result".to_owned(), answer.json);
            json_line(&Value::Object(doc))
        } else {
            answer.text
        };
        Report {
            stdout,
            stderr,
            exit: EXIT_OK,
        }
    }

    /// The report of a read nobody answered usably.
    pub(super) fn read_failed(&self, failures: &[AdminError]) -> Report {
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

    /// A write: sent to every server at once; one line per server,
    /// `<what> in name server[addr] OK<detail>` or `... Failed, <cause>` (`controller[addr]`
    /// for controllers).
    pub(super) async fn write<F>(&self, what: &str, request: RemotingCommand, detail: F) -> Report
    where
        F: Fn(&RemotingCommand) -> Result<(String, Value), Cause>,
    {
        let noun = self.peer.noun();
        self.each(
            request,
            |addr, resp| {
                let (suffix, json) = detail(resp)?;
                Ok(Answer {
                    text: format!("{what} in {noun}[{addr}] OK{suffix}\n"),
                    json,
                })
            },
            |addr| format!("{what} in {noun}[{addr}]"),
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

    /// One line (or block) per server in the order given, the worst exit; one JSON document.
    pub(super) fn each_report<L>(
        &self,
        outcomes: Vec<(&str, Result<Answer, Cause>)>,
        label: L,
    ) -> Report
    where
        L: Fn(&str) -> String,
    {
        let mut report = Report::default();
        let mut entries = Vec::new();
        for (addr, outcome) in outcomes {
            match outcome {
                Ok(answer) => {
                    report.stdout.push_str(&answer.text);
                    let mut entry = serde_json::Map::new();
                    entry.insert(self.peer.json_key().to_owned(), json!(addr));
                    entry.insert("ok".to_owned(), json!(true));
                    entry.insert("result".to_owned(), answer.json);
                    entries.push(Value::Object(entry));
                }
                Err(cause) => {
                    report.exit = report.exit.max(cause.exit_code());
                    report
                        .stderr
                        .push_str(&format!("{} Failed, {cause}\n", label(addr)));
                    entries.push(failure_entry(&self.error(addr, cause)));
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
