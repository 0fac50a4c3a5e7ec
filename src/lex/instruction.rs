//! Instructions lexed compactly: the opcode, the operands' identifiers other than
//! `%`-names (with a symbol filter, only those it may take), braces and the `;`;
//! the rest of the operands is skipped without tokens (`operand_skip.rs`), and a
//! statement this cannot lex exactly is lexed in full (`compact.rs`).

use super::class::{modifier_end, CLASS, DIGIT, FOLLOW, ID_START, WS};
use super::compact::Mark;
use super::defs::Def;
use super::grammar::{instruction_slip, name_after_plus};
use super::operand_skip::{name_end_cached, next_operand_event, space_end_cached, Passed};
use super::scan::skip_whitespace;
use super::shape::{simple_literal_end, starts_identifier};
use super::{Lexer, Token, TokenKind};

/// How an instruction's compact lexing ended.
enum Outcome {
    /// Lexed compactly up to and including its `;`.
    Done,
    /// Needs lexing in full (from the statement's start).
    Full,
}

/// What one step of [`Lexer::operands`] found.
enum Step {
    /// Go on with the next byte.
    Next,
    /// The instruction's lexing ended.
    End(Outcome),
}

impl Lexer<'_> {
    /// At a statement that starts with a name or a guard: passes over it and the
    /// statements after it while [`Self::quiet_statement_end`] finds they leave
    /// nothing (plain register declarations too, where those leave nothing), and
    /// lexes the first one that may leave something as [`Self::instruction_or_label`]
    /// does. Stops before anything else (a brace, a directive, a comment).
    ///
    /// With `RECORD`, notes where each instruction it passes over starts.
    pub(super) fn instructions<const RECORD: bool>(&mut self) -> Option<()> {
        if self.symbols.is_none() {
            return self.instruction_or_label();
        }
        let src = self.src;
        loop {
            let start = self.pos;
            let Some(end) = self.quiet_statement_end() else {
                return self.instruction_or_label();
            };
            // An instruction (a label ends in `:`), recorded at its guard if it has
            // one; kept out of `quiet_statement_end`, whose code is the hot path.
            if RECORD && src[end - 1] == b';' {
                self.words.push(start as u32);
            }
            self.pos = space_end_cached(src, end, &mut self.events);
            loop {
                match src.get(self.pos) {
                    Some(&b) if starts_identifier(b) || b == b'@' => break,
                    Some(b'.') if self.skip_definitions => match self.skip_register_declaration() {
                        Some(end) => self.pos = space_end_cached(src, end, &mut self.events),
                        None => return Some(()),
                    },
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
    /// `vote` whose operands, up to its `;`, are only what [`next_operand_event`]
    /// skips, brackets, `%`-names, plain decimal and exact hex-float literals, and identifiers the filter
    /// rejects. Those are the bytes the operand loop passes over without pushing a
    /// token or a diagnostic, with the same tests, so both paths agree; anything else
    /// (a brace, a comment, a string, a colon after an operand, another literal, an
    /// identifier that may be a symbol) goes to the operand loop, as does anything
    /// that may break the operand grammar (`grammar.rs`): a position the window marks
    /// ([`super::operand_skip::Events::breaks_grammar`]), a parenthesis, or a second
    /// juxtaposition.
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
            if may.may_be_symbol(&src[guard..p]) {
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
                if may.may_be_symbol(opcode) {
                    return None;
                }
                self.defs.push(Def {
                    scope: self.block,
                    lo: lo as u32,
                    hi: p as u32,
                    count: None,
                });
                return Some(after + 1);
            }
        }
        let mut passed = Passed::new(p);
        loop {
            p = next_operand_event(src, p, &mut self.events, &mut passed)?;
            let b = src[p];
            if b == b';' {
                let sound = !passed.slip(&self.events, p) && !self.events.breaks_grammar(p);
                return sound.then_some(p + 1);
            }
            let class = CLASS[b as usize];
            if class & DIGIT != 0 {
                p = simple_literal_end(src, p)?;
            } else if starts_identifier(b) {
                // (No grammar mark falls on a name's first byte: a name after `+` is
                // found at the `+`.)
                // The name may run into the next window, which replaces this one.
                passed.settle(&self.events, p);
                let name = p;
                p = name_end_cached(src, p + 1, &mut self.events);
                if may.may_be_symbol(&src[name..p]) {
                    return None;
                }
            } else if b == b'+' && !name_after_plus(src, p) {
                p += 1;
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
            guard_kept = self
                .symbols
                .is_none_or(|may| may.may_be_symbol(guard.text(src)));
            self.skip_trivia()?;
            let b = src[self.pos];
            if CLASS[b as usize] & ID_START == 0 && !matches!(b, b'_' | b'$') {
                return self.full_instruction(start);
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
                return self.full_instruction(start);
            }
            self.defs.push(Def {
                scope: self.block,
                lo: opcode.lo,
                hi: opcode.hi,
                count: None,
            });
            // A label that names no module-scope symbol shadows nothing: the walk
            // needs it only when it records the body's names.
            if self.skip_definitions
                && !self
                    .symbols
                    .is_some_and(|may| may.may_be_symbol(opcode.text(src)))
            {
                self.pos += 1;
                return Some(());
            }
            self.out.tokens.push(opcode);
            self.punct1();
            return Some(());
        }
        if self.record {
            self.words.push(opcode.lo);
        }
        // `call` and `shfl`/`vote` are read further by the walk; keep all their tokens.
        if matches!(opcode.text(src), b"call" | b"shfl" | b"vote") {
            return self.full_instruction(start);
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
            Outcome::Full => self.full_instruction(start),
        }
    }

    /// Lexes the statement from `start` in full, as an instruction: `None` (the body
    /// is given up, for the walk to report) if its operands have a slip.
    fn full_instruction(&mut self, start: Mark) -> Option<()> {
        self.reset(start);
        self.full_statement()?;
        let toks = &self.out.tokens[start.tokens..];
        instruction_slip(self.src, toks).is_none().then_some(())
    }

    /// An instruction's modifiers and operands, through its `;`, keeping only
    /// identifiers other than `%`-names, braces and the `;`. The bytes in between are
    /// skipped 64 at a time ([`next_operand_event`]); this loop sees only the others.
    fn operands(&mut self) -> Option<Outcome> {
        let src = self.src;
        let mut depth = 0u32;
        let mut pos = self.pos;
        let mut passed = Passed::new(pos);
        loop {
            // Every step ends at a byte that is not a name character, or at one
            // whose predecessor is not a name character, `%` or `.`: the vector
            // scan's rule for name characters holds from there.
            let Some(event) = next_operand_event(src, pos, &mut self.events, &mut passed) else {
                return Some(Outcome::Full);
            };
            pos = event;
            // Other marks stop the loop at bytes it never stops at otherwise (`,`,
            // brackets, modifiers), which `operand_step` gives up on.
            let end = src[pos] == b';';
            if end && (passed.slip(&self.events, pos) || self.events.breaks_grammar(pos)) {
                return Some(Outcome::Full);
            }
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
            if self
                .symbols
                .is_none_or(|may| may.may_be_symbol(&src[lo..p]))
            {
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
        } else if modifier_end(src, p).is_some() {
            // The scan passes over modifiers (`.u32`) and vector components
            // (`%tid.x`): it stops at one only where it starts an operand, or is
            // `.reg` (a grammar mark).
            Step::End(Outcome::Full)
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
                // A `}` after an empty place (a grammar mark).
                b'}' if self.events.breaks_grammar(p) => Step::End(Outcome::Full),
                // Only a number follows `+`: where a name does, the tokens decide.
                b'+' if !name_after_plus(src, p) => {
                    p += 1;
                    Step::Next
                }
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
                // A comment between operands: the grammar's rules look past it only
                // in tokens.
                b'/' if p + 1 < len && matches!(src[p + 1], b'/' | b'*') => {
                    Step::End(Outcome::Full)
                }
                // Bytes the scan passes over, where it stops only at a grammar mark
                // (`,` after `,`, brackets that do not pair up...), and parentheses
                // (a call's, in a statement not lexed as one).
                b',' | b'[' | b']' | b'+' | b'-' | b'(' | b')' | b'!' | b'*' | b'/' | b'|'
                | b'&' | b'^' | b'~' | b'<' | b'>' | b'=' | b'?' | b'@' => Step::End(Outcome::Full),
                // `:`, strings, a lone `%`, `.5`, `;` inside braces, bytes outside
                // PTX's alphabet.
                _ => Step::End(Outcome::Full),
            }
        };
        *pos = p;
        Some(step)
    }
}

#[cfg(test)]
mod tests {
    use crate::lex::compact::tests::{texts, HEAD, TAIL};
    use crate::lex::{instruction_slip, lex, lex_body, SymbolFilter};
    use crate::source::FileId;

    /// Whether the compact lexer keeps the body around `stmt` compact: with no
    /// symbol filter, and with one that takes no name (the quiet path).
    fn compacted(stmt: &str) -> [bool; 2] {
        let src =
            format!("{HEAD}{{\n .reg .b32 %r<3>;\n mov.u32 %r1, 1;\n {stmt}\n ret;\n}}{TAIL}");
        let lo = src.find('{').unwrap();
        let none = |_: &[u8]| false;
        [None, Some(&none as &dyn SymbolFilter)].map(|symbols| {
            let (lexed, _) = lex_body(
                FileId(0),
                src.as_bytes(),
                lo,
                Default::default(),
                symbols,
                false,
                false,
            );
            !lexed.compacted.is_empty()
        })
    }

    /// Whether the token check finds a slip in one of the statements of `text`.
    fn has_slip(text: &str) -> bool {
        let l = lex(FileId(0), text.as_bytes());
        let src = text.as_bytes();
        l.tokens
            .split_inclusive(|t| t.text(src) == b";")
            .filter(|stmt| stmt.len() > 1)
            .any(|stmt| instruction_slip(src, stmt).is_some())
    }

    const GOOD: &[&str] = &[
        "ld.param.u64 \t%rd1, [k_param_0];",
        "st.global.v2.u32 [%rd2+8], {%r1, %r2};",
        "@%p1 bra.uni $L__BB0_2;",
        "add.s32 %r2, %r1, -1;",
        "mov.b64 {%r1, %r2}, %rd1;",
        "setp.lt.s32 %p1|%p2, %r1, 0x1F;",
        "ld.global.nc.f32 %f1, [%rd1 + 4];",
        "mov.u32 %r1, %tid.x;",
        "bar.sync 0;",
        "selp.b32 %r1, 1, 0, !%p1;",
    ];

    /// Every slip of the token check makes the compact lexer give the body up, so
    /// that the walk, over every token, reports it; well-formed statements stay
    /// compact on both paths.
    #[test]
    fn a_body_with_a_slip_is_lexed_in_full() {
        for stmt in GOOD {
            assert!(!has_slip(stmt), "{stmt}");
            assert_eq!(compacted(stmt), [true, true], "{stmt}");
        }
        for stmt in [
            "add.s32 %r2, %r1 %r1, 1;",
            "add.s32 %r2, %r1, 1\n st.u32 [%rd1], %r2;",
            "add.s32 %r2, , %r1;",
            "add.s32 %r2,, %r1;",
            "add.s32 %r2, %r1,\n ;",
            "st.u32 [], %r2;",
            "st.u32 [%rd1+], %r2;",
            "st.u32 [%rd1, %r2;",
            "st.u32 %rd1], %r2;",
            "st.u32 [[%rd1], %r2;",
            "mov.b64 %rd2, {, %r3};",
            "mov.b64 %rd2, {%r3,};",
            "mov.u32 %r1, 1 // c\n ret;",
            "%r1, %r2;",
            "@%p1 %r1, %r2;",
            "mov.u32 , %r1;",
            "mov.u32, %r1;",
            "ld.reg.b32 %r1, [p];",
            "mov.u32 %r1, .x;",
            "ld.u32 %r1, [%rd1+g];",
        ] {
            assert!(has_slip(stmt), "{stmt}");
            assert_eq!(compacted(stmt), [false, false], "{stmt}");
        }
    }

    /// `.reg` is doubted wherever it falls in the operand scan's windows (its `g`
    /// may be in the next window), and a modifier that only starts like it is not.
    #[test]
    fn reg_is_doubted_across_window_ends() {
        for pad in 0..70 {
            let pad = " ".repeat(pad);
            for stmt in ["ld.reg.b32 %r1, [p];", "ld.global.reg %r1, [p];"] {
                assert_eq!(
                    compacted(&format!("{pad}{stmt}")),
                    [false, false],
                    "{pad}{stmt}"
                );
            }
            let stmt = "ld.relaxed.gpu.u32 %r1, [p];";
            assert_eq!(
                compacted(&format!("{pad}{stmt}")),
                [true, true],
                "{pad}{stmt}"
            );
        }
    }

    /// Random slips in well-formed statements (a byte of them deleted, doubled or
    /// swapped with the next): whenever the compact lexer keeps the body compact,
    /// the token check finds no slip either, so both paths report the same.
    #[test]
    fn the_compact_lexer_doubts_every_slip_the_tokens_show() {
        let mut rand = crate::lex::xorshift(0x5eed_0f51_1b00);
        let mut doubted = 0;
        for round in 0..20_000 {
            let good = GOOD[round % GOOD.len()].as_bytes();
            let i = (rand() % good.len() as u64) as usize;
            let mut bad = good.to_vec();
            match rand() % 3 {
                0 => {
                    bad.remove(i);
                }
                1 => bad.insert(i, good[i]),
                _ if i + 1 < bad.len() => bad.swap(i, i + 1),
                _ => continue,
            }
            let Ok(stmt) = String::from_utf8(bad) else {
                continue;
            };
            if !stmt.ends_with(';') {
                continue;
            }
            let [plain, quiet] = compacted(&stmt);
            if has_slip(&stmt) {
                assert!(
                    !plain && !quiet,
                    "{stmt:?} has a slip, compact: {plain} {quiet}"
                );
                doubted += 1;
            }
        }
        assert!(doubted > 1000, "{doubted}");
    }

    /// With a symbol filter, instructions that may name no module-scope symbol are
    /// left out whole; the rest keep their opcode, `;` and the identifiers that may.
    #[test]
    fn a_symbol_filter_leaves_out_instructions_that_name_none() {
        let body = "{\n .reg .b32 %r<3>;\n ld.param.u32 %r1, [p+4];\n ld.global.u32 %r2, [g];\n\
                    @%p1 bra L;\n@g bra L;\nL:\n mov.b64 {%r1, %r2}, %rd1; // c\n ret;\n}";
        let src = format!("{HEAD}{body}{TAIL}");
        let lo = src.find('{').unwrap();
        let may = |name: &[u8]| name == b"g";
        let (lexed, end) = crate::lex::lex_body(
            FileId(0),
            src.as_bytes(),
            lo,
            Default::default(),
            Some(&may),
            false,
            false,
        );
        assert_eq!(end, src.len() - TAIL.len());
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
            let src = format!("{HEAD}{{\n{stmt}\n}}{TAIL}");
            let (full, _) = texts(&src, false);
            assert!(full.iter().any(|t| t == lit), "{lit}: {full:?}");
        }
    }
}
