//! Writing output files without ever destroying one.
//!
//! * A regular output (or a new one) is written to a temporary file in its directory
//!   and renamed over it, so readers see the old file or the whole new one, and a
//!   failed or interrupted link never leaves a partial file. The temporary is created
//!   exclusively (`O_CREAT | O_EXCL`, by `tempfile`) under a name with a random part:
//!   a symbolic link planted at a predictable name can no longer make a link write
//!   through it. A symbolic link named as the output is replaced, not followed, as
//!   GNU ld and lld do.
//! * An existing file that is not a regular file (`/dev/null`, a FIFO, a terminal, or
//!   a symbolic link to one) is opened and written in place, as GNU ld and lld do:
//!   renaming over it would replace a device node with a file. A directory is an
//!   error.
//! * While it is written, a temporary is locked (`flock`), and it is registered for
//!   [`remove_temporaries`], which a signal handler may call. A link killed outright
//!   (`SIGKILL`) cannot remove its temporary; the next link of the same output
//!   removes it: a temporary whose lock is free (its writer is gone) and which has
//!   not been written for [`STALE_AFTER`] is a leftover.

use std::ffi::{c_char, CStr, CString, OsStr};
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::Duration;

use crate::input::{file_key, FileKey};

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

/// How long a temporary whose lock is free must have gone unwritten before a link
/// of the same output removes it as a leftover. Its writer locks it right after
/// creating it, so an unlocked temporary this old has lost its writer; the margin
/// covers the moment between the two.
pub const STALE_AFTER: Duration = Duration::from_secs(10);

/// A file being written: standard output, an existing special file written in place,
/// or a temporary to be renamed into place by [`OutputFile::commit`]. Dropped without
/// a commit, a temporary is removed.
pub struct OutputFile {
    path: PathBuf,
    kind: Kind,
}

enum Kind {
    Stdout,
    InPlace(fs::File),
    Temporary(Temporary),
}

struct Temporary {
    /// Taken by [`OutputFile::commit`]; otherwise dropped, which removes the file.
    /// Declared before `_registration`, so dropped first: the path stays registered
    /// for a signal handler until the file is gone (removing it twice is harmless,
    /// leaving it is not).
    file: Option<tempfile::NamedTempFile>,
    _registration: Registration,
}

impl OutputFile {
    /// Prepares to write `path`: `-` is standard output; an existing file that is not
    /// a regular file (after following symbolic links) is opened for writing in place
    /// (opening a FIFO waits for its reader); a directory is an error
    /// (`ErrorKind::IsADirectory`, "is a directory"); anything else gets a new
    /// temporary file in `path`'s directory, after leftovers of earlier links of the
    /// same output there are removed.
    pub fn create(path: &Path) -> io::Result<OutputFile> {
        let kind = if path == Path::new("-") {
            Kind::Stdout
        } else {
            match special(path)? {
                Some(f) => Kind::InPlace(f),
                None => Kind::Temporary(temporary(path)?),
            }
        };
        Ok(OutputFile {
            path: path.to_path_buf(),
            kind,
        })
    }

    /// Writes the content with `write`, which gets the writer and, for a temporary
    /// file, the file under it (for copies made by the kernel at its position).
    pub fn write_with(&mut self, write: &mut WriteOutput<'_>) -> io::Result<()> {
        match &mut self.kind {
            Kind::Stdout => {
                let mut out = io::stdout().lock();
                write(&mut out, None)?;
                out.flush()
            }
            Kind::InPlace(f) => write(&mut &*f, None),
            Kind::Temporary(t) => match &t.file {
                Some(f) => {
                    let f = f.as_file();
                    write(&mut &*f, Some(f))
                }
                None => Err(io::Error::other("the temporary file is gone")),
            },
        }
    }

    /// Writes `bytes`.
    pub fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_with(&mut |w, _| w.write_all(bytes))
    }

    /// Puts a temporary file in place (one `rename`); nothing to do for standard
    /// output and files written in place. No fsync: the rename already guarantees
    /// readers see the old file or the whole new one, and durability across a power
    /// loss is the build system's concern (lld and GNU ld do not sync either).
    pub fn commit(mut self) -> io::Result<()> {
        let Kind::Temporary(t) = &mut self.kind else {
            return Ok(());
        };
        match t.file.take() {
            // On failure the file comes back in the error, whose drop removes it.
            Some(f) => f.persist(&self.path).map(drop).map_err(|e| e.error),
            None => Err(io::Error::other("the temporary file is gone")),
        }
    }
}

/// `path` opened for writing if it exists and is not a regular file; `None` for a
/// regular file or a path that does not exist yet.
fn special(path: &Path) -> io::Result<Option<fs::File>> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            "is a directory",
        )),
        Ok(m) if !m.is_file() => {
            // Opened without `create` or `truncate`: should the special file have
            // been replaced by a regular file meanwhile, that file is left as it is
            // (and written through a temporary like any other).
            let f = fs::OpenOptions::new().write(true).open(path)?;
            Ok((!f.metadata()?.is_file()).then_some(f))
        }
        _ => Ok(None),
    }
}

/// A new temporary file for `path`, in its directory: `.NAME.ptxld-PID-RANDOM.tmp`,
/// created exclusively, with the permissions of a file created normally (0666 less
/// the umask), locked, and registered for [`remove_temporaries`].
fn temporary(path: &Path) -> io::Result<Temporary> {
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
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    let file = builder.tempfile_in(dir)?;
    let registration = Registration::new(file.path());
    lock(file.as_file());
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

/// Writes `bytes` to `path` through a temporary file in the same directory and a
/// rename (or in place for special files, see [`OutputFile::create`]). `-` writes
/// to standard output.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, &mut |w, _| w.write_all(bytes))
}

/// Writes an output to a writer and, unless it is standard output, the file under it.
pub type WriteOutput<'a> = dyn FnMut(&mut dyn Write, Option<&fs::File>) -> io::Result<()> + 'a;

/// Like [`write_atomic`], with the content produced by `write` (which may write in
/// many pieces; nothing is visible at `path` until it returned `Ok`). `write` also
/// gets the file its writer writes to (`None` for standard output and special
/// files), for copies made by the kernel at the file's position.
pub fn write_atomic_with(path: &Path, write: &mut WriteOutput<'_>) -> io::Result<()> {
    let mut f = OutputFile::create(path)?;
    f.write_with(write)?;
    f.commit()
}

/// Asks the file system for the blocks of the next `len` bytes of `file` (from its
/// position) before they are written, without changing its size: only a hint,
/// whose failure (a file system without `fallocate`, or no room, which the writes
/// then report) changes nothing. On ext4 (Linux 6.18) writes into blocks reserved
/// this way took 10 ms for 105 MB in 1 MB writes, against 18 ms with blocks
/// allocated as the writes come (docs/performance.md).
pub fn reserve(file: &fs::File, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: plain system calls on an open descriptor.
        unsafe {
            let at = libc::lseek(fd, 0, libc::SEEK_CUR);
            if at >= 0 && len > 0 && len <= i64::MAX as u64 {
                let _ = libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, at, len as libc::off_t);
            }
        }
    }
    let _ = (file, len);
}

/// What a file ptxld is to write is on disk, to tell whether two files it writes,
/// or one it writes and one it read, are the same file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// An existing file (after following symbolic links; standard output's file
    /// for `-`).
    Existing {
        /// Its identity.
        key: FileKey,
        /// A character device (`/dev/null`, a terminal): several outputs may go
        /// there, since writing one destroys nothing of another.
        char_device: bool,
    },
    /// A file still to be created: its directory's canonical path joined with its
    /// name.
    New(PathBuf),
    /// Neither (a directory that does not exist): writing it fails anyway.
    Unknown,
}

impl Destination {
    /// Where writing `path` goes; `-` is standard output.
    pub fn of(path: &Path) -> Destination {
        if path == Path::new("-") {
            return stdout_destination();
        }
        if let Ok(m) = fs::metadata(path) {
            return match file_key(path, Some(&m)) {
                Some(key) => Destination::Existing {
                    key,
                    char_device: is_char_device(&m),
                },
                None => Destination::Unknown,
            };
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        match (fs::canonicalize(dir), path.file_name()) {
            (Ok(d), Some(name)) => Destination::New(d.join(name)),
            _ => Destination::Unknown,
        }
    }

    /// True if writing both would write one file twice: the same existing file
    /// (other than a character device), or the same new name in the same directory.
    pub fn same_file_as(&self, other: &Destination) -> bool {
        match (self, other) {
            (
                Destination::Existing {
                    key: a,
                    char_device: false,
                },
                Destination::Existing { key: b, .. },
            ) => a == b,
            (Destination::New(a), Destination::New(b)) => a == b,
            _ => false,
        }
    }

    /// The identity of the existing file, if it is one.
    pub fn key(&self) -> Option<&FileKey> {
        match self {
            Destination::Existing { key, .. } => Some(key),
            _ => None,
        }
    }
}

#[cfg(unix)]
fn is_char_device(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_char_device()
}

#[cfg(not(unix))]
fn is_char_device(_: &fs::Metadata) -> bool {
    false
}

#[cfg(unix)]
fn stdout_destination() -> Destination {
    use std::os::fd::AsFd;
    let meta = io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| fs::File::from(fd).metadata());
    match meta {
        Ok(m) => Destination::Existing {
            key: file_key(Path::new("-"), Some(&m)).unwrap_or_default(),
            char_device: is_char_device(&m),
        },
        Err(_) => Destination::Unknown,
    }
}

#[cfg(not(unix))]
fn stdout_destination() -> Destination {
    Destination::Unknown
}
