//! src/isa/table.tsv, the lowest `.version`/`.target` of each instruction form
//! (docs/isa-table.md): every row proven with ptxas 12.9, as `scripts/isa_table.py check`
//! does. The table must agree with itself (each example needs exactly its row's values)
//! and know every instruction form of the fixtures; both run without ptxas.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use crate::support::*;

const TABLE: &str = include_str!("../../src/isa/table.tsv");
const PREAMBLE: &str = include_str!("../../src/isa/preamble.ptx");

/// `.address_size 64` needs 2.3: the lowest header ptxas 12.9 takes at all, so below
/// it nothing can be measured (the table writes 1.0 there).
const FLOOR_VERSION: &str = "2.3";

/// Every `.target` of ptxas 12.9 in ascending order (`sm_100 < sm_100f < sm_100a`),
/// with the lowest `.version` it needs (src/link/header.rs `TARGETS`; `a`/`f` rules of
/// `min_version_for`).
const TARGETS: &[(&str, &str)] = &[
    ("sm_10", "1.0"),
    ("sm_11", "1.0"),
    ("sm_12", "1.2"),
    ("sm_13", "1.2"),
    ("sm_20", "2.0"),
    ("sm_30", "3.0"),
    ("sm_32", "4.0"),
    ("sm_35", "3.1"),
    ("sm_37", "4.1"),
    ("sm_50", "4.0"),
    ("sm_52", "4.1"),
    ("sm_53", "4.2"),
    ("sm_60", "5.0"),
    ("sm_61", "5.0"),
    ("sm_62", "5.0"),
    ("sm_70", "6.0"),
    ("sm_72", "6.1"),
    ("sm_75", "6.3"),
    ("sm_80", "7.0"),
    ("sm_86", "7.1"),
    ("sm_87", "7.4"),
    ("sm_89", "7.8"),
    ("sm_90", "7.8"),
    ("sm_90a", "8.0"),
    ("sm_100", "8.6"),
    ("sm_100f", "8.8"),
    ("sm_100a", "8.6"),
    ("sm_101", "8.6"),
    ("sm_101f", "8.8"),
    ("sm_101a", "8.6"),
    ("sm_103", "8.8"),
    ("sm_103f", "8.8"),
    ("sm_103a", "8.8"),
    ("sm_120", "8.7"),
    ("sm_120f", "8.8"),
    ("sm_120a", "8.7"),
    ("sm_121", "8.8"),
    ("sm_121f", "8.8"),
    ("sm_121a", "8.8"),
];

/// One row of the table.
#[derive(Debug)]
struct Row {
    line: usize,
    opcode: String,
    mods: BTreeSet<String>,
    ptx: String,
    target: String,
    example: String,
}

impl Row {
    fn name(&self) -> String {
        let mods: Vec<&str> = self.mods.iter().map(String::as_str).collect();
        format!("line {} `{} {}`", self.line, self.opcode, mods.join(" "))
    }

    /// A row named by a directive (`.alias`), an operator (`generic()`), a special
    /// register (`%globaltimer`) or a form (`label+offset`) rather than an opcode.
    fn is_named(&self) -> bool {
        self.opcode != "*"
            && !self
                .opcode
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    }
}

fn rows() -> Vec<Row> {
    TABLE
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "table line {}: 6 columns expected", i + 1);
            Row {
                line: i + 1,
                opcode: f[0].to_string(),
                mods: if f[1] == "-" {
                    BTreeSet::new()
                } else {
                    f[1].split(' ').map(str::to_string).collect()
                },
                ptx: f[2].to_string(),
                target: f[3].to_string(),
                example: f[4].to_string(),
            }
        })
        .collect()
}

fn version_index(v: &str) -> usize {
    PTX_VERSIONS
        .iter()
        .position(|x| *x == v)
        .unwrap_or_else(|| panic!("unknown version {v}"))
}

/// `-` (no requirement) ranks below every target.
fn target_rank(t: &str) -> usize {
    if t == "-" {
        return 0;
    }
    1 + TARGETS
        .iter()
        .position(|x| x.0 == t)
        .unwrap_or_else(|| panic!("unknown target {t}"))
}

fn target_version(t: &str) -> &'static str {
    TARGETS.iter().find(|x| x.0 == t).unwrap().1
}

fn max_version<'a>(a: &'a str, b: &'a str) -> &'a str {
    if version_index(a) >= version_index(b) {
        a
    } else {
        b
    }
}

/// `ld.global.v2.u32` -> (`ld`, {`.global`, `.v2`, `.u32`}).
fn split_word(word: &str) -> (String, BTreeSet<String>) {
    let mut parts = word.split('.');
    let opcode = parts.next().unwrap().to_string();
    (
        opcode,
        parts
            .filter(|p| !p.is_empty())
            .map(|p| format!(".{p}"))
            .collect(),
    )
}

/// What the table says an instruction needs: per column the maximum over the rows
/// that apply; `None` when the table does not know it (no base row, or a modifier no
/// row of its opcode or `*` names).
fn requirement(rows: &[Row], opcode: &str, mods: &BTreeSet<String>) -> Option<(String, String)> {
    let mine = |r: &&Row| r.opcode == opcode || r.opcode == "*";
    let has_base = rows.iter().any(|r| r.opcode == opcode && r.mods.is_empty());
    let known: BTreeSet<&String> = rows.iter().filter(mine).flat_map(|r| &r.mods).collect();
    if !has_base || !mods.iter().all(|m| known.contains(m)) {
        return None;
    }
    let applying = rows.iter().filter(mine).filter(|r| r.mods.is_subset(mods));
    let (mut ptx, mut target) = ("1.0".to_string(), "-".to_string());
    for r in applying {
        ptx = max_version(&ptx, &r.ptx).to_string();
        if target_rank(&r.target) > target_rank(&target) {
            target = r.target.clone();
        }
    }
    Some((ptx, target))
}

/// The instruction word of an example: its last statement (an example may declare
/// what it needs first, as `brx.idx` its `.branchtargets`), braces and guard removed.
fn example_word(example: &str) -> &str {
    let last = example
        .split(';')
        .map(|s| s.trim_matches(|c: char| c.is_whitespace() || c == '{' || c == '}'))
        .rfind(|s| !s.is_empty())
        .unwrap();
    let last = match last.strip_prefix('@') {
        Some(guarded) => guarded
            .split_once(char::is_whitespace)
            .unwrap()
            .1
            .trim_start(),
        None => last,
    };
    last.split_whitespace().next().unwrap()
}

// ---------------------------------------------------------------- without ptxas

#[test]
fn each_example_needs_exactly_its_rows_values() {
    let rows = rows();
    let mut bad = Vec::new();
    // A named row (directive, operator, special register) is its own requirement.
    for r in rows.iter().filter(|r| !r.is_named()) {
        let (opcode, mods) = split_word(example_word(&r.example));
        if r.opcode != "*" && opcode != r.opcode {
            bad.push(format!("{}: the example's opcode is `{opcode}`", r.name()));
        }
        let got = requirement(&rows, &opcode, &mods);
        if got != Some((r.ptx.clone(), r.target.clone())) {
            bad.push(format!("{}: the table gives its example {got:?}", r.name()));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn every_fixture_instruction_form_is_known() {
    let rows = rows();
    let (mut unknown, mut forms) = (BTreeSet::new(), BTreeSet::new());
    for file in valid_ptx_under(&root().join("fixtures")) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for word in instruction_words(&text) {
            if !forms.insert(word.clone()) {
                continue;
            }
            let (opcode, mods) = split_word(&word);
            if requirement(&rows, &opcode, &mods).is_none() {
                unknown.insert(format!("{word} ({})", file.display()));
            }
        }
    }
    // scripts/isa_table.py forms lists 415: a reader that finds far fewer is broken.
    assert!(
        forms.len() > 400,
        "only {} instruction forms found",
        forms.len()
    );
    assert!(
        unknown.is_empty(),
        "unknown to src/isa/table.tsv:\n{}",
        Vec::from_iter(unknown).join("\n")
    );
}

/// The instruction words (`ld.global.u32`) of a module: statements inside function
/// bodies, less directives, labels and guards. Initializers and vector operands
/// (`{%r1, %r2}`) stay inside their statement; a `{` that starts a statement in a
/// body opens a block, at module scope a body.
fn instruction_words(text: &str) -> Vec<String> {
    let text = strip_comments(text);
    let bytes = text.as_bytes();
    let (mut out, mut depth, mut stmt) = (Vec::new(), 0usize, String::new());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let inside_statement = stmt.contains('=') || (depth > 0 && !stmt.trim().is_empty());
        if c == '{' && inside_statement {
            let end = matching_brace(bytes, i);
            stmt.push_str(&text[i..end]);
            i = end;
            continue;
        }
        match c {
            ';' | '{' | '}' => {
                if c == ';' && depth > 0 {
                    out.extend(statement_word(&stmt));
                }
                if c == '{' {
                    depth += 1;
                } else if c == '}' {
                    depth = depth.saturating_sub(1);
                }
                stmt.clear();
            }
            _ => stmt.push(c),
        }
        i += 1;
    }
    out
}

fn matching_brace(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (j, &b) in bytes.iter().enumerate().skip(open) {
        depth += (b == b'{') as i32 - (b == b'}') as i32;
        if depth == 0 {
            return j + 1;
        }
    }
    bytes.len()
}

/// Comments and string contents out (a `;` or `{` in them is no statement).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(['/', '"']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        rest = if tail.starts_with("//") {
            tail.find('\n').map_or("", |e| &tail[e..])
        } else if tail.starts_with("/*") {
            tail.find("*/").map_or("", |e| &tail[e + 2..])
        } else if let Some(string) = tail.strip_prefix('"') {
            out.push_str("\"\"");
            string.find('"').map_or("", |e| &string[e + 1..])
        } else {
            out.push('/');
            &tail[1..]
        };
    }
    out.push_str(rest);
    out
}

fn statement_word(stmt: &str) -> Option<String> {
    let mut s = stmt.trim();
    // Labels (`$L__BB0_1:`), not `::` inside a modifier.
    while let Some((label, rest)) = s.split_once(':') {
        let is_label = !label.is_empty()
            && !rest.starts_with(':')
            && label
                .trim()
                .chars()
                .all(|c| c.is_alphanumeric() || "$_%".contains(c));
        if !is_label {
            break;
        }
        s = rest.trim_start();
    }
    if let Some(guarded) = s.strip_prefix('@') {
        s = guarded.split_once(char::is_whitespace)?.1.trim_start();
    }
    let word = s.split_whitespace().next()?;
    let first = word.chars().next()?;
    let ok = first.is_ascii_lowercase()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:".contains(c));
    ok.then(|| word.to_string())
}

// ------------------------------------------------------------------- with ptxas

/// One ptxas run proving part of a row.
struct Trial<'a> {
    row: &'a Row,
    what: String,
    ptx: String,
    target: String,
    accept: bool,
}

/// Accepted at the row's values; refused one version lower (unless its header needs
/// that version anyway: the target's own, or the 2.3 floor) and one target lower.
fn trials(row: &Row) -> Vec<Trial<'_>> {
    let trial = |what: String, ptx: &str, target: &str, accept| Trial {
        row,
        what,
        ptx: ptx.to_string(),
        target: target.to_string(),
        accept,
    };
    let mut out = vec![trial("accepted".into(), &row.ptx, &row.target, true)];
    let header_target = if row.target == "-" {
        "sm_10"
    } else {
        &row.target
    };
    let floor = max_version(target_version(header_target), FLOOR_VERSION);
    let i = version_index(&row.ptx);
    if i > version_index(floor) {
        let lower = PTX_VERSIONS[i - 1];
        out.push(trial(
            format!("refused at .version {lower}"),
            lower,
            &row.target,
            false,
        ));
    }
    if row.target != "-" {
        let lower = TARGETS[target_rank(&row.target) - 2].0;
        out.push(trial(
            format!("refused at .target {lower}"),
            &row.ptx,
            lower,
            false,
        ));
    }
    out
}

/// The module ptxas compiles for a trial: the preamble at the trial's header (the
/// version raised to what the target and `.address_size 64` need), the example in the
/// kernel, or at module scope for a directive row.
fn module(t: &Trial) -> (String, &'static str) {
    let target = if t.target == "-" { "sm_10" } else { &t.target };
    let version = max_version(max_version(&t.ptx, target_version(target)), FLOOR_VERSION);
    let text = PREAMBLE
        .replace("VERSION", version)
        .replace("TARGET", target);
    // A directive statement goes at module scope, anything else in the kernel.
    let text = if t.row.example.starts_with('.') {
        text.replace("MODULE_SCOPE", &t.row.example)
            .replace("EXAMPLE", "")
    } else {
        text.replace("MODULE_SCOPE", "")
            .replace("EXAMPLE", &t.row.example)
    };
    (text, arch_for(target))
}

/// The lowest real architecture ptxas 12.9 compiles a `.target` for: itself, or
/// sm_50 for the older ones it has no code generator for.
fn arch_for(target: &str) -> &'static str {
    let i = target_rank(target) - 1;
    let sm50 = target_rank("sm_50") - 1;
    TARGETS[i.max(sm50)].0
}

/// `None` when ptxas did as the trial says, else what went wrong.
fn run(ptxas: &Path, dir: &Path, n: usize, t: &Trial) -> Option<String> {
    let (text, arch) = module(t);
    let file = dir.join(format!("t{n}.ptx"));
    std::fs::write(&file, text).unwrap();
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .args(["-o", "/dev/null"])
        .arg(&file)
        .output()
        .unwrap();
    (out.status.success() != t.accept).then(|| {
        let err = String::from_utf8_lossy(&out.stderr);
        format!(
            "{}: expected {}; ptxas: {}",
            t.row.name(),
            t.what,
            err.trim()
        )
    })
}

#[test]
fn every_row_is_proven_by_ptxas() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let rows = rows();
    let all: Vec<Trial> = rows.iter().flat_map(trials).collect();
    let dir = scratch("isa_table");
    // ~1800 short ptxas runs: a few threads keep both cores busy while others start.
    let threads = 4 * std::thread::available_parallelism().map_or(2, usize::from);
    let failures: Vec<String> = in_parallel(&all, threads, |n, t| run(&ptxas, &dir, n, t))
        .into_iter()
        .flatten()
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} ptxas trials failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
