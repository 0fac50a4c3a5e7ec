//! End-to-end link tests over `fixtures/link/*/case.txt`: ptxld's verdict, diagnostics
//! and output, ptxas accepting every output as a whole program, and nvJitLink's
//! verdict on the same inputs (agreeing, or differing exactly where docs/linking.md
//! says ptxld's policy differs).
//!
//! The keys of case.txt are described in fixtures/link/README.md. ptxld runs in the
//! case's folder with the inputs as written there, at `-j1` and at `-j2`: both runs
//! must give the same output and stderr, equal to `expected/out.ptx` and
//! `expected/stderr.txt`. Each `run:` gives `expected/NAME.txt` (the command, its exit
//! status, stdout and stderr) and `expected/NAME.FILE` for each file it writes in
//! `$OUT`. `UPDATE_EXPECT=1` writes the expected files instead of comparing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

/// The command that runs the case test again, for the bless hint.
const RERUN: &str = "cargo test --test it link::link_cases";

/// A `run:` line: a further invocation, `ptxld ARGS INPUTS...`.
#[derive(Clone, Debug)]
struct Run {
    name: String,
    args: Vec<String>,
}

#[derive(Clone, Debug, Default)]
struct Case {
    name: String,
    dir: PathBuf,
    /// As written in case.txt: relative to `dir`.
    inputs: Vec<String>,
    arch: String,
    args: Vec<String>,
    expect_ok: bool,
    stderr: Vec<String>,
    has: Vec<String>,
    lacks: Vec<String>,
    nvjitlink_agrees: bool,
    nvjitlink_stderr: Vec<String>,
    /// nvJitLink options of the case (`-kernels-used=k`), given to nvJitLink with the
    /// inputs; its cubin then has the symbols of nvJitLink's cubin of ptxld's output.
    nvjitlink_args: Vec<String>,
    runs: Vec<Run>,
}

fn load_case(dir: &Path) -> Case {
    let text = std::fs::read_to_string(dir.join("case.txt")).unwrap();
    let mut c = Case {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
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
            "inputs" => c.inputs = value.split_whitespace().map(String::from).collect(),
            "arch" => c.arch = value.to_string(),
            "ptxld-args" => c.args = value.split_whitespace().map(String::from).collect(),
            "expect" => expect = Some(value == "ok"),
            "stderr" => c.stderr.push(value.to_string()),
            "output-has" => c.has.push(value.to_string()),
            "output-lacks" => c.lacks.push(value.to_string()),
            "nvjitlink-stderr" => c.nvjitlink_stderr.push(value.to_string()),
            "nvjitlink-args" => {
                c.nvjitlink_args = value.split_whitespace().map(String::from).collect()
            }
            "nvjitlink" => {
                c.nvjitlink_agrees = value == "agree" || value.starts_with("same-verdict");
                assert!(
                    c.nvjitlink_agrees || value.starts_with("differs:"),
                    "{}: nvjitlink: agree | differs: WHY | same-verdict: WHY",
                    dir.display()
                );
            }
            "run" => {
                let mut words = value.split_whitespace().map(String::from);
                let name = words.next().unwrap_or_default();
                assert!(
                    !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                        && !["out", "stderr"].contains(&name.as_str())
                        && c.runs.iter().all(|r| r.name != name),
                    "{}: `run: NAME ARGS...` with a new NAME of [a-z0-9-] (not out, stderr): {line:?}",
                    dir.display()
                );
                c.runs.push(Run {
                    name,
                    args: words.collect(),
                });
            }
            _ => panic!("{}: unknown key {key}", dir.display()),
        }
    }
    c.expect_ok = expect.unwrap_or_else(|| panic!("{}: no expect:", dir.display()));
    assert!(!c.inputs.is_empty(), "{}: no inputs", dir.display());
    c
}

/// The names of an ELF file's symbols, sections and file-local labels (`.text.k`,
/// `$k$f`) aside, and ptxld's renaming of module-local names (`_$_str$m2` is
/// `_$_str`: nvJitLink keeps such names as they are, several times).
fn elf_symbols(path: &Path) -> std::collections::BTreeSet<String> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap_or_default();
    let Ok(file) = object::File::parse(&*data) else {
        return Default::default();
    };
    file.symbols()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| !n.is_empty() && !n.starts_with('.') && !n.starts_with('$'))
        .map(|mut n| {
            while let Some(i) = n.rfind("$m") {
                let suffix = &n[i + 2..];
                let renamed = !suffix.is_empty()
                    && suffix
                        .split('_')
                        .all(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
                if !renamed {
                    break;
                }
                n.truncate(i);
            }
            n
        })
        .collect()
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

/// nvJitLink's verdict (the harness counts stderr `error` lines as failures), with
/// the case's nvJitLink options; its cubin goes to `cubin`.
fn nvjitlink_ok(c: &Case, cubin: &Path) -> Option<(bool, String)> {
    let so = nvidia_tool("NVJITLINK_SO", "nvidia/nvjitlink/lib/libnvJitLink.so.12")?;
    let out = Command::new("python3")
        .arg(root().join("scripts/nvjitlink.py"))
        .args(["--arch", &c.arch])
        .arg("--cubin")
        .arg(cubin)
        .args(c.nvjitlink_args.iter().map(|o| format!("--option={o}")))
        .args(&c.inputs)
        .current_dir(&c.dir)
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

/// What one ptxld run in a case gave: its exit status, and stdout and stderr with the
/// path of its `$OUT` folder written `$OUT`.
struct Ran {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `ptxld ARGS INPUTS` in the case's folder, `$OUT` in ARGS standing for the
/// (fresh, empty) folder `out_dir`.
fn run_ptxld(c: &Case, args: &[String], out_dir: &Path) -> Ran {
    let _ = std::fs::remove_dir_all(out_dir);
    std::fs::create_dir_all(out_dir).unwrap();
    let out = out_dir.to_str().unwrap();
    let o = ptxld()
        .args(args.iter().map(|a| a.replace("$OUT", out)))
        .args(&c.inputs)
        .current_dir(&c.dir)
        .run();
    Ran {
        code: o.status.code(),
        stdout: replace_bytes(&o.stdout, out, "$OUT"),
        stderr: replace_bytes(&o.stderr, out, "$OUT"),
    }
}

/// A `run:`'s expected text: the command, its exit status, stdout and stderr.
fn transcript(c: &Case, r: &Run, ran: &Ran) -> Vec<u8> {
    let mut t = format!(
        "$ ptxld {} {}\nexit status: {}\n",
        r.args.join(" "),
        c.inputs.join(" "),
        ran.code
            .map_or("killed by a signal".into(), |n| n.to_string())
    )
    .into_bytes();
    for (title, bytes) in [("stdout", &ran.stdout), ("stderr", &ran.stderr)] {
        if bytes.is_empty() {
            t.extend_from_slice(format!("--- {title}: empty\n").as_bytes());
            continue;
        }
        t.extend_from_slice(format!("--- {title}\n").as_bytes());
        t.extend_from_slice(bytes);
        if !bytes.ends_with(b"\n") {
            t.extend_from_slice(format!("\n--- no newline at the end of {title}\n").as_bytes());
        }
    }
    t
}

/// The regular files `d` holds, sorted by name.
fn files_in(d: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// Runs one case; returns the problems found.
fn run(c: &Case, ptxas: Option<&Path>, tmp: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let case_tmp = tmp.join(&c.name);
    // The link at one and at two threads.
    let link = |threads: &str| {
        let out_dir = case_tmp.join(format!("j{threads}"));
        let mut args = vec![format!("-j{threads}")];
        args.extend(c.args.iter().cloned());
        args.extend(["-o".into(), "$OUT/out.ptx".into()]);
        let ran = run_ptxld(c, &args, &out_dir);
        let output = std::fs::read(out_dir.join("out.ptx")).ok();
        (out_dir, ran, output)
    };
    let (out_dir, res, output) = link("1");
    let stderr = String::from_utf8_lossy(&res.stderr);
    if stderr.contains("panicked") {
        problems.push(format!("ptxld panicked:\n{stderr}"));
    }
    let success = res.code == Some(0);
    if success != c.expect_ok {
        problems.push(format!(
            "ptxld exit {:?}, expected {}:\n{stderr}",
            res.code,
            if c.expect_ok { "success" } else { "failure" }
        ));
    }
    if !success && res.code != Some(1) {
        problems.push(format!("exit code {:?}, not 1", res.code));
    }
    for want in &c.stderr {
        if !stderr.contains(want.as_str()) {
            problems.push(format!("stderr lacks {want:?}:\n{stderr}"));
        }
    }
    if !success && output.is_some() {
        problems.push("a failed link left an output file".into());
    }
    if !temporaries(&out_dir).is_empty() {
        problems.push(format!("temporaries left: {:?}", temporaries(&out_dir)));
    }
    if success {
        let text = String::from_utf8_lossy(output.as_deref().unwrap_or_default());
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
                .args(is_partial_link(&c.args).then_some("-c"))
                .arg(out_dir.join("out.ptx"))
                .arg("-o")
                .arg(case_tmp.join("out.cubin"))
                .output()
                .unwrap();
            if !r.status.success() {
                problems.push(format!(
                    "ptxas rejects the merged module {}:\n{}",
                    out_dir.join("out.ptx").display(),
                    String::from_utf8_lossy(&r.stderr)
                ));
            }
        }
    }
    // The same at two threads.
    let (_, res2, output2) = link("2");
    if res2.code != res.code || res2.stderr != res.stderr {
        problems.push(format!(
            "-j2 exits {:?} with other stderr than -j1 ({:?}): {}",
            res2.code,
            res.code,
            first_difference(&res.stderr, &res2.stderr)
        ));
    }
    if output2 != output {
        problems.push(format!(
            "-j2 writes another output than -j1: {}",
            first_difference(
                output.as_deref().unwrap_or_default(),
                output2.as_deref().unwrap_or_default()
            )
        ));
    }
    let nv_cubin = case_tmp.join("nvjitlink.cubin");
    if let Some((nv_ok, json)) = nvjitlink_ok(c, &nv_cubin) {
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
        let said = json.replace("\\\"", "\"");
        for want in &c.nvjitlink_stderr {
            if !said.contains(want.as_str()) {
                problems.push(format!("nvJitLink does not say {want:?}: {json}"));
            }
        }
        // With nvJitLink's options, nvJitLink keeps of the inputs what it keeps of
        // ptxld's output without them.
        if !c.nvjitlink_args.is_empty() && nv_ok && success {
            let plain = Case {
                inputs: vec![out_dir.join("out.ptx").display().to_string()],
                nvjitlink_args: Vec::new(),
                ..c.clone()
            };
            let of_output = case_tmp.join("nvjitlink-of-output.cubin");
            nvjitlink_ok(&plain, &of_output);
            let (want, got) = (elf_symbols(&nv_cubin), elf_symbols(&of_output));
            if want != got {
                problems.push(format!(
                    "nvJitLink {:?} keeps {want:?}; of ptxld's output it keeps {got:?}",
                    c.nvjitlink_args
                ));
            }
        }
    }
    let runs: Vec<(&Run, PathBuf, Ran)> = c
        .runs
        .iter()
        .map(|r| {
            let out_dir = case_tmp.join(format!("run-{}", r.name));
            let ran = run_ptxld(c, &r.args, &out_dir);
            let err = String::from_utf8_lossy(&ran.stderr);
            if err.contains("panicked") || !matches!(ran.code, Some(0 | 1)) {
                problems.push(format!("run {}: exit {:?}:\n{err}", r.name, ran.code));
            }
            (r, out_dir, ran)
        })
        .collect();
    // Blessing a link that broke a rule above would record the breakage.
    if blessing() && !problems.is_empty() {
        problems.push("not blessed: fix the problems above first".into());
        return problems;
    }
    let mut expected = Expected::new(&c.dir.join("expected"), RERUN);
    expected.output("out.ptx", output.as_deref());
    expected.text("stderr.txt", Some(&res.stderr));
    for (r, out_dir, ran) in runs {
        expected.text(&format!("{}.txt", r.name), Some(&transcript(c, r, &ran)));
        let out = out_dir.to_str().unwrap();
        for (file, bytes) in files_in(&out_dir) {
            let bytes = replace_bytes(&bytes, out, "$OUT");
            expected.output(&format!("{}.{file}", r.name), Some(&bytes));
        }
    }
    problems.extend(expected.finish());
    problems
}

#[test]
fn link_cases_match_the_rules_ptxas_and_nvjitlink() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} link cases", cases.len());
    let ptxas = ptxas();
    let tmp = scratch("link-cases");
    // Two workers: the machine has two cores and each case runs several processes.
    let results: Vec<(String, Vec<String>)> = in_parallel(&cases, 2, |_, c| {
        (c.name.clone(), run(c, ptxas.as_deref(), &tmp))
    });
    let failed: Vec<String> = results
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(n, p)| format!("== {n}\n{}", p.join("\n")))
        .collect();
    eprintln!("{} link cases, {} failed", results.len(), failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `-r`: for every link case that links two or more inputs, a partial link of the
/// first half and one of the second, linked together, give what the one link gives:
/// ptxas makes a cubin with the same symbols of both (module-local names compared
/// without ptxld's `$mN`, which a relink may add twice), and the case's
/// `output-has:` / `output-lacks:` hold for the relinked output too (which weak
/// definition won, which common size).
#[test]
fn partial_links_relink_to_the_same_result() {
    let Some(ptxas) = ptxas() else { return };
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.expect_ok && c.inputs.len() >= 2 && !is_partial_link(&c.args))
        .collect();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let tmp = scratch("relink");
    let results: Vec<Vec<String>> = in_parallel(&cases, 2, |_, c| relink(c, &ptxas, &tmp));
    let failed: Vec<String> = cases
        .iter()
        .zip(&results)
        .filter(|(_, p)| !p.is_empty())
        .map(|(c, p)| format!("== {}\n{}", c.name, p.join("\n")))
        .collect();
    eprintln!("{} cases relinked, {} failed", cases.len(), failed.len());
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// What differs between case `c`'s one link and the relink of its two partial links.
fn relink(c: &Case, ptxas: &Path, tmp: &Path) -> Vec<String> {
    let w = tmp.join(&c.name);
    std::fs::create_dir_all(&w).unwrap();
    let link = |args: &[String], inputs: &[String], out: &str| {
        let o = ptxld()
            .current_dir(&c.dir)
            .args(args)
            .arg("-o")
            .arg(w.join(out))
            .args(inputs)
            .run();
        (o.status.success(), stderr(&o))
    };
    let half = c.inputs.len() / 2;
    let r = ["-r".to_string()];
    let mut problems: Vec<String> = [
        link(&c.args, &c.inputs, "direct.ptx"),
        link(&r, &c.inputs[..half], "p1.ptx"),
        link(&r, &c.inputs[half..], "p2.ptx"),
    ]
    .into_iter()
    .filter(|(ok, _)| !ok)
    .map(|(_, err)| err)
    .collect();
    if !problems.is_empty() {
        return problems;
    }
    let parts = ["p1.ptx", "p2.ptx"].map(|p| w.join(p).display().to_string());
    let (ok, err) = link(&c.args, &parts, "relink.ptx");
    if !ok {
        return vec![format!("relinking the partial links: {err}")];
    }
    let text = std::fs::read_to_string(w.join("relink.ptx")).unwrap();
    for h in c.has.iter().filter(|h| !text.contains(h.as_str())) {
        problems.push(format!("relinked output lacks {h:?}"));
    }
    for l in c.lacks.iter().filter(|l| text.contains(l.as_str())) {
        problems.push(format!("relinked output contains {l:?}"));
    }
    let mut symbols = Vec::new();
    for name in ["direct", "relink"] {
        let cubin = w.join(format!("{name}.cubin"));
        let o = Command::new(ptxas)
            .arg(format!("-arch={}", c.arch))
            .arg(w.join(format!("{name}.ptx")))
            .arg("-o")
            .arg(&cubin)
            .output()
            .unwrap();
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            problems.push(format!("ptxas refuses {name}.ptx: {err}"));
        }
        symbols.push(elf_symbols(&cubin));
    }
    if symbols[0] != symbols[1] {
        problems.push(format!(
            "symbols differ: only in the one link {:?}, only in the relink {:?}",
            symbols[0].difference(&symbols[1]).collect::<Vec<_>>(),
            symbols[1].difference(&symbols[0]).collect::<Vec<_>>()
        ));
    }
    problems
}

/// `--split-kernels` (docs/machine-code.md): for every case that links, the cubin
/// nvJitLink links from 2 and from 3 separately assembled parts has the kernels and
/// the variables of the cubin one ptxas makes of the whole output (functions are
/// compared by neither: whole-program ptxas renames the copies it keeps).
#[test]
fn split_assembly_keeps_every_kernel_and_variable() {
    let Some(ptxas) = ptxas() else { return };
    let Some(nvjitlink) = nvidia_tool("NVJITLINK_SO", "nvidia/nvjitlink/lib/libnvJitLink.so.12")
    else {
        return;
    };
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| c.expect_ok && !is_partial_link(&c.args))
        .collect();
    let tmp = scratch("split");
    let results: Vec<(usize, Vec<String>)> =
        in_parallel(&cases, 2, |_, c| split_parts(c, &ptxas, &nvjitlink, &tmp));
    let split = results.iter().filter(|(kernels, _)| *kernels >= 2).count();
    let failed: Vec<String> = cases
        .iter()
        .zip(&results)
        .filter(|(_, (_, p))| !p.is_empty())
        .map(|(c, (_, p))| format!("== {}\n{}", c.name, p.join("\n")))
        .collect();
    eprintln!(
        "{} cases, {split} with two kernels or more split, {} failed",
        cases.len(),
        failed.len()
    );
    assert!(split >= 20, "only {split} cases split");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Case `c` assembled whole and in 2 and 3 parts: its number of kernels, and what
/// differs.
fn split_parts(c: &Case, ptxas: &Path, nvjitlink: &Path, tmp: &Path) -> (usize, Vec<String>) {
    let w = tmp.join(&c.name);
    std::fs::create_dir_all(&w).unwrap();
    let mut problems = Vec::new();
    let mut made = Vec::new();
    for parts in ["1", "2", "3"] {
        let cubin = w.join(format!("{parts}.cubin"));
        // DWARF names the code of every part: split links leave it out.
        let o = ptxld()
            .env("PTXAS", Some(ptxas.as_os_str()))
            .env("NVJITLINK", Some(nvjitlink.as_os_str()))
            .current_dir(&c.dir)
            .args(&c.args)
            .args(["--strip-debug", "--emit", "cubin"])
            .args(match c.args.iter().any(|a| a.starts_with("--arch")) {
                true => vec![],
                false => vec!["--arch", &c.arch],
            })
            .args(["--split-kernels", parts, "-o"])
            .arg(&cubin)
            .args(&c.inputs)
            .run();
        if !o.status.success() {
            problems.push(format!("--split-kernels {parts}: {}", stderr(&o)));
            continue;
        }
        made.push((parts, kernels_and_variables(&cubin)));
    }
    let kernels = made.first().map_or(0, |(_, (k, _))| k.len());
    for (parts, got) in &made[1.min(made.len())..] {
        if *got != made[0].1 {
            problems.push(format!(
                "{parts} parts: kernels and variables {got:?}, one ptxas {:?}",
                made[0].1
            ));
        }
    }
    (kernels, problems)
}

/// A cubin's kernels (CUDA's `STO_ENTRY` symbols) and variables, by name.
fn kernels_and_variables(
    path: &Path,
) -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
) {
    use object::read::elf::{ElfFile64, Sym};
    use object::{Object, ObjectSymbol, SymbolKind};
    const STO_ENTRY: u8 = 0x10;
    let data = std::fs::read(path).unwrap();
    let file = ElfFile64::<object::Endianness>::parse(&*data).unwrap();
    let (mut kernels, mut variables) = (Default::default(), Default::default());
    for s in file.symbols() {
        let name = s.name().unwrap().to_string();
        let entry = s.elf_symbol().st_other() & STO_ENTRY != 0;
        let set: &mut std::collections::BTreeSet<String> = match s.kind() {
            SymbolKind::Text if entry => &mut kernels,
            SymbolKind::Data => &mut variables,
            _ => continue,
        };
        set.insert(name);
    }
    (kernels, variables)
}

/// Once parsed, an input is not read again until the writer reads its text: the
/// layout takes the callers' `.param` declarations (argument alignments), `.alias`
/// directives and GCC's `//:FUNC_MAP` comments from what parsing kept. An input kept
/// open is mapped only when its bytes are asked for, so after the layout none is,
/// except the modules with DWARF sections, which the debug-section merge decodes.
#[test]
fn the_layout_reads_no_input_again() {
    use ptxld::internal::driver::{link_job, InputSpec, Job};
    ptxld::internal::input::keep_files_open(256);
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
