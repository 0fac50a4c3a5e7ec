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
//! The writer's `layout` (`write/layout.rs`) then splices the output text from the
//! inputs. All errors of a link are
//! collected, sorted and kept in the analysis.

mod abi;
mod analysis;
mod compat;
pub(crate) mod db;
mod debug;
mod dwarf;
pub(crate) mod gc;
pub mod header;
mod identical;
pub(crate) mod inputs;
pub(crate) mod names;
pub(crate) mod needs;
pub(crate) mod report;
pub(crate) mod resolve;
mod shards;
mod variables;

pub use analysis::LinkOptions;
pub(crate) use analysis::{analyze, is_code_or_data, Analysis};
pub(crate) use compat::var_size;
pub(crate) use debug::{DebugPlan, Dwarf};
pub use gc::{GcOptions, VariableRoots};
pub use header::{HeaderOptions, MergedHeader};
pub use resolve::SYSTEM_CALLS;
