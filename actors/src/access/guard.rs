//! `AccessGuard`: owns the accounts of `access.acl_file`, reloads them when the file changes
//! (file-system events on its directory, a periodic check, SIGHUP via [`ReloadAccounts`]) and
//! publishes each new snapshot to every connection thread's keeper and to the HTTP port. A file
//! that does not parse never replaces good accounts: the old ones stay, the reason is logged
//! (naming the file and the entry, never a secret), and the next change retries. Reading and
//! parsing run on the blocking pool.

use std::future::Future;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use tracing::{debug, info, warn};

use super::accounts::Accounts;
use super::ledger::FailureLedger;
use super::{
    check_basic, AccessClass, AccessControl, AccountsChanged, AttemptFailed, Client, Grant, Policy,
    Refusal, SourceBlocked,
};
use crate::file_watch::{fingerprint, DirWatch};

/// How long after a file-system event the file is read (editors write in steps).
const SETTLE: Duration = Duration::from_millis(200);

/// Reloads the ACL file now; answers what happened.
#[derive(Debug, Message)]
#[rtype(result = "Result<String, String>")]
pub struct ReloadAccounts;

/// The accounts in force (tests, the status page).
#[derive(Debug, Message)]
#[rtype(result = "Arc<Accounts>")]
pub struct CurrentAccounts;

/// Decides an HTTP request of a restricted class (the HTTP port's `status` and `probe`):
/// HTTP Basic credentials are an access key and its secret key.
#[derive(Debug, Message)]
#[rtype(result = "Result<Grant, Refusal>")]
pub struct CheckHttp {
    pub class: AccessClass,
    pub policy: Policy,
    pub client: Client,
    /// `(access key, secret key)` of an `Authorization: Basic` header.
    pub basic: Option<(String, String)>,
}

#[derive(Debug, Message)]
#[rtype(result = "()")]
struct FileChanged;

/// The ACL reload actor. See the module docs.
pub struct AccessGuard {
    path: PathBuf,
    accounts: Arc<Accounts>,
    fingerprint: u64,
    subscribers: Vec<Recipient<AccountsChanged>>,
    /// Told every source or prefix that used up its attempts (each connection thread).
    block_subscribers: Vec<Recipient<SourceBlocked>>,
    watch: DirWatch,
    check_every: Duration,
    checking: bool,
    /// Failed attempts server-wide: HTTP credential checks, and the signature checks every
    /// connection thread reports.
    failures: FailureLedger,
}

/// Who hears of the guard's new accounts and blocks: each connection thread's keeper.
pub struct GuardSubscribers {
    pub accounts: Vec<Recipient<AccountsChanged>>,
    pub blocks: Vec<Recipient<SourceBlocked>>,
}

impl AccessGuard {
    /// Guards `path`, whose accounts were loaded as `accounts` at start; `subscribers` get every
    /// new snapshot and every block.
    pub fn new(
        path: PathBuf,
        accounts: Arc<Accounts>,
        subscribers: GuardSubscribers,
        control: &AccessControl,
        check_every: Duration,
    ) -> Self {
        Self {
            fingerprint: fingerprint(std::slice::from_ref(&path)),
            path,
            accounts,
            subscribers: subscribers.accounts,
            block_subscribers: subscribers.blocks,
            watch: DirWatch::default(),
            check_every,
            checking: false,
            failures: FailureLedger::new(control.max_failures, control.failure_window),
        }
    }

    /// Counts a failed attempt server-wide; a source or prefix that used up its attempts is
    /// announced to every connection thread. Answers when every thread has applied the
    /// announcements (already sent, whether or not it is awaited).
    fn count_failure(&mut self, ip: IpAddr, now: Instant) -> impl Future<Output = ()> + 'static {
        let mut applied = Vec::new();
        for block in self.failures.failed(ip, now) {
            info!(counted = ?block.counted, "failed attempts used up: signed requests refused unchecked for the rest of the window");
            for subscriber in &self.block_subscribers {
                applied.push(subscriber.send(SourceBlocked { block }));
            }
        }
        async move {
            for announced in applied {
                // A thread that is gone has no connections left to check.
                let _ = announced.await;
            }
        }
    }

    fn check(&mut self, force: bool) -> ResponseActFuture<Self, Result<String, String>> {
        if self.checking && !force {
            return Box::pin(actix::fut::ready(Ok(
                "a check is already running".to_owned()
            )));
        }
        self.checking = true;
        let path = self.path.clone();
        let previous = self.fingerprint;
        let job = crate::background::spawn(move || {
            let now = fingerprint(std::slice::from_ref(&path));
            if now == previous && !force {
                return (now, None);
            }
            (now, Some(Accounts::load(&path).map_err(|e| e.to_string())))
        });
        Box::pin(job.into_actor(self).map(|joined, act, _| {
            act.checking = false;
            let (now, loaded) = match joined {
                Ok(outcome) => outcome,
                Err(err) => return Err(format!("ACL reload task failed: {err}")),
            };
            act.fingerprint = now;
            match loaded {
                None => Ok("ACL file unchanged".to_owned()),
                Some(Err(reason)) => {
                    warn!(error = %reason, "ACL file not reloaded; the accounts in force stay until the next change");
                    Err(reason)
                }
                Some(Ok(accounts)) => {
                    let accounts = Arc::new(accounts);
                    describe(&accounts, "reloaded");
                    for subscriber in &act.subscribers {
                        subscriber.do_send(AccountsChanged {
                            accounts: Arc::clone(&accounts),
                        });
                    }
                    act.accounts = accounts;
                    Ok(format!(
                        "ACL file reloaded: {} accounts",
                        act.accounts.by_key.len()
                    ))
                }
            }
        }))
    }
}

/// Logs what a snapshot grants: counts, and each RocketMQ white address (a bypass of the
/// signature check), one line each.
pub fn describe(accounts: &Accounts, what: &str) {
    let admins = accounts.by_key.values().filter(|a| a.admin).count();
    info!(
        accounts = accounts.by_key.len(),
        admins,
        global_white = accounts.global_white.len(),
        "ACL accounts {what}"
    );
    for (pattern, _) in &accounts.global_white {
        info!(%pattern, "globalWhiteRemoteAddresses: clients from here need no signature for signed classes");
    }
    let mut keyed: Vec<_> = accounts
        .by_key
        .iter()
        .filter(|(_, a)| a.white != super::patterns::AddressPattern::Nothing)
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(b.0));
    for (access_key, account) in keyed {
        info!(%access_key, pattern = ?account.white, "whiteRemoteAddress: this account's requests from here need no signature");
    }
}

impl Actor for AccessGuard {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let addr = ctx.address();
        self.watch
            .watch(std::slice::from_ref(&self.path), "ACL file", move || {
                addr.do_send(FileChanged)
            });
        ctx.run_interval(self.check_every, |act, ctx| {
            if !act.checking {
                ctx.spawn(act.check(false).map(|_, _, _| ()));
            }
        });
        debug!(path = %self.path.display(), every = ?self.check_every, "watching the ACL file");
    }
}

impl Supervised for AccessGuard {
    fn restarting(&mut self, _: &mut Self::Context) {
        warn!("ACL guard restarting; it keeps the accounts it had");
        self.checking = false;
        self.watch.clear();
    }
}

impl Handler<FileChanged> for AccessGuard {
    type Result = ();

    fn handle(&mut self, _: FileChanged, ctx: &mut Context<Self>) {
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

impl Handler<ReloadAccounts> for AccessGuard {
    type Result = ResponseActFuture<Self, Result<String, String>>;

    fn handle(&mut self, _: ReloadAccounts, _: &mut Context<Self>) -> Self::Result {
        info!("ACL reload requested");
        self.check(true)
    }
}

impl Handler<CurrentAccounts> for AccessGuard {
    type Result = MessageResult<CurrentAccounts>;

    fn handle(&mut self, _: CurrentAccounts, _: &mut Context<Self>) -> Self::Result {
        MessageResult(Arc::clone(&self.accounts))
    }
}

impl Handler<CheckHttp> for AccessGuard {
    type Result = Result<Grant, Refusal>;

    fn handle(&mut self, msg: CheckHttp, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        let ip = msg.client.ip;
        let blocked = self.failures.blocked(ip, now);
        let basic = msg.basic.as_ref().map(|(k, s)| (k.as_str(), s.as_str()));
        let decided = check_basic(
            &msg.policy,
            msg.class,
            &self.accounts,
            msg.client,
            basic,
            blocked,
        );
        if let Err(refusal) = decided {
            if refusal.is_failed_attempt() {
                // Each thread applies it before its next message; the HTTP answer need not wait.
                drop(self.count_failure(ip, now));
            }
        }
        decided
    }
}

/// Answered once the attempt is counted and any block it caused is applied on every
/// connection thread: a guess's refusal waits for it, so that the next guess, on any
/// connection or thread, already meets the block.
impl Handler<AttemptFailed> for AccessGuard {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, msg: AttemptFailed, _: &mut Context<Self>) -> Self::Result {
        Box::pin(self.count_failure(msg.ip, msg.at))
    }
}
