//! What each change of the route tables does; [`super::turns`] runs them. The rules themselves
//! live in `crate::route`.

use std::time::Instant;

use tracing::{debug, info};

use super::turns::{Change, Step, Walk, TOPICS_PER_STEP};
use super::RouteRegistry;
use crate::messages::*;
use crate::route::{NeedTopics, RegisterOutcome, RegisterWalk, Registering, Sweep};

impl Change for RegisterBroker {
    const NAME: &'static str = "RegisterBroker";

    /// The group at once, then the topics, in turns when there are many.
    fn begin(self, registry: &mut RouteRegistry) -> Step<Self::Result> {
        let new_before = registry.tables.counters().registrations_new;
        match registry
            .tables
            .register_start(self.registration, Instant::now())
        {
            Err(need) => Step::Done(Err(need)),
            Ok(Registering::Done(outcome)) => {
                let reply = registry.registered(outcome, new_before, false);
                Step::Done(Ok(reply))
            }
            Ok(Registering::Walk(walk)) => Box::new(RegisterTopics {
                walk,
                new_before,
                turns: 0,
            })
            .step(registry),
        }
    }
}

/// A registration's topics, applied in turns; the count of new brokers before it.
struct RegisterTopics {
    walk: Box<RegisterWalk>,
    new_before: u64,
    turns: u32,
}

impl Walk<Result<RegisterBrokerReply, NeedTopics>> for RegisterTopics {
    fn step(
        mut self: Box<Self>,
        registry: &mut RouteRegistry,
    ) -> Step<Result<RegisterBrokerReply, NeedTopics>> {
        if !registry
            .tables
            .register_step(&mut self.walk, TOPICS_PER_STEP)
        {
            self.turns += 1;
            return Step::More(self);
        }
        let outcome = registry.tables.register_finish(self.walk);
        // A walk of more than one turn applied topics: it changed routes.
        let walked = self.turns > 0;
        Step::Done(Ok(registry.registered(outcome, self.new_before, walked)))
    }
}

/// An unregistration's topics, swept in turns; `value` is its answer.
struct Sweeping<R> {
    sweep: Sweep,
    value: R,
}

impl<R: 'static> Walk<R> for Sweeping<R> {
    fn step(mut self: Box<Self>, registry: &mut RouteRegistry) -> Step<R> {
        if registry.tables.sweep_step(&mut self.sweep, TOPICS_PER_STEP) {
            Step::Done(self.value)
        } else {
            Step::More(self)
        }
    }
}

/// `value` once `sweep` (if any) is done.
fn swept<R: 'static>(sweep: Option<Sweep>, value: R) -> Step<R> {
    match sweep {
        None => Step::Done(value),
        Some(sweep) => Step::More(Box::new(Sweeping { sweep, value })),
    }
}

impl RouteRegistry {
    /// The answer of a registration; it changed routes when it was `walked` in turns, changed a
    /// route since its last turn, or added a broker (there were `new_before` new ones before).
    fn registered(
        &self,
        outcome: RegisterOutcome,
        new_before: u64,
        walked: bool,
    ) -> RegisterBrokerReply {
        let routes_changed = walked
            || self.tables.has_changes()
            || self.tables.counters().registrations_new > new_before;
        RegisterBrokerReply {
            outcome,
            order_topic_config: self
                .settings
                .return_order_topic_config_to_broker
                .then(|| self.order_topic_conf.clone())
                .flatten(),
            routes_changed,
        }
    }
}

impl Change for UnregisterBroker {
    const NAME: &'static str = "UnregisterBroker";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        let sweep = registry
            .tables
            .unregister_start(std::slice::from_ref(&self.request));
        swept(sweep, ())
    }
}

impl Change for ScanInactive {
    const NAME: &'static str = "ScanInactive";

    fn begin(self, registry: &mut RouteRegistry) -> Step<Self::Result> {
        let (expired, sweep) = registry.tables.scan_inactive_start(self.now);
        swept(sweep, expired)
    }
}

impl Change for ChannelClosed {
    const NAME: &'static str = "ChannelClosed";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        let (_, sweep) = registry.tables.channel_closed_start(&self.conns);
        swept(sweep, ())
    }
}

impl Change for BrokerHeartbeat {
    const NAME: &'static str = "BrokerHeartbeat";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        if !registry.tables.heartbeat(&self.instance, Instant::now()) {
            debug!(broker = %self.instance, "heartbeat from an unregistered broker ignored");
        }
        Step::Done(())
    }
}

impl Change for QueryDataVersion {
    const NAME: &'static str = "QueryDataVersion";

    fn begin(self, registry: &mut RouteRegistry) -> Step<DataVersionReply> {
        let (changed, stored) = registry.tables.query_data_version(
            &self.instance,
            self.version.as_ref(),
            Instant::now(),
        );
        Step::Done(DataVersionReply { changed, stored })
    }
}

impl Change for WipeWritePerm {
    const NAME: &'static str = "WipeWritePerm";

    fn begin(self, registry: &mut RouteRegistry) -> Step<WipeTopicCount> {
        Step::Done(WipeTopicCount(registry.tables.wipe_write_perm(&self.name)))
    }
}

impl Change for AddWritePerm {
    const NAME: &'static str = "AddWritePerm";

    fn begin(self, registry: &mut RouteRegistry) -> Step<AddTopicCount> {
        Step::Done(AddTopicCount(registry.tables.add_write_perm(&self.name)))
    }
}

impl Change for DeleteTopic {
    const NAME: &'static str = "DeleteTopic";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        registry
            .tables
            .delete_topic(&self.topic, self.cluster.as_deref());
        Step::Done(())
    }
}

impl Change for RegisterTopic {
    const NAME: &'static str = "RegisterTopic";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        registry
            .tables
            .register_topic(&self.topic, &self.queue_datas);
        Step::Done(())
    }
}

impl Change for ApplySettings {
    const NAME: &'static str = "ApplySettings";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        let new = self.settings;
        let old = &registry.settings;
        // Switches that change what a route shows, or whether it may be shown (the ready
        // window), make every cached route go.
        if new.order_message_enable != old.order_message_enable
            || new.need_wait_for_service != old.need_wait_for_service
            || new.wait_for_service != old.wait_for_service
        {
            registry.tables.invalidate_all();
        }
        registry.tables.set_options(new.route_options());
        registry.tables.set_default_expiry(new.broker_expiry);
        info!(settings = ?new, "registry settings applied");
        registry.settings = new;
        Step::Done(())
    }
}

impl Change for OrderTopicConfChanged {
    const NAME: &'static str = "OrderTopicConfChanged";

    fn begin(self, registry: &mut RouteRegistry) -> Step<()> {
        registry.change_order_conf(self.change);
        Step::Done(())
    }
}
