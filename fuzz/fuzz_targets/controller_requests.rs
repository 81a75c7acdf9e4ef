//! The controller's requests whole: ext fields (`key=value` lines) and, after an empty line, a
//! body, read as every controller request code by the controller port's decoder, then decided
//! by the replicas rules on a small state of two broker sets (every broker alive). What a
//! request may store is checked: a decoded request holds no field over
//! `stored::MAX_NAME_BYTES`, and a change the state admits keeps it within its byte bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmq_namesrv::actors::controller::liveness::{LiveInfo, Liveness};
use rmq_namesrv::actors::controller::replicas::{Decision, ReplicaTables, MAX_STATE_BYTES};
use rmq_namesrv::actors::controller::requests::{self, Call};
use rmq_namesrv::actors::stored::MAX_NAME_BYTES;
use rmq_protocol::controller::{ApplyBrokerIdHeader, CONTROLLER_CODES};

/// Every broker alive, with the same heartbeat data.
struct AllAlive;

impl Liveness for AllAlive {
    fn alive(&self, _: &str, _: &str, _: i64) -> bool {
        true
    }

    fn info(&self, _: &str, _: &str, id: i64) -> Option<LiveInfo> {
        Some(LiveInfo {
            epoch: 1,
            max_offset: id,
            priority: 1,
        })
    }
}

/// Two sets, `b1` and `b2`, of two members each.
fn state() -> ReplicaTables {
    let mut tables = ReplicaTables::default();
    let mut revision = 0;
    for name in ["b1", "b2"] {
        for id in 1..=2 {
            let decision = tables.apply_broker_id(&ApplyBrokerIdHeader {
                cluster_name: "c".into(),
                broker_name: name.into(),
                applied_broker_id: id,
                register_check_code: format!("127.0.0.1:1091{id};1"),
            });
            if let Some(change) = decision.change {
                revision += 1;
                tables.apply(&change.name, change.record, revision);
            }
        }
    }
    tables
}

fn decide(tables: &ReplicaTables, call: &Call) -> Option<Decision> {
    let live = AllAlive;
    Some(match call {
        Call::AlterSyncStateSet(h, set) => tables.alter_sync_state_set(h, set, &live),
        Call::ElectMaster(h) => {
            tables.elect_master(&h.broker_name, Some(h.broker_id), h.designate_elect, true, &live)
        }
        Call::RegisterBroker(h) => tables.register_broker(h, &live),
        Call::ReplicaInfo(h) => tables.replica_info(h),
        Call::CleanBrokerData(h) => tables.clean_broker_data(h, &live),
        Call::NextBrokerId(h) => tables.next_broker_id(h),
        Call::ApplyBrokerId(h) => tables.apply_broker_id(h),
        Call::SyncStateData(Some(names)) => {
            let _ = tables.sync_state_data(names, &live);
            return None;
        }
        _ => return None,
    })
}

fuzz_target!(|data: &[u8]| {
    let split = data.windows(2).position(|w| w == b"\n\n");
    let (fields, body) = match split {
        Some(at) => (&data[..at], Some(&data[at + 2..])),
        None => (data, None),
    };
    let Some(mut cmd) = rmq_fuzz::command_from_lines(fields) else {
        return;
    };
    cmd.body = body.map(|b| bytes::Bytes::copy_from_slice(b));
    let mut tables = state();
    for code in CONTROLLER_CODES {
        let mut request = cmd.clone();
        request.code = code.0;
        let Ok(call) = requests::decode(&request) else {
            continue;
        };
        if let Some(fields) = &request.ext_fields {
            for (key, value) in fields.iter() {
                assert!(value.len() <= MAX_NAME_BYTES, "{key} of {} bytes decoded", value.len());
            }
        }
        let Some(decision) = decide(&tables, &call) else {
            continue;
        };
        if let Some(change) = decision.change {
            if tables.admits(&change).is_ok() {
                let revision = tables.revision(&change.name) + 1;
                tables.apply(&change.name, change.record, revision);
                assert!(tables.stored_bytes() <= MAX_STATE_BYTES);
            }
        }
    }
});
