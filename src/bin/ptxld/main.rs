//! The `ptxld` command line: arguments in, a [`ptxld::driver::Job`] out; the
//! library does the rest (the `Build` API for cargo build scripts uses the same driver).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use ptxld::container::Emit;
use ptxld::describe::describe;
use ptxld::driver::{self, InputSpec, Job};
use ptxld::frontend::{check_files, parse_files};
use ptxld::link::header::parse_version;
mod rsp;

#[cfg(target_os = "linux")]
mod early_exit;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod huge_pages;
#[cfg(unix)]
mod sigbus;

const USAGE: &str = "\
usage: ptxld [OPTIONS] -o OUTPUT INPUTS...
       ptxld check [--format text|json] [OPTIONS] INPUTS...

Links PTX modules written by LLVM/clang, GCC (nvptx), NVRTC or NVVM into one
module that ptxas and the CUDA driver accept as a whole program. Inputs may be
PTX text, fatbins, ELF objects carrying one (nvcc -c output; their PTX entry for
the target, else the highest below it, is linked) and ar archives of any of these.

Output:
  -o FILE                write the result to FILE (atomically); - is stdout
  --emit KIND            ptx, fatbin or obj (default from the -o extension:
                         .fatbin -> fatbin, .o -> obj, otherwise ptx)
  --arch sm_NN           target of the output (default: the highest input
                         target); an input for a higher target is an error.
                         Repeat with --emit fatbin/obj for one entry per target
  --ptx-version X.Y      .version of the output (default: the highest input
                         version); an input needing a newer version is an error
  --strip-debug, -S      drop DWARF sections, .file, .loc and the debug target
                         option (by default the DWARF of all inputs is merged)
  --symbol NAME          symbols of an obj output: NAME_fatbin_data (the
                         container), NAME_fatbin_wrapper (for
                         __cudaRegisterFatBinary); default ptxld

Libraries (GNU ld rules: an archive member is loaded only if it defines a symbol
still undefined at that point on the command line):
  -L DIR                 add DIR to the library search path
  -l NAME                link libNAME.a from the search path; -l:FILE links FILE
  --whole-archive        load every member of the following archives
  --no-whole-archive     back to loading members on demand
  --start-group, -(      rescan the archives up to --end-group, -) until no
                         more members are loaded (mutual dependencies)
  -u SYM, --undefined=SYM
                         start with SYM undefined (pulls in its definition)
  @FILE                  read more arguments from FILE (GNU quoting; nestable)

Dead code:
  --gc-sections          remove functions and variables that no kernel, no
                         --export/-u symbol reaches (calls, address-taking,
                         initializers, .calltargets, .alias); undefined symbols
                         only removed code uses are then no error
  --no-gc-sections       keep everything (the default)
  --export SYM           keep SYM (and what it reaches) with --gc-sections
  --export-all           keep every .visible symbol with --gc-sections
  --print-gc-sections    list what --gc-sections removed
  --why-live SYM         with --gc-sections: the chain of references that keeps SYM

Explaining a link:
  -Map FILE, --print-map write the link map to FILE / stdout: every output symbol,
                         its origin and kind, which weak definition won, which
                         commons merged, which locals were renamed
  --trace-symbol SYM, -y SYM
                         every definition, declaration and reference of SYM and
                         what it became

Build systems:
  --dependency-file=FILE write a Make-syntax depfile naming the output and every
                         file read (inputs, archives, response files)
  --verbose              report which archive member was loaded for which symbol
  --fatal-warnings       treat warnings as errors
  --stats                report the wall and CPU time of each phase and the peak
                         memory
  --error-limit=N        stop after N errors (default 20, 0 = no limit)
  -j N, --threads=N      parse with N threads (default: all cores); the result
                         does not depend on N
  --no-fork              link in this process; by default a child process links
                         and this one exits as soon as the output is complete,
                         leaving the memory teardown to the child (as mold does)

Symbol rules (NVIDIA's): .extern imports; .visible beats .weak; among .weak
definitions the FIRST in link order wins; .common and uninitialized .weak
variables merge into the largest; module-local names never clash (the first
keeps its name, later ones become NAME$mN for the N-th module).

Other modes:
  check                  (first argument) link without writing and report every
                         problem: errors, ABI warnings (PTX interoperability
                         guide), and notes where NVIDIA's nvJitLink would decide
                         differently; --format json for machines
  --syntax-only          parse every input and report all errors; exit 0 when
                         every file parses, 1 otherwise
  --print-symbols        like --syntax-only, then list each module's header,
                         module-scope symbols and references on stdout
  -h, --help             show this help
  -V, --version          show the version

An input named - is read from standard input. Exit status: 0 on success, 1 on
any error. On Linux with glibc, a link of 16 MB or more executes ptxld once more
with glibc asked for transparent huge pages, except on a virtual machine whose
host takes back free memory; PTXLD_HUGE_PAGES=0 turns that off, and
PTXLD_HUGE_PAGES=1 asks on such a host too.";

enum Mode {
    Link(Box<Job>),
    Check(Box<Job>, bool),
    SyntaxOnly(Vec<PathBuf>),
    PrintSymbols(Vec<PathBuf>),
}

struct Options {
    mode: Mode,
    threads: Option<usize>,
    error_limit: usize,
    /// Link in a child and exit when its result is known (`--no-fork` turns it off).
    fork: bool,
}

fn parse_args(mut args: Vec<String>) -> Result<Option<Options>> {
    let check = args.first().is_some_and(|a| a == "check");
    if check {
        args.remove(0);
    }
    let mut json = false;
    let (args, rsp_files) = rsp::expand(args).map_err(anyhow::Error::msg)?;
    let mut job = Job::new("");
    job.extra_deps = rsp_files;
    let mut output: Option<PathBuf> = None;
    let (mut syntax_only, mut print_symbols) = (false, false);
    let mut threads = None;
    let mut fork = true;
    let mut args = args.into_iter().peekable();
    let mut only_files = false;
    while let Some(arg) = args.next() {
        if only_files || arg == "-" || !arg.starts_with('-') {
            job.inputs.push(InputSpec::File(PathBuf::from(arg)));
            continue;
        }
        // `--flag=value`, `-jN`, `-LDIR`, `-lNAME`, `-uSYM` as well as separate values.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ if arg.len() > 2
                && ["-j", "-L", "-l", "-u", "-o", "-y"].contains(&&arg[..2])
                && !arg.starts_with("-Map") =>
            {
                (arg[..2].to_string(), Some(arg[2..].to_string()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .with_context(|| format!("option {name} needs a value")),
            }
        };
        match flag.as_str() {
            "--" => only_files = true,
            "-h" | "--help" => {
                to_stdout(format!("{USAGE}\n").as_bytes())?;
                return Ok(None);
            }
            "-V" | "--version" => {
                to_stdout(format!("ptxld {}\n", env!("CARGO_PKG_VERSION")).as_bytes())?;
                return Ok(None);
            }
            "-o" | "--output" => output = Some(PathBuf::from(value("-o")?)),
            "--arch" => job.archs.push(value("--arch")?),
            "--emit" => {
                let v = value("--emit")?;
                job.emit = Some(
                    Emit::parse(&v)
                        .with_context(|| format!("--emit takes ptx, fatbin or obj, not `{v}`"))?,
                );
            }
            "--symbol" => {
                let v = value("--symbol")?;
                let ok = !v.is_empty()
                    && !v.starts_with(|c: char| c.is_ascii_digit())
                    && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    bail!("--symbol needs a C identifier, not `{v}`");
                }
                job.symbol = v;
            }
            "--ptx-version" => {
                let v = value("--ptx-version")?;
                job.ptx_version = Some(
                    parse_version(&v)
                        .with_context(|| format!("--ptx-version needs MAJOR.MINOR, not `{v}`"))?,
                );
            }
            "-L" | "--library-path" => job.lib_dirs.push(PathBuf::from(value("-L")?)),
            "-l" | "--library" => job.inputs.push(InputSpec::Lib(value("-l")?)),
            "-u" | "--undefined" => job.undefined.push(value("-u")?),
            "--whole-archive" => job.inputs.push(InputSpec::WholeArchive(true)),
            "--no-whole-archive" => job.inputs.push(InputSpec::WholeArchive(false)),
            "--start-group" | "-(" => job.inputs.push(InputSpec::Group(true)),
            "--end-group" | "-)" => job.inputs.push(InputSpec::Group(false)),
            "--dependency-file" => job.depfile = Some(PathBuf::from(value("--dependency-file")?)),
            "--verbose" | "-v" => job.verbose = true,
            "--gc-sections" => job.gc_sections = true,
            "--no-gc-sections" => job.gc_sections = false,
            "--print-gc-sections" => job.print_gc_sections = true,
            "--export" => job.exports.push(value("--export")?),
            "--export-all" => job.export_all = true,
            "-Map" | "--Map" => job.map_file = Some(PathBuf::from(value("-Map")?)),
            "--print-map" | "-M" => job.print_map = true,
            "--trace-symbol" | "-y" => job.trace.push(value("--trace-symbol")?),
            "--why-live" => job.why_live.push(value("--why-live")?),
            "--fatal-warnings" => job.fatal_warnings = true,
            "--strip-debug" | "-S" => job.strip_debug = true,
            "--stats" => job.stats = true,
            "--no-fork" => fork = false,
            "--format" if check => {
                json = match value("--format")?.as_str() {
                    "json" => true,
                    "text" => false,
                    v => bail!("--format takes json or text, not `{v}`"),
                };
            }
            "--syntax-only" => syntax_only = true,
            "--print-symbols" => print_symbols = true,
            "--error-limit" => {
                let v = value("--error-limit")?;
                job.error_limit = v
                    .parse()
                    .with_context(|| format!("--error-limit needs a number, not `{v}`"))?;
            }
            "-j" | "--threads" => {
                let v = value("--threads")?;
                let n: usize = v
                    .parse()
                    .with_context(|| format!("--threads needs a number, not `{v}`"))?;
                if n == 0 {
                    bail!("--threads needs a number of at least 1");
                }
                threads = Some(n);
            }
            _ => bail!("unknown option `{arg}` (see ptxld --help)"),
        }
    }
    let files = || -> Result<Vec<PathBuf>> {
        job.inputs
            .iter()
            .map(|i| match i {
                InputSpec::File(p) => Ok(p.clone()),
                _ => bail!("--syntax-only and --print-symbols take files, not library options"),
            })
            .collect()
    };
    let mode = if check {
        Mode::Check(Box::new(job.clone()), json)
    } else if print_symbols {
        Mode::PrintSymbols(files()?)
    } else if syntax_only {
        Mode::SyntaxOnly(files()?)
    } else {
        match output {
            Some(o) => {
                job.output = o;
                Mode::Link(Box::new(job.clone()))
            }
            None => {
                bail!("no output file: use -o FILE (or -o - for standard output); see ptxld --help")
            }
        }
    };
    let empty = match &mode {
        Mode::Link(j) | Mode::Check(j, _) => !j
            .inputs
            .iter()
            .any(|i| matches!(i, InputSpec::File(_) | InputSpec::Lib(_))),
        Mode::SyntaxOnly(f) | Mode::PrintSymbols(f) => f.is_empty(),
    };
    if empty {
        bail!("no input files (see ptxld --help)");
    }
    Ok(Some(Options {
        fork: fork && matches!(mode, Mode::Link(_)),
        mode,
        threads,
        error_limit: job.error_limit,
    }))
}

/// Writes `bytes` to standard output. A reader that went away (`ptxld --help | head
/// -1`) is not an error: like `cat`, ptxld then just stops writing.
fn to_stdout(bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

fn run(o: Options) -> Result<bool> {
    if let Some(n) = o.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("cannot start the thread pool")?;
    }
    let mut stderr = std::io::stderr().lock();
    match o.mode {
        Mode::Link(job) => match driver::run(&job) {
            Ok(outcome) => {
                stderr.write_all(outcome.messages.as_bytes())?;
                if job.print_map {
                    if let Some(map) = &outcome.map {
                        to_stdout(map.as_bytes())?;
                    }
                }
                // The process ends now: unmapping every input and freeing the IR one
                // allocation at a time would only delay the build (lld does the same).
                std::mem::forget(outcome);
                Ok(true)
            }
            Err(failure) => {
                stderr.write_all(failure.messages.as_bytes())?;
                Ok(false)
            }
        },
        Mode::Check(job, json) => {
            let (report, ok) = driver::check(&job, json);
            to_stdout(report.as_bytes())?;
            Ok(ok)
        }
        Mode::SyntaxOnly(files) => {
            let (sources, diagnostics) = check_files(&files);
            stderr.write_all(diagnostics.render(&sources, o.error_limit).as_bytes())?;
            Ok(!diagnostics.has_errors())
        }
        Mode::PrintSymbols(files) => {
            let parsed = parse_files(&files);
            let report = parsed.diagnostics.render(&parsed.sources, o.error_limit);
            stderr.write_all(report.as_bytes())?;
            let mut out = Vec::new();
            for (m, (_, f)) in parsed.modules.iter().zip(parsed.sources.files()) {
                writeln!(out, "# {}", f.name())?;
                out.extend_from_slice(describe(m, f).as_bytes());
            }
            to_stdout(&out)?;
            Ok(!parsed.diagnostics.has_errors())
        }
    }
}

/// glibc's allocator grows each thread's heap in small `mprotect` steps: a 170 MB link
/// made 18,000 such calls (`strace -c`), a quarter of its run time. A 64 MiB top pad
/// makes every growth step large (measured: 1.31 s -> 0.88 s; docs/performance.md).
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
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    huge_pages::restore_environment();
    tune_allocator();
    let options = match parse_args(std::env::args().skip(1).collect()) {
        Ok(Some(o)) => o,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ptxld: error: {e:#}");
            return ExitCode::from(1);
        }
    };
    // Before the fork and before any thread starts; returns unless the exec failed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Mode::Link(job) | Mode::Check(job, _) = &options.mode {
        huge_pages::reexec_for(&job.input_files());
        if job.stats {
            eprintln!(
                "ptxld: stats: huge pages for the heap: {}",
                huge_pages::status()
            );
        }
    }
    // Before the first thread (the Ctrl-C handler's) starts.
    #[cfg(target_os = "linux")]
    let reporter = options.fork.then(early_exit::fork).flatten();
    // Before the first thread starts too (see the function), and after the fork: a
    // child's descriptor table is copied only as large as its open descriptors need.
    ptxld::input::keep_files_open(std::env::args_os().len());
    // An input cut short while mapped fails the link instead of crashing it.
    #[cfg(unix)]
    sigbus::install();
    // Ctrl-C while the output is being written leaves no temporary file behind.
    let _ = ctrlc::set_handler(|| {
        ptxld::output::remove_temporaries();
        std::process::exit(130);
    });
    let success = match run(options) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("ptxld: error: {e:#}");
            false
        }
    };
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
