//! Bounds on what a request can make the server keep (docs/limits.md#what-requests-can-store).
//! Every string a request stores — names, addresses, check codes, KV keys and values,
//! configuration values — is bounded in bytes here, far above what RocketMQ's own components
//! send (names of at most a few hundred bytes, addresses `host:port`), and each table a request
//! can grow is bounded in entries and in bytes by its owner. A request past a bound is refused
//! with a remark naming the field and both lengths; nothing of it is kept.

/// Cluster, broker, topic and group names, KV namespaces and keys, configuration keys (Java's
/// longest real ones: topics of 127 characters, `%RETRY%` + a group of 255).
pub const MAX_NAME_BYTES: usize = 1024;
/// Broker addresses (`host:port`, a host name of at most 253 bytes) and check codes
/// (Java's `address;timestamp`).
pub const MAX_ADDRESS_BYTES: usize = 512;
/// A configuration value (a list of peers at most).
pub const MAX_SETTING_BYTES: usize = 4096;
/// A KV value (ORDER_TOPIC_CONFIG for 1,000 brokers is about 20 KB).
pub const MAX_KV_VALUE_BYTES: usize = 64 * 1024;

/// A string longer than its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} of {len} bytes exceeds {max}")]
pub struct TooLong {
    pub field: String,
    pub len: usize,
    pub max: usize,
}

/// Checks `value` of `field` against `max` bytes.
pub fn bounded(field: &str, value: &str, max: usize) -> Result<(), TooLong> {
    if value.len() > max {
        return Err(TooLong {
            field: field.to_owned(),
            len: value.len(),
            max,
        });
    }
    Ok(())
}

/// A name field (see [`MAX_NAME_BYTES`]).
pub fn name(field: &str, value: &str) -> Result<(), TooLong> {
    bounded(field, value, MAX_NAME_BYTES)
}

/// An address or check code field (see [`MAX_ADDRESS_BYTES`]).
pub fn address(field: &str, value: &str) -> Result<(), TooLong> {
    bounded(field, value, MAX_ADDRESS_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_at_its_bound_is_kept_one_byte_more_is_not() {
        assert!(name("brokerName", &"b".repeat(MAX_NAME_BYTES)).is_ok());
        let err = name("brokerName", &"b".repeat(MAX_NAME_BYTES + 1)).unwrap_err();
        assert_eq!(err.to_string(), "brokerName of 1025 bytes exceeds 1024");
        assert!(address("brokerAddr", "127.0.0.1:10911").is_ok());
    }
}
