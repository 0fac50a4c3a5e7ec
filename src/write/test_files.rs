//! Input files for the writer's tests: texts written to a fresh directory and
//! opened as a link opens its inputs.

use std::path::PathBuf;

use super::rope::{ModuleText, Text};
use crate::input::Bytes;
use crate::ir::KeptText;

/// The kept copies of a module that keeps none.
pub(super) static NOTHING_KEPT: KeptText = KeptText {
    text: Vec::new(),
    spans: Vec::new(),
};

/// `len` letters, in an order `seed` shifts.
pub(super) fn text(len: u32, seed: u32) -> Vec<u8> {
    (0..len)
        .map(|i| b'a' + ((i * 7 + seed) % 26) as u8)
        .collect()
}

/// `texts` as files `m0.ptx`, `m1.ptx`, ... in a fresh directory named after `tag`
/// (which the test removes), opened as a link opens its inputs.
pub(super) fn files(tag: &str, texts: &[Vec<u8>]) -> (PathBuf, Vec<Bytes>) {
    let dir = std::env::temp_dir().join(format!("ptxld-write-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    crate::input::keep_files_open(64);
    let open = texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let path = dir.join(format!("m{i}.ptx"));
            std::fs::write(&path, t).unwrap();
            let b = crate::input::read_path(&path).unwrap();
            assert!(b.is_readable_file());
            b
        })
        .collect();
    (dir, open)
}

/// The modules' texts of `files`, read from the files as the writer reads them.
pub(super) fn srcs(files: &[Bytes]) -> Vec<ModuleText<'_>> {
    files
        .iter()
        .map(|f| ModuleText {
            src: Text::File(f),
            kept: &NOTHING_KEPT,
            pages: Some(f),
        })
        .collect()
}
