//! Byte-level lexer for PTX.
//!
//! PTX is ASCII; the lexer works on bytes and never validates UTF-8. Whitespace and
//! comments are trivia: they produce no token, but block and line comments are
//! remembered (producers hide meaning in them, e.g. GCC's `//:FUNC_MAP "name"`).
//! Every byte of the input is either inside a token, inside a comment, or whitespace,
//! so the token spans plus the gaps between them reproduce the file exactly.
//!
//! Lexing never fails: a bad byte or a malformed literal is reported as a diagnostic
//! and lexed as an [`TokenKind::Error`] token, so the parser can go on.

use crate::diag::Diagnostic;
use crate::source::{FileId, Span};

mod compact;
mod operand_skip;
mod scan;

/// What a token is. The token's text is always its span in the source.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TokenKind {
    /// An identifier: `[a-zA-Z][a-zA-Z0-9_$]*` or `[_$%][a-zA-Z0-9_$]*`.
    Ident,
    /// A dot word: `.version`, `.u32`, `.global`, and opcode suffixes like `.2d`.
    Directive,
    /// An integer literal (decimal, hex, octal, binary; optional `U`).
    Int,
    /// A float literal: decimal (`1.5`, `2e3`) or exact hex (`0f3F800000`, `0d...`).
    Float,
    /// A string literal, quotes included.
    String,
    /// Punctuation or an operator of one or two bytes.
    Punct,
    /// Bytes that form no valid token; a diagnostic was reported for them.
    Error,
}

/// One token: kind and byte span.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// What it is.
    pub kind: TokenKind,
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Token {
    /// The token's span.
    pub fn span(self) -> Span {
        Span::new(self.lo, self.hi)
    }

    /// The token's bytes in `src`.
    pub fn text(self, src: &[u8]) -> &[u8] {
        &src[self.lo as usize..self.hi as usize]
    }
}

/// The lexer's output for one file.
#[derive(Debug, Default)]
pub struct Lexed {
    /// All tokens in source order.
    pub tokens: Vec<Token>,
    /// Spans of all comments, in source order.
    pub comments: Vec<Span>,
    /// Lexical errors and warnings, in source order.
    pub errors: Vec<Diagnostic>,
    /// The `{` of each function body not lexed in full ([`lex_bodies_into`]), in order.
    pub compacted: Vec<u32>,
}

// Byte classes, looked up through one table so the hot loop does one load per byte.
const WS: u8 = 1; // whitespace
const ID_START: u8 = 2; // [a-zA-Z]
const ID_PREFIX: u8 = 4; // [_$%]
const FOLLOW: u8 = 8; // [a-zA-Z0-9_$]
const DIGIT: u8 = 16; // [0-9]
const HEX: u8 = 32; // [0-9a-fA-F]

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

static CLASS: [u8; 256] = class_table();

#[inline]
fn is(b: u8, class: u8) -> bool {
    CLASS[b as usize] & class != 0
}

/// Lexes `src` (the bytes of `file`). `src.len()` must fit in `u32`.
pub fn lex(file: FileId, src: &[u8]) -> Lexed {
    lex_into(file, src, Vec::new())
}

/// Like [`lex`], reusing `tokens`' allocation (its contents are discarded): a
/// thread that lexes many files allocates and faults in its token array once.
pub fn lex_into(file: FileId, src: &[u8], tokens: Vec<Token>) -> Lexed {
    lex_with(file, src, tokens, Bodies::Full)
}

/// How the lexer treats function bodies.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Bodies {
    /// Every token.
    Full,
    /// Compactly where that is exact for the body walk (see `lex/compact.rs`): an
    /// instruction keeps only its opcode, the identifiers among its operands other
    /// than `%`-names, its braces and its `;`; everything else keeps all its tokens.
    Compact,
    /// Not at all: a body becomes its `{` and `}` tokens, found by matching braces
    /// outside comments and strings; [`lex_body`] lexes it later. A module's tokens
    /// are then those of its declarations only.
    Deferred,
}

/// Like [`lex_into`], with function bodies treated as `bodies` says.
/// [`Lexed::compacted`] lists the bodies that were not lexed in full; the parser
/// checks that it agrees they are bodies (see `parse::parse_module_deferred`).
pub fn lex_bodies_into(file: FileId, src: &[u8], tokens: Vec<Token>, bodies: Bodies) -> Lexed {
    lex_with(file, src, tokens, bodies)
}

/// Whether an identifier may name a module-scope symbol of the module being lexed.
pub type MayBeSymbol<'f> = &'f dyn Fn(&[u8]) -> bool;

/// Lexes the function body whose `{` is at `lo` (one a [`Bodies::Deferred`] lexing
/// left out) into `reuse`'s allocations (one walk lexes many bodies; their
/// contents are discarded): compactly if that is exact, in full otherwise. Returns
/// the tokens, comments and diagnostics, and the position after the body's `}` (the
/// end of input if it has none).
///
/// With `symbols`, a compactly lexed instruction also leaves out the operand
/// identifiers for which it says false, and the whole instruction (opcode, guard,
/// braces, `;`) when nothing of it is left: the body walk would find no reference
/// in it. Labels and declarations keep all their tokens, so shadowing and the
/// names debug sections look for are as before, except that with `skip_definitions`
/// too, a declaration of `%`-named registers only (`.reg .b32
/// %r<5>;`) in its plain shape and a label `symbols` rejects leave no token: the
/// caller promises that no module-scope name starts with `%` (so no register shadows
/// one) and that no debug section asks for the names defined in the body.
pub fn lex_body(
    file: FileId,
    src: &[u8],
    lo: usize,
    reuse: Lexed,
    symbols: Option<MayBeSymbol<'_>>,
    skip_definitions: bool,
) -> (Lexed, usize) {
    let mut lx = Lexer::reusing(file, src, reuse, Bodies::Compact);
    lx.symbols = symbols;
    lx.skip_definitions = skip_definitions && symbols.is_some();
    lx.pos = lo;
    if !lx.compact_body() {
        lx.full_body();
    }
    let end = lx.pos;
    (lx.out, end)
}

fn lex_with(file: FileId, src: &[u8], tokens: Vec<Token>, bodies: Bodies) -> Lexed {
    let mut lx = Lexer::new(file, src, tokens, bodies);
    // PTX averages roughly one token per 4-5 bytes. With bodies deferred only
    // module-scope tokens remain, usually one per 30 bytes or far fewer (one large
    // kernel): the guess is capped, and the array grows as needed beyond it.
    let guess = match bodies {
        Bodies::Deferred => (src.len() / 32).min(1 << 20),
        _ => src.len() / 4,
    };
    lx.out.tokens.reserve(guess + 16);
    lx.run();
    lx.out
}

struct Lexer<'a> {
    file: FileId,
    src: &'a [u8],
    pos: usize,
    out: Lexed,
    warned_non_ascii: bool,
    /// What to do with function bodies.
    bodies: Bodies,
    /// Brace depth at module scope (bodies lexed compactly are not counted).
    depth: u32,
    /// In a body lexed by [`lex_body`] with it: which operand identifiers to keep.
    symbols: Option<MayBeSymbol<'a>>,
    /// In a body lexed by [`lex_body`] with it: plain register declarations and
    /// labels that name no module-scope symbol are skipped without tokens.
    skip_definitions: bool,
    /// In a compactly lexed instruction: its opcode, until an operand identifier is
    /// kept (see `Lexer::instruction_or_label`).
    pending_opcode: Option<Token>,
    /// The operand scan's last window (`lex/operand_skip.rs`).
    events: operand_skip::Events,
}

impl<'a> Lexer<'a> {
    fn new(file: FileId, src: &'a [u8], tokens: Vec<Token>, bodies: Bodies) -> Self {
        let out = Lexed {
            tokens,
            ..Lexed::default()
        };
        Self::reusing(file, src, out, bodies)
    }

    /// A lexer writing into `out`'s allocations (their contents are discarded).
    fn reusing(file: FileId, src: &'a [u8], mut out: Lexed, bodies: Bodies) -> Self {
        out.tokens.clear();
        out.comments.clear();
        out.errors.clear();
        out.compacted.clear();
        Lexer {
            file,
            src,
            pos: 0,
            warned_non_ascii: false,
            bodies,
            depth: 0,
            symbols: None,
            skip_definitions: false,
            pending_opcode: None,
            events: operand_skip::Events::new(),
            out,
        }
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.pos + ahead).copied().unwrap_or(0)
    }

    fn push(&mut self, kind: TokenKind, lo: usize) {
        self.out.tokens.push(Token {
            kind,
            lo: lo as u32,
            hi: self.pos as u32,
        });
    }

    fn error(&mut self, lo: usize, hi: usize, msg: impl Into<String>) {
        self.out.errors.push(Diagnostic::error(
            self.file,
            Span::new(lo as u32, hi as u32),
            msg,
        ));
    }

    fn eat_while(&mut self, class: u8) {
        while self.pos < self.src.len() && is(self.src[self.pos], class) {
            self.pos += 1;
        }
    }

    fn run(&mut self) {
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
    fn common_tokens<const STATEMENT: bool>(&mut self) {
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
    fn any_token(&mut self) {
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

    fn number(&mut self) {
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

/// The end of the directive or modifier at `p` (`.u32`, `.param`; a `.` there): a
/// `.` followed by name characters, the first not a digit. `None` for anything else
/// (`.5` is a number, a lone `.` punctuation).
#[inline(always)]
fn modifier_end(src: &[u8], p: usize) -> Option<usize> {
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
fn plain_decimal_end(src: &[u8], p: usize) -> Option<usize> {
    let mut end = p + 1;
    while end < src.len() && is(src[end], DIGIT) {
        end += 1;
    }
    let ends = src.get(end).is_none_or(|&b| !is(b, FOLLOW) && b != b'.');
    (ends && (src[p] != b'0' || end == p + 1)).then_some(end)
}

/// A small deterministic random number generator for the lexer's property tests.
#[cfg(test)]
fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(l.errors[0].span.lo, at, "{src:?}");
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
        assert_eq!(l.errors[0].span.lo, 3);
        assert_eq!(l.tokens.len(), 3);
    }
}
