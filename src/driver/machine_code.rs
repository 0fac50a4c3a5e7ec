//! What a link writes beyond PTX: the targets a job links for its output kind
//! (`--arch`, `--gpu-code`, `-r`), ptxas on each target's text (`--verify`, `--emit
//! cubin`, `--gpu-code sm_NN`), and a fatbin's entries (docs/machine-code.md).

use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic, Report, Severity};
use crate::link::MergedHeader;
use crate::options::{Arch, GpuCode, OutputKind};
use crate::parse::parse_module;
use crate::source::FileId;
use crate::timing::Stopwatch;
use crate::verify::nvjitlink::{find_nvjitlink, NvJitLink};
use crate::verify::{assemble, find_ptxas, Target};
use crate::write::fatbin::{FatbinEntry, Payload};
use crate::write::layout::module_sources;
use crate::write::rope::{ModuleText, Rope};
use crate::write::split::{split, Piece};

use super::job::Job;
use super::link::Linked;
use super::outcome::{fail, Failure};

/// The targets `job` links for `emit`, `None` for the highest input target: those of
/// `--gpu-code`, each once, or those of `--arch`.
pub(super) fn targets(job: &Job, emit: OutputKind) -> Result<Vec<Option<Arch>>, Failure> {
    let usage = |what: &str| Err(fail(Code::Usage, what));
    if job.relocatable {
        if emit != OutputKind::Ptx {
            return usage(
                "-r writes a PTX module for a later link: leave out --emit and --gpu-code",
            );
        }
        if job.collects_garbage() {
            return usage(
                "-r keeps what a later link may need: dead-code removal (--gc-sections, \
                 --kernels-used, ...) belongs to the final link",
            );
        }
    }
    if !job.gpu_code.is_empty() {
        if !job.archs.is_empty() {
            return usage("--gpu-code names the targets: leave out --arch");
        }
        if !matches!(emit, OutputKind::Fatbin | OutputKind::Obj) {
            return usage("--gpu-code makes a fatbin: use --emit fatbin or --emit obj");
        }
        let mut archs: Vec<Option<Arch>> = Vec::new();
        for code in &job.gpu_code {
            if !archs.contains(&Some(code.arch)) {
                archs.push(Some(code.arch));
            }
        }
        return Ok(archs);
    }
    match emit {
        OutputKind::Ptx if job.archs.len() > 1 => {
            usage("several --arch give several PTX modules: use --emit fatbin or --emit obj")
        }
        OutputKind::Cubin if job.archs.len() > 1 => {
            usage("a cubin is for one --arch: use --gpu-code sm_80,sm_90 for a fatbin with several")
        }
        _ if job.archs.is_empty() => Ok(vec![None]),
        _ => Ok(job.archs.iter().map(|&a| Some(a)).collect()),
    }
}

/// Which of the targets `archs` ptxas assembles into a cubin that the output keeps:
/// a cubin's one target, and those of `--gpu-code`'s `sm_NN` codes.
pub(super) fn kept_cubins(job: &Job, emit: OutputKind, archs: &[Option<Arch>]) -> Vec<bool> {
    match emit {
        OutputKind::Cubin => vec![true],
        _ => archs
            .iter()
            .map(|&a| job.gpu_code.iter().any(|c| c.sass && Some(c.arch) == a))
            .collect(),
    }
}

/// The ptxas the link runs, if it runs one (`--verify`, or a cubin to keep); an
/// error naming what needs it where none is found.
pub(super) fn ptxas_for(
    job: &Job,
    emit: OutputKind,
    keep: &[bool],
) -> Result<Option<PathBuf>, Failure> {
    let machine_code = keep.contains(&true);
    if !job.verify && !machine_code {
        return Ok(None);
    }
    let purpose = match emit {
        OutputKind::Cubin => "--emit cubin",
        _ if machine_code => "--gpu-code sm_NN",
        _ => "--verify",
    };
    find_ptxas(&|v| std::env::var_os(v), purpose)
        .map(Some)
        .map_err(|d| Failure::from(Report::of(*d)))
}

/// The nvJitLink that links the parts of a split assembly (`--split-kernels N`, N
/// above 1), found before anything is read; a usage error where the link keeps no
/// machine code to split.
pub(super) fn nvjitlink_for(job: &Job, keep: &[bool]) -> Result<Option<NvJitLink>, Failure> {
    if job.split_kernels.is_none_or(|n| n < 2) {
        return Ok(None);
    }
    if !keep.contains(&true) {
        return Err(fail(
            Code::Usage,
            "--split-kernels splits ptxas's work on machine code: use it with --emit cubin or \
             --gpu-code sm_NN",
        ));
    }
    find_nvjitlink(&|v| std::env::var_os(v), "--split-kernels")
        .map(Some)
        .map_err(|d| Failure::from(Report::of(*d)))
}

/// The NVIDIA tools a link runs.
pub(super) struct Tools<'a> {
    /// ptxas.
    pub ptxas: &'a Path,
    /// nvJitLink, where the link splits its assembly.
    pub nvjitlink: Option<&'a NvJitLink>,
}

/// Whether the output has a PTX entry for `target`: every target of a fatbin without
/// `--gpu-code`, those of its `compute_NN` codes with it, none of a cubin.
pub(super) fn has_ptx_entry(job: &Job, emit: OutputKind, target: Option<Arch>) -> bool {
    match emit {
        OutputKind::Cubin => false,
        _ if job.gpu_code.is_empty() => true,
        _ => job
            .gpu_code
            .iter()
            .any(|c| !c.sass && Some(c.arch) == target),
    }
}

/// The fatbin's entries: with `--gpu-code`, its codes in order (machine code from
/// `cubins`, PTX from `texts`); otherwise one PTX entry per target.
pub(super) fn fatbin_entries<'a>(
    job: &Job,
    archs: &[Option<Arch>],
    (ptx_name, cubin_name): &'a (String, String),
    texts: &'a [Option<(Vec<u8>, MergedHeader)>],
    cubins: &'a [Option<Vec<u8>>],
) -> Vec<FatbinEntry<'a>> {
    let entry = |t: usize, sass: bool| {
        let (text, h) = texts[t].as_ref().expect("every target is linked");
        FatbinEntry {
            bytes: match sass {
                true => cubins[t].as_deref().expect("a kept cubin"),
                false => text,
            },
            payload: match sass {
                true => Payload::Elf,
                false => Payload::Ptx { version: h.version },
            },
            sm: h.arch.sm(),
            suffix: h.arch.suffix(),
            address_bits: h.address_size,
            debug: h.debug,
            identifier: if sass { cubin_name } else { ptx_name },
        }
    };
    if job.gpu_code.is_empty() {
        return (0..archs.len()).map(|t| entry(t, false)).collect();
    }
    let target = |c: &GpuCode| archs.iter().position(|&a| a == Some(c.arch));
    // A code given twice is one entry.
    let codes = &job.gpu_code;
    let first = |i: usize| !codes[..i].contains(&codes[i]);
    (0..codes.len())
        .filter(|&i| first(i))
        .map(|i| {
            let c = &codes[i];
            entry(target(c).expect("each code's target is linked"), c.sass)
        })
        .collect()
}

/// The names cuobjdump gives a fatbin's PTX and cubin entries, from the output's:
/// `app.fatbin` lists `app.sm_80.ptx` and `app.sm_80.cubin`.
pub(super) fn identifiers(output: &Path) -> (String, String) {
    let stem = match output.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if output != Path::new("-") => stem,
        _ => "ptxld",
    };
    (format!("{stem}.ptx"), format!("{stem}.cubin"))
}

/// ptxas on the output of each target of `linked`: `--verify` on all, and a kept
/// cubin for those `keep` says, assembled in parts linked by nvJitLink under
/// `--split-kernels`. What they say joins `report`; their errors, or warnings under
/// `--fatal-warnings`, fail the link. The cubins, one per target.
pub(super) fn assemble_targets(
    job: &Job,
    tools: &Tools<'_>,
    linked: &Linked,
    keep: &[bool],
    report: &mut Report,
) -> Result<Vec<Option<Vec<u8>>>, Failure> {
    let t = Stopwatch::start();
    let srcs = module_sources(&linked.sources, &linked.modules);
    // The parts of each kept target a split assembly cuts (none where it is one).
    let mut parts: Vec<Vec<Rope>> = Vec::with_capacity(keep.len());
    for ((rope, header), &k) in linked.ptx.iter().zip(keep) {
        parts.push(match (tools.nvjitlink, job.split_kernels) {
            (Some(_), Some(n)) if k => {
                let parts = cut(rope, &srcs, n, header.arch)?;
                if (job.verbose || job.stats) && parts.is_empty() {
                    report.log(format!(
                        "--split-kernels: {} has fewer than two kernels: one ptxas assembles it\n",
                        header.arch
                    ));
                }
                if let (true, false, Some(nvjitlink)) =
                    (job.verbose || job.stats, parts.is_empty(), tools.nvjitlink)
                {
                    let version = match nvjitlink.version() {
                        Some((major, minor)) => format!(" {major}.{minor}"),
                        None => String::new(),
                    };
                    report.log(format!(
                        "--split-kernels: {} in {} parts of {} kernels, linked by nvJitLink{version} ({})\n",
                        header.arch,
                        parts.len(),
                        parts.iter().map(|(_, k)| k.to_string()).collect::<Vec<_>>().join(", "),
                        nvjitlink.describe()
                    ));
                }
                parts.into_iter().map(|(rope, _)| rope).collect()
            }
            _ => Vec::new(),
        });
    }
    if job.stats && parts.iter().any(|p| !p.is_empty()) {
        report.log(t.stop("splitting into parts").render());
    }
    let t = Stopwatch::start();
    let mut targets: Vec<Target> = Vec::new();
    for (((rope, header), &keep), parts) in linked.ptx.iter().zip(keep).zip(&parts) {
        if !parts.is_empty() {
            targets.extend(parts.iter().enumerate().map(|(i, rope)| Target {
                rope,
                arch: header.arch,
                keep: true,
                part: Some((i, parts.len())),
            }));
        } else if job.verify || keep {
            targets.push(Target {
                rope,
                arch: header.arch,
                keep,
                part: None,
            });
        }
    }
    let made = assemble(
        tools.ptxas,
        &job.ptxas_options,
        &targets,
        &linked.sources,
        &linked.modules,
    );
    if job.stats {
        report.log(t.stop("assembling with ptxas").render());
    }
    let found = made.diagnostics;
    let failed = found.has_errors();
    let warned = found.iter().any(|d| d.severity == Severity::Warning);
    report.extend_resolved(found, &linked.sources);
    if !failed && job.fatal_warnings && warned {
        report.push(Diagnostic::global_error(
            Code::FatalWarnings,
            "warnings are errors (--fatal-warnings)",
        ));
    }
    // Each target's cubin, where it was assembled and kept: a split target's is its
    // parts' cubins linked.
    let t = Stopwatch::start();
    let mut made = made.cubins.into_iter();
    let mut cubins: Vec<Option<Vec<u8>>> = Vec::with_capacity(keep.len());
    for (((_, header), &k), parts) in linked.ptx.iter().zip(keep).zip(&parts) {
        let cubin = match (parts.len(), tools.nvjitlink) {
            (0, _) if job.verify || k => made.next().flatten(),
            (0, _) => None,
            (n, Some(nvjitlink)) => {
                let cubins: Option<Vec<(String, Vec<u8>)>> = (0..n)
                    .map(|i| Some((format!("part{}.cubin", i + 1), made.next().flatten()?)))
                    .collect();
                match cubins {
                    Some(c) if !report.has_errors() => {
                        link_parts(nvjitlink, header.arch, &c, report)
                    }
                    _ => None,
                }
            }
            (_, None) => unreachable!("a link splits only with nvJitLink"),
        };
        cubins.push(cubin);
    }
    if job.stats && parts.iter().any(|p| !p.is_empty()) {
        report.log(t.stop("linking the parts with nvJitLink").render());
    }
    if !report.has_errors() {
        for (((_, header), &k), cubin) in linked.ptx.iter().zip(keep).zip(&cubins) {
            if k && cubin.is_none() {
                report.push(Diagnostic::global_error(
                    Code::Ptxas,
                    format!(
                        "{} wrote no cubin for {}",
                        tools.ptxas.display(),
                        header.arch
                    ),
                ));
            }
        }
    }
    if report.has_errors() {
        return Err(Failure::from(std::mem::take(report)));
    }
    Ok(cubins)
}

/// The parts `--split-kernels n` cuts `rope` (the output for `arch`) into, as
/// ropes over the same inputs (ptxas's messages about a part point at them), with
/// their numbers of kernels; none where there is one part (fewer than two kernels):
/// one ptxas then assembles it.
fn cut(
    rope: &Rope,
    srcs: &[ModuleText<'_>],
    n: usize,
    arch: Arch,
) -> Result<Vec<(Rope, usize)>, Failure> {
    let text = rope.to_vec(srcs);
    // The merged module is ptxld's own output: it parses. Should it not, that is a
    // bug to report rather than a part to guess.
    let parsed = parse_module(FileId(u32::MAX), &text);
    let split = match parsed.diagnostics.first() {
        Some(d) => Err(format!("ptxld cannot parse its own output: {}", d.message)),
        None => split(&parsed.module, &text, n),
    };
    let parts = split.map_err(|why| {
        fail(
            Code::Usage,
            format!("--split-kernels cannot split the output for {arch}: {why}"),
        )
    })?;
    if parts.len() < 2 {
        return Ok(Vec::new());
    }
    let index = rope.index();
    Ok(parts
        .iter()
        .map(|p| {
            let mut out = Rope::new();
            for piece in &p.pieces {
                match *piece {
                    Piece::Merged(s) => out.push_range(&index, u64::from(s.lo), u64::from(s.hi)),
                    Piece::New(b) => out.push_bytes(b),
                }
            }
            (out, p.kernels.len())
        })
        .collect())
}

/// The parts' cubins linked by nvJitLink into one for `arch`; `None`, with an error
/// in `report`, where it fails.
fn link_parts(
    nvjitlink: &NvJitLink,
    arch: Arch,
    parts: &[(String, Vec<u8>)],
    report: &mut Report,
) -> Option<Vec<u8>> {
    match nvjitlink.link_cubins(&arch.to_string(), &[], parts) {
        Ok((cubin, _)) => Some(cubin),
        Err(log) => {
            report.push(
                Diagnostic::global_error(
                    Code::NvJitLink,
                    format!(
                        "{} could not link the {} parts for {arch}: {}",
                        nvjitlink.describe(),
                        parts.len(),
                        log.trim()
                    ),
                )
                .with_help("link without --split-kernels, and report this to ptxld"),
            );
            None
        }
    }
}
