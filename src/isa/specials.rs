//! Whether a body may read a special register that needs more than the floor
//! (`%clock64`, `%lanemask_lt`, `%cluster_ctarank`): found without lexing, so that
//! a body lexed compactly (whose `%`-names leave no token) is lexed in full only
//! where it may.
//!
//! Producers name their registers `%r`, `%rd`, `%rs`, `%f`, `%fd`, `%h`, `%p` and a
//! number, and there is one in nearly every instruction: a byte-by-byte test of each
//! `%` would cost more than the compact lexing saves. So 32 bytes at a time (16
//! without AVX2) are tested for a `%`, then a lowercase letter other than `f` and
//! `h`, an `r` only before `e` (`%reserved_smem_*`) and a `p` only before `m`
//! (`%pm4`): every special register above the floor starts so, and almost no
//! producer's register does.
//! Each such place is then looked up in the table by its whole name.

use super::scan::may_be_special;
use super::table::table;
use crate::lex::is_name_byte;

/// Whether `bytes` has a `%`-name that is a special register needing more than the
/// floor. In a comment or a string too: the caller then reads the body in full,
/// which tells.
pub(crate) fn may_read_special(bytes: &[u8]) -> bool {
    let mut pos = 0;
    while let Some(at) = next_candidate(bytes, pos) {
        if above_floor(bytes, at) {
            return true;
        }
        pos = at + 1;
    }
    false
}

/// Whether the `%`-name at `at` is a special register above the floor.
fn above_floor(bytes: &[u8], at: usize) -> bool {
    let len = 1 + bytes[at + 1..]
        .iter()
        .take_while(|&&b| is_name_byte(b))
        .count();
    let name = &bytes[at..at + len];
    may_be_special(name) && table().named_above_floor(name).is_some()
}

/// Whether position `i` starts a candidate (the scalar definition the vector code
/// agrees with): a `%`, then a byte from `a` to DEL other than `f` and `h`, an `r`
/// only before `e` and a `p` only before `m`.
fn candidate(bytes: &[u8], i: usize) -> bool {
    let at = |k: usize| bytes.get(k).copied().unwrap_or(0);
    let (b, c) = (at(i + 1), at(i + 2));
    at(i) == b'%'
        && (b'a'..0x80).contains(&b)
        && !matches!(b, b'f' | b'h')
        && (b != b'r' || c == b'e')
        && (b != b'p' || c == b'm')
}

/// The first candidate at or after `pos`.
fn next_candidate(bytes: &[u8], pos: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    let pos = if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { next_candidate_avx2(bytes, pos) }
    } else {
        next_candidate_sse2(bytes, pos)
    };
    (pos..bytes.len()).find(|&i| candidate(bytes, i))
}

/// The loop of [`next_candidate`] at one vector width: `$width` bytes per step
/// with the given load, broadcast, compare and mask intrinsics; returns the first
/// candidate's position, or where a step no longer fits.
#[cfg(target_arch = "x86_64")]
macro_rules! candidate_loop {
    ($bytes:ident, $pos:ident, $width:literal, $vec:ty, $load:ident, $set1:ident, $eq:ident,
     $gt:ident, $and:ident, $andnot:ident, $or:ident, $movemask:ident) => {{
        use std::arch::x86_64::{$and, $andnot, $eq, $gt, $load, $movemask, $or, $set1};
        // SAFETY: the caller's CPU has the intrinsics' feature (SSE2 is in the
        // x86-64 baseline; AVX2 was detected); each load reads `$width` bytes at
        // `$pos`, `$pos + 1` or `$pos + 2`, all before `bytes.len()` (checked by the
        // loop), and unaligned loads are allowed.
        unsafe {
            let set = |b: u8| $set1(b as i8);
            let [pct, f, h, r, e, p, m, below_a] =
                [b'%', b'f', b'h', b'r', b'e', b'p', b'm', b'a' - 1].map(set);
            while $pos + $width + 2 <= $bytes.len() {
                let load = |k: usize| $load($bytes.as_ptr().add($pos + k) as *const $vec);
                let (v, b, c) = (load(0), load(1), load(2));
                // Bytes from 0x80 are negative: never above `a - 1`.
                let letter = $and($eq(v, pct), $gt(b, below_a));
                let register = $or(
                    $or($eq(b, f), $eq(b, h)),
                    $or($andnot($eq(c, e), $eq(b, r)), $andnot($eq(c, m), $eq(b, p))),
                );
                let mask = $movemask($andnot(register, letter)) as u32;
                if mask != 0 {
                    return $pos + mask.trailing_zeros() as usize;
                }
                $pos += $width;
            }
        }
        $pos
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn next_candidate_avx2(bytes: &[u8], mut pos: usize) -> usize {
    use std::arch::x86_64::__m256i;
    candidate_loop!(
        bytes,
        pos,
        32,
        __m256i,
        _mm256_loadu_si256,
        _mm256_set1_epi8,
        _mm256_cmpeq_epi8,
        _mm256_cmpgt_epi8,
        _mm256_and_si256,
        _mm256_andnot_si256,
        _mm256_or_si256,
        _mm256_movemask_epi8
    )
}

/// The first candidate at or after `pos`, sixteen bytes at a time (SSE2 is part of
/// every x86-64 CPU), or where the last few bytes start, which the caller tests one
/// by one.
#[cfg(target_arch = "x86_64")]
fn next_candidate_sse2(bytes: &[u8], mut pos: usize) -> usize {
    use std::arch::x86_64::__m128i;
    candidate_loop!(
        bytes,
        pos,
        16,
        __m128i,
        _mm_loadu_si128,
        _mm_set1_epi8,
        _mm_cmpeq_epi8,
        _mm_cmpgt_epi8,
        _mm_and_si128,
        _mm_andnot_si128,
        _mm_or_si128,
        _mm_movemask_epi8
    )
}

#[cfg(test)]
mod tests {
    use super::super::table::Need;
    use super::*;

    /// Every candidate `next` finds in `s`.
    fn candidates(s: &[u8], next: impl Fn(&[u8], usize) -> Option<usize>) -> Vec<usize> {
        let mut out = Vec::new();
        let mut pos = 0;
        while let Some(at) = next(s, pos) {
            out.push(at);
            pos = at + 1;
        }
        out
    }

    /// The vector scans (AVX2 where the CPU has it, and SSE2) find the same
    /// candidates as the byte test, at every alignment and near the end.
    #[test]
    fn the_vector_scan_agrees_with_the_byte_test() {
        let pieces: [&[u8]; 16] = [
            b"%r1", b"%rd2", b"%re", b"%pm", b"%p1", b"%tid", b"%f", b"%h", b"%a", b"%", b"x",
            b" ", b"%\x80", b"%z", b"%{", b"%`",
        ];
        let mut next = crate::lex::xorshift(7);
        for _ in 0..4000 {
            let mut s = Vec::new();
            let n = (next() % 24) as usize;
            for _ in 0..n {
                s.extend_from_slice(pieces[(next() % pieces.len() as u64) as usize]);
            }
            let found = candidates(&s, next_candidate);
            #[cfg(target_arch = "x86_64")]
            {
                let sse2 = |b: &[u8], pos: usize| {
                    let pos = next_candidate_sse2(b, pos);
                    (pos..b.len()).find(|&i| candidate(b, i))
                };
                assert_eq!(candidates(&s, sse2), found);
            }
            let expected: Vec<usize> = (0..s.len()).filter(|&i| candidate(&s, i)).collect();
            assert_eq!(found, expected, "{}", String::from_utf8_lossy(&s));
        }
    }

    #[test]
    fn special_registers_above_the_floor_are_found() {
        for yes in [
            "mov.u64 %rd1, %clock64;",
            "mov.u32 %r1, %lanemask_lt;",
            "mov.u32 %r1, %cluster_ctarank;",
            "mov.u32 %r1, %reserved_smem_offset_0;",
            "mov.u32 %r1, %pm4;",
            "mov.u64 %rd1, %globaltimer;",
            "mov.u32 %r1, %nclusterid.x;",
        ] {
            assert!(may_read_special(yes.as_bytes()), "{yes}");
        }
        for no in [
            "mov.u32 %r1, %tid.x;",
            "mov.u32 %r1, %laneid;",
            "mov.u32 %r1, %nctaid.y; add.s64 %rd1, %rd2, %rd3;",
            "mov.u32 %r1, %pm1; mov.u32 %r2, %envreg3; @%p1 bra $L;",
            "ld.param.u64 %rd1, [%ar0]; mov.u64 %stack, %frame;",
        ] {
            assert!(!may_read_special(no.as_bytes()), "{no}");
        }
    }

    /// Every special register above the floor starts as a candidate.
    #[test]
    fn every_special_register_above_the_floor_is_a_candidate() {
        let names = table().names();
        for name in names.filter(|n| n.starts_with(b"%")) {
            if table().named(name) != Some(Need::NONE) {
                assert!(candidate(name, 0), "{}", String::from_utf8_lossy(name));
            }
        }
    }
}
