//! A cursor over one module's tokens, with the small helpers every parser phase uses.

use crate::diag::{Code, Diagnostic};
use crate::lex::{Token, TokenKind};
use crate::source::{FileId, Span};

/// Marker for "a diagnostic was already reported; recover".
#[derive(Debug)]
pub(crate) struct Reported;

pub(crate) type PResult<T> = Result<T, Reported>;

pub(crate) struct Cursor<'a> {
    pub src: &'a [u8],
    pub toks: &'a [Token],
    pub pos: usize,
    /// Tokens at or after `end` are invisible (used to parse inside a body).
    pub end: usize,
    pub file: FileId,
    pub errors: Vec<Diagnostic>,
}

impl<'a> Cursor<'a> {
    pub fn new(file: FileId, src: &'a [u8], toks: &'a [Token]) -> Cursor<'a> {
        Cursor {
            src,
            toks,
            pos: 0,
            end: toks.len(),
            file,
            errors: Vec::new(),
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    pub fn peek(&self) -> Option<Token> {
        self.peek_at(0)
    }

    pub fn peek_at(&self, n: usize) -> Option<Token> {
        let i = self.pos + n;
        if i < self.end {
            Some(self.toks[i])
        } else {
            None
        }
    }

    pub fn text(&self, t: Token) -> &'a [u8] {
        t.text(self.src)
    }

    pub fn bump(&mut self) -> Token {
        let t = self.toks[self.pos];
        self.pos += 1;
        t
    }

    /// The previous token (for "expected `;` after ..." positions).
    pub fn prev(&self) -> Option<Token> {
        self.pos.checked_sub(1).map(|i| self.toks[i])
    }

    pub fn is_punct(&self, t: Token, p: &[u8]) -> bool {
        if let [b] = p {
            // Most punctuation is one byte: one load, where the slice would check
            // both ends.
            return t.kind == TokenKind::Punct
                && t.hi == t.lo.wrapping_add(1)
                && self.src.get(t.lo as usize) == Some(b);
        }
        t.kind == TokenKind::Punct && self.text(t) == p
    }

    /// The byte of a one-byte punctuation token.
    pub fn punct_byte(&self, t: Token) -> Option<u8> {
        if t.kind == TokenKind::Punct && t.hi == t.lo.wrapping_add(1) {
            self.src.get(t.lo as usize).copied()
        } else {
            None
        }
    }

    pub fn at_punct(&self, p: &[u8]) -> bool {
        self.peek().is_some_and(|t| self.is_punct(t, p))
    }

    pub fn eat_punct(&mut self, p: &[u8]) -> bool {
        if self.at_punct(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub fn at_kind(&self, k: TokenKind) -> bool {
        self.peek().is_some_and(|t| t.kind == k)
    }

    /// Where "here" is for a diagnostic: the next token, or the end of the last one.
    pub fn here(&self) -> Span {
        match self.peek() {
            Some(t) => t.span(),
            None => self.after_prev(),
        }
    }

    /// An empty span just after the previous token.
    pub fn after_prev(&self) -> Span {
        match self.prev() {
            Some(t) => Span::new(t.hi, t.hi),
            None => Span::new(0, 0),
        }
    }

    /// Reports an error, unless the next token is an invalid one: the lexer already
    /// reported that, and a second message about the same spot would only be noise.
    pub fn error(&mut self, span: Span, msg: impl Into<String>) -> Reported {
        if !self.at_kind(TokenKind::Error) {
            self.errors
                .push(Diagnostic::error(Code::Syntax, self.file, span, msg));
        }
        Reported
    }

    pub fn error_help(
        &mut self,
        span: Span,
        msg: impl Into<String>,
        help: impl Into<String>,
    ) -> Reported {
        if !self.at_kind(TokenKind::Error) {
            self.errors
                .push(Diagnostic::error(Code::Syntax, self.file, span, msg).with_help(help));
        }
        Reported
    }

    /// Describes the next token for "expected X, found Y" messages.
    pub fn found(&self) -> String {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Error => "an invalid token".to_string(),
            Some(t) => format!("`{}`", String::from_utf8_lossy(self.text(t))),
            None => "end of input".to_string(),
        }
    }

    pub fn expected(&mut self, what: &str) -> Reported {
        let msg = format!("expected {what}, found {}", self.found());
        let span = self.here();
        self.error(span, msg)
    }

    /// Expects `p`; on failure the error points just after the previous token, which
    /// is where a forgotten `;` or `,` belongs.
    pub fn expect_punct(&mut self, p: &[u8]) -> PResult<Token> {
        if self.at_punct(p) {
            return Ok(self.bump());
        }
        let msg = format!(
            "expected `{}`, found {}",
            String::from_utf8_lossy(p),
            self.found()
        );
        let span = if p == b";" || self.peek().is_none() {
            self.after_prev()
        } else {
            self.here()
        };
        Err(self.error(span, msg))
    }

    pub fn expect_ident(&mut self, what: &str) -> PResult<Token> {
        if self.at_kind(TokenKind::Ident) {
            Ok(self.bump())
        } else {
            Err(self.expected(what))
        }
    }

    /// Parses an integer literal token's value (decimal, hex, octal, binary, `U` suffix).
    pub fn int_value(&self, t: Token) -> Option<u64> {
        parse_int(self.text(t))
    }

    pub fn expect_int(&mut self, what: &str) -> PResult<(u64, Span)> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Int => {
                self.pos += 1;
                match self.int_value(t) {
                    Some(v) => Ok((v, t.span())),
                    None => Err(self.error(t.span(), "integer literal does not fit in 64 bits")),
                }
            }
            _ => Err(self.expected(what)),
        }
    }
}

/// The value of an integer literal as the lexer accepted it.
pub fn parse_int(text: &[u8]) -> Option<u64> {
    // Most literals are plain decimals.
    decimal(text).or_else(|| any_int(text))
}

/// The value of a decimal literal of at most 19 digits, without a leading zero
/// unless it is `0`: what [`parse_int`] gives for it, without its checks for the
/// other forms.
pub(super) fn decimal(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 19 || (text.len() > 1 && text[0] == b'0') {
        return None;
    }
    let mut v = 0u64;
    for &b in text {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + u64::from(d);
    }
    Some(v)
}

/// [`parse_int`] for every form: decimal, hex, octal, binary, `U` suffix.
fn any_int(text: &[u8]) -> Option<u64> {
    let text = text.strip_suffix(b"U").unwrap_or(text);
    let s = std::str::from_utf8(text).ok()?;
    let (digits, radix) = if let Some(h) = s.strip_prefix("0x").or(s.strip_prefix("0X")) {
        (h, 16)
    } else if let Some(b) = s.strip_prefix("0b").or(s.strip_prefix("0B")) {
        (b, 2)
    } else if s.len() > 1 && s.starts_with('0') {
        (&s[1..], 8)
    } else {
        (s, 10)
    };
    u64::from_str_radix(digits, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast reading of decimal literals agrees with the reading of every form
    /// wherever it answers, and answers for the plain decimals producers write.
    #[test]
    fn decimals_read_as_every_form_reads_them() {
        for text in [
            "0",
            "1",
            "9",
            "10",
            "255",
            "256",
            "65535",
            "4294967296",
            "1234567890123456789",
            "9999999999999999999",
            "18446744073709551615",
            "00",
            "07",
            "08",
            "0x1F",
            "0b1",
            "12U",
            "1a",
            "",
            "-1",
        ] {
            let fast = decimal(text.as_bytes());
            if fast.is_some() {
                assert_eq!(fast, any_int(text.as_bytes()), "{text}");
            }
            let plain = !text.is_empty()
                && text.len() <= 19
                && text.bytes().all(|b| b.is_ascii_digit())
                && (text == "0" || !text.starts_with('0'));
            assert_eq!(fast.is_some(), plain, "{text}");
            assert_eq!(
                parse_int(text.as_bytes()),
                any_int(text.as_bytes()),
                "{text}"
            );
        }
    }
}
