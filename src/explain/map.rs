//! Human-readable accounts of a link: the link map (`-Map FILE`, `--print-map`),
//! symbol traces (`--trace-symbol SYM`, `-y SYM`) and liveness chains (`--why-live
//! SYM`, with `--gc-sections`).

use std::fmt::Write as _;

use crate::diag::Location;
use crate::ir::{ItemKind, Linkage, RefKind, SymbolKind};
use crate::link::gc::Live;
use crate::link::inputs::Inputs;
use crate::link::inputs::ModSym;
use crate::link::names::Names;
use crate::link::needs::Needs;
use crate::link::report::display_name;
use crate::link::resolve::{OutSym, Resolution};
use crate::options::Arch;
use crate::source::{FileId, Span};

fn at(inputs: &Inputs, s: ModSym, span: Span) -> String {
    location(inputs, s.module, span)
}

/// `file:line:col` of `span` in module `module`.
fn location(inputs: &Inputs, module: u32, span: Span) -> String {
    file_location(inputs, inputs.modules[module as usize].file, span)
}

fn file_location(inputs: &Inputs, file: FileId, span: Span) -> String {
    let f = inputs.sources.file(file);
    let lc = f.line_col(span.lo);
    format!("{}:{}:{}", f.name(), lc.line, lc.col)
}

fn kind_name(k: SymbolKind) -> &'static str {
    match k {
        SymbolKind::Function => "function",
        SymbolKind::Entry => "kernel",
        SymbolKind::Variable => "variable",
        SymbolKind::SectionLabel => "debug label",
        SymbolKind::BodyName => "body label",
    }
}

fn linkage_name(l: Linkage) -> &'static str {
    match l {
        Linkage::Local => "local",
        l => l.as_str(),
    }
}

/// Size and alignment of a variable declaration, as `64 bytes, .align 16`.
fn var_layout(inputs: &Inputs, s: ModSym, align: Option<u32>) -> String {
    let m = inputs.module(s);
    let sym = m.symbol(s.id);
    let d = sym.definition().unwrap_or(&sym.decls[0]);
    let ItemKind::Variable(v) = &m.item(d.item).kind else {
        return String::new();
    };
    let decl = &v.declarators[d.declarator as usize];
    let size = crate::link::var_size(&v.spec, decl)
        .map_or("unsized".to_string(), |n| format!("{n} bytes"));
    match align.or(v.spec.align) {
        Some(a) => format!("{size}, .align {a}"),
        None => size,
    }
}

/// The link map: one line per output symbol, then the story of how it was chosen.
pub(crate) fn map(inputs: &Inputs, res: &Resolution, names: &Names, live: Option<&Live>) -> String {
    // Every input symbol bound to each output symbol.
    let mut bound: Vec<Vec<ModSym>> = vec![Vec::new(); res.outs.len()];
    for (mi, m) in inputs.modules.iter().enumerate() {
        for (id, _) in m.symbols_with_ids() {
            let s = ModSym {
                module: mi as u32,
                id,
            };
            if let Some(o) = res.out_of(s) {
                bound[o as usize].push(s);
            }
        }
    }
    let mut out =
        String::from("# ptxld link map: output symbol, kind, linkage, origin; how it was chosen\n");
    for (o, sym) in res.outs.iter().enumerate() {
        if matches!(sym.kind, SymbolKind::SectionLabel | SymbolKind::BodyName) {
            continue;
        }
        let origin = inputs.module(sym.origin).symbol(sym.origin.id);
        let _ = write!(
            out,
            "{}  {}  {}  {}",
            display_name(names.of(inputs, res, o as u32)),
            kind_name(sym.kind),
            linkage_name(origin.linkage),
            at(inputs, sym.origin, inputs.def_span(sym.origin))
        );
        if sym.kind == SymbolKind::Variable {
            let _ = write!(out, "  {}", var_layout(inputs, sym.origin, sym.align));
        }
        out.push('\n');
        story(&mut out, inputs, sym, names.renamed(o as u32), &bound[o]);
        if live.is_some_and(|l| !l.outs[o]) {
            out.push_str("    removed by --gc-sections\n");
        }
    }
    out
}

/// What the link needs for `.target arch`, and the uses that set it.
pub(crate) fn needs(out: &mut String, inputs: &Inputs, needs: &Needs, arch: Arch) {
    // The same words as `ptxld check`'s note, one line each.
    let summary = needs.summary(inputs, arch);
    let _ = writeln!(out, "# {}", summary.message);
    for note in &summary.notes {
        let _ = match note.location.as_ref().and_then(Location::source) {
            Some((file, span)) => writeln!(
                out,
                "    {} {}",
                note.message,
                file_location(inputs, file, span)
            ),
            None => writeln!(out, "    {}", note.message),
        };
    }
}

fn story(
    out: &mut String,
    inputs: &Inputs,
    sym: &OutSym,
    renamed: Option<&[u8]>,
    bound: &[ModSym],
) {
    let origin = inputs.module(sym.origin).symbol(sym.origin.id);
    let name = inputs.name(sym.origin);
    if !sym.global && renamed.is_some_and(|new| new != name) {
        let _ = writeln!(
            out,
            "    renamed from {} (module-local; the name was taken)",
            String::from_utf8_lossy(name)
        );
    }
    if !origin.is_defined() {
        let _ = writeln!(out, "    undefined: left for the CUDA driver");
    }
    for &s in bound {
        if s == sym.origin {
            continue;
        }
        let other = inputs.module(s).symbol(s.id);
        let place = at(inputs, s, inputs.def_span(s));
        if other.linkage == Linkage::Extern {
            let _ = writeln!(out, "    imported by {place}");
        } else if sym.kind == SymbolKind::Variable
            && matches!(other.linkage, Linkage::Common | Linkage::Weak)
            && origin.linkage != Linkage::Visible
        {
            let _ = writeln!(
                out,
                "    merged {place} ({}, {})",
                linkage_name(other.linkage),
                var_layout(inputs, s, None)
            );
        } else if other.linkage == Linkage::Local {
            let _ = writeln!(out, "    same name bound at {place}");
        } else {
            let why = match (origin.linkage, other.linkage) {
                (Linkage::Visible, Linkage::Weak) => "a .visible definition beats .weak",
                (_, Linkage::Weak) => "the first .weak definition in link order wins",
                _ => "",
            };
            let _ = writeln!(
                out,
                "    beat {place} ({}): {why}",
                linkage_name(other.linkage)
            );
        }
    }
}

/// `--trace-symbol`: every declaration, definition and reference of each name, then
/// what it became.
pub(crate) fn trace(
    inputs: &Inputs,
    res: Option<(&Resolution, &Names)>,
    names: &[String],
) -> String {
    let mut out = String::new();
    for name in names {
        let mut found = false;
        for (mi, m) in inputs.modules.iter().enumerate() {
            for (id, sym) in m.symbols_with_ids() {
                let s = ModSym {
                    module: mi as u32,
                    id,
                };
                if inputs.name(s) != name.as_bytes() {
                    continue;
                }
                found = true;
                for d in &sym.decls {
                    let what = if d.is_definition {
                        "definition"
                    } else {
                        "declaration"
                    };
                    let _ = writeln!(
                        out,
                        "ptxld: {}: {what} of {name} ({} {})",
                        at(inputs, s, d.name),
                        linkage_name(sym.linkage),
                        kind_name(sym.kind)
                    );
                }
                for r in m.references.iter().filter(|r| r.symbol == id) {
                    let how = match r.kind {
                        RefKind::Call => "call",
                        RefKind::Operand => "operand",
                        RefKind::CallTarget => "call target",
                        RefKind::Initializer => "initializer",
                        RefKind::Alias => "alias",
                        RefKind::DebugLoc | RefKind::Dwarf => "debug information",
                    };
                    let _ = writeln!(
                        out,
                        "ptxld: {}: reference to {name} ({how})",
                        at(inputs, s, r.span)
                    );
                }
                let undefined =
                    res.is_some_and(|(r, _)| r.undefined.iter().any(|(_, v)| v.contains(&s)));
                let bound = res.and_then(|(r, n)| {
                    let o = r.out_of(s)?;
                    Some((&r.outs[o as usize], n.of(inputs, r, o)))
                });
                let decision = match bound {
                    _ if res.is_none() => {
                        "not resolved: the link failed (see the errors)".to_string()
                    }
                    _ if undefined => "undefined: no input defines it".to_string(),
                    Some((o, out_name))
                        if inputs.module(o.origin).symbol(o.origin.id).is_defined() =>
                    {
                        format!(
                            "bound to the definition at {}{}",
                            at(inputs, o.origin, inputs.def_span(o.origin)),
                            if out_name != name.as_bytes() {
                                format!(", output name {}", String::from_utf8_lossy(out_name))
                            } else {
                                String::new()
                            }
                        )
                    }
                    Some(_) => "left undefined for the CUDA driver".to_string(),
                    None => "dropped: an unused import, or a name inside a body".to_string(),
                };
                let _ = writeln!(
                    out,
                    "ptxld: {}: {name}: {decision}",
                    inputs.file_name(mi as u32)
                );
            }
        }
        if !found {
            let _ = writeln!(out, "ptxld: {name}: no input declares it");
        }
    }
    out
}

/// `--why-live`: the chain of references from a root to each name.
pub(crate) fn why_live(
    inputs: &Inputs,
    res: &Resolution,
    out_names: &Names,
    live: &Live,
    names: &[String],
) -> String {
    let mut out = String::new();
    for name in names {
        let target = res
            .outs
            .iter()
            .enumerate()
            .find(|&(o, _)| out_names.of(inputs, res, o as u32) == name.as_bytes());
        let Some((o, sym)) = target else {
            let _ = writeln!(out, "ptxld: {name} is not in the output");
            continue;
        };
        if !live.outs[o] {
            let _ = writeln!(out, "ptxld: {name} is not live: --gc-sections removed it");
            continue;
        }
        let _ = writeln!(out, "ptxld: {name} is live:");
        let mut chain = vec![sym.origin];
        let mut cur = sym.origin;
        while let Some(Some(p)) = live.parent.get(&cur) {
            chain.push(*p);
            cur = *p;
            if chain.len() > 10_000 {
                break;
            }
        }
        for (i, s) in chain.iter().rev().enumerate() {
            let m = inputs.module(*s);
            let symbol = m.symbol(s.id);
            let how = if i == 0 {
                match symbol.kind {
                    SymbolKind::Entry => "kernel",
                    _ => "exported",
                }
            } else {
                "uses"
            };
            let _ = writeln!(
                out,
                ">>> {how} {} ({})",
                display_name(inputs.name(*s)),
                at(inputs, *s, inputs.def_span(*s))
            );
        }
    }
    out
}
