//! ptxld: a separate-compilation linker for NVIDIA PTX.
//!
//! The library is organised by phase, each borrowing the previous one's output:
//!
//! * [`input`]: map input files (memmap2), never copying them;
//! * [`source`]: file ids, byte spans, line/column lookup;
//! * [`lexer`]: bytes to tokens, comments kept aside;
//! * [`parse`]: tokens to the [`ir::Module`] IR, with symbols and references;
//! * [`frontend`]: all inputs in parallel, deterministic results;
//! * [`emit`]: writing modules back by splicing source bytes;
//! * [`link`]: symbol resolution by NVIDIA's rules and the merged module;
//! * [`output`]: atomic output files;
//! * [`diag`]: one structured diagnostic type, rendered at the edges (lld's shape,
//!   JSON).

#![warn(missing_docs)]

pub mod archive;
pub mod build;
pub mod container;
pub mod describe;
pub mod diag;
pub mod driver;
pub mod emit;
mod explain;
pub mod frontend;
pub mod input;
pub mod ir;
pub mod lexer;
pub mod link;
mod options;
pub mod output;
pub mod parse;
mod path_bytes;
pub mod select;
pub mod source;
pub mod timing;

pub use build::Build;
pub use diag::{Diagnostic, Diagnostics};
pub use frontend::{check_files, parse_files, parse_sources, ParsedInputs};
pub use options::{Arch, OutputKind, ParseError, PtxVersion};
pub use parse::{parse_module, Parsed};
