//! The front end's IR: one [`Module`] per input file.
//!
//! The IR is shallow and lossless. It records module-scope structure (header
//! directives, variables, functions, debug sections) with byte spans into the
//! source, keeps function bodies as token ranges, and lists every module-scope symbol
//! and every place that refers to one. The source bytes themselves are not stored here
//! (they stay in the [`crate::source::SourceMap`]); everything is a span into them.
//!
//! The files of this module: this one the [`Module`] and its ids; `header.rs` the
//! `.version`, `.target` and `.address_size` directives; `items.rs` module-scope
//! items and declarations (variables, functions, their parameters and bodies, debug
//! sections, `.loc`); `types.rs` linkage, state spaces, types and sizes;
//! `symbols.rs` symbols, their declarations and the references to them; `kept.rs`
//! the text a module keeps for the writer.

mod header;
mod items;
mod kept;
mod symbols;
mod types;

pub use header::{Arch, Header, Target, TexMode, Version};
pub use items::{
    Body, CallOperand, CallSite, Declarator, FileDirective, FuncDecl, FuncDirective, FuncKind,
    Initializer, Item, ItemKind, LocalParam, Locs, Param, ParamSpec, Reloc, RelocValue, Section,
    SectionData, Signature, Unsupported, VarDecl,
};
pub use kept::KeptText;
pub use symbols::{Decl, Decls, RefKind, Reference, Symbol, SymbolKind};
pub use types::{
    element_bytes, known_size, Linkage, PtrAttr, StateSpace, Type, TypeClass, TypeSpec,
};

use crate::lex::Token;
use crate::source::{FileId, Span};

/// Index of an [`Item`] in [`Module::items`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemId(pub u32);

/// Index of a [`Symbol`] in [`Module::symbols`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId(pub u32);

/// Half-open range of indices into [`Module::tokens`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenRange {
    /// First token index.
    pub start: u32,
    /// One past the last token index.
    pub end: u32,
}

impl TokenRange {
    /// The indices as a `usize` range.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One parsed input file.
///
/// Besides what the source says, a module carries what the linker would otherwise
/// look for again in every module after parsing, on one thread: the symbols' names
/// ([`Module::symbol_names`]), and for the writer alone the text it needs early
/// ([`Module::kept`]), the functions with aggregate parameters
/// ([`Module::aggregate_param_functions`]) and the `.file` items
/// ([`Module::file_directives`]). The parser makes them when it ends
/// (`parse/finish.rs`), on the module's own thread, while its items and source are
/// at hand. They are fields of the IR and not of the writer because the front end
/// hands the linker one value per module: the writer's own copy would be a second
/// result per module, carried through the front end and the driver, for the same
/// bytes and the same parse-time work.
#[derive(Debug)]
pub struct Module {
    /// The file this module was parsed from.
    pub file: FileId,
    /// All tokens of the file.
    pub tokens: Vec<Token>,
    /// The `//:` comments (GCC's `//:FUNC_MAP` and `//:VAR_MAP` for the offloading
    /// runtime), the only comments that carry meaning for the linker. Other comments
    /// are trivia and are not listed.
    pub map_comments: Vec<Span>,
    /// Module-scope items in source order. Their spans do not overlap, and the bytes
    /// between them are whitespace and comments only.
    pub items: Vec<Item>,
    /// `.version`, `.target` and `.address_size`, when present.
    pub header: Header,
    /// Module-scope symbols, in order of first declaration.
    pub symbols: Vec<Symbol>,
    /// The symbols' names, copied out of the source when parsing ends: symbol `i` is
    /// `symbol_names[symbol_name_ends[i - 1]..symbol_name_ends[i]]`. The linker looks
    /// names up many times after parsing; the copy is a few compact bytes per symbol
    /// where the source names are scattered over every page of the input, and with
    /// [`Module::kept`] it lets the linker leave the input's pages alone until it
    /// writes the output (docs/performance.md).
    pub symbol_names: Vec<u8>,
    /// End offsets into [`Module::symbol_names`], one per symbol.
    pub symbol_name_ends: Vec<u32>,
    /// Copies of the text the merged module needs before any definition (the headers
    /// of function definitions, for prototypes; variables; `.file` entries), so that
    /// the writer reads each input's source once, in order (docs/performance.md).
    /// A cache of the writer's (`link/write.rs`, `write/rope.rs`); it is copied at
    /// parse time because only then are the source's pages in memory anyway.
    pub kept: KeptText,
    /// Every reference to a module-scope symbol, sorted by span.
    pub references: Vec<Reference>,
    /// Where `.loc` directives name files and debug labels.
    pub locs: Locs,
    /// Direct calls (`call (r), f, (a, b);`), in source order.
    pub calls: Vec<CallSite>,
    /// The first `shfl` or `vote` without `.sync` (pre-6.0 warp code, which ptxas
    /// rejects for `.target sm_70` and later at PTX ISA 6.4 and later).
    pub legacy_warp_op: Option<Span>,
    /// The functions whose definition here has an aggregate parameter or return
    /// value (`.param .align N .b8 x[M]`), ascending: the only callees whose call
    /// sites may need an argument's alignment rewritten. Known without visiting
    /// each callee's definition again when linking (a cache of the writer's).
    pub aggregate_param_functions: Vec<SymbolId>,
    /// True if a variable or a function parameter has a texture, sampler or surface
    /// type (the merged module's texture mode must suit every such module). Found
    /// while the items are fresh from parsing: a large link would otherwise read
    /// every item and parameter of every module again, on one thread.
    pub uses_textures: bool,
    /// The `.file` items, in order (a cache of the writer's, which numbers the
    /// merged module's files without reading every item of every module again).
    pub file_directives: Vec<ItemId>,
    /// What the module uses by the instruction table, where the parse was asked to
    /// record it as it lexed the bodies (`link::needs` reads it instead of lexing
    /// the module again).
    pub(crate) recorded_uses: Option<Box<crate::isa::ModuleUses>>,
}

impl Module {
    /// True if `id`'s definition in this module has an aggregate parameter or
    /// return value ([`Module::aggregate_param_functions`]).
    pub fn has_aggregate_params(&self, id: SymbolId) -> bool {
        self.aggregate_param_functions.binary_search(&id).is_ok()
    }

    /// The symbol with id `id`.
    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id.0 as usize]
    }

    /// The name of symbol `id` (a copy of its first declaration's name token).
    pub fn symbol_name(&self, id: SymbolId) -> &[u8] {
        let i = id.0 as usize;
        let lo = if i == 0 {
            0
        } else {
            self.symbol_name_ends[i - 1] as usize
        };
        &self.symbol_names[lo..self.symbol_name_ends[i] as usize]
    }

    /// For each item, the function or kernel it defines (by index; `None` for
    /// items that define none). An array, not a map: the symbol table and the
    /// layout ask it for every item of every module.
    pub fn function_definitions(&self) -> Vec<Option<SymbolId>> {
        let mut defines = vec![None; self.items.len()];
        for (id, s) in self.symbols_with_ids() {
            if matches!(s.kind, SymbolKind::Function | SymbolKind::Entry) {
                if let Some(d) = s.definition() {
                    defines[d.item.0 as usize] = Some(id);
                }
            }
        }
        defines
    }

    /// The item with id `id`.
    pub fn item(&self, id: ItemId) -> &Item {
        &self.items[id.0 as usize]
    }

    /// All symbols with their ids.
    pub fn symbols_with_ids(&self) -> impl Iterator<Item = (SymbolId, &Symbol)> {
        self.symbols
            .iter()
            .enumerate()
            .map(|(i, s)| (SymbolId(i as u32), s))
    }

    /// The tokens of `range`.
    pub fn tokens_in(&self, range: TokenRange) -> &[Token] {
        &self.tokens[range.range()]
    }

    /// Frees the token array, for consumers that only need spans (the linker). Every
    /// token range in the module becomes empty. On a 170 MB link this saves a third
    /// of the memory and most of the page faults (docs/performance.md).
    pub fn release_tokens(&mut self) {
        self.tokens = Vec::new();
        for item in &mut self.items {
            item.tokens = TokenRange::default();
            if let ItemKind::Function(FuncDecl {
                body: Some(body), ..
            }) = &mut item.kind
            {
                body.tokens = TokenRange::default();
            }
        }
    }
}
