//! Access control (docs/access.md): which request classes a client may send, by source network
//! and by RocketMQ signature, and the audit of what changed.
//!
//! - [`AccessClass`] sorts request codes (and the HTTP port's paths) into classes; each class
//!   has a [`Policy`] fixed at start ([`settings::AccessSettings`]).
//! - The accounts of the ACL file ([`accounts::Accounts`]) are an immutable snapshot, owned and
//!   reloaded by the [`guard::AccessGuard`] actor and published to every connection thread.
//! - [`check`] decides one request on the connection's thread: pure, given the policy, the
//!   snapshot, the client's address and the request. Failed signature checks are counted per
//!   source and prefix on that thread and server-wide by the guard, which announces a source
//!   that used up its attempts to every thread ([`ledger::FailureLedger`]).
//! - [`audit::AuditLog`] writes admin writes and route-changing registrations as JSON lines.

pub mod accounts;
pub mod audit;
pub mod guard;
pub mod ledger;
pub mod patterns;
pub mod settings;

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

use ipnet::IpNet;
use rmq_protocol::signature::{self, SignatureError, ACCESS_KEY};
use rmq_protocol::{RemotingCommand, ResponseCode};

use crate::route_cache::{CacheId, RouteCacheKeeper};
pub use accounts::Accounts;
use ledger::{Block, FailureLedger};
pub use rmq_transport::front_door::Security;
use tracing::warn;

/// The classes of requests a policy applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccessClass {
    /// Broker traffic: REGISTER_BROKER, UNREGISTER_BROKER, BROKER_HEARTBEAT,
    /// QUERY_DATA_VERSION.
    Broker,
    /// Routes, cluster info, member groups, topic lists, KV reads.
    Read,
    /// GET_NAMESRV_CONFIG.
    AdminRead,
    /// Every change an operator makes.
    AdminWrite,
    /// HTTP: the status page and its JSON.
    Status,
    /// HTTP: metrics, health, readiness, the address server.
    Probe,
}

impl AccessClass {
    pub const COUNT: usize = 6;
    pub const ALL: [AccessClass; Self::COUNT] = [
        AccessClass::Broker,
        AccessClass::Read,
        AccessClass::AdminRead,
        AccessClass::AdminWrite,
        AccessClass::Status,
        AccessClass::Probe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AccessClass::Broker => "broker",
            AccessClass::Read => "read",
            AccessClass::AdminRead => "admin_read",
            AccessClass::AdminWrite => "admin_write",
            AccessClass::Status => "status",
            AccessClass::Probe => "probe",
        }
    }

    /// The configuration key of the class's networks, for errors.
    pub fn networks_key(self) -> &'static str {
        match self {
            AccessClass::Broker => "access.broker.networks",
            AccessClass::Read => "access.read.networks",
            AccessClass::AdminRead => "access.admin_read.networks",
            AccessClass::AdminWrite => "access.admin_write.networks",
            AccessClass::Status => "access.status.networks",
            AccessClass::Probe => "access.probe.networks",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// Admin classes need an admin account (4.x `admin: true`, ACL 2.0 `Super`).
    pub fn needs_admin(self) -> bool {
        matches!(
            self,
            AccessClass::AdminRead | AccessClass::AdminWrite | AccessClass::Status
        )
    }
}

/// What one class requires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Allowed source networks; `None`: any.
    pub networks: Option<Vec<IpNet>>,
    /// A valid signature (or a white-listed address) is needed.
    pub signed: bool,
    /// Only over TLS (`access.signed_needs_tls`, for signed classes).
    pub needs_tls: bool,
    /// Only over TLS with a verified client certificate
    /// (`access.admin_write_needs_client_cert`).
    pub needs_client_cert: bool,
}

impl Policy {
    pub fn is_open(&self) -> bool {
        self.networks.is_none() && !self.signed && !self.needs_tls && !self.needs_client_cert
    }
}

/// Who sends a request: the client's address (the PROXY header's, when a trusted balancer
/// sends one) and how its connection travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    pub ip: IpAddr,
    pub security: Security,
}

/// The policies of every class, fixed at start; cheap to ask on every request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policies {
    by_class: [Policy; AccessClass::COUNT],
    all_open: bool,
}

impl Policies {
    pub fn new(by_class: [Policy; AccessClass::COUNT]) -> Self {
        let all_open = by_class.iter().all(Policy::is_open);
        Self { by_class, all_open }
    }

    /// Everything open: Java's NameServer.
    pub fn open() -> Self {
        Self::new(Default::default())
    }

    pub fn of(&self, class: AccessClass) -> &Policy {
        &self.by_class[class.index()]
    }

    /// No class restricted: nothing to check.
    pub fn all_open(&self) -> bool {
        self.all_open
    }
}

/// Access control as configured at start: the policies and the failed-attempt limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessControl {
    pub policies: Policies,
    /// Failed signature checks a source may make per `failure_window`, server-wide.
    pub max_failures: u32,
    pub failure_window: std::time::Duration,
}

impl AccessControl {
    pub fn new(settings: &settings::AccessSettings) -> Self {
        Self {
            policies: Policies::new(settings.policies()),
            max_failures: settings.max_failures,
            failure_window: settings.failure_window,
        }
    }

    /// Everything open (Java's NameServer).
    pub fn open() -> Self {
        Self::new(&settings::AccessSettings::default())
    }
}

/// Why a request was refused; the remark says what was missing, never how a signature
/// differed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    AddressNotAllowed,
    NoSignature,
    UnknownAccessKey,
    BadSignature,
    NotAdmin,
    Disabled,
    TooManyFailures,
    /// A class that is accepted over TLS only, over plaintext.
    NeedsTls,
    /// A class that needs a verified client certificate, without one.
    NeedsClientCert,
}

impl Refusal {
    /// The label of the refusal in metrics and logs.
    pub fn name(self) -> &'static str {
        match self {
            Refusal::AddressNotAllowed => "address_not_allowed",
            Refusal::NoSignature => "no_signature",
            Refusal::UnknownAccessKey => "unknown_access_key",
            Refusal::BadSignature => "bad_signature",
            Refusal::NotAdmin => "not_admin",
            Refusal::Disabled => "disabled",
            Refusal::TooManyFailures => "too_many_failures",
            Refusal::NeedsTls => "needs_tls",
            Refusal::NeedsClientCert => "needs_client_cert",
        }
    }

    pub const ALL: [Refusal; 9] = [
        Refusal::AddressNotAllowed,
        Refusal::NoSignature,
        Refusal::UnknownAccessKey,
        Refusal::BadSignature,
        Refusal::NotAdmin,
        Refusal::Disabled,
        Refusal::TooManyFailures,
        Refusal::NeedsTls,
        Refusal::NeedsClientCert,
    ];

    /// Whether it counts as a failed attempt toward the per-source limit (a guessed key or
    /// secret; not a missing signature or a request of the wrong class).
    pub fn is_failed_attempt(self) -> bool {
        matches!(self, Refusal::UnknownAccessKey | Refusal::BadSignature)
    }

    /// The remark of the NO_PERMISSION answer.
    pub fn remark(self, class: AccessClass, ip: IpAddr) -> String {
        let class = class.name();
        match self {
            Refusal::AddressNotAllowed => {
                format!("[access] address not allowed: {ip} may not send {class} requests")
            }
            Refusal::NoSignature => format!(
                "[access] no signature: {class} requests must be signed (AccessKey and Signature)"
            ),
            Refusal::UnknownAccessKey => "[access] unknown access key".to_owned(),
            Refusal::BadSignature => "[access] bad signature".to_owned(),
            Refusal::NotAdmin => {
                format!("[access] {class} requests need an admin account")
            }
            Refusal::Disabled => "[access] account disabled".to_owned(),
            Refusal::TooManyFailures => format!(
                "[access] too many failed attempts from {ip}; signed requests refused for a while"
            ),
            Refusal::NeedsTls => format!(
                "[access] {class} requests are accepted over TLS only (access.signed_needs_tls)"
            ),
            Refusal::NeedsClientCert => format!(
                "[access] {class} requests need TLS with a client certificate (access.admin_write_needs_client_cert)"
            ),
        }
    }

    /// The NO_PERMISSION answer.
    pub fn response(self, class: AccessClass, ip: IpAddr) -> RemotingCommand {
        RemotingCommand::response(ResponseCode::NO_PERMISSION, Some(self.remark(class, ip)))
    }
}

/// How a request got in: who signed it, if anyone.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    /// The access key of a verified signature, or of an account white-listed for the address.
    pub access_key: Option<String>,
}

/// Decides one request of `class` from `client` (see docs/access.md#deciding-a-request):
/// networks first, then the transport a class may need, then RocketMQ's order: global white
/// addresses, the access key, the account's white address, the signature, the admin flag.
/// `blocked` says whether the source has used up its failed attempts.
pub fn check(
    policy: &Policy,
    class: AccessClass,
    accounts: &Accounts,
    client: Client,
    cmd: &RemotingCommand,
    blocked: bool,
) -> Result<Grant, Refusal> {
    decide(
        policy,
        class,
        accounts,
        client,
        cmd.ext(ACCESS_KEY),
        blocked,
        |secret| match signature::verify_command(cmd, secret) {
            Ok(()) => Ok(()),
            Err(SignatureError::Missing) => Err(Refusal::NoSignature),
            Err(SignatureError::Mismatch | SignatureError::TooManyFields) => {
                Err(Refusal::BadSignature)
            }
        },
    )
}

/// HTTP Basic credentials (`access key : secret key`) against the accounts, for the HTTP port's
/// signed classes (its TLS keeps the secret confidential).
pub fn check_basic(
    policy: &Policy,
    class: AccessClass,
    accounts: &Accounts,
    client: Client,
    basic: Option<(&str, &str)>,
    blocked: bool,
) -> Result<Grant, Refusal> {
    let (access_key, given) = basic.unzip();
    decide(
        policy,
        class,
        accounts,
        client,
        access_key,
        blocked,
        |secret| {
            if given.is_some_and(|given| constant_time_eq(given, secret)) {
                Ok(())
            } else {
                Err(Refusal::BadSignature)
            }
        },
    )
}

/// The steps every request takes (see [`check`]); `prove` checks the proof of the secret.
fn decide(
    policy: &Policy,
    class: AccessClass,
    accounts: &Accounts,
    client: Client,
    access_key: Option<&str>,
    blocked: bool,
    prove: impl FnOnce(&str) -> Result<(), Refusal>,
) -> Result<Grant, Refusal> {
    let ip = patterns::canonical(client.ip);
    if let Some(networks) = &policy.networks {
        if !networks.iter().any(|net| net.contains(&ip)) {
            return Err(Refusal::AddressNotAllowed);
        }
    }
    if policy.needs_tls && !client.security.tls {
        return Err(Refusal::NeedsTls);
    }
    if policy.needs_client_cert && !(client.security.tls && client.security.client_certificate) {
        return Err(Refusal::NeedsClientCert);
    }
    if !policy.signed || accounts.globally_white(ip) {
        return Ok(Grant::default());
    }
    let Some(access_key) = access_key else {
        return Err(Refusal::NoSignature);
    };
    if blocked {
        return Err(Refusal::TooManyFailures);
    }
    let account = accounts.get(access_key).ok_or(Refusal::UnknownAccessKey)?;
    if !account.enabled {
        return Err(Refusal::Disabled);
    }
    if !account.white.matches(ip) {
        prove(account.secret.expose())?;
    }
    if class.needs_admin() && !account.admin {
        return Err(Refusal::NotAdmin);
    }
    Ok(Grant {
        access_key: Some(access_key.to_owned()),
    })
}

/// Compares two secrets without stopping at the first difference.
fn constant_time_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// Announces a new snapshot of the accounts to a thread's keeper.
#[derive(Debug, Clone, actix::Message)]
#[rtype(result = "()")]
pub struct AccountsChanged {
    pub accounts: Arc<Accounts>,
}

/// A failed attempt (unknown access key, bad signature) counted on a connection thread, for the
/// server-wide ledger of the `AccessGuard`.
#[derive(Debug, Clone, Copy, actix::Message)]
#[rtype(result = "()")]
pub struct AttemptFailed {
    pub ip: IpAddr,
    pub at: Instant,
}

/// A source or prefix that used up its attempts server-wide, for every connection thread.
#[derive(Debug, Clone, Copy, actix::Message)]
#[rtype(result = "()")]
pub struct SourceBlocked {
    pub block: Block,
}

/// The route cache keeper of a connection thread also keeps the thread's accounts snapshot
/// and failed-attempt ledger (the daemon installs both as it starts the keeper, on the
/// keeper's thread).
impl actix::Handler<AccountsChanged> for RouteCacheKeeper {
    type Result = ();

    fn handle(&mut self, msg: AccountsChanged, _: &mut actix::Context<Self>) {
        publish_on_this_thread(self.id, msg.accounts);
    }
}

impl actix::Handler<SourceBlocked> for RouteCacheKeeper {
    type Result = ();

    fn handle(&mut self, msg: SourceBlocked, _: &mut actix::Context<Self>) {
        let id = self.id;
        THREAD.with(|all| {
            if let Some(state) = all.borrow_mut().get_mut(&id) {
                state.failures.block(msg.block, Instant::now());
            }
        });
    }
}

/// One NameServer's access state on one connection thread.
struct ThreadAccess {
    accounts: Arc<Accounts>,
    failures: FailureLedger,
}

thread_local! {
    /// Each NameServer's access state on this thread, installed by the thread's keeper; it
    /// outlives the thread's connections.
    static THREAD: RefCell<HashMap<CacheId, ThreadAccess>> = RefCell::new(HashMap::new());
}

/// Installs NameServer `id`'s access state on this thread: its accounts, and an empty ledger
/// of `control`'s limit.
pub fn install_on_this_thread(id: CacheId, accounts: Arc<Accounts>, control: &AccessControl) {
    THREAD.with(|all| {
        all.borrow_mut().insert(
            id,
            ThreadAccess {
                accounts,
                failures: FailureLedger::new(control.max_failures, control.failure_window),
            },
        );
    });
}

/// Makes `accounts` the current snapshot of NameServer `id` on this thread.
pub fn publish_on_this_thread(id: CacheId, accounts: Arc<Accounts>) {
    THREAD.with(|all| match all.borrow_mut().get_mut(&id) {
        Some(state) => state.accounts = accounts,
        None => {
            warn!("accounts published on a thread without the server's access state");
        }
    });
}

/// The current accounts of NameServer `id` on this thread (none: no accounts, so every
/// signature check fails).
pub fn accounts_on_this_thread(id: CacheId) -> Arc<Accounts> {
    THREAD.with(|all| {
        all.borrow()
            .get(&id)
            .map(|state| Arc::clone(&state.accounts))
            .unwrap_or_default()
    })
}

/// Runs `f` on NameServer `id`'s failed-attempt ledger of this thread (made with `control`'s
/// limit if the thread has none yet).
pub fn failures_on_this_thread<R>(
    id: CacheId,
    control: &AccessControl,
    f: impl FnOnce(&mut FailureLedger) -> R,
) -> R {
    THREAD.with(|all| {
        let mut all = all.borrow_mut();
        let state = all.entry(id).or_insert_with(|| ThreadAccess {
            accounts: Arc::default(),
            failures: FailureLedger::new(control.max_failures, control.failure_window),
        });
        f(&mut state.failures)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use accounts::Account;
    use patterns::AddressPattern;
    use rmq_protocol::RequestCode;
    use rmq_transport::Secret;

    fn accounts() -> Accounts {
        let mut accounts = Accounts::parse(
            "globalWhiteRemoteAddresses: ['10.9.*.*']\naccounts:\n  - accessKey: admin1\n    secretKey: adminsecret\n    admin: true\n  - accessKey: user1\n    secretKey: usersecret\n    whiteRemoteAddress: 10.1.1.1\n",
        )
        .unwrap();
        accounts.by_key.insert(
            "off".into(),
            Account {
                secret: Secret::new("offsecret"),
                admin: true,
                enabled: false,
                white: AddressPattern::Nothing,
            },
        );
        accounts
    }

    fn signed(ak: &str, sk: &str) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER)
            .with_ext("brokerName", "broker-a");
        signature::sign_command(&mut cmd, ak, sk, None).unwrap();
        cmd
    }

    fn ip(text: &str) -> Client {
        Client {
            ip: text.parse().unwrap(),
            security: Security::default(),
        }
    }

    const SIGNED: Policy = Policy {
        networks: None,
        signed: true,
        needs_tls: false,
        needs_client_cert: false,
    };

    #[test]
    fn signed_admin_writes_need_an_admin_s_valid_signature() {
        let a = accounts();
        let w = AccessClass::AdminWrite;
        let from = ip("192.0.2.1");
        let ok = check(
            &SIGNED,
            w,
            &a,
            from,
            &signed("admin1", "adminsecret"),
            false,
        );
        assert_eq!(ok.unwrap().access_key.as_deref(), Some("admin1"));
        let unsigned = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER);
        assert_eq!(
            check(&SIGNED, w, &a, from, &unsigned, false),
            Err(Refusal::NoSignature)
        );
        let wrong = signed("admin1", "guess");
        assert_eq!(
            check(&SIGNED, w, &a, from, &wrong, false),
            Err(Refusal::BadSignature)
        );
        let unknown = signed("nobody", "x");
        assert_eq!(
            check(&SIGNED, w, &a, from, &unknown, false),
            Err(Refusal::UnknownAccessKey)
        );
        let user = signed("user1", "usersecret");
        assert_eq!(
            check(&SIGNED, w, &a, from, &user, false),
            Err(Refusal::NotAdmin)
        );
        assert!(check(&SIGNED, AccessClass::Read, &a, from, &user, false).is_ok());
        let off = signed("off", "offsecret");
        assert_eq!(
            check(&SIGNED, w, &a, from, &off, false),
            Err(Refusal::Disabled)
        );
        let ok = signed("admin1", "adminsecret");
        assert_eq!(
            check(&SIGNED, w, &a, from, &ok, true),
            Err(Refusal::TooManyFailures)
        );
    }

    #[test]
    fn a_signature_replayed_over_another_body_fails() {
        let a = accounts();
        let replayed = signed("admin1", "adminsecret").with_body(&b"other"[..]);
        assert_eq!(
            check(
                &SIGNED,
                AccessClass::AdminWrite,
                &a,
                ip("192.0.2.1"),
                &replayed,
                false
            ),
            Err(Refusal::BadSignature)
        );
    }

    #[test]
    fn white_addresses_are_rocketmq_s_bypasses_and_networks_stay_separate() {
        let a = accounts();
        let unsigned = RemotingCommand::request(RequestCode::WIPE_WRITE_PERM_OF_BROKER);
        // A globally white address needs no signature at all.
        assert!(check(
            &SIGNED,
            AccessClass::AdminWrite,
            &a,
            ip("10.9.3.4"),
            &unsigned,
            false
        )
        .is_ok());
        // An account's white address skips its signature, not its admin check.
        let mut keyed = unsigned.clone().with_ext(ACCESS_KEY, "user1");
        assert!(check(
            &SIGNED,
            AccessClass::Read,
            &a,
            ip("10.1.1.1"),
            &keyed,
            false
        )
        .is_ok());
        assert_eq!(
            check(
                &SIGNED,
                AccessClass::AdminWrite,
                &a,
                ip("10.1.1.1"),
                &keyed,
                false
            ),
            Err(Refusal::NotAdmin)
        );
        keyed = keyed.with_ext("x", "y");
        assert_eq!(
            check(
                &SIGNED,
                AccessClass::Read,
                &a,
                ip("10.1.1.2"),
                &keyed,
                false
            ),
            Err(Refusal::NoSignature)
        );
        // Networks apply before any bypass.
        let fenced = Policy {
            networks: Some(vec!["192.0.2.0/24".parse().unwrap()]),
            signed: true,
            ..Policy::default()
        };
        assert_eq!(
            check(
                &fenced,
                AccessClass::AdminWrite,
                &a,
                ip("10.9.3.4"),
                &unsigned,
                false
            ),
            Err(Refusal::AddressNotAllowed)
        );
        let ok = signed("admin1", "adminsecret");
        assert!(check(
            &fenced,
            AccessClass::AdminWrite,
            &a,
            ip("::ffff:192.0.2.9"),
            &ok,
            false
        )
        .is_ok());
    }

    #[test]
    fn basic_credentials_check_like_signatures() {
        let a = accounts();
        let p = &SIGNED;
        let c = AccessClass::Status;
        let from = ip("192.0.2.1");
        assert!(check_basic(p, c, &a, from, Some(("admin1", "adminsecret")), false).is_ok());
        assert_eq!(
            check_basic(p, c, &a, from, Some(("admin1", "adminsecreT")), false),
            Err(Refusal::BadSignature)
        );
        assert_eq!(
            check_basic(p, c, &a, from, None, false),
            Err(Refusal::NoSignature)
        );
        assert_eq!(
            check_basic(p, c, &a, from, Some(("user1", "usersecret")), false),
            Err(Refusal::NotAdmin)
        );
        assert!(constant_time_eq("abc", "abc") && !constant_time_eq("abc", "abcd"));
    }
}
