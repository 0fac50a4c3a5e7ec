//! The whole link of two or three fuzzed modules (split at NUL bytes): must never
//! panic, and a successful link's output must parse without errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptxld::internal::input::Bytes;
use ptxld::internal::link::LinkOptions;
use ptxld::internal::write::layout::{link, module_sources};
use ptxld::internal::parse::parse_module;
use ptxld::internal::source::{FileId, SourceFile, SourceMap};

fuzz_target!(|data: &[u8]| {
    let mut sources = SourceMap::new();
    for (i, part) in data.split(|&b| b == 0).take(3).enumerate() {
        sources.add(SourceFile::new(format!("m{i}.ptx"), None, Bytes::Owned(part.to_vec())));
    }
    let (modules, diags) = ptxld::internal::frontend::parse_sources(&sources);
    if diags.has_errors() {
        return;
    }
    let opts = LinkOptions::default();
    if let Ok(ptx) = link(&sources, &modules, &opts) {
        let text = ptx[0].to_vec(&module_sources(&sources, &modules));
        let reparsed = parse_module(FileId(0), &text);
        assert!(
            !reparsed.diagnostics.iter().any(|d| d.is_error()),
            "linked output does not parse"
        );
    }
});
