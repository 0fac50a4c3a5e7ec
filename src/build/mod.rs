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
//! The builder's methods are spelled as the command line's options and become them:
//! a build is one command line ([`crate::cli::link_job`]), read by the command's own
//! parser, so [`Build::flag`] can add any option the methods lack, and the last of
//! two options that contradict wins as on the command line. `PTXLD_FLAGS` adds
//! options after the build script's, so that whoever runs the build has the last
//! word (`PTXLD_FLAGS=--verify cargo build`).
//!
//! `compile` prints `cargo:rerun-if-changed` for every file the link read and
//! `cargo:rerun-if-env-changed` for every variable of ptxld's it looked at, one
//! `cargo:warning` per warning (its first line, with its location), and for an
//! object the `cargo:rustc-link-*` lines that link it into the crate. It panics at
//! the build script's line with every diagnostic of every input; `try_compile`
//! returns them as an [`Error`].

mod env;
mod error;

use std::path::{Path, PathBuf};

use crate::driver::{self, InputSpec, Job};
use crate::options::{OutputKind, PtxVersion};

use env::{cargo_var, split_archs, split_flags, Env};
pub use error::Error;

/// A link configured from a build script.
#[derive(Clone, Debug)]
pub struct Build {
    inputs: Vec<InputSpec>,
    lib_dirs: Vec<PathBuf>,
    archs: Vec<String>,
    ptx_version: Option<String>,
    emit: Option<OutputKind>,
    gc: bool,
    exports: Vec<String>,
    undefined: Vec<String>,
    strip_debug: bool,
    fatal_warnings: bool,
    symbol: Option<String>,
    verify: bool,
    gpu_code: Vec<String>,
    ptxas_options: Vec<String>,
    split_kernels: Option<usize>,
    fold_identical: bool,
    flags: Vec<String>,
    out_dir: Option<PathBuf>,
    cargo_metadata: bool,
    cargo_warnings: bool,
}

impl Default for Build {
    fn default() -> Build {
        Build::new()
    }
}

impl Build {
    /// A build with no inputs: PTX output, no dead-code removal, `cargo:` lines on.
    pub fn new() -> Build {
        Build {
            inputs: Vec::new(),
            lib_dirs: Vec::new(),
            archs: Vec::new(),
            ptx_version: None,
            emit: None,
            gc: false,
            exports: Vec::new(),
            undefined: Vec::new(),
            strip_debug: false,
            fatal_warnings: false,
            symbol: None,
            verify: false,
            gpu_code: Vec::new(),
            ptxas_options: Vec::new(),
            split_kernels: None,
            fold_identical: false,
            flags: Vec::new(),
            out_dir: None,
            cargo_metadata: true,
            cargo_warnings: true,
        }
    }

    /// Adds an input: PTX text, a fatbin, an object carrying one, or an archive.
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

    /// Adds the archive `libNAME.a` from the [`Build::lib_dir`] directories (`-l`),
    /// at this place among the inputs; `:FILE` names the file itself (`-l:FILE`).
    pub fn lib(&mut self, name: &str) -> &mut Build {
        self.inputs.push(InputSpec::Lib(name.into()));
        self
    }

    /// Adds a directory [`Build::lib`] searches (`-L`), after those added before.
    pub fn lib_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.lib_dirs.push(dir.as_ref().to_path_buf());
        self
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
        self.ptx_version = Some(PtxVersion::new(major, minor).to_string());
        self
    }

    /// Writes the lowest `.version` that has everything the link uses (and the
    /// target needs), whatever versions the inputs declare: the PTX then loads on
    /// the oldest driver that can run it.
    pub fn ptx_version_min(&mut self) -> &mut Build {
        self.ptx_version = Some("min".to_string());
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
    /// code for the one target). An object is also archived as `libNAME.a`, which
    /// cargo links into the crate (`cargo:rustc-link-lib=static=NAME`): Rust code
    /// reaches the fatbin through `NAME_fatbin_wrapper` (see [`Build::symbol`]).
    pub fn emit(&mut self, emit: OutputKind) -> &mut Build {
        self.emit = Some(emit);
        self
    }

    /// Names the object's symbols `BASE_fatbin_wrapper` and `BASE_fatbin_data`
    /// (`--symbol`); the default base is the name given to [`Build::compile`], with
    /// every character that cannot be in a C identifier replaced by `_`.
    pub fn symbol(&mut self, base: &str) -> &mut Build {
        self.symbol = Some(base.to_string());
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
    /// A link that would keep nothing fails, naming the fix.
    pub fn gc(&mut self, on: bool) -> &mut Build {
        self.gc = on;
        self
    }

    /// Keeps `symbol` with [`Build::gc`] (`--export`).
    pub fn export(&mut self, symbol: &str) -> &mut Build {
        self.exports.push(symbol.to_string());
        self
    }

    /// Makes `symbol` undefined at the start (`-u`): archive members that define it
    /// are linked, and [`Build::gc`] keeps it.
    pub fn undefined(&mut self, symbol: &str) -> &mut Build {
        self.undefined.push(symbol.to_string());
        self
    }

    /// Leaves the inputs' debug sections out of the output (`--strip-debug`).
    pub fn strip_debug(&mut self, on: bool) -> &mut Build {
        self.strip_debug = on;
        self
    }

    /// Fails the build on any warning (`--fatal-warnings`).
    pub fn fatal_warnings(&mut self, on: bool) -> &mut Build {
        self.fatal_warnings = on;
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

    /// Adds a command-line option, spelled as for the `ptxld` command
    /// (`--kernels-used=k`, `-O3`, `--Map=link.map`), after the builder's own: for
    /// what the builder has no method for. Inputs, `-l` and `-o` are the builder's
    /// business ([`Build::file`], [`Build::lib`], [`Build::compile`]); a wrong option
    /// fails the build with the command line's message.
    pub fn flag(&mut self, option: &str) -> &mut Build {
        self.flags.push(option.to_string());
        self
    }

    /// Adds several options, as [`Build::flag`].
    pub fn flags<S: AsRef<str>>(&mut self, options: impl IntoIterator<Item = S>) -> &mut Build {
        for o in options {
            self.flag(o.as_ref());
        }
        self
    }

    /// Writes into `dir` instead of `OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl AsRef<Path>) -> &mut Build {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:rerun-if-*` and `cargo:rustc-link-*` lines (default
    /// true).
    pub fn cargo_metadata(&mut self, on: bool) -> &mut Build {
        self.cargo_metadata = on;
        self
    }

    /// Whether to print each warning as a `cargo:warning` line (default true).
    pub fn cargo_warnings(&mut self, on: bool) -> &mut Build {
        self.cargo_warnings = on;
        self
    }

    /// Links into `OUT_DIR/NAME.ptx` (`.fatbin`, `.o`, `.cubin` for the other kinds)
    /// and returns its path. On failure, panics at the caller's line with every
    /// diagnostic, as `cc` does.
    #[track_caller]
    pub fn compile(&self, name: &str) -> PathBuf {
        match self.try_compile(name) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`Build::compile`], returning failures.
    pub fn try_compile(&self, name: &str) -> Result<PathBuf, Error> {
        let env = Env {
            cargo_metadata: self.cargo_metadata,
        };
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(cargo_var("OUT_DIR").ok_or(Error::NoOutDir)?),
        };
        let mut job = self.job(name, &env)?;
        let emit = job.emit.unwrap_or(OutputKind::Ptx);
        job.output = dir.join(format!("{name}.{}", emit.extension()));
        tell_cargo_what_is_read(&job, &env);
        let outcome = driver::run(&job).map_err(|failure| Error::Link {
            output: job.output.clone(),
            inputs: self.input_names(),
            failure,
        })?;
        if self.cargo_metadata {
            // Files found while linking: `-l` archives, thin archives' members.
            let named = job.input_files();
            for f in outcome.files_read.iter().filter(|f| !named.contains(f)) {
                println!("cargo:rerun-if-changed={}", f.display());
            }
        }
        if self.cargo_warnings {
            for d in outcome.report.diagnostics() {
                println!("cargo:warning=ptxld: {}", d.one_line());
            }
        }
        if emit == OutputKind::Obj {
            self.archive_object(name, &outcome.bytes(), &dir)?;
        }
        Ok(job.output)
    }

    /// The link: the builder's options, then [`Build::flag`]'s, then `PTXLD_FLAGS`,
    /// read by the command line's parser; the inputs and `-L` directories added.
    fn job(&self, name: &str, env: &Env) -> Result<Job, Error> {
        let options = self.options(name, env);
        let mut job = crate::cli::link_job(&options).map_err(|e| Error::Options {
            message: e.to_string(),
            options: options.clone(),
        })?;
        job.inputs = self.inputs.clone();
        job.lib_dirs.splice(0..0, self.lib_dirs.iter().cloned());
        Ok(job)
    }

    /// The options of this build, spelled as on the command line.
    fn options(&self, name: &str, env: &Env) -> Vec<String> {
        let symbol: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut o = vec![format!("--symbol={symbol}")];
        let archs = match self.archs.is_empty() {
            true => env
                .ptxld_var("PTXLD_ARCH")
                .map(|v| split_archs(&v).collect())
                .unwrap_or_default(),
            false => self.archs.clone(),
        };
        o.extend(archs.iter().map(|a| format!("--arch={a}")));
        o.extend(
            self.ptx_version
                .iter()
                .map(|v| format!("--ptx-version={v}")),
        );
        o.extend(self.emit.iter().map(|e| format!("--emit={e}")));
        o.extend(self.symbol.iter().map(|s| format!("--symbol={s}")));
        for (on, option) in [
            (self.gc, "--gc-sections"),
            (self.strip_debug, "--strip-debug"),
            (self.fatal_warnings, "--fatal-warnings"),
            (self.fold_identical, "--fold-identical"),
            (self.verify, "--verify"),
        ] {
            if on {
                o.push(option.to_string());
            }
        }
        o.extend(self.exports.iter().map(|s| format!("--export={s}")));
        o.extend(self.undefined.iter().map(|s| format!("--undefined={s}")));
        o.extend(self.gpu_code.iter().map(|c| format!("--gpu-code={c}")));
        o.extend(self.ptxas_options.iter().map(|p| format!("-Xptxas={p}")));
        o.extend(self.split_kernels.map(|n| format!("--split-kernels={n}")));
        o.extend(self.flags.iter().cloned());
        if let Some(v) = env.ptxld_var("PTXLD_FLAGS") {
            o.extend(split_flags(&v));
        }
        o
    }

    /// The inputs as the build named them, for messages.
    fn input_names(&self) -> Vec<String> {
        self.inputs
            .iter()
            .filter_map(|i| match i {
                InputSpec::File(p) => Some(p.display().to_string()),
                InputSpec::Lib(n) => Some(format!("-l{}", n.to_string_lossy())),
                _ => None,
            })
            .collect()
    }

    /// Archives the object `object` (the link's output, as written) as
    /// `dir/libNAME.a` and tells cargo to link it.
    fn archive_object(&self, name: &str, object: &[u8], dir: &Path) -> Result<(), Error> {
        let path = dir.join(format!("lib{name}.a"));
        let fail = |source| Error::Archive {
            path: path.clone(),
            source,
        };
        let member = format!("{name}.o");
        let archive = crate::write::archive::static_library(&member, object).map_err(fail)?;
        crate::write::output::write_atomic(&path, &archive).map_err(fail)?;
        if self.cargo_metadata {
            println!("cargo:rustc-link-search=native={}", dir.display());
            println!("cargo:rustc-link-lib=static={name}");
        }
        Ok(())
    }
}

/// Tells cargo which files and variables the link reads, before it runs (a failed
/// link reruns on any of them too): the inputs named, and the variables that choose
/// ptxas and nvJitLink when the link runs them.
fn tell_cargo_what_is_read(job: &Job, env: &Env) {
    if !env.cargo_metadata {
        return;
    }
    for i in &job.inputs {
        if let InputSpec::File(p) = i {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    let runs_ptxas =
        job.verify || job.emit == Some(OutputKind::Cubin) || job.gpu_code.iter().any(|c| c.sass);
    if runs_ptxas {
        for name in crate::verify::ENV {
            env.watch(name);
        }
        if job.split_kernels.is_some_and(|n| n > 1) {
            for name in crate::verify::nvjitlink::NVJITLINK_ENV {
                env.watch(name);
            }
        }
    }
}
