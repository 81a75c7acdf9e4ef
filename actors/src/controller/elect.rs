//! Java's `DefaultElectPolicy`: who becomes master when the controller elects, given the broker
//! set and what the live brokers last reported. Pure.

use std::collections::BTreeSet;

use super::broker_set::BrokerSet;
use super::liveness::{LiveInfo, Liveness};

/// `DefaultElectPolicy`: among the SyncStateSet first, then (unclean) among all members.
pub(super) fn elect(
    set: &BrokerSet,
    old: Option<i64>,
    preferred: Option<i64>,
    unclean: bool,
    live: &impl Liveness,
) -> Option<i64> {
    let all: BTreeSet<i64> = set.members.keys().copied().collect();
    try_elect(set, &set.sync_state_set, old, preferred, live).or_else(|| {
        unclean
            .then(|| try_elect(set, &all, old, preferred, live))
            .flatten()
    })
}

fn try_elect(
    set: &BrokerSet,
    among: &BTreeSet<i64>,
    old: Option<i64>,
    preferred: Option<i64>,
    live: &impl Liveness,
) -> Option<i64> {
    let alive: Vec<i64> = among
        .iter()
        .copied()
        .filter(|id| live.alive(&set.cluster, &set.name, *id))
        .collect();
    if alive.is_empty() {
        return None;
    }
    if let Some(old) = old.filter(|o| alive.contains(o)) {
        if preferred.is_none_or(|p| p == old) {
            return Some(old);
        }
    }
    if let Some(preferred) = preferred {
        return alive.contains(&preferred).then_some(preferred);
    }
    // Highest epoch, then highest max offset, then lowest priority; ties to the lowest id.
    alive.into_iter().min_by_key(|id| {
        let info = live.info(&set.cluster, &set.name, *id).unwrap_or(LiveInfo {
            epoch: -1,
            max_offset: -1,
            priority: i32::MAX,
        });
        (
            std::cmp::Reverse(info.epoch),
            std::cmp::Reverse(info.max_offset),
            info.priority,
            *id,
        )
    })
}
