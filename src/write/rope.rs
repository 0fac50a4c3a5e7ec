//! The merged module as a list of byte ranges, written without assembling it.
//!
//! Almost every output byte is an input byte: the writer records *where* each run of
//! output comes from (a range of an input file, or a few bytes of new text such as a
//! renamed identifier) instead of copying it. The output file is then written with
//! vectored writes from the inputs, so the linker never holds a second copy of the
//! program in memory.
//!
//! The text that comes before the definitions (prototypes, variables, `.file`) is
//! taken from each module's [`KeptText`] copy, so the writer needs each input's
//! source once, in order: [`Rope::write_to`] reads the pieces from the files into
//! chunks of output just before writing them, and reuses the chunks' buffers
//! (`assemble`; docs/performance.md).

use std::fs::File;
use std::io::{self, Write};

use rayon::prelude::*;

#[cfg(test)]
use super::assemble::Assembler;
use super::assemble::{self, Chunk};
use crate::input::Bytes;
use crate::ir::KeptText;

/// Pieces of new text have a [`Piece::src`] at or above this: `ARENAS + n` is the
/// rope's arena number `n` ([`Rope::arenas`]). Module numbers stay below 2^30, so
/// that neither they nor their [`KEPT`] forms reach it.
const ARENAS: u32 = 0xC000_0000;

/// Set in [`Piece::src`] for bytes of a module's kept copies rather than its source.
const KEPT: u32 = 1 << 31;

/// What a module's pieces refer to.
#[derive(Copy, Clone)]
pub struct ModuleText<'a> {
    /// The module's source.
    pub src: Text<'a>,
    /// Its kept copies ([`crate::ir::Module::kept`]).
    pub kept: &'a KeptText,
    /// The loaded source, when the writer may read the text from its file (and
    /// release the pages it had to read through the mapping).
    pub pages: Option<&'a Bytes>,
}

/// A module's source text: bytes at hand, or a loaded file's, which are asked for
/// (and a file kept open mapped) only if a piece is written from them here rather
/// than read from the file.
#[derive(Clone, Copy)]
pub enum Text<'a> {
    /// The bytes.
    Slice(&'a [u8]),
    /// A loaded file's bytes.
    File(&'a Bytes),
}

impl<'a> Text<'a> {
    /// The bytes.
    pub fn get(self) -> &'a [u8] {
        match self {
            Text::Slice(s) => s,
            Text::File(b) => b.as_slice(),
        }
    }
}

/// Pieces of input files at least this long are copied into an output file by the
/// kernel (`copy_file_range`), shorter ones are read and written with the rest: a
/// copy costs a system call, and below this size reading the bytes into a chunk
/// (`assemble`) and one write are cheaper (docs/performance.md).
pub(super) const COPY_MIN: u32 = 64 << 10;

/// The longest appended chunk whose first piece may join the rope's last piece
/// ([`Rope::append`]).
const JOIN_MOVES_AT_MOST: usize = 4096;

/// One run of output bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    /// The module whose source holds the bytes, or an arena ([`ARENAS`]).
    pub(super) src: u32,
    /// Length in bytes.
    pub(super) len: u32,
    /// Offset of the first byte in that source.
    pub(super) lo: u64,
}

/// Where a piece's bytes are.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum PieceText {
    /// New text ptxld wrote (a rename, the merged header).
    New,
    /// Module `.0`'s source.
    Source(u32),
    /// Module `.0`'s kept copies.
    Kept(u32),
}

impl Piece {
    /// Where its bytes are; [`Piece::lo`] is their offset there.
    pub(super) fn text(&self) -> PieceText {
        match self.src {
            m if m >= ARENAS => PieceText::New,
            m if m & KEPT != 0 => PieceText::Kept(m & !KEPT),
            m => PieceText::Source(m),
        }
    }
}

/// The pieces of a rope, in order, in chunks: a rope appended to another keeps its
/// array as it was built instead of being copied into one array with the rest.
/// A large link's parts hold hundreds of thousands of pieces; the one array
/// they were copied into was 16 MB of memory touched for the first time at x4
/// (docs/performance.md). No chunk is empty.
#[derive(Clone, Debug, Default)]
pub(super) struct Pieces {
    pub(super) chunks: Vec<Vec<Piece>>,
    /// How many pieces in all.
    len: usize,
}

impl PartialEq for Pieces {
    /// The same pieces, however they are chunked.
    fn eq(&self, other: &Pieces) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Pieces {
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    fn last_mut(&mut self) -> Option<&mut Piece> {
        self.chunks.last_mut().and_then(|c| c.last_mut())
    }

    fn push(&mut self, p: Piece) {
        match self.chunks.last_mut() {
            Some(c) => {
                c.push(p);
                self.len += 1;
            }
            None => {
                let mut c = Vec::with_capacity(4);
                c.push(p);
                self.push_chunk(c);
            }
        }
    }

    /// Appends `chunk` as a chunk of its own (nothing if it is empty).
    fn push_chunk(&mut self, chunk: Vec<Piece>) {
        if chunk.is_empty() {
            return;
        }
        self.len += chunk.len();
        self.chunks.push(chunk);
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Piece> {
        self.chunks.iter().flatten()
    }
}

/// The output as pieces of the input modules' sources and of new text.
#[derive(Clone, Debug, Default)]
pub struct Rope {
    pub(super) pieces: Pieces,
    /// New text (renamed identifiers, rendered header, separators), in arenas:
    /// `arenas[i]` is arena number `first_arena + i`. Appending a rope moves its
    /// arenas over, and its pieces keep the numbers they were built with when the
    /// parts of a rope were numbered in advance ([`Rope::part`]): appending never
    /// walks their pieces.
    arenas: Vec<Vec<u8>>,
    first_arena: u32,
    len: u64,
}

impl Rope {
    /// An empty output.
    pub fn new() -> Rope {
        Rope::default()
    }

    /// An empty part, to be appended as the `n`th part (counting from 0) of a rope
    /// whose first part was made with [`Rope::new`] and whose parts each have one
    /// arena, as parts made this way do.
    pub fn part(n: u32) -> Rope {
        Rope {
            arenas: vec![Vec::new()],
            first_arena: n,
            ..Rope::default()
        }
    }

    /// Total length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends bytes `lo..hi` of module `module`'s source.
    pub fn push_src(&mut self, module: u32, lo: u32, hi: u32) {
        debug_assert!(module < ARENAS - KEPT && lo <= hi);
        self.push(module, u64::from(lo), hi - lo);
    }

    /// Appends `len` bytes of module `module`'s kept copies, from offset `at`.
    pub fn push_kept(&mut self, module: u32, at: u32, len: u32) {
        debug_assert!(module < ARENAS - KEPT);
        self.push(module | KEPT, u64::from(at), len);
    }

    /// Appends new text.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        // A single piece is at most 4 GiB - 1; new text never comes close (names,
        // numbers, the header), but split rather than truncate.
        if self.arenas.is_empty() {
            self.arenas.push(Vec::new());
        }
        let src = ARENAS + self.first_arena + self.arenas.len() as u32 - 1;
        for chunk in bytes.chunks(u32::MAX as usize) {
            let arena = self.arenas.last_mut().expect("one arena at least");
            let lo = arena.len() as u64;
            arena.extend_from_slice(chunk);
            self.push(src, lo, chunk.len() as u32);
        }
    }

    /// Appends each of `parts` (built separately, e.g. in parallel), in order. Their
    /// piece arrays become chunks of this rope's, and their arenas this rope's.
    ///
    /// The parts are appended to each other in parallel, pairwise (appending is
    /// associative): each part's arrays are read and its emptied arrays freed on
    /// some thread, and what is left in order is one append of the last half. One
    /// after the other, the 2,400 parts of the cross set's layout took 0.45 ms
    /// on one thread, each part's arrays a cache miss (docs/performance.md).
    pub fn append_all(&mut self, parts: Vec<Rope>) {
        let all = parts.into_par_iter().reduce_with(|mut a, b| {
            a.append(b);
            a
        });
        if let Some(all) = all {
            self.append(all);
        }
    }

    /// Appends `other` (built separately, e.g. in parallel). Its pieces of new text
    /// are renumbered only if its arenas were not numbered to follow this rope's.
    pub fn append(&mut self, mut other: Rope) {
        self.append_from(&mut other);
    }

    /// Appends `other`'s pieces and arenas, moving them out of it: what is left of
    /// `other` is its empty arrays, for the caller to free.
    fn append_from(&mut self, other: &mut Rope) {
        let next = self.first_arena + self.arenas.len() as u32;
        let renumber = !other.arenas.is_empty() && other.first_arena != next;
        let renumbered = |mut chunk: Vec<Piece>| {
            if renumber {
                for p in chunk.iter_mut().filter(|p| p.src >= ARENAS) {
                    p.src = p.src - other.first_arena + next;
                }
            }
            chunk
        };
        self.arenas.append(&mut other.arenas);
        let mut chunks = other.pieces.chunks.drain(..).map(renumbered);
        let Some(mut first) = chunks.next() else {
            return;
        };
        self.len += other.len;
        // Only the first piece can join the last one here: `other`'s own pieces were
        // joined as it was built. Joining takes that piece out of its chunk, which
        // moves the rest of the chunk: done for a chunk of a module's usual size (a
        // few hundred pieces), not for a longer one, whose first piece then stays a
        // piece of its own (the bytes written are the same).
        if first.len() <= JOIN_MOVES_AT_MOST && self.joined(first[0].src, first[0].lo, first[0].len)
        {
            first.remove(0);
        }
        self.pieces.push_chunk(first);
        for chunk in chunks {
            self.pieces.push_chunk(chunk);
        }
    }

    /// The bytes of arena `src` (a [`Piece::src`] at or above [`ARENAS`]).
    fn arena(&self, src: u32) -> &[u8] {
        &self.arenas[(src - ARENAS - self.first_arena) as usize]
    }

    fn push(&mut self, src: u32, lo: u64, len: u32) {
        if len == 0 {
            return;
        }
        self.len += u64::from(len);
        if !self.joined(src, lo, len) {
            self.pieces.push(Piece { src, len, lo });
        }
    }

    /// Extends the last piece by `len` bytes of `src` from `lo` if they follow it:
    /// consecutive ranges of one source are one piece (most items are spliced from
    /// a single contiguous span).
    fn joined(&mut self, src: u32, lo: u64, len: u32) -> bool {
        let Some(last) = self.pieces.last_mut() else {
            return false;
        };
        if last.src != src || last.lo + u64::from(last.len) != lo {
            return false;
        }
        match last.len.checked_add(len) {
            Some(n) => {
                last.len = n;
                true
            }
            None => false,
        }
    }

    pub(super) fn slice<'a>(&'a self, p: &Piece, srcs: &[ModuleText<'a>]) -> &'a [u8] {
        let bytes = match p.src {
            m if m >= ARENAS => self.arena(m),
            m if m & KEPT != 0 => &srcs[(m & !KEPT) as usize].kept.text[..],
            m => srcs[m as usize].src.get(),
        };
        &bytes[p.lo as usize..p.lo as usize + p.len as usize]
    }

    /// The output as one buffer (for containers and in-memory links). `srcs[m]` is
    /// what module `m`'s pieces refer to.
    pub fn to_vec(&self, srcs: &[ModuleText<'_>]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        for p in self.pieces.iter() {
            out.extend_from_slice(self.slice(p, srcs));
        }
        out
    }

    /// Writes the output to `w` in chunks of about a megabyte, assembled from the
    /// inputs' files (see `assemble`). When `w` writes to the file `out` (and has
    /// nothing buffered), every thread of the pool fills chunks and writes them at
    /// their offsets, and large pieces of input files are copied by the kernel
    /// (64 KiB and more; see `positioned`); otherwise the chunks are written in
    /// order, filled ahead of the writer by a helper thread when the pool has two
    /// or more.
    pub fn write_to(
        &self,
        srcs: &[ModuleText<'_>],
        w: &mut dyn Write,
        out: Option<&File>,
    ) -> io::Result<()> {
        self.write_to_then(srcs, w, out, &|| {})
    }

    /// Like [`Rope::write_to`], calling `after_reads` once no input file is read
    /// any more: in order, on whichever thread read last, before the last bytes
    /// are written (a check that the inputs did not change meanwhile costs the
    /// writer nothing there); into a file, once every byte is written. After a
    /// failed write it may or may not have been called.
    pub fn write_to_then(
        &self,
        srcs: &[ModuleText<'_>],
        w: &mut dyn Write,
        out: Option<&File>,
        after_reads: &(dyn Fn() + Sync),
    ) -> io::Result<()> {
        if let Some(file) = out {
            #[cfg(unix)]
            if super::positioned::writes_at_offsets(file) {
                w.flush()?;
                // It reserves the output's length first, as below.
                super::positioned::write_at(self, srcs, file)?;
                after_reads();
                return Ok(());
            }
            super::output::reserve(file, self.len);
        }
        assemble::pipeline(
            self,
            srcs,
            |chunk| match chunk {
                Chunk::Bytes(b) => w.write_all(b),
                Chunk::Copy(p) | Chunk::Mapped(p) => {
                    w.write_all(self.slice(p, srcs))?;
                    // Parsing left the file's pages out of memory: so does the writer.
                    if let Some(pages) = srcs[p.src as usize].pages {
                        pages.release();
                    }
                    Ok(())
                }
            },
            after_reads,
        )?;
        w.flush()
    }

    /// Its pieces with the output offset each begins at, to cut ranges of its text
    /// into other ropes ([`Rope::push_range`]).
    pub fn index(&self) -> RopeIndex<'_> {
        let pieces: Vec<Piece> = self.pieces.iter().copied().collect();
        let mut starts = Vec::with_capacity(pieces.len() + 1);
        let mut at = 0u64;
        for p in &pieces {
            starts.push(at);
            at += u64::from(p.len);
        }
        starts.push(at);
        RopeIndex {
            rope: self,
            pieces,
            starts,
        }
    }

    /// Appends bytes `lo..hi` of the text `from` indexes, as pieces of the same
    /// inputs: a part cut from the merged module still knows which input byte each
    /// of its lines came from (ptxas's messages about a part point at the inputs).
    pub fn push_range(&mut self, from: &RopeIndex<'_>, lo: u64, hi: u64) {
        debug_assert!(lo <= hi && hi <= from.len());
        let mut i = from.starts.partition_point(|&s| s <= lo).saturating_sub(1);
        let mut at = lo;
        while at < hi {
            let p = from.pieces[i];
            let (start, end) = (from.starts[i], from.starts[i + 1]);
            let (a, b) = (at - start, hi.min(end) - start);
            if b > a {
                let len = (b - a) as u32;
                match p.src {
                    src if src >= ARENAS => {
                        let lo = (p.lo + a) as usize;
                        self.push_bytes(&from.rope.arena(src)[lo..lo + len as usize]);
                    }
                    src => self.push(src, p.lo + a, len),
                }
            }
            at = hi.min(end);
            i += 1;
        }
    }

    /// True if `p` is source bytes of a module with a file.
    pub(super) fn in_file(&self, p: &Piece, srcs: &[ModuleText<'_>]) -> bool {
        match p.text() {
            PieceText::Source(m) => srcs[m as usize].pages.is_some_and(Bytes::is_readable_file),
            PieceText::Kept(_) | PieceText::New => false,
        }
    }
}

/// A rope's pieces with their output offsets ([`Rope::index`]).
pub struct RopeIndex<'r> {
    rope: &'r Rope,
    pieces: Vec<Piece>,
    /// `starts[i]`: the output offset of `pieces[i]`; one more: the length.
    starts: Vec<u64>,
}

impl RopeIndex<'_> {
    /// The indexed text's length.
    pub fn len(&self) -> u64 {
        *self.starts.last().expect("one start more than pieces")
    }

    /// True if the indexed text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use super::super::test_files::{self, NOTHING_KEPT};

    fn texts<'a>(srcs: &[&'a [u8]]) -> Vec<ModuleText<'a>> {
        srcs.iter()
            .map(|&src| ModuleText {
                src: Text::Slice(src),
                kept: &NOTHING_KEPT,
                pages: None,
            })
            .collect()
    }

    /// Large pieces of a file are copied by the kernel into an output file; the
    /// small ones around them still come from the chunks' reads, in order.
    #[test]
    fn large_pieces_copied_by_the_kernel_write_like_the_buffer() {
        let dir = std::env::temp_dir().join(format!("ptxld-rope-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big.ptx");
        let text: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 23) as u8).collect();
        std::fs::write(&path, &text).unwrap();
        crate::input::keep_files_open(64);
        let open = crate::input::read_path(&path).unwrap();
        let srcs = vec![ModuleText {
            src: Text::Slice(open.as_slice()),
            kept: &NOTHING_KEPT,
            pages: Some(&open),
        }];
        let mut r = Rope::new();
        r.push_src(0, 10, 20); // small: read into a chunk
        r.push_src(0, 1000, 1000 + COPY_MIN + 5); // copied
        r.push_bytes(b"<new>");
        r.push_src(0, 5, 9); // small, after a copy: a run of its own
        r.push_src(0, 200_000, 299_999); // copied
        r.push_src(0, 150_000, 150_100); // small, after a copy: a third run
                                         // Copying: small pieces, a copy, small pieces, a copy, small pieces.
        let kinds = |copying| -> Vec<char> {
            assemble::chunks(&r, &srcs, copying)
                .iter()
                .map(|c| match c {
                    Chunk::Bytes(_) => 'b',
                    Chunk::Copy(_) => 'c',
                    Chunk::Mapped(_) => 'm',
                })
                .collect()
        };
        assert_eq!(kinds(true), ['b', 'c', 'b', 'c', 'b']);
        assert_eq!(kinds(false), ['b']);
        let want = r.to_vec(&srcs);
        // An output on another file system (tmpfs) makes the kernel refuse the copy
        // (EXDEV): the writer then falls back to the mapping.
        let shm = Path::new("/dev/shm");
        let elsewhere = shm
            .is_dir()
            .then(|| shm.join(format!("ptxld-rope-{}", std::process::id())));
        for (threads, out_path) in [1, 2]
            .into_iter()
            .map(|t| (t, dir.join(format!("out{t}.ptx"))))
            .chain(elsewhere.clone().map(|p| (2, p)))
        {
            let out = File::create(&out_path).unwrap();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            pool.unwrap()
                .install(|| r.write_to(&srcs, &mut &out, Some(&out)))
                .unwrap();
            drop(out);
            let written = std::fs::read(&out_path).unwrap();
            assert!(
                written == want,
                "{} ({threads} threads)",
                out_path.display()
            );
        }
        if let Some(p) = elsewhere {
            let _ = std::fs::remove_file(p);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn kept_copies_and_files_read_again_write_like_the_buffer() {
        let dir = std::env::temp_dir().join(format!("ptxld-rope-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.ptx");
        // Padded past 16 KiB: a smaller file is never mapped, and this test maps it.
        let mut text = b"0123456789abcdef".to_vec();
        text.resize(20_000, b' ');
        std::fs::write(&path, text).unwrap();
        // Budget for this file (and any other test reading files meanwhile).
        crate::input::keep_files_open(64);
        let open = crate::input::read_path(&path).unwrap();
        assert!(open.is_readable_file());
        // Without an open file, the writer reads the mapping.
        let mapped_only = {
            let file = std::fs::File::open(&path).unwrap();
            let len = file.metadata().unwrap().len() as usize;
            let map = crate::input::Mapping::map(&file, len, &path).unwrap();
            Bytes::Mapped(map, Box::default(), None)
        };
        let mut kept = KeptText::default();
        kept.keep(open.as_slice(), crate::source::Span::new(10, 13));
        let other: &[u8] = b"XYZ";
        for file in [&open, &mapped_only] {
            let srcs = vec![
                ModuleText {
                    src: Text::Slice(file.as_slice()),
                    kept: &kept,
                    pages: Some(file),
                },
                ModuleText {
                    src: Text::Slice(other),
                    kept: &NOTHING_KEPT,
                    pages: None,
                },
            ];
            let mut r = Rope::new();
            let at = kept.offset_of(crate::source::Span::new(11, 13)).unwrap();
            r.push_kept(0, at, 2); // "bc", from the copy
            r.push_src(0, 0, 3); // a run of the file
            r.push_bytes(b"-");
            r.push_src(0, 4, 5); // the same run, after new text
            r.push_src(1, 1, 3); // a module without a file
            r.push_src(0, 14, 16); // the file again (same run: module 1 has no file)
            let want = b"bc012-4YZef".to_vec();
            assert_eq!(r.to_vec(&srcs), want);
            // The three pieces of the file, with short gaps between them, are read
            // with one `preadv` (when the file is open).
            let mut asm = Assembler::new(&r, &srcs, false);
            assert!(matches!(asm.next(Vec::new()), Some(Ok(Chunk::Bytes(b))) if b == want));
            assert_eq!(asm.filler.file_reads, usize::from(file.is_readable_file()));
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
                let mut out = Vec::new();
                pool.unwrap()
                    .install(|| r.write_to(&srcs, &mut out, None))
                    .unwrap();
                assert_eq!(out, want, "{threads} threads");
            }
        }
        assert_eq!(kept.offset_of(crate::source::Span::new(9, 11)), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A writer that records how many write calls it got.
    struct Counting {
        out: Vec<u8>,
        calls: usize,
    }

    impl Write for Counting {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.calls += 1;
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Pieces of several files, over several chunks, short and long, with new text
    /// between them: the output is the buffer's, with one and two threads, in far
    /// fewer writes than pieces.
    #[test]
    fn batches_of_runs_and_gathered_short_pieces_write_like_the_buffer() {
        let texts: Vec<Vec<u8>> = (0..3).map(|f| test_files::text(900_000, f)).collect();
        let (dir, files) = test_files::files("batch", &texts);
        let srcs = test_files::srcs(&files);
        let mut r = Rope::new();
        let mut pieces = 0;
        let mut parts = Vec::new();
        for round in 0..40u32 {
            let mut part = Rope::new();
            for m in 0..3u32 {
                let lo = round * 20_000;
                for r in [&mut r, &mut part] {
                    r.push_src(m, lo, lo + 30); // short: gathered
                    r.push_bytes(b"\n");
                    r.push_src(m, lo + 100, lo + 10_100 + round * 500); // long: a slice
                    r.push_bytes(format!("<{round}>").as_bytes());
                }
                pieces += 4;
            }
            parts.push(part);
        }
        let want = r.to_vec(&srcs);
        assert!(want.len() > 2 * assemble::CHUNK);
        // The same rope from parts, as the layout appends modules: the pieces stay
        // in the parts' arrays, and runs and batches reach across them.
        let mut chunked = Rope::new();
        chunked.append_all(parts);
        assert_eq!(chunked.pieces.chunks.len(), 40);
        assert!(shape(&chunked) == shape(&r) && chunked.to_vec(&srcs) == want);
        for (threads, r) in [(1, &r), (2, &r), (1, &chunked), (2, &chunked)] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            let mut out = Counting {
                out: Vec::new(),
                calls: 0,
            };
            pool.unwrap()
                .install(|| r.write_to(&srcs, &mut out, None))
                .unwrap();
            assert!(out.out == want, "{threads} threads");
            assert!(
                out.calls * 100 < pieces,
                "{} writes for {pieces} pieces",
                out.calls
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pieces_join_and_write_like_the_buffer() {
        let a: &[u8] = b"hello world";
        let b: &[u8] = b"0123456789";
        let mut r = Rope::new();
        r.push_src(0, 0, 5);
        r.push_src(0, 5, 6); // joins the first piece
        r.push_bytes(b"big ");
        r.push_src(1, 2, 4);
        r.push_src(0, 6, 11);
        r.push_src(1, 0, 0); // empty: ignored
        assert_eq!(r.pieces.len(), 4);
        let srcs = texts(&[a, b]);
        let want = b"hello big 23world".to_vec();
        assert_eq!(r.to_vec(&srcs), want);
        assert_eq!(r.len(), want.len() as u64);
        let mut out = Vec::new();
        r.write_to(&srcs, &mut out, None).unwrap();
        assert_eq!(out, want);
    }

    /// Every range of a rope, cut into another, is the same bytes from the same
    /// sources: input ranges stay input pieces, new text is copied.
    #[test]
    fn a_range_cut_from_a_rope_is_its_bytes_from_the_same_inputs() {
        let a: &[u8] = b"hello world";
        let b: &[u8] = b"0123456789";
        let mut r = Rope::new();
        r.push_src(0, 0, 6);
        r.push_bytes(b"big ");
        r.push_src(1, 2, 4);
        r.push_src(0, 6, 11);
        let srcs = texts(&[a, b]);
        let whole = r.to_vec(&srcs);
        let index = r.index();
        assert_eq!(index.len(), whole.len() as u64);
        for lo in 0..=whole.len() {
            for hi in lo..=whole.len() {
                let mut cut = Rope::new();
                cut.push_range(&index, lo as u64, hi as u64);
                assert_eq!(cut.to_vec(&srcs), &whole[lo..hi], "{lo}..{hi}");
                assert_eq!(cut.len(), (hi - lo) as u64);
            }
        }
        let mut cut = Rope::new();
        cut.push_range(&index, 1, 5);
        assert_eq!(
            cut.pieces.iter().map(|p| p.text()).collect::<Vec<_>>(),
            [PieceText::Source(0)]
        );
    }

    /// The pieces as (module text, offset there, length), with `None` and no offset
    /// for new text, whose arena and offset depend on how the rope was built.
    fn shape(r: &Rope) -> Vec<(Option<u32>, u64, u32)> {
        r.pieces
            .iter()
            .map(|p| match p.text() {
                PieceText::New => (None, 0, p.len),
                _ => (Some(p.src), p.lo, p.len),
            })
            .collect()
    }

    #[test]
    fn appending_a_rope_built_apart_is_building_it_in_place() {
        let build = |r: &mut Rope, k: u32| {
            r.push_bytes(b"x");
            r.push_src(0, k, k + 2);
            r.push_bytes(b"yz");
        };
        let (mut whole, mut a, mut b) = (Rope::new(), Rope::new(), Rope::new());
        build(&mut whole, 0);
        build(&mut whole, 2);
        build(&mut a, 0);
        build(&mut b, 2);
        a.append(b);
        let srcs = texts(&[b"0123"]);
        assert_eq!(a.to_vec(&srcs), b"x01yzx23yz");
        assert_eq!(a.len(), whole.len());
        // New text of two parts stays two pieces (two arenas); the rest is alike.
        let sources =
            |r: &Rope| -> Vec<_> { shape(r).into_iter().filter(|p| p.0.is_some()).collect() };
        assert_eq!(sources(&a), sources(&whole));
        assert_eq!(a.pieces.len(), whole.pieces.len() + 1);
        // Parts appended at once, with one that joins the rope's last piece and
        // an empty one: as if appended one by one.
        let mut all = Rope::new();
        all.push_src(0, 0, 1);
        let mut joining = Rope::new();
        joining.push_src(0, 1, 3);
        joining.push_bytes(b"q");
        let mut other = Rope::new();
        build(&mut other, 1);
        let parts = vec![joining.clone(), Rope::new(), other.clone()];
        let mut one_by_one = all.clone();
        for p in parts.clone() {
            one_by_one.append(p);
        }
        all.append_all(parts);
        assert_eq!(all.pieces, one_by_one.pieces);
        assert_eq!(all.arenas, one_by_one.arenas);
        assert_eq!(all.to_vec(&srcs), b"012qx12yz");
        assert_eq!(all.len(), 9);
    }

    /// Parts numbered in advance keep their pieces as built when appended; a part
    /// numbered otherwise has its new text renumbered; the bytes are the same.
    #[test]
    fn parts_numbered_in_advance_are_appended_as_they_are() {
        let srcs = texts(&[b"0123"]);
        let mut head = Rope::new();
        head.push_bytes(b"h");
        let mut parts = Vec::new();
        for n in 1..4u32 {
            let mut part = Rope::part(n);
            part.push_src(0, n - 1, n);
            part.push_bytes(format!("<{n}>").as_bytes());
            parts.push(part);
        }
        let built: Vec<Piece> = parts
            .iter()
            .flat_map(|p| p.pieces.iter().copied())
            .collect();
        let mut all = head.clone();
        all.append_all(parts.clone());
        assert!(all.pieces.iter().skip(1).copied().eq(built.iter().copied()));
        assert_eq!(all.to_vec(&srcs), b"h0<1>1<2>2<3>");
        // Out of order: the second part goes first and is renumbered.
        let mut shuffled = head.clone();
        parts.swap(0, 1);
        shuffled.append_all(parts);
        assert_eq!(shuffled.to_vec(&srcs), b"h1<2>0<1>2<3>");
        assert_eq!(shuffled.len(), all.len());
        // A part with no new text adds its (empty) arena all the same.
        let mut sparse = head;
        let mut quiet = Rope::part(1);
        quiet.push_src(0, 0, 4);
        let mut loud = Rope::part(2);
        loud.push_bytes(b"!");
        sparse.append_all(vec![quiet, loud]);
        assert_eq!(sparse.to_vec(&srcs), b"h0123!");
    }

    /// A long appended chunk is not moved to join its first piece to the rope's
    /// last: one piece more, the same bytes.
    #[test]
    fn a_long_part_is_appended_without_moving_it() {
        let src: &[u8] = &[b'x'; 20_000];
        let mut whole = Rope::new();
        whole.push_src(0, 0, 10);
        let mut long = Rope::new();
        for i in 0..(JOIN_MOVES_AT_MOST as u32 + 1) {
            long.push_src(0, 10 + 2 * i, 11 + 2 * i); // every other byte: no joins
        }
        let mut short = Rope::new();
        short.push_src(0, 10, 11);
        short.push_src(0, 12, 13);
        let (mut a, mut b) = (whole.clone(), whole.clone());
        a.append(long.clone());
        b.append(short);
        let srcs = texts(&[src]);
        assert_eq!(a.pieces.len(), 1 + long.pieces.len());
        assert_eq!(b.pieces.len(), 2); // the short part's first piece joined
        assert_eq!(a.to_vec(&srcs).len() as u64, a.len());
        assert_eq!(a.len(), 10 + long.len());
        let mut out = Vec::new();
        a.write_to(&srcs, &mut out, None).unwrap();
        assert_eq!(out, a.to_vec(&srcs));
    }

    #[test]
    fn thousands_of_tiny_pieces_write_like_the_buffer() {
        let src: &[u8] = b"ab";
        let mut r = Rope::new();
        for i in 0..3000 {
            r.push_src(0, i % 2, i % 2 + 1);
            r.push_bytes(b",");
        }
        let mut out = Vec::new();
        let srcs = texts(&[src]);
        r.write_to(&srcs, &mut out, None).unwrap();
        assert_eq!(out, r.to_vec(&srcs));
        assert_eq!(out.len(), 6000);
    }
}
