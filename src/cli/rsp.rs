//! Response files (`@FILE`), quoted like GNU tools (libiberty's `buildargv`):
//! arguments are separated by white space; `'...'` and `"..."` group; a backslash
//! takes the next character literally (except inside single quotes). A response file
//! may name further response files.
//!
//! Bounded as libiberty's `expandargv` bounds them: at most [`MAX_EXPANSIONS`]
//! response files are expanded in all (a file naming itself, or files naming each
//! other many times, fail instead of growing without end), and together they may
//! hold at most [`MAX_BYTES`]. A response file is opened as inputs are: a FIFO
//! without a writer is an error rather than a wait, and a device is read only up
//! to the size limit.

use std::ffi::OsString;
use std::path::PathBuf;

/// How many response files one command line may expand, counting every time a file
/// is named (libiberty's `expandargv` stops at 2000).
pub const MAX_EXPANSIONS: usize = 2000;

/// How many bytes all response files together may hold: a million input paths of
/// 200 bytes each fit.
pub const MAX_BYTES: u64 = 256 << 20;

/// libiberty's white space (`ISSPACE`).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Splits the contents of a response file into arguments. Works on bytes: file names
/// need not be UTF-8.
pub fn split(text: &[u8]) -> Result<Vec<OsString>, String> {
    let mut args = Vec::new();
    let mut cur = Vec::new();
    let mut in_arg = false;
    let mut bytes = text.iter().copied();
    let mut quote: Option<u8> = None;
    while let Some(c) = bytes.next() {
        match (quote, c) {
            (Some(b'\''), b'\'') => quote = None,
            (Some(b'\''), c) => cur.push(c),
            (_, b'\\') => {
                in_arg = true;
                cur.push(bytes.next().unwrap_or(b'\\'));
            }
            (Some(b'"'), b'"') => quote = None,
            (Some(_), c) => cur.push(c),
            (None, b'\'' | b'"') => {
                quote = Some(c);
                in_arg = true;
            }
            (None, c) if is_space(c) => {
                if in_arg {
                    args.push(os_string(std::mem::take(&mut cur)));
                    in_arg = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_arg = true;
            }
        }
    }
    if let Some(q) = quote {
        return Err(format!("unterminated {} quote", q as char));
    }
    if in_arg {
        args.push(os_string(cur));
    }
    Ok(args)
}

#[cfg(unix)]
fn os_string(bytes: Vec<u8>) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    OsString::from_vec(bytes)
}

#[cfg(not(unix))]
fn os_string(bytes: Vec<u8>) -> OsString {
    String::from_utf8_lossy(&bytes).into_owned().into()
}

/// Expands every `@FILE` argument, in place and in order. Returns the arguments and
/// the response files read (for the dependency file and the output checks).
pub fn expand(args: Vec<OsString>) -> Result<(Vec<OsString>, Vec<PathBuf>), String> {
    let mut out = Vec::with_capacity(args.len());
    let mut files = Vec::new();
    let mut total = 0u64;
    // The arguments still to look at, innermost response file on top.
    let mut stack = vec![args.into_iter()];
    while let Some(top) = stack.last_mut() {
        let Some(arg) = top.next() else {
            stack.pop();
            continue;
        };
        let name = match arg.as_encoded_bytes() {
            [b'@', rest @ ..] if !rest.is_empty() => PathBuf::from(os_string(rest.to_vec())),
            _ => {
                out.push(arg);
                continue;
            }
        };
        if files.len() == MAX_EXPANSIONS {
            return Err(format!(
                "response file {}: more than {MAX_EXPANSIONS} response files expanded; do \
                 response files name each other in a cycle?",
                name.display()
            ));
        }
        let text =
            crate::internal::input::read_limited(&name, MAX_BYTES - total).map_err(
                |e| match e {
                    crate::internal::input::InputError::Io { source, .. } => {
                        format!("cannot read response file {}: {source}", name.display())
                    }
                    e => format!("response file {e}"),
                },
            )?;
        total += text.len() as u64;
        if total > MAX_BYTES {
            return Err(format!(
                "response file {}: response files hold more than {} MiB together",
                name.display(),
                MAX_BYTES >> 20
            ));
        }
        let inner = split(&text).map_err(|e| format!("response file {}: {e}", name.display()))?;
        files.push(name);
        stack.push(inner.into_iter());
    }
    Ok((out, files))
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn gnu_quoting() {
        assert_eq!(
            split(b"a  'b c' \"d e\" f\\ g 'h\\i' \"j\\\"k\"\n-o\tout\x0bx").unwrap(),
            vec!["a", "b c", "d e", "f g", "h\\i", "j\"k", "-o", "out", "x"]
        );
        assert_eq!(split(b"''  \"\"").unwrap(), vec!["", ""]);
        assert!(split(b"'open").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn names_need_not_be_utf8() {
        use std::os::unix::ffi::OsStrExt;
        let args = split(b"a\xffb 'c\xfe'").unwrap();
        assert_eq!(args[0].as_bytes(), b"a\xffb");
        assert_eq!(args[1].as_bytes(), b"c\xfe");
    }
}
