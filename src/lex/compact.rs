//! Function bodies lexed compactly ([`super::Bodies::Compact`]): statement by
//! statement, instructions by `instruction.rs`.
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

use super::class::{is_state_space, CLASS, ID_START};
use super::defs::{clashes, Def};
use super::scan::skip_whitespace;
use super::shape::register_declaration_end;
use super::{Lexer, Token, TokenKind};

/// Where a statement or body started, to take back what was pushed after it.
#[derive(Clone, Copy)]
pub(super) struct Mark {
    pos: usize,
    pub(super) tokens: usize,
    comments: usize,
    errors: usize,
    defs: usize,
    warned_non_ascii: bool,
}

impl Lexer<'_> {
    pub(super) fn mark(&self) -> Mark {
        Mark {
            pos: self.pos,
            tokens: self.out.tokens.len(),
            comments: self.out.comments.len(),
            errors: self.out.errors.len(),
            defs: self.defs.len(),
            warned_non_ascii: self.warned_non_ascii,
        }
    }

    pub(super) fn reset(&mut self, m: Mark) {
        self.pending_opcode = None;
        self.pos = m.pos;
        self.out.tokens.truncate(m.tokens);
        self.out.comments.truncate(m.comments);
        self.out.errors.truncate(m.errors);
        self.defs.truncate(m.defs);
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
    ///
    /// A body in which a name may be defined twice in a block is given up too: the
    /// walk finds such clashes (`defs.rs`) only among the definitions it sees as
    /// tokens, and this lexer leaves some out.
    pub(super) fn compact_body(&mut self) -> bool {
        self.defs.clear();
        self.blocks.clear();
        self.words.clear();
        self.declarations.clear();
        let start = self.mark();
        if self.body_statements().is_some()
            && self.out.errors.len() == start.errors
            && clashes(self.src, &self.defs).is_empty()
        {
            self.out.compacted.push(start.pos as u32);
            true
        } else {
            self.reset(start);
            self.words.clear();
            self.declarations.clear();
            false
        }
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
        self.block = self.pos as u32;
        self.punct1();
        let mut depth = 1u32;
        loop {
            self.skip_trivia()?;
            let b = self.src[self.pos];
            match b {
                b'{' => {
                    self.blocks.push(self.block);
                    self.block = self.pos as u32;
                    self.punct1();
                    depth += 1;
                }
                b'}' => {
                    self.punct1();
                    depth -= 1;
                    if depth == 0 {
                        return Some(());
                    }
                    self.block = self.blocks.pop()?;
                }
                // An empty statement, which the walk reports.
                b';' => return None,
                b'.' => self.directive_statement()?,
                _ if b == b'@' || b == b'_' || b == b'$' || CLASS[b as usize] & ID_START != 0 => {
                    // Recording has its own copy of the loop: the plain one stays as
                    // it was, with no test for it.
                    if self.record {
                        self.instructions::<true>()?
                    } else {
                        self.instructions::<false>()?
                    }
                }
                _ => return None,
            }
        }
    }

    /// At a directive: the end of the plain register declaration there
    /// ([`register_declaration_end`]), which leaves no token, recording its start
    /// where the lexer records; `None` (nothing done) if it is no such declaration.
    pub(super) fn skip_register_declaration(&mut self) -> Option<usize> {
        let end = register_declaration_end(self.src, self.pos, self.block, &mut self.defs)?;
        if self.record {
            self.declarations.push(self.pos as u32);
        }
        Some(end)
    }

    /// Pushes the one-byte punctuation at the current position.
    pub(super) fn punct1(&mut self) {
        self.pos += 1;
        self.push(TokenKind::Punct, self.pos - 1);
    }

    /// Skips whitespace and comments (recording the comments); `None` at the end of
    /// input. Inlined always: it runs twice per instruction, and a call costs more
    /// than the usual work (a few bytes of whitespace).
    #[inline(always)]
    pub(super) fn skip_trivia(&mut self) -> Option<()> {
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
    pub(super) fn lex_one(&mut self) -> Option<Token> {
        self.skip_trivia()?;
        let before = self.out.tokens.len();
        self.any_token();
        let t = *self.out.tokens[before..].first()?;
        (t.kind != TokenKind::Error).then_some(t)
    }

    /// Lexes in full up to and including the `;` that ends the current statement.
    pub(super) fn full_statement(&mut self) -> Option<()> {
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
            if let Some(end) = self.skip_register_declaration() {
                self.pos = end;
                return Some(());
            }
        }
        let first = self.out.tokens.len();
        let t = self.lex_one()?;
        if t.kind != TokenKind::Directive {
            return None;
        }
        let text = t.text(self.src);
        if text == b".loc" {
            return self.loc_args();
        }
        let known = is_state_space(text)
            || matches!(
                text,
                b".attribute"
                    | b".align"
                    | b".pragma"
                    | b".calltargets"
                    | b".branchtargets"
                    | b".callprototype"
            );
        if !known {
            return None;
        }
        self.full_statement()?;
        if is_state_space(text) || matches!(text, b".attribute" | b".align") {
            self.declared_names(first);
        }
        Some(())
    }

    /// Records the names a declaration lexed in full from token `from` defines: the
    /// first name after its directives, and the first after each `,` outside its
    /// brackets and initializer braces, with the `N` of `name<N>`.
    fn declared_names(&mut self, from: usize) {
        let src = self.src;
        let toks = &self.out.tokens[from..];
        let punct = |t: &Token, p: u8| t.kind == TokenKind::Punct && t.text(src) == [p];
        let mut depth = 0u32;
        let mut expect_name = true;
        for (i, t) in toks.iter().enumerate() {
            match t.kind {
                TokenKind::Ident if depth == 0 && expect_name => {
                    expect_name = false;
                    let count = toks
                        .get(i + 1..i + 4)
                        .filter(|r| punct(&r[0], b'<') && punct(&r[2], b'>'))
                        .and_then(|r| std::str::from_utf8(r[1].text(src)).ok()?.parse().ok());
                    self.defs.push(Def {
                        scope: self.block,
                        lo: t.lo,
                        hi: t.hi,
                        count,
                    });
                }
                TokenKind::Punct => match t.text(src) {
                    b"(" | b"[" | b"{" | b"<" => depth += 1,
                    b")" | b"]" | b"}" | b">" => depth = depth.saturating_sub(1),
                    b"," if depth == 0 => expect_name = true,
                    _ => {}
                },
                _ => {}
            }
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
}

#[cfg(test)]
pub(super) mod tests {
    use crate::lex::{lex_bodies_into, Bodies};
    use crate::source::FileId;

    pub(in crate::lex) fn texts(src: &str, compact: bool) -> (Vec<String>, usize) {
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

    pub(in crate::lex) const HEAD: &str = ".visible .func (.param .b32 r) f(.param .b32 p)\n";

    /// Whitespace after a body: the compact lexer's windows need 64 bytes after an
    /// operand (in the last ones, it lexes statements in full).
    pub(in crate::lex) const TAIL: &str =
        "\n                                                                \n";

    #[test]
    fn instructions_keep_opcode_names_braces_and_semicolon() {
        let body = "{\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [p+4]; // c\n@!%p1 bra $L1;\n$L1:\n mov.b64 {%r1, %r2}, g;\n}";
        let (toks, n) = texts(&format!("{HEAD}{body}{TAIL}"), true);
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

    #[test]
    fn calls_strings_and_colons_keep_every_token() {
        for stmt in [
            "call.uni (r), f, (p);",
            "ld.global.L2::128B.u32 %r1, [g];",
            "shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;",
            "mov.u32 %r1, 0x1F;",
        ] {
            let src = format!("{HEAD}{{\n{stmt}\n}}{TAIL}");
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

    #[test]
    fn only_function_bodies_are_compacted() {
        let src = ".global .u32 a[2] = {1, 2};\n.section .debug_info { .b32 1 }\n.entry k { ret; }";
        let (_, n) = texts(src, true);
        assert_eq!(n, 1);
    }
}
