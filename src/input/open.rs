//! Opening inputs, and reading those that are not mapped: streams, and small files.
//!
//! # FIFOs
//!
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

use std::fs::Metadata;
use std::io::{self, Read};
use std::path::Path;

use super::InputError;

/// Reads an open file that is not mapped, at most `limit + 1` bytes (one more than
/// allowed tells "too large" without reading a device such as /dev/zero for ever);
/// a FIFO without a writer is an error (module documentation).
pub(super) fn read_stream(
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
pub(super) fn read_small(file: &std::fs::File, len: u64) -> io::Result<Vec<u8>> {
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

/// Opening inputs without blocking on a FIFO that has no writer (module documentation).
#[cfg(unix)]
pub(super) mod nonblocking {
    use std::fs::{File, Metadata, OpenOptions};
    use std::io::{self, Read};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::path::Path;

    use rustix::fs::OFlags;

    use super::InputError;

    /// Opens `path` read-only with `O_NONBLOCK`: never blocks, even on a FIFO without
    /// a writer. For regular files and directories the flag changes nothing.
    pub fn open(path: &Path) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .custom_flags(OFlags::NONBLOCK.bits() as i32)
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
        use rustix::fs::{fcntl_getfl, fcntl_setfl};
        let flags = fcntl_getfl(file)?;
        if flags.contains(OFlags::NONBLOCK) {
            fcntl_setfl(file, flags - OFlags::NONBLOCK)?;
        }
        Ok(())
    }
}

/// Elsewhere: a blocking open, as `cat` does (see the Unix version).
#[cfg(not(unix))]
pub(super) mod nonblocking {
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
