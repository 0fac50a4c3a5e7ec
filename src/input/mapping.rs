//! Mappings of input files, made when first needed, and their registry.
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

use std::io;
use std::path::Path;

use memmap2::Mmap;

use super::{Bytes, InputError, SMALL};

impl Bytes {
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
    pub(super) len: usize,
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
    pub(super) fn later(len: usize, path: &Path) -> Mapping {
        Mapping {
            len,
            path: path.into(),
            loaded: std::sync::OnceLock::new(),
        }
    }

    /// True once the bytes were asked for (mapped, or read where mapping failed).
    pub(super) fn is_loaded(&self) -> bool {
        self.loaded.get().is_some()
    }

    /// The bytes, mapping `file` first if needed.
    pub(super) fn get(&self, file: Option<&std::fs::File>) -> &[u8] {
        let loaded = self.loaded.get_or_init(|| {
            let Some(file) = file else {
                return Loaded::Copy(vec![0; self.len].into_boxed_slice());
            };
            // A small file is read, never mapped (see `input`).
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
    pub(super) fn changed(&self) -> InputError {
        InputError::Changed {
            path: self.path.to_path_buf(),
        }
    }

    /// The error of a failed read: a file that ended early changed; other errors
    /// are the operating system's.
    pub(super) fn read_error(&self, e: io::Error) -> InputError {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => self.changed(),
            _ => InputError::Io {
                path: self.path.to_path_buf(),
                source: e,
            },
        }
    }

    /// The error of a read past the length the file had when it was opened.
    pub(super) fn past_the_end(&self) -> InputError {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::open::read_small;
    use crate::input::{keep_files_open, read_path, HEAD_LEN};

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
