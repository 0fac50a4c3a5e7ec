//! The linker: many parsed modules in, one PTX module out.
//!
//! Phases, each borrowing the previous one's result:
//! 1. `db`: every symbol of every input, the names bound across modules, and the
//!    petgraph graph of references;
//! 2. `resolve`: NVIDIA's linkage rules decide what each symbol binds to;
//! 3. [`header`]: `.version`, `.target`, `.address_size` of the merged module;
//! 4. `names`: output names (module-local collisions renamed);
//! 5. `write`: layout and splicing of the output text.
//!
//! All errors of a phase are collected, sorted and returned together.

mod compat;
mod db;
pub mod header;
mod names;
mod report;
mod resolve;
mod write;

pub use header::{HeaderOptions, MergedHeader};
pub use resolve::SYSTEM_CALLS;

use crate::diag::{Diagnostic, Diagnostics};
use crate::ir::Module;
use crate::source::SourceMap;

/// What the caller can choose about a link.
#[derive(Clone, Debug, Default)]
pub struct LinkOptions {
    /// Overrides of the merged header (`--arch`, `--ptx-version`).
    pub header: HeaderOptions,
}

/// A successful link.
pub struct Linked {
    /// The merged PTX module.
    pub ptx: Vec<u8>,
    /// The merged header.
    pub header: MergedHeader,
    /// Warnings (the link succeeded anyway).
    pub warnings: Diagnostics,
}

/// Links `modules` (parsed from `sources`, in link order) into one PTX module.
/// On failure, returns every error found, sorted.
pub fn link(
    sources: &SourceMap,
    modules: &[Module],
    opts: &LinkOptions,
) -> Result<Linked, Diagnostics> {
    if modules.is_empty() {
        let mut d = Diagnostics::new();
        d.push(Diagnostic::global_error("no input modules to link"));
        return Err(d);
    }
    let inputs = report::Inputs { sources, modules };
    let db = db::SymbolDb::build(&inputs);
    let dwarf = write::dwarf_policy(modules);
    let mut errors = Diagnostics::new();
    let mut warnings = Diagnostics::new();
    if dwarf == write::Dwarf::Drop {
        warnings.push(Diagnostic {
            severity: crate::diag::Severity::Warning,
            ..Diagnostic::global_error(
                "debug sections of several modules cannot be merged yet; they are dropped \
                 (line information is kept)",
            )
        });
    }
    let header = header::merge(&inputs, &opts.header, dwarf == write::Dwarf::Keep);
    let resolution = resolve::resolve(&inputs, &db);
    let (header, mut resolution) = match (header, resolution) {
        (Ok(h), Ok(r)) => (h, r),
        (h, r) => {
            errors.extend(h.err().unwrap_or_default());
            errors.extend(r.err().unwrap_or_default());
            errors.sort();
            return Err(errors);
        }
    };
    names::assign(&inputs, &mut resolution);
    match write::write(&inputs, &db, &resolution, &header, dwarf) {
        Ok(ptx) => Ok(Linked {
            ptx,
            header,
            warnings,
        }),
        Err(e) => {
            errors.extend(e);
            errors.sort();
            Err(errors)
        }
    }
}
