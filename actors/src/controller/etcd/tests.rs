//! The etcd store against a real etcd (one per test, on 127.0.0.1; see [`server`]). Every wait
//! is bounded: an event that does not come within [`WAIT`] fails the test.

// The integration tests' etcd starter, one copy for both crates (not all of it used here).
#[allow(dead_code)]
#[path = "../../../../tests/support/etcd.rs"]
mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::time::Instant;

use super::*;
use crate::controller::broker_set::Member;

/// The longest wait for one expected event.
const WAIT: Duration = Duration::from_secs(10);

/// A short lease, so that failover tests take seconds.
const TTL: Duration = Duration::from_secs(2);

/// Hands the store's events to the test.
struct Recorder(UnboundedSender<StoreEvent>);

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<StoreEvent> for Recorder {
    type Result = ();

    fn handle(&mut self, event: StoreEvent, _: &mut Context<Self>) {
        let _ = self.0.send(event);
    }
}

/// One controller node's store and what it reported.
struct Node {
    me: LeaderInfo,
    store: Addr<EtcdStore>,
    events: UnboundedReceiver<StoreEvent>,
}

fn settings(etcd: &server::Etcd) -> EtcdSettings {
    EtcdSettings {
        endpoints: vec![etcd.endpoint()],
        lease_ttl: TTL,
        timeout: Duration::from_secs(2),
        ..EtcdSettings::default()
    }
}

fn leader_info(id: &str) -> LeaderInfo {
    LeaderInfo {
        id: id.to_owned(),
        address: format!("{id}.controllers.test:9878"),
    }
}

fn node(settings: EtcdSettings, id: &str) -> Node {
    let (tx, events) = unbounded_channel();
    let recorder = Recorder(tx).start();
    let me = leader_info(id);
    let store = EtcdStore::new(settings, me.clone(), recorder.recipient()).start();
    Node { me, store, events }
}

impl Node {
    /// The first event `pick` takes, skipping the others; fails after [`WAIT`].
    async fn until<T>(&mut self, what: &str, mut pick: impl FnMut(&StoreEvent) -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            let event = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("{}: no {what} within {WAIT:?}", self.me.id))
                .expect("recorder alive");
            if let Some(found) = pick(&event) {
                return found;
            }
        }
    }

    async fn loaded(&mut self) -> Vec<(BrokerSet, Revision)> {
        self.until("Loaded", |e| match e {
            StoreEvent::Loaded { sets } => Some(sets.clone()),
            _ => None,
        })
        .await
    }

    /// The next leadership report: (leader, is_self, caught_up).
    async fn leadership(&mut self) -> (Option<LeaderInfo>, bool, Revision) {
        self.until("Leadership", |e| match e {
            StoreEvent::Leadership {
                leader,
                is_self,
                caught_up,
            } => Some((leader.clone(), *is_self, *caught_up)),
            _ => None,
        })
        .await
    }

    /// Waits until this node leads; answers the revision at which it won.
    async fn wins(&mut self) -> Revision {
        let me = self.me.clone();
        self.until("Leadership as leader", |e| match e {
            StoreEvent::Leadership {
                leader,
                is_self: true,
                caught_up,
            } => {
                assert_eq!(leader.as_ref(), Some(&me));
                Some(*caught_up)
            }
            _ => None,
        })
        .await
    }

    /// Waits until this node says it does not lead (any more).
    async fn steps_down(&mut self) {
        self.until("Leadership as follower", |e| match e {
            StoreEvent::Leadership { is_self: false, .. } => Some(()),
            _ => None,
        })
        .await
    }

    async fn changed(&mut self) -> (String, Option<BrokerSet>, Revision) {
        self.until("Changed", |e| match e {
            StoreEvent::Changed {
                name,
                record,
                revision,
            } => Some((name.clone(), record.clone(), *revision)),
            _ => None,
        })
        .await
    }

    async fn commit(
        &self,
        name: &str,
        expected: Revision,
        record: Option<BrokerSet>,
    ) -> Result<Revision, StoreError> {
        self.store
            .send(Commit {
                name: name.to_owned(),
                expected,
                record,
            })
            .await
            .expect("store alive")
    }
}

fn broker_set(name: &str, next_id: i64) -> BrokerSet {
    let mut members = BTreeMap::new();
    members.insert(
        1,
        Member {
            address: "127.0.0.1:10911".to_owned(),
            check_code: "c1".to_owned(),
        },
    );
    BrokerSet {
        cluster: "DefaultCluster".to_owned(),
        name: name.to_owned(),
        next_id,
        members,
        master: Some(1),
        master_epoch: 1,
        sync_state_set: BTreeSet::from([1]),
        sync_state_set_epoch: 1,
    }
}

async fn client(etcd: &server::Etcd) -> Client {
    Client::connect([etcd.endpoint()], None)
        .await
        .expect("test client connects")
}

/// The leader key as etcd holds it: (value, lease, create revision).
async fn leader_key(client: &Client) -> Option<(LeaderInfo, i64, Revision)> {
    let answer = client
        .kv_client()
        .get(format!("{DEFAULT_PREFIX}/leader"), None)
        .await
        .expect("read the leader key");
    answer.kvs().first().map(|kv| {
        (
            serde_json::from_slice(kv.value()).expect("leader JSON"),
            kv.lease(),
            kv.create_revision(),
        )
    })
}

#[actix::test]
async fn loads_the_records_already_there() {
    let etcd = server::start();
    let client = client(&etcd).await;
    let mut revisions = Vec::new();
    for name in ["a", "b"] {
        let put = client
            .kv_client()
            .put(
                format!("{DEFAULT_PREFIX}/sets/{name}"),
                serde_json::to_vec(&broker_set(name, 2)).unwrap(),
                None,
            )
            .await
            .unwrap();
        revisions.push(put.header().unwrap().revision());
    }
    // Not records: ignored, the rest is still loaded.
    client
        .kv_client()
        .put(format!("{DEFAULT_PREFIX}/sets/junk"), "not JSON", None)
        .await
        .unwrap();
    client
        .kv_client()
        .put(
            format!("{DEFAULT_PREFIX}/sets/c"),
            serde_json::to_vec(&broker_set("not-c", 2)).unwrap(),
            None,
        )
        .await
        .unwrap();
    // Outside the prefix (a sibling prefix): not read.
    client
        .kv_client()
        .put(
            format!("{DEFAULT_PREFIX}2/sets/d"),
            serde_json::to_vec(&broker_set("d", 2)).unwrap(),
            None,
        )
        .await
        .unwrap();

    let mut n0 = node(settings(&etcd), "n0");
    assert_eq!(
        n0.loaded().await,
        vec![
            (broker_set("a", 2), revisions[0]),
            (broker_set("b", 2), revisions[1])
        ]
    );
    let won = n0.wins().await;
    assert!(won > revisions[1], "won at {won}, after the records");
    let (holder, lease, created) = leader_key(&client).await.expect("leader key");
    assert_eq!(holder, n0.me);
    assert_ne!(lease, 0, "the leader key is attached to a lease");
    assert_eq!(created, won);
}

#[actix::test]
async fn commits_create_update_and_remove_at_the_revisions_watched() {
    let etcd = server::start();
    let mut n0 = node(settings(&etcd), "n0");
    assert!(n0.loaded().await.is_empty());
    n0.wins().await;

    let v1 = broker_set("a", 2);
    let r1 = n0.commit("a", 0, Some(v1.clone())).await.unwrap();
    assert_eq!(n0.changed().await, ("a".to_owned(), Some(v1.clone()), r1));

    let v2 = broker_set("a", 3);
    let r2 = n0.commit("a", r1, Some(v2.clone())).await.unwrap();
    assert!(r2 > r1);
    assert_eq!(n0.changed().await, ("a".to_owned(), Some(v2.clone()), r2));

    // Computed from an older record, or as a creation: refused, with the revision now.
    let stale = n0.commit("a", r1, Some(broker_set("a", 9))).await;
    assert_eq!(stale, Err(StoreError::Conflict { current: r2 }));
    let again = n0.commit("a", 0, Some(broker_set("a", 9))).await;
    assert_eq!(again, Err(StoreError::Conflict { current: r2 }));

    let r3 = n0.commit("a", r2, None).await.unwrap();
    assert!(r3 > r2);
    assert_eq!(n0.changed().await, ("a".to_owned(), None, r3));
    let gone = n0.commit("a", r2, None).await;
    assert_eq!(gone, Err(StoreError::Conflict { current: 0 }));

    // Nothing of the refused commits reached etcd.
    let client = client(&etcd).await;
    let left = client
        .kv_client()
        .get(
            format!("{DEFAULT_PREFIX}/sets/"),
            Some(GetOptions::new().with_prefix()),
        )
        .await
        .unwrap();
    assert!(left.kvs().is_empty());
}

#[actix::test]
async fn two_nodes_elect_exactly_one_and_the_follower_cannot_commit() {
    let etcd = server::start();
    let mut n0 = node(settings(&etcd), "n0");
    let mut n1 = node(settings(&etcd), "n1");
    let (l0, self0, caught0) = n0.leadership().await;
    let (l1, self1, caught1) = n1.leadership().await;
    assert_eq!(l0, l1, "both see the same leader");
    assert!(self0 ^ self1, "exactly one leads: n0 {self0}, n1 {self1}");
    let (mut leader, mut follower) = if self0 { (n0, n1) } else { (n1, n0) };
    assert_eq!(l0, Some(leader.me.clone()));
    assert!(caught0.max(caught1) > 0);
    assert_eq!(caught0.min(caught1), 0, "the follower's caught_up is 0");

    assert_eq!(
        follower.commit("a", 0, Some(broker_set("a", 2))).await,
        Err(StoreError::NotLeader)
    );
    // The leader's commit reaches the follower's view too.
    let r1 = leader
        .commit("a", 0, Some(broker_set("a", 2)))
        .await
        .unwrap();
    assert_eq!(
        follower.changed().await,
        ("a".to_owned(), Some(broker_set("a", 2)), r1)
    );
    assert_eq!(
        leader.changed().await,
        ("a".to_owned(), Some(broker_set("a", 2)), r1)
    );
}

/// The guard is etcd's, not the actor's view: a transaction naming a leader key that is not
/// (or no longer) ours writes nothing, whatever the node believes.
#[actix::test]
async fn the_transaction_refuses_a_leader_key_not_ours() {
    let etcd = server::start();
    let client = client(&etcd).await;
    let mut n0 = node(settings(&etcd), "n0");
    let won = n0.wins().await;
    let (_, lease, _) = leader_key(&client).await.expect("leader key");
    let keys = Keys::new(DEFAULT_PREFIX);
    let attempt = |created, lease| {
        commit(
            client.kv_client(),
            keys.set("a"),
            OurLeaderKey {
                key: keys.leader.clone(),
                created,
                lease,
            },
            Commit {
                name: "a".into(),
                expected: 0,
                record: Some(broker_set("a", 2)),
            },
            Duration::from_secs(2),
        )
    };
    assert_eq!(attempt(won + 1, lease).await, Err(StoreError::NotLeader));
    assert_eq!(attempt(won, lease + 1).await, Err(StoreError::NotLeader));
    let empty = client.kv_client().get(keys.set("a"), None).await.unwrap();
    assert!(empty.kvs().is_empty(), "nothing written");
    let written = attempt(won, lease).await.unwrap();
    assert_eq!(
        n0.changed().await,
        ("a".to_owned(), Some(broker_set("a", 2)), written)
    );
}

#[actix::test]
async fn a_revoked_lease_hands_the_leadership_over() {
    let etcd = server::start();
    let client = client(&etcd).await;
    let mut n0 = node(settings(&etcd), "n0");
    n0.wins().await;
    let mut n1 = node(settings(&etcd), "n1");
    assert_eq!(n1.leadership().await, (Some(n0.me.clone()), false, 0));
    let r1 = n0.commit("a", 0, Some(broker_set("a", 2))).await.unwrap();

    let (_, lease, _) = leader_key(&client).await.expect("leader key");
    client.lease_client().revoke(lease).await.unwrap();
    n0.steps_down().await;
    let won = n1.wins().await;
    assert!(won > r1, "n1 won at {won}, after n0's commit at {r1}");
    let (holder, _, created) = leader_key(&client).await.expect("leader key");
    assert_eq!((holder, created), (n1.me.clone(), won));

    // The old leader's writes cannot commit; the new leader's can, from the record n0 wrote.
    assert_eq!(
        n0.commit("a", r1, Some(broker_set("a", 3))).await,
        Err(StoreError::NotLeader)
    );
    let r2 = n1.commit("a", r1, Some(broker_set("a", 3))).await.unwrap();
    assert!(r2 > won);
}

#[actix::test]
async fn a_leader_whose_etcd_dies_steps_down_within_the_lease() {
    let mut etcd = server::start();
    let mut n0 = node(settings(&etcd), "n0");
    n0.wins().await;
    let killed = Instant::now();
    etcd.kill();
    n0.steps_down().await;
    let took = killed.elapsed();
    assert!(
        took <= TTL + Duration::from_secs(1),
        "stepped down after {took:?}"
    );
    let refused = n0.commit("a", 0, Some(broker_set("a", 2))).await;
    assert!(
        matches!(
            refused,
            Err(StoreError::NotLeader | StoreError::Unavailable(_))
        ),
        "{refused:?}"
    );
}

#[actix::test]
async fn a_leader_whose_etcd_freezes_steps_down_when_the_lease_may_have_expired() {
    let etcd = server::start();
    let mut n0 = node(settings(&etcd), "n0");
    n0.wins().await;
    let paused = Instant::now();
    etcd.pause();
    n0.steps_down().await;
    let took = paused.elapsed();
    etcd.resume();
    // The last renewal was asked at most a third of the TTL before the pause: the lease is
    // certainly alive until then, and given up at its deadline, not after.
    assert!(
        took <= TTL + Duration::from_secs(1),
        "stepped down after {took:?}"
    );
    assert!(took >= TTL / 2, "stepped down after only {took:?}");
}

#[actix::test]
async fn after_etcd_comes_back_the_node_loads_and_leads_again() {
    let etcd = server::start();
    let mut n0 = node(settings(&etcd), "n0");
    n0.loaded().await;
    n0.wins().await;
    let r1 = n0.commit("a", 0, Some(broker_set("a", 2))).await.unwrap();
    etcd.pause();
    n0.steps_down().await;
    etcd.resume();
    // Starting over: the state read again, the old lease revoked, a new election won.
    assert_eq!(n0.loaded().await, vec![(broker_set("a", 2), r1)]);
    let won = n0.wins().await;
    assert!(won > r1);
    let r2 = n0.commit("a", r1, None).await.unwrap();
    assert!(r2 > won);
}

/// A TCP relay to one etcd that can be cut as a killed member is: its connections closed and
/// new ones closed as soon as they are accepted, until it is restored.
struct Relay {
    endpoint: String,
    cut: tokio::sync::watch::Sender<bool>,
}

impl Relay {
    async fn start(etcd: &server::Etcd) -> Relay {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a free port");
        let endpoint = listener.local_addr().expect("its address").to_string();
        let (cut, watched) = tokio::sync::watch::channel(false);
        let to = etcd.endpoint();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cut = watched.clone();
                if *cut.borrow() {
                    continue;
                }
                let to = to.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|cut| *cut) => {}
                    }
                });
            }
        });
        Relay { endpoint, cut }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.send_replace(cut);
    }
}

#[actix::test]
async fn a_leader_whose_etcd_member_goes_keeps_its_lease_and_watch_on_another() {
    let etcd = server::start();
    let relays = [Relay::start(&etcd).await, Relay::start(&etcd).await];
    let mut settings = settings(&etcd);
    settings.endpoints = relays.iter().map(|r| r.endpoint.clone()).collect();
    let mut n0 = node(settings, "n0");
    n0.loaded().await;
    let won = n0.wins().await;
    let writer = client(&etcd).await;
    // Each endpoint cut in turn, so the one the session is on certainly goes once; each cut
    // held past the lease's TTL.
    for (i, relay) in relays.iter().enumerate() {
        relay.set_cut(true);
        let name = format!("written-during-cut-{i}");
        let record = serde_json::to_vec(&broker_set(&name, 2)).unwrap();
        let put = writer
            .kv_client()
            .put(format!("{DEFAULT_PREFIX}/sets/{name}"), record, None)
            .await
            .expect("the test's own write");
        let written = put.header().expect("a header").revision();
        // The change is reported through the other endpoint, without stepping down or
        // losing the lease first.
        let seen = n0
            .until("the change made during the cut", |e| match e {
                StoreEvent::Leadership { is_self: false, .. } => panic!("stepped down: {e:?}"),
                StoreEvent::Lease { until: None } => panic!("lost the lease"),
                StoreEvent::Changed { revision, .. } => Some(*revision),
                _ => None,
            })
            .await;
        assert_eq!(seen, written);
        tokio::time::sleep(TTL + TTL / 2).await;
        relay.set_cut(false);
    }
    while let Ok(event) = n0.events.try_recv() {
        assert!(
            !matches!(
                event,
                StoreEvent::Leadership { is_self: false, .. } | StoreEvent::Lease { until: None }
            ),
            "{event:?}"
        );
    }
    assert_eq!(
        leader_key(&writer).await.map(|(l, _, c)| (l, c)),
        Some((n0.me.clone(), won))
    );
    let r = n0.commit("a", 0, Some(broker_set("a", 2))).await.unwrap();
    assert!(r > won);
}

#[actix::test]
async fn without_endpoints_every_commit_is_unavailable() {
    let n0 = node(EtcdSettings::default(), "n0");
    assert!(matches!(
        n0.commit("a", 0, None).await,
        Err(StoreError::Unavailable(_))
    ));
}

#[test]
fn settings_parse_with_defaults_and_name_their_bad_keys() {
    let parsed: EtcdSettings =
        serde_json::from_str(r#"{"endpoints": ["127.0.0.1:2379"], "lease_ttl": "10s"}"#).unwrap();
    assert_eq!(parsed.endpoints, vec!["127.0.0.1:2379".to_owned()]);
    assert_eq!(parsed.lease_ttl, Duration::from_secs(10));
    assert_eq!(parsed.prefix, DEFAULT_PREFIX);
    assert_eq!(parsed.timeout, Duration::from_secs(3));
    assert!(parsed.validate().is_ok());
    assert!(serde_json::from_str::<EtcdSettings>(r#"{"ttl": "10s"}"#).is_err());

    let defaults = EtcdSettings::default();
    assert!(!defaults.enabled());
    assert!(defaults.validate().is_ok());
    assert_eq!(defaults.lease_ttl, Duration::from_secs(5));

    let bad = |change: fn(&mut EtcdSettings)| {
        let mut settings = EtcdSettings::default();
        change(&mut settings);
        settings.validate().unwrap_err()
    };
    assert!(bad(|s| s.lease_ttl = Duration::from_secs(1)).starts_with("controller.etcd.lease_ttl:"));
    assert!(bad(|s| s.timeout = Duration::ZERO).starts_with("controller.etcd.timeout:"));
    assert!(bad(|s| s.prefix = "/".into()).starts_with("controller.etcd.prefix:"));
    assert!(bad(|s| s.endpoints = vec!["https://127.0.0.1:2379".into()])
        .starts_with("controller.etcd.endpoints:"));
    assert!(bad(|s| s.endpoints = vec![String::new()]).starts_with("controller.etcd.endpoints:"));

    let fraction = EtcdSettings {
        lease_ttl: Duration::from_millis(2500),
        ..EtcdSettings::default()
    };
    assert_eq!(fraction.ttl_seconds(), 3);
}

#[test]
fn keys_live_under_the_prefix() {
    let keys = Keys::new("/p/");
    assert_eq!(keys.dir, "/p/");
    assert_eq!(keys.leader, "/p/leader");
    assert_eq!(keys.set("broker-a"), "/p/sets/broker-a");
    assert_eq!(
        keys.set_name(b"/p/sets/broker-a").as_deref(),
        Some("broker-a")
    );
    assert_eq!(keys.set_name(b"/p/sets/"), None);
    assert_eq!(keys.set_name(b"/p/leader"), None);
}
