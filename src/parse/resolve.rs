//! Second pass: build the symbol table and find every reference to a module-scope
//! symbol, in bodies, initializers, `.alias`, `.loc` and debug sections.
//!
//! This runs after all items are parsed because PTX from some producers uses names
//! before declaring them (GCC's raw output), and because DWARF sections at the end of
//! a module refer to labels inside function bodies.

use rustc_hash::FxHashMap;

use super::body::{walk_body, BodyCtx, BodyNames};
use crate::diag::Diagnostic;
use crate::ir::{
    CallSite, Decl, Decls, FuncDecl, FuncKind, ItemId, ItemKind, Linkage, Locs, Module, RefKind,
    Reference, StateSpace, Symbol, SymbolId, SymbolKind,
};
use crate::lex::{lex_body, Lexed, SymbolFilter, Token, TokenKind};
use crate::source::{FileId, Span};

/// Name → symbol lookup for one module.
pub(crate) struct Names<'a> {
    map: FxHashMap<&'a [u8], SymbolId>,
    /// True if any module-scope name starts with `%`; otherwise `%r1`-style
    /// identifiers (most of a body) can skip the lookup.
    pub any_percent: bool,
    /// One bit per [`sketch`] of each name in `map`: a name whose bit is clear is
    /// not there. Most identifiers a body walk asks about (labels, a function's
    /// own `_param_N` names) are not module-scope symbols, and this answers them
    /// without hashing the whole name and probing the map.
    sketches: [u64; SKETCH_WORDS],
}

/// Size of [`Names::sketches`] in 64-bit words: 4,096 bits, so that a module with a
/// few hundred names still turns most other names away.
const SKETCH_WORDS: usize = 64;

/// A 12-bit digest of `name` from its length and its first and last eight bytes
/// (zero-padded when shorter): names that differ only in their middle share it,
/// which only costs a map lookup.
fn sketch(name: &[u8]) -> usize {
    let word = |bytes: &[u8]| {
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(w)
    };
    let n = name.len();
    let (head, tail) = if n >= 8 {
        (word(&name[..8]), word(&name[n - 8..]))
    } else {
        (word(name), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 52) as usize
}

impl<'a> Names<'a> {
    pub fn new(map: FxHashMap<&'a [u8], SymbolId>) -> Names<'a> {
        let mut sketches = [0u64; SKETCH_WORDS];
        for name in map.keys() {
            let s = sketch(name);
            sketches[s / 64] |= 1 << (s % 64);
        }
        Names {
            any_percent: map.keys().any(|k| k.first() == Some(&b'%')),
            map,
            sketches,
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<SymbolId> {
        if !self.any_percent && name.first() == Some(&b'%') {
            return None;
        }
        let s = sketch(name);
        if self.sketches[s / 64] & (1 << (s % 64)) == 0 {
            return None;
        }
        self.map.get(name).copied()
    }
}

/// What the compact lexing of a deferred body asks: a name no module-scope symbol
/// has leaves no token.
impl SymbolFilter for Names<'_> {
    fn may_be_symbol(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }
}

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
        }
    }

    /// The tokens of `body` if it was deferred (bodies are asked for in order),
    /// without the instructions and operands that name none of `names`, and, unless
    /// the walk records `body_names` or a module-scope name starts with `%`, without
    /// plain register declarations.
    fn tokens(
        &mut self,
        file: FileId,
        src: &[u8],
        body: Span,
        names: &Names,
        body_names: bool,
    ) -> Option<&[Token]> {
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
        );
        if !lexed.errors.is_empty() || end != body.hi as usize {
            self.exact = false;
        }
        self.map_comments.extend(
            lexed
                .comments
                .iter()
                .filter(|c| src[c.range()].starts_with(b"//:")),
        );
        self.lexed = lexed;
        Some(&self.lexed.tokens)
    }

    /// The tokens of `body` again (for debug sections that refer into it).
    fn tokens_again(&mut self, file: FileId, src: &[u8], body: Span) -> Option<&[Token]> {
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
            );
            self.lexed = lexed;
            self.again = Some(body.lo);
        }
        Some(&self.lexed.tokens)
    }
}

pub(crate) fn resolve(
    m: &mut Module,
    src: &[u8],
    errors: &mut Vec<Diagnostic>,
    deferred: &mut DeferredBodies,
) {
    let mut locs = std::mem::take(&mut m.locs);
    let mut calls = Vec::new();
    let mut legacy_warp_op = None;
    let file = m.file;
    // About one symbol per item (functions, most variables): sized once rather
    // than grown by doubling, each step a copy.
    let mut symbols: Vec<Symbol> = Vec::with_capacity(m.items.len());
    let mut map: FxHashMap<&[u8], SymbolId> =
        FxHashMap::with_capacity_and_hasher(m.items.len(), Default::default());

    // 1. Declarations.
    let mut declare = |symbols: &mut Vec<Symbol>,
                       errors: &mut Vec<Diagnostic>,
                       name: Span,
                       kind: SymbolKind,
                       linkage: Linkage,
                       space: Option<StateSpace>,
                       decl: Decl| {
        let text = &src[name.range()];
        match map.get(text) {
            None => {
                map.insert(text, SymbolId(symbols.len() as u32));
                symbols.push(Symbol {
                    name,
                    kind,
                    linkage,
                    space,
                    decls: Decls::new(decl),
                    aliasee: None,
                });
            }
            Some(&id) => {
                let sym = &mut symbols[id.0 as usize];
                let shown = String::from_utf8_lossy(text);
                if sym.kind != kind || sym.space != space {
                    errors.push(
                        Diagnostic::error(
                            file,
                            name,
                            format!("`{shown}` is redeclared as a different kind of symbol"),
                        )
                        .with_note(file, sym.name, "first declared at"),
                    );
                    return;
                }
                if decl.is_definition {
                    if let Some(prev) = sym.definition() {
                        errors.push(
                            Diagnostic::error(file, name, format!("redefinition of `{shown}`"))
                                .with_note(file, prev.name, "first defined at"),
                        );
                        return;
                    }
                    sym.linkage = linkage;
                }
                sym.decls.push(decl);
            }
        }
    };
    for (i, item) in m.items.iter().enumerate() {
        let item_id = ItemId(i as u32);
        match &item.kind {
            ItemKind::Variable(v) => {
                for (d, decl) in v.declarators.iter().enumerate() {
                    declare(
                        &mut symbols,
                        errors,
                        decl.name,
                        SymbolKind::Variable,
                        v.linkage,
                        Some(v.spec.space),
                        Decl {
                            item: item_id,
                            name: decl.name,
                            declarator: d as u32,
                            is_definition: v.linkage != Linkage::Extern,
                        },
                    );
                }
            }
            ItemKind::Function(f) => {
                let kind = match f.kind {
                    FuncKind::Func => SymbolKind::Function,
                    FuncKind::Entry => SymbolKind::Entry,
                };
                declare(
                    &mut symbols,
                    errors,
                    f.name,
                    kind,
                    f.linkage,
                    None,
                    Decl {
                        item: item_id,
                        name: f.name,
                        declarator: 0,
                        is_definition: f.body.is_some(),
                    },
                );
            }
            ItemKind::Section(s) => {
                for &label in &s.labels {
                    declare(
                        &mut symbols,
                        errors,
                        label,
                        SymbolKind::SectionLabel,
                        Linkage::Local,
                        None,
                        Decl {
                            item: item_id,
                            name: label,
                            declarator: 0,
                            is_definition: true,
                        },
                    );
                }
            }
            _ => {}
        }
    }
    let names = Names::new(map);

    // 2. Uses.
    let mut refs: Vec<Reference> = Vec::new();
    // Labels of every body, for DWARF data that refers into bodies.
    let mut body_names: BodyNames = FxHashMap::default();
    // Only debug sections refer to names inside bodies; without one, the map (a
    // quarter of a huge module's memory) is not built.
    let sections_refer = m.items.iter().any(|i| match &i.kind {
        ItemKind::Section(s) => !s.ident_refs.is_empty(),
        _ => false,
    });
    // Bodies walked in parallel groups (huge modules), merged in order below.
    let mut split = (deferred.split > 0).then(|| {
        walk_bodies_split(
            m,
            src,
            &names,
            sections_refer,
            deferred.opens,
            deferred.split,
        )
    });
    // The results are appended to the first group's arrays, grown once to their
    // total: the groups are freed one by one, and a huge module's references are
    // never held twice.
    if let Some(first) = split.as_mut().and_then(|outs| outs.first_mut()) {
        refs = std::mem::take(&mut first.refs);
        calls = std::mem::take(&mut first.calls);
    }
    for (i, item) in m.items.iter().enumerate() {
        let item_id = ItemId(i as u32);
        match &item.kind {
            ItemKind::Variable(v) => {
                for decl in &v.declarators {
                    let Some(init) = &decl.init else { continue };
                    for &span in &init.symbol_refs {
                        let text = &src[span.range()];
                        match names.get(text) {
                            Some(symbol) => refs.push(Reference {
                                span,
                                symbol,
                                item: item_id,
                                kind: RefKind::Initializer,
                            }),
                            None if text == b"WARP_SZ" => {}
                            None => errors.push(Diagnostic::error(
                                file,
                                span,
                                format!(
                                    "initializer refers to undeclared symbol `{}`",
                                    String::from_utf8_lossy(text)
                                ),
                            )),
                        }
                    }
                }
            }
            ItemKind::Alias { alias, aliasee } => {
                if let (Some(a), Some(b)) = (
                    names.get(&src[alias.range()]),
                    names.get(&src[aliasee.range()]),
                ) {
                    symbols[a.0 as usize].aliasee = Some(b);
                }
                for &span in [alias, aliasee] {
                    match names.get(&src[span.range()]) {
                        Some(symbol) => refs.push(Reference {
                            span,
                            symbol,
                            item: item_id,
                            kind: RefKind::Alias,
                        }),
                        None => errors.push(Diagnostic::error(
                            file,
                            span,
                            format!(
                                "`.alias` names undeclared function `{}`",
                                String::from_utf8_lossy(&src[span.range()])
                            ),
                        )),
                    }
                }
            }
            ItemKind::Function(f) if split.is_none() => {
                if let Some(body) = &f.body {
                    let toks = match deferred.tokens(file, src, body.span, &names, sections_refer) {
                        Some(toks) => toks,
                        None => &m.tokens[body.tokens.range()],
                    };
                    let mut cx = BodyCtx {
                        src,
                        file,
                        names: &names,
                        refs: &mut refs,
                        body_names: sections_refer.then_some(&mut body_names),
                        locs: &mut locs,
                        calls: &mut calls,
                        legacy_warp_op: &mut legacy_warp_op,
                        errors,
                    };
                    walk_body(&mut cx, item_id, f, toks);
                }
            }
            _ => {}
        }
    }

    if let Some(outs) = &split {
        let more = |f: fn(&BodiesOut) -> usize| outs.iter().map(f).sum::<usize>();
        refs.reserve_exact(more(|o| o.refs.len()));
        calls.reserve_exact(more(|o| o.calls.len()));
    }
    for out in split.into_iter().flatten() {
        refs.extend(out.refs);
        locs.files.extend(out.locs.files);
        locs.attrs.extend(out.locs.attrs);
        locs.directives.extend(out.locs.directives);
        calls.extend(out.calls);
        legacy_warp_op = legacy_warp_op.or(out.legacy_warp_op);
        errors.extend(out.errors);
        for (name, at) in out.body_names {
            body_names.entry(name).or_insert(at);
        }
        deferred.exact &= out.exact;
        deferred.map_comments.extend(out.map_comments);
    }

    // 3. Debug sections: labels, symbols, or labels inside bodies.
    let mut body_name_symbols: FxHashMap<&[u8], SymbolId> = FxHashMap::default();
    for (i, item) in m.items.iter().enumerate() {
        let ItemKind::Section(s) = &item.kind else {
            continue;
        };
        for &span in &s.ident_refs {
            let text = &src[span.range()];
            let symbol = if let Some(id) = names.get(text) {
                id
            } else if let Some(&id) = body_name_symbols.get(text) {
                id
            } else if let Some(&(func, label)) = body_names.get(text) {
                let id = SymbolId(symbols.len() as u32);
                symbols.push(Symbol {
                    name: label,
                    kind: SymbolKind::BodyName,
                    linkage: Linkage::Local,
                    space: None,
                    decls: Decls::new(Decl {
                        item: func,
                        name: label,
                        declarator: 0,
                        is_definition: true,
                    }),
                    aliasee: None,
                });
                body_name_symbols.insert(text, id);
                // Every use inside the function, so that renaming the name is complete.
                if let ItemKind::Function(f) = &m.items[func.0 as usize].kind {
                    if let Some(body) = &f.body {
                        let toks = match deferred.tokens_again(file, src, body.span) {
                            Some(toks) => toks,
                            None => &m.tokens[body.tokens.range()],
                        };
                        for t in toks {
                            if t.kind == TokenKind::Ident
                                && t.span() != label
                                && t.text(src) == text
                            {
                                refs.push(Reference {
                                    span: t.span(),
                                    symbol: id,
                                    item: func,
                                    kind: RefKind::Operand,
                                });
                            }
                        }
                    }
                }
                id
            } else {
                errors.push(Diagnostic::error(
                    file,
                    span,
                    format!(
                        "debug section refers to undefined label `{}`",
                        String::from_utf8_lossy(text)
                    ),
                ));
                continue;
            };
            refs.push(Reference {
                span,
                symbol,
                item: ItemId(i as u32),
                kind: RefKind::Dwarf,
            });
        }
    }

    refs.sort_by_key(|r| (r.span.lo, r.span.hi));
    m.symbols = symbols;
    m.references = refs;
    m.locs = locs;
    m.calls = calls;
    m.legacy_warp_op = legacy_warp_op;
}

/// What walking a group of bodies found.
#[derive(Default)]
struct BodiesOut<'s> {
    refs: Vec<Reference>,
    locs: Locs,
    calls: Vec<CallSite>,
    legacy_warp_op: Option<Span>,
    errors: Vec<Diagnostic>,
    body_names: BodyNames<'s>,
    exact: bool,
    map_comments: Vec<Span>,
}

/// Walks the function bodies of `m` on the thread pool, in consecutive groups of
/// about `split` bytes, each with its own deferred-body lexer; the groups' results
/// come back in order, so that appending them gives what one walk in order gives
/// (the caller sorts references; any diagnostic makes the linker parse the module
/// again in full, in order).
fn walk_bodies_split<'s>(
    m: &Module,
    src: &'s [u8],
    names: &Names<'s>,
    sections_refer: bool,
    opens: &[u32],
    split: usize,
) -> Vec<BodiesOut<'s>> {
    use rayon::prelude::*;
    let bodies: Vec<(ItemId, &FuncDecl, Span)> = m
        .items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match &item.kind {
            ItemKind::Function(f) => f.body.as_ref().map(|b| (ItemId(i as u32), f, b.span)),
            _ => None,
        })
        .collect();
    let mut groups: Vec<&[(ItemId, &FuncDecl, Span)]> = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, &(_, _, span)) in bodies.iter().enumerate() {
        bytes += span.len();
        if bytes >= split || i + 1 == bodies.len() {
            groups.push(&bodies[start..=i]);
            (start, bytes) = (i + 1, 0);
        }
    }
    groups
        .par_iter()
        .map(|group| {
            let (first, last) = (group[0].2.lo, group[group.len() - 1].2.lo);
            let lo = opens.partition_point(|&o| o < first);
            let hi = opens.partition_point(|&o| o <= last);
            let mut deferred = DeferredBodies::new(&opens[lo..hi]);
            let mut out = BodiesOut::default();
            for &(item, f, span) in group.iter() {
                let Some(body) = &f.body else { continue };
                let toks = match deferred.tokens(m.file, src, span, names, sections_refer) {
                    Some(toks) => toks,
                    None => &m.tokens[body.tokens.range()],
                };
                let mut cx = BodyCtx {
                    src,
                    file: m.file,
                    names,
                    refs: &mut out.refs,
                    body_names: sections_refer.then_some(&mut out.body_names),
                    locs: &mut out.locs,
                    calls: &mut out.calls,
                    legacy_warp_op: &mut out.legacy_warp_op,
                    errors: &mut out.errors,
                };
                walk_body(&mut cx, item, f, toks);
            }
            out.exact = deferred.exact;
            out.map_comments = std::mem::take(&mut deferred.map_comments);
            out
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sketch only turns names away that the map does not hold: every name of a
    /// module is found, whatever its length, and others are answered as the map does.
    #[test]
    fn names_answer_as_their_map_does() {
        let held: Vec<Vec<u8>> = (0..600)
            .map(|i| match i % 4 {
                0 => format!("f{i}").into_bytes(),
                1 => format!("__nv_fn_{i}").into_bytes(),
                2 => format!("_Z{}name{i}v", i % 10).into_bytes(),
                _ => format!("%g{i}").into_bytes(),
            })
            .collect();
        let map: FxHashMap<&[u8], SymbolId> = held
            .iter()
            .enumerate()
            .map(|(i, n)| (&n[..], SymbolId(i as u32)))
            .collect();
        let names = Names::new(map.clone());
        assert!(names.any_percent);
        for (i, n) in held.iter().enumerate() {
            assert_eq!(names.get(n), Some(SymbolId(i as u32)), "{:?}", n);
        }
        let mut turned_away = 0;
        for i in 0..2000 {
            let other = format!("__nv_fn_{i}_param_0").into_bytes();
            assert_eq!(names.get(&other), None);
            let label = format!("$L__BB{i}_1").into_bytes();
            assert_eq!(names.get(&label), map.get(&label[..]).copied());
            turned_away += usize::from(
                names.sketches[sketch(&other) / 64] & (1 << (sketch(&other) % 64)) == 0,
            );
        }
        // 600 names set at most 600 of 4,096 bits: most other names stop there.
        assert!(turned_away > 1500, "{turned_away}");
    }
}
