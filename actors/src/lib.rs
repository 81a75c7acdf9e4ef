//! The rmq-namesrv actor system and the state it owns.
pub mod route;
