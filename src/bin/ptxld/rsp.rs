//! Response files (`@FILE`), quoted like GNU tools (libiberty's `buildargv`):
//! arguments are separated by whitespace; `'...'` and `"..."` group; a backslash
//! takes the next character literally (except inside single quotes). A response file
//! may name further response files, up to [`MAX_DEPTH`] levels.

use std::path::{Path, PathBuf};

/// How deeply response files may nest.
pub const MAX_DEPTH: usize = 16;

/// Splits the contents of a response file into arguments.
pub fn split(text: &str) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut cur = String::new();
    let mut in_arg = false;
    let mut chars = text.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') => quote = None,
            (Some('\''), c) => cur.push(c),
            (_, '\\') => {
                in_arg = true;
                match chars.next() {
                    Some(n) => cur.push(n),
                    None => cur.push('\\'),
                }
            }
            (Some('"'), '"') => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_arg = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_arg {
                    args.push(std::mem::take(&mut cur));
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
        return Err(format!("unterminated {q} quote"));
    }
    if in_arg {
        args.push(cur);
    }
    Ok(args)
}

/// Expands every `@FILE` argument. Returns the arguments and the response files read
/// (for the dependency file).
pub fn expand(args: Vec<String>) -> Result<(Vec<String>, Vec<PathBuf>), String> {
    let mut out = Vec::new();
    let mut files = Vec::new();
    expand_into(args, 0, &mut out, &mut files)?;
    Ok((out, files))
}

fn expand_into(
    args: Vec<String>,
    depth: usize,
    out: &mut Vec<String>,
    files: &mut Vec<PathBuf>,
) -> Result<(), String> {
    for a in args {
        let Some(name) = a.strip_prefix('@').filter(|n| !n.is_empty()) else {
            out.push(a);
            continue;
        };
        if depth >= MAX_DEPTH {
            return Err(format!(
                "response file {name}: nested more than {MAX_DEPTH} levels deep (a cycle?)"
            ));
        }
        let text = std::fs::read_to_string(Path::new(name))
            .map_err(|e| format!("cannot read response file {name}: {e}"))?;
        let inner = split(&text).map_err(|e| format!("response file {name}: {e}"))?;
        files.push(PathBuf::from(name));
        expand_into(inner, depth + 1, out, files)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn gnu_quoting() {
        assert_eq!(
            split("a  'b c' \"d e\" f\\ g 'h\\i' \"j\\\"k\"\n-o\tout").unwrap(),
            vec!["a", "b c", "d e", "f g", "h\\i", "j\"k", "-o", "out"]
        );
        assert_eq!(split("''  \"\"").unwrap(), vec!["", ""]);
        assert!(split("'open").is_err());
    }
}
