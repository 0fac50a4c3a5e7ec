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
//!
//! The files of this module, one job each:
//!
//! * this file: tokens, the entry points, and the lexer's state;
//! * `class.rs`: byte classes, and the shapes of directives and plain decimals;
//! * `tokens.rs`: the full lexer, token by token;
//! * `scan.rs`: whitespace, newlines and non-ASCII bytes found sixteen at a time;
//! * `defer.rs`: bodies skipped to their `}`, to be lexed later ([`Bodies::Deferred`]);
//! * `compact.rs`: bodies lexed statement by statement ([`Bodies::Compact`]);
//! * `instruction.rs`: instructions lexed compactly, keeping only what the body
//!   walk reads;
//! * `operand_skip.rs`: operand bytes classified a vector at a time;
//! * `shape.rs`: register declarations and literals passed over without tokens;
//! * `grammar.rs`: the operand-list rules both lexers and the body walk check;
//! * `defs.rs`: names defined twice in one block of a body.
//!
//! The lexer uses nothing of the parser or the IR: what the compact lexer needs to
//! know of a module's symbols comes through [`SymbolFilter`].

use crate::diag::{Code, Diagnostic};
use crate::source::{FileId, Span};

mod class;
mod compact;
mod defer;
mod defs;
mod grammar;
mod instruction;
mod operand_skip;
mod scan;
mod shape;
mod tokens;

use class::is;
pub(crate) use class::is_name_byte;
/// For the IR's test that its state spaces are the lexer's.
#[cfg(test)]
pub(crate) use class::is_state_space;
pub(crate) use defs::{clashes, declares, Def};

pub(crate) use grammar::instruction_slip;

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
    /// The compact lexer's working lists, carried with the allocations that
    /// [`lex_body`] is handed back: a walk lexes one body after another, and each
    /// would otherwise grow its lists anew.
    scratch: Scratch,
}

impl Lexed {
    /// After [`lex_body`] lexed a body compactly: every label and declaration in
    /// it, with its block, in source order.
    pub(crate) fn body_defs(&self) -> &[Def] {
        &self.scratch.defs
    }

    /// After [`lex_body`] lexed a body compactly with `record`: where each
    /// instruction starts (its opcode word, or its guard `@p`), and where each
    /// register declaration it kept no token of starts (its `.reg`), in source order.
    pub(crate) fn body_statements(&self) -> (&[u32], &[u32]) {
        (&self.scratch.words, &self.scratch.declarations)
    }
}

/// See [`Lexed::scratch`] and the fields of the same names in [`Lexer`].
#[derive(Debug, Default)]
struct Scratch {
    defs: Vec<defs::Def>,
    blocks: Vec<u32>,
    words: Vec<u32>,
    declarations: Vec<u32>,
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

/// What the compact lexing of a body ([`lex_body`]) asks about the module's
/// module-scope symbols. The parser's name table answers it, so that the lexer needs
/// nothing of the parser; a closure answers it too.
pub trait SymbolFilter {
    /// Whether identifier `name` may name a module-scope symbol of the module being
    /// lexed: false only for a name that certainly names none.
    fn may_be_symbol(&self, name: &[u8]) -> bool;
}

impl<F: Fn(&[u8]) -> bool> SymbolFilter for F {
    fn may_be_symbol(&self, name: &[u8]) -> bool {
        self(name)
    }
}

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
    symbols: Option<&dyn SymbolFilter>,
    skip_definitions: bool,
    record: bool,
) -> (Lexed, usize) {
    let mut lx = Lexer::reusing(file, src, reuse, Bodies::Compact);
    lx.symbols = symbols;
    lx.skip_definitions = skip_definitions && symbols.is_some();
    lx.record = record;
    lx.pos = lo;
    if !lx.compact_body() {
        lx.full_body();
    }
    let end = lx.pos;
    (lx.finish(), end)
}

/// Lexes the body whose `{` is at `lo` in full (as [`lex_body`] does one it
/// cannot lex compactly), into `reuse`'s allocations.
pub(crate) fn lex_body_full(file: FileId, src: &[u8], lo: usize, reuse: Lexed) -> Lexed {
    let mut lx = Lexer::reusing(file, src, reuse, Bodies::Full);
    lx.pos = lo;
    lx.full_body();
    lx.finish()
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
    symbols: Option<&'a dyn SymbolFilter>,
    /// In a body lexed by [`lex_body`] with it: plain register declarations and
    /// labels that name no module-scope symbol are skipped without tokens.
    skip_definitions: bool,
    /// In a compactly lexed instruction: its opcode, until an operand identifier is
    /// kept (see `Lexer::instruction_or_label`).
    pending_opcode: Option<Token>,
    /// The operand scan's last window (`lex/operand_skip.rs`).
    events: operand_skip::Events,
    /// In a body lexed compactly: the names defined in it (`defs.rs`), the current
    /// block (the position of its `{`) and the blocks around it.
    defs: Vec<defs::Def>,
    block: u32,
    blocks: Vec<u32>,
    /// In a body lexed compactly with it: record where each instruction's opcode
    /// word starts (`words`) and each skipped register declaration (`declarations`),
    /// for what the module uses (`isa/scan.rs`).
    record: bool,
    words: Vec<u32>,
    declarations: Vec<u32>,
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
        let Scratch {
            mut defs,
            mut blocks,
            mut words,
            mut declarations,
        } = std::mem::take(&mut out.scratch);
        defs.clear();
        blocks.clear();
        words.clear();
        declarations.clear();
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
            defs,
            block: 0,
            blocks,
            record: false,
            words,
            declarations,
            out,
        }
    }

    /// The output of [`lex_body`], with the working lists' allocations for the next body.
    fn finish(mut self) -> Lexed {
        self.out.scratch = Scratch {
            defs: self.defs,
            blocks: self.blocks,
            words: self.words,
            declarations: self.declarations,
        };
        self.out
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
            Code::Syntax,
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
}

/// A small deterministic random number generator for the lexer's property tests.
#[cfg(test)]
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}
