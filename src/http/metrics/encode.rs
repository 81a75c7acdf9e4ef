//! Writes the families with prometheus-client: the connection threads' (the table of
//! rmq_actors::metrics) and the other owners' (owners.rs), each with the label sets it shows
//! at zero.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use rmq_actors::access::{AccessClass, Refusal};
use rmq_actors::metrics::{Every, Family, Kind, Sample, Value};

use super::controller;
use super::figures::Scrape;
use super::owners::{BUILD_INFO, NAMESRV_ONLY, OWNED};

/// One scrape as a prometheus-client collector.
#[derive(Debug)]
pub(super) struct Collected(pub Scrape);

impl Collector for Collected {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let scrape = &self.0;
        write(
            &mut encoder,
            &BUILD_INFO.family,
            (BUILD_INFO.samples)(scrape),
        )?;
        for (family, samples) in scrape.workers.families() {
            write(&mut encoder, &family, samples)?;
        }
        for owned in &OWNED {
            if !scrape.namesrv && NAMESRV_ONLY.contains(&owned.family.name) {
                continue;
            }
            write(&mut encoder, &owned.family, (owned.samples)(scrape))?;
        }
        // The controller's families only when it runs (a NameServer without one shows none).
        if let Some(controller) = &scrape.controller {
            for owned in &controller::FAMILIES {
                write(&mut encoder, &owned.family, (owned.samples)(controller))?;
            }
        }
        Ok(())
    }
}

/// One family: its descriptor, then its samples.
fn write(encoder: &mut DescriptorEncoder, family: &Family, samples: Vec<Sample>) -> fmt::Result {
    let kind = match family.kind {
        Kind::Counter => MetricType::Counter,
        Kind::Gauge => MetricType::Gauge,
        Kind::Histogram => MetricType::Histogram,
    };
    let mut descriptor = encoder.encode_descriptor(family.name, family.help, None, kind)?;
    for sample in with_zeros(family.every, samples) {
        let labels: Vec<(&str, String)> =
            family.labels.iter().copied().zip(sample.labels).collect();
        let mut metric = descriptor.encode_family(&labels)?;
        match sample.value {
            Value::Number(n) if family.kind == Kind::Counter => {
                metric.encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
            Value::Number(n) => metric.encode_gauge(&i64::try_from(n).unwrap_or(i64::MAX))?,
            Value::Real(x) => metric.encode_gauge(&x)?,
            Value::Histogram {
                buckets,
                sum,
                count,
            } => metric.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?,
        }
    }
    Ok(())
}

/// The samples of every label set the family shows at zero, in that order (each with its count,
/// or 0), then the others counted.
fn with_zeros(every: Every, mut counted: Vec<Sample>) -> Vec<Sample> {
    let every: Vec<Vec<String>> = match every {
        Every::Counted => return counted,
        Every::Listed(sets) => sets
            .iter()
            .map(|set| set.iter().map(|v| (*v).to_owned()).collect())
            .collect(),
        Every::AccessClassAndRefusal => AccessClass::ALL
            .iter()
            .flat_map(|class| {
                Refusal::ALL
                    .iter()
                    .map(move |reason| vec![class.name().to_owned(), reason.name().to_owned()])
            })
            .collect(),
    };
    let mut shown: Vec<Sample> = every
        .into_iter()
        .map(
            |labels| match counted.iter().position(|s| s.labels == labels) {
                Some(at) => counted.remove(at),
                None => Sample::number(labels, 0),
            },
        )
        .collect();
    shown.append(&mut counted);
    shown
}

#[cfg(test)]
mod tests {
    use prometheus_client::registry::Registry;
    use rmq_actors::metrics::WorkerSnapshot;

    use super::*;

    fn exposition(scrape: Scrape) -> String {
        let mut registry = Registry::with_prefix("rmq_namesrv");
        registry.register_collector(Box::new(Collected(scrape)));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encodes");
        text
    }

    #[test]
    fn every_family_is_written_once_with_its_zeros() {
        let mut scrape = Scrape {
            namesrv: true,
            ..Scrape::default()
        };
        scrape.workers.access_refusals.add(["read", "no_signature"]);
        scrape.workers.access_refusals.add(["read", "no_signature"]);
        let text = exposition(scrape);
        let types: Vec<_> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let mut unique = types.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), types.len(), "a family written twice");
        let worker_families = WorkerSnapshot::default().families().len();
        assert_eq!(types.len(), 1 + worker_families + OWNED.len());
        // A standalone controller's scrape: no NameServer family.
        let alone = exposition(Scrape::default());
        let types = alone.lines().filter(|l| l.starts_with("# TYPE")).count();
        let shown = OWNED.len() - NAMESRV_ONLY.len();
        assert_eq!(types, 1 + worker_families + shown);
        assert!(!alone.contains("rmq_namesrv_topics "));

        let access: Vec<_> = text
            .lines()
            .filter(|l| l.starts_with("rmq_namesrv_access_refusals_total{"))
            .collect();
        assert_eq!(access.len(), AccessClass::ALL.len() * Refusal::ALL.len());
        // In the order of the classes, then the reasons: read is the second class.
        assert_eq!(
            access.get(Refusal::ALL.len() + 1).copied(),
            Some("rmq_namesrv_access_refusals_total{class=\"read\",reason=\"no_signature\"} 2")
        );
        assert_eq!(text.matches("rmq_namesrv_frame_errors_total{").count(), 5);
    }
}
