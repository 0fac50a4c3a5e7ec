//! Why a [`super::Build`] failed, rendered the way a build's log should show it:
//! which link failed, from which inputs, and every diagnostic of every input, once.

use std::fmt;
use std::path::PathBuf;

use crate::driver::Failure;

/// Why a [`Build`](super::Build) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Neither [`Build::out_dir`](super::Build::out_dir) nor the `OUT_DIR` variable
    /// gives an output directory.
    NoOutDir,
    /// An option is not one ptxld takes, or not one for a build: from the builder's
    /// methods, [`Build::flag`](super::Build::flag), `PTXLD_FLAGS` or `PTXLD_ARCH`.
    Options {
        /// What is wrong, as the command line says it.
        message: String,
        /// Every option the build gave ptxld, in order.
        options: Vec<String>,
    },
    /// The link failed.
    Link {
        /// The output the link was for (`OUT_DIR/kernels.ptx`).
        output: PathBuf,
        /// The inputs, as the build named them.
        inputs: Vec<String>,
        /// The diagnostics of every input, and the log lines.
        failure: Failure,
    },
    /// The linked object could not be archived as `libNAME.a`.
    Archive {
        /// The archive's path.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoOutDir => f.write_str(
                "ptxld: no output directory: call Build::out_dir, or run from a cargo build \
                 script (OUT_DIR)",
            ),
            Error::Options { message, options } => write!(
                f,
                "ptxld: {message}\n(the options were: {})",
                options.join(" ")
            ),
            Error::Link {
                output,
                inputs,
                failure,
            } => {
                let errors = failure
                    .report
                    .diagnostics()
                    .filter(|d| d.is_error())
                    .count();
                let name = output.file_name().unwrap_or(output.as_os_str());
                writeln!(
                    f,
                    "ptxld could not link {} ({errors} error{}) from:",
                    name.to_string_lossy(),
                    if errors == 1 { "" } else { "s" }
                )?;
                for input in inputs {
                    writeln!(f, "  {input}")?;
                }
                write!(f, "{failure}")
            }
            Error::Archive { path, source } => {
                write!(f, "ptxld: cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Link { failure, .. } => Some(failure),
            Error::Archive { source, .. } => Some(source),
            _ => None,
        }
    }
}
