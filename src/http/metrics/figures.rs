//! What one scrape shows, asked of every actor.

use rmq_actors::limits::{Limit, LimitCounts};
use rmq_actors::messages::{
    GetKvStats, GetRegistryMetrics, GoAwayCount, KvStats, OpenConnections, RegistryMetrics,
};
use rmq_actors::metrics::{CollectWorkerMetrics, WorkerSnapshot};

use std::sync::Arc;

use crate::fleet::{FleetReport, LatestFindings};
use crate::health::Health;
use crate::http::Observed;

/// Everything one scrape shows.
#[derive(Debug, Default)]
pub(crate) struct Scrape {
    pub workers: WorkerSnapshot,
    pub registry: RegistryMetrics,
    pub kv: KvStats,
    pub limits: Vec<(Limit, u64)>,
    pub open_connections: usize,
    pub go_away: u64,
    pub health: Option<Health>,
    /// The latest fleet check, when `[fleet]` is on and a check has ended.
    pub fleet: Option<Arc<FleetReport>>,
}

/// Collects a scrape from every actor; an actor that does not answer contributes nothing.
pub(crate) async fn collect(observed: &Observed, with_kv_table: bool) -> Scrape {
    let mut scrape = Scrape::default();
    for keeper in &observed.keepers {
        if let Ok(worker) = keeper.send(CollectWorkerMetrics).await {
            scrape.workers.merge(&worker);
        }
    }
    scrape.registry = observed
        .routes
        .send(GetRegistryMetrics)
        .await
        .unwrap_or_default();
    scrape.kv = observed
        .kv
        .send(GetKvStats {
            with_table: with_kv_table,
        })
        .await
        .unwrap_or_default();
    scrape.limits = observed.limits.send(LimitCounts).await.unwrap_or_default();
    scrape.open_connections = observed
        .housekeeping
        .send(OpenConnections)
        .await
        .unwrap_or(0);
    scrape.go_away = observed.housekeeping.send(GoAwayCount).await.unwrap_or(0);
    scrape.health = Some((observed.health)().await);
    if let Some(fleet) = &observed.fleet {
        scrape.fleet = fleet.send(LatestFindings).await.ok().flatten();
    }
    scrape
}
