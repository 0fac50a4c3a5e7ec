//! The temporaries output files are written to: created exclusively, locked while
//! written, registered so that a signal handler can remove them, and swept by the
//! next link of the same output when their writer is gone (see [`super::output`]).

use std::ffi::{c_char, CStr, CString, OsStr};
use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

/// How many temporaries can be registered for [`remove_temporaries`] at once. A
/// link writes three at most (output, link map, dependency file); library users may
/// run links on several threads. A temporary that finds no free slot is written all
/// the same, and if a signal then stops the process, the next link sweeps it.
const SLOTS: usize = 64;

/// The paths of the temporaries being written, each a `CString` leaked into its slot
/// (null when free). A fixed array of atomic pointers, so that
/// [`remove_temporaries`] needs neither a lock nor an allocation.
static TEMPORARIES: [AtomicPtr<c_char>; SLOTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// Removes every temporary output file still being written (the command line calls
/// it when SIGINT, SIGTERM or SIGHUP stop a link).
///
/// Async-signal-safe: it may be called from a signal handler, at any point of any
/// thread. It takes no lock and allocates nothing: each registered path is taken
/// out of its slot with one atomic swap (so a path is removed once, and never freed
/// while this reads it) and removed with `unlink`. The paths' memory is not freed;
/// the process is expected to end.
pub fn remove_temporaries() {
    for slot in &TEMPORARIES {
        let p = slot.swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            // SAFETY: a non-null slot holds a pointer from `CString::into_raw`
            // (see `Registration::new`), and the swap made this call its only owner:
            // `Registration::drop` frees it only if it takes it out of the slot.
            let path = unsafe { CStr::from_ptr(p) };
            unlink(path);
        }
    }
}

#[cfg(unix)]
fn unlink(path: &CStr) {
    // A plain `unlink` system call: `&CStr` is passed as is, without a copy.
    let _ = rustix::fs::unlink(path);
}

#[cfg(not(unix))]
fn unlink(path: &CStr) {
    if let Ok(p) = path.to_str() {
        let _ = fs::remove_file(p);
    }
}

/// A temporary's slot in [`TEMPORARIES`]; dropping it frees the slot.
struct Registration {
    /// The slot and the pointer put there.
    slot: Option<(usize, *mut c_char)>,
}

impl Registration {
    fn new(path: &Path) -> Registration {
        let Some(c) = crate::path_bytes::c_string(path.as_os_str()) else {
            return Registration { slot: None };
        };
        let p = c.into_raw();
        for (i, slot) in TEMPORARIES.iter().enumerate() {
            let taken =
                slot.compare_exchange(std::ptr::null_mut(), p, Ordering::AcqRel, Ordering::Relaxed);
            if taken.is_ok() {
                return Registration { slot: Some((i, p)) };
            }
        }
        // SAFETY: `p` comes from `into_raw` above and was never published.
        drop(unsafe { CString::from_raw(p) });
        Registration { slot: None }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some((i, p)) = self.slot {
            let freed = TEMPORARIES[i].compare_exchange(
                p,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
            if freed.is_ok() {
                // SAFETY: taken back out of the slot, so no one else holds it; it
                // came from `CString::into_raw`.
                drop(unsafe { CString::from_raw(p) });
            }
        }
    }
}

/// A file that is no output but must not outlive a link stopped by a signal either
/// (`--verify`'s copy of a target's text for ptxas, which can be gigabytes): registered
/// for [`remove_temporaries`] while this lives. Dropping it leaves the file alone.
pub(crate) struct RemovedOnSignal {
    _registration: Registration,
}

impl RemovedOnSignal {
    /// Registers `path`.
    pub(crate) fn new(path: &Path) -> RemovedOnSignal {
        RemovedOnSignal {
            _registration: Registration::new(path),
        }
    }
}

/// How long a temporary whose lock is free must have gone unwritten before a link
/// of the same output removes it as a leftover. Its writer locks it right after
/// creating it, so an unlocked temporary this old has lost its writer; the margin
/// covers the moment between the two.
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// A temporary being written, registered for [`remove_temporaries`].
pub(super) struct Temporary {
    /// Taken by [`super::output::OutputFile::commit`]; otherwise dropped, which removes the file.
    /// Declared before `_registration`, so dropped first: the path stays registered
    /// for a signal handler until the file is gone (removing it twice is harmless,
    /// leaving it is not).
    pub(super) file: Option<tempfile::NamedTempFile>,
    _registration: Registration,
}

/// A new temporary file for `path`, in its directory: `.NAME.ptxld-PID-RANDOM.tmp`,
/// created exclusively, with the permissions of a file created normally (0666 less
/// the umask), locked, and registered for [`remove_temporaries`].
pub(super) fn temporary(path: &Path) -> io::Result<Temporary> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name")
    })?;
    let prefix = temporary_prefix(name);
    sweep(dir, &prefix);
    let mut pid_prefix = prefix;
    pid_prefix.push(format!("{}-", std::process::id()));
    let mut builder = tempfile::Builder::new();
    builder.prefix(&pid_prefix).suffix(".tmp").rand_bytes(6);
    // Each name is registered before the file is created: a signal handled between
    // the two (on any thread) would otherwise leave the new file behind. Unlinking a
    // name not created yet is harmless, and a name that exists is never ours to
    // remove: its registration is dropped when creating it fails.
    let mut registration = None;
    let file = builder.make_in(dir, |path| {
        registration = Some(Registration::new(path));
        let mut options = fs::OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o666);
        let created = options.open(path);
        if created.is_err() {
            registration = None;
        }
        created
    })?;
    lock(file.as_file());
    // Registered when the last name tried was created.
    let registration = registration.unwrap_or_else(|| Registration::new(file.path()));
    Ok(Temporary {
        file: Some(file),
        _registration: registration,
    })
}

/// `.NAME.ptxld-`: how the temporaries of output `NAME` begin (`.ptxld-` is what
/// tests and sweeping look for).
fn temporary_prefix(name: &OsStr) -> std::ffi::OsString {
    let mut p = std::ffi::OsString::from(".");
    p.push(name);
    p.push(".ptxld-");
    p
}

/// Holds an exclusive lock on a temporary while it is written: the sign for other
/// links that its writer is alive. Another link's sweep holds the lock of a live
/// temporary only for a moment (to look at its age), so a few tries get it; if
/// something else keeps it, the temporary is protected from sweeping all the same.
#[cfg(unix)]
fn lock(file: &fs::File) {
    use rustix::fs::{flock, FlockOperation};
    for _ in 0..100 {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Err(rustix::io::Errno::WOULDBLOCK) => std::thread::sleep(Duration::from_millis(1)),
            // Locked, or a file system without locks.
            _ => return,
        }
    }
}

#[cfg(not(unix))]
fn lock(_: &fs::File) {}

/// Removes from `dir` the leftover temporaries of the output whose temporaries begin
/// with `prefix` (see [`temporary_prefix`]), also those of older ptxld versions
/// (`.NAME.ptxld-PID.tmp`): a regular file of this user, whose lock can be taken
/// (its writer is gone) and which has not been written for [`STALE_AFTER`].
///
/// Only the output's own temporaries: a link takes responsibility for the file it
/// replaces, not for the rest of a directory it shares with other builds, and each
/// output's next link sweeps that output's leftovers. The directory is read once,
/// which costs what listing it costs.
#[cfg(unix)]
fn sweep(dir: &Path, prefix: &OsStr) {
    use std::os::unix::ffi::OsStrExt;
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let prefix = prefix.as_bytes();
    for e in entries.flatten() {
        let name = e.file_name();
        let n = name.as_bytes();
        if n.len() > prefix.len() && n.starts_with(prefix) && n.ends_with(b".tmp") {
            let _ = remove_if_stale(&e.path());
        }
    }
}

#[cfg(not(unix))]
fn sweep(_: &Path, _: &OsStr) {}

/// Removes the temporary at `path` if it is a leftover (see [`sweep`]).
#[cfg(unix)]
fn remove_if_stale(path: &Path) -> io::Result<()> {
    use rustix::fs::{flock, open, FlockOperation, Mode, OFlags};
    use std::os::unix::fs::MetadataExt;
    // A device is never opened (opening some has effects), nor anything else that is
    // not a regular file; should one take the name meanwhile, the open below neither
    // follows a symbolic link nor waits for a FIFO's writer.
    if !fs::symlink_metadata(path)?.is_file() {
        return Ok(());
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY;
    let file = fs::File::from(open(path, flags | OFlags::CLOEXEC, Mode::empty())?);
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Ok(());
    }
    // Fails while a live writer holds it.
    flock(&file, FlockOperation::NonBlockingLockExclusive)?;
    let idle = meta.modified()?.elapsed().unwrap_or_default();
    if idle < STALE_AFTER {
        return Ok(());
    }
    // The name must still be the file locked here, not one created since.
    let now = fs::symlink_metadata(path)?;
    if (now.dev(), now.ino()) == (meta.dev(), meta.ino()) {
        fs::remove_file(path)?;
    }
    Ok(())
}
