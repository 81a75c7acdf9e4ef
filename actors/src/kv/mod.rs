//! The KV config store (docs/kv-and-config.md#kv-store): `KvTables` (namespace -> key -> value,
//! Java's kvConfig.json format) and `KvStore`, the actor that owns them.
//!
//! Why an actor of its own rather than part of the RouteRegistry: KV changes are rare admin
//! operations that wait for a file write, route queries are the hot path; keeping them apart means
//! a slow disk never delays a route. The registry gets a copy of the one namespace it needs
//! (ORDER_TOPIC_CONFIG) whenever it changes.
//!
//! The tables are kept in one of two places (`kv.backend`): this NameServer's own file
//! ([`file`]: Java's behaviour, each NameServer with a KV of its own) or etcd ([`etcd`]: one KV
//! shared by a fleet, every NameServer's view kept current by a watch). Either way this actor is
//! the only owner of the tables in memory and answers reads from them.

mod etcd;
mod file;

pub use etcd::etcd_layout;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::logging::{Clipped, ClippedOpt};
use actix::dev::RecipientRequest;
use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::body::{to_json, KvTable, ORDER_TOPIC_CONFIG_NAMESPACE};
use rmq_protocol::fastjson::{self, JsonStyle};
use serde::{Deserialize, Serialize};
use tracing::{info, warn};

use crate::contain::{contain, contain_unit, Contained, Recover};
use crate::messages::{
    Body, DeleteKvConfig, FlushKv, GetKvConfig, GetKvList, GetKvStats, KvReplyError, KvStats,
    KvValue, OrderTopicConf, OrderTopicConfChanged, PutKvConfig, Restart,
};
use crate::settings::{expand_home, KvBackend, KvSettings};

/// The KV file cannot be used; start-up stops with this error.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error("cannot read KV file {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("KV file {path} is corrupt: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Java's `KVConfigSerializeWrapper`.
#[derive(Debug, Default, Serialize, Deserialize)]
struct KvFile {
    #[serde(rename = "configTable", default)]
    config_table: BTreeMap<String, BTreeMap<String, Option<String>>>,
}

/// Most namespaces, entries and bytes (namespaces, keys and values, with a fixed share per
/// entry) KV requests may make the store hold: far above real use (a handful of namespaces,
/// ORDER_TOPIC_CONFIG with a value per ordered topic), and what keeps a flood of invented
/// ones from growing it (and each save of it) without bound. A file loaded at start is taken
/// whole; past a bound, only changes that do not grow the store are taken.
pub const MAX_NAMESPACES: usize = 10_000;
pub const MAX_ENTRIES: usize = 1_000_000;
pub const MAX_BYTES: usize = 64 << 20;

/// What an entry takes besides its key and value.
const ENTRY_OVERHEAD: usize = 32;

/// Namespaces of keys and values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvTables {
    table: BTreeMap<String, BTreeMap<String, String>>,
    /// Entries held, and their bytes (namespaces included).
    entries: usize,
    bytes: usize,
}

/// Why a KV change is refused (docs/limits.md#what-requests-can-store).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvLimit {
    #[error(transparent)]
    TooLong(#[from] crate::stored::TooLong),
    #[error("the KV store holds its maximum of {MAX_NAMESPACES} namespaces")]
    Namespaces,
    #[error("the KV store holds its maximum of {MAX_ENTRIES} entries")]
    Entries,
    #[error("the KV store would hold more than its maximum of {MAX_BYTES} bytes")]
    Bytes,
}

impl KvTables {
    /// Loads `path`; a missing file is an empty store, an unreadable or corrupt one an error.
    pub fn load(path: &Path) -> Result<Self, KvError> {
        match std::fs::read(path) {
            Ok(bytes) => Self::from_json(&bytes).map_err(|source| KvError::Corrupt {
                path: path.to_owned(),
                source,
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(KvError::Read {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Parses Java's format: `{"configTable":{namespace:{key:value}}}` (null values dropped).
    pub fn from_json(bytes: &[u8]) -> Result<Self, serde_json::Error> {
        let file: KvFile = fastjson::from_slice(bytes)?;
        let table = file
            .config_table
            .into_iter()
            .map(|(ns, kv)| {
                (
                    ns,
                    kv.into_iter()
                        .filter_map(|(k, v)| v.map(|v| (k, v)))
                        .collect(),
                )
            })
            .collect();
        let mut tables = Self {
            table,
            entries: 0,
            bytes: 0,
        };
        tables.recount();
        Ok(tables)
    }

    fn recount(&mut self) {
        self.entries = self.table.values().map(BTreeMap::len).sum();
        self.bytes = self
            .table
            .iter()
            .map(|(ns, kv)| {
                ns.len() + ENTRY_OVERHEAD + kv.iter().map(|(k, v)| entry_bytes(k, v)).sum::<usize>()
            })
            .sum();
    }

    /// Whether a put of `value` (`None`: only the namespace) at `namespace`/`key` is within
    /// the bounds; a change that does not grow the store always is.
    pub fn admits(&self, namespace: &str, key: &str, value: Option<&str>) -> Result<(), KvLimit> {
        crate::stored::name("namespace", namespace)?;
        crate::stored::name("key", key)?;
        let Some(value) = value else {
            return match self.table.contains_key(namespace) {
                false if self.table.len() >= MAX_NAMESPACES => Err(KvLimit::Namespaces),
                _ => Ok(()),
            };
        };
        crate::stored::bounded("value", value, crate::stored::MAX_KV_VALUE_BYTES)?;
        let ns = self.table.get(namespace);
        if ns.is_none() && self.table.len() >= MAX_NAMESPACES {
            return Err(KvLimit::Namespaces);
        }
        let before = ns.and_then(|kv| kv.get(key)).map(|v| entry_bytes(key, v));
        if before.is_none() && self.entries >= MAX_ENTRIES {
            return Err(KvLimit::Entries);
        }
        let grown = entry_bytes(key, value) + ns.map_or(namespace.len() + ENTRY_OVERHEAD, |_| 0);
        if self.bytes + grown > MAX_BYTES + before.unwrap_or(0) {
            return Err(KvLimit::Bytes);
        }
        Ok(())
    }

    /// Java's format, compact.
    pub fn to_json(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(rename = "configTable")]
            config_table: &'a BTreeMap<String, BTreeMap<String, String>>,
        }
        to_json(
            &Out {
                config_table: &self.table,
            },
            JsonStyle::Legacy,
        )
    }

    /// Stores a value; `None` creates the namespace but stores nothing (Java keeps a null that
    /// is lost on the next save).
    pub fn put(&mut self, namespace: &str, key: &str, value: Option<String>) {
        if !self.table.contains_key(namespace) {
            self.bytes += namespace.len() + ENTRY_OVERHEAD;
        }
        let ns = self.table.entry(namespace.to_owned()).or_default();
        let added = value.as_ref().map_or(0, |v| entry_bytes(key, v));
        let replaced = match value {
            Some(value) => ns.insert(key.to_owned(), value),
            None => ns.remove(key),
        };
        self.entries = self.entries + usize::from(added > 0) - usize::from(replaced.is_some());
        let removed = replaced.map_or(0, |v| entry_bytes(key, &v));
        self.bytes = (self.bytes + added).saturating_sub(removed);
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.table.get(namespace)?.get(key).map(String::as_str)
    }

    /// Removes a key; an emptied namespace is kept, as in Java.
    pub fn delete(&mut self, namespace: &str, key: &str) {
        if let Some(removed) = self.table.get_mut(namespace).and_then(|ns| ns.remove(key)) {
            self.entries -= 1;
            self.bytes = self.bytes.saturating_sub(entry_bytes(key, &removed));
        }
    }

    /// Entries held.
    pub fn entries(&self) -> usize {
        self.entries
    }

    pub fn namespace(&self, namespace: &str) -> Option<&BTreeMap<String, String>> {
        self.table.get(namespace)
    }

    /// Every namespace (empty ones too) with its entries, in order.
    pub fn namespaces(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, String>)> {
        self.table.iter().map(|(ns, kv)| (ns.as_str(), kv))
    }

    /// Creates the namespace if it is missing.
    fn ensure_namespace(&mut self, namespace: &str) {
        if !self.table.contains_key(namespace) {
            self.bytes += namespace.len() + ENTRY_OVERHEAD;
            self.table.insert(namespace.to_owned(), BTreeMap::new());
        }
    }

    /// Removes the namespace if it holds nothing.
    fn remove_namespace_if_empty(&mut self, namespace: &str) {
        if self.table.get(namespace).is_some_and(BTreeMap::is_empty) {
            self.table.remove(namespace);
            self.bytes = self.bytes.saturating_sub(namespace.len() + ENTRY_OVERHEAD);
        }
    }
}

fn entry_bytes(key: &str, value: &str) -> usize {
    key.len() + value.len() + ENTRY_OVERHEAD
}

// ---------------------------------------------------------------------------------------------
// Actor

/// What a [`KvStore`] starts from (`kv.backend`).
#[derive(Debug, Clone)]
pub enum KvSource {
    /// The file at `path` (home expanded), as loaded.
    File { path: PathBuf, tables: KvTables },
    /// etcd's client endpoints, the key prefix and how to reach etcd (TLS, user: the `[etcd]`
    /// section, see [`KvSource::with_etcd_security`]); nothing is read before the store starts.
    Etcd {
        endpoints: Vec<String>,
        prefix: String,
        security: crate::etcd_api::Security,
    },
}

impl KvSource {
    /// The source the settings name: the file is loaded now (an unreadable or corrupt one stops
    /// start-up), etcd is only named (the store connects when it starts, and starts without it).
    pub fn load(settings: &KvSettings) -> Result<Self, KvError> {
        match settings.backend {
            KvBackend::File => {
                let path = expand_home(&settings.path);
                let tables = KvTables::load(&path)?;
                Ok(Self::File { path, tables })
            }
            KvBackend::Etcd => Ok(Self::Etcd {
                endpoints: settings.etcd_endpoint_list(),
                prefix: settings.etcd_prefix.clone(),
                security: crate::etcd_api::Security::default(),
            }),
        }
    }

    /// With the etcd backend, reaches etcd with `security` (read from the `[etcd]` section at
    /// start); the file backend is unchanged.
    pub fn with_etcd_security(self, with: crate::etcd_api::Security) -> Self {
        match self {
            Self::Etcd {
                endpoints, prefix, ..
            } => Self::Etcd {
                endpoints,
                prefix,
                security: with,
            },
            file => file,
        }
    }
}

/// Where the tables are kept, with the bookkeeping of that place.
enum Backend {
    File(file::FileSync),
    /// Boxed: an etcd client is large.
    Etcd(Box<etcd::EtcdSync>),
}

/// The KV store actor: the one owner of the tables, whichever the backend. Reads are answered
/// from memory; a change is answered once its backend has it (the file written, or etcd's
/// confirmation), and the actor keeps serving reads meanwhile.
pub struct KvStore {
    tables: KvTables,
    /// Told every change of the ORDER_TOPIC_CONFIG namespace (the route registry).
    order_conf: Recipient<OrderTopicConfChanged>,
    print_interval: Duration,
    backend: Backend,
    /// Handler panics contained so far.
    panics: u64,
    /// Changes the backend did not take (file writes, etcd writes), since start.
    save_failures: u64,
}

impl KvStore {
    pub fn new(
        source: KvSource,
        order_conf: Recipient<OrderTopicConfChanged>,
        print_interval: Duration,
    ) -> Self {
        let (tables, backend) = match source {
            KvSource::File { path, tables } => (tables, Backend::File(file::FileSync::new(path))),
            KvSource::Etcd {
                endpoints,
                prefix,
                security,
            } => (
                KvTables::default(),
                Backend::Etcd(Box::new(etcd::EtcdSync::new(endpoints, &prefix, security))),
            ),
        };
        Self {
            tables,
            order_conf,
            print_interval,
            backend,
            panics: 0,
            save_failures: 0,
        }
    }

    /// The whole ORDER_TOPIC_CONFIG namespace to the registry (at start, after a reload).
    fn publish_order_conf(&self) {
        self.order_conf.do_send(OrderTopicConfChanged {
            change: OrderTopicConf::Whole(
                self.tables.namespace(ORDER_TOPIC_CONFIG_NAMESPACE).cloned(),
            ),
        });
    }

    /// After a change of `namespace`/`key` in memory: the registry's update, awaited by the
    /// reply when the namespace is ORDER_TOPIC_CONFIG (routes show it, so the reply waits until
    /// the registry, and through it every connection thread's route cache, has the new value).
    /// Only the entry goes: a change costs the registry the entry, not the namespace.
    fn routes_update(
        &self,
        namespace: &str,
        key: &str,
    ) -> Option<RecipientRequest<OrderTopicConfChanged>> {
        (namespace == ORDER_TOPIC_CONFIG_NAMESPACE).then(|| {
            let change = match self.tables.namespace(namespace) {
                None => OrderTopicConf::Whole(None),
                Some(table) => OrderTopicConf::Entry {
                    key: key.to_owned(),
                    value: table.get(key).cloned(),
                },
            };
            self.order_conf.send(OrderTopicConfChanged { change })
        })
    }
}

impl Actor for KvStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Backend::File(file) = &self.backend {
            info!(path = %file.path().display(), "KV store started");
        }
        self.publish_order_conf();
        ctx.run_interval(self.print_interval, |act, ctx| {
            contain_unit(act, ctx, "table log", |act, _| {
                info!(table = %Clipped(&String::from_utf8_lossy(&act.tables.to_json())), "KV config table");
            })
        });
        if let Backend::Etcd(_) = &self.backend {
            self.etcd_started(ctx);
        }
    }
}

impl Supervised for KvStore {
    fn restarting(&mut self, _: &mut Self::Context) {
        // `started` runs again after this and republishes ORDER_TOPIC_CONFIG to the registry.
        match &self.backend {
            Backend::File(_) => self.file_reload(true),
            Backend::Etcd(_) => self.etcd_restarting(),
        }
    }
}

impl Recover for KvStore {
    const NAME: &'static str = "KV store";

    fn recover(&mut self, ctx: &mut Self::Context) {
        match &self.backend {
            Backend::File(_) => self.file_reload(false),
            Backend::Etcd(_) => self.etcd_recover(ctx),
        }
        self.publish_order_conf();
    }

    fn count_panic(&mut self) {
        self.panics += 1;
    }

    fn panics(&self) -> u64 {
        self.panics
    }
}

contained_actor!(KvStore);

impl Handler<PutKvConfig> for KvStore {
    type Result = Contained<ResponseFuture<Result<(), KvReplyError>>>;

    fn handle(&mut self, msg: PutKvConfig, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "PutKvConfig",
            move |this, ctx| -> ResponseFuture<Result<(), KvReplyError>> {
                let (Some(namespace), Some(key)) = (msg.namespace, msg.key) else {
                    return Box::pin(async { Err(KvReplyError::NamespaceOrKeyNull) });
                };
                if let Err(limit) = this.tables.admits(&namespace, &key, msg.value.as_deref()) {
                    warn!(namespace = %Clipped(&namespace), key = %Clipped(&key), reason = %limit, "KV put refused");
                    return Box::pin(async move { Err(KvReplyError::Refused(limit.to_string())) });
                }
                info!(namespace = %Clipped(&namespace), key = %Clipped(&key), value = %ClippedOpt(msg.value.as_deref()), "KV put");
                let change = Change::Put(msg.value);
                match &this.backend {
                    Backend::File(_) => {
                        change.apply(&mut this.tables, &namespace, &key);
                        this.file_changed(&namespace, &key, ctx)
                    }
                    Backend::Etcd(_) => this.etcd_write(namespace, key, change, ctx),
                }
            },
        )
    }
}

impl Handler<DeleteKvConfig> for KvStore {
    type Result = Contained<ResponseFuture<Result<(), KvReplyError>>>;

    fn handle(&mut self, msg: DeleteKvConfig, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "DeleteKvConfig",
            move |this, ctx| -> ResponseFuture<Result<(), KvReplyError>> {
                let (Some(namespace), Some(key)) = (msg.namespace, msg.key) else {
                    return Box::pin(async { Err(KvReplyError::NamespaceOrKeyNull) });
                };
                info!(namespace = %Clipped(&namespace), key = %Clipped(&key), "KV delete");
                match &this.backend {
                    Backend::File(_) => {
                        Change::Delete.apply(&mut this.tables, &namespace, &key);
                        // Java saves after every delete, even of a missing key.
                        this.file_changed(&namespace, &key, ctx)
                    }
                    Backend::Etcd(_) => this.etcd_write(namespace, key, Change::Delete, ctx),
                }
            },
        )
    }
}

/// One change of a value, as PUT_KV_CONFIG and DELETE_KV_CONFIG ask for it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    /// `Some`: stores the value; `None`: creates the namespace and removes the key (Java stores
    /// a null that reads as missing).
    Put(Option<String>),
    /// Removes the key; an emptied namespace is kept.
    Delete,
}

impl Change {
    fn apply(&self, tables: &mut KvTables, namespace: &str, key: &str) {
        match self {
            Change::Put(value) => tables.put(namespace, key, value.clone()),
            Change::Delete => tables.delete(namespace, key),
        }
    }
}

impl Handler<GetKvConfig> for KvStore {
    type Result = Contained<Result<KvValue, KvReplyError>>;

    fn handle(&mut self, msg: GetKvConfig, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetKvConfig", move |this, _| {
            let found = match (&msg.namespace, &msg.key) {
                (Some(ns), Some(key)) => this.tables.get(ns, key),
                _ => None,
            };
            found
                .map(|v| KvValue(v.to_owned()))
                .ok_or_else(|| KvReplyError::NoItem {
                    namespace: msg.namespace.unwrap_or_else(|| "null".into()),
                    key: msg.key.unwrap_or_else(|| "null".into()),
                })
        })
    }
}

impl Handler<GetKvList> for KvStore {
    type Result = Contained<Result<Body, KvReplyError>>;

    fn handle(&mut self, msg: GetKvList, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetKvList", move |this, _| {
            let table = msg
                .namespace
                .as_deref()
                .and_then(|ns| this.tables.namespace(ns));
            match table {
                Some(table) => Ok(Body(Bytes::from(to_json(
                    &KvTable {
                        table: table.clone(),
                    },
                    JsonStyle::Legacy,
                )))),
                None => Err(KvReplyError::NoNamespace {
                    namespace: msg.namespace.unwrap_or_else(|| "null".into()),
                }),
            }
        })
    }
}

impl Handler<GetKvStats> for KvStore {
    type Result = Contained<MessageResult<GetKvStats>>;

    fn handle(&mut self, msg: GetKvStats, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetKvStats", move |this, _| {
            let all = &this.tables.table;
            MessageResult(KvStats {
                entries: this.tables.entries(),
                save_failures: this.save_failures,
                table: msg.with_table.then(|| all.clone()),
            })
        })
    }
}

impl Handler<FlushKv> for KvStore {
    type Result = Contained<ResponseFuture<bool>>;

    fn handle(&mut self, _: FlushKv, ctx: &mut Context<Self>) -> Self::Result {
        contain(
            self,
            ctx,
            "FlushKv",
            move |this, ctx| -> ResponseFuture<bool> {
                match &this.backend {
                    Backend::File(_) => this.file_flush(ctx),
                    // Every change was answered only once etcd had it.
                    Backend::Etcd(_) => Box::pin(async { true }),
                }
            },
        )
    }
}

impl Handler<Restart> for KvStore {
    type Result = ();

    fn handle(&mut self, _: Restart, ctx: &mut Context<Self>) {
        warn!("KV store stopping on request; its supervisor restarts it");
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_file_format_round_trip() {
        let text = br#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"},"other":{"k":null,"j":"v"},"empty":{}}}"#;
        let tables = KvTables::from_json(text).unwrap();
        assert_eq!(
            tables.get("ORDER_TOPIC_CONFIG", "TopicTest"),
            Some("broker-a:4;broker-b:4")
        );
        assert_eq!(tables.get("other", "k"), None);
        assert_eq!(tables.namespace("empty").map(BTreeMap::len), Some(0));
        assert_eq!(
            tables.to_json(),
            br#"{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4;broker-b:4"},"empty":{},"other":{"j":"v"}}}"#
        );
        assert!(KvTables::from_json(b"{\"configTable\":").is_err());
        assert_eq!(KvTables::from_json(b"{}").unwrap(), KvTables::default());
    }

    #[test]
    fn put_get_delete_keep_namespaces() {
        let mut t = KvTables::default();
        t.put("ns", "k", Some("v".into()));
        assert_eq!(t.get("ns", "k"), Some("v"));
        t.delete("ns", "k");
        assert_eq!(t.get("ns", "k"), None);
        assert!(t.namespace("ns").is_some(), "emptied namespace is kept");
        t.delete("missing", "k");
        assert!(t.namespace("missing").is_none());
        t.put("nulls", "k", None);
        assert!(t.namespace("nulls").is_some_and(BTreeMap::is_empty));
    }

    #[test]
    fn counts_follow_every_change_and_bounds_refuse_growth_only() {
        let mut t = KvTables::default();
        for i in 0..50 {
            t.put(
                &format!("ns{}", i % 7),
                &format!("k{}", i % 11),
                Some("v".repeat(i)),
            );
            if i % 3 == 0 {
                t.delete(&format!("ns{}", i % 5), &format!("k{}", i % 11));
            }
            if i % 4 == 0 {
                t.put(&format!("ns{}", i % 9), "nothing", None);
            }
            let mut recounted = t.clone();
            recounted.recount();
            assert_eq!(
                (t.entries, t.bytes),
                (recounted.entries, recounted.bytes),
                "after {i}"
            );
        }
        let long = "k".repeat(crate::stored::MAX_NAME_BYTES + 1);
        assert!(matches!(
            t.admits("ns", &long, Some("v")),
            Err(KvLimit::TooLong(_))
        ));
        let huge = "v".repeat(crate::stored::MAX_KV_VALUE_BYTES + 1);
        assert!(matches!(
            t.admits("ns", "k", Some(&huge)),
            Err(KvLimit::TooLong(_))
        ));
        let mut full = KvTables::default();
        for i in 0..MAX_NAMESPACES {
            full.put(&format!("ns{i}"), "k", Some("v".into()));
        }
        assert_eq!(
            full.admits("another", "k", Some("v")),
            Err(KvLimit::Namespaces)
        );
        assert_eq!(full.admits("another", "k", None), Err(KvLimit::Namespaces));
        // Changes within what it holds are still taken.
        assert_eq!(full.admits("ns7", "k", Some("w")), Ok(()));
        assert_eq!(full.admits("ns7", "k2", Some("w")), Ok(()));
    }

    #[test]
    fn missing_file_is_empty_and_corrupt_file_names_itself() {
        let dir = std::env::temp_dir().join(format!("rmq-kv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            KvTables::load(&dir.join("none.json")).unwrap(),
            KvTables::default()
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, b"{not json").unwrap();
        let err = KvTables::load(&bad).unwrap_err();
        assert!(err.to_string().contains("bad.json"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
