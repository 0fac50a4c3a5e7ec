//! Build-system behaviour: archives with GNU ld's member selection, groups,
//! --whole-archive, -u, -L/-l/-l:, response files, depfiles, --verbose and
//! --fatal-warnings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

/// A module defining `defines` (functions returning their index) and calling each of
/// `calls` from the first definition (or from a kernel when it defines nothing).
fn module(defines: &[&str], calls: &[&str]) -> String {
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    for c in calls {
        s += &format!(".extern .func (.param .b32 r) {c} (.param .b32 a);\n");
    }
    let body = |name: &str| {
        let mut b = String::from("{\n\t.reg .b32 %r<2>;\n\tmov.b32 %r1, 1;\n");
        for c in calls {
            b += &format!(
                "\t{{\n\t.param .b32 a0;\n\tst.param.b32 [a0], %r1;\n\t.param .b32 r0;\n\t\
                 call.uni (r0), {c}, (a0);\n\tld.param.b32 %r1, [r0];\n\t}}\n"
            );
        }
        if name.is_empty() {
            b += "\tret;\n}\n";
        } else {
            b += "\tst.param.b32 [r], %r1;\n\tret;\n}\n";
        }
        b
    };
    if defines.is_empty() {
        s += ".visible .entry main_k ()\n";
        s += &body("");
    }
    for (i, d) in defines.iter().enumerate() {
        s += &format!(".visible .func (.param .b32 r) {d} (.param .b32 a)\n");
        s += &body(if i == 0 { d } else { "" })
            .replace("\tret;\n}\n", "\tst.param.b32 [r], %r1;\n\tret;\n}\n");
    }
    s
}

struct Fixture {
    dir: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Fixture {
        Fixture {
            dir: scratch(&format!("bs-{name}")),
        }
    }
    fn file(&self, name: &str, text: &str) -> &Self {
        std::fs::write(self.dir.join(name), text).unwrap();
        self
    }
    fn ar(&self, archive: &str, members: &[&str]) -> &Self {
        let r = Command::new("ar")
            .arg("rcs")
            .arg(archive)
            .args(members)
            .current_dir(&self.dir)
            .output()
            .expect("ar (binutils)");
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        self
    }
    fn run(&self, args: &[&str]) -> Output {
        ptxld().current_dir(&self.dir).args(args).run()
    }
    /// Whole-program ptxas must accept `name` (skipped loudly without ptxas).
    fn assemble(&self, name: &str) {
        self.assemble_for(name, "sm_80");
    }

    fn assemble_for(&self, name: &str, arch: &str) {
        assert_ptxas_accepts(&self.dir, name, arch);
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }
}

/// main needs f; a defines f and needs g; b defines g and needs h; c defines h;
/// d defines unused.
fn standard(name: &str) -> Fixture {
    let f = Fixture::new(name);
    f.file("main.ptx", &module(&[], &["f"]))
        .file("a.ptx", &module(&["f"], &["g"]))
        .file("b.ptx", &module(&["g"], &["h"]))
        .file("c.ptx", &module(&["h"], &[]))
        .file("d.ptx", &module(&["unused"], &[]));
    f
}

#[test]
fn archive_members_are_loaded_on_demand_and_rescanned() {
    let f = standard("demand");
    f.ar("libx.a", &["d.ptx", "c.ptx", "b.ptx", "a.ptx"]);
    let o = f.run(&["--verbose", "-o", "out.ptx", "main.ptx", "libx.a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = f.read("out.ptx");
    for name in ["f", "g", "h"] {
        assert!(out.contains(&format!(
            ".visible .func (.param .b32 r) {name} (.param .b32 a)\n{{"
        )));
    }
    assert!(!out.contains("unused"), "d.ptx is never needed");
    let log = stderr(&o);
    assert!(
        log.contains("ptxld: libx.a(a.ptx): loaded for f (referenced by main.ptx) from libx.a"),
        "{log}"
    );
    assert!(
        log.contains("libx.a(b.ptx): loaded for g (referenced by libx.a(a.ptx))"),
        "{log}"
    );
    assert!(
        log.contains("libx.a(c.ptx): loaded for h (referenced by libx.a(b.ptx))"),
        "{log}"
    );
    f.assemble("out.ptx");
}

#[test]
fn an_archive_before_its_users_contributes_nothing() {
    let f = standard("order");
    f.ar("libx.a", &["a.ptx", "b.ptx", "c.ptx"]);
    let o = f.run(&["-o", "out.ptx", "libx.a", "main.ptx"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("error: undefined symbol: f"),
        "{}",
        stderr(&o)
    );
    assert!(!f.dir.join("out.ptx").exists());
}

#[test]
fn groups_resolve_mutual_dependencies_between_archives() {
    let f = standard("group");
    f.ar("liba.a", &["a.ptx", "c.ptx"]).ar("libb.a", &["b.ptx"]);
    // a (liba) needs g (libb), which needs h (liba again).
    let o = f.run(&["-o", "out.ptx", "main.ptx", "liba.a", "libb.a"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("error: undefined symbol: h"),
        "{}",
        stderr(&o)
    );
    let o = f.run(&[
        "-o",
        "out.ptx",
        "main.ptx",
        "--start-group",
        "liba.a",
        "libb.a",
        "--end-group",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = f.run(&["-o", "out2.ptx", "main.ptx", "-(", "liba.a", "libb.a", "-)"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(f.read("out.ptx"), f.read("out2.ptx"));
    for bad in [
        &["--start-group", "liba.a"][..],
        &["liba.a", "--end-group"][..],
    ] {
        let mut args = vec!["-o", "x.ptx", "main.ptx"];
        args.extend_from_slice(bad);
        let o = f.run(&args);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("group"), "{}", stderr(&o));
    }
}

#[test]
fn whole_archive_and_forced_undefined_symbols() {
    let f = standard("whole");
    f.ar("libx.a", &["a.ptx", "b.ptx", "c.ptx", "d.ptx"]);
    let o = f.run(&[
        "-o",
        "w.ptx",
        "main.ptx",
        "--whole-archive",
        "libx.a",
        "--no-whole-archive",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f.read("w.ptx").contains(") unused ("));
    let o = f.run(&["-u", "unused", "-o", "u.ptx", "main.ptx", "libx.a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f.read("u.ptx").contains(") unused ("));
    let o = f.run(&["--undefined=unused", "-o", "u2.ptx", "main.ptx", "libx.a"]);
    assert!(o.status.success());
    assert_eq!(f.read("u.ptx"), f.read("u2.ptx"));
}

#[test]
fn library_search_with_dash_l() {
    let f = standard("search");
    std::fs::create_dir_all(f.dir.join("lib dir")).unwrap();
    f.ar("lib dir/libx.a", &["a.ptx", "b.ptx", "c.ptx"]);
    let o = f.run(&["-o", "l.ptx", "main.ptx", "-L", "lib dir", "-lx"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = f.run(&["-o", "l2.ptx", "main.ptx", "-Llib dir", "-l", ":libx.a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(f.read("l.ptx"), f.read("l2.ptx"));
    let o = f.run(&[
        "-o",
        "l3.ptx",
        "main.ptx",
        "-L",
        "nowhere",
        "-L",
        "lib dir",
        "-lmissing",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "error: unable to find library -lmissing (libmissing.a); searched: nowhere, lib dir"
        ),
        "{}",
        stderr(&o)
    );
}

#[test]
fn response_files_with_gnu_quoting_and_nesting() {
    let f = standard("rsp");
    f.ar("libx.a", &["a.ptx", "b.ptx", "c.ptx"]);
    f.file("inner.rsp", "'libx.a'\n");
    f.file("outer.rsp", "-o \"out put.ptx\"   main.ptx @inner.rsp\n");
    let o = f.run(&["@outer.rsp"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f.dir.join("out put.ptx").exists());
    f.file("loop.rsp", "@loop.rsp\n");
    let o = f.run(&["@loop.rsp"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "ptxld: error: response file loop.rsp: more than 2000 response files expanded"
        ),
        "{}",
        stderr(&o)
    );
    let o = f.run(&["@absent.rsp"]);
    assert!(stderr(&o).contains("cannot read response file absent.rsp"));
}

#[test]
fn dependency_file_names_every_file_read() {
    let f = standard("dep");
    std::fs::create_dir_all(f.dir.join("my libs")).unwrap();
    f.ar("my libs/libx.a", &["a.ptx", "b.ptx", "c.ptx"]);
    f.file("args.rsp", "main.ptx\n");
    let o = f.run(&[
        "--dependency-file",
        "out.d",
        "-o",
        "out$1.ptx",
        "@args.rsp",
        "-L",
        "my libs",
        "-lx",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        f.read("out.d"),
        "out$$1.ptx: \\\n  args.rsp \\\n  main.ptx \\\n  my\\ libs/libx.a\n\
         \nargs.rsp:\n\nmain.ptx:\n\nmy\\ libs/libx.a:\n"
    );
    // A failed link writes no depfile and no output.
    let o = f.run(&["--dependency-file=bad.d", "-o", "bad.ptx", "libx-missing.a"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!f.dir.join("bad.d").exists() && !f.dir.join("bad.ptx").exists());
}

#[test]
fn fatal_warnings_turn_warnings_into_errors() {
    let f = Fixture::new("fatal");
    let mut text = module(&["solo"], &[]);
    text.insert_str(0, "// caf\u{e9}\n");
    f.file("w.ptx", &text);
    let o = f.run(&["-o", "ok.ptx", "w.ptx"]);
    assert!(o.status.success());
    assert!(
        stderr(&o).contains("warning: w.ptx:1:7: non-ASCII byte"),
        "{}",
        stderr(&o)
    );
    let o = f.run(&["--fatal-warnings", "-o", "no.ptx", "w.ptx"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("warnings are errors (--fatal-warnings)"));
    assert!(!f.dir.join("no.ptx").exists());
}

/// Real GCC output and Debian's newlib `libc.a` for nvptx: `memcpy` comes from the
/// archive member `lib_a-memcpy.o`, and the result assembles as a whole program.
#[test]
fn gcc_module_links_against_newlib() {
    let accel = Path::new("/usr/lib/gcc/x86_64-linux-gnu/12/accel/nvptx-none");
    if !accel.join("libc.a").exists() {
        skip(
            "gcc_module_links_against_newlib",
            &format!("{} missing; install gcc-12-offload-nvptx", accel.display()),
        );
        return;
    }
    let f = Fixture::new("newlib");
    let module = root().join("fixtures/archives/g05_structs.ptx");
    let o = f.run(&[
        "--verbose",
        "-o",
        "out.ptx",
        module.to_str().unwrap(),
        "-L",
        accel.to_str().unwrap(),
        "-lc",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("libc.a(lib_a-memcpy.o): loaded for memcpy"),
        "{}",
        stderr(&o)
    );
    f.assemble("out.ptx");
}

#[test]
fn archives_of_containers_and_of_nul_separated_modules() {
    let f = standard("containers");
    // A fatbin member (written by ptxld itself) and a GCC-style member holding two
    // modules separated by a NUL byte.
    let o = f.run(&["-o", "a.fatbin", "a.ptx", "-u", "f", "--emit", "fatbin"]);
    assert_eq!(o.status.code(), Some(1), "a alone leaves g undefined");
    let o = f.run(&["-o", "c.fatbin", "c.ptx"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let two = format!("{}\0{}", f.read("a.ptx"), f.read("b.ptx"));
    f.file("ab.o", &two);
    f.ar("libmix.a", &["ab.o", "c.fatbin"]);
    let o = f.run(&["--verbose", "-o", "out.ptx", "main.ptx", "libmix.a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let log = stderr(&o);
    assert!(log.contains("libmix.a(ab.o#1): loaded for f"), "{log}");
    assert!(log.contains("libmix.a(ab.o#2): loaded for g"), "{log}");
    assert!(log.contains("libmix.a(c.fatbin): loaded for h"), "{log}");
}

/// `Build::ptx_version_min`: an NVRTC-style `.version 8.8` input whose code needs
/// nothing newer is written at the lowest version the target takes.
#[test]
fn build_api_writes_the_lowest_version_the_link_needs() {
    let dir = root().join("fixtures/link/version-max");
    let out_dir = scratch("build-api-min");
    let out = ptxld::Build::new()
        .file(dir.join("1-v60.ptx"))
        .file(dir.join("2-v88.ptx"))
        .arch("sm_75")
        .ptx_version_min()
        .out_dir(&out_dir)
        .cargo_metadata(false)
        .try_compile("lowest")
        .unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.starts_with(".version 6.3\n.target sm_75\n"), "{text}");
    assert_ptxas_accepts(&out_dir, "lowest.ptx", "sm_75");
}

/// The library API used by build scripts: rerun-if lines, OUT_DIR, typed errors.
#[test]
fn build_api_in_a_temporary_out_dir() {
    let f = standard("api");
    let out = ptxld::Build::new()
        .file(f.dir.join("main.ptx"))
        .file(f.dir.join("a.ptx"))
        .file(f.dir.join("b.ptx"))
        .file(f.dir.join("c.ptx"))
        .out_dir(&f.dir)
        .cargo_metadata(false)
        .try_compile("api")
        .unwrap();
    assert_eq!(out, f.dir.join("api.ptx"));
    assert!(f
        .read("api.ptx")
        .starts_with(".version 7.0\n.target sm_80\n"));
    let err = ptxld::Build::new()
        .file(f.dir.join("main.ptx"))
        .out_dir(&f.dir)
        .cargo_metadata(false)
        .try_compile("broken")
        .unwrap_err();
    match &err {
        ptxld::BuildError::Link { failure, .. } => {
            let d = failure.report.diagnostics().next().unwrap();
            assert_eq!(
                (d.code, d.message.as_str()),
                (
                    ptxld::internal::diag::Code::UndefinedSymbol,
                    "undefined symbol: f"
                )
            );
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "ptxld could not link broken.ptx (1 error) from:\n  {}\nerror: undefined symbol: f",
            f.dir.join("main.ptx").display()
        )),
        "{text}"
    );
    let obj = ptxld::Build::new()
        .files([
            f.dir.join("main.ptx"),
            f.dir.join("a.ptx"),
            f.dir.join("b.ptx"),
            f.dir.join("c.ptx"),
        ])
        .emit(ptxld::OutputKind::Obj)
        .out_dir(&f.dir)
        .cargo_metadata(false)
        .compile("my-kernels");
    assert_eq!(obj, f.dir.join("my-kernels.o"));
    let bytes = std::fs::read(&obj).unwrap();
    assert!(bytes.windows(22).any(|w| w == b"my_kernels_fatbin_data"));
    // The object is archived for cargo to link, with a symbol index.
    let archive = std::fs::read(f.dir.join("libmy-kernels.a")).unwrap();
    let archive = object::read::archive::ArchiveFile::parse(&*archive).unwrap();
    let symbols: Vec<Vec<u8>> = archive
        .symbols()
        .unwrap()
        .unwrap()
        .map(|s| s.unwrap().name().to_vec())
        .collect();
    assert!(
        symbols.contains(&b"my_kernels_fatbin_wrapper".to_vec()),
        "{symbols:?}"
    );
}

/// `Build`'s methods are the command line's options: `flag` adds any option, the
/// last of two contradicting ones wins, `symbol` names the object's symbols, and a
/// wrong option fails with the command line's message.
#[test]
fn build_api_options_are_the_command_lines() {
    let f = standard("build-options");
    let files = [
        f.dir.join("main.ptx"),
        f.dir.join("a.ptx"),
        f.dir.join("b.ptx"),
        f.dir.join("c.ptx"),
    ];
    let build = || {
        let mut b = ptxld::Build::new();
        b.files(&files).out_dir(&f.dir).cargo_metadata(false);
        b
    };
    let map = f.dir.join("flag.map");
    build()
        .flag(&format!("-Map={}", map.display()))
        .flags(["--ptx-version=7.8", "--arch=sm_90"])
        .compile("flagged");
    assert!(f
        .read("flagged.ptx")
        .starts_with(".version 7.8\n.target sm_90\n"));
    assert!(std::fs::read_to_string(&map).unwrap().contains("main.ptx"));
    // A flag after the builder's own option wins, as on a command line.
    let out = build()
        .emit(ptxld::OutputKind::Fatbin)
        .flag("--emit=obj")
        .symbol("kern")
        .compile("late");
    assert_eq!(out, f.dir.join("late.o"));
    let bytes = std::fs::read(&out).unwrap();
    assert!(bytes.windows(19).any(|w| w == b"kern_fatbin_wrapper"));
    for (flag, says) in [
        ("--no-such-option", "--no-such-option"),
        ("-lm", "-l"),
        ("extra.ptx", "inputs"),
        ("--arch=sm_8x", "sm_8x"),
    ] {
        match build().flag(flag).try_compile("wrong") {
            Err(ptxld::BuildError::Options { message, options }) => {
                assert!(message.contains(says), "{flag}: {message}");
                assert_eq!(options.last().map(String::as_str), Some(flag));
            }
            other => panic!("{flag}: {other:?}"),
        }
    }
    // -l and -L are the builder's: a library found in a directory.
    f.ar("libabc.a", &["a.ptx", "b.ptx", "c.ptx"]);
    ptxld::Build::new()
        .file(f.dir.join("main.ptx"))
        .lib_dir(&f.dir)
        .lib("abc")
        .out_dir(&f.dir)
        .cargo_metadata(false)
        .compile("from-lib");
    let out = f.read("from-lib.ptx");
    for name in ["f", "g", "h"] {
        assert!(
            out.contains(&format!(".visible .func (.param .b32 r) {name} (")),
            "{out}"
        );
    }
}

/// Dead-code removal that would keep nothing fails, in the build API and on the
/// command line, naming the fix; `undefined` (-u) keeps a function.
#[test]
fn gc_that_keeps_nothing_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let lib = d.path().join("lib.ptx");
    std::fs::write(
        &lib,
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .func f()\n{\n\tret;\n}\n",
    )
    .unwrap();
    let build = || {
        let mut b = ptxld::Build::new();
        b.file(&lib)
            .gc(true)
            .out_dir(d.path())
            .cargo_metadata(false);
        b
    };
    match build().try_compile("empty") {
        Err(ptxld::BuildError::Link { failure, .. }) => {
            let e = failure.report.diagnostics().next().unwrap();
            assert_eq!(e.code, ptxld::Code::GcKeepsNothing);
            assert!(e.help.as_deref().unwrap().contains("--export NAME"));
        }
        other => panic!("{other:?}"),
    }
    assert!(!d.path().join("empty.ptx").exists());
    let kept = build().undefined("f").compile("kept");
    assert!(std::fs::read_to_string(kept)
        .unwrap()
        .contains(".visible .func f()"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ptxld"))
        .arg("--gc-sections")
        .arg(&lib)
        .arg("-o")
        .arg(d.path().join("cli.ptx"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: dead-code removal keeps nothing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("help: keep what the host uses with --export NAME"),
        "{stderr}"
    );
    assert!(!d.path().join("cli.ptx").exists());
}

/// The in-memory API: bytes in, bytes out, nothing touches the disk.
#[test]
fn link_in_memory() {
    use ptxld::internal::driver::{link_in_memory, Job, MemoryInput};
    let inputs: Vec<MemoryInput> = [("main", module(&[], &["f"])), ("lib", module(&["f"], &[]))]
        .into_iter()
        .map(|(n, t)| MemoryInput {
            name: n.to_string(),
            bytes: t.into_bytes(),
        })
        .collect();
    let out = link_in_memory(&inputs, &Job::new("mem.ptx")).unwrap();
    let text = String::from_utf8(out.into_bytes()).unwrap();
    assert!(text.contains(".visible .func (.param .b32 r) f (.param .b32 a)\n{"));
    let err = link_in_memory(&inputs[..1], &Job::new("mem.ptx")).unwrap_err();
    assert!(err.to_string().contains("undefined symbol: f"));
    // The library refuses a target the PTX ISA does not have, as the command line does.
    let mut job = Job::new("mem.ptx");
    job.archs = vec!["sm_999".parse().unwrap()];
    let err = link_in_memory(&inputs, &job).unwrap_err();
    assert!(
        err.to_string()
            .contains("target: --arch sm_999 is not an architecture of the PTX ISA; known: sm_10"),
        "{err}"
    );
    job.archs = vec!["sm_100f".parse().unwrap()];
    assert!(link_in_memory(&inputs, &job).is_ok());
}

/// --gc-sections keeps kernels and exports and what they reach; undefined symbols that
/// only removed code uses are no longer errors; the output assembles.
#[test]
fn gc_sections_keeps_what_kernels_and_exports_reach() {
    let f = standard("gc");
    // `dead` calls an undefined function; nothing reaches `dead`.
    f.file("dead.ptx", &module(&["dead"], &["nowhere"]));
    let all = ["main.ptx", "a.ptx", "b.ptx", "c.ptx", "d.ptx", "dead.ptx"];
    let mut args = vec!["-o", "full.ptx"];
    args.extend(all);
    let o = f.run(&args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "without gc the undefined call is an error"
    );
    assert!(stderr(&o).contains("undefined symbol: nowhere"));
    let mut args = vec!["--gc-sections", "--print-gc-sections", "-o", "gc.ptx"];
    args.extend(all);
    let o = f.run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "ptxld: removing unused function unused (d.ptx:4:32)\n\
         ptxld: removing unused function dead (dead.ptx:5:32)\n"
    );
    let out = f.read("gc.ptx");
    assert!(out.contains(") h (") && !out.contains(") unused (") && !out.contains("nowhere"));
    let mut args = vec!["--gc-sections", "--export", "unused", "-o", "gc2.ptx"];
    args.extend(all);
    let o = f.run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(f.read("gc2.ptx").contains(") unused ("));
    f.assemble("gc.ptx");
    f.assemble("gc2.ptx");
}

/// BSD `ar` format (macOS, FreeBSD): long names stored as `#1/LEN` before the data.
#[test]
fn bsd_archives_are_read_too() {
    let f = standard("bsd");
    let mut ar = b"!<arch>\n".to_vec();
    for name in ["a_long_member_name.ptx", "b.ptx", "c.ptx"] {
        let src = if name.starts_with('a') { "a.ptx" } else { name };
        let data = std::fs::read(f.dir.join(src)).unwrap();
        let mut body = name.as_bytes().to_vec();
        body.extend_from_slice(&data);
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("#1/{}", name.len()),
            0,
            0,
            0,
            644,
            body.len()
        );
        assert_eq!(header.len(), 60);
        ar.extend_from_slice(header.as_bytes());
        ar.extend_from_slice(&body);
        if ar.len() % 2 == 1 {
            ar.push(b'\n');
        }
    }
    std::fs::write(f.dir.join("libbsd.a"), ar).unwrap();
    let o = f.run(&["--verbose", "-o", "out.ptx", "main.ptx", "libbsd.a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("libbsd.a(a_long_member_name.ptx): loaded for f"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn why_live_shows_the_chain_from_a_kernel() {
    let f = standard("whylive");
    let o = f.run(&[
        "--gc-sections",
        "--why-live",
        "h",
        "--why-live",
        "unused",
        "-o",
        "out.ptx",
        "main.ptx",
        "a.ptx",
        "b.ptx",
        "c.ptx",
        "d.ptx",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "ptxld: h is live:\n\
         >>> kernel main_k (main.ptx:5:17)\n\
         >>> uses f (a.ptx:5:32)\n\
         >>> uses g (b.ptx:5:32)\n\
         >>> uses h (c.ptx:4:32)\n\
         ptxld: unused is not live: --gc-sections removed it\n"
    );
}

/// `--print-map` / `-Map` and `--trace-symbol`, exact text, on link cases whose
/// story is known: the first weak copy wins; commons merge into the largest.
#[test]
fn link_map_and_symbol_trace() {
    let case = |name: &str| root().join("fixtures/link").join(name);
    let o = ptxld()
        .current_dir(case("weak-first-wins-func"))
        .args(
            // Not `-o -`: the map and the output would share standard output.
            [
                "--print-map",
                "-y",
                "wf",
                "-o",
                "/dev/null",
                "1-a.ptx",
                "2-b.ptx",
            ],
        )
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let map_start = stdout.find("# ptxld link map").expect("map on stdout");
    let map_end = stdout
        .find("# needs: ")
        .expect("the map ends with what the link needs");
    assert_eq!(
        &stdout[map_end..],
        "# needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code needs \
         PTX ISA 3.1 and .target sm_20 or higher\n    PTX ISA 3.1 because of `.weak` at \
         1-a.ptx:7:1\n    .target sm_20 because of `st.param.b32` at 1-a.ptx:13:2\n"
    );
    assert_eq!(
        &stdout[map_start..map_end],
        "# ptxld link map: output symbol, kind, linkage, origin; how it was chosen\n\
         res_a  variable  .visible  1-a.ptx:6:32  4 bytes, .align 4\n\
         wf  function  .weak  1-a.ptx:9:30\n    \
         beat 2-b.ptx:9:30 (.weak): the first .weak definition in link order wins\n\
         k_a  kernel  .visible  1-a.ptx:17:17\n\
         res_b  variable  .visible  2-b.ptx:6:32  4 bytes, .align 4\n\
         k_b  kernel  .visible  2-b.ptx:17:17\n"
    );
    assert_eq!(
        stderr(&o),
        "ptxld: 1-a.ptx:7:30: declaration of wf (.weak function)\n\
         ptxld: 1-a.ptx:9:30: definition of wf (.weak function)\n\
         ptxld: 1-a.ptx:22:14: reference to wf (call)\n\
         ptxld: 1-a.ptx: wf: bound to the definition at 1-a.ptx:9:30\n\
         ptxld: 2-b.ptx:7:30: declaration of wf (.weak function)\n\
         ptxld: 2-b.ptx:9:30: definition of wf (.weak function)\n\
         ptxld: 2-b.ptx:22:14: reference to wf (call)\n\
         ptxld: 2-b.ptx: wf: bound to the definition at 1-a.ptx:9:30\n"
    );
    let dir = case("common-sizes-largest");
    let trace_dir = scratch("map-trace");
    let (map, out) = (trace_dir.join("map.txt"), trace_dir.join("out.ptx"));
    let o = ptxld()
        .current_dir(&dir)
        .args([
            "-Map",
            map.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "1-small.ptx",
            "2-large.ptx",
            "3-mid.ptx",
        ])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&map).unwrap(),
        "# ptxld link map: output symbol, kind, linkage, origin; how it was chosen\n\
         cg  variable  .common  2-large.ptx:6:31  32 bytes, .align 8\n    \
         merged 1-small.ptx:6:30 (.common, 16 bytes, .align 4)\n    \
         merged 3-mid.ptx:6:31 (.common, 24 bytes, .align 4)\n\
         k_a  kernel  .visible  1-small.ptx:8:17\n\
         k_b  kernel  .visible  2-large.ptx:8:17\n\
         k_c  kernel  .visible  3-mid.ptx:8:17\n\
         # needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code needs \
         PTX ISA 5.0 and any .target\n    PTX ISA 5.0 because of `.common` at 1-small.ptx:6:1\n"
    );
    // A trace still explains a failed link.
    let o = ptxld()
        .current_dir(case("err-undef-func-called"))
        .args([
            "-y",
            "ext_f",
            "-y",
            "nothing",
            "-o",
            out.to_str().unwrap(),
            "1-caller.ptx",
            "2-other.ptx",
        ])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with(
            "ptxld: 1-caller.ptx:6:32: declaration of ext_f (.extern function)\n\
             ptxld: 1-caller.ptx:18:14: reference to ext_f (call)\n\
             ptxld: 1-caller.ptx: ext_f: undefined: no input defines it\n\
             ptxld: nothing: no input declares it\n\
             ptxld: error: undefined symbol: ext_f\n"
        ),
        "{}",
        stderr(&o)
    );
}

/// Indirect calls keep every address-taken function; managed variables are roots.
#[test]
fn gc_sections_with_function_pointers_and_managed_variables() {
    let f = Fixture::new("gcfp");
    let fnptr = root().join("fixtures/ptx/nvrtc/rt_fnptr.ptx");
    let o = f.run(&["--gc-sections", "-o", "fp.ptx", fnptr.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = f.read("fp.ptx");
    assert!(out.contains(".callprototype"));
    assert!(
        out.contains(".attribute(.managed)"),
        "managed variables are kept"
    );
    f.assemble("fp.ptx");
}

/// `--strip-debug` removes DWARF, `.file`, `.loc` and `, debug`; without it, the full
/// DWARF of several modules is merged into one block per section, silently (dwarf.rs
/// decodes what ptxas makes of it).
#[test]
fn strip_debug_and_merged_multi_module_dwarf() {
    let dir = root().join("fixtures/link/real-all-producers-with-dwarf");
    let inputs = case_inputs("real-all-producers-with-dwarf");
    let f = Fixture::new("strip");
    let out = f.dir.join("s.ptx");
    let mut args = vec!["--strip-debug", "-o", out.to_str().unwrap()];
    args.extend(inputs.iter().map(String::as_str));
    let o = ptxld().current_dir(&dir).args(&args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("debug"), "{}", stderr(&o));
    let text = f.read("s.ptx");
    assert!(text.starts_with(".version 8.8\n.target sm_90\n.address_size 64\n"));
    for gone in [".section", ".loc", ".file", ", debug"] {
        let left = text.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with(&format!("{gone} "))
                || l.starts_with(&format!("{gone}\t"))
                || (gone == ", debug" && l.contains(gone))
        });
        assert!(!left, "{gone} left in the output");
    }
    let out2 = f.dir.join("k.ptx");
    let mut args = vec!["-o", out2.to_str().unwrap()];
    args.extend(inputs.iter().map(String::as_str));
    let o = ptxld().current_dir(&dir).args(&args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("debug"), "{}", stderr(&o));
    let kept = f.read("k.ptx");
    assert!(kept.contains("\t.loc\t"), "line information is kept");
    assert!(kept.starts_with(".version 8.8\n.target sm_90, debug\n"));
    for section in [".debug_abbrev", ".debug_info", ".debug_loc", ".debug_str"] {
        let blocks = kept.matches(&format!("\t.section\t{section}\n")).count();
        assert_eq!(blocks, 1, "one {section} block");
    }
    f.assemble_for("s.ptx", "sm_90");
    f.assemble_for("k.ptx", "sm_90");
}

/// `Build::fold_identical`: two NVRTC programs with the same library code link once
/// folded, and are duplicates without it.
#[test]
fn build_api_folds_identical_definitions() {
    let dir = scratch("build-api-fold");
    let nvrtc = root().join("fixtures/ptx/nvrtc");
    let build = |fold: bool| {
        ptxld::Build::new()
            .file(nvrtc.join("rt_prog_a.ptx"))
            .file(nvrtc.join("rt_prog_b.ptx"))
            .fold_identical(fold)
            .out_dir(&dir)
            .cargo_metadata(false)
            .try_compile("progs")
    };
    let err = build(false).unwrap_err();
    assert!(
        err.to_string()
            .contains("error: duplicate symbol: lib_calls"),
        "{err}"
    );
    let out = build(true).unwrap();
    let text = std::fs::read_to_string(out).unwrap();
    // One definition of each: lib_poly's body and lib_calls once.
    assert_eq!(text.matches("[lib_poly_param_0]").count(), 1, "{text}");
    assert_eq!(text.matches(".u32 lib_calls;").count(), 1, "{text}");
    assert!(text.contains(".entry prog_a_kernel") && text.contains(".entry prog_b_kernel"));
}
