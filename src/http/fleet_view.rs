//! The status page's "fleet" section and its JSON (`/api/status` → `fleet`): the latest fleet
//! check (crate::fleet), naming what differs between this server and its peers.

use std::fmt::Write;
use std::time::UNIX_EPOCH;

use rmq_tools::fleet::DriftKind;
use serde_json::{json, Map, Value};

use super::metrics::Scrape;

/// `null` when `[fleet]` is off; `{"checked": false}` before the first check ends; else
/// `{"checked":true,"agrees":BOOL,"checked_at_ms":MS,"elapsed_ms":MS,"servers":[ADDR...],
/// "unreachable":[{"namesrv":ADDR,"error":TEXT}...],"topics":N,"counts":{KIND:N...},
/// "findings":[{"kind":KIND,"subject":TEXT,"values":{ADDR:VALUE|null}}...]}`.
pub(super) fn fleet_json(scrape: &Scrape, enabled: bool) -> Value {
    if !enabled {
        return Value::Null;
    }
    let Some(report) = &scrape.fleet else {
        return json!({ "checked": false });
    };
    let view = &report.view;
    let counts: Map<String, Value> = DriftKind::ALL
        .iter()
        .map(|k| {
            let n = view.counts.get(k).copied().unwrap_or(0);
            (k.label().to_owned(), json!(n))
        })
        .collect();
    let findings = view.findings_json();
    let at = report.at.duration_since(UNIX_EPOCH).unwrap_or_default();
    json!({
        "checked": true,
        "agrees": view.agrees(),
        "checked_at_ms": at.as_millis() as u64,
        "elapsed_ms": view.elapsed.as_millis() as u64,
        "servers": view.servers,
        "unreachable": view.failures.iter().map(|f| json!({
            "namesrv": f.addr,
            "error": f.to_string(),
        })).collect::<Vec<_>>(),
        "topics": view.topics,
        "counts": counts,
        "findings": findings,
    })
}

/// The section (client text escaped with `esc`, the page's): nothing when `[fleet]` is off.
pub(super) fn render_fleet(h: &mut String, d: &Value, esc: fn(&Value) -> String) {
    let fleet = &d["fleet"];
    if fleet.is_null() {
        return;
    }
    h.push_str("<section id=\"fleet\"><h2>Fleet</h2>");
    if fleet["checked"] != true {
        h.push_str("<p class=\"muted\">No fleet check has ended yet.</p></section>");
        return;
    }
    let verdict = if fleet["agrees"] == true {
        "<span class=\"ok\">the name servers agree</span>"
    } else {
        "<span class=\"bad\">the name servers differ</span>"
    };
    let servers: Vec<String> = items(&fleet["servers"]).iter().map(esc).collect();
    let _ = write!(
        h,
        "<p id=\"fleet-verdict\">{verdict}: {} compared ({} topics, {} ms)</p>",
        servers.join(", "),
        esc(&fleet["topics"]),
        esc(&fleet["elapsed_ms"])
    );
    for failure in items(&fleet["unreachable"]) {
        let _ = write!(
            h,
            "<p class=\"bad fleet-unreachable\">not asked: {}</p>",
            esc(&failure["error"])
        );
    }
    if !items(&fleet["findings"]).is_empty() {
        h.push_str("<table id=\"fleet-findings\"><tr><th>kind</th><th>what</th>");
        for server in &servers {
            let _ = write!(h, "<th>{server}</th>");
        }
        h.push_str("</tr>");
        for finding in items(&fleet["findings"]) {
            let _ = write!(
                h,
                "<tr class=\"fleet-finding\"><td>{}</td><td>{}</td>",
                esc(&finding["kind"]),
                esc(&finding["subject"])
            );
            for server in items(&fleet["servers"]) {
                let key = server.as_str().unwrap_or_default();
                match &finding["values"][key] {
                    Value::Null => h.push_str("<td class=\"muted\">(none)</td>"),
                    value => {
                        let _ = write!(h, "<td>{}</td>", esc(value));
                    }
                }
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

fn items(value: &Value) -> &[Value] {
    value.as_array().map_or(&[], Vec::as_slice)
}
