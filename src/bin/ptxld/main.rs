//! The `ptxld` command line: arguments in ([`ptxld::cli`], the command line's
//! language), a [`ptxld::internal::driver::Job`] out; the library does the rest (the `Build`
//! API for cargo build scripts uses the same driver). Everything here is the
//! command's own: process set-up, signals, fork-and-report, and how messages reach
//! the terminal.

use std::io::Write as _;
use std::process::ExitCode;

use ptxld::internal::describe::describe;
use ptxld::internal::diag::{Code, Diagnostic, Report};
use ptxld::internal::driver;
use ptxld::internal::frontend::{check_files, parse_files};
use ptxld::internal::timing;

#[cfg(target_os = "linux")]
mod early_exit;
mod pool;
#[cfg(unix)]
mod sigbus;
mod signals;

use ptxld::cli::{self as args, Mode, Options, Parsed};

/// Writes `bytes` to standard output. A reader that went away (`ptxld --help | head
/// -1`) is not an error: like `cat`, ptxld then just stops writing. Any other
/// failure (a full disk) is.
fn to_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes messages to standard error, each diagnostic line (`error: `, `warning: `,
/// `note: `)
/// prefixed with `ptxld: ` as lld prefixes its own. False if they could not be
/// written (standard error closed or full): the command then fails, since whoever
/// runs it could not learn why.
fn to_stderr(text: &str) -> bool {
    if text.is_empty() {
        return true;
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        if ["error: ", "warning: ", "note: "]
            .iter()
            .any(|w| line.starts_with(w))
        {
            out.push_str("ptxld: ");
        }
        out.push_str(line);
    }
    let mut err = std::io::stderr().lock();
    err.write_all(out.as_bytes())
        .and_then(|()| err.flush())
        .is_ok()
}

/// A diagnostic of the command itself, rendered.
fn render(d: Diagnostic) -> String {
    Report::of(d).render()
}

/// Reports an error; always false (the command failed).
fn fail(code: Code, message: String) -> bool {
    to_stderr(&render(Diagnostic::global_error(code, message)));
    false
}

/// Runs the mode; true on success.
fn run(o: Options) -> bool {
    // With `--stats`, every thread that links counts its own CPU time, which the
    // kernel keeps exact (see `ptxld::internal::timing`).
    let stats = matches!(&o.mode, Mode::Link(job) if job.stats);
    if stats {
        timing::count_this_thread();
    }
    if let Err(e) = pool::start(o.threads, stats) {
        return fail(Code::System, format!("cannot start the threads: {e}"));
    }
    match o.mode {
        Mode::Link(mut job) => {
            // The process ends after the link.
            job.exits_after = true;
            match driver::run(&job) {
                Ok(outcome) => {
                    let mut ok = to_stderr(&outcome.report.render());
                    if job.print_map {
                        if let Some(map) = &outcome.map {
                            if let Err(e) = to_stdout(map.as_bytes()) {
                                ok = fail(Code::Io, format!("cannot write the link map: {e}"));
                            }
                        }
                    }
                    // The process ends now: unmapping every input and freeing the IR one
                    // allocation at a time would only delay the build (lld does the same).
                    std::mem::forget(outcome);
                    ok
                }
                Err(failure) => {
                    to_stderr(&failure.report.render());
                    false
                }
            }
        }
        Mode::Check { job, json } => {
            let report = driver::check(&job);
            let text = if json {
                report.to_json()
            } else {
                report.to_text()
            };
            match to_stdout(text.as_bytes()) {
                Ok(()) => report.ok,
                Err(e) => fail(Code::Io, format!("cannot write the report: {e}")),
            }
        }
        Mode::SyntaxOnly(files) => {
            let (sources, diagnostics) = check_files(&files);
            let written = to_stderr(&diagnostics.render(&sources, o.error_limit));
            written && !diagnostics.has_errors()
        }
        Mode::PrintSymbols(files) => {
            let parsed = parse_files(&files);
            let written = to_stderr(&parsed.diagnostics.render(&parsed.sources, o.error_limit));
            let mut out = Vec::new();
            for (m, (_, f)) in parsed.modules.iter().zip(parsed.sources.files()) {
                out.extend_from_slice(format!("# {}\n", f.name()).as_bytes());
                out.extend_from_slice(describe(m, f).as_bytes());
            }
            let listed = match to_stdout(&out) {
                Ok(()) => true,
                Err(e) => fail(Code::Io, format!("cannot write the symbols: {e}")),
            };
            written && listed && !parsed.diagnostics.has_errors()
        }
    }
}

/// glibc's allocator grows each thread's heap in small `mprotect` steps: a 170 MB link
/// made 18,000 such calls (`strace -c`), a large share of its run time. A 64 MiB top
/// pad makes every growth step large (docs/performance.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only changes allocator tuning; it is called before any thread
    // starts, and a failure (return 0) leaves the defaults in place.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

fn main() -> ExitCode {
    tune_allocator();
    let options = match args::parse(std::env::args_os().skip(1).collect()) {
        Ok(Parsed::Run(o)) => *o,
        Ok(Parsed::Print(text)) => {
            return match to_stdout(&text) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    fail(Code::Io, format!("cannot write standard output: {e}"));
                    ExitCode::from(1)
                }
            };
        }
        Err(e) => {
            fail(Code::Usage, format!("{e:#}"));
            return ExitCode::from(1);
        }
    };
    let warned = options
        .warnings
        .iter()
        .all(|w| to_stderr(&render(Diagnostic::global_warning(Code::Usage, w.clone()))));
    if !warned {
        return ExitCode::from(1);
    }
    // Before any thread starts: a fork copies only the calling thread.
    #[cfg(target_os = "linux")]
    let reporter = options.fork.then(early_exit::fork).flatten();
    // Before the first thread starts too (see the function), and after the fork: a
    // child's descriptor table is copied only as large as its open descriptors need.
    ptxld::internal::input::keep_files_open(options.inputs);
    // SIGINT, SIGTERM or SIGHUP while the output is being written leave no temporary.
    signals::install();
    if reporter.is_some() {
        early_exit::handled();
    }
    // An input cut short while mapped fails the link instead of crashing it.
    #[cfg(unix)]
    sigbus::install();
    let success = run(options);
    #[cfg(target_os = "linux")]
    if let Some(r) = reporter {
        r.report(success);
    }
    if success {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
