//! Log capture: the server's tracing output goes to a buffer that tests can search.

use std::sync::{Mutex, Once};

static CAPTURED: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// Capture stops growing here (the cases that look at logs run early enough to fit).
const CAP: usize = 256 << 20;

struct Sink;

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut all = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() + buf.len() <= CAP {
            all.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Installs the capturing subscriber (info level) once for this test binary.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_ansi(false)
            .with_writer(|| Sink)
            .try_init();
    });
}

/// The captured lines containing `needle`.
pub fn lines_with(needle: &str) -> Vec<String> {
    let all = CAPTURED.lock().unwrap_or_else(|e| e.into_inner());
    String::from_utf8_lossy(&all)
        .lines()
        .filter(|line| line.contains(needle))
        .map(str::to_owned)
        .collect()
}

/// No log line carries a 64 KiB piece of `text` (a multi-megabyte string from a request).
pub(crate) fn assert_not_logged_whole(case: &str, text: &str) {
    let piece = &text[..64 * 1024];
    let lines = lines_with(piece);
    assert!(
        lines.is_empty(),
        "{case}: {} log line(s) carry the {} bytes sent, the longest {} bytes",
        lines.len(),
        text.len(),
        lines.iter().map(String::len).max().unwrap_or(0)
    );
}
