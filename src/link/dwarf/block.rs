//! Reading one debug `.section` block of a module: the bytes ptxas lays out, the
//! words whose value is symbolic (relocations), and the labels.
//!
//! The parser only checks a block's shape; the merge needs its data. A block holds
//! labels (`$L__info_string0:`) and data directives (`.b8 1,2`, `.b32 .debug_loc+133`,
//! `.b64 Lfunc_begin0`). Values are what producers write: integers, a section name
//! with an optional `+N`/`-N`, or labels and symbols with `+`/`-` and integers. Any
//! other value (floats, strings, `*`, parentheses) is reported as unsupported.

use crate::lex::{self as lexer, Token, TokenKind};
use crate::parse::parse_int;
use crate::source::{FileId, Span};

use super::Unsupported;

/// One section block of one module, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Block {
    /// The data, with symbolic words as zeros.
    pub bytes: Vec<u8>,
    /// The symbolic words, sorted by offset, never overlapping.
    pub relocs: Vec<Reloc>,
    /// Labels: offset in `bytes` and name (a span of the module's source), in order.
    pub labels: Vec<(u32, Span)>,
}

/// A word whose value ptxas computes (a relocation in the cubin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Reloc {
    /// Offset of the word in the block.
    pub at: u32,
    /// 4 or 8 bytes.
    pub width: u8,
    /// What it refers to.
    pub value: Value,
}

/// The value of a symbolic word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Value {
    /// `.debug_loc+133`: an offset into a section of this module.
    Section {
        /// The section name as written (`.debug_loc`).
        name: Vec<u8>,
        /// The offset.
        addend: i64,
    },
    /// Labels and symbols with `+`, `-` and integers, e.g. `Lfunc_begin0`: the tokens
    /// (the identifiers among them are renamed on output).
    Expr(Vec<Span>),
}

/// Decodes the block of `item` (a `.section` item of `file`; `src` is the file), which
/// the parser counted `size` bytes in.
pub(crate) fn decode(
    file: FileId,
    src: &[u8],
    item: Span,
    size: u64,
) -> Result<Block, Unsupported> {
    let lexed = lexer::lex(file, &src[item.range()]);
    let toks: Vec<Token> = lexed
        .tokens
        .iter()
        .map(|t| Token {
            lo: t.lo + item.lo,
            hi: t.hi + item.lo,
            ..*t
        })
        .collect();
    // `.section name {` ... `}`: the parser accepted the item, so both braces exist.
    let open = toks
        .iter()
        .position(|t| t.text(src) == b"{")
        .ok_or_else(|| Unsupported::at(item, "a `.section` without `{`"))?;
    // The `}` that closes the block is the item's last token.
    let close = toks.len().saturating_sub(1).max(open + 1);
    let mut r = Reader {
        src,
        toks: &toks[..close],
        pos: open + 1,
        block: Block {
            // The parser's count comes from the text, so it is no larger than it.
            bytes: Vec::with_capacity(size.min(src.len() as u64 * 8) as usize),
            ..Block::default()
        },
    };
    r.run()?;
    Ok(r.block)
}

struct Reader<'a> {
    src: &'a [u8],
    toks: &'a [Token],
    pos: usize,
    block: Block,
}

/// One operand of a value with its sign.
enum Atom {
    Int(i128),
    Section(Span),
    Ident,
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
                let at = self.offset(t.span())?;
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

    /// The offset the next datum gets; blocks stay below 4 GiB.
    fn offset(&self, span: Span) -> Result<u32, Unsupported> {
        u32::try_from(self.block.bytes.len())
            .ok()
            .filter(|&n| n < u32::MAX - 8)
            .ok_or_else(|| Unsupported::at(span, "a section of 4 GiB or more"))
    }

    /// Reads one value (`x`, `a + 4`, `.debug_loc+133`) and appends its bytes.
    fn value(&mut self, width: u8) -> Result<(), Unsupported> {
        let start = self.pos;
        let mut atoms: Vec<(bool, Atom)> = Vec::new();
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
            let atom = match t.kind {
                TokenKind::Int => match parse_int(self.text(t)) {
                    Some(v) => Atom::Int(v as i128),
                    None => return Err(Unsupported::at(t.span(), "an integer beyond 64 bits")),
                },
                TokenKind::Directive => Atom::Section(t.span()),
                TokenKind::Ident => Atom::Ident,
                _ => return Err(Unsupported::at(t.span(), "this kind of value")),
            };
            atoms.push((negative, atom));
            self.pos += 1;
            let next = self.peek();
            if !(self.is_punct(next, b"+") || self.is_punct(next, b"-")) {
                if let Some(n) = next.filter(|&n| crate::parse::is_binop(self.text(n))) {
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
        let at = self.offset(span)?;
        let ints: i128 = atoms
            .iter()
            .map(|(neg, a)| match a {
                Atom::Int(v) if *neg => -v,
                Atom::Int(v) => *v,
                _ => 0,
            })
            .sum();
        let sections: Vec<(bool, Span)> = atoms
            .iter()
            .filter_map(|(neg, a)| match a {
                Atom::Section(s) => Some((*neg, *s)),
                _ => None,
            })
            .collect();
        let idents = atoms.iter().any(|(_, a)| matches!(a, Atom::Ident));
        let value = match (&sections[..], idents) {
            ([], false) => {
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
            ([(false, name)], false) => Value::Section {
                name: self.src[name.range()].to_vec(),
                addend: i64::try_from(ints)
                    .map_err(|_| Unsupported::at(span, "a section offset beyond 64 bits"))?,
            },
            ([], true) => Value::Expr(
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

    fn block(text: &str) -> Result<Block, Unsupported> {
        decode(
            FileId(0),
            text.as_bytes(),
            Span::new(0, text.len() as u32),
            0,
        )
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
            Value::Section { name, addend } => {
                format!("{}+{addend}", String::from_utf8_lossy(name))
            }
            Value::Expr(t) => t
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
        let Value::Expr(toks) = &b.relocs[0].value else {
            panic!("{b:?}")
        };
        let shown: Vec<&str> = toks.iter().map(|s| &text[s.range()]).collect();
        assert_eq!(shown, ["Lend", "-", "Lbegin", "+", "4"]);
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
        ] {
            assert!(block(bad).is_err(), "{bad}");
        }
    }
}
