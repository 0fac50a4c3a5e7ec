//! Loading and parsing many inputs in parallel, with deterministic results.
//!
//! Files are mapped and parsed on the rayon pool; results are collected in input
//! order and diagnostics are sorted, so the outcome does not depend on the number of
//! threads or on scheduling.

use std::path::PathBuf;

use rayon::prelude::*;

use crate::container::fatbin;
use crate::container::input::{extract, Target};
use crate::diag::{Diagnostic, Diagnostics};
use crate::input::{read_path, Bytes};
use crate::ir::Module;
use crate::parse::parse_module;
use crate::source::{SourceFile, SourceMap};

/// Parsed inputs: the source map, one module per loaded file (in input order), and
/// every diagnostic, sorted.
pub struct ParsedInputs {
    /// The loaded files.
    pub sources: SourceMap,
    /// One module per file in `sources`, same order.
    pub modules: Vec<Module>,
    /// Load errors and parse errors of all files, sorted.
    pub diagnostics: Diagnostics,
}

/// How inputs are loaded.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Keep each module's token array; `false` releases it right after parsing
    /// ([`Module::release_tokens`]), which is all the linker needs.
    pub keep_tokens: bool,
    /// The link target, for choosing among the PTX entries of container inputs
    /// (`.fatbin` files, ELF objects); `None` takes each container's highest entry.
    pub target: Option<Target>,
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            keep_tokens: true,
            target: None,
        }
    }
}

/// Maps and parses `paths` in parallel. A file that cannot be read is reported as
/// an error and left out; every other file is parsed even if some fail.
pub fn parse_files(paths: &[PathBuf]) -> ParsedInputs {
    parse_files_with(paths, &LoadOptions::default())
}

/// Like [`parse_files`], with options.
pub fn parse_files_with(paths: &[PathBuf], opts: &LoadOptions) -> ParsedInputs {
    let (sources, mut diagnostics, flags) = load_files(paths, opts.target);
    let (modules, parse_diags) = parse_sources_with(&sources, opts.keep_tokens);
    diagnostics.extend(parse_diags);
    // A container entry's host flags must match its own PTX: 64-bit hosts run
    // `.address_size 64` code (the header merge then makes all modules agree).
    for (m, (_, f)) in modules.iter().zip(sources.files()) {
        if let Some(flags) = flags[m.file.index()] {
            let entry_64 = flags & fatbin::flags::ADDR64 != 0;
            if entry_64 != (m.header.address_bits() == 64) {
                diagnostics.push(Diagnostic::global_error(format!(
                    "host platform mismatch: {}: the container entry is for a {}-bit host but \
                     its PTX has .address_size {}",
                    f.name(),
                    if entry_64 { 64 } else { 32 },
                    m.header.address_bits()
                )));
            }
        }
    }
    diagnostics.sort();
    ParsedInputs {
        sources,
        modules,
        diagnostics,
    }
}

/// Like [`parse_files`], but only reports: each module is dropped as soon as it is
/// parsed, so memory stays bounded by the modules in flight (`--syntax-only`).
pub fn check_files(paths: &[PathBuf]) -> (SourceMap, Diagnostics) {
    let (sources, mut diagnostics, _) = load_files(paths, None);
    let files: Vec<_> = sources.files().collect();
    let per_file: Vec<Vec<Diagnostic>> = files
        .par_iter()
        .map(|&(id, f)| parse_module(id, f.bytes()).diagnostics)
        .collect();
    diagnostics.extend(per_file.into_iter().flatten());
    diagnostics.sort();
    (sources, diagnostics)
}

/// True for data no PTX text starts with: control bytes (other than whitespace) in
/// the first 64 bytes. PTX may end with a NUL (NVRTC's buffers do), but never starts
/// with one.
fn is_binary(data: &[u8]) -> bool {
    data.iter()
        .take(64)
        .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// Maps every input in parallel; unreadable ones become diagnostics. A container is
/// replaced by the PTX of its chosen entry, named `file(entry)`; its entry flags are
/// returned by file id.
fn load_files(
    paths: &[PathBuf],
    target: Option<Target>,
) -> (SourceMap, Diagnostics, Vec<Option<u64>>) {
    let loaded: Vec<_> = paths
        .par_iter()
        .map(|p| {
            let bytes = read_path(p).map_err(|e| e.to_string())?;
            match extract(bytes.as_slice(), target) {
                None if is_binary(bytes.as_slice()) => Err(format!(
                    "{}: binary data, neither PTX text nor a fatbin or ELF object carrying one \
                     (a fatbin starts with 50 ED 55 BA)",
                    p.display()
                )),
                None => Ok((bytes, None, None)),
                Some(Ok(x)) => Ok((Bytes::Owned(x.text), Some(x.label), Some(x.flags))),
                Some(Err(e)) => Err(format!("{}: {e}", p.display())),
            }
        })
        .collect();
    let mut sources = SourceMap::new();
    let mut diagnostics = Diagnostics::new();
    let mut flags = Vec::new();
    for (path, result) in paths.iter().zip(loaded) {
        match result {
            Ok((bytes, label, entry_flags)) => {
                let name = match label {
                    Some(l) => format!("{}({l})", path.display()),
                    None => path.display().to_string(),
                };
                sources.add(SourceFile::new(name, Some(path.clone()), bytes));
                flags.push(entry_flags);
            }
            Err(e) => diagnostics.push(Diagnostic::global_error(e)),
        }
    }
    (sources, diagnostics, flags)
}

/// Parses every file of `sources` in parallel; modules come back in file order.
pub fn parse_sources(sources: &SourceMap) -> (Vec<Module>, Diagnostics) {
    parse_sources_with(sources, true)
}

fn parse_sources_with(sources: &SourceMap, keep_tokens: bool) -> (Vec<Module>, Diagnostics) {
    let files: Vec<_> = sources.files().collect();
    let parsed: Vec<_> = files
        .par_iter()
        .map(|&(id, f)| {
            let mut p = parse_module(id, f.bytes());
            if !keep_tokens {
                p.module.release_tokens();
            }
            p
        })
        .collect();
    let mut diagnostics = Diagnostics::new();
    let mut modules = Vec::with_capacity(parsed.len());
    for p in parsed {
        diagnostics.extend(p.diagnostics);
        modules.push(p.module);
    }
    diagnostics.sort();
    (modules, diagnostics)
}
