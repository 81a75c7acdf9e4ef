//! The route side of the run: the topology (the dev cluster's simulated brokers, plus two victim
//! brokers whose connections get killed mid-frame), the closing of broker windows, and the
//! judged route lookups.
//!
//! A lookup of topic T on NameServer N, sent at `send` and answered at `recv`, *requires* every
//! broker instance hosting T for which no window of N (down, registry reset, or that broker's own
//! window) overlaps `[send, recv]` — a slave only when its master is required too. The answer
//! must list every required instance (and a queue entry for every required master); a failed
//! lookup must overlap a window that explains it. A broker window closes when the broker has had
//! a registration acknowledged that it *sent* after the fault was over: registrations of one
//! broker to one NameServer are sequential, so that is the second acknowledgement counted after
//! the fault, or for a victim, the first after its reconnection.
//!
//! The parts: `topology` (who hosts what), `brokers` (the running brokers, the victims' links
//! and the closing of broker windows), `lookups` (the judged lookups) and `final_check` (what
//! must be there after the quiet period).

mod brokers;
mod final_check;
mod lookups;
mod topology;

pub use brokers::{BrokerSettings, Brokers, Kill};
pub use final_check::{final_check, route_request};
pub use lookups::{lookups, LookupSettings};
pub use topology::{Topology, NO_SUCH_TOPIC, SHARED_TOPIC};
