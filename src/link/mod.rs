//! The linker: many parsed modules in, one PTX module out.
//!
//! Phases, each borrowing the previous one's result:
//! 1. `db`: every symbol of every input, the names bound across modules, and the
//!    petgraph graph of references;
//! 2. `resolve`: NVIDIA's linkage rules decide what each symbol binds to;
//! 3. `dwarf`: the debug sections of all modules merged, one block per section (the
//!    header needs to know whose DWARF survived);
//! 4. [`header`]: `.version`, `.target`, `.address_size` of the merged module;
//! 5. `names`: output names (module-local collisions renamed);
//! 6. `write`: layout and splicing of the output text.
//!
//! All errors of a phase are collected, sorted and returned together.

mod abi;
pub mod check;
mod compat;
mod db;
mod dwarf;
mod gc;
pub mod header;
mod map;
mod names;
mod report;
mod resolve;
pub use crate::write::rope;
mod shards;
mod write;

pub use gc::GcOptions;
pub use header::{HeaderOptions, MergedHeader};
pub use resolve::SYSTEM_CALLS;
pub use rope::{ModuleText, Rope};

use rayon::prelude::*;

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Module;
use crate::source::SourceMap;
use crate::timing::Stopwatch;

/// What the caller can choose about a link.
#[derive(Clone, Debug, Default)]
pub struct LinkOptions {
    /// Overrides of the merged header (`--arch`, `--ptx-version`).
    pub header: HeaderOptions,
    /// `--gc-sections`: remove what the kernels and exports do not reach.
    pub gc: Option<GcOptions>,
    /// Produce the link map (`-Map`, `--print-map`).
    pub map: bool,
    /// `--why-live` names (with `gc`).
    pub why_live: Vec<String>,
    /// `--strip-debug`: no DWARF sections, `.file`, `.loc` or `debug` target option.
    pub strip_debug: bool,
}

/// A successful link.
pub struct Linked {
    /// The merged PTX module, as ranges of the sources of the linked modules
    /// ([`module_sources`] gives what its pieces refer to).
    pub ptx: Rope,
    /// The merged header.
    pub header: MergedHeader,
    /// Warnings (the link succeeded anyway).
    pub warnings: Diagnostics,
    /// With `--gc-sections`: what was removed, one line each (`function foo (a.ptx:3:1)`).
    pub removed: Vec<String>,
    /// The link map, when asked for.
    pub map: Option<String>,
    /// `--why-live` chains.
    pub why_live: String,
    /// Wall time of each linker phase (`--stats`).
    pub timings: Vec<crate::timing::PhaseTime>,
}

/// Links `modules` (parsed from `sources`, in link order) into one PTX module.
/// On failure, returns every error found, sorted.
pub fn link(
    sources: &SourceMap,
    modules: &[Module],
    opts: &LinkOptions,
) -> Result<Linked, Diagnostics> {
    if modules.is_empty() {
        let mut d = Diagnostics::new();
        d.push(Diagnostic::global_error("no input modules to link"));
        return Err(d);
    }
    let inputs = report::Inputs { sources, modules };
    let mut timings = Vec::new();
    let t = Stopwatch::start();
    let db = db::SymbolDb::build(&inputs);
    timings.push(t.stop("symbol table and graph"));
    let dwarf = if opts.strip_debug {
        write::Dwarf::Strip
    } else {
        write::Dwarf::Merge
    };
    let mut errors = Diagnostics::new();
    let mut warnings = Diagnostics::new();
    let abi_findings: Vec<Vec<Diagnostic>> = modules
        .par_iter()
        .enumerate()
        .map(|(mi, m)| abi::findings(m, &|| inputs.src(mi as u32)))
        .collect();
    warnings.extend(abi_findings.into_iter().flatten());
    let t = Stopwatch::start();
    let resolution = resolve::resolve(&inputs, &db);
    timings.push(t.stop("resolution"));
    let live = match (&resolution, &opts.gc) {
        (Ok(r), Some(g)) => Some(gc::mark(&inputs, &db, r, g)),
        _ => None,
    };
    // Debug sections may name what --gc-sections removes: drop them then.
    let removed_any = live.as_ref().is_some_and(|l| {
        resolution.as_ref().is_ok_and(|r| {
            r.outs
                .iter()
                .zip(&l.outs)
                .any(|(o, &keep)| !keep && is_code_or_data(o.kind))
        })
    });
    let dwarf = if removed_any && has_sections(modules) && dwarf == write::Dwarf::Merge {
        warnings.push(warning(
            "debug sections are dropped because --gc-sections removed code they describe",
        ));
        write::Dwarf::Drop
    } else {
        dwarf
    };
    let t = Stopwatch::start();
    let files = write::number_files(&inputs);
    let merged = (dwarf == write::Dwarf::Merge).then(|| dwarf::merge(&inputs, &files.maps));
    timings.push(t.stop("debug sections"));
    // `debug` needs the DWARF of a module that asked for it (ptxas: "Debug information
    // not found in presence of .target debug").
    let debug_kept: Vec<bool> = match &merged {
        Some(m) => {
            warnings.extend(m.warnings.iter().cloned());
            m.kept.clone()
        }
        None => vec![false; modules.len()],
    };
    let header = header::merge(&inputs, &opts.header, &debug_kept);
    let (header, mut resolution) = match (header, resolution) {
        (Ok(h), Ok(r)) => (h, r),
        (h, r) => {
            errors.extend(h.err().unwrap_or_default());
            errors.extend(r.err().unwrap_or_default());
            errors.sort();
            return Err(errors);
        }
    };
    // Undefined imports are errors, unless --gc-sections removed every user.
    for (d, syms) in std::mem::take(&mut resolution.undefined) {
        let used = match &live {
            None => true,
            Some(l) => syms
                .iter()
                .any(|s| l.syms[s.module as usize][s.id.0 as usize]),
        };
        if used {
            errors.push(d);
        }
    }
    if errors.has_errors() {
        errors.sort();
        return Err(errors);
    }
    let t = Stopwatch::start();
    names::assign(&inputs, &mut resolution);
    timings.push(t.stop("names"));
    let live_outs = live.as_ref().map(|l| l.outs.as_slice());
    let mut removed = Vec::new();
    if let Some(keep) = live_outs {
        for (o, &k) in resolution.outs.iter().zip(keep) {
            if !k && is_code_or_data(o.kind) {
                let f = sources.file(modules[o.origin.module as usize].file);
                let lc = f.line_col(inputs.def_span(o.origin).lo);
                let what = if o.kind == crate::ir::SymbolKind::Variable {
                    "variable"
                } else {
                    "function"
                };
                removed.push(format!(
                    "{what} {} ({}:{}:{})",
                    report::display_name(inputs.name(o.origin)),
                    f.name(),
                    lc.line,
                    lc.col
                ));
            }
        }
    }
    let map = opts
        .map
        .then(|| map::map(&inputs, &resolution, live.as_ref()));
    let why_live = match &live {
        Some(l) => map::why_live(&inputs, &resolution, l, &opts.why_live),
        None if opts.why_live.is_empty() => String::new(),
        None => "ptxld: --why-live needs --gc-sections\n".to_string(),
    };
    let t = Stopwatch::start();
    let debug = write::DebugInfo {
        dwarf,
        files: &files,
        merged: merged.as_ref(),
    };
    let written = write::write(&inputs, &db, &resolution, &header, &debug, live_outs);
    timings.push(t.stop("layout and splicing"));
    match written {
        Ok(ptx) => Ok(Linked {
            ptx,
            header,
            warnings,
            removed,
            map,
            why_live,
            timings,
        }),
        Err(e) => {
            errors.extend(e);
            errors.sort();
            Err(errors)
        }
    }
}

/// The source of each of `modules`, in order: what the pieces of a [`Linked::ptx`]
/// rope of those modules refer to (`linked.ptx.to_vec(&module_sources(..))`).
pub fn module_sources<'a>(sources: &'a SourceMap, modules: &'a [Module]) -> Vec<ModuleText<'a>> {
    modules
        .iter()
        .map(|m| {
            let f = sources.file(m.file);
            ModuleText {
                src: rope::Text::File(f.pages()),
                kept: &m.kept,
                pages: Some(f.pages()),
            }
        })
        .collect()
}

/// `--trace-symbol`: every declaration, definition and reference of `names` in
/// `modules`, and what each became (resolution runs again; errors are not reported).
pub fn trace_symbols(sources: &SourceMap, modules: &[Module], names: &[String]) -> String {
    if names.is_empty() || modules.is_empty() {
        return String::new();
    }
    let inputs = report::Inputs { sources, modules };
    let db = db::SymbolDb::build(&inputs);
    let res = resolve::resolve(&inputs, &db).ok().map(|mut r| {
        names::assign(&inputs, &mut r);
        r
    });
    map::trace(&inputs, res.as_ref(), names)
}

fn is_code_or_data(k: crate::ir::SymbolKind) -> bool {
    matches!(
        k,
        crate::ir::SymbolKind::Function | crate::ir::SymbolKind::Variable
    )
}

fn has_sections(modules: &[Module]) -> bool {
    modules.iter().any(|m| {
        m.items
            .iter()
            .any(|i| matches!(i.kind, crate::ir::ItemKind::Section(_)))
    })
}

fn warning(msg: &str) -> Diagnostic {
    Diagnostic {
        severity: crate::diag::Severity::Warning,
        ..Diagnostic::global_error(msg)
    }
}
