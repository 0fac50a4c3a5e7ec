//! Phase times for `--stats`: wall time, and the CPU time the whole process (every
//! thread) spent meanwhile. Their ratio shows how many cores a phase kept busy: a
//! phase whose CPU time is no more than its wall time ran on one core, and is
//! where more threads cannot help.
//!
//! The process's CPU clock (`CLOCK_PROCESS_CPUTIME_ID`) is exact only for the
//! calling thread: Linux adds another thread's running time to it only at that
//! thread's next scheduler tick (4 ms at 250 Hz), so a phase of a few milliseconds
//! could read a fraction of its CPU time, or more than it. A command that reports
//! its phases registers its threads ([`count_this_thread`]), and the CPU time is
//! then the sum of their own clocks, which the kernel brings up to date when read.

#[cfg(unix)]
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The wall and CPU time of one phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTime {
    /// What the phase does ("resolution").
    pub name: &'static str,
    /// Elapsed time.
    pub wall: Duration,
    /// CPU time of all the process's threads, user and system, over the same span
    /// (zero where the platform cannot tell).
    pub cpu: Duration,
}

impl PhaseTime {
    /// The line `--stats` prints for the phase: the wall time last, so that a script
    /// taking the number before the final "ms" reads the same figure as before the CPU
    /// time was added.
    pub fn render(&self) -> String {
        format!(
            "ptxld: stats: {:<28} cpu {:>8.2} ms, wall {:>8.2} ms\n",
            self.name,
            self.cpu.as_secs_f64() * 1e3,
            self.wall.as_secs_f64() * 1e3
        )
    }
}

/// Started at the beginning of a phase; [`Stopwatch::stop`] gives its times.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    wall: Instant,
    cpu: Duration,
}

impl Stopwatch {
    /// Starts timing a phase now.
    pub fn start() -> Stopwatch {
        Stopwatch {
            wall: Instant::now(),
            cpu: process_cpu_time(),
        }
    }

    /// The times of phase `name` from the start until now.
    pub fn stop(&self, name: &'static str) -> PhaseTime {
        PhaseTime {
            name,
            wall: self.wall.elapsed(),
            cpu: process_cpu_time().saturating_sub(self.cpu),
        }
    }
}

/// The CPU clocks of the threads registered with [`count_this_thread`].
#[cfg(unix)]
static THREAD_CLOCKS: Mutex<Vec<libc::clockid_t>> = Mutex::new(Vec::new());

/// Counts the calling thread's CPU time in the phases' CPU time from now on, read
/// from its own clock. Either every thread that works in the phases registers
/// (the command's main thread and its pool's, with `--stats`), or none does and
/// the process's clock is read instead.
#[cfg(unix)]
pub fn count_this_thread() {
    if let Some(clock) = this_thread_clock() {
        THREAD_CLOCKS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(clock);
    }
}

#[cfg(not(unix))]
pub fn count_this_thread() {}

/// The time of CPU clock `clock`.
#[cfg(unix)]
fn clock_time(clock: libc::clockid_t) -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to; `clock` is a constant the C
    // library defines or the clock of a registered thread, which lives as long
    // as the process (the main thread and the global pool's threads).
    let r = unsafe { libc::clock_gettime(clock, &mut t) };
    if r != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// CPU time used so far by every thread of this process: the registered threads'
/// clocks, or the process's clock (a system call each: no fast path in the vDSO,
/// so this is for phases, not loops).
#[cfg(unix)]
fn process_cpu_time() -> Duration {
    let clocks = THREAD_CLOCKS.lock().unwrap_or_else(|e| e.into_inner());
    if clocks.is_empty() {
        return clock_time(libc::CLOCK_PROCESS_CPUTIME_ID);
    }
    clocks.iter().map(|&c| clock_time(c)).sum()
}

/// The CPU clock of the calling thread, as [`count_this_thread`] registers it.
#[cfg(unix)]
fn this_thread_clock() -> Option<libc::clockid_t> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is the calling thread, alive; `clock` is a valid
    // place to write the id to.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
    (r == 0).then_some(clock)
}

#[cfg(not(unix))]
fn process_cpu_time() -> Duration {
    Duration::ZERO
}

/// Peak resident set size of this process in kB (Linux `VmHWM`), for `--stats`.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_phase_has_cpu_time() {
        let busy = Stopwatch::start();
        let mut x = 0u64;
        let spin = Instant::now();
        while spin.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let busy = busy.stop("busy");
        assert!(busy.wall >= Duration::from_millis(30));
        if cfg!(unix) {
            // Other tests' threads add to the process's CPU time, never take from
            // it; half the spin allows for a preempted test thread.
            assert!(busy.cpu >= Duration::from_millis(15), "{busy:?}");
        }
        let line = busy.render();
        assert!(line.starts_with("ptxld: stats: busy "), "{line}");
        assert!(line.ends_with(" ms\n") && line.contains(" cpu "), "{line}");
    }

    /// A registered thread's clock is read from another thread while it runs, as
    /// the phases read the pool's threads: it shows the spin.
    #[cfg(unix)]
    #[test]
    fn a_running_threads_clock_is_read_up_to_date() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            tx.send(this_thread_clock().expect("a thread clock"))
                .unwrap();
            let mut x = 0u64;
            while stop_rx.try_recv().is_err() {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
        });
        let clock = rx.recv().unwrap();
        let before = clock_time(clock);
        // Read while it spins, until it shows 20 ms of spinning: on a machine
        // busy with other tests the spinner gets only a share of a core, so a
        // fixed sleep proves nothing about the clock (it read 19.97 ms after a
        // 40 ms sleep in one full test run on two cores).
        let waited = Instant::now();
        let mut spun = Duration::ZERO;
        while spun < Duration::from_millis(20) && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
            spun = clock_time(clock).saturating_sub(before);
        }
        stop_tx.send(()).unwrap();
        spinner.join().unwrap();
        assert!(
            spun >= Duration::from_millis(20),
            "{spun:?} in {:?}",
            waited.elapsed()
        );
    }
}
