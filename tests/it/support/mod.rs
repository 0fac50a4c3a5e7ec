//! What the integration tests share: running `ptxld`, fixture discovery, NVIDIA tools,
//! skips, processes observed in /proc, and expected files (`expect`).

use std::path::{Path, PathBuf};

mod expect;
pub mod huge_module;
mod run;

pub use expect::*;
pub use run::*;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty scratch directory for one test, under cargo's per-target
/// temporary folder: each run replaces the last one's files instead of leaving
/// another set in the system's temporary directory, and `cargo clean` removes it.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every `*.ptx` file below `dir`, sorted.
pub fn ptx_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The valid real-producer and hand-written fixtures (everything under fixtures/ptx
/// except the deliberately broken `bad/` and `*-invalid/` files and raw GCC output).
pub fn valid_fixtures() -> Vec<PathBuf> {
    valid_ptx_under(&root().join("fixtures/ptx"))
}

/// The `.ptx` files under `dir` but the deliberately broken ones (in `broken/`,
/// `bad/` or `*-invalid/`) and raw GCC output (`gcc-raw/`).
pub fn valid_ptx_under(dir: &Path) -> Vec<PathBuf> {
    ptx_files(dir)
        .into_iter()
        .filter(|p| {
            !p.components().any(|c| {
                let c = c.as_os_str().to_string_lossy();
                c == "broken" || c == "bad" || c == "gcc-raw" || c.ends_with("-invalid")
            })
        })
        .collect()
}

/// The PTX ISA versions up to 8.8 (ptxas 12.9), in order.
pub const PTX_VERSIONS: &[&str] = &[
    "1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "2.0", "2.1", "2.2", "2.3", "3.0", "3.1", "3.2",
    "4.0", "4.1", "4.2", "4.3", "5.0", "6.0", "6.1", "6.2", "6.3", "6.4", "6.5", "7.0", "7.1",
    "7.2", "7.3", "7.4", "7.5", "7.6", "7.7", "7.8", "8.0", "8.1", "8.2", "8.3", "8.4", "8.5",
    "8.6", "8.7", "8.8",
];

/// `f` of every item, on `threads` threads (consecutive shares), in the items' order.
/// For tests that run many short tool processes: they keep both cores busy.
pub fn in_parallel<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: impl Fn(usize, &T) -> R + Sync,
) -> Vec<R> {
    let share = items.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let f = &f;
        let runs: Vec<_> = items
            .chunks(share)
            .enumerate()
            .map(|(c, chunk)| {
                s.spawn(move || {
                    let indexed = chunk.iter().enumerate();
                    indexed
                        .map(|(i, t)| f(c * share + i, t))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    })
}

/// Fixtures of one producer directory (llvm, gcc, nvrtc, nvvm, libdevice, hand).
pub fn producer_fixtures(producer: &str) -> Vec<PathBuf> {
    ptx_files(&root().join("fixtures/ptx").join(producer))
}

/// Says that the calling test cannot run and why, where `cargo test` shows it: on
/// the process's standard error itself, which the test harness does not capture (it
/// captures only `print!` and `eprint!`). In CI (`CI` set) every tool is installed and
/// nothing may skip: there it fails the test instead.
pub fn skip(test: &str, why: &str) {
    use std::io::Write as _;
    if std::env::var_os("CI").is_some() {
        panic!("{test} cannot run in CI: {why}");
    }
    let line = format!("\n*** SKIPPED {test}: {why} ***\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Finds an NVIDIA tool: the environment variable `var`, else `default` under
/// `.tools/nv`. Returns `None` (after [`skip`] said so) when it is missing; in CI,
/// where every tool is installed, a missing one fails the test.
pub fn nvidia_tool(var: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".tools/nv").join(default));
    if path.exists() {
        return Some(path);
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    skip(
        &test,
        &format!(
            "{var} not found at {}; run scripts/install-tools.sh (or `just tools`)",
            path.display()
        ),
    );
    None
}

/// Runs the test `name` again in a child process of this test binary, with `child`
/// set to `dir`, `PTXAS` to `ptxas` and `NVJITLINK` to nvJitLink where it is
/// installed, and asserts that it passed: a library call that reads them from the
/// process's environment cannot have them set while other tests run. The test,
/// finding `child` set, does its part and returns.
pub fn in_child_with_ptxas(name: &str, child: &str, dir: &Path, ptxas: &Path) {
    let nvjitlink = std::env::var_os("NVJITLINK_SO")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".tools/nv/nvidia/nvjitlink/lib/libnvJitLink.so.12"));
    let o = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(child, dir)
        .env("PTXAS", ptxas)
        .env("NVJITLINK", nvjitlink)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("1 passed"), "the child ran no test: {out}");
}

/// Whether ptxld `args` make a partial link (`-r`), whose output may keep imports:
/// ptxas assembles it separately (`-c`), as a module of a program.
pub fn is_partial_link(args: &[String]) -> bool {
    args.iter().any(|a| a == "-r" || a == "--relocatable")
}

pub fn ptxas() -> Option<PathBuf> {
    nvidia_tool("PTXAS", "nvidia/cuda_nvcc/bin/ptxas")
}

/// Whole-program ptxas for `arch` must accept `file` (relative to `dir`); skipped
/// loudly when ptxas is not installed (never in CI).
pub fn assert_ptxas_accepts(dir: &Path, file: &str, arch: &str) {
    if let Some(ptxas) = ptxas() {
        let r = std::process::Command::new(ptxas)
            .arg(format!("-arch={arch}"))
            .args(["-o", "/dev/null", file])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "ptxas rejects {file}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}

/// The `inputs:` of link case `case`, as absolute paths.
pub fn case_inputs(case: &str) -> Vec<String> {
    let dir = root().join("fixtures/link").join(case);
    let text = std::fs::read_to_string(dir.join("case.txt")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("inputs:"))
        .unwrap()
        .split_whitespace()
        .map(|p| dir.join(p).to_str().unwrap().to_string())
        .collect()
}

/// How long a test waits for a state it polls for before it fails: generous, since it
/// is a bound for a hang, not a timing measurement.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(120);

/// Polls `cond` until it holds; panics naming `what` after [`PATIENCE`].
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = std::time::Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < PATIENCE,
            "gave up after {PATIENCE:?} waiting until {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// True if process `pid`, or the child it forked to link (see [`linking_pid`]), has
/// `path` open (Linux: a link in `/proc/PID/fd`). False once they have exited.
pub fn has_open(pid: u32, path: &Path) -> bool {
    let Ok(want) = std::fs::canonicalize(path) else {
        return false;
    };
    [pid, linking_pid(pid)].iter().any(|p| {
        std::fs::read_dir(format!("/proc/{p}/fd")).is_ok_and(|fds| {
            fds.flatten()
                .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| target == want))
        })
    })
}

/// The process that does the linking for the `ptxld` started as `pid`: by default
/// the command forks and a child links (src/bin/ptxld/early_exit.rs), so the child if there is
/// one (Linux: `/proc/PID/task/PID/children`), else `pid` itself.
pub fn linking_pid(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()
        .and_then(|c| c.split_whitespace().next().and_then(|p| p.parse().ok()))
        .unwrap_or(pid)
}

/// Whether process `pid` has exited (or is a zombie not yet collected).
pub fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses: `PID (comm) S ...`.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

/// The temporary output files (`.NAME.ptxld-*.tmp`) left in `d`, sorted.
pub fn temporaries(d: &Path) -> Vec<String> {
    let mut t: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.') && n.contains(".ptxld-") && n.ends_with(".tmp"))
        .collect();
    t.sort();
    t
}

/// Makes a FIFO at `path` (`mkfifo`; std has no call for it).
pub fn mkfifo(path: &Path) {
    let st = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(st.success(), "mkfifo {} failed", path.display());
}

/// Opens the FIFO at `path` for reading and writing. On Linux this never blocks, and
/// the descriptor counts as a connected writer (and reader) until it is dropped, so a
/// reader opening the FIFO meanwhile sees a writer that has not written yet.
pub fn hold_fifo(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap()
}

/// Whether process `pid` has a handler for signal number `n` (Linux: the `SigCgt` mask
/// in `/proc/PID/status`).
pub fn catches(pid: u32, n: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
            .is_some_and(|mask| mask & (1 << (n - 1)) != 0)
    })
}

/// Sends `signal` (`INT`, `TERM`, `HUP`, `KILL`) to process `pid` (`kill -SIGNAL`; the
/// tests take no libc). A signal ptxld handles is sent once `pid` has its handler: the
/// forked command installs its own (which pass the signal on) only after its linking
/// child has started, so a signal sent as soon as the child acts could find it without.
pub fn send_signal(pid: u32, signal: &str) {
    let n = match signal {
        "HUP" => Some(1),
        "INT" => Some(2),
        "TERM" => Some(15),
        _ => None,
    };
    if let Some(n) = n {
        wait_until(&format!("process {pid} handles SIG{signal}"), || {
            catches(pid, n) || has_exited(pid)
        });
    }
    let st = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success(), "kill -{signal} {pid} failed");
}

/// Sends SIGINT (Ctrl-C) to process `pid`, once it handles it (see [`send_signal`]).
pub fn interrupt(pid: u32) {
    send_signal(pid, "INT");
}

/// The effective user id of this process (Linux `/proc/self/status`).
pub fn euid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Waits until the running `child` has `path` open; fails with its output if it exits
/// first.
pub fn await_open(child: std::process::Child, path: &Path) -> std::process::Child {
    let pid = child.id();
    wait_until(&format!("ptxld opens {}", path.display()), || {
        has_open(pid, path) || has_exited(pid)
    });
    if !has_open(pid, path) {
        let o = wait_output(child);
        panic!(
            "ptxld exited ({}) before opening {}:\n{}",
            o.status,
            path.display(),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    child
}
