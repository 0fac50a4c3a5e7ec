//! `just bench`: front-end and link throughput, reported as a ratio to `cat` of the
//! same files measured in the same run (never asserted; tests do not time anything).
//!
//! Corpora:
//! * libdevice: the ~845 KB llc-14 build of libdevice (fixtures/ptx/libdevice);
//! * generated: 200 copies of libdevice with every non-local symbol renamed per copy
//!   (written by ptxld's own splicing writer), about 170 MB, in target/bench-corpus.
//!   Linking them exercises resolution of ~70,000 global names and the renaming of
//!   every colliding module-local symbol (`__internal_*`, `__cudart_*` in each copy).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ptxld::emit::write_module;
use ptxld::input::Bytes;
use ptxld::ir::Linkage;
use ptxld::parse::parse_module;
use ptxld::source::{FileId, SourceFile};

const RUNS: usize = 7;
const COPIES: usize = 200;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn libdevice() -> PathBuf {
    let dir = root().join("fixtures/ptx/libdevice");
    std::fs::read_dir(&dir)
        .expect("fixtures/ptx/libdevice is missing")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "ptx"))
        .expect("no libdevice fixture")
}

/// Writes the generated corpus once (reused by later runs if complete).
fn generated_corpus(src: &Path) -> Vec<PathBuf> {
    let dir = root().join("target/bench-corpus");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = std::fs::read(src).unwrap();
    let f = SourceFile::new("libdevice".into(), None, Bytes::Owned(bytes));
    let parsed = parse_module(FileId(0), f.bytes());
    assert!(parsed.diagnostics.is_empty());
    let m = parsed.module;
    (0..COPIES)
        .map(|i| {
            let path = dir.join(format!("m{i:03}.ptx"));
            if !path.exists() {
                let names: Vec<Option<Vec<u8>>> = m
                    .symbols
                    .iter()
                    .map(|s| {
                        (s.linkage != Linkage::Local).then(|| {
                            let mut n = f.slice(s.name).to_vec();
                            n.extend_from_slice(format!("_m{i}").as_bytes());
                            n
                        })
                    })
                    .collect();
                let mut out = Vec::new();
                write_module(
                    &m,
                    f.bytes(),
                    |id| names[id.0 as usize].as_deref(),
                    &mut out,
                );
                let tmp = path.with_extension("tmp");
                std::fs::write(&tmp, out).unwrap();
                std::fs::rename(&tmp, &path).unwrap();
            }
            path
        })
        .collect()
}

/// Median wall time of a shell command line (after one warm-up run).
fn time_shell(cmd: &str) -> Duration {
    let run = || {
        let t = Instant::now();
        let status = Command::new("sh").args(["-c", cmd]).status().unwrap();
        assert!(status.success(), "{cmd} failed");
        t.elapsed()
    };
    run();
    median((0..RUNS).map(|_| run()).collect())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_cmd(program: &str, args: &[&str], files: &[PathBuf]) -> Duration {
    let run = || {
        let t = Instant::now();
        let status = Command::new(program)
            .args(args)
            .args(files)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "{program} failed");
        t.elapsed()
    };
    run(); // warm the page cache
    median((0..RUNS).map(|_| run()).collect())
}

fn total_size(files: &[PathBuf]) -> u64 {
    files
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

fn mb(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn report_link(name: &str, files: &[PathBuf]) {
    let bytes = total_size(files);
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let out = root().join("target/bench-linked.ptx");
    let out = out.to_str().unwrap();
    // The floor of a link is reading the inputs and writing the output once: `cat`
    // of the inputs into a file in the same directory.
    let cat_out = root().join("target/bench-cat.ptx");
    let cat = time_shell(&format!(
        "cat {} > {}",
        files
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
            .join(" "),
        cat_out.display()
    ));
    let ours = time_cmd(ptxld, &["-o", out], files);
    let ours1 = time_cmd(ptxld, &["-j", "1", "-o", out], files);
    let out_len = std::fs::metadata(out).unwrap().len();
    println!(
        "{name}: link {} files, {:.1} MB in, {:.1} MB out\n  cat > file             {:>8.2} ms\n  \
         ptxld -o               {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time\n  \
         ptxld -j 1 -o          {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time",
        files.len(),
        bytes as f64 / 1e6,
        out_len as f64 / 1e6,
        cat.as_secs_f64() * 1e3,
        ours.as_secs_f64() * 1e3,
        mb(bytes, ours),
        ours.as_secs_f64() / cat.as_secs_f64(),
        ours1.as_secs_f64() * 1e3,
        mb(bytes, ours1),
        ours1.as_secs_f64() / cat.as_secs_f64(),
    );
}

/// A few kernels calling libdevice, linked with all of libdevice, with and without
/// `--gc-sections`: output size and ptxas time on each output.
fn report_gc() {
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let r = root();
    let inputs: Vec<PathBuf> = [
        "fixtures/ptx/llvm/cu_lib.ptx",
        "fixtures/ptx/nvvm/nv_common.ptx",
        "fixtures/link/real-libdevice-three-producers/g_nvlib.ptx",
        "fixtures/ptx/libdevice/libdevice.sm70.ptx",
    ]
    .iter()
    .map(|p| r.join(p))
    .collect();
    let full = r.join("target/bench-full.ptx");
    let gc = r.join("target/bench-gc.ptx");
    let t_full = time_cmd(ptxld, &["-o", full.to_str().unwrap()], &inputs);
    let t_gc = time_cmd(
        ptxld,
        &["--gc-sections", "-o", gc.to_str().unwrap()],
        &inputs,
    );
    let (sf, sg) = (
        std::fs::metadata(&full).unwrap().len(),
        std::fs::metadata(&gc).unwrap().len(),
    );
    println!(
        "kernels + libdevice: link {:.2} ms, {} bytes; with --gc-sections {:.2} ms, {} bytes \
         ({:.0}x smaller)",
        t_full.as_secs_f64() * 1e3,
        sf,
        t_gc.as_secs_f64() * 1e3,
        sg,
        sf as f64 / sg as f64
    );
    let ptxas = std::env::var_os("PTXAS")
        .map(PathBuf::from)
        .unwrap_or_else(|| r.join(".tools/nv/nvidia/cuda_nvcc/bin/ptxas"));
    if !ptxas.exists() {
        println!("  ptxas not found ({}): no assembly times", ptxas.display());
        return;
    }
    let pt = ptxas.to_str().unwrap();
    let a_full = time_cmd(
        pt,
        &["-arch=sm_80", "-o", "/dev/null"],
        std::slice::from_ref(&full),
    );
    let a_gc = time_cmd(
        pt,
        &["-arch=sm_80", "-o", "/dev/null"],
        std::slice::from_ref(&gc),
    );
    println!(
        "  ptxas -arch=sm_80 (whole program): {:.1} ms without, {:.1} ms with --gc-sections \
         ({:.1}x faster)",
        a_full.as_secs_f64() * 1e3,
        a_gc.as_secs_f64() * 1e3,
        a_full.as_secs_f64() / a_gc.as_secs_f64()
    );
}

fn report(name: &str, files: &[PathBuf]) {
    let bytes = total_size(files);
    let ptxld = env!("CARGO_BIN_EXE_ptxld");
    let cat = time_cmd("cat", &[], files);
    let ours = time_cmd(ptxld, &["--syntax-only"], files);
    let ours1 = time_cmd(ptxld, &["--syntax-only", "-j", "1"], files);
    println!(
        "{name}: {} files, {:.1} MB\n  cat                    {:>8.2} ms {:>8.0} MB/s\n  \
         ptxld --syntax-only    {:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time\n  \
         ptxld --syntax-only -j1{:>8.2} ms {:>8.0} MB/s   {:.2}x cat's time",
        files.len(),
        bytes as f64 / 1e6,
        cat.as_secs_f64() * 1e3,
        mb(bytes, cat),
        ours.as_secs_f64() * 1e3,
        mb(bytes, ours),
        ours.as_secs_f64() / cat.as_secs_f64(),
        ours1.as_secs_f64() * 1e3,
        mb(bytes, ours1),
        ours1.as_secs_f64() / cat.as_secs_f64(),
    );
}

/// In-process parse of libdevice, without process start-up: the parser's own speed.
fn in_process(path: &Path) {
    let bytes = std::fs::read(path).unwrap();
    let parse = || {
        let t = Instant::now();
        let p = parse_module(FileId(0), &bytes);
        assert!(p.diagnostics.is_empty());
        std::hint::black_box(p);
        t.elapsed()
    };
    parse();
    let d = median((0..21).map(|_| parse()).collect());
    let copy = || {
        let t = Instant::now();
        std::hint::black_box(bytes.clone());
        t.elapsed()
    };
    let c = median((0..21).map(|_| copy()).collect());
    println!(
        "libdevice in-process: parse {:.2} ms = {:.0} MB/s (memcpy of the same bytes: {:.3} ms)",
        d.as_secs_f64() * 1e3,
        mb(bytes.len() as u64, d),
        c.as_secs_f64() * 1e3
    );
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary
    // without it, and a benchmark is not a test: do nothing then.
    if !std::env::args().any(|a| a == "--bench") {
        println!("benchmark skipped: run it with `just bench` (cargo bench)");
        return;
    }
    let ld = libdevice();
    in_process(&ld);
    report("libdevice", std::slice::from_ref(&ld));
    let corpus = generated_corpus(&ld);
    report("generated (200 renamed libdevice copies)", &corpus);
    report_link("generated (200 renamed libdevice copies)", &corpus);
    report_gc();
}
