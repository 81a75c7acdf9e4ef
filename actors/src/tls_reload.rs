//! `TlsReloader`: certificate hot reload, Java's FileWatchService done properly. It owns the
//! TLS settings and the fingerprints of the certificate, key and trust files; when they change
//! it builds a new server configuration and publishes it, an immutable snapshot, to the
//! listeners, which hand it to every connection that arrives after; live connections keep theirs.
//!
//! Changes are noticed three ways: file-system events on the files' directories (a rename that
//! replaces a file replaces its inode, so the directory is watched, not the file); a periodic
//! hash check for file systems without events; SIGHUP (`ReloadTls`). A new pair that does not
//! build — half-written, a key that is not the certificate's, a bad PEM — never replaces a good
//! configuration: the old one stays, the reason is logged, and the next change retries. Reading,
//! hashing and building (a password-protected key costs a key derivation) run on the blocking
//! pool, not on the actor's thread.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use rmq_transport::server::{server_config, ServerTls};
use rmq_transport::TlsSettings;
use tracing::{debug, info, warn};

use crate::file_watch::{fingerprint, DirWatch};
use crate::messages::{ReloadTls, TlsConfigChanged};

/// How long after a file-system event the files are checked (editors and `cp` write in steps).
const SETTLE: Duration = Duration::from_millis(200);

/// Re-reads the TLS settings (Java re-reads `tls.config.file` at every reload).
pub type SettingsSource = Arc<dyn Fn() -> Result<TlsSettings, String> + Send + Sync>;

/// The hot-reload actor. See the module docs.
pub struct TlsReloader {
    source: SettingsSource,
    settings: TlsSettings,
    /// What the watched files held when the configuration was last built (or tried).
    fingerprint: u64,
    listeners: Vec<Recipient<TlsConfigChanged>>,
    watch: DirWatch,
    /// A check is scheduled or running.
    checking: bool,
}

impl TlsReloader {
    /// `settings` and `current` are what the server started with; `listeners` get every new
    /// configuration.
    pub fn new(
        source: SettingsSource,
        settings: TlsSettings,
        listeners: Vec<Recipient<TlsConfigChanged>>,
    ) -> Self {
        Self {
            fingerprint: fingerprint(&settings.watched_files()),
            source,
            settings,
            listeners,
            watch: DirWatch::default(),
            checking: false,
        }
    }

    /// Watches the directories of the current files (again, if they moved).
    fn watch(&mut self, ctx: &mut Context<Self>) {
        let addr = ctx.address();
        self.watch
            .watch(&self.settings.watched_files(), "certificates", move || {
                addr.do_send(FilesChanged)
            });
    }

    /// Checks the files (on the blocking pool) and reloads if they changed, or if `force`.
    fn check(&mut self, force: bool) -> ResponseActFuture<Self, Result<String, String>> {
        if self.checking && !force {
            return Box::pin(actix::fut::ready(Ok(
                "a check is already running".to_owned()
            )));
        }
        self.checking = true;
        let source = Arc::clone(&self.source);
        let previous = self.fingerprint;
        let current_files = self.settings.watched_files();
        let job =
            crate::background::spawn(move || reload(&source, &current_files, previous, force));
        Box::pin(job.into_actor(self).map(|joined, act, ctx| {
            act.checking = false;
            let outcome = match joined {
                Ok(outcome) => outcome,
                Err(err) => Outcome::Failed {
                    fingerprint: act.fingerprint,
                    reason: format!("reload task failed: {err}"),
                },
            };
            match outcome {
                Outcome::Unchanged => Ok("certificate files unchanged".to_owned()),
                Outcome::Failed {
                    fingerprint,
                    reason,
                } => {
                    act.fingerprint = fingerprint;
                    warn!(error = %reason, "TLS configuration not reloaded; the current one stays until the next change");
                    Err(reason)
                }
                Outcome::Built {
                    fingerprint,
                    settings,
                    tls,
                } => {
                    act.fingerprint = fingerprint;
                    act.settings = *settings;
                    let hash = tls.as_ref().map(certificate_hash).unwrap_or_default();
                    let source = tls.as_ref().map_or("none", |t| t.source.as_str()).to_owned();
                    info!(certificate = %source, certificate_hash = %hash, "TLS configuration reloaded; new connections use it");
                    for listener in &act.listeners {
                        listener.do_send(TlsConfigChanged {
                            config: tls.as_ref().map(|t| Arc::clone(&t.config)),
                        });
                    }
                    act.watch(ctx);
                    Ok(format!("reloaded: {source} (certificate hash {hash})"))
                }
            }
        }))
    }
}

/// What a check found.
enum Outcome {
    Unchanged,
    Built {
        fingerprint: u64,
        settings: Box<TlsSettings>,
        tls: Option<ServerTls>,
    },
    Failed {
        fingerprint: u64,
        reason: String,
    },
}

/// Re-reads the settings, hashes their files and builds a configuration if anything changed.
fn reload(source: &SettingsSource, files: &[PathBuf], previous: u64, force: bool) -> Outcome {
    let settings = match source() {
        Ok(settings) => settings,
        Err(reason) => {
            return Outcome::Failed {
                fingerprint: fingerprint(files),
                reason,
            }
        }
    };
    let now = fingerprint(&settings.watched_files());
    if now == previous && !force {
        return Outcome::Unchanged;
    }
    match server_config(&settings) {
        Ok(tls) => Outcome::Built {
            fingerprint: now,
            settings: Box::new(settings),
            tls,
        },
        Err(err) => Outcome::Failed {
            fingerprint: now,
            reason: err.to_string(),
        },
    }
}

/// A short hash of the served certificate, to tell certificates apart in logs.
fn certificate_hash(tls: &ServerTls) -> String {
    let mut hasher = DefaultHasher::new();
    tls.certificate.as_ref().hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

/// A file-system event in a watched directory.
#[derive(Debug, Message)]
#[rtype(result = "()")]
struct FilesChanged;

impl Actor for TlsReloader {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.watch(ctx);
        let every = self.settings.reload_check_interval;
        ctx.run_interval(every, |act, ctx| {
            if !act.checking {
                ctx.spawn(act.check(false).map(|_, _, _| ()));
            }
        });
        debug!(dirs = ?self.watch.dirs(), every = ?every, "watching TLS certificate files");
    }
}

impl Supervised for TlsReloader {
    fn restarting(&mut self, _: &mut Self::Context) {
        warn!("TLS reloader restarting; it keeps the configuration it had");
        self.checking = false;
        self.watch.clear();
    }
}

impl Handler<FilesChanged> for TlsReloader {
    type Result = ();

    fn handle(&mut self, _: FilesChanged, ctx: &mut Context<Self>) {
        if self.checking {
            return;
        }
        self.checking = true;
        ctx.run_later(SETTLE, |act, ctx| {
            act.checking = false;
            ctx.spawn(act.check(false).map(|_, _, _| ()));
        });
    }
}

impl Handler<ReloadTls> for TlsReloader {
    type Result = ResponseActFuture<Self, Result<String, String>>;

    fn handle(&mut self, _: ReloadTls, _: &mut Context<Self>) -> Self::Result {
        info!("TLS reload requested");
        self.check(true)
    }
}
