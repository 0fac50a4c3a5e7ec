//! Part of the `ptxld` binary: the signals that stop a link (Ctrl-C's SIGINT, SIGTERM
//! from a build system giving up or `kill`, SIGHUP from a closed terminal) leave no
//! temporary output behind, and the command ends with the shell's status for them,
//! 128 + the signal's number (130, 143, 129).
//!
//! The handlers run in the signal handler itself, not on a thread that waits for the
//! signal: the work is one async-signal-safe call
//! ([`ptxld::internal::write::output::remove_temporaries`]) and `_exit`, and nothing then has to
//! start a thread. When the command forked (`early_exit.rs`), the parent passes
//! these signals on to the linking child, whose handlers are the ones installed
//! here, and ends with the child's status.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// Installs the handlers of SIGINT, SIGTERM and SIGHUP. A handler that cannot be
/// installed leaves that signal's default action (ending the process at once).
pub fn install() {
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // SAFETY: the action runs inside the signal handler and calls only
        // async-signal-safe code: `remove_temporaries` (documented as such: atomic
        // swaps and `unlink`, no lock, no allocation) and `_exit`.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                ptxld::internal::write::output::remove_temporaries();
                signal_hook::low_level::exit(128 + sig);
            })
        };
    }
}
