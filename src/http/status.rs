//! The status page `GET /` and its data `GET /api/status`: clusters, broker groups with each
//! address, role, RocketMQ version, data version, heartbeat age and expiry countdown; topics
//! with their queues and permissions (searchable with `?topic=`); KV namespaces; connections;
//! key counters; and when the controller runs, its section (`controller.rs`). The HTML is rendered here, with no script, build step or external asset, and
//! reloads itself every `http.page_refresh`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use actix_web::http::header::{CacheControl, CacheDirective, ContentType};
use actix_web::{web, HttpResponse};
use rmq_actors::messages::{
    BrokerStatus, ListBrokers, ListConnections, ListTopics, TopicsOverview,
};
use rmq_protocol::code::version;
use serde::Deserialize;
use serde_json::{json, Value};

use super::fleet_view::{fleet_json, render_fleet};
use super::metrics::{collect, requests_by_name, Scrape};
use super::{NamesrvObserved, Observed};

mod controller;

/// Topics shown at most (the search narrows them).
const TOPICS_SHOWN: usize = 500;
/// Connections listed at most.
const CONNECTIONS_SHOWN: usize = 500;
/// KV values and other client-given strings are shown clipped to this many characters.
const VALUE_SHOWN: usize = 200;

#[derive(Debug, Deserialize)]
pub(crate) struct Query {
    /// Show topics whose name contains this (case-insensitive).
    #[serde(default)]
    topic: String,
}

/// Everything the page shows, as JSON. A standalone controller has no routes, KV or
/// NameServer connections: its page has the server and the request counters only.
async fn status(observed: &Observed, filter: &str) -> Value {
    let scrape = collect(observed, true).await;
    let mut page = json!({
        "server": server_json(observed, &scrape),
        "controller": controller::json(scrape.controller.as_ref()),
        "fleet": fleet_json(&scrape, observed.fleet.is_some()),
        "refresh_seconds": observed.http.page_refresh.as_secs().max(1),
    });
    match &observed.namesrv {
        Some(namesrv) => {
            if let (Value::Object(page), Value::Object(tables)) =
                (&mut page, namesrv_json(namesrv, &scrape, filter).await)
            {
                page.extend(tables);
            }
        }
        None => {
            page["counters"] = json!({ "requests": requests_by_name(&scrape.workers) });
        }
    }
    page
}

/// The NameServer's part of the page: counters, clusters, topics, KV and connections.
async fn namesrv_json(namesrv: &NamesrvObserved, scrape: &Scrape, filter: &str) -> Value {
    let brokers = namesrv.routes.send(ListBrokers).await.unwrap_or_default();
    let topics = namesrv
        .routes
        .send(ListTopics {
            filter: clip(filter, VALUE_SHOWN),
            limit: TOPICS_SHOWN,
        })
        .await
        .unwrap_or_default();
    let connections = namesrv
        .housekeeping
        .send(ListConnections)
        .await
        .unwrap_or_default();
    json!({
        "counters": counters_json(scrape),
        "clusters": clusters_json(&brokers),
        "topics": {
            "filter": clip(filter, VALUE_SHOWN),
            "matched": topics.matched,
            "shown": topics_json(&topics),
        },
        "kv": kv_json(scrape),
        "connections": {
            "open": connections.len(),
            "shown": connections.iter().take(CONNECTIONS_SHOWN).map(|c| json!({
                "conn": c.conn.to_string(),
                "peer": c.peer.to_string(),
                "tls": c.tls,
            })).collect::<Vec<_>>(),
        },
    })
}

/// The server itself: version, address, uptime, readiness and health.
fn server_json(observed: &Observed, scrape: &Scrape) -> Value {
    let health = scrape.health.as_ref();
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "remoting_address": observed.remoting.to_string(),
        "uptime_seconds": observed.started.elapsed().as_secs(),
        "mode": if observed.namesrv.is_some() { "namesrv" } else { "controller" },
        "ready": observed.namesrv.is_none() || scrape.registry.ready,
        "healthy": health.is_none_or(|h| h.serving()),
        "panics_contained": health.map_or(0, |h| h.panics()),
    })
}

/// The key counters, and the requests answered by name.
fn counters_json(scrape: &Scrape) -> Value {
    json!({
        "live_brokers": scrape.registry.stats.live_brokers,
        "unconfirmed_brokers": scrape.registry.stats.unconfirmed_brokers,
        "broker_groups": scrape.registry.stats.broker_groups,
        "clusters": scrape.registry.stats.clusters,
        "topics": scrape.registry.stats.topics,
        "connections_open": scrape.open_connections,
        "kv_entries": scrape.kv.entries,
        "kv_save_failures": scrape.kv.save_failures,
        "registrations_new": scrape.registry.counters.registrations_new,
        "registrations_refreshed": scrape.registry.counters.registrations_refreshed,
        "registrations_unchanged_body": scrape.registry.counters.registrations_unchanged_body,
        "broker_expiries": scrape.registry.counters.expiries,
        "broker_channel_close_removals": scrape.registry.counters.channel_close_removals,
        "route_cache_hits": scrape.workers.route_cache_hits,
        "route_cache_misses": scrape.workers.route_cache_misses,
        "requests": requests_by_name(&scrape.workers),
    })
}

/// The brokers by cluster, then by broker group.
fn clusters_json(brokers: &[BrokerStatus]) -> Vec<Value> {
    let mut clusters: BTreeMap<&str, BTreeMap<String, Vec<Value>>> = BTreeMap::new();
    for broker in brokers {
        clusters
            .entry(broker.cluster.as_str())
            .or_default()
            .entry(broker.name.clone().unwrap_or_else(|| "(no group)".into()))
            .or_default()
            .push(broker_json(broker));
    }
    clusters
        .into_iter()
        .map(|(cluster, groups)| {
            json!({
                "cluster": cluster,
                "groups": groups.into_iter().map(|(name, brokers)| json!({
                    "name": name,
                    "brokers": brokers,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// The topics shown, each with its queues per broker group.
fn topics_json(topics: &TopicsOverview) -> Vec<Value> {
    topics
        .topics
        .iter()
        .map(|(topic, queues)| {
            json!({
                "topic": topic,
                "queues": queues.iter().map(|(broker, q)| json!({
                    "broker": broker,
                    "read": q.read,
                    "write": q.write,
                    "perm": q.perm,
                    "perm_text": rmq_protocol::body::perm::text(q.perm),
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// The KV namespaces and their entries, clipped.
fn kv_json(scrape: &Scrape) -> Vec<Value> {
    scrape
        .kv
        .table
        .iter()
        .flatten()
        .map(|(namespace, entries)| {
            json!({
                "namespace": clip(namespace, VALUE_SHOWN),
                "entries": entries.iter().map(|(k, v)| json!({
                    "key": clip(k, VALUE_SHOWN),
                    "value": clip(v, VALUE_SHOWN),
                    "value_len": v.len(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn broker_json(broker: &BrokerStatus) -> Value {
    let age = broker.since_last_update;
    let expires_in = broker.timeout.saturating_sub(age);
    json!({
        "address": broker.addr,
        "id": broker.id,
        "role": match broker.id {
            Some(0) => "master",
            Some(_) => "slave",
            None => "unlisted",
        },
        // The software version its latest REGISTER_BROKER request carried (MQVersion ordinal).
        "version": broker.mq_version,
        "version_name": version::name(broker.mq_version),
        "data_version": {
            "counter": broker.data_version.counter,
            "state_version": broker.data_version.state_version,
            "timestamp": broker.data_version.timestamp,
        },
        "heartbeat_age_seconds": secs(age),
        "expires_in_seconds": secs(expires_in),
        "connection": broker.conn.to_string(),
        // Restored from a snapshot at start (registry.warm_restart), not registered since.
        "unconfirmed": broker.unconfirmed,
    })
}

fn secs(d: Duration) -> f64 {
    (d.as_secs_f64() * 10.0).round() / 10.0
}

/// At most `max` characters of `text`, with "…" when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

pub(crate) async fn api(observed: web::Data<Observed>, query: web::Query<Query>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(CacheControl(vec![CacheDirective::NoStore]))
        .json(status(&observed, &query.topic).await)
}

pub(crate) async fn page(observed: web::Data<Observed>, query: web::Query<Query>) -> HttpResponse {
    let data = status(&observed, &query.topic).await;
    HttpResponse::Ok()
        .content_type(ContentType::html())
        .insert_header(CacheControl(vec![CacheDirective::NoStore]))
        .body(render(&data))
}

/// HTML-escapes a value's text.
fn esc(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// "1 topic", "2 topics" ("KV entry" becomes "KV entries").
fn count(n: &Value, what: &str) -> String {
    match n.as_u64().unwrap_or(0) {
        1 => format!("1 {what}"),
        n => match what.strip_suffix('y') {
            Some(stem) => format!("{n} {stem}ies"),
            None => format!("{n} {what}s"),
        },
    }
}

/// The mark of a broker restored from a snapshot and not registered since.
fn unconfirmed_mark(broker: &Value) -> &'static str {
    if broker["unconfirmed"].as_bool() == Some(true) {
        " <span class=\"bad unconfirmed\" title=\"restored from the route snapshot at start; \
         no registration since\">unconfirmed</span>"
    } else {
        ""
    }
}

/// `bad` once a broker has used up two thirds of its expiry timeout without a heartbeat.
fn expiry_class(broker: &Value) -> &'static str {
    let age = broker["heartbeat_age_seconds"].as_f64().unwrap_or(0.0);
    let left = broker["expires_in_seconds"].as_f64().unwrap_or(0.0);
    if left * 3.0 <= age + left {
        "bad"
    } else {
        "ok"
    }
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}\
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #ddd;padding:.2em .6em;\
text-align:left;font-size:.92em}th{background:#f4f4f4}.ok{color:#176f2c}.bad{color:#b00020}\
.muted{color:#777}.cards span{display:inline-block;border:1px solid #ddd;border-radius:4px;\
padding:.3em .7em;margin:.2em}";

/// The page, from the status JSON.
fn render(d: &Value) -> String {
    let mut h = String::with_capacity(16 * 1024);
    render_head(&mut h, d);
    render_counters(&mut h, d);
    controller::render(&mut h, &d["controller"]);
    render_fleet(&mut h, d, esc);
    // A standalone controller's page has no NameServer tables.
    if !d["clusters"].is_null() {
        render_clusters(&mut h, d);
        render_topics(&mut h, d);
        render_kv(&mut h, d);
        render_connections(&mut h, d);
    }
    h
}

/// The document head, the title line with health and readiness, and the summary line.
fn render_head(h: &mut String, d: &Value) {
    let server = &d["server"];
    let refresh = d["refresh_seconds"].as_u64().unwrap_or(5);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"{refresh}\">\
         <title>rmq-namesrv {addr}</title><style>{STYLE}</style></head><body>\
         <h1>rmq-namesrv <span id=\"address\">{addr}</span></h1><p>version {version}, up {up} s, \
         <span id=\"health\" class=\"{hclass}\">{health}</span>, \
         <span id=\"ready\" class=\"{rclass}\">{ready}</span>; \
         <span class=\"muted\">reloads every {refresh} s</span></p>\
         <p id=\"summary\">{summary}</p>",
        addr = esc(&server["remoting_address"]),
        version = esc(&server["version"]),
        up = esc(&server["uptime_seconds"]),
        hclass = if server["healthy"].as_bool() == Some(true) {
            "ok"
        } else {
            "bad"
        },
        health = if server["healthy"].as_bool() == Some(true) {
            "healthy"
        } else {
            "UNHEALTHY"
        },
        rclass = if server["ready"].as_bool() == Some(true) {
            "ok"
        } else {
            "bad"
        },
        ready = if server["ready"].as_bool() == Some(true) {
            "ready"
        } else {
            "not ready"
        },
        summary = summary(d),
    );
}

/// The summary line: the NameServer's tables by size, or what a standalone controller is.
fn summary(d: &Value) -> String {
    if d["clusters"].is_null() {
        return "standalone controller: no route tables, no NameServer port".to_owned();
    }
    [
        count(&d["counters"]["clusters"], "cluster"),
        count(&d["counters"]["broker_groups"], "broker group"),
        count(&d["counters"]["live_brokers"], "live broker"),
        count(&d["counters"]["topics"], "topic"),
        count(&d["counters"]["kv_entries"], "KV entry"),
        count(&d["connections"]["open"], "open connection"),
    ]
    .join(", ")
}

/// The counters as cards, and the requests answered by name.
fn render_counters(h: &mut String, d: &Value) {
    h.push_str(
        "<section id=\"counters-section\"><h2>Counters</h2><div class=\"cards\" id=\"counters\">",
    );
    if let Some(counters) = d["counters"].as_object() {
        for (name, value) in counters {
            if name != "requests" {
                let _ = write!(
                    h,
                    "<span>{}: <b>{}</b></span>",
                    esc(&json!(name)),
                    esc(value)
                );
            }
        }
    }
    h.push_str("</div><table id=\"requests\"><tr><th>request</th><th>answered</th></tr>");
    if let Some(requests) = d["counters"]["requests"].as_object() {
        for (name, n) in requests {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td></tr>",
                esc(&json!(name)),
                esc(n)
            );
        }
    }
    h.push_str("</table></section>");
}

/// One table per cluster: its brokers with role, versions, heartbeat age and expiry.
fn render_clusters(h: &mut String, d: &Value) {
    h.push_str("<section id=\"clusters\"><h2>Clusters</h2>");
    if items(&d["clusters"]).is_empty() {
        h.push_str("<p class=\"muted\">No broker registered.</p>");
    }
    for cluster in items(&d["clusters"]) {
        let _ = write!(
            h,
            "<h3 class=\"cluster\">{name}</h3><table class=\"brokers\" data-cluster=\"{name}\">\
             <tr><th>broker group</th><th>id</th><th>role</th><th>address</th>\
             <th>RocketMQ version</th><th>data version</th><th>heartbeat age</th>\
             <th>expires in</th></tr>",
            name = esc(&cluster["cluster"])
        );
        for group in items(&cluster["groups"]) {
            for broker in items(&group["brokers"]) {
                let _ = write!(
                    h,
                    "<tr class=\"broker\"><td>{}</td><td>{}</td><td class=\"role\">{}{}</td>\
                     <td>{}</td><td class=\"version\">{} ({})</td>\
                     <td title=\"counter/state version, timestamp {}\">{}/{}</td>\
                     <td>{} s</td><td class=\"{}\">{} s</td></tr>",
                    esc(&group["name"]),
                    esc(&broker["id"]),
                    esc(&broker["role"]),
                    unconfirmed_mark(broker),
                    esc(&broker["address"]),
                    esc(&broker["version_name"]),
                    esc(&broker["version"]),
                    esc(&broker["data_version"]["timestamp"]),
                    esc(&broker["data_version"]["counter"]),
                    esc(&broker["data_version"]["state_version"]),
                    esc(&broker["heartbeat_age_seconds"]),
                    expiry_class(broker),
                    esc(&broker["expires_in_seconds"]),
                );
            }
        }
        h.push_str("</table>");
    }
}

/// The topic search form and the matching topics' queues.
fn render_topics(h: &mut String, d: &Value) {
    let filter = esc(&d["topics"]["filter"]);
    let _ = write!(
        h,
        "</section><section id=\"topics-section\"><h2>Topics</h2>\
         <form method=\"get\" action=\"/\" role=\"search\"><label for=\"topic-search\">\
         Topic name contains</label> <input id=\"topic-search\" name=\"topic\" type=\"search\" \
         value=\"{filter}\"> <button type=\"submit\">Search</button>{clear}</form>\
         <p id=\"topics-matched\" class=\"muted\">{matched} matching{quoted}, {shown} shown</p>\
         <table id=\"topics\"><tr><th>topic</th><th>broker group</th><th>read queues</th>\
         <th>write queues</th><th>perm</th></tr>",
        clear = if filter.is_empty() {
            ""
        } else {
            " <a id=\"topic-clear\" href=\"/\">show all</a>"
        },
        quoted = if filter.is_empty() {
            String::new()
        } else {
            format!(" \u{201c}{filter}\u{201d}")
        },
        matched = esc(&d["topics"]["matched"]),
        shown = items(&d["topics"]["shown"]).len(),
    );
    for topic in items(&d["topics"]["shown"]) {
        for q in items(&topic["queues"]) {
            let _ = write!(
                h,
                "<tr class=\"topic\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} ({})</td></tr>",
                esc(&topic["topic"]),
                esc(&q["broker"]),
                esc(&q["read"]),
                esc(&q["write"]),
                esc(&q["perm_text"]),
                esc(&q["perm"]),
            );
        }
    }
    h.push_str("</table>");
    if items(&d["topics"]["shown"]).is_empty() {
        h.push_str(if filter.is_empty() {
            "<p id=\"no-topics\" class=\"muted\">No topic registered.</p>"
        } else {
            "<p id=\"no-topics\" class=\"muted\">No topic matches the search.</p>"
        });
    }
    h.push_str("</section>");
}

/// One table per KV namespace.
fn render_kv(h: &mut String, d: &Value) {
    h.push_str("<section id=\"kv\"><h2>KV namespaces</h2>");
    if items(&d["kv"]).is_empty() {
        h.push_str("<p class=\"muted\">No KV entry.</p>");
    }
    for ns in items(&d["kv"]) {
        let _ = write!(
            h,
            "<h3 class=\"namespace\">{name}</h3><table class=\"kv\" data-namespace=\"{name}\">\
             <tr><th>key</th><th>value</th></tr>",
            name = esc(&ns["namespace"])
        );
        for entry in items(&ns["entries"]) {
            let _ = write!(
                h,
                "<tr class=\"kv-entry\"><td>{}</td><td>{}</td></tr>",
                esc(&entry["key"]),
                esc(&entry["value"])
            );
        }
        h.push_str("</table>");
    }
}

/// The open connections, and the links to the other pages.
fn render_connections(h: &mut String, d: &Value) {
    let _ = write!(
        h,
        "</section><section id=\"connections-section\"><h2>Connections</h2><p>{} open</p>\
         <table id=\"connections\"><tr><th>connection</th><th>peer</th><th>TLS</th></tr>",
        esc(&d["connections"]["open"])
    );
    for c in items(&d["connections"]["shown"]) {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&c["conn"]),
            esc(&c["peer"]),
            esc(&c["tls"])
        );
    }
    h.push_str(
        "</table></section><p class=\"muted\">Also: <a href=\"/metrics\">/metrics</a>, \
         <a href=\"/health\">/health</a>, <a href=\"/ready\">/ready</a>, \
         <a href=\"/rocketmq/nsaddr\">/rocketmq/nsaddr</a>, \
         <a href=\"/api/status\">/api/status</a></p></body></html>",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_is_escaped_and_clipped() {
        assert_eq!(
            esc(&json!("<b a=\"x\">&'")),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hi", 2), "hi");
        assert_eq!(rmq_protocol::body::perm::text(6), "RW-");
    }

    #[test]
    fn the_page_escapes_client_text_and_closes_what_it_opens() {
        let hostile = "<script>alert(1)</script>";
        let data = json!({
            "server": { "remoting_address": "127.0.0.1:9876", "healthy": true, "ready": true },
            "counters": { "clusters": 1, "requests": { "REGISTER_BROKER": 1 } },
            "clusters": [{ "cluster": hostile, "groups": [{ "name": hostile, "brokers": [{
                "address": hostile, "id": 0, "role": "master",
                "data_version": { "counter": 1, "state_version": 0, "timestamp": 0 },
                "heartbeat_age_seconds": 100.0, "expires_in_seconds": 20.0,
            }]}]}],
            "topics": { "filter": hostile, "matched": 0, "shown": [] },
            "kv": [{ "namespace": hostile, "entries": [{ "key": hostile, "value": hostile }] }],
            "connections": { "open": 0, "shown": [] },
            "refresh_seconds": 5,
        });
        let page = render(&data);
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("No topic matches the search."));
        assert!(page.contains("1 cluster, 0 broker groups, "), "{page}");
        assert!(page.contains("<td class=\"bad\">20.0 s</td>"), "{page}");
        for tag in ["section", "table", "tr", "form", "p", "h3"] {
            let opened = page.matches(&format!("<{tag}>")).count()
                + page.matches(&format!("<{tag} ")).count();
            let closed = page.matches(&format!("</{tag}>")).count();
            assert_eq!(opened, closed, "<{tag}>: {page}");
        }
    }
}
