//! Topic commands: `topicRoute`, `topicList` and `deleteTopic`.

use rmq_protocol::body::{TopicList, TopicRouteData};
use rmq_protocol::custom_headers::{
    CommandHeader, DeleteTopicHeader, GetRouteInfoHeader, GetTopicsByClusterHeader,
};
use rmq_protocol::{RemotingCommand, RequestCode};
use serde_json::{json, Value};

use super::ask::Ask;
use super::format::table;
use super::report::{decode_body, to_value, Answer, Cause, Report};

/// `topicRoute -t TOPIC` (GET_ROUTEINFO_BY_TOPIC): the route as pretty JSON.
pub(super) async fn topic_route(ask: &Ask<'_>, topic: &str) -> Report {
    let header = GetRouteInfoHeader {
        topic: Some(topic.to_owned()),
        ..GetRouteInfoHeader::default()
    };
    let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
        .with_ext_fields(header.to_ext());
    ask.read(request, |resp| {
        let route: TopicRouteData = decode_body(resp)?;
        let text =
            serde_json::to_string_pretty(&route).map_err(|e| Cause::BadResponse(e.to_string()))?;
        Ok(Answer {
            text: format!("{text}\n"),
            json: to_value(&route)?,
        })
    })
    .await
}

/// `topicList`: every topic, one per line (GET_ALL_TOPIC_LIST_FROM_NAMESERVER); with
/// `-c CLUSTER`, a `#Cluster Name  #Topic` table of that cluster's topics (GET_TOPICS_BY_CLUSTER).
pub(super) async fn topic_list(ask: &Ask<'_>, cluster: Option<&str>) -> Report {
    match cluster {
        None => all_topics(ask).await,
        Some(cluster) => cluster_topics(ask, cluster).await,
    }
}

async fn all_topics(ask: &Ask<'_>) -> Report {
    let request = RemotingCommand::request(RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    ask.read(request, |resp| {
        let list: TopicList = decode_body(resp)?;
        let text: String = list.topic_list.iter().map(|t| format!("{t}\n")).collect();
        Ok(Answer {
            text,
            json: json!({ "topicList": list.topic_list }),
        })
    })
    .await
}

async fn cluster_topics(ask: &Ask<'_>, cluster: &str) -> Report {
    let header = GetTopicsByClusterHeader {
        cluster: cluster.to_owned(),
    };
    let request = RemotingCommand::request(RequestCode::GET_TOPICS_BY_CLUSTER)
        .with_ext_fields(header.to_ext());
    ask.read(request, |resp| {
        let list: TopicList = decode_body(resp)?;
        let rows = list
            .topic_list
            .iter()
            .map(|topic| vec![cluster.to_owned(), topic.clone()])
            .collect::<Vec<_>>();
        Ok(Answer {
            text: table(&["#Cluster Name", "#Topic"], &rows),
            json: json!({ "cluster": cluster, "topicList": list.topic_list }),
        })
    })
    .await
}

/// `deleteTopic -t TOPIC [-c CLUSTER]` (DELETE_TOPIC_IN_NAMESRV) on every NameServer; brokers are
/// not touched.
pub(super) async fn delete_topic(ask: &Ask<'_>, topic: &str, cluster: Option<&str>) -> Report {
    let header = DeleteTopicHeader {
        topic: topic.to_owned(),
        cluster_name: cluster.map(str::to_owned),
    };
    let request = RemotingCommand::request(RequestCode::DELETE_TOPIC_IN_NAMESRV)
        .with_ext_fields(header.to_ext());
    let what = match cluster {
        Some(cluster) => format!("delete topic[{topic}] of cluster[{cluster}]"),
        None => format!("delete topic[{topic}]"),
    };
    ask.write(&what, request, |_| Ok((String::new(), Value::Null)))
        .await
}
