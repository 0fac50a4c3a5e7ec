//! The linker's view of its inputs: the modules in link order with their sources, and
//! the name of one symbol of one module ([`ModSym`]).

use crate::diag::{Code, Diagnostic};
use crate::ir::{Module, SymbolId};
use crate::source::{SourceMap, Span};

/// A symbol of one input module.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ModSym {
    /// Index of the module in link order.
    pub module: u32,
    /// The symbol within that module.
    pub id: SymbolId,
}

/// The modules of a link in link order, with their sources.
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
