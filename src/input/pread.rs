//! Reading a file kept open at an offset, without touching its mapping: `pread`,
//! `preadv`, and `copy_file_range` into the output file.

use std::io;

use super::error::not_open;
use super::{Bytes, InputError, MAX_PARTS};

impl Bytes {
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
    pub(crate) unsafe fn read_scattered_at(
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
            // `libc`, not `rustix::io::preadv`: that takes `IoSliceMut`s, i.e. `&mut
            // [u8]`s, which may not overlap, and the writer's parts may (one scratch
            // buffer takes every gap between the pieces it reads).
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

    /// Copies bytes `lo..lo + len` of a mapped file kept open into `out`, at offset
    /// `at` of it (or at its file position, which advances, for `None`), inside the
    /// kernel (`copy_file_range`: page cache to page cache, never through this
    /// process's memory). `Ok(false)` when the kernel cannot copy between these
    /// files (another file system, an old kernel) and nothing was written: the
    /// caller writes the bytes itself then. An input that ends early (cut short
    /// since it was opened) is an error that wraps [`InputError::Changed`].
    pub fn copy_to(
        &self,
        lo: u64,
        len: u64,
        out: &std::fs::File,
        at: Option<u64>,
    ) -> io::Result<bool> {
        #[cfg(target_os = "linux")]
        if let Bytes::Mapped(map, _, Some(f)) = self {
            use rustix::io::Errno;
            if lo + len > map.len as u64 {
                return Ok(false);
            }
            let (mut off, end, mut at) = (lo, lo + len, at);
            while off < end {
                let want = (end - off).min(1 << 30) as usize;
                // The kernel reads from `off` and writes at `at` (or the output's
                // own position), and advances them.
                match rustix::fs::copy_file_range(f, Some(&mut off), out, at.as_mut(), want) {
                    // The input ends early: it was cut short since it was opened.
                    Ok(0) => return Err(io::Error::other(map.changed())),
                    Ok(_) | Err(Errno::INTR) => {}
                    Err(
                        Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP | Errno::BADF,
                    ) if off == lo => return Ok(false),
                    Err(e) => return Err(e.into()),
                }
            }
            return Ok(true);
        }
        let _ = (lo, len, out, at);
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{keep_files_open, read_path};

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
}
