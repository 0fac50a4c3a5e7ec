//! Loading and parsing many inputs in parallel, with deterministic results.
//!
//! Files are mapped and parsed on the rayon pool; results are collected in input
//! order and diagnostics are sorted, so the outcome does not depend on the number of
//! threads or on scheduling.

use std::path::PathBuf;

use rayon::prelude::*;

use crate::diag::{Diagnostic, Diagnostics};
use crate::input::read_path;
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

/// Maps and parses `paths` in parallel. A file that cannot be read is reported as
/// an error and left out; every other file is parsed even if some fail.
pub fn parse_files(paths: &[PathBuf]) -> ParsedInputs {
    parse_files_with(paths, true)
}

/// Like [`parse_files`]; with `keep_tokens == false` each module's token array is
/// released as soon as it is parsed ([`Module::release_tokens`]), which is all the
/// linker needs.
pub fn parse_files_with(paths: &[PathBuf], keep_tokens: bool) -> ParsedInputs {
    let (sources, mut diagnostics) = load_files(paths);
    let (modules, parse_diags) = parse_sources_with(&sources, keep_tokens);
    diagnostics.extend(parse_diags);
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
    let (sources, mut diagnostics) = load_files(paths);
    let files: Vec<_> = sources.files().collect();
    let per_file: Vec<Vec<Diagnostic>> = files
        .par_iter()
        .map(|&(id, f)| parse_module(id, f.bytes()).diagnostics)
        .collect();
    diagnostics.extend(per_file.into_iter().flatten());
    diagnostics.sort();
    (sources, diagnostics)
}

/// Maps every input in parallel; unreadable ones become diagnostics.
fn load_files(paths: &[PathBuf]) -> (SourceMap, Diagnostics) {
    let loaded: Vec<_> = paths.par_iter().map(|p| read_path(p)).collect();
    let mut sources = SourceMap::new();
    let mut diagnostics = Diagnostics::new();
    for (path, result) in paths.iter().zip(loaded) {
        match result {
            Ok(bytes) => {
                sources.add(SourceFile::new(
                    path.display().to_string(),
                    Some(path.clone()),
                    bytes,
                ));
            }
            Err(e) => diagnostics.push(Diagnostic::global_error(e.to_string())),
        }
    }
    (sources, diagnostics)
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
