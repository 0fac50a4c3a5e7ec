//! From read inputs to linked text: parse once, select archive members, analyse
//! the link for every target, lay out each target's output, and wrap containers.

use std::path::PathBuf;

use rayon::prelude::*;

use crate::diag::{CheckReport, Code, Diagnostic, Diagnostics, Report, Severity};
use crate::explain;
use crate::frontend::container_choices;
use crate::frontend::{parse_units, LoadOptions, RecordUses};
use crate::input::Bytes;
use crate::ir::Module;
use crate::link::{analyze, GcOptions, HeaderOptions, LinkOptions, MergedHeader};
use crate::options::{Arch, OutputKind};
use crate::select::{needs, select, Needs};
use crate::source::SourceMap;
use crate::timing::Stopwatch;
use crate::verify::{assemble, find_ptxas, Target};
use crate::write::elf::write_host_object;
use crate::write::fatbin;
use crate::write::layout::{layout, module_sources};
use crate::write::rope::Rope;

use super::job::{Job, MemoryInput};
use super::machine_code;
use super::outcome::{fail, Failure, Outcome, Output};
use super::plan::{plan, plan_stamped, Plan, Stamp};

/// The modules a link uses, after parsing, container extraction and archive member
/// selection, with their sources; `warned` says whether warnings were reported.
pub(super) struct Prepared {
    pub(super) sources: crate::source::SourceMap,
    pub(super) modules: Vec<crate::ir::Module>,
    pub(super) files_read: Vec<PathBuf>,
    pub(super) warned: bool,
}

pub(super) fn prepare(
    job: &Job,
    plan: Plan,
    arch: Option<Arch>,
    report: &mut Report,
) -> Result<Prepared, Failure> {
    let files_read = plan.files_read;
    // The inputs that could not be read come first, then what the others say.
    let unreadable = !plan.unreadable.is_empty();
    report.append(plan.unreadable);
    // The units' names, for member selection's messages: asked for only when an
    // archive is scanned (copying thousands of names cost 0.15 ms in order).
    let units = plan.units.len();
    let names: Vec<String> = match crate::select::scans_archives(&plan.pieces) {
        true => plan.units.par_iter().map(|u| u.name.clone()).collect(),
        false => Vec::new(),
    };
    let load = LoadOptions {
        keep_tokens: false,
        target: arch,
        record_uses: may_ask_needs(job),
    };
    let parsed = parse_units(plan.units, &load);
    // Symbols of the units that parsed, for member selection: found when selection
    // asks for them, which it does only when an archive is scanned.
    let mut module_of: Vec<Option<usize>> = vec![None; units];
    for (mi, &unit) in parsed.origins.iter().enumerate() {
        module_of[unit] = Some(mi);
    }
    let by_unit: Vec<std::cell::OnceCell<Option<Needs>>> =
        (0..units).map(|_| std::cell::OnceCell::new()).collect();
    let lookup = |u: usize| {
        by_unit[u]
            .get_or_init(|| module_of[u].map(|mi| needs(&parsed.modules[mi])))
            .as_ref()
    };
    let name_of = |u: usize| names[u].clone();
    let selection = select(&plan.pieces, &lookup, &name_of, &job.undefined);
    if job.verbose {
        for line in &selection.log {
            report.log(format!("ptxld: {line}\n"));
        }
    }
    // Keep the selected modules, in load order; diagnostics of members never loaded
    // do not matter (GNU ld never looks at them either). Without archives, that is
    // every module as parsed.
    let sources = parsed.sources;
    let every_unit = |order: &[usize]| order.iter().copied().eq(0..units);
    let mut diagnostics = Diagnostics::new();
    let modules: Vec<crate::ir::Module> =
        if every_unit(&selection.order) && every_unit(&parsed.origins) {
            diagnostics.extend(parsed.diagnostics);
            parsed.modules
        } else {
            let mut slots: Vec<Option<crate::ir::Module>> = (0..units).map(|_| None).collect();
            for (m, unit) in parsed.modules.into_iter().zip(parsed.origins) {
                slots[unit] = Some(m);
            }
            let modules: Vec<crate::ir::Module> = selection
                .order
                .iter()
                .filter_map(|&u| slots[u].take())
                .collect();
            let kept: std::collections::HashSet<_> = modules.iter().map(|m| m.file).collect();
            diagnostics.extend(parsed.diagnostics.into_iter().filter(|d| {
                let file = d.location.as_ref().and_then(|l| l.source()).map(|(f, _)| f);
                file.is_none_or(|f| kept.contains(&f))
            }));
            modules
        };
    let failed = diagnostics.has_errors();
    let warned = !diagnostics.is_empty();
    report.extend_resolved(diagnostics, &sources);
    if failed || unreadable {
        return Err(Failure::from(std::mem::take(report)));
    }
    Ok(Prepared {
        sources,
        modules,
        files_read,
        warned,
    })
}

/// Where the link asks what its modules use (`link::needs`): with
/// `--ptx-version=min`, a map or `--verify` always, with `--ptx-version` or
/// `--arch` where an input's header is above them (the link then lowers). The parse
/// then records it as it lexes the bodies, which costs much less than lexing every
/// module again afterwards; a plain link does neither.
fn may_ask_needs(job: &Job) -> RecordUses {
    if job.ptx_version_min || job.print_map || job.map_file.is_some() || job.verify {
        RecordUses::Always
    } else if job.ptx_version.is_some() || !job.archs.is_empty() {
        RecordUses::Above {
            version: job.ptx_version,
            archs: job.archs.clone(),
        }
    } else {
        RecordUses::Never
    }
}

pub(super) fn link_options(job: &Job, archs: &[Option<Arch>]) -> LinkOptions {
    LinkOptions {
        targets: archs
            .iter()
            .map(|arch| HeaderOptions {
                arch: *arch,
                ptx_version: job.ptx_version,
                ptx_version_min: job.ptx_version_min,
            })
            .collect(),
        gc: job.collects_garbage().then(|| GcOptions {
            exports: job.exports.iter().chain(&job.undefined).cloned().collect(),
            export_all: job.export_all,
            kernels: (!job.kernels_used.is_empty()).then(|| job.kernels_used.clone()),
            variables: job.variable_roots(),
        }),
        strip_debug: job.strip_debug,
        report_needs: job.print_map || job.map_file.is_some(),
        check_operands: false,
        fold_identical: job.fold_identical,
        relocatable: job.relocatable,
    }
}

/// The link of one set of modules for one or more targets: the output text of each
/// target, and what the link reported.
pub(super) struct Linked {
    pub(super) sources: SourceMap,
    pub(super) modules: Vec<Module>,
    /// One per target, in order.
    pub(super) ptx: Vec<(Rope, MergedHeader)>,
    pub(super) map: Option<String>,
    pub(super) files_read: Vec<PathBuf>,
}

/// Parses `plan` once and links it for `archs` (targets whose container inputs give
/// the same PTX); adds what to report to `report`.
pub(super) fn link_targets(
    job: &Job,
    plan: Plan,
    archs: &[Option<Arch>],
    report: &mut Report,
) -> Result<Linked, Failure> {
    let read_time = plan.read_time;
    let t = Stopwatch::start();
    let Prepared {
        sources,
        modules,
        files_read,
        warned,
    } = prepare(job, plan, archs[0], report)?;
    let parse_time = t.stop("parse, select members");
    let a = analyze(&sources, &modules, &link_options(job, archs));
    // Traces go first, so they are there when the link fails too.
    report.log(explain::trace(&a, &job.trace));
    if !a.ok() {
        report.extend_resolved(a.errors.clone(), &sources);
        return Err(Failure::from(std::mem::take(report)));
    }
    if job.print_gc_sections {
        for r in explain::removed(&a) {
            report.log(format!("ptxld: removing unused {r}\n"));
        }
    }
    report.log(explain::why_live(&a, &job.why_live));
    let t = Stopwatch::start();
    let ptx: Vec<(Rope, MergedHeader)> = (0..a.headers.len())
        .map(|target| (layout(&a, target), a.headers[target].clone()))
        .collect();
    let layout_time = t.stop("layout and splicing");
    if job.stats {
        let bytes: usize = modules.iter().map(|m| sources.file(m.file).len()).sum();
        report.log(format!(
            "ptxld: stats: {} modules, {:.1} MB of PTX\n",
            modules.len(),
            bytes as f64 / 1e6
        ));
        let phases = read_time.iter().chain([&parse_time]).chain(&a.timings);
        for phase in phases.chain([&layout_time]) {
            report.log(phase.render());
        }
    }
    let warned = warned || !a.warnings.is_empty();
    report.extend_resolved(a.warnings.clone(), &sources);
    if job.fatal_warnings && warned {
        report.push(Diagnostic::global_error(
            Code::FatalWarnings,
            "warnings are errors (--fatal-warnings)",
        ));
        return Err(Failure::from(std::mem::take(report)));
    }
    let map = (job.map_file.is_some() || job.print_map)
        .then(|| explain::link_map(&a))
        .flatten();
    if job.exits_after {
        std::mem::forget(a);
    } else {
        a.free();
    }
    Ok(Linked {
        sources,
        modules,
        ptx,
        map,
        files_read,
    })
}

/// The targets of `archs` grouped by the PTX entries their container inputs give:
/// each group links from one parse. Inputs without containers make one group.
pub(super) fn target_groups(plan: &Plan, archs: &[Option<Arch>]) -> Vec<Vec<usize>> {
    let has_containers = plan
        .units
        .iter()
        .any(|u| crate::input::container::is_container(u.bytes.head()));
    if archs.len() < 2 || !has_containers {
        return vec![(0..archs.len()).collect()];
    }
    let choices: Vec<Vec<Option<Vec<u8>>>> = archs
        .iter()
        .map(|&a| container_choices(&plan.units, a))
        .collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (t, c) in choices.iter().enumerate() {
        match groups.iter_mut().find(|g| &choices[g[0]] == c) {
            Some(g) => g.push(t),
            None => groups.push(vec![t]),
        }
    }
    groups
}

/// Links `job` and returns the output bytes without writing anything.
pub fn link_job(job: &Job) -> Result<Outcome, Failure> {
    link_job_stamped(job, &Default::default())
}

/// [`link_job`], which also leaves the stamps of the first reading of the inputs in
/// `first` when the link fails (those of the files read until it failed).
pub(super) fn link_job_stamped(
    job: &Job,
    first: &std::cell::RefCell<Option<Vec<Stamp>>>,
) -> Result<Outcome, Failure> {
    // Each target reads the inputs again; the stamps of the first reading count.
    let mut outcome = link_plans(job, &|| {
        let mut stamps = Vec::new();
        let plan = plan_stamped(job, &mut stamps);
        first.borrow_mut().get_or_insert(stamps);
        plan
    })?;
    outcome.stamps = first.borrow_mut().take().unwrap_or_default();
    Ok(outcome)
}

/// Links inputs held in memory, in order, with the options of `job` (its `inputs`
/// and `lib_dirs` are ignored; `emit` defaults by `job.output`'s extension). Nothing
/// is read from or written to disk.
pub fn link_in_memory(inputs: &[MemoryInput], job: &Job) -> Result<Outcome, Failure> {
    let make = || -> Result<Plan, Failure> {
        let mut p = Plan {
            units: Vec::new(),
            pieces: Vec::new(),
            files_read: Vec::new(),
            unreadable: Report::new(),
            read_time: None,
        };
        for input in inputs {
            let bytes = Bytes::Owned(input.bytes.clone());
            p.add(input.name.clone(), None, bytes, false, None)?;
        }
        if p.units.is_empty() {
            return Err(fail(Code::NoInput, "no input modules"));
        }
        Ok(p)
    };
    link_plans(job, &make)
}

/// Gives the report of a link's result the job's `--error-limit`, which its renderers
/// apply.
pub(super) fn limited(job: &Job, result: Result<Outcome, Failure>) -> Result<Outcome, Failure> {
    match result {
        Ok(mut o) => {
            o.report.set_error_limit(job.error_limit);
            Ok(o)
        }
        Err(mut f) => {
            f.report.set_error_limit(job.error_limit);
            Err(f)
        }
    }
}

pub(super) fn link_plans(
    job: &Job,
    make_plan: &dyn Fn() -> Result<Plan, Failure>,
) -> Result<Outcome, Failure> {
    limited(job, link_targets_of(job, make_plan))
}

/// Links every target of `job`, from the plans `make_plan` makes: one plan (one
/// reading and parse of the inputs) for all targets whose inputs give the same PTX.
pub(super) fn link_targets_of(
    job: &Job,
    make_plan: &dyn Fn() -> Result<Plan, Failure>,
) -> Result<Outcome, Failure> {
    let emit = job
        .emit
        .unwrap_or_else(|| OutputKind::from_path(&job.output));
    let archs = machine_code::targets(job, emit)?;
    let keep = machine_code::kept_cubins(job, emit, &archs);
    // Before anything is read: a link that needs ptxas and has none fails at once.
    let ptxas = machine_code::ptxas_for(job, emit, &keep)?;
    let nvjitlink = machine_code::nvjitlink_for(job, &keep)?;
    let first = make_plan()?;
    let groups = target_groups(&first, &archs);
    let mut first = Some(first);
    let mut report = Report::new();
    let mut files_read = Vec::new();
    let mut map = None;
    // A PTX output stays a rope over its sources until it is written; container
    // entries are assembled while each group's sources are still mapped.
    let mut ptx_output = None;
    let mut texts: Vec<Option<(Vec<u8>, MergedHeader)>> = archs.iter().map(|_| None).collect();
    let mut cubins: Vec<Option<Vec<u8>>> = archs.iter().map(|_| None).collect();
    for (gi, group) in groups.iter().enumerate() {
        // Another group links other container entries: read the inputs again for it.
        // What it reports beyond the first group's report is its errors.
        let plan = match first.take() {
            Some(p) => p,
            None => make_plan()?,
        };
        let group_archs: Vec<Option<Arch>> = group.iter().map(|&t| archs[t]).collect();
        let mut this = Report::new();
        let mut linked = link_targets(job, plan, &group_archs, &mut this).map_err(|f| {
            let mut all = std::mem::take(&mut report);
            all.append(f.report);
            Failure::from(all)
        })?;
        if gi == 0 {
            report = this;
            files_read = std::mem::take(&mut linked.files_read);
            map = linked.map.take();
        }
        if let Some(ptxas) = &ptxas {
            let group_keep: Vec<bool> = group.iter().map(|&t| keep[t]).collect();
            let tools = machine_code::Tools {
                ptxas,
                nvjitlink: nvjitlink.as_ref(),
            };
            let made =
                machine_code::assemble_targets(job, &tools, &linked, &group_keep, &mut report)?;
            for (&t, cubin) in group.iter().zip(made) {
                cubins[t] = cubin;
            }
        }
        let Linked {
            sources,
            modules,
            ptx,
            ..
        } = linked;
        if emit == OutputKind::Ptx {
            let (rope, _) = ptx
                .into_iter()
                .next()
                .expect("one target links for --emit ptx");
            ptx_output = Some(Output::Ptx {
                rope,
                sources,
                modules,
            });
        } else {
            let srcs = module_sources(&sources, &modules);
            for (&t, (rope, header)) in group.iter().zip(ptx) {
                // The text in memory only for a PTX entry: a cubin and a machine-code
                // entry need the header.
                let text = match machine_code::has_ptx_entry(job, emit, archs[t]) {
                    true => rope.to_vec(&srcs),
                    false => Vec::new(),
                };
                texts[t] = Some((text, header));
            }
        }
    }
    let output = match emit {
        OutputKind::Ptx => ptx_output.expect("one target links for --emit ptx"),
        OutputKind::Cubin => Output::Bytes(cubins[0].take().expect("a kept cubin")),
        OutputKind::Fatbin | OutputKind::Obj => {
            let names = machine_code::identifiers(&job.output);
            let entries = machine_code::fatbin_entries(job, &archs, &names, &texts, &cubins);
            let container = fatbin::write(&entries);
            Output::Bytes(if emit == OutputKind::Fatbin {
                container
            } else {
                write_host_object(&container, &job.symbol).map_err(|e| {
                    fail(Code::Container, format!("cannot build the ELF object: {e}"))
                })?
            })
        }
    };
    Ok(Outcome {
        output,
        report,
        files_read,
        map,
        // Set by the caller that read the files (in-memory inputs have none).
        stamps: Vec::new(),
    })
}

/// `ptxld check`: links without writing anything and collects every finding (errors,
/// ABI warnings, and where NVIDIA's nvJitLink would decide differently), resolved,
/// for the text and JSON reporters ([`CheckReport::to_text`], [`CheckReport::to_json`]).
pub fn check(job: &Job) -> CheckReport {
    let arch = job.archs.first().copied();
    // `--verify` without a ptxas is one more finding; the rest is checked all the same.
    let found = job
        .verify
        .then(|| find_ptxas(&|v| std::env::var_os(v), "--verify"));
    let (ptxas, not_found) = match found {
        Some(Ok(p)) => (Some(p), None),
        Some(Err(d)) => (None, Some(*d)),
        None => (None, None),
    };
    // The log lines of reading and member selection are not part of the report.
    let mut log = Report::new();
    let prepared = plan(job).and_then(|p| prepare(job, p, arch, &mut log));
    let (found, linked) = match prepared {
        // Inputs that cannot be read or parsed: their diagnostics, resolved already.
        Err(f) => (f.report.diagnostics().cloned().collect(), false),
        Ok(p) => {
            let opts = LinkOptions {
                report_needs: true,
                // With `--verify`, ptxas judges the operands, and its messages are
                // the ones to show.
                check_operands: ptxas.is_none(),
                ..link_options(job, &[arch])
            };
            let analysis = analyze(&p.sources, &p.modules, &opts);
            let mut found = explain::check::check(&analysis);
            if let (Some(ptxas), true) = (&ptxas, analysis.ok()) {
                let rope = layout(&analysis, 0);
                let target = Target {
                    rope: &rope,
                    arch: analysis.headers[0].arch,
                    keep: false,
                    part: None,
                };
                let made = assemble(ptxas, &job.ptxas_options, &[target], &p.sources, &p.modules);
                found.extend(made.diagnostics);
                // What the link needs closes the report.
                found.sort_by_key(|d| d.code == Code::Needs);
            }
            let resolved = found.into_iter().map(|d| d.resolved(&p.sources));
            (resolved.collect::<Vec<_>>(), true)
        }
    };
    let diagnostics: Vec<Diagnostic> = not_found.into_iter().chain(found).collect();
    // With --fatal-warnings a warning fails the check as it fails the link.
    let ok = !diagnostics.iter().any(|d| {
        d.severity == Severity::Error || (job.fatal_warnings && d.severity == Severity::Warning)
    });
    CheckReport {
        diagnostics,
        linked,
        ok,
        error_limit: job.error_limit,
    }
}
