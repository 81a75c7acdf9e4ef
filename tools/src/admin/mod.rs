//! `rmq-namesrv admin`: an mqadmin-style command line client of any NameServer (ours or Java's)
//! and of any 5.x controller.
//!
//! ```text
//! rmq-namesrv admin [-n "host:port;host:port"] [--timeout 3s] [--json] <command> [options]
//! ```
//!
//! Like mqadmin, reads (`clusterList`, `topicRoute`, `topicList`, `getKvConfig`, `kvList`) go to
//! the first NameServer of the list that answers; writes (`updateKvConfig`, `deleteKvConfig`,
//! `wipeWritePerm`, `addWritePerm`, `deleteTopic`, `updateNamesrvConfig`), `getNamesrvConfig` and
//! `status` go to every NameServer of the list, each reported on its own line (or block).
//!
//! The controller commands take mqadmin's `-a "host:port;..."` (the controllers) and print
//! mqadmin's text: `getControllerMetaData` asks the first controller that answers;
//! `getSyncStateSet`, `electMaster` and `cleanBrokerMetadata` go to the leader that answer names,
//! following CONTROLLER_NOT_LEADER (`leader`); `getControllerConfig` and `updateControllerConfig`
//! go to every controller of `-a`, one block or line each; `getBrokerEpoch` asks every broker of
//! a broker set or cluster, whose addresses (like `getSyncStateSet -c`'s broker names) come from
//! the NameServers of `-n`. mqadmin's two-letter `-bn` is read as `--brokerName`
//! ([`mqadmin_args`]).
//!
//! Exit codes: 0 success; 1 a server answered a non-success code (or an unreadable body, or no
//! controller knows a leader); 2 usage error (clap's); 3 a server cannot be reached (refused,
//! timeout, closed). With several servers the worst outcome wins (3 over 1 over 0). Errors go to
//! stderr.
//!
//! `--json` prints one JSON document on stdout:
//! - a read that got an answer: `{"ok":true,"namesrv":ADDR,"result":R}`;
//! - every other case: `{"ok":BOOL,"results":[ENTRY...]}`, one entry per server asked,
//!   `{"namesrv":ADDR,"ok":true,"result":R}` or `{"namesrv":ADDR,"ok":false,"error":E}`, where
//!   `E` is `{"kind":"unreachable"|"answered"|"bad_response"|"no_leader","message":TEXT}` plus
//!   `code`, `name` and `remark` for `answered`.
//!
//! The key `namesrv` is `controller` for the controller commands and `broker` for
//! getBrokerEpoch's answers ([`Peer`]).
//!
//! One file per concern:
//! - `command`: the commands and their options ([`AdminCommand`]);
//! - `ask`: how a request goes to the servers — reads to the first that answers, writes to
//!   every one — and becomes a [`Report`];
//! - `leader`: how a request reaches the controller leader;
//! - `report`: what went wrong ([`Cause`], [`AdminError`]) and what to print ([`Report`]);
//! - `format`: text layouts ([`table`], [`cluster_table`], configurations);
//! - one file per group of commands, each command one function: `cluster` (clusterList),
//!   `topic` (topicRoute, topicList, deleteTopic), `kv` (getKvConfig, updateKvConfig,
//!   deleteKvConfig, kvList), `perm` (wipeWritePerm, addWritePerm), `namesrv_config`
//!   (getNamesrvConfig, updateNamesrvConfig), `status` (the status page's summary),
//!   `controller` (getControllerMetaData, electMaster, cleanBrokerMetadata, getControllerConfig,
//!   updateControllerConfig), `replicas` (getSyncStateSet, getBrokerEpoch).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use crate::credentials::CredentialArgs;
use crate::tls_args::TlsArgs;

mod ask;
mod cluster;
mod command;
mod controller;
mod format;
mod kv;
mod leader;
mod namesrv_config;
mod perm;
mod replicas;
mod report;
mod status;
mod topic;

use ask::Ask;
pub use command::{AdminCommand, ControllerAddrs};
pub use format::{cluster_table, table};
pub use report::{AdminError, Cause, Peer, Report};

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
    about = "Administer running NameServers and controllers (ours or Java's), like mqadmin",
    long_about = "Administer running NameServers and controllers (ours or Java's), like mqadmin.\n\n\
        Reads go to the first NameServer of -n that answers; writes, getNamesrvConfig and status \
        go to every one of them. Controller commands take -a (controllers); leader-only ones \
        go to the leader the controllers name.\n\
        Exit codes: 0 success, 1 a server answered an error, 2 usage error, \
        3 a server cannot be reached."
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
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub credentials: CredentialArgs,
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
    parse_addr_list(text, "NameServer")
}

/// Parses mqadmin's `-a` syntax, as `-n`'s.
pub fn parse_controller_list(text: &str) -> Result<NamesrvList, String> {
    parse_addr_list(text, "controller")
}

/// Broker controller ids of `cleanBrokerMetadata -b`: the text as given (sent as it is, as
/// mqadmin does), each `;`-separated entry checked to be a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerIds(String);

impl BrokerIds {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Parses `1;2;3`.
pub fn parse_broker_ids(text: &str) -> Result<BrokerIds, String> {
    let text = text.trim();
    for id in text.split(';') {
        if id.trim().parse::<i64>().is_err() {
            return Err(format!(
                "{id:?} is not a broker id (the format is \"1;2;3\")"
            ));
        }
    }
    Ok(BrokerIds(text.to_owned()))
}

/// mqadmin's two-letter `-bn` (brokerName of electMaster and cleanBrokerMetadata), which clap
/// cannot have as a short option, becomes `--brokerName` in the arguments after `admin`.
pub fn mqadmin_args<I: IntoIterator<Item = std::ffi::OsString>>(
    args: I,
) -> Vec<std::ffi::OsString> {
    let mut in_admin = false;
    args.into_iter()
        .map(|arg| {
            if in_admin && arg == "-bn" {
                return "--brokerName".into();
            }
            in_admin = in_admin || arg == "admin";
            arg
        })
        .collect()
}

fn parse_addr_list(text: &str, what: &str) -> Result<NamesrvList, String> {
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
        return Err(format!("no {what} address given"));
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
    let ask = match Ask::new(&args.target) {
        Ok(ask) => ask,
        Err(reason) => {
            return Report {
                stdout: String::new(),
                stderr: format!("rmq-namesrv admin: TLS: {reason}\n"),
                exit: EXIT_USAGE,
            }
        }
    };
    match &args.command {
        AdminCommand::ClusterList => cluster::cluster_list(&ask).await,
        AdminCommand::TopicRoute { topic } => topic::topic_route(&ask, topic).await,
        AdminCommand::TopicList { cluster } => topic::topic_list(&ask, cluster.as_deref()).await,
        AdminCommand::DeleteTopic { topic, cluster } => {
            topic::delete_topic(&ask, topic, cluster.as_deref()).await
        }
        AdminCommand::GetKvConfig { namespace, key } => {
            kv::get_kv_config(&ask, namespace, key).await
        }
        AdminCommand::UpdateKvConfig {
            namespace,
            key,
            value,
        } => kv::update_kv_config(&ask, namespace, key, value).await,
        AdminCommand::DeleteKvConfig { namespace, key } => {
            kv::delete_kv_config(&ask, namespace, key).await
        }
        AdminCommand::KvList { namespace } => kv::kv_list(&ask, namespace).await,
        AdminCommand::WipeWritePerm { broker_name } => {
            perm::wipe_write_perm(&ask, broker_name).await
        }
        AdminCommand::AddWritePerm { broker_name } => perm::add_write_perm(&ask, broker_name).await,
        AdminCommand::GetNamesrvConfig => namesrv_config::get_namesrv_config(&ask).await,
        AdminCommand::Status {
            namespaces,
            topic_filter,
        } => {
            let options = status::StatusOptions {
                namespaces,
                topic_filter: topic_filter.as_deref(),
            };
            status::status(&ask, &options).await
        }
        AdminCommand::UpdateNamesrvConfig { key, value } => {
            namesrv_config::update_namesrv_config(&ask, key, value).await
        }
        command => execute_controller(&ask, command).await,
    }
}

/// The controller commands: `ask` is the NameServers' (for `-n`); each command's `-a` gives
/// the controllers.
async fn execute_controller(ask: &Ask<'_>, command: &AdminCommand) -> Report {
    fn to<'b>(ask: &Ask<'_>, c: &'b ControllerAddrs) -> Ask<'b> {
        ask.to(c.addrs.addrs(), Peer::Controller)
    }
    match command {
        AdminCommand::GetControllerMetaData { controllers } => {
            controller::get_controller_metadata(&to(ask, controllers)).await
        }
        AdminCommand::GetSyncStateSet {
            controllers,
            broker_name,
            cluster,
        } => {
            let which = replicas::Which::of(broker_name.as_deref(), cluster.as_deref());
            replicas::get_sync_state_set(ask, &to(ask, controllers), which).await
        }
        AdminCommand::GetBrokerEpoch {
            broker_name,
            cluster,
        } => {
            let which = replicas::Which::of(broker_name.as_deref(), cluster.as_deref());
            replicas::get_broker_epoch(ask, which).await
        }
        AdminCommand::ElectMaster {
            controllers,
            broker_id,
            broker_name,
            cluster,
        } => {
            controller::elect_master(&to(ask, controllers), cluster, broker_name, *broker_id).await
        }
        AdminCommand::CleanBrokerMetadata {
            controllers,
            broker_ids,
            broker_name,
            cluster,
            clean_living_broker,
        } => {
            let target = controller::CleanTarget {
                cluster: cluster.as_deref(),
                broker_name,
                broker_ids: broker_ids.as_ref(),
                clean_living_broker: *clean_living_broker,
            };
            controller::clean_broker_metadata(&to(ask, controllers), &target).await
        }
        AdminCommand::GetControllerConfig { controllers } => {
            controller::get_controller_config(&to(ask, controllers)).await
        }
        AdminCommand::UpdateControllerConfig {
            controllers,
            key,
            value,
        } => controller::update_controller_config(&to(ask, controllers), key, value).await,
        // The NameServer commands are matched in `execute`.
        _ => Report {
            stdout: String::new(),
            stderr: "rmq-namesrv admin: not a controller command\n".to_owned(),
            exit: EXIT_USAGE,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn mqadmin_s_bn_becomes_broker_name_after_admin_only() {
        let args = |list: &[&str]| {
            list.iter()
                .map(std::ffi::OsString::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            mqadmin_args(args(&[
                "rmq",
                "-bn",
                "admin",
                "electMaster",
                "-bn",
                "b",
                "-b",
                "1"
            ])),
            args(&[
                "rmq",
                "-bn",
                "admin",
                "electMaster",
                "--brokerName",
                "b",
                "-b",
                "1"
            ])
        );
    }

    #[test]
    fn broker_id_lists() {
        assert_eq!(
            parse_broker_ids(" 1;2 ").map(|ids| ids.0),
            Ok("1;2".to_owned())
        );
        assert!(parse_broker_ids("1;x").is_err());
        assert!(parse_broker_ids("").is_err());
        assert!(parse_controller_list(";")
            .unwrap_err()
            .contains("no controller address"));
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_timeout("0s").is_err());
        assert!(parse_timeout("soon").is_err());
    }
}
