//! Broken inputs, one file each: `fixtures/broken/NAME.ptx`, linked alone, is refused
//! with exit status 1, exactly the messages in `NAME.stderr` beside it, no output (an
//! old one is removed) and no temporary file; `--syntax-only` reports the same. The
//! files in `fixtures/broken/link/` hold errors only a link finds: `--syntax-only`
//! accepts them silently. `UPDATE_EXPECT=1` writes the `.stderr` files.

use std::path::{Path, PathBuf};

use crate::support::*;

/// The command that runs this test again, for the bless hint.
const RERUN: &str = "cargo test --test it broken::";

/// The `.ptx` files directly in `dir`, sorted.
fn cases_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "ptx"))
        .collect();
    v.sort();
    v
}

#[test]
fn broken_inputs_give_their_expected_errors() {
    let mut problems = Vec::new();
    let mut stderrs = Vec::new();
    let mut n = 0;
    for (sub, syntax_error) in [("", true), ("link", false)] {
        let dir = root().join("fixtures/broken").join(sub);
        for path in cases_in(&dir) {
            n += 1;
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            let stem = file.strip_suffix(".ptx").unwrap().to_string();
            let out = scratch(&format!("broken/{sub}/{stem}"));
            std::fs::write(out.join("out.ptx"), "an older output\n").unwrap();
            let o = ptxld()
                .arg("-o")
                .arg(out.join("out.ptx"))
                .arg(&file)
                .current_dir(&dir)
                .run();
            let err = replace_bytes(&o.stderr, out.to_str().unwrap(), "$OUT");
            let mut problem = |what: String| problems.push(format!("{sub}/{file}: {what}"));
            if o.status.code() != Some(1) {
                problem(format!("exit {}, not 1:\n{}", o.status, stderr(&o)));
            }
            if stderr(&o).contains("panicked") {
                problem(format!("ptxld panicked:\n{}", stderr(&o)));
            }
            let left: Vec<_> = std::fs::read_dir(&out).unwrap().flatten().collect();
            if !left.is_empty() {
                problem(format!("left files (an old output is removed): {left:?}"));
            }
            let syntax = ptxld()
                .args(["--syntax-only", &file])
                .current_dir(&dir)
                .run();
            if syntax_error {
                if syntax.status.code() != Some(1) || syntax.stderr != o.stderr {
                    problem(format!(
                        "--syntax-only exits {} and says other than the link: {}",
                        syntax.status,
                        first_difference(&o.stderr, &syntax.stderr)
                    ));
                }
            } else if !syntax.status.success() || !syntax.stderr.is_empty() {
                problem(format!(
                    "a link error, but --syntax-only exits {}:\n{}",
                    syntax.status,
                    stderr(&syntax)
                ));
            }
            stderrs.push((dir.clone(), file, format!("{stem}.stderr"), err));
        }
    }
    assert!(n >= 20, "only {n} broken inputs");
    // Blessing a case that broke a rule above would record the breakage.
    if blessing() && !problems.is_empty() {
        panic!("not blessed:\n{}", problems.join("\n"));
    }
    let mut expected: Vec<(PathBuf, Expected)> = Vec::new();
    for (dir, input, name, err) in stderrs {
        if expected.last().is_none_or(|(d, _)| *d != dir) {
            expected.push((dir.clone(), Expected::new(&dir, RERUN)));
        }
        let e = &mut expected.last_mut().unwrap().1;
        e.not_compared(&input);
        e.text(&name, Some(&err));
    }
    for (_, e) in expected {
        problems.extend(e.finish());
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
