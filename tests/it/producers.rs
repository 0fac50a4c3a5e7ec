//! PTX nobody on the project has seen: GCC's nvptx runtime libraries (newlib, libgomp,
//! libgcc, libgfortran, ... as shipped by Debian's gcc-12-offload-nvptx: thousands of
//! modules). Every one must parse without a diagnostic and round-trip exactly.

use std::path::{Path, PathBuf};

use object::read::archive::ArchiveFile;
use ptxld::internal::parse::parse_module;
use ptxld::internal::source::FileId;
use ptxld::internal::write::emit::write_module;

const ACCEL_DIR: &str = "/usr/lib/gcc/x86_64-linux-gnu/12/accel/nvptx-none";

fn archives(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            archives(&p, out);
        } else if p.extension().is_some_and(|x| x == "a") {
            out.push(p);
        }
    }
}

#[test]
fn gcc_runtime_archives_parse_cleanly() {
    let mut libs = Vec::new();
    archives(Path::new(ACCEL_DIR), &mut libs);
    if libs.is_empty() {
        crate::support::skip(
            "gcc_runtime_archives_parse_cleanly",
            &format!("{ACCEL_DIR} has no archives; install gcc-12-offload-nvptx (scripts/install-tools.sh)"),
        );
        return;
    }
    libs.sort();
    let mut modules = 0;
    for lib in &libs {
        let data = std::fs::read(lib).unwrap();
        let archive = ArchiveFile::parse(&*data).unwrap();
        for member in archive.members() {
            let member = member.unwrap();
            let name = String::from_utf8_lossy(member.name()).into_owned();
            let bytes = member.data(&*data).unwrap();
            // nvptx-none-ld style members hold several modules separated by NULs.
            for (k, text) in bytes
                .split(|&b| b == 0)
                .filter(|t| t.iter().any(|b| !b.is_ascii_whitespace()))
                .enumerate()
            {
                let p = parse_module(FileId(0), text);
                assert!(
                    p.diagnostics.is_empty(),
                    "{}({name}) module {k}: {:?}",
                    lib.display(),
                    p.diagnostics
                        .iter()
                        .map(|d| (d.span(), &d.message))
                        .collect::<Vec<_>>()
                );
                let mut out = Vec::new();
                write_module(&p.module, text, |_| None, &mut out);
                assert!(out == text, "{}({name}) does not round-trip", lib.display());
                modules += 1;
            }
        }
    }
    eprintln!("parsed {modules} modules from {} archives", libs.len());
    assert!(modules > 1000, "only {modules} modules found");
}
