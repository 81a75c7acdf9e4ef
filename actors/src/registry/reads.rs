//! The questions the registry answers: reads of the tables, answered with domain values (the
//! connection encodes them), between the turns of any change under way.

use std::time::Instant;

use actix::prelude::*;
use rmq_protocol::body::GetBrokerMemberGroupResponseBody;

use super::RouteRegistry;
use crate::contain::{contain, Contained};
use crate::messages::*;

impl Handler<GetRouteInfo> for RouteRegistry {
    type Result = Contained<Result<RouteReply, RouteError>>;

    fn handle(&mut self, msg: GetRouteInfo, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRouteInfo", move |this, _| {
            // Java's cluster-test processor has no ready check.
            if this.waiting_for_service() {
                return Err(RouteError::NotReady);
            }
            let Some(topic) = msg.topic else {
                return Err(RouteError::TopicNotExist("null".to_owned()));
            };
            match this.route(&topic) {
                Some(route) => {
                    this.tables.route_served(&topic);
                    Ok(RouteReply {
                        route,
                        generation: this.generation,
                    })
                }
                None => Err(RouteError::TopicNotExist(topic)),
            }
        })
    }
}

impl Handler<QueryRoute> for RouteRegistry {
    type Result = Contained<Option<rmq_protocol::body::TopicRouteData>>;

    fn handle(&mut self, msg: QueryRoute, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "QueryRoute", move |this, _| {
            this.route(&msg.topic).map(|route| route.to_data())
        })
    }
}

impl Handler<GetClusterInfo> for RouteRegistry {
    type Result = Contained<MessageResult<GetClusterInfo>>;

    fn handle(&mut self, _: GetClusterInfo, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetClusterInfo", move |this, _| {
            MessageResult(this.tables.shared_cluster_info())
        })
    }
}

impl Handler<GetBrokerMemberGroup> for RouteRegistry {
    type Result = Contained<MessageResult<GetBrokerMemberGroup>>;

    fn handle(&mut self, msg: GetBrokerMemberGroup, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetBrokerMemberGroup", move |this, _| {
            MessageResult(GetBrokerMemberGroupResponseBody {
                broker_member_group: this.tables.member_group(&msg.cluster, &msg.name),
            })
        })
    }
}

impl Handler<GetTopicList> for RouteRegistry {
    type Result = Contained<Result<Body, Disabled>>;

    fn handle(&mut self, msg: GetTopicList, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetTopicList", move |this, _| {
            let settings = &this.settings;
            let enabled = match msg.kind {
                TopicListKind::All => settings.enable_all_topic_list,
                TopicListKind::System => true,
                _ => settings.enable_topic_list,
            };
            if !enabled {
                return Err(Disabled);
            }
            let tables = &this.tables;
            Ok(Body(match &msg.kind {
                TopicListKind::All => this.topic_lists.all(tables),
                TopicListKind::ByCluster(cluster) => this.topic_lists.by_cluster(tables, cluster),
                TopicListKind::System => tables.system_topics().into(),
                TopicListKind::Unit => tables.unit_topics().into(),
                TopicListKind::HasUnitSub => tables.has_unit_sub_topics().into(),
                TopicListKind::HasUnitSubUnUnit => tables.has_unit_sub_ununit_topics().into(),
            }))
        })
    }
}

impl Handler<ListBrokers> for RouteRegistry {
    type Result = Contained<Vec<BrokerStatus>>;

    fn handle(&mut self, _: ListBrokers, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ListBrokers", move |this, _| {
            let now = Instant::now();
            this.tables
                .live_instances()
                .into_iter()
                .map(|(instance, group, live)| BrokerStatus {
                    cluster: instance.cluster.as_str().to_owned(),
                    name: group.as_ref().map(|(name, _)| name.as_str().to_owned()),
                    id: group.map(|(_, id)| id),
                    addr: instance.addr.as_str().to_owned(),
                    since_last_update: now.saturating_duration_since(live.last_update),
                    data_version: live.data_version,
                    mq_version: live.mq_version,
                    conn: live.conn,
                    timeout: live.timeout,
                    unconfirmed: live.unconfirmed,
                })
                .collect()
        })
    }
}

impl Handler<GetRouteStats> for RouteRegistry {
    type Result = Contained<MessageResult<GetRouteStats>>;

    fn handle(&mut self, _: GetRouteStats, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRouteStats", move |this, _| {
            MessageResult(this.stats())
        })
    }
}

impl Handler<ListTopics> for RouteRegistry {
    type Result = Contained<MessageResult<ListTopics>>;

    fn handle(&mut self, msg: ListTopics, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "ListTopics", move |this, _| {
            let (topics, matched) = this.tables.topics_overview(&msg.filter, msg.limit);
            MessageResult(TopicsOverview { topics, matched })
        })
    }
}

impl Handler<GetRegistryMetrics> for RouteRegistry {
    type Result = Contained<MessageResult<GetRegistryMetrics>>;

    fn handle(&mut self, _: GetRegistryMetrics, ctx: &mut Context<Self>) -> Self::Result {
        contain(self, ctx, "GetRegistryMetrics", move |this, _| {
            MessageResult(RegistryMetrics {
                stats: this.stats(),
                counters: this.tables.counters(),
                live_by_cluster: this.tables.live_by_cluster(),
                ready: !this.waiting_for_service(),
            })
        })
    }
}
