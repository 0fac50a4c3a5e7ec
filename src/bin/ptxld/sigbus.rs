//! Part of the `ptxld` binary, not of the library: an input cut short while it is
//! mapped fails the link with a message, not a crash.
//!
//! Touching a page of a file's mapping past the end of the file raises `SIGBUS`,
//! whose default action kills the process (and the command, which dies the way its
//! linking child did). An input that another program truncates while ptxld links
//! it is such a file. The library enters every mapping in a registry that can be
//! searched from a signal handler ([`ptxld::internal::input::mapped_file_at`]); this handler
//! looks up the faulting address there and, when it lies in an input's mapping,
//! reports the input as changed (the message the library gives for a change it
//! notices itself), removes the temporary output and exits with status 1. Any other
//! `SIGBUS` is a bug or a signal sent by another program: the handler restores the
//! default action and raises the signal again, so the process dies of it as before.
//!
//! Everything the handler does is async-signal-safe: atomic loads and reads of
//! memory never freed (the registry), `write`, `sigaction`, `raise` and `_exit`;
//! removing the temporaries is the output module's concern.

use libc::{c_int, siginfo_t, SIGBUS};

/// Installs the handler. Call it before the link starts threads (the registry's
/// registration is best done before other threads could install handlers too).
pub fn install() {
    // SAFETY: `on_sigbus` only calls async-signal-safe functions (module
    // documentation) and never panics. `register_unchecked` because the registry
    // refuses the signals of faults by default; for SIGBUS the action below either
    // ends the process or makes the fault fatal again.
    let _ = unsafe { signal_hook_registry::register_unchecked(SIGBUS, on_sigbus) };
}

fn on_sigbus(info: &siginfo_t) {
    // The kernel sets a positive code (BUS_ADRERR for a page past the end of the
    // file) and the faulting address; a signal sent with `kill` has a code of zero
    // or less and no address.
    if info.si_code > 0 {
        // SAFETY: a kernel-raised SIGBUS carries `si_addr`.
        let addr = unsafe { info.si_addr() } as usize;
        if let Some(name) = ptxld::internal::input::mapped_file_at(addr) {
            write_all(b"ptxld: error: input ");
            write_all(name.to_bytes());
            write_all(ptxld::internal::input::CHANGED.as_bytes());
            write_all(b"\n");
            ptxld::internal::write::output::remove_temporaries();
            // SAFETY: ends the process at once, running nothing else of it.
            unsafe { libc::_exit(1) };
        }
    }
    // Not an input's mapping: die of the signal, as without this handler. The
    // signal is blocked while its handler runs, so the raised one is delivered (with
    // the default action) when the handler returns; a fault would also recur.
    // SAFETY: `sigaction` and `raise` are async-signal-safe; the action is local.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        libc::sigaction(SIGBUS, &dfl, std::ptr::null_mut());
        libc::raise(SIGBUS);
    }
}

/// Writes `bytes` to standard error with `write` (async-signal-safe), retrying
/// after partial writes and interruptions; gives up on any other error.
fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a live slice to descriptor 2.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n > 0 {
            bytes = &bytes[n as usize..];
        } else if n == 0 || errno() != libc::EINTR {
            return;
        }
    }
}

/// This thread's `errno` (the handler runs on the thread that faulted).
fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}
