//! Shapes the compact lexer passes over without making tokens: plain register
//! declarations, and literals that lex as one token without a diagnostic.

use super::class::{modifier_end, plain_decimal_end, CLASS, DIGIT, FOLLOW, ID_START, WS};
use super::defs::Def;
use super::scan::skip_whitespace;

/// At a `.reg` statement in block `scope`: the position after its `;` if it declares `%`-named
/// registers only and in the plain shape every producer writes, `.reg .type{ .type}
/// %name[<N>]{, %name[<N>]};` (ASCII, whitespace between the directives, no comment,
/// no `.align` or initializer), which lexes without a diagnostic and which the body
/// walk reads without one; `None` for anything else, lexed in full as before. Such a
/// declaration is a tenth of a body's statements. The names it declares go to
/// `defs`, for the clashes the walk cannot see (`defs.rs`).
pub(super) fn register_declaration_end(
    src: &[u8],
    p: usize,
    scope: u32,
    defs: &mut Vec<Def>,
) -> Option<usize> {
    let before = defs.len();
    let end = register_declaration(src, p, scope, defs);
    if end.is_none() {
        defs.truncate(before);
    }
    end
}

/// [`register_declaration_end`], leaving names in `defs` where it gives up.
fn register_declaration(src: &[u8], p: usize, scope: u32, defs: &mut Vec<Def>) -> Option<usize> {
    let class = |i: usize| src.get(i).map_or(0, |&b| CLASS[b as usize]);
    let skip_ws = |i: usize| skip_whitespace(src, i);
    if !src[p..].starts_with(b".reg") || class(p + 4) & WS == 0 {
        return None;
    }
    // The type directives, each followed by whitespace: a vector width and a type,
    // or a type (two types, or a second `.reg`, are the walk's to report).
    let mut i = skip_ws(p + 4);
    let mut types = 0;
    let mut vector = false;
    while src.get(i) == Some(&b'.') {
        let directive = i;
        i = modifier_end(src, i)?;
        if class(i) & WS == 0 {
            return None;
        }
        vector |= types == 0 && matches!(&src[directive..i], b".v2" | b".v4" | b".v8");
        i = skip_ws(i);
        types += 1;
    }
    if types != 1 + usize::from(vector) {
        return None;
    }
    loop {
        // `%name`
        if src.get(i) != Some(&b'%') || class(i + 1) & FOLLOW == 0 {
            return None;
        }
        let name = i;
        i += 2;
        while class(i) & FOLLOW != 0 {
            i += 1;
        }
        let mut def = Def {
            scope,
            lo: name as u32,
            hi: i as u32,
            count: None,
        };
        i = skip_ws(i);
        // `<N>`
        if src.get(i) == Some(&b'<') {
            i = skip_ws(i + 1);
            if class(i) & DIGIT == 0 {
                return None;
            }
            let digits = i;
            let end = plain_decimal_end(src, i)?;
            let count = src[digits..end].iter().try_fold(0u32, |n, &d| {
                n.checked_mul(10)?.checked_add(u32::from(d - b'0'))
            })?;
            def.count = Some(count);
            i = skip_ws(end);
            if src.get(i) != Some(&b'>') {
                return None;
            }
            i = skip_ws(i + 1);
        }
        defs.push(def);
        match src.get(i)? {
            b';' => return Some(i + 1),
            b',' => i = skip_ws(i + 1),
            _ => return None,
        }
    }
}

/// At a digit: the end of a literal the operand loops pass over without the literal
/// lexer (a plain decimal or an exact hex float); `None` for any other literal. The
/// operand loop and the quiet-statement check share it, so they accept the same.
#[inline(always)]
pub(super) fn simple_literal_end(src: &[u8], p: usize) -> Option<usize> {
    match plain_decimal_end(src, p) {
        Some(end) => Some(end),
        None => hex_float_end(src, p),
    }
}

/// True for a byte an identifier starts with (`[a-zA-Z_$]`; `%`-names are apart).
#[inline(always)]
pub(super) fn starts_identifier(b: u8) -> bool {
    CLASS[b as usize] & ID_START != 0 || matches!(b, b'_' | b'$')
}

/// At a literal starting `0f` or `0d`: the end of a valid exact hex float (exactly 8
/// or 16 hex digits, then a byte no literal continues with), which lexes as one
/// token without a diagnostic; `None` for anything else. libdevice's operands are
/// full of them (`0f3F800000`).
#[inline]
fn hex_float_end(src: &[u8], p: usize) -> Option<usize> {
    let want = match src.get(p + 1)? {
        b'f' | b'F' => 8,
        b'd' | b'D' => 16,
        _ => return None,
    };
    let end = p + 2 + want;
    let digits = src.get(p + 2..end)?;
    // Eight digits at a time, without a branch per digit (a loop that stops at the
    // first non-digit mispredicts its exit on nearly every literal).
    let word = |i: usize| u64::from_le_bytes(digits[i..i + 8].try_into().expect("8 bytes"));
    let hex = all_hex(word(0)) && (want == 8 || all_hex(word(8)));
    let ends = src
        .get(end)
        .is_none_or(|&b| CLASS[b as usize] & FOLLOW == 0);
    (src[p] == b'0' && hex && ends).then_some(end)
}

/// True if all eight bytes of `x` are ASCII hex digits (the lexer's `HEX` class),
/// tested on all of them at once: for bytes below 0x80, adding `0x80 - lo` sets a
/// byte's high bit exactly when it is at least `lo`, and no byte carries into the
/// next.
#[inline(always)]
fn all_hex(x: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let at_least = |v: u64, lo: u8| v.wrapping_add(ONES * (0x80 - lo as u64));
    let in_range = |v: u64, lo: u8, hi: u8| at_least(v, lo) & !at_least(v, hi + 1);
    // `| 0x20` maps `A`-`F` onto `a`-`f`, and nothing else onto them.
    let digits = in_range(x, b'0', b'9') | in_range(x | (ONES * 0x20), b'a', b'f');
    x & HIGH == 0 && digits & HIGH == HIGH
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::class::HEX;

    /// The eight-at-once hex test agrees with the lexer's class table for every
    /// byte value at every position.
    #[test]
    fn all_hex_agrees_with_the_class_table() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = *b"0aF9fA3c";
                bytes[at] = b;
                let want = bytes.iter().all(|&c| CLASS[c as usize] & HEX != 0);
                assert_eq!(all_hex(u64::from_le_bytes(bytes)), want, "{bytes:?}");
            }
        }
    }

    /// The plain register declaration is recognised to its `;` and nothing else is.
    #[test]
    fn register_declarations_are_recognised_in_their_plain_shape_only() {
        let end = |s: &str| register_declaration_end(s.as_bytes(), 0, 0, &mut Vec::new());
        for plain in [
            ".reg .b32 %r<4>;",
            ".reg .pred %p;",
            ".reg .v4 .f32 %v<2>, %w, %x<10>;",
            ".reg\t.b64\t%rd< 12 >  ,\n %x ;",
        ] {
            assert_eq!(
                end(&format!("{plain} ld.u32 %r1, [a];")),
                Some(plain.len()),
                "{plain}"
            );
        }
        for other in [
            ".reg .b32 %r<4>",
            ".reg .b32 g;",
            ".reg .b32 %r<04>;",
            ".reg .b32 %r<4x>;",
            ".reg .b32 %r<4>>;",
            ".reg .b32 %r = 1;",
            ".reg .align 4 .b32 %r;",
            ".reg %r;",
            ".reg .b32 %r, ;",
            ".reg .b32 %r /* c */;",
            ".reg.b32 %r;",
            ".regs .b32 %r;",
            ".reg .b32%r;",
            ".reg .attribute(.managed) .b32 %r;",
            ".reg .b32 .b32 %r;",
            ".reg .reg .b32 %r;",
            ".reg .b32 .v2 %r;",
            ".reg .b32 %r<99999999999>;",
            ".local .b32 %r;",
        ] {
            assert_eq!(end(other), None, "{other}");
        }
    }
}
