//! Background work: CPU-heavy or blocking jobs (decoding large registrations, KV file writes,
//! freeing large tables) run on tokio's blocking pool, at a lower scheduling priority, so that on
//! a busy machine the connection and registry threads, whose latency clients see, run first.

use std::cell::Cell;
use std::future::Future;
use std::sync::OnceLock;

use tokio::sync::Semaphore;
use tokio::task::JoinError;

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
pub fn spawn<F, R>(job: F) -> tokio::task::JoinHandle<R>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        lower_priority();
        job()
    })
}

/// CPU-bound jobs ([`spawn_cpu`]) running at once: one per core.
fn cpu_slots() -> &'static Semaphore {
    static SLOTS: OnceLock<Semaphore> = OnceLock::new();
    SLOTS.get_or_init(|| {
        Semaphore::new(std::thread::available_parallelism().map_or(2, std::num::NonZero::get))
    })
}

/// Runs a CPU-bound `job` (decoding a large body) on the blocking pool at background priority,
/// at most one per core at once; the others wait their turn without a thread. More at once
/// would finish no sooner, and every connection thread's pool would keep a thread (its stack,
/// its allocator arena) for each job it ran at once: 20 brokers registering together left 30
/// such threads holding memory. Dropping the answer does not cancel the job.
pub fn spawn_cpu<F, R>(job: F) -> impl Future<Output = Result<R, JoinError>>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    let task = tokio::spawn(async move {
        // (Never closed: a failed acquire only means running without a slot.)
        let _slot = cpu_slots().acquire().await;
        spawn(job).await
    });
    async move { task.await.and_then(|done| done) }
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
