//! The PTX instructions, directives and special registers a module uses, and the
//! lowest PTX ISA version and target that have them all: what a link really needs,
//! whatever `.version` and `.target` its inputs declare (docs/isa-table.md).

mod forms;
mod scan;
mod table;
mod typing;

pub(crate) use scan::{module_uses, ModuleUses};
pub(crate) use table::{higher_target, table, target_satisfies, Need, Version};
