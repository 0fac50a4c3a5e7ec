//! The `ptxld` command line.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use ptxld::describe::describe;
use ptxld::frontend::{check_files, parse_files, parse_files_with};
use ptxld::link::header::parse_version;
use ptxld::link::{link, HeaderOptions, LinkOptions};
use ptxld::output::{clobbers_input, write_atomic};

const USAGE: &str = "\
usage: ptxld [OPTIONS] -o OUTPUT FILES...

Links PTX modules written by LLVM/clang, GCC (nvptx), NVRTC or NVVM into one
module that ptxas and the CUDA driver accept as a whole program.

Linking:
  -o FILE              write the merged module to FILE (atomically); - is stdout
  --arch sm_NN         target of the output (default: the highest input target);
                       an input for a higher target is an error
  --ptx-version X.Y    .version of the output (default: the highest input
                       version); an input needing a newer version is an error

Symbol rules (NVIDIA's): .extern imports; .visible beats .weak; among .weak
definitions the FIRST in command-line order wins; .common and uninitialized
.weak variables merge into the largest; module-local names never clash (the
first keeps its name, later ones become NAME$mN for the N-th input).

Other modes:
  --syntax-only        parse every input and report all errors; exit 0 when
                       every file parses, 1 otherwise
  --print-symbols      like --syntax-only, then list each module's header,
                       module-scope symbols and references on stdout

Options:
  --error-limit=N      stop reporting after N errors (default 20, 0 = no limit)
  -j N, --threads=N    parse with N threads (default: all cores); the result
                       does not depend on N
  -h, --help           show this help
  -V, --version        show the version

An input named - is read from standard input.";

struct Options {
    output: Option<PathBuf>,
    header: HeaderOptions,
    syntax_only: bool,
    print_symbols: bool,
    error_limit: usize,
    threads: Option<usize>,
    inputs: Vec<PathBuf>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Options>> {
    let mut o = Options {
        output: None,
        header: HeaderOptions::default(),
        syntax_only: false,
        print_symbols: false,
        error_limit: 20,
        threads: None,
        inputs: Vec::new(),
    };
    let mut args = args.peekable();
    let mut only_files = false;
    while let Some(arg) = args.next() {
        if only_files || arg == "-" || !arg.starts_with('-') {
            o.inputs.push(PathBuf::from(arg));
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            // `-j4`, as make and cargo accept it.
            _ if arg.starts_with("-j") && arg.len() > 2 => {
                ("-j".to_string(), Some(arg[2..].to_string()))
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
                println!("{USAGE}");
                return Ok(None);
            }
            "-V" | "--version" => {
                println!("ptxld {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "-o" | "--output" => o.output = Some(PathBuf::from(value("-o")?)),
            "--arch" => o.header.arch = Some(value("--arch")?),
            "--ptx-version" => {
                let v = value("--ptx-version")?;
                o.header.ptx_version = Some(
                    parse_version(&v)
                        .with_context(|| format!("--ptx-version needs MAJOR.MINOR, not `{v}`"))?,
                );
            }
            "--syntax-only" => o.syntax_only = true,
            "--print-symbols" => o.print_symbols = true,
            "--error-limit" => {
                let v = value("--error-limit")?;
                o.error_limit = v
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
                o.threads = Some(n);
            }
            _ => bail!("unknown option `{arg}` (see ptxld --help)"),
        }
    }
    if !o.syntax_only && !o.print_symbols && o.output.is_none() {
        bail!("no output file: use -o FILE (or -o - for standard output); see ptxld --help");
    }
    if o.inputs.is_empty() {
        bail!("no input files (see ptxld --help)");
    }
    Ok(Some(o))
}

fn run(o: Options) -> Result<bool> {
    if let Some(n) = o.threads {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global()
            .context("cannot start the thread pool")?;
    }
    if let (Some(out), false, false) = (&o.output, o.syntax_only, o.print_symbols) {
        return link_to(&o, out);
    }
    if !o.print_symbols {
        let (sources, diagnostics) = check_files(&o.inputs);
        let report = diagnostics.render(&sources, o.error_limit);
        std::io::stderr().write_all(report.as_bytes())?;
        return Ok(!diagnostics.has_errors());
    }
    let parsed = parse_files(&o.inputs);
    let report = parsed.diagnostics.render(&parsed.sources, o.error_limit);
    std::io::stderr().write_all(report.as_bytes())?;
    let mut out = std::io::stdout().lock();
    for (m, (_, f)) in parsed.modules.iter().zip(parsed.sources.files()) {
        writeln!(out, "# {}", f.name())?;
        out.write_all(describe(m, f).as_bytes())?;
    }
    out.flush()?;
    Ok(!parsed.diagnostics.has_errors())
}

fn link_to(o: &Options, out: &Path) -> Result<bool> {
    if clobbers_input(out, &o.inputs) {
        bail!(
            "output file {} is also an input; refusing to overwrite it",
            out.display()
        );
    }
    let parsed = parse_files_with(&o.inputs, false);
    let mut stderr = std::io::stderr().lock();
    // Parse errors stop the link; warnings (non-ASCII comments, ...) are shown either way.
    let report = parsed.diagnostics.render(&parsed.sources, o.error_limit);
    stderr.write_all(report.as_bytes())?;
    if parsed.diagnostics.has_errors() {
        remove_stale(out);
        return Ok(false);
    }
    let opts = LinkOptions {
        header: o.header.clone(),
    };
    match link(&parsed.sources, &parsed.modules, &opts) {
        Ok(linked) => {
            stderr.write_all(
                linked
                    .warnings
                    .render(&parsed.sources, o.error_limit)
                    .as_bytes(),
            )?;
            write_atomic(out, &linked.ptx)
                .with_context(|| format!("cannot write {}", out.display()))?;
            Ok(true)
        }
        Err(errors) => {
            stderr.write_all(errors.render(&parsed.sources, o.error_limit).as_bytes())?;
            remove_stale(out);
            Ok(false)
        }
    }
}

/// After a failed link, an output left from an earlier run would look up to date to
/// a build system; remove it, as GNU ld does. (It is never an input: checked first.)
fn remove_stale(out: &Path) {
    if out != Path::new("-") && out.is_file() {
        let _ = std::fs::remove_file(out);
    }
}

/// glibc's allocator grows each thread's heap in small `mprotect` steps: a 170 MB link
/// made 18,000 such calls (`strace -c`), a quarter of its run time. A 64 MiB top pad
/// makes every growth step large (measured: 1.31 s -> 0.88 s; docs/performance.md).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_TOP_PAD: i32 = -2;
    // SAFETY: mallopt only changes allocator tuning; it is called before any thread
    // starts, and a failure (return 0) leaves the defaults in place.
    unsafe {
        mallopt(M_TOP_PAD, 64 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

fn main() -> ExitCode {
    tune_allocator();
    let result = parse_args(std::env::args().skip(1)).and_then(|o| match o {
        Some(o) => run(o),
        None => Ok(true),
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("ptxld: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
