//! Part of the `ptxld` binary, not of the library: the command line answers as soon
//! as the link's result is known, and leaves the process teardown to a child.
//!
//! After the output is renamed into place, ending the process still costs time: the
//! kernel unmaps thousands of inputs and frees the link's memory, a noticeable part
//! of a large link's time (docs/performance.md). A build waits for none of it.
//! So, as mold does, the command forks before any thread starts: the child links and
//! reports the exit status through a pipe the moment its output and messages are
//! complete, then closes its standard streams and tears itself down; the parent,
//! which did nothing but wait, exits with that status at once.
//!
//! Signals that stop a link reach the child: the parent passes SIGINT, SIGTERM and
//! SIGHUP on, and the child asks the kernel for a SIGINT should the parent die any
//! other way (SIGKILL) before it has reported; its signal handlers (`signals.rs`)
//! then remove the temporary output. Exit statuses and messages are those of an
//! unforked link: 130, 143 or 129 after SIGINT, SIGTERM or SIGHUP.

use std::sync::atomic::{AtomicI32, Ordering};

/// The child's side: where to report the exit status.
pub struct Reporter {
    fd: libc::c_int,
}

/// Forks. In the parent this waits for the child's status and exits with it (it
/// never returns); in the child it returns the [`Reporter`] to call once the result
/// is known. `None` when forking failed: the caller then just runs in this process.
///
/// Must be called before any thread is started.
pub fn fork() -> Option<Reporter> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: plain system calls; `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    let [read_end, write_end] = fds;
    // SAFETY: no thread has been started yet, so the child is a complete copy.
    let parent = unsafe { libc::getpid() };
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        // SAFETY: closing the pipe just made.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return None;
    }
    if pid > 0 {
        // SAFETY: the parent's copy of the write end is not needed.
        unsafe { libc::close(write_end) };
        forward_signals_to(pid);
        wait_for_child(read_end, pid);
    }
    // SAFETY: plain system calls in the child.
    unsafe {
        libc::close(read_end);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT as libc::c_ulong);
        // The parent may have died before the request above.
        if libc::getppid() != parent {
            libc::_exit(130);
        }
    }
    Some(Reporter { fd: write_end })
}

/// The child the parent waits for, for [`forward`].
/// In the linking child, once its signal handlers are installed: the stopping
/// signals that arrived since the fork are delivered to them now.
pub fn handled() {
    block_stopping_signals(false);
}

/// Blocks (or unblocks) SIGINT, SIGTERM and SIGHUP for this thread, the only one
/// when this runs.
fn block_stopping_signals(block: bool) {
    // SAFETY: a signal set on the stack, filled by sigemptyset/sigaddset, passed to
    // pthread_sigmask; no old mask is asked for.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        let how = if block {
            libc::SIG_BLOCK
        } else {
            libc::SIG_UNBLOCK
        };
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

static CHILD: AtomicI32 = AtomicI32::new(0);

/// Signals that stop a link, sent to the command (`kill -INT PID`, a build system
/// giving up): passed on to the child, which handles them as it would unforked
/// (each removes the temporary output); the parent then ends as the child did.
const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn forward(sig: libc::c_int) {
    // SAFETY: `kill` is async-signal-safe; CHILD was set before the handler.
    unsafe {
        libc::kill(CHILD.load(Ordering::Relaxed), sig);
    }
}

fn forward_signals_to(pid: libc::pid_t) {
    CHILD.store(pid, Ordering::Relaxed);
    for sig in FORWARDED {
        // SAFETY: installs a handler that only calls `kill`; no SA_RESTART, so a
        // signal interrupts the wait below, which then simply waits again.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = forward as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// The parent: exits with the status the child reports or, if the child ended
/// without reporting (it crashed), with the child's own status.
fn wait_for_child(read_end: libc::c_int, pid: libc::pid_t) -> ! {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into `byte`.
        let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            std::process::exit(i32::from(byte));
        }
        if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            std::process::exit(1);
        }
    }
    if libc::WIFEXITED(status) {
        std::process::exit(libc::WEXITSTATUS(status));
    }
    if libc::WIFSIGNALED(status) {
        // Die the way the child did, so the caller sees the same signal.
        let sig = libc::WTERMSIG(status);
        // SAFETY: restores the default action and sends the signal to ourselves.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
    std::process::exit(1);
}

impl Reporter {
    /// Reports success (exit status 0) or failure (1) to the waiting parent, which
    /// exits with it, then detaches this process's standard streams so that a build
    /// system reading them sees their end now, not after the teardown.
    pub fn report(self, success: bool) {
        let code = u8::from(!success);
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        // SAFETY: plain system calls on descriptors this process owns.
        unsafe {
            // The parent is about to exit: that is no reason to stop any more.
            libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong);
            libc::write(self.fd, (&code as *const u8).cast(), 1);
            libc::close(self.fd);
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            if null >= 0 {
                for fd in 0..3 {
                    libc::dup2(null, fd);
                }
                libc::close(null);
            }
        }
    }
}
