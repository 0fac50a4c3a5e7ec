//! Trust at the edges of reading inputs: inputs cut short while they are linked,
//! many small inputs, thin archives, read errors under `--error-limit`, and sizes
//! too large for 64 bits.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::*;

const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";

/// The message of an input that changed while it was linked.
fn changed(name: &str) -> String {
    format!("ptxld: error: input {name} changed while ptxld was linking it; run the link again")
}

/// A module of at least `len` bytes: a kernel `NAME` whose body holds comment
/// lines, so that the file spans many pages.
fn long_module(name: &str, len: usize) -> String {
    let mut s = format!("{HEADER}.visible .entry {name}()\n{{\n");
    let line = format!("\t// {}\n", "x".repeat(90));
    while s.len() < len {
        s += &line;
    }
    s + "\tret;\n}\n"
}

/// `ptxld ARGS` in `d`, with its output piped; with `mapped`, under an open-file
/// limit too small to keep any input open, so that every input is mapped at once.
fn spawn(d: &Path, mapped: bool, args: &[&str]) -> std::process::Child {
    let cmd = ptxld().current_dir(d).args(args);
    if !mapped {
        return cmd.spawn();
    }
    // `ulimit -n` sets the soft and the hard limit, so ptxld cannot raise it.
    cmd.through(["bash", "-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .spawn()
}

/// Exit status 1 (not a signal), `message` on standard error, no signal named.
fn failed_with(o: &Output, message: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}: {err}", o.status);
    assert!(err.contains(message), "expected {message:?} in:\n{err}");
    assert!(
        !err.contains("SIGBUS") && !err.contains("panicked"),
        "{err}"
    );
}

/// Waits until process `pid` (or its linking child) has `path` open.
#[cfg(target_os = "linux")]
fn await_open(child: &std::process::Child, path: &Path) {
    let pid = child.id();
    wait_until(&format!("ptxld opens {}", path.display()), || {
        has_open(pid, path) || has_exited(pid)
    });
    assert!(has_open(pid, path), "ptxld exited before opening the FIFO");
}

/// `a.ptx` (many pages) is cut to a few bytes after ptxld read it and before it
/// parses it (ptxld then waits for the FIFO `b.fifo`): the link fails with the
/// changed-input message, exit status 1, and leaves nothing. Read from the open
/// file, the shorter file used to make ptxld fall back to its mapping; mapped (when
/// no file may stay open), touching the pages past the new end raised SIGBUS.
#[cfg(target_os = "linux")]
fn cut_short_before_parsing(name: &str, mapped: bool) {
    let d = scratch(name);
    std::fs::write(d.join("a.ptx"), long_module("a", 64 << 10)).unwrap();
    let fifo = d.join("b.fifo");
    mkfifo(&fifo);
    let mut writer = hold_fifo(&fifo);
    let child = spawn(&d, mapped, &["-o", "out.ptx", "a.ptx", "b.fifo"]);
    await_open(&child, &fifo);
    // The inputs are read in parallel: the FIFO may be open before `a.ptx` is read.
    let a = std::fs::canonicalize(d.join("a.ptx")).unwrap();
    wait_until("ptxld reads a.ptx", || {
        let pid = linking_pid(child.id());
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
        has_open(child.id(), &a) || maps.contains(a.to_str().unwrap()) || has_exited(pid)
    });
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("a.ptx"))
        .unwrap()
        .set_len(10)
        .unwrap();
    use std::io::Write;
    writer
        .write_all(format!("{HEADER}.visible .entry b() {{ ret; }}\n").as_bytes())
        .unwrap();
    drop(writer);
    let o = wait_output(child);
    failed_with(&o, &changed("a.ptx"));
    assert!(!d.join("out.ptx").exists());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
}

#[cfg(target_os = "linux")]
#[test]
fn an_open_input_cut_short_before_parsing_fails_the_link() {
    cut_short_before_parsing("in-cut-open", false);
}

#[cfg(target_os = "linux")]
#[test]
fn a_mapped_input_cut_short_before_parsing_fails_the_link() {
    cut_short_before_parsing("in-cut-mapped", true);
}

/// `a.ptx` (12 MB, many functions, each referring to a module-local variable that
/// `b.ptx` has too, so the writer reads it in many pieces) is cut short while
/// ptxld writes the output to a pipe nobody reads yet: the writer is then blocked
/// with at most a few chunks read ahead, and the rest of `a.ptx` is gone. The
/// writer's reads come up short (or, mapped, touch pages past the end of the
/// file): the link fails with the changed-input message and exit status 1.
#[cfg(target_os = "linux")]
fn cut_short_while_writing(name: &str, mapped: bool) {
    let d = scratch(name);
    std::fs::write(
        d.join("b.ptx"),
        format!("{HEADER}.global .u32 v;\n.visible .entry b() {{ ret; }}\n"),
    )
    .unwrap();
    let mut a = format!("{HEADER}.global .u32 v;\n");
    let pad = format!("\t// {}\n", "y".repeat(120));
    let mut k = 0;
    while a.len() < 12 << 20 {
        a += &format!(
            ".visible .entry a{k}()\n{{\n\t.reg .u32 %r;\n\tld.global.u32 %r, [v];\n{}\tret;\n}}\n",
            pad.repeat(80)
        );
        k += 1;
    }
    std::fs::write(d.join("a.ptx"), &a).unwrap();
    let mut child = spawn(&d, mapped, &["-o", "-", "b.ptx", "a.ptx"]);
    let mut out = child.stdout.take().unwrap();
    // The first byte: parsing is over and the writer has begun.
    let mut first = [0u8; 1];
    out.read_exact(&mut first).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(d.join("a.ptx"))
        .unwrap()
        .set_len(100)
        .unwrap();
    let mut rest = Vec::new();
    out.read_to_end(&mut rest).unwrap();
    let o = wait_output(child);
    failed_with(&o, &changed("a.ptx"));
    assert!(rest.len() + 1 < a.len(), "the whole output was written");
}

#[cfg(target_os = "linux")]
#[test]
fn an_open_input_cut_short_while_writing_fails_the_link() {
    cut_short_while_writing("in-write-open", false);
}

#[cfg(target_os = "linux")]
#[test]
fn a_mapped_input_cut_short_while_writing_fails_the_link() {
    cut_short_while_writing("in-write-mapped", true);
}

/// More small inputs than a process may have mappings (`vm.max_map_count`, 65,530
/// by default): none is mapped (those past the open-file budget are read into
/// memory), so the link succeeds. Each used to be mapped once the open-file budget
/// was spent, and the link failed with ENOMEM.
#[test]
fn seventy_thousand_small_inputs_link() {
    const N: usize = 70_000;
    let d = scratch("in-many");
    let mut list = String::new();
    for i in 0..N {
        let name = format!("m{i}.ptx");
        let text = if i % 2 == 0 {
            format!("{HEADER}.visible .entry k{i}() {{ ret; }}\n")
        } else {
            format!("{HEADER}.visible .func f{i}() {{ ret; }}\n")
        };
        std::fs::write(d.join(&name), text).unwrap();
        list += &name;
        list.push('\n');
    }
    std::fs::write(d.join("list"), list).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "@list"])
        .run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{}: {err}", o.status);
    let out = std::fs::read_to_string(d.join("out.ptx")).unwrap();
    for want in [
        ".entry k0()",
        ".func f1()",
        ".func f69999()",
        ".entry k69998()",
    ] {
        assert!(out.contains(want), "no {want:?} in the output");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A module defining `.visible .func NAME`, calling each of `calls`.
fn func_module(name: &str, calls: &[&str]) -> String {
    let mut s = String::from(HEADER);
    for c in calls {
        s += &format!(".extern .func {c}();\n");
    }
    s += &format!(".visible .func {name}()\n{{\n");
    for c in calls {
        s += &format!("\tcall.uni {c}, ();\n");
    }
    s + "\tret;\n}\n"
}

/// Runs `ar ARGS` in `dir`.
fn ar(dir: &Path, args: &[&str]) {
    let o = Command::new("ar")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ar {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A thin archive `lib/libk.a` whose members `sub/k1.ptx` (defines `k1`, calls
/// `k3`), `sub/k2.ptx` (defines `k2`) and `k3.ptx` (defines `k3`) live beside it,
/// and an application folder `app` with `main.ptx` (a kernel calling `k1`) and
/// decoys at the members' paths relative to `app`, which must not be read.
fn thin_fixture(name: &str) -> PathBuf {
    let d = scratch(name);
    let lib = d.join("lib");
    std::fs::create_dir_all(lib.join("sub")).unwrap();
    std::fs::write(lib.join("sub/k1.ptx"), func_module("k1", &["k3"])).unwrap();
    std::fs::write(lib.join("sub/k2.ptx"), func_module("k2", &[])).unwrap();
    std::fs::write(lib.join("k3.ptx"), func_module("k3", &[])).unwrap();
    ar(
        &lib,
        &["rcsT", "libk.a", "sub/k1.ptx", "sub/k2.ptx", "k3.ptx"],
    );
    let app = d.join("app");
    std::fs::create_dir_all(app.join("sub")).unwrap();
    let main = format!(
        "{HEADER}.extern .func k1();\n.visible .entry main_k()\n{{\n\tcall.uni k1, ();\n\tret;\n}}\n"
    );
    std::fs::write(app.join("main.ptx"), main).unwrap();
    std::fs::write(app.join("sub/k1.ptx"), "decoy: not PTX\n").unwrap();
    std::fs::write(app.join("k3.ptx"), "decoy: not PTX\n").unwrap();
    d
}

/// GNU ld reads a thin archive's members from their paths relative to the
/// archive's directory (experiment in docs/robustness.md) and selects them as it
/// selects a normal archive's; so does ptxld, and the depfile names the members'
/// files. Thin archives used to read as empty: `k1` was undefined.
#[test]
fn thin_archive_members_are_read_from_beside_the_archive() {
    let d = thin_fixture("in-thin");
    let app = d.join("app");
    let o = ptxld()
        .current_dir(&app)
        .args([
            "-o",
            "out.ptx",
            "main.ptx",
            "../lib/libk.a",
            "--dependency-file=out.d",
        ])
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = std::fs::read_to_string(app.join("out.ptx")).unwrap();
    assert!(out.contains(".visible .func k1()") && out.contains(".visible .func k3()"));
    assert!(!out.contains("k2"), "an unneeded member was loaded:\n{out}");
    let dep = std::fs::read_to_string(app.join("out.d")).unwrap();
    for f in [
        "main.ptx",
        "../lib/libk.a",
        "../lib/sub/k1.ptx",
        "../lib/sub/k2.ptx",
        "../lib/k3.ptx",
    ] {
        assert!(
            dep.contains(&format!("  {f}")),
            "{f} not in the depfile:\n{dep}"
        );
    }
    // --whole-archive loads every member.
    let o = ptxld()
        .current_dir(&app)
        .args([
            "-o",
            "all.ptx",
            "main.ptx",
            "--whole-archive",
            "../lib/libk.a",
        ])
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let all = std::fs::read_to_string(app.join("all.ptx")).unwrap();
    assert!(all.contains(".visible .func k2()"));
}

/// A member of a normal archive that GNU ar put into a thin archive (`/N:OFFSET`:
/// the archive's path and the member's offset in it) is taken from that archive,
/// as GNU ld does.
#[test]
fn thin_archive_members_of_a_normal_archive_are_read_from_it() {
    let d = thin_fixture("in-thin-nested");
    let lib = d.join("lib");
    ar(&lib, &["rcs", "libnormal.a", "sub/k2.ptx", "k3.ptx"]);
    ar(&lib, &["rcsT", "libouter.a", "sub/k1.ptx", "libnormal.a"]);
    let app = d.join("app");
    let o = ptxld()
        .current_dir(&app)
        .args(["-o", "out.ptx", "main.ptx", "../lib/libouter.a"])
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = std::fs::read_to_string(app.join("out.ptx")).unwrap();
    assert!(out.contains(".visible .func k1()") && out.contains(".visible .func k3()"));
    assert!(!out.contains("k2"), "an unneeded member was loaded:\n{out}");
}

/// A member file that is gone is an error naming the archive and the member's
/// path, with exit status 1 and no output.
#[test]
fn a_missing_thin_archive_member_is_an_error() {
    let d = thin_fixture("in-thin-missing");
    std::fs::remove_file(d.join("lib/sub/k2.ptx")).unwrap();
    let app = d.join("app");
    let o = ptxld()
        .current_dir(&app)
        .args(["-o", "out.ptx", "main.ptx", "../lib/libk.a"])
        .run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: ../lib/libk.a: member sub/k2.ptx: cannot read ../lib/sub/k2.ptx: "),
        "{err}"
    );
    assert!(!app.join("out.ptx").exists());
}

/// Read errors stop at `--error-limit`, as other errors do, with lld's line.
#[test]
fn read_errors_obey_the_error_limit() {
    let d = scratch("in-error-limit");
    let names: Vec<String> = (0..30).map(|i| format!("missing{i}.ptx")).collect();
    let mut args = vec!["--error-limit=5", "-o", "out.ptx"];
    args.extend(names.iter().map(String::as_str));
    let o = ptxld().current_dir(&d).args(&args).run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("cannot read").count(), 5, "{err}");
    assert!(
        err.contains("cannot read missing4.ptx") && !err.contains("missing5.ptx"),
        "{err}"
    );
    assert!(
        err.ends_with(
            "error: too many errors emitted, stopping now (use --error-limit=0 to see all errors)\n"
        ),
        "{err}"
    );
    // 0: every error.
    args[0] = "--error-limit=0";
    let o = ptxld().current_dir(&d).args(&args).run();
    assert_eq!(
        String::from_utf8_lossy(&o.stderr)
            .matches("cannot read")
            .count(),
        30
    );
}
