//! Which ptxas `--verify` runs: `$PTXAS`, else `$CUDA_HOME/bin/ptxas`, else
//! `$CUDA_PATH/bin/ptxas`, else the first `ptxas` in `PATH`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic};

/// The environment variables that choose the ptxas, in order, for a build script to
/// tell cargo to rerun when they change. `PATH` is searched last but not listed: it
/// differs between shells and editors, and would rebuild for nothing.
pub const ENV: [&str; 3] = ["PTXAS", "CUDA_HOME", "CUDA_PATH"];

/// How to point ptxld at a ptxas.
const HELP: &str = "set PTXAS to the ptxas executable, or CUDA_HOME to a CUDA toolkit (ptxas is \
                    in its bin folder), or put ptxas in PATH";

/// Finds ptxas with the environment `env` gives (`std::env::var_os` but for tests).
/// `PTXAS`, when set, is the one: it is an error if it names no executable file,
/// rather than a silent fall back to another ptxas.
pub fn find_ptxas(
    env: &dyn Fn(&str) -> Option<OsString>,
    purpose: &str,
) -> Result<PathBuf, Box<Diagnostic>> {
    let set = |name: &str| env(name).filter(|v| !v.is_empty());
    if let Some(p) = set("PTXAS") {
        let p = PathBuf::from(p);
        return match executable(&p) {
            Ok(()) => Ok(p),
            Err(why) => Err(not_found(format!(
                "PTXAS is {}, which {why}; {purpose} needs ptxas",
                p.display()
            ))),
        };
    }
    let mut looked = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(dir) = set(var) {
            let p = Path::new(&dir).join("bin").join("ptxas");
            if executable(&p).is_ok() {
                return Ok(p);
            }
            looked.push(format!("{var}/bin/ptxas ({})", p.display()));
        }
    }
    if let Some(path) = set("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("ptxas");
            if executable(&p).is_ok() {
                return Ok(p);
            }
        }
    }
    looked.push("PATH".to_string());
    Err(not_found(format!(
        "cannot find ptxas for {purpose}: PTXAS is not set, and there is none in {}",
        looked.join(", ")
    )))
}

fn not_found(message: String) -> Box<Diagnostic> {
    Box::new(Diagnostic::global_error(Code::PtxasNotFound, message).with_help(HELP))
}

/// Why `p` is not an executable file, if it is not.
fn executable(p: &Path) -> Result<(), &'static str> {
    let meta = std::fs::metadata(p).map_err(|_| "does not exist")?;
    if !meta.is_file() {
        return Err("is not a file");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o111 == 0 {
            return Err("is not executable");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder `bin` with an executable `ptxas`, and a plain file beside it.
    fn toolkit(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ptxld-find-{name}-{}", std::process::id()));
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("ptxas"), "#!/bin/sh\n").unwrap();
        std::fs::write(dir.join("plain"), "").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let exe = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(bin.join("ptxas"), exe).unwrap();
        }
        dir
    }

    fn find(vars: &[(&str, &Path)]) -> Result<PathBuf, Box<Diagnostic>> {
        let vars: Vec<(String, OsString)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_os_str().to_owned()))
            .collect();
        find_ptxas(
            &|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()),
            "--verify",
        )
    }

    #[test]
    fn ptxas_then_cuda_home_then_cuda_path_then_path() {
        let (a, b) = (toolkit("a"), toolkit("b"));
        let (pa, pb) = (a.join("bin/ptxas"), b.join("bin/ptxas"));
        let nowhere = Path::new("/nonexistent-ptxld");
        assert_eq!(find(&[("PTXAS", &pa), ("CUDA_HOME", &b)]).unwrap(), pa);
        assert_eq!(find(&[("CUDA_HOME", &a), ("CUDA_PATH", &b)]).unwrap(), pa);
        assert_eq!(
            find(&[("CUDA_HOME", nowhere), ("CUDA_PATH", &b)]).unwrap(),
            pb
        );
        let path = std::env::join_paths([nowhere.to_path_buf(), b.join("bin")]).unwrap();
        assert_eq!(find(&[("PATH", Path::new(&path))]).unwrap(), pb);
        // PTXAS set wrong is an error, not a fall back to PATH.
        let e = find(&[("PTXAS", &a.join("plain")), ("PATH", Path::new(&path))]).unwrap_err();
        assert_eq!(e.code, Code::PtxasNotFound);
        assert!(e
            .message
            .ends_with("plain, which is not executable; --verify needs ptxas"));
        let e = find(&[("PTXAS", &nowhere.join("ptxas"))]).unwrap_err();
        assert_eq!(
            e.message,
            "PTXAS is /nonexistent-ptxld/ptxas, which does not exist; --verify needs ptxas"
        );
        assert_eq!(e.help.as_deref(), Some(HELP));
        let e = find(&[("CUDA_HOME", nowhere), ("PATH", nowhere)]).unwrap_err();
        assert_eq!(
            e.message,
            "cannot find ptxas for --verify: PTXAS is not set, and there is none in \
             CUDA_HOME/bin/ptxas (/nonexistent-ptxld/bin/ptxas), PATH"
        );
        for d in [a, b] {
            std::fs::remove_dir_all(d).unwrap();
        }
    }
}
