//! The integration tests, one binary (built and linked once) with a module per area.
//! `support` holds what they share: running `ptxld`, fixtures, NVIDIA tools, skips and
//! expected files. docs/testing.md says where a new test goes.
//!
//! `cargo test --test it MODULE::` runs one area, e.g. `cargo test --test it link::`.

mod support;

mod broken;
mod build_system;
mod check;
mod cli;
mod containers;
mod dwarf;
mod example_crate;
mod frontend;
mod huge;
mod inputs;
mod isa_table;
mod link;
mod lowering;
mod machine_code;
mod mutants;
mod operand_typing;
#[cfg(target_os = "linux")]
mod output_safety;
mod producers;
mod robustness;
mod skips;
mod verify;
