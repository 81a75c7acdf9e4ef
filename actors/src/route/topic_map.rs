//! The topic table, laid out for size: a table of a million topics is the NameServer's largest
//! structure, and each topic costs about its name plus 16 bytes per broker group.
//!
//! Topics are records in one dense vector (name inline up to 24 bytes, the queues of up to two
//! groups inline), found through a hash index of 4-byte positions. A removal moves the last
//! record into the hole (its position in the index is updated), so the vector stays dense and
//! the index is the only sparse part. Unused capacity is never touched, so it is not resident.

use std::cmp::Ordering;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use compact_str::CompactString;
use hashbrown::HashTable;
use smallvec::SmallVec;

use super::ids::BrokerName;

/// The queues one broker group serves for one topic (a QueueData without its broker name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Queues {
    pub read: i32,
    pub write: i32,
    pub perm: i32,
    pub sys_flag: i32,
}

/// One topic's queues per broker group, ordered by group name (the order routes list them in).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct GroupQueues(SmallVec<[(BrokerName, Queues); 2]>);

impl GroupQueues {
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }

    #[cfg(test)]
    pub(super) fn get(&self, name: &str) -> Option<&Queues> {
        self.position(name).ok().map(|at| &self.0[at].1)
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut Queues> {
        self.position(name).ok().map(|at| &mut self.0[at].1)
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    /// Where `name` is or goes, looked for first at `rank`: the groups of a broker's topics are
    /// mostly the same, so its rank in one topic is its rank in the next. Two neighbouring
    /// entries are read then, where a search reads one cache line per step of a list that can
    /// be a thousand groups long (and a registration walks a thousand such lists).
    fn position_from(&self, name: &str, rank: usize) -> Result<usize, usize> {
        let entries = &self.0;
        let after_previous = match rank.checked_sub(1) {
            None => true,
            Some(previous) => entries
                .get(previous)
                .is_some_and(|(n, _)| n.as_str() < name),
        };
        if after_previous {
            match entries.get(rank).map(|(n, _)| n.as_str().cmp(name)) {
                None if rank == entries.len() => return Err(rank),
                Some(Ordering::Greater) => return Err(rank),
                Some(Ordering::Equal) => return Ok(rank),
                _ => {}
            }
        }
        self.position(name)
    }

    /// Sets the queues of group `name`; answers whether anything changed.
    pub(super) fn set(&mut self, name: &BrokerName, queues: Queues) -> bool {
        let mut anywhere = usize::MAX;
        self.set_from(name, queues, &mut anywhere)
    }

    /// [`GroupQueues::set`], looking first at `rank` (see [`GroupQueues::position_from`]), which
    /// it sets to where `name` is now.
    pub(super) fn set_from(&mut self, name: &BrokerName, queues: Queues, rank: &mut usize) -> bool {
        let found = self.position_from(name.as_str(), *rank);
        *rank = found.unwrap_or_else(|at| at);
        match found {
            Ok(at) if self.0[at].1 == queues => false,
            Ok(at) => {
                self.0[at].1 = queues;
                true
            }
            Err(at) => {
                if self.0.len() == self.0.capacity() {
                    // An eighth more, not double: a topic on 10 groups then holds 10 entries,
                    // not 16 (a third of the table at 10 groups was unused capacity). A group
                    // is added once per topic, so the more frequent moves cost little.
                    self.0.reserve_exact((self.0.len() / 8).max(2));
                }
                self.0.insert(at, (name.clone(), queues));
                true
            }
        }
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<Queues> {
        let at = self.position(name).ok()?;
        Some(self.0.remove(at).1)
    }

    pub(super) fn retain(&mut self, mut keep: impl FnMut(&BrokerName) -> bool) {
        self.0.retain(|(name, _)| keep(name));
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&BrokerName, &Queues)> {
        self.0.iter().map(|(name, queues)| (name, queues))
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &BrokerName> {
        self.0.iter().map(|(name, _)| name)
    }

    /// The queues of the first group (by name).
    pub(super) fn first(&self) -> Option<&Queues> {
        self.0.first().map(|(_, queues)| queues)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Debug)]
struct Record {
    name: CompactString,
    queues: GroupQueues,
}

/// Every topic with its queues. See the module docs.
#[derive(Debug, Default)]
pub(super) struct TopicMap {
    records: Vec<Record>,
    /// Positions in `records`, hashed by name.
    index: HashTable<u32>,
    hasher: RandomState,
    /// Counts every change of the set of names (a topic made or removed).
    names_version: u64,
}

impl TopicMap {
    pub(super) fn len(&self) -> usize {
        self.records.len()
    }

    /// Changes whenever a topic is made or removed.
    pub(super) fn names_version(&self) -> u64 {
        self.names_version
    }

    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// Where `name`'s record is.
    fn find(&self, name: &str) -> Option<usize> {
        let records = &self.records;
        self.index
            .find(self.hash(name), |&at| records[at as usize].name == name)
            .map(|&at| at as usize)
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    pub(super) fn get(&self, name: &str) -> Option<&GroupQueues> {
        self.find(name).map(|at| &self.records[at].queues)
    }

    pub(super) fn get_mut(&mut self, name: &str) -> Option<&mut GroupQueues> {
        self.find(name).map(|at| &mut self.records[at].queues)
    }

    /// The queues of `name`, a new empty topic if it has none; and whether it is new.
    pub(super) fn get_or_insert(&mut self, name: &str) -> (&mut GroupQueues, bool) {
        if let Some(at) = self.find(name) {
            return (&mut self.records[at].queues, false);
        }
        let at = self.records.len();
        // A table is bounded far below 2^32 topics by the frames that fill it.
        let position = u32::try_from(at).unwrap_or(u32::MAX);
        let (records, hasher) = (&self.records, &self.hasher);
        self.index
            .insert_unique(self.hasher.hash_one(name), position, |&at| {
                hasher.hash_one(records[at as usize].name.as_str())
            });
        self.names_version += 1;
        self.records.push(Record {
            name: CompactString::from(name),
            queues: GroupQueues::default(),
        });
        (&mut self.records[at].queues, true)
    }

    /// Puts `queues` into the topic's record, making it if needed.
    pub(super) fn insert(&mut self, name: &str, queues: GroupQueues) {
        *self.get_or_insert(name).0 = queues;
    }

    pub(super) fn remove(&mut self, name: &str) -> Option<GroupQueues> {
        let at = self.find(name)?;
        self.remove_at(at)
    }

    /// The topic at position `at` (positions run from 0 to `len`; a removal moves the last
    /// topic into the hole it leaves).
    pub(super) fn at_mut(&mut self, at: usize) -> Option<(&str, &mut GroupQueues)> {
        self.records
            .get_mut(at)
            .map(|r| (r.name.as_str(), &mut r.queues))
    }

    /// Removes the topic at position `at`; the last topic takes its place.
    pub(super) fn remove_at(&mut self, at: usize) -> Option<GroupQueues> {
        let hash = self.hash(&self.records.get(at)?.name);
        if let Ok(found) = self.index.find_entry(hash, |&p| p as usize == at) {
            found.remove();
        }
        let last = self.records.len() - 1;
        if at != last {
            // The last record moves into the hole: its index entry follows it.
            let moved = self.hash(&self.records[last].name);
            if let Some(slot) = self.index.find_mut(moved, |&p| p as usize == last) {
                *slot = u32::try_from(at).unwrap_or(u32::MAX);
            }
        }
        self.names_version += 1;
        let removed = self.records.swap_remove(at);
        self.shrink_if_sparse();
        Some(removed.queues)
    }

    /// Keeps the topics `keep` answers true for (it may change their queues).
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&str, &mut GroupQueues) -> bool) {
        let before = self.records.len();
        self.records
            .retain_mut(|record| keep(&record.name, &mut record.queues));
        if self.records.len() != before {
            self.names_version += 1;
            self.reindex();
            self.shrink_if_sparse();
        }
    }

    /// Rebuilds the index after records moved.
    fn reindex(&mut self) {
        self.index.clear();
        let (records, hasher) = (&self.records, &self.hasher);
        for (at, record) in records.iter().enumerate() {
            let position = u32::try_from(at).unwrap_or(u32::MAX);
            self.index
                .insert_unique(hasher.hash_one(record.name.as_str()), position, |&p| {
                    hasher.hash_one(records[p as usize].name.as_str())
                });
        }
    }

    /// Gives memory back once three quarters of the table are gone.
    fn shrink_if_sparse(&mut self) {
        let len = self.records.len();
        if len < self.records.capacity() / 4 {
            self.records.shrink_to(len * 2);
            let (records, hasher) = (&self.records, &self.hasher);
            self.index.shrink_to(len * 2, |&p| {
                hasher.hash_one(records[p as usize].name.as_str())
            });
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, &GroupQueues)> {
        self.records.iter().map(|r| (r.name.as_str(), &r.queues))
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut GroupQueues)> {
        self.records
            .iter_mut()
            .map(|r| (r.name.as_str(), &mut r.queues))
    }

    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.records.iter().map(|r| r.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queues(read: i32) -> Queues {
        Queues {
            read,
            write: read,
            perm: 6,
            sys_flag: 0,
        }
    }

    #[test]
    fn groups_stay_ordered_by_name() {
        let mut topic = GroupQueues::default();
        for name in ["b", "c", "a"] {
            assert!(topic.set(&BrokerName::new(name), queues(1)));
        }
        assert!(!topic.set(&BrokerName::new("b"), queues(1)));
        assert!(topic.set(&BrokerName::new("b"), queues(2)));
        let names: Vec<&str> = topic.names().map(BrokerName::as_str).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(topic.get("b"), Some(&queues(2)));
        assert_eq!(topic.remove("a"), Some(queues(1)));
        assert_eq!(topic.first(), Some(&queues(2)));
        assert!(!topic.contains("a"));
    }

    /// Whatever rank it is given (right, wrong, past the end), `set_from` lands where a search
    /// would, and leaves the rank at the group's place.
    #[test]
    fn a_rank_hint_never_changes_where_a_group_goes() {
        let names = ["b", "d", "f", "h"];
        for hint in 0..=6 {
            for name in ["a", "b", "c", "d", "e", "h", "i"] {
                let mut hinted = GroupQueues::default();
                let mut searched = GroupQueues::default();
                for n in names {
                    hinted.set(&BrokerName::new(n), queues(1));
                    searched.set(&BrokerName::new(n), queues(1));
                }
                let mut rank = hint;
                let changed = hinted.set_from(&BrokerName::new(name), queues(2), &mut rank);
                assert_eq!(changed, searched.set(&BrokerName::new(name), queues(2)));
                assert_eq!(hinted, searched, "{name} from rank {hint}");
                assert_eq!(hinted.0[rank].0.as_str(), name, "{name} from rank {hint}");
            }
        }
    }

    #[test]
    fn removals_keep_every_other_topic_findable() {
        let mut map = TopicMap::default();
        let names: Vec<String> = (0..1000).map(|i| format!("topic-{i}")).collect();
        for (i, name) in names.iter().enumerate() {
            let (topic, created) = map.get_or_insert(name);
            assert!(created);
            topic.set(&BrokerName::new("b"), queues(i as i32));
        }
        for name in names.iter().step_by(3) {
            assert!(map.remove(name).is_some());
        }
        assert!(map.remove("topic-0").is_none());
        map.retain(|name, _| !name.ends_with('7'));
        for (i, name) in names.iter().enumerate() {
            let expected = i % 3 != 0 && !name.ends_with('7');
            assert_eq!(map.contains(name), expected, "{name}");
            if expected {
                assert_eq!(
                    map.get(name).and_then(|q| q.get("b")),
                    Some(&queues(i as i32))
                );
            }
        }
        assert_eq!(map.len(), map.names().count());
        // Emptied one by one: the table shrinks and stays consistent.
        let left: Vec<String> = map.names().map(str::to_owned).collect();
        for name in &left {
            assert!(map.remove(name).is_some());
        }
        assert_eq!(map.len(), 0);
        assert!(map.get_or_insert("again").1);
        assert!(map.contains("again"));
    }
}
