//! The judged route lookups: one persistent connection per NameServer, every topic in turn,
//! each answer judged against the windows that overlap it (see the module docs of `routes`).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rmq_protocol::body::TopicRouteData;
use rmq_protocol::fastjson;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tools::client::{Client, ClientError};

use super::topology::{lists, Instance, Topology, NO_SUCH_TOPIC};
use crate::ledger::{Inst, Ledger, Loss, Ns, Scope};
use crate::servers::Server;

/// What a lookup got.
pub enum Outcome {
    Transport(String),
    Timeout,
    Reply(RemotingCommand),
}

/// How the lookups run.
#[derive(Debug, Clone)]
pub struct LookupSettings {
    pub interval: Duration,
    pub timeout: Duration,
    pub until: Instant,
}

/// Judged route lookups on one NameServer: one persistent connection (reconnected after a
/// failure), every topic in turn and the topic nobody hosts.
pub async fn lookups(
    ns: Ns,
    server: Rc<Server>,
    topo: Rc<Topology>,
    ledger: Ledger,
    settings: LookupSettings,
    stop: Rc<Cell<bool>>,
) {
    let mut topics = topo.topics.clone();
    topics.push(NO_SUCH_TOPIC.to_owned());
    let mut conn: Option<(Client, Instant)> = None;
    let mut turn = 0usize;
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < settings.until {
        let topic = topics.get(turn % topics.len()).cloned().unwrap_or_default();
        turn += 1;
        let send = Instant::now();
        if conn.is_none() {
            match Client::connect(&server.addr_text(), settings.timeout).await {
                Ok(client) => conn = Some((client, send)),
                Err(ClientError::Timeout(_)) => {
                    judge(&topo, &ledger, ns, &topic, send, send, Outcome::Timeout);
                }
                Err(err) => {
                    let recv = Instant::now();
                    judge(&topo, &ledger, ns, &topic, send, recv, transport(err));
                }
            }
        }
        if let Some((client, since)) = conn.as_mut() {
            let since = *since;
            let request = RemotingCommand::request(RequestCode::GET_ROUTEINFO_BY_TOPIC)
                .with_ext("topic", topic.clone());
            let outcome = match client.request(request).await {
                Ok(reply) => Outcome::Reply(reply),
                Err(ClientError::Timeout(_)) => Outcome::Timeout,
                Err(err) => transport(err),
            };
            if !matches!(outcome, Outcome::Reply(_)) {
                conn = None;
            }
            // A failed connection is excused by a window over its whole life.
            let from = if matches!(outcome, Outcome::Transport(_)) {
                since
            } else {
                send
            };
            judge(&topo, &ledger, ns, &topic, from, Instant::now(), outcome);
        }
        tokio::time::sleep(settings.interval).await;
    }
}

fn transport(err: ClientError) -> Outcome {
    Outcome::Transport(err.to_string())
}

/// The instances a lookup of `topic` on `ns` over `[from, to]` must find.
fn required(
    topo: &Topology,
    ledger: &Ledger,
    ns: Ns,
    topic: &str,
    from: Instant,
    to: Instant,
) -> Vec<Inst> {
    let excused = |inst: Inst| {
        ledger.excused(from, to, |s| match s {
            Scope::Down(n) | Scope::Registry(n) => n == ns,
            Scope::Broker(n, i) => n == ns && i == inst,
        })
    };
    topo.hosting(topic)
        .filter(|inst| !excused(*inst) && topo.master_of(*inst).is_none_or(|m| !excused(m)))
        .collect()
}

/// Judges one lookup (see the module docs) and counts it.
pub fn judge(
    topo: &Topology,
    ledger: &Ledger,
    ns: Ns,
    topic: &str,
    from: Instant,
    to: Instant,
    outcome: Outcome,
) {
    ledger.stat(|s| s.lookups += 1);
    let server_window = |s: Scope| matches!(s, Scope::Down(n) | Scope::Registry(n) if n == ns);
    let excused = || ledger.stat(|s| s.lookups_excused += 1);
    let ok = || ledger.stat(|s| s.lookups_ok += 1);
    match outcome {
        Outcome::Timeout => ledger.stat(|s| s.lookups_slow += 1),
        Outcome::Transport(err) => {
            if ledger.excused(from, to, |s| s == Scope::Down(ns)) {
                excused();
            } else {
                ledger.lost(Loss::LookupFailed, format!("{ns} {topic}: {err}"));
            }
        }
        Outcome::Reply(reply) => {
            let code = reply.response_code();
            if topic == NO_SUCH_TOPIC {
                if code == ResponseCode::TOPIC_NOT_EXIST {
                    ok();
                } else if code != ResponseCode::SUCCESS && ledger.excused(from, to, server_window) {
                    excused();
                } else {
                    ledger.lost(
                        Loss::LookupFailed,
                        format!(
                            "{ns} {topic}: answered code {} for a topic nobody hosts",
                            code.0
                        ),
                    );
                }
                return;
            }
            let need = required(topo, ledger, ns, topic, from, to);
            if code == ResponseCode::SUCCESS {
                let route: TopicRouteData = match fastjson::from_slice(reply.body_bytes()) {
                    Ok(route) => route,
                    Err(e) => {
                        ledger.lost(
                            Loss::LookupFailed,
                            format!("{ns} {topic}: unreadable route: {e}"),
                        );
                        return;
                    }
                };
                let missing: Vec<String> = need
                    .iter()
                    .filter_map(|i| topo.get(*i))
                    .filter(|i| !lists(&route, i))
                    .map(Instance::label)
                    .collect();
                if missing.is_empty() {
                    ok();
                } else {
                    ledger.lost(
                        Loss::BrokerMissing,
                        format!("{ns} {topic}: {} not in the route", missing.join(", ")),
                    );
                }
            } else if (code == ResponseCode::TOPIC_NOT_EXIST && need.is_empty())
                || (code != ResponseCode::TOPIC_NOT_EXIST
                    && ledger.excused(from, to, server_window))
            {
                // Not found while every broker of the topic is excused, or an error while the
                // server was down or resetting its registry.
                excused();
            } else {
                let labels: Vec<String> = need.iter().map(|i| topo.label(*i)).collect();
                ledger.lost(
                    Loss::LookupFailed,
                    format!(
                        "{ns} {topic}: code {} ({}) while {} registered",
                        code.0,
                        reply.remark.as_deref().unwrap_or(""),
                        labels.join(", ")
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::topology::CLUSTER;
    use rmq_protocol::body::{BrokerData, QueueData};

    fn route_of(topo: &Topology, insts: &[Inst]) -> TopicRouteData {
        let mut route = TopicRouteData::default();
        for inst in insts {
            let i = topo.get(*inst).unwrap();
            let b = &i.broker;
            match route
                .broker_datas
                .iter_mut()
                .find(|bd| bd.broker_name == b.name)
            {
                Some(bd) => {
                    bd.broker_addrs.insert(b.id, b.addr.clone());
                }
                None => route.broker_datas.push(BrokerData {
                    broker_name: b.name.clone(),
                    cluster: CLUSTER.into(),
                    broker_addrs: [(b.id, b.addr.clone())].into_iter().collect(),
                    ..BrokerData::default()
                }),
            }
            if b.id == 0 {
                route.queue_datas.push(QueueData {
                    broker_name: b.name.clone(),
                    ..QueueData::default()
                });
            }
        }
        route
    }

    fn reply(route: &TopicRouteData) -> Outcome {
        Outcome::Reply(
            RemotingCommand::success().with_body(rmq_protocol::body::to_json(
                route,
                fastjson::JsonStyle::Legacy,
            )),
        )
    }

    #[test]
    fn a_missing_broker_is_lost_unless_a_window_covers_it() {
        let topo = Topology::new();
        let ledger = Ledger::new();
        let all: Vec<Inst> = topo.hosting("soak-a-0").collect();
        let now = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            now,
            now,
            reply(&route_of(&topo, &all)),
        );
        assert_eq!(ledger.total_losses(), 0);
        // The slave missing: lost ...
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            now,
            now,
            reply(&route_of(&topo, &all[..1])),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 1);
        // ... unless its window (or its master's) overlaps the lookup.
        let w = ledger.open(Scope::Broker(Ns(0), all[0]));
        let t = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&route_of(&topo, &all[..1])),
        );
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&TopicRouteData::default()),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 1);
        // Another server's window excuses nothing here.
        ledger.close(w);
        let w = ledger.open(Scope::Broker(Ns(1), all[0]));
        let t = Instant::now() + Duration::from_millis(1);
        judge(
            &topo,
            &ledger,
            Ns(0),
            "soak-a-0",
            t,
            t,
            reply(&TopicRouteData::default()),
        );
        assert_eq!(ledger.losses(Loss::BrokerMissing), 2);
        ledger.close(w);
    }

    #[test]
    fn not_found_and_errors_need_a_window() {
        let topo = Topology::new();
        let ledger = Ledger::new();
        let now = Instant::now();
        let not_found = || {
            Outcome::Reply(RemotingCommand::response(
                ResponseCode::TOPIC_NOT_EXIST,
                None,
            ))
        };
        judge(&topo, &ledger, Ns(1), "soak-b-1", now, now, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 1);
        judge(&topo, &ledger, Ns(1), NO_SUCH_TOPIC, now, now, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 1);
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            now,
            Outcome::Timeout,
        );
        assert_eq!(ledger.total_losses(), 1, "slow is not lost");
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            now,
            Outcome::Transport("reset".into()),
        );
        assert_eq!(ledger.losses(Loss::LookupFailed), 2);
        let w = ledger.open(Scope::Down(Ns(1)));
        let t = Instant::now();
        judge(
            &topo,
            &ledger,
            Ns(1),
            "soak-b-1",
            now,
            t,
            Outcome::Transport("reset".into()),
        );
        judge(&topo, &ledger, Ns(1), "soak-b-1", t, t, not_found());
        assert_eq!(ledger.losses(Loss::LookupFailed), 2);
        ledger.close(w);
        assert_eq!(
            ledger.stats(|s| (s.lookups, s.lookups_ok, s.lookups_excused, s.lookups_slow)),
            (6, 1, 2, 1)
        );
    }
}
