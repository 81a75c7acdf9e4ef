//! The status page's controller section and its JSON (`"controller"` of `/api/status`), when the
//! controller runs: this node's role and the leader, then every broker set with its master,
//! epochs and SyncStateSet, and its members with their heartbeats to this controller. Read from
//! the controller's snapshot alone: nothing here needs the NameServer's route tables.

use std::fmt::Write;

use rmq_actors::controller::observe::{ControllerSnapshot, MemberView, SetView};
use serde_json::{json, Value};

use rmq_actors::controller::figures::{Handled, REQUEST_TYPES};

use super::{clip, count, esc, items, secs, VALUE_SHOWN};

/// Broker sets shown at most (the count says how many there are).
const SETS_SHOWN: usize = 500;

/// `"controller"` of `/api/status`: `null` without a controller.
pub(super) fn json(snapshot: Option<&ControllerSnapshot>) -> Value {
    let Some(c) = snapshot else {
        return Value::Null;
    };
    json!({
        "group": clip(&c.group, VALUE_SHOWN),
        "self": { "id": clip(&c.me.id, VALUE_SHOWN), "address": clip(&c.me.address, VALUE_SHOWN) },
        "role": c.role.name(),
        "role_value": c.role.value(),
        "leader": c.leader.as_ref().map(|l| json!({
            "id": clip(&l.id, VALUE_SHOWN),
            "address": clip(&l.address, VALUE_SHOWN),
        })),
        "lease_remaining_seconds": c.lease_remaining.map(secs),
        "broker_sets_total": c.sets.len(),
        "broker_sets": c.sets.iter().take(SETS_SHOWN).map(set_json).collect::<Vec<_>>(),
        "requests": requests_json(c),
    })
}

/// The requests handled by type (those counted), each by handling status.
fn requests_json(c: &ControllerSnapshot) -> Value {
    let mut out = serde_json::Map::new();
    for (_, kind) in REQUEST_TYPES {
        let by_status: serde_json::Map<String, Value> = Handled::ALL
            .iter()
            .map(|how| {
                let n = c.figures.requests.get(&(kind, *how)).copied().unwrap_or(0);
                (how.name().to_owned(), json!(n))
            })
            .collect();
        if by_status.values().any(|n| n.as_u64() != Some(0)) {
            out.insert(kind.to_owned(), Value::Object(by_status));
        }
    }
    Value::Object(out)
}

fn set_json(set: &SetView) -> Value {
    json!({
        "cluster": clip(&set.cluster, VALUE_SHOWN),
        "broker_set": clip(&set.name, VALUE_SHOWN),
        "master": set.master.as_ref().map(|(id, address)| json!({
            "id": id,
            "address": clip(address, VALUE_SHOWN),
        })),
        "master_epoch": set.master_epoch,
        "sync_state_set": set.sync_state_set,
        "sync_state_set_epoch": set.sync_state_set_epoch,
        "members": set.members.iter().map(|m| member_json(set, m)).collect::<Vec<_>>(),
    })
}

fn member_json(set: &SetView, m: &MemberView) -> Value {
    json!({
        "id": m.id,
        "address": clip(&m.address, VALUE_SHOWN),
        "master": set.master.as_ref().is_some_and(|(id, _)| *id == m.id),
        "alive": m.alive,
        "in_sync_state_set": m.in_sync_state_set,
        "heartbeat_age_seconds": m.heartbeat.map(|(age, _)| secs(age)),
        "heartbeat_timeout_seconds": m.heartbeat.map(|(_, timeout)| secs(timeout)),
    })
}

/// The section, from the status JSON's `"controller"` (nothing when it is `null`).
pub(super) fn render(h: &mut String, c: &Value) {
    if c.is_null() {
        return;
    }
    let leader = if c["leader"].is_null() {
        "<span class=\"bad\">none</span>".to_owned()
    } else {
        format!(
            "<span id=\"controller-leader-id\">{}</span> \
             (<span id=\"controller-leader-address\">{}</span>)",
            esc(&c["leader"]["id"]),
            esc(&c["leader"]["address"])
        )
    };
    let lease = match c["lease_remaining_seconds"].as_f64() {
        Some(left) => format!("; etcd lease: {left} s left"),
        None => String::new(),
    };
    let _ = write!(
        h,
        "<section id=\"controller\"><h2>Controller</h2><p>group {group}; this node \
         {id} ({address}): <b id=\"controller-role\" class=\"{class}\">{role}</b>; \
         leader: {leader}{lease}</p>\
         <p id=\"broker-sets-count\" class=\"muted\">{total}, {shown} shown</p>\
         <table id=\"broker-sets\"><tr><th>cluster</th><th>broker set</th><th>master id</th>\
         <th>master address</th><th>master epoch</th><th>SyncStateSet</th>\
         <th>SyncStateSet epoch</th><th>members</th></tr>",
        group = esc(&c["group"]),
        id = esc(&c["self"]["id"]),
        address = esc(&c["self"]["address"]),
        class = match c["role"].as_str() {
            Some("leader" | "follower") => "ok",
            _ => "bad",
        },
        role = esc(&c["role"]),
        total = count(&c["broker_sets_total"], "broker set"),
        shown = items(&c["broker_sets"]).len(),
    );
    for set in items(&c["broker_sets"]) {
        render_set(h, set);
    }
    h.push_str(
        "</table><table id=\"controller-members\"><tr><th>broker set</th><th>id</th>\
         <th>address</th><th>role</th><th>alive</th><th>in SyncStateSet</th>\
         <th>heartbeat age</th></tr>",
    );
    for set in items(&c["broker_sets"]) {
        for m in items(&set["members"]) {
            render_member(h, set, m);
        }
    }
    h.push_str(
        "</table><table id=\"controller-requests\"><tr><th>controller request</th>\
         <th>success</th><th>failed</th><th>timeout</th></tr>",
    );
    for (kind, n) in c["requests"].as_object().into_iter().flatten() {
        let _ = write!(
            h,
            "<tr class=\"controller-request\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&json!(kind)),
            esc(&n["success"]),
            esc(&n["failed"]),
            esc(&n["timeout"]),
        );
    }
    h.push_str("</table></section>");
}

fn render_set(h: &mut String, set: &Value) {
    let sync: Vec<String> = items(&set["sync_state_set"]).iter().map(esc).collect();
    let master = &set["master"];
    let _ = write!(
        h,
        "<tr class=\"broker-set\"><td>{cluster}</td><td>{name}</td>\
         <td class=\"master-id{no_master}\">{master_id}</td><td class=\"master-address\">{master_address}</td>\
         <td class=\"master-epoch\">{epoch}</td><td class=\"sync-state-set\">{sync}</td>\
         <td class=\"sync-state-set-epoch\">{sync_epoch}</td><td>{members}</td></tr>",
        name = esc(&set["broker_set"]),
        cluster = esc(&set["cluster"]),
        no_master = if master.is_null() { " bad" } else { "" },
        master_id = if master.is_null() {
            "none".to_owned()
        } else {
            esc(&master["id"])
        },
        master_address = esc(&master["address"]),
        epoch = esc(&set["master_epoch"]),
        sync = sync.join(", "),
        sync_epoch = esc(&set["sync_state_set_epoch"]),
        members = items(&set["members"]).len(),
    );
}

fn render_member(h: &mut String, set: &Value, m: &Value) {
    let alive = m["alive"].as_bool() == Some(true);
    let age = match m["heartbeat_age_seconds"].as_f64() {
        Some(age) => format!("{age} s"),
        None => "none".to_owned(),
    };
    let _ = write!(
        h,
        "<tr class=\"controller-member\"><td>{name}</td>\
         <td class=\"member-id\">{id}</td><td>{address}</td><td class=\"member-role\">{role}</td>\
         <td class=\"member-alive {class}\">{alive}</td><td class=\"member-in-sync\">{in_sync}</td>\
         <td class=\"member-heartbeat\">{age}</td></tr>",
        name = esc(&set["broker_set"]),
        id = esc(&m["id"]),
        address = esc(&m["address"]),
        role = if m["master"].as_bool() == Some(true) {
            "master"
        } else {
            "slave"
        },
        class = if alive { "ok" } else { "bad" },
        alive = if alive { "alive" } else { "not alive" },
        in_sync = if m["in_sync_state_set"].as_bool() == Some(true) {
            "yes"
        } else {
            "no"
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_escapes_what_brokers_sent_and_closes_what_it_opens() {
        let hostile = "<script>alert(1)</script>";
        let data = json!({
            "group": hostile, "self": { "id": hostile, "address": hostile },
            "role": "follower", "leader": null, "lease_remaining_seconds": 1.5,
            "broker_sets_total": 1,
            "broker_sets": [{ "cluster": hostile, "broker_set": hostile, "master": null,
                "master_epoch": 1, "sync_state_set": [], "sync_state_set_epoch": 1,
                "members": [{ "id": 1, "address": hostile, "master": false, "alive": false,
                    "in_sync_state_set": false, "heartbeat_age_seconds": null }] }],
            "requests": { "CONTROLLER_ELECT_MASTER": { "success": 1, "failed": 0, "timeout": 0 } },
        });
        let mut page = String::new();
        render(&mut page, &data);
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("&lt;script&gt;"), "{page}");
        assert!(page.contains("1 broker set, 1 shown"), "{page}");
        assert!(page.contains("etcd lease: 1.5 s left"), "{page}");
        assert!(page.contains("<span class=\"bad\">none</span>"), "{page}");
        for tag in ["section", "table", "tr", "td", "p"] {
            let opened = page.matches(&format!("<{tag}>")).count()
                + page.matches(&format!("<{tag} ")).count();
            assert_eq!(
                opened,
                page.matches(&format!("</{tag}>")).count(),
                "<{tag}>: {page}"
            );
        }
        let mut none = String::new();
        render(&mut none, &Value::Null);
        assert!(none.is_empty());
    }
}
