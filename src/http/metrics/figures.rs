//! What one scrape shows, asked of every actor.

use rmq_actors::controller::observe::{ControllerSnapshot, DescribeController};
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
    /// Whether the NameServer's owners were asked (not in a standalone controller, whose
    /// scrape has no registry, KV or NameServer-port families).
    pub namesrv: bool,
    /// The controller's figures, when it runs.
    pub controller: Option<ControllerSnapshot>,
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
    scrape.limits = observed.limits.send(LimitCounts).await.unwrap_or_default();
    if let Some(namesrv) = &observed.namesrv {
        scrape.namesrv = true;
        scrape.registry = namesrv
            .routes
            .send(GetRegistryMetrics)
            .await
            .unwrap_or_default();
        scrape.kv = namesrv
            .kv
            .send(GetKvStats {
                with_table: with_kv_table,
            })
            .await
            .unwrap_or_default();
        scrape.open_connections = namesrv
            .housekeeping
            .send(OpenConnections)
            .await
            .unwrap_or(0);
        scrape.go_away = namesrv.housekeeping.send(GoAwayCount).await.unwrap_or(0);
    }
    scrape.health = Some((observed.health)().await);
    if let Some(controller) = &observed.controller {
        scrape.controller = controller.send(DescribeController).await.ok();
    }
    if let Some(fleet) = &observed.fleet {
        scrape.fleet = fleet.send(LatestFindings).await.ok().flatten();
    }
    scrape
}
