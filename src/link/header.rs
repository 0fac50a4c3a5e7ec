//! Merging module headers: `.version`, `.target` and `.address_size`
//! (docs/linking.md §9).

use crate::diag::{Code, Diagnostic};
use crate::ir::{Header, TexMode};
use crate::isa::target_satisfies;
use crate::options::{suffix_rank, Arch, PtxVersion};
use crate::source::Span;

use super::inputs::Inputs;
use super::needs::Needs;

/// The header of the merged module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergedHeader {
    /// `.version major.minor`.
    pub version: (u32, u32),
    /// `.target`'s architecture.
    pub arch: Arch,
    /// `texmode_independent` (unified is the default and not written).
    pub texmode_independent: bool,
    /// `map_f64_to_f32`.
    pub map_f64_to_f32: bool,
    /// `debug`: some module has it and its DWARF sections are in the output.
    pub debug: bool,
    /// `.address_size`.
    pub address_size: u32,
}

impl MergedHeader {
    /// The three header directives.
    pub fn render(&self) -> String {
        let mut target = self.arch.to_string();
        if self.texmode_independent {
            target.push_str(", texmode_independent");
        }
        if self.map_f64_to_f32 {
            target.push_str(", map_f64_to_f32");
        }
        if self.debug {
            target.push_str(", debug");
        }
        format!(
            ".version {}.{}\n.target {}\n.address_size {}\n",
            self.version.0, self.version.1, target, self.address_size
        )
    }
}

/// Every `.target` architecture of PTX ISA 9.0 ("Target ISA notes" and the `.target`
/// directive's list): the number, the suffixes it takes (`a` arch-specific, `f`
/// family-specific) and the lowest PTX ISA version that knows it, as ptxas 12.9
/// measures it (a `.target sm_30` module at `.version 2.3`: "PTX .version 2.3 does
/// not support .target sm_30"; docs/linking.md, "Lowering"). ptxas knows all of them but
/// `sm_88` and `sm_110`, which ISA 9.0 added (docs/linking.md, "Targets").
const TARGETS: &[(u32, &str, (u32, u32))] = &[
    (10, "", (1, 0)),
    (11, "", (1, 0)),
    (12, "", (1, 2)),
    (13, "", (1, 2)),
    (20, "", (2, 0)),
    (30, "", (3, 0)),
    (32, "", (4, 0)),
    (35, "", (3, 1)),
    (37, "", (4, 1)),
    (50, "", (4, 0)),
    (52, "", (4, 1)),
    (53, "", (4, 2)),
    (60, "", (5, 0)),
    (61, "", (5, 0)),
    (62, "", (5, 0)),
    (70, "", (6, 0)),
    (72, "", (6, 1)),
    (75, "", (6, 3)),
    (80, "", (7, 0)),
    (86, "", (7, 1)),
    (87, "", (7, 4)),
    (88, "", (9, 0)),
    (89, "", (7, 8)),
    (90, "a", (7, 8)),
    (100, "af", (8, 6)),
    (101, "af", (8, 6)),
    (103, "af", (8, 8)),
    (110, "af", (9, 0)),
    (120, "af", (8, 7)),
    (121, "af", (8, 8)),
];

/// True if `sm_NN[a|f]` is an architecture of the PTX ISA ([`known_targets`]).
pub fn is_known_target(sm: u32, suffix: Option<u8>) -> bool {
    TARGETS
        .iter()
        .any(|&(n, suffixes, _)| n == sm && suffix.is_none_or(|s| suffixes.as_bytes().contains(&s)))
}

/// Every architecture of the PTX ISA as `--arch` takes it (`sm_80`, `sm_90a`,
/// `sm_100f`), in ascending order.
pub fn known_targets() -> Vec<String> {
    let mut out = Vec::new();
    for &(sm, suffixes, _) in TARGETS {
        out.push(format!("sm_{sm}"));
        for s in suffixes.chars() {
            out.push(format!("sm_{sm}{s}"));
        }
    }
    out
}

/// The lowest PTX ISA version that knows `.target sm_NN[a|f]` (PTX ISA, "Target ISA
/// notes"); targets not listed need nothing beyond what their modules declare.
pub fn min_version_for(sm: u32, suffix: Option<u8>) -> (u32, u32) {
    match (sm, suffix) {
        (90, Some(b'a')) => (8, 0),
        (_, Some(b'f')) => (8, 8),
        _ => TARGETS.iter().find(|t| t.0 == sm).map_or((1, 0), |t| t.2),
    }
}

/// User overrides of the merged header.
#[derive(Clone, Debug, Default)]
pub struct HeaderOptions {
    /// `--arch sm_NN[a|f]`.
    pub arch: Option<Arch>,
    /// `--ptx-version X.Y`.
    pub ptx_version: Option<PtxVersion>,
    /// `--ptx-version=min`.
    pub ptx_version_min: bool,
}

/// Where to point at a module's header directive (or its first byte when absent).
fn header_span(h: &Header, which: &str) -> Span {
    match which {
        "version" => h.version.map(|v| v.span),
        "target" => h.target.as_ref().map(|t| t.span),
        _ => h.address_size.map(|(_, s)| s),
    }
    .unwrap_or_default()
}

/// Whether `opts` may take the output below an input's `.version` or `.target`,
/// which only what the modules use can allow ([`Needs`]).
pub(crate) fn may_lower(inputs: &Inputs, opts: &HeaderOptions) -> bool {
    let ms = inputs.modules;
    let version_below = opts.ptx_version.is_some_and(|want| {
        ms.iter().any(|m| {
            m.header
                .version
                .is_some_and(|v| (v.major, v.minor) > (want.major, want.minor))
        })
    });
    let target_below = opts.arch.is_some_and(|want| {
        ms.iter().any(|m| {
            let arch = m.header.target.as_ref().and_then(|t| t.arch);
            arch.is_some_and(|a| beyond(a.sm, a.suffix, want.sm(), want.suffix()))
        })
    });
    opts.ptx_version_min || version_below || target_below
}

/// Whether a module for `.target sm_{sm}{suffix}` is beyond `--arch
/// sm_{want}{want_suffix}`: the option's target does not have what the module's
/// offers, by the rule the instruction table's targets follow
/// ([`target_satisfies`]: a higher number, another architecture for `a`, another
/// family or a lower member of it for `f`). ptxas 12.9 assembles `redux.sync.min.f32`,
/// an sm_100f instruction, for `.target sm_103f` and `sm_103a`.
pub(crate) fn beyond(sm: u32, suffix: Option<u8>, want: u32, want_suffix: Option<u8>) -> bool {
    !target_satisfies(
        Arch::from_parts(want, want_suffix),
        Arch::from_parts(sm, suffix),
    )
}

/// The merged header for `opts`; `needs`, where the link scanned what its modules
/// use, lets `--ptx-version` and `--arch` go below the inputs' headers.
pub(crate) fn merge(
    inputs: &Inputs,
    opts: &HeaderOptions,
    debug_kept: &[bool],
    needs: Option<&Needs>,
) -> Result<MergedHeader, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let ms = inputs.modules;
    let note = |d: Diagnostic, mi: usize, which: &str, what: String| {
        d.with_note(ms[mi].file, header_span(&ms[mi].header, which), what)
    };

    // Address size: equal everywhere; a module without `.address_size` is 32-bit.
    let bits = |mi: usize| ms[mi].header.address_bits();
    let describe_bits = |mi: usize| match ms[mi].header.address_size {
        Some((b, _)) => format!("{b}-bit (.address_size {b})"),
        None => "32-bit (no .address_size)".to_string(),
    };
    if let Some(other) = (1..ms.len()).find(|&i| bits(i) != bits(0)) {
        let d = Diagnostic::global_error(
            Code::AddressSize,
            format!(
                "address size mismatch: {} is {}, {} is {}",
                inputs.file_name(0),
                describe_bits(0),
                inputs.file_name(other as u32),
                describe_bits(other)
            ),
        );
        let d = note(d, 0, "address", "address size from".into());
        let d = note(d, other, "address", "address size from".into());
        errors.push(d.with_help(
            "modules for different host platforms (32- and 64-bit) cannot be linked; \
             recompile them with the same pointer size",
        ));
    }

    // Target: the highest SM, or --arch; arch-specific targets only with the same SM.
    let arch_of = |mi: usize| ms[mi].header.target.as_ref().and_then(|t| t.arch);
    let mut sm = 0;
    let mut suffix: Option<u8> = None;
    let mut from = 0usize;
    for mi in 0..ms.len() {
        if let Some(a) = arch_of(mi) {
            let better = a.sm > sm || (a.sm == sm && suffix_rank(a.suffix) > suffix_rank(suffix));
            if better {
                sm = a.sm;
                suffix = a.suffix;
                from = mi;
            }
        }
    }
    let show = |sm: u32, s: Option<u8>| Arch::from_parts(sm, s).to_string();
    if let Some(arch) = &opts.arch {
        match (arch.sm(), arch.suffix()) {
            (sm, suffix) if !is_known_target(sm, suffix) => errors.push(Diagnostic::global_error(
                Code::Target,
                format!(
                    "target: --arch {arch} is not an architecture of the PTX ISA; \
                     known: {}",
                    known_targets().join(", ")
                ),
            )),
            (want, want_suffix) => {
                for mi in 0..ms.len() {
                    let Some(a) = arch_of(mi) else { continue };
                    if !beyond(a.sm, a.suffix, want, want_suffix) {
                        continue;
                    }
                    // What the module uses decides, where the link looked.
                    if let Some(n) = needs {
                        errors.extend(n.target_errors(inputs, mi, *arch));
                    } else {
                        let d = Diagnostic::global_error(
                            Code::Target,
                            format!(
                                "target: {} is for {}, which --arch {arch} cannot run",
                                inputs.file_name(mi as u32),
                                show(a.sm, a.suffix)
                            ),
                        );
                        errors.push(note(d, mi, "target", "target set at".into()));
                    }
                }
                sm = want;
                suffix = want_suffix;
            }
        }
    } else if suffix.is_some() {
        for mi in 0..ms.len() {
            if let Some(a) = arch_of(mi) {
                if a.sm != sm {
                    let d = Diagnostic::global_error(
                        Code::Target,
                        format!(
                            "target: {} is for the arch-specific {}, which does not combine with \
                         {} of {}",
                            inputs.file_name(from as u32),
                            show(sm, suffix),
                            show(a.sm, a.suffix),
                            inputs.file_name(mi as u32)
                        ),
                    );
                    let d = note(d, from, "target", "target set at".into());
                    errors.push(note(d, mi, "target", "target set at".into()));
                    break;
                }
            }
        }
    }

    // Version: the highest, at least what the target needs; or --ptx-version.
    let mut version = (0, 0);
    for m in ms {
        if let Some(v) = m.header.version {
            version = version.max((v.major, v.minor));
        }
    }
    let needed = min_version_for(sm, suffix);
    if let (true, Some(n)) = (opts.ptx_version_min, needs) {
        version = n.min_version(inputs, Arch::from_parts(sm, suffix));
    } else if let Some(want) = opts.ptx_version.map(|v| (v.major, v.minor)) {
        for (mi, m) in ms.iter().enumerate() {
            if let Some(v) = m.header.version {
                if (v.major, v.minor) <= want {
                    continue;
                }
                // What the module uses decides, where the link looked.
                if let Some(n) = needs {
                    errors.extend(n.version_errors(inputs, mi, want));
                } else {
                    let d = Diagnostic::global_error(
                        Code::Version,
                        format!(
                            "version: {} needs PTX ISA {}.{}, newer than --ptx-version {}.{}",
                            inputs.file_name(mi as u32),
                            v.major,
                            v.minor,
                            want.0,
                            want.1
                        ),
                    );
                    errors.push(note(d, mi, "version", "version set at".into()));
                }
            }
        }
        if want < needed {
            errors.push(Diagnostic::global_error(
                Code::Version,
                format!(
                    "version: --ptx-version {}.{} is too old for .target {} (needs {}.{})",
                    want.0,
                    want.1,
                    show(sm, suffix),
                    needed.0,
                    needed.1
                ),
            ));
        }
        version = want;
    } else {
        version = version.max(needed);
    }

    // Warp instructions without `.sync` (PTX before 6.0) are rejected by ptxas for
    // sm_70 and later from PTX ISA 6.4 on: no merged header accepts them there.
    if sm >= 70 && version >= (6, 4) {
        for (mi, m) in ms.iter().enumerate() {
            if let Some(op) = m.legacy_warp_op {
                let what = String::from_utf8_lossy(&inputs.src(mi as u32)[op.range()]).into_owned();
                let d = inputs
                    .error_at(
                        Code::Version,
                        mi as u32,
                        op,
                        format!(
                            "version: {} uses `{what}` without `.sync`, which ptxas rejects for \
                             .target sm_70 and later at PTX ISA 6.4 and later; the merged module \
                             needs .target {} and .version {}.{}",
                            inputs.file_name(mi as u32),
                            show(sm, suffix),
                            version.0,
                            version.1
                        ),
                    )
                    .with_help(
                        "recompile it for PTX ISA 6.0 or later (GCC: -mptx=6.0 or newer), \
                         or link it only with modules for targets below sm_70",
                    );
                errors.push(d);
            }
        }
    }

    // Texture mode: modules that use textures must agree.
    let mode = |mi: usize| {
        ms[mi]
            .header
            .target
            .as_ref()
            .and_then(|t| t.texmode)
            .unwrap_or(TexMode::Unified)
    };
    let tex_users: Vec<usize> = (0..ms.len()).filter(|&i| ms[i].uses_textures).collect();
    let mut independent = false;
    if let Some(&a) = tex_users.first() {
        independent = mode(a) == TexMode::Independent;
        if let Some(&b) = tex_users.iter().find(|&&b| mode(b) != mode(a)) {
            let name = |t| match t {
                TexMode::Unified => "texmode_unified",
                TexMode::Independent => "texmode_independent",
            };
            let d = Diagnostic::global_error(
                Code::Texmode,
                format!(
                    "texmode: {} uses textures under {} and {} under {}",
                    inputs.file_name(a as u32),
                    name(mode(a)),
                    inputs.file_name(b as u32),
                    name(mode(b))
                ),
            );
            let d = note(d, a, "target", "target set at".into());
            errors.push(note(d, b, "target", "target set at".into()));
        }
    }

    let any = |f: fn(&crate::ir::Target) -> bool| {
        ms.iter().any(|m| m.header.target.as_ref().is_some_and(f))
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(MergedHeader {
        version,
        arch: Arch::from_parts(sm, suffix),
        texmode_independent: independent,
        map_f64_to_f32: any(|t| t.map_f64_to_f32),
        debug: ms
            .iter()
            .zip(debug_kept)
            .any(|(m, &kept)| kept && m.header.target.as_ref().is_some_and(|t| t.debug)),
        address_size: bits(0),
    })
}

#[cfg(test)]
mod tests {
    use super::beyond;

    /// A module's target against `--arch`: the table's target rule, measured with
    /// ptxas 12.9 (an sm_100f instruction assembles for sm_103f and sm_103a, not for
    /// plain sm_103).
    #[test]
    fn which_targets_an_arch_option_covers() {
        let (a, f) = (Some(b'a'), Some(b'f'));
        for (sm, suffix, want, want_suffix, is_beyond) in [
            (80, None, 90, a, false),
            (90, a, 90, None, true),
            (90, a, 90, a, false),
            (100, f, 103, f, false),
            (100, f, 103, a, false),
            (100, f, 103, None, true),
            (103, f, 100, f, true),
            (100, f, 110, f, true),
            (100, a, 100, f, true),
            (100, f, 100, a, false),
        ] {
            assert_eq!(
                beyond(sm, suffix, want, want_suffix),
                is_beyond,
                "sm_{sm}{:?} under sm_{want}{:?}",
                suffix.map(char::from),
                want_suffix.map(char::from)
            );
        }
    }
}
