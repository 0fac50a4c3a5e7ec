//! The `ptxld` binary as a build system runs it: exit codes, diagnostics, limits,
//! determinism across thread counts.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::*;

fn tmp(name: &str, contents: &[u8]) -> PathBuf {
    // One folder shared by the tests of this file, which run at the same time:
    // created, never emptied, under cargo's per-target temporary folder.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn syntax_only_accepts_every_valid_fixture() {
    let files: Vec<String> = valid_fixtures().iter().map(|p| s(p).to_string()).collect();
    let mut args = vec!["--syntax-only"];
    args.extend(files.iter().map(String::as_str));
    let out = ptxld().args(&args).run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    assert!(out.stdout.is_empty());
}

#[test]
fn all_errors_of_all_files_are_reported_in_order() {
    let (a, b) = ("unknown-target.ptx", "junk-and-empty-initializer.ptx");
    // Given in reverse order: diagnostics are still sorted by input position.
    let out = ptxld()
        .args(["--syntax-only", b, a])
        .current_dir(root().join("fixtures/broken"))
        .run();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let heads: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("ptxld: error: "))
        .collect();
    assert_eq!(heads.len(), 3, "{err}");
    assert!(heads[0].contains(&format!("{b}:3:1")), "{err}");
    assert!(heads[1].contains(&format!("{b}:4:18")), "{err}");
    assert!(heads[2].contains(&format!("{a}:2:9")), "{err}");
}

/// 30 errors: 20 are shown by default (fixtures/broken/thirty-errors.stderr).
#[test]
fn error_limit_stops_reporting() {
    let p = root().join("fixtures/broken/thirty-errors.ptx");
    let p = s(&p);
    let out = ptxld().args(["--syntax-only", p]).run();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("error: ").count(), 21, "{err}");
    assert!(err.contains("too many errors emitted"));
    let out = ptxld().args(["--syntax-only", "--error-limit=0", p]).run();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("error: ").count(), 30);
    let out = ptxld()
        .args(["--syntax-only", "--error-limit", "5", p])
        .run();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.matches("error: ").count(), 6);
}

#[test]
fn output_is_identical_for_any_thread_count() {
    let mut files: Vec<String> = valid_fixtures().iter().map(|p| s(p).to_string()).collect();
    files.extend(
        ptx_files(&root().join("fixtures/ptx/hand/bad"))
            .iter()
            .map(|p| s(p).to_string()),
    );
    let run = |j: &str| {
        let mut args = vec!["--print-symbols", "--error-limit=0", "-j", j];
        args.extend(files.iter().map(String::as_str));
        ptxld().args(&args).run()
    };
    let one = run("1");
    let two = run("2");
    let four = {
        let mut args = vec!["--print-symbols", "--error-limit=0", "-j4"];
        args.extend(files.iter().map(String::as_str));
        ptxld().args(&args).run()
    };
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stderr, two.stderr);
    assert_eq!(one.stdout, four.stdout);
    assert_eq!(one.stderr, four.stderr);
    assert!(!one.stderr.is_empty() && !one.stdout.is_empty());
}

#[test]
fn unreadable_inputs_are_reported_not_panicked() {
    let out = ptxld().args(["--syntax-only", "/nonexistent/x.ptx"]).run();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("ptxld: error: cannot read /nonexistent/x.ptx: "),
        "{err}"
    );
    let out = ptxld().args(["--syntax-only", "/tmp"]).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
}

/// A missing input or library does not hide the other inputs' errors: the link
/// parses every input it could read, then fails with all of them, writing nothing.
#[test]
fn a_missing_input_does_not_hide_the_others_errors() {
    let broken = format!(
        "{}/fixtures/broken/address-brackets.ptx",
        env!("CARGO_MANIFEST_DIR")
    );
    let out_file = std::env::temp_dir().join("ptxld-missing-and-broken.ptx");
    let out = ptxld()
        .args(["/nonexistent/x.ptx", &broken, "-lnope", "-o", s(&out_file)])
        .run();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.starts_with("ptxld: error: cannot read /nonexistent/x.ptx: "),
        "{err}"
    );
    assert!(
        err.contains("ptxld: error: unable to find library -lnope"),
        "{err}"
    );
    assert!(
        err.contains("address-brackets.ptx:11:32: expected `]`"),
        "{err}"
    );
    assert!(err.contains("address-brackets.ptx:14:28:"), "{err}");
    assert!(!out_file.exists());
}

#[test]
fn inputs_larger_than_4_gib_are_refused_clearly() {
    // A sparse file: no disk space is used.
    let p = tmp("huge.ptx", b"");
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(u32::MAX as u64 + 1).unwrap();
    drop(f);
    let out = ptxld().args(["--syntax-only", s(&p)]).run();
    std::fs::remove_file(&p).unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("input is 4294967296 bytes"), "{err}");
    assert!(err.contains("at most 4294967295 bytes"), "{err}");
}

#[test]
fn standard_input_is_read_with_dash() {
    let out = ptxld()
        .args(["--print-symbols", "-"])
        .stdin(".version 7.0\n.target sm_80\n.address_size 64\n.visible .global .u32 v;\n")
        .run();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("symbol 0 v var visible def@4:23 type .global .u32"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_1() {
    for args in [&["--bogus"][..], &["--syntax-only"][..], &["x.ptx"][..]] {
        let out = ptxld().args(args).run();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("ptxld: error: "));
    }
    assert!(ptxld().args(["--help"]).run().status.success());
}

/// `-r` writes PTX for a later link: no container, no dead-code removal.
#[test]
fn partial_links_refuse_what_belongs_to_the_final_link() {
    let dir = root().join("fixtures/link/relocatable-keeps-imports");
    let out = scratch("relocatable-usage");
    for (args, says) in [
        (&["--gc-sections"][..], "dead-code removal"),
        (&["--kernels-used", "k_a"][..], "dead-code removal"),
        (&["--emit", "fatbin"][..], "-r writes a PTX module"),
    ] {
        let o = ptxld()
            .current_dir(&dir)
            .arg("-r")
            .args(args)
            .arg("-o")
            .arg(out.join("p.ptx"))
            .args(["1-a.ptx", "2-b.ptx"])
            .run();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!out.join("p.ptx").exists());
    }
}

/// A reader that closed its end of the pipe (`ptxld --help | head -0`) ends the
/// output quietly: no panic, no error, exit status 0.
#[test]
fn standard_output_closed_by_the_reader_is_not_an_error() {
    let set = real_set();
    let out_file = tmp("closed-stdout.ptx", b"");
    let mut map_args = vec!["--print-map", "-o", s(&out_file)];
    map_args.extend(set.iter().map(String::as_str));
    let dir = root().join("fixtures/link/real-all-producers");
    for args in [&["--help"][..], &["--version"][..], &map_args[..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader); // every write now fails with EPIPE
        let out = ptxld()
            .args(args)
            .current_dir(&dir)
            .stdout(Stdio::from(writer))
            .run();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {err}");
    }
    // The link itself was written.
    assert!(std::fs::metadata(&out_file).unwrap().len() > 1000);
}

/// The inputs of the largest real-producer link set (four producers + libdevice-free).
fn real_set() -> Vec<String> {
    case_inputs("real-all-producers")
}

#[test]
fn link_output_is_identical_for_any_thread_count_and_to_stdout() {
    let inputs = real_set();
    let run = |extra: &[&str]| {
        let mut args: Vec<&str> = extra.to_vec();
        args.extend(inputs.iter().map(String::as_str));
        let out = ptxld().args(&args).run();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let a = tmp("j1.ptx", b"");
    let b = tmp("j2.ptx", b"");
    let c = tmp("no-fork.ptx", b"");
    run(&["-j1", "-o", s(&a)]);
    run(&["-j", "2", "-o", s(&b)]);
    // Linked in this process rather than in a forked child (src/bin/ptxld/early_exit.rs).
    run(&["--no-fork", "-o", s(&c)]);
    let stdout = run(&["-o", "-"]).stdout;
    let one = std::fs::read(&a).unwrap();
    assert!(one.len() > 10_000);
    assert_eq!(one, std::fs::read(&b).unwrap());
    assert_eq!(one, std::fs::read(&c).unwrap());
    assert_eq!(one, stdout);
}

/// `--stats` gives every phase's wall time and the CPU time of all threads meanwhile,
/// so a reader can tell a phase that ran on one core from one that ran on all.
/// Without `--gc-sections` the debug sections are planned beside the resolution,
/// and the two are one phase.
#[test]
fn stats_report_cpu_and_wall_time_of_every_phase() {
    let first = [
        "read inputs",
        "parse, select members",
        "symbol table, graph, ABI",
    ];
    let last = ["names", "layout and splicing", "writing the output"];
    let apart = ["resolution", "debug sections"];
    for (extra, middle) in [
        (None, &["resolution, debug sections"][..]),
        (Some("--gc-sections"), &apart[..]),
    ] {
        let out_file = tmp("stats.ptx", b"");
        let mut args = vec!["--stats", "-o", s(&out_file)];
        args.extend(extra);
        let inputs = real_set();
        args.extend(inputs.iter().map(String::as_str));
        let out = ptxld().args(&args).run();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let phase_of = |l: &str| {
            let rest = l.strip_prefix("ptxld: stats: ")?;
            let (name, times) = rest.split_once(" cpu ")?;
            Some((name.trim().to_string(), times.to_string()))
        };
        let phases: Vec<(String, String)> = stderr.lines().filter_map(phase_of).collect();
        let names: Vec<&str> = phases.iter().map(|(n, _)| n.as_str()).collect();
        let expected: Vec<&str> = first.iter().chain(middle).chain(&last).copied().collect();
        assert_eq!(names, expected, "{extra:?}: {stderr}");
        for (phase, times) in &phases {
            let words: Vec<&str> = times.split_whitespace().collect();
            let number = |w: &str| w.parse::<f64>().unwrap_or_else(|_| panic!("{times}"));
            assert!(
                matches!(words[..], [cpu, "ms,", "wall", wall, "ms"]
                    if number(cpu) >= 0.0 && number(wall) > 0.0),
                "{phase}: {times}"
            );
        }
    }
}

#[test]
fn output_naming_an_input_is_refused_and_the_input_kept() {
    let inputs = real_set();
    let victim = tmp("victim.ptx", &std::fs::read(&inputs[0]).unwrap());
    let before = std::fs::read(&victim).unwrap();
    let mut args = vec!["-o", s(&victim), s(&victim)];
    args.extend(inputs[1..].iter().map(String::as_str));
    let out = ptxld().args(&args).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!(
        "error: output file {} is the same file as input {}; refusing to overwrite it",
        s(&victim),
        s(&victim)
    )));
    assert_eq!(std::fs::read(&victim).unwrap(), before);
}

#[test]
fn a_failed_link_leaves_no_output_file() {
    let a = tmp(
        "dup_a.ptx",
        b".version 7.0\n.target sm_80\n.address_size 64\n\
          .visible .func (.param .b32 r) _Z3fooi (.param .b32 x)\n{\n\tret;\n}\n",
    );
    let b = tmp("dup_b.ptx", &std::fs::read(&a).unwrap());
    let out_path = tmp("stale.ptx", b"old output from an earlier link");
    let out = ptxld().args(["-o", s(&out_path), s(&a), s(&b)]).run();
    assert_eq!(out.status.code(), Some(1));
    assert!(!out_path.exists(), "stale output must be removed");
    let err = String::from_utf8(out.stderr).unwrap();
    // lld's shape, with the C++ name demangled next to the mangled one.
    let want = format!(
        "ptxld: error: duplicate symbol: foo(int) (_Z3fooi)\n>>> defined at {}:4:32\n>>> defined at {}:4:32\n",
        s(&a),
        s(&b)
    );
    assert!(err.starts_with(&want), "{err}");
    // No temporary file is left behind either.
    let dir = out_path.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".ptxld-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `.alias` directives come after the definitions, in the order of the output
/// symbols (first declaration in link order), not in the order of the modules that
/// hold them: here the first module declares `a3` before `a2`.
#[test]
fn aliases_are_written_in_the_order_of_their_output_symbols() {
    let header = ".version 8.0\n.target sm_80\n.address_size 64\n";
    let mut inputs = vec![tmp(
        "alias-order-0.ptx",
        format!(
            "{header}.extern .func (.param .b32 rv) a3 (.param .b32 a);\n\
             .extern .func (.param .b32 rv) a2 (.param .b32 a);\n\
             .visible .entry k (.param .u64 out)\n{{\n\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n\
             \tld.param.u64 %rd1, [out];\n\
             \t{{\n\t.param .b32 p0;\n\t.param .b32 r0;\n\tst.param.b32 [p0], 35;\n\
             \tcall (r0), a3, (p0);\n\tld.param.b32 %r1, [r0];\n\t}}\n\
             \t{{\n\t.param .b32 p0;\n\t.param .b32 r0;\n\tst.param.b32 [p0], %r1;\n\
             \tcall (r0), a2, (p0);\n\tld.param.b32 %r2, [r0];\n\t}}\n\
             \tst.global.u32 [%rd1], %r2;\n\tret;\n}}\n"
        )
        .as_bytes(),
    )];
    for i in 1..=3 {
        inputs.push(tmp(
            &format!("alias-order-{i}.ptx"),
            format!(
                "{header}.visible .func (.param .b32 rv) t{i} (.param .b32 a)\n{{\n\
                 \t.reg .b32 %r<2>;\n\tld.param.b32 %r1, [a];\n\tst.param.b32 [rv], %r1;\n\
                 \tret;\n}}\n.visible .func (.param .b32 rv) a{i} (.param .b32 a);\n\
                 .alias a{i}, t{i};\n"
            )
            .as_bytes(),
        ));
    }
    let out = tmp("alias-order.ptx", b"");
    let mut args = vec!["-o", s(&out)];
    args.extend(inputs.iter().map(|p| s(p)));
    for threads in ["1", "2"] {
        let mut args = args.clone();
        args.extend(["-j", threads]);
        let r = ptxld().args(&args).run();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let text = std::fs::read_to_string(&out).unwrap();
        let aliases: Vec<&str> = text.lines().filter(|l| l.starts_with(".alias")).collect();
        assert_eq!(
            aliases,
            [".alias a3, t3;", ".alias a2, t2;", ".alias a1, t1;"],
            "{threads} threads:\n{text}"
        );
        let last_definition = text.rfind("\tret;\n}").unwrap();
        assert!(text.find(".alias").unwrap() > last_definition, "{text}");
    }
}

/// A module defining kernel `NAME`.
fn kernel(name: &str) -> String {
    format!(
        ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry {name}()\n{{\n\tret;\n}}\n"
    )
}

/// A folder `name` holding `a.ptx` and `b.ptx` (kernels `ka`, `kb`).
fn two_kernels(name: &str) -> PathBuf {
    let d = scratch(&format!("cli-{name}"));
    std::fs::write(d.join("a.ptx"), kernel("ka")).unwrap();
    std::fs::write(d.join("b.ptx"), kernel("kb")).unwrap();
    d
}

/// GNU ld's and lld's spellings: `-Map=FILE` (what `-Wl,-Map=` passes), `--Map FILE`,
/// single-dash long options, `-(`/`-)`, `--flag=value`.
#[test]
fn gnu_ld_spellings_are_understood() {
    let d = two_kernels("spellings");
    for (i, map) in [
        &["-Map=m0.map"][..],
        &["--Map=m1.map"],
        &["-Map", "m2.map"],
        &["--Map", "m3.map"],
    ]
    .iter()
    .enumerate()
    {
        let mut args = map.to_vec();
        args.extend([
            "-gc-sections",
            "--export=ka",
            "-(",
            "a.ptx",
            "b.ptx",
            "-)",
            "-o",
            "out.ptx",
        ]);
        let o = ptxld().current_dir(&d).args(&args).run();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        let text = std::fs::read_to_string(d.join(format!("m{i}.map"))).unwrap();
        assert!(text.contains("ka"), "{args:?}: {text}");
        // --gc-sections took effect: kb is gone, ka kept by --export=ka... and as a kernel.
        assert!(std::fs::read_to_string(d.join("out.ptx"))
            .unwrap()
            .contains("ka"));
    }
}

/// A flag given a value is an error (`--gc-sections=no` used to turn gc on); an
/// unknown option gets a did-you-mean; an unknown target is refused with the close
/// one named.
#[test]
fn flags_take_no_values_and_mistakes_get_suggestions() {
    let d = two_kernels("mistakes");
    let o = ptxld()
        .current_dir(&d)
        .args(["--gc-sections=no", "-o", "out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("ptxld: error: unexpected value 'no' for '--gc-sections'"),
        "{}",
        stderr(&o)
    );
    let o = ptxld()
        .current_dir(&d)
        .args(["--gc-section", "-o", "out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("tip: a similar argument exists: '--gc-sections'"),
        "{}",
        stderr(&o)
    );
    let o = ptxld()
        .current_dir(&d)
        .args(["--arch", "sm_999", "-o", "out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).starts_with("ptxld: error: invalid value 'sm_999' for '--arch <TARGET>'"),
        "{}",
        stderr(&o)
    );
    for ok in ["sm_90a", "sm_100f", "sm_80"] {
        let o = ptxld()
            .current_dir(&d)
            .args(["--arch", ok, "-o", "out.ptx", "a.ptx"])
            .run();
        assert!(o.status.success(), "{ok}: {}", stderr(&o));
    }
    assert!(!d.join("out2.ptx").exists());
}

/// Options that mean nothing to a mode are refused, by name, not ignored.
#[test]
fn options_that_do_not_apply_to_the_mode_are_refused() {
    let d = two_kernels("modes");
    for (args, want) in [
        (
            &["check", "-o", "x.ptx", "a.ptx"][..],
            "ptxld: error: -o/--output does not apply to ptxld check",
        ),
        (
            &["check", "--Map=x.map", "a.ptx"],
            "ptxld: error: --Map does not apply to ptxld check",
        ),
        (
            &["--syntax-only", "-lfoo", "a.ptx"],
            "ptxld: error: -l/--library does not apply to --syntax-only",
        ),
        (
            &["--format", "json", "-o", "x.ptx", "a.ptx"],
            "ptxld: error: --format does not apply to a link (it applies only to ptxld check)",
        ),
        (
            &["--generate", "man", "a.ptx"],
            "ptxld: error: --generate takes no inputs",
        ),
        (
            &["check", "--arch", "sm_80", "--arch", "sm_90", "a.ptx"],
            "ptxld: error: ptxld check takes one --arch",
        ),
    ] {
        let o = ptxld().current_dir(&d).args(args).run();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert!(stderr(&o).starts_with(want), "{args:?}: {}", stderr(&o));
        assert!(!d.join("x.ptx").exists() && !d.join("x.map").exists());
    }
}

/// Every error the command prints, whatever found it, starts `ptxld: error:`.
#[test]
fn every_error_says_ptxld_error() {
    let d = two_kernels("prefix");
    std::fs::write(d.join("dup.ptx"), kernel("ka")).unwrap();
    std::fs::copy(
        root().join("fixtures/broken/hex-without-digits.ptx"),
        d.join("bad.ptx"),
    )
    .unwrap();
    std::fs::write(d.join("bad.rsp"), "'unterminated\n").unwrap();
    for args in [
        &["--bogus"][..],
        &["-o", "out.ptx", "missing.ptx"],
        &["-o", "out.ptx", "a.ptx", "dup.ptx"],
        &["-o", "out.ptx", "bad.ptx"],
        &["--syntax-only", "bad.ptx"],
        &["@bad.rsp"],
        &["-o", "out.ptx", "-lnothing"],
        &["-o", "out.ptx", "a.ptx", "a.ptx"],
    ] {
        let o = ptxld().current_dir(&d).args(args).run();
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let text = stderr(&o);
        assert!(text.starts_with("ptxld: error: "), "{args:?}: {text}");
        for line in text.lines().filter(|l| l.contains("error:")) {
            assert!(line.starts_with("ptxld: error: "), "{args:?}: {line}");
        }
    }
}

/// `-z KEYWORD` is accepted as lld accepts it, with a warning for a keyword it does
/// not know (here: every keyword).
#[test]
fn unknown_z_keywords_are_warned() {
    let d = two_kernels("z");
    let o = ptxld()
        .current_dir(&d)
        .args(["-z", "now", "-znoexecstack", "-o", "out.ptx", "a.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "ptxld: warning: unknown -z value: now\nptxld: warning: unknown -z value: noexecstack\n"
    );
}

/// File names are bytes on Unix: an input, an output and a library search folder
/// whose names are not UTF-8 link (they used to panic, exit status 101).
#[cfg(unix)]
#[test]
fn file_names_that_are_not_utf8_work() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let d = two_kernels("non-utf8");
    let odd = OsStr::from_bytes(b"k\xff.ptx");
    std::fs::copy(d.join("a.ptx"), d.join(odd)).unwrap();
    let out = OsStr::from_bytes(b"out\xfe.ptx");
    let o = ptxld()
        .arg("-o")
        .arg(out)
        .arg(odd)
        .arg("b.ptx")
        .current_dir(&d)
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(d.join(out)).unwrap().contains("ka"));
    let o = ptxld()
        .args(["-o", "x.ptx"])
        .arg(OsStr::from_bytes(b"missing\xff.ptx"))
        .current_dir(&d)
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).starts_with("ptxld: error: cannot read missing\u{fffd}.ptx"));
}

/// Standard error that cannot be written (a full device, a closed pipe) makes a
/// command with something to say fail with exit status 1, not panic (101); a link
/// with nothing to say is not affected.
#[cfg(target_os = "linux")]
#[test]
fn standard_error_that_cannot_be_written_fails_without_a_panic() {
    let d = two_kernels("stderr");
    let run = |args: &[&str], stderr: Stdio| {
        ptxld()
            .args(args)
            .current_dir(&d)
            .stderr(stderr)
            .run()
            .status
    };
    let full = || Stdio::from(std::fs::File::create("/dev/full").unwrap());
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Stdio::from(writer)
    };
    for stderr in [full(), closed()] {
        let st = run(&["-z", "x", "-o", "out.ptx", "a.ptx"], stderr);
        assert_eq!(st.code(), Some(1), "{st}");
    }
    for stderr in [full(), closed()] {
        let st = run(&["-o", "missing-out.ptx", "missing.ptx"], stderr);
        assert_eq!(st.code(), Some(1), "{st}");
    }
    assert!(run(&["-o", "out.ptx", "a.ptx"], full()).success());
}

/// Response files are bounded as libiberty bounds them: thirteen files each naming
/// the next four times would expand 4^13 times (15 s and 1.2 GB before); a response
/// file that never ends (/dev/zero) or is a FIFO nobody writes fails at once.
#[cfg(target_os = "linux")]
#[test]
fn response_files_are_bounded() {
    let d = two_kernels("rsp-bounds");
    for i in 0..13 {
        let next = if i == 12 {
            "a.ptx".to_string()
        } else {
            format!("@f{} ", i + 1).repeat(4)
        };
        std::fs::write(d.join(format!("f{i}")), next).unwrap();
    }
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "@f0"])
            .spawn(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("more than 2000 response files expanded"),
        "{}",
        stderr(&o)
    );
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "@/dev/zero"])
            .spawn(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("response files hold more than 256 MiB together"),
        "{}",
        stderr(&o)
    );
    mkfifo(&d.join("args.fifo"));
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "@args.fifo"])
            .spawn(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is a FIFO with no writer"),
        "{}",
        stderr(&o)
    );
    assert!(!d.join("out.ptx").exists());
    // A FIFO with a writer is read like a file.
    let writer = hold_fifo(&d.join("args.fifo"));
    let child = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "@args.fifo"])
        .spawn();
    let pid = child.id();
    // Written once ptxld has the FIFO open: data in a FIFO nobody has open is lost.
    wait_until("ptxld opens args.fifo", || {
        has_open(pid, &d.join("args.fifo")) || has_exited(pid)
    });
    {
        let mut w = writer;
        w.write_all(b"a.ptx b.ptx").unwrap();
    }
    let o = wait_output(child);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `-j 10000` for a two-input link starts no more threads than there is work for
/// (it started 10,000, taking 20 s). Counted while the link waits for a FIFO input.
#[cfg(target_os = "linux")]
#[test]
fn threads_are_bounded_by_the_work() {
    let d = two_kernels("threads");
    let fifo = d.join("c.fifo");
    mkfifo(&fifo);
    let writer = hold_fifo(&fifo);
    let child = ptxld()
        .current_dir(&d)
        .args(["-j", "10000", "-o", "out.ptx", "a.ptx", "c.fifo"])
        .spawn();
    let pid = child.id();
    wait_until("ptxld opens c.fifo", || {
        has_open(pid, &fifo) || has_exited(pid)
    });
    let status = std::fs::read_to_string(format!("/proc/{}/status", linking_pid(pid))).unwrap();
    let threads: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    {
        let mut w = writer;
        w.write_all(kernel("kc").as_bytes()).unwrap();
    }
    let o = wait_output(child);
    assert!(o.status.success(), "{}", stderr(&o));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(threads <= cores.max(2) + 4, "{threads} threads");
}

/// `--help`, the man page and every shell's completions come from one options
/// table: each option `--help` lists is in all of them.
#[test]
fn help_man_page_and_completions_list_the_same_options() {
    let help = String::from_utf8(ptxld().args(["--help"]).run().stdout).unwrap();
    // The option names at the start of each option's lines.
    let longs: std::collections::BTreeSet<&str> = help
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| {
            l.split([' ', ',', '='])
                .take_while(|w| w.is_empty() || w.starts_with('-') || w.starts_with('<'))
                .filter(|w| w.starts_with("--") && w.len() > 2)
        })
        .collect();
    for must in [
        "--Map",
        "--trace-symbol",
        "--why-live",
        "--gc-sections",
        "--output",
    ] {
        assert!(longs.contains(must), "--help lacks {must}: {longs:?}");
    }
    let man = String::from_utf8(ptxld().args(["--generate", "man"]).run().stdout).unwrap();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = ptxld()
            .args(["--generate", &format!("complete-{shell}")])
            .run();
        assert!(o.status.success());
        let script = String::from_utf8(o.stdout).unwrap();
        for long in &longs {
            let bare = long.trim_start_matches('-');
            assert!(script.contains(bare), "{shell} completion lacks {long}");
        }
    }
    for long in &longs {
        // roff escapes every dash.
        assert!(
            man.contains(&long.replace('-', "\\-")),
            "man page lacks {long}"
        );
    }
}
