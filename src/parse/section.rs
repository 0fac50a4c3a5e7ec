//! Decoding a debug `.section` block into the data the DWARF merge reads
//! ([`SectionData`]): the bytes ptxas lays out, the words whose value is symbolic
//! (relocations), and the labels.
//!
//! The parser decodes a block as it walks the block's tokens (a [`Decoder`] is fed
//! each label and value the parser accepts), so the text is lexed once and a module
//! without sections pays nothing. A block holds labels (`$L__info_string0:`) and
//! data directives (`.b8 1,2`, `.b32 .debug_loc+133`, `.b64 Lfunc_begin0`). Values
//! are what producers write: integers, a section name with an optional `+N`/`-N`, or
//! labels and symbols with `+`/`-` and integers. Any other value (floats, `*`,
//! parentheses, `generic(...)`) is unsupported; that is recorded in the IR, not
//! reported, since it matters only if the debug sections are merged.

use super::cursor::{decimal, parse_int};
use super::expr::is_binop;
use crate::ir::{Reloc, RelocValue, SectionData, Unsupported};
use crate::lex::{Token, TokenKind};
use crate::source::Span;

/// Decodes one block from what the parser accepts in it: each label ([`label`]) and
/// each value with its tokens ([`value`], or [`int`] for an integer alone), then
/// [`finish`] with the block's tokens.
///
/// The parser's grammar for a block (labels, data directives, comma-separated
/// constant expressions, optional `;`) contains the decoder's, so a block the
/// decoder reads in step with the parser is one [`decode`] reads the same way.
/// Anything else (a value [`decode`] would stop in or refuse) sends [`finish`] back
/// to [`decode`] over the whole block, which gives the exact result (an
/// unsupported block is rare and short-lived: its module loses its debug data).
///
/// [`label`]: Decoder::label
/// [`value`]: Decoder::value
/// [`int`]: Decoder::int
/// [`finish`]: Decoder::finish
#[derive(Default)]
pub(super) struct Decoder {
    data: SectionData,
    /// True once a label or value was not decoded in step with the parser.
    diverged: bool,
}

impl Decoder {
    /// A label the parser accepted (`L0:`; `name` is the identifier).
    pub fn label(&mut self, name: Token) {
        if self.diverged {
            return;
        }
        match offset(&self.data, name.span()) {
            Ok(at) => self.data.labels.push((at, name.span())),
            Err(_) => self.diverged = true,
        }
    }

    /// A value the parser accepted (`toks`, in `src`) of a data directive of
    /// `width` bytes.
    pub fn value(&mut self, src: &[u8], toks: &[Token], width: u8) {
        if self.diverged {
            return;
        }
        let mut r = Reader {
            src,
            toks,
            pos: 0,
            block: &mut self.data,
        };
        // Decoded in step only if the value is all of the parser's expression:
        // `decode` then stops where the parser does.
        self.diverged = !(r.value(width).is_ok() && r.pos == toks.len());
    }

    /// A value that is an integer token `t` alone (in `src`), as [`Decoder::value`]
    /// takes it. Most data is (`.b8 1,2,...`): a plain decimal that fits is read
    /// here, at a fraction of the cost of `Reader::value`.
    pub fn int(&mut self, src: &[u8], t: Token, width: u8) {
        if self.diverged {
            return;
        }
        let room = self.data.bytes.len() < (u32::MAX - 8) as usize;
        match decimal(t.text(src)) {
            Some(v) if room && (width == 8 || v >> (8 * u32::from(width)) == 0) => {
                if width == 1 {
                    self.data.bytes.push(v as u8);
                } else {
                    let bytes = v.to_le_bytes();
                    self.data
                        .bytes
                        .extend_from_slice(&bytes[..usize::from(width)]);
                }
            }
            _ => self.value(src, std::slice::from_ref(&t), width),
        }
    }

    /// The block's data; `toks` are the tokens between its braces.
    pub fn finish(self, src: &[u8], toks: &[Token]) -> Box<Result<SectionData, Unsupported>> {
        if self.diverged {
            return Box::new(decode(src, toks));
        }
        let mut data = self.data;
        // Grown by doubling while parsing: the module keeps the block until the link
        // writes it, so it keeps no more than it holds (the system allocator shrinks
        // without copying).
        data.bytes.shrink_to_fit();
        data.relocs.shrink_to_fit();
        data.labels.shrink_to_fit();
        Box::new(Ok(data))
    }
}

/// Decodes the block whose tokens between the braces are `toks` (of `src`), alone:
/// the definition of what a block holds, which [`Decoder`] follows in step with the
/// parser.
fn decode(src: &[u8], toks: &[Token]) -> Result<SectionData, Unsupported> {
    let mut data = SectionData::default();
    Reader {
        src,
        toks,
        pos: 0,
        block: &mut data,
    }
    .run()?;
    Ok(data)
}

/// The offset the next datum of `block` gets; blocks stay below 4 GiB.
fn offset(block: &SectionData, span: Span) -> Result<u32, Unsupported> {
    u32::try_from(block.bytes.len())
        .ok()
        .filter(|&n| n < u32::MAX - 8)
        .ok_or_else(|| Unsupported::at(span, "a section of 4 GiB or more"))
}

struct Reader<'a> {
    src: &'a [u8],
    toks: &'a [Token],
    pos: usize,
    block: &'a mut SectionData,
}

impl Reader<'_> {
    fn peek(&self) -> Option<Token> {
        self.toks.get(self.pos).copied()
    }

    fn text(&self, t: Token) -> &[u8] {
        t.text(self.src)
    }

    fn is_punct(&self, t: Option<Token>, p: &[u8]) -> bool {
        t.is_some_and(|t| t.kind == TokenKind::Punct && self.text(t) == p)
    }

    fn run(&mut self) -> Result<(), Unsupported> {
        while let Some(t) = self.peek() {
            if t.kind == TokenKind::Ident
                && self.is_punct(self.toks.get(self.pos + 1).copied(), b":")
            {
                let at = offset(self.block, t.span())?;
                self.block.labels.push((at, t.span()));
                self.pos += 2;
                continue;
            }
            let width = match (t.kind, self.text(t)) {
                (TokenKind::Directive, b".b8" | b".u8" | b".s8") => 1,
                (TokenKind::Directive, b".b16" | b".u16" | b".s16") => 2,
                (TokenKind::Directive, b".b32" | b".u32" | b".s32") => 4,
                (TokenKind::Directive, b".b64" | b".u64" | b".s64") => 8,
                _ => return Err(Unsupported::at(t.span(), "this data directive")),
            };
            self.pos += 1;
            loop {
                self.value(width)?;
                if !self.is_punct(self.peek(), b",") {
                    break;
                }
                self.pos += 1;
            }
            if self.is_punct(self.peek(), b";") {
                self.pos += 1;
            }
        }
        Ok(())
    }

    /// Reads one value (`x`, `a + 4`, `.debug_loc+133`) and appends its bytes.
    fn value(&mut self, width: u8) -> Result<(), Unsupported> {
        let start = self.pos;
        // The operands, each with its sign: the integers summed, the section names
        // counted (the first kept), whether there is a label or symbol.
        let mut ints: i128 = 0;
        let mut sections = 0usize;
        let mut section = (false, Span::default());
        let mut idents = false;
        loop {
            let mut negative = false;
            while self.is_punct(self.peek(), b"-") || self.is_punct(self.peek(), b"+") {
                negative ^= self.text(self.toks[self.pos]) == b"-";
                self.pos += 1;
            }
            let Some(t) = self.peek() else {
                let last = self.toks.last().map_or(Span::default(), |t| t.span());
                return Err(Unsupported::at(last, "a truncated value"));
            };
            match t.kind {
                TokenKind::Int => match parse_int(self.text(t)) {
                    Some(v) if negative => ints -= i128::from(v),
                    Some(v) => ints += i128::from(v),
                    None => return Err(Unsupported::at(t.span(), "an integer beyond 64 bits")),
                },
                TokenKind::Directive => {
                    sections += 1;
                    if sections == 1 {
                        section = (negative, t.span());
                    }
                }
                TokenKind::Ident => idents = true,
                _ => return Err(Unsupported::at(t.span(), "this kind of value")),
            }
            self.pos += 1;
            let next = self.peek();
            if !(self.is_punct(next, b"+") || self.is_punct(next, b"-")) {
                if let Some(n) = next.filter(|&n| is_binop(self.text(n))) {
                    return Err(Unsupported::at(
                        n.span(),
                        "an operator other than `+` and `-`",
                    ));
                }
                break;
            }
            // The `+` or `-` is read as the sign of the next operand.
        }
        let span = self.toks[start].span().to(self.toks[self.pos - 1].span());
        let at = offset(self.block, span)?;
        let value = match (sections, section, idents) {
            (0, _, false) => {
                let bits = 8 * u32::from(width);
                let fits = ints >= -(1i128 << (bits - 1)) && ints < (1i128 << bits);
                if !fits {
                    return Err(Unsupported::at(
                        span,
                        format!("a value that does not fit {width} byte(s)"),
                    ));
                }
                let bytes = (ints as u64).to_le_bytes();
                self.block.bytes.extend_from_slice(&bytes[..width as usize]);
                return Ok(());
            }
            (1, (false, name), false) => RelocValue::Section {
                name: self.src[name.range()].to_vec(),
                addend: i64::try_from(ints)
                    .map_err(|_| Unsupported::at(span, "a section offset beyond 64 bits"))?,
            },
            (0, _, true) => RelocValue::Expr(
                self.toks[start..self.pos]
                    .iter()
                    .map(|t| t.span())
                    .collect(),
            ),
            _ => {
                return Err(Unsupported::at(
                    span,
                    "a value mixing section names with labels, or a negated section name",
                ))
            }
        };
        if width < 4 {
            return Err(Unsupported::at(
                span,
                "a symbolic value narrower than 4 bytes",
            ));
        }
        self.block.relocs.push(Reloc { at, width, value });
        self.block
            .bytes
            .extend(std::iter::repeat_n(0, width as usize));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::ItemKind;
    use crate::source::FileId;

    /// The block of `text` (one `.section` item) as [`decode`] reads it alone; where
    /// the parser accepts the item, its data must be the same, decoded in step.
    fn block(text: &str) -> Result<SectionData, Unsupported> {
        let src = text.as_bytes();
        let toks = crate::lex::lex(FileId(0), src).tokens;
        let open = toks.iter().position(|t| t.text(src) == b"{").unwrap();
        let close = toks.len().saturating_sub(1).max(open + 1);
        let alone = decode(src, &toks[open + 1..close]);
        let parsed = crate::parse::parse_module(FileId(0), src);
        let section = parsed.module.items.iter().find_map(|i| match &i.kind {
            ItemKind::Section(s) => Some(s),
            _ => None,
        });
        if let Some(s) = section {
            assert_eq!(*s.data, alone, "{text}");
        }
        alone
    }

    /// True if the parser accepts `text`'s `.section` item.
    fn parses(text: &str) -> bool {
        let parsed = crate::parse::parse_module(FileId(0), text.as_bytes());
        parsed
            .module
            .items
            .iter()
            .any(|i| matches!(i.kind, ItemKind::Section(_)))
    }

    #[test]
    fn data_labels_and_relocations() {
        let text = ".section .debug_info {\nL0:\n.b8 1, 2,255\n.b16 -1\n.b32 .debug_abbrev\n\
                    .b32 .debug_loc+133;\n.b64 Lfunc_begin0\n.b8 0x10\nL1: }";
        let b = block(text).unwrap();
        assert_eq!(
            b.bytes,
            [1, 2, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16]
        );
        let name = |r: &Reloc| match &r.value {
            RelocValue::Section { name, addend } => {
                format!("{}+{addend}", String::from_utf8_lossy(name))
            }
            RelocValue::Expr(t) => t
                .iter()
                .map(|s| &text[s.range()])
                .collect::<Vec<_>>()
                .join(" "),
        };
        let relocs: Vec<(u32, u8, String)> =
            b.relocs.iter().map(|r| (r.at, r.width, name(r))).collect();
        assert_eq!(
            relocs,
            [
                (5, 4, ".debug_abbrev+0".to_string()),
                (9, 4, ".debug_loc+133".to_string()),
                (13, 8, "Lfunc_begin0".to_string())
            ]
        );
        let labels: Vec<(u32, &str)> = b
            .labels
            .iter()
            .map(|&(o, s)| (o, &text[s.range()]))
            .collect();
        assert_eq!(labels, [(0, "L0"), (22, "L1")]);
    }

    #[test]
    fn label_arithmetic_is_kept_as_tokens() {
        let text = ".section .debug_x { .b32 Lend - Lbegin + 4 }";
        let b = block(text).unwrap();
        let RelocValue::Expr(toks) = &b.relocs[0].value else {
            panic!("{b:?}")
        };
        let shown: Vec<&str> = toks.iter().map(|s| &text[s.range()]).collect();
        assert_eq!(shown, ["Lend", "-", "Lbegin", "+", "4"]);
    }

    /// Every width's limits, in step and alone (the checks of `block`).
    #[test]
    fn decimals_at_every_width() {
        for text in [
            ".section .x { .b8 0, 255 .b16 65535 .b32 4294967295 .b64 18446744073709551615 }",
            ".section .x { .b8 0x10, 010, 7U .b64 9999999999999999999 }",
            ".section .x { .b16 65536 }",
            ".section .x { .b32 4294967296 }",
        ] {
            let _ = block(text);
        }
    }

    /// Every prefix of a block with each kind of datum: refused or decoded, never a
    /// panic (the parser has accepted worse, e.g. truncated text inside the braces).
    #[test]
    fn truncated_blocks_never_panic() {
        let body = "L0: .b8 1,2 .b32 .debug_loc+3 .b64 a-b+4 .b16 -1; L1:";
        for n in 0..=body.len() {
            let text = format!(".section .debug_x {{ {} }}", &body[..n]);
            let _ = block(&text);
        }
    }

    #[test]
    fn unsupported_values_are_refused() {
        for bad in [
            ".section .debug_x { .b8 256 }",
            ".section .debug_x { .b8 L1 }",
            ".section .debug_x { .b32 2*3 }",
            ".section .debug_x { .b32 -.debug_loc }",
            ".section .debug_x { .b32 .debug_loc+L1 }",
            ".section .debug_x { .f32 1.0 }",
            ".section .debug_x { .b32 (1) }",
            ".section .debug_x { .b8 }",
            ".section .debug_x { .b32 .debug_loc+ }",
            ".section .debug_x { L0 }",
            ".section .debug_x { .b32 generic(a) }",
            ".section .debug_x { .b32 a ? 1 : 2 }",
            ".section .debug_x { .b32 (.s64) 1 }",
            ".section .debug_x { .b32 ~1 }",
            ".section .debug_x { .b32 1.5 }",
            ".section .debug_x { .b64 99999999999999999999 }",
            ".section .debug_x { .b32 .debug_loc+99999999999999999999 }",
        ] {
            assert!(block(bad).is_err(), "{bad}");
        }
    }

    /// Values the parser accepts but the decoder refuses: the failure is kept in the
    /// IR for the merge, not reported, and it is where [`decode`] alone finds it
    /// (the checks of [`block`]), also after a label and values decoded in step.
    #[test]
    fn refused_values_the_parser_accepts_are_recorded_not_reported() {
        for (text, at, what) in [
            (
                ".section .debug_x { L0: .b8 1 .b32 2*3 }",
                "*",
                "an operator",
            ),
            (
                ".section .debug_x { L0: .b8 1, 2 .b32 generic(L0) }",
                "(",
                "this data directive",
            ),
            (
                ".section .debug_x { .b8 300 }",
                "300",
                "a value that does not fit",
            ),
            (
                ".section .debug_x { L0: .b8 L0 }",
                "L0",
                "a symbolic value narrower",
            ),
            (
                ".section .debug_x { .b32 -.debug_loc }",
                "-.debug_loc",
                "a value mixing",
            ),
        ] {
            let text = format!(".version 7.0\n.target sm_70\n.address_size 64\n{text}");
            let text = text.as_str();
            assert!(parses(text), "{text}");
            let parsed = crate::parse::parse_module(FileId(0), text.as_bytes());
            assert!(
                parsed.diagnostics.is_empty(),
                "{text}: {:?}",
                parsed.diagnostics
            );
            let e = block(text).unwrap_err();
            assert_eq!(&text[e.span.range()], at, "{text}");
            assert!(e.what.starts_with(what), "{text}: {}", e.what);
        }
    }
}
