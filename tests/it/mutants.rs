//! The mutation differential test (issue 34): seeded, deterministic mutations of the
//! real producer modules of the cross-producer link cases (`fixtures/link/real-*` that
//! link), each judged by ptxas and by ptxld.
//!
//! For mutant `i` (reproducible from [`SEED`] and `i` alone) one module of one set is
//! changed once: a token deleted, duplicated or swapped with the next, a line deleted,
//! duplicated or swapped with the next, or a type, state space, linkage or number
//! replaced. Then `ptxas -c` judges the mutated module on its own, ptxld links the set
//! and, if ptxld succeeds, whole-program ptxas judges ptxld's output. The outcomes:
//!
//! * **crash**: ptxld exits with a status other than 0 and 1, by a signal, or panics;
//! * **false accept**: ptxld succeeds and ptxas rejects its output;
//! * **false reject**: ptxld reports an error located in the mutated module (a parse or
//!   module check) while `ptxas -c` accepts that module;
//! * **link reject**: ptxld fails with a link error (undefined or duplicate symbol,
//!   prototype mismatch: a diagnostic without a location, or located in another
//!   module) while `ptxas -c` accepts the mutated module, which it cannot see;
//! * **agree-reject**, **agree-accept**: otherwise.
//!
//! ptxas's message is sorted into a class ([`PTXAS_CLASSES`]; of several messages, the
//! one of the most basic class stands for the rejection). The test fails on
//! any crash, any false reject, and any false accept whose class is in
//! [`MUST_BE_ZERO`]; the other false accepts (operand typing, names) are reported.
//! The table goes to standard error (`-- --nocapture`) and `target/mutants-report.txt`.
//!
//! `PTXLD_MUTANTS=N` runs N mutants (default [`DEFAULT_COUNT`]; `just mutants` runs
//! 2000); `PTXLD_MUTANT=I` runs mutant I alone, prints everything about it and keeps
//! its scratch folder. docs/testing.md has the rest.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::support::*;

/// The seed of every mutant; mutant `i` draws from `SEED` and `i` alone.
const SEED: u64 = 0x0034_5EED_D1FF_0034;

/// Mutants in a plain `cargo test` (CI): about a minute on two cores.
const DEFAULT_COUNT: usize = 300;

/// Mutants run at once (each runs ptxas and ptxld one after the other).
const THREADS: usize = 2;

/// Modules larger than this stay unmutated members of their set (libdevice).
const MAX_MUTATED_BYTES: u64 = 64 * 1024;

/// The ptxas message classes in which ptxld must reject everything ptxas rejects.
const MUST_BE_ZERO: &[Class] = &[Class::Syntax, Class::Declaration, Class::Linkage];

/// What ptxas's message is about, by [`PTXAS_CLASSES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Syntax,
    Declaration,
    Linkage,
    Names,
    Typing,
    Other,
}

impl Class {
    const ALL: [Class; 6] = [
        Class::Syntax,
        Class::Declaration,
        Class::Linkage,
        Class::Names,
        Class::Typing,
        Class::Other,
    ];

    fn name(self) -> &'static str {
        match self {
            Class::Syntax => "syntax",
            Class::Declaration => "declaration",
            Class::Linkage => "linkage",
            Class::Names => "names",
            Class::Typing => "typing",
            Class::Other => "other",
        }
    }
}

/// ptxas's messages (lower-cased, without the `ptxas FILE, line N; error   : ` prefix)
/// by substring, first match wins; anything else is [`Class::Other`]. Built from the
/// messages ptxas 12.9 gives the mutants (the reports list them).
const PTXAS_CLASSES: &[(&str, Class)] = &[
    // Instruction types and modifiers, before the syntax errors' "unexpected".
    ("unexpected instruction types", Class::Typing),
    ("unexpected number of state spaces", Class::Typing),
    // A declaration, before the linkage's "extern" ("Non-external variable").
    ("incomplete type", Class::Declaration),
    // syntax: the statement does not parse
    ("syntax error", Class::Syntax),
    ("parsing error", Class::Syntax),
    ("unexpected", Class::Syntax),
    ("illegal character", Class::Syntax),
    ("unknown directive", Class::Syntax),
    // linkage: calls against prototypes, symbols across modules
    ("wrong number of parameters", Class::Linkage),
    ("prototype", Class::Linkage),
    ("call argument", Class::Linkage),
    ("formal parameter", Class::Linkage),
    ("unresolved extern", Class::Linkage),
    ("multiple definition", Class::Linkage),
    ("alias", Class::Linkage),
    ("extern", Class::Linkage),
    // declaration: one declaration, or two in one scope
    ("duplicate", Class::Declaration),
    ("redefinition", Class::Declaration),
    ("redeclaration", Class::Declaration),
    ("initializer", Class::Declaration),
    ("initial value", Class::Declaration),
    ("entry parameter", Class::Declaration),
    ("function parameter", Class::Declaration),
    ("illegal alignment", Class::Declaration),
    ("multiple state spaces", Class::Declaration),
    ("must be in register state space", Class::Declaration),
    ("alignment must be", Class::Declaration),
    ("module-scoped variables", Class::Declaration),
    // names: a name that is not declared
    ("unknown symbol", Class::Names),
    ("undefined", Class::Names),
    ("not declared", Class::Names),
    // typing: an instruction's types, modifiers, operands
    ("arguments mismatch", Class::Typing),
    ("must be", Class::Typing),
    ("state space", Class::Typing),
    ("type mismatch", Class::Typing),
    ("modifier", Class::Typing),
    ("operand", Class::Typing),
    ("unknown field", Class::Typing),
    ("video selector", Class::Typing),
    ("take address", Class::Typing),
    ("requires", Class::Typing),
    ("required", Class::Typing),
    ("multiple comparisons", Class::Typing),
];

fn classify_message(message: &str) -> Class {
    let m = message.to_ascii_lowercase();
    PTXAS_CLASSES
        .iter()
        .find(|(s, _)| m.contains(s))
        .map_or(Class::Other, |&(_, c)| c)
}

/// `message` with the names in quotes written `'NAME'`, so that messages differing
/// only in a register or symbol group together; instruction names, modifiers and
/// punctuation (`'ld'`, `'.reg'`, `','`) stay.
fn message_kind(message: &str) -> String {
    let mut out = String::new();
    let mut parts = message.split('\'');
    out.push_str(parts.next().unwrap_or(""));
    let mut quoted = true;
    for p in parts {
        out.push('\'');
        let of_name = ["function ", "variable "]
            .iter()
            .any(|w| out.ends_with(&format!("{w}'")));
        let keep = !quoted
            || p.starts_with('.')
            || (!of_name && p.bytes().all(|c| c.is_ascii_lowercase() || c == b'.'))
            || (p.len() == 1 && p.bytes().all(|c| c.is_ascii_punctuation()));
        out.push_str(if keep { p } else { "NAME" });
        quoted = !quoted;
    }
    out
}

/// splitmix64: small, fast, and plenty for choosing mutations.
struct Rng(u64);

impl Rng {
    fn for_mutant(index: usize) -> Rng {
        let mut r = Rng(SEED ^ (index as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next();
        r
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        assert!(n > 0);
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    TokenDelete,
    TokenDuplicate,
    TokenSwap,
    LineDelete,
    LineDuplicate,
    LineSwap,
    Type,
    StateSpace,
    Linkage,
    Number,
}

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::TokenDelete,
        Kind::TokenDuplicate,
        Kind::TokenSwap,
        Kind::LineDelete,
        Kind::LineDuplicate,
        Kind::LineSwap,
        Kind::Type,
        Kind::StateSpace,
        Kind::Linkage,
        Kind::Number,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::TokenDelete => "token-delete",
            Kind::TokenDuplicate => "token-duplicate",
            Kind::TokenSwap => "token-swap",
            Kind::LineDelete => "line-delete",
            Kind::LineDuplicate => "line-duplicate",
            Kind::LineSwap => "line-swap",
            Kind::Type => "type",
            Kind::StateSpace => "state-space",
            Kind::Linkage => "linkage",
            Kind::Number => "number",
        }
    }
}

const TYPES: &[&str] = &[
    ".u8", ".u16", ".u32", ".u64", ".s8", ".s16", ".s32", ".s64", ".b8", ".b16", ".b32", ".b64",
    ".f16", ".f32", ".f64", ".pred",
];
const SPACES: &[&str] = &[".global", ".shared", ".local", ".param", ".const", ".reg"];
/// The linkages; `""` is none.
const LINKAGES: &[&str] = &[".visible", ".extern", ".weak", ".common", ""];
/// Module-scope directives that may take a linkage.
const LINKABLE: &[&str] = &[".func", ".entry", ".global", ".const", ".shared"];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "7",
    "8",
    "15",
    "16",
    "31",
    "32",
    "63",
    "64",
    "255",
    "256",
    "1024",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "-1",
    "0x7FFFFFFF",
    "0xFFFFFFFFFFFFFFFF",
];

/// The largest replacement for a size (register count, array dimension, alignment).
const MAX_SIZE: i128 = 65536;

/// The value of a number of [`NUMBERS`].
fn number_value(s: &str) -> i128 {
    match s.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16).unwrap(),
        None => s.parse().unwrap(),
    }
}

// ---------------------------------------------------------------------------------
// Sets and modules

/// Sets of producer fixtures besides the link cases: the modules with full DWARF
/// (`llvm/c_debug*`, `nvrtc/rt_debug*`) linked without libdevice, since
/// whole-program ptxas of `real-all-producers-with-dwarf` (libdevice compiled with
/// debug information) takes seconds. Each links, and ptxas accepts the output.
const FIXTURE_SETS: &[(&str, &[&str])] = &[
    (
        "ptx:dwarf-llvm",
        &[
            "fixtures/ptx/llvm/c_debug.ptx",
            "fixtures/ptx/llvm/c_debug2.ptx",
            "fixtures/ptx/gcc/g_math.ptx",
        ],
    ),
    (
        "ptx:dwarf-nvrtc",
        &[
            "fixtures/ptx/nvrtc/rt_debug.ptx",
            "fixtures/ptx/nvrtc/rt_debug2.ptx",
            "fixtures/ptx/nvrtc/rt_lib.ptx",
            "fixtures/ptx/nvvm/nv_common.ptx",
            "fixtures/ptx/gcc/g_math.ptx",
            "fixtures/link/real-com-arr-weak-common/libdevice-stubs.ptx",
        ],
    ),
];

/// A link case that links, from its case.txt, or one of [`FIXTURE_SETS`].
struct Set {
    name: String,
    dir: PathBuf,
    /// Absolute paths, in command-line order.
    inputs: Vec<PathBuf>,
    arch: String,
    args: Vec<String>,
}

/// A module that mutants change, in the cheapest set holding it.
struct Target {
    set: usize,
    input: usize,
    module: Module,
}

fn load_sets() -> Vec<Set> {
    let mut sets = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/link"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("real-") && !n.starts_with("real-err-")
        })
        .collect();
    dirs.sort();
    for dir in dirs {
        let text = std::fs::read_to_string(dir.join("case.txt")).unwrap();
        let mut set = Set {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            dir: dir.clone(),
            inputs: Vec::new(),
            arch: "sm_80".into(),
            args: Vec::new(),
        };
        let mut ok = false;
        for line in text.lines().map(str::trim) {
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key {
                "inputs" => {
                    set.inputs = value
                        .split_whitespace()
                        .map(|p| std::fs::canonicalize(dir.join(p)).unwrap())
                        .collect()
                }
                "arch" => set.arch = value.to_string(),
                "ptxld-args" => set.args = value.split_whitespace().map(String::from).collect(),
                "expect" => ok = value == "ok",
                _ => {}
            }
        }
        if ok {
            sets.push(set);
        }
    }
    for (name, inputs) in FIXTURE_SETS {
        sets.push(Set {
            name: name.to_string(),
            dir: root().join("fixtures/ptx"),
            inputs: inputs
                .iter()
                .map(|p| std::fs::canonicalize(root().join(p)).unwrap())
                .collect(),
            arch: "sm_80".into(),
            args: Vec::new(),
        });
    }
    sets
}

/// Every module under [`MAX_MUTATED_BYTES`] of every set, once each, in the set with
/// the fewest input bytes that holds it (so that mutants run fast), sorted by path.
fn load_targets(sets: &[Set]) -> Vec<Target> {
    let size = |p: &Path| std::fs::metadata(p).unwrap().len();
    let cost: Vec<u64> = sets
        .iter()
        .map(|s| s.inputs.iter().map(|p| size(p)).sum())
        .collect();
    let mut best: BTreeMap<PathBuf, (u64, usize, usize)> = BTreeMap::new();
    for (si, s) in sets.iter().enumerate() {
        for (ii, p) in s.inputs.iter().enumerate() {
            if size(p) > MAX_MUTATED_BYTES {
                continue;
            }
            let e = best.entry(p.clone()).or_insert((cost[si], si, ii));
            if cost[si] < e.0 {
                *e = (cost[si], si, ii);
            }
        }
    }
    best.into_iter()
        .map(|(p, (_, set, input))| Target {
            set,
            input,
            module: Module::new(std::fs::read_to_string(&p).unwrap()),
        })
        .collect()
}

/// A token of a line: byte range in the module's text.
#[derive(Clone, Copy)]
struct Tok {
    start: usize,
    end: usize,
}

/// A line that mutations may touch: in a body or a module-scope declaration, not in
/// the header, a comment or a debug section.
struct Line {
    start: usize,
    /// Up to the newline, which is not included.
    end: usize,
    tokens: Vec<Tok>,
    /// Braces open at the start of the line (0: module scope).
    depth: usize,
}

struct Module {
    text: String,
    lines: Vec<Line>,
}

/// Splits `line` (starting at byte `base` of the text) into tokens: identifiers
/// (`%r1`, `$L__BB0_1`, `ld`), dotted modifiers (`.u32`, `.x`), numbers (`0x1F`,
/// `0f3F800000`, `1.5`), strings, and single punctuation characters. Stops at `//`.
fn tokenize(line: &str, base: usize) -> Vec<Tok> {
    let b = line.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$';
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        }
        if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else if c.is_ascii_digit() {
            while i < b.len()
                && (b[i].is_ascii_alphanumeric()
                    || (b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            {
                i += 1;
            }
        } else if ident(c) || ((c == b'.' || c == b'%') && b.get(i + 1).copied().is_some_and(ident))
        {
            i += 1;
            while i < b.len() && ident(b[i]) {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push(Tok {
            start: base + start,
            end: base + i,
        });
    }
    out
}

impl Module {
    fn new(text: String) -> Module {
        let mut lines = Vec::new();
        let mut depth = 0usize;
        let mut in_section = false;
        let mut in_comment = false;
        let mut start = 0;
        for raw in text.split_inclusive('\n') {
            let end = start + raw.trim_end_matches(['\n', '\r']).len();
            let line = &text[start..end];
            let t = line.trim();
            let this = start;
            start += raw.len();
            if in_comment {
                in_comment = !t.contains("*/");
                continue;
            }
            if t.contains("/*") {
                in_comment = !t.contains("*/");
                continue;
            }
            if in_section {
                in_section = t != "}";
                continue;
            }
            if t.starts_with(".section") {
                in_section = !t.contains('}');
                continue;
            }
            if t.is_empty()
                || t.starts_with("//")
                || t.starts_with("@@")
                || [".version", ".target", ".address_size"]
                    .iter()
                    .any(|h| t.starts_with(h))
            {
                continue;
            }
            let tokens = tokenize(line, this);
            if tokens.is_empty() {
                continue;
            }
            let line_depth = depth;
            for tk in &tokens {
                match &text[tk.start..tk.end] {
                    "{" => depth += 1,
                    "}" => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
            lines.push(Line {
                start: this,
                end,
                tokens,
                depth: line_depth,
            });
        }
        Module { text, lines }
    }

    fn line_no(&self, offset: usize) -> usize {
        self.text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
    }

    fn line_text(&self, l: &Line) -> &str {
        &self.text[l.start..l.end]
    }

    fn tok(&self, t: Tok) -> &str {
        &self.text[t.start..t.end]
    }
}

/// One applied mutation.
struct Mutation {
    kind: Kind,
    text: String,
    /// 1-based line in the original module.
    line: usize,
    /// What changed, for the report: the line before and after, or the lines moved.
    what: String,
}

/// The line of `text` holding byte `at`, trimmed.
fn line_around(text: &str, at: usize) -> &str {
    let s = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let e = text[at..].find('\n').map_or(text.len(), |i| at + i);
    text[s..e].trim()
}

/// Replaces bytes `start..end` of the module with `with`, describing the change by
/// the line before and after.
fn splice(m: &Module, kind: Kind, start: usize, end: usize, with: &str) -> Mutation {
    let text = format!("{}{}{}", &m.text[..start], with, &m.text[end..]);
    let before = line_around(&m.text, start);
    let after = line_around(&text, start);
    Mutation {
        kind,
        line: m.line_no(start),
        what: format!("`{before}` -> `{after}`"),
        text,
    }
}

/// Mutation `kind` at a place `rng` picks, or `None` if the module has no place for it.
fn mutate(m: &Module, kind: Kind, rng: &mut Rng) -> Option<Mutation> {
    let lines = &m.lines;
    // Every token of the eligible lines matching `pred`.
    let tokens_where = |pred: &dyn Fn(&str) -> bool| -> Vec<Tok> {
        lines
            .iter()
            .flat_map(|l| l.tokens.iter().copied())
            .filter(|&t| pred(m.tok(t)))
            .collect()
    };
    let replace_one = |rng: &mut Rng, set: &[&str]| -> Option<Mutation> {
        let sites = tokens_where(&|s| set.contains(&s));
        if sites.is_empty() {
            return None;
        }
        let t = *rng.pick(&sites);
        let old = m.tok(t);
        let others: Vec<&str> = set.iter().copied().filter(|&s| s != old).collect();
        let new = *rng.pick(&others);
        Some(splice(m, kind, t.start, t.end, new))
    };
    match kind {
        Kind::TokenDelete | Kind::TokenDuplicate | Kind::TokenSwap => {
            let l = rng.pick(lines);
            if kind == Kind::TokenSwap {
                if l.tokens.len() < 2 {
                    return None;
                }
                let i = rng.below(l.tokens.len() - 1);
                let (a, b) = (l.tokens[i], l.tokens[i + 1]);
                let with = format!("{}{}{}", m.tok(b), &m.text[a.end..b.start], m.tok(a));
                return Some(splice(m, kind, a.start, b.end, &with));
            }
            let t = *rng.pick(&l.tokens);
            if kind == Kind::TokenDelete {
                Some(splice(m, kind, t.start, t.end, ""))
            } else {
                let with = format!("{} {}", m.tok(t), m.tok(t));
                Some(splice(m, kind, t.start, t.end, &with))
            }
        }
        Kind::LineDelete | Kind::LineDuplicate => {
            let l = rng.pick(lines);
            let line = m.line_text(l);
            let (with, what) = if kind == Kind::LineDelete {
                (String::new(), format!("`{}` deleted", line.trim()))
            } else {
                (
                    format!("{line}\n{line}"),
                    format!("`{}` duplicated", line.trim()),
                )
            };
            let text = format!("{}{}{}", &m.text[..l.start], with, &m.text[l.end..]);
            Some(Mutation {
                kind,
                line: m.line_no(l.start),
                what,
                text,
            })
        }
        Kind::LineSwap => {
            if lines.len() < 2 {
                return None;
            }
            let i = rng.below(lines.len() - 1);
            let (a, b) = (&lines[i], &lines[i + 1]);
            let text = format!(
                "{}{}{}{}{}",
                &m.text[..a.start],
                m.line_text(b),
                &m.text[a.end..b.start],
                m.line_text(a),
                &m.text[b.end..]
            );
            Some(Mutation {
                kind,
                line: m.line_no(a.start),
                what: format!(
                    "`{}` swapped with the next `{}`",
                    m.line_text(a).trim(),
                    m.line_text(b).trim()
                ),
                text,
            })
        }
        Kind::Type => replace_one(rng, TYPES),
        Kind::StateSpace => replace_one(rng, SPACES),
        Kind::Number => {
            // A number, and whether it is a size (a register count `%r<N>`, an array
            // dimension in a declaration, an alignment): sizes get values up to
            // MAX_SIZE only, since ptxas takes minutes to allocate 2^32 registers.
            let mut sites: Vec<(Tok, bool)> = Vec::new();
            for l in lines {
                let first = m.tok(l.tokens[0]);
                let declaration =
                    SPACES.contains(&first) || LINKAGES[..4].contains(&first) || first == ".align";
                for (i, &t) in l.tokens.iter().enumerate() {
                    if !m.tok(t).as_bytes()[0].is_ascii_digit() {
                        continue;
                    }
                    let before = if i > 0 { m.tok(l.tokens[i - 1]) } else { "" };
                    let size =
                        before == "<" || before == ".align" || (before == "[" && declaration);
                    sites.push((t, size));
                }
            }
            if sites.is_empty() {
                return None;
            }
            let (t, size) = *rng.pick(&sites);
            let old = m.tok(t);
            let others: Vec<&str> = NUMBERS
                .iter()
                .copied()
                .filter(|&s| s != old && (!size || number_value(s) <= MAX_SIZE))
                .collect();
            let new = *rng.pick(&others);
            Some(splice(m, kind, t.start, t.end, new))
        }
        Kind::Linkage => {
            // A linkage to replace (or remove), or a module-scope declaration
            // without one, to give one.
            let mut sites: Vec<(Tok, bool)> = Vec::new();
            for l in lines {
                for (i, &t) in l.tokens.iter().enumerate() {
                    let s = m.tok(t);
                    if LINKAGES[..4].contains(&s) {
                        sites.push((t, true));
                    } else if i == 0 && l.depth == 0 && LINKABLE.contains(&s) {
                        sites.push((t, false));
                    }
                }
            }
            if sites.is_empty() {
                return None;
            }
            let (t, replace) = *rng.pick(&sites);
            if replace {
                let old = m.tok(t);
                let others: Vec<&str> = LINKAGES.iter().copied().filter(|&s| s != old).collect();
                let new = *rng.pick(&others);
                Some(splice(m, kind, t.start, t.end, new))
            } else {
                let new = format!("{} ", rng.pick(&LINKAGES[..4]));
                Some(splice(m, kind, t.start, t.start, &new))
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Running a mutant

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    AgreeAccept,
    AgreeReject,
    LinkReject,
    FalseAccept,
    FalseReject,
    Crash,
}

impl Outcome {
    const ALL: [Outcome; 6] = [
        Outcome::AgreeAccept,
        Outcome::AgreeReject,
        Outcome::LinkReject,
        Outcome::FalseAccept,
        Outcome::FalseReject,
        Outcome::Crash,
    ];

    fn name(self) -> &'static str {
        match self {
            Outcome::AgreeAccept => "agree-accept",
            Outcome::AgreeReject => "agree-reject",
            Outcome::LinkReject => "link-reject",
            Outcome::FalseAccept => "FALSE-ACCEPT",
            Outcome::FalseReject => "FALSE-REJECT",
            Outcome::Crash => "CRASH",
        }
    }
}

/// How long ptxas may take on one mutant before it counts as rejecting it.
const PTXAS_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// What ptxas said: `None` if it accepted, else its message. ptxas 12.9 now and then
/// dies of SIGSEGV on a module it rejects with a message when run again (seen with
/// two ptxas running at once), so a run killed by a signal is repeated, twice at most.
fn ptxas_verdict(ptxas: &Path, dir: &Path, args: &[&str]) -> Option<String> {
    let mut verdict = ptxas_once(ptxas, dir, args);
    for _ in 0..2 {
        if !verdict.as_deref().is_some_and(|m| m.contains("(SIG")) {
            break;
        }
        verdict = ptxas_once(ptxas, dir, args);
    }
    verdict
}

fn ptxas_once(ptxas: &Path, dir: &Path, args: &[&str]) -> Option<String> {
    let mut child = Command::new(ptxas)
        .args(args)
        .args(["-o", "/dev/null"])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > PTXAS_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let text = err.join().unwrap() + &out.join().unwrap();
    let status = match status {
        Some(s) if s.success() => return None,
        Some(s) => s,
        None => {
            return Some(format!(
                "(ptxas still running after {PTXAS_LIMIT:?}, killed)"
            ))
        }
    };
    // ptxas does not report in line order ("Arguments mismatch" for an operand comes
    // before "Unknown symbol" for the same operand): the message of the most basic
    // class (syntax first, then declaration, ...) stands for the rejection.
    let first = text
        .lines()
        .filter(|l| (l.contains("error") || l.contains("fatal")) && !l.contains("assembly aborted"))
        .enumerate()
        .min_by_key(|&(i, l)| (classify_message(ptxas_message(l)), i))
        .map(|(_, l)| l)
        .or_else(|| text.lines().next());
    Some(match first {
        Some(l) => l.trim().to_string(),
        None => format!("(ptxas failed with {status} and no message)"),
    })
}

/// The message of a ptxas line, without `ptxas FILE, line N; error   : `.
fn ptxas_message(line: &str) -> &str {
    match line.find(" : ").or_else(|| line.find(": ")) {
        Some(i) if line.starts_with("ptxas") => line[i..].trim_start_matches([' ', ':']),
        _ => line,
    }
}

struct Result {
    index: usize,
    set: String,
    file: String,
    kind: Kind,
    line: usize,
    what: String,
    /// `ptxas -c` on the mutated module: `None` accepted, else its first message.
    ptxas_c: Option<String>,
    /// ptxld's exit status (`None`: a signal) and first error line.
    ptxld_code: Option<i32>,
    ptxld_first: String,
    /// Whole-program ptxas on ptxld's output, when ptxld succeeded.
    ptxas_whole: Option<String>,
    /// For a false accept: the first error `ptxld --verify` reports at an input's
    /// `file:line:col` (it must exit 1 and write no output), or `None`.
    verified: Option<String>,
    /// The first operand error (`operand-type`) `ptxld check` reports in the mutated
    /// module, if any.
    checked: Option<String>,
    outcome: Outcome,
    /// How long the mutant took (ptxas twice and ptxld), in seconds.
    seconds: f64,
}

impl Result {
    /// The ptxas message the outcome is about: whole-program ptxas's for a false
    /// accept (`ptxas -c`'s where whole-program ptxas crashed without a message),
    /// `ptxas -c`'s otherwise.
    fn ptxas_message(&self) -> Option<&str> {
        match self.outcome {
            Outcome::FalseAccept => match (&self.ptxas_whole, &self.ptxas_c) {
                (Some(w), Some(c)) if w.starts_with("(ptxas") => Some(c),
                (w, _) => w.as_deref(),
            },
            _ => self.ptxas_c.as_deref().or(self.ptxas_whole.as_deref()),
        }
    }

    fn class(&self) -> Option<Class> {
        self.ptxas_message()
            .map(|m| classify_message(ptxas_message(m)))
    }

    fn describe(&self) -> String {
        let verified = match (&self.outcome, &self.verified) {
            (Outcome::FalseAccept, Some(v)) => format!("    --verify: {v}\n"),
            (Outcome::FalseAccept, None) => "    --verify: NOT LOCATED\n".to_string(),
            _ => String::new(),
        };
        let verified = match &self.checked {
            Some(c) => format!("{verified}    ptxld check: {c}\n"),
            None => verified,
        };
        format!(
            "#{} {} {}:{} {}: {}\n    ptxas: {}\n    ptxld (exit {}): {}\n{verified}",
            self.index,
            self.set,
            self.file,
            self.line,
            self.kind.name(),
            self.what,
            self.ptxas_message().unwrap_or("accepts"),
            self.ptxld_code
                .map_or_else(|| "by a signal".to_string(), |c| c.to_string()),
            if self.ptxld_first.is_empty() {
                "accepts"
            } else {
                &self.ptxld_first
            },
        )
    }
}

/// Mutant `index`: mutates, runs ptxas and ptxld in `dir`, classifies.
fn run_mutant(
    index: usize,
    sets: &[Set],
    targets: &[Target],
    ptxas: &Path,
    dir: &Path,
    verbose: bool,
) -> Result {
    let start = std::time::Instant::now();
    let mut rng = Rng::for_mutant(index);
    let (target, mutation) = loop {
        let target = rng.pick(targets);
        let kind = *rng.pick(&Kind::ALL);
        if let Some(m) = mutate(&target.module, kind, &mut rng) {
            if m.text != target.module.text {
                break (target, m);
            }
        }
    };
    let set = &sets[target.set];
    let original = &set.inputs[target.input];
    let file = original.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::write(dir.join(&file), &mutation.text).unwrap();

    // ptxas -c for the higher of the set's architecture and the module's .target.
    let number = |a: &str| -> u32 {
        a.trim_start_matches("sm_")
            .trim_end_matches(|c: char| c.is_ascii_alphabetic())
            .parse()
            .unwrap_or(0)
    };
    let module_arch = target
        .module
        .text
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target"))
        .and_then(|t| t.split([',', ' ']).find(|w| w.starts_with("sm_")))
        .unwrap_or("sm_80");
    let arch_c = if number(module_arch) > number(&set.arch) {
        module_arch
    } else {
        &set.arch
    };
    let ptxas_c = ptxas_verdict(ptxas, dir, &["-c", &format!("-arch={arch_c}"), &file]);

    let inputs: Vec<PathBuf> = set
        .inputs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == target.input {
                PathBuf::from(&file)
            } else {
                p.clone()
            }
        })
        .collect();
    let o = ptxld()
        .arg("-j1")
        .args(&set.args)
        .args(["-o", "out.ptx"])
        .args(&inputs)
        .current_dir(dir)
        .run();
    let err = stderr(&o);
    let code = o.status.code();
    let ptxld_first = err
        .lines()
        .find(|l| l.contains("error:") || l.contains("panicked"))
        .or_else(|| {
            if code == Some(0) {
                None
            } else {
                err.lines().next()
            }
        })
        .unwrap_or("")
        .trim()
        .to_string();
    let ptxas_whole = if code == Some(0) {
        ptxas_verdict(ptxas, dir, &[&format!("-arch={}", set.arch), "out.ptx"])
    } else {
        None
    };
    // An error located in the mutated module: `ptxld: error: FILE:LINE:COL: ...`.
    let located = format!("error: {file}:");
    let in_module = err
        .lines()
        .any(|l| l.starts_with("ptxld: ") && l.contains(&located));
    let outcome = match code {
        _ if err.contains("panicked") => Outcome::Crash,
        Some(0) if ptxas_whole.is_some() => Outcome::FalseAccept,
        Some(0) => Outcome::AgreeAccept,
        Some(1) if ptxas_c.is_some() => Outcome::AgreeReject,
        Some(1) if in_module => Outcome::FalseReject,
        Some(1) => Outcome::LinkReject,
        _ => Outcome::Crash,
    };
    // A false accept: `--verify` must refuse it, at an input's location.
    let verified = (outcome == Outcome::FalseAccept)
        .then(|| verify_location(ptxas, dir, set, &inputs))
        .flatten();
    let checked = operand_error(dir, set, &inputs, &file);
    if verbose {
        eprintln!(
            "mutant {index}: set {} ({}), module {} line {}, {}: {}\n\
             scratch folder: {}\n\
             ptxas -c -arch={arch_c} {file}: {}\n\
             ptxld -j1 {} -o out.ptx {}: exit {:?}\n{err}\n\
             ptxas -arch={} out.ptx: {}\noutcome: {}",
            set.name,
            set.dir.display(),
            original.display(),
            mutation.line,
            mutation.kind.name(),
            mutation.what,
            dir.display(),
            ptxas_c.as_deref().unwrap_or("accepts"),
            set.args.join(" "),
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            code,
            set.arch,
            match (code, &ptxas_whole) {
                (Some(0), None) => "accepts",
                (Some(0), Some(m)) => m,
                _ => "(not run: ptxld failed)",
            },
            outcome.name()
        );
    }
    Result {
        index,
        set: set.name.clone(),
        file: original
            .strip_prefix(root())
            .unwrap_or(original)
            .display()
            .to_string(),
        kind: mutation.kind,
        line: mutation.line,
        what: mutation.what,
        ptxas_c,
        ptxld_code: code,
        ptxld_first,
        ptxas_whole,
        verified,
        checked,
        outcome,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The first operand error (`operand-type`) that `ptxld check` reports in `file`, one
/// of `inputs`, as `LINE:COL: message`.
fn operand_error(dir: &Path, set: &Set, inputs: &[PathBuf], file: &str) -> Option<String> {
    let o = ptxld()
        .args(["check", "-j1", "--format", "json"])
        .args(&set.args)
        .args(inputs)
        .current_dir(dir)
        .run();
    // A crash of the check is a failure of the test, as a crash of the link is.
    assert!(
        matches!(o.status.code(), Some(0 | 1)) && !stderr(&o).contains("panicked"),
        "ptxld check crashed on {file} in {}: {}",
        dir.display(),
        stderr(&o)
    );
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
    report["diagnostics"].as_array()?.iter().find_map(|d| {
        let at = &d["location"];
        (d["code"] == "operand-type" && at["file"] == file)
            .then(|| format!("{}: {}", at["line"], d["message"].as_str().unwrap_or("")))
    })
}

/// Links `inputs` with `--verify` (ptxas at `ptxas`): the first `ptxas` error it
/// reports at one of the inputs' `file:line:col`, if it exits 1 without writing its
/// output.
fn verify_location(ptxas: &Path, dir: &Path, set: &Set, inputs: &[PathBuf]) -> Option<String> {
    let o = ptxld()
        .arg("-j1")
        .arg("--verify")
        .args(&set.args)
        .args(["-o", "verified.ptx"])
        .args(inputs)
        .env("PTXAS", Some(ptxas.as_os_str()))
        .current_dir(dir)
        .run();
    if o.status.code() != Some(1) || dir.join("verified.ptx").exists() {
        return None;
    }
    let err = stderr(&o);
    err.lines()
        .find(|l| {
            let Some(rest) = l.strip_prefix("ptxld: error: ") else {
                return false;
            };
            let at_input = inputs.iter().any(|p| {
                rest.strip_prefix(&*p.to_string_lossy())
                    .and_then(|r| r.strip_prefix(':'))
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            });
            at_input && l.contains(": ptxas: ")
        })
        .map(|l| l.trim().to_string())
}

// ---------------------------------------------------------------------------------
// The report

fn rate(n: usize, of: usize) -> String {
    if of == 0 {
        "-".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / of as f64)
    }
}

fn report(results: &[Result], seconds: f64, sets: &[Set], targets: &[Target]) -> String {
    let mut out = String::new();
    let n = results.len();
    let _ = writeln!(
        out,
        "mutation differential test: {n} mutants, seed {SEED:#x}, {seconds:.1} s"
    );
    let _ = writeln!(
        out,
        "{} modules mutated, each in the smallest set holding it:",
        targets.len()
    );
    for (si, set) in sets.iter().enumerate() {
        let here: Vec<String> = targets
            .iter()
            .filter(|t| t.set == si)
            .map(|t| {
                set.inputs[t.input]
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        if !here.is_empty() {
            let _ = writeln!(out, "  {} ({}): {}", set.name, set.arch, here.join(" "));
        }
    }
    let _ = writeln!(
        out,
        "(reproduce one: PTXLD_MUTANT=INDEX cargo test --test it mutants:: -- --nocapture)\n"
    );

    // Mutation kind x outcome.
    let _ = write!(out, "{:<16}", "mutation");
    for o in Outcome::ALL {
        let _ = write!(out, "{:>14}", o.name());
    }
    let _ = writeln!(out, "{:>8}{:>14}", "total", "false-accept%");
    let mut row = |label: &str, rs: &[&Result]| {
        let _ = write!(out, "{label:<16}");
        for o in Outcome::ALL {
            let _ = write!(out, "{:>14}", rs.iter().filter(|r| r.outcome == o).count());
        }
        let fa = rs
            .iter()
            .filter(|r| r.outcome == Outcome::FalseAccept)
            .count();
        let _ = writeln!(out, "{:>8}{:>14}", rs.len(), rate(fa, rs.len()));
    };
    for k in Kind::ALL {
        let rs: Vec<&Result> = results.iter().filter(|r| r.kind == k).collect();
        row(k.name(), &rs);
    }
    let all: Vec<&Result> = results.iter().collect();
    row("all", &all);

    // ptxas's class x ptxld's answer, over the mutants ptxas rejects.
    let _ = writeln!(
        out,
        "\nptxas rejects (class of its message; whole-program ptxas's for false accepts):"
    );
    let _ = writeln!(
        out,
        "{:<14}{:>10}{:>14}{:>14}{:>14}{:>16}{:>14}",
        "class",
        "rejects",
        "agree-reject",
        "FALSE-ACCEPT",
        "fa/rejects",
        "fa/all mutants",
        "must be 0"
    );
    for c in Class::ALL {
        let rs: Vec<&Result> = results
            .iter()
            .filter(|r| {
                r.class() == Some(c)
                    && matches!(r.outcome, Outcome::AgreeReject | Outcome::FalseAccept)
            })
            .collect();
        let fa = rs
            .iter()
            .filter(|r| r.outcome == Outcome::FalseAccept)
            .count();
        let _ = writeln!(
            out,
            "{:<14}{:>10}{:>14}{:>14}{:>14}{:>16}{:>14}",
            c.name(),
            rs.len(),
            rs.len() - fa,
            fa,
            rate(fa, rs.len()),
            rate(fa, n),
            if MUST_BE_ZERO.contains(&c) { "yes" } else { "" }
        );
    }

    let crashed = results
        .iter()
        .filter(|r| {
            r.ptxas_whole
                .as_deref()
                .is_some_and(|m| m.starts_with("(ptxas"))
        })
        .count();
    let _ = writeln!(
        out,
        "(whole-program ptxas crashed or hung on {crashed} of ptxld's outputs: those false \
         accepts are classed by ptxas -c's message)"
    );

    let false_accepts = results.iter().filter(|r| r.outcome == Outcome::FalseAccept);
    let located = false_accepts
        .clone()
        .filter(|r| r.verified.is_some())
        .count();
    let _ = writeln!(
        out,
        "--verify refuses {located} of the {} false accepts at an input's file:line:col",
        false_accepts.clone().count()
    );
    // `ptxld check` types operands (docs/linking.md, "Operand types"): which false
    // accepts it refuses, by ptxas's class.
    let _ = writeln!(
        out,
        "ptxld check refuses {} of the {} false accepts in the mutated module: {}",
        false_accepts
            .clone()
            .filter(|r| r.checked.is_some())
            .count(),
        false_accepts.clone().count(),
        Class::ALL
            .iter()
            .filter_map(|&c| {
                let of: Vec<&Result> = false_accepts
                    .clone()
                    .filter(|r| r.class() == Some(c))
                    .collect();
                let caught = of.iter().filter(|r| r.checked.is_some()).count();
                (!of.is_empty()).then(|| format!("{} {caught}/{}", c.name(), of.len()))
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    let wrong = results.iter().filter(|r| check_false_reject(r)).count();
    let _ = writeln!(
        out,
        "ptxld check reports an operand error in {wrong} mutated module(s) that ptxas -c accepts"
    );

    // The distinct messages of the false accepts, by class.
    let _ = writeln!(out, "\nfalse accepts by ptxas message:");
    let mut by_message: BTreeMap<(Class, String), Vec<&Result>> = BTreeMap::new();
    for r in results.iter().filter(|r| r.outcome == Outcome::FalseAccept) {
        let m = message_kind(ptxas_message(r.ptxas_message().unwrap_or("")));
        by_message
            .entry((r.class().unwrap(), m))
            .or_default()
            .push(r);
    }
    for ((c, m), rs) in &by_message {
        let e = rs[0];
        let _ = writeln!(
            out,
            "  {:<12} {:>4}  {m}\n{:>20}e.g. #{} {}:{} {}: {}",
            c.name(),
            rs.len(),
            "",
            e.index,
            e.file.rsplit('/').next().unwrap_or(&e.file),
            e.line,
            e.kind.name(),
            e.what
        );
    }

    let mut slowest: Vec<&Result> = results.iter().collect();
    slowest.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    let _ = writeln!(out, "\nslowest mutants:");
    for r in slowest.iter().take(5) {
        let _ = write!(out, "{:.1} s ", r.seconds);
        out.push_str(&r.describe());
    }

    for (title, o) in [
        ("crashes", Outcome::Crash),
        ("false rejects", Outcome::FalseReject),
        ("false accepts", Outcome::FalseAccept),
        (
            "link rejects (ptxas -c accepts; ptxld's link stage rejects)",
            Outcome::LinkReject,
        ),
    ] {
        let rs: Vec<&Result> = results.iter().filter(|r| r.outcome == o).collect();
        let _ = writeln!(out, "\n{title}: {}", rs.len());
        for r in rs {
            out.push_str(&r.describe());
        }
    }
    out
}

#[test]
fn mutation_differential() {
    let Some(ptxas) = ptxas() else {
        return;
    };
    let sets = load_sets();
    let targets = load_targets(&sets);
    assert!(
        sets.len() >= 5 && targets.len() >= 20,
        "expected the real-* link cases in fixtures/link"
    );
    // The fixture sets link, and ptxas accepts their output (the link cases are
    // checked by tests/it/link.rs).
    for set in sets.iter().filter(|s| s.name.starts_with("ptx:")) {
        let dir = scratch(&format!("mutants/{}", &set.name[4..]));
        let o = ptxld()
            .args(["-o", "out.ptx"])
            .args(&set.inputs)
            .current_dir(&dir)
            .run();
        assert!(o.status.success(), "{}: {}", set.name, stderr(&o));
        assert_ptxas_accepts(&dir, "out.ptx", &set.arch);
        let _ = std::fs::remove_dir_all(&dir);
    }
    let one: Option<usize> = std::env::var("PTXLD_MUTANT")
        .ok()
        .map(|v| v.parse().expect("PTXLD_MUTANT=INDEX"));
    let count: usize = std::env::var("PTXLD_MUTANTS")
        .ok()
        .map_or(DEFAULT_COUNT, |v| v.parse().expect("PTXLD_MUTANTS=N"));
    let indices: Vec<usize> = match one {
        Some(i) => vec![i],
        None => (0..count).collect(),
    };

    let start = std::time::Instant::now();
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<Result>>> = indices.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..THREADS.min(indices.len()) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&index) = indices.get(k) else {
                    break;
                };
                let dir = scratch(&format!("mutants/{index:05}"));
                let r = run_mutant(index, &sets, &targets, &ptxas, &dir, one.is_some());
                if one.is_none() {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                *slots[k].lock().unwrap() = Some(r);
            });
        }
    });
    let results: Vec<Result> = slots
        .into_iter()
        .map(|s| s.into_inner().unwrap().unwrap())
        .collect();
    let seconds = start.elapsed().as_secs_f64();

    let text = report(&results, seconds, &sets, &targets);
    eprintln!("\n{text}");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap();
    let file = target_dir.join("mutants-report.txt");
    if one.is_none() {
        std::fs::write(&file, &text).unwrap();
    }

    let count_of = |o: Outcome| results.iter().filter(|r| r.outcome == o).count();
    let crashes = count_of(Outcome::Crash);
    let check_rejects: Vec<&Result> = results.iter().filter(|r| check_false_reject(r)).collect();
    let false_rejects = count_of(Outcome::FalseReject);
    let must: Vec<&Result> = results
        .iter()
        .filter(|r| {
            r.outcome == Outcome::FalseAccept
                && r.class().is_some_and(|c| MUST_BE_ZERO.contains(&c))
        })
        .collect();
    // Where whole-program ptxas gives a message (it crashes on some outputs, which
    // is no input's fault), `--verify` reports it at an input's location.
    let unlocated: Vec<&Result> = results
        .iter()
        .filter(|r| {
            r.outcome == Outcome::FalseAccept
                && r.verified.is_none()
                && !r
                    .ptxas_whole
                    .as_deref()
                    .is_some_and(|w| w.starts_with("(ptxas"))
        })
        .collect();
    let mut failures = String::new();
    for r in results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Crash | Outcome::FalseReject))
        .chain(must.iter().copied())
        .chain(unlocated.iter().copied())
        .chain(check_rejects.iter().copied())
        .take(10)
    {
        failures.push_str(&r.describe());
    }
    assert!(
        crashes == 0
            && false_rejects == 0
            && must.is_empty()
            && unlocated.is_empty()
            && check_rejects.is_empty(),
        "of {} mutants: {crashes} crash(es), {false_rejects} false reject(s), {} false accept(s) \
         in the classes that must have none ({}), {} false accept(s) --verify does not locate, \
         {} operand error(s) of `ptxld check` in modules ptxas -c accepts; \
         the table is above and in {}; the first of them:\n{failures}",
        results.len(),
        must.len(),
        MUST_BE_ZERO
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        unlocated.len(),
        check_rejects.len(),
        file.display()
    );
}

/// `ptxld check` reports an operand error in a mutated module that `ptxas -c`
/// accepts: a wrong typing rule.
fn check_false_reject(r: &Result) -> bool {
    r.checked.is_some() && r.ptxas_c.is_none()
}
