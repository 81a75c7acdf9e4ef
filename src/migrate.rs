//! `rmq-namesrv migrate-to-etcd --config <file>`: the one-shot move from local files to etcd
//! (docs/controller.md#moving-from-the-file-store-to-etcd). It reads the same configuration the
//! server starts with — already switched to etcd — and copies what the files it names hold:
//!
//! - with `controller.etcd_endpoints`, the controller's state under `controller.store_path`
//!   into `controller.etcd_prefix`;
//! - with `kv.etcd_endpoints`, the KV file `kv.path` into `kv.etcd_prefix`;
//!
//! over the `[etcd]` section's TLS and user. A prefix that holds any key is refused (exit 1),
//! both before anything is written. A command of its own rather than an `admin` one (those talk
//! to running servers over the wire; this one runs with the server stopped, on its files) or a
//! start-up option (a copy that runs once, and says what it did, is a step an operator takes
//! and checks, not something each start should reconsider).

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmq_actors::controller::etcd::{record_key, state_dir};
use rmq_actors::controller::file_store::FileStore;
use rmq_actors::controller::store::LeaderInfo;
use rmq_actors::etcd_api::Security;
use rmq_actors::etcd_call::connect;
use rmq_actors::etcd_migrate::{ensure_empty, write, Copy};
use rmq_actors::kv::{etcd_layout, KvTables};

use crate::config::{expand_home, Config};

/// The limit of each request to etcd.
const TIMEOUT: Duration = Duration::from_secs(5);

/// One store's copy: where from, where to.
struct Planned {
    what: &'static str,
    source: PathBuf,
    /// Broker sets, or namespaces and entries.
    summary: String,
    endpoints: Vec<String>,
    copy: Copy,
}

/// Reads the files the configuration names and plans the copies; an error says why nothing
/// can be copied.
fn plan(config: &Config) -> Result<Vec<Planned>, String> {
    let mut planned = Vec::new();
    let controller = &config.controller;
    if !controller.etcd_list().is_empty() {
        let dir = expand_home(&controller.store_path);
        let me = LeaderInfo {
            id: String::new(),
            address: String::new(),
        };
        let store = FileStore::open(&dir, me).map_err(|e| e.to_string())?;
        let prefix = &controller.etcd_prefix;
        let mut writes = Vec::new();
        for set in store.broker_sets() {
            let value = serde_json::to_vec(set)
                .map_err(|e| format!("cannot encode broker set {}: {e}", set.name))?;
            writes.push((record_key(prefix, &set.name), value));
        }
        planned.push(Planned {
            what: "controller",
            source: store.path().to_owned(),
            summary: format!("{} broker set(s)", writes.len()),
            endpoints: controller.etcd_list(),
            copy: Copy {
                dir: state_dir(prefix),
                writes,
            },
        });
    }
    let kv = &config.kv;
    if !kv.etcd_endpoint_list().is_empty() {
        let path = expand_home(&kv.path);
        let tables = KvTables::load(&path).map_err(|e| e.to_string())?;
        let (dir, writes) = etcd_layout(&kv.etcd_prefix, &tables);
        planned.push(Planned {
            what: "kv",
            source: path,
            summary: format!(
                "{} namespace(s), {} entr(y/ies)",
                tables.namespaces().count(),
                tables.entries()
            ),
            endpoints: kv.etcd_endpoint_list(),
            copy: Copy { dir, writes },
        });
    }
    if planned.is_empty() {
        return Err(
            "nothing to migrate: the configuration names no etcd (set controller.etcd_endpoints \
             and/or kv.etcd_endpoints, as the server will start with)"
                .into(),
        );
    }
    Ok(planned)
}

/// Runs the migration; the report goes to stdout, an error to the caller (exit 1).
pub async fn run(config_path: &Path, dry_run: bool) -> Result<(), String> {
    let config = Config::load(Some(config_path), std::env::vars(), &Default::default())
        .map_err(|e| format!("configuration error: {e}"))?;
    let planned = plan(&config)?;
    let security = config.etcd.load().map_err(|e| e.to_string())?;
    let mut clients = Vec::new();
    // Every target checked empty before anything is written.
    for step in &planned {
        let client = connect(&step.endpoints, &security, TIMEOUT)
            .await
            .map_err(|e| format!("{}: {e}", step.what))?;
        ensure_empty(&client, &step.copy.dir, TIMEOUT)
            .await
            .map_err(|e| format!("{}: {e}", step.what))?;
        clients.push(client);
    }
    for (step, client) in planned.iter().zip(&clients) {
        let target = target(step, &security);
        if dry_run {
            println!(
                "{}: would copy {} ({} keys) from {} into {target}",
                step.what,
                step.summary,
                step.copy.writes.len(),
                step.source.display()
            );
            continue;
        }
        let written = write(client, &step.copy, TIMEOUT)
            .await
            .map_err(|e| format!("{}: {e}", step.what))?;
        println!(
            "{}: copied {} ({written} keys) from {} into {target}",
            step.what,
            step.summary,
            step.source.display()
        );
    }
    Ok(())
}

fn target(step: &Planned, security: &Security) -> String {
    format!(
        "etcd {} under {}{}",
        step.endpoints.join(","),
        step.copy.dir,
        if security.tls() { " (TLS)" } else { "" }
    )
}
