//! The `ptxld` command line.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use ptxld::container::elf::write_host_object;
use ptxld::container::fatbin::{self, PtxEntry};
use ptxld::container::Emit;
use ptxld::describe::describe;
use ptxld::frontend::{check_files, parse_files, parse_files_with, LoadOptions};
use ptxld::link::header::parse_version;
use ptxld::link::{link, HeaderOptions, LinkOptions};
use ptxld::output::{clobbers_input, write_atomic};
use ptxld::parse::parse_arch;

const USAGE: &str = "\
usage: ptxld [OPTIONS] -o OUTPUT FILES...

Links PTX modules written by LLVM/clang, GCC (nvptx), NVRTC or NVVM into one
module that ptxas and the CUDA driver accept as a whole program. Inputs may also
be fatbins and ELF objects carrying one (nvcc -c output): their PTX entry for the
target (else the highest below it) is linked.

Linking:
  -o FILE              write the merged module to FILE (atomically); - is stdout
  --arch sm_NN         target of the output (default: the highest input target);
                       an input for a higher target is an error. Repeat it with
                       --emit fatbin/obj for one PTX entry per target
  --emit KIND          ptx, fatbin or obj (default from the -o extension:
                       .fatbin -> fatbin, .o -> obj, otherwise ptx)
  --symbol NAME        base name of the symbols of an obj output:
                       NAME_fatbin_data (the container) and NAME_fatbin_wrapper
                       (the 24-byte wrapper for __cudaRegisterFatBinary);
                       default ptxld
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
    emit: Option<Emit>,
    archs: Vec<String>,
    ptx_version: Option<(u32, u32)>,
    symbol: String,
    syntax_only: bool,
    print_symbols: bool,
    error_limit: usize,
    threads: Option<usize>,
    inputs: Vec<PathBuf>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Options>> {
    let mut o = Options {
        output: None,
        emit: None,
        archs: Vec::new(),
        ptx_version: None,
        symbol: "ptxld".to_string(),
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
            "--arch" => o.archs.push(value("--arch")?),
            "--emit" => {
                let v = value("--emit")?;
                o.emit = Some(
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
                o.symbol = v;
            }
            "--ptx-version" => {
                let v = value("--ptx-version")?;
                o.ptx_version = Some(
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
    let emit = o.emit.unwrap_or_else(|| Emit::from_path(out));
    if emit == Emit::Ptx && o.archs.len() > 1 {
        bail!("several --arch give several PTX modules: use --emit fatbin or --emit obj");
    }
    // One link per target: each fatbin entry is the merged module for its --arch.
    let targets: Vec<Option<String>> = if o.archs.is_empty() {
        vec![None]
    } else {
        o.archs.iter().cloned().map(Some).collect()
    };
    let mut stderr = std::io::stderr().lock();
    let mut linked = Vec::new();
    for (i, arch) in targets.iter().enumerate() {
        let load = LoadOptions {
            keep_tokens: false,
            target: arch.as_deref().and_then(|a| parse_arch(a.as_bytes())),
        };
        let parsed = parse_files_with(&o.inputs, &load);
        // Parse errors stop the link; warnings are shown (once) either way.
        if i == 0 || parsed.diagnostics.has_errors() {
            let report = parsed.diagnostics.render(&parsed.sources, o.error_limit);
            stderr.write_all(report.as_bytes())?;
        }
        if parsed.diagnostics.has_errors() {
            remove_stale(out);
            return Ok(false);
        }
        let opts = LinkOptions {
            header: HeaderOptions {
                arch: arch.clone(),
                ptx_version: o.ptx_version,
            },
        };
        match link(&parsed.sources, &parsed.modules, &opts) {
            Ok(l) => {
                if i == 0 {
                    let report = l.warnings.render(&parsed.sources, o.error_limit);
                    stderr.write_all(report.as_bytes())?;
                }
                linked.push(l);
            }
            Err(errors) => {
                stderr.write_all(errors.render(&parsed.sources, o.error_limit).as_bytes())?;
                remove_stale(out);
                return Ok(false);
            }
        }
    }
    let bytes = match emit {
        Emit::Ptx => std::mem::take(&mut linked[0].ptx),
        Emit::Fatbin | Emit::Obj => {
            let identifier = match out.file_stem().and_then(|s| s.to_str()) {
                Some(stem) if out != Path::new("-") => format!("{stem}.ptx"),
                _ => "ptxld.ptx".to_string(),
            };
            let entries: Vec<PtxEntry> = linked
                .iter()
                .map(|l| PtxEntry {
                    text: &l.ptx,
                    sm: l.header.sm,
                    suffix: l.header.suffix,
                    version: l.header.version,
                    address_bits: l.header.address_size,
                    debug: l.header.debug,
                    identifier: &identifier,
                })
                .collect();
            let container = fatbin::write(&entries);
            if emit == Emit::Fatbin {
                container
            } else {
                write_host_object(&container, &o.symbol)
                    .map_err(|e| anyhow::anyhow!("cannot build the ELF object: {e}"))?
            }
        }
    };
    write_atomic(out, &bytes).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(true)
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
