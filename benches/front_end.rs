//! Micro-benchmarks of the front end (divan): the lexer, the parser and the link's
//! parse (bodies lexed compactly) on one module from each real producer, reported in
//! bytes per second. `just bench` runs them after the whole-process benchmark
//! (`benches/parse.rs`).

use std::path::PathBuf;

use divan::counter::BytesCount;
use divan::Bencher;
use ptxld::internal::lex::lex;
use ptxld::internal::parse::{parse_module, parse_module_deferred};
use ptxld::internal::source::FileId;

fn main() {
    divan::main();
}

/// One real module per producer (fixtures/ptx), and libdevice (llc-14, ~845 KB).
const INPUTS: &[&str] = &[
    "libdevice",
    "llvm/cu_lib.ptx",
    "gcc/g_math.ptx",
    "nvrtc/rt_kernels.ptx",
    "nvvm/nv_common.ptx",
];

fn input(name: &str) -> Vec<u8> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/ptx");
    let path = if name == "libdevice" {
        std::fs::read_dir(root.join("libdevice"))
            .expect("fixtures/ptx/libdevice")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "ptx"))
            .expect("a libdevice fixture")
    } else {
        root.join(name)
    };
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[divan::bench(args = INPUTS)]
fn lexer(bencher: Bencher, name: &str) {
    let src = input(name);
    bencher
        .counter(BytesCount::of_slice(&src))
        .bench(|| lex(FileId(0), divan::black_box(&src)).tokens.len());
}

#[divan::bench(args = INPUTS)]
fn parser(bencher: Bencher, name: &str) {
    let src = input(name);
    bencher.counter(BytesCount::of_slice(&src)).bench(|| {
        parse_module(FileId(0), divan::black_box(&src))
            .module
            .items
            .len()
    });
}

/// The parse a link runs: bodies lexed once the module's names are known, keeping
/// only what the body walk reads (`parse_module_deferred`).
#[divan::bench(args = INPUTS)]
fn link_parser(bencher: Bencher, name: &str) {
    let src = input(name);
    bencher.counter(BytesCount::of_slice(&src)).bench(|| {
        parse_module_deferred(FileId(0), divan::black_box(&src), Vec::new(), false)
            .module
            .items
            .len()
    });
}
