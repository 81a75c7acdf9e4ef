//! Logging: tracing events (and actix's `log` records, through tracing-log) to stderr, or to
//! `rmq-namesrv.log` in `log.dir` rotated daily and by size with `log.max_files` kept (as Java's
//! logback setup does), as text or JSON lines.

use std::io::IsTerminal;
use std::path::PathBuf;

use rmq_namesrv::config::{LogConfig, LogFormat};
use tracing::Subscriber;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The current log file in `log.dir`; rotated copies are `rmq-namesrv.log.1` (the newest) on.
pub const FILE_NAME: &str = "rmq-namesrv.log";

/// Logging that cannot start; the daemon exits with it.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("cannot create log.dir {path}: {source}")]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open log file {path}: {source}")]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot install the logger: {0}")]
    Install(String),
}

/// Keeps the file writer's thread running; dropping it (at the end of `main`) writes the lines
/// still queued.
#[must_use = "dropping the guard stops the file writer"]
pub struct LogGuard {
    _writer: Option<WorkerGuard>,
}

/// Installs the process-wide subscriber. `RUST_LOG`, when set and valid, wins over `log.level`.
pub fn init(config: &LogConfig) -> Result<LogGuard, LogError> {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&config.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let base = Registry::default().with(filter);
    let (layer, writer) = match config.file_dir() {
        None => {
            // Colour codes only for a person at a terminal: never in a pipe, a journal or a file.
            let ansi = config.format == LogFormat::Text
                && std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            // Synchronous: a line is out before the next statement (and before a panic message).
            (format_layer(config.format, ansi, std::io::stderr), None)
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|source| LogError::Dir {
                path: dir.clone(),
                source,
            })?;
            let path = dir.join(FILE_NAME);
            // A background thread writes; at 128,000 queued lines (a stalled disk) new lines
            // are dropped rather than stall the actors.
            let (writer, guard) = rmq_actors::logging::rotating_file(
                &path,
                config.max_file_size,
                config.max_files,
                "rmq-log-writer",
            )
            .map_err(|source| LogError::File { path, source })?;
            (format_layer(config.format, false, writer), Some(guard))
        }
    };
    tracing::subscriber::set_global_default(base.with(layer))
        .map_err(|err| LogError::Install(err.to_string()))?;
    // actix logs through `log`; a second logger (an embedding test harness) is not ours to replace.
    let _ = tracing_log::LogTracer::init();
    Ok(LogGuard { _writer: writer })
}

/// The fmt layer of `format` over `writer`.
fn format_layer<S, W>(format: LogFormat, ansi: bool, writer: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => layer.boxed(),
        LogFormat::Json => layer.json().boxed(),
    }
}
