//! Measuring one case: the fastest of several runs per size in thread CPU time, the peak of
//! allocated bytes, and the growth over each factor of four of the bytes.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rmq_protocol::codec::DEFAULT_MAX_FRAME;
use rmq_protocol::header_codec;

use super::alloc::peak_of;
use super::args::CostArgs;
use super::case::{Case, Decode, Input, Outcome};
use crate::BenchError;

/// Growth ratios from this are flagged.
pub(super) const SUPERLINEAR: f64 = 6.0;
/// A pair of sizes counts for the growth only if the smaller one takes at least this long
/// (shorter times are dominated by noise and caches).
const MIN_TIMED: Duration = Duration::from_micros(200);
/// Small sizes are run until this much time is spent (and at least `--runs` times).
const MIN_SPENT: Duration = Duration::from_millis(50);
/// Most runs of one size.
const MAX_RUNS: usize = 200;
/// Inputs are built this much below each size, so the largest fits a frame with its length
/// field, header-length word and (for bodies) a small header.
const FRAME_MARGIN: usize = 256;

/// One size of one case.
#[derive(Debug, Clone)]
pub(super) struct Point {
    pub(super) bytes: usize,
    pub(super) wire: usize,
    /// Fastest run, thread CPU time.
    pub(super) best: Duration,
    /// Fastest run, wall time.
    pub(super) wall: Duration,
    pub(super) runs: usize,
    pub(super) peak: usize,
    pub(super) outcome: Outcome,
}

impl Point {
    pub(super) fn ns_per_byte(&self) -> f64 {
        self.best.as_nanos() as f64 / self.bytes.max(1) as f64
    }
}

/// CPU time of the calling thread: unlike the wall clock it does not count the time the thread
/// waited for a core, which on a shared machine is most of the noise.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The fastest of at least `runs` runs (more for short ones, until [`MIN_SPENT`]) in thread CPU
/// time, the fastest in wall time, and the outcome of the first.
fn time(decode: Decode, input: &Input, runs: usize) -> (Duration, Duration, usize, Outcome) {
    let mut best = Duration::MAX;
    let mut best_wall = Duration::MAX;
    let mut spent = Duration::ZERO;
    let mut first = None;
    let mut done = 0;
    while done < runs.max(1) || (spent < MIN_SPENT && done < MAX_RUNS) {
        let wall = Instant::now();
        let cpu = thread_cpu();
        let outcome = decode(black_box(input));
        let took = thread_cpu().saturating_sub(cpu);
        let took_wall = wall.elapsed();
        best = best.min(took);
        best_wall = best_wall.min(took_wall);
        spent += took_wall;
        done += 1;
        first.get_or_insert(outcome);
    }
    (best, best_wall, done, first.unwrap_or(Ok(())))
}

/// The growth over a factor of four of the bytes, from points `a` and `b` (bytes of `b` about 4
/// times `a`'s), normalized to exactly four times.
fn growth(a: &Point, b: &Point) -> Option<f64> {
    if a.best < MIN_TIMED || a.bytes == 0 || b.bytes == 0 {
        return None;
    }
    let time = b.best.as_secs_f64() / a.best.as_secs_f64();
    let bytes = b.bytes as f64 / a.bytes as f64;
    Some(time / bytes * 4.0)
}

/// The worst growth over all pairs four times apart, with the index of its smaller point.
fn worst_growth(points: &[Point]) -> Option<(usize, f64)> {
    (0..points.len().saturating_sub(2))
        .filter_map(|i| growth(&points[i], &points[i + 2]).map(|g| (i, g)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The result of one case.
pub(super) struct Measured {
    pub(super) decoder: &'static str,
    pub(super) shape: &'static str,
    /// For JSON headers: which path decoded the smallest input.
    pub(super) path: &'static str,
    pub(super) points: Vec<Point>,
    /// The sizes not run: why.
    pub(super) stopped: Option<String>,
    pub(super) last_growth: Option<f64>,
    pub(super) worst: Option<(usize, f64)>,
}

impl Measured {
    pub(super) fn superlinear(&self) -> bool {
        self.worst.is_some_and(|(_, g)| g >= SUPERLINEAR) || self.stopped.is_some()
    }

    /// Pairs of sizes four times apart whose growth is flagged, and pairs measured.
    pub(super) fn flagged_pairs(&self) -> (usize, usize) {
        let growths: Vec<f64> = (0..self.points.len().saturating_sub(2))
            .filter_map(|i| growth(&self.points[i], &self.points[i + 2]))
            .collect();
        (
            growths.iter().filter(|g| **g >= SUPERLINEAR).count(),
            growths.len(),
        )
    }

    pub(super) fn verdict(&self) -> &'static str {
        if self.worst.is_some_and(|(_, g)| g >= SUPERLINEAR) {
            "SUPERLINEAR"
        } else if self.stopped.is_some() {
            "STOPPED"
        } else if self.worst.is_none() {
            "too fast"
        } else {
            "linear"
        }
    }
}

/// Which JSON-header path takes `text`: the scanner, serde, or neither.
pub(super) fn json_path(data: &[u8]) -> &'static str {
    let Ok(text) = std::str::from_utf8(data) else {
        return "refused";
    };
    match header_codec::json_paths(text) {
        (Some(_), _) => "scan",
        (None, Ok(_)) => "serde",
        (None, Err(_)) => "refused",
    }
}

pub(super) fn measure(
    case: &Case,
    sizes: &[usize],
    args: &CostArgs,
) -> Result<Measured, BenchError> {
    let mut points: Vec<Point> = Vec::new();
    let mut stopped = None;
    let mut path = "-";
    for (n, &size) in sizes.iter().enumerate() {
        if let Some(last) = points.last() {
            // Projected from the last doubling (at least linear growth).
            let factor = match points.len() {
                0 | 1 => 2.0,
                k => (points[k - 1].best.as_secs_f64()
                    / points[k - 2].best.as_secs_f64().max(1e-9))
                .max(2.0),
            };
            let projected = last.best.as_secs_f64() * factor;
            if projected > args.max_decode.as_secs_f64() {
                stopped = Some(format!(
                    "{} and larger not run: projected {:.1} s per decode",
                    human_bytes(size),
                    projected
                ));
                break;
            }
        }
        let target = if case.decoder == "codec" {
            size
        } else {
            size.saturating_sub(FRAME_MARGIN)
        };
        let input = (case.build)(target, args.max_bytes.max(DEFAULT_MAX_FRAME))?;
        if n == 0 && case.decoder == "json header" {
            path = json_path(&input.data);
        }
        let (best, wall, runs, outcome) = time(case.decode, &input, args.runs);
        let (peak, _) = peak_of(|| (case.decode)(&input));
        points.push(Point {
            bytes: input.size,
            wire: if input.data.is_empty() {
                input.size
            } else {
                input.data.len()
            },
            best,
            wall,
            runs,
            peak,
            outcome,
        });
    }
    let mut worst = worst_growth(&points);
    if let Some((i, g)) = worst {
        if g >= SUPERLINEAR {
            // Noise on a shared machine? Time both sizes again, longer, before flagging.
            for k in [i, i + 2] {
                let target = if case.decoder == "codec" {
                    sizes[k]
                } else {
                    sizes[k].saturating_sub(FRAME_MARGIN)
                };
                let input = (case.build)(target, args.max_bytes.max(DEFAULT_MAX_FRAME))?;
                let (best, wall, runs, _) = time(case.decode, &input, args.runs * 3);
                points[k].best = points[k].best.min(best);
                points[k].wall = points[k].wall.min(wall);
                points[k].runs += runs;
            }
            worst = worst_growth(&points);
        }
    }
    let n = points.len();
    let last_growth = (n >= 3)
        .then(|| growth(&points[n - 3], &points[n - 1]))
        .flatten();
    Ok(Measured {
        decoder: case.decoder,
        shape: case.shape,
        path,
        points,
        stopped,
        last_growth,
        worst,
    })
}

/// `64K`, `1M`, `16M`, or bytes.
pub(super) fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{}M", n >> 20)
    } else if n >= 1 << 10 && n % (1 << 10) == 0 {
        format!("{}K", n >> 10)
    } else {
        format!("{n}")
    }
}

/// The sizes: `min`, doubling, up to `max` (included).
pub(super) fn sizes(min: usize, max: usize) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut size = min.max(1024);
    while size < max {
        sizes.push(size);
        size = size.saturating_mul(2);
    }
    sizes.push(max);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_normalized() {
        let p = |bytes, ms| Point {
            bytes,
            wire: bytes,
            best: Duration::from_millis(ms),
            wall: Duration::from_millis(ms),
            runs: 1,
            peak: 0,
            outcome: Ok(()),
        };
        assert_eq!(growth(&p(1000, 10), &p(4000, 40)), Some(4.0));
        assert_eq!(growth(&p(1000, 10), &p(2000, 40)), Some(8.0));
        let points = [p(1, 1), p(2, 2), p(4, 4), p(8, 30)];
        assert_eq!(worst_growth(&points).map(|(i, _)| i), Some(1));
    }
}
