//! `rmq-namesrv admin` as an operator runs it: the built binary against real servers started
//! in-process on 127.0.0.1, every command in text and `--json`, exit codes, unreachable servers,
//! and writes to several NameServers.
//!
//! The cases are grouped by kind under `tests/admin_cli/`, beside the run of the binary and the
//! fixtures they share.

mod support;

#[path = "admin_cli/fixtures.rs"]
mod fixtures;
#[path = "admin_cli/run.rs"]
mod run;

#[path = "admin_cli/commands.rs"]
mod commands;
#[path = "admin_cli/controller.rs"]
mod controller;
#[path = "admin_cli/name_servers.rs"]
mod name_servers;
#[path = "admin_cli/status.rs"]
mod status;
#[path = "admin_cli/usage.rs"]
mod usage;
