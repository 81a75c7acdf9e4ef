//! The topic lists the registry answers, kept encoded: a list of a million topics is a body of
//! about 20 MB that takes tens of milliseconds to encode, so each is encoded once and shared by
//! every answer until the tables change, and clients asking again and again cost nothing. The
//! cache holds at most one body per list, so it is bounded by the tables' own size.

use std::collections::HashMap;

use bytes::Bytes;

use crate::route::RouteTables;

/// Encoded topic lists, each with the state of the tables it was read at.
#[derive(Debug, Default)]
pub(super) struct TopicLists {
    /// Every topic, at a version of the set of names.
    all: Option<(u64, Bytes)>,
    /// The topics of each existing cluster asked for, at a count of taken changes.
    by_cluster: Option<(u64, HashMap<String, Bytes>)>,
}

impl TopicLists {
    /// GET_ALL_TOPIC_LIST_FROM_NAMESERVER's body.
    pub(super) fn all(&mut self, tables: &RouteTables) -> Bytes {
        let version = tables.topic_names_version();
        match &self.all {
            Some((at, body)) if *at == version => body.clone(),
            _ => {
                let body = Bytes::from(tables.all_topics());
                self.all = Some((version, body.clone()));
                body
            }
        }
    }

    /// GET_TOPICS_BY_CLUSTER's body.
    pub(super) fn by_cluster(&mut self, tables: &RouteTables, cluster: &str) -> Bytes {
        if !tables.has_cluster(cluster) {
            // Not kept: a client may invent any number of cluster names.
            return Bytes::from(tables.topics_by_cluster(cluster));
        }
        let version = tables.route_version();
        let bodies = match &mut self.by_cluster {
            Some((at, bodies)) if *at == version => bodies,
            stale => &mut stale.insert((version, HashMap::new())).1,
        };
        bodies
            .entry(cluster.to_owned())
            .or_insert_with(|| Bytes::from(tables.topics_by_cluster(cluster)))
            .clone()
    }
}
