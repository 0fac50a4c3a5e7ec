//! The link's threads: rayon's global pool, built before the link starts and waited
//! for until each of its threads runs.
//!
//! A thread just made may wait for a CPU: the kernel sometimes queues it behind the
//! thread that made it instead of on an idle core. On two cores the pool's thread
//! first ran 1.2-3.8 ms after the pool was built in 3 of 12 links, the inputs being
//! read on one thread meanwhile (docs/performance.md). While the main thread waits
//! here, its core is free for the new threads; each has run before the link begins.

use std::sync::{Condvar, Mutex};

use ptxld::internal::timing;

/// How many of the pool's own threads have started, and its change.
static STARTED: Mutex<usize> = Mutex::new(0);
static ONE_MORE: Condvar = Condvar::new();

/// The threads of a link without `-j`: rayon's default, `RAYON_NUM_THREADS` if it
/// is set to a number above 0, or one per CPU. Known before the pool is built,
/// since whether the calling thread joins it depends on the count.
fn default_threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Builds the global pool of `threads` threads (`-j`; by default as rayon would)
/// and returns once each has started. From
/// two threads on, the calling thread is one of them: it works in the parallel
/// loops it starts rather than sleeping until they end (on two cores the link's
/// serial remainder fell by 1.4-3 ms). Not with one thread, which must then be a
/// thread of the pool's own: the ordered writer's helper and `--verify`'s ptxas
/// runs are threads that use the pool while the main thread waits for them. With
/// `stats`, every thread counts its CPU time for `--stats`.
pub fn start(threads: Option<usize>, stats: bool) -> Result<(), rayon::ThreadPoolBuildError> {
    let n = threads.unwrap_or_else(default_threads);
    let mut pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .start_handler(move |_| {
            if stats {
                timing::count_this_thread();
            }
            *STARTED.lock().unwrap_or_else(|e| e.into_inner()) += 1;
            ONE_MORE.notify_one();
        });
    if n > 1 {
        pool = pool.use_current_thread();
    }
    pool.build_global()?;
    // The calling thread, when it is one of them, runs no start handler.
    let own = rayon::current_num_threads() - usize::from(n > 1);
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    while *started < own {
        started = ONE_MORE.wait(started).unwrap_or_else(|e| e.into_inner());
    }
    Ok(())
}
