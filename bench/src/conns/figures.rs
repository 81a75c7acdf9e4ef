//! The run's figures: failures counted by kind, RSS growth per connection, and their text and
//! JSON forms.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::stats::{mib, Memory};

pub(super) fn memory_value(mem: Option<Memory>) -> Value {
    json!({
        "rss_kib": mem.map(|m| m.rss_kib),
        "hwm_kib": mem.map(|m| m.hwm_kib),
    })
}

/// Bytes per connection of an RSS growth in KiB (negative when RSS fell).
pub(super) fn per_connection(
    before: Option<u64>,
    after: Option<u64>,
    connections: usize,
) -> Option<f64> {
    let (before, after) = (before?, after?);
    (connections > 0).then(|| {
        let bytes = (after as f64 - before as f64) * 1024.0 / connections as f64;
        bytes.round()
    })
}

pub(super) fn bytes_text(bytes: Option<f64>) -> String {
    bytes.map_or("?".into(), |b| format!("{b:.0} B = {:.2} KiB", b / 1024.0))
}

pub(super) fn cores_text(cpu: &Value, key: &str) -> String {
    cpu[key].as_f64().map_or("?".into(), |c| format!("{c:.2}"))
}

pub(super) fn rss(mem: Option<Memory>) -> String {
    mem.map_or_else(|| "?".into(), |m| mib(m.rss_kib))
}

pub(super) fn count(map: &mut BTreeMap<String, u64>, key: String) {
    *map.entry(key).or_default() += 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_connection() {
        assert_eq!(per_connection(Some(1000), Some(2000), 1024), Some(1000.0));
        assert_eq!(per_connection(Some(2000), Some(1000), 1024), Some(-1000.0));
        assert_eq!(per_connection(Some(1000), None, 10), None);
        assert_eq!(per_connection(Some(1000), Some(1000), 0), None);
    }
}
