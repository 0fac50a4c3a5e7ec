//! Reading input files.
//!
//! Inputs are kept open while the open-file budget lasts ([`keep_files_open`]) and
//! read with `pread` when their text is needed (parsing, then writing), so that no
//! input stays in this process's memory between the two; inputs of [`SMALL`] bytes
//! and more beyond the budget are memory-mapped with `memmap2` and never copied.
//! A file under [`SMALL`] bytes is never mapped: beyond the budget it is read into
//! memory with one read, and if its bytes are asked for as one slice they are read,
//! not mapped. A mapping costs the process a region of its address space each, and
//! the kernel allows a process 65,530 of them (`vm.max_map_count`), so a link of
//! that many small inputs failed with ENOMEM; LLVM's `MemoryBuffer` maps no file
//! under 16 KiB either (`shouldUseMmap` in llvm/lib/Support/MemoryBuffer.cpp: "We
//! don't use mmap for small files because this can severely fragment our address
//! space"). Reading every small file into memory instead of keeping it open would
//! hold its text from parsing until the output is written, which raises the peak
//! memory of a link of many small modules (the usual case) for nothing, so open
//! files come first.
//!
//! Standard input, pipes, FIFOs, character devices and container payloads are read
//! into an owned buffer instead.
//!
//! The files of this module, one job each:
//!
//! * this file: [`Bytes`] and the entry points that open and read an input;
//! * `open.rs`: opening without blocking on a FIFO, and reading streams and small
//!   files into memory;
//! * `mapping.rs`: mappings made when first needed, and the registry a `SIGBUS`
//!   handler searches ([`mapped_file_at`]);
//! * `pread.rs`: reading a file kept open at an offset, without its mapping;
//! * `fd_budget.rs`: how many inputs may stay open ([`keep_files_open`]);
//! * `error.rs`: [`InputError`];
//! * [`archive`], [`fatbin`], [`container`]: what an input holds besides PTX text.
//!
//! Every system call that reads an input is made here.

pub mod archive;
pub mod container;
mod error;
pub mod fatbin;
mod fd_budget;
mod mapping;
mod open;
mod pread;

use std::fs::Metadata;
use std::io::{self, Read};
use std::path::Path;

pub use error::{check_len, InputError, CHANGED};
pub use fd_budget::keep_files_open;
pub use mapping::{mapped_file_at, Mapping};

use open::{nonblocking, read_small, read_stream};

/// The largest input ptxld accepts: spans are `u32` byte offsets.
pub const MAX_INPUT_LEN: u64 = u32::MAX as u64;

/// The most parts one `Bytes::read_scattered_at` fills (Linux's `IOV_MAX`).
pub const MAX_PARTS: usize = 1024;

/// How many first bytes of a mapped file [`Bytes::head`] holds.
pub const HEAD_LEN: usize = 64;

/// Regular files shorter than this are never mapped (module
/// documentation); LLVM's `MemoryBuffer` draws the line at the same size.
pub const SMALL: u64 = 16 << 10;

/// The bytes of one input, either mapped or owned.
pub enum Bytes {
    /// A read-only private mapping of a file (made when first needed if the file is
    /// kept open), a copy of its first bytes (up to [`HEAD_LEN`]) read without
    /// touching the mapping, and the open file when the budget of
    /// [`keep_files_open`] allowed keeping it.
    Mapped(Mapping, Box<[u8]>, Option<std::fs::File>),
    /// An owned buffer (standard input, files under [`SMALL`] bytes, extracted
    /// payloads, tests).
    Owned(Vec<u8>),
}

impl Bytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m, _, file) => m.get(file.as_ref()),
            Bytes::Owned(v) => v,
        }
    }

    /// The bytes' length (without mapping a file that is not mapped yet).
    pub fn len(&self) -> usize {
        match self {
            Bytes::Mapped(m, ..) => m.len,
            Bytes::Owned(v) => v.len(),
        }
    }

    /// True if there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first bytes, enough to tell PTX from archives, containers and binary data
    /// (all of them, or at least [`HEAD_LEN`]). For a mapped file they come from a
    /// copy: looking at a file's first byte through the mapping would map in its
    /// first 64 KiB (the kernel's fault-around), which the linker reads otherwise.
    pub fn head(&self) -> &[u8] {
        match self {
            Bytes::Mapped(_, head, _) => head,
            Bytes::Owned(v) => v,
        }
    }

    /// True once the bytes are in this process's memory: always for owned bytes; for
    /// a mapped file, once [`Bytes::as_slice`] mapped it (a file kept open is mapped
    /// only when first asked for, and a link that needs no more than
    /// [`Bytes::read_at`] never maps it).
    pub fn is_in_memory(&self) -> bool {
        match self {
            Bytes::Mapped(m, ..) => m.is_loaded(),
            Bytes::Owned(_) => true,
        }
    }

    /// True for a mapped file that was kept open: [`Bytes::read_at`] can read it.
    pub fn is_readable_file(&self) -> bool {
        matches!(self, Bytes::Mapped(_, _, Some(_)))
    }
}

/// Maps `path` read-only. `-` reads standard input into memory.
pub fn read_path(path: &Path) -> Result<Bytes, InputError> {
    read_path_and_metadata(path).map(|(bytes, _)| bytes)
}

/// What identifies a file whatever path names it (hard and symbolic links included).
#[cfg(unix)]
pub type FileKey = (u64, u64);
/// What identifies a file whatever path names it (its canonical path here).
#[cfg(not(unix))]
pub type FileKey = std::path::PathBuf;

/// The [`FileKey`] of `path`, from `meta` when the caller has it; `None` if the file
/// cannot be inspected.
#[cfg(unix)]
pub fn file_key(path: &Path, meta: Option<&Metadata>) -> Option<FileKey> {
    use std::os::unix::fs::MetadataExt;
    let key = |m: &Metadata| (m.dev(), m.ino());
    match meta {
        Some(m) => Some(key(m)),
        None => std::fs::metadata(path).ok().map(|m| key(&m)),
    }
}

/// The [`FileKey`] of `path`; `None` if the file cannot be inspected.
#[cfg(not(unix))]
pub fn file_key(path: &Path, _meta: Option<&Metadata>) -> Option<FileKey> {
    std::fs::canonicalize(path).ok()
}

/// Like [`read_path`], and also returns the metadata of a regular file as it was when
/// it was read (taken from the open file, so it describes exactly the bytes mapped):
/// the driver compares its size and modification time with the file's before writing
/// the output. `None` for standard input, pipes, FIFOs and devices.
pub fn read_path_and_metadata(path: &Path) -> Result<(Bytes, Option<Metadata>), InputError> {
    if path == Path::new("-") {
        let mut buf = Vec::new();
        io::stdin()
            .lock()
            .read_to_end(&mut buf)
            .map_err(|source| InputError::Io {
                path: path.to_path_buf(),
                source,
            })?;
        check_len(path, buf.len() as u64)?;
        return Ok((Bytes::Owned(buf), None));
    }
    read_opened(path, open_path(path)?)
}

/// An input file opened (without blocking, even on a FIFO) and its metadata, not
/// yet read.
#[derive(Debug)]
pub struct Opened {
    file: std::fs::File,
    meta: Metadata,
}

impl Opened {
    /// True for a regular file (which [`read_opened`] maps rather than reads).
    pub fn is_file(&self) -> bool {
        self.meta.is_file()
    }
}

/// Opens `path` and takes its metadata from the open file: one path lookup, where
/// a `stat` first would take two. Never blocks; reading is [`read_opened`]'s.
pub fn open_path(path: &Path) -> Result<Opened, InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = nonblocking::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    Ok(Opened { file, meta })
}

/// [`read_path_and_metadata`] of a file [`open_path`] opened.
pub fn read_opened(path: &Path, opened: Opened) -> Result<(Bytes, Option<Metadata>), InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let Opened { file, meta } = opened;
    if meta.is_dir() {
        return Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        // Pipes, FIFOs and character devices (`<(cmd)`, `/dev/stdin`) cannot be mapped.
        let buf = read_stream(path, &file, &meta, MAX_INPUT_LEN)?;
        check_len(path, buf.len() as u64)?;
        return Ok((Bytes::Owned(buf), None));
    }
    check_len(path, meta.len())?;
    let keep_open = fd_budget::take_one();
    if meta.len() < SMALL && !keep_open {
        return Ok((
            Bytes::Owned(read_small(&file, meta.len()).map_err(io_err)?),
            Some(meta),
        ));
    }
    let mut head = Vec::with_capacity(HEAD_LEN);
    (&file)
        .take(HEAD_LEN as u64)
        .read_to_end(&mut head)
        .map_err(io_err)?;
    let len = meta.len() as usize;
    // A file kept open is mapped only if something asks for its bytes through the
    // mapping; the linker reads them with `pread` (parsing, writing), so usually
    // nothing does. Each `mmap` takes the address-space lock that the other
    // threads' page faults wait for.
    let (mapping, file) = if keep_open {
        (Mapping::later(len, path), Some(file))
    } else {
        (Mapping::map(&file, len, path).map_err(io_err)?, None)
    };
    Ok((
        Bytes::Mapped(mapping, head.into_boxed_slice(), file),
        Some(meta),
    ))
}

/// Reads `path` into memory, at most `limit + 1` bytes (so that a caller can tell a
/// file longer than `limit` without reading all of it: a device such as /dev/zero
/// never ends). Opened as inputs are: a FIFO without a writer is an error, not a
/// wait. For small files read whole, such as response files.
pub fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = nonblocking::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(InputError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    read_stream(path, &file, &meta, limit)
}
