//! The running brokers: the steady `SimBroker`s, the victims' links (killed mid-frame on
//! demand), and the broker windows that close once a broker has re-registered.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_tools::sim::{SimBroker, SimBrokerSpec};
use tokio::sync::{mpsc, oneshot};

use super::topology::{Instance, Topology};
use crate::ledger::{Inst, Ledger, Ns, Scope, WindowId};
use crate::wire::{Cut, RawConn};

/// A mid-frame kill for a victim's connection to one NameServer.
#[derive(Debug)]
pub struct Kill {
    pub cut: Cut,
    pub reset: bool,
    /// Chooses the cut offset, the pause before the kill and the delay before reconnecting.
    pub pick: u64,
    /// What was done, for the fault line (`None`: not connected, nothing done).
    pub done: oneshot::Sender<Option<String>>,
}

struct VictimLink {
    kills: mpsc::UnboundedSender<Kill>,
    registrations: Rc<Cell<u64>>,
}

/// A broker window that closes after enough acknowledged registrations.
struct Closer {
    window: WindowId,
    inst: Inst,
    ns: Ns,
    target: u64,
}

/// The running brokers: the steady `SimBroker`s and the victims' links.
pub struct Brokers {
    topo: Rc<Topology>,
    sims: RefCell<Vec<(Inst, SimBroker)>>,
    victims: RefCell<Vec<(Inst, Vec<VictimLink>)>>,
    closers: RefCell<Vec<Closer>>,
}

/// How the brokers run.
#[derive(Debug, Clone)]
pub struct BrokerSettings {
    pub register_interval: Duration,
    pub timeout: Duration,
    pub until: Instant,
}

impl Brokers {
    /// Starts every broker against the pair's addresses.
    pub fn start(
        topo: Rc<Topology>,
        addrs: &[String],
        settings: &BrokerSettings,
        ledger: &Ledger,
    ) -> Rc<Self> {
        let mut sims = Vec::new();
        let mut victims = Vec::new();
        for inst in topo.all() {
            let Some(instance) = topo.get(inst) else {
                continue;
            };
            if instance.victim {
                let links = addrs
                    .iter()
                    .enumerate()
                    .map(|(n, addr)| {
                        let (kills, rx) = mpsc::unbounded_channel();
                        let registrations = Rc::new(Cell::new(0));
                        let link = VictimLinkTask {
                            ledger: ledger.clone(),
                            inst,
                            ns: Ns(n),
                            addr: addr.clone(),
                            instance: instance.clone(),
                            settings: settings.clone(),
                            registrations: Rc::clone(&registrations),
                        };
                        tokio::task::spawn_local(link.run(rx));
                        VictimLink {
                            kills,
                            registrations,
                        }
                    })
                    .collect();
                victims.push((inst, links));
            } else {
                let b = &instance.broker;
                let port = b
                    .addr
                    .rsplit(':')
                    .next()
                    .and_then(|p| p.parse().ok())
                    .unwrap_or(10_911);
                let mut spec = SimBrokerSpec::new(
                    &b.cluster,
                    &b.name,
                    b.id,
                    port,
                    b.topics.clone(),
                    addrs.to_vec(),
                );
                spec.register_interval = settings.register_interval;
                spec.timeout = settings.timeout;
                sims.push((inst, SimBroker::spawn(spec)));
            }
        }
        Rc::new(Self {
            topo,
            sims: RefCell::new(sims),
            victims: RefCell::new(victims),
            closers: RefCell::new(Vec::new()),
        })
    }

    /// Registrations of `inst` acknowledged by `ns` so far.
    pub fn registrations(&self, inst: Inst, ns: Ns) -> u64 {
        if let Some((_, sim)) = self.sims.borrow().iter().find(|(i, _)| *i == inst) {
            return sim.status().links.get(ns.0).map_or(0, |l| l.registrations);
        }
        self.victims
            .borrow()
            .iter()
            .find(|(i, _)| *i == inst)
            .and_then(|(_, links)| links.get(ns.0))
            .map_or(0, |l| l.registrations.get())
    }

    /// Whether every broker has been acknowledged at least `n` times by every NameServer.
    pub fn all_registered(&self, n: u64, pair: usize) -> bool {
        self.topo
            .all()
            .all(|inst| (0..pair).all(|ns| self.registrations(inst, Ns(ns)) >= n))
    }

    /// Closes `window` once `inst` has had a registration acknowledged by `ns` that it sent
    /// after now (the fault is over): the second acknowledgement from now on.
    pub fn close_after_next_registration(&self, window: WindowId, inst: Inst, ns: Ns) {
        let target = self.registrations(inst, ns) + 2;
        self.closers.borrow_mut().push(Closer {
            window,
            inst,
            ns,
            target,
        });
    }

    /// Opens a broker window for every instance on `ns`.
    pub fn open_all(&self, ledger: &Ledger, ns: Ns) -> Vec<(Inst, WindowId)> {
        self.topo
            .all()
            .map(|inst| (inst, ledger.open(Scope::Broker(ns, inst))))
            .collect()
    }

    /// Closes windows whose brokers have re-registered; runs until `stop` (or `until`).
    pub async fn watch(self: Rc<Self>, ledger: Ledger, stop: Rc<Cell<bool>>, until: Instant) {
        // Bounded by `stop` and `until`.
        while !stop.get() && Instant::now() < until {
            let pending = std::mem::take(&mut *self.closers.borrow_mut());
            let mut left = Vec::new();
            for closer in pending {
                if self.registrations(closer.inst, closer.ns) >= closer.target {
                    ledger.close(closer.window);
                } else {
                    left.push(closer);
                }
            }
            self.closers.borrow_mut().extend(left);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Sends a victim's link to `ns` a mid-frame kill; the answer says what was done.
    pub fn kill_victim(&self, inst: Inst, ns: Ns, kill: Kill) -> bool {
        self.victims
            .borrow()
            .iter()
            .find(|(i, _)| *i == inst)
            .and_then(|(_, links)| links.get(ns.0))
            .is_some_and(|link| link.kills.send(kill).is_ok())
    }

    /// Stops every broker: the simulated ones unregister (a graceful broker shutdown), the
    /// victims' links end.
    pub async fn stop(&self) {
        self.victims.borrow_mut().clear();
        let sims = std::mem::take(&mut *self.sims.borrow_mut());
        for (_, sim) in sims {
            sim.stop(true).await;
        }
    }
}

/// One victim broker's link to one NameServer: registers every interval on one connection;
/// told to, stops in the middle of a frame, drops the connection and comes back shortly after.
struct VictimLinkTask {
    ledger: Ledger,
    inst: Inst,
    ns: Ns,
    addr: String,
    instance: Instance,
    settings: BrokerSettings,
    registrations: Rc<Cell<u64>>,
}

impl VictimLinkTask {
    fn registration(&self) -> RemotingCommand {
        if self.instance.compressed {
            self.instance.broker.register_compressed()
        } else {
            self.instance.broker.register()
        }
    }

    async fn run(self, mut kills: mpsc::UnboundedReceiver<Kill>) {
        let timeout = self.settings.timeout;
        let mut conn: Option<RawConn> = None;
        let mut next = Instant::now();
        // Mid-frame windows waiting for the next acknowledged registration.
        let mut pending: Vec<WindowId> = Vec::new();
        // Bounded by `until`; ends at once when the sender side is dropped.
        while Instant::now() < self.settings.until {
            if Instant::now() >= next {
                if conn.is_none() {
                    conn = RawConn::connect(&self.addr, timeout).await.ok();
                }
                if let Some(c) = conn.as_mut() {
                    match c.call(self.registration(), timeout).await {
                        Ok(reply) if reply.response_code() == ResponseCode::SUCCESS => {
                            self.registrations.set(self.registrations.get() + 1);
                            for window in pending.drain(..) {
                                self.ledger.close(window);
                            }
                        }
                        Ok(_) => {}
                        Err(_) => conn = None,
                    }
                }
                let wait = if conn.is_some() {
                    self.settings.register_interval
                } else {
                    Duration::from_millis(200)
                };
                next = Instant::now() + wait;
            }
            tokio::select! {
                kill = kills.recv() => {
                    let Some(kill) = kill else { return };
                    let outcome = match conn.take() {
                        Some(c) => {
                            let (outcome, window) = self.kill(c, &kill).await;
                            pending.push(window);
                            // Back within a second, as a broker that notices the broken link.
                            next = Instant::now() + Duration::from_millis(kill.pick % 1000);
                            Some(outcome)
                        }
                        None => None,
                    };
                    let _ = kill.done.send(outcome);
                }
                _ = tokio::time::sleep_until(next.into()) => {}
            }
        }
    }

    async fn kill(&self, mut conn: RawConn, kill: &Kill) -> (String, WindowId) {
        let window = self.ledger.open(Scope::Broker(self.ns, self.inst));
        let pick = kill.pick;
        let sent = conn
            .send_partial(self.registration(), kill.cut, |n| (pick as usize) % n)
            .await;
        // Let the server read the partial frame before the connection goes.
        tokio::time::sleep(Duration::from_millis((pick >> 20) % 50)).await;
        conn.kill(kill.reset);
        let how = if kill.reset { "RST" } else { "FIN" };
        let outcome = match sent {
            Ok((sent, total)) => format!(
                "{} on {}: cut in the {} after {sent} of {total} bytes, then {how}",
                self.instance.label(),
                self.ns,
                kill.cut.name()
            ),
            Err(e) => format!(
                "{} on {}: partial write failed ({e}), then {how}",
                self.instance.label(),
                self.ns
            ),
        };
        (outcome, window)
    }
}
