//! `rmq-namesrv admin`: an mqadmin-style command line client of any NameServer (ours or Java's).
//!
//! ```text
//! rmq-namesrv admin [-n "host:port;host:port"] [--timeout 3s] [--json] <command> [options]
//! ```
//!
//! Like mqadmin, reads (`clusterList`, `topicRoute`, `topicList`, `getKvConfig`, `kvList`) go to
//! the first NameServer of the list that answers; writes (`updateKvConfig`, `deleteKvConfig`,
//! `wipeWritePerm`, `addWritePerm`, `deleteTopic`, `updateNamesrvConfig`) and `getNamesrvConfig`
//! go to every NameServer of the list, each reported on its own line.
//!
//! Exit codes: 0 success; 1 a NameServer answered a non-success code (or an unreadable body);
//! 2 usage error (clap's); 3 a NameServer cannot be reached (refused, timeout, closed). With
//! several NameServers the worst outcome wins (3 over 1 over 0). Errors go to stderr.
//!
//! `--json` prints one JSON document on stdout:
//! - a read that got an answer: `{"ok":true,"namesrv":ADDR,"result":R}`;
//! - every other case: `{"ok":BOOL,"results":[ENTRY...]}`, one entry per NameServer asked,
//!   `{"namesrv":ADDR,"ok":true,"result":R}` or `{"namesrv":ADDR,"ok":false,"error":E}`, where
//!   `E` is `{"kind":"unreachable"|"answered"|"bad_response","message":TEXT}` plus `code`, `name`
//!   and `remark` for `answered`.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use rmq_protocol::body::{ClusterInfo, KvTable, TopicList, TopicRouteData};
use rmq_protocol::custom_headers::{
    BrokerNameHeader, CommandHeader, DeleteKvConfigHeader, DeleteTopicHeader, GetKvConfigHeader,
    GetKvListByNamespaceHeader, GetRouteInfoHeader, GetTopicsByClusterHeader, PutKvConfigHeader,
};
use rmq_protocol::{fastjson, properties, RemotingCommand, RequestCode, ResponseCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::client::{Client, ClientError};

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: a NameServer answered a non-success code or an unreadable response.
pub const EXIT_ANSWERED: u8 = 1;
/// Exit status: usage error (what clap exits with).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: a NameServer cannot be reached.
pub const EXIT_UNREACHABLE: u8 = 3;

/// `rmq-namesrv admin`: options shared by every command, then the command.
#[derive(Debug, Clone, Args)]
#[command(
    about = "Administer running NameServers (ours or Java's), like mqadmin",
    long_about = "Administer running NameServers (ours or Java's), like mqadmin.\n\n\
        Reads go to the first NameServer of -n that answers; writes and getNamesrvConfig go to \
        every one of them.\n\
        Exit codes: 0 success, 1 a NameServer answered an error, 2 usage error, \
        3 a NameServer cannot be reached."
)]
pub struct AdminArgs {
    #[command(flatten)]
    pub target: Target,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// Which NameServers to ask, how long to wait, how to print.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// NameServer addresses, ';'-separated, e.g. "10.0.0.1:9876;10.0.0.2:9876".
    #[arg(
        short = 'n',
        long = "namesrv",
        alias = "namesrvAddr",
        env = "NAMESRV_ADDR",
        default_value = "127.0.0.1:9876",
        value_name = "HOST:PORT;...",
        value_parser = parse_namesrv_list,
        global = true
    )]
    pub namesrv: NamesrvList,
    /// Bound on connecting and on each request, e.g. 500ms, 3s.
    #[arg(long, default_value = "3s", value_name = "DURATION", value_parser = parse_timeout, global = true)]
    pub timeout: Duration,
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

/// A non-empty list of `host:port` NameServer addresses, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamesrvList(Vec<String>);

impl NamesrvList {
    pub fn addrs(&self) -> &[String] {
        &self.0
    }
}

/// Parses mqadmin's `-n` syntax: `host:port` entries separated by `;` (blank entries ignored).
pub fn parse_namesrv_list(text: &str) -> Result<NamesrvList, String> {
    let mut addrs = Vec::new();
    for entry in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let valid = entry
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if !valid {
            return Err(format!("{entry:?} is not HOST:PORT"));
        }
        addrs.push(entry.to_owned());
    }
    if addrs.is_empty() {
        return Err("no NameServer address given".to_owned());
    }
    Ok(NamesrvList(addrs))
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let timeout = humantime::parse_duration(text).map_err(|e| e.to_string())?;
    if timeout.is_zero() {
        return Err("must be more than 0".to_owned());
    }
    Ok(timeout)
}

/// The commands; names and long options are camelCase as in mqadmin (`--brokerName`).
#[derive(Debug, Clone, Subcommand)]
#[command(rename_all = "camelCase")]
pub enum AdminCommand {
    /// List clusters, broker groups and broker addresses (GET_BROKER_CLUSTER_INFO).
    ClusterList,
    /// Show a topic's route as JSON (GET_ROUTEINFO_BY_TOPIC).
    TopicRoute {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
    },
    /// List every topic, or with -c the topics of one cluster.
    TopicList {
        /// Only the topics of this cluster (GET_TOPICS_BY_CLUSTER).
        #[arg(short = 'c', long, alias = "clusterName")]
        cluster: Option<String>,
    },
    /// Print one KV config value (GET_KV_CONFIG).
    GetKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
    },
    /// Create or update a KV config value on every NameServer (PUT_KV_CONFIG).
    UpdateKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
        /// The new value.
        #[arg(short = 'v', long)]
        value: String,
    },
    /// Delete a KV config value on every NameServer (DELETE_KV_CONFIG).
    DeleteKvConfig {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
        /// The key.
        #[arg(short = 'k', long)]
        key: String,
    },
    /// List the keys and values of a KV namespace (GET_KVLIST_BY_NAMESPACE).
    KvList {
        /// The KV namespace, e.g. ORDER_TOPIC_CONFIG.
        #[arg(short = 's', long)]
        namespace: String,
    },
    /// Clear the write permission of a broker's topics on every NameServer.
    WipeWritePerm {
        /// The broker group's name.
        #[arg(short = 'b', long)]
        broker_name: String,
    },
    /// Restore the write permission of a broker's topics on every NameServer.
    AddWritePerm {
        /// The broker group's name.
        #[arg(short = 'b', long)]
        broker_name: String,
    },
    /// Delete a topic's route from every NameServer (brokers are not touched).
    DeleteTopic {
        /// The topic.
        #[arg(short = 't', long)]
        topic: String,
        /// Only the topic's queues on this cluster's brokers.
        #[arg(short = 'c', long, alias = "clusterName")]
        cluster: Option<String>,
    },
    /// Print the configuration of every NameServer (GET_NAMESRV_CONFIG).
    GetNamesrvConfig,
    /// Update one configuration key on every NameServer (UPDATE_NAMESRV_CONFIG).
    UpdateNamesrvConfig {
        /// A Java property name, e.g. orderMessageEnable.
        #[arg(short = 'k', long)]
        key: String,
        /// Its new value.
        #[arg(short = 'v', long)]
        value: String,
    },
}

/// Why one NameServer gave no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// Refused, timed out, closed, or not speaking the protocol.
    Unreachable(String),
    /// A response with a non-success code.
    Answered { code: i32, remark: Option<String> },
    /// A success response whose body or header cannot be read.
    BadResponse(String),
}

impl Cause {
    fn from_client(err: &ClientError) -> Self {
        Self::Unreachable(match err {
            ClientError::Connect { source, .. } => source.to_string(),
            ClientError::Timeout(limit) => {
                format!("no response within {}", humantime::format_duration(*limit))
            }
            other => other.to_string(),
        })
    }

    /// A non-success response, or `None` for SUCCESS.
    fn of_response(resp: &RemotingCommand) -> Option<Self> {
        (resp.response_code() != ResponseCode::SUCCESS).then(|| Self::Answered {
            code: resp.code,
            remark: resp.remark.clone(),
        })
    }

    fn exit_code(&self) -> u8 {
        match self {
            Self::Unreachable(_) => EXIT_UNREACHABLE,
            Self::Answered { .. } | Self::BadResponse(_) => EXIT_ANSWERED,
        }
    }
}

/// The short form, after "Failed, " in per-server lines.
impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unreachable(reason) => write!(f, "unreachable: {reason}"),
            Self::Answered { code, remark } => {
                write!(
                    f,
                    "answered {}: {}",
                    ResponseCode(*code),
                    RemarkText(remark)
                )
            }
            Self::BadResponse(reason) => write!(f, "unreadable response: {reason}"),
        }
    }
}

/// One NameServer's failure, naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminError {
    pub addr: String,
    pub cause: Cause,
}

impl std::error::Error for AdminError {}

impl fmt::Display for AdminError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addr = &self.addr;
        match &self.cause {
            Cause::Unreachable(reason) => write!(f, "cannot reach name server {addr}: {reason}"),
            Cause::Answered { code, remark } => write!(
                f,
                "name server {addr} answered {}: {}",
                ResponseCode(*code),
                RemarkText(remark)
            ),
            Cause::BadResponse(reason) => {
                write!(
                    f,
                    "name server {addr} sent an unreadable response: {reason}"
                )
            }
        }
    }
}

impl AdminError {
    fn to_json(&self) -> Value {
        let message = self.to_string();
        match &self.cause {
            Cause::Unreachable(_) => json!({ "kind": "unreachable", "message": message }),
            Cause::Answered { code, remark } => json!({
                "kind": "answered",
                "message": message,
                "code": code,
                "name": ResponseCode(*code).name(),
                "remark": remark,
            }),
            Cause::BadResponse(_) => json!({ "kind": "bad_response", "message": message }),
        }
    }
}

struct RemarkText<'a>(&'a Option<String>);

impl fmt::Display for RemarkText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_deref() {
            Some(remark) if !remark.is_empty() => f.write_str(remark),
            _ => f.write_str("(no remark)"),
        }
    }
}

/// What a command prints and how it exits, built before anything is printed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub stdout: String,
    pub stderr: String,
    pub exit: u8,
}

/// One NameServer's successful answer: its text and its JSON form.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    text: String,
    json: Value,
}

/// Runs the command and prints its report; the process exit status follows the module docs.
pub async fn run(args: AdminArgs) -> ExitCode {
    let report = execute(&args).await;
    // Write errors (a closed pipe) are ignored: there is nobody left to tell.
    let _ = std::io::stdout().lock().write_all(report.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().lock().write_all(report.stderr.as_bytes());
    ExitCode::from(report.exit)
}

/// Runs the command against the NameServers of `args` and returns what to print.
pub async fn execute(args: &AdminArgs) -> Report {
    let ask = Ask {
        addrs: args.target.namesrv.addrs(),
        timeout: args.target.timeout,
        json: args.target.json,
    };
    match &args.command {
        AdminCommand::ClusterList => {
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
        AdminCommand::TopicRoute { topic } => {
            let header = GetRouteInfoHeader {
                topic: Some(topic.clone()),
                ..GetRouteInfoHeader::default()
            };
            let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
                .with_ext_fields(header.to_ext());
            ask.read(request, |resp| {
                let route: TopicRouteData = decode_body(resp)?;
                let text = serde_json::to_string_pretty(&route)
                    .map_err(|e| Cause::BadResponse(e.to_string()))?;
                Ok(Answer {
                    text: format!("{text}\n"),
                    json: to_value(&route)?,
                })
            })
            .await
        }
        AdminCommand::TopicList { cluster: None } => {
            let request = RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
            ask.read(request, |resp| {
                let list: TopicList = decode_body(resp)?;
                let text: String = list.topic_list.iter().map(|t| format!("{t}\n")).collect();
                Ok(Answer {
                    text,
                    json: json!({ "topicList": list.topic_list }),
                })
            })
            .await
        }
        AdminCommand::TopicList {
            cluster: Some(cluster),
        } => {
            let header = GetTopicsByClusterHeader {
                cluster: cluster.clone(),
            };
            let request = RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER)
                .with_ext_fields(header.to_ext());
            ask.read(request, |resp| {
                let list: TopicList = decode_body(resp)?;
                let rows = list
                    .topic_list
                    .iter()
                    .map(|topic| vec![cluster.clone(), topic.clone()])
                    .collect::<Vec<_>>();
                Ok(Answer {
                    text: table(&["#Cluster Name", "#Topic"], &rows),
                    json: json!({ "cluster": cluster, "topicList": list.topic_list }),
                })
            })
            .await
        }
        AdminCommand::GetKvConfig { namespace, key } => {
            let header = GetKvConfigHeader {
                namespace: Some(namespace.clone()),
                key: Some(key.clone()),
            };
            let request = RemotingCommand::request(RequestCode::GET_KV_CONFIG)
                .with_ext_fields(header.to_ext());
            ask.read(request, |resp| {
                let value = resp
                    .ext("value")
                    .ok_or_else(|| Cause::BadResponse("no value in the response".to_owned()))?;
                Ok(Answer {
                    text: format!("{value}\n"),
                    json: json!({ "namespace": namespace, "key": key, "value": value }),
                })
            })
            .await
        }
        AdminCommand::KvList { namespace } => {
            let header = GetKvListByNamespaceHeader {
                namespace: Some(namespace.clone()),
            };
            let request = RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
                .with_ext_fields(header.to_ext());
            ask.read(request, |resp| {
                let kv: KvTable = decode_body(resp)?;
                let rows = kv
                    .table
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect::<Vec<_>>();
                Ok(Answer {
                    text: table(&["#Key", "#Value"], &rows),
                    json: json!({ "namespace": namespace, "table": kv.table }),
                })
            })
            .await
        }
        AdminCommand::UpdateKvConfig {
            namespace,
            key,
            value,
        } => {
            let header = PutKvConfigHeader {
                namespace: Some(namespace.clone()),
                key: Some(key.clone()),
                value: Some(value.clone()),
            };
            let request = RemotingCommand::request(RequestCode::PUT_KV_CONFIG)
                .with_ext_fields(header.to_ext());
            let what = format!("update kv config [{namespace}] {key}={value}");
            ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
                .await
        }
        AdminCommand::DeleteKvConfig { namespace, key } => {
            let header = DeleteKvConfigHeader {
                namespace: Some(namespace.clone()),
                key: Some(key.clone()),
            };
            let request = RemotingCommand::request(RequestCode::DELETE_KV_CONFIG)
                .with_ext_fields(header.to_ext());
            let what = format!("delete kv config [{namespace}] {key}");
            ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
                .await
        }
        AdminCommand::WipeWritePerm { broker_name } => {
            let request = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER)
                .with_ext_fields(broker_header(broker_name));
            let what = format!("wipe write perm of broker[{broker_name}]");
            ask.write(&what, request, |resp| topic_count(resp, "wipeTopicCount"))
                .await
        }
        AdminCommand::AddWritePerm { broker_name } => {
            let request = RemotingCommand::request(RequestCode::ADD_WRITE_PERM_OF_BROKER)
                .with_ext_fields(broker_header(broker_name));
            let what = format!("add write perm of broker[{broker_name}]");
            ask.write(&what, request, |resp| topic_count(resp, "addTopicCount"))
                .await
        }
        AdminCommand::DeleteTopic { topic, cluster } => {
            let header = DeleteTopicHeader {
                topic: topic.clone(),
                cluster_name: cluster.clone(),
            };
            let request = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV)
                .with_ext_fields(header.to_ext());
            let what = match cluster {
                Some(cluster) => format!("delete topic[{topic}] of cluster[{cluster}]"),
                None => format!("delete topic[{topic}]"),
            };
            ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
                .await
        }
        AdminCommand::GetNamesrvConfig => {
            let request = RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG);
            ask.each(
                request,
                |addr, resp| {
                    let text = String::from_utf8_lossy(resp.body_bytes());
                    let config = properties::parse(&text)
                        .map_err(|e| Cause::BadResponse(format!("bad properties body: {e}")))?;
                    Ok(Answer {
                        text: config_block(addr, &config),
                        json: json!(config),
                    })
                },
                |addr| format!("get name server config of name server[{addr}]"),
            )
            .await
        }
        AdminCommand::UpdateNamesrvConfig { key, value } => {
            let body = format!(
                "{}={}\n",
                escape_property(key, true),
                escape_property(value, false)
            );
            let request = RemotingCommand::request(RequestCode::UPDATE_NAMESRV_CONFIG)
                .with_body(body.into_bytes());
            let what = format!("update name server config {key}={value}");
            ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
                .await
        }
    }
}

fn broker_header(broker_name: &str) -> rmq_protocol::ExtFields {
    BrokerNameHeader {
        broker_name: broker_name.to_owned(),
    }
    .to_ext()
}

/// The `wipeTopicCount` / `addTopicCount` of a write-permission answer: `", 3"` and `{name: 3}`.
fn topic_count(resp: &RemotingCommand, name: &str) -> Result<(String, Value), Cause> {
    match resp.ext(name) {
        Some(count) => {
            let count: i64 = count
                .trim()
                .parse()
                .map_err(|_| Cause::BadResponse(format!("{name} {count:?} is not a number")))?;
            Ok((format!(", {count}"), json!({ name: count })))
        }
        None => Ok((String::new(), json!({ name: null }))),
    }
}

fn decode_body<T: DeserializeOwned>(resp: &RemotingCommand) -> Result<T, Cause> {
    if resp.body_bytes().is_empty() {
        return Err(Cause::BadResponse("no body".to_owned()));
    }
    fastjson::from_slice(resp.body_bytes()).map_err(|e| Cause::BadResponse(e.to_string()))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, Cause> {
    serde_json::to_value(value).map_err(|e| Cause::BadResponse(e.to_string()))
}

/// The NameServers to ask and how.
struct Ask<'a> {
    addrs: &'a [String],
    timeout: Duration,
    json: bool,
}

impl Ask<'_> {
    /// Sends `request` to one NameServer and waits for its response.
    async fn request_one(
        &self,
        addr: &str,
        request: RemotingCommand,
    ) -> Result<RemotingCommand, Cause> {
        let mut client = Client::connect(addr, self.timeout)
            .await
            .map_err(|e| Cause::from_client(&e))?;
        client
            .request(request)
            .await
            .map_err(|e| Cause::from_client(&e))
    }

    /// A read: the first NameServer that answers decides; unreachable ones are skipped.
    async fn read<F>(&self, request: RemotingCommand, decode: F) -> Report
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
    async fn write<F>(&self, what: &str, request: RemotingCommand, detail: F) -> Report
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
    async fn each<F, L>(&self, request: RemotingCommand, decode: F, label: L) -> Report
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

fn failure_entry(error: &AdminError) -> Value {
    json!({ "namesrv": error.addr, "ok": false, "error": error.to_json() })
}

fn json_line(value: &Value) -> String {
    format!("{value}\n")
}

/// Columns padded to their widest cell, two spaces apart; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == last {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// mqadmin's clusterList columns: one row per broker instance, sorted by cluster, broker, id.
pub fn cluster_table(info: &ClusterInfo) -> String {
    let mut rows = Vec::new();
    for (cluster, brokers) in &info.cluster_addr_table {
        for broker in brokers {
            // A broker name without a BrokerData is skipped, as mqadmin does.
            let Some(data) = info.broker_addr_table.get(broker) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                rows.push(vec![
                    cluster.clone(),
                    broker.clone(),
                    id.to_string(),
                    addr.clone(),
                ]);
            }
        }
    }
    table(&["#Cluster Name", "#Broker Name", "#BID", "#Addr"], &rows)
}

/// One NameServer's configuration: a `============addr============` line (as mqadmin), then
/// `key = value` lines in key order.
fn config_block(addr: &str, config: &BTreeMap<String, String>) -> String {
    let mut out = format!("============{addr}============\n");
    for (key, value) in config {
        out.push_str(&format!("{key} = {value}\n"));
    }
    out
}

/// Escapes a key or value for properties text as `java.util.Properties.store` does, so that
/// `Properties.load` (Java) and our parser read back exactly `text`: backslash, control
/// characters, separators in keys, leading spaces, comment marks, and non-ASCII as `\uXXXX`
/// (Java reads the body as ISO-8859-1).
pub fn escape_property(text: &str, is_key: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\x0c' => out.push_str("\\f"),
            ' ' if is_key || i == 0 => out.push_str("\\ "),
            '=' | ':' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if (' '..='~').contains(&c) => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::BrokerData;

    #[test]
    fn namesrv_lists() {
        let list = parse_namesrv_list(" 127.0.0.1:9876 ; ;[::1]:9877;").unwrap();
        assert_eq!(list.addrs(), ["127.0.0.1:9876", "[::1]:9877"]);
        assert!(parse_namesrv_list("").is_err());
        assert!(parse_namesrv_list(";;").is_err());
        assert!(parse_namesrv_list("127.0.0.1").is_err());
        assert!(parse_namesrv_list("127.0.0.1:99999").is_err());
        assert!(parse_namesrv_list(":9876").is_err());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("soon").is_err());
    }

    #[test]
    fn tables_align_and_do_not_pad_the_last_column() {
        let rows = vec![
            vec![
                "c1".to_owned(),
                "broker-long-name".to_owned(),
                "x".to_owned(),
            ],
            vec!["cluster-2".to_owned(), "b".to_owned(), "".to_owned()],
        ];
        assert_eq!(
            table(&["#A", "#B", "#C"], &rows),
            "#A         #B                #C\n\
             c1         broker-long-name  x\n\
             cluster-2  b\n"
        );
        assert_eq!(table(&["#Only"], &[]), "#Only\n");
    }

    #[test]
    fn cluster_rows_sorted_by_cluster_broker_id() {
        let mut info = ClusterInfo::default();
        for (name, addrs) in [
            ("broker-b", vec![(0, "127.0.0.1:10921")]),
            (
                "broker-a",
                vec![(1, "127.0.0.1:10912"), (0, "127.0.0.1:10911")],
            ),
        ] {
            info.broker_addr_table.insert(
                name.to_owned(),
                BrokerData {
                    broker_addrs: addrs
                        .into_iter()
                        .map(|(id, a)| (id, a.to_owned()))
                        .collect(),
                    broker_name: name.to_owned(),
                    cluster: "DefaultCluster".to_owned(),
                    ..BrokerData::default()
                },
            );
        }
        info.cluster_addr_table.insert(
            "DefaultCluster".to_owned(),
            ["broker-b", "broker-a", "ghost"]
                .into_iter()
                .map(str::to_owned)
                .collect(),
        );
        assert_eq!(
            cluster_table(&info),
            "#Cluster Name   #Broker Name  #BID  #Addr\n\
             DefaultCluster  broker-a      0     127.0.0.1:10911\n\
             DefaultCluster  broker-a      1     127.0.0.1:10912\n\
             DefaultCluster  broker-b      0     127.0.0.1:10921\n"
        );
    }

    #[test]
    fn escaped_properties_read_back() {
        for (key, value) in [
            ("plain", "value"),
            ("odd key=:#", " leading space, trailing \\ and = : # !"),
            ("multi", "line\nbreak\ttab\r"),
            ("unicode", "héllo ☃ 𝄞"),
            ("", ""),
        ] {
            let body = format!(
                "{}={}\n",
                escape_property(key, true),
                escape_property(value, false)
            );
            assert!(body.is_ascii(), "{body:?}");
            let parsed = properties::parse(&body).unwrap();
            let expected = if value.contains('𝄞') {
                // Our parser maps each surrogate unit to U+FFFD; Java joins the pair.
                value.replace('𝄞', "\u{FFFD}\u{FFFD}")
            } else {
                value.to_owned()
            };
            assert_eq!(parsed.get(key), Some(&expected), "{body:?}");
        }
        assert_eq!(
            escape_property("orderMessageEnable", true),
            "orderMessageEnable"
        );
        assert_eq!(escape_property("true", false), "true");
    }

    #[test]
    fn error_texts_name_code_and_address() {
        let answered = AdminError {
            addr: "127.0.0.1:9876".to_owned(),
            cause: Cause::Answered {
                code: 22,
                remark: Some("No config item, Namespace: ns Key: k".to_owned()),
            },
        };
        assert_eq!(
            answered.to_string(),
            "name server 127.0.0.1:9876 answered QUERY_NOT_FOUND(22): No config item, Namespace: ns Key: k"
        );
        assert_eq!(answered.cause.exit_code(), EXIT_ANSWERED);
        let json = answered.to_json();
        assert_eq!(json["kind"], "answered");
        assert_eq!(json["code"], 22);
        assert_eq!(json["name"], "QUERY_NOT_FOUND");
        let unknown = Cause::Answered {
            code: 77,
            remark: None,
        };
        assert_eq!(unknown.to_string(), "answered code 77: (no remark)");
        let refused = AdminError {
            addr: "127.0.0.1:1".to_owned(),
            cause: Cause::Unreachable("Connection refused (os error 111)".to_owned()),
        };
        assert_eq!(
            refused.to_string(),
            "cannot reach name server 127.0.0.1:1: Connection refused (os error 111)"
        );
        assert_eq!(refused.cause.exit_code(), EXIT_UNREACHABLE);
        assert_eq!(refused.to_json()["kind"], "unreachable");
    }
}
