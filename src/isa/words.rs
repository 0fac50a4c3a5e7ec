//! Opcode words already classified, found without hashing: a link repeats a few
//! hundred words over millions of instructions, and the recorder sees every
//! instruction the parse lexes (`scan.rs`, [`super::Recorder::compact_body`]).
//!
//! An instruction's *segment* is its bytes up to the first whitespace (or control
//! or non-ASCII byte): `ld.global.nc.v4.f32` of `ld.global.nc.v4.f32 %f1, [%rd1];`,
//! `ret;` of `ret;`. Its opcode word ([`super::scan::word_end`]) lies within it and
//! depends on nothing else, except that a modifier may follow whitespace (`bar.warp
//! .sync`): a segment is used only where the first byte after its whitespace is in
//! reach and is not a `.`. A segment of up to 31 bytes is read with two vector
//! compares and looked up in a direct-mapped table by its zero-padded bytes; the
//! table keeps what each segment's word is, for every module a thread parses.
//! Anything else is left to the caller's exact path (`word_end` and a hash map).

use rustc_hash::FxHashMap;

use super::table::{table, Lookup};

/// Bytes a segment is read from.
const WIDTH: usize = 32;

/// Slots of the table: a power of two, several times the distinct words of a
/// large link.
const SLOTS: usize = 4096;

/// A short segment: its bytes, zero-padded (its length is where they end: a
/// segment has no NUL).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Segment {
    bytes: [u64; 4],
}

impl Segment {
    /// The segment of the instruction whose opcode starts at `lo`, if it is short
    /// and the byte after its whitespace is in reach and no `.`.
    #[cfg(target_arch = "x86_64")]
    #[inline]
    pub fn at(src: &[u8], lo: usize) -> Option<Segment> {
        use std::arch::x86_64::{
            __m128i, _mm_and_si128, _mm_cmpgt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
            _mm_set1_epi8, _mm_storeu_si128,
        };
        let chunk: &[u8; WIDTH] = src.get(lo..lo + WIDTH)?.try_into().ok()?;
        // SAFETY: SSE2 is in the x86-64 baseline; the loads read the chunk's two
        // halves and `KEEP` at `32 - len`, inside its 64 bytes (`len < 32`); the
        // stores write the two halves of `bytes`. Unaligned accesses are allowed.
        unsafe {
            let load = |p: *const u8| _mm_loadu_si128(p as *const __m128i);
            let (a, b) = (load(chunk.as_ptr()), load(chunk.as_ptr().add(16)));
            // Below `!` as signed bytes: whitespace, control and non-ASCII bytes.
            let stop =
                |v: __m128i| _mm_movemask_epi8(_mm_cmpgt_epi8(_mm_set1_epi8(0x21), v)) as u32;
            let stops = stop(a) | stop(b) << 16;
            let len = stops.trailing_zeros() as usize;
            // The first byte after the stop bytes that follow the segment.
            let after = (!stops & (u32::MAX << len.min(31))).trailing_zeros() as usize;
            if len >= WIDTH || after >= WIDTH || chunk[after] == b'.' {
                return None;
            }
            let keep = KEEP.as_ptr().add(WIDTH - len);
            let mut bytes = [0u64; 4];
            let out = bytes.as_mut_ptr() as *mut __m128i;
            _mm_storeu_si128(out, _mm_and_si128(a, load(keep)));
            _mm_storeu_si128(out.add(1), _mm_and_si128(b, load(keep.add(16))));
            Some(Segment { bytes })
        }
    }

    /// Elsewhere the caller takes its exact path.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn at(_: &[u8], _: usize) -> Option<Segment> {
        None
    }

    fn slot(&self) -> usize {
        let mixed = self.bytes[0]
            ^ self.bytes[1].rotate_left(21)
            ^ self.bytes[2].rotate_left(42)
            ^ self.bytes[3].rotate_left(11);
        (mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % SLOTS
    }

    fn is_empty(&self) -> bool {
        self.bytes[0] == 0
    }
}

/// `WIDTH` bytes kept, then `WIDTH` dropped: the mask of a segment of `len` bytes
/// starts at `WIDTH - len`.
static KEEP: [u8; 2 * WIDTH] = {
    let mut k = [0u8; 2 * WIDTH];
    let mut i = 0;
    while i < WIDTH {
        k[i] = 0xff;
        i += 1;
    }
    k
};

/// What a segment's word is to the recorder.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Class {
    /// Nothing beyond the base ISA: never recorded.
    Floor,
    /// A texture fetch: its body is read in full.
    Texture,
    /// Needs more than the floor, or unknown to the table (what the table says):
    /// recorded once per module.
    Other(Lookup),
}

/// What [`WordTable::probe`] found.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Probe {
    Floor,
    Texture,
    /// An [`Class::Other`] word recorded in this module already.
    Seen,
    /// An [`Class::Other`] word not yet recorded in this module: record it, then
    /// [`WordTable::mark`] its slot.
    Again(usize, Lookup),
    /// A word the table does not have, or has not seen in this module: record it,
    /// then [`WordTable::set`] its slot.
    New(usize),
}

#[derive(Clone, Copy)]
struct Slot {
    word: Segment,
    class: Class,
    /// The module that recorded it last.
    stamp: u32,
}

/// Short words and what they are, by the instruction table: the same for every
/// module, so kept by each thread from module to module; a slot also says which
/// module recorded its word last.
pub(super) struct WordTable {
    slots: Vec<Slot>,
    /// This module's number (slots start at 0, modules at 1).
    stamp: u32,
    /// What the instruction table says of every word looked up on this thread:
    /// words whose segments share a slot would otherwise be looked up again and
    /// again, at a thousand instructions each.
    lookups: FxHashMap<Box<[u8]>, Lookup>,
}

thread_local! {
    static TABLE: std::cell::Cell<Option<Box<WordTable>>> = const { std::cell::Cell::new(None) };
}

impl WordTable {
    /// This thread's table, for a new module.
    pub fn take() -> Box<WordTable> {
        let mut t = TABLE.take().unwrap_or_else(|| {
            let empty = Slot {
                word: Segment::default(),
                class: Class::Floor,
                stamp: 0,
            };
            Box::new(WordTable {
                slots: vec![empty; SLOTS],
                stamp: 0,
                lookups: FxHashMap::default(),
            })
        });
        t.stamp = t.stamp.wrapping_add(1);
        if t.stamp == 0 {
            // After 2^32 modules: no slot may look recorded by this one.
            t.slots.iter_mut().for_each(|s| s.stamp = 0);
            t.stamp = 1;
        }
        t
    }

    /// Hands the table back to this thread, for its next module.
    pub fn give_back(self: Box<Self>) {
        TABLE.set(Some(self));
    }

    #[inline]
    pub fn probe(&self, word: &Segment) -> Probe {
        let slot = word.slot();
        let s = &self.slots[slot];
        if s.word != *word || s.word.is_empty() {
            return Probe::New(slot);
        }
        match s.class {
            Class::Floor => Probe::Floor,
            Class::Texture => Probe::Texture,
            Class::Other(_) if s.stamp == self.stamp => Probe::Seen,
            Class::Other(lookup) => Probe::Again(slot, lookup),
        }
    }

    /// What the instruction table says of `word`.
    pub fn lookup(&mut self, word: &[u8]) -> Lookup {
        if let Some(&found) = self.lookups.get(word) {
            return found;
        }
        let found = table().lookup(word);
        self.lookups.insert(word.into(), found);
        found
    }

    /// Marks the word in `slot` recorded in this module.
    pub fn mark(&mut self, slot: usize) {
        self.slots[slot].stamp = self.stamp;
    }

    /// Puts `word` (recorded in this module) into `slot`, replacing what was there.
    pub fn set(&mut self, slot: usize, word: Segment, class: Class) {
        self.slots[slot] = Slot {
            word,
            class,
            stamp: self.stamp,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::scan::word_end;
    use super::*;

    /// The segment's text, where one is read at the start of `case`.
    fn segment(case: &str) -> Option<String> {
        let src = format!("{case}{}", " ".repeat(WIDTH));
        let seg = Segment::at(src.as_bytes(), 0)?;
        let bytes: Vec<u8> = seg.bytes.iter().flat_map(|w| w.to_le_bytes()).collect();
        let n = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..n]).into_owned())
    }

    /// Two instructions with one segment have one word, which `word_end` finds
    /// within the segment.
    #[test]
    fn a_segment_holds_its_word() {
        let cases = [
            "ld.global.nc.v4.f32 %f1, [%rd1];",
            "ld.global.nc.v4.f32 \t%f1, [%rd1];",
            "ret;",
            "ret;\n\tbra $L;",
            "bar.warp .sync 0;",
            "bar.warp \t .sync 0;",
            "bar.warp %r1;",
            "bar.sync 0;",
            "mov.f32 .5;",
            "add..s32 %r1;",
            "add.s32. %r1;",
            "foo::bar %r1;",
            "cp.async.bulk.shared::cluster.global [a], [b];",
            "ld.global.L2::128B.u32 %r1, [%rd1];",
            "mov.u32\t\t%r1, 1;",
            "mov.u32\n.reg",
            "call(%r1), f;",
            "st.global.v4.f32 [%rd1], {%f1, %f2, %f3, %f4};",
            "mov.b64 {%r1,%r2}, %rd1;",
            "a23456789012345678901234567890;",
            "a234567890123456789012345678901;",
            "a2345678901234567890123456789 \t                .x",
            "mov\u{e9}.u32 %r1;",
        ];
        let mut words: std::collections::HashMap<String, String> = Default::default();
        for case in cases {
            let Some(seg) = segment(case) else { continue };
            assert!(case.starts_with(&seg), "{case}");
            let src = format!("{case}{}", " ".repeat(WIDTH));
            let word = src[..word_end(src.as_bytes(), 0)].to_string();
            assert!(word.len() <= seg.len(), "{case}: {word} beyond {seg}");
            let before = words.insert(seg.clone(), word.clone());
            assert!(before.is_none_or(|w| w == word), "{case}");
        }
        // Modifiers after whitespace, and long segments, are left to the exact path.
        for case in [
            "bar.warp .sync 0;",
            "bar.warp \t .sync 0;",
            "mov.f32 .5;",
            cases[20],
        ] {
            assert_eq!(segment(case), None, "{case}");
        }
        // What producers write is read here (an instruction and the next one).
        for case in [cases[0], cases[1], cases[3]] {
            assert!(segment(case).is_some(), "{case}");
        }
    }

    #[test]
    fn the_table_finds_what_was_added_in_its_module() {
        let src = format!(
            "add.s32 %r1; add.s64 %r2; ld.global.u32 %r3;{}",
            " ".repeat(40)
        );
        let at = |i: usize| Segment::at(src.as_bytes(), i).unwrap();
        let mut t = WordTable::take();
        let Probe::New(a) = t.probe(&at(0)) else {
            panic!("a new table has no word")
        };
        t.set(a, at(0), Class::Floor);
        let Probe::New(b) = t.probe(&at(13)) else {
            panic!("another word")
        };
        let need = Lookup::Known(super::super::Need::NONE);
        t.set(b, at(13), Class::Other(need));
        let Probe::New(c) = t.probe(&at(26)) else {
            panic!("another word")
        };
        t.set(c, at(26), Class::Texture);
        assert_eq!(t.probe(&at(0)), Probe::Floor);
        assert_eq!(t.probe(&at(13)), Probe::Seen);
        assert_eq!(t.probe(&at(26)), Probe::Texture);
        t.give_back();
        // The next module finds the classes, but records its own uses.
        let t = WordTable::take();
        assert_eq!(t.probe(&at(0)), Probe::Floor);
        assert_eq!(t.probe(&at(13)), Probe::Again(b, need));
        assert_eq!(t.probe(&at(26)), Probe::Texture);
    }
}
