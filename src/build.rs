//! Linking PTX from cargo build scripts, in the style of the `cc` crate:
//!
//! ```no_run
//! // build.rs
//! let out = ptxld::Build::new()
//!     .file("kernels/a.ptx")
//!     .file("kernels/b.ptx")
//!     .arch("sm_80")
//!     .gc(true)
//!     .compile("kernels"); // writes $OUT_DIR/kernels.ptx
//! // src/lib.rs: const KERNELS: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
//! ```
//!
//! `compile` prints `cargo:rerun-if-changed` for every input and
//! `cargo:rerun-if-env-changed` for every environment variable it reads (`OUT_DIR`,
//! `PTXLD_ARCH`; with [`Build::verify`], those that choose ptxas), turns warnings into `cargo:warning` lines, and panics with the
//! rendered diagnostics on failure; `try_compile` returns them as an [`Error`].

use std::fmt;
use std::path::{Path, PathBuf};

use crate::driver::{self, Failure, InputSpec, Job};
use crate::options::{Arch, GpuCode, OutputKind, ParseError, PtxVersion};

/// A link configured from a build script.
#[derive(Clone, Debug)]
pub struct Build {
    inputs: Vec<InputSpec>,
    archs: Vec<String>,
    ptx_version: Option<PtxVersion>,
    ptx_version_min: bool,
    emit: OutputKind,
    gc: bool,
    exports: Vec<String>,
    out_dir: Option<PathBuf>,
    cargo_metadata: bool,
    verify: bool,
    gpu_code: Vec<String>,
    ptxas_options: Vec<String>,
    split_kernels: Option<usize>,
    fold_identical: bool,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

/// Why a [`Build`] failed.
#[derive(Debug)]
pub enum Error {
    /// Neither [`Build::out_dir`] nor the `OUT_DIR` variable gives an output directory.
    NoOutDir,
    /// An architecture given to [`Build::arch`] or in `PTXLD_ARCH`, or a code given to
    /// [`Build::gpu_code`], is not one.
    Arch(ParseError),
    /// The link failed; the diagnostics as ptxld prints them.
    Link(Failure),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoOutDir => f.write_str(
                "no output directory: call Build::out_dir or run from a cargo build script \
                 (OUT_DIR)",
            ),
            Error::Arch(e) => write!(f, "ptxld: {e}"),
            Error::Link(failure) => write!(f, "ptxld failed:\n{failure}"),
        }
    }
}

impl std::error::Error for Error {}

impl Build {
    /// A build with no inputs, PTX output, no dead-code removal.
    pub fn new() -> Build {
        Build {
            inputs: Vec::new(),
            archs: Vec::new(),
            ptx_version: None,
            ptx_version_min: false,
            emit: OutputKind::Ptx,
            gc: false,
            exports: Vec::new(),
            out_dir: None,
            cargo_metadata: true,
            verify: false,
            gpu_code: Vec::new(),
            ptxas_options: Vec::new(),
            split_kernels: None,
            fold_identical: false,
        }
    }

    /// Adds an input: PTX text, a fatbin, or an object carrying one.
    pub fn file(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.inputs
            .push(InputSpec::File(path.as_ref().to_path_buf()));
        self
    }

    /// Adds several inputs.
    pub fn files<P: AsRef<Path>>(&mut self, paths: impl IntoIterator<Item = P>) -> &mut Build {
        for p in paths {
            self.file(p);
        }
        self
    }

    /// Adds an archive; like on a command line, its members are used on demand, for
    /// what the inputs before it still need.
    pub fn archive(&mut self, path: impl AsRef<Path>) -> &mut Build {
        self.file(path)
    }

    /// Adds a target (`sm_80`); several give a fatbin or object with one entry each.
    /// Without any, `PTXLD_ARCH` (comma-separated) is used, else the inputs' highest.
    pub fn arch(&mut self, arch: &str) -> &mut Build {
        self.archs.push(arch.to_string());
        self
    }

    /// Sets the output's `.version`; below an input's, where everything the link
    /// uses is in that version (the link fails otherwise, naming what is not).
    pub fn ptx_version(&mut self, major: u32, minor: u32) -> &mut Build {
        self.ptx_version = Some(PtxVersion::new(major, minor));
        self.ptx_version_min = false;
        self
    }

    /// Writes the lowest `.version` that has everything the link uses (and the
    /// target needs), whatever versions the inputs declare: the PTX then loads on
    /// the oldest driver that can run it.
    pub fn ptx_version_min(&mut self) -> &mut Build {
        self.ptx_version_min = true;
        self.ptx_version = None;
        self
    }

    /// Adds a fatbin entry (`--gpu-code`): `sm_90` for ptxas's machine code for that
    /// target, `compute_90` for the PTX (which the driver compiles on newer GPUs). The
    /// codes name the targets, instead of [`Build::arch`]; with
    /// [`OutputKind::Fatbin`] or [`OutputKind::Obj`]. ptxas is found as for
    /// [`Build::verify`].
    pub fn gpu_code(&mut self, code: &str) -> &mut Build {
        self.gpu_code.push(code.to_string());
        self
    }

    /// Gives ptxas an option (`-O3`, `-lineinfo`) wherever the build runs it.
    pub fn ptxas_option(&mut self, option: &str) -> &mut Build {
        self.ptxas_options.push(option.to_string());
        self
    }

    /// Assembles machine code as `parts` modules at once (ptxas each) linked into
    /// one cubin by nvJitLink (`--split-kernels`); 1 (the default): one ptxas.
    pub fn split_kernels(&mut self, parts: usize) -> &mut Build {
        self.split_kernels = Some(parts);
        self
    }

    /// Chooses PTX (default), a fatbin, an ELF object, or a cubin (ptxas's machine
    /// code for the one target).
    pub fn emit(&mut self, emit: OutputKind) -> &mut Build {
        self.emit = emit;
        self
    }

    /// Folds strong definitions of one symbol that are identical (the same
    /// header-only library compiled into two inputs) into one, instead of failing on
    /// a duplicate (`--fold-identical`); different ones still fail, showing where
    /// they differ.
    pub fn fold_identical(&mut self, on: bool) -> &mut Build {
        self.fold_identical = on;
        self
    }

    /// Removes code no kernel (and no [`Build::export`]) reaches (`--gc-sections`).
    pub fn gc(&mut self, on: bool) -> &mut Build {
        self.gc = on;
        self
    }

    /// Keeps `symbol` with [`Build::gc`].
    pub fn export(&mut self, symbol: &str) -> &mut Build {
        self.exports.push(symbol.to_string());
        self
    }

    /// Assembles each target's output with whole-program ptxas before writing it
    /// (`--verify`): ptxas's errors fail the build, each at the input line it is
    /// about. ptxas is `PTXAS`, else `CUDA_HOME/bin/ptxas`, else
    /// `CUDA_PATH/bin/ptxas`, else the one in `PATH`; none is an error.
    pub fn verify(&mut self, on: bool) -> &mut Build {
        self.verify = on;
        self
    }

    /// Writes into `dir` instead of `OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Build {
        self.cargo_metadata = on;
        self
    }

    /// Every environment variable is read here, so cargo knows to rerun the script
    /// when it changes.
    fn getenv(&self, name: &str) -> Option<String> {
        if self.cargo_metadata {
            println!("cargo:rerun-if-env-changed={name}");
        }
        std::env::var(name).ok()
    }

    /// Links into `OUT_DIR/NAME.ptx` (`.fatbin`, `.o`, `.cubin` for the other kinds) and returns
    /// the path; panics with the diagnostics on failure, as `cc` does.
    pub fn compile(&self, name: &str) -> PathBuf {
        match self.try_compile(name) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`Build::compile`], returning failures.
    pub fn try_compile(&self, name: &str) -> Result<PathBuf, Error> {
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(self.getenv("OUT_DIR").ok_or(Error::NoOutDir)?),
        };
        let output = dir.join(format!("{name}.{}", self.emit.extension()));
        let mut job = Job::new(&output);
        job.inputs = self.inputs.clone();
        job.emit = Some(self.emit);
        let mut archs = self.archs.clone();
        if archs.is_empty() {
            if let Some(list) = self.getenv("PTXLD_ARCH") {
                archs = list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
        }
        job.archs = archs
            .iter()
            .map(|a| a.parse::<Arch>())
            .collect::<Result<_, _>>()
            .map_err(Error::Arch)?;
        job.ptx_version = self.ptx_version;
        job.ptx_version_min = self.ptx_version_min;
        job.gc_sections = self.gc;
        job.exports = self.exports.clone();
        job.verify = self.verify;
        job.gpu_code = self
            .gpu_code
            .iter()
            .map(|c| c.parse::<GpuCode>())
            .collect::<Result<_, _>>()
            .map_err(Error::Arch)?;
        job.ptxas_options = self.ptxas_options.clone();
        job.split_kernels = self.split_kernels;
        job.fold_identical = self.fold_identical;
        let runs_ptxas =
            self.verify || self.emit == OutputKind::Cubin || job.gpu_code.iter().any(|c| c.sass);
        if runs_ptxas && self.cargo_metadata {
            // Read by the driver, which prints nothing for cargo.
            for name in crate::verify::ENV {
                println!("cargo:rerun-if-env-changed={name}");
            }
            if self.split_kernels.is_some_and(|n| n > 1) {
                for name in crate::verify::nvjitlink::NVJITLINK_ENV {
                    println!("cargo:rerun-if-env-changed={name}");
                }
            }
        }
        job.symbol = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        if self.cargo_metadata {
            for i in &self.inputs {
                if let InputSpec::File(p) = i {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
        let outcome = driver::run(&job).map_err(Error::Link)?;
        if self.cargo_metadata {
            for line in outcome.report.render().lines() {
                println!("cargo:warning={line}");
            }
        }
        Ok(output)
    }
}
