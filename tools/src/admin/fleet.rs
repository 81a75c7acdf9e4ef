//! `fleetCheck`: what differs between the NameServers of `-n` (crate::fleet). Text: one block
//! per kind of difference, each finding with every NameServer's value; `--json`:
//! `{"ok":BOOL,"servers":[ADDR...],"failures":[ENTRY...],"topics":N,"elapsedMs":MS,
//! "counts":{KIND:N...},"findings":[{"kind":KIND,"subject":TEXT,"values":{ADDR:VALUE|null}}]}`.
//! Exit 0 when the fleet agrees, 1 on drift, 3 when a NameServer cannot be asked (the others
//! are still compared).

use serde_json::{json, Map, Value};

use super::report::{failure_entry, json_line, Report};
use super::{Target, EXIT_ANSWERED, EXIT_OK, EXIT_UNREACHABLE};
use crate::fleet::{check, DriftKind, FleetOptions, FleetView, Reach};

/// `fleetCheck [-s NAMESPACE]... [--ignore-key KEY]... [--data-versions] [--window N]`.
pub(super) async fn fleet_check(target: &Target, reach: &Reach, options: &FleetOptions) -> Report {
    let view = check(target.namesrv.addrs(), reach, options).await;
    let mut report = Report {
        stdout: if target.json {
            json_line(&view_json(&view))
        } else {
            view_text(&view)
        },
        stderr: String::new(),
        exit: EXIT_OK,
    };
    for failure in &view.failures {
        report
            .stderr
            .push_str(&format!("rmq-namesrv admin: {failure}\n"));
    }
    report.exit = if !view.failures.is_empty() {
        EXIT_UNREACHABLE
    } else if view.drift() > 0 {
        EXIT_ANSWERED
    } else {
        EXIT_OK
    };
    report
}

/// The text report.
pub fn view_text(view: &FleetView) -> String {
    let mut out = format!(
        "compared {} name server(s): {}; {} topic(s); {:.3}s\n",
        view.servers.len(),
        view.servers.join(", "),
        view.topics,
        view.elapsed.as_secs_f64()
    );
    for kind in DriftKind::ALL {
        let count = view.counts.get(&kind).copied().unwrap_or(0);
        if count == 0 {
            continue;
        }
        out.push_str(&format!("{} drift: {count}\n", kind.label()));
        for finding in view.findings.iter().filter(|f| f.kind == kind) {
            out.push_str(&format!("  {}\n", finding.subject));
            for (addr, value) in view.servers.iter().zip(&finding.values) {
                out.push_str(&format!(
                    "    {addr}: {}\n",
                    value.as_deref().unwrap_or("(none)")
                ));
            }
        }
    }
    if !view.failures.is_empty() {
        out.push_str(&format!(
            "not asked: {}\n",
            view.failures
                .iter()
                .map(|f| f.addr.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if view.drift() == 0 {
        out.push_str("the name servers agree\n");
    } else {
        out.push_str(&format!("drift: {} difference(s)\n", view.drift()));
    }
    out
}

/// The `--json` document.
pub fn view_json(view: &FleetView) -> Value {
    let counts: Map<String, Value> = view
        .counts
        .iter()
        .map(|(kind, n)| (kind.label().to_owned(), json!(n)))
        .collect();
    let findings = view.findings_json();
    json!({
        "ok": view.agrees(),
        "servers": view.servers,
        "failures": view.failures.iter().map(failure_entry).collect::<Vec<_>>(),
        "topics": view.topics,
        "elapsedMs": view.elapsed.as_millis() as u64,
        "counts": counts,
        "findings": findings,
    })
}
