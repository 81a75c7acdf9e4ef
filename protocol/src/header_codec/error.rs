//! What a header that cannot be decoded is.

/// A header that could not be decoded. Closes the connection (docs/protocol.md#malformed-input).
#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("bad JSON header: {0}")]
    Json(#[from] serde_json::Error),
    #[error("JSON header is not an object")]
    NotAnObject,
    #[error("JSON header is not UTF-8: {0}")]
    Utf8(#[from] std::str::Utf8Error),
    #[error("bad ROCKETMQ header: {0}")]
    Binary(&'static str),
    #[error("ROCKETMQ header declares {declared} bytes but its fields use {used}")]
    BinaryLength { declared: usize, used: usize },
}
