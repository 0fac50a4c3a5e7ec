//! `ptxld check`: every reason a set of modules does not link, or links only by
//! ptxld's policy where NVIDIA's nvJitLink decides differently (docs/linking.md,
//! "Where ptxld's verdict differs"), plus ABI findings; as text or JSON.

use std::fmt::Write as _;

use crate::diag::{Diagnostic, Severity};
use crate::ir::{ItemKind, Linkage, SymbolKind, TypeClass};
use crate::link::db::SymbolDb;
use crate::link::gc;
use crate::link::inputs::Inputs;
use crate::link::inputs::ModSym;
use crate::link::report::display_name;
use crate::link::resolve::Resolution;
use crate::link::Analysis;
use crate::source::SourceMap;

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// `error`, `warning` or `note`.
    pub severity: &'static str,
    /// What it is.
    pub message: String,
    /// `file:line:col` of everything involved.
    pub locations: Vec<String>,
}

fn from_diag(d: &Diagnostic, sources: &SourceMap) -> Finding {
    let loc = |file, span: crate::source::Span| {
        let f = sources.file(file);
        let lc = f.line_col(span.lo);
        format!("{}:{}:{}", f.name(), lc.line, lc.col)
    };
    let mut locations = Vec::new();
    if let Some(f) = d.file {
        locations.push(loc(f, d.span));
    }
    locations.extend(d.notes.iter().filter_map(|n| n.at).map(|(f, s)| loc(f, s)));
    Finding {
        severity: match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        },
        message: d.message.clone(),
        locations,
    }
}

/// Every finding of a link: its errors (or, when it succeeds, its warnings), then
/// where nvJitLink would decide differently.
pub(crate) fn check(a: &Analysis) -> Vec<Finding> {
    let sources = a.inputs.sources;
    let reported = if a.ok() { &a.warnings } else { &a.errors };
    let mut out: Vec<Finding> = reported.iter().map(|d| from_diag(d, sources)).collect();
    if let Some(res) = &a.resolution {
        nvjitlink_notes(&a.inputs, &a.db, res, &mut out);
    }
    out
}

fn at(inputs: &Inputs, s: ModSym) -> String {
    let f = inputs.sources.file(inputs.module(s).file);
    let lc = f.line_col(inputs.def_span(s).lo);
    format!("{}:{}:{}", f.name(), lc.line, lc.col)
}

fn note(out: &mut Vec<Finding>, message: String, locations: Vec<String>) {
    out.push(Finding {
        severity: "note",
        message: format!("nvJitLink: {message}"),
        locations,
    });
}

/// Where nvJitLink 12.9 would print an error or choose another definition.
fn nvjitlink_notes(inputs: &Inputs, db: &SymbolDb, res: &Resolution, out: &mut Vec<Finding>) {
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
                                format!(
                                    "keeps the weak {shown} from the highest .target (sm_{}), \
                                     ptxld the first in link order (sm_{})",
                                    target(hi),
                                    target(winner)
                                ),
                                vec![at(inputs, hi), at(inputs, winner)],
                            );
                        }
                    }
                }
                // .fN against .bN: compatible for ptxld, "Prototype doesn't match" there.
                for &s in entries.iter().filter(|&&s| s != winner) {
                    if float_vs_bits(inputs, winner, s) {
                        note(
                            out,
                            format!(
                                "prints \"Prototype doesn't match\" for {shown} (.fN against \
                                 .bN of the same size); ptxld links it by PTX type compatibility"
                            ),
                            vec![at(inputs, winner), at(inputs, s)],
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
                    note(
                        out,
                        format!(
                            "prints \"Size doesn't match\" for {shown}; ptxld merges the \
                             tentative definitions into the largest"
                        ),
                        tentative.iter().map(|&s| at(inputs, s)).collect(),
                    );
                }
                let first_align = tentative.first().and_then(|&s| align(inputs, s));
                let max_align = tentative.iter().filter_map(|&s| align(inputs, s)).max();
                if tentative.len() > 1 && first_align < max_align {
                    note(
                        out,
                        format!(
                            "keeps the first declaration's alignment for {shown} ({}), ptxld \
                             the largest ({})",
                            first_align.unwrap_or(0),
                            max_align.unwrap_or(0)
                        ),
                        tentative.iter().map(|&s| at(inputs, s)).collect(),
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
            note(
                out,
                format!(
                    "accepts this ({}) because no kernel reaches the callers; ptxld reports it \
                     (link with --gc-sections to drop them)",
                    d.message
                ),
                syms.iter().map(|&s| at(inputs, s)).collect(),
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

/// Human-readable report.
pub fn to_text(findings: &[Finding]) -> String {
    let mut s = String::new();
    for f in findings {
        let _ = writeln!(s, "{}: {}", f.severity, f.message);
        for l in &f.locations {
            let _ = writeln!(s, ">>> {l}");
        }
    }
    let errors = findings.iter().filter(|f| f.severity == "error").count();
    let _ = writeln!(
        s,
        "{} error(s), {} warning(s), {} note(s)",
        errors,
        findings.iter().filter(|f| f.severity == "warning").count(),
        findings.iter().filter(|f| f.severity == "note").count()
    );
    s
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Machine-readable report: `{"ok": bool, "findings": [{severity, message, locations}]}`.
pub fn to_json(findings: &[Finding], ok: bool) -> String {
    let mut s = format!("{{\"ok\": {ok}, \"findings\": [");
    for (i, f) in findings.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let locs: Vec<String> = f.locations.iter().map(|l| json_str(l)).collect();
        let _ = write!(
            s,
            "{{\"severity\": {}, \"message\": {}, \"locations\": [{}]}}",
            json_str(f.severity),
            json_str(&f.message),
            locs.join(", ")
        );
    }
    s.push_str("]}\n");
    s
}
