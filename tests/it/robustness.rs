//! Hostile and broken inputs: each is refused with a located, actionable message,
//! exit status 1 and no output file; nothing panics, hangs, or recurses without bound.
//! And a property: linking a linked module again reproduces it byte for byte.

use std::path::{Path, PathBuf};

use crate::support::*;

fn dir(name: &str) -> PathBuf {
    scratch(&format!("rob-{name}"))
}

const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// Links `text` as `in.ptx`; expects exit 1, `want` in stderr, no output, no panic.
fn refused(name: &str, text: &[u8], want: &str) {
    let (d, o) = link_text(name, text);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{name}: {err}");
    assert!(err.contains(want), "{name}: expected {want:?} in:\n{err}");
    assert!(!err.contains("panicked"), "{name}: {err}");
    assert!(!d.join("out.ptx").exists(), "{name}: output written");
    let leftovers = std::fs::read_dir(&d).unwrap().count();
    assert_eq!(leftovers, 1, "{name}: temporary files left");
}

/// Links `text`, as `in.ptx` in a fresh directory named `name`, into `out.ptx` there.
fn link_text(name: &str, text: &[u8]) -> (std::path::PathBuf, std::process::Output) {
    let d = dir(name);
    std::fs::write(d.join("in.ptx"), text).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "in.ptx"])
        .run();
    (d, o)
}

/// A module cut at every byte: never a panic. (Broken inputs with their exact
/// messages are fixtures/broken, broken.rs.)
#[test]
fn truncated_inputs_never_panic() {
    let full = format!(
        "{HEADER}.visible .global .u32 g = 1;\n.visible .entry k (.param .u64 p)\n{{\n\tret;\n}}\n"
    );
    let d = dir("cuts");
    for cut in HEADER.len()..full.len() {
        std::fs::write(d.join("c.ptx"), &full.as_bytes()[..cut]).unwrap();
        let o = ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "c.ptx"])
            .run();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "cut at {cut}: {err}");
        let _ = std::fs::remove_file(d.join("out.ptx"));
    }
}

#[test]
fn line_endings_and_a_header_only_module_are_fine() {
    // Lone CR line ends (ptxas accepts them) give the right line numbers too:
    // fixtures/broken/cr-line-ends.stderr.
    let d = dir("crlf");
    let crlf = format!("{HEADER}.visible .global .u32 g = 1;\n").replace('\n', "\r\n");
    std::fs::write(d.join("crlf.ptx"), crlf).unwrap();
    std::fs::write(d.join("hdr.ptx"), HEADER).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "crlf.ptx", "hdr.ptx"])
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_ptxas_accepts(&d, "out.ptx", "sm_80");
}

#[test]
fn enormous_names_deep_nesting_and_huge_numbers_stay_bounded() {
    // A 1 MB identifier links.
    let long = "x".repeat(1 << 20);
    let text = format!("{HEADER}.visible .global .u32 {long};\n");
    let (_, o) = link_text("long", text.as_bytes());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // 100,000 nested braces in a body and in an initializer: no stack overflow.
    let deep_body = format!(
        "{HEADER}.visible .entry k ()\n{}ret;{}\n",
        "{".repeat(100_001),
        "}".repeat(100_001)
    );
    let (_, o) = link_text("deep", deep_body.as_bytes());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    refused(
        "deep-init",
        format!(
            "{HEADER}.global .u32 a[1] = {}1{};\n",
            "{".repeat(100_000),
            "}".repeat(100_000)
        )
        .as_bytes(),
        "initializer nested too deeply",
    );
    refused(
        "deep-expr",
        format!(
            "{HEADER}.global .u32 a = {}1{};\n",
            "(".repeat(100_000),
            ")".repeat(100_000)
        )
        .as_bytes(),
        "nested too deeply",
    );
    // Numbers that do not fit: errors, not allocations (and
    // fixtures/broken/array-size-over-64-bits.ptx).
    let text = format!("{HEADER}.visible .global .u8 a[4294967296][4294967296];\n");
    let (_, o) = link_text("huge", text.as_bytes());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("panicked"));
}

#[test]
fn paths_that_cannot_work() {
    let d = dir("paths");
    std::fs::write(
        d.join("a.ptx"),
        format!("{HEADER}.visible .global .u32 g;\n"),
    )
    .unwrap();
    // A directory as input.
    let o = ptxld().current_dir(&d).args(["-o", "out.ptx", "."]).run();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("is a directory"));
    // The same input twice.
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx", "./a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("./a.ptx is given twice (also as a.ptx)"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Output into a directory that does not exist.
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "missing/out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot write missing/out.ptx"));
    assert!(!d.join("missing").exists());
    // -o naming an input.
    let before = std::fs::read(d.join("a.ptx")).unwrap();
    let o = ptxld().current_dir(&d).args(["-o", "a.ptx", "a.ptx"]).run();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(std::fs::read(d.join("a.ptx")).unwrap(), before);
}

/// Linking is idempotent: the output of a link, linked alone, is the same bytes.
#[test]
fn relinking_an_output_reproduces_it() {
    let d = dir("relink");
    for case in [
        "real-all-producers",
        "real-all-producers-with-dwarf",
        "local-llvm-str-collision",
        "common-sizes-largest",
    ] {
        let inputs = case_inputs(case);
        let once = d.join(format!("{case}-1.ptx"));
        let twice = d.join(format!("{case}-2.ptx"));
        let mut args = vec!["-o", once.to_str().unwrap()];
        args.extend(inputs.iter().map(String::as_str));
        assert!(ptxld().current_dir(&d).args(&args).run().status.success());
        let o = ptxld()
            .current_dir(&d)
            .args(["-o", twice.to_str().unwrap(), once.to_str().unwrap()])
            .run();
        assert!(
            o.status.success(),
            "{case}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            std::fs::read(&once).unwrap() == std::fs::read(&twice).unwrap(),
            "{case}: relinking changed the output"
        );
    }
}

/// Inputs the fuzzers found crashes with (fixtures/containers/fuzz): refused cleanly.
#[test]
fn fuzzer_findings_stay_fixed() {
    let d = root().join("fixtures/containers/fuzz");
    let mut n = 0;
    for e in std::fs::read_dir(&d).unwrap().flatten() {
        let o = ptxld()
            .current_dir(&d)
            .args(["--syntax-only", e.path().to_str().unwrap()])
            .run();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", e.path().display());
        assert!(err.contains("corrupt fatbin"), "{err}");
        n += 1;
    }
    assert!(n >= 1);
}

// Files that are not plain files, inputs changed during the link, Ctrl-C, and
// permissions. The tests act on a running ptxld at points they observe in /proc
// (which files it has open), never after a sleep, so they are Linux-only.

/// Asserts that the link in `d` failed with exit status 1 and an error containing
/// `error`, leaving neither `out.ptx` nor a temporary file.
#[cfg(target_os = "linux")]
fn failed_leaving_nothing(o: &std::process::Output, d: &Path, error: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(error), "{err}");
    assert!(!d.join("out.ptx").exists());
    assert!(temporaries(d).is_empty(), "{:?}", temporaries(d));
}

/// A module defining `.visible .global .u32 NAME`.
#[cfg(target_os = "linux")]
fn module(name: &str) -> String {
    format!("{HEADER}.visible .global .u32 {name} = 1;\n")
}

/// Writes `text` to a FIFO through `writer`, the test's own read-write descriptor of
/// it (see `hold_fifo`), and closes that: the reader gets `text`, then end of file.
#[cfg(target_os = "linux")]
fn feed(mut writer: std::fs::File, text: &str) {
    use std::io::Write;
    writer.write_all(text.as_bytes()).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn fifo_without_a_writer_is_refused_without_blocking() {
    let d = dir("fifo-no-writer");
    mkfifo(&d.join("x.fifo"));
    // Before, ptxld blocked in open() forever here (as `cat x.fifo` does).
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "x.fifo"])
            .spawn(),
    );
    failed_leaving_nothing(&o, &d, "error: x.fifo: is a FIFO with no writer; ");
    // The same for --syntax-only, which reads inputs in parallel.
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["--syntax-only", "x.fifo"])
            .spawn(),
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("x.fifo: is a FIFO with no writer"));
}

#[cfg(target_os = "linux")]
#[test]
fn fifo_with_a_connected_writer_is_read_fully() {
    let d = dir("fifo-writer");
    std::fs::write(d.join("a.ptx"), module("a_var")).unwrap();
    // More than a pipe holds (64 KiB), so ptxld reads while the writer still writes.
    let long = "b".repeat(300_000);
    let b = module(&long);
    std::fs::write(d.join("b.ptx"), &b).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "want.ptx", "a.ptx", "b.ptx"])
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = std::fs::read(d.join("want.ptx")).unwrap();

    // A named FIFO whose writer is open before ptxld opens it, and writes after.
    let fifo = d.join("b.fifo");
    mkfifo(&fifo);
    let writer = hold_fifo(&fifo);
    let child = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx", "b.fifo"])
        .spawn();
    let child = await_open(child, &fifo);
    feed(writer, &b);
    let o = wait_output(child);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(d.join("out.ptx")).unwrap() == want);

    // Bash process substitution: an anonymous pipe with its writer (cat) connected.
    let o = ptxld()
        .through(["bash", "-c", "exec \"$0\" \"$@\" <(cat b.ptx)"])
        .args(["-o", "subst.ptx", "a.ptx"])
        .current_dir(&d)
        .run();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(d.join("subst.ptx")).unwrap() == want);
}

/// An input that changes after ptxld read it fails the link: ptxld reads (maps) the
/// inputs one after the other in command-line order on its main thread, whatever the
/// thread count, so once it has the FIFO `b.fifo` open it has read `a.ptx`, and an
/// append to `a.ptx` then is a change during the link, which the stamp taken at read
/// time reveals.
#[cfg(target_os = "linux")]
#[test]
fn input_changed_during_the_link_fails_it() {
    let d = dir("changed");
    let fifo = d.join("b.fifo");
    mkfifo(&fifo);
    // Links `a.ptx` and the FIFO to `output`, appending to `a.ptx` (if `change`)
    // once ptxld has read it.
    let link = |output: &str, change: bool| {
        std::fs::write(d.join("a.ptx"), module("a_var")).unwrap();
        let writer = hold_fifo(&fifo);
        let child = ptxld()
            .current_dir(&d)
            .args(["-o", output, "a.ptx", "b.fifo"])
            .spawn();
        let child = await_open(child, &fifo);
        if change {
            use std::io::Write;
            let mut a = std::fs::OpenOptions::new()
                .append(true)
                .open(d.join("a.ptx"))
                .unwrap();
            a.write_all(b".visible .global .u32 late = 2;\n").unwrap();
        }
        feed(writer, &module("b_var"));
        wait_output(child)
    };
    // The control: the same link without the change succeeds.
    let o = link("out.ptx", false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_file(d.join("out.ptx")).unwrap();
    let message = "error: input a.ptx changed while ptxld was linking it; run the link again";
    failed_leaving_nothing(&link("out.ptx", true), &d, message);
    // To standard output, which cannot be taken back: nothing is written.
    let o = link("-", true);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty(), "{} bytes written", o.stdout.len());
    assert!(String::from_utf8_lossy(&o.stderr).contains(message));
}

/// A ptxld linking `a.ptx` and the FIFO `b.fifo` in a new folder `name`, once it waits
/// for the FIFO's data: the folder, the FIFO's writer (ptxld waits while it is held)
/// and the process.
#[cfg(target_os = "linux")]
fn link_waiting_for_a_fifo(name: &str) -> (PathBuf, std::fs::File, std::process::Child) {
    let d = dir(name);
    std::fs::write(d.join("a.ptx"), module("a_var")).unwrap();
    let fifo = d.join("b.fifo");
    mkfifo(&fifo);
    let writer = hold_fifo(&fifo);
    let child = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx", "b.fifo"])
        .spawn();
    let child = await_open(child, &fifo);
    (d, writer, child)
}

/// Ctrl-C while ptxld waits for an input: exit status 130, no output, no temporary.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_while_reading_exits_130_and_leaves_nothing() {
    let (d, _writer, child) = link_waiting_for_a_fifo("sigint-read");
    interrupt(child.id());
    let o = wait_output(child);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!d.join("out.ptx").exists());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
}

/// The command forks and a child links (src/bin/ptxld/early_exit.rs). Killed outright (SIGKILL
/// leaves it no chance to pass the signal on) while the child waits for an input, the
/// command takes the child with it (the kernel's parent-death signal): nothing goes on
/// linking in the background, and no output or temporary file is left.
#[cfg(target_os = "linux")]
#[test]
fn killing_the_command_stops_its_linking_child() {
    let (d, _writer, mut child) = link_waiting_for_a_fifo("sigkill-parent");
    let worker = linking_pid(child.id());
    assert_ne!(worker, child.id(), "ptxld links in a child by default");
    send_signal(child.id(), "KILL");
    // Not `wait_output`: a child left running would hold the output pipes open.
    let status = child.wait().unwrap();
    assert_eq!(status.code(), None, "killed by a signal: {status}");
    wait_until("the linking child exits", || has_exited(worker));
    assert!(!d.join("out.ptx").exists());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
}

/// Ctrl-C while the output is being written removes its temporary file. A link writes
/// its output, link map and dependency file first and puts them in place together
/// after, so with `-Map` naming a FIFO that nobody reads, ptxld waits to open the FIFO
/// with the output's temporary file (`.out.ptx.ptxld-PID-RANDOM.tmp`) written and not
/// yet renamed. The SIGINT handler must then remove it.
#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_while_writing_removes_the_temporary_file() {
    let d = dir("sigint-write");
    std::fs::write(d.join("a.ptx"), module("a_var")).unwrap();
    mkfifo(&d.join("map.fifo"));
    let child = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "-Map", "map.fifo", "a.ptx"])
        .spawn();
    let pid = child.id();
    wait_until("ptxld has its temporary output open", || {
        temporaries(&d).iter().any(|t| has_open(pid, &d.join(t))) || has_exited(pid)
    });
    let tmp = temporaries(&d);
    assert_eq!(tmp.len(), 1, "{tmp:?}");
    interrupt(child.id());
    let o = wait_output(child);
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        temporaries(&d).is_empty(),
        "the SIGINT handler left {tmp:?}"
    );
    assert!(!d.join("out.ptx").exists());
}

/// How to run ptxld without the power to ignore file permissions: directly for an
/// ordinary user, through `setpriv` as user and group 65534 (nobody) for root, which
/// CI runs as. `Err` gives the reason it is not possible.
#[cfg(target_os = "linux")]
fn unprivileged_ptxld(d: &Path) -> Result<Ptxld, String> {
    let uid = euid().ok_or("cannot read the user id from /proc/self/status")?;
    if uid == 0 {
        // The test directory must be usable by that user: it writes its output there.
        std::os::unix::fs::chown(d, Some(65534), Some(65534))
            .map_err(|e| format!("cannot chown {}: {e}", d.display()))?;
    }
    let nobody = || {
        let p = ptxld().current_dir(d);
        if uid == 0 {
            p.through([
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ])
        } else {
            p
        }
    };
    let probe = nobody().arg("--version").command();
    let o = nobody()
        .arg("--version")
        .command()
        .output()
        .map_err(|e| format!("cannot run {probe:?}: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "{probe:?} fails: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(nobody())
}

#[cfg(target_os = "linux")]
#[test]
fn unreadable_input_and_read_only_output_directory() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir("permissions");
    let nobody = match unprivileged_ptxld(&d) {
        Ok(c) => c,
        Err(why) => {
            skip("unreadable_input_and_read_only_output_directory", &why);
            return;
        }
    };
    let mode = |p: &Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    };
    std::fs::write(d.join("a.ptx"), module("a_var")).unwrap();
    std::fs::write(d.join("secret.ptx"), module("s_var")).unwrap();
    mode(&d.join("secret.ptx"), 0o000);
    std::fs::create_dir(d.join("ro")).unwrap();
    mode(&d.join("ro"), 0o555);
    // An ordinary user with CAP_DAC_OVERRIDE could still read: nothing to test then.
    if euid() != Some(0) && std::fs::read(d.join("secret.ptx")).is_ok() {
        skip(
            "unreadable_input_and_read_only_output_directory",
            "permissions do not stop this user",
        );
        return;
    }

    let o = nobody.args(["-o", "out.ptx", "a.ptx", "secret.ptx"]).run();
    failed_leaving_nothing(&o, &d, "error: cannot read secret.ptx: Permission denied");

    let nobody = unprivileged_ptxld(&d).unwrap();
    let o = nobody.args(["-o", "ro/out.ptx", "a.ptx"]).run();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: cannot write ro/out.ptx: Permission denied"),
        "{err}"
    );
    assert!(std::fs::read_dir(d.join("ro")).unwrap().next().is_none());
    mode(&d.join("ro"), 0o755);
    mode(&d.join("secret.ptx"), 0o644);
}
