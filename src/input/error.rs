//! Why an input could not be read.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::MAX_INPUT_LEN;

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
    /// The path names a FIFO that no program had open for writing (and that held no
    /// data) when ptxld opened it.
    FifoWithoutWriter {
        /// The path as given.
        path: PathBuf,
    },
    /// The file no longer holds what it held when it was read: it is shorter now,
    /// or its size or modification time differ.
    Changed {
        /// The path as given.
        path: PathBuf,
    },
}

/// [`InputError::Changed`]'s message is `input NAME` and this; the `SIGBUS` handler
/// of the command line writes it too.
pub const CHANGED: &str = " changed while ptxld was linking it; run the link again";

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
            InputError::FifoWithoutWriter { path } => write!(
                f,
                "{}: is a FIFO with no writer; ptxld reads a FIFO only while a program \
                 has it open for writing: start the writer first, or pass a regular file",
                path.display()
            ),
            InputError::Changed { path } => write!(f, "input {}{CHANGED}", path.display()),
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

/// The error of [`Bytes::read_at`] and [`Bytes::read_scattered_at`] for bytes that
/// are no open file (callers ask [`Bytes::is_readable_file`] first).
pub(super) fn not_open() -> InputError {
    InputError::Io {
        path: PathBuf::new(),
        source: io::Error::new(io::ErrorKind::Unsupported, "not an open file"),
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
