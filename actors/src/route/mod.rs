//! Route state and its rules, with no actix and no I/O: the RouteRegistry actor owns a
//! [`RouteTables`] and calls it from its handlers; time is always passed in. The rules are
//! described in docs/route-rules.md.

mod changes;
mod ids;
mod liveness;
mod queries;
mod register;
mod snapshot;
mod tables;
#[cfg(test)]
mod tests;
mod topic_map;
mod topics;

pub use ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName, MASTER_ID,
};
pub use liveness::{ExpiredBroker, Sweep, Unregistration};
pub use queries::{filter_by_zone, TopicQueues};
pub use register::{
    NeedTopics, RegisterOutcome, RegisterWalk, Registering, Registration, TopicSummary, TopicTable,
    TopicsPayload, TOPICS_PER_STEP,
};
pub use snapshot::{
    FilterRecord, GroupRecord, LiveRecord, MappingRecord, RouteSnapshot, TopicRecord, Unusable,
    NO_CONNECTION, SNAPSHOT_FORMAT,
};
pub use tables::{
    BrokerGroup, LiveBroker, MinIdChange, RouteChanges, RouteCounters, RouteOptions, RouteTables,
    DEFAULT_BROKER_EXPIRY, SYNC_BROKER_MEMBER_GROUP_PREFIX,
};
pub use topic_map::Queues;
