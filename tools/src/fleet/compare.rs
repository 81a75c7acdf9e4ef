//! What differs between the NameServers' [`Survey`]s: each difference a [`Finding`], counted per
//! [`DriftKind`]. Topics are compared by a merge of the sorted (topic, digest) lists, so the
//! comparison's memory is the findings kept, never a second copy of the topics.

use std::collections::{BTreeMap, BTreeSet};

use rmq_protocol::body::{DataVersion, QueueData};

use super::survey::{BrokerInstance, Survey};
use super::{DriftKind, Finding, FINDINGS_SHOWN};

/// The findings of one comparison: counts per kind (complete) and at most [`FINDINGS_SHOWN`]
/// findings of each kind. `queue_topics` are the topics (at most [`FINDINGS_SHOWN`]) whose
/// queue data differs, whose details come from [`queue_findings`].
#[derive(Debug, Default)]
pub(super) struct Compared {
    pub counts: BTreeMap<DriftKind, u64>,
    pub findings: Vec<Finding>,
    pub queue_topics: Vec<String>,
    pub topics: u64,
}

impl Compared {
    fn add(&mut self, kind: DriftKind, subject: String, values: Vec<Option<String>>) {
        let count = self.counts.entry(kind).or_insert(0);
        *count += 1;
        if *count <= FINDINGS_SHOWN as u64 {
            self.findings.push(Finding {
                kind,
                subject,
                values,
            });
        }
    }
}

/// Compares the surveys (one per NameServer, in the fleet's order), ignoring the
/// configuration keys of `ignored`.
pub(super) fn compare(surveys: &[Survey], ignored: &BTreeSet<String>) -> Compared {
    let mut out = Compared::default();
    for kind in DriftKind::ALL {
        out.counts.insert(kind, 0);
    }
    if surveys.len() < 2 {
        return out;
    }
    brokers(surveys, &mut out);
    topics(surveys, &mut out);
    versions(surveys, &mut out);
    kv(surveys, &mut out);
    config(surveys, ignored, &mut out);
    out
}

fn presence(present: impl Iterator<Item = bool>) -> Vec<Option<String>> {
    present.map(|p| p.then(|| "present".to_owned())).collect()
}

fn brokers(surveys: &[Survey], out: &mut Compared) {
    let union: BTreeSet<&BrokerInstance> = surveys.iter().flat_map(|s| &s.brokers).collect();
    for broker in union {
        if surveys.iter().all(|s| s.brokers.contains(broker)) {
            continue;
        }
        let values = presence(surveys.iter().map(|s| s.brokers.contains(broker)));
        out.add(DriftKind::Broker, broker.to_string(), values);
    }
}

/// A k-way merge of the sorted topic lists: a topic missing on some is a `topic` finding; one
/// whose digests differ, a `queue` topic.
fn topics(surveys: &[Survey], out: &mut Compared) {
    let mut heads = vec![0usize; surveys.len()];
    loop {
        let next = surveys
            .iter()
            .zip(&heads)
            .filter_map(|(s, &i)| s.topics.get(i).map(|(t, _)| t))
            .min()
            .cloned();
        let Some(topic) = next else {
            break;
        };
        out.topics += 1;
        let mut digests: Vec<Option<u64>> = Vec::with_capacity(surveys.len());
        for (survey, head) in surveys.iter().zip(heads.iter_mut()) {
            match survey.topics.get(*head) {
                Some((t, digest)) if *t == topic => {
                    digests.push(Some(*digest));
                    *head += 1;
                }
                _ => digests.push(None),
            }
        }
        if digests.iter().any(Option::is_none) {
            let values = presence(digests.iter().map(Option::is_some));
            out.add(DriftKind::Topic, format!("topic {topic}"), values);
        } else if digests.windows(2).any(|w| w[0] != w[1]) {
            if out.queue_topics.len() < FINDINGS_SHOWN {
                out.queue_topics.push(topic);
            } else {
                *out.counts.entry(DriftKind::Queue).or_insert(0) += 1;
            }
        }
    }
}

fn version_text(v: &DataVersion) -> String {
    format!(
        "stateVersion {} counter {} timestamp {}",
        v.state_version, v.counter, v.timestamp
    )
}

/// Brokers every NameServer stores a data version of, whose versions differ.
fn versions(surveys: &[Survey], out: &mut Compared) {
    let Some(first) = surveys.first() else {
        return;
    };
    for (broker, version) in &first.versions {
        let all: Vec<Option<&DataVersion>> =
            surveys.iter().map(|s| s.versions.get(broker)).collect();
        if all.iter().any(Option::is_none) || all.iter().all(|v| *v == Some(version)) {
            continue;
        }
        let values = all.iter().map(|v| v.map(version_text)).collect();
        out.add(DriftKind::DataVersion, broker.to_string(), values);
    }
}

fn kv(surveys: &[Survey], out: &mut Compared) {
    let namespaces: BTreeSet<&String> = surveys.iter().flat_map(|s| s.kv.keys()).collect();
    for namespace in namespaces {
        let tables: Vec<Option<&BTreeMap<String, String>>> =
            surveys.iter().map(|s| s.kv.get(namespace)).collect();
        let keys: BTreeSet<&String> = tables.iter().flatten().flat_map(|t| t.keys()).collect();
        for key in keys {
            let values: Vec<Option<String>> = tables
                .iter()
                .map(|t| t.and_then(|t| t.get(key)).cloned())
                .collect();
            if values.windows(2).any(|w| w[0] != w[1]) {
                out.add(DriftKind::Kv, format!("kv {namespace} {key}"), values);
            }
        }
    }
}

/// Keys every NameServer has (a key only some have is a difference of implementation or
/// version, not of configuration), but the `ignored` ones.
fn config(surveys: &[Survey], ignored: &BTreeSet<String>, out: &mut Compared) {
    let Some(first) = surveys.first() else {
        return;
    };
    for key in first.config.keys() {
        if ignored.contains(key) {
            continue;
        }
        let values: Vec<Option<String>> =
            surveys.iter().map(|s| s.config.get(key).cloned()).collect();
        if values.iter().any(Option::is_none) || values.windows(2).all(|w| w[0] == w[1]) {
            continue;
        }
        out.add(DriftKind::Config, format!("config {key}"), values);
    }
}

/// The findings of one topic whose queue data differs, from each NameServer's route (`None`:
/// none now): one per broker name whose queue data is not the same everywhere.
pub(super) fn queue_findings(topic: &str, routes: &[Option<Vec<QueueData>>]) -> Vec<Finding> {
    let names: BTreeSet<&String> = routes
        .iter()
        .flatten()
        .flatten()
        .map(|q| &q.broker_name)
        .collect();
    let mut out = Vec::new();
    for name in names {
        let values: Vec<Option<String>> = routes
            .iter()
            .map(|route| {
                route
                    .as_ref()
                    .and_then(|r| r.iter().find(|q| &q.broker_name == name))
                    .map(|q| {
                        format!(
                            "read {} write {} perm {} sysflag {}",
                            q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag
                        )
                    })
            })
            .collect();
        if values.windows(2).any(|w| w[0] != w[1]) {
            out.push(Finding {
                kind: DriftKind::Queue,
                subject: format!("topic {topic} queues on broker {name}"),
                values,
            });
        }
    }
    out
}
