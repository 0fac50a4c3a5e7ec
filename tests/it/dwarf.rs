//! Merged debug information, end to end: real `-g` output of LLVM and NVRTC (with GCC
//! and NVRTC line information and modules without any) linked by ptxld, assembled by
//! `ptxas -g`, and the cubin's DWARF decoded with gimli after its relocations are
//! applied (docs/linking.md, "Debug information"; research/dwarf-merge/REPORT.md).
//!
//! Every link checks that the cubin holds one compilation unit per input with DWARF, in
//! link order, each with its input's name, abbreviation offset 0 and `decl_file` /
//! `call_file` naming its own source; that the one line table lists every input's
//! files and has a sequence for every function with `.loc`; and that `ptxas -g`
//! generates the same code for the debug modules' functions as for each module alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

use crate::support::*;

fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures/ptx").join(rel)
}

/// A fresh scratch directory for one test.
fn scratch(name: &str) -> PathBuf {
    crate::support::scratch(&format!("dwarf-{name}"))
}

/// What the inputs say the output must hold.
#[derive(Default)]
struct Expected {
    /// `DW_AT_name` of each input's compilation unit, in link order.
    units: Vec<String>,
    /// File names (the part after the last `/`) of every `.file` that a `.loc` uses.
    files: BTreeSet<String>,
    /// Functions with a `.loc` in their body.
    functions_with_loc: BTreeSet<String>,
    /// Inputs with DWARF (whose code is compared with the module assembled alone).
    debug_inputs: Vec<PathBuf>,
}

fn base_name(quoted: &str) -> String {
    let name = quoted.trim_matches('"');
    name.rsplit('/').next().unwrap_or(name).to_string()
}

/// Reads what `inputs` promise: `units[i]` is the CU name of the i-th input, `None` for
/// an input without `.debug_info`.
fn expected(inputs: &[(PathBuf, Option<&str>)]) -> Expected {
    use ptxld::internal::ir::ItemKind;
    let mut e = Expected::default();
    for (path, unit) in inputs {
        let src = std::fs::read(path).unwrap();
        let m =
            ptxld::internal::parse::parse_module(ptxld::internal::source::FileId(0), &src).module;
        let text = |s: ptxld::internal::source::Span| {
            String::from_utf8_lossy(&src[s.range()]).into_owned()
        };
        let has_info = m
            .items
            .iter()
            .any(|i| matches!(&i.kind, ItemKind::Section(s) if text(s.name) == ".debug_info"));
        assert_eq!(has_info, unit.is_some(), "{}: .debug_info", path.display());
        if let Some(u) = unit {
            e.units.push(u.to_string());
            e.debug_inputs.push(path.clone());
        }
        let used: BTreeSet<u32> = m.locs.files.iter().map(|&(_, f)| f).collect();
        for item in &m.items {
            match &item.kind {
                ItemKind::File(f) if used.contains(&f.index) => {
                    e.files.insert(base_name(&text(f.name)));
                }
                ItemKind::Function(f) => {
                    let Some(body) = &f.body else { continue };
                    let has_loc = m
                        .locs
                        .directives
                        .iter()
                        .any(|d| body.span.lo <= d.lo && d.hi <= body.span.hi);
                    if has_loc {
                        e.functions_with_loc.insert(text(f.name));
                    }
                }
                _ => {}
            }
        }
    }
    e
}

/// The debug sections of a cubin with its relocations applied, and what else the
/// checks need from it.
struct Cubin {
    sections: BTreeMap<String, Vec<u8>>,
    /// Symbols the `.debug_line` relocations name: one `DW_LNE_set_address` per
    /// sequence, so every function with a sequence.
    line_functions: BTreeSet<String>,
    /// Size of every `.text.<function>` section.
    text_sizes: BTreeMap<String, u64>,
}

/// Reads `path`, a relocatable cubin, applying the `R_CUDA_32` (1) and `R_CUDA_64` (2)
/// relocations of its debug sections (readelf and llvm-dwarfdump do not know
/// EM_CUDA's relocation types, REPORT.md "How to verify in a test").
fn read_cubin(path: &Path) -> Cubin {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut c = Cubin {
        sections: BTreeMap::new(),
        line_functions: BTreeSet::new(),
        text_sizes: BTreeMap::new(),
    };
    for s in file.sections() {
        let name = s.name().unwrap().to_string();
        if let Some(f) = name.strip_prefix(".text.") {
            c.text_sizes.insert(f.to_string(), s.size());
        }
        // The sections gimli reads here (`.debug_frame` has other relocation types).
        let read = [
            ".debug_info",
            ".debug_abbrev",
            ".debug_line",
            ".debug_str",
            ".debug_loc",
        ];
        if !read.contains(&name.as_str()) {
            continue;
        }
        let mut bytes = s.data().unwrap().to_vec();
        for (at, r) in s.relocations() {
            let RelocationFlags::Elf { r_type } = r.flags() else {
                panic!("{name}: not an ELF relocation")
            };
            let width = match r_type {
                1 => 4,
                2 => 8,
                t => panic!("{name}: relocation type {t} (only R_CUDA_32/64 expected)"),
            };
            let RelocationTarget::Symbol(sym) = r.target() else {
                panic!("{name}: relocation without a symbol")
            };
            let sym = file.symbol_by_index(sym).unwrap();
            let at = at as usize;
            let place = &mut bytes[at..at + width];
            let addend = if r.has_implicit_addend() {
                place
                    .iter()
                    .rev()
                    .fold(0i64, |v, &b| (v << 8) | i64::from(b))
            } else {
                r.addend()
            };
            let value = (sym.address() as i64).wrapping_add(addend) as u64;
            place.copy_from_slice(&value.to_le_bytes()[..width]);
            if name == ".debug_line" && width == 8 {
                let target = match sym.name().unwrap() {
                    "" => file
                        .section_by_index(sym.section_index().unwrap())
                        .unwrap()
                        .name()
                        .unwrap()
                        .trim_start_matches(".text.")
                        .to_string(),
                    n => n.to_string(),
                };
                c.line_functions.insert(target);
            }
        }
        c.sections.insert(name, bytes);
    }
    c
}

/// What the decoded DWARF holds.
#[derive(Debug, Default)]
struct Decoded {
    /// Per unit: name, abbreviation offset, and the file names its `decl_file` and
    /// `call_file` attributes resolve to, with how many there are of each.
    units: Vec<(String, usize, BTreeSet<String>, usize, usize)>,
    /// Per unit: every DIE and attribute, with the values that legitimately differ
    /// between a module assembled alone and merged normalized (see [`dump`]).
    dumps: Vec<Vec<String>>,
    /// File names of the line table (the part after the last `/`).
    line_files: BTreeSet<String>,
    /// Sequences in the line table.
    sequences: usize,
}

type Reader<'a> = gimli::EndianSlice<'a, gimli::LittleEndian>;

fn decode(c: &Cubin) -> Decoded {
    use gimli::{EndianSlice, LittleEndian};
    let empty: &[u8] = &[];
    let dwarf = gimli::Dwarf::load(|id| {
        let data = c.sections.get(id.name()).map_or(empty, |v| v.as_slice());
        Ok::<_, gimli::Error>(EndianSlice::new(data, LittleEndian))
    })
    .unwrap();
    let string = |unit: &gimli::Unit<Reader>, v: gimli::AttributeValue<Reader>| {
        dwarf
            .attr_string(unit, v)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    };
    let mut d = Decoded::default();
    let mut units = dwarf.units();
    while let Some(header) = units.next().unwrap() {
        let abbrev_at = header.debug_abbrev_offset().0;
        let unit = dwarf.unit(header).unwrap();
        let lines = unit
            .line_program
            .as_ref()
            .expect("a unit without line table");
        let file_name = |index: u64| -> String {
            let f = lines
                .header()
                .file(index)
                .unwrap_or_else(|| panic!("file index {index} is not in the line table"));
            string(&unit, f.path_name())
        };
        let mut name = String::new();
        let mut files = BTreeSet::new();
        let (mut decl, mut call) = (0, 0);
        let mut entries = unit.entries();
        while let Some((_, e)) = entries.next_dfs().unwrap() {
            if e.tag() == gimli::DW_TAG_compile_unit {
                name = string(&unit, e.attr_value(gimli::DW_AT_name).unwrap().unwrap());
            }
            for (attr, n) in [
                (gimli::DW_AT_decl_file, &mut decl),
                (gimli::DW_AT_call_file, &mut call),
            ] {
                match e.attr_value(attr).unwrap() {
                    Some(gimli::AttributeValue::FileIndex(i)) => {
                        files.insert(file_name(i));
                        *n += 1;
                    }
                    None => {}
                    Some(v) => panic!("{attr}: {v:?}"),
                }
            }
        }
        d.units.push((name, abbrev_at, files, decl, call));
        d.dumps.push(dump(&dwarf, &unit));
    }
    // ptxas generates one line table for the module, at offset 0; every unit uses it.
    let program = dwarf
        .debug_line
        .program(gimli::DebugLineOffset(0), 8, None, None)
        .unwrap();
    for f in program.header().file_names() {
        let name = match f.path_name() {
            gimli::AttributeValue::String(s) => s.to_string_lossy().into_owned(),
            gimli::AttributeValue::DebugStrRef(o) => dwarf
                .debug_str
                .get_str(o)
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            v => panic!("file name {v:?}"),
        };
        d.line_files.insert(base_name(&name));
    }
    let mut rows = program.rows();
    while let Some((_, row)) = rows.next_row().unwrap() {
        if row.end_sequence() {
            d.sequences += 1;
        }
    }
    d
}

/// `DW_OP_addr` at the start of an expression: the address of a global variable,
/// which moves when other modules' variables come first; compared as zero.
fn normalized(expr: &[u8]) -> Vec<u8> {
    let mut e = expr.to_vec();
    if e.len() == 9 && e[0] == gimli::DW_OP_addr.0 {
        e[1..].fill(0);
    }
    e
}

/// One line per DIE and per attribute of `unit`: its depth and tag, or its name and
/// value. Values are resolved where the merge changes their encoding but not their
/// meaning: strings, file indices (to file names), unit-relative references (to the
/// target's position among the DIEs), location lists (to their entries).
fn dump(dwarf: &gimli::Dwarf<Reader>, unit: &gimli::Unit<Reader>) -> Vec<String> {
    use gimli::AttributeValue as V;
    let mut order = BTreeMap::new();
    let mut entries = unit.entries();
    while let Some((_, e)) = entries.next_dfs().unwrap() {
        order.insert(e.offset().0, order.len());
    }
    let lines = unit.line_program.as_ref().unwrap().header();
    let mut out = Vec::new();
    let mut depth = 0;
    let mut entries = unit.entries();
    while let Some((delta, e)) = entries.next_dfs().unwrap() {
        depth += delta;
        out.push(format!("{depth} {}", e.tag()));
        let mut attrs = e.attrs();
        while let Some(a) = attrs.next().unwrap() {
            let value = match a.value() {
                V::String(_) | V::DebugStrRef(_) => dwarf
                    .attr_string(unit, a.value())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                V::FileIndex(i) => {
                    let f = lines.file(i).expect("file index beyond the line table");
                    let name = dwarf.attr_string(unit, f.path_name()).unwrap();
                    base_name(&name.to_string_lossy())
                }
                V::UnitRef(o) => format!("DIE #{}", order[&o.0]),
                V::Exprloc(e) => format!("{:?}", normalized(e.0.slice())),
                V::Block(b) => format!("{:?}", normalized(b.slice())),
                V::LocationListsRef(o) => {
                    let mut list = dwarf.locations(unit, o).unwrap();
                    let mut shown = Vec::new();
                    while let Some(l) = list.next().unwrap() {
                        shown.push(format!(
                            "[{:#x},{:#x}) {:?}",
                            l.range.begin,
                            l.range.end,
                            normalized(l.data.0.slice())
                        ));
                    }
                    shown.join(" ")
                }
                V::DebugLineRef(_) => continue,
                v => format!("{v:?}"),
            };
            out.push(format!("  {} {value}", a.name()));
        }
    }
    out
}

/// Runs `ptxas args...` in `dir`; panics with its output on failure.
fn ptxas_ok(ptxas: &Path, dir: &Path, args: &[&str]) {
    let r = Command::new(ptxas)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        r.status.success(),
        "ptxas {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&r.stderr)
    );
}

/// Links `inputs` (fixture paths and the CU name of those with DWARF) for `arch` and
/// checks the merged debug information; returns the scratch directory and the decoded
/// DWARF for further checks (`None` when ptxas is missing: skipped loudly).
fn link_and_check(
    name: &str,
    inputs: &[(PathBuf, Option<&str>)],
    arch: &str,
) -> Option<(PathBuf, Decoded)> {
    let dir = scratch(name);
    let want = expected(inputs);
    let mut args = vec!["-o".to_string(), "out.ptx".to_string()];
    args.extend(inputs.iter().map(|(p, _)| p.to_str().unwrap().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = ptxld().current_dir(&dir).args(&args).run();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        !stderr.contains("debug information"),
        "a module's DWARF was dropped: {stderr}"
    );
    let text = std::fs::read_to_string(dir.join("out.ptx")).unwrap();
    let blocks = |s: &str| text.matches(&format!("\t.section\t{s}\n")).count();
    assert_eq!(blocks(".debug_info"), 1, "one .debug_info block");
    assert_eq!(blocks(".debug_abbrev"), 1, "one .debug_abbrev block");
    let target = text.lines().nth(1).unwrap_or_default();
    assert!(target.ends_with(", debug"), "{target}");

    let ptxas = ptxas()?;
    ptxas_ok(
        &ptxas,
        &dir,
        &[&format!("-arch={arch}"), "-g", "-o", "/dev/null", "out.ptx"],
    );
    ptxas_ok(
        &ptxas,
        &dir,
        &[
            &format!("-arch={arch}"),
            "-g",
            "-c",
            "-o",
            "out.cubin",
            "out.ptx",
        ],
    );
    let cubin = read_cubin(&dir.join("out.cubin"));
    let d = decode(&cubin);

    let names: Vec<&str> = d.units.iter().map(|u| u.0.as_str()).collect();
    assert_eq!(
        names, want.units,
        "one compilation unit per input with DWARF, in link order"
    );
    for (unit, abbrev_at, files, decl, _) in &d.units {
        assert_eq!(
            *abbrev_at, 0,
            "{unit}: every unit uses the table at .debug_abbrev+0"
        );
        assert!(*decl > 0, "{unit}: no DW_AT_decl_file at all");
        assert!(
            files
                .iter()
                .all(|f| f.ends_with(unit.trim_start_matches('/'))),
            "{unit}: decl_file/call_file name other inputs' files: {files:?}"
        );
    }
    let missing: Vec<&String> = want.files.difference(&d.line_files).collect();
    assert!(
        missing.is_empty(),
        "files missing from the line table: {missing:?} (has {:?})",
        d.line_files
    );
    let unsequenced: Vec<&String> = want
        .functions_with_loc
        .difference(&cubin.line_functions)
        .collect();
    assert!(
        unsequenced.is_empty(),
        "functions without a line sequence: {unsequenced:?}"
    );
    assert!(
        d.sequences >= want.functions_with_loc.len(),
        "{} sequences",
        d.sequences
    );

    // Each unit must say what it says when its module is assembled alone (ptxas
    // rewrites some of it, e.g. `DW_OP_addr __local_depotN` into frame offsets). And
    // ptxas -g generates code from the DWARF too (REPORT.md, "silent corruption"): a
    // debug module's functions must come out as when it is assembled alone.
    for (k, input) in want.debug_inputs.iter().enumerate() {
        let alone = format!("alone{k}.cubin");
        let input = input.to_str().unwrap();
        ptxas_ok(
            &ptxas,
            &dir,
            &[&format!("-arch={arch}"), "-g", "-c", "-o", &alone, input],
        );
        let alone = read_cubin(&dir.join(&alone));
        let single = decode(&alone);
        assert_eq!(single.dumps.len(), 1, "{input}: one unit alone");
        if let Some(diff) = first_difference(&single.dumps[0], &d.dumps[k]) {
            panic!("{input}: its unit differs from the module assembled alone: {diff}");
        }
        for (f, size) in alone.text_sizes {
            assert_eq!(cubin.text_sizes.get(&f), Some(&size), "{input}: .text.{f}");
        }
    }
    Some((dir, d))
}

/// The first line where `alone` and `merged` differ, with some context.
fn first_difference(alone: &[String], merged: &[String]) -> Option<String> {
    let i = (0..alone.len().max(merged.len())).find(|&i| alone.get(i) != merged.get(i))?;
    let from = i.saturating_sub(3);
    Some(format!(
        "line {i}\nalone:  {:?}\nmerged: {:?}",
        alone.get(from..=i.min(alone.len().saturating_sub(1))),
        merged.get(from..=i.min(merged.len().saturating_sub(1)))
    ))
}

fn inputs(list: &[(&str, Option<&'static str>)]) -> Vec<(PathBuf, Option<&'static str>)> {
    list.iter().map(|&(p, u)| (fixture(p), u)).collect()
}

/// clang -gdwarf-2 and -gdwarf-4 modules (different abbreviation tables, the same
/// `__local_depotN` and `Lfunc_begin0` names, an inlined function) with GCC code
/// without debug information.
#[test]
fn llvm_pair() {
    let set = inputs(&[
        ("llvm/c_debug.ptx", Some("c_debug.c")),
        ("llvm/c_debug2.ptx", Some("c_debug2.c")),
        ("gcc/g_math.ptx", None),
    ]);
    if let Some((_, d)) = link_and_check("llvm", &set, "sm_80") {
        let calls: usize = d.units.iter().map(|u| u.4).sum();
        assert!(
            calls > 0,
            "c_debug2's inlined dbg2_sq has a DW_AT_call_file: {d:?}"
        );
    }
}

/// A debug section that names a label its body no longer has (`Ltmp7:` deleted from
/// c_debug's `dbg_mix`): ptxas 12.9 assembles the module alone, with `-c` and
/// whole-program, leaving an undefined local symbol; so ptxld links it with a warning,
/// renames the name apart like every debug label, and the merged DWARF assembles and
/// describes each unit as the module alone does.
#[test]
fn debug_label_without_definition_links_with_a_warning() {
    let dir = scratch("dangling-input");
    let good = std::fs::read_to_string(fixture("llvm/c_debug.ptx")).unwrap();
    assert_eq!(good.matches("\nLtmp7:\n").count(), 1, "c_debug.ptx changed");
    let bad = dir.join("c_debug.ptx");
    std::fs::write(&bad, good.replace("\nLtmp7:\n", "\n")).unwrap();
    let o = ptxld()
        .current_dir(&dir)
        .args(["--syntax-only", "c_debug.ptx"])
        .run();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: c_debug.ptx:600:6: debug section refers to undefined label `Ltmp7`"
        ),
        "{stderr}"
    );
    let set = vec![
        (bad, Some("c_debug.c")),
        (fixture("llvm/c_debug2.ptx"), Some("c_debug2.c")),
        (fixture("gcc/g_math.ptx"), None),
    ];
    if let Some((out, _)) = link_and_check("dangling", &set, "sm_80") {
        let text = std::fs::read_to_string(out.join("out.ptx")).unwrap();
        assert!(text.contains(".b64 Ltmp7$m0\n"), "renamed apart");
        assert!(!text.contains("Ltmp7$m0:"), "and defined nowhere");
        assert!(text.contains("Ltmp7$m1:"), "c_debug2's label is its own");
    }
}

/// NVRTC -G modules (location lists, `.debug_macinfo`, `__local_depot0` in both) with
/// the modules that define what they call.
#[test]
fn nvrtc_pair() {
    let set = inputs(&[
        ("nvrtc/rt_debug.ptx", Some("rt_debug.cu")),
        ("nvrtc/rt_debug2.ptx", Some("rt_debug2.cu")),
        ("nvrtc/rt_lib.ptx", None),
        ("nvvm/nv_common.ptx", None),
        ("gcc/g_math.ptx", None),
        ("libdevice/libdevice.sm70.ptx", None),
    ]);
    link_and_check("nvrtc", &set, "sm_80");
}

/// Both producers interleaved, after an NVRTC -lineinfo module (its `.debug_str` and
/// `.file`s come first, so every debug module's file numbers move).
#[test]
fn llvm_and_nvrtc_mixed_after_lineinfo() {
    let set = inputs(&[
        ("nvrtc/rt_lineinfo.ptx", None),
        ("nvrtc/rt_debug2.ptx", Some("rt_debug2.cu")),
        ("llvm/c_debug.ptx", Some("c_debug.c")),
        ("nvrtc/rt_debug.ptx", Some("rt_debug.cu")),
        ("llvm/cu_lineinfo.ptx", None),
        ("llvm/c_debug2.ptx", Some("c_debug2.c")),
        ("llvm/cu_lib.ptx", None),
        ("nvrtc/rt_lib.ptx", None),
        ("nvvm/nv_common.ptx", None),
        ("gcc/g_math.ptx", None),
        ("libdevice/libdevice.sm70.ptx", None),
    ]);
    link_and_check("mixed", &set, "sm_80");
}

/// A debug module after GCC line information (`.file 1 "<dummy>"`, `.file 2`) and a
/// module without any: `debug` stays, and c_debug's file 1 becomes file 3.
#[test]
fn debug_after_line_info_and_no_debug_info() {
    let set = inputs(&[
        ("gcc/g_debug.ptx", None),
        ("gcc/g_math.ptx", None),
        ("llvm/c_debug.ptx", Some("c_debug.c")),
    ]);
    if let Some((dir, _)) = link_and_check("gcc-line", &set, "sm_80") {
        // The renumbering the unit's decl_file values had to follow.
        let text = std::fs::read_to_string(dir.join("out.ptx")).unwrap();
        assert!(
            text.contains(".file\t3 \"fixtures/src/llvm/c_debug.c\""),
            "{text}"
        );
    }
}

/// Every producer, two of them with full DWARF (fixtures/link/real-all-producers-with-dwarf).
#[test]
fn all_producers_with_dwarf() {
    let units = [
        ("llvm/c_debug.ptx", "c_debug.c"),
        ("nvrtc/rt_debug.ptx", "rt_debug.cu"),
    ];
    let set: Vec<(PathBuf, Option<&str>)> = case_inputs("real-all-producers-with-dwarf")
        .into_iter()
        .map(|p| {
            let unit = units.iter().find(|(f, _)| p.ends_with(f)).map(|&(_, u)| u);
            (PathBuf::from(p), unit)
        })
        .collect();
    link_and_check("all", &set, "sm_90");
}

/// A module whose DWARF ptxld cannot merge (here: DWARF 5) loses it with a warning
/// naming the file; the other modules keep theirs. Alone, it loses `debug` too.
#[test]
fn undecodable_dwarf_is_dropped_with_a_warning() {
    let dir = scratch("drop");
    let good = std::fs::read_to_string(fixture("llvm/c_debug.ptx")).unwrap();
    let header = "\n.b8 2\n.b8 0\n.b32 .debug_abbrev\n";
    assert_eq!(good.matches(header).count(), 1, "c_debug.ptx changed");
    std::fs::write(
        dir.join("v5.ptx"),
        good.replace(header, "\n.b8 5\n.b8 0\n.b32 .debug_abbrev\n"),
    )
    .unwrap();
    let g_math = fixture("gcc/g_math.ptx");
    let c_debug2 = fixture("llvm/c_debug2.ptx");
    let run = |out: &str, extra: &[&Path]| {
        let mut args = vec!["-o", out, "v5.ptx"];
        args.extend(extra.iter().map(|p| p.to_str().unwrap()));
        let o = ptxld().current_dir(&dir).args(&args).run();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{stderr}");
        assert!(
            stderr.contains("warning: v5.ptx:") && stderr.contains("the debug information of v5.ptx is dropped: ptxld cannot merge DWARF version 5"),
            "{stderr}"
        );
        std::fs::read_to_string(dir.join(out)).unwrap()
    };
    let with = run("with.ptx", &[&c_debug2, &g_math]);
    assert_eq!(with.matches("\t.section\t.debug_info\n").count(), 1);
    assert!(with.lines().nth(1).unwrap().ends_with(", debug"));
    let alone = run("alone.ptx", &[&g_math]);
    assert!(!alone.contains(".section"), "no debug section is left");
    assert!(!alone.contains(", debug"), "no `debug` without DWARF");
    assert!(alone.contains("\t.loc\t"), "line information is kept");

    let Some(ptxas) = ptxas() else { return };
    ptxas_ok(
        &ptxas,
        &dir,
        &["-arch=sm_80", "-g", "-c", "-o", "with.cubin", "with.ptx"],
    );
    ptxas_ok(
        &ptxas,
        &dir,
        &["-arch=sm_80", "-g", "-c", "-o", "alone.cubin", "alone.ptx"],
    );
    let c = read_cubin(&dir.join("with.cubin"));
    let d = decode(&c);
    let names: Vec<&str> = d.units.iter().map(|u| u.0.as_str()).collect();
    assert_eq!(names, ["c_debug2.c"]);
    for f in ["dbg_len2", "dbg_mix", "dbg2_sum", "dbg2_apply"] {
        assert!(c.line_functions.contains(f), "{f} keeps its line sequence");
    }
}

/// `--gc-sections` that removes code drops all debug sections and `debug` (the DWARF
/// may describe what was removed) with a warning; line information stays.
#[test]
fn gc_sections_that_remove_code_drop_the_dwarf() {
    let dir = scratch("gc");
    let paths = ["llvm/c_debug.ptx", "llvm/c_debug2.ptx", "gcc/g_math.ptx"].map(fixture);
    let mut args = vec!["--gc-sections", "--export", "dbg2_apply", "-o", "gc.ptx"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    let o = ptxld().current_dir(&dir).args(&args).run();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("debug sections are dropped because dead-code removal removed code"),
        "{stderr}"
    );
    let text = std::fs::read_to_string(dir.join("gc.ptx")).unwrap();
    assert!(!text.contains(".section"), "no debug section is left");
    assert!(!text.contains(", debug"));
    assert!(text.contains("\t.loc\t"), "line information is kept");
    if let Some(ptxas) = ptxas() {
        ptxas_ok(
            &ptxas,
            &dir,
            &["-arch=sm_80", "-g", "-o", "/dev/null", "gc.ptx"],
        );
    }
}
