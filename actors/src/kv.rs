//! The KV config store (docs/kv-and-config.md#kv-store): `KvTables` (namespace -> key -> value,
//! Java's kvConfig.json format) and `KvStore`, the actor that owns them.
//!
//! Why an actor of its own rather than part of the RouteRegistry: KV changes are rare admin
//! operations that wait for a file write, route queries are the hot path; keeping them apart means
//! a slow disk never delays a route. The registry gets a copy of the one namespace it needs
//! (ORDER_TOPIC_CONFIG) whenever it changes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::logging::{Clipped, ClippedOpt};
use actix::prelude::*;
use bytes::Bytes;
use rmq_protocol::body::{to_json, KvTable, ORDER_TOPIC_CONFIG_NAMESPACE};
use rmq_protocol::fastjson::{self, JsonStyle};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tracing::{error, info, warn};

use crate::contain::{contain, contain_unit, Contained, Recover};
use crate::messages::{
    Body, DeleteKvConfig, FlushKv, GetKvConfig, GetKvList, GetKvStats, KvReplyError, KvStats,
    KvValue, OrderTopicConfChanged, PutKvConfig, Restart,
};
use crate::persist::write_atomically;

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

/// Namespaces of keys and values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KvTables {
    table: BTreeMap<String, BTreeMap<String, String>>,
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
        Ok(Self { table })
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
        let ns = self.table.entry(namespace.to_owned()).or_default();
        match value {
            Some(value) => {
                ns.insert(key.to_owned(), value);
            }
            None => {
                ns.remove(key);
            }
        }
    }

    pub fn get(&self, namespace: &str, key: &str) -> Option<&str> {
        self.table.get(namespace)?.get(key).map(String::as_str)
    }

    /// Removes a key; an emptied namespace is kept, as in Java.
    pub fn delete(&mut self, namespace: &str, key: &str) {
        if let Some(ns) = self.table.get_mut(namespace) {
            ns.remove(key);
        }
    }

    pub fn namespace(&self, namespace: &str) -> Option<&BTreeMap<String, String>> {
        self.table.get(namespace)
    }
}

// ---------------------------------------------------------------------------------------------
// Actor

/// The KV store actor. Writes go to a blocking thread, one at a time; a change's reply waits for
/// the write that contains it, but the actor keeps serving reads meanwhile.
pub struct KvStore {
    tables: KvTables,
    path: PathBuf,
    /// Told every change of the ORDER_TOPIC_CONFIG namespace (the route registry).
    order_conf: Recipient<OrderTopicConfChanged>,
    print_interval: Duration,
    /// Bumped by every change; `persisted` is the last version on disk.
    version: u64,
    persisted: u64,
    writing: bool,
    /// Bumped by every reset (a contained panic, a restart): a write started before it is
    /// stale when it ends.
    epoch: u64,
    waiters: Vec<(u64, oneshot::Sender<Result<(), String>>)>,
    /// Handler panics contained so far.
    panics: u64,
    /// Writes of the file that failed, since start.
    save_failures: u64,
}

impl KvStore {
    pub fn new(
        tables: KvTables,
        path: PathBuf,
        order_conf: Recipient<OrderTopicConfChanged>,
        print_interval: Duration,
    ) -> Self {
        Self {
            tables,
            path,
            order_conf,
            print_interval,
            version: 0,
            persisted: 0,
            writing: false,
            epoch: 0,
            waiters: Vec::new(),
            panics: 0,
            save_failures: 0,
        }
    }

    fn publish_order_conf(&self) {
        self.order_conf.do_send(OrderTopicConfChanged {
            table: self.tables.namespace(ORDER_TOPIC_CONFIG_NAMESPACE).cloned(),
        });
    }

    /// Records a change and returns a future resolving when it is on disk.
    fn changed(
        &mut self,
        namespace: &str,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<(), KvReplyError>> {
        // Routes show ORDER_TOPIC_CONFIG: the reply waits until the registry (and through it
        // every connection thread's route cache) has the new value.
        let routes_updated = (namespace == ORDER_TOPIC_CONFIG_NAMESPACE).then(|| {
            self.order_conf.send(OrderTopicConfChanged {
                table: self.tables.namespace(ORDER_TOPIC_CONFIG_NAMESPACE).cloned(),
            })
        });
        self.version += 1;
        let (tx, rx) = oneshot::channel();
        self.waiters.push((self.version, tx));
        self.start_write(ctx);
        Box::pin(async move {
            if let Some(updated) = routes_updated {
                // Unreachable only while the registry is gone; its supervisor brings it back.
                let _ = updated.await;
            }
            match rx.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(reason)) => Err(KvReplyError::NotPersisted(reason)),
                Err(_) => Err(KvReplyError::NotPersisted("the KV store stopped".into())),
            }
        })
    }

    fn start_write(&mut self, ctx: &mut Context<Self>) {
        if self.writing || self.persisted == self.version {
            return;
        }
        self.writing = true;
        let version = self.version;
        let epoch = self.epoch;
        // Encoding a large table takes a while: only the copy happens on the actor.
        let snapshot = self.tables.clone();
        let path = self.path.clone();
        let write = crate::background::spawn(move || write_atomically(&path, &snapshot.to_json()));
        write
            .into_actor(self)
            .map(move |result, act, ctx| {
                act.writing = false;
                if epoch != act.epoch {
                    // Started before a reset, which failed its waiters and reloaded the table:
                    // if it reached the file, the file now holds what the table no longer does;
                    // write the table again (changes made since the reset go with it).
                    if matches!(result, Ok(Ok(()))) {
                        act.persisted = 0;
                    }
                    act.start_write(ctx);
                    return;
                }
                let outcome = match result {
                    Ok(Ok(())) => {
                        act.persisted = version;
                        Ok(())
                    }
                    Ok(Err(err)) => Err(err.to_string()),
                    Err(join) => Err(format!("write task failed: {join}")),
                };
                if let Err(reason) = &outcome {
                    act.save_failures += 1;
                    error!(path = %act.path.display(), error = %reason, "KV file not saved; kept in memory, retried with the next change");
                }
                let (done, pending): (Vec<_>, Vec<_>) = act.waiters.drain(..).partition(|(v, _)| *v <= version);
                act.waiters = pending;
                for (_, waiter) in done {
                    let _ = waiter.send(outcome.clone());
                }
                // Changes made during the write go out now.
                if act.version > version {
                    act.start_write(ctx);
                }
            })
            .spawn(ctx);
    }
}

impl Actor for KvStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        info!(path = %self.path.display(), "KV store started");
        self.publish_order_conf();
        ctx.run_interval(self.print_interval, |act, ctx| {
            contain_unit(act, ctx, "table log", |act, _| {
                info!(table = %Clipped(&String::from_utf8_lossy(&act.tables.to_json())), "KV config table");
            })
        });
    }
}

impl KvStore {
    /// Back to what the file holds, as after a restart: changes not yet acknowledged are gone
    /// (their askers hear so), acknowledged ones are in the file. A write still running goes on
    /// (its end is recognised as stale): one write at a time, always, so that two never race
    /// on the temporary file. `write_lost`: the write's completion will never arrive (an actor
    /// restart drops the futures of its context).
    fn reload(&mut self, write_lost: bool) {
        match KvTables::load(&self.path) {
            Ok(tables) => {
                warn!(path = %self.path.display(), "KV store restarting; reloaded from its file");
                self.tables = tables;
            }
            Err(err) => {
                warn!(error = %err, "KV store restarting; file unreadable, keeping the in-memory table")
            }
        }
        self.epoch += 1;
        if write_lost {
            self.writing = false;
        }
        self.persisted = self.version;
        for (_, waiter) in self.waiters.drain(..) {
            let _ = waiter.send(Err("the KV store restarted".into()));
        }
    }
}

impl Supervised for KvStore {
    fn restarting(&mut self, _: &mut Self::Context) {
        // `started` runs again after this and republishes ORDER_TOPIC_CONFIG to the registry.
        self.reload(true);
    }
}

impl Recover for KvStore {
    const NAME: &'static str = "KV store";

    fn recover(&mut self, _: &mut Self::Context) {
        self.reload(false);
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
                info!(namespace = %Clipped(&namespace), key = %Clipped(&key), value = %ClippedOpt(msg.value.as_deref()), "KV put");
                this.tables.put(&namespace, &key, msg.value);
                this.changed(&namespace, ctx)
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
                this.tables.delete(&namespace, &key);
                // Java saves after every delete, even of a missing key.
                this.changed(&namespace, ctx)
            },
        )
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
                entries: all.values().map(BTreeMap::len).sum(),
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
                if this.persisted == this.version {
                    return Box::pin(async { true });
                }
                let (tx, rx) = oneshot::channel();
                this.waiters.push((this.version, tx));
                // After a failed save nothing else would write again until the next change:
                // try now, so the flush is answered by this attempt (a stop must not hang).
                this.start_write(ctx);
                Box::pin(async move { matches!(rx.await, Ok(Ok(()))) })
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
