//! `--verify`: ptxas on each target's output before it is written (docs/verify.md).
//! The tests with the real ptxas skip loudly without it; those with a stand-in script
//! (the messages a real ptxas rarely prints) and without any ptxas always run.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::support::*;

/// Calls `helper` from b.ptx; a module-local `util`, which b.ptx has too (renamed
/// `util$m1` in the output).
const A: &str = "\
.version 7.0
.target sm_70
.address_size 64

.extern .func (.param .b32 r) helper(.param .b32 x);

.func util()
{
\tret;
}

.visible .entry k(.param .u64 p)
{
\t.reg .b32 %r<4>;
\t.reg .b64 %rd<3>;
\tcall.uni util;
\tld.param.u64 %rd1, [p];
\tld.global.u32 %r1, [%rd1];
\t{
\t.param .b32 a0;
\tst.param.b32 [a0], %r1;
\t.param .b32 r0;
\tcall.uni (r0), helper, (a0);
\tld.param.b32 %r2, [r0];
\t}
\tst.global.u32 [%rd1], %r2;
\tret;
}
";

/// `helper`, with `LINE16` as its line 16.
const B: &str = "\
.version 7.0
.target sm_70
.address_size 64

.func util()
{
\tret;
}

.visible .func (.param .b32 r) helper(.param .b32 x)
{
\t.reg .b32 %r<3>;
\t.reg .b64 %rd<3>;
\tcall.uni util;
\tld.param.b32 %r1, [x];
LINE16
\tst.param.b32 [r], %r1;
\tret;
}
";

/// What ptxld accepts and ptxas refuses: `add.f32` on `.b64` registers.
const SLIP: &str = "\tadd.f32 %rd1, %rd2, %rd1;";

/// A folder with a.ptx and b.ptx, b.ptx's line 16 being `line16`.
fn inputs(name: &str, line16: &str) -> PathBuf {
    let d = scratch(name);
    std::fs::write(d.join("a.ptx"), A).unwrap();
    std::fs::write(d.join("b.ptx"), B.replace("LINE16", line16)).unwrap();
    d
}

/// ptxld with `PTXAS` set to `ptxas`, temporaries in `d/tmp` (which the test can
/// see emptied), in `d`.
fn with_ptxas(d: &Path, ptxas: &Path) -> Ptxld {
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    ptxld()
        .env("PTXAS", Some(ptxas.as_os_str()))
        .env("TMPDIR", Some(tmp.as_os_str()))
        .current_dir(d)
}

/// The files left in `d/tmp`: none once a link is over.
fn leftovers(d: &Path) -> Vec<PathBuf> {
    let entries = std::fs::read_dir(d.join("tmp")).unwrap();
    entries.flatten().map(|e| e.path()).collect()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// The error ptxas gives for [`SLIP`] in the output for sm_80, as ptxld prints it.
const SLIP_ERROR: &str = "\
ptxld: error: b.ptx:16:2: ptxas: Arguments mismatch for instruction 'add'
16 |  add.f32 %rd1, %rd2, %rd1;
   |  ^~~~~~~~~~~~~~~~~~~~~~~~~
";

#[test]
fn a_ptxas_error_points_at_the_input_line_and_nothing_is_written() {
    let Some(ptxas) = ptxas() else { return };
    let d = inputs("verify-error", SLIP);
    // Without --verify the slip links.
    let o = ptxld()
        .current_dir(&d)
        .args(["--arch", "sm_80", "-o", "out.ptx", "a.ptx", "b.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    let output = std::fs::read_to_string(d.join("out.ptx")).unwrap();
    let line = 1 + output.lines().position(|l| l == SLIP).unwrap();
    // With it, the link fails at b.ptx's line, and the older output is gone.
    let o = with_ptxas(&d, &ptxas)
        .args([
            "--verify", "--arch", "sm_80", "-o", "out.ptx", "a.ptx", "b.ptx",
        ])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!("{SLIP_ERROR}>>> target sm_80, output line {line}\n")
    );
    assert!(!d.join("out.ptx").exists());
    assert_eq!(leftovers(&d), Vec::<PathBuf>::new());
    assert_eq!(temporaries(&d), Vec::<String>::new());
    // Both targets of a fatbin: one error, a note for each.
    let o = with_ptxas(&d, &ptxas)
        .args(["--verify", "--arch", "sm_80", "--arch", "sm_75"])
        .args(["-o", "out.fatbin", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        format!(
            "{SLIP_ERROR}>>> target sm_80, output line {line}\n\
             >>> target sm_75, output line {line}\n"
        )
    );
    assert!(!d.join("out.fatbin").exists());
}

#[test]
fn a_link_ptxas_accepts_writes_what_it_writes_without_verify() {
    let Some(ptxas) = ptxas() else { return };
    let d = inputs("verify-good", "\tadd.u32 %r1, %r1, 1;");
    for (out, targets) in [
        ("out.ptx", &["--arch", "sm_80"][..]),
        ("out.fatbin", &["--arch", "sm_70", "--arch", "sm_90"][..]),
        ("out.o", &[][..]),
    ] {
        let plain = ptxld()
            .current_dir(&d)
            .args(targets)
            .args(["-o", out, "a.ptx", "b.ptx"])
            .run();
        assert!(plain.status.success(), "{}", stderr(&plain));
        let want = std::fs::read(d.join(out)).unwrap();
        std::fs::remove_file(d.join(out)).unwrap();
        let o = with_ptxas(&d, &ptxas)
            .arg("--verify")
            .args(targets)
            .args(["-o", out, "a.ptx", "b.ptx"])
            .run();
        assert!(o.status.success(), "{out}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{out}");
        assert!(std::fs::read(d.join(out)).unwrap() == want, "{out} differs");
        assert_eq!(leftovers(&d), Vec::<PathBuf>::new());
    }
    let o = with_ptxas(&d, &ptxas)
        .args(["check", "--verify", "a.ptx", "b.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "note: needs: PTX ISA 6.0 for .target sm_70 (a CUDA 9.0 driver or newer); its code needs \
         PTX ISA 2.3 and .target sm_20 or higher\n\
         >>> .target sm_20 because of `st.param.b32` at a.ptx:21:2\n\
         0 error(s), 0 warning(s), 1 note(s)\n"
    );
}

/// `vote` without `.sync` is a warning for ptxas: shown, and the link goes on; the
/// same warning for two targets is shown once.
#[test]
fn ptxas_warnings_are_shown_for_each_target_and_the_link_succeeds() {
    let Some(ptxas) = ptxas() else { return };
    let d = scratch("verify-warnings");
    let text = ".version 6.0\n.target sm_60\n.address_size 64\n\n.visible .entry k()\n{\n\
                \t.reg .pred %p<3>;\n\t.reg .b32 %r<3>;\n\tsetp.eq.u32 %p1, %r1, 0;\n\
                \tvote.any.pred %p2, %p1;\n\tret;\n}\n";
    std::fs::write(d.join("w.ptx"), text).unwrap();
    let args = [
        "--arch", "sm_60", "--arch", "sm_61", "-o", "w.fatbin", "w.ptx",
    ];
    let o = with_ptxas(&d, &ptxas).arg("--verify").args(args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o),
        "ptxld: warning: w.ptx:10:2: ptxas: Instruction 'vote' without '.sync' is deprecated \
         since PTX ISA version 6.0 and will be discontinued in a future PTX ISA version\n\
         10 |  vote.any.pred %p2, %p1;\n   |  ^~~~~~~~~~~~~~~~~~~~~~~\n\
         >>> target sm_60, output line 9\n>>> target sm_61, output line 9\n"
    );
    assert!(d.join("w.fatbin").exists());
    // Under --fatal-warnings they fail the link.
    std::fs::remove_file(d.join("w.fatbin")).unwrap();
    let o = with_ptxas(&d, &ptxas)
        .args(["--verify", "--fatal-warnings"])
        .args(args)
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).ends_with("ptxld: error: warnings are errors (--fatal-warnings)\n"));
    assert!(!d.join("w.fatbin").exists());
}

#[test]
fn check_verify_reports_ptxas_errors_in_text_and_json() {
    let Some(ptxas) = ptxas() else { return };
    let d = inputs("verify-check", SLIP);
    let o = with_ptxas(&d, &ptxas)
        .args(["check", "--verify", "--arch", "sm_80", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "error: ptxas: Arguments mismatch for instruction 'add'\n>>> b.ptx:16:2\n\
         note: needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); its code needs \
         PTX ISA 2.3 and .target sm_20 or higher\n\
         >>> .target sm_20 because of `st.param.b32` at a.ptx:21:2\n\
         1 error(s), 0 warning(s), 1 note(s)\n"
    );
    let o = with_ptxas(&d, &ptxas)
        .args(["check", "--verify", "--format", "json", "--arch", "sm_80"])
        .args(["a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = json(&o);
    let line = &out["diagnostics"][0]["notes"][0]["message"];
    assert!(
        line.as_str()
            .is_some_and(|l| l.starts_with("target sm_80, output line ")),
        "{out}"
    );
    assert_eq!(
        out,
        serde_json::json!({
            "version": 1,
            "ok": false,
            "diagnostics": [{
                "severity": "error",
                "code": "ptxas",
                "message": "ptxas: Arguments mismatch for instruction 'add'",
                "location": {"file": "b.ptx", "line": 16, "column": 2},
                "notes": [{"message": line, "location": null}],
                "help": null,
            }, {
                "severity": "note",
                "code": "needs",
                "message": "needs: PTX ISA 7.0 for .target sm_80 (a CUDA 11.0 driver or newer); \
                            its code needs PTX ISA 2.3 and .target sm_20 or higher",
                "location": null,
                "notes": [{
                    "message": ".target sm_20 because of `st.param.b32` at",
                    "location": {"file": "a.ptx", "line": 21, "column": 2},
                }],
                "help": null,
            }],
        })
    );
    assert!(!d.join("tmp").read_dir().unwrap().any(|_| true));
    // Without --verify, check types the operands itself (docs/linking.md, "Operand
    // types"), and finds the slip at the same place.
    let o = ptxld()
        .current_dir(&d)
        .args(["check", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).starts_with(
            "error: operand 1 of `add.f32` is `%rd1`, a .b64 register, which does not fit .f32\n\
             >>> b.ptx:16:10\n>>> declared at b.ptx:13:12\n"
        ),
        "{}",
        stdout(&o)
    );
}

/// `PTXAS` naming no file, or no ptxas anywhere: an error saying how to point at one;
/// no output (an older one removed, as after any failed link).
#[test]
fn without_ptxas_verify_fails_at_once_and_writes_nothing() {
    let d = inputs("verify-no-ptxas", "\tadd.u32 %r1, %r1, 1;");
    let missing = d.join("no-such-ptxas");
    let help = "help: set PTXAS to the ptxas executable, or CUDA_HOME to a CUDA toolkit (ptxas \
                is in its bin folder), or put ptxas in PATH\n";
    std::fs::write(d.join("out.ptx"), "older").unwrap();
    let o = with_ptxas(&d, &missing)
        .args(["--verify", "-o", "out.ptx", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "ptxld: error: PTXAS is {}, which does not exist; --verify needs ptxas\n{help}",
            missing.display()
        )
    );
    assert!(!d.join("out.ptx").exists());
    // Nothing set, and PATH without ptxas.
    let empty = d.join("tmp");
    let o = ptxld()
        .current_dir(&d)
        .env("PTXAS", None)
        .env("CUDA_HOME", Some(OsStr::new("/nonexistent-cuda")))
        .env("CUDA_PATH", None)
        .env("PATH", Some(empty.as_os_str()))
        .args(["--verify", "-o", "out.ptx", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "ptxld: error: cannot find ptxas for --verify: PTXAS is not set, and there is none \
             in CUDA_HOME/bin/ptxas (/nonexistent-cuda/bin/ptxas), PATH\n{help}"
        )
    );
    assert!(!d.join("out.ptx").exists());
    // `check --verify` reports it with whatever else it finds.
    let o = with_ptxas(&d, &missing)
        .args(["check", "--verify", "--format", "json", "a.ptx", "b.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    let out = json(&o);
    assert_eq!(out["ok"], false);
    assert_eq!(out["diagnostics"][0]["code"], "ptxas-not-found", "{out}");
    assert_eq!(out["diagnostics"][1]["code"], "needs", "{out}");
    assert_eq!(
        out["diagnostics"].as_array().map(Vec::len),
        Some(2),
        "{out}"
    );
}

/// A stand-in ptxas printing `messages` to standard error and exiting with `status`.
fn fake_ptxas(d: &Path, messages: &str, status: u8) -> PathBuf {
    let path = d.join("fake-ptxas");
    let script = format!("#!/bin/sh\nprintf '%s' '{messages}' >&2\nexit {status}\n");
    std::fs::write(&path, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    path
}

/// Lines ptxld wrote itself (the merged header), messages without a line, lines in
/// no known shape, and a ptxas that fails without saying why.
#[test]
fn messages_about_the_header_without_a_line_or_from_a_failed_ptxas() {
    let d = inputs("verify-fake", "\tadd.u32 %r1, %r1, 1;");
    let messages = "ptxas /t/0-sm_80.ptx, line 1; error   : Unsupported .version 7.0\n\
                    ptxas /t/0-sm_80.ptx, line 16; warning : odd\n\
                    something else\n\
                    ptxas fatal   : Ptx assembly aborted due to errors";
    let ptxas = fake_ptxas(&d, messages, 255);
    let o = with_ptxas(&d, &ptxas)
        .args([
            "--verify", "--arch", "sm_80", "-o", "out.ptx", "a.ptx", "b.ptx",
        ])
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let (first, rest) = err.split_at(err.find("ptxld: warning").unwrap());
    assert_eq!(
        first,
        "ptxld: error: ptxas: Unsupported .version 7.0\n>>> target sm_80, <output> line 1 \
         (text ptxld wrote itself, from no input)\n"
    );
    // Output line 16 is a.ptx's, wherever the link put it.
    assert!(rest.starts_with("ptxld: warning: a.ptx:"), "{rest}");
    assert!(rest.ends_with(
        ">>> target sm_80, output line 16\nptxld: note: ptxas: something else\n>>> target sm_80\n"
    ));
    assert!(!d.join("out.ptx").exists());
    // Only the closing fatal line: kept, it is all ptxas said.
    let ptxas = fake_ptxas(
        &d,
        "ptxas fatal   : Ptx assembly aborted due to errors",
        255,
    );
    let o = with_ptxas(&d, &ptxas)
        .args([
            "--verify", "--arch", "sm_80", "-o", "out.ptx", "a.ptx", "b.ptx",
        ])
        .run();
    assert_eq!(
        stderr(&o),
        "ptxld: error: ptxas: Ptx assembly aborted due to errors\n>>> target sm_80\n"
    );
    // A failure without a message.
    let ptxas = fake_ptxas(&d, "", 3);
    let o = with_ptxas(&d, &ptxas)
        .args([
            "--verify", "--arch", "sm_80", "-o", "out.ptx", "a.ptx", "b.ptx",
        ])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "ptxld: error: ptxas failed on the output for sm_80 (exit status: 3)\n\
         >>> target sm_80\n"
    );
    assert!(!d.join("out.ptx").exists());
    assert_eq!(leftovers(&d), Vec::<PathBuf>::new());
}

/// `Build::verify`: ptxas's error fails the build at the input line. The driver reads
/// `PTXAS` from the process's environment, which a test cannot set while others run:
/// the test runs itself again in a child process that has it.
#[test]
fn build_api_verifies_with_ptxas() {
    const CHILD: &str = "PTXLD_TEST_BUILD_VERIFY_CHILD";
    const NAME: &str = "verify::build_api_verifies_with_ptxas";
    let Some(d) = std::env::var_os(CHILD) else {
        let Some(ptxas) = ptxas() else { return };
        let d = inputs("verify-build-api", SLIP);
        in_child_with_ptxas(NAME, CHILD, &d, &ptxas);
        return;
    };
    let d = PathBuf::from(d);
    let build = |verify: bool| {
        ptxld::Build::new()
            .file(d.join("a.ptx"))
            .file(d.join("b.ptx"))
            .arch("sm_80")
            .verify(verify)
            .out_dir(&d)
            .cargo_metadata(false)
            .try_compile("k")
    };
    assert_eq!(build(false).unwrap(), d.join("k.ptx"));
    let failure = match build(true) {
        Err(ptxld::BuildError::Link { failure, .. }) => failure,
        other => panic!("{other:?}"),
    };
    assert!(!d.join("k.ptx").exists());
    let e = failure.report.diagnostics().next().unwrap();
    assert_eq!(e.code, ptxld::Code::Ptxas);
    assert_eq!(e.message, "ptxas: Arguments mismatch for instruction 'add'");
    let at = e.location.as_ref().unwrap().to_string();
    assert_eq!(at, format!("{}:16:2", d.join("b.ptx").display()));
}

/// A link stopped by a signal while ptxas runs leaves no copy of the output behind:
/// the command line's handler removes it (the empty private folder stays).
#[cfg(target_os = "linux")]
#[test]
fn a_signal_while_ptxas_runs_removes_the_copy_it_reads() {
    let d = inputs("verify-signal", "\tadd.u32 %r1, %r1, 1;");
    let started = d.join("started");
    let script = format!("#!/bin/sh\ntouch '{}'\nexec sleep 10\n", started.display());
    let ptxas = d.join("slow-ptxas");
    std::fs::write(&ptxas, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
    let child = with_ptxas(&d, &ptxas)
        .args(["--verify", "-o", "out.ptx", "a.ptx", "b.ptx"])
        .spawn();
    let pid = child.id();
    wait_until("ptxas runs", || started.exists() || has_exited(pid));
    interrupt(pid);
    let o = wait_output(child);
    assert_eq!(o.status.code(), Some(130), "{}", stderr(&o));
    let files: Vec<PathBuf> = leftovers(&d)
        .iter()
        .flat_map(|folder| std::fs::read_dir(folder).unwrap().flatten())
        .map(|e| e.path())
        .collect();
    assert_eq!(files, Vec::<PathBuf>::new());
    assert!(!d.join("out.ptx").exists());
}
