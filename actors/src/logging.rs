//! Request data in log lines: clipped to a few hundred bytes with its length, so that a 10 MB
//! KV value or remark never lands whole in a log.

use std::fmt;

/// Bytes of request data a log line shows.
pub const CLIP_BYTES: usize = 256;

/// Displays at most [`CLIP_BYTES`] of a string, then `… (N bytes)`.
#[derive(Debug, Clone, Copy)]
pub struct Clipped<'a>(pub &'a str);

impl fmt::Display for Clipped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        if text.len() <= CLIP_BYTES {
            return write!(f, "{text:?}");
        }
        let mut end = CLIP_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        write!(f, "{:?}… ({} bytes)", &text[..end], text.len())
    }
}

/// [`Clipped`] for an optional string (`None` shows as `-`).
#[derive(Debug, Clone, Copy)]
pub struct ClippedOpt<'a>(pub Option<&'a str>);

impl fmt::Display for ClippedOpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(text) => Clipped(text).fmt(f),
            None => f.write_str("-"),
        }
    }
}

/// A writer to `path` rotated daily and at `max_file_size` bytes, `max_files` files kept (the
/// current one included; rotated copies are `path.1`, the newest, on), written by a background
/// thread named `thread` so that a slow disk never stalls an actor. At 128,000 queued lines new
/// lines are dropped. The guard writes what is queued when dropped.
pub fn rotating_file(
    path: &std::path::Path,
    max_file_size: u64,
    max_files: usize,
    thread: &str,
) -> std::io::Result<(
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let condition = rolling_file::RollingConditionBasic::new()
        .daily()
        .max_size(max_file_size);
    // rolling-file counts the rotated files only.
    let rotated = max_files.saturating_sub(1).max(1);
    let appender = rolling_file::BasicRollingFileAppender::new(path, condition, rotated)?;
    Ok(
        tracing_appender::non_blocking::NonBlockingBuilder::default()
            .thread_name(thread)
            .finish(appender),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_shown_whole_long_text_clipped_with_its_length() {
        assert_eq!(Clipped("abc").to_string(), "\"abc\"");
        let long = "é".repeat(10_000);
        let shown = Clipped(&long).to_string();
        assert!(shown.len() < CLIP_BYTES + 40, "{shown}");
        assert!(shown.ends_with("… (20000 bytes)"), "{shown}");
        assert_eq!(ClippedOpt(None).to_string(), "-");
    }
}
