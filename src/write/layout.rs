//! Layout and writing of the merged module.
//!
//! Order: header; `.file` table; function prototypes; variables (imports first, then
//! definitions in dependency order of their initializers); function definitions in
//! link order; `.alias` directives; debug sections; GCC's `//:FUNC_MAP`-style comments.
//! So everything is declared before use and nothing is declared after its definition.
//! Text is spliced from the inputs: only identifiers of renamed symbols, alignments of
//! merged variables and `.file`/`.loc` indices are substituted.

use std::borrow::Cow;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::ir::{ItemKind, KeptText, Linkage, SymbolKind};
use crate::source::Span;

use super::rope::{ModuleText, Rope, Text};
use crate::diag::Diagnostics;
use crate::ir::Module;
use crate::link::inputs::{Inputs, ModSym};
use crate::link::names::Names;
use crate::link::resolve::{find_symbol, OutSym, Resolution};
use crate::link::{analyze, Analysis, DebugPlan, Dwarf, LinkOptions};
use crate::parallel::{map_each, nth_chunk};
use crate::source::SourceMap;

/// A substitution: replace the bytes of `span` (possibly empty: an insertion). A
/// renamed symbol's new name is borrowed from the resolution (every reference to it
/// is an edit: a copy each cost an allocation per reference).
type Edit<'r> = (Span, Cow<'r, [u8]>);

/// Output symbols per parallel task when prototypes and variables are laid out:
/// large enough that appending the pieces in order costs little next to making them.
const CHUNK: usize = 2048;

struct Writer<'i, 'a> {
    inputs: &'i Inputs<'a>,
    res: &'i Resolution,
    names: &'i Names,
    /// Output symbols whose alignment is raised, sorted by origin module: each
    /// module's are a range ([`Writer::module_edits`]).
    aligned: Vec<usize>,
    edits: Vec<Vec<Edit<'i>>>,
}

/// Lays out the output for target `target` of a link that succeeded
/// ([`Analysis::ok`]).
pub(crate) fn layout(a: &Analysis, target: usize) -> Rope {
    let inputs = &a.inputs;
    let res = a
        .resolution
        .as_ref()
        .expect("a link without errors is resolved");
    let names = a.names.as_ref().expect("a resolved link has output names");
    let header = &a.headers[target];
    let debug = &a.debug;
    let live = a.live_outs();
    let keep = |o: usize| live.is_none_or(|l| l[o]);
    let dwarf = debug.dwarf;
    let mut writer = Writer {
        inputs,
        res,
        names,
        aligned: {
            let mut aligned: Vec<usize> = (0..res.outs.len())
                .filter(|&o| res.outs[o].align.is_some())
                .collect();
            // By module (stably, so in output order within one), for `module_edits`.
            aligned.sort_by_key(|&o| res.outs[o].origin.module);
            aligned
        },
        edits: Vec::new(),
    };
    writer.edits = debug
        .files
        .maps
        .par_iter()
        .enumerate()
        .map(|(mi, files)| {
            // Only modules whose DWARF is in the output keep the `.loc` attributes
            // that name its labels.
            let dwarf = match (dwarf, &debug.merged) {
                (Dwarf::Merge, Some(m)) if !m.kept[mi] => Dwarf::Drop,
                _ => dwarf,
            };
            writer.module_edits(mi as u32, files, dwarf)
        })
        .collect();
    let var_order = &a.variable_order;
    let file_items: &[(u32, usize)] = if dwarf == Dwarf::Strip {
        &[]
    } else {
        &debug.files.items
    };
    // The parts are numbered in advance (the header and `.file` lines are part 0,
    // what follows the definitions the last), so that their new text keeps its
    // arena numbers when they are appended.
    let prototype_parts = res.outs.len().div_ceil(CHUNK) as u32;
    let variable_parts = var_order.len().div_ceil(CHUNK) as u32;
    let definition_parts = inputs.modules.len() as u32;
    let tail_part = 1 + prototype_parts + variable_parts + definition_parts;
    let w = &writer;
    let edits = &w.edits;
    // The first and the last part are laid out in order on one thread while the
    // parts between them are laid out in parallel on the others: the last part's
    // order (`.alias` lines, DWARF, map comments) was otherwise a wait for every
    // other thread at the end of the layout.
    let ((mut out, tail), middle) = rayon::join(
        || {
            let mut head = Rope::new();
            head.push_bytes(header.render().as_bytes());
            for &(mi, item) in file_items {
                let span = inputs.modules[mi as usize].items[item].span;
                line(&mut head, inputs, edits, mi, span, "");
            }
            (head, w.tail(tail_part, dwarf, debug, &keep))
        },
        || {
            // Prototypes of every function the module keeps (kernels need none),
            // then the variables, each in chunks; then the definitions, in link
            // order with the module-scope pragmas between them, a part per module.
            // One loop over all three, each part handed out on its own, in
            // order, to whichever thread is free: three loops one after the
            // other each ended with a thread waiting for the other's last chunk
            // (docs/performance.md). Started largest first instead, the layout
            // took longer.
            let chunks = (prototype_parts + variable_parts) as usize;
            map_each(chunks + inputs.modules.len(), |i| {
                let part = 1 + i as u32;
                if i < prototype_parts as usize {
                    let outs = nth_chunk(&res.outs, CHUNK, i);
                    w.prototypes(part, i * CHUNK, outs, &keep)
                } else if i < chunks {
                    let vi = i - prototype_parts as usize;
                    let os = nth_chunk(var_order, CHUNK, vi);
                    let mut rope = Rope::part(part);
                    for &o in os {
                        variable(&mut rope, inputs, res, edits, o as usize);
                    }
                    rope
                } else {
                    let mi = i - chunks;
                    w.definitions(part, mi as u32, &inputs.modules[mi], &keep)
                }
            })
        },
    );
    // Each part keeps its piece array (`Rope::append_all`).
    out.append_all(middle.into_iter().chain([tail]).collect());
    crate::parallel::free(writer.edits);
    out
}

impl<'i> Writer<'i, '_> {
    /// The prototypes part `part` of output symbols `outs`, the first of which is
    /// output symbol `first`. Here and below, `keep(o)` says whether output symbol
    /// `o` is kept (`--gc-sections` may remove it).
    fn prototypes(
        &self,
        part: u32,
        first: usize,
        outs: &[OutSym],
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Rope {
        let (inputs, edits) = (self.inputs, &self.edits);
        let mut rope = Rope::part(part);
        for (j, out) in outs.iter().enumerate() {
            if out.kind != SymbolKind::Function || !keep(first + j) {
                continue;
            }
            let m = inputs.module(out.origin);
            let sym = m.symbol(out.origin.id);
            let d = sym.definition().unwrap_or(&sym.decls[0]);
            let item = m.item(d.item);
            if let ItemKind::Function(f) = &item.kind {
                let tail = if f.noreturn { " .noreturn;" } else { ";" };
                let span = Span::new(item.span.lo, f.header_end);
                // A definition without a directive takes its module's earlier
                // `.visible`/`.weak` declaration's linkage (ptxas binds it so): the
                // prototype says it, so that the output still exports it.
                if f.linkage == Linkage::Local && sym.linkage != Linkage::Local {
                    rope.push_bytes(sym.linkage.as_str().as_bytes());
                    rope.push_bytes(b" ");
                }
                line(&mut rope, inputs, edits, out.origin.module, span, tail);
            }
        }
        rope
    }

    /// The definitions part `part` of module `mi`: the function definitions chosen
    /// from it and its module-scope pragmas, in its order.
    fn definitions(
        &self,
        part: u32,
        mi: u32,
        m: &Module,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Rope {
        let (inputs, res, edits) = (self.inputs, self.res, &self.edits);
        let mut out = Rope::part(part);
        let defined_by = m.function_definitions();
        for (ii, item) in m.items.iter().enumerate() {
            match &item.kind {
                ItemKind::Function(f) if f.body.is_some() => {
                    let Some(id) = defined_by[ii] else {
                        continue;
                    };
                    let me = ModSym { module: mi, id };
                    let chosen = res
                        .out_of(me)
                        .is_some_and(|o| res.outs[o as usize].origin == me && keep(o as usize));
                    if chosen {
                        line(&mut out, inputs, edits, mi, item.span, "");
                    }
                }
                ItemKind::Pragma => line(&mut out, inputs, edits, mi, item.span, ""),
                _ => {}
            }
        }
        out
    }

    /// The last part, `part`: what follows the definitions (`.alias` directives,
    /// DWARF sections, GCC's map comments).
    fn tail(
        &self,
        part: u32,
        dwarf: Dwarf,
        debug: &DebugPlan,
        keep: &(impl Fn(usize) -> bool + Sync),
    ) -> Rope {
        let (inputs, res, edits) = (self.inputs, self.res, &self.edits);
        let mut out = Rope::part(part);
        // `.alias` directives of the aliases that won, in output-symbol order: each
        // module's `.alias` items are found in parallel (most modules have none) and
        // named through an index of that module's symbols, instead of a serial pass
        // over every output symbol.
        let mut aliases: Vec<(usize, u32, Span)> = inputs
            .modules
            .par_iter()
            .enumerate()
            .flat_map_iter(|(mi, m)| {
                let mi = mi as u32;
                let items: Vec<(&[u8], Span)> = m
                    .items
                    .iter()
                    .filter_map(|item| match &item.kind {
                        ItemKind::Alias { alias, .. } => {
                            let name = m.kept.slice(*alias);
                            Some((
                                name.unwrap_or_else(|| &inputs.src(mi)[alias.range()]),
                                item.span,
                            ))
                        }
                        _ => None,
                    })
                    .collect();
                let ids: FxHashMap<&[u8], crate::ir::SymbolId> = if items.is_empty() {
                    FxHashMap::default()
                } else {
                    let mut ids = FxHashMap::default();
                    for (id, _) in m.symbols_with_ids() {
                        ids.entry(m.symbol_name(id)).or_insert(id);
                    }
                    ids
                };
                items.into_iter().filter_map(move |(name, span)| {
                    let me = ModSym {
                        module: mi,
                        id: *ids.get(name)?,
                    };
                    let o = res.out_of(me)? as usize;
                    let out = &res.outs[o];
                    let wins = out.origin == me
                        && out.kind == SymbolKind::Function
                        && m.symbol(me.id).aliasee.is_some()
                        && keep(o);
                    wins.then_some((o, mi, span))
                })
            })
            .collect();
        // Stable: an output symbol's items stay in source order.
        aliases.sort_by_key(|&(o, ..)| o);
        for (_, mi, span) in aliases {
            line(&mut out, inputs, edits, mi, span, "");
        }
        if let (Dwarf::Merge, Some(merged)) = (dwarf, &debug.merged) {
            for block in merged.text(&|mi, span| token_text(inputs, edits, mi, span)) {
                out.push_bytes(&block);
            }
        }
        self.map_comments(&mut out);
        out
    }

    fn module_edits(&self, mi: u32, files: &FxHashMap<u32, u32>, dwarf: Dwarf) -> Vec<Edit<'i>> {
        let m = &self.inputs.modules[mi as usize];
        let mut edits: Vec<Edit> = Vec::new();
        // The module's renamed symbols first (usually none), then their names: a
        // module with millions of references and nothing renamed costs one pass over
        // its symbols.
        let renamed: Vec<Option<&'i [u8]>> = m
            .symbols_with_ids()
            .map(|(id, _)| {
                // A global name never changes, and a local is its output's origin.
                let o = self.res.out_of(ModSym { module: mi, id })?;
                self.names.renamed(o)
            })
            .collect();
        if renamed.iter().any(Option::is_some) {
            let new_name = |id: crate::ir::SymbolId| renamed[id.0 as usize];
            for r in &m.references {
                if let Some(new) = new_name(r.symbol) {
                    edits.push((r.span, Cow::Borrowed(new)));
                }
            }
            for (id, s) in m.symbols_with_ids() {
                if let Some(new) = new_name(id) {
                    edits.extend(s.decls.iter().map(|d| (d.name, Cow::Borrowed(new))));
                }
            }
        }
        // This module's: a range of the outputs sorted by module, not a pass over all
        // of them for each module (thousands of merged commons in thousands of
        // modules would make that quadratic).
        let module_of = |&o: &usize| self.res.outs[o].origin.module;
        let lo = self.aligned.partition_point(|o| module_of(o) < mi);
        let hi = self.aligned.partition_point(|o| module_of(o) <= mi);
        for out in self.aligned[lo..hi].iter().map(|&o| &self.res.outs[o]) {
            let Some(align) = out.align else {
                continue;
            };
            let sym = m.symbol(out.origin.id);
            let d = sym.definition().unwrap_or(&sym.decls[0]);
            if let ItemKind::Variable(v) = &m.item(d.item).kind {
                match v.spec.align_span {
                    Some(span) => edits.push((span, Cow::Owned(align.to_string().into_bytes()))),
                    None => {
                        let at = v.spec.space_span.hi;
                        edits.push((
                            Span::new(at, at),
                            Cow::Owned(format!(" .align {align}").into_bytes()),
                        ));
                    }
                }
            }
        }
        self.call_alignments(mi, &mut edits);
        let mut renumber = |span: Span, old: u32| {
            if let Some(&new) = files.get(&old) {
                if new != old {
                    edits.push((span, Cow::Owned(new.to_string().into_bytes())));
                }
            }
        };
        for &(span, old) in &m.locs.files {
            renumber(span, old);
        }
        for item in &m.items {
            if let ItemKind::File(f) = &item.kind {
                renumber(f.index_span, f.index);
            }
        }
        match dwarf {
            Dwarf::Merge => {}
            Dwarf::Drop => edits.extend(
                m.locs
                    .attrs
                    .iter()
                    .map(|&span| (span, Cow::Borrowed(&[][..]))),
            ),
            Dwarf::Strip => edits.extend(
                m.locs
                    .directives
                    .iter()
                    .map(|&span| (span, Cow::Borrowed(&[][..]))),
            ),
        }
        // A deletion (a dropped `.loc` attribute) may contain a rename: the outer
        // edit wins.
        edits.sort_by_key(|(s, _)| (s.lo, std::cmp::Reverse(s.hi)));
        let mut end = 0;
        edits.retain(|(s, _)| {
            let keep = s.lo >= end || s.is_empty() && s.lo == end;
            if keep {
                end = end.max(s.hi);
            }
            keep
        });
        edits
    }

    /// ptxas requires an aggregate argument's `.param .align` at a call site to equal
    /// the callee's formal parameter alignment ("Alignment of argument does not match
    /// formal parameter"). Producers agree with their own declarations, but a callee
    /// from another producer may align differently: rewrite the caller's declaration.
    fn call_alignments(&self, mi: u32, edits: &mut Vec<Edit<'i>>) {
        let m = &self.inputs.modules[mi as usize];
        for call in &m.calls {
            let Ok(r) = m
                .references
                .binary_search_by_key(&call.callee.lo, |r| r.span.lo)
            else {
                continue;
            };
            let Some(o) = self.res.out_of(ModSym {
                module: mi,
                id: m.references[r].symbol,
            }) else {
                continue;
            };
            let origin = self.res.outs[o as usize].origin;
            let dm = self.inputs.module(origin);
            // Most callees have none: skip their definitions (another module's,
            // cold in the cache, several loads each) altogether.
            if !dm.has_aggregate_params(origin.id) {
                continue;
            }
            let Some(def) = dm.symbol(origin.id).definition() else {
                continue;
            };
            let ItemKind::Function(f) = &dm.item(def.item).kind else {
                continue;
            };
            let none: &[crate::ir::Param] = &[];
            let rets = f.signature.returns().unwrap_or(none);
            let params = f.signature.params().unwrap_or(none);
            let pairs = call
                .rets
                .iter()
                .zip(rets)
                .chain(call.args.iter().zip(params));
            for (actual, formal) in pairs {
                let Some(want) = formal.spec.align.filter(|_| formal.is_array()) else {
                    continue;
                };
                let Some(decl) = &actual.decl else { continue };
                match decl.align {
                    Some((have, _)) if have == want => {}
                    Some((_, span)) => {
                        edits.push((span, Cow::Owned(want.to_string().into_bytes())))
                    }
                    None => {
                        let at = decl.space.hi;
                        edits.push((
                            Span::new(at, at),
                            Cow::Owned(format!(" .align {want}").into_bytes()),
                        ));
                    }
                }
            }
        }
    }

    /// GCC's `//:FUNC_MAP "name", ...` and `//:VAR_MAP "name"` comments tell the
    /// OpenACC/OpenMP runtime where kernels and variables are: keep them, renamed.
    fn map_comments(&self, out: &mut Rope) {
        for (mi, m) in self.inputs.modules.iter().enumerate() {
            for &c in &m.map_comments {
                // Kept at parse time (`Module::keep_text`): the input is not read again.
                let text = m
                    .kept
                    .slice(c)
                    .unwrap_or_else(|| &self.inputs.src(mi as u32)[c.range()]);
                if !(text.starts_with(b"//:FUNC_MAP \"") || text.starts_with(b"//:VAR_MAP \"")) {
                    continue;
                }
                let open = text.iter().position(|&b| b == b'"').unwrap_or(0) + 1;
                let close = open + text[open..].iter().position(|&b| b == b'"').unwrap_or(0);
                let name = &text[open..close];
                let renamed = find_symbol(m, name)
                    .and_then(|id| {
                        self.res.out_of(ModSym {
                            module: mi as u32,
                            id,
                        })
                    })
                    .map(|o| self.names.of(self.inputs, self.res, o));
                let (lo, open, close) = (c.lo, c.lo + open as u32, c.lo + close as u32);
                let mi = mi as u32;
                push_range(out, mi, &m.kept, Span::new(lo, open));
                match renamed {
                    Some(new) => out.push_bytes(new),
                    None => push_range(out, mi, &m.kept, Span::new(open, close)),
                }
                push_range(out, mi, &m.kept, Span::new(close, c.hi));
                out.push_bytes(b"\n");
            }
        }
    }
}

/// Appends the declaration of output variable `o` (only its own declarator of an item
/// that declares several).
fn variable(out: &mut Rope, inputs: &Inputs, res: &Resolution, edits: &[Vec<Edit<'_>>], o: usize) {
    let origin = res.outs[o].origin;
    let m = inputs.module(origin);
    let sym = m.symbol(origin.id);
    let d = sym.definition().unwrap_or(&sym.decls[0]);
    let item = m.item(d.item);
    let ItemKind::Variable(v) = &item.kind else {
        return;
    };
    let decl = &v.declarators[d.declarator as usize];
    // The part before the first declarator (linkage, space, type), then this
    // declarator alone: items declaring several names are split.
    let first_name = v.declarators[0].span.lo;
    let mi = origin.module;
    let prefix = Span::new(item.span.lo, first_name);
    let edits = &edits[mi as usize];
    splice(out, mi, prefix, edits, &m.kept);
    splice(out, mi, decl.span, edits, &m.kept);
    out.push_bytes(b";\n");
}

/// The output text of the token at `span` of module `mi`: its rename, else as written.
fn token_text(inputs: &Inputs, edits: &[Vec<Edit<'_>>], mi: u32, span: Span) -> Vec<u8> {
    let edits = &edits[mi as usize];
    let i = edits.partition_point(|(s, _)| s.lo < span.lo);
    match edits.get(i) {
        Some((s, new)) if *s == span => new.to_vec(),
        _ => inputs.src(mi)[span.range()].to_vec(),
    }
}

/// Appends `span` of module `mi` with its edits to `out`, then `tail` and a newline.
fn line(out: &mut Rope, inputs: &Inputs, edits: &[Vec<Edit<'_>>], mi: u32, span: Span, tail: &str) {
    let kept = &inputs.modules[mi as usize].kept;
    splice(out, mi, span, &edits[mi as usize], kept);
    out.push_bytes(tail.as_bytes());
    out.push_bytes(b"\n");
}

/// Appends `span` of module `mi` to `out`: from its kept copy when one holds the span,
/// else from its source.
fn push_range(out: &mut Rope, mi: u32, kept: &KeptText, span: Span) {
    match kept.offset_of(span) {
        Some(at) => out.push_kept(mi, at, span.len() as u32),
        None => out.push_src(mi, span.lo, span.hi),
    }
}

/// Appends `span` of module `mi` to `out`, with `edits` (sorted, disjoint) applied:
/// from the module's kept copy when it has one of the whole span, else from its source.
fn splice(out: &mut Rope, mi: u32, span: Span, edits: &[Edit<'_>], kept: &KeptText) {
    let copy = kept.offset_of(span);
    let push = |out: &mut Rope, lo: u32, hi: u32| match copy {
        Some(at) => out.push_kept(mi, at + (lo - span.lo), hi - lo),
        None => out.push_src(mi, lo, hi),
    };
    let mut pos = span.lo;
    let first = edits.partition_point(|(s, _)| s.lo < span.lo);
    for (s, text) in &edits[first..] {
        if s.lo >= span.hi {
            break;
        }
        push(out, pos, s.lo);
        out.push_bytes(text);
        pos = s.hi;
    }
    push(out, pos, span.hi);
}

/// Links `modules` (parsed from `sources`, in link order) into one PTX module per
/// target of `opts`; on failure, returns every error found, sorted.
pub fn link(
    sources: &SourceMap,
    modules: &[Module],
    opts: &LinkOptions,
) -> Result<Vec<Rope>, Diagnostics> {
    let a = analyze(sources, modules, opts);
    if !a.ok() {
        return Err(a.errors);
    }
    Ok((0..a.headers.len()).map(|t| layout(&a, t)).collect())
}

/// The source of each of `modules`, in order: what the pieces of a rope that
/// [`link`] made of those modules refer to (`rope.to_vec(&module_sources(..))`).
pub fn module_sources<'a>(sources: &'a SourceMap, modules: &'a [Module]) -> Vec<ModuleText<'a>> {
    modules
        .iter()
        .map(|m| {
            let f = sources.file(m.file);
            ModuleText {
                src: Text::File(f.pages()),
                kept: &m.kept,
                pages: Some(f.pages()),
            }
        })
        .collect()
}
