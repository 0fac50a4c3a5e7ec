//! Front-end tests over real producer fixtures: round trip, renaming, known answers,
//! located errors, and cross-checks against ptxas and producer markers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::support::*;
use ptxld::internal::describe::describe;
use ptxld::internal::input::Bytes;
use ptxld::internal::ir::{Linkage, Module, SymbolKind};
use ptxld::internal::parse::parse_module;
use ptxld::internal::source::{FileId, SourceFile};
use ptxld::internal::write::emit::write_module;

fn load(path: &Path) -> SourceFile {
    let bytes = std::fs::read(path).unwrap();
    SourceFile::new(path.display().to_string(), None, Bytes::Owned(bytes))
}

fn parse_clean(path: &Path) -> (SourceFile, Module) {
    let f = load(path);
    let p = parse_module(FileId(0), f.bytes());
    if !p.diagnostics.is_empty() {
        let mut map = ptxld::internal::source::SourceMap::new();
        map.add(load(path));
        let msgs: Vec<String> = p.diagnostics.iter().map(|d| d.render(&map)).collect();
        panic!(
            "{} does not parse cleanly:\n{}",
            path.display(),
            msgs.join("")
        );
    }
    (f, p.module)
}

#[test]
fn every_producer_has_fixtures() {
    for producer in ["llvm", "gcc", "nvrtc", "nvvm", "libdevice", "hand"] {
        assert!(
            !producer_fixtures(producer).is_empty(),
            "fixtures/ptx/{producer} has no .ptx files (scripts/regen-fixtures.sh makes them)"
        );
    }
}

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    let files = valid_fixtures();
    assert!(files.len() >= 20, "only {} fixtures found", files.len());
    for path in files {
        let (f, m) = parse_clean(&path);
        let mut out = Vec::new();
        write_module(&m, f.bytes(), |_| None, &mut out);
        assert!(out == f.bytes(), "{} does not round-trip", path.display());
        // The items and the trivia between them cover the file exactly.
        let mut pos = 0;
        for item in &m.items {
            let gap = &f.bytes()[pos..item.span.lo as usize];
            let only_trivia = ptxld::internal::lex::lex(FileId(0), gap).tokens.is_empty();
            assert!(
                only_trivia,
                "{}: tokens between items at {pos}",
                path.display()
            );
            pos = item.span.hi as usize;
        }
    }
}

#[test]
fn symbol_names_and_map_comments_are_what_the_source_says() {
    let mut map_comments = 0;
    for path in valid_fixtures() {
        let (f, m) = parse_clean(&path);
        for (id, s) in m.symbols_with_ids() {
            assert_eq!(
                m.symbol_name(id),
                f.slice(s.name),
                "{}: name copy of symbol {}",
                path.display(),
                id.0
            );
        }
        // Exactly the `//:` comments are kept.
        let all = ptxld::internal::lex::lex(FileId(0), f.bytes()).comments;
        let want: Vec<_> = all
            .into_iter()
            .filter(|&c| f.slice(c).starts_with(b"//:"))
            .collect();
        assert_eq!(m.map_comments, want, "{}", path.display());
        map_comments += want.len();
    }
    assert!(map_comments > 0, "no fixture has GCC `//:` map comments");
}

/// A call's operands carry the caller's `.param` declaration of their name in scope
/// (call blocks declare `param0` again and again, and a block's declarations end at
/// its `}`), or none; the linker rewrites that declaration's alignment without
/// reading the body again.
#[test]
fn call_operands_carry_their_param_declaration_in_scope() {
    let src = b".version 7.0\n.target sm_80\n.address_size 64\n\
.extern .func (.param .b32 r) g (.param .align 4 .b8 a[16]);\n\
.extern .func (.param .b32 r) h (.param .b8 a[16]);\n\
.visible .func f(.param .b32 in)\n{\n\
{\n.param .align 4 .b8 param0[16];\n.param .b32 retval0;\n\
call.uni (retval0), g, (param0);\n}\n\
{\n.param .b8 param0[16];\n.param .b32 retval0;\n\
call.uni (retval0), h, (param0);\n}\n\
call.uni (retval0), g, (in);\n\
ret;\n}\n";
    let p = parse_module(FileId(0), src);
    let text =
        |span: ptxld::internal::source::Span| std::str::from_utf8(&src[span.range()]).unwrap();
    let calls = &p.module.calls;
    assert_eq!(calls.len(), 3);
    // (declaration's line, its `.align`) for the argument and the return value.
    let line = |span: ptxld::internal::source::Span| {
        src[..span.lo as usize]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    };
    let decl = |o: &ptxld::internal::ir::CallOperand| {
        o.decl.as_ref().map(|d| {
            assert_eq!(text(d.name), text(o.span));
            (line(d.name), d.align.map(|(n, span)| (n, text(span))))
        })
    };
    assert_eq!(decl(&calls[0].args[0]), Some((9, Some((4, "4")))));
    assert_eq!(decl(&calls[0].rets[0]), Some((10, None)));
    assert_eq!(decl(&calls[1].args[0]), Some((14, None)));
    assert_eq!(decl(&calls[1].rets[0]), Some((15, None)));
    // `in` is the function's own `.param` parameter, no call-block `.param`, and
    // `retval0` is out of scope after the blocks: ptxas refuses both.
    assert_eq!(decl(&calls[2].args[0]), None);
    assert_eq!(decl(&calls[2].rets[0]), None);
    let errors: Vec<_> = p
        .diagnostics
        .iter()
        .map(|d| match d.location {
            Some(ptxld::Location::Source { span, .. }) => (d.code, text(span)),
            _ => panic!("{d:?}"),
        })
        .collect();
    let refused = ptxld::Code::CallArgument;
    assert_eq!(errors, [(refused, "retval0"), (refused, "in")]);
}

/// Renames every symbol (appending `_zq7`) and returns the renamed text.
fn rename_all(f: &SourceFile, m: &Module) -> Vec<u8> {
    let new_names: Vec<Vec<u8>> = m
        .symbols
        .iter()
        .map(|s| {
            let mut n = f.slice(s.name).to_vec();
            n.extend_from_slice(b"_zq7");
            n
        })
        .collect();
    let mut out = Vec::new();
    write_module(m, f.bytes(), |id| Some(&new_names[id.0 as usize]), &mut out);
    out
}

/// A listing with symbol names stripped of the `_zq7` suffix, and without columns
/// (renaming shifts them), so original and renamed modules compare equal.
fn shape(listing: &str) -> String {
    listing
        .lines()
        .map(|l| {
            l.split(' ')
                .map(|w| {
                    let w = w.strip_suffix("_zq7").unwrap_or(w);
                    match w.split_once('@') {
                        Some((k, pos)) => format!("{k}@{}", pos.split(':').next().unwrap()),
                        None => match w.split_once(':') {
                            Some((line, col)) if col.chars().all(|c| c.is_ascii_digit()) => {
                                line.to_string()
                            }
                            _ => w.to_string(),
                        },
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn renaming_every_symbol_keeps_the_module_shape() {
    for path in valid_fixtures() {
        let (f, m) = parse_clean(&path);
        let renamed = rename_all(&f, &m);
        let g = SourceFile::new("renamed".into(), None, Bytes::Owned(renamed));
        let p = parse_module(FileId(0), g.bytes());
        assert!(
            p.diagnostics.is_empty(),
            "{}: renamed output has errors",
            path.display()
        );
        assert_eq!(
            shape(&describe(&m, &f)),
            shape(&describe(&p.module, &g)),
            "{}",
            path.display()
        );
        // No identifier token still spells an old name where a reference was found.
        for r in &p.module.references {
            assert!(g.slice(r.span).ends_with(b"_zq7"), "{}", path.display());
        }
    }
}

fn ptxas_target(m: &Module, f: &SourceFile) -> String {
    match m.header.target.as_ref().and_then(|t| t.arch) {
        Some(a) if a.sm >= 52 => String::from_utf8_lossy(f.slice(a.span)).into_owned(),
        _ => "sm_52".to_string(),
    }
}

/// If the front end missed a reference, the renamed module refers to a name that no
/// longer exists and ptxas rejects it. This checks reference completeness against
/// NVIDIA's own assembler.
#[test]
fn ptxas_accepts_every_fixture_with_all_symbols_renamed() {
    let Some(ptxas) = ptxas() else { return };
    let dir = tempdir("renamed");
    let mut checked = 0;
    for path in valid_fixtures() {
        let (f, m) = parse_clean(&path);
        // Dynamic .extern .shared arrays, system calls and texture references bind by
        // name; renaming them is still fine for a relocatable (-c) assembly.
        let out = dir.join(path.file_name().unwrap());
        std::fs::write(&out, rename_all(&f, &m)).unwrap();
        let arch = ptxas_target(&m, &f);
        let res = Command::new(&ptxas)
            .args(["-c", &format!("-arch={arch}"), "-o", "/dev/null"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "ptxas rejects renamed {}:\n{}",
            path.display(),
            String::from_utf8_lossy(&res.stderr)
        );
        checked += 1;
    }
    assert!(checked >= 20);
}

pub fn tempdir(name: &str) -> std::path::PathBuf {
    scratch(&format!("frontend-{name}"))
}

#[test]
fn known_answers() {
    let dir = root().join("fixtures/known");
    let mut n = 0;
    for path in ptx_files(&dir) {
        let (f, m) = parse_clean(&path);
        let expected = std::fs::read_to_string(path.with_extension("expected")).unwrap();
        assert_eq!(describe(&m, &f), expected, "{}", path.display());
        n += 1;
    }
    assert!(n >= 2, "known-answer fixtures missing");
}

/// Each file in fixtures/ptx/hand/bad starts with `// expect: LINE:COL what`.
#[test]
fn malformed_inputs_report_located_errors() {
    let files = ptx_files(&root().join("fixtures/ptx/hand/bad"));
    assert!(files.len() >= 8, "bad fixtures missing");
    for path in files {
        let f = load(&path);
        let first = std::str::from_utf8(f.line_text(1)).unwrap().to_string();
        let want = first
            .strip_prefix("// expect: ")
            .unwrap_or_else(|| panic!("{}: no `// expect:` line", path.display()));
        let pos = want.split(' ').next().unwrap();
        let p = parse_module(FileId(0), f.bytes());
        assert!(!p.diagnostics.is_empty(), "{}: no error", path.display());
        let got: Vec<String> = p
            .diagnostics
            .iter()
            .map(|d| {
                let lc = f.line_col(d.span().unwrap().lo);
                format!("{}:{}", lc.line, lc.col)
            })
            .collect();
        assert_eq!(
            got[0],
            pos,
            "{}: first error at {} ({}), expected {want}",
            path.display(),
            got[0],
            p.diagnostics[0].message
        );
    }
}

#[test]
fn libdevice_defines_its_349_math_functions() {
    let files = producer_fixtures("libdevice");
    assert_eq!(files.len(), 1);
    let (f, m) = parse_clean(&files[0]);
    let nv: Vec<_> = m
        .symbols
        .iter()
        .filter(|s| {
            s.kind == SymbolKind::Function
                && s.linkage == Linkage::Visible
                && s.definition().is_some()
                && f.slice(s.name).starts_with(b"__nv_")
        })
        .collect();
    assert_eq!(nv.len(), 349);
    // Every `__nv_` call inside libdevice resolves to one of its own definitions.
    assert!(m
        .references
        .iter()
        .all(|r| m.symbol(r.symbol).definition().is_some()));
}

/// GCC marks every module-scope item with `// BEGIN [GLOBAL] FUNCTION|VAR DECL|DEF: name`:
/// an independent statement of what the module declares.
#[test]
fn gcc_markers_agree_with_the_symbol_table() {
    let files = producer_fixtures("gcc");
    assert!(!files.is_empty());
    for path in files {
        let (f, m) = parse_clean(&path);
        let text = String::from_utf8_lossy(f.bytes());
        let ours: BTreeMap<String, (SymbolKind, Linkage, bool)> = m
            .symbols
            .iter()
            .map(|s| {
                (
                    String::from_utf8_lossy(f.slice(s.name)).into_owned(),
                    (s.kind, s.linkage, s.definition().is_some()),
                )
            })
            .collect();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("// BEGIN ") else {
                continue;
            };
            if rest.starts_with("PREAMBLE") {
                continue;
            }
            let (what, name) = rest.split_once(": ").unwrap();
            let global = what.starts_with("GLOBAL ");
            let is_def = what.ends_with("DEF");
            let is_func = what.contains("FUNCTION");
            let (kind, linkage, defined) = ours
                .get(name)
                .unwrap_or_else(|| panic!("{}: `{name}` missing", path.display()));
            if is_func {
                assert!(
                    matches!(kind, SymbolKind::Function | SymbolKind::Entry),
                    "{name}"
                );
            } else {
                assert_eq!(*kind, SymbolKind::Variable, "{name}");
            }
            assert_eq!(
                global,
                *linkage != Linkage::Local,
                "{}: {name}",
                path.display()
            );
            if is_def {
                assert!(*defined, "{}: {name} should be defined", path.display());
            }
        }
    }
}

/// ptxas -c keeps every global and weak definition in the relocatable object's symbol
/// table; the front end must find exactly those.
#[test]
fn global_definitions_match_ptxas_object_symbols() {
    use object::{Object, ObjectSymbol, SymbolKind as K};
    let Some(ptxas) = ptxas() else { return };
    let dir = tempdir("elf");
    for path in valid_fixtures() {
        let (f, m) = parse_clean(&path);
        let cubin = dir.join(path.file_name().unwrap()).with_extension("cubin");
        let res = Command::new(&ptxas)
            .args(["-c", &format!("-arch={}", ptxas_target(&m, &f)), "-o"])
            .arg(&cubin)
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            res.status.success(),
            "{}",
            String::from_utf8_lossy(&res.stderr)
        );
        let data = std::fs::read(&cubin).unwrap();
        let elf = object::File::parse(&*data).unwrap();
        let theirs: BTreeSet<(String, bool)> = elf
            .symbols()
            // Variables have a CUDA-specific symbol type (STT_LOPROC), so select by
            // "defined in a section", not by kind.
            .filter(|s| {
                (s.section_index().is_some() || s.is_common()) && (s.is_global() || s.is_weak())
            })
            .filter(|s| !matches!(s.kind(), K::Section | K::File))
            .map(|s| (s.name().unwrap().to_string(), s.is_weak()))
            // ptxas adds its own weak helpers (`__cuda_sm70_shflsync_down` for old
            // `shfl` forms); those never appear in the source.
            .filter(|(name, _)| contains(f.bytes(), name.as_bytes()))
            .collect();
        let ours: BTreeSet<(String, bool)> = m
            .symbols
            .iter()
            .filter(|s| {
                matches!(
                    s.linkage,
                    Linkage::Visible | Linkage::Weak | Linkage::Common
                )
            })
            .filter(|s| s.is_defined())
            .filter(|s| s.kind != SymbolKind::BodyName && s.kind != SymbolKind::SectionLabel)
            .map(|s| {
                (
                    String::from_utf8_lossy(f.slice(s.name)).into_owned(),
                    s.linkage == Linkage::Weak,
                )
            })
            .collect();
        assert_eq!(ours, theirs, "{}", path.display());
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The module and diagnostics with tokens left out, for comparing a compact parse
/// with a full one.
fn without_tokens(mut p: ptxld::internal::parse::Parsed) -> String {
    p.module.release_tokens();
    format!("{:#?}\n{:#?}", p.module, p.diagnostics)
}

/// Register declarations are skipped without tokens only in their plain shape, and
/// labels only when they name no module-scope symbol: every other shape (and every
/// broken one) is parsed as a full parse does, diagnostics included. Each body is
/// checked both ways.
#[test]
fn register_declarations_and_labels_of_every_shape_parse_as_in_a_full_parse() {
    use ptxld::internal::parse::{parse_module_deferred, parse_module_into};
    let shapes = [
        ".reg .b32 %r<4>;",
        ".reg .pred %p;",
        ".reg .v2 .f32 %v<2>, %w;",
        ".reg\t.b64\t%rd< 12 >  ,\n  %x ;",
        ".reg .b32 %r<4>",
        ".reg .b32 %r<4>; .reg .b32 g;",
        ".reg .b32 g;",
        ".reg .b32 %r<04>;",
        ".reg .b32 %r<4x>;",
        ".reg .b32 %r<>;",
        ".reg .b32 %r<4>>;",
        ".reg .b32 %r = 1;",
        ".reg .align 4 .b32 %r;",
        ".reg %r;",
        ".reg;",
        ".reg .b32 %r[4];",
        ".reg .b32 %r, ;",
        ".reg .b32 % r;",
        ".reg .b32 %r /* c */;",
        ".reg .b32 %r; // c",
        ".reg .b32 %r\u{e9};",
        ".reg.b32 %r;",
        ".regs .b32 %r;",
        ".reg .b32%r;",
        ".reg .attribute(.managed) .b32 %r;",
        "L: .reg .b32 %r;",
        "g: .reg .b32 %r;",
        "g:",
        "$L__BB0_1: @%p bra $L__BB0_1;",
        "@%p L: ret;",
    ];
    for shape in shapes {
        for module_scope in ["", ".global .u32 %q;\n"] {
            let src = format!(
                ".version 7.0\n.target sm_70\n.address_size 64\n{module_scope}\
                 .global .u32 g;\n.visible .func f()\n{{\n\t{shape}\n\tld.global.u32 %r1, [g];\n\tret;\n}}\n"
            );
            let full = without_tokens(parse_module_into(FileId(0), src.as_bytes(), Vec::new()));
            let compact = without_tokens(parse_module_deferred(
                FileId(0),
                src.as_bytes(),
                Vec::new(),
                false,
            ));
            assert!(full == compact, "{src}: compact parse differs");
        }
    }
}

/// Instructions that name no module-scope symbol are passed over without tokens, a
/// run of them at a time; every other shape (a guard or operand that names a symbol,
/// `call`, a label, literals other than plain decimals and exact hex floats, broken
/// ones) must parse as a full parse does, diagnostics included, alone, in a run, and
/// at the end of the input.
#[test]
fn instructions_of_every_shape_parse_as_in_a_full_parse() {
    use ptxld::internal::parse::{parse_module_deferred, parse_module_into};
    let shapes = [
        "mov.u32 %r1, %r2;",
        "add.s32 %r1, %r2, 4;",
        "ld.global.u32 %r1, [g];",
        "ld.global.u32 %r1, [g+4];",
        "ld.param.u32 %r1, [p];",
        "ld.param.u32 %r1, [p_param_0+8];",
        "mov.f32 %f1, 0f3F800000;",
        "mov.f64 %fd1, 0d3FF0000000000000;",
        "mov.f64 %fd1, 0D3ff0000000000000;",
        "mov.f32 %f1, 0f3F80000;",
        "mov.f32 %f1, 0f3F8000000;",
        "mov.f32 %f1, 0f3F80000G;",
        "mov.f32 %f1, 0f3F800000x;",
        "mov.f32 %f1, 1.5;",
        "mov.u32 %r1, 08;",
        "mov.u32 %r1, 0x1F;",
        "mov.u32 %r1, 0;",
        "mov.u32 %r1, 10u;",
        "mov.u32 %r1, -1;",
        "mov.u32 %r1, %tid.x;",
        "mov.u32 %r1, % r2;",
        "mov.u32 %r1, .5;",
        "mov.u32 %r1 %r2",
        "mov.b64 {%r1, %r2}, %rd1;",
        "mov.b64 %rd1, {%r1, %r2};",
        "mov.u32 %r1, %r2; // c",
        "mov.u32 /* c */ %r1, %r2;",
        "mov.u32 %r1, \"s\";",
        "mov.u32 %r1, %r2\u{e9};",
        "ld.global.L2::128B.u32 %r1, [%rd1];",
        "@%p bra $L__BB0_1;",
        "@!%p bra $L__BB0_1;",
        "@ %p bra $L__BB0_1;",
        "@ ! %p ret;",
        "@p ret;",
        "@g ret;",
        "@!g ret;",
        "@%p g: ret;",
        "@%p1 call f;",
        "@/* c */%p ret;",
        "@%p;",
        "@;",
        "@%p 5;",
        "@%p ld.global.u32 %r1, [g];",
        "call f;",
        "call.uni (r), f, (p);",
        "call.uni (r), %rd1, (p), proto;",
        "shfl.idx.b32 %r1, %r2, 0, 31;",
        "vote.any.pred %p1, %p2;",
        "@%p L: ret;",
        "shfl.sync.idx.b32 %r1, %r2, 0, 31, -1;",
        "vote.all.pred %p1, %p2;",
        "$L__BB0_1:",
        "$L__BB0_1 : mov.u32 %r1, %r2;",
        "g: mov.u32 %r1, %r2;",
        "L: ret;",
        "bra.uni $L__BB0_1;",
        "bra.uni g;",
        "mov.u64 %rd1, f;",
        "mov.u64 %rd1, g_other;",
        "_x.u32 %r1;",
        "$x %r1;",
        "ret",
    ];
    for shape in shapes {
        for module_scope in ["", ".global .u32 %q;\n"] {
            for body in [
                format!("\t{shape}\n"),
                format!("\tmov.u32 %r1, 7;\n\tadd.s32 %r1, %r1, 0f00000000;\n\t{shape}\n\tret;\n\tret;\n"),
                format!("\t{shape}\n\t{shape}\n\t.reg .b32 %s;\n\t{shape}\n"),
            ] {
                let src = format!(
                    ".version 7.0\n.target sm_70\n.address_size 64\n{module_scope}\
                     .global .u32 g;\n.extern .func f();\n.visible .func h(.param .b32 p)\n\
                     {{\n\t.reg .b32 %r<3>;\n{body}\tld.global.u32 %r1, [g];\n\tret;\n}}\n"
                );
                let full =
                    without_tokens(parse_module_into(FileId(0), src.as_bytes(), Vec::new()));
                let compact =
                    without_tokens(parse_module_deferred(FileId(0), src.as_bytes(), Vec::new(), false));
                assert!(full == compact, "{src}: compact parse differs");
                // The same text ending inside the body, right after the shape.
                let end = src.rfind(shape).unwrap() + shape.len();
                let cut = &src.as_bytes()[..end];
                let full = without_tokens(parse_module_into(FileId(0), cut, Vec::new()));
                let compact = without_tokens(parse_module_deferred(FileId(0), cut, Vec::new(), false));
                assert!(full == compact, "{src}: compact parse of the cut text differs");
            }
        }
    }
}

/// Compact lexing of bodies (the linker's front end) must build exactly the module a
/// full parse builds, for valid and invalid input alike: every fixture (real producer
/// output and the hand-written bad inputs), and every fixture with a body cut short,
/// its bytes corrupted, or a `%`-name declared at module scope.
#[test]
fn compact_parse_builds_the_same_module_as_a_full_parse() {
    use ptxld::internal::parse::{parse_module_deferred, parse_module_into};
    let files = ptx_files(&root().join("fixtures"));
    assert!(files.len() >= 100, "only {} fixtures", files.len());
    let check = |name: &str, src: &[u8]| {
        let full = without_tokens(parse_module_into(FileId(0), src, Vec::new()));
        let compact = without_tokens(parse_module_deferred(FileId(0), src, Vec::new(), false));
        assert!(full == compact, "{name}: compact parse differs");
    };
    let mut compacted = 0;
    for path in &files {
        let src = std::fs::read(path).unwrap();
        let name = path.display().to_string();
        check(&name, &src);
        compacted += ptxld::internal::lex::lex_bodies_into(
            FileId(0),
            &src,
            Vec::new(),
            ptxld::internal::lex::Bodies::Deferred,
        )
        .compacted
        .len();
        // Variants that exercise every way back to a full parse.
        let Some(body) = src.windows(2).position(|w| w == b"\n{") else {
            continue;
        };
        let cut = &src[..body + (src.len() - body) / 2];
        check(&format!("{name} cut in a body"), cut);
        let mut bad = src.clone();
        for i in (body..bad.len()).step_by(997) {
            bad[i] = [b':', b'"', 0xC3, b'}', b'%'][i % 5];
        }
        check(&format!("{name} corrupted"), &bad);
        let mut percent = src.clone();
        percent.extend_from_slice(b"\n.global .u32 %r1;\n");
        check(&format!("{name} with a %-name"), &percent);
    }
    assert!(
        compacted > 500,
        "only {compacted} bodies were lexed compactly"
    );
}
