//! The merged module as a list of byte ranges, written without assembling it.
//!
//! Almost every output byte is an input byte: the writer records *where* each run of
//! output comes from (a range of an input file, or a few bytes of new text such as a
//! renamed identifier) instead of copying it. The output file is then written with
//! vectored writes straight from the mapped inputs, so the linker never holds a
//! second copy of the program in memory.

use std::io::{self, IoSlice, Write};

/// Pieces whose source is [`Rope::arena`] rather than an input module.
const ARENA: u32 = u32::MAX;

/// How many slices one `writev` call gets (Linux's `IOV_MAX` is 1024).
const SLICES_PER_WRITE: usize = 1024;

/// One run of output bytes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Piece {
    /// The module whose source holds the bytes, or [`ARENA`].
    src: u32,
    /// Length in bytes.
    len: u32,
    /// Offset of the first byte in that source.
    lo: u64,
}

/// The output as pieces of the input modules' sources and of new text.
#[derive(Debug, Default)]
pub struct Rope {
    pieces: Vec<Piece>,
    /// New text (renamed identifiers, rendered header, separators).
    arena: Vec<u8>,
    len: u64,
}

impl Rope {
    /// An empty output.
    pub fn new() -> Rope {
        Rope::default()
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
        debug_assert!(module != ARENA && lo <= hi);
        self.push(module, u64::from(lo), hi - lo);
    }

    /// Appends new text.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        // A single piece is at most 4 GiB - 1; new text never comes close (names,
        // numbers, the header), but split rather than truncate.
        for chunk in bytes.chunks(u32::MAX as usize) {
            let lo = self.arena.len() as u64;
            self.arena.extend_from_slice(chunk);
            self.push(ARENA, lo, chunk.len() as u32);
        }
    }

    fn push(&mut self, src: u32, lo: u64, len: u32) {
        if len == 0 {
            return;
        }
        self.len += u64::from(len);
        // Consecutive ranges of one source are one piece (most items are spliced
        // from a single contiguous span).
        if let Some(last) = self.pieces.last_mut() {
            if last.src == src && last.lo + u64::from(last.len) == lo {
                if let Some(n) = last.len.checked_add(len) {
                    last.len = n;
                    return;
                }
            }
        }
        self.pieces.push(Piece { src, len, lo });
    }

    fn slice<'a>(&'a self, p: &Piece, srcs: &[&'a [u8]]) -> &'a [u8] {
        let bytes = if p.src == ARENA {
            &self.arena[..]
        } else {
            srcs[p.src as usize]
        };
        &bytes[p.lo as usize..p.lo as usize + p.len as usize]
    }

    /// The output as one buffer (for containers and in-memory links). `srcs[m]` is
    /// the source of module `m`.
    pub fn to_vec(&self, srcs: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len as usize);
        for p in &self.pieces {
            out.extend_from_slice(self.slice(p, srcs));
        }
        out
    }

    /// Writes the output to `w` with vectored writes, straight from `srcs`.
    pub fn write_to(&self, srcs: &[&[u8]], w: &mut dyn Write) -> io::Result<()> {
        let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(SLICES_PER_WRITE);
        for batch in self.pieces.chunks(SLICES_PER_WRITE) {
            slices.clear();
            slices.extend(batch.iter().map(|p| IoSlice::new(self.slice(p, srcs))));
            write_all_vectored(w, &mut slices)?;
        }
        w.flush()
    }
}

/// `Write::write_all_vectored` is not stable yet: the same loop over `writev`.
fn write_all_vectored(w: &mut dyn Write, mut bufs: &mut [IoSlice<'_>]) -> io::Result<()> {
    IoSlice::advance_slices(&mut bufs, 0);
    while !bufs.is_empty() {
        match w.write_vectored(bufs) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "failed to write the whole output",
                ))
            }
            Ok(n) => IoSlice::advance_slices(&mut bufs, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let srcs = [a, b];
        let want = b"hello big 23world".to_vec();
        assert_eq!(r.to_vec(&srcs), want);
        assert_eq!(r.len(), want.len() as u64);
        let mut out = Vec::new();
        r.write_to(&srcs, &mut out).unwrap();
        assert_eq!(out, want);
    }

    #[test]
    fn more_pieces_than_one_writev_takes() {
        let src: &[u8] = b"ab";
        let mut r = Rope::new();
        for i in 0..3000 {
            r.push_src(0, i % 2, i % 2 + 1);
            r.push_bytes(b",");
        }
        let mut out = Vec::new();
        r.write_to(&[src], &mut out).unwrap();
        assert_eq!(out, r.to_vec(&[src]));
        assert_eq!(out.len(), 6000);
    }
}
