//! What a body that cannot be decoded is.

/// A body that cannot be decoded; answered with SYSTEM_ERROR.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("bad JSON body: {0}")]
    Json(#[from] serde_json::Error),
    #[error("Failed to decode RegisterBrokerBody: {0}")]
    Compressed(String),
}
