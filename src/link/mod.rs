//! The linker: many parsed modules in, one analysis of their link out, and from it
//! the merged PTX module.
//!
//! `analyze` runs the phases, each borrowing the previous one's result:
//! 1. `db`: every symbol of every input, the names bound across modules, and the
//!    petgraph graph of references;
//! 2. `resolve`: NVIDIA's linkage rules decide what each symbol binds to;
//! 3. `gc`: with `--gc-sections`, what the kernels and exports reach;
//! 4. `dwarf`: the debug sections of all modules merged, one block per section (the
//!    header needs to know whose DWARF survived);
//! 5. [`header`]: `.version`, `.target`, `.address_size` of the merged module, once
//!    per output target;
//! 6. `names` and `variables`: output names (module-local collisions renamed) and the
//!    order of the variables.
//!
//! `layout` then splices the output text from the inputs. All errors of a link are
//! collected, sorted and kept in the analysis.

mod abi;
mod analysis;
mod compat;
pub(crate) mod db;
mod debug;
mod dwarf;
pub(crate) mod gc;
pub mod header;
pub(crate) mod inputs;
pub(crate) mod names;
pub(crate) mod report;
pub(crate) mod resolve;
pub use crate::write::rope;
mod shards;
mod variables;
mod write;

pub use analysis::LinkOptions;
pub(crate) use analysis::{analyze, is_code_or_data, Analysis};
pub(crate) use compat::var_size;
pub use gc::GcOptions;
pub use header::{HeaderOptions, MergedHeader};
pub use resolve::SYSTEM_CALLS;
pub use rope::{ModuleText, Rope};
pub(crate) use write::layout;

use crate::diag::Diagnostics;
use crate::ir::Module;
use crate::source::SourceMap;

/// Links `modules` (parsed from `sources`, in link order) into one PTX module per
/// target of `opts`; on failure, returns every error found, sorted.
pub fn link(
    sources: &SourceMap,
    modules: &[Module],
    opts: &LinkOptions,
) -> Result<Vec<Rope>, Diagnostics> {
    let a = analyze(sources, modules, opts);
    if !a.ok() {
        return Err(a.errors);
    }
    Ok((0..a.headers.len()).map(|t| layout(&a, t)).collect())
}

/// The source of each of `modules`, in order: what the pieces of a rope that
/// [`link`] made of those modules refer to (`rope.to_vec(&module_sources(..))`).
pub fn module_sources<'a>(sources: &'a SourceMap, modules: &'a [Module]) -> Vec<ModuleText<'a>> {
    modules
        .iter()
        .map(|m| {
            let f = sources.file(m.file);
            ModuleText {
                src: rope::Text::File(f.pages()),
                kept: &m.kept,
                pages: Some(f.pages()),
            }
        })
        .collect()
}
