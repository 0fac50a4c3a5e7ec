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
//! space"). Reading every small file into memory instead of keeping it open cost
//! the 105 MB benchmark link 11 MB more peak memory (2,200 of its 2,310 inputs are
//! under 16 KiB), so open files come first.
//!
//! # Why the `unsafe` map is sound enough here
//!
//! `Mmap::map` is `unsafe` because the mapped bytes can change (or, if the file is
//! truncated, disappear and raise `SIGBUS`) while we hold a `&[u8]` to them, which
//! breaks Rust's promise that borrowed data is immutable. ptxld accepts this the same
//! way every mmap-based linker (lld, mold, wild) does:
//!
//! * ptxld only ever reads its inputs and opens them read-only, so ptxld itself never
//!   mutates a mapping (and a link that would write one of its inputs, as its output,
//!   link map or dependency file, is refused before anything is written);
//! * a build system does not rewrite a compiler's output while the link step that
//!   consumes it runs; if another process does it anyway, the worst outcome is a garbled
//!   link or a crash of this process, never corruption of the input file (the mapping
//!   is private and read-only);
//! * nothing relies on the bytes staying the same for memory safety: every index into
//!   the file is bounds-checked against the length taken at map time.
//!
//! A file cut short while it is mapped is the one case that used to end in a crash:
//! touching a mapped page past the new end of the file raises `SIGBUS`. Every
//! mapping is therefore entered in a registry ([`mapped_file_at`]) that a `SIGBUS`
//! handler can search without locks or allocation; the command line's handler
//! (`src/bin/ptxld/sigbus.rs`) reports the file as changed and exits with status 1.
//! Reads from an open file that come up short are the same error
//! ([`InputError::Changed`]), never a reason to look at the mapping instead.
//!
//! Standard input, pipes, FIFOs, character devices and container payloads are read
//! into an owned buffer instead.
//!
//! # FIFOs
//!
//! Opening a FIFO for reading blocks until a program opens it for writing, so a FIFO
//! nobody writes would hang the link in `open` (as it hangs `cat`). On Unix, inputs
//! are therefore opened with `O_NONBLOCK`, which never blocks; for a FIFO one
//! non-blocking read then tells the cases apart: end of file at once means no program
//! has the FIFO open for writing and nothing is buffered (an error,
//! [`InputError::FifoWithoutWriter`], rather than an empty input), "would block" or
//! data means a writer is connected. `O_NONBLOCK` is then cleared again (`fcntl`) and
//! the rest is read with ordinary blocking reads, to the writer's end of file. Bash
//! process substitution (`<(cmd)`) and a named FIFO whose writer is already open both
//! work; a writer that opens the FIFO only after ptxld looked at it is too late.

pub mod archive;
pub mod container;
pub mod fatbin;

use std::fmt;
use std::fs::Metadata;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

/// The largest input ptxld accepts: spans are `u32` byte offsets.
pub const MAX_INPUT_LEN: u64 = u32::MAX as u64;

/// The most parts one [`Bytes::read_scattered_at`] fills (Linux's `IOV_MAX`).
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
            Bytes::Mapped(m, ..) => m.loaded.get().is_some(),
            Bytes::Owned(_) => true,
        }
    }

    /// True for a mapped file that was kept open: [`Bytes::read_at`] can read it.
    pub fn is_readable_file(&self) -> bool {
        matches!(self, Bytes::Mapped(_, _, Some(_)))
    }

    /// Reads bytes `lo..lo + buf.len()` of a mapped file kept open, without touching
    /// the mapping. A file that ends before (cut short since it was opened) is
    /// [`InputError::Changed`]; a bytes value that is no open file, or a range past
    /// the length taken when it was opened, an [`InputError::Io`].
    pub fn read_at(&self, lo: u64, buf: &mut [u8]) -> Result<(), InputError> {
        #[cfg(unix)]
        if let Bytes::Mapped(map, _, Some(f)) = self {
            use std::os::unix::fs::FileExt;
            if lo + buf.len() as u64 > map.len as u64 {
                return Err(map.past_the_end());
            }
            return f.read_exact_at(buf, lo).map_err(|e| map.read_error(e));
        }
        let _ = (lo, buf);
        Err(not_open())
    }

    /// Reads the consecutive bytes from `lo` of a mapped file kept open into `parts`,
    /// in order (one `preadv`: the first part gets the first bytes, and so on), without
    /// touching the mapping. An error, with the parts' contents unspecified, where
    /// that is not possible: [`InputError::Changed`] for a file that ends before the
    /// parts are full (cut short since it was opened), [`InputError::Io`] for a read
    /// error, no open file, a range past the length taken when it was opened, or more
    /// than [`MAX_PARTS`] parts.
    ///
    /// # Safety
    /// Each part must be valid for writes of its length, and no part may overlap
    /// memory that anything else reads or writes meanwhile (parts may overlap each
    /// other: the kernel writes them in order).
    pub unsafe fn read_scattered_at(
        &self,
        lo: u64,
        parts: &[(*mut u8, usize)],
    ) -> Result<(), InputError> {
        #[cfg(unix)]
        if let Bytes::Mapped(map, _, Some(f)) = self {
            use std::os::fd::AsRawFd;
            let total: usize = parts.iter().map(|p| p.1).sum();
            if parts.len() > MAX_PARTS || lo + total as u64 > map.len as u64 {
                return Err(map.past_the_end());
            }
            thread_local! {
                /// Each thread's `iovec` array, reused from call to call (one per
                /// module of each chunk the writer fills).
                static IOV: std::cell::Cell<Vec<libc::iovec>> =
                    const { std::cell::Cell::new(Vec::new()) };
            }
            let mut iov = IOV.take();
            iov.clear();
            iov.extend(parts.iter().map(|&(base, len)| libc::iovec {
                iov_base: base.cast(),
                iov_len: len,
            }));
            let read = loop {
                // SAFETY: the caller vouches for every part; the kernel writes at
                // most `total` bytes into them, in order.
                let n = unsafe {
                    libc::preadv(
                        f.as_raw_fd(),
                        iov.as_ptr(),
                        iov.len() as libc::c_int,
                        lo as libc::off_t,
                    )
                };
                match n {
                    // A regular file reads whole unless it ends first: it was cut
                    // short meanwhile. Its mapping would hold no more (its pages
                    // past the new end raise SIGBUS), so this is the end of the link.
                    n if n >= 0 && n as usize == total => break Ok(()),
                    n if n >= 0 => break Err(map.changed()),
                    _ => {
                        let e = io::Error::last_os_error();
                        if e.kind() != io::ErrorKind::Interrupted {
                            break Err(map.read_error(e));
                        }
                    }
                }
            };
            IOV.set(iov);
            return read;
        }
        let _ = (lo, parts);
        Err(not_open())
    }

    /// Appends bytes `lo..lo + len` of a mapped file kept open to `out` at its file
    /// position, inside the kernel (`copy_file_range`: page cache to page cache,
    /// never through this process's memory). `Ok(false)` when the kernel cannot copy
    /// between these files (another file system, an old kernel) and nothing was
    /// written: the caller writes the bytes itself then. An input that ends early
    /// (cut short since it was opened) is an error that wraps [`InputError::Changed`].
    pub fn copy_to(&self, lo: u64, len: u64, out: &std::fs::File) -> io::Result<bool> {
        #[cfg(target_os = "linux")]
        if let Bytes::Mapped(map, _, Some(f)) = self {
            use std::os::fd::AsRawFd;
            if lo + len > map.len as u64 {
                return Ok(false);
            }
            let (mut off, end) = (lo as libc::loff_t, (lo + len) as libc::loff_t);
            while off < end {
                let want = (end - off).min(1 << 30) as usize;
                // SAFETY: plain system call on two open descriptors; the kernel
                // reads and advances `off` only.
                let n = unsafe {
                    libc::copy_file_range(
                        f.as_raw_fd(),
                        &mut off,
                        out.as_raw_fd(),
                        std::ptr::null_mut(),
                        want,
                        0,
                    )
                };
                match n {
                    // The input ends early: it was cut short since it was opened.
                    0 => return Err(io::Error::other(map.changed())),
                    n if n > 0 => {}
                    _ => {
                        let e = io::Error::last_os_error();
                        match e.raw_os_error() {
                            Some(libc::EINTR) => {}
                            Some(
                                libc::EXDEV
                                | libc::EINVAL
                                | libc::ENOSYS
                                | libc::EOPNOTSUPP
                                | libc::EBADF,
                            ) if off == lo as libc::loff_t => return Ok(false),
                            _ => return Err(e),
                        }
                    }
                }
            }
            return Ok(true);
        }
        let _ = (lo, len, out);
        Ok(false)
    }

    /// Drops a mapped file's pages from this process's resident memory (the page
    /// cache keeps them; touching them again maps them back in). Only a hint.
    pub fn release(&self) {
        #[cfg(unix)]
        if let Bytes::Mapped(Mapping { loaded, .. }, ..) = self {
            if let Some(Loaded::Map(m)) = loaded.get() {
                // SAFETY: a private read-only mapping that is never written: after
                // MADV_DONTNEED, reads see the file's bytes again, as before.
                let _ = unsafe { m.map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
            }
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
fn not_open() -> InputError {
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

/// Lets mapped inputs keep their file open so that their bytes can be read without
/// touching the mapping (parsing reads a copy; the writer reads the text it needs
/// when it needs it), which keeps input pages out of resident memory
/// (docs/performance.md). `expected` is about how many inputs there will be. Call it
/// before the process starts threads: it raises the open-file limit to its hard
/// limit and grows the file descriptor table to hold `expected` more files now,
/// because growing it while threads run waits for an RCU grace period each time it
/// doubles (45-80 ms more for 2,310 inputs, measured). Inputs beyond what the limit
/// allows are simply not kept open. Without this call no file is kept open.
pub fn keep_files_open(expected: usize) {
    open_files::reserve(expected);
}

/// The budget of [`keep_files_open`].
mod open_files {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Descriptors left for everything else (outputs, temporaries, libraries).
    const SPARE: usize = 256;

    /// How many more inputs may stay open.
    static LEFT: AtomicUsize = AtomicUsize::new(0);

    /// Takes one file from the budget; false if none is left.
    pub fn take_one() -> bool {
        LEFT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    #[cfg(unix)]
    pub fn reserve(expected: usize) {
        // SAFETY: plain system calls on a local struct and on a descriptor this
        // function opens and closes itself.
        unsafe {
            let mut lim = std::mem::zeroed::<libc::rlimit>();
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: lim.rlim_max.min(1 << 20),
                    rlim_max: lim.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim = raised;
                }
            }
            let limit = usize::try_from(lim.rlim_cur).unwrap_or(usize::MAX);
            let budget = expected.min(limit.saturating_sub(SPARE));
            if budget == 0 {
                return;
            }
            // Grow the table once: a descriptor numbered past every input.
            let top = libc::c_int::try_from(budget + SPARE / 2).unwrap_or(libc::c_int::MAX);
            let fd = libc::dup2(2, top);
            if fd >= 0 {
                libc::close(fd);
            }
            LEFT.store(budget, Ordering::Relaxed);
        }
    }

    #[cfg(not(unix))]
    pub fn reserve(_expected: usize) {}
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
pub type FileKey = PathBuf;

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
    let keep_open = open_files::take_one();
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
    // nothing does. Each `mmap` took the address-space lock that the other
    // threads' page faults wait for (`perf`: `mmap` 2.8% of a link's CPU time).
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

/// Reads an open file that is not mapped, at most `limit + 1` bytes (one more than
/// allowed tells "too large" without reading a device such as /dev/zero for ever);
/// a FIFO without a writer is an error (module documentation).
fn read_stream(
    path: &Path,
    file: &std::fs::File,
    meta: &Metadata,
    limit: u64,
) -> Result<Vec<u8>, InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut buf = Vec::new();
    if nonblocking::is_fifo(meta) && !nonblocking::first_read(file, &mut buf, path)? {
        return Err(InputError::FifoWithoutWriter {
            path: path.to_path_buf(),
        });
    }
    nonblocking::set_blocking(file).map_err(io_err)?;
    file.take((limit + 1).saturating_sub(buf.len() as u64))
        .read_to_end(&mut buf)
        .map_err(io_err)?;
    Ok(buf)
}

/// The `len` bytes of a small file, read with one `read` as a rule (more only if
/// the kernel returns fewer bytes, as it may when interrupted). A file cut short
/// since its length was taken gives fewer bytes: its stamp, taken with that length,
/// fails the link before the output is written.
fn read_small(file: &std::fs::File, len: u64) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; len as usize];
    let mut n = 0;
    while n < buf.len() {
        match (&*file).read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(n);
    Ok(buf)
}

/// Maps `len` bytes of `file`.
fn map_file(file: &std::fs::File, len: usize) -> io::Result<Mmap> {
    // SAFETY: see the module documentation: read-only private mapping of a file this
    // process never writes; all accesses are bounds-checked against the mapped length.
    // (MAP_POPULATE was tried: no measurable difference on a 169 MB parse.) The length
    // is the one the caller read, so memmap2 does not `fstat` the file again.
    unsafe { memmap2::MmapOptions::new().len(len).map(file) }
}

/// The mapping of a file of known length, made now or when first asked for.
pub struct Mapping {
    len: usize,
    /// The path as given, for messages.
    path: Box<Path>,
    loaded: std::sync::OnceLock<Loaded>,
}

/// What a [`Mapping`] holds once made.
enum Loaded {
    Map(Registered),
    /// The file read into memory, where mapping it later failed; or zeros where
    /// that failed too (a file cut short meanwhile: the changed-input check refuses
    /// to write the output then, and every span stays in bounds).
    Copy(Box<[u8]>),
}

impl Mapping {
    /// Maps `len` bytes of `file`, read from `path`, now.
    pub fn map(file: &std::fs::File, len: usize, path: &Path) -> io::Result<Mapping> {
        let map = map_file(file, len)?;
        let mapping = Mapping::later(len, path);
        let _ = mapping.loaded.set(Loaded::Map(Registered::new(map, path)));
        Ok(mapping)
    }

    /// A mapping to make from the open file when first asked for.
    fn later(len: usize, path: &Path) -> Mapping {
        Mapping {
            len,
            path: path.into(),
            loaded: std::sync::OnceLock::new(),
        }
    }

    /// The bytes, mapping `file` first if needed.
    fn get(&self, file: Option<&std::fs::File>) -> &[u8] {
        let loaded = self.loaded.get_or_init(|| {
            let Some(file) = file else {
                return Loaded::Copy(vec![0; self.len].into_boxed_slice());
            };
            // A small file is read, never mapped (module documentation).
            if self.len as u64 >= SMALL {
                if let Ok(map) = map_file(file, self.len) {
                    return Loaded::Map(Registered::new(map, &self.path));
                }
            }
            let mut buf = vec![0; self.len];
            #[cfg(unix)]
            {
                use std::os::unix::fs::FileExt;
                let _ = file.read_exact_at(&mut buf, 0);
            }
            Loaded::Copy(buf.into_boxed_slice())
        });
        match loaded {
            Loaded::Map(m) => &m.map,
            Loaded::Copy(b) => b,
        }
    }

    /// The error of a file that ended before the bytes asked for.
    fn changed(&self) -> InputError {
        InputError::Changed {
            path: self.path.to_path_buf(),
        }
    }

    /// The error of a failed read: a file that ended early changed; other errors
    /// are the operating system's.
    fn read_error(&self, e: io::Error) -> InputError {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => self.changed(),
            _ => InputError::Io {
                path: self.path.to_path_buf(),
                source: e,
            },
        }
    }

    /// The error of a read past the length the file had when it was opened.
    fn past_the_end(&self) -> InputError {
        InputError::Io {
            path: self.path.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::InvalidInput,
                "read past the end of the input",
            ),
        }
    }
}

/// A mapping entered in the registry of [`mapped_file_at`], and taken out of it
/// before it is unmapped.
struct Registered {
    map: Mmap,
    entry: &'static registry::Entry,
}

impl Registered {
    fn new(map: Mmap, path: &Path) -> Registered {
        let entry = registry::enter(map.as_ptr() as usize, map.len(), path);
        Registered { map, entry }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // Before the field `map` is dropped (unmapped): the same addresses may be
        // mapped again for something else.
        self.entry.leave();
    }
}

/// The input mapped at address `addr` of this process, if any: its path as given,
/// as a C string (Unix: the path's bytes). Async-signal-safe (atomic loads and
/// reads of memory never freed; no lock, no allocation), for a `SIGBUS` handler:
/// the kernel raises `SIGBUS` at an address of a file's mapping past the end of the
/// file, which happens when a file is cut short while it is mapped.
pub fn mapped_file_at(addr: usize) -> Option<&'static std::ffi::CStr> {
    registry::find(addr)
}

/// The registry of mappings: a list, newest first, of entries that are never freed
/// (so that a signal handler may read any entry it reaches at any time). An entry is
/// pushed with one compare-and-swap when a file is mapped and marked dead when it
/// is unmapped; a mapping costs one entry of about 40 bytes plus its path for the
/// life of the process. A link maps few files (the writer reads inputs kept open
/// with `pread`; only files beyond the open-file budget or pieces over 16 MiB are
/// mapped), at most one mapping per input and target.
mod registry {
    use std::ffi::CStr;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    pub struct Entry {
        lo: usize,
        hi: usize,
        name: &'static CStr,
        live: AtomicBool,
        /// The entry pushed before this one; set before this one is published.
        next: *const Entry,
    }

    // SAFETY: `next` points to an entry that is never freed nor changed after it was
    // published; every other field is immutable or atomic.
    unsafe impl Sync for Entry {}

    static HEAD: AtomicPtr<Entry> = AtomicPtr::new(std::ptr::null_mut());

    /// Enters the mapping of `len` bytes at `lo` of the file `path`.
    pub fn enter(lo: usize, len: usize, path: &Path) -> &'static Entry {
        // A path holds no NUL byte (no file could be opened by it otherwise).
        let name = crate::path_bytes::c_string(path.as_os_str()).unwrap_or_default();
        let entry = Box::into_raw(Box::new(Entry {
            lo,
            hi: lo + len,
            name: Box::leak(name.into_boxed_c_str()),
            live: AtomicBool::new(true),
            next: std::ptr::null(),
        }));
        let mut head = HEAD.load(Ordering::Acquire);
        loop {
            // SAFETY: `entry` is not published yet: this thread alone holds it.
            unsafe { (*entry).next = head };
            match HEAD.compare_exchange_weak(head, entry, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        // SAFETY: never freed.
        unsafe { &*entry }
    }

    impl Entry {
        /// Marks the mapping unmapped (before it is).
        pub fn leave(&self) {
            self.live.store(false, Ordering::Release);
        }
    }

    /// The name of the live mapping that holds `addr`, newest first.
    pub fn find(addr: usize) -> Option<&'static CStr> {
        let mut at = HEAD.load(Ordering::Acquire).cast_const();
        // SAFETY: entries are never freed, and published only once complete.
        while let Some(e) = unsafe { at.as_ref() } {
            if (e.lo..e.hi).contains(&addr) && e.live.load(Ordering::Acquire) {
                return Some(e.name);
            }
            at = e.next;
        }
        None
    }
}

/// Opening inputs without blocking on a FIFO that has no writer (module documentation).
#[cfg(unix)]
mod nonblocking {
    use std::fs::{File, Metadata, OpenOptions};
    use std::io::{self, Read};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    use libc::{fcntl, F_GETFL, F_SETFL, O_NONBLOCK};

    use super::InputError;

    /// Opens `path` read-only with `O_NONBLOCK`: never blocks, even on a FIFO without
    /// a writer. For regular files and directories the flag changes nothing.
    pub fn open(path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .custom_flags(O_NONBLOCK)
            .open(path)
    }

    pub fn is_fifo(meta: &Metadata) -> bool {
        meta.file_type().is_fifo()
    }

    /// One non-blocking read of a FIFO into `buf`. False when it reads end of file at
    /// once: no writer and nothing buffered.
    pub fn first_read(file: &File, buf: &mut Vec<u8>, path: &Path) -> Result<bool, InputError> {
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            match (&*file).read(&mut chunk) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(InputError::Io {
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
        }
    }

    /// Clears `O_NONBLOCK`, so the rest is read with blocking reads.
    pub fn set_blocking(file: &File) -> io::Result<()> {
        let fd = file.as_raw_fd();
        // SAFETY: F_GETFL and F_SETFL only read and set the status flags of a
        // descriptor `file` owns and keeps open for the duration of the calls; they
        // take no pointers.
        let flags = unsafe { fcntl(fd, F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        if flags & O_NONBLOCK != 0 {
            // SAFETY: as above.
            if unsafe { fcntl(fd, F_SETFL, flags & !O_NONBLOCK) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Elsewhere: a blocking open, as `cat` does (see the Unix version).
#[cfg(not(unix))]
mod nonblocking {
    use std::fs::{File, Metadata};
    use std::io;
    use std::path::Path;

    use super::InputError;

    pub fn open(path: &Path) -> io::Result<File> {
        File::open(path)
    }

    pub fn is_fifo(_: &Metadata) -> bool {
        false
    }

    pub fn first_read(_: &File, _: &mut Vec<u8>, _: &Path) -> Result<bool, InputError> {
        Ok(true)
    }

    pub fn set_blocking(_: &File) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file kept open is mapped only when its bytes are asked for; its length is
    /// known before, and the bytes are the file's.
    #[test]
    fn files_kept_open_are_mapped_when_first_asked_for() {
        let dir = std::env::temp_dir().join(format!("ptxld-lazy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.ptx");
        let text: Vec<u8> = (0..70_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        keep_files_open(64);
        let bytes = read_path(&path).unwrap();
        let Bytes::Mapped(mapping, head, Some(_)) = &bytes else {
            panic!("not a mapped file kept open");
        };
        assert!(
            mapping.loaded.get().is_none(),
            "mapped before it was asked for"
        );
        assert_eq!((bytes.len(), &head[..]), (text.len(), &text[..HEAD_LEN]));
        bytes.release();
        assert!(mapping.loaded.get().is_none(), "release mapped it");
        assert!(bytes.as_slice() == &text[..]);
        assert!(matches!(mapping.loaded.get(), Some(Loaded::Map(_))));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Scattered reads give the bytes `read_at` gives, part after part (a part may
    /// be a scratch place read over again), and nothing past the end of the file.
    #[test]
    fn scattered_reads_equal_plain_ones() {
        let dir = std::env::temp_dir().join(format!("ptxld-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.ptx");
        let text: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        keep_files_open(64);
        let bytes = read_path(&path).unwrap();
        assert!(bytes.is_readable_file());
        for (lo, len) in [(0, 1), (7, 4096), (1000, 150_000), (0, 200_000)] {
            let mut plain = vec![0; len];
            bytes.read_at(lo as u64, &mut plain).unwrap();
            assert_eq!(plain, &text[lo..lo + len]);
            // Three parts: the first third, a skipped third, the rest.
            let (a, b) = (len / 3, len / 3);
            let mut got = vec![0u8; len - b];
            let mut skipped = vec![0u8; b];
            let parts = [
                (got.as_mut_ptr(), a),
                (skipped.as_mut_ptr(), b),
                (got[a..].as_mut_ptr(), len - a - b),
            ];
            // SAFETY: the parts are distinct ranges of two live buffers.
            unsafe { bytes.read_scattered_at(lo as u64, &parts) }.unwrap();
            assert_eq!(got[..a], plain[..a]);
            assert_eq!(got[a..], plain[a + b..]);
        }
        let mut two = [0u8; 2];
        // SAFETY: as above.
        let past = unsafe { bytes.read_scattered_at(199_999, &[(two.as_mut_ptr(), 2)]) };
        assert!(matches!(past, Err(InputError::Io { .. })));
        drop(bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file cut short after it was opened: reads of bytes it no longer has are
    /// the changed-input error (they used to fall back to the mapping, whose pages
    /// past the new end raise SIGBUS).
    #[test]
    fn reads_of_a_file_cut_short_are_a_changed_input() {
        let dir = std::env::temp_dir().join(format!("ptxld-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.ptx");
        std::fs::write(&path, vec![b'x'; 50_000]).unwrap();
        keep_files_open(64);
        let bytes = read_path(&path).unwrap();
        assert!(bytes.is_readable_file());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(20_000)
            .unwrap();
        let changed = |r: Result<(), InputError>| matches!(r, Err(InputError::Changed { path: p }) if p == path);
        let mut buf = vec![0u8; 10_000];
        bytes.read_at(5_000, &mut buf).unwrap();
        assert!(changed(bytes.read_at(15_000, &mut buf)));
        let parts = [
            (buf.as_mut_ptr(), 4_000),
            (buf[4_000..].as_mut_ptr(), 6_000),
        ];
        // SAFETY: two distinct ranges of a live buffer.
        assert!(changed(unsafe { bytes.read_scattered_at(12_000, &parts) }));
        let message = bytes.read_at(15_000, &mut buf).unwrap_err().to_string();
        assert!(message.ends_with(" changed while ptxld was linking it; run the link again"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every mapping is in the registry of `mapped_file_at` while it lasts, by the
    /// path it was read from, and out of it once unmapped.
    #[test]
    fn mappings_are_registered_while_they_last() {
        let dir = std::env::temp_dir().join(format!("ptxld-registry-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("large.ptx");
        let len = 70_000;
        std::fs::write(&path, vec![b'l'; len]).unwrap();
        let bytes = read_path(&path).unwrap();
        assert!(matches!(bytes, Bytes::Mapped(..)));
        let at = bytes.as_slice().as_ptr() as usize;
        let name = |addr| mapped_file_at(addr).and_then(|n| n.to_str().ok());
        for addr in [at, at + len - 1] {
            assert_eq!(name(addr), path.to_str());
        }
        assert_ne!(name(at + len), path.to_str());
        drop(bytes);
        assert_ne!(name(at), path.to_str());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file under `SMALL` bytes is never mapped: kept open, its bytes asked for as
    /// one slice are read; from `SMALL` bytes on they are mapped.
    #[test]
    fn small_files_are_read_not_mapped() {
        let dir = std::env::temp_dir().join(format!("ptxld-small-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (small, large) = (dir.join("small.ptx"), dir.join("large.ptx"));
        std::fs::write(&small, vec![b's'; SMALL as usize - 1]).unwrap();
        std::fs::write(&large, vec![b'l'; SMALL as usize]).unwrap();
        let open = |p: &Path| std::fs::File::open(p).unwrap();
        let m = Mapping::later(SMALL as usize - 1, &small);
        assert_eq!(
            m.get(Some(&open(&small))),
            &vec![b's'; SMALL as usize - 1][..]
        );
        assert!(matches!(m.loaded.get(), Some(Loaded::Copy(_))));
        let m = Mapping::later(SMALL as usize, &large);
        assert_eq!(m.get(Some(&open(&large))), &vec![b'l'; SMALL as usize][..]);
        assert!(matches!(m.loaded.get(), Some(Loaded::Map(_))));
        // Beyond the open-file budget a small file is read at once, with its
        // metadata for the changed-input stamp.
        let bytes = read_small(&open(&small), SMALL - 1).unwrap();
        assert_eq!(bytes, vec![b's'; SMALL as usize - 1]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
