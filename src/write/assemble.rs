//! The output in contiguous chunks, read from the inputs.
//!
//! Parsing reads each mapped input through a copy and never touches its mapping
//! (`frontend::parse_from_copy`), so at the end of parsing no input page is
//! resident. The writer needs every input's text once more, in output order. Mapping
//! the pages back in and releasing them behind the writer would cost a TLB
//! shootdown per module (an interrupt to every core the process runs on); instead
//! the text is read again from the open files.
//!
//! The reads go straight to where the bytes belong in the output: the pieces of one
//! module's source that follow each other in the output are read with one `preadv`
//! whose parts are their places in a chunk of about [`CHUNK`] bytes (the bytes
//! between them, such as an identifier being renamed, go to a scratch buffer), and
//! the new text and kept copies between them are copied in. Each chunk is then
//! written with one plain `write` or `pwrite`: the kernel copies every byte twice,
//! as `cat` does. Which pieces make up each chunk is decided by a quick walk over
//! the pieces ([`Planner`]); filling chunks ([`Filler`]) is most of the work.
//!
//! An output file is written by every thread at once, each chunk at its offset
//! (`positioned.rs`). A stream (standard output, a pipe, a device) must be written
//! in order: [`pipeline`] writes its chunks one after another, and with two or more
//! threads in the pool a helper thread fills chunks ahead of the writer, which
//! fills one too whenever the next one to write is not ready (the kernel writes a
//! chunk in less time than it takes to fill one; docs/performance.md).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::rope::{ModuleText, Piece, Rope, COPY_MIN};
use crate::input::MAX_PARTS;

/// About how many bytes one chunk holds. Writes of 128 KB to 1 MB get large
/// page-cache folios; writes of 16–35 KB took twice as long (docs/performance.md).
pub(super) const CHUNK: usize = 1 << 20;

/// How many chunks may be filled (or being filled) and not yet written.
const AHEAD: usize = 6;

/// Source pieces larger than this are written from the file's mapping, whose pages
/// are released after: a chunk never holds more than this (plus [`CHUNK`]).
const MAX_COPY: u32 = 16 << 20;

/// The longest run of bytes between two pieces of one file that a `preadv` reads
/// into the scratch buffer rather than ending there.
const MAX_GAP: usize = 4096;

/// One unit of output, in order.
pub(super) enum Chunk {
    /// Output bytes, in a buffer the writer may hand back.
    Bytes(Vec<u8>),
    /// A piece of an input file for the kernel to copy into the output file.
    Copy(Piece),
    /// A piece of an input file written from its mapping (pages released after).
    Mapped(Piece),
}

/// A source piece of a file, to be read into a chunk at `at`.
#[derive(Clone, Copy)]
struct Read {
    module: u32,
    lo: u64,
    len: usize,
    at: usize,
}

/// What one chunk holds, decided by the [`Planner`].
#[derive(Clone, Copy)]
pub(super) enum Plan {
    /// `pieces` pieces from the rope's chunk `chunk`, index `at`, `len` bytes.
    Bytes {
        chunk: usize,
        at: usize,
        pieces: usize,
        len: usize,
    },
    /// See [`Chunk::Copy`].
    Copy(Piece),
    /// See [`Chunk::Mapped`].
    Mapped(Piece),
}

/// Walks a rope's pieces in order and decides the chunks.
pub(super) struct Planner<'r, 'a> {
    rope: &'r Rope,
    srcs: &'r [ModuleText<'a>],
    /// Whether file pieces of at least `COPY_MIN` bytes become [`Chunk::Copy`].
    copying: bool,
    /// The next piece: its chunk of the rope's pieces, and its index there.
    chunk: usize,
    at: usize,
    /// Where planning ends (as `chunk` and `at`; past the last chunk for the whole
    /// rope).
    end: (usize, usize),
    /// The most bytes a chunk of bytes holds (unless one piece is longer).
    limit: usize,
}

impl<'r, 'a> Planner<'r, 'a> {
    pub fn new(rope: &'r Rope, srcs: &'r [ModuleText<'a>], copying: bool) -> Self {
        let end = (rope.pieces.chunks.len(), 0);
        let mut p = Planner::between(rope, srcs, copying, (0, 0), end);
        p.limit = CHUNK;
        p
    }

    /// A planner of the pieces from `from` up to `end` (each a chunk of the rope's
    /// pieces and an index there; an index is never its chunk's length), in as few
    /// chunks as the large pieces allow: the caller bounds their size.
    pub fn between(
        rope: &'r Rope,
        srcs: &'r [ModuleText<'a>],
        copying: bool,
        from: (usize, usize),
        end: (usize, usize),
    ) -> Self {
        Planner {
            rope,
            srcs,
            copying,
            chunk: from.0,
            at: from.1,
            end,
            limit: usize::MAX,
        }
    }

    fn peek(&self) -> Option<Piece> {
        if (self.chunk, self.at) == self.end {
            return None;
        }
        self.rope.pieces.chunks.get(self.chunk).map(|c| c[self.at])
    }

    fn advance(&mut self) {
        self.at += 1;
        if self.at == self.rope.pieces.chunks[self.chunk].len() {
            self.chunk += 1;
            self.at = 0;
        }
    }

    /// The next chunk's plan; `None` after the last.
    pub fn plan(&mut self) -> Option<Plan> {
        let (rope, srcs) = (self.rope, self.srcs);
        let (chunk, at) = (self.chunk, self.at);
        let (mut pieces, mut len) = (0, 0);
        while let Some(p) = self.peek() {
            // The length first: most pieces are short, and need no look at their file.
            let large = p.len > MAX_COPY || self.copying && p.len >= COPY_MIN;
            if large && rope.in_file(&p, srcs) {
                if pieces > 0 {
                    break;
                }
                self.advance();
                return Some(if self.copying && p.len >= COPY_MIN {
                    Plan::Copy(p)
                } else {
                    Plan::Mapped(p)
                });
            }
            if pieces > 0 && len + p.len as usize > self.limit {
                break;
            }
            pieces += 1;
            len += p.len as usize;
            self.advance();
        }
        (pieces > 0).then_some(Plan::Bytes {
            chunk,
            at,
            pieces,
            len,
        })
    }
}

/// Fills chunks with their pieces' bytes; one per thread.
pub(super) struct Filler<'r, 'a> {
    rope: &'r Rope,
    srcs: &'r [ModuleText<'a>],
    /// The file reads of the chunk being filled.
    reads: Vec<Read>,
    /// Where the bytes between pieces of one file go.
    gap: Vec<u8>,
    parts: Vec<(*mut u8, usize)>,
    /// How many `preadv` calls were made (for tests).
    pub file_reads: usize,
}

impl<'r, 'a> Filler<'r, 'a> {
    pub fn new(rope: &'r Rope, srcs: &'r [ModuleText<'a>]) -> Self {
        Filler {
            rope,
            srcs,
            reads: Vec::new(),
            gap: vec![0; MAX_GAP],
            parts: Vec::new(),
            file_reads: 0,
        }
    }

    /// The chunk `plan` describes, its bytes in `buf` (whose contents are dropped).
    /// An error if an input cannot be read (one cut short since it was opened: the
    /// error wraps [`crate::input::InputError::Changed`]).
    pub fn fill(&mut self, plan: Plan, mut buf: Vec<u8>) -> io::Result<Chunk> {
        let (chunk, at, count, len) = match plan {
            Plan::Copy(p) => return Ok(Chunk::Copy(p)),
            Plan::Mapped(p) => return Ok(Chunk::Mapped(p)),
            Plan::Bytes {
                chunk,
                at,
                pieces,
                len,
            } => (chunk, at, pieces, len),
        };
        let (rope, srcs) = (self.rope, self.srcs);
        buf.clear();
        buf.reserve(len.max(CHUNK));
        // Bytes placed so far; `buf.len()` stays 0 until all of them are written.
        let mut filled = 0;
        let pieces = rope.pieces.chunks[chunk..].iter().enumerate();
        let pieces = pieces.flat_map(|(i, c)| &c[if i == 0 { at } else { 0 }..]);
        for p in pieces.take(count) {
            let n = p.len as usize;
            if rope.in_file(p, srcs) {
                self.reads.push(Read {
                    module: p.src,
                    lo: p.lo,
                    len: n,
                    at: filled,
                });
            } else {
                let bytes = rope.slice(p, srcs);
                // SAFETY: `filled + n <= len <= capacity` (the plan's length,
                // reserved above); the source is not the buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.as_mut_ptr().add(filled), n);
                }
            }
            filled += n;
        }
        debug_assert_eq!(filled, len);
        self.read_files(&mut buf)?;
        // SAFETY: every byte below `filled` was copied above or read by
        // `read_files`, which fills every read's place when it succeeds.
        unsafe { buf.set_len(filled) };
        Ok(Chunk::Bytes(buf))
    }

    /// Fills the places of this chunk's file reads: each group of reads of one
    /// file that follow each other in it (with short gaps) in one `preadv`. A read
    /// that fails is an error, never a reason to read the file's mapping instead: a
    /// file cut short has no more bytes there, and its pages past the new end
    /// raise SIGBUS.
    fn read_files(&mut self, buf: &mut Vec<u8>) -> io::Result<()> {
        let mut reads = std::mem::take(&mut self.reads);
        let result = self.read_groups(&reads, buf);
        self.parts.clear();
        reads.clear();
        self.reads = reads;
        result
    }

    fn read_groups(&mut self, reads: &[Read], buf: &mut Vec<u8>) -> io::Result<()> {
        let base = buf.as_mut_ptr();
        let gap = self.gap.as_mut_ptr();
        let mut i = 0;
        while i < reads.len() {
            let first = reads[i];
            let mut end = first.lo + first.len as u64;
            self.parts.clear();
            // SAFETY (of every `base.add`): each read's place lies below the
            // chunk's `filled`, within the buffer's capacity.
            self.parts.push((unsafe { base.add(first.at) }, first.len));
            let mut j = i + 1;
            while let Some(r) = reads.get(j) {
                let skip = r.lo.wrapping_sub(end) as usize;
                if r.module != first.module || r.lo < end || skip > MAX_GAP {
                    break;
                }
                if self.parts.len() + 2 > MAX_PARTS {
                    break;
                }
                if skip > 0 {
                    self.parts.push((gap, skip));
                }
                self.parts.push((unsafe { base.add(r.at) }, r.len));
                end = r.lo + r.len as u64;
                j += 1;
            }
            // Only pieces of files kept open are read here (`Rope::in_file`).
            if let Some(file) = self.srcs[first.module as usize].pages {
                self.file_reads += 1;
                // SAFETY: the places are distinct ranges of the buffer's spare
                // capacity and the scratch buffer, which nothing else uses meanwhile.
                unsafe { file.read_scattered_at(first.lo, &self.parts) }
                    .map_err(io::Error::other)?;
            }
            i = j;
        }
        Ok(())
    }
}

/// A [`Planner`] and a [`Filler`] on one thread: the chunks one after another.
pub(super) struct Assembler<'r, 'a> {
    pub planner: Planner<'r, 'a>,
    pub filler: Filler<'r, 'a>,
}

impl<'r, 'a> Assembler<'r, 'a> {
    pub fn new(rope: &'r Rope, srcs: &'r [ModuleText<'a>], copying: bool) -> Self {
        Assembler {
            planner: Planner::new(rope, srcs, copying),
            filler: Filler::new(rope, srcs),
        }
    }

    /// The next chunk, filled in `buf` when it is bytes; `None` after the last.
    pub fn next(&mut self, buf: Vec<u8>) -> Option<io::Result<Chunk>> {
        let plan = self.planner.plan()?;
        Some(self.filler.fill(plan, buf))
    }
}

/// The state the writer and the helper share.
struct Shared<'r, 'a> {
    /// The planner, the number of chunks planned, and whether it planned the last.
    planner: Mutex<(Planner<'r, 'a>, usize, bool)>,
    /// How many chunks were written, and how many filled.
    written: AtomicUsize,
    filled: AtomicUsize,
    /// Filled chunks (or the error that stopped filling one) waiting to be
    /// written: chunk `k` in slot `k % AHEAD`.
    slots: Vec<Mutex<Option<io::Result<Chunk>>>>,
    /// Buffers to fill again.
    spare: Mutex<Vec<Vec<u8>>>,
    /// Set when the writer stopped early (a write failed).
    stop: AtomicBool,
}

/// What [`Shared::claim`] found.
enum Claim {
    /// Chunk number `.0`, to fill now.
    Fill(usize, Plan),
    /// Enough chunks are waiting to be written.
    Wait,
    /// Every chunk was planned; this many in all.
    Done(usize),
}

impl Shared<'_, '_> {
    /// The next chunk to fill, unless [`AHEAD`] are filled or being filled.
    fn claim(&self) -> Claim {
        let mut guard = self.planner.lock().unwrap_or_else(|e| e.into_inner());
        let (planner, planned, done) = &mut *guard;
        if *done {
            return Claim::Done(*planned);
        }
        if *planned - self.written.load(Ordering::Acquire) >= AHEAD {
            return Claim::Wait;
        }
        match planner.plan() {
            Some(plan) => {
                *planned += 1;
                Claim::Fill(*planned - 1, plan)
            }
            None => {
                *done = true;
                Claim::Done(*planned)
            }
        }
    }

    /// Fills chunk `k` as `plan` says and leaves it in its slot.
    fn fill(&self, filler: &mut Filler<'_, '_>, k: usize, plan: Plan) {
        let buf = self
            .spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        let chunk = filler.fill(plan, buf);
        *self.slots[k % AHEAD]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(chunk);
        self.filled.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes chunk `k` from its slot if it is filled.
    fn take(&self, k: usize) -> Option<io::Result<Chunk>> {
        self.slots[k % AHEAD]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// Calls `write_chunk` with each chunk of `rope`, in order (no piece is left to a
/// kernel copy: a stream has no offsets to copy to), recycling the buffers:
/// filled by a helper thread ahead of the writer, and by the writer when the next
/// chunk is not ready, when the pool has two or more threads; else here, one at a
/// time. `after_reads` is called once the inputs were read for the last time: by
/// the helper once every chunk is filled, and again by the writer if it read a file
/// itself ([`Chunk::Copy`], [`Chunk::Mapped`]) after that began. After a failed
/// write (the error is returned) it may or may not have been called.
pub(super) fn pipeline(
    rope: &Rope,
    srcs: &[ModuleText<'_>],
    mut write_chunk: impl FnMut(&Chunk) -> io::Result<()>,
    after_reads: &(dyn Fn() + Sync),
) -> io::Result<()> {
    if rayon::current_num_threads() < 2 {
        let mut asm = Assembler::new(rope, srcs, false);
        let mut buf = Vec::new();
        while let Some(chunk) = asm.next(buf) {
            let chunk = chunk?;
            write_chunk(&chunk)?;
            buf = match chunk {
                Chunk::Bytes(b) => b,
                _ => Vec::new(),
            };
        }
        after_reads();
        return Ok(());
    }
    let shared = Shared {
        planner: Mutex::new((Planner::new(rope, srcs, false), 0, false)),
        written: AtomicUsize::new(0),
        filled: AtomicUsize::new(0),
        slots: (0..AHEAD).map(|_| Mutex::new(None)).collect(),
        spare: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
    };
    // Set by the helper once every chunk is filled, just before it calls
    // `after_reads`; the writer calls it again if it read a file after that.
    let checking = AtomicBool::new(false);
    let mut late_read = false;
    std::thread::scope(|s| {
        let (shared, checking) = (&shared, &checking);
        s.spawn(move || {
            let mut filler = Filler::new(rope, srcs);
            let mut wait = Waiting::new();
            let total = loop {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                match shared.claim() {
                    Claim::Fill(k, plan) => {
                        shared.fill(&mut filler, k, plan);
                        wait = Waiting::new();
                    }
                    Claim::Wait => wait.pause(),
                    Claim::Done(total) => break total,
                }
            };
            // The writer may still be filling the last ones.
            while shared.filled.load(Ordering::Acquire) < total {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                wait.pause();
            }
            checking.store(true, Ordering::SeqCst);
            after_reads();
        });
        let result = (|| -> io::Result<()> {
            let mut filler = Filler::new(rope, srcs);
            let mut wait = Waiting::new();
            let mut next = 0;
            loop {
                if let Some(chunk) = shared.take(next) {
                    let chunk = chunk?;
                    write_chunk(&chunk)?;
                    next += 1;
                    shared.written.store(next, Ordering::Release);
                    wait = Waiting::new();
                    match chunk {
                        // A chunk grown for one large piece is not kept.
                        Chunk::Bytes(b) if b.capacity() <= 2 * CHUNK => {
                            shared
                                .spare
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push(b);
                        }
                        Chunk::Bytes(_) => {}
                        // Read here after the helper's check began: checked again.
                        Chunk::Copy(_) | Chunk::Mapped(_) => {
                            late_read |= checking.load(Ordering::SeqCst);
                        }
                    }
                    continue;
                }
                // The next chunk is not ready: fill one meanwhile (often the next).
                match shared.claim() {
                    Claim::Fill(k, plan) => shared.fill(&mut filler, k, plan),
                    Claim::Done(total) if next == total => return Ok(()),
                    Claim::Done(_) | Claim::Wait => wait.pause(),
                }
            }
        })();
        if result.is_err() {
            shared.stop.store(true, Ordering::Release);
        }
        result
    })?;
    if late_read {
        after_reads();
    }
    Ok(())
}

/// How long a thread of the pipeline polls for the other (yielding its CPU to any
/// other runnable thread between attempts) before it sleeps between attempts. A
/// thread that blocks is woken by the other, and the scheduler then often runs the
/// two on one CPU for many milliseconds, one waiting while the other works, with
/// the second CPU idle (`perf sched` shows it; the writing phase then takes about
/// half as long again). In a link neither waits longer than about the time it takes
/// to fill one chunk, far less than this.
const POLL_FOR: Duration = Duration::from_millis(5);

/// A wait for the other thread: yielding for up to [`POLL_FOR`], then sleeping
/// briefly between attempts (on a machine whose CPUs are all busy otherwise).
struct Waiting {
    since: Option<Instant>,
}

impl Waiting {
    fn new() -> Self {
        Waiting { since: None }
    }

    fn pause(&mut self) {
        let since = *self.since.get_or_insert_with(Instant::now);
        if since.elapsed() < POLL_FOR {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

/// Every chunk of `rope`, assembled in order (tests).
#[cfg(test)]
pub(super) fn chunks(rope: &Rope, srcs: &[ModuleText<'_>], copying: bool) -> Vec<Chunk> {
    let mut asm = Assembler::new(rope, srcs, copying);
    std::iter::from_fn(|| asm.next(Vec::new()).map(Result::unwrap)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::test_files::{files, srcs, text, NOTHING_KEPT};
    use super::*;
    use crate::ir::KeptText;
    use crate::write::rope::Text;
    use std::sync::atomic::AtomicUsize;

    fn concat(chunks: &[Chunk], rope: &Rope, srcs: &[ModuleText<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for c in chunks {
            match c {
                Chunk::Bytes(b) => out.extend_from_slice(b),
                Chunk::Copy(p) | Chunk::Mapped(p) => out.extend_from_slice(rope.slice(p, srcs)),
            }
        }
        out
    }

    /// Pieces of two files in every arrangement a `preadv` must not take in one
    /// go (backwards, overlapping, far apart, another file between), with new text
    /// between them, over several chunks: each chunk holds at most CHUNK bytes, the
    /// chunks are the rope's bytes, and a run of nearby pieces of one file is one
    /// read.
    #[test]
    fn chunks_hold_the_ropes_bytes_whatever_the_order_of_pieces() {
        let (dir, open) = files("order", &[text(400_000, 1), text(300_000, 2)]);
        let srcs = srcs(&open);
        let mut r = Rope::new();
        let mut pieces = 0;
        for round in 0..60u32 {
            let at = round * 5_000;
            r.push_src(0, at, at + 40); // a run of nearby pieces: one read
            r.push_bytes(b"$new");
            r.push_src(0, at + 50, at + 4_000);
            r.push_src(0, at + 4_010, at + 4_020);
            r.push_src(0, at + 4_000, at + 4_012); // backwards and overlapping
            r.push_src(1, at, at + 900); // the other file
            r.push_src(0, at + 4_900, at + 4_950);
            r.push_src(
                0,
                at + 4_950 + MAX_GAP as u32 + 1,
                at + 4_960 + MAX_GAP as u32,
            ); // far
            r.push_bytes(format!("<{round}>").as_bytes());
            pieces += 9;
        }
        let want = r.to_vec(&srcs);
        assert!(
            want.len() < 2 * CHUNK,
            "the next test covers larger outputs"
        );
        let mut asm = Assembler::new(&r, &srcs, false);
        let mut got = Vec::new();
        while let Some(Ok(Chunk::Bytes(b))) = asm.next(Vec::new()) {
            assert!(b.len() <= CHUNK);
            got.extend_from_slice(&b);
        }
        assert!(got == want);
        // Per round: the first three pieces, the overlapping one, the other file,
        // the one after it, the far one.
        assert_eq!(asm.filler.file_reads, 60 * 5, "{pieces} pieces");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// Outputs of several chunks, with pieces larger than a chunk: such a piece is
    /// a chunk of its own (or a copy by the kernel when the output is a file), and
    /// the chunks together are the rope's bytes.
    #[test]
    fn a_piece_larger_than_a_chunk_is_a_chunk_of_its_own() {
        let big = CHUNK as u32 + 12_345;
        let (dir, open) = files("large", &[text(3 * big, 3)]);
        let srcs = srcs(&open);
        let mut r = Rope::new();
        for k in 0..3u32 {
            r.push_src(0, k * big, k * big + 100);
            r.push_bytes(b"|");
            r.push_src(0, k * big + 200, (k + 1) * big); // larger than a chunk
            r.push_bytes(b"|");
        }
        let want = r.to_vec(&srcs);
        for copying in [false, true] {
            let chunks = chunks(&r, &srcs, copying);
            assert!(concat(&chunks, &r, &srcs) == want);
            let large = chunks
                .iter()
                .filter(|c| match c {
                    Chunk::Bytes(b) => b.len() > CHUNK,
                    Chunk::Copy(p) => !copying || p.len as usize <= CHUNK,
                    Chunk::Mapped(_) => true,
                })
                .count();
            if copying {
                assert_eq!(large, 0);
                assert_eq!(
                    chunks
                        .iter()
                        .filter(|c| matches!(c, Chunk::Copy(_)))
                        .count(),
                    3
                );
            } else {
                assert_eq!(large, 3);
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The pipeline writes the chunks in order and calls `after_reads` once, with
    /// one thread and with two; a failed write ends it (the helper stops too).
    #[test]
    fn the_pipeline_writes_in_order_and_checks_once_after_the_last_read() {
        let (dir, open) = files("pipe", &[text(900_000, 4), text(900_000, 5)]);
        let srcs = srcs(&open);
        let mut r = Rope::new();
        for k in 0..1_500u32 {
            let at = (k % 300) * 2_900;
            r.push_src(k % 2, at, at + 2_500 + k % 300);
            r.push_bytes(format!("[{k}]").as_bytes());
        }
        let want = r.to_vec(&srcs);
        assert!(want.len() > 3 * CHUNK);
        // Twice with two threads: the writer and the helper share the filling, and
        // which fills which chunk changes from run to run.
        for threads in [1, 2, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            let pool = pool.unwrap();
            let checks = AtomicUsize::new(0);
            let after = || {
                checks.fetch_add(1, Ordering::SeqCst);
            };
            let mut out = Vec::new();
            pool.install(|| {
                pipeline(
                    &r,
                    &srcs,
                    |c| {
                        let Chunk::Bytes(b) = c else { unreachable!() };
                        out.extend_from_slice(b);
                        Ok(())
                    },
                    &after,
                )
            })
            .unwrap();
            assert!(out == want, "{threads} threads");
            assert_eq!(checks.load(Ordering::SeqCst), 1);
            // A write that fails at the second chunk: the error comes back.
            let mut longer = Rope::new();
            for k in 0..150u32 {
                let at = (k % 44) * 20_000;
                longer.push_src(0, at, at + 19_000);
                longer.push_bytes(b"\n");
            }
            let calls = AtomicUsize::new(0);
            let failed = pool.install(|| {
                pipeline(
                    &longer,
                    &srcs,
                    |_| match calls.fetch_add(1, Ordering::SeqCst) {
                        0 => Ok(()),
                        _ => Err(io::Error::other("disk full")),
                    },
                    &after,
                )
            });
            assert_eq!(failed.unwrap_err().to_string(), "disk full");
            assert_eq!(calls.load(Ordering::SeqCst), 2);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// More pieces of one file, close together, than one `preadv` takes: the reads
    /// are split at [`MAX_PARTS`] parts, and the bytes are the rope's.
    #[test]
    fn more_parts_than_one_preadv_takes() {
        let (dir, open) = files("parts", &[text(20_000, 7)]);
        let srcs = srcs(&open);
        let mut r = Rope::new();
        for i in 0..3_000u32 {
            r.push_src(0, 3 * i, 3 * i + 1); // a byte, then a gap of two
            r.push_bytes(b",");
        }
        let want = r.to_vec(&srcs);
        let mut asm = Assembler::new(&r, &srcs, false);
        assert!(matches!(asm.next(Vec::new()), Some(Ok(Chunk::Bytes(b))) if b == want));
        // Two parts per piece (a gap and the piece), at most 1,024 per read.
        assert_eq!(asm.filler.file_reads, 3_000usize.div_ceil(MAX_PARTS / 2));
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A module whose file is not open (or cannot be read) is copied from its
    /// bytes: kept copies and sources without files mix with read pieces.
    #[test]
    fn pieces_without_an_open_file_come_from_the_bytes() {
        // Past 16 KiB: a smaller file beyond the open-file budget would be read.
        let (dir, open) = files("bytes", &[text(20_000, 6)]);
        let plain: &[u8] = b"0123456789";
        let mut kept = KeptText::default();
        kept.keep(plain, crate::source::Span::new(2, 6));
        let srcs = vec![
            ModuleText {
                src: Text::File(&open[0]),
                kept: &NOTHING_KEPT,
                pages: Some(&open[0]),
            },
            ModuleText {
                src: Text::Slice(plain),
                kept: &kept,
                pages: None,
            },
        ];
        let mut r = Rope::new();
        r.push_src(0, 10, 20);
        r.push_src(1, 1, 4);
        r.push_kept(
            1,
            kept.offset_of(crate::source::Span::new(3, 5)).unwrap(),
            2,
        );
        r.push_src(0, 20, 30);
        let want = r.to_vec(&srcs);
        let mut asm = Assembler::new(&r, &srcs, false);
        assert!(matches!(asm.next(Vec::new()), Some(Ok(Chunk::Bytes(b))) if b == want));
        assert!(asm.next(Vec::new()).is_none());
        assert_eq!(asm.filler.file_reads, 1);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
