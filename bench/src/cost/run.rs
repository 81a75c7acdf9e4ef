//! The run over every case, its table on stdout and its JSON result.

use std::fmt::Write as _;
use std::time::Instant;

use serde_json::{json, Value};

use super::args::CostArgs;
use super::case::Case;
use super::cases::cases;
use super::measure::{human_bytes, measure, sizes, Measured, SUPERLINEAR};
use crate::BenchError;

pub fn run(args: &CostArgs) -> Result<Value, BenchError> {
    if args.max_bytes < 4096 || args.min_bytes > args.max_bytes {
        return Err(BenchError::Usage(
            "--max-bytes must be at least 4096 and at least --min-bytes".into(),
        ));
    }
    let sizes = sizes(args.min_bytes, args.max_bytes);
    let started = Instant::now();
    let all = cases();
    let selected: Vec<&Case> = all
        .iter()
        .filter(|c| {
            args.only
                .as_deref()
                .is_none_or(|o| format!("{} / {}", c.decoder, c.shape).contains(o))
        })
        .collect();
    println!(
        "cost: {} cases, sizes {} .. {} (doubling), fastest of {}+ runs in thread CPU time; ns per \
         input byte; growth = time(4x)/time(x), >= {SUPERLINEAR} flagged; peak/B = bytes \
         allocated at the peak per input byte",
        selected.len(),
        human_bytes(sizes[0]),
        human_bytes(args.max_bytes),
        args.runs
    );
    let mut header = format!("{:<20} {:<44} {:<7}", "decoder", "shape", "path");
    for size in &sizes {
        let _ = write!(header, " {:>6}", human_bytes(*size));
    }
    let _ = write!(
        header,
        " {:>6} {:>6} {:>7} {:>9}  verdict (result at max)",
        "growth", "worst", "peak/B", "max ms"
    );
    println!("{header}");

    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for case in selected {
        if started.elapsed() > args.time_limit {
            skipped.push(format!("{} / {}", case.decoder, case.shape));
            continue;
        }
        let measured = measure(case, &sizes, args)?;
        println!("{}", row(&measured, sizes.len()));
        results.push(measured);
    }
    if !skipped.is_empty() {
        println!("skipped (--time-limit): {}", skipped.join(", "));
    }
    let flagged: Vec<String> = results
        .iter()
        .filter(|m| m.superlinear())
        .map(|m| format!("{} / {}", m.decoder, m.shape))
        .collect();
    println!(
        "{} cases in {:.0} s; superlinear or stopped: {}",
        results.len(),
        started.elapsed().as_secs_f64(),
        if flagged.is_empty() {
            "none".to_owned()
        } else {
            flagged.join("; ")
        }
    );
    Ok(json!({
        "workload": "cost",
        "max_bytes": args.max_bytes,
        "sizes": sizes,
        "runs": args.runs,
        "superlinear_at": SUPERLINEAR,
        "cases": results.iter().map(case_json).collect::<Vec<_>>(),
        "flagged": flagged,
        "skipped": skipped,
        "elapsed_s": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    }))
}

fn row(m: &Measured, columns: usize) -> String {
    let mut line = format!("{:<20} {:<44} {:<7}", m.decoder, m.shape, m.path);
    for k in 0..columns {
        match m.points.get(k) {
            Some(p) => {
                let _ = write!(line, " {:>6.2}", p.ns_per_byte());
            }
            None => line.push_str("      -"),
        }
    }
    let ratio = |g: Option<f64>| g.map_or("-".to_owned(), |g| format!("{g:.2}"));
    let last = m.points.last();
    let _ = write!(
        line,
        " {:>6} {:>6} {:>7} {:>9}  {}",
        ratio(m.last_growth),
        ratio(m.worst.map(|(_, g)| g)),
        last.map_or("-".to_owned(), |p| format!(
            "{:.1}",
            p.peak as f64 / p.bytes.max(1) as f64
        )),
        last.map_or("-".to_owned(), |p| format!(
            "{:.1}",
            p.best.as_secs_f64() * 1e3
        )),
        m.verdict()
    );
    let (flagged, pairs) = m.flagged_pairs();
    if flagged > 0 {
        // One flagged pair among linear ones is a step (the decoded data outgrowing a cache);
        // superlinear code is flagged at every pair once it is measurable.
        let _ = write!(line, " [{flagged} of {pairs} pairs]");
    }
    if let Some(p) = last {
        let _ = write!(
            line,
            " ({})",
            match &p.outcome {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("refused: {e}"),
            }
        );
        if p.wire != p.bytes {
            let _ = write!(line, " [wire {}]", p.wire);
        }
    }
    if let Some(why) = &m.stopped {
        let _ = write!(line, " [{why}]");
    }
    line
}

fn case_json(m: &Measured) -> Value {
    json!({
        "decoder": m.decoder,
        "shape": m.shape,
        "path": m.path,
        "verdict": m.verdict(),
        "flagged_pairs": m.flagged_pairs().0,
        "measured_pairs": m.flagged_pairs().1,
        "growth": m.last_growth.map(|g| (g * 100.0).round() / 100.0),
        "worst_growth": m.worst.map(|(_, g)| (g * 100.0).round() / 100.0),
        "worst_growth_from_bytes": m.worst.and_then(|(i, _)| m.points.get(i)).map(|p| p.bytes),
        "stopped": m.stopped,
        "points": m.points.iter().map(|p| json!({
            "bytes": p.bytes,
            "wire_bytes": p.wire,
            "ns": u64::try_from(p.best.as_nanos()).unwrap_or(u64::MAX),
            "wall_ns": u64::try_from(p.wall.as_nanos()).unwrap_or(u64::MAX),
            "ns_per_byte": (p.ns_per_byte() * 1000.0).round() / 1000.0,
            "runs": p.runs,
            "peak_alloc_bytes": p.peak,
            "result": match &p.outcome {
                Ok(()) => "ok".to_owned(),
                Err(e) => format!("refused: {e}"),
            },
        })).collect::<Vec<_>>(),
    })
}
