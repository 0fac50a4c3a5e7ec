//! Byte searches sixteen bytes at a time, for the runs the lexer passes over whole:
//! the whitespace that aligns a trailing comment (LLVM pads `// -- End function`
//! with forty spaces), a line comment's text, and the check that a comment or
//! string is ASCII. A byte loop costs a compare and a branch per byte on these runs
//! (`callgrind` of a link: the whitespace loop alone was 3% of all instructions).
//!
//! SSE2 is part of every x86-64 CPU, so no detection is needed; other targets use
//! the byte loops, which give the same answers (the tests compare them).

/// The lexer's whitespace class (space and 0x09..=0x0d; the vector code below
/// tests the same bytes).
#[inline]
fn is_ws(b: u8) -> bool {
    super::class::is(b, super::class::WS)
}

/// The first position at or after `pos` whose byte is not whitespace, or `src.len()`.
#[inline]
pub(super) fn skip_whitespace(src: &[u8], pos: usize) -> usize {
    // Most runs are one or two bytes (`\n\t`): the vector is for the long ones.
    match src.get(pos) {
        Some(&b) if is_ws(b) => {}
        _ => return pos,
    }
    match src.get(pos + 1) {
        Some(&b) if is_ws(b) => vector::skip_whitespace(src, pos + 2),
        Some(_) => pos + 1,
        None => src.len(),
    }
}

/// The index of the first `\n` in `hay`.
#[inline]
pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
    vector::find_newline(hay)
}

/// The index of the first byte of `hay` that is not ASCII.
#[inline]
pub(super) fn first_non_ascii(hay: &[u8]) -> Option<usize> {
    vector::first_non_ascii(hay)
}

#[cfg(target_arch = "x86_64")]
mod vector {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8, _mm_sub_epi8,
    };

    /// Calls `mask` on each sixteen-byte block of `hay` from `pos` and returns the
    /// position of the first byte whose bit is set, finishing with `scalar` on the
    /// last (shorter) block.
    #[inline(always)]
    fn first_set(
        hay: &[u8],
        mut pos: usize,
        mask: impl Fn(__m128i) -> u32,
        scalar: impl Fn(u8) -> bool,
    ) -> Option<usize> {
        while pos + 16 <= hay.len() {
            // SAFETY: SSE2 is in the x86-64 baseline; the load reads the sixteen
            // bytes `pos..pos + 16`, inside `hay`, and may be unaligned.
            let v = unsafe { _mm_loadu_si128(hay.as_ptr().add(pos) as *const __m128i) };
            let m = mask(v);
            if m != 0 {
                return Some(pos + m.trailing_zeros() as usize);
            }
            pos += 16;
        }
        hay[pos..].iter().position(|&b| scalar(b)).map(|i| pos + i)
    }

    pub(super) fn skip_whitespace(src: &[u8], pos: usize) -> usize {
        let not_ws = |v| {
            // SAFETY: SSE2 arithmetic on registers only.
            unsafe {
                let space = _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8));
                let t = _mm_sub_epi8(v, _mm_set1_epi8(b'\t' as i8));
                let ctl = _mm_cmpeq_epi8(_mm_min_epu8(t, _mm_set1_epi8(4)), t);
                !(_mm_movemask_epi8(_mm_or_si128(space, ctl)) as u32) & 0xffff
            }
        };
        first_set(src, pos, not_ws, |b| !super::is_ws(b)).unwrap_or(src.len())
    }

    pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
        let newline = |v| {
            // SAFETY: SSE2 arithmetic on registers only.
            unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8))) as u32 }
        };
        first_set(hay, 0, newline, |b| b == b'\n')
    }

    pub(super) fn first_non_ascii(hay: &[u8]) -> Option<usize> {
        // SAFETY: SSE2 on registers only; the mask is the bytes' high bits.
        let high = |v| unsafe { _mm_movemask_epi8(v) as u32 };
        first_set(hay, 0, high, |b| !b.is_ascii())
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod vector {
    pub(super) fn skip_whitespace(src: &[u8], pos: usize) -> usize {
        super::scalar::skip_whitespace(src, pos)
    }

    pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
        super::scalar::find_newline(hay)
    }

    pub(super) fn first_non_ascii(hay: &[u8]) -> Option<usize> {
        super::scalar::first_non_ascii(hay)
    }
}

/// The byte loops: the definition the vector code must agree with.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod scalar {
    pub(super) fn skip_whitespace(src: &[u8], pos: usize) -> usize {
        src[pos..]
            .iter()
            .position(|&b| !super::is_ws(b))
            .map_or(src.len(), |i| pos + i)
    }

    pub(super) fn find_newline(hay: &[u8]) -> Option<usize> {
        hay.iter().position(|&b| b == b'\n')
    }

    pub(super) fn first_non_ascii(hay: &[u8]) -> Option<usize> {
        hay.iter().position(|b| !b.is_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value at every position of runs longer and shorter than a vector.
    #[test]
    fn vector_searches_agree_with_the_byte_loops() {
        for b in 0..=255u8 {
            for len in [0usize, 1, 2, 3, 15, 16, 17, 31, 32, 33, 40, 64] {
                for at in 0..=len {
                    // `b` at `at` (if inside) in whitespace of every kind, and in
                    // ASCII text without a newline; then `x`.
                    let put = |filler: &[u8]| {
                        let mut hay: Vec<u8> = (0..len).map(|i| filler[i % filler.len()]).collect();
                        if at < len {
                            hay[at] = b;
                        }
                        hay.push(b'x');
                        hay
                    };
                    let spaces = put(b"  \t\n\r\x0b\x0c");
                    for pos in [0, 1, 2].into_iter().filter(|&p| p <= spaces.len()) {
                        assert_eq!(
                            skip_whitespace(&spaces, pos),
                            scalar::skip_whitespace(&spaces, pos),
                            "{spaces:?} from {pos}"
                        );
                    }
                    let text = put(b"ld.u32 %r1, [a];");
                    assert_eq!(find_newline(&text), scalar::find_newline(&text), "{text:?}");
                    assert_eq!(
                        first_non_ascii(&text),
                        scalar::first_non_ascii(&text),
                        "{text:?}"
                    );
                }
            }
        }
    }
}
