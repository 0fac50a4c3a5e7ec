//! Phase times for `--stats`: wall time, and the CPU time the whole process (every
//! thread) spent meanwhile. Their ratio shows how many cores a phase kept busy: a
//! phase whose CPU time is no more than its wall time ran on one core, and is
//! where more threads cannot help.

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

/// CPU time used so far by every thread of this process (one system call: the
/// process clock has no fast path in the vDSO, so this is for phases, not loops).
#[cfg(unix)]
fn process_cpu_time() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec to write to; the clock id is a constant the
    // C library defines.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if r != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
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
}
