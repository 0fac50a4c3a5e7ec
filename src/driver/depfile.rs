//! Make-syntax dependency files (`--dependency-file`), written so that GNU make
//! reads every name back as it is (docs/robustness.md has the experiments).

use std::path::{Path, PathBuf};

use crate::diag::Code;
use crate::driver::{fail, Failure};
use crate::path_bytes;

/// A Make-syntax dependency file: `OUTPUT: INPUT...`, and an empty rule for every
/// input (as `gcc -MP` and lld write them), so that make does not stop with "No rule
/// to make target" once an input is renamed or deleted. Usable as Ninja's `depfile`
/// and CMake's `DEPFILE`. Standard input (`-`) is left out.
///
/// Names are escaped so that GNU make reads them back as they are (measured with
/// make 4.3, docs/robustness.md): `$` as `$$`; space, `#` and `:` (and `%` where the
/// name is a target) with a backslash, the backslashes right before them doubled, and
/// in a name with one of the wildcards `*?[`, which make expands, each wildcard and
/// backslash first gets a backslash of its own. A relative name beginning with `~`,
/// which make would take for a home directory, is written as an absolute path. A
/// name make cannot read back (one with a newline, a tab, `;` or `=`, or ending in a
/// backslash) is an error.
pub(crate) fn depfile(output: &Path, files: &[PathBuf]) -> Result<Vec<u8>, Failure> {
    let dash = Path::new("-");
    let mut out = escape_make(output, true)?;
    out.push(b':');
    let mut seen = std::collections::HashSet::new();
    let mut phony = Vec::new();
    for f in files {
        if f.as_path() != dash && seen.insert(f) {
            out.extend_from_slice(b" \\\n  ");
            out.extend(escape_make(f, false)?);
            phony.push(b'\n');
            phony.extend(escape_make(f, true)?);
            phony.extend_from_slice(b":\n");
        }
    }
    out.push(b'\n');
    out.extend(phony);
    Ok(out)
}

/// `path` escaped for a Make rule, as a target if `target` (see [`depfile`]).
fn escape_make(path: &Path, target: bool) -> Result<Vec<u8>, Failure> {
    let mut name = path_bytes::bytes_of(path.as_os_str()).into_owned();
    let bad = name.iter().find(|c| b"\n\t;=".contains(c));
    if let Some(what) = match bad {
        Some(b'\n') => Some("a newline".to_string()),
        Some(b'\t') => Some("a tab".to_string()),
        Some(c) => Some(format!("`{}`", *c as char)),
        // Make reads 2N backslashes as N only before a space or a colon: a name
        // that ends in one cannot end a line.
        None if name.last() == Some(&b'\\') => Some("a backslash at its end".to_string()),
        None => None,
    } {
        let shown = path.display().to_string();
        return Err(fail(
            Code::Depfile,
            format!(
                "cannot write the dependency file: the file name \"{}\" contains {what}, which \
             make cannot read",
                shown.replace('\n', "\\n").replace('\t', "\\t")
            ),
        ));
    }
    if name.first() == Some(&b'~') {
        let cwd = std::env::current_dir().map_err(|e| {
            fail(
                Code::Depfile,
                format!(
                    "cannot write the dependency file: the file name {} begins with `~` and the \
                 current directory is unknown: {e}",
                    path.display()
                ),
            )
        })?;
        name = path_bytes::bytes_of(cwd.join(path).as_os_str()).into_owned();
    }
    // Wildcards: make hands the name to glob(3), which takes a backslash as an
    // escape, after its own unescaping below.
    if name.iter().any(|c| b"*?[".contains(c)) {
        name = name.iter().fold(Vec::new(), |mut v, &c| {
            if b"*?[\\".contains(&c) {
                v.push(b'\\');
            }
            v.push(c);
            v
        });
    }
    let mut out = Vec::with_capacity(name.len() + 8);
    let mut backslashes = 0;
    for &c in &name {
        match c {
            b'\\' => {
                backslashes += 1;
                out.push(c);
                continue;
            }
            b' ' | b'#' | b':' => {
                out.extend(std::iter::repeat_n(b'\\', backslashes + 1));
                out.push(c);
            }
            b'%' if target => {
                out.extend(std::iter::repeat_n(b'\\', backslashes + 1));
                out.push(c);
            }
            b'$' => out.extend_from_slice(b"$$"),
            _ => out.push(c),
        }
        backslashes = 0;
    }
    Ok(out)
}
