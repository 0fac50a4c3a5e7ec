//! What a link gives back: the output (written or to write) and its report, or a
//! failure with its report.

use std::path::PathBuf;

use crate::diag::{Code, Diagnostic, Report};
use crate::ir::Module;
use crate::source::SourceMap;
use crate::write::layout::module_sources;
use crate::write::rope::Rope;

use super::plan::Stamp;

/// A finished link.
#[derive(Debug)]
#[non_exhaustive]
pub struct Outcome {
    /// What was (or, for a link that writes nothing, would be) written to the output.
    pub(super) output: Output,
    /// Warnings and log lines (`--verbose`, `--stats`, traces), in order, for the
    /// caller to render ([`Report::render`]).
    pub report: Report,
    /// Every file read: inputs, archives, response files.
    pub files_read: Vec<PathBuf>,
    /// The link map (of the first target), if `-Map` or `--print-map` asked for it.
    pub map: Option<String>,
    /// The inputs' size and time when read.
    pub(super) stamps: Vec<Stamp>,
}

/// The output of a link, not yet written.
pub(super) enum Output {
    /// Assembled bytes (containers).
    Bytes(Vec<u8>),
    /// A merged PTX module as ranges of its inputs, with the sources it refers to.
    Ptx {
        rope: Rope,
        sources: SourceMap,
        /// The modules whose sources the rope's pieces refer to, in module order.
        /// Kept rather than freed module by module: the command line exits without
        /// freeing what the operating system reclaims anyway.
        modules: Vec<Module>,
    },
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Output::Ptx { rope, .. } => write!(f, "Ptx({} bytes)", rope.len()),
        }
    }
}

impl Outcome {
    /// What was (or, for [`link_in_memory`](crate::link_in_memory), would be) written to the
    /// output, as one buffer.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.output {
            Output::Bytes(b) => b.clone(),
            Output::Ptx { rope, .. } => rope.to_vec(&self.srcs()),
        }
    }

    /// Like [`Outcome::bytes`], without a copy where the output is already one buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        match self.output {
            Output::Bytes(b) => b,
            Output::Ptx { .. } => self.bytes(),
        }
    }

    /// The output's length in bytes.
    pub fn len(&self) -> u64 {
        match &self.output {
            Output::Bytes(b) => b.len() as u64,
            Output::Ptx { rope, .. } => rope.len(),
        }
    }

    /// True if the output is empty (a link never produces an empty output).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the output to `w`: PTX straight from the mapped inputs, in large
    /// vectored writes.
    /// `file` is the file `w` writes to, if it is one: large pieces of the inputs
    /// are then copied into it by the kernel.
    pub fn write_to(
        &self,
        w: &mut dyn std::io::Write,
        file: Option<&std::fs::File>,
    ) -> std::io::Result<()> {
        self.write_to_then(w, file, &|| {})
    }

    /// Like [`Outcome::write_to`], calling `after_reads` once the inputs are not
    /// read any more (see [`crate::write::rope::Rope::write_to_then`]; at once for an
    /// output held in memory).
    pub(crate) fn write_to_then(
        &self,
        w: &mut dyn std::io::Write,
        file: Option<&std::fs::File>,
        after_reads: &(dyn Fn() + Sync),
    ) -> std::io::Result<()> {
        match &self.output {
            Output::Bytes(b) => {
                after_reads();
                w.write_all(b)
            }
            Output::Ptx { rope, .. } => rope.write_to_then(&self.srcs(), w, file, after_reads),
        }
    }

    /// The inputs of a merged PTX output (`None` for containers, which own their
    /// bytes): for tests of what the writer reads.
    #[doc(hidden)]
    pub fn sources(&self) -> Option<&SourceMap> {
        match &self.output {
            Output::Bytes(_) => None,
            Output::Ptx { sources, .. } => Some(sources),
        }
    }

    pub(super) fn srcs(&self) -> Vec<crate::write::rope::ModuleText<'_>> {
        match &self.output {
            Output::Bytes(_) => Vec::new(),
            Output::Ptx {
                sources, modules, ..
            } => module_sources(sources, modules),
        }
    }
}

/// A failed link: what it reported, errors included.
#[derive(Debug)]
#[non_exhaustive]
pub struct Failure {
    /// The diagnostics (resolved) and log lines, in order.
    pub report: Report,
}

impl std::fmt::Display for Failure {
    /// The report as the command line prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.report.render().trim_end())
    }
}

impl std::error::Error for Failure {}

impl From<Report> for Failure {
    fn from(report: Report) -> Failure {
        Failure { report }
    }
}

/// A failure of one error without a location.
pub(crate) fn fail(code: Code, msg: impl Into<String>) -> Failure {
    Failure::from(Report::of(Diagnostic::global_error(code, msg)))
}
