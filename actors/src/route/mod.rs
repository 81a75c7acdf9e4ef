//! Route state and its rules, with no actix and no I/O: the RouteRegistry actor owns a
//! [`RouteTables`] and calls it from its handlers; time is always passed in.

mod ids;
mod tables;
#[cfg(test)]
mod tests;

pub use ids::{
    BrokerAddr, BrokerId, BrokerInstance, BrokerName, ClusterName, ConnId, TopicName, MASTER_ID,
};
pub use tables::{
    BrokerGroup, ExpiredBroker, LiveBroker, Queues, RegisterOutcome, Registration, RouteOptions,
    RouteTables, TopicSummary, TopicTable, TopicsPayload, Unregistration, DEFAULT_BROKER_EXPIRY,
    SYNC_BROKER_MEMBER_GROUP_PREFIX,
};
