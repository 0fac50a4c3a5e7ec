//! Finds, sixteen bytes at a time, the next byte of an instruction's operands that
//! the compact lexer has to look at (`compact.rs`, `Lexer::operands`).
//!
//! Most operand bytes are skipped without effect: whitespace, the punctuation of
//! addresses and lists, `%`-names and `.`-modifiers. Deciding that byte by byte costs
//! a hard-to-predict branch per byte, and that branch was the largest single cost of
//! linking (a `perf annotate` of the operand loop). Here each byte is classified with
//! vector table lookups instead, and the loop only sees the bytes that matter: the
//! start of an identifier or a number, `;`, braces, `/`, and anything unusual.
//!
//! A byte is skipped exactly when the byte-by-byte loop would skip it with no effect,
//! judging only from it and its two neighbours:
//! - whitespace and the punctuation `, [ ] + - ( ) ! * | & ^ ~ < > = ? @`;
//! - `%` followed by a name character (a `%`-name begins);
//! - `.` followed by a name character that is not a digit (a modifier begins);
//! - a name character after a name character, `%` or `.` (the middle of a name).
//!
//! The last rule assumes the loop is not at the start of a token; the caller keeps to
//! that by stepping byte by byte while the byte before is one of those three.

/// Bytes always skipped: whitespace (as the lexer's `WS` class) and the punctuation
/// the operand loop passes over.
const fn is_plain(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | 0x0b
            | 0x0c
            | b','
            | b'['
            | b']'
            | b'+'
            | b'-'
            | b'('
            | b')'
            | b'!'
            | b'*'
            | b'|'
            | b'&'
            | b'^'
            | b'~'
            | b'<'
            | b'>'
            | b'='
            | b'?'
            | b'@'
    )
}

/// Name characters (the lexer's `FOLLOW` class).
const fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Lookup tables for a set of ASCII bytes: `b` is in the set exactly when
/// `lo[b & 15] & hi[b >> 4] != 0` (one bit per high nibble 0..7; bytes from 0x80 have
/// no bit, so they are never in it).
const fn nibble_tables(set: Set) -> ([u8; 16], [u8; 16]) {
    let (mut lo, mut hi) = ([0u8; 16], [0u8; 16]);
    let mut h = 0;
    while h < 8 {
        hi[h] = 1 << h;
        let mut l = 0;
        while l < 16 {
            if set.contains((h << 4 | l) as u8) {
                lo[l] |= 1 << h;
            }
            l += 1;
        }
        h += 1;
    }
    (lo, hi)
}

/// The byte sets the vector code looks up.
#[derive(Clone, Copy)]
enum Set {
    Plain,
    Name,
}

impl Set {
    const fn contains(self, b: u8) -> bool {
        match self {
            Set::Plain => is_plain(b),
            Set::Name => is_name(b),
        }
    }
}

const PLAIN: ([u8; 16], [u8; 16]) = nibble_tables(Set::Plain);
const NAME: ([u8; 16], [u8; 16]) = nibble_tables(Set::Name);

/// Whether position `i` of `src` is skipped, by the rules above (the scalar
/// definition the vector code must agree with; `0 < i < src.len() - 1`).
#[cfg(test)]
fn skipped(src: &[u8], i: usize) -> bool {
    let (prev, b, next) = (src[i - 1], src[i], src[i + 1]);
    is_plain(b)
        || b == b'%' && is_name(next)
        || b == b'.' && is_name(next) && !next.is_ascii_digit()
        || is_name(b) && (is_name(prev) || prev == b'%' || prev == b'.')
}

/// The first position at or after `pos` that is not skipped, or `pos` itself where
/// there are not sixteen bytes around it to look at (the caller then steps byte by
/// byte). `pos` must be at least 1.
pub(super) fn next_event(src: &[u8], pos: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("ssse3") {
            // SAFETY: the CPU has SSSE3 (checked just above).
            return unsafe { next_event_ssse3(src, pos) };
        }
    }
    let _ = src;
    pos
}

/// Bytes `pos - 1 .. pos + 15` are loaded at a time; positions `pos .. pos + 14` are
/// decided (each needs its neighbours).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn next_event_ssse3(src: &[u8], mut pos: usize) -> usize {
    use std::arch::x86_64::*;
    debug_assert!(pos >= 1);
    let table = |t: [u8; 16]| _mm_loadu_si128(t.as_ptr() as *const __m128i);
    let (plain_lo, plain_hi) = (table(PLAIN.0), table(PLAIN.1));
    let (name_lo, name_hi) = (table(NAME.0), table(NAME.1));
    let low_nibble = _mm_set1_epi8(0x0f);
    let zero = _mm_setzero_si128();
    let [percent, dot] = [b'%', b'.'].map(|b| _mm_set1_epi8(b as i8));
    // Digits: `b - '0' < 10` as a signed compare after moving the range to -128.
    let digit_bias = _mm_set1_epi8((0x80u8.wrapping_sub(b'0')) as i8);
    let digit_limit = _mm_set1_epi8((0x80u8 + 10) as i8);
    while pos - 1 + 16 <= src.len() {
        // SAFETY: bytes `pos - 1 .. pos + 15` are inside `src` (loop condition).
        let v = _mm_loadu_si128(src.as_ptr().add(pos - 1) as *const __m128i);
        let lo = _mm_and_si128(v, low_nibble);
        let hi = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
        let member = |tlo: __m128i, thi: __m128i| {
            let t = _mm_and_si128(_mm_shuffle_epi8(tlo, lo), _mm_shuffle_epi8(thi, hi));
            !(_mm_movemask_epi8(_mm_cmpeq_epi8(t, zero)) as u32) & 0xffff
        };
        let plain = member(plain_lo, plain_hi);
        let name = member(name_lo, name_hi);
        let pct = _mm_movemask_epi8(_mm_cmpeq_epi8(v, percent)) as u32;
        let dots = _mm_movemask_epi8(_mm_cmpeq_epi8(v, dot)) as u32;
        let digit =
            _mm_movemask_epi8(_mm_cmplt_epi8(_mm_add_epi8(v, digit_bias), digit_limit)) as u32;
        // Bit k is loaded byte k, i.e. position pos - 1 + k.
        let next_name = name >> 1;
        let next_digit = digit >> 1;
        let after_name = (name | pct | dots) << 1;
        let skip =
            plain | (pct & next_name) | (dots & next_name & !next_digit) | (name & after_name);
        // Positions pos .. pos + 14: bits 1 ..= 14.
        let events = !skip & 0x7ffe;
        if events != 0 {
            return pos - 1 + events.trailing_zeros() as usize;
        }
        pos += 14;
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector scan stops exactly at the first position the scalar rules do not
    /// skip, for every start in texts made of the interesting bytes.
    #[test]
    fn vector_scan_agrees_with_the_rules() {
        let alphabet = b"aZ_$09%.;,[]{}/ \t\n:\"+-!@x\x80\x00";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut checked = 0;
        for round in 0..4000 {
            let len = 2 + (rand() % 80) as usize;
            // Mostly skippable text, so that scans run over several blocks.
            let src: Vec<u8> = (0..len)
                .map(|_| {
                    let r = rand();
                    if round % 2 == 0 && r % 4 != 0 {
                        b" %r1.u32,[+]"[(r >> 8) as usize % 12]
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            for pos in 1..len - 1 {
                let got = next_event(&src, pos);
                assert!(got >= pos, "{src:?} from {pos}: {got}");
                for i in pos..got {
                    assert!(skipped(&src, i), "{src:?} from {pos}: {i} is not skipped");
                }
                if got < len - 1 && got + 16 <= len {
                    assert!(!skipped(&src, got), "{src:?} from {pos}: stopped at {got}");
                }
                checked += 1;
            }
        }
        assert!(checked > 100_000);
    }
}
