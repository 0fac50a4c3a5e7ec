//! What a link needs, checked against ptxas: for every fixture module and every
//! link case that links, the PTX ISA version (and target) `ptxld` computes is the
//! lowest ptxas 12.9 accepts: the module assembles there and not one step lower
//! (docs/isa-table.md, docs/linking.md "Lowering").

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{self, in_parallel, ptxld, root, scratch, PTX_VERSIONS};

/// What `ptxld check` says a set of inputs needs: (version, target or none), and
/// the opcodes it does not know.
fn needs(dir: &Path, args: &[String]) -> (String, Option<String>, Vec<String>) {
    let out = ptxld()
        .current_dir(dir)
        .args(["check", "--format", "json"])
        .args(args)
        .command()
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "check --format json: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let note = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "needs")
        .unwrap_or_else(|| panic!("no `needs` note for {args:?}: {report}"));
    let message = note["message"].as_str().unwrap();
    // "needs: PTX ISA 7.0 (...) and .target sm_80 or higher, for .target sm_80"
    let version = message
        .strip_prefix("needs: PTX ISA ")
        .and_then(|r| r.split(' ').next())
        .unwrap()
        .to_string();
    let target = message
        .split(" and .target ")
        .nth(1)
        .map(|r| r.split(' ').next().unwrap().to_string());
    let unknown = note["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["message"].as_str())
        .filter(|m| m.contains("not in ptxld's instruction table"))
        .map(str::to_string)
        .collect();
    (version, target, unknown)
}

/// A header directive whose value lowering changes.
#[derive(Clone, Copy)]
enum Header {
    Version,
    Target,
}

/// The targets of the PTX ISA that ptxas 12.9 knows, without suffixes, in order.
const TARGETS: &[&str] = &[
    "sm_10", "sm_11", "sm_12", "sm_13", "sm_20", "sm_30", "sm_32", "sm_35", "sm_37", "sm_50",
    "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86",
    "sm_87", "sm_89", "sm_90", "sm_100", "sm_101", "sm_103", "sm_120", "sm_121",
];

impl Header {
    fn directive(self) -> &'static str {
        match self {
            Header::Version => ".version",
            Header::Target => ".target",
        }
    }

    /// The value before `v`, if any (a suffixed target has none: only its own
    /// architecture has it).
    fn one_lower(self, v: &str) -> Option<&'static str> {
        let values = match self {
            Header::Version => PTX_VERSIONS,
            Header::Target => TARGETS,
        };
        let i = values.iter().position(|&x| x == v)?;
        i.checked_sub(1).map(|j| values[j])
    }

    /// The value `text` has (`7.0`; `sm_80`, options such as `debug` aside).
    fn of(self, text: &str) -> String {
        let d = self.directive();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(d))
            .unwrap_or_else(|| panic!("a {d} line"));
        let v = line.trim_start()[d.len()..].trim();
        v.split([',', ' ', '\t', '/']).next().unwrap().to_string()
    }

    /// `text` with this directive's value set to `v`.
    fn set(self, text: &str, v: &str) -> String {
        let (d, old) = (self.directive(), self.of(text));
        let mut out = String::new();
        let mut done = false;
        for line in text.lines() {
            if !done && line.trim_start().starts_with(d) {
                out.push_str(&line.replacen(&old, v, 1));
                done = true;
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    }
}

/// The `-arch` ptxas 12.9 compiles a `.target t` module for: `t`, or sm_50 for
/// older targets, which it cannot compile for.
fn ptxas_arch(t: &str) -> String {
    let digits: String = t[3..].chars().take_while(char::is_ascii_digit).collect();
    if digits.parse::<u32>().unwrap() < 50 {
        "sm_50".to_string()
    } else {
        t.to_string()
    }
}

/// Whether ptxas accepts `text` (compile only with `separate`: imports may stay
/// undefined), and its messages.
fn ptxas_accepts(
    ptxas: &Path,
    dir: &Path,
    name: &str,
    text: &str,
    separate: bool,
) -> (bool, String) {
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={}", ptxas_arch(&Header::Target.of(text))));
    // ptxas compiles separately only from PTX ISA 3.1 on ("'Compile only(-c)'
    // requires PTX ISA .version 3.1 or later"): older modules whole.
    let index = |v: &str| PTX_VERSIONS.iter().position(|&x| x == v);
    let old = index(&Header::Version.of(text)) < index("3.1");
    if separate && !old {
        cmd.arg("-c");
    }
    let r = cmd
        .arg("-o")
        .arg(dir.join(format!("{name}.o")))
        .arg(&file)
        .output()
        .unwrap();
    (
        r.status.success(),
        String::from_utf8_lossy(&r.stderr).into_owned(),
    )
}

/// ptxas accepts `text` with `header` set to `v` and refuses it one value lower.
fn lowest_accepted(
    ptxas: &Path,
    dir: &Path,
    name: &str,
    text: &str,
    (header, v): (Header, &str),
    separate: bool,
) -> Result<(), String> {
    let d = header.directive();
    let (ok, log) = ptxas_accepts(ptxas, dir, name, &header.set(text, v), separate);
    if !ok {
        return Err(format!(
            "{name}: ptxas refuses it at the computed {d} {v}: {log}"
        ));
    }
    if let Some(lower) = header.one_lower(v) {
        let (ok, _) = ptxas_accepts(ptxas, dir, name, &header.set(text, lower), separate);
        if ok {
            return Err(format!(
                "{name}: ptxas accepts it at {d} {lower}, below the computed {v}"
            ));
        }
    }
    Ok(())
}

/// The failures of `check` over `items`, on two threads (each runs ptxld and ptxas).
fn failures<T: Sync>(items: &[T], check: impl Fn(&T) -> Result<(), String> + Sync) -> Vec<String> {
    in_parallel(items, 2, |_, item| check(item).err())
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn every_fixture_module_needs_the_version_ptxas_says() {
    let Some(ptxas) = support::ptxas() else {
        return;
    };
    let tmp = scratch("lowering-modules");
    let modules = support::valid_fixtures();
    let failures = failures(&modules, |path: &PathBuf| {
        let name = path
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('/', "_");
        let (version, target, unknown) = needs(
            path.parent().unwrap(),
            &[path.to_string_lossy().into_owned()],
        );
        if !unknown.is_empty() {
            return Err(format!("{name}: {unknown:?}"));
        }
        let text = std::fs::read_to_string(path).unwrap();
        lowest_accepted(
            &ptxas,
            &tmp,
            &name,
            &text,
            (Header::Version, &version),
            true,
        )?;
        match target {
            Some(t) => lowest_accepted(&ptxas, &tmp, &name, &text, (Header::Target, &t), true),
            None => Ok(()),
        }
    });
    assert!(
        failures.is_empty(),
        "{} of {} modules:\n{}",
        failures.len(),
        modules.len(),
        failures.join("\n")
    );
}

/// The link cases that link, with their inputs and extra arguments.
fn linking_cases() -> Vec<(PathBuf, Vec<String>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(root().join("fixtures/link")).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(case) = std::fs::read_to_string(dir.join("case.txt")) else {
            continue;
        };
        let field = |key: &str| {
            case.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        };
        if field("expect:") != Some(vec!["ok".to_string()]) {
            continue;
        }
        let mut args = field("ptxld-args:").unwrap_or_default();
        // The case's own version choice is what lowering replaces.
        if let Some(i) = args.iter().position(|a| a == "--ptx-version") {
            args.drain(i..i + 2);
        }
        args.extend(field("inputs:").unwrap());
        out.push((dir, args));
    }
    out.sort();
    out
}

#[test]
fn every_link_case_lowers_to_the_version_ptxas_says() {
    let Some(ptxas) = support::ptxas() else {
        return;
    };
    let tmp = scratch("lowering-links");
    let cases = linking_cases();
    let failures = failures(&cases, |(dir, args): &(PathBuf, Vec<String>)| {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let out = tmp.join(format!("{name}.ptx"));
        let r = ptxld()
            .current_dir(dir)
            .args(["--ptx-version=min", "-o"])
            .arg(&out)
            .args(args)
            .command()
            .output()
            .unwrap();
        if !r.status.success() {
            return Err(format!("{name}: {}", String::from_utf8_lossy(&r.stderr)));
        }
        let text = std::fs::read_to_string(&out).unwrap();
        let version = Header::Version.of(&text);
        let name = format!("{name}.min.ptx");
        lowest_accepted(
            &ptxas,
            &tmp,
            &name,
            &text,
            (Header::Version, &version),
            support::is_partial_link(args),
        )
    });
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
