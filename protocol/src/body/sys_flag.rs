//! Topic system flags (`TopicSysFlag`).

pub const UNIT: i32 = 1;
pub const UNIT_SUB: i32 = 2;
