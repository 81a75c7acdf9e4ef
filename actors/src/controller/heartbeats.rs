//! The controller's heartbeat table (Java's `DefaultBrokerHeartbeatManager`): which brokers are
//! alive, and what they last reported for elections. Local to each controller node, never
//! stored: brokers heartbeat every controller they reach. Pure: time is passed in.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rmq_protocol::custom_headers::BrokerHeartbeatHeader;

use super::liveness::{LiveInfo, Liveness};
use crate::route::ConnId;

/// The timeout of a heartbeat that names none (Java's default `controllerHeartBeatTimeoutMills`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest heartbeat timeout honoured: a broker asking for more gets this (and `Instant`
/// arithmetic never overflows on an absurd value).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// Most brokers tracked at once, and most bytes their names and addresses take; heartbeats of
/// further unknown brokers are dropped (a real fleet has a few thousand brokers of about 100
/// bytes each, a flood of invented ones must not grow the table without bound, in entries or in
/// bytes: every field is at most `stored::MAX_NAME_BYTES` already).
pub const MAX_ENTRIES: usize = 65_536;
pub const MAX_BYTES: usize = 16 << 20;

/// What an entry takes besides its strings (the key's and entry's fixed parts, the map's own).
const ENTRY_OVERHEAD: usize = 128;

/// (cluster, broker name, broker id).
type Key = (String, String, i64);

#[derive(Debug, Clone)]
struct Entry {
    last: Instant,
    timeout: Duration,
    /// The connection of the entry's first heartbeat: closing it removes the entry.
    conn: ConnId,
    address: String,
    info: LiveInfo,
}

/// One heartbeat table, evaluated at `now` for [`Liveness`].
#[derive(Debug, Default)]
pub struct Heartbeats {
    entries: HashMap<Key, Entry>,
    /// The bytes of the entries' strings and overhead.
    bytes: usize,
    /// Heartbeats dropped since the table was last below its bounds (logged once per run).
    dropped: u64,
}

fn entry_bytes(key: &Key, address: &str) -> usize {
    key.0.len() + key.1.len() + address.len() + ENTRY_OVERHEAD
}

/// A broker that stopped being alive: its key and address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub cluster: String,
    pub name: String,
    pub id: i64,
    pub address: String,
    pub conn: ConnId,
}

impl Heartbeats {
    /// Records a heartbeat (904) that names a broker id. Epoch and offsets are replaced only by
    /// newer ones (a higher epoch, or the same with a higher max offset), as Java does.
    pub fn beat(&mut self, h: &BrokerHeartbeatHeader, id: i64, conn: ConnId, now: Instant) {
        let timeout = h
            .heartbeat_timeout_mills
            .and_then(|ms| u64::try_from(ms).ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_millis)
            .min(MAX_TIMEOUT);
        let reported = LiveInfo {
            epoch: h.epoch.unwrap_or(-1),
            max_offset: h.max_offset.unwrap_or(-1),
            priority: h.election_priority.unwrap_or(i32::MAX),
        };
        let key = (
            h.cluster_name.clone(),
            h.broker_name.clone().unwrap_or_default(),
            id,
        );
        let size = entry_bytes(&key, &h.broker_addr);
        let full = self.entries.len() >= MAX_ENTRIES || self.bytes + size > MAX_BYTES;
        match self.entries.get_mut(&key) {
            Some(entry) => {
                entry.last = now;
                entry.timeout = timeout;
                self.bytes = (self.bytes + h.broker_addr.len()).saturating_sub(entry.address.len());
                entry.address.clone_from(&h.broker_addr);
                entry.info.priority = reported.priority;
                let newer = reported.epoch > entry.info.epoch
                    || (reported.epoch == entry.info.epoch
                        && reported.max_offset > entry.info.max_offset);
                if newer {
                    entry.info.epoch = reported.epoch;
                    entry.info.max_offset = reported.max_offset;
                }
            }
            None if full => {
                if self.dropped == 0 {
                    tracing::warn!(
                        broker = %crate::logging::Clipped(&h.broker_addr),
                        entries = self.entries.len(),
                        bytes = self.bytes,
                        "controller heartbeat table full ({MAX_ENTRIES} brokers or {MAX_BYTES} bytes); heartbeats of new brokers dropped"
                    );
                }
                self.dropped += 1;
            }
            None => {
                self.dropped = 0;
                self.bytes += size;
                self.entries.insert(
                    key,
                    Entry {
                        last: now,
                        timeout,
                        conn,
                        address: h.broker_addr.clone(),
                        info: reported,
                    },
                );
            }
        }
    }

    /// Removes the brokers whose heartbeats came on `conn` (it closed).
    pub fn closed(&mut self, conn: ConnId) -> Vec<Lost> {
        self.remove_where(|e| e.conn == conn)
    }

    /// Removes the brokers whose heartbeat is older than their timeout.
    pub fn expire(&mut self, now: Instant) -> Vec<Lost> {
        self.remove_where(|e| e.last + e.timeout < now)
    }

    fn remove_where(&mut self, gone: impl Fn(&Entry) -> bool) -> Vec<Lost> {
        let keys: Vec<Key> = self
            .entries
            .iter()
            .filter(|(_, e)| gone(e))
            .map(|(k, _)| k.clone())
            .collect();
        keys.into_iter()
            .filter_map(|key| {
                let entry = self.entries.remove(&key)?;
                self.bytes = self.bytes.saturating_sub(entry_bytes(&key, &entry.address));
                let (cluster, name, id) = key;
                Some(Lost {
                    cluster,
                    name,
                    id,
                    address: entry.address,
                    conn: entry.conn,
                })
            })
            .collect()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The bytes the table's entries take, about.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The table as seen at `now`.
    pub fn at(&self, now: Instant) -> LiveAt<'_> {
        LiveAt { table: self, now }
    }
}

/// [`Heartbeats`] at one instant.
pub struct LiveAt<'a> {
    table: &'a Heartbeats,
    now: Instant,
}

impl LiveAt<'_> {
    fn entry(&self, cluster: &str, name: &str, id: i64) -> Option<&Entry> {
        let key = (cluster.to_owned(), name.to_owned(), id);
        self.table
            .entries
            .get(&key)
            .filter(|e| e.last + e.timeout >= self.now)
    }
}

impl LiveAt<'_> {
    /// How long ago broker `id` of set (cluster, name) last beat, and its timeout, if the table
    /// holds it (alive or expired but not yet scanned).
    pub fn last_beat(&self, cluster: &str, name: &str, id: i64) -> Option<(Duration, Duration)> {
        let key = (cluster.to_owned(), name.to_owned(), id);
        let entry = self.table.entries.get(&key)?;
        Some((
            self.now.saturating_duration_since(entry.last),
            entry.timeout,
        ))
    }

    /// The brokers alive now per (cluster, broker name): Java's `getActiveBrokersNum`.
    pub fn active_by_set(&self) -> BTreeMap<(String, String), usize> {
        let mut active = BTreeMap::new();
        let alive = self.table.entries.iter();
        for ((cluster, name, _), _) in alive.filter(|(_, e)| e.last + e.timeout >= self.now) {
            *active.entry((cluster.clone(), name.clone())).or_insert(0) += 1;
        }
        active
    }
}

impl Liveness for LiveAt<'_> {
    fn alive(&self, cluster: &str, name: &str, id: i64) -> bool {
        self.entry(cluster, name, id).is_some()
    }

    fn info(&self, cluster: &str, name: &str, id: i64) -> Option<LiveInfo> {
        self.entry(cluster, name, id).map(|e| e.info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str) -> BrokerHeartbeatHeader {
        BrokerHeartbeatHeader {
            cluster_name: "c".repeat(1024),
            broker_name: Some(name.to_owned()),
            broker_addr: "127.0.0.1:10911".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_table_is_bounded_in_bytes_and_known_brokers_still_beat() {
        let mut table = Heartbeats::default();
        let now = Instant::now();
        let long = "n".repeat(1000);
        for i in 0..20_000 {
            table.beat(&header(&format!("{i}{long}")), 1, ConnId(1), now);
        }
        assert!(table.bytes() <= MAX_BYTES, "{}", table.bytes());
        assert!(
            table.len() < 20_000 && table.len() > 5_000,
            "{}",
            table.len()
        );
        let held = table.len();
        // A broker already known keeps beating; a new one is dropped while full.
        table.beat(&header(&format!("0{long}")), 1, ConnId(1), now);
        table.beat(&header("new"), 1, ConnId(1), now);
        assert_eq!(table.len(), held);
        // Closing the connection frees every byte.
        assert_eq!(table.closed(ConnId(1)).len(), held);
        assert_eq!((table.len(), table.bytes()), (0, 0));
    }
}
