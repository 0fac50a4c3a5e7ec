//! Text rendering of diagnostics, for the edges that print them (the command line,
//! the [`crate::build::Build`] API, `ptxld check`): lld's shape for a link,
//!
//! ```text
//! error: a.ptx:3:5: expected `;`
//! 3 |     ret
//!   |     ^~~
//! help: ...
//! error: duplicate symbol: f
//! >>> defined at a.ptx:2:12
//! ```
//!
//! and `ptxld check`'s list of findings with their locations.

use std::borrow::Cow;
use std::fmt::Write as _;

use super::{
    resolve, CheckReport, Diagnostic, Diagnostics, Entry, Location, Report, Resolved, Severity,
};
use crate::source::SourceMap;

/// The line that ends a report cut at `--error-limit` errors (lld's wording).
pub const TOO_MANY_ERRORS: &str =
    "error: too many errors emitted, stopping now (use --error-limit=0 to see all errors)\n";

/// `location` as shown: resolved already, or against `sources`. A location of a file
/// that is not at hand (a report rendered without resolving it first) shows the file
/// id.
fn shown<'a>(
    location: &'a Location,
    sources: Option<&SourceMap>,
    snippet: bool,
) -> Cow<'a, Resolved> {
    match location {
        Location::Resolved(r) => Cow::Borrowed(r),
        Location::Source { file, span } => Cow::Owned(match sources {
            Some(s) => resolve(s.file(*file), *span, snippet),
            None => Resolved {
                file: format!("<file {}>", file.0),
                line: 0,
                column: 0,
                snippet: None,
            },
        }),
    }
}

impl Diagnostic {
    /// Renders the diagnostic in lld's shape, with its source snippet; unresolved
    /// locations are resolved against `sources`.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(sources));
        out
    }

    /// The diagnostic on one line: its severity, location and message, and for one
    /// without a location, the first note that has one (`cargo:warning` lines, where
    /// a diagnostic's further lines would each be a warning of their own).
    pub(crate) fn one_line(&self) -> String {
        let word = self.severity.as_str();
        let line = match (
            &self.location,
            self.notes.iter().find(|n| n.location.is_some()),
        ) {
            (Some(l), _) => format!("{word}: {l}: {}", self.message),
            (None, Some(n)) => format!(
                "{word}: {} ({} {})",
                self.message,
                n.message,
                n.location.as_ref().expect("found with one")
            ),
            (None, None) => format!("{word}: {}", self.message),
        };
        line.replace('\n', " ")
    }

    fn write(&self, out: &mut String, sources: Option<&SourceMap>) {
        let word = self.severity.as_str();
        match &self.location {
            Some(l) => {
                let r = shown(l, sources, true);
                let _ = writeln!(
                    out,
                    "{word}: {}:{}:{}: {}",
                    r.file, r.line, r.column, self.message
                );
                if let Some(s) = &r.snippet {
                    let gutter = r.line.to_string().len();
                    let _ = writeln!(out, "{:>gutter$} | {}", r.line, s.text);
                    let _ = writeln!(
                        out,
                        "{:>gutter$} | {}^{}",
                        "",
                        " ".repeat(s.caret),
                        "~".repeat(s.width - 1)
                    );
                }
            }
            None => {
                let _ = writeln!(out, "{word}: {}", self.message);
            }
        }
        for note in &self.notes {
            match &note.location {
                Some(l) => {
                    let r = shown(l, sources, false);
                    let _ = writeln!(
                        out,
                        ">>> {} {}:{}:{}",
                        note.message, r.file, r.line, r.column
                    );
                }
                None => {
                    let _ = writeln!(out, ">>> {}", note.message);
                }
            }
        }
        if let Some(help) = &self.help {
            let _ = writeln!(out, "help: {help}");
        }
    }
}

/// Renders `entries` (diagnostics, `Err` for log text) in lld's shape, stopping after
/// `limit` errors (0 = no limit), the way lld's `--error-limit` does; log text in
/// between is kept in place.
fn write_all<'a>(
    out: &mut String,
    entries: impl IntoIterator<Item = Result<&'a Diagnostic, &'a str>>,
    sources: Option<&SourceMap>,
    limit: usize,
) {
    let mut errors = 0;
    for e in entries {
        match e {
            Err(text) => out.push_str(text),
            Ok(d) => {
                if d.is_error() {
                    if limit != 0 && errors == limit {
                        out.push_str(TOO_MANY_ERRORS);
                        break;
                    }
                    errors += 1;
                }
                d.write(out, sources);
            }
        }
    }
}

impl Diagnostics {
    /// Renders everything, stopping after `limit` errors (0 = no limit), the way lld's
    /// `--error-limit` does.
    pub fn render(&self, sources: &SourceMap, limit: usize) -> String {
        let mut out = String::new();
        write_all(&mut out, self.iter().map(Ok), Some(sources), limit);
        out
    }
}

impl Report {
    /// Renders the report as a link prints it: the log lines and the diagnostics in
    /// lld's shape, in order, stopping after the error limit.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let entries = self.entries().iter().map(|e| match e {
            Entry::Diagnostic(d) => Ok(d),
            Entry::Log(text) => Err(text.as_str()),
        });
        write_all(&mut out, entries, None, self.error_limit());
        out
    }
}

impl std::fmt::Display for Location {
    /// `file:line:col`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = shown(self, None, false);
        write!(f, "{}:{}:{}", r.file, r.line, r.column)
    }
}

impl CheckReport {
    /// The human-readable report: each finding with the locations involved
    /// (`>>> defined at file:line:col`), then the counts. When nothing was linked (the inputs
    /// could not be read or parsed), the diagnostics appear as a link prints them.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        if self.linked {
            for d in &self.diagnostics {
                let _ = writeln!(s, "{}: {}", d.severity.as_str(), d.message);
                if let Some(l) = &d.location {
                    let _ = writeln!(s, ">>> {l}");
                }
                // Each note as a link prints it (`>>> defined at a.ptx:2:12`).
                for n in &d.notes {
                    let Some(l) = &n.location else { continue };
                    let _ = writeln!(s, ">>> {} {l}", n.message);
                }
            }
        } else {
            let entries = self.diagnostics.iter().map(Ok);
            write_all(&mut s, entries, None, self.error_limit);
        }
        let _ = writeln!(
            s,
            "{} error(s), {} warning(s), {} note(s)",
            self.count(Severity::Error),
            self.count(Severity::Warning),
            self.count(Severity::Note)
        );
        s
    }
}
