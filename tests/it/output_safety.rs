//! Trust at the edges: ptxld never destroys a file. Temporaries are created
//! exclusively (never through a planted symbolic link) and swept once their writer is
//! gone; special files (devices, FIFOs) are written in place, never replaced; no file
//! written is a file read, nor another file written; SIGINT, SIGTERM and SIGHUP leave
//! no temporary; depfiles read back by GNU make name exactly the files read; an output
//! to a closed standard output is an error.
//!
//! The tests act on running links at points they observe in /proc, never after a
//! sleep, so they are Linux-only (the module is compiled on Linux only).

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::*;

fn dir(name: &str) -> PathBuf {
    scratch(&format!("out-{name}"))
}

/// A module with one kernel `NAME`.
fn module(name: &str) -> String {
    format!(".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry {name}() {{ ret; }}\n")
}

/// Writes `module(name)` to `d/file`.
fn put(d: &Path, file: &str, name: &str) {
    std::fs::write(d.join(file), module(name)).unwrap();
}

/// The output of linking `args` (which must succeed) in `d`, to compare with.
fn expected(d: &Path, args: &[&str]) -> Vec<u8> {
    let want = d.join(".expected.ptx");
    let mut all = vec!["-o", want.to_str().unwrap()];
    all.extend(args);
    let o = ptxld().current_dir(d).args(&all).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = std::fs::read(&want).unwrap();
    std::fs::remove_file(&want).unwrap();
    bytes
}

/// Sets the modification time of `path` (not following a symbolic link) a minute
/// back, as a temporary left by a link long gone has it.
fn backdate(path: &Path) {
    let st = Command::new("touch")
        .args(["-h", "-d", "1 minute ago"])
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "touch -d {}", path.display());
}

/// Starts `ptxld -o out.ptx -Map map.fifo a.ptx` in `d` (with `extra` arguments first)
/// and returns once it holds its output's temporary open, written, and waits to open
/// the FIFO (which nobody reads): a link stopped in the middle of writing its files,
/// since it writes its output, link map and depfile before it puts any in place.
/// Also returns the temporary's name.
fn link_held_writing(d: &Path, extra: &[&str]) -> (std::process::Child, String) {
    put(d, "a.ptx", "a_k");
    if !d.join("map.fifo").exists() {
        mkfifo(&d.join("map.fifo"));
    }
    let mut args = extra.to_vec();
    args.extend(["-o", "out.ptx", "-Map", "map.fifo", "a.ptx"]);
    // Taken before the command starts, which may create its temporary at once.
    let before = temporaries(d);
    let child = ptxld().current_dir(d).args(&args).spawn();
    let pid = child.id();
    let mine = || -> Option<String> {
        temporaries(d)
            .into_iter()
            .find(|t| !before.contains(t) && has_open(pid, &d.join(t)))
    };
    wait_until("ptxld has its temporary output open", || {
        mine().is_some() || has_exited(pid)
    });
    match mine() {
        Some(t) => (child, t),
        None => panic!("ptxld exited: {}", stderr(&wait_output(child))),
    }
}

// 1. Exclusive temporaries.

/// Symbolic links planted where a temporary could be created (the old predictable
/// `.out.ptx.ptxld-PID.tmp`, and names of the new pattern) are never written through:
/// the file they point to stays as it was. A symbolic link named as the output is
/// replaced by the output (as GNU ld and lld do), its target untouched. And the output
/// has the permissions of a normally created file: 0666 less the umask.
#[test]
fn planted_symbolic_links_are_never_written_through() {
    let d = dir("planted");
    put(&d, "a.ptx", "a_k");
    put(&d, "b.ptx", "b_k");
    let want = expected(&d, &["a.ptx", "b.ptx"]);
    std::fs::write(d.join("victim"), b"precious\n").unwrap();
    // Held at its FIFO input, the link's process id is known before it writes.
    let fifo = d.join("b.fifo");
    mkfifo(&fifo);
    let writer = hold_fifo(&fifo);
    let child = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx", "b.fifo"])
        .spawn();
    let child = await_open(child, &fifo);
    let pid = child.id();
    let worker = linking_pid(pid);
    let mut planted = vec![format!(".out.ptx.ptxld-{worker}.tmp")];
    for random in ["AAAAAA", "aaaaaa", "000000"] {
        planted.push(format!(".out.ptx.ptxld-{worker}-{random}.tmp"));
    }
    for p in &planted {
        std::os::unix::fs::symlink("victim", d.join(p)).unwrap();
    }
    let mut w = writer;
    w.write_all(std::fs::read(d.join("b.ptx")).unwrap().as_slice())
        .unwrap();
    drop(w);
    let o = wait_output(child);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"precious\n");
    let out = std::fs::symlink_metadata(d.join("out.ptx")).unwrap();
    assert!(out.is_file(), "out.ptx is not a regular file: {out:?}");
    assert_eq!(std::fs::read(d.join("out.ptx")).unwrap(), want);
    // The planted links are not followed, nor taken for leftovers.
    for p in &planted {
        assert!(
            std::fs::symlink_metadata(d.join(p)).unwrap().is_symlink(),
            "{p}"
        );
    }

    // A symbolic link named as the output is replaced, its target kept.
    std::os::unix::fs::symlink("victim", d.join("link.ptx")).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "link.ptx", "a.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(d.join("link.ptx"))
        .unwrap()
        .is_file());
    assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"precious\n");

    // Permissions: 0666 less the umask, like `touch` under the same umask.
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let o = ptxld()
            .through(["sh", "-c", &format!("umask {umask} && exec \"$0\" \"$@\"")])
            .args(["-o", "perm.ptx", "a.ptx"])
            .current_dir(&d)
            .run();
        assert!(o.status.success(), "{}", stderr(&o));
        let got = std::fs::metadata(d.join("perm.ptx"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(got & 0o7777, mode, "umask {umask}");
        std::fs::remove_file(d.join("perm.ptx")).unwrap();
    }
}

// 2. Special destinations.

/// `-o` naming a character device writes into it and leaves it a device. Tested on a
/// device node made in the test's folder (the same as /dev/null), so that a ptxld that
/// replaced it would not replace the machine's /dev/null; skipped loudly where
/// `mknod` is not allowed.
#[test]
fn a_device_output_is_written_in_place() {
    let d = dir("device");
    put(&d, "a.ptx", "a_k");
    let made = Command::new("mknod")
        .args(["null", "c", "1", "3"])
        .current_dir(&d)
        .output()
        .unwrap();
    if !made.status.success() {
        eprintln!(
            "\n*** SKIP: a_device_output_is_written_in_place: mknod: {} ***\n",
            stderr(&made).trim()
        );
        return;
    }
    let o = ptxld().current_dir(&d).args(["-o", "null", "a.ptx"]).run();
    assert!(o.status.success(), "{}", stderr(&o));
    let m = std::fs::symlink_metadata(d.join("null")).unwrap();
    assert!(m.file_type().is_char_device(), "null is now {m:?}");
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
    // A failed link leaves it too.
    put(&d, "dup.ptx", "a_k");
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "null", "a.ptx", "dup.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::symlink_metadata(d.join("null"))
        .unwrap()
        .file_type()
        .is_char_device());
}

/// The real /dev/null (the test runs as root in CI, where a rename over it would
/// succeed and replace the machine's /dev/null with a file).
#[test]
fn dev_null_output_stays_a_device() {
    let d = dir("dev-null");
    put(&d, "a.ptx", "a_k");
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "/dev/null", "a.ptx"])
        .run();
    let m = std::fs::symlink_metadata("/dev/null").unwrap();
    if !m.file_type().is_char_device() {
        // A regression replaced the machine's /dev/null: put the device back before
        // failing, so that the rest of the run (and the machine) keeps working.
        let _ = std::fs::remove_file("/dev/null");
        let _ = Command::new("mknod")
            .args(["-m", "666", "/dev/null", "c", "1", "3"])
            .status();
        panic!("ptxld replaced /dev/null (it was {m:?}); restored");
    }
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(temporaries(Path::new("/dev")).is_empty());
}

/// Reads the FIFO at `path` to its end on a thread; the bytes come back when the
/// thread is joined.
fn read_fifo(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    })
}

/// A FIFO as the output (directly, or through a symbolic link) is written in place:
/// its reader gets the output, the FIFO stays a FIFO, and a failed link leaves it.
/// A symbolic link to standard output (`/proc/self/fd/1`) writes standard output.
#[test]
fn fifo_outputs_are_written_in_place() {
    let d = dir("fifo-out");
    put(&d, "a.ptx", "a_k");
    let want = expected(&d, &["a.ptx"]);
    let fifo = d.join("out.fifo");
    mkfifo(&fifo);
    std::os::unix::fs::symlink("out.fifo", d.join("link.ptx")).unwrap();
    for name in ["out.fifo", "link.ptx"] {
        let reader = read_fifo(&fifo);
        let o = ptxld().current_dir(&d).args(["-o", name, "a.ptx"]).run();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(
            std::fs::metadata(&fifo).unwrap().file_type().is_fifo(),
            "{name}: the FIFO was replaced"
        );
        assert!(std::fs::symlink_metadata(d.join("link.ptx"))
            .unwrap()
            .is_symlink());
        assert_eq!(reader.join().unwrap(), want, "{name}");
    }
    // A failed link (it fails before opening the FIFO) neither removes nor opens it.
    put(&d, "dup.ptx", "a_k");
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.fifo", "a.ptx", "dup.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));

    std::os::unix::fs::symlink("/proc/self/fd/1", d.join("stdout.ptx")).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "stdout.ptx", "a.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, want);
    assert!(std::fs::symlink_metadata(d.join("stdout.ptx"))
        .unwrap()
        .is_symlink());
}

/// A directory as the output, link map or depfile is an error, exit status 1.
#[test]
fn a_directory_output_is_an_error() {
    let d = dir("dir-out");
    put(&d, "a.ptx", "a_k");
    std::fs::create_dir(d.join("out.ptx")).unwrap();
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("error: cannot write out.ptx: is a directory"),
        "{}",
        stderr(&o)
    );
    assert!(d.join("out.ptx").is_dir());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "x.ptx", "-Map", "out.ptx", "a.ptx"])
        .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("error: cannot write out.ptx: is a directory"),
        "{}",
        stderr(&o)
    );
    // The files of the link appear together or not at all.
    assert!(!d.join("x.ptx").exists());
    assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
}

// 3. No file written is a file read, nor another file written.

/// Every way a link could write over a file it read (or over another file it writes)
/// is refused with exit status 1, before anything is written: the file is byte for
/// byte what it was, and no old output is removed.
#[test]
fn files_written_are_never_files_read() {
    let d = dir("same-file");
    put(&d, "a.ptx", "a_k");
    put(&d, "b.ptx", "b_k");
    std::fs::create_dir(d.join("lib")).unwrap();
    let ar = Command::new("ar")
        .args(["rcs", "lib/libk.a", "b.ptx"])
        .current_dir(&d)
        .output()
        .expect("ar (binutils)");
    assert!(ar.status.success(), "{}", stderr(&ar));
    std::fs::write(d.join("args.rsp"), "a.ptx\n").unwrap();
    std::fs::write(d.join("old.ptx"), "old output\n").unwrap();
    std::fs::write(d.join("old.map"), "old map\n").unwrap();
    std::fs::hard_link(d.join("a.ptx"), d.join("hard.ptx")).unwrap();
    std::os::unix::fs::symlink("a.ptx", d.join("soft.ptx")).unwrap();
    std::fs::write(d.join("bad.ptx"), "not ptx at all\n").unwrap();
    let files = [
        "a.ptx",
        "lib/libk.a",
        "args.rsp",
        "old.ptx",
        "old.map",
        "hard.ptx",
        "soft.ptx",
    ];
    let snapshot = || -> Vec<Vec<u8>> {
        files
            .iter()
            .map(|f| std::fs::read(d.join(f)).unwrap())
            .collect()
    };
    let before = snapshot();
    let cases: &[(&[&str], &str)] = &[
        (
            &["-o", "lib/libk.a", "-L", "lib", "-lk", "a.ptx"],
            "error: output file lib/libk.a is the same file as input lib/libk.a (found \
             through -lk); refusing to overwrite it",
        ),
        (
            &["-o", "args.rsp", "@args.rsp"],
            "error: output file args.rsp is the same file as response file args.rsp; \
             refusing to overwrite it",
        ),
        (
            &["-o", "old.ptx", "-Map", "a.ptx", "a.ptx"],
            "error: -Map file a.ptx is the same file as input a.ptx; refusing to overwrite it",
        ),
        (
            &["-o", "old.ptx", "-Map", "./old.ptx", "a.ptx"],
            "error: -Map file ./old.ptx is the same file as the output file old.ptx; \
             refusing to overwrite it",
        ),
        (
            &[
                "-o",
                "old.ptx",
                "--dependency-file",
                "lib/libk.a",
                "-Llib",
                "-lk",
                "a.ptx",
            ],
            "error: dependency file lib/libk.a is the same file as input lib/libk.a (found \
             through -lk); refusing to overwrite it",
        ),
        (
            &["-o", "old.ptx", "--dependency-file", "old.ptx", "a.ptx"],
            "error: dependency file old.ptx is the same file as the output file old.ptx; \
             refusing to overwrite it",
        ),
        (
            &[
                "-o",
                "old.ptx",
                "-Map",
                "old.map",
                "--dependency-file=lib/../old.map",
                "a.ptx",
            ],
            "error: dependency file lib/../old.map is the same file as the -Map file old.map; \
             refusing to overwrite it",
        ),
        (
            &[
                "-o",
                "new.ptx",
                "-Map",
                "new.txt",
                "--dependency-file=lib/../new.txt",
                "a.ptx",
            ],
            "error: dependency file lib/../new.txt is the same file as the -Map file new.txt; \
             refusing to overwrite it",
        ),
        (
            &["-o", "hard.ptx", "a.ptx"],
            "error: output file hard.ptx is the same file as input a.ptx; refusing to \
             overwrite it",
        ),
        (
            &["-o", "soft.ptx", "a.ptx"],
            "error: output file soft.ptx is the same file as input a.ptx; refusing to \
             overwrite it",
        ),
        (
            &["-o", "old.ptx", "-Map", "soft.ptx", "a.ptx"],
            "error: -Map file soft.ptx is the same file as input a.ptx; refusing to \
             overwrite it",
        ),
        (
            &["-o", "-", "--print-map", "a.ptx"],
            "error: -o - and --print-map both write standard output",
        ),
        (
            &["-o", "-", "-Map", "-", "a.ptx"],
            "error: -o - and -Map - both write standard output",
        ),
        // The link fails (bad.ptx) before it could be refused: the failure removes an
        // old output, but never one that is an input.
        (
            &["-o", "lib/libk.a", "-L", "lib", "-lk", "bad.ptx"],
            "bad.ptx",
        ),
        (&["-o", "a.ptx", "bad.ptx", "a.ptx"], "bad.ptx"),
        (&["-o", "args.rsp", "@args.rsp", "bad.ptx"], "bad.ptx"),
    ];
    for (args, error) in cases {
        let o = ptxld().current_dir(&d).args(*args).run();
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(error), "{args:?}: {}", stderr(&o));
        assert!(snapshot() == before, "{args:?} changed a file");
        assert!(!d.join("new.ptx").exists() && !d.join("new.txt").exists());
        assert!(temporaries(&d).is_empty(), "{:?}", temporaries(&d));
    }

    // Standard output appending to an input (`ptxld -o - a.ptx >> a.ptx`).
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("a.ptx"))
        .unwrap();
    let o = ptxld()
        .args(["-o", "-", "a.ptx"])
        .current_dir(&d)
        .stdout(Stdio::from(append))
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "error: standard output (-o -) is the same file as input a.ptx; refusing to \
             overwrite it"
        ),
        "{}",
        stderr(&o)
    );
    assert!(snapshot() == before);
}

// 4. Stale temporaries.

/// Leftover temporaries of the output (unlocked and not written for a while) are
/// removed by the next link of it, also those of older ptxld versions; a fresh one,
/// one locked by a live link, and anything that is not a regular file are kept, and
/// the link never blocks on a FIFO named like a temporary.
#[test]
fn stale_temporaries_are_swept() {
    let d = dir("sweep");
    put(&d, "a.ptx", "a_k");
    std::fs::write(d.join("victim"), b"precious\n").unwrap();
    let stale = [
        ".out.ptx.ptxld-99999999.tmp",
        ".out.ptx.ptxld-99999999-stale1.tmp",
    ];
    let fresh = ".out.ptx.ptxld-99999999-fresh1.tmp";
    let other = ".other.ptx.ptxld-99999999-stale2.tmp";
    let (link, fifo, subdir) = (
        ".out.ptx.ptxld-99999999-link.tmp",
        ".out.ptx.ptxld-99999999-fifo.tmp",
        ".out.ptx.ptxld-99999999-dir.tmp",
    );
    for t in stale.iter().chain([&fresh, &other]) {
        std::fs::write(d.join(t), b"left over\n").unwrap();
    }
    std::os::unix::fs::symlink("victim", d.join(link)).unwrap();
    mkfifo(&d.join(fifo));
    std::fs::create_dir(d.join(subdir)).unwrap();
    for t in stale.iter().chain([&other, &link, &fifo, &subdir]) {
        backdate(&d.join(t));
    }
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "a.ptx"])
            .spawn(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let mut kept = vec![fresh, other, link, fifo, subdir];
    kept.sort();
    assert_eq!(temporaries(&d), kept);
    assert_eq!(std::fs::read(d.join("victim")).unwrap(), b"precious\n");

    // A link held while writing its own temporary, which is locked, made to look old:
    // another link of the output keeps it.
    let (held, held_tmp) = link_held_writing(&d, &[]);
    backdate(&d.join(&held_tmp));
    let o = wait_output(
        ptxld()
            .current_dir(&d)
            .args(["-o", "out.ptx", "a.ptx"])
            .spawn(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        d.join(&held_tmp).exists(),
        "the live link's {held_tmp} was swept"
    );
    // Stopped, the held link removes it itself.
    send_signal(held.id(), "TERM");
    let o = wait_output(held);
    assert_eq!(o.status.code(), Some(143), "{}", stderr(&o));
    assert!(!d.join(&held_tmp).exists());

    // A link killed outright (SIGKILL) leaves its temporary; once it is old, the next
    // link of the output removes it.
    let (held, held_tmp) = link_held_writing(&d, &[]);
    let worker = linking_pid(held.id());
    send_signal(worker, "KILL");
    let status = wait_output(held).status;
    assert_eq!(status.code(), None, "killed: {status}");
    assert!(d.join(&held_tmp).exists(), "SIGKILL left nothing to sweep");
    backdate(&d.join(&held_tmp));
    let o = ptxld()
        .current_dir(&d)
        .args(["-o", "out.ptx", "a.ptx"])
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!d.join(&held_tmp).exists(), "{held_tmp} was not swept");
}

// 5, 6. Signals.

/// SIGINT, SIGTERM and SIGHUP while the output is being written, or while ptxld waits
/// for an input, remove the temporary and end the command with 128 + the signal's
/// number, forked (the default: the parent passes the signal on) or not.
#[test]
fn signals_remove_temporaries_and_exit_128_plus_n() {
    let d = dir("signals");
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        for extra in [&[][..], &["--no-fork"][..]] {
            let what = format!("SIG{signal} {extra:?}");
            // While waiting for a FIFO input.
            let fifo = d.join("in.fifo");
            if !fifo.exists() {
                mkfifo(&fifo);
            }
            put(&d, "a.ptx", "a_k");
            let writer = hold_fifo(&fifo);
            let mut args = extra.to_vec();
            args.extend(["-o", "out.ptx", "a.ptx", "in.fifo"]);
            let child = await_open(ptxld().current_dir(&d).args(&args).spawn(), &fifo);
            let pid = child.id();
            send_signal(pid, signal);
            let o = wait_output(child);
            drop(writer);
            assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
            assert!(!d.join("out.ptx").exists(), "{what}: output written");
            assert!(temporaries(&d).is_empty(), "{what}: {:?}", temporaries(&d));

            // While writing.
            let (child, tmp) = link_held_writing(&d, extra);
            send_signal(child.id(), signal);
            let o = wait_output(child);
            assert_eq!(o.status.code(), Some(code), "{what}: {}", stderr(&o));
            assert!(!d.join(&tmp).exists(), "{what}: {tmp} left");
            assert!(!d.join("out.ptx").exists(), "{what}: output written");
            assert!(temporaries(&d).is_empty(), "{what}: {:?}", temporaries(&d));
        }
    }
}

// 7. Depfiles.

/// GNU make, or `None` after saying so loudly (a failure in CI, which has it).
fn make() -> Option<&'static str> {
    if Command::new("make").arg("--version").output().is_ok() {
        return Some("make");
    }
    assert!(std::env::var_os("CI").is_none(), "CI must have GNU make");
    eprintln!("\n*** SKIPPED: GNU make not found ***\n");
    None
}

/// Runs `make -q TARGET` in `d`: true if make says the target is up to date.
fn up_to_date(make: &str, d: &Path, target: &str) -> bool {
    let o = Command::new(make)
        .args(["-q", target])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "make -q {target}: {}",
        stderr(&o)
    );
    o.status.code() == Some(0)
}

/// Sets the modification time of `path` (`touch -d`).
fn touch(path: &Path, when: &str) {
    let st = Command::new("touch")
        .args(["-h", "-d", when])
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success());
}

/// A depfile read back by GNU make names exactly the files read, whatever their
/// names: with every input older than the output, make finds the output up to date
/// (so every name it parsed is an existing file), and touching any one input makes it
/// out of date (so that input's name was parsed right). Files that make would glob
/// the wildcard names into are present. Once an input is deleted or renamed, make
/// still runs (no "No rule to make target"): each input has an empty rule.
#[test]
fn make_reads_the_dependency_file_back() {
    let Some(make) = make() else {
        return;
    };
    let d = dir("depfile-make");
    let names = [
        "sp ace.ptx",
        "ha#sh.ptx",
        "dol$lar.ptx",
        "co:lon.ptx",
        "pct%.ptx",
        "star*.ptx",
        "brk[1].ptx",
        "qu?x.ptx",
        "back\\ slash.ptx",
        "back\\#slash.ptx",
        "back\\:slash.ptx",
        "~tilde.ptx",
        "pa(re)n{s}!@,+.ptx",
        "glob\\*mix [x].ptx",
    ];
    for (i, n) in names.iter().enumerate() {
        put(&d, n, &format!("k{i}"));
    }
    // What the wildcard names would match if make globbed them unescaped.
    for decoy in ["starX.ptx", "brk1.ptx", "quAx.ptx"] {
        put(&d, decoy, "decoy");
    }
    let mut args = vec!["-o", "o%ut put.ptx", "--dependency-file", "out.d"];
    args.extend(names);
    let o = ptxld().current_dir(&d).args(&args).run();
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(
        d.join("Makefile"),
        "all: o%ut\\ put.ptx\n\n\
         o\\%ut\\ put.ptx:\n\t@echo relink\n\n\
         include out.d\n",
    )
    .unwrap();
    let out = d.join("o%ut put.ptx");
    touch(&out, "1 minute ago");
    for n in names {
        touch(&d.join(n), "2 minutes ago");
    }
    assert!(
        up_to_date(make, &d, "o%ut put.ptx"),
        "make does not find the output up to date:\n{}",
        String::from_utf8_lossy(&std::fs::read(d.join("out.d")).unwrap())
    );
    for n in names {
        touch(&d.join(n), "now");
        assert!(
            !up_to_date(make, &d, "o%ut put.ptx"),
            "{n} newer, make sees no change"
        );
        touch(&d.join(n), "2 minutes ago");
    }
    // Inputs deleted and renamed.
    std::fs::remove_file(d.join("co:lon.ptx")).unwrap();
    std::fs::rename(d.join("sp ace.ptx"), d.join("space.ptx")).unwrap();
    let o = Command::new(make).current_dir(&d).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "relink\n");
}

/// Standard input is no file for make: it is left out of the depfile. A file name
/// make cannot read back in a rule (a newline, a tab, `;`, `=`, a backslash at its
/// end) fails the link, exit status 1, with no output and no depfile.
#[test]
fn dependency_file_names_make_cannot_read_are_refused() {
    let d = dir("depfile-refused");
    put(&d, "a.ptx", "a_k");
    let o = ptxld()
        .args(["-o", "out.ptx", "--dependency-file", "out.d", "a.ptx", "-"])
        .current_dir(&d)
        .stdin(module("b_k"))
        .run();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(d.join("out.d")).unwrap(),
        "out.ptx: \\\n  a.ptx\n\na.ptx:\n"
    );
    for (name, what) in [
        ("new\nline.ptx", "\"new\\nline.ptx\" contains a newline"),
        ("ta\tb.ptx", "\"ta\\tb.ptx\" contains a tab"),
        ("semi;colon.ptx", "\"semi;colon.ptx\" contains `;`"),
        ("eq=uals.ptx", "\"eq=uals.ptx\" contains `=`"),
        ("end\\", "\"end\\\" contains a backslash at its end"),
    ] {
        put(&d, name, "n_k");
        let o = ptxld()
            .current_dir(&d)
            .args(["-o", "new.ptx", "--dependency-file", "new.d", name])
            .run();
        assert_eq!(o.status.code(), Some(1), "{name:?}: {}", stderr(&o));
        let want = format!("error: cannot write the dependency file: the file name {what}");
        assert!(stderr(&o).contains(&want), "{name:?}: {}", stderr(&o));
        assert!(!d.join("new.ptx").exists() && !d.join("new.d").exists());
    }
}

// 8. A closed standard output.

/// `-o -` into a pipe whose reader has gone is an error: the output was not written
/// (the link map, --help and the rest stay quiet, cli.rs).
#[test]
fn output_to_a_closed_standard_output_is_an_error() {
    let d = dir("closed-stdout");
    put(&d, "a.ptx", "a_k");
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let o = ptxld()
        .args(["-o", "-", "a.ptx"])
        .current_dir(&d)
        .stdout(Stdio::from(writer))
        .run();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("error: cannot write standard output: Broken pipe"),
        "{}",
        stderr(&o)
    );
}
