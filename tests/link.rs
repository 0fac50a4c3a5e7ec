//! End-to-end link tests over `fixtures/link/*/case.txt`: ptxld's verdict and
//! diagnostics, ptxas accepting every output as a whole program, and nvJitLink's
//! verdict on the same inputs (agreeing, or differing exactly where docs/linking.md
//! says ptxld's policy differs).
//!
//! case.txt keys: `inputs:` (link order), `arch:`, `ptxld-args:`, `expect: ok|error`,
//! `stderr:` (substring of ptxld's stderr, repeatable), `output-has:` /
//! `output-lacks:` (substring of the merged module, repeatable), and how nvJitLink
//! compares: `nvjitlink: agree` (same verdict), `nvjitlink: differs: <why>` (the
//! opposite verdict, a documented policy difference) or `nvjitlink: same-verdict:
//! <why>` (same verdict, but nvJitLink's result differs, e.g. which weak copy it keeps);
//! `nvjitlink-stderr:` (substring of nvJitLink's diagnostics, repeatable).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

#[derive(Debug, Default)]
struct Case {
    dir: PathBuf,
    inputs: Vec<PathBuf>,
    arch: String,
    args: Vec<String>,
    expect_ok: bool,
    stderr: Vec<String>,
    has: Vec<String>,
    lacks: Vec<String>,
    nvjitlink_agrees: bool,
    nvjitlink_stderr: Vec<String>,
}

fn load_case(dir: &Path) -> Case {
    let text = std::fs::read_to_string(dir.join("case.txt")).unwrap();
    let mut c = Case {
        dir: dir.to_path_buf(),
        arch: "sm_80".into(),
        nvjitlink_agrees: true,
        ..Case::default()
    };
    let mut expect = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once(':')
            .unwrap_or_else(|| panic!("{}: bad line {line:?}", dir.display()));
        let value = value.trim();
        match key {
            "inputs" => c.inputs = value.split_whitespace().map(|p| dir.join(p)).collect(),
            "arch" => c.arch = value.to_string(),
            "ptxld-args" => c.args = value.split_whitespace().map(String::from).collect(),
            "expect" => expect = Some(value == "ok"),
            "stderr" => c.stderr.push(value.to_string()),
            "output-has" => c.has.push(value.to_string()),
            "output-lacks" => c.lacks.push(value.to_string()),
            "nvjitlink-stderr" => c.nvjitlink_stderr.push(value.to_string()),
            "nvjitlink" => {
                c.nvjitlink_agrees = value == "agree" || value.starts_with("same-verdict");
                assert!(
                    c.nvjitlink_agrees || value.starts_with("differs:"),
                    "{}: nvjitlink: agree | differs: WHY | same-verdict: WHY",
                    dir.display()
                );
            }
            _ => panic!("{}: unknown key {key}", dir.display()),
        }
    }
    c.expect_ok = expect.unwrap_or_else(|| panic!("{}: no expect:", dir.display()));
    assert!(!c.inputs.is_empty(), "{}: no inputs", dir.display());
    c
}

fn cases() -> Vec<Case> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/link"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("case.txt").exists())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| load_case(d)).collect()
}

/// nvJitLink's verdict (the harness counts stderr `error` lines as failures).
fn nvjitlink_ok(c: &Case) -> Option<(bool, String)> {
    let so = nvidia_tool("NVJITLINK_SO", "nvidia/nvjitlink/lib/libnvJitLink.so.12")?;
    let out = Command::new("python3")
        .arg(root().join("scripts/nvjitlink.py"))
        .args(["--arch", &c.arch])
        .args(&c.inputs)
        .env("NVJITLINK_SO", so)
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "nvjitlink.py failed: {json}");
    let ok = if json.contains("\"ok\": true") {
        true
    } else if json.contains("\"ok\": false") {
        false
    } else {
        panic!("unexpected harness output {json}")
    };
    Some((ok, json))
}

/// Runs one case; returns the problems found.
fn run(c: &Case, ptxas: Option<&Path>, tmp: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let name = c.dir.file_name().unwrap().to_string_lossy().into_owned();
    let out_path = tmp.join(format!("{name}.ptx"));
    let _ = std::fs::remove_file(&out_path);
    let res = Command::new(env!("CARGO_BIN_EXE_ptxld"))
        .args(&c.args)
        .arg("-o")
        .arg(&out_path)
        .args(&c.inputs)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&res.stderr);
    if stderr.contains("panicked") {
        problems.push(format!("ptxld panicked:\n{stderr}"));
    }
    if res.status.success() != c.expect_ok {
        problems.push(format!(
            "ptxld exit {:?}, expected {}:\n{stderr}",
            res.status.code(),
            if c.expect_ok { "success" } else { "failure" }
        ));
    }
    if !res.status.success() && res.status.code() != Some(1) {
        problems.push(format!("exit code {:?}, not 1", res.status.code()));
    }
    for want in &c.stderr {
        if !stderr.contains(want.as_str()) {
            problems.push(format!("stderr lacks {want:?}:\n{stderr}"));
        }
    }
    if !res.status.success() && out_path.exists() {
        problems.push("a failed link left an output file".into());
    }
    if res.status.success() {
        let text = std::fs::read_to_string(&out_path).unwrap_or_default();
        for want in &c.has {
            if !text.contains(want.as_str()) {
                problems.push(format!("output lacks {want:?}"));
            }
        }
        for bad in &c.lacks {
            if text.contains(bad.as_str()) {
                problems.push(format!("output contains {bad:?}"));
            }
        }
        if let Some(ptxas) = ptxas {
            let r = Command::new(ptxas)
                .arg(format!("-arch={}", c.arch))
                .arg(&out_path)
                .arg("-o")
                .arg(tmp.join(format!("{name}.cubin")))
                .output()
                .unwrap();
            if !r.status.success() {
                problems.push(format!(
                    "ptxas rejects the merged module {}:\n{}",
                    out_path.display(),
                    String::from_utf8_lossy(&r.stderr)
                ));
            }
        }
    }
    if let Some((nv_ok, json)) = nvjitlink_ok(c) {
        let agrees = nv_ok == c.expect_ok;
        if agrees != c.nvjitlink_agrees {
            problems.push(format!(
                "nvJitLink says ok={nv_ok}; case says nvjitlink {}: {json}",
                if c.nvjitlink_agrees {
                    "agrees"
                } else {
                    "differs"
                }
            ));
        }
    }
    problems
}

#[test]
fn link_cases_match_the_rules_ptxas_and_nvjitlink() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} link cases", cases.len());
    let ptxas = ptxas();
    let tmp = scratch("link-cases");
    // Two workers: the machine has two cores and each case runs three processes.
    let results: Vec<(String, Vec<String>)> = std::thread::scope(|s| {
        let chunks: Vec<&[Case]> = cases.chunks(cases.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                let (ptxas, tmp) = (ptxas.as_deref(), &tmp);
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|c| {
                            let name = c.dir.file_name().unwrap().to_string_lossy().into_owned();
                            (name, run(c, ptxas, tmp))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(n, p)| format!("== {n}\n{}", p.join("\n")))
        .collect();
    eprintln!("{} link cases, {} failed", results.len(), failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Once parsed, an input is not read again until the writer reads its text: the
/// layout takes the callers' `.param` declarations (argument alignments), `.alias`
/// directives and GCC's `//:FUNC_MAP` comments from what parsing kept. An input kept
/// open is mapped only when its bytes are asked for, so after the layout none is,
/// except the modules with DWARF sections, which the debug-section merge decodes.
#[test]
fn the_layout_reads_no_input_again() {
    use ptxld::driver::{link_job, InputSpec, Job};
    ptxld::input::keep_files_open(256);
    let cases = [
        // The caller's call-block `.param` is raised to `.align 8`.
        ("aggregate-param-align-fixed", ".align 8"),
        ("alias-across-modules", ".alias nv_al_alias, nv_al_target;"),
        // GCC's OpenACC module, with other producers' modules.
        ("real-all-producers", "//:FUNC_MAP \""),
    ];
    for (case, want) in cases {
        let mut job = Job::new("unused.ptx");
        job.inputs = case_inputs(case)
            .into_iter()
            .map(|p| InputSpec::File(p.into()))
            .collect();
        let outcome = link_job(&job).unwrap_or_else(|f| panic!("{case}: {f}"));
        let sources = outcome.sources().expect("a PTX output");
        let has_dwarf = |path: &Path| {
            let text = std::fs::read_to_string(path).unwrap();
            text.lines().any(|l| l.trim_start().starts_with(".section"))
        };
        let mapped: Vec<&str> = sources
            .files()
            .filter(|(_, f)| f.pages().is_readable_file() && f.pages().is_in_memory())
            .filter(|(_, f)| !has_dwarf(f.path().unwrap()))
            .map(|(_, f)| f.name())
            .collect();
        assert!(mapped.is_empty(), "{case}: read again: {mapped:?}");
        let kept_open = sources
            .files()
            .filter(|(_, f)| f.pages().is_readable_file());
        assert!(kept_open.count() > 0, "{case}: no input kept open");
        let text = String::from_utf8(outcome.into_bytes()).unwrap();
        assert!(text.contains(want), "{case}: no {want:?} in the output");
    }
}
