//! Background work: CPU-heavy jobs (decoding large registrations, freeing large tables) on a
//! runtime of their own, one thread per core, and blocking ones (KV file writes, TLS reloads)
//! on tokio's blocking pool, both at a lower scheduling priority, so that on a busy machine the
//! connection and registry threads, whose latency clients see, run first.

use std::cell::Cell;
use std::num::NonZero;
use std::sync::OnceLock;

use tokio::task::JoinHandle;

/// The nice value background threads run at (0 is normal, 19 the lowest).
const BACKGROUND_NICE: i32 = 10;

thread_local! {
    static LOWERED: Cell<bool> = const { Cell::new(false) };
}

/// Lowers the calling thread's priority, once per thread. Best effort: where it is not
/// possible, the job simply runs at normal priority.
fn lower_priority() {
    LOWERED.with(|lowered| {
        if lowered.replace(true) {
            return;
        }
        #[cfg(target_os = "linux")]
        // SAFETY: setpriority only reads its integer arguments; on Linux, PRIO_PROCESS with
        // who = 0 applies to the calling thread alone.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICE);
        }
    });
}

/// Runs `job` on the blocking pool at background priority.
pub fn spawn<F, R>(job: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        lower_priority();
        job()
    })
}

/// The runtime CPU-bound jobs ([`spawn_cpu`]) run on: one thread per core, started on first
/// use and kept for the life of the process, each job run to its end on one of them. More jobs
/// at once would finish no sooner. The threads are few and stay, so the allocator arenas that
/// decoding fills are always the same ones: before, each connection thread's blocking pool
/// started threads for such jobs and ended them 10 s after, every new one with an arena of its
/// own where what the thread kept pinned pages of what its decoding had freed, up to 300 KiB
/// per thread and decode round (bench/SCALE.md). `None` if the runtime cannot be started: the
/// jobs then run on the blocking pool.
fn cpu_runtime() -> Option<&'static tokio::runtime::Runtime> {
    static RUNTIME: OnceLock<Option<tokio::runtime::Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(std::thread::available_parallelism().map_or(2, NonZero::get))
                .thread_name("rmq-cpu")
                .on_thread_start(lower_priority)
                .build()
                .ok()
        })
        .as_ref()
}

/// Runs a CPU-bound `job` (decoding a large body, freeing a large table) at background
/// priority on the CPU runtime's threads, one job per core at once; the others wait their turn
/// without a thread. Dropping the handle does not cancel the job.
pub fn spawn_cpu<F, R>(job: F) -> JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    match cpu_runtime() {
        Some(runtime) => runtime.spawn(async move { job() }),
        None => spawn(job),
    }
}

#[cfg(test)]
mod tests {
    #[actix_rt::test]
    async fn jobs_run_and_return() {
        assert_eq!(super::spawn(|| 2 + 2).await.ok(), Some(4));
    }

    #[actix_rt::test]
    async fn cpu_jobs_take_turns_and_all_finish() {
        let running = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let most = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let jobs: Vec<_> = (0..16)
            .map(|i| {
                let (running, most) = (running.clone(), most.clone());
                super::spawn_cpu(move || {
                    let now = running.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    most.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    i
                })
            })
            .collect();
        let mut done = Vec::new();
        for job in jobs {
            done.push(job.await.ok());
        }
        assert_eq!(done, (0..16).map(Some).collect::<Vec<_>>());
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) <= cores);
    }
}
