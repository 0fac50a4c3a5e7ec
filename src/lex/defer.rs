//! Function bodies left out ([`super::Bodies::Deferred`]): each skipped to its
//! matching `}` outside comments and strings, found a vector of bytes at a time, and
//! lexed later by [`super::lex_body`].

use super::scan::find_newline;
use super::{Lexer, TokenKind};

/// The position of the first byte at or after `pos` that [`SKIP`] marks, or
/// `src.len()`. Thirty-two bytes at a time with AVX2 where the CPU has it, sixteen
/// with SSE2 (part of every x86-64 CPU): most of a body is skipped here.
#[cfg(target_arch = "x86_64")]
fn next_skip_byte(src: &[u8], pos: usize) -> usize {
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { next_skip_byte_avx2(src, pos) };
    }
    next_skip_byte_sse2(src, pos)
}

/// The loop of [`next_skip_byte`] at one vector width: `$width` bytes per step with
/// the given load, broadcast, compare, or and mask intrinsics, then `$rest` from
/// where a whole vector no longer fits.
#[cfg(target_arch = "x86_64")]
macro_rules! skip_loop {
    ($src:ident, $pos:ident, $width:literal, $vec:ty, $load:ident, $set1:ident, $eq:ident,
     $or:ident, $movemask:ident, $rest:ident) => {{
        use std::arch::x86_64::{$eq, $load, $movemask, $or, $set1};
        // SAFETY: the caller's CPU has the intrinsics' feature (SSE2 is in the x86-64
        // baseline; AVX2 was detected); each load reads `$width` bytes from `$pos`,
        // inside `src` (checked by the loop), and unaligned loads are allowed.
        unsafe {
            let [open, close, slash, quote, nul] =
                [b'{', b'}', b'/', b'"', 0].map(|b| $set1(b as i8));
            while $pos + $width <= $src.len() {
                let v = $load($src.as_ptr().add($pos) as *const $vec);
                let hits = $or(
                    $or($eq(v, open), $eq(v, close)),
                    $or($or($eq(v, slash), $eq(v, quote)), $eq(v, nul)),
                );
                let mask = $movemask(hits) as u32;
                if mask != 0 {
                    return $pos + mask.trailing_zeros() as usize;
                }
                $pos += $width;
            }
        }
        $rest($src, $pos)
    }};
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn next_skip_byte_avx2(src: &[u8], mut pos: usize) -> usize {
    use std::arch::x86_64::__m256i;
    skip_loop!(
        src,
        pos,
        32,
        __m256i,
        _mm256_loadu_si256,
        _mm256_set1_epi8,
        _mm256_cmpeq_epi8,
        _mm256_or_si256,
        _mm256_movemask_epi8,
        next_skip_byte_sse2
    )
}

#[cfg(target_arch = "x86_64")]
fn next_skip_byte_sse2(src: &[u8], mut pos: usize) -> usize {
    use std::arch::x86_64::__m128i;
    skip_loop!(
        src,
        pos,
        16,
        __m128i,
        _mm_loadu_si128,
        _mm_set1_epi8,
        _mm_cmpeq_epi8,
        _mm_or_si128,
        _mm_movemask_epi8,
        next_skip_byte_scalar
    )
}

#[cfg(not(target_arch = "x86_64"))]
fn next_skip_byte(src: &[u8], pos: usize) -> usize {
    next_skip_byte_scalar(src, pos)
}

fn next_skip_byte_scalar(src: &[u8], pos: usize) -> usize {
    src[pos..]
        .iter()
        .position(|&b| SKIP[b as usize] != 0)
        .map_or(src.len(), |i| pos + i)
}

/// The bytes that matter when skipping a body: braces, comment and string starts,
/// and NUL (where lexing stops).
static SKIP: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'{' as usize] = 1;
    t[b'}' as usize] = 1;
    t[b'/' as usize] = 1;
    t[b'"' as usize] = 1;
    t[0] = 1;
    t
};

impl Lexer<'_> {
    /// At the `{` of a function body: skips to after its matching `}` outside
    /// comments and strings, pushing only the two braces. Returns false, having
    /// consumed and pushed nothing, if the body never closes or has a NUL in it.
    pub(super) fn defer_body(&mut self) -> bool {
        let src = self.src;
        let lo = self.pos;
        let mut pos = lo + 1;
        let mut depth = 1u32;
        while pos < src.len() {
            pos = next_skip_byte(src, pos);
            let Some(&b) = src.get(pos) else { break };
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = lo + 1;
                        self.push(TokenKind::Punct, lo);
                        self.pos = pos + 1;
                        self.push(TokenKind::Punct, pos);
                        self.out.compacted.push(lo as u32);
                        return true;
                    }
                }
                b'/' if src.get(pos + 1) == Some(&b'/') => {
                    pos = find_newline(&src[pos..]).map_or(src.len(), |i| pos + i);
                    continue;
                }
                b'/' if src.get(pos + 1) == Some(&b'*') => {
                    match src[pos + 2..].windows(2).position(|w| w == b"*/") {
                        Some(i) => pos += 2 + i + 2,
                        None => return false,
                    }
                    continue;
                }
                // As [`Lexer::string`]: a string ends at its quote or, unterminated,
                // before the end of its line.
                b'"' => {
                    pos += 1;
                    while pos < src.len() && !matches!(src[pos], b'"' | b'\n') {
                        pos += if src[pos] == b'\\' { 2 } else { 1 };
                    }
                    if src.get(pos) != Some(&b'"') {
                        continue;
                    }
                }
                b'/' => {}
                _ => return false, // NUL: the lexer stops there.
            }
            pos += 1;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector scans that skip a body find the same byte as the byte loop, for
    /// each byte value at each position of runs around the vector widths.
    #[test]
    fn body_skip_scans_agree_with_the_byte_loop() {
        for b in 0..=255u8 {
            for len in [0usize, 1, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 100] {
                for at in 0..len {
                    let mut hay: Vec<u8> = (0..len)
                        .map(|i| b"ld.u32 %r1, [a+4];\n\t"[i % 20])
                        .collect();
                    hay[at] = b;
                    for pos in [0, 1, 3].into_iter().filter(|&p| p <= len) {
                        let want = next_skip_byte_scalar(&hay, pos);
                        assert_eq!(next_skip_byte(&hay, pos), want, "{hay:?} from {pos}");
                        #[cfg(target_arch = "x86_64")]
                        assert_eq!(next_skip_byte_sse2(&hay, pos), want, "{hay:?} from {pos}");
                    }
                }
            }
        }
    }
}
