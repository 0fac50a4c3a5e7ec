//! The PTX instructions, directives and special registers a module uses, and the
//! lowest PTX ISA version and target that have them all: what a link really needs,
//! whatever `.version` and `.target` its inputs declare (docs/isa-table.md).

mod forms;
mod scan;
mod specials;
mod table;
mod typing;
mod words;

pub(crate) use scan::{head_span, module_uses, tokens_within, ModuleUses, Recorder};
pub(crate) use specials::may_read_special;
pub(crate) use table::{higher_target, table, target_satisfies, Need, Version};
