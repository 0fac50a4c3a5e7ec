//! Expected files: what a test produced, compared with a file kept in the repository,
//! or written there instead when `UPDATE_EXPECT=1` is set ("blessing"). docs/testing.md
//! says how to use them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Outputs longer than this are not stored: `NAME.fnv` holds their length and FNV-1a
/// hash instead of `NAME`.
pub const STORED_LIMIT: usize = 64 << 10;

/// True when `UPDATE_EXPECT=1`: expected files are written, not compared. Refused in CI
/// (`CI` set), where a blessed run would pass whatever the output.
pub fn blessing() -> bool {
    let on = std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1");
    assert!(
        !(on && std::env::var_os("CI").is_some()),
        "UPDATE_EXPECT=1 in CI: expected files are compared there, never written"
    );
    on
}

/// The 64-bit FNV-1a hash of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What `NAME.fnv` holds for `bytes`.
pub fn fnv_line(bytes: &[u8]) -> String {
    format!("{} bytes, FNV-1a 64 {:016x}\n", bytes.len(), fnv1a64(bytes))
}

/// Replaces every occurrence of `from` in `bytes` with `to`.
pub fn replace_bytes(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let from = from.as_bytes();
    if from.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(from) {
            out.extend_from_slice(to.as_bytes());
            i += from.len();
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The first line where `expected` and `actual` differ, both shown.
pub fn first_difference(expected: &[u8], actual: &[u8]) -> String {
    let e: Vec<&[u8]> = expected.split_inclusive(|&b| b == b'\n').collect();
    let a: Vec<&[u8]> = actual.split_inclusive(|&b| b == b'\n').collect();
    let i = (0..e.len().max(a.len()))
        .find(|&i| e.get(i) != a.get(i))
        .unwrap_or(0);
    let show = |l: Option<&&[u8]>| match l {
        None => "(end of file)".to_string(),
        Some(l) => {
            let text = String::from_utf8_lossy(l);
            let mut shown: String = text.chars().take(200).collect();
            if shown.len() < text.len() {
                shown.push_str("...");
            }
            format!("{shown:?}")
        }
    };
    format!(
        "first difference at line {} ({} bytes expected, {} bytes now):\n  expected: {}\n  now:      {}",
        i + 1,
        expected.len(),
        actual.len(),
        show(e.get(i)),
        show(a.get(i))
    )
}

/// The expected files of one test subject, all in one folder: each comparison is
/// recorded, and [`Expected::finish`] reports the files nothing compared (left over
/// from a removed run), or removes them when blessing.
pub struct Expected {
    dir: PathBuf,
    bless: bool,
    /// How to bless, shown with every difference.
    hint: String,
    compared: BTreeSet<PathBuf>,
    problems: Vec<String>,
}

impl Expected {
    /// Expected files in `dir`; `rerun` is the command that runs the test again
    /// (`cargo test ...`), for the hint printed with a difference.
    pub fn new(dir: &Path, rerun: &str) -> Expected {
        Expected {
            dir: dir.to_path_buf(),
            bless: blessing(),
            hint: format!("UPDATE_EXPECT=1 {rerun}"),
            compared: BTreeSet::new(),
            problems: Vec::new(),
        }
    }

    fn shown(&self, name: &str) -> String {
        let p = self.dir.join(name);
        p.strip_prefix(super::root())
            .unwrap_or(&p)
            .display()
            .to_string()
    }

    /// `actual` must be the bytes of expected file `name`; `None` (or empty bytes)
    /// means no such file.
    pub fn text(&mut self, name: &str, actual: Option<&[u8]>) {
        let actual = actual.filter(|a| !a.is_empty());
        let path = self.dir.join(name);
        if !self.compared.insert(path.clone()) {
            let shown = self.shown(name);
            self.problems
                .push(format!("{shown} is compared twice (two runs write it)"));
            return;
        }
        let now = std::fs::read(&path).ok();
        if now.as_deref() == actual {
            return;
        }
        if self.bless {
            match actual {
                Some(bytes) => {
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, bytes).unwrap();
                }
                None => std::fs::remove_file(&path).unwrap(),
            }
            return;
        }
        let shown = self.shown(name);
        let what = match (&now, actual) {
            (None, Some(a)) => format!(
                "{shown} is missing; the test produced {} bytes, beginning {:?}",
                a.len(),
                String::from_utf8_lossy(&a[..a.len().min(200)])
            ),
            (Some(_), None) => format!("{shown} exists, but the test produced nothing"),
            (Some(e), Some(a)) => format!("{shown} differs: {}", first_difference(e, a)),
            (None, None) => unreachable!(),
        };
        self.problems.push(format!(
            "{what}\n  if the change is intended: {}",
            self.hint
        ));
    }

    /// File `name` in the folder is no expected file (an input kept beside them):
    /// [`Expected::finish`] leaves it alone.
    pub fn not_compared(&mut self, name: &str) {
        self.compared.insert(self.dir.join(name));
    }

    /// Like [`Expected::text`], but output longer than [`STORED_LIMIT`] is compared
    /// through `NAME.fnv` (its length and hash) instead of `NAME`.
    pub fn output(&mut self, name: &str, actual: Option<&[u8]>) {
        let large = actual.is_some_and(|a| a.len() > STORED_LIMIT);
        let fnv = actual.filter(|_| large).map(fnv_line);
        self.text(&format!("{name}.fnv"), fnv.as_deref().map(str::as_bytes));
        self.text(name, actual.filter(|_| !large));
    }

    /// The differences found; files in the folder (not below it) that nothing
    /// compared count as differences too (or are removed, when blessing).
    pub fn finish(mut self) -> Vec<String> {
        let mut left: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        left.retain(|p| !self.compared.contains(p));
        left.sort();
        for p in left {
            if self.bless {
                std::fs::remove_file(&p).unwrap();
            } else {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                self.problems.push(format!(
                    "{} is compared with nothing (a run removed?); delete it, or: {}",
                    self.shown(&name),
                    self.hint
                ));
            }
        }
        if self.bless {
            // An expected folder left empty goes too.
            let _ = std::fs::remove_dir(&self.dir);
        }
        self.problems
    }
}
