//! Everything a start can fail on, done before any actor runs: the KV file, the ACL file, the
//! audit log, the listening sockets (remoting, controller, HTTP), the certificates and the
//! controller's state. A start that fails here has started nothing, so nothing is left to
//! stop (or to be dropped half-started when the System ends).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rmq_actors::access::accounts::{Accounts, AclFileError};
use rmq_actors::access::audit::AuditLog;
use rmq_actors::access::AccessControl;
use rmq_actors::kv::{KvError, KvSource};
use rmq_transport::server::{server_config, ServerTls, TlsError};
use rmq_transport::TlsMode;
use rustls::ClientConfig;
use tracing::info;

use crate::config::{expand_home, Config};
use crate::controller_port::{self, ControllerStartError};

/// Why a NameServer could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot use the listening socket: {0}")]
    Listener(#[source] std::io::Error),
    #[error(transparent)]
    Kv(#[from] KvError),
    #[error("TLS: {0}")]
    Tls(#[from] TlsError),
    #[error(transparent)]
    Acl(#[from] AclFileError),
    #[error("cannot open the audit log {path}: {source}")]
    Audit {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Controller(#[from] ControllerStartError),
    /// The `[etcd]` section cannot be used by the KV store's etcd backend.
    #[error("KV store: {0}")]
    KvEtcd(rmq_actors::settings::InvalidSetting),
    #[error("no actix System is running; start the NameServer from inside one")]
    NoSystem,
    #[error("cannot listen on {addr} (http.listen): {source}")]
    Http {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// What a start needs, checked and opened; no actor runs yet.
pub(super) struct Ready {
    pub config: Config,
    pub kv_source: KvSource,
    pub listener: tokio::net::TcpListener,
    pub local_addr: SocketAddr,
    pub controller: Option<controller_port::Prepared>,
    pub admitted: Admitted,
}

/// What every port's front door needs (a NameServer's and a standalone controller's alike):
/// accounts, access control, the audit log, certificates and the HTTP port's socket.
pub(super) struct Admitted {
    /// The ACL file, when there is one, and its accounts.
    pub acl_path: Option<PathBuf>,
    pub accounts: Arc<Accounts>,
    pub access: Arc<AccessControl>,
    pub audit: AuditLog,
    pub server_tls: Option<ServerTls>,
    /// TLS of the server's outbound calls (cluster-test lookups, notifications to brokers).
    pub client_tls: Option<Arc<ClientConfig>>,
    /// The HTTP port's socket and address, when `http.listen` is set.
    pub http: Option<(tokio::net::TcpListener, SocketAddr)>,
}

/// Checks and opens everything [`Ready`] holds (inside a running System: the sockets join its
/// runtime).
pub(super) fn check(config: Config, listener: std::net::TcpListener) -> Result<Ready, StartError> {
    // A corrupt KV file stops start-up before anything listens. (With the etcd backend nothing
    // is read here: the store starts without etcd and catches up.)
    let kv_source = KvSource::load(&config.kv)?;
    // Its TLS and user are read, and checked with etcd when set.
    let kv_source = match &kv_source {
        KvSource::Etcd {
            endpoints, prefix, ..
        } => {
            let security = config
                .etcd
                .load_checked("kv.etcd_endpoints", endpoints, prefix)
                .map_err(StartError::KvEtcd)?;
            kv_source.with_etcd_security(security)
        }
        KvSource::File { .. } => kv_source,
    };
    listener
        .set_nonblocking(true)
        .map_err(StartError::Listener)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(StartError::Listener)?;
    let local_addr = listener.local_addr().map_err(StartError::Listener)?;
    let mut admitted = admit(&config)?;
    let controller = controller_port::prepare(&config)?;
    admitted.http = bind_http(&config)?;
    Ok(Ready {
        config,
        kv_source,
        listener,
        local_addr,
        controller,
        admitted,
    })
}

/// Checks and opens what the front door needs, but the HTTP port's socket ([`bind_http`]).
pub(super) fn admit(config: &Config) -> Result<Admitted, StartError> {
    // An ACL file that does not parse stops start-up, and so does an audit log that cannot be
    // opened.
    let acl_path = (!config.access.acl_file.as_os_str().is_empty())
        .then(|| expand_home(&config.access.acl_file));
    let accounts = Arc::new(match &acl_path {
        Some(path) => Accounts::load(path)?,
        None => Accounts::default(),
    });
    let access = Arc::new(AccessControl::new(&config.access));
    let audit = open_audit_log(config)?;
    // A certificate that cannot be used stops start-up, naming its file.
    let server_tls = match config.tls.mode {
        TlsMode::Disabled => None,
        _ => server_config(&config.tls)?,
    };
    let client_tls = if config.tls.client.enable {
        Some(rmq_transport::client::client_config(&config.tls.client)?)
    } else {
        None
    };
    Ok(Admitted {
        acl_path,
        accounts,
        access,
        audit,
        server_tls,
        client_tls,
        http: None,
    })
}

/// Binds `http.listen`, when set.
pub(super) fn bind_http(
    config: &Config,
) -> Result<Option<(tokio::net::TcpListener, SocketAddr)>, StartError> {
    config.http.listen.map(bind_http_on).transpose()
}

fn bind_http_on(addr: SocketAddr) -> Result<(tokio::net::TcpListener, SocketAddr), StartError> {
    let http_error = |source| StartError::Http { addr, source };
    let bound = std::net::TcpListener::bind(addr).map_err(http_error)?;
    bound.set_nonblocking(true).map_err(http_error)?;
    let listener = tokio::net::TcpListener::from_std(bound).map_err(http_error)?;
    let local = listener.local_addr().map_err(http_error)?;
    Ok((listener, local))
}

/// The audit log: `access.audit_log`, else `audit.log` in `log.dir`, else the main log.
fn open_audit_log(config: &Config) -> Result<AuditLog, StartError> {
    let access = &config.access;
    let path = if !access.audit_log.as_os_str().is_empty() {
        Some(expand_home(&access.audit_log))
    } else {
        config.log.file_dir().map(|dir| dir.join(AUDIT_FILE_NAME))
    };
    let log = AuditLog::open(
        path.as_deref(),
        access.audit_max_file_size,
        access.audit_max_files,
    )
    .map_err(|source| StartError::Audit {
        path: path.clone().unwrap_or_default(),
        source,
    })?;
    if let Some(path) = &path {
        info!(path = %path.display(), "audit log");
    }
    Ok(log)
}

/// The audit file in `log.dir` when `access.audit_log` is empty.
pub const AUDIT_FILE_NAME: &str = "audit.log";
