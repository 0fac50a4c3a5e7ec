//! Helpers for link diagnostics in lld's shape:
//!
//! ```text
//! error: duplicate symbol: tmax<int>(int, int) (_Z4tmaxIiET_S0_S0_)
//! >>> defined at a.ptx:12:44
//! >>> defined at b.ptx:40:44
//! ```

use crate::diag::{Code, Diagnostic};
use crate::ir::Module;
use crate::source::{SourceMap, Span};

use super::db::ModSym;

/// A symbol name shown as users wrote it, demangled only when it is displayed (a
/// link resolves many names and reports few).
#[derive(Copy, Clone)]
pub(crate) struct Shown<'a>(pub(crate) &'a [u8]);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&display_name(self.0))
    }
}

/// A symbol name as users wrote it: C++ names demangled, with the mangled name after.
pub(crate) fn display_name(name: &[u8]) -> String {
    let raw = String::from_utf8_lossy(name).into_owned();
    if name.starts_with(b"_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(d) = sym.demangle(&cpp_demangle::DemangleOptions::default()) {
                return format!("{d} ({raw})");
            }
        }
    }
    raw
}

/// The linker's view of the inputs, for building messages.
pub(crate) struct Inputs<'a> {
    pub sources: &'a SourceMap,
    pub modules: &'a [Module],
}

impl<'a> Inputs<'a> {
    pub fn module(&self, s: ModSym) -> &'a Module {
        &self.modules[s.module as usize]
    }

    pub fn src(&self, module: u32) -> &'a [u8] {
        self.sources
            .file(self.modules[module as usize].file)
            .bytes()
    }

    pub fn name(&self, s: ModSym) -> &'a [u8] {
        self.module(s).symbol_name(s.id)
    }

    pub fn file_name(&self, module: u32) -> &'a str {
        self.sources.file(self.modules[module as usize].file).name()
    }

    /// The span of the symbol's definition, else of its first declaration.
    pub fn def_span(&self, s: ModSym) -> Span {
        let sym = self.module(s).symbol(s.id);
        sym.definition().unwrap_or(&sym.decls[0]).name
    }

    /// An error located at `span` in `module`.
    pub fn error_at(&self, code: Code, module: u32, span: Span, msg: String) -> Diagnostic {
        Diagnostic::error(code, self.modules[module as usize].file, span, msg)
    }

    /// An error in lld's shape: the message, then `>>> what at file:line:col` notes.
    pub fn error_notes(
        &self,
        code: Code,
        msg: String,
        notes: &[(&str, ModSym, Span)],
    ) -> Diagnostic {
        let mut d = Diagnostic::global_error(code, msg);
        for &(what, s, span) in notes {
            d = d.with_note(self.module(s).file, span, what);
        }
        d
    }
}
