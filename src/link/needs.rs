//! What a link really needs: the PTX ISA version and target that have every
//! instruction, special register and directive its modules use (the table in
//! `src/isa`), whatever their headers declare. It decides how far `--ptx-version`
//! and `--arch` may lower the output (docs/linking.md, "Lowering"), and `ptxld
//! check` and the link map show it.

use rayon::prelude::*;

use super::header::min_version_for;
use super::inputs::Inputs;
use crate::diag::{Code, Diagnostic, Severity};
use crate::isa::{module_uses, target_satisfies, ModuleUses, Need, Version};
use crate::options::Arch;
use crate::source::Span;

/// The lowest version any output has: the merged module always writes
/// `.address_size` (ptxas 12.9: "Feature '.address_size directive' requires PTX ISA
/// .version 2.3 or later").
pub(crate) const FLOOR: Version = (2, 3);

/// What each module of a link uses, in link order.
pub(crate) struct Needs {
    pub modules: Vec<ModuleUses>,
}

/// Where a need comes from: module, span.
pub(crate) type Origin = (u32, Span);

/// A need and the use it comes from.
pub(crate) type Setter = Option<(Need, Origin)>;

impl Needs {
    /// What every module uses: as the parse recorded it, or (where it did not, or
    /// to type their operands too if `typing`) scanned in parallel.
    pub fn scan(inputs: &Inputs, typing: bool) -> Needs {
        let modules = (0..inputs.modules.len() as u32)
            .into_par_iter()
            .map(|mi| {
                let m = &inputs.modules[mi as usize];
                match &m.recorded_uses {
                    Some(uses) if !typing => (**uses).clone(),
                    _ => module_uses(m, inputs.src(mi), typing),
                }
            })
            .collect();
        Needs { modules }
    }

    /// The lowest version module `mi` may be written at: what its uses need, or its
    /// own `.version` where it uses an opcode the table does not know.
    pub fn module_version(&self, inputs: &Inputs, mi: usize) -> Version {
        let own = inputs.modules[mi]
            .header
            .version
            .map_or(FLOOR, |v| (v.major, v.minor));
        let uses = &self.modules[mi];
        let need = uses.need().ptx;
        if uses.unknown.is_empty() {
            need
        } else {
            need.max(own)
        }
    }

    /// The lowest version the code of every module may be written at.
    pub fn code_version(&self, inputs: &Inputs) -> Version {
        (0..self.modules.len())
            .map(|mi| self.module_version(inputs, mi))
            .fold(FLOOR, Version::max)
    }

    /// The lowest version the merged module may have for `.target arch`: its code's,
    /// or the target's own where that is higher.
    pub fn min_version(&self, inputs: &Inputs, arch: Arch) -> Version {
        self.code_version(inputs)
            .max(min_version_for(arch.sm(), arch.suffix()))
    }

    /// The use that sets the version of the link's code (above [`FLOOR`]), and the
    /// one that sets its target.
    pub fn highest(&self) -> (Setter, Setter) {
        let mut ptx: Setter = None;
        let mut target: Setter = None;
        for (mi, m) in self.modules.iter().enumerate() {
            for u in &m.uses {
                let at = (mi as u32, u.span);
                // (A need below the floor every output has sets nothing.)
                if u.need.ptx > FLOOR && ptx.is_none_or(|(n, _)| u.need.ptx > n.ptx) {
                    ptx = Some((u.need, at));
                }
                let higher =
                    crate::isa::higher_target(target.and_then(|(n, _)| n.target), u.need.target);
                if u.need.target.is_some() && higher != target.and_then(|(n, _)| n.target) {
                    target = Some((u.need, at));
                }
            }
        }
        (ptx, target)
    }

    /// Errors for the uses of module `mi` that `--ptx-version want` does not have;
    /// its unknown opcodes are errors too (the table cannot say they are there).
    pub fn version_errors(&self, inputs: &Inputs, mi: usize, want: Version) -> Vec<Diagnostic> {
        let uses = &self.modules[mi];
        let mut out: Vec<Diagnostic> = uses
            .uses
            .iter()
            .filter(|u| u.need.ptx > want)
            .map(|u| {
                inputs.error_at(
                    Code::Version,
                    mi as u32,
                    u.span,
                    format!(
                        "version: `{}` needs PTX ISA {}, newer than --ptx-version {}",
                        text(inputs, mi, u.span),
                        show(u.need.ptx),
                        show(want)
                    ),
                )
            })
            .collect();
        out.extend(unknown_errors(inputs, mi, uses, "version", "--ptx-version"));
        out
    }

    /// Errors for the uses of module `mi` that `.target want` does not have.
    pub fn target_errors(&self, inputs: &Inputs, mi: usize, want: Arch) -> Vec<Diagnostic> {
        let uses = &self.modules[mi];
        let mut out: Vec<Diagnostic> = uses
            .uses
            .iter()
            .filter_map(|u| Some((u, u.need.target?)))
            .filter(|&(_, t)| !target_satisfies(want, t))
            .map(|(u, t)| {
                inputs.error_at(
                    Code::Target,
                    mi as u32,
                    u.span,
                    format!(
                        "target: `{}` needs .target {t}, which --arch {want} does not have",
                        text(inputs, mi, u.span)
                    ),
                )
            })
            .collect();
        out.extend(unknown_errors(inputs, mi, uses, "target", "--arch"));
        out
    }

    /// The uses each module makes of what its own header does not declare: ptxas
    /// refuses such a module whatever it is linked with.
    pub fn beyond_own_headers(&self, inputs: &Inputs) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (mi, m) in inputs.modules.iter().enumerate() {
            let name = inputs.file_name(mi as u32);
            let own_target = m.header.target.as_ref().and_then(|t| t.arch);
            let own_target = own_target.map(|a| Arch::from_parts(a.sm, a.suffix));
            for u in &self.modules[mi].uses {
                let refuse = |directive: &str, needs: String, declared: String| {
                    let what = text(inputs, mi, u.span);
                    inputs
                        .error_at(
                            Code::NewerThanHeader,
                            mi as u32,
                            u.span,
                            format!("`{what}` needs {needs}, but {name} declares {declared}"),
                        )
                        .with_help(format!(
                            "ptxas refuses this module; raise its {directive} or recompile it"
                        ))
                };
                if let Some(v) = m.header.version.filter(|v| u.need.ptx > (v.major, v.minor)) {
                    out.push(refuse(
                        ".version",
                        format!("PTX ISA {}", show(u.need.ptx)),
                        format!(".version {}.{}", v.major, v.minor),
                    ));
                }
                if let (Some(t), Some(have)) = (u.need.target, own_target) {
                    if !target_satisfies(have, t) {
                        out.push(refuse(
                            ".target",
                            format!(".target {t}"),
                            format!(".target {have}"),
                        ));
                    }
                }
            }
        }
        out
    }

    /// What the link needs, as a note with the use that sets each minimum (for
    /// `ptxld check` and the link map).
    pub fn summary(&self, inputs: &Inputs, arch: Arch) -> Diagnostic {
        let version = self.min_version(inputs, arch);
        let (ptx, target) = self.highest();
        let target_text = target
            .and_then(|(n, _)| n.target)
            .map_or("any .target".to_string(), |t| {
                format!(".target {t} or higher")
            });
        let mut d = Diagnostic::new(
            Severity::Note,
            Code::Needs,
            format!(
                "needs: PTX ISA {} for .target {arch} ({}); its code needs PTX ISA {} and \
                 {target_text}",
                show(version),
                cuda_release(version),
                show(self.code_version(inputs)),
            ),
        );
        if let Some((n, (mi, span))) = ptx {
            let file = inputs.modules[mi as usize].file;
            d = d.with_note(
                file,
                span,
                format!(
                    "PTX ISA {} because of `{}` at",
                    show(n.ptx),
                    text(inputs, mi as usize, span)
                ),
            );
        }
        if let Some((n, (mi, span))) = target {
            let file = inputs.modules[mi as usize].file;
            let t = n.target.expect("a target use has a target");
            d = d.with_note(
                file,
                span,
                format!(
                    ".target {t} because of `{}` at",
                    text(inputs, mi as usize, span)
                ),
            );
        }
        for (mi, m) in self.modules.iter().enumerate() {
            for &span in &m.unknown {
                let file = inputs.modules[mi].file;
                d = d.with_note(
                    file,
                    span,
                    format!(
                        "`{}` is not in ptxld's instruction table (its module keeps its own \
                         .version) at",
                        text(inputs, mi, span)
                    ),
                );
            }
        }
        d
    }
}

/// Errors for the opcodes of module `mi` the table does not know, when lowering.
fn unknown_errors(
    inputs: &Inputs,
    mi: usize,
    uses: &ModuleUses,
    what: &str,
    how: &str,
) -> Vec<Diagnostic> {
    uses.unknown
        .iter()
        .map(|&span| {
            inputs
                .error_at(
                    if what == "version" {
                        Code::Version
                    } else {
                        Code::Target
                    },
                    mi as u32,
                    span,
                    format!(
                        "{what}: `{}` is not in ptxld's instruction table, so {how} cannot go \
                         below {}'s own .{what}",
                        text(inputs, mi, span),
                        inputs.file_name(mi as u32)
                    ),
                )
                .with_help("docs/isa-table.md says how to add the instruction to the table")
        })
        .collect()
}

/// The source text of `span` in module `mi`, whitespace folded.
fn text(inputs: &Inputs, mi: usize, span: Span) -> String {
    let raw = String::from_utf8_lossy(&inputs.src(mi as u32)[span.range()]).into_owned();
    raw.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `X.Y`.
fn show(v: Version) -> String {
    format!("{}.{}", v.0, v.1)
}

/// The first CUDA release whose driver loads PTX ISA `v` (the PTX ISA's release
/// history: 7.0 came with CUDA 11.0, 8.6 with 12.7, 8.8 with 12.9).
fn cuda_release(v: Version) -> String {
    const RELEASES: &[(Version, &str)] = &[
        ((1, 0), "1.0"),
        ((1, 1), "1.1"),
        ((1, 2), "2.0"),
        ((1, 3), "2.1"),
        ((1, 4), "2.2"),
        ((2, 0), "3.0"),
        ((2, 1), "3.1"),
        ((2, 2), "3.2"),
        ((2, 3), "4.0"),
        ((3, 0), "4.1"),
        ((3, 1), "5.0"),
        ((3, 2), "5.5"),
        ((4, 0), "6.0"),
        ((4, 1), "6.5"),
        ((4, 2), "7.0"),
        ((4, 3), "7.5"),
        ((5, 0), "8.0"),
        ((6, 0), "9.0"),
        ((6, 1), "9.1"),
        ((6, 2), "9.2"),
        ((6, 3), "10.0"),
        ((6, 4), "10.1"),
        ((6, 5), "10.2"),
        ((7, 0), "11.0"),
        ((7, 1), "11.1"),
        ((7, 2), "11.2"),
        ((7, 3), "11.3"),
        ((7, 4), "11.4"),
        ((7, 5), "11.5"),
        ((7, 6), "11.6"),
        ((7, 7), "11.7"),
        ((7, 8), "11.8"),
        ((8, 0), "12.0"),
        ((8, 1), "12.1"),
        ((8, 2), "12.2"),
        ((8, 3), "12.3"),
        ((8, 4), "12.4"),
        ((8, 5), "12.5"),
        ((8, 6), "12.7"),
        ((8, 7), "12.8"),
        ((8, 8), "12.9"),
        ((9, 0), "13.0"),
    ];
    match RELEASES.iter().find(|&&(r, _)| r >= v) {
        Some(&(_, cuda)) => format!("a CUDA {cuda} driver or newer"),
        None => "a driver newer than CUDA 13.0".to_string(),
    }
}
