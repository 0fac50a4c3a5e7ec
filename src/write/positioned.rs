//! An output file written by every thread of the pool at once, each chunk at its
//! own offset.
//!
//! The layout knows where each byte of the output goes before one is written: a
//! piece's offset is the sum of the lengths of the pieces before it. The rope's
//! pieces are cut into segments of about [`SEGMENT`] bytes, each with the output
//! offset it begins at ([`segments`]); the threads take segments in any order, plan
//! and fill their chunks as the ordered pipeline does (`assemble`: [`Planner`],
//! [`Filler`]) and write each chunk at its offset with `pwrite`, or have the kernel
//! copy a long piece there (`copy_file_range` with an output offset). Where the
//! segments and chunks begin depends on the rope alone, so the same writes are made
//! whatever the thread count, in whatever order, and the file holds the same bytes.
//!
//! The ordered pipeline, with its one writer and one helper, stays for outputs that
//! must be written in order (standard output, a pipe, a device); it cannot use more
//! than two threads (docs/performance.md).

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rayon::prelude::*;

use super::assemble::{Chunk, Filler, Planner, CHUNK};
use super::rope::{ModuleText, Piece, Rope};

/// About how many output bytes one segment holds: one chunk (a segment is one
/// write but for its large pieces), so that the last segments of a 100 MB output
/// still keep 16 threads busy.
const SEGMENT: u64 = CHUNK as u64;

/// A run of the rope's pieces and the output offset of its first byte. Positions
/// are a chunk of the rope's pieces and an index there, as [`Planner::between`]
/// takes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Segment {
    from: (usize, usize),
    end: (usize, usize),
    offset: u64,
}

/// A chunk of the rope's pieces: its length in bytes, and where a segment may begin
/// inside it (a piece's index and its offset in the chunk), one place per
/// [`SEGMENT`] bytes. Chunks are usually one module's part of the output, smaller
/// than a segment, and have no such place.
fn places(pieces: &[Piece]) -> (u64, Vec<(usize, u64)>) {
    let (mut len, mut last) = (0u64, 0u64);
    let mut places = Vec::new();
    for (i, p) in pieces.iter().enumerate() {
        if len - last >= SEGMENT {
            places.push((i, len));
            last = len;
        }
        len += u64::from(p.len);
    }
    (len, places)
}

/// The rope's pieces in segments of at least [`SEGMENT`] bytes (but the last), in
/// order; at most about twice that unless one piece is longer. The chunks of pieces
/// are measured in parallel; the segments are then set in one walk over the chunks.
fn segments(rope: &Rope) -> Vec<Segment> {
    let chunks = &rope.pieces.chunks;
    let measured: Vec<(u64, Vec<(usize, u64)>)> = chunks.par_iter().map(|c| places(c)).collect();
    let mut segments = Vec::new();
    let (mut from, mut offset, mut at) = ((0, 0), 0u64, 0u64);
    for (c, (len, places)) in measured.iter().enumerate() {
        for &(i, local) in places {
            if at + local - offset >= SEGMENT {
                segments.push(Segment {
                    from,
                    end: (c, i),
                    offset,
                });
                (from, offset) = ((c, i), at + local);
            }
        }
        at += len;
        if at - offset >= SEGMENT {
            segments.push(Segment {
                from,
                end: (c + 1, 0),
                offset,
            });
            (from, offset) = ((c + 1, 0), at);
        }
    }
    let end = (chunks.len(), 0);
    if from != end {
        segments.push(Segment { from, end, offset });
    }
    segments
}

/// Whether writes to `out` land at the offsets they name: not in a file opened to
/// append, where every `pwrite` goes to the end (Linux) and the ordered path must
/// write it.
pub(super) fn writes_at_offsets(out: &File) -> bool {
    rustix::fs::fcntl_getfl(out).is_ok_and(|flags| !flags.contains(rustix::fs::OFlags::APPEND))
}

/// Writes the rope into `out` from its file position on, with every thread of the
/// pool, and leaves the position after the last byte. The rope's length is reserved
/// in the file first ([`super::output::reserve`]). Input pieces of at least
/// `COPY_MIN` bytes are copied by the kernel while it can copy between these files.
pub(super) fn write_at(rope: &Rope, srcs: &[ModuleText<'_>], mut out: &File) -> io::Result<()> {
    let base = out.stream_position()?;
    // The reservation goes beside cutting the rope into segments, which reads no
    // file: each was a few tenths of a millisecond of writing's serial time.
    let ((), segments) = rayon::join(
        || super::output::reserve(out, rope.len()),
        || segments(rope),
    );
    let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
    let kernel_copies = AtomicBool::new(true);
    let write_segment = |filler: &mut Filler<'_, '_>, s: &Segment| -> io::Result<()> {
        let mut planner = Planner::between(rope, srcs, true, s.from, s.end);
        let mut at = base + s.offset;
        let mut buf = spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default();
        while let Some(plan) = planner.plan() {
            let len = match filler.fill(plan, std::mem::take(&mut buf))? {
                Chunk::Bytes(b) => {
                    out.write_all_at(&b, at)?;
                    let len = b.len();
                    buf = b;
                    len
                }
                Chunk::Copy(p) => {
                    let pages = srcs[p.src as usize].pages;
                    let copied = kernel_copies.load(Ordering::Relaxed)
                        && match pages {
                            Some(pages) => pages.copy_to(p.lo, u64::from(p.len), out, Some(at))?,
                            None => false,
                        };
                    if !copied {
                        // Another file system, or an old kernel: from the mapping.
                        kernel_copies.store(false, Ordering::Relaxed);
                        out.write_all_at(rope.slice(&p, srcs), at)?;
                    }
                    p.len as usize
                }
                Chunk::Mapped(p) => {
                    out.write_all_at(rope.slice(&p, srcs), at)?;
                    // Parsing left the file's pages out of memory: so does the writer.
                    if let Some(pages) = srcs[p.src as usize].pages {
                        pages.release();
                    }
                    p.len as usize
                }
            };
            at += len as u64;
        }
        // A buffer grown for a segment of large pieces is not kept.
        if buf.capacity() <= 4 * CHUNK {
            spare.lock().unwrap_or_else(|e| e.into_inner()).push(buf);
        }
        Ok(())
    };
    // Each segment on its own to whichever thread is free: rayon's splitting
    // handed a thread runs of segments that no other could take over, and the
    // writing ended with one thread writing its last run alone.
    crate::parallel::try_for_each(
        segments.len(),
        || Filler::new(rope, srcs),
        |filler, i| write_segment(filler, &segments[i]),
    )?;
    out.seek(SeekFrom::Start(base + rope.len()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::test_files::{files, srcs, text, NOTHING_KEPT};
    use super::*;

    /// Segments cover the pieces in order, each from where the last ended, at the
    /// offset its first piece has in the output; long chunks of pieces are cut
    /// inside, short ones gathered, and no segment but the last is shorter than
    /// [`SEGMENT`].
    #[test]
    fn segments_cover_the_pieces_in_order_at_their_offsets() {
        let mut r = Rope::new();
        let mut parts = Vec::new();
        // Short parts (a module's worth), one long part of many pieces, one piece
        // longer than a segment, then short parts again.
        for k in 0..300u32 {
            let mut part = Rope::new();
            part.push_src(k % 7, 0, 10_000 + k);
            part.push_bytes(b"\n");
            parts.push(part);
        }
        let mut long = Rope::new();
        for k in 0..2_000u32 {
            long.push_src(1, k * 10, k * 10 + 3_000);
            long.push_bytes(b"x");
        }
        parts.push(long);
        let mut huge = Rope::new();
        huge.push_src(2, 0, 3 * SEGMENT as u32);
        parts.push(huge);
        for k in 0..50u32 {
            let mut part = Rope::new();
            part.push_src(3, k, k + 20_000);
            parts.push(part);
        }
        r.append_all(parts);
        let segments = segments(&r);
        let starts: Vec<u64> = {
            let mut at = 0;
            r.pieces
                .chunks
                .iter()
                .map(|c| {
                    let s = at;
                    at += c.iter().map(|p| u64::from(p.len)).sum::<u64>();
                    s
                })
                .collect()
        };
        let offset_of = |(c, i): (usize, usize)| {
            starts[c]
                + r.pieces.chunks[c][..i]
                    .iter()
                    .map(|p| u64::from(p.len))
                    .sum::<u64>()
        };
        assert_eq!(segments[0].from, (0, 0));
        assert_eq!(segments.last().unwrap().end, (r.pieces.chunks.len(), 0));
        for (k, s) in segments.iter().enumerate() {
            assert_eq!(s.offset, offset_of(s.from), "segment {k}");
            let end = match segments.get(k + 1) {
                Some(next) => {
                    assert_eq!(next.from, s.end);
                    next.offset
                }
                None => r.len(),
            };
            assert!(s.from.1 < r.pieces.chunks[s.from.0].len());
            if k + 1 < segments.len() {
                assert!(end - s.offset >= SEGMENT, "segment {k}: {s:?}");
            }
            assert!(end - s.offset <= 2 * SEGMENT + 3 * SEGMENT, "segment {k}");
        }
        // The long part of 6 MB is cut inside.
        let long = 300;
        assert!(segments.iter().filter(|s| s.from.0 == long).count() >= 4);
        assert!(segments.len() as u64 >= r.len() / (2 * SEGMENT));
    }

    /// Many segments of short pieces, kernel copies and new text, from several
    /// files: written by one, two and three threads after bytes already in the
    /// file, the file holds those bytes and then the rope's, and its position is at
    /// the end.
    #[test]
    fn every_thread_count_writes_the_ropes_bytes_at_the_file_position() {
        use std::io::Write;
        let texts: Vec<Vec<u8>> = (0..3).map(|f| text(1_500_000, f)).collect();
        let (dir, open) = files("positioned", &texts);
        let srcs = srcs(&open);
        let mut parts = Vec::new();
        for k in 0..120u32 {
            let mut part = Rope::new();
            let (m, lo) = (k % 3, (k * 9_973) % 1_300_000);
            part.push_src(m, lo, lo + 40_000);
            part.push_bytes(format!("<{k}>").as_bytes());
            if k % 10 == 0 {
                part.push_src(m, lo, lo + (70 << 10)); // a kernel copy
            }
            parts.push(part);
        }
        let mut r = Rope::new();
        r.append_all(parts);
        let want = r.to_vec(&srcs);
        assert!(segments(&r).len() >= 4);
        for threads in [1, 2, 3] {
            let path = dir.join(format!("out{threads}.ptx"));
            let mut out = File::create(&path).unwrap();
            out.write_all(b"before").unwrap();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            pool.unwrap().install(|| write_at(&r, &srcs, &out)).unwrap();
            assert_eq!(out.stream_position().unwrap(), 6 + r.len());
            drop(out);
            let written = std::fs::read(&path).unwrap();
            assert!(
                written[..6] == *b"before" && written[6..] == want[..],
                "{threads} threads"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file opened to append is not written at offsets (each `pwrite` would go to
    /// its end): the ordered path appends the rope after what the file holds.
    #[test]
    fn a_file_opened_to_append_is_written_in_order() {
        let dir = std::env::temp_dir().join(format!("ptxld-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.ptx");
        std::fs::write(&path, b"kept\n").unwrap();
        let out = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        assert!(!writes_at_offsets(&out));
        assert!(writes_at_offsets(&File::create(dir.join("plain")).unwrap()));
        let text: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let srcs = [ModuleText {
            src: crate::write::rope::Text::Slice(&text),
            kept: &NOTHING_KEPT,
            pages: None,
        }];
        let mut r = Rope::new();
        for k in 0..3_000u32 {
            let lo = k * 29 % 90_000;
            r.push_src(0, lo, lo + 1_000);
            r.push_bytes(format!("<{k}>").as_bytes());
        }
        let want = r.to_vec(&srcs);
        assert!(segments(&r).len() > 1);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build();
        pool.unwrap()
            .install(|| r.write_to(&srcs, &mut &out, Some(&out)))
            .unwrap();
        drop(out);
        let written = std::fs::read(&path).unwrap();
        assert!(written[..5] == *b"kept\n" && written[5..] == want[..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An empty rope has no segment and writes nothing.
    #[test]
    fn an_empty_rope_has_no_segment() {
        assert!(segments(&Rope::new()).is_empty());
    }
}
