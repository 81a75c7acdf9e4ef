//! What a metric is shown as (a [`Family`] and its [`Sample`]s), without the exposition format:
//! the daemon writes them with prometheus-client (src/http/metrics). And the two traits the
//! table's types implement: [`Counted`] on a connection thread, [`Figure`] in a scrape.

use std::collections::BTreeMap;

/// The type of a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// The label sets a family shows even when nothing was counted under them (so alerts can
/// `rate()` them from the start), in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Every {
    /// Only the label sets counted.
    Counted,
    /// These label sets (each as many values as the family has labels).
    Listed(&'static [&'static [&'static str]]),
    /// Every access class (`class`) with every refusal (`reason`), in their declared order. The
    /// access module owns both lists and sits on this module's rung of the import ladder
    /// (tests/layering.rs), so the exposition, which sees both, lists them.
    AccessClassAndRefusal,
}

/// One metric family: what the exposition writes before its samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    /// Without the `rmq_namesrv_` prefix and, for counters, the `_total` suffix.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    /// The label names; every sample has one value per name, in this order.
    pub labels: &'static [&'static str],
    pub every: Every,
}

impl Family {
    /// A family that shows only what was counted.
    pub const fn new(
        name: &'static str,
        help: &'static str,
        kind: Kind,
        labels: &'static [&'static str],
    ) -> Self {
        Family {
            name,
            help,
            kind,
            labels,
            every: Every::Counted,
        }
    }
}

/// One sample's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A counter's or gauge's value.
    Number(u64),
    /// A gauge's value that is not a whole number (seconds left).
    Real(f64),
    /// Per bucket (upper bound, requests in it; not cumulative, the last bound +Inf), the sum
    /// in seconds and the count.
    Histogram {
        buckets: Vec<(f64, u64)>,
        sum: f64,
        count: u64,
    },
}

/// One sample of a family: its label values (in the order of [`Family::labels`]) and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Vec<String>,
    pub value: Value,
}

impl Sample {
    pub fn number(labels: Vec<String>, n: u64) -> Self {
        Sample {
            labels,
            value: Value::Number(n),
        }
    }

    /// The only sample of a family without labels.
    pub fn one(n: u64) -> Vec<Sample> {
        vec![Sample::number(Vec::new(), n)]
    }
}

/// What a connection thread counts into, for one row of the table: no lock, no atomic, no
/// shared map (the thread owns it).
pub trait Counted: Default {
    /// The copy a scrape receives.
    type Copy: Figure;

    fn copy(&self) -> Self::Copy;
}

/// A copy of one row's figures: merged across threads, then shown.
pub trait Figure: Default + Clone {
    /// Adds another thread's.
    fn merge(&mut self, other: &Self);

    /// The samples of the row's family of this kind (a row shows one family per kind).
    fn samples(&self, kind: Kind) -> Vec<Sample>;
}

/// Counted by one: `add()`.
#[derive(Debug, Default)]
pub struct Count(u64);

impl Count {
    pub fn add(&mut self) {
        self.0 += 1;
    }
}

impl Counted for Count {
    type Copy = u64;

    fn copy(&self) -> u64 {
        self.0
    }
}

impl Figure for u64 {
    fn merge(&mut self, other: &Self) {
        *self += other;
    }

    fn samples(&self, _: Kind) -> Vec<Sample> {
        Sample::one(*self)
    }
}

/// A gauge a thread reports when asked (sampled at the scrape, not counted); the threads' values
/// add up.
impl Figure for usize {
    fn merge(&mut self, other: &Self) {
        *self += other;
    }

    fn samples(&self, _: Kind) -> Vec<Sample> {
        Sample::one(*self as u64)
    }
}

/// Counted by one under `N` label values: `add([value, ...])`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labelled<const N: usize>(BTreeMap<[&'static str; N], u64>);

impl<const N: usize> Labelled<N> {
    pub fn add(&mut self, labels: [&'static str; N]) {
        *self.0.entry(labels).or_insert(0) += 1;
    }
}

impl<const N: usize> Counted for Labelled<N> {
    type Copy = Labelled<N>;

    fn copy(&self) -> Self {
        self.clone()
    }
}

impl<const N: usize> Figure for Labelled<N> {
    fn merge(&mut self, other: &Self) {
        for (labels, n) in &other.0 {
            *self.0.entry(*labels).or_insert(0) += n;
        }
    }

    fn samples(&self, _: Kind) -> Vec<Sample> {
        self.0
            .iter()
            .map(|(labels, n)| {
                let labels = labels.iter().map(|l| (*l).to_owned()).collect();
                Sample::number(labels, *n)
            })
            .collect()
    }
}
