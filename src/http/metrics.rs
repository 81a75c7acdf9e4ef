//! `GET /metrics`: a scrape asks each actor for its figures (every connection thread for its
//! counters, the registry, the KV store, the limits, housekeeping), merges them into one
//! `Scrape` and encodes it with prometheus-client. Nothing is counted on the request path but
//! the connection threads' own counters (docs/metrics.md).
//!
//! Each family is declared once: the connection threads' in the table of rmq_actors::metrics,
//! the other owners' (and this build's) in `owners.rs`. `encode.rs` writes both.

mod controller;
mod encode;
mod figures;
mod owners;

use std::collections::BTreeMap;

use actix_web::http::header::{CacheControl, CacheDirective};
use actix_web::{web, HttpResponse};
use prometheus_client::registry::Registry;
use rmq_actors::metrics::{code_names, WorkerSnapshot};

use super::Observed;
use encode::Collected;
pub(crate) use figures::{collect, Scrape};

pub(crate) async fn scrape(observed: web::Data<Observed>) -> HttpResponse {
    let scrape = collect(&observed, false).await;
    let mut registry = Registry::with_prefix("rmq_namesrv");
    registry.register_collector(Box::new(Collected(scrape)));
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => HttpResponse::Ok()
            .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
            .insert_header(CacheControl(vec![CacheDirective::NoStore]))
            .body(text),
        Err(err) => HttpResponse::InternalServerError().body(format!("cannot encode: {err}\n")),
    }
}

/// Requests answered per request name, all response codes together (the status page).
pub(crate) fn requests_by_name(workers: &WorkerSnapshot) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (code, stats) in &workers.requests {
        let (code, name) = code_names(*code);
        *out.entry(format!("{name} ({code})")).or_insert(0) += stats.count;
    }
    out
}
