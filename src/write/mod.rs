//! The output pipeline: the merged module as a rope written to the output file,
//! containers around it, atomic output files, and modules written back by splicing.
//!
//! The files of this module, one job each:
//!
//! * [`layout`]: the merged module of a link's analysis, spliced from the inputs;
//! * [`rope`]: the output as ranges of the inputs and new text, and writing it;
//! * `assemble.rs`: the output in chunks read from the inputs, in order for a stream;
//! * `positioned.rs`: an output file written by every thread, each chunk at its offset;
//! * `split.rs`: the merged module cut into parts for ptxas (`--split-kernels`);
//! * [`origin`]: the input bytes that lines of the output were spliced from;
//! * [`output`]: output files replaced atomically, special files written in place;
//! * `temporary.rs`: the temporaries they are written to, and sweeping leftovers;
//! * [`fatbin`], [`elf`]: the containers written around the merged PTX;
//! * `archive.rs`: the static library a build script links its object from;
//! * [`emit`]: one module written back with renamed symbols.
//!
//! Every system call that writes an output is made here. The one that also reads an
//! input, `copy_file_range`, is made by the input it copies from
//! ([`crate::input::Bytes::copy_to`]).

pub(crate) mod archive;
mod assemble;
pub mod elf;
pub mod emit;
pub mod fatbin;
pub mod layout;
pub mod origin;
pub mod output;
#[cfg(unix)]
mod positioned;
pub mod rope;
pub(crate) mod split;
mod temporary;
#[cfg(test)]
mod test_files;

pub(crate) use temporary::RemovedOnSignal;
