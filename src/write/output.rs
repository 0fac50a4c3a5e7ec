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

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use super::temporary::{remove_temporaries, STALE_AFTER};
use super::temporary::{temporary, Temporary};
use crate::input::{file_key, FileKey};

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
/// then report) changes nothing. Writes into blocks reserved up front spare the
/// file system allocating blocks as each write comes, which is a large part of the
/// cost of writing a new file on ext4 (docs/performance.md). The size is left alone
/// (`FALLOC_FL_KEEP_SIZE`) so that a file cut short never ends in reserved zeros.
pub fn reserve(file: &fs::File, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{fallocate, seek, FallocateFlags, SeekFrom};
        if let Ok(at) = seek(file, SeekFrom::Current(0)) {
            if len > 0 && len <= i64::MAX as u64 {
                let _ = fallocate(file, FallocateFlags::KEEP_SIZE, at, len);
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
