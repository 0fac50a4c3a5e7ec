//! Second pass: build the symbol table and find every reference to a module-scope
//! symbol, in bodies, initializers, `.alias`, `.loc` and debug sections.
//!
//! This runs after all items are parsed because PTX from some producers uses names
//! before declaring them (GCC's raw output), and because DWARF sections at the end of
//! a module refer to labels inside function bodies.

use rustc_hash::FxHashMap;

use super::alias::alias_refusal;
use super::body::{walk_body, BodyCtx, BodyNames};
use super::calls::{check_calls, check_prototypes_agree};
use super::deferred::DeferredBodies;
use super::names::Names;
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    CallSite, Decl, Decls, FuncDecl, FuncKind, ItemId, ItemKind, Linkage, Locs, Module, RefKind,
    Reference, StateSpace, Symbol, SymbolId, SymbolKind,
};
use crate::lex::TokenKind;
use crate::source::Span;

/// Builds the module's symbol table and finds every reference to a module-scope
/// symbol: declarations first, then uses (initializers, `.alias`, bodies), then the
/// names debug sections refer to.
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

    let (mut symbols, names) = declare_symbols(m, src, errors);

    // Uses.
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
                                Code::UndeclaredSymbol,
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
                    let (sa, sb) = (&symbols[a.0 as usize], &symbols[b.0 as usize]);
                    if let Some(why) = alias_refusal(m, src, sa, sb, sa.aliasee.is_some()) {
                        errors.push(Diagnostic::error(Code::Alias, file, item.span, why));
                    }
                    symbols[a.0 as usize].aliasee.get_or_insert(b);
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
                            Code::UndeclaredSymbol,
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
                    let (toks, compact) =
                        match deferred.tokens(file, src, body.span, &names, sections_refer) {
                            Some(lexed) => lexed,
                            None => (&m.tokens[body.tokens.range()], None),
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
                    walk_body(&mut cx, item_id, f, toks, compact);
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

    debug_section_refs(
        m,
        src,
        &names,
        &body_names,
        &mut symbols,
        &mut refs,
        errors,
        deferred,
    );

    refs.sort_by_key(|r| (r.span.lo, r.span.hi));
    check_calls(m, src, &names, &symbols, &refs, &calls, errors);
    check_prototypes_agree(m, src, &symbols, errors);
    m.symbols = symbols;
    m.references = refs;
    m.locs = locs;
    m.calls = calls;
    m.legacy_warp_op = legacy_warp_op;
}

/// The module-scope symbols of `m`, each with every declaration, in order of first
/// declaration, and the table of their names; a redeclaration as another kind of
/// symbol and a second definition are errors.
fn declare_symbols<'s>(
    m: &Module,
    src: &'s [u8],
    errors: &mut Vec<Diagnostic>,
) -> (Vec<Symbol>, Names<'s>) {
    let file = m.file;
    // About one symbol per item (functions, most variables): sized once rather
    // than grown by doubling, each step a copy.
    let mut symbols: Vec<Symbol> = Vec::with_capacity(m.items.len());
    let mut map: FxHashMap<&[u8], SymbolId> =
        FxHashMap::with_capacity_and_hasher(m.items.len(), Default::default());

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
                            Code::KindMismatch,
                            file,
                            name,
                            format!("`{shown}` is redeclared as a different kind of symbol"),
                        )
                        .with_note(file, sym.name, "first declared at"),
                    );
                    return;
                }
                // A body under `.extern` was refused where it was parsed.
                let refused = decl.is_definition && linkage == Linkage::Extern;
                if let Some(conflict) = linkage_conflict(kind, sym.linkage, linkage, &shown) {
                    if !refused {
                        errors.push(conflict.at(file, name, sym.name));
                    }
                    return;
                }
                if decl.is_definition {
                    if let Some(prev) = sym.definition() {
                        errors.push(
                            Diagnostic::error(
                                Code::Redefinition,
                                file,
                                name,
                                format!("redefinition of `{shown}`"),
                            )
                            .with_note(
                                file,
                                prev.name,
                                "first defined at",
                            ),
                        );
                        return;
                    }
                    // A function keeps its first declaration's linkage: a definition
                    // without a directive takes it (ptxas binds `.visible .func f();
                    // .func f() {...}` globally), any other differing one was refused.
                    if kind == SymbolKind::Variable {
                        sym.linkage = linkage;
                    }
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
    (symbols, Names::new(map))
}

/// Why ptxas refuses a declaration with linkage `now` of a symbol of `kind` that the
/// module declared before with linkage `was` (docs/linking.md, "Declarations checked
/// in each module"), in either order, if it does.
struct Conflict {
    code: Code,
    message: String,
    help: &'static str,
}

impl Conflict {
    /// The error at `name`, with a note at the first declaration.
    fn at(self, file: crate::source::FileId, name: Span, first: Span) -> Diagnostic {
        Diagnostic::error(self.code, file, name, self.message)
            .with_note(file, first, "first declared at")
            .with_help(self.help)
    }
}

/// ptxas 12.9 on two declarations of one name in a module: a function or kernel
/// declared `.extern` and otherwise ("Inconsistent redefinition"), or `.visible`,
/// `.weak` and none mixed, except that a later one without a directive takes the
/// first's; a variable declared `.extern`, then defined without a directive
/// ("'.extern' variable cannot be resolved by a '.static'"). `.common` on a function
/// is refused where it is written, and not again here.
fn linkage_conflict(kind: SymbolKind, was: Linkage, now: Linkage, shown: &str) -> Option<Conflict> {
    use Linkage::{Common, Extern, Local};
    match kind {
        SymbolKind::Function | SymbolKind::Entry => {
            if was == Common || now == Common || was == now {
                None
            } else if was == Extern || now == Extern {
                Some(Conflict {
                    code: Code::ExternConflict,
                    message: format!(
                        "`{shown}` is declared `.extern` and also without it in this module"
                    ),
                    help: "a function defined or declared `.visible`/`.weak` in a module needs \
                           no `.extern` declaration there: remove it",
                })
            } else if now == Local {
                None
            } else {
                let said = |l: Linkage| match l {
                    Local => "without a linkage directive".to_string(),
                    l => format!("`{}`", l.as_str()),
                };
                Some(Conflict {
                    code: Code::LinkageConflict,
                    message: format!(
                        "`{shown}` is declared {} here but {} before",
                        said(now),
                        said(was)
                    ),
                    help: "give every declaration of a function the linkage of its first, or \
                           none after the first",
                })
            }
        }
        SymbolKind::Variable if was == Extern && now == Local => Some(Conflict {
            code: Code::ExternConflict,
            message: format!(
                "`{shown}` is declared `.extern` but defined here without a linkage directive"
            ),
            help: "a module-local definition cannot satisfy an `.extern` declaration: \
                   define it `.visible`, or remove the `.extern` declaration",
        }),
        _ => None,
    }
}

/// The names debug sections refer to: module-scope symbols, or labels and variables
/// inside bodies (`body_names`), which become symbols of their own here with every
/// use in their function as a reference.
#[allow(clippy::too_many_arguments)]
fn debug_section_refs<'s>(
    m: &Module,
    src: &'s [u8],
    names: &Names<'s>,
    body_names: &BodyNames<'s>,
    symbols: &mut Vec<Symbol>,
    refs: &mut Vec<Reference>,
    errors: &mut Vec<Diagnostic>,
    deferred: &mut DeferredBodies,
) {
    let file = m.file;
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
                // ptxas assembles such a module, with `-c` and whole-program alike,
                // leaving the name an undefined local symbol of the cubin (measured
                // with 12.9: a `.loc` label deleted from an LLVM body). The name
                // becomes a body name declared here, at its first use, so that it is
                // renamed apart like the others and never binds to another module's
                // label of that name.
                errors.push(
                    Diagnostic::warning(
                        Code::UndefinedLabel,
                        file,
                        span,
                        format!(
                            "debug section refers to undefined label `{}`",
                            String::from_utf8_lossy(text)
                        ),
                    )
                    .with_help("ptxas assembles it, leaving the address undefined"),
                );
                let id = SymbolId(symbols.len() as u32);
                symbols.push(Symbol {
                    name: span,
                    kind: SymbolKind::BodyName,
                    linkage: Linkage::Local,
                    space: None,
                    decls: Decls::new(Decl {
                        item: ItemId(i as u32),
                        name: span,
                        declarator: 0,
                        is_definition: true,
                    }),
                    aliasee: None,
                });
                body_name_symbols.insert(text, id);
                // The declaration is this use: its span is renamed with it.
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
                let (toks, compact) =
                    match deferred.tokens(m.file, src, span, names, sections_refer) {
                        Some(lexed) => lexed,
                        None => (&m.tokens[body.tokens.range()], None),
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
                walk_body(&mut cx, item, f, toks, compact);
            }
            out.exact = deferred.exact;
            out.map_comments = std::mem::take(&mut deferred.map_comments);
            out
        })
        .collect()
}
