//! How many inputs may stay open: the budget of [`keep_files_open`].
//!
//! The budget is a process-wide static rather than a value the reader owns: the
//! command line sets it once, before any thread starts (growing the descriptor table
//! later waits for an RCU grace period), and inputs are then opened on many threads
//! by the driver and the front end and by library users (the tests set it the same
//! way); a value would have to be passed down through all of them.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Lets mapped inputs keep their file open so that their bytes can be read without
/// touching the mapping (parsing reads a copy; the writer reads the text it needs
/// when it needs it), which keeps input pages out of resident memory
/// (docs/performance.md). `expected` is about how many inputs there will be. Call it
/// before the process starts threads: it raises the open-file limit to its hard
/// limit and grows the file descriptor table to hold `expected` more files now,
/// because growing it while threads run waits for an RCU grace period each time it
/// doubles, which made the reading phase of a link of thousands of inputs several
/// times longer (docs/performance.md). Inputs beyond what the limit allows are
/// simply not kept open. Without this call no file is kept open.
pub fn keep_files_open(expected: usize) {
    reserve(expected);
}

/// Descriptors left for everything else (outputs, temporaries, libraries).
const SPARE: usize = 256;

/// How many more inputs may stay open.
static LEFT: AtomicUsize = AtomicUsize::new(0);

/// Takes one file from the budget; false if none is left.
pub(super) fn take_one() -> bool {
    LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
}

#[cfg(unix)]
fn reserve(expected: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    // `None` is no limit (`RLIM_INFINITY`).
    let unlimited = |l: Option<u64>| l.unwrap_or(u64::MAX);
    let mut lim = getrlimit(Resource::Nofile);
    if unlimited(lim.current) < unlimited(lim.maximum) {
        let raised = Rlimit {
            current: Some(unlimited(lim.maximum).min(1 << 20)),
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            lim = raised;
        }
    }
    let limit = usize::try_from(unlimited(lim.current)).unwrap_or(usize::MAX);
    let budget = expected.min(limit.saturating_sub(SPARE));
    if budget == 0 {
        return;
    }
    // Grow the table once: a descriptor numbered past every input, closed again at
    // once. (`F_DUPFD` takes the first free number from there, where `dup2` would
    // have closed a descriptor already open at that number.)
    let top = i32::try_from(budget + SPARE / 2).unwrap_or(i32::MAX);
    drop(rustix::io::fcntl_dupfd_cloexec(std::io::stderr(), top));
    LEFT.store(budget, Ordering::Relaxed);
}

#[cfg(not(unix))]
fn reserve(_expected: usize) {}
