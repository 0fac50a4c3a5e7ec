//! Function bodies a deferred lexing left out, lexed one at a time as the walk
//! reaches them.

use super::names::Names;
use crate::isa::{may_read_special, Recorder};
use crate::lex::{lex_body, lex_body_full, Def, Lexed, Token};
use crate::source::{FileId, Span};

/// Bodies a [`crate::lex::Bodies::Deferred`] lexing left out, lexed one at a time
/// as the walk reaches them.
pub(crate) struct DeferredBodies<'d> {
    /// The `{` of each, ascending.
    pub opens: &'d [u32],
    next: usize,
    /// The last body's lexing (its allocations are reused for the next).
    lexed: Lexed,
    /// The body whose tokens `tokens_again` last lexed.
    again: Option<u32>,
    /// False once a body lexed with a diagnostic or ended elsewhere than the parser
    /// thought: the module must then be parsed in full.
    pub exact: bool,
    /// Comments kept from the bodies (`//:` lines).
    pub map_comments: Vec<Span>,
    /// When not zero, the bodies are walked in parallel, in consecutive groups of
    /// about this many bytes ([`walk_bodies_split`]).
    pub split: usize,
    /// With it, what each body lexed here uses is recorded as it is lexed (the
    /// `{` of each such body in `recorded`).
    pub recorder: Option<Recorder>,
    pub recorded: Vec<u32>,
    /// A body lexed in full for the recorder.
    full: Lexed,
}

thread_local! {
    /// Each thread's arrays for lexing bodies, reused from module to module: grown
    /// afresh for each module, they were a tenth of a link's first touches of memory.
    static BODY_LEXED: std::cell::Cell<Lexed> = std::cell::Cell::new(Lexed::default());
}

impl Drop for DeferredBodies<'_> {
    fn drop(&mut self) {
        BODY_LEXED.set(std::mem::take(&mut self.lexed));
    }
}

impl<'d> DeferredBodies<'d> {
    pub fn new(opens: &'d [u32]) -> Self {
        DeferredBodies {
            opens,
            next: 0,
            lexed: BODY_LEXED.take(),
            again: None,
            exact: true,
            map_comments: Vec::new(),
            split: 0,
            recorder: None,
            recorded: Vec::new(),
            full: Lexed::default(),
        }
    }

    /// The tokens of `body` if it was deferred (bodies are asked for in order), and
    /// where they are not all its tokens (it was lexed compactly) the lexer's
    /// definitions of its labels and declarations,
    /// without the instructions and operands that name none of `names`, and, unless
    /// the walk records `body_names` or a module-scope name starts with `%`, without
    /// plain register declarations.
    pub fn tokens(
        &mut self,
        file: FileId,
        src: &[u8],
        body: Span,
        names: &Names,
        body_names: bool,
    ) -> Option<(&[Token], Option<&[Def]>)> {
        while self.opens.get(self.next).is_some_and(|&lo| lo < body.lo) {
            self.next += 1;
        }
        if self.opens.get(self.next) != Some(&body.lo) {
            return None;
        }
        self.next += 1;
        self.again = None;
        let (lexed, end) = lex_body(
            file,
            src,
            body.lo as usize,
            std::mem::take(&mut self.lexed),
            Some(names),
            !body_names && !names.any_percent,
            self.recorder.is_some(),
        );
        if !lexed.errors.is_empty() || end != body.hi as usize {
            self.exact = false;
        }
        if let Some(rec) = &mut self.recorder {
            // A body lexed compactly has no token of its `%`-names, and a texture
            // fetch's operands tell what it needs: those are read from the body
            // lexed in full.
            let compact = !lexed.compacted.is_empty();
            let (words, declarations) = lexed.body_statements();
            if !(compact
                && !may_read_special(&src[body.range()])
                && rec.compact_body(src, &lexed.tokens, words, declarations))
            {
                if compact {
                    self.full =
                        lex_body_full(file, src, body.lo as usize, std::mem::take(&mut self.full));
                    rec.full_body(src, &self.full.tokens);
                } else {
                    rec.full_body(src, &lexed.tokens);
                }
            }
            self.recorded.push(body.lo);
        }
        self.map_comments.extend(
            lexed
                .comments
                .iter()
                .filter(|c| src[c.range()].starts_with(b"//:")),
        );
        self.lexed = lexed;
        // `compacted` names the body when it was lexed compactly; the lexer's
        // definitions then stand for the declarations it kept no token of.
        let compact = (!self.lexed.compacted.is_empty()).then(|| self.lexed.body_defs());
        Some((&self.lexed.tokens, compact))
    }

    /// The tokens of `body` again (for debug sections that refer into it).
    pub fn tokens_again(&mut self, file: FileId, src: &[u8], body: Span) -> Option<&[Token]> {
        self.opens.binary_search(&body.lo).ok()?;
        if self.again != Some(body.lo) {
            // Every token: debug sections look for a label's uses as operands.
            let (lexed, _) = lex_body(
                file,
                src,
                body.lo as usize,
                std::mem::take(&mut self.lexed),
                None,
                false,
                false,
            );
            self.lexed = lexed;
            self.again = Some(body.lo);
        }
        Some(&self.lexed.tokens)
    }
}
