//! The full lexer: every token, comment and diagnostic, with the common tokens in
//! one tight loop.

use super::class::{
    is, modifier_end, plain_decimal_end, CLASS, DIGIT, FOLLOW, HEX, ID_PREFIX, ID_START, WS,
};
use super::scan;
use super::{Bodies, Lexer, Token, TokenKind};
use crate::diag::{Code, Diagnostic};
use crate::source::Span;

impl Lexer<'_> {
    pub(super) fn run(&mut self) {
        let len = self.src.len();
        loop {
            self.common_tokens::<false>();
            if self.pos >= len {
                break;
            }
            match self.src[self.pos] {
                b'{' => {
                    if self.bodies != Bodies::Full && self.depth == 0 && self.opens_body() {
                        let done = match self.bodies {
                            Bodies::Compact => self.compact_body(),
                            _ => self.defer_body(),
                        };
                        if done {
                            continue;
                        }
                    }
                    self.depth += 1;
                    self.pos += 1;
                    self.push(TokenKind::Punct, self.pos - 1);
                }
                b'}' => {
                    self.depth = self.depth.saturating_sub(1);
                    self.pos += 1;
                    self.push(TokenKind::Punct, self.pos - 1);
                }
                _ => self.any_token(),
            }
        }
    }

    /// The hot loop: whitespace, identifiers, directives and one-byte punctuation
    /// (nearly all bytes of real PTX), with the position in a register. Returns at
    /// the end of input, at a brace (the module-scope depth is counted in
    /// [`Lexer::run`]) or at the first byte that needs [`Lexer::any_token`]. With
    /// `STATEMENT`, also right after a `;` (the end of a statement in a body).
    pub(super) fn common_tokens<const STATEMENT: bool>(&mut self) {
        let src = self.src;
        let len = src.len();
        let tokens = &mut self.out.tokens;
        let mut pos = self.pos;
        let follows = |i: usize| i < len && CLASS[src[i] as usize] & FOLLOW != 0;
        while pos < len {
            let b = src[pos];
            let class = CLASS[b as usize];
            let lo = pos;
            let kind = if class & WS != 0 {
                pos += 1;
                while pos < len && CLASS[src[pos] as usize] & WS != 0 {
                    pos += 1;
                }
                continue;
            } else if class & ID_START != 0
                || matches!(b, b'_' | b'$')
                || (b == b'%' && follows(pos + 1))
            {
                pos += 1;
                while follows(pos) {
                    pos += 1;
                }
                TokenKind::Ident
            } else if let Some(end) = modifier_end(src, pos) {
                pos = end;
                TokenKind::Directive
            } else if matches!(
                b,
                b',' | b';' | b'[' | b']' | b'(' | b')' | b'+' | b'-' | b':' | b'@'
            ) || matches!(b, b'<' | b'>')
                && !matches!(src.get(pos + 1), Some(b'<' | b'>' | b'='))
            {
                // (`<<`, `>=` and the like are one token: left to `any_token`.)
                pos += 1;
                TokenKind::Punct
            } else if class & DIGIT != 0 {
                // A plain decimal (`%r<5>`, `[16]`, `.align 8`). Other literals, and
                // values after `::` (`L2::128B`), are left to `any_token`.
                let qualifier = pos >= 2 && &src[pos - 2..pos] == b"::";
                match plain_decimal_end(src, pos) {
                    Some(end) if !qualifier => pos = end,
                    _ => break,
                }
                TokenKind::Int
            } else {
                break;
            };
            tokens.push(Token {
                kind,
                lo: lo as u32,
                hi: pos as u32,
            });
            if STATEMENT && b == b';' {
                break;
            }
        }
        self.pos = pos;
    }

    /// Lexes one token, comment or run of whitespace of any kind.
    pub(super) fn any_token(&mut self) {
        let len = self.src.len();
        {
            let b = self.src[self.pos];
            let lo = self.pos;
            if is(b, WS) {
                self.pos += 1;
                self.eat_while(WS);
            } else if is(b, ID_START) {
                self.pos += 1;
                self.eat_while(FOLLOW);
                self.push(TokenKind::Ident, lo);
            } else if is(b, ID_PREFIX) {
                self.pos += 1;
                if b == b'%' && !is(self.peek(0), FOLLOW) {
                    // A lone `%` is the remainder operator.
                    self.push(TokenKind::Punct, lo);
                } else {
                    self.eat_while(FOLLOW);
                    self.push(TokenKind::Ident, lo);
                }
            } else if is(b, DIGIT) && lo >= 2 && &self.src[lo - 2..lo] == b"::" {
                // A digit-led instruction qualifier value: `L2::128B`, `scale_vec::1X`.
                self.eat_while(FOLLOW);
                self.push(TokenKind::Ident, lo);
            } else if is(b, DIGIT)
                || (b == b'.' && is(self.peek(1), DIGIT) && self.dot_float_ahead())
            {
                self.number();
            } else if b == b'.' {
                self.pos += 1;
                if is(self.peek(0), FOLLOW) {
                    self.eat_while(FOLLOW);
                    self.push(TokenKind::Directive, lo);
                } else {
                    self.push(TokenKind::Punct, lo);
                }
            } else if b == b'/' && self.peek(1) == b'/' {
                let end = scan::find_newline(&self.src[lo..]).map_or(len, |i| lo + i);
                self.pos = end;
                self.out.comments.push(Span::new(lo as u32, end as u32));
                self.check_ascii(lo, end, "comment");
            } else if b == b'/' && self.peek(1) == b'*' {
                self.block_comment();
            } else if b == b'"' {
                self.string();
            } else if b == 0 {
                // ptxas stops reading at the first NUL (NVRTC's PTX buffer ends with one,
                // and tools often write it out). Whatever follows is ignored too, but
                // anything other than padding deserves a word.
                let rest = &self.src[lo..];
                if let Some(i) = rest.iter().position(|&b| b != 0 && !is(b, WS)) {
                    self.out.errors.push(Diagnostic::warning(
                        Code::NulByte,
                        self.file,
                        Span::new(lo as u32, lo as u32 + 1),
                        format!(
                            "NUL byte: the {} bytes after it are ignored, as ptxas ignores them",
                            rest.len() - i
                        ),
                    ));
                }
                self.pos = len;
            } else if b.is_ascii_punctuation() {
                self.pos += 1;
                let next = self.peek(0);
                let two = matches!(
                    (b, next),
                    (b'<', b'<')
                        | (b'>', b'>')
                        | (b'&', b'&')
                        | (b'|', b'|')
                        | (b'=', b'=')
                        | (b'!', b'=')
                        | (b'<', b'=')
                        | (b'>', b'=')
                );
                if two {
                    self.pos += 1;
                }
                self.push(TokenKind::Punct, lo);
            } else {
                // Non-ASCII or control byte outside comments and strings. Swallow a run
                // of them so one stray UTF-8 character gives one error.
                self.pos += 1;
                while self.pos < len && !self.src[self.pos].is_ascii() {
                    self.pos += 1;
                }
                let msg = if b.is_ascii() {
                    format!("unexpected control byte 0x{b:02X} outside a comment or string")
                } else {
                    format!(
                        "non-ASCII byte 0x{b:02X} outside a comment or string; \
                         PTX source must be ASCII"
                    )
                };
                self.error(lo, self.pos, msg);
                self.push(TokenKind::Error, lo);
            }
        }
    }

    /// At `.` followed by a digit: is this a float like `.5` rather than an opcode
    /// suffix like `.2d`? A float's digits are followed by a non-identifier byte or
    /// an exponent.
    fn dot_float_ahead(&self) -> bool {
        let mut i = self.pos + 1;
        while i < self.src.len() && is(self.src[i], DIGIT) {
            i += 1;
        }
        match self.src.get(i) {
            None => true,
            Some(b'e' | b'E') => self
                .src
                .get(i + 1)
                .is_some_and(|&b| is(b, DIGIT) || b == b'+' || b == b'-'),
            Some(&b) => !is(b, FOLLOW),
        }
    }

    fn block_comment(&mut self) {
        let lo = self.pos;
        let body = &self.src[lo + 2..];
        match body.windows(2).position(|w| w == b"*/") {
            Some(i) => self.pos = lo + 2 + i + 2,
            None => {
                self.pos = self.src.len();
                self.error(lo, lo + 2, "unterminated block comment");
            }
        }
        self.out
            .comments
            .push(Span::new(lo as u32, self.pos as u32));
        self.check_ascii(lo, self.pos, "comment");
    }

    /// PTX allows any byte in comments and strings, but ptxas 12.9 rejects non-ASCII
    /// bytes anywhere ("Unexpected non-ASCII character encountered"; see
    /// docs/front-end.md). Warn once per file, at the first such byte.
    fn check_ascii(&mut self, lo: usize, hi: usize, what: &str) {
        if self.warned_non_ascii {
            return;
        }
        if let Some(i) = scan::first_non_ascii(&self.src[lo..hi]) {
            self.warned_non_ascii = true;
            let at = lo + i;
            self.out.errors.push(Diagnostic::warning(
                Code::NonAscii,
                self.file,
                Span::new(at as u32, at as u32 + 1),
                format!(
                    "non-ASCII byte 0x{:02X} in a {what}; ptxas rejects non-ASCII bytes \
                     anywhere in a module, even in comments and strings",
                    self.src[at]
                ),
            ));
        }
    }

    fn string(&mut self) {
        let lo = self.pos;
        self.pos += 1;
        loop {
            match self.src.get(self.pos) {
                None | Some(b'\n') => {
                    self.error(lo, lo + 1, "unterminated string literal");
                    self.push(TokenKind::Error, lo);
                    return;
                }
                Some(b'"') => {
                    self.pos += 1;
                    self.push(TokenKind::String, lo);
                    self.check_ascii(lo, self.pos, "string");
                    return;
                }
                Some(b'\\') => self.pos += 2.min(self.src.len() - self.pos),
                Some(_) => self.pos += 1,
            }
        }
    }

    pub(super) fn number(&mut self) {
        let lo = self.pos;
        let b0 = self.src[lo];
        let b1 = self.peek(1);
        let kind = if b0 == b'.' {
            self.pos += 1;
            self.eat_while(DIGIT);
            if matches!(self.peek(0), b'e' | b'E') {
                let p = if matches!(self.peek(1), b'+' | b'-') {
                    2
                } else {
                    1
                };
                if is(self.peek(p), DIGIT) {
                    self.pos += p;
                    self.eat_while(DIGIT);
                }
            }
            TokenKind::Float
        } else if b0 == b'0' && matches!(b1, b'x' | b'X') {
            self.pos += 2;
            self.digits(lo, HEX, "hexadecimal", TokenKind::Int)
        } else if b0 == b'0' && matches!(b1, b'b' | b'B') {
            self.pos += 2;
            let start = self.pos;
            while matches!(self.peek(0), b'0' | b'1') {
                self.pos += 1;
            }
            if self.pos == start {
                self.bad_literal(lo, "binary literal `0b` needs at least one binary digit")
            } else {
                self.suffix_u();
                TokenKind::Int
            }
        } else if b0 == b'0' && matches!(b1, b'f' | b'F' | b'd' | b'D') {
            self.pos += 2;
            let start = self.pos;
            self.eat_while(HEX);
            let want = if matches!(b1, b'f' | b'F') { 8 } else { 16 };
            if self.pos - start != want {
                let what = if want == 8 { "single" } else { "double" };
                let msg = format!(
                    "{what}-precision hex float `0{}` needs exactly {want} hex digits, found {}",
                    b1 as char,
                    self.pos - start
                );
                self.bad_literal(lo, &msg)
            } else {
                TokenKind::Float
            }
        } else {
            self.eat_while(DIGIT);
            let mut float = false;
            // `1.5`, `5.`, `1.e3`, `.5`; but not `1.x` (no PTX operand looks like it,
            // and it keeps a directive after a number a directive).
            let next = self.peek(1);
            if self.peek(0) == b'.'
                && (is(next, DIGIT) || !is(next, FOLLOW) || matches!(next, b'e' | b'E'))
            {
                float = true;
                self.pos += 1;
                self.eat_while(DIGIT);
            }
            if matches!(self.peek(0), b'e' | b'E') {
                let mut p = 1;
                if matches!(self.peek(1), b'+' | b'-') {
                    p = 2;
                }
                if is(self.peek(p), DIGIT) {
                    float = true;
                    self.pos += p;
                    self.eat_while(DIGIT);
                }
            }
            if float {
                TokenKind::Float
            } else {
                let digits = &self.src[lo..self.pos];
                if digits.len() > 1 && digits[0] == b'0' && digits.iter().any(|&d| d > b'7') {
                    self.bad_literal(lo, "invalid digit in octal literal")
                } else {
                    self.suffix_u();
                    TokenKind::Int
                }
            }
        };
        if kind != TokenKind::Error && is(self.peek(0), FOLLOW) {
            let kind = self.bad_literal(lo, "invalid character in numeric literal");
            self.push(kind, lo);
            return;
        }
        self.push(kind, lo);
    }

    fn digits(&mut self, lo: usize, class: u8, what: &str, kind: TokenKind) -> TokenKind {
        let start = self.pos;
        self.eat_while(class);
        if self.pos == start {
            return self.bad_literal(
                lo,
                &format!("{what} literal needs at least one digit after its prefix"),
            );
        }
        self.suffix_u();
        kind
    }

    fn suffix_u(&mut self) {
        if self.peek(0) == b'U' {
            self.pos += 1;
        }
    }

    /// Reports a malformed literal, swallowing the rest of the word it is in.
    fn bad_literal(&mut self, lo: usize, msg: &str) -> TokenKind {
        self.eat_while(FOLLOW);
        self.error(lo, self.pos, msg.to_string());
        TokenKind::Error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::{lex, xorshift};
    use crate::source::FileId;

    /// The tight token loop (`common_tokens`) lexes exactly as `any_token` alone
    /// does: same tokens, same diagnostics, on random runs of numbers, angle
    /// brackets, qualifiers and names.
    #[test]
    fn tight_loop_agrees_with_any_token() {
        let pieces = [
            "0", "07", "08", "123", "1.5", "5.", "1e5", "0x1F", "5U", "12ab", "L2::128B", "::1X",
            "<", "<<", "<=", ">", ">>", ">=", "<>", "%r", "%", "a", ".b32", ".5", "[", "]", ";",
            "::", ",", "+", "-", ":", "@", "=", " ", "\n", "\t", "x", "_y", "$z", "9", "00",
        ];
        let mut rand = xorshift(0x2545_f491_4f6c_dd1d);
        for _ in 0..4000 {
            let n = 1 + rand() % 30;
            let text: String = (0..n)
                .map(|_| pieces[(rand() % pieces.len() as u64) as usize])
                .collect();
            let src = text.as_bytes();
            let fast = lex(FileId(0), src);
            let mut slow = Lexer::new(FileId(0), src, Vec::new(), Bodies::Full);
            while slow.pos < src.len() {
                slow.any_token();
            }
            assert_eq!(fast.tokens, slow.out.tokens, "{text:?}");
            assert_eq!(fast.errors, slow.out.errors, "{text:?}");
        }
    }

    fn kinds(src: &str) -> Vec<(TokenKind, String)> {
        let l = lex(FileId(0), src.as_bytes());
        assert!(l.errors.is_empty(), "{:?}", l.errors);
        l.tokens
            .iter()
            .map(|t| {
                (
                    t.kind,
                    String::from_utf8(t.text(src.as_bytes()).to_vec()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn numeric_literals() {
        use TokenKind::*;
        let toks = kinds(
            "0x1fU 017 0b101U 42 42U 0 0f3F800000 0D3FF0000000000000 1.5 2e10 6.0 .5, 5., 1.e3 1.5E+2",
        );
        let got: Vec<_> = toks.iter().map(|t| t.0).filter(|&k| k != Punct).collect();
        assert_eq!(
            got,
            vec![
                Int, Int, Int, Int, Int, Int, Float, Float, Float, Float, Float, Float, Float,
                Float, Float
            ]
        );
    }

    #[test]
    fn identifiers_and_directives() {
        use TokenKind::*;
        let toks = kinds("ld.global.u32 %r1, [_$_str+4]; %tid.x tex.2d % $LC0 _");
        let got: Vec<_> = toks.iter().map(|(k, s)| (*k, s.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (Ident, "ld"),
                (Directive, ".global"),
                (Directive, ".u32"),
                (Ident, "%r1"),
                (Punct, ","),
                (Punct, "["),
                (Ident, "_$_str"),
                (Punct, "+"),
                (Int, "4"),
                (Punct, "]"),
                (Punct, ";"),
                (Ident, "%tid"),
                (Directive, ".x"),
                (Ident, "tex"),
                (Directive, ".2d"),
                (Punct, "%"),
                (Ident, "$LC0"),
                (Ident, "_"),
            ]
        );
    }

    #[test]
    fn qualifier_values_after_double_colon() {
        // Found by differential testing against ptxas (docs/front-end.md).
        for src in [
            "ld.global.L2::128B.u32 %r1, [%rd1];",
            "cp.async.cg.shared.global.L2::256B [%r1], [%rd1], 16;",
            "x.scale_vec::1X.cta_group::1",
        ] {
            let l = lex(FileId(0), src.as_bytes());
            assert!(l.errors.is_empty(), "{src}: {:?}", l.errors);
        }
    }

    #[test]
    fn comments_are_trivia() {
        let src = "a // x\n/* y\n z */ b";
        let l = lex(FileId(0), src.as_bytes());
        assert_eq!(l.tokens.len(), 2);
        assert_eq!(l.comments.len(), 2);
    }

    #[test]
    fn errors_are_located() {
        let cases: &[(&str, u32)] = &[
            ("a \"abc\nb", 2),
            ("a /* never closed", 2),
            ("mov é", 4),
            ("0x;", 0),
            ("0f123;", 0),
            ("08", 0),
            ("12ab", 0),
        ];
        for &(src, at) in cases {
            let l = lex(FileId(0), src.as_bytes());
            assert_eq!(l.errors.len(), 1, "{src:?}: {:?}", l.errors);
            assert_eq!(l.errors[0].span().unwrap().lo, at, "{src:?}");
        }
    }

    #[test]
    fn lexing_stops_at_nul_like_ptxas() {
        let l = lex(FileId(0), b"a b\0\0\n");
        assert!(l.errors.is_empty());
        assert_eq!(l.tokens.len(), 2);
        let l = lex(FileId(0), b"a\0junk");
        assert_eq!(l.tokens.len(), 1);
        assert_eq!(l.errors.len(), 1);
        assert!(!l.errors[0].is_error());
    }

    #[test]
    fn non_ascii_in_comments_and_strings_is_only_a_warning() {
        let l = lex(FileId(0), "// é\n.pragma \"ü\"; /* ß */".as_bytes());
        assert_eq!(l.errors.len(), 1, "one warning per file");
        assert!(!l.errors[0].is_error());
        assert_eq!(l.errors[0].span().unwrap().lo, 3);
        assert_eq!(l.tokens.len(), 3);
    }
}
