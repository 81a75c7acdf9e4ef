//! The faults, one at a time from a shuffled deck, and what is checked right after each:
//!
//! - a victim broker's connection killed mid-frame (cut in the length field, the header or the
//!   body; FIN or RST): that broker's window on that NameServer until it re-registers;
//! - SIGKILL of one NameServer of the pair, restart on the same port after 0.1–2 s: a down
//!   window until it listens again, broker windows until every broker re-registered; its KV
//!   file is parsed and checked while it is down, and its KV namespace after the restart;
//! - a panic injected (FAULT_INJECTION) into `registry`, `kv`, `housekeeping`,
//!   `runtime_config`, `route_cache` or `connection`: the actor must answer again (else the
//!   panic was not contained); a registry panic opens a registry window and broker windows
//!   (the tables come back empty), a KV panic is followed by a check of the namespace (the
//!   store reloads its file: every acknowledged write must be there).
//!
//! A monitor watches the processes: one that exits unbidden is a loss (exit status 70, the
//! daemon's answer to a lost actor, is counted as a panic not contained) and is restarted.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_tools::client::{Client, ClientError};
use tokio::sync::oneshot;

use crate::kv::{self, KvTarget, NAMESPACE};
use crate::ledger::{Ledger, Loss, Ns, Rng, Scope};
use crate::routes::{route_request, Brokers, Kill, Topology, SHARED_TOPIC};
use crate::servers::Server;
use crate::wire::Cut;

/// Answered only by servers built with debug assertions (actors/src/dispatch.rs).
const FAULT_INJECTION: RequestCode = RequestCode(1_999_999);

/// The actors a panic is injected into (`listener` is left out: by design its panic is not
/// contained and ends the process).
pub const PANIC_ACTORS: [&str; 6] = [
    "registry",
    "kv",
    "housekeeping",
    "runtime_config",
    "route_cache",
    "connection",
];

/// Asks the server at `addr` to make `actor` panic, on a connection of its own.
pub async fn inject(
    addr: &str,
    actor: &str,
    timeout: Duration,
) -> Result<RemotingCommand, ClientError> {
    let mut client = Client::connect(addr, timeout).await?;
    client
        .request(RemotingCommand::request(FAULT_INJECTION).with_ext("actor", actor))
        .await
}

/// Whether the server answers FAULT_INJECTION at all (a release build does not).
pub async fn can_inject(addr: &str, timeout: Duration) -> Result<(), String> {
    match inject(addr, "none", timeout).await {
        Ok(reply) if reply.response_code() == ResponseCode::REQUEST_CODE_NOT_SUPPORTED => Err(
            "the server does not know FAULT_INJECTION: build it with debug assertions (cargo build --profile soak)".into(),
        ),
        Ok(_) => Ok(()),
        Err(e) => Err(format!("cannot reach the server: {e}")),
    }
}

/// One fault of the deck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    MidFrame,
    Sigkill,
    Panic(&'static str),
}

/// One deck: every kind once, mid-frame kills three times. Shuffled, then dealt in order.
fn deck() -> Vec<Fault> {
    let mut deck = vec![
        Fault::MidFrame,
        Fault::MidFrame,
        Fault::MidFrame,
        Fault::Sigkill,
    ];
    deck.extend(PANIC_ACTORS.iter().copied().map(Fault::Panic));
    deck
}

/// Everything a fault touches.
pub struct Chaos {
    pub ledger: Ledger,
    pub pair: Vec<Rc<Server>>,
    /// The pair's KV targets, by the same index.
    pub kv: Vec<Rc<KvTarget>>,
    pub brokers: Rc<Brokers>,
    pub topo: Rc<Topology>,
    pub timeout: Duration,
    pub ready_within: Duration,
    pub rng: Rng,
    pub injected: u64,
}

impl Chaos {
    /// Deals faults until `until` (or `stop`), waiting about `interval` between two.
    pub async fn run(&mut self, interval: Duration, until: Instant, stop: Rc<Cell<bool>>) {
        let mut hand: Vec<Fault> = Vec::new();
        // Bounded by `stop` and `until`.
        while !stop.get() && Instant::now() < until {
            if hand.is_empty() {
                hand = deck();
                self.rng.shuffle(&mut hand);
            }
            if let Some(fault) = hand.pop() {
                self.injected += 1;
                match fault {
                    Fault::MidFrame => self.mid_frame().await,
                    Fault::Sigkill => self.sigkill().await,
                    Fault::Panic(actor) => self.panic(actor).await,
                }
            }
            let pause = self.rng.between(interval / 2, interval * 3 / 2);
            let wake = (Instant::now() + pause).min(until);
            tokio::time::sleep_until(wake.into()).await;
        }
    }

    fn pick_ns(&mut self) -> Ns {
        Ns(self.rng.below(self.pair.len()))
    }

    fn say(&self, text: String) {
        self.ledger.say(format!("fault {}: {text}", self.injected));
        self.ledger.set_last_fault(text);
    }

    async fn mid_frame(&mut self) {
        let victims = self.topo.victims();
        let (Some(inst), ns) = (self.rng.pick(&victims).copied(), self.pick_ns()) else {
            return;
        };
        let cut = Cut::ALL
            .get(self.rng.below(Cut::ALL.len()))
            .copied()
            .unwrap_or(Cut::Body);
        let reset = self.rng.percent(50);
        let (done, outcome) = oneshot::channel();
        let kill = Kill {
            cut,
            reset,
            pick: self.rng.next_u64(),
            done,
        };
        let sent = self.brokers.kill_victim(inst, ns, kill);
        let outcome = if sent {
            tokio::time::timeout(self.timeout * 2, outcome)
                .await
                .ok()
                .and_then(Result::ok)
        } else {
            None
        };
        match outcome.flatten() {
            Some(text) => {
                self.ledger.stat(|s| {
                    s.mid_frame_kills += 1;
                    *s.cut_in.entry(cut.name()).or_default() += 1;
                    s.resets += u64::from(reset);
                });
                self.say(format!("connection killed mid-frame: {text}"));
            }
            None => {
                self.ledger.stat(|s| s.faults_skipped += 1);
                self.say(format!(
                    "mid-frame kill of {} on {ns} skipped (not connected at the moment)",
                    self.topo.label(inst)
                ));
            }
        }
    }

    async fn sigkill(&mut self) {
        let ns = self.pick_ns();
        let (Some(server), Some(kv)) = (self.pair.get(ns.0).cloned(), self.kv.get(ns.0).cloned())
        else {
            return;
        };
        let Some(pid) = server.pid() else {
            self.ledger.stat(|s| s.faults_skipped += 1);
            self.say(format!("SIGKILL of {ns} skipped (not running)"));
            return;
        };
        let down = self.ledger.open(Scope::Down(ns));
        let windows = self.brokers.open_all(&self.ledger, ns);
        self.ledger.set_last_fault(format!("SIGKILL of {ns}"));
        if let Err(e) = server.kill9().await {
            self.ledger.say(format!("SIGKILL of {ns}: {e}"));
        }
        kv::check_file(&kv, &self.ledger, &format!("{ns} after SIGKILL"));
        let downtime = self
            .rng
            .between(Duration::from_millis(100), Duration::from_secs(2));
        tokio::time::sleep(downtime).await;
        let restarting = Instant::now();
        let restarted = server.start(self.ready_within).await;
        let restart = restarting.elapsed();
        if let Err(e) = &restarted {
            // The down window stays open: nothing more is blamed on the dead server.
            self.ledger
                .lost(Loss::ServerDied, format!("{ns} did not come back: {e}"));
            self.say(format!("SIGKILL {ns} (pid {pid}): no restart"));
            return;
        }
        self.ledger.close(down);
        for (inst, window) in windows {
            self.brokers.close_after_next_registration(window, inst, ns);
        }
        self.ledger.stat(|s| {
            *s.sigkills.entry(ns.to_string()).or_default() += 1;
            s.downtime += downtime + restart;
            s.restart_time_max = s.restart_time_max.max(restart);
        });
        self.say(format!(
            "SIGKILL {ns} (pid {pid}), restarted after {} ms, listening again {} ms later (pid {})",
            downtime.as_millis(),
            restart.as_millis(),
            server.pid().unwrap_or(0)
        ));
        kv::verify_wire(
            &kv,
            &self.ledger,
            &format!("{ns} after its restart"),
            self.timeout,
        )
        .await;
    }

    async fn panic(&mut self, actor: &'static str) {
        let ns = self.pick_ns();
        let (Some(server), Some(kv)) = (self.pair.get(ns.0).cloned(), self.kv.get(ns.0).cloned())
        else {
            return;
        };
        let registry = actor == "registry";
        let registry_window = registry.then(|| self.ledger.open(Scope::Registry(ns)));
        let windows = if registry {
            self.brokers.open_all(&self.ledger, ns)
        } else {
            Vec::new()
        };
        self.ledger
            .set_last_fault(format!("panic injected into {actor} on {ns}"));
        let result = inject(&server.addr_text(), actor, self.timeout).await;
        for (inst, window) in windows {
            self.brokers.close_after_next_registration(window, inst, ns);
        }
        let injected = match (&result, actor) {
            // The connection that panics closes without an answer.
            (Err(ClientError::Closed | ClientError::Frame(_)), "connection") => Ok(()),
            (Err(ClientError::Timeout(_)), "connection") => Err(true),
            (Ok(reply), _)
                if actor != "connection" && reply.response_code() == ResponseCode::SUCCESS =>
            {
                Ok(())
            }
            _ => Err(false),
        };
        match injected {
            Ok(()) => {}
            Err(hung) => {
                if let Some(w) = registry_window {
                    self.ledger.close(w);
                }
                let what = match &result {
                    Ok(reply) => format!(
                        "answered code {} ({})",
                        reply.code,
                        reply.remark.clone().unwrap_or_default()
                    ),
                    Err(e) => e.to_string(),
                };
                if hung {
                    self.ledger.lost(
                        Loss::PanicNotContained,
                        format!(
                            "{actor} on {ns}: the panicking connection neither answered nor closed"
                        ),
                    );
                } else {
                    self.ledger.stat(|s| s.faults_skipped += 1);
                }
                self.say(format!("panic in {actor} on {ns} not injected: {what}"));
                return;
            }
        }
        let contained = containment_check(&server, actor, self.timeout).await;
        self.ledger.stat(|s| {
            *s.panics.entry(actor).or_default() += 1;
            s.panics_contained += u64::from(contained.is_ok());
            s.actor_panics_contained += u64::from(contained.is_ok() && actor != "connection");
        });
        match &contained {
            Ok(()) => self.say(format!(
                "panic in {actor} on {ns}: contained, answering again"
            )),
            Err(e) => {
                self.ledger
                    .lost(Loss::PanicNotContained, format!("{actor} on {ns}: {e}"));
                self.say(format!("panic in {actor} on {ns}: NOT contained"));
            }
        }
        if actor == "kv" {
            kv::verify_wire(
                &kv,
                &self.ledger,
                &format!("{ns} after a KV panic"),
                self.timeout,
            )
            .await;
        }
        if let Some(w) = registry_window {
            self.ledger.close(w);
        }
    }
}

/// After a panic: the actor answers a request of its own again (on a new connection), within
/// three tries.
async fn containment_check(server: &Server, actor: &str, timeout: Duration) -> Result<(), String> {
    let (request, accepted): (RemotingCommand, &[ResponseCode]) = match actor {
        "kv" => (
            RemotingCommand::request(RequestCode::GET_KVLIST_BY_NAMESPACE)
                .with_ext("namespace", NAMESPACE),
            &[ResponseCode::SUCCESS, ResponseCode::QUERY_NOT_FOUND],
        ),
        "runtime_config" => (
            RemotingCommand::request(RequestCode::GET_NAMESRV_CONFIG),
            &[ResponseCode::SUCCESS],
        ),
        "route_cache" => (
            route_request(SHARED_TOPIC),
            &[ResponseCode::SUCCESS, ResponseCode::TOPIC_NOT_EXIST],
        ),
        // The registry; and a new connection for housekeeping and connection panics.
        _ => (
            RemotingCommand::request(RequestCode::GET_BROKER_CLUSTER_INFO),
            &[ResponseCode::SUCCESS],
        ),
    };
    let mut last = String::new();
    for _try in 0..3 {
        match Client::connect(&server.addr_text(), timeout).await {
            Ok(mut client) => match client.request(request.clone()).await {
                Ok(reply) if accepted.contains(&reply.response_code()) => return Ok(()),
                Ok(reply) => {
                    last = format!(
                        "answered code {} ({})",
                        reply.code,
                        reply.remark.unwrap_or_default()
                    )
                }
                Err(e) => last = e.to_string(),
            },
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(format!("not answering after the panic: {last}"))
}

/// Watches the processes; one that exits unbidden is a loss, and a server of the pair is
/// restarted (with windows, as after a SIGKILL) so that the run goes on.
pub async fn monitor(
    servers: Vec<(Option<Ns>, Rc<Server>)>,
    brokers: Rc<Brokers>,
    ledger: Ledger,
    ready_within: Duration,
    stop: Rc<Cell<bool>>,
    until: Instant,
) {
    // Bounded by `stop` and `until`.
    while !stop.get() && Instant::now() < until {
        for (ns, server) in &servers {
            let Some(status) = server.unexpected_exit() else {
                continue;
            };
            let kind = if status.code() == Some(70) {
                Loss::PanicNotContained
            } else {
                Loss::ServerDied
            };
            ledger.lost(
                kind,
                format!(
                    "{} exited ({status}) after \"{}\": {}",
                    server.name,
                    ledger.last_fault(),
                    server.log_tail(3)
                ),
            );
            let Some(ns) = *ns else {
                continue;
            };
            let down = ledger.open(Scope::Down(ns));
            let windows = brokers.open_all(&ledger, ns);
            match server.start(ready_within).await {
                Ok(_) => {
                    ledger.close(down);
                    for (inst, window) in windows {
                        brokers.close_after_next_registration(window, inst, ns);
                    }
                    ledger.say(format!("{ns} restarted after its unexpected exit"));
                }
                Err(e) => ledger.lost(Loss::ServerDied, format!("{ns} did not come back: {e}")),
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deck_has_every_fault() {
        let deck = deck();
        assert_eq!(deck.iter().filter(|f| **f == Fault::MidFrame).count(), 3);
        assert!(deck.contains(&Fault::Sigkill));
        for actor in PANIC_ACTORS {
            assert!(deck.contains(&Fault::Panic(actor)), "{actor}");
        }
    }
}
