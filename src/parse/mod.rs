//! The PTX front end: lexing, module-scope parsing, and symbol resolution.
//!
//! [`parse_module`] never fails and never panics on any input: it returns a
//! [`Module`] together with every diagnostic found.

mod body;
mod cursor;
mod decl;
mod expr;
mod items;
mod resolve;

pub use cursor::parse_int;
pub use items::parse_arch;

use crate::diag::Diagnostic;
use crate::ir::{Header, Locs, Module};
use crate::lexer;
use crate::source::FileId;

/// A parsed module and the diagnostics found while parsing it (sorted by position).
pub struct Parsed {
    /// The module; complete as far as the input allowed.
    pub module: Module,
    /// Lexical, syntax and name errors.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one PTX module. `src.len()` must not exceed [`crate::input::MAX_INPUT_LEN`].
pub fn parse_module(file: FileId, src: &[u8]) -> Parsed {
    assert!(
        src.len() as u64 <= crate::input::MAX_INPUT_LEN,
        "inputs are length-checked when loaded"
    );
    let lexed = lexer::lex(file, src);
    let mut diagnostics = lexed.errors;
    let mut header = Header::default();
    let mut locs = Locs::default();
    let items = {
        let mut c = cursor::Cursor::new(file, src, &lexed.tokens);
        let items = items::items(&mut c, &mut header, &mut locs);
        diagnostics.append(&mut c.errors);
        items
    };
    let mut module = Module {
        file,
        tokens: lexed.tokens,
        comments: lexed.comments,
        items,
        header,
        symbols: Vec::new(),
        references: Vec::new(),
        locs,
        calls: Vec::new(),
        local_params: Vec::new(),
        legacy_warp_op: None,
    };
    resolve::resolve(&mut module, src, &mut diagnostics);
    module.locs.files.sort_by_key(|&(span, _)| span.lo);
    module.locs.attrs.sort_by_key(|span| span.lo);
    diagnostics.sort_by_key(|d| (d.span.lo, d.span.hi));
    Parsed {
        module,
        diagnostics,
    }
}
