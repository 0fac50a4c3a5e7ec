//! Lexer + parser + writer on arbitrary bytes: must never panic, writing the parsed
//! module back must reproduce the input exactly, and the linker's compact parse must
//! build the same module as the full one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ptxld::internal::write::emit::write_module;
use ptxld::internal::input::Bytes;
use ptxld::internal::parse::{parse_module, parse_module_deferred, Parsed};
use ptxld::internal::source::{FileId, SourceFile, SourceMap};

fuzz_target!(|data: &[u8]| {
    let parsed = parse_module(FileId(0), data);
    let mut out = Vec::new();
    write_module(&parsed.module, data, |_| None, &mut out);
    assert_eq!(out, data, "round trip lost bytes");
    // Renaming every symbol must not panic either.
    let renamed = b"r".to_vec();
    let mut out2 = Vec::new();
    write_module(&parsed.module, data, |_| Some(&renamed[..]), &mut out2);
    // Rendering diagnostics exercises line/column lookup and snippets.
    let mut map = SourceMap::new();
    map.add(SourceFile::new("fuzz.ptx".into(), None, Bytes::Owned(data.to_vec())));
    for d in &parsed.diagnostics {
        let _ = d.render(&map);
    }
    let without_tokens = |mut p: Parsed| {
        p.module.release_tokens();
        format!("{:?}{:?}", p.module, p.diagnostics)
    };
    assert_eq!(
        without_tokens(parsed),
        without_tokens(parse_module_deferred(FileId(0), data, Vec::new(), false)),
        "compact parse differs"
    );
    // Recording what the module uses (segments, special registers, guards) on any
    // bytes; the unit tests hold the record to a full scan.
    let _ = parse_module_deferred(FileId(0), data, Vec::new(), true);
});
