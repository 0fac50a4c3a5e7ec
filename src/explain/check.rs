//! `ptxld check`: every reason a set of modules does not link, or links only by
//! ptxld's policy where NVIDIA's nvJitLink decides differently (docs/linking.md,
//! "Where ptxld's verdict differs"), plus ABI findings, as diagnostics; the driver
//! resolves them into a [`crate::diag::CheckReport`], whose reporters print text or
//! JSON.

use crate::diag::{Code, Diagnostic, Severity};
use crate::ir::{ItemKind, Linkage, SymbolKind, TypeClass};
use crate::link::db::SymbolDb;
use crate::link::gc;
use crate::link::inputs::{Inputs, ModSym};
use crate::link::needs::Needs;
use crate::link::report::display_name;
use crate::link::resolve::Resolution;
use crate::link::Analysis;
use crate::options::Arch;

/// Every finding of a link: its errors (or, when it succeeds, its warnings), then
/// notes on where nvJitLink would decide differently. Locations are those of the
/// link's sources, unresolved.
pub(crate) fn check(a: &Analysis) -> Vec<Diagnostic> {
    let reported = if a.ok() { &a.warnings } else { &a.errors };
    let mut out: Vec<Diagnostic> = reported.iter().cloned().collect();
    if let Some(res) = &a.resolution {
        nvjitlink_notes(&a.inputs, &a.db, res, &mut out);
    }
    // What the link needs does not depend on its resolution: said for a set that
    // does not link too (one module on its own, with its imports undefined).
    let arch = a.headers.first().map(|h| h.arch).or_else(|| {
        a.inputs
            .modules
            .iter()
            .filter_map(|m| m.header.target.as_ref()?.arch)
            .map(|t| Arch::from_parts(t.sm, t.suffix))
            .max_by_key(|t| t.sm())
    });
    if let Some(needs) = &a.needs {
        operand_slips(&a.inputs, needs, &mut out);
    }
    if let (Some(needs), Some(arch)) = (&a.needs, arch) {
        out.push(needs.summary(&a.inputs, arch));
    }
    out
}

/// The operands ptxas would refuse (`isa/typing.rs`), as errors at the operand, with
/// a note at the declaration that does not fit.
fn operand_slips(inputs: &Inputs, needs: &Needs, out: &mut Vec<Diagnostic>) {
    for (mi, uses) in needs.modules.iter().enumerate() {
        let file = inputs.modules[mi].file;
        for slip in &uses.slips {
            let mut d = Diagnostic::error(Code::OperandType, file, slip.span, slip.message.clone())
                .with_help("ptxas refuses this operand; `ptxld check --verify` runs ptxas itself");
            if let Some(at) = slip.declared {
                d = d.with_note(file, at, "declared at");
            }
            out.push(d);
        }
    }
}

/// A note on where nvJitLink differs, with a located note for each symbol involved.
fn note(out: &mut Vec<Diagnostic>, inputs: &Inputs, message: String, at: &[(&str, ModSym)]) {
    let mut d = Diagnostic::new(
        Severity::Note,
        Code::NvjitlinkDiffers,
        format!("nvJitLink: {message}"),
    );
    for &(what, s) in at {
        d = d.with_note(inputs.module(s).file, inputs.def_span(s), what);
    }
    out.push(d);
}

/// Where nvJitLink 12.9 would print an error or choose another definition.
fn nvjitlink_notes(inputs: &Inputs, db: &SymbolDb, res: &Resolution, out: &mut Vec<Diagnostic>) {
    let target = |s: ModSym| {
        inputs
            .module(s)
            .header
            .target
            .as_ref()
            .and_then(|t| t.arch)
            .map_or(0, |a| a.sm)
    };
    for (name, entries) in db.globals.iter() {
        let shown = display_name(name);
        let Some(o) = res.out_of(entries[0]) else {
            continue;
        };
        let winner = res.outs[o as usize].origin;
        let wsym = inputs.module(winner).symbol(winner.id);
        match wsym.kind {
            SymbolKind::Function | SymbolKind::Entry => {
                // Weak copies from modules for different targets: nvJitLink keeps the
                // highest target's.
                let weak: Vec<ModSym> = entries
                    .iter()
                    .copied()
                    .filter(|&s| {
                        let sym = inputs.module(s).symbol(s.id);
                        sym.linkage == Linkage::Weak && sym.is_defined()
                    })
                    .collect();
                if wsym.linkage == Linkage::Weak {
                    if let Some(hi) = weak.iter().copied().max_by_key(|&s| target(s)) {
                        if target(hi) != target(winner) {
                            note(
                                out,
                                inputs,
                                format!(
                                    "keeps the weak {shown} from the highest .target (sm_{}), \
                                     ptxld the first in link order (sm_{})",
                                    target(hi),
                                    target(winner)
                                ),
                                &[("nvJitLink keeps", hi), ("ptxld keeps", winner)],
                            );
                        }
                    }
                }
                // .fN against .bN: compatible for ptxld, "Prototype doesn't match" there.
                for &s in entries.iter().filter(|&&s| s != winner) {
                    if float_vs_bits(inputs, winner, s) {
                        note(
                            out,
                            inputs,
                            format!(
                                "prints \"Prototype doesn't match\" for {shown} (.fN against \
                                 .bN of the same size); ptxld links it by PTX type compatibility"
                            ),
                            &[("defined at", winner), ("declared at", s)],
                        );
                        break;
                    }
                }
            }
            SymbolKind::Variable => {
                let tentative: Vec<ModSym> = entries
                    .iter()
                    .copied()
                    .filter(|&s| {
                        let sym = inputs.module(s).symbol(s.id);
                        matches!(sym.linkage, Linkage::Common | Linkage::Weak)
                    })
                    .collect();
                let sizes: Vec<Option<u64>> = tentative.iter().map(|&s| size(inputs, s)).collect();
                if sizes.windows(2).any(|w| w[0] != w[1]) {
                    let at: Vec<_> = tentative.iter().map(|&s| ("declared at", s)).collect();
                    note(
                        out,
                        inputs,
                        format!(
                            "prints \"Size doesn't match\" for {shown}; ptxld merges the \
                             tentative definitions into the largest"
                        ),
                        &at,
                    );
                }
                let first_align = tentative.first().and_then(|&s| align(inputs, s));
                let max_align = tentative.iter().filter_map(|&s| align(inputs, s)).max();
                if tentative.len() > 1 && first_align < max_align {
                    let at: Vec<_> = tentative.iter().map(|&s| ("declared at", s)).collect();
                    note(
                        out,
                        inputs,
                        format!(
                            "keeps the first declaration's alignment for {shown} ({}), ptxld \
                             the largest ({})",
                            first_align.unwrap_or(0),
                            max_align.unwrap_or(0)
                        ),
                        &at,
                    );
                }
            }
            _ => {}
        }
    }
    // Undefined functions that only code no kernel reaches calls: nvJitLink drops
    // those callers first and links.
    let live = gc::mark(inputs, db, res, &gc::GcOptions::default());
    for (d, syms) in &res.undefined {
        let is_func = syms
            .iter()
            .all(|s| inputs.module(*s).symbol(s.id).kind == SymbolKind::Function);
        let reached = syms
            .iter()
            .any(|s| live.syms[s.module as usize][s.id.0 as usize]);
        if is_func && !reached {
            let at: Vec<_> = syms.iter().map(|&s| ("declared at", s)).collect();
            note(
                out,
                inputs,
                format!(
                    "accepts this ({}) because no kernel reaches the callers; ptxld reports it \
                     (link with --gc-sections to drop them)",
                    d.message
                ),
                &at,
            );
        }
    }
}

fn var_decl<'a>(inputs: &Inputs<'a>, s: ModSym) -> Option<(&'a crate::ir::VarDecl, usize)> {
    let m = inputs.module(s);
    let sym = m.symbol(s.id);
    let d = sym.definition().unwrap_or(&sym.decls[0]);
    match &m.item(d.item).kind {
        ItemKind::Variable(v) => Some((v, d.declarator as usize)),
        _ => None,
    }
}

fn size(inputs: &Inputs, s: ModSym) -> Option<u64> {
    var_decl(inputs, s).and_then(|(v, i)| crate::link::var_size(&v.spec, &v.declarators[i]))
}

fn align(inputs: &Inputs, s: ModSym) -> Option<u32> {
    var_decl(inputs, s).and_then(|(v, _)| v.spec.align)
}

fn float_vs_bits(inputs: &Inputs, a: ModSym, b: ModSym) -> bool {
    let sig = |s: ModSym| {
        let m = inputs.module(s);
        let sym = m.symbol(s.id);
        let d = sym.definition().unwrap_or(&sym.decls[0]);
        match &m.item(d.item).kind {
            ItemKind::Function(f) => Some(&f.signature),
            _ => None,
        }
    };
    let (Some(x), Some(y)) = (sig(a), sig(b)) else {
        return false;
    };
    let params =
        |s: &crate::ir::Signature| s.all().iter().map(|p| p.spec.ty.class).collect::<Vec<_>>();
    params(x).into_iter().zip(params(y)).any(|(p, q)| {
        matches!(
            (p, q),
            (TypeClass::Float, TypeClass::Bits) | (TypeClass::Bits, TypeClass::Float)
        )
    })
}
