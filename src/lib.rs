//! ptxld: a separate-compilation linker for NVIDIA PTX.
//!
//! It links the PTX modules that LLVM/clang, GCC, NVRTC and NVVM write, one per
//! translation unit, into one module that `ptxas` and the CUDA driver accept as a
//! whole program, or into a fatbin or an ELF host object carrying it, by NVIDIA's
//! linking rules.
//!
//! From a cargo build script, [`Build`] works like the `cc` crate:
//!
//! ```no_run
//! ptxld::Build::new()
//!     .file("kernels/a.ptx")
//!     .file("kernels/b.ptx")
//!     .arch("sm_80")
//!     .compile("kernels"); // $OUT_DIR/kernels.ptx
//! ```
//!
//! Anywhere else, describe the link as a [`Job`] and run it: [`link`] reads the
//! inputs and writes the output as the command line does, [`link_in_memory`]
//! links bytes you hold, and [`check`] reports every problem without writing.
//!
//! ```no_run
//! let mut job = ptxld::Job::new("app.fatbin");
//! job.inputs = vec![
//!     ptxld::InputSpec::File("a.ptx".into()),
//!     ptxld::InputSpec::File("b.ptx".into()),
//! ];
//! job.archs = vec!["sm_80".parse()?, "sm_90".parse()?];
//! match ptxld::link(&job) {
//!     Ok(outcome) => eprint!("{}", outcome.report.render()),
//!     Err(failure) => eprint!("{failure}"),
//! }
//! # Ok::<(), ptxld::ParseError>(())
//! ```
//!
//! Diagnostics stay structured ([`Diagnostic`]: severity, stable [`Code`],
//! locations, help) until you render them: [`Report::render`] prints them the way
//! the command line does, [`CheckReport::to_json`] as versioned JSON.
//!
//! The crate's phases (input, lex, parse, link, write) are not part of this API;
//! `ARCHITECTURE.md` in the repository maps them.

#![warn(missing_docs)]

mod build;
pub mod cli;
mod describe;
mod diag;
mod driver;
mod explain;
mod frontend;
mod input;
mod ir;
mod isa;
mod lex;
mod link;
mod options;
mod parallel;
mod parse;
mod path_bytes;
mod select;
mod source;
mod timing;
mod verify;
mod write;

#[doc(hidden)]
pub mod internal;

pub use build::{Build, Error as BuildError};
pub use diag::{CheckReport, Code, Diagnostic, Location, Report, Severity};
pub use driver::{check, link_in_memory, Failure, InputSpec, Job, MemoryInput, Outcome};
pub use options::{Arch, GpuCode, OutputKind, ParseError, PtxVersion};

/// The README's Rust examples, compiled against the public API alone (as doctests,
/// which build as a crate of their own).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

/// Links `job` as the command line does: reads the inputs, writes the output
/// atomically, the link map and the dependency file. A failed link leaves no output
/// behind and never writes a file it read.
pub fn link(job: &Job) -> Result<Outcome, Failure> {
    driver::run(job)
}
