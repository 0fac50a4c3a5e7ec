//! Resolution: decides, for every symbol of every input, which definition the
//! merged module keeps and what each reference binds to, by NVIDIA's linkage rules
//! as measured with nvJitLink and ptxas (docs/linking.md; its "Rule sections" are
//! the §N cited across `src/link/`):
//!
//! * only `.extern` imports; it binds to a `.visible`, `.weak` or `.common` definition;
//! * two `.visible` definitions are a duplicate; `.visible` beats `.weak`; among
//!   `.weak` definitions the first in link order wins;
//! * `.common` and uninitialized `.weak` variables (C tentative definitions) merge into
//!   one object of the largest size and alignment; an initialized one must be largest;
//! * prototypes and variable sizes/state spaces of the bound declarations must agree;
//! * unresolved: an extern function that is used, or any extern variable, is an error,
//!   except system calls, dynamic `.extern .shared x[]` and texture references.

use crate::diag::{Code, Diagnostic, Severity};
use crate::ir::{ItemKind, Linkage, Module, StateSpace, SymbolId, SymbolKind};

use super::compat::{signature_mismatch, var_size};
use super::db::{is_global, is_opaque_var, SymbolDb};
use super::identical::difference;
use super::inputs::Inputs;
use super::inputs::ModSym;
use super::report::Shown;

/// Functions the CUDA driver provides: they stay `.extern` unless an input defines them.
pub const SYSTEM_CALLS: &[&str] = &["vprintf", "malloc", "free", "__assertfail"];

/// One symbol of the merged module.
#[derive(Clone, Debug)]
pub(crate) struct OutSym {
    /// The input symbol whose text is emitted: the definition, or, for what stays
    /// undefined for the driver, its `.extern` declaration.
    pub origin: ModSym,
    pub kind: SymbolKind,
    /// Bound by name across modules (its name never changes).
    pub global: bool,
    /// Alignment to emit instead of the origin's (merged commons, dynamic shared).
    pub align: Option<u32>,
}

/// The result of resolution.
pub(crate) struct Resolution {
    pub outs: Vec<OutSym>,
    /// `fate[module][symbol]`: the output symbol each input symbol binds to, or `None`
    /// for symbols that vanish (unused imports) or stay inside a body (labels).
    pub fate: Vec<Vec<Option<u32>>>,
    /// Imports nothing defines, with the declarations concerned. They are errors,
    /// except, with `--gc-sections`, when only removed code refers to them.
    pub undefined: Vec<(Diagnostic, Vec<ModSym>)>,
    /// A note for each set of identical definitions folded into one
    /// (`--fold-identical`).
    pub folded: Vec<Diagnostic>,
}

impl Resolution {
    pub fn out_of(&self, s: ModSym) -> Option<u32> {
        self.fate[s.module as usize][s.id.0 as usize]
    }
}

/// Resolves one part of the symbols: a run of global names, or one module's
/// module-local symbols. Parts are resolved in parallel and joined in order.
struct Resolver<'i, 'a> {
    inputs: &'i Inputs<'a>,
    db: &'i SymbolDb<'a>,
    opts: ResolveOptions,
    part: Part,
    /// The entries of the name being resolved, reused from name to name (one
    /// array per name was a fifth of a large link's allocations).
    entries: Vec<Entry>,
}

/// What resolving one part found; output symbols are numbered from 0 in the part.
#[derive(Default)]
struct Part {
    outs: Vec<OutSym>,
    /// Each input symbol bound in the part, and its output symbol.
    binds: Vec<(ModSym, u32)>,
    undefined: Vec<(Diagnostic, Vec<ModSym>)>,
    errors: Vec<Diagnostic>,
    /// Identical definitions folded into one (`--fold-identical`).
    folded: Vec<Diagnostic>,
}

/// Global names per parallel task: large enough that joining the parts costs
/// little next to resolving them.
const GLOBALS_PER_TASK: usize = 4096;

/// What a link asks of resolution beyond the rules.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ResolveOptions {
    /// `--fold-identical`: identical strong definitions become one.
    pub fold_identical: bool,
    /// `-r`: an import nothing defines stays `.extern`, for a later link.
    pub relocatable: bool,
}

pub(crate) fn resolve(
    inputs: &Inputs,
    db: &SymbolDb,
    opts: ResolveOptions,
) -> Result<Resolution, Vec<Diagnostic>> {
    let resolver = || Resolver {
        inputs,
        db,
        opts,
        part: Part::default(),
        entries: Vec::new(),
    };
    // Output symbols: the global names in their order, then each module's locals;
    // each part handed out on its own to whichever thread is free.
    let names = &db.globals.names;
    let global_parts = names.len().div_ceil(GLOBALS_PER_TASK);
    let parts: Vec<Part> = crate::parallel::map_each(global_parts + inputs.modules.len(), |i| {
        let mut r = resolver();
        if i < global_parts {
            for (name, range) in crate::parallel::nth_chunk(names, GLOBALS_PER_TASK, i) {
                r.global(name, db.globals.syms(range));
            }
        } else {
            let mi = i - global_parts;
            let m = &inputs.modules[mi];
            for (id, _) in m.symbols_with_ids() {
                if !is_global(m, id) {
                    r.local(ModSym {
                        module: mi as u32,
                        id,
                    });
                }
            }
        }
        r.part
    });
    join_parts(inputs, parts, global_parts)
}

/// The resolution from its parts, in order: the first `global_parts` parts are the
/// global names', then one per module with its locals. Each part's output symbols
/// follow the previous part's. What is per module is done in parallel (allocating
/// each module's fates, binding its locals, copying the output symbols
/// ([`crate::parallel::concatenated`]), freeing the parts); in order are only the
/// global names' bindings, which cross modules.
fn join_parts(
    inputs: &Inputs,
    mut parts: Vec<Part>,
    global_parts: usize,
) -> Result<Resolution, Vec<Diagnostic>> {
    use rayon::prelude::*;
    let mut bases = Vec::with_capacity(parts.len());
    let mut total = 0;
    for p in &parts {
        bases.push(total);
        total += p.outs.len() as u32;
    }
    let mut fate: Vec<Vec<Option<u32>>> = inputs
        .modules
        .par_iter()
        .map(|m| vec![None; m.symbols.len()])
        .collect();
    let (global, local) = parts.split_at_mut(global_parts);
    fate.par_iter_mut()
        .enumerate()
        .zip(local.par_iter_mut())
        .zip(&bases[global_parts..])
        .for_each(|(((mi, fate), part), &base)| {
            for (s, out) in std::mem::take(&mut part.binds) {
                debug_assert_eq!(
                    s.module as usize, mi,
                    "a module's part binds its own symbols"
                );
                fate[s.id.0 as usize] = Some(base + out);
            }
        });
    for (part, &base) in global.iter_mut().zip(&bases) {
        for (s, out) in std::mem::take(&mut part.binds) {
            fate[s.module as usize][s.id.0 as usize] = Some(base + out);
        }
    }
    let mut res = Resolution {
        outs: crate::parallel::concatenated(&parts, |p| p.outs.as_slice()),
        fate,
        undefined: Vec::new(),
        folded: Vec::new(),
    };
    let mut errors = Vec::new();
    for part in &mut parts {
        res.undefined.append(&mut part.undefined);
        res.folded.append(&mut part.folded);
        errors.append(&mut part.errors);
    }
    crate::parallel::free(parts);
    if errors.is_empty() {
        Ok(res)
    } else {
        errors.extend(res.undefined.into_iter().map(|(d, _)| d));
        Err(errors)
    }
}

/// What one declaration of a global name says.
struct Entry {
    s: ModSym,
    kind: SymbolKind,
    linkage: Linkage,
    defined: bool,
    initialized: bool,
    space: Option<StateSpace>,
    size: Option<u64>,
    align: Option<u32>,
}

impl<'a> Resolver<'_, 'a> {
    fn module(&self, s: ModSym) -> &'a Module {
        self.inputs.module(s)
    }

    fn add_out(&mut self, origin: ModSym, global: bool, align: Option<u32>) -> u32 {
        let kind = self.module(origin).symbol(origin.id).kind;
        self.part.outs.push(OutSym {
            origin,
            kind,
            global,
            align,
        });
        (self.part.outs.len() - 1) as u32
    }

    fn bind(&mut self, s: ModSym, out: u32) {
        self.part.binds.push((s, out));
    }

    fn entry(&self, s: ModSym) -> Entry {
        let m = self.module(s);
        let sym = m.symbol(s.id);
        let mut e = Entry {
            s,
            kind: sym.kind,
            linkage: sym.linkage,
            defined: sym.is_defined(),
            initialized: false,
            space: sym.space,
            size: None,
            align: None,
        };
        let d = sym.definition().unwrap_or(&sym.decls[0]);
        if let ItemKind::Variable(v) = &m.item(d.item).kind {
            let decl = &v.declarators[d.declarator as usize];
            e.initialized = decl.init.is_some();
            e.size = var_size(&v.spec, decl);
            e.align = v.spec.align;
        }
        e
    }

    fn global(&mut self, name: &[u8], symbols: &[ModSym]) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        entries.extend(symbols.iter().map(|&s| self.entry(s)));
        self.global_entries(name, &entries);
        self.entries = entries;
    }

    fn global_entries(&mut self, name: &[u8], entries: &[Entry]) {
        let shown = Shown(name);
        // One kind per name.
        let first = &entries[0];
        if let Some(other) = entries.iter().find(|e| e.kind != first.kind) {
            let what = |k| match k {
                SymbolKind::Function => "a function",
                SymbolKind::Entry => "a kernel (.entry)",
                _ => "a variable",
            };
            self.pair_error(
                Code::KindMismatch,
                format!(
                    "symbol {shown} is {} in {} but {} in {}",
                    what(first.kind),
                    self.inputs.file_name(first.s.module),
                    what(other.kind),
                    self.inputs.file_name(other.s.module)
                ),
                ("declared at", first.s),
                ("declared at", other.s),
            );
            return;
        }
        if first.kind == SymbolKind::Variable {
            self.global_variable(shown, entries);
        } else {
            self.global_function(name, shown, entries);
        }
    }

    /// An error about two declarations, in lld's shape: the message, then
    /// `>>> WHAT at file:line:col` for each.
    fn pair_error(&mut self, code: Code, message: String, a: (&str, ModSym), b: (&str, ModSym)) {
        let d = self.inputs.error_notes(
            code,
            message,
            &[
                (a.0, a.1, self.inputs.def_span(a.1)),
                (b.0, b.1, self.inputs.def_span(b.1)),
            ],
        );
        self.part.errors.push(d);
    }

    /// Several strong definitions: with `--fold-identical`, identical ones are one
    /// (true, with a note naming them; the first is kept); else a duplicate, which
    /// with `--fold-identical` says where the definitions differ.
    fn strong_definitions(&mut self, shown: Shown<'_>, defs: &[&Entry]) -> bool {
        if !self.opts.fold_identical {
            self.duplicate(shown, defs);
            return false;
        }
        let first = defs[0].s;
        let mut folded = true;
        for other in &defs[1..] {
            let Some(diff) = difference(self.inputs, first, other.s) else {
                continue;
            };
            folded = false;
            let mut d = self.inputs.error_notes(
                Code::DuplicateSymbol,
                format!("duplicate symbol: {shown}"),
                &[
                    ("defined at", first, self.inputs.def_span(first)),
                    ("defined at", other.s, self.inputs.def_span(other.s)),
                ],
            );
            if let Some(local) = diff.local {
                d = d.with_remark(format!(
                    "not folded (--fold-identical): they use module-local {}, defined \
                     differently",
                    Shown(self.inputs.name(local))
                ));
            } else {
                d = d.with_remark("not folded (--fold-identical): the definitions differ");
            }
            for (what, (s, span)) in [("first difference at", diff.a), ("and at", diff.b)] {
                d = d.with_note(self.module(s).file, span, what);
            }
            self.part.errors.push(d);
        }
        if folded {
            let mut d = Diagnostic::new(
                Severity::Note,
                Code::FoldedIdentical,
                format!("identical definitions of {shown} folded into one (--fold-identical)"),
            )
            .with_note(
                self.module(first).file,
                self.inputs.def_span(first),
                "kept at",
            );
            for other in &defs[1..] {
                d = d.with_note(
                    self.module(other.s).file,
                    self.inputs.def_span(other.s),
                    "folded at",
                );
            }
            self.part.folded.push(d);
        }
        folded
    }

    fn duplicate(&mut self, shown: Shown<'_>, defs: &[&Entry]) {
        for other in &defs[1..] {
            self.pair_error(
                Code::DuplicateSymbol,
                format!("duplicate symbol: {shown}"),
                ("defined at", defs[0].s),
                ("defined at", other.s),
            );
        }
    }

    fn undefined(&mut self, shown: Shown<'_>, entries: &[Entry]) {
        let mut d =
            Diagnostic::global_error(Code::UndefinedSymbol, format!("undefined symbol: {shown}"));
        let mut refs = Vec::new();
        for e in entries {
            let m = self.module(e.s);
            refs.extend(
                m.references
                    .iter()
                    .filter(|r| r.symbol == e.s.id)
                    .map(|r| (m.file, r.span)),
            );
        }
        for &(file, span) in refs.iter().take(3) {
            d = d.with_note(file, span, "referenced by");
        }
        if refs.len() > 3 {
            d = d.with_remark(format!("referenced {} more times", refs.len() - 3));
        }
        if refs.is_empty() {
            let e = &entries[0];
            d = d.with_note(
                self.module(e.s).file,
                self.inputs.def_span(e.s),
                "declared .extern at",
            );
        }
        let symbols = entries.iter().map(|e| e.s).collect();
        self.part.undefined.push((
            d.with_help(
                "link the module that defines it, or remove the declaration if it is unused",
            ),
            symbols,
        ));
    }

    /// A `.visible`/`.weak` (or unmarked) function declared but not defined in its
    /// own module: ptxas rejects such a module ("Unresolved extern function").
    fn declared_not_defined(&mut self, e: &Entry, shown: Shown<'_>) {
        let what = match e.linkage {
            Linkage::Local => "without a linkage directive",
            l => l.as_str(),
        };
        let d = self
            .inputs
            .error_at(
                Code::DeclaredNotDefined,
                e.s.module,
                self.inputs.def_span(e.s),
                format!(
                    "function {shown} is declared {what} in {} but not defined there",
                    self.inputs.file_name(e.s.module)
                ),
            )
            .with_help("declare it `.extern` to import it from another module");
        self.part.errors.push(d);
    }

    fn global_function(&mut self, name: &[u8], shown: Shown<'_>, entries: &[Entry]) {
        let mut ok = true;
        for e in entries {
            if e.linkage != Linkage::Extern && !e.defined {
                self.declared_not_defined(e, shown);
                ok = false;
            }
        }
        let is_strong = |e: &&Entry| e.defined && e.linkage != Linkage::Weak;
        if entries.iter().filter(is_strong).nth(1).is_some() {
            let strong: Vec<&Entry> = entries.iter().filter(is_strong).collect();
            if !self.strong_definitions(shown, &strong) {
                return;
            }
        }
        if !ok {
            return;
        }
        let winner = entries
            .iter()
            .find(is_strong)
            .or_else(|| entries.iter().find(|e| e.defined));
        let Some(winner) = winner else {
            let system = SYSTEM_CALLS.iter().any(|s| s.as_bytes() == name);
            let used = entries.iter().any(|e| self.db.is_used(e.s));
            // `-r`: a used import stays `.extern` for the link that defines it, with
            // the first declaration's prototype, which the others must have too.
            if used && self.opts.relocatable && !system {
                let first = entries[0].s;
                let fsig = self.signature(first);
                for e in &entries[1..] {
                    if let Some(why) = signature_mismatch(fsig, self.signature(e.s)) {
                        self.pair_error(
                            Code::PrototypeMismatch,
                            format!("prototype mismatch for {shown}: {why}"),
                            ("declared at", first),
                            ("declared at", e.s),
                        );
                    }
                }
            }
            if system || (used && self.opts.relocatable) {
                let out = self.add_out(entries[0].s, true, None);
                for e in entries {
                    self.bind(e.s, out);
                }
            } else if used {
                self.undefined(shown, entries);
            }
            // Unused imports of an undefined function vanish.
            return;
        };
        // Every other definition and every used declaration must agree with the winner.
        let wsig = self.signature(winner.s);
        for e in entries {
            if e.s == winner.s || !(e.defined || self.db.is_used(e.s)) {
                continue;
            }
            if let Some(why) = signature_mismatch(wsig, self.signature(e.s)) {
                let what = if e.defined {
                    "also defined at"
                } else {
                    "declared at"
                };
                self.pair_error(
                    Code::PrototypeMismatch,
                    format!("prototype mismatch for {shown}: {why}"),
                    ("defined at", winner.s),
                    (what, e.s),
                );
            }
        }
        let out = self.add_out(winner.s, true, None);
        for e in entries {
            self.bind(e.s, out);
        }
    }

    fn signature(&self, s: ModSym) -> &'a crate::ir::Signature {
        let m = self.module(s);
        let sym = m.symbol(s.id);
        let d = sym.definition().unwrap_or(&sym.decls[0]);
        match &m.item(d.item).kind {
            ItemKind::Function(f) => &f.signature,
            _ => unreachable!("functions are declared by function items"),
        }
    }

    fn global_variable(&mut self, shown: Shown<'_>, entries: &[Entry]) {
        // The state space must agree everywhere.
        let first = &entries[0];
        if let Some(other) = entries.iter().find(|e| e.space != first.space) {
            let sp = |e: &Entry| e.space.map_or("?", StateSpace::as_str).to_string();
            self.variable_mismatch(
                Code::StateSpaceMismatch,
                format!("state space mismatch for variable {shown}"),
                (sp(first), "declared at", first),
                (sp(other), "declared at", other),
            );
            return;
        }
        if is_opaque_var(self.module(first.s), first.s.id) {
            // Texture, sampler and surface references bind by name: one symbol, the
            // first definition (an initialized sampler keeps its fields), else `.extern`.
            let origin = entries
                .iter()
                .find(|e| e.linkage != Linkage::Extern)
                .unwrap_or(first)
                .s;
            let out = self.add_out(origin, true, None);
            for e in entries {
                self.bind(e.s, out);
            }
            return;
        }
        let strong: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.linkage == Linkage::Visible)
            .collect();
        if strong.len() > 1 && !self.strong_definitions(shown, &strong) {
            return;
        }
        let inited_commons: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.linkage == Linkage::Common && e.initialized)
            .collect();
        if inited_commons.len() > 1 {
            self.duplicate(shown, &inited_commons);
            return;
        }
        // Tentative definitions: commons and uninitialized weak variables.
        let tentative: Vec<&Entry> = entries
            .iter()
            .filter(|e| {
                e.linkage == Linkage::Common || (e.linkage == Linkage::Weak && !e.initialized)
            })
            .collect();
        let defs: Vec<&Entry> = entries
            .iter()
            .filter(|e| e.linkage != Linkage::Extern)
            .collect();
        let winner: Option<&Entry> = if let Some(&s) = strong.first() {
            if !inited_commons.is_empty() {
                self.duplicate(shown, &[s, inited_commons[0]]);
                return;
            }
            Some(s)
        } else if let Some(w) = entries
            .iter()
            .find(|e| e.linkage == Linkage::Weak && e.initialized)
        {
            if !inited_commons.is_empty() {
                self.duplicate(shown, &[w, inited_commons[0]]);
                return;
            }
            Some(w)
        } else if let Some(&c) = inited_commons.first() {
            Some(c)
        } else {
            // Only tentative definitions: the first of the largest.
            let max = tentative.iter().map(|e| e.size.unwrap_or(0)).max();
            tentative
                .iter()
                .find(|e| Some(e.size.unwrap_or(0)) == max)
                .copied()
        };
        let Some(winner) = winner else {
            // Only imports.
            let dynamic_shared =
                first.space == Some(StateSpace::Shared) && entries.iter().all(|e| e.size.is_none());
            if dynamic_shared {
                let align = entries.iter().filter_map(|e| e.align).max();
                let own = first.align;
                let out = self.add_out(first.s, true, if align != own { align } else { None });
                for e in entries {
                    self.bind(e.s, out);
                }
            } else if self.opts.relocatable {
                // `-r`: the `.extern` declaration stays for the link that defines it
                // (sizes must still agree).
                for e in &entries[1..] {
                    if let (Some(a), Some(b)) = (first.size, e.size) {
                        if a != b {
                            self.size_mismatch(shown, first, e);
                        }
                    }
                }
                let out = self.add_out(first.s, true, None);
                for e in entries {
                    self.bind(e.s, out);
                }
            } else {
                self.undefined(shown, entries);
            }
            return;
        };
        // Sizes: tentative definitions may be smaller than an initialized or strong
        // winner (they merge into it), an uninitialized strong one must be equal.
        for t in &tentative {
            if t.s == winner.s {
                continue;
            }
            let (ws, ts) = (winner.size.unwrap_or(0), t.size.unwrap_or(0));
            if winner.initialized && ts > ws {
                self.pair_error(
                    Code::SizeMismatch,
                    format!(
                        "common symbol {shown} is larger ({ts} bytes) than its initialized \
                         definition ({ws} bytes)"
                    ),
                    ("initialized at", winner.s),
                    ("larger at", t.s),
                );
            } else if !winner.initialized && winner.linkage == Linkage::Visible && ts != ws {
                self.size_mismatch(shown, winner, t);
            }
        }
        for e in entries {
            if e.linkage == Linkage::Extern {
                if let (Some(a), Some(b)) = (winner.size, e.size) {
                    if a != b {
                        self.size_mismatch(shown, winner, e);
                    }
                }
            }
        }
        let align = defs.iter().filter_map(|e| e.align).max();
        let out = self.add_out(
            winner.s,
            true,
            if align != winner.align { align } else { None },
        );
        for e in entries {
            self.bind(e.s, out);
        }
    }

    fn size_mismatch(&mut self, shown: Shown<'_>, a: &Entry, b: &Entry) {
        let size = |e: &Entry| {
            e.size
                .map_or("unsized".to_string(), |s| format!("{s} bytes"))
        };
        self.variable_mismatch(
            Code::SizeMismatch,
            format!("size mismatch for variable {shown}"),
            (size(a), "defined at", a),
            (size(b), "declared at", b),
        );
    }

    /// `WHAT: A in a.ptx, B in b.ptx`, with a note at each of the two declarations.
    fn variable_mismatch(
        &mut self,
        code: Code,
        what: String,
        a: (String, &str, &Entry),
        b: (String, &str, &Entry),
    ) {
        let message = format!(
            "{what}: {} in {}, {} in {}",
            a.0,
            self.inputs.file_name(a.2.s.module),
            b.0,
            self.inputs.file_name(b.2.s.module)
        );
        self.pair_error(code, message, (a.1, a.2.s), (b.1, b.2.s));
    }

    /// A module-local symbol: it is its own output symbol. That includes the labels and
    /// `__local_depotN` of bodies that debug sections name: they stay in their body but
    /// are renamed apart (see `names`).
    fn local(&mut self, s: ModSym) {
        let sym = self.module(s).symbol(s.id);
        match sym.kind {
            SymbolKind::Function | SymbolKind::Entry if !sym.is_defined() => {
                let e = self.entry(s);
                self.declared_not_defined(&e, Shown(self.inputs.name(s)));
            }
            _ => {
                let out = self.add_out(s, false, None);
                self.bind(s, out);
            }
        }
    }
}

/// The symbol id of `name` in `m`, if `m` declares it.
pub(crate) fn find_symbol(m: &Module, name: &[u8]) -> Option<SymbolId> {
    (0..m.symbols.len() as u32)
        .map(SymbolId)
        .find(|&id| m.symbol_name(id) == name)
}
