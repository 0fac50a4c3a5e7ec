//! The command line's language, shared by everything that takes options as words:
//! the `ptxld` command, and embedders that pass nvJitLink-style option strings. From
//! arguments to what to do ([`parse`]): response files, GNU ld spellings, the
//! options table (`table.rs`, which also makes `--help`, the man page and the
//! completions, `generate.rs`), and a [`crate::Job`] built in command-line order.
//!
//! Always built, also without the `cli` feature (the command's own dependencies):
//! [`crate::Build::flag`] takes options in this language.

mod args;
mod generate;
mod rsp;
mod runs;
mod table;

pub use args::{link_job, parse, thread_count, Error, Mode, Options, Parsed};
