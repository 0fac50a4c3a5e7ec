//! Byte classes and the shapes of directives and plain decimals, shared by the full
//! lexer and the compact one.

// Byte classes, looked up through one table so the hot loop does one load per byte.
pub(super) const WS: u8 = 1; // whitespace
pub(super) const ID_START: u8 = 2; // [a-zA-Z]
pub(super) const ID_PREFIX: u8 = 4; // [_$%]
pub(super) const FOLLOW: u8 = 8; // [a-zA-Z0-9_$]
pub(super) const DIGIT: u8 = 16; // [0-9]
pub(super) const HEX: u8 = 32; // [0-9a-fA-F]

const fn class_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut c = 0;
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) {
            c |= WS;
        }
        if b.is_ascii_alphabetic() {
            c |= ID_START | FOLLOW;
        }
        if matches!(b, b'_' | b'$' | b'%') {
            c |= ID_PREFIX;
        }
        if matches!(b, b'_' | b'$') || b.is_ascii_digit() {
            c |= FOLLOW;
        }
        if b.is_ascii_digit() {
            c |= DIGIT;
        }
        if b.is_ascii_hexdigit() {
            c |= HEX;
        }
        t[i] = c;
        i += 1;
    }
    t
}

pub(super) static CLASS: [u8; 256] = class_table();

#[inline]
pub(super) fn is(b: u8, class: u8) -> bool {
    CLASS[b as usize] & class != 0
}

/// A name character, `[a-zA-Z0-9_$]` (the lexer's `FOLLOW` class).
#[inline]
pub(crate) fn is_name_byte(b: u8) -> bool {
    is(b, FOLLOW)
}

/// The end of the directive or modifier at `p` (`.u32`, `.param`; a `.` there): a
/// `.` followed by name characters, the first not a digit. `None` for anything else
/// (`.5` is a number, a lone `.` punctuation).
#[inline(always)]
pub(super) fn modifier_end(src: &[u8], p: usize) -> Option<usize> {
    if src[p] != b'.' {
        return None;
    }
    let next = *src.get(p + 1)?;
    if !is(next, FOLLOW) || is(next, DIGIT) {
        return None;
    }
    let mut end = p + 2;
    while end < src.len() && is(src[end], FOLLOW) {
        end += 1;
    }
    Some(end)
}

/// The end of the plain decimal literal at `p` (a digit there): `0`, or digits not
/// starting with `0`, followed by a byte no literal continues with. `number` lexes
/// exactly these as an `Int` without a diagnostic; `None` for any other literal
/// (octal-looking, suffixed, fractional, hexadecimal, malformed).
#[inline(always)]
pub(super) fn plain_decimal_end(src: &[u8], p: usize) -> Option<usize> {
    let mut end = p + 1;
    while end < src.len() && is(src[end], DIGIT) {
        end += 1;
    }
    let ends = src.get(end).is_none_or(|&b| !is(b, FOLLOW) && b != b'.');
    (ends && (src[p] != b'0' || end == p + 1)).then_some(end)
}

/// True for a state-space directive (`.reg`, `.global`, ...): a declaration in a
/// body starts with one. The lexer's own list, so that it needs nothing of the IR;
/// `ir::StateSpace::from_directive` takes the same ones (a test there says so).
#[inline]
pub(crate) fn is_state_space(text: &[u8]) -> bool {
    matches!(
        text,
        b".reg" | b".sreg" | b".const" | b".global" | b".local" | b".param" | b".shared" | b".tex"
    )
}
