//! Reading input files.
//!
//! Inputs are memory-mapped with `memmap2` and never copied: the lexer, the parser
//! and the writer all borrow the mapped bytes.
//!
//! # Why the `unsafe` map is sound enough here
//!
//! `Mmap::map` is `unsafe` because the mapped bytes can change (or, if the file is
//! truncated, disappear and raise `SIGBUS`) while we hold a `&[u8]` to them, which
//! breaks Rust's promise that borrowed data is immutable. ptxld accepts this the same
//! way every mmap-based linker (lld, mold, wild) does:
//!
//! * ptxld only ever reads its inputs and opens them read-only, so ptxld itself never
//!   mutates a mapping (and `-o` naming an input is refused before anything is mapped);
//! * a build system does not rewrite a compiler's output while the link step that
//!   consumes it runs; if another process does it anyway, the worst outcome is a garbled
//!   link or a crash of this process, never corruption of the input file (the mapping
//!   is private and read-only);
//! * nothing relies on the bytes staying the same for memory safety: every index into
//!   the file is bounds-checked against the length taken at map time.
//!
//! Standard input and container payloads are read into an owned buffer instead.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

/// The largest input ptxld accepts: spans are `u32` byte offsets.
pub const MAX_INPUT_LEN: u64 = u32::MAX as u64;

/// The bytes of one input, either mapped or owned.
pub enum Bytes {
    /// A read-only private mapping of a file.
    Mapped(Mmap),
    /// An owned buffer (standard input, empty files, extracted payloads, tests).
    Owned(Vec<u8>),
}

impl Bytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// Why an input could not be read.
#[derive(Debug)]
pub enum InputError {
    /// The file could not be opened, inspected or mapped.
    Io {
        /// The path as given.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The file is larger than ptxld's span type can address.
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
    },
    /// The path names a directory.
    IsDirectory {
        /// The path as given.
        path: PathBuf,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Io { path, source } => {
                write!(f, "cannot read {}: {}", path.display(), source)
            }
            InputError::TooLarge { path, len } => write!(
                f,
                "{}: input is {} bytes; ptxld accepts inputs of at most {} bytes (4 GiB - 1); \
                 split the module or link its parts separately",
                path.display(),
                len,
                MAX_INPUT_LEN
            ),
            InputError::IsDirectory { path } => {
                write!(f, "{}: is a directory, not a PTX file", path.display())
            }
        }
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Checks a length against [`MAX_INPUT_LEN`].
pub fn check_len(path: &Path, len: u64) -> Result<(), InputError> {
    if len > MAX_INPUT_LEN {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            len,
        });
    }
    Ok(())
}

/// Maps `path` read-only. `-` reads standard input into memory.
pub fn read_path(path: &Path) -> Result<Bytes, InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    if path == Path::new("-") {
        let mut buf = Vec::new();
        io::stdin().lock().read_to_end(&mut buf).map_err(io_err)?;
        check_len(path, buf.len() as u64)?;
        return Ok(Bytes::Owned(buf));
    }
    let file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        // Pipes and character devices (`<(cmd)`, `/dev/stdin`) cannot be mapped.
        let mut buf = Vec::new();
        (&file).read_to_end(&mut buf).map_err(io_err)?;
        check_len(path, buf.len() as u64)?;
        return Ok(Bytes::Owned(buf));
    }
    check_len(path, meta.len())?;
    if meta.len() == 0 {
        // Mapping an empty file fails on some systems; there is nothing to map anyway.
        return Ok(Bytes::Owned(Vec::new()));
    }
    // SAFETY: see the module documentation: read-only private mapping of a file this
    // process never writes; all accesses are bounds-checked against the mapped length.
    // (MAP_POPULATE was tried: no measurable difference on a 169 MB parse.)
    let map = unsafe { Mmap::map(&file) }.map_err(io_err)?;
    Ok(Bytes::Mapped(map))
}
