//! One link as one value: everything the linker decides about a set of modules,
//! computed once. The writer lays the output out from it ([`super::layout`]), and
//! `ptxld check`, the link map, `--trace-symbol`, `--why-live` and
//! `--print-gc-sections` only read it.
//!
//! Only the header depends on the target, so a link for several `--arch` is one
//! analysis with one merged header per target.

use super::db::SymbolDb;
use super::debug::{DebugPlan, Dwarf};
use super::gc::{self, GcOptions, Live};
use super::header::{self, HeaderOptions, MergedHeader};
use super::inputs::Inputs;
use super::names::{self, Names};
use super::needs::Needs;
use super::resolve::{self, Resolution};
use super::{abi, variables};
use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::ir::{ItemKind, Module, SymbolKind};
use crate::source::SourceMap;
use crate::timing::{PhaseTime, Stopwatch};

/// What the caller can choose about a link.
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// One header per output target (`--arch`, `--ptx-version`); at least one.
    pub targets: Vec<HeaderOptions>,
    /// `--gc-sections`: remove what the kernels and exports do not reach.
    pub gc: Option<GcOptions>,
    /// `--strip-debug`: no DWARF sections, `.file`, `.loc` or `debug` target option.
    pub strip_debug: bool,
    /// Find what the modules use (`link::needs`) even where no target lowers: for
    /// `ptxld check` and the link map.
    pub report_needs: bool,
    /// Type the operands of every module's instructions as ptxas does
    /// (`isa/typing.rs`), in the scan of what they need: for `ptxld check`.
    pub check_operands: bool,
    /// `--fold-identical`: strong definitions of one symbol that are identical
    /// become one instead of a duplicate.
    pub fold_identical: bool,
    /// `-r`: a partial link, whose imports nothing defines stay `.extern`.
    pub relocatable: bool,
}

impl Default for LinkOptions {
    fn default() -> LinkOptions {
        LinkOptions {
            targets: vec![HeaderOptions::default()],
            gc: None,
            strip_debug: false,
            report_needs: false,
            check_operands: false,
            fold_identical: false,
            relocatable: false,
        }
    }
}

/// Everything decided about one link.
pub(crate) struct Analysis<'a> {
    pub inputs: Inputs<'a>,
    pub db: SymbolDb<'a>,
    /// `None` when resolution failed (its errors are in `errors`).
    pub resolution: Option<Resolution>,
    /// Output names, whenever resolution succeeded (traces want them on failed links
    /// too).
    pub names: Option<Names>,
    /// With `--gc-sections`.
    pub live: Option<Live>,
    /// One per target of [`LinkOptions::targets`]; empty when a header failed to
    /// merge.
    pub headers: Vec<MergedHeader>,
    /// What the modules use, where a target lowers or the caller asked
    /// ([`LinkOptions::report_needs`]).
    pub needs: Option<Needs>,
    pub debug: DebugPlan<'a>,
    /// Variables in output order (each after the variables its initializer names);
    /// empty when the link failed.
    pub variable_order: Vec<u32>,
    /// Errors, sorted; the link produces no output when there is one.
    pub errors: Diagnostics,
    /// Warnings (the link succeeds anyway).
    pub warnings: Diagnostics,
    /// Wall time of each phase (`--stats`).
    pub timings: Vec<PhaseTime>,
}

impl Analysis<'_> {
    /// Frees the analysis on every thread: it holds a few vectors per module
    /// (fates, `.file` numberings), thousands of allocations that dropping it would
    /// free in order on one thread, between the layout and the writing.
    pub fn free(self) {
        use crate::parallel::free;
        let Analysis {
            db,
            resolution,
            names,
            debug,
            ..
        } = self;
        rayon::join(
            || {
                if let Some(r) = resolution {
                    free(r.fate);
                }
                drop(names);
            },
            || {
                free(debug.files.maps);
                drop(db);
            },
        );
    }

    /// True when the link can be written.
    pub fn ok(&self) -> bool {
        !self.errors.has_errors()
    }

    /// Liveness by output symbol, with `--gc-sections`.
    pub fn live_outs(&self) -> Option<&[bool]> {
        self.live.as_ref().map(|l| l.outs.as_slice())
    }
}

/// Analyses the link of `modules` (parsed from `sources`, in link order).
pub(crate) fn analyze<'a>(
    sources: &'a SourceMap,
    modules: &'a [Module],
    opts: &LinkOptions,
) -> Analysis<'a> {
    let inputs = Inputs { sources, modules };
    let mut timings = Vec::new();
    let mut errors = Diagnostics::new();
    let mut warnings = Diagnostics::new();
    if modules.is_empty() {
        errors.push(Diagnostic::global_error(
            Code::NoInput,
            "no input modules to link",
        ));
    }
    let t = Stopwatch::start();
    // The ABI findings need only their own module: they keep the other threads busy
    // while the symbol table's ordered part runs.
    let (db, abi_findings) = rayon::join(
        || SymbolDb::build(&inputs),
        || -> Vec<Vec<Diagnostic>> {
            crate::parallel::map_each(modules.len(), |mi| {
                abi::findings(&modules[mi], &|| inputs.src(mi as u32))
            })
        },
    );
    timings.push(t.stop("symbol table, graph, ABI"));
    warnings.extend(abi_findings.into_iter().flatten());
    let resolve_opts = resolve::ResolveOptions {
        fold_identical: opts.fold_identical,
        relocatable: opts.relocatable,
    };
    // Without `--gc-sections` the debug policy is known before the resolution, and
    // the debug sections are planned beside it: the `.file` numbering is a loop in
    // order, and the merge's parallel loops end at other times than the
    // resolution's, so each keeps the threads the other leaves idle busy.
    let early_dwarf = opts
        .gc
        .is_none()
        .then(|| debug_policy(&inputs, opts, None, None));
    let t = Stopwatch::start();
    let (resolved, early_debug) = rayon::join(
        || resolve::resolve(&inputs, &db, resolve_opts),
        || early_dwarf.map(|dwarf| DebugPlan::make(&inputs, dwarf)),
    );
    timings.push(t.stop(if early_debug.is_some() {
        "resolution, debug sections"
    } else {
        "resolution"
    }));
    let (resolution, resolve_errors) = match resolved {
        Ok(r) => (Some(r), Vec::new()),
        Err(e) => (None, e),
    };
    if let Some(r) = &resolution {
        warnings.extend(r.folded.iter().cloned());
    }
    let live = match (&resolution, &opts.gc) {
        (Some(r), Some(g)) => {
            warnings.extend(gc::unknown_names(&inputs, r, g));
            let live = gc::mark(&inputs, &db, r, g);
            errors.extend(gc::keeps_nothing(&live, g));
            Some(live)
        }
        _ => None,
    };
    let debug = early_debug.unwrap_or_else(|| {
        let dwarf = debug_policy(&inputs, opts, resolution.as_ref(), live.as_ref());
        if dwarf == Dwarf::Drop {
            warnings.push(Diagnostic::global_warning(
                Code::DebugInfo,
                "debug sections are dropped because dead-code removal removed code they describe",
            ));
        }
        let t = Stopwatch::start();
        let debug = DebugPlan::make(&inputs, dwarf);
        timings.push(t.stop("debug sections"));
        debug
    });
    // `debug` needs the DWARF of a module that asked for it (ptxas: "Debug information
    // not found in presence of .target debug").
    let debug_kept: Vec<bool> = match &debug.merged {
        Some(m) => {
            warnings.extend(m.warnings.iter().cloned());
            m.kept.clone()
        }
        None => vec![false; modules.len()],
    };
    let t = Stopwatch::start();
    let scan = opts.report_needs
        || opts.check_operands
        || opts.targets.iter().any(|t| header::may_lower(&inputs, t));
    let needs = scan.then(|| Needs::scan(&inputs, opts.check_operands));
    if let Some(n) = &needs {
        errors.extend(n.beyond_own_headers(&inputs));
        timings.push(t.stop("instructions used"));
    }
    let mut headers = Vec::new();
    if !modules.is_empty() {
        for target in &opts.targets {
            match header::merge(&inputs, target, &debug_kept, needs.as_ref()) {
                Ok(h) => headers.push(h),
                // What is wrong for every target (mixed address sizes) is said once.
                Err(e) => {
                    let new: Vec<Diagnostic> = e
                        .into_iter()
                        .filter(|d| !errors.iter().any(|x| x == d))
                        .collect();
                    errors.extend(new);
                }
            }
        }
    }
    let header_failed = errors.has_errors();
    errors.extend(resolve_errors);
    // Undefined imports are errors, unless --gc-sections removed every user; they are
    // reported once the headers and the resolution hold.
    if let (Some(r), false) = (&resolution, header_failed) {
        for (d, syms) in &r.undefined {
            let used = match &live {
                None => true,
                Some(l) => syms
                    .iter()
                    .any(|s| l.syms[s.module as usize][s.id.0 as usize]),
            };
            if used {
                errors.push(d.clone());
            }
        }
    }
    let t = Stopwatch::start();
    // Names and the order of the variables are independent: the variable graph is
    // walked on one thread while the names are found on the others.
    let (names, order) = match &resolution {
        Some(r) => {
            let keep = |o: usize| live.as_ref().is_none_or(|l| l.outs[o]);
            let check_order = !errors.has_errors();
            let (n, order) = rayon::join(
                || names::assign(&inputs, r),
                || check_order.then(|| variables::order(&db, r, &keep)),
            );
            (Some(n), order)
        }
        None => (None, None),
    };
    timings.push(t.stop("names"));
    let variable_order = match (order, &resolution, &names) {
        (Some(Ok(order)), _, _) => order,
        (Some(Err(stuck)), Some(r), Some(n)) => {
            errors.push(variables::cycle_error(&inputs, r, n, &stuck));
            Vec::new()
        }
        _ => Vec::new(),
    };
    errors.sort();
    if errors.has_errors() {
        headers.clear();
    }
    Analysis {
        inputs,
        db,
        resolution,
        names,
        live,
        headers,
        needs,
        debug,
        variable_order,
        errors,
        warnings,
        timings,
    }
}

/// Whether the inputs' DWARF is merged, stripped (`--strip-debug`) or dropped
/// because `--gc-sections` removed code it may describe (which the caller warns
/// of). Without `--gc-sections` (`live` is `None`), the resolution is not looked at.
fn debug_policy(
    inputs: &Inputs,
    opts: &LinkOptions,
    resolution: Option<&Resolution>,
    live: Option<&Live>,
) -> Dwarf {
    if opts.strip_debug {
        return Dwarf::Strip;
    }
    let removed_any = match (resolution, live) {
        (Some(r), Some(l)) => r
            .outs
            .iter()
            .zip(&l.outs)
            .any(|(o, &keep)| !keep && is_code_or_data(o.kind)),
        _ => false,
    };
    if removed_any && has_sections(inputs.modules) {
        return Dwarf::Drop;
    }
    Dwarf::Merge
}

/// What dead-code removal may remove: kernels (with `--kernels-used`), functions and
/// variables.
pub(crate) fn is_code_or_data(k: SymbolKind) -> bool {
    matches!(
        k,
        SymbolKind::Entry | SymbolKind::Function | SymbolKind::Variable
    )
}

fn has_sections(modules: &[Module]) -> bool {
    modules.iter().any(|m| {
        m.items
            .iter()
            .any(|i| matches!(i.kind, ItemKind::Section(_)))
    })
}
