//! Function bodies lexed compactly or later ([`super::Bodies`]).
//!
//! Most of a module's bytes are instructions, and the body walk (parse/body.rs) reads
//! only three things in an instruction's operands: identifiers (possible references
//! to module-scope symbols), braces and the closing `;`. Registers (`%r1`) can only
//! name a module-scope symbol in a module that declares a `%`-name, which the parser
//! checks afterwards. So for an ordinary instruction this lexer pushes the opcode,
//! the operands' other identifiers, braces and the `;`, and skips the rest without
//! making tokens of it: about a quarter of the tokens of a body remain.
//!
//! Exactness comes first. A statement that is not an ordinary instruction (a label,
//! declaration, `.loc`, `call`, `shfl`/`vote`, or an instruction with a `:` or a
//! string in it) is lexed in full, token by token, as the ordinary lexer would. A
//! body with anything the walk could report (a lexical diagnostic, a stray
//! statement, the end of input) is given up: everything it pushed is taken back and
//! the body is lexed in full.

use super::operand_skip::{name_end_cached, next_event_cached, space_end_cached};
use super::scan::{find_newline, skip_whitespace};
use super::{Lexer, Token, TokenKind, CLASS, DIGIT, FOLLOW, ID_START, WS};

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

/// Where a statement or body started, to take back what was pushed after it.
#[derive(Clone, Copy)]
struct Mark {
    pos: usize,
    tokens: usize,
    comments: usize,
    errors: usize,
    warned_non_ascii: bool,
}

/// How an instruction's compact lexing ended.
enum Outcome {
    /// Lexed compactly up to and including its `;`.
    Done,
    /// Needs lexing in full (from the statement's start).
    Full,
}

impl Lexer<'_> {
    fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            tokens: self.out.tokens.len(),
            comments: self.out.comments.len(),
            errors: self.out.errors.len(),
            warned_non_ascii: self.warned_non_ascii,
        }
    }

    fn reset(&mut self, m: Mark) {
        self.pending_opcode = None;
        self.pos = m.pos;
        self.out.tokens.truncate(m.tokens);
        self.out.comments.truncate(m.comments);
        self.out.errors.truncate(m.errors);
        self.warned_non_ascii = m.warned_non_ascii;
    }

    /// At a module-scope `{`: true if it opens a function body, i.e. a `.func` or
    /// `.entry` directive came since the last module-scope `;` or `}` and the `{` does
    /// not follow `=` (an initializer). The parser confirms it.
    pub(super) fn opens_body(&self) -> bool {
        let src = self.src;
        let is_punct = |t: &Token, p: u8| t.kind == TokenKind::Punct && t.text(src) == [p];
        let toks = &self.out.tokens;
        if toks.last().is_some_and(|t| is_punct(t, b'=')) {
            return false;
        }
        toks.iter()
            .rev()
            .take_while(|t| !is_punct(t, b';') && !is_punct(t, b'}'))
            .any(|t| t.kind == TokenKind::Directive && matches!(t.text(src), b".func" | b".entry"))
    }

    /// At the `{` of a function body: lexes the body compactly and returns true, or
    /// returns false having consumed and pushed nothing.
    pub(super) fn compact_body(&mut self) -> bool {
        let start = self.mark();
        if self.body_statements().is_some() && self.out.errors.len() == start.errors {
            self.out.compacted.push(start.pos as u32);
            true
        } else {
            self.reset(start);
            false
        }
    }

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

    /// Lexes in full from the `{` at the current position through its matching `}`
    /// (or to the end of input).
    pub(super) fn full_body(&mut self) {
        let mut depth = 0u32;
        while self.pos < self.src.len() {
            let before = self.out.tokens.len();
            self.any_token();
            let Some(t) = self.out.tokens.get(before).copied() else {
                continue;
            };
            if t.kind == TokenKind::Punct {
                match t.text(self.src) {
                    b"{" => depth += 1,
                    b"}" => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The statements of the body from its `{` to its matching `}`; `None` gives the
    /// body up.
    fn body_statements(&mut self) -> Option<()> {
        self.punct1();
        let mut depth = 1u32;
        loop {
            self.skip_trivia()?;
            let b = self.src[self.pos];
            match b {
                b'{' => {
                    self.punct1();
                    depth += 1;
                }
                b'}' => {
                    self.punct1();
                    depth -= 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
                b';' => self.punct1(),
                b'.' => self.directive_statement()?,
                b'@' | b'_' | b'$' => self.instructions()?,
                _ if CLASS[b as usize] & ID_START != 0 => self.instructions()?,
                _ => return None,
            }
        }
    }

    /// Pushes the one-byte punctuation at the current position.
    fn punct1(&mut self) {
        self.pos += 1;
        self.push(TokenKind::Punct, self.pos - 1);
    }

    /// Skips whitespace and comments (recording the comments); `None` at the end of
    /// input. Inlined always: it runs twice per instruction, and a call costs more
    /// than the usual work (a few bytes of whitespace).
    #[inline(always)]
    fn skip_trivia(&mut self) -> Option<()> {
        let src = self.src;
        loop {
            self.pos = skip_whitespace(src, self.pos);
            if self.pos >= src.len() {
                return None;
            }
            if src[self.pos] == b'/' && matches!(self.peek(1), b'/' | b'*') {
                self.any_token();
            } else {
                return Some(());
            }
        }
    }

    /// Lexes the next token in full; `None` at the end of input or a bad token.
    fn lex_one(&mut self) -> Option<Token> {
        self.skip_trivia()?;
        let before = self.out.tokens.len();
        self.any_token();
        let t = *self.out.tokens[before..].first()?;
        (t.kind != TokenKind::Error).then_some(t)
    }

    /// Lexes in full up to and including the `;` that ends the current statement.
    fn full_statement(&mut self) -> Option<()> {
        let mut depth = 0u32;
        loop {
            // Identifiers, `%`-names, modifiers and most punctuation in the lexer's
            // tight loop, through a `;`; the rest (braces, literals, comments) below.
            let before = self.out.tokens.len();
            self.common_tokens::<true>();
            if self.out.tokens.len() > before && self.src[self.pos - 1] == b';' {
                if depth == 0 {
                    return Some(());
                }
                continue;
            }
            let t = self.lex_one()?;
            if t.kind == TokenKind::Punct {
                match t.text(self.src) {
                    b";" if depth == 0 => return Some(()),
                    b"{" => depth += 1,
                    b"}" if depth == 0 => return None,
                    b"}" => depth -= 1,
                    _ => {}
                }
            }
        }
    }

    /// A statement starting with a directive, lexed in full. Only the directives the
    /// body walk knows are taken; `.loc` has no `;` and is lexed as `loc_args` reads it.
    fn directive_statement(&mut self) -> Option<()> {
        if self.skip_definitions {
            if let Some(end) = register_declaration_end(self.src, self.pos) {
                self.pos = end;
                return Some(());
            }
        }
        let t = self.lex_one()?;
        if t.kind != TokenKind::Directive {
            return None;
        }
        let text = t.text(self.src);
        if text == b".loc" {
            return self.loc_args();
        }
        let known = crate::ir::StateSpace::from_directive(text).is_some()
            || matches!(
                text,
                b".attribute"
                    | b".align"
                    | b".pragma"
                    | b".calltargets"
                    | b".branchtargets"
                    | b".callprototype"
            );
        if known {
            self.full_statement()
        } else {
            None
        }
    }

    /// `F L C {, function_name label [+ N] | , inlined_at F L C}` after `.loc`.
    fn loc_args(&mut self) -> Option<()> {
        let int = |lx: &mut Self| lx.lex_one().filter(|t| t.kind == TokenKind::Int);
        let ident = |lx: &mut Self| lx.lex_one().filter(|t| t.kind == TokenKind::Ident);
        for _ in 0..3 {
            int(self)?;
        }
        loop {
            self.skip_trivia()?;
            if self.src[self.pos] != b',' {
                return Some(());
            }
            self.punct1();
            let key = ident(self)?;
            match key.text(self.src) {
                b"function_name" => {
                    ident(self)?;
                    self.skip_trivia()?;
                    if self.src[self.pos] == b'+' {
                        self.punct1();
                        int(self)?;
                    }
                }
                b"inlined_at" => {
                    for _ in 0..3 {
                        int(self)?;
                    }
                }
                _ => return None,
            }
        }
    }

    /// At a statement that starts with a name or a guard: passes over it and the
    /// statements after it while [`Self::quiet_statement_end`] finds they leave
    /// nothing (plain register declarations too, where those leave nothing), and
    /// lexes the first one that may leave something as [`Self::instruction_or_label`]
    /// does. Stops before anything else (a brace, a directive, a comment).
    fn instructions(&mut self) -> Option<()> {
        if self.symbols.is_none() {
            return self.instruction_or_label();
        }
        let src = self.src;
        loop {
            let Some(end) = self.quiet_statement_end() else {
                return self.instruction_or_label();
            };
            self.pos = space_end_cached(src, end, &mut self.events);
            loop {
                match src.get(self.pos) {
                    Some(&b) if starts_identifier(b) || b == b'@' => break,
                    Some(b'.') if self.skip_definitions => {
                        match register_declaration_end(src, self.pos) {
                            Some(end) => self.pos = space_end_cached(src, end, &mut self.events),
                            None => return Some(()),
                        }
                    }
                    _ => return Some(()),
                }
            }
        }
    }

    /// At a statement that starts with a name or a guard: the position after it if
    /// [`Self::instruction_or_label`] would leave nothing of it, found without the
    /// steps that lexing takes; `None` if it might leave something, or if that is not
    /// certain (the caller then lexes it as before).
    ///
    /// That is the case, with a symbol filter, for a label the filter rejects (and no
    /// body names are recorded), and for an instruction other than `call`, `shfl` and
    /// `vote` whose operands, up to its `;`, are only what [`next_event_cached`]
    /// skips, plain decimal and exact hex-float literals, and identifiers the filter
    /// rejects. Those are the bytes the operand loop passes over without pushing a
    /// token or a diagnostic, with the same tests, so both paths agree; anything else
    /// (a brace, a comment, a string, a colon after an operand, another literal, an
    /// identifier that may be a symbol) goes to the operand loop.
    /// Four fifths of a body's statements are such instructions.
    #[inline(always)]
    fn quiet_statement_end(&mut self) -> Option<usize> {
        let may = self.symbols?;
        let src = self.src;
        let name_start = |i: usize| src.get(i).is_some_and(|&b| starts_identifier(b));
        let mut lo = self.pos;
        // `@p` or `@!p`, with whitespace only: the guard is a `%`-name or an
        // identifier, kept by the lexer if the filter takes it.
        let guarded = src[lo] == b'@';
        if guarded {
            let mut p = skip_whitespace(src, lo + 1);
            if src.get(p) == Some(&b'!') {
                p = skip_whitespace(src, p + 1);
            }
            let guard = p;
            let percent_name = src.get(p) == Some(&b'%')
                && src
                    .get(p + 1)
                    .is_some_and(|&b| CLASS[b as usize] & FOLLOW != 0);
            if !(percent_name || name_start(p)) {
                return None;
            }
            p = name_end_cached(src, p + 1, &mut self.events);
            if may(&src[guard..p]) {
                return None;
            }
            lo = skip_whitespace(src, p);
            if !name_start(lo) {
                return None;
            }
        }
        let mut p = name_end_cached(src, lo + 1, &mut self.events);
        let opcode = &src[lo..p];
        if matches!(opcode, b"call" | b"shfl" | b"vote") {
            return None;
        }
        if self.skip_definitions && !guarded && src.get(p) != Some(&b'.') {
            let after = space_end_cached(src, p, &mut self.events);
            if src.get(after) == Some(&b':') {
                return (!may(opcode)).then_some(after + 1);
            }
        }
        loop {
            p = next_event_cached(src, p, &mut self.events);
            let &b = src.get(p)?;
            if b == b';' {
                return Some(p + 1);
            }
            let class = CLASS[b as usize];
            if class & DIGIT != 0 {
                p = simple_literal_end(src, p)?;
            } else if starts_identifier(b) {
                let name = p;
                p = name_end_cached(src, p + 1, &mut self.events);
                if may(&src[name..p]) {
                    return None;
                }
            } else {
                return None;
            }
        }
    }

    /// A label (`L:`), or an instruction with an optional guard.
    fn instruction_or_label(&mut self) -> Option<()> {
        let start = self.mark();
        let src = self.src;
        let guarded = src[self.pos] == b'@';
        // Whether the guard may be a reference (see `lex_body`).
        let mut guard_kept = false;
        if guarded {
            self.punct1();
            self.skip_trivia()?;
            if src[self.pos] == b'!' {
                self.punct1();
            }
            let guard = self.lex_one()?;
            if guard.kind != TokenKind::Ident {
                return None;
            }
            guard_kept = self.symbols.is_none_or(|may| may(guard.text(src)));
            self.skip_trivia()?;
            let b = src[self.pos];
            if CLASS[b as usize] & ID_START == 0 && !matches!(b, b'_' | b'$') {
                self.reset(start);
                return self.full_statement();
            }
        }
        let lo = self.pos;
        self.pos += 1;
        self.eat_while(FOLLOW);
        let opcode = Token {
            kind: TokenKind::Ident,
            lo: lo as u32,
            hi: self.pos as u32,
        };
        self.skip_trivia()?;
        if src[self.pos] == b':' {
            if guarded {
                self.reset(start);
                return self.full_statement();
            }
            // A label that names no module-scope symbol shadows nothing: the walk
            // needs it only when it records the body's names.
            if self.skip_definitions && !self.symbols.is_some_and(|may| may(opcode.text(src))) {
                self.pos += 1;
                return Some(());
            }
            self.out.tokens.push(opcode);
            self.punct1();
            return Some(());
        }
        // `call` and `shfl`/`vote` are read further by the walk; keep all their tokens.
        if matches!(opcode.text(src), b"call" | b"shfl" | b"vote") {
            self.reset(start);
            return self.full_statement();
        }
        // With `symbols` and no guard kept, the opcode is pushed only before the
        // first identifier kept: an instruction naming no symbol is left out whole
        // (the walk would find nothing in it; comments stay recorded).
        if self.symbols.is_some() && !guard_kept {
            self.pending_opcode = Some(opcode);
        } else {
            self.out.tokens.push(opcode);
        }
        match self.operands()? {
            Outcome::Done => {
                if self.pending_opcode.take().is_some() {
                    self.out.tokens.truncate(start.tokens);
                }
                Some(())
            }
            Outcome::Full => {
                self.reset(start);
                self.full_statement()
            }
        }
    }

    /// An instruction's modifiers and operands, through its `;`, keeping only
    /// identifiers other than `%`-names, braces and the `;`. The bytes in between are
    /// skipped 64 at a time ([`next_event_cached`]); this loop sees only the others.
    fn operands(&mut self) -> Option<Outcome> {
        let src = self.src;
        let mut depth = 0u32;
        let mut pos = self.pos;
        loop {
            // Every step ends at a byte that is not a name character, or at one
            // whose predecessor is not a name character, `%` or `.`: the vector
            // scan's rule for name characters holds from there.
            pos = next_event_cached(src, pos, &mut self.events);
            match self.operand_step(&mut pos, &mut depth)? {
                Step::Next => {}
                Step::End(outcome) => {
                    self.pos = pos;
                    return Some(outcome);
                }
            }
        }
    }

    /// One token (or byte) of an instruction's operands at `pos`, as [`Self::operands`]
    /// reads them; `None` at the end of input.
    #[inline(always)]
    fn operand_step(&mut self, pos: &mut usize, depth: &mut u32) -> Option<Step> {
        let src = self.src;
        let len = src.len();
        let follows = |i: usize| i < len && CLASS[src[i] as usize] & FOLLOW != 0;
        let mut p = *pos;
        if p >= len {
            return None;
        }
        let b = src[p];
        let class = CLASS[b as usize];
        // Tested first: every instruction ends at one, and most have no other event.
        if b == b';' && *depth == 0 {
            *pos = p + 1;
            if self.pending_opcode.is_some() {
                return Some(Step::End(Outcome::Done));
            }
            self.out.tokens.push(Token {
                kind: TokenKind::Punct,
                lo: p as u32,
                hi: p as u32 + 1,
            });
            return Some(Step::End(Outcome::Done));
        }
        let step = if class & WS != 0 {
            p += 1;
            Step::Next
        } else if b == b'%' && follows(p + 1) {
            p += 2;
            while follows(p) {
                p += 1;
            }
            Step::Next
        } else if starts_identifier(b) {
            let lo = p;
            p += 1;
            while follows(p) {
                p += 1;
            }
            if self.symbols.is_none_or(|may| may(&src[lo..p])) {
                if let Some(opcode) = self.pending_opcode.take() {
                    self.out.tokens.push(opcode);
                }
                self.out.tokens.push(Token {
                    kind: TokenKind::Ident,
                    lo: lo as u32,
                    hi: p as u32,
                });
            }
            Step::Next
        } else if let Some(end) = super::modifier_end(src, p) {
            // A modifier (`.u32`) or a vector component (`%tid.x`).
            p = end;
            Step::Next
        } else if class & DIGIT != 0 {
            // A plain decimal is skipped; anything else goes through the ordinary
            // literal lexer, which decides where it ends and whether it is valid (its
            // token is then dropped).
            if let Some(end) = simple_literal_end(src, p) {
                p = end;
                Step::Next
            } else {
                let (tokens, errors) = (self.out.tokens.len(), self.out.errors.len());
                self.pos = p;
                self.number();
                p = self.pos;
                // A literal takes the whole run of name characters (trailing letters
                // are its error), which [`Self::operands`] relies on.
                debug_assert!(p >= len || CLASS[src[p] as usize] & FOLLOW == 0);
                self.out.tokens.truncate(tokens);
                if self.out.errors.len() != errors {
                    Step::End(Outcome::Full)
                } else {
                    Step::Next
                }
            }
        } else {
            match b {
                b'{' | b'}' => {
                    if b == b'{' {
                        *depth += 1;
                    } else if *depth > 0 {
                        *depth -= 1;
                    } else {
                        return Some(Step::End(Outcome::Full));
                    }
                    p += 1;
                    // The walk needs operand braces only to find the `;` that ends
                    // the instruction, and a `;` inside them is never lexed compactly.
                    if self.symbols.is_none() {
                        self.out.tokens.push(Token {
                            kind: TokenKind::Punct,
                            lo: p as u32 - 1,
                            hi: p as u32,
                        });
                    }
                    Step::Next
                }
                b'/' if p + 1 < len && matches!(src[p + 1], b'/' | b'*') => {
                    self.pos = p;
                    self.any_token();
                    p = self.pos;
                    Step::Next
                }
                b',' | b'[' | b']' | b'+' | b'-' | b'(' | b')' | b'!' | b'*' | b'/' | b'|'
                | b'&' | b'^' | b'~' | b'<' | b'>' | b'=' | b'?' | b'@' => {
                    p += 1;
                    Step::Next
                }
                // `:`, strings, a lone `%`, `.5`, `;` inside braces, bytes outside
                // PTX's alphabet.
                _ => Step::End(Outcome::Full),
            }
        };
        *pos = p;
        Some(step)
    }
}

/// At a `.reg` statement: the position after its `;` if it declares `%`-named
/// registers only and in the plain shape every producer writes, `.reg .type{ .type}
/// %name[<N>]{, %name[<N>]};` (ASCII, whitespace between the directives, no comment,
/// no `.align` or initializer), which lexes without a diagnostic and which the body
/// walk reads without one; `None` for anything else, lexed in full as before. Such a
/// declaration is a tenth of a body's statements.
fn register_declaration_end(src: &[u8], p: usize) -> Option<usize> {
    let class = |i: usize| src.get(i).map_or(0, |&b| CLASS[b as usize]);
    let skip_ws = |i: usize| skip_whitespace(src, i);
    if !src[p..].starts_with(b".reg") || class(p + 4) & WS == 0 {
        return None;
    }
    // The type directives, each followed by whitespace.
    let mut i = skip_ws(p + 4);
    let mut types = 0;
    while src.get(i) == Some(&b'.') {
        i = super::modifier_end(src, i)?;
        if class(i) & WS == 0 {
            return None;
        }
        i = skip_ws(i);
        types += 1;
    }
    if types == 0 {
        return None;
    }
    loop {
        // `%name`
        if src.get(i) != Some(&b'%') || class(i + 1) & FOLLOW == 0 {
            return None;
        }
        i += 2;
        while class(i) & FOLLOW != 0 {
            i += 1;
        }
        i = skip_ws(i);
        // `<N>`
        if src.get(i) == Some(&b'<') {
            i = skip_ws(i + 1);
            if class(i) & DIGIT == 0 {
                return None;
            }
            i = skip_ws(super::plain_decimal_end(src, i)?);
            if src.get(i) != Some(&b'>') {
                return None;
            }
            i = skip_ws(i + 1);
        }
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
fn simple_literal_end(src: &[u8], p: usize) -> Option<usize> {
    match super::plain_decimal_end(src, p) {
        Some(end) => Some(end),
        None => hex_float_end(src, p),
    }
}

/// True for a byte an identifier starts with (`[a-zA-Z_$]`; `%`-names are apart).
#[inline(always)]
fn starts_identifier(b: u8) -> bool {
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

/// What one step of [`Lexer::operands`] found.
enum Step {
    /// Go on with the next byte.
    Next,
    /// The instruction's lexing ended.
    End(Outcome),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::{lex_bodies_into, Bodies, HEX};
    use crate::source::FileId;

    fn texts(src: &str, compact: bool) -> (Vec<String>, usize) {
        let bodies = if compact {
            Bodies::Compact
        } else {
            Bodies::Full
        };
        let l = lex_bodies_into(FileId(0), src.as_bytes(), Vec::new(), bodies);
        let toks = l
            .tokens
            .iter()
            .map(|t| String::from_utf8_lossy(t.text(src.as_bytes())).into_owned())
            .collect();
        (toks, l.compacted.len())
    }

    const HEAD: &str = ".visible .func (.param .b32 r) f(.param .b32 p)\n";

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

    #[test]
    fn instructions_keep_opcode_names_braces_and_semicolon() {
        let body = "{\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [p+4]; // c\n@!%p1 bra $L1;\n$L1:\n mov.b64 {%r1, %r2}, g;\n}";
        let (toks, n) = texts(&format!("{HEAD}{body}"), true);
        assert_eq!(n, 1);
        let body_toks = &toks[toks.iter().position(|t| t == "{").unwrap()..];
        let want = [
            "{", ".reg", ".b32", "%r", "<", "3", ">", ";", // declarations in full
            "ld", "p", ";", // `%r1`, `.param.u32`, `[`, `+4`, `]` left out
            "@", "!", "%p1", "bra", "$L1", ";", // the guard in full
            "$L1", ":", // a label
            "mov", "{", "}", "g", ";", "}",
        ];
        assert_eq!(body_toks, want);
    }

    /// The plain register declaration is recognised to its `;` and nothing else is.
    #[test]
    fn register_declarations_are_recognised_in_their_plain_shape_only() {
        let end = |s: &str| register_declaration_end(s.as_bytes(), 0);
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
            ".local .b32 %r;",
        ] {
            assert_eq!(end(other), None, "{other}");
        }
    }

    /// With a symbol filter, instructions that may name no module-scope symbol are
    /// left out whole; the rest keep their opcode, `;` and the identifiers that may.
    #[test]
    fn a_symbol_filter_leaves_out_instructions_that_name_none() {
        let body = "{\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [p+4];\n ld.global.u32 %r2, [g];\n\
                    @%p1 bra L;\n@g bra L;\nL:\n mov.b64 {%r1, %r2}, %rd1; // c\n ret;\n}";
        let src = format!("{HEAD}{body}");
        let lo = src.find('{').unwrap();
        let may = |name: &[u8]| name == b"g";
        let (lexed, end) = crate::lex::lex_body(
            FileId(0),
            src.as_bytes(),
            lo,
            Default::default(),
            Some(&may),
            false,
        );
        assert_eq!(end, src.len());
        let toks: Vec<&str> = lexed
            .tokens
            .iter()
            .map(|t| std::str::from_utf8(t.text(src.as_bytes())).unwrap())
            .collect();
        let want = [
            "{", ".reg", ".b32", "%r", "<", "3", ">", ";", // declarations in full
            "ld", "g", ";", // only the identifier that may be a symbol
            "@", "g", "bra", ";", // a guard that may be one keeps the instruction
            "L", ":", // labels stay (they shadow)
            "}",
        ];
        assert_eq!(toks, want);
        assert_eq!(
            lexed.comments.len(),
            1,
            "comments of left-out instructions stay"
        );
    }

    #[test]
    fn calls_strings_and_colons_keep_every_token() {
        for stmt in [
            "call.uni (r), f, (p);",
            "ld.global.L2::128B.u32 %r1, [g];",
            "shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;",
            "mov.u32 %r1, 0x1F;",
        ] {
            let src = format!("{HEAD}{{\n{stmt}\n}}");
            let (full, _) = texts(&src, false);
            let (compact, n) = texts(&src, true);
            assert_eq!(n, 1, "{stmt}");
            if stmt.starts_with("mov") {
                // A hex literal goes through the literal lexer and is then left out.
                assert_eq!(compact.len(), full.len() - 4, "{stmt}: {compact:?}");
            } else {
                assert_eq!(compact, full, "{stmt}");
            }
        }
    }

    #[test]
    fn a_body_with_anything_doubtful_is_lexed_in_full() {
        for body in [
            "{ mov.u32 %r1, 08; }", // a bad literal: the diagnostic is the full lexer's
            "{ mov.u32 %r1, %r2 }", // no `;` before the `}`
            "{ mov.u32 %r1, %r2;",  // the input ends in the body
            "{ .file 1 \"a.cu\" }", // a directive bodies do not have
            "{ 5: mov.u32 %r1, %r2; }", // a statement starting with a number
            "{ mov.u32 %r1, \u{e9}; }", // a byte outside PTX's alphabet
        ] {
            let src = format!("{HEAD}{body}");
            let (full, _) = texts(&src, false);
            let (compact, n) = texts(&src, true);
            assert_eq!(n, 0, "{body}");
            assert_eq!(compact, full, "{body}");
        }
    }

    /// The operand loop resumes its vector scan after a literal, which is exact only
    /// because a literal ends where its run of name characters ends.
    #[test]
    fn a_literal_takes_its_whole_run_of_name_characters() {
        for lit in [
            "0x1Fzz",
            "1ezz",
            "1.5zz",
            "0f3F800000zz",
            "0d3FF0000000000000zz",
            "1uzz",
            "12Uzz",
            "0b101zz",
            "0zz",
            "07zz",
            "1.0e5zz",
            "1e+5zz",
            "0x1Fu8",
            "5U",
        ] {
            let stmt = format!("mov.u32 %r1, {lit};");
            let src = format!("{HEAD}{{\n{stmt}\n}}");
            let (full, _) = texts(&src, false);
            assert!(full.iter().any(|t| t == lit), "{lit}: {full:?}");
        }
    }

    #[test]
    fn only_function_bodies_are_compacted() {
        let src = ".global .u32 a[2] = {1, 2};\n.section .debug_info { .b32 1 }\n.entry k { ret; }";
        let (_, n) = texts(src, true);
        assert_eq!(n, 1);
    }
}
