//! Shared helpers for the integration tests: fixture discovery and NVIDIA tools.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `*.ptx` file below `dir`, sorted.
pub fn ptx_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "ptx") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The valid real-producer and hand-written fixtures (everything under fixtures/ptx
/// except the deliberately broken `bad/` and `*-invalid/` files and raw GCC output).
pub fn valid_fixtures() -> Vec<PathBuf> {
    ptx_files(&root().join("fixtures/ptx"))
        .into_iter()
        .filter(|p| {
            !p.components().any(|c| {
                let c = c.as_os_str().to_string_lossy();
                c == "bad" || c == "gcc-raw" || c.ends_with("-invalid")
            })
        })
        .collect()
}

/// Fixtures of one producer directory (llvm, gcc, nvrtc, nvvm, libdevice, hand).
pub fn producer_fixtures(producer: &str) -> Vec<PathBuf> {
    ptx_files(&root().join("fixtures/ptx").join(producer))
}

/// Finds an NVIDIA tool: the environment variable `var`, else `default` under
/// `.tools/nv`. Returns `None` (after saying so loudly) when it is missing, except in
/// CI, where a missing tool fails the test: CI installs every tool.
pub fn nvidia_tool(var: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".tools/nv").join(default));
    if path.exists() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "{var} not found at {}: CI must install the NVIDIA tools (scripts/install-tools.sh)",
            path.display()
        );
    }
    eprintln!(
        "\n*** SKIPPED: {var} not found at {}; run scripts/install-tools.sh (or `just tools`) \
         to run this test ***\n",
        path.display()
    );
    None
}

pub fn ptxas() -> Option<PathBuf> {
    nvidia_tool("PTXAS", "nvidia/cuda_nvcc/bin/ptxas")
}

/// The lowest `sm_NN` ptxas accepts for a module with this `.target`
/// (GCC's default sm_30 is no longer supported by ptxas 12).
pub fn ptxas_arch(module_sm: Option<u32>) -> String {
    let sm = module_sm.unwrap_or(52).max(52);
    format!("sm_{sm}")
}

/// Runs the `ptxld` binary in `dir`.
pub fn ptxld_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ptxld"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// Whole-program ptxas for `arch` must accept `file` (relative to `dir`); skipped
/// loudly when ptxas is not installed (never in CI).
pub fn assert_ptxas_accepts(dir: &Path, file: &str, arch: &str) {
    if let Some(ptxas) = ptxas() {
        let r = std::process::Command::new(ptxas)
            .arg(format!("-arch={arch}"))
            .args(["-o", "/dev/null", file])
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            r.status.success(),
            "ptxas rejects {file}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
    }
}

/// The `inputs:` of link case `case`, as absolute paths.
pub fn case_inputs(case: &str) -> Vec<String> {
    let dir = root().join("fixtures/link").join(case);
    let text = std::fs::read_to_string(dir.join("case.txt")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("inputs:"))
        .unwrap()
        .split_whitespace()
        .map(|p| dir.join(p).to_str().unwrap().to_string())
        .collect()
}
