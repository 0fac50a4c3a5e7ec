//! What a link is asked to do: the inputs in command-line order and the options.

use std::path::PathBuf;

use crate::link::VariableRoots;
use crate::options::{Arch, GpuCode, OutputKind, PtxVersion};

/// One command-line input item, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSpec {
    /// A PTX file, container or archive.
    File(PathBuf),
    /// `-lNAME` (`libNAME.a` in the search directories) or `-l:FILE` (given as `:FILE`).
    Lib(std::ffi::OsString),
    /// `--whole-archive` (true) / `--no-whole-archive` (false).
    WholeArchive(bool),
    /// `--start-group` (true) / `--end-group` (false).
    Group(bool),
}

/// Everything a link needs to know.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Job {
    /// Inputs in command-line order.
    pub inputs: Vec<InputSpec>,
    /// `-L` directories, in order.
    pub lib_dirs: Vec<PathBuf>,
    /// `-u` symbols.
    pub undefined: Vec<String>,
    /// `-o`; `-` is standard output.
    pub output: PathBuf,
    /// `--emit`; `None` chooses by the output's extension.
    pub emit: Option<OutputKind>,
    /// `--arch`, possibly several (one fatbin entry each).
    pub archs: Vec<Arch>,
    /// `--ptx-version`.
    pub ptx_version: Option<PtxVersion>,
    /// `--ptx-version=min`: the lowest version that has everything the link uses
    /// (overrides [`Job::ptx_version`]).
    pub ptx_version_min: bool,
    /// `--symbol` base name for objects.
    pub symbol: String,
    /// `--error-limit` (0 = none).
    pub error_limit: usize,
    /// `--fatal-warnings`.
    pub fatal_warnings: bool,
    /// `--verbose`: report which archive member was loaded for which symbol.
    pub verbose: bool,
    /// `--dependency-file`.
    pub depfile: Option<PathBuf>,
    /// Further files the job depended on (response files), for the depfile.
    pub extra_deps: Vec<PathBuf>,
    /// `--gc-sections`: remove what no kernel, `--export` or `-u` symbol reaches.
    pub gc_sections: bool,
    /// `--export SYM`: kept by `--gc-sections`.
    pub exports: Vec<String>,
    /// `--export-all`: every `.visible` symbol is kept by `--gc-sections`.
    pub export_all: bool,
    /// `--print-gc-sections`: list what `--gc-sections` removed.
    pub print_gc_sections: bool,
    /// `-Map FILE`: write the link map there.
    pub map_file: Option<PathBuf>,
    /// `--print-map`: print the link map on standard output.
    pub print_map: bool,
    /// `--trace-symbol` / `-y` names.
    pub trace: Vec<String>,
    /// `--why-live` names (with `--gc-sections`).
    pub why_live: Vec<String>,
    /// `--strip-debug`.
    pub strip_debug: bool,
    /// `--stats`: report the wall and CPU time of each phase and the peak memory.
    pub stats: bool,
    /// `--verify`: assemble each target's output with ptxas before writing it; its
    /// errors fail the link (docs/verify.md).
    pub verify: bool,
    /// `--gpu-code`: the fatbin's entries, machine code (`sm_NN`) and PTX
    /// (`compute_NN`), in order; their architectures are the link's targets.
    pub gpu_code: Vec<GpuCode>,
    /// `-Xptxas` and `--maxrregcount`: what ptxas is given, in order, wherever the
    /// link runs it (`--emit cubin`, `--gpu-code sm_NN`, `--verify`).
    pub ptxas_options: Vec<String>,
    /// `--split-kernels N`: machine code assembled as N parts at once and linked by
    /// nvJitLink (`None` or 1: one ptxas on the whole module).
    pub split_kernels: Option<usize>,
    /// `--kernels-used` (nvJitLink's `-kernels-used`): only these kernels are kept,
    /// with what they reach.
    pub kernels_used: Vec<String>,
    /// `--variables-used` (nvJitLink's `-variables-used`): the variables the host
    /// uses; the others stay only where kept code reaches them.
    pub variables_used: Vec<String>,
    /// `--optimize-unused-variables` (nvJitLink's `-optimize-unused-variables`): a
    /// variable no kept code reaches is removed.
    pub optimize_unused_variables: bool,
    /// `--fold-identical`: strong definitions of one symbol whose texts, and the
    /// module-local symbols they use, are identical become one.
    pub fold_identical: bool,
    /// `-r` / `--relocatable`: a partial link, one PTX module that keeps the imports
    /// nothing defines `.extern`, to be linked again.
    pub relocatable: bool,
    /// The process ends when the link is done (the `ptxld` command): what the link
    /// analysed is left for the exit to free, not freed on the way to writing the
    /// output (lld exits early the same way). False for an embedder, whose process
    /// goes on.
    pub exits_after: bool,
}

impl Job {
    /// Whether anything may be removed: `--gc-sections`, or one of nvJitLink's
    /// options that say what the host uses.
    pub(crate) fn collects_garbage(&self) -> bool {
        self.gc_sections
            || !self.kernels_used.is_empty()
            || !self.variables_used.is_empty()
            || self.optimize_unused_variables
    }

    /// Which variables are kept whether or not code reaches them: those of
    /// `--variables-used`; none with `--optimize-unused-variables` or
    /// `--gc-sections`; else all (nvJitLink keeps every variable when it is only
    /// told which kernels are used).
    pub(crate) fn variable_roots(&self) -> VariableRoots {
        if !self.variables_used.is_empty() {
            VariableRoots::Named(self.variables_used.clone())
        } else if self.optimize_unused_variables || self.gc_sections {
            VariableRoots::Reached
        } else {
            VariableRoots::All
        }
    }
    /// The files named as inputs (not `-l` libraries), in order.
    pub fn input_files(&self) -> Vec<PathBuf> {
        self.inputs
            .iter()
            .filter_map(|i| match i {
                InputSpec::File(p) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// A job with defaults: PTX by extension, error limit 20, symbol base `ptxld`.
    pub fn new(output: impl Into<PathBuf>) -> Job {
        Job {
            inputs: Vec::new(),
            lib_dirs: Vec::new(),
            undefined: Vec::new(),
            output: output.into(),
            emit: None,
            archs: Vec::new(),
            ptx_version: None,
            ptx_version_min: false,
            symbol: "ptxld".to_string(),
            error_limit: 20,
            fatal_warnings: false,
            verbose: false,
            depfile: None,
            extra_deps: Vec::new(),
            gc_sections: false,
            exports: Vec::new(),
            export_all: false,
            print_gc_sections: false,
            map_file: None,
            print_map: false,
            trace: Vec::new(),
            why_live: Vec::new(),
            strip_debug: false,
            stats: false,
            verify: false,
            gpu_code: Vec::new(),
            ptxas_options: Vec::new(),
            split_kernels: None,
            kernels_used: Vec::new(),
            variables_used: Vec::new(),
            optimize_unused_variables: false,
            fold_identical: false,
            relocatable: false,
            exits_after: false,
        }
    }
}

/// An input held in memory, for [`link_in_memory`](super::link_in_memory).
#[derive(Clone, Debug)]
pub struct MemoryInput {
    /// The name used in messages.
    pub name: String,
    /// PTX text, a container, or an archive.
    pub bytes: Vec<u8>,
}
