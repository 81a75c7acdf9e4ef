//! Background work: CPU-heavy or blocking jobs (decoding large registrations, KV file writes,
//! freeing large tables) run on tokio's blocking pool, at a lower scheduling priority, so that on
//! a busy machine the connection and registry threads, whose latency clients see, run first.

use std::cell::Cell;

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

#[cfg(test)]
mod tests {
    #[actix_rt::test]
    async fn jobs_run_and_return() {
        assert_eq!(super::spawn(|| 2 + 2).await.ok(), Some(4));
    }
}
