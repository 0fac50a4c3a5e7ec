//! Diagnostics: located messages, rendered in the shape users know from lld and
//! rustc (`error: file:line:col: message`, the source line, a caret).
//!
//! Phases collect diagnostics per file (possibly in parallel); [`Diagnostics::sort`]
//! puts them in a deterministic order before anything is printed.

use std::fmt::Write as _;

use crate::source::{FileId, SourceMap, Span};

/// How bad a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// Reported, but the run continues and may succeed.
    Warning,
}

/// A secondary location attached to a diagnostic (`>>> defined at ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Where, if the note has a location.
    pub at: Option<(FileId, Span)>,
    /// What it says.
    pub message: String,
}

/// One located message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file the primary location is in, if any.
    pub file: Option<FileId>,
    /// The primary location within `file`.
    pub span: Span,
    /// The message, starting lower-case, without a trailing period.
    pub message: String,
    /// Further locations and explanations.
    pub notes: Vec<Note>,
    /// What the user can do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error at `span` in `file`.
    pub fn error(file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            file: Some(file),
            span,
            message: message.into(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// A warning at `span` in `file`.
    pub fn warning(file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(file, span, message)
        }
    }

    /// An error with no source location.
    pub fn global_error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            file: None,
            span: Span::default(),
            message: message.into(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds a located note.
    pub fn with_note(mut self, file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Note {
            at: Some((file, span)),
            message: message.into(),
        });
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The order diagnostics are reported in: by file, then position, then text. A
    /// diagnostic without a primary location (`duplicate symbol: x`) is ordered by its
    /// first located note, so link errors come out in input order.
    fn sort_key(&self) -> (Option<FileId>, u32, u32, Severity, &str) {
        let (file, span) = match self.file {
            Some(f) => (Some(f), self.span),
            None => self
                .notes
                .iter()
                .find_map(|n| n.at)
                .map_or((None, self.span), |(f, s)| (Some(f), s)),
        };
        (file, span.lo, span.hi, self.severity, &self.message)
    }

    /// Renders the diagnostic with its source snippet.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let word = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        match self.file {
            Some(file) => {
                let f = sources.file(file);
                let lc = f.line_col(self.span.lo);
                let _ = writeln!(
                    out,
                    "{word}: {}:{}:{}: {}",
                    f.name(),
                    lc.line,
                    lc.col,
                    self.message
                );
                render_snippet(&mut out, sources, file, self.span);
            }
            None => {
                let _ = writeln!(out, "{word}: {}", self.message);
            }
        }
        for note in &self.notes {
            match note.at {
                Some((file, span)) => {
                    let f = sources.file(file);
                    let lc = f.line_col(span.lo);
                    let _ = writeln!(
                        out,
                        ">>> {} {}:{}:{}",
                        note.message,
                        f.name(),
                        lc.line,
                        lc.col
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
        out
    }
}

/// Writes the source line of `span`'s start with a caret line under the span.
fn render_snippet(out: &mut String, sources: &SourceMap, file: FileId, span: Span) {
    let f = sources.file(file);
    let lc = f.line_col(span.lo);
    let line = f.line_text(lc.line);
    // Show at most 200 columns around the caret so minified inputs stay readable.
    let start = (lc.col as usize - 1).saturating_sub(100).min(line.len());
    let end = (start + 200).min(line.len());
    let shown = &line[start..end];
    let text: String = shown
        .iter()
        .map(|&b| match b {
            b'\t' => ' ',
            0x20..=0x7e => b as char,
            _ => '?',
        })
        .collect();
    let caret_col = (lc.col as usize - 1 - start).min(text.len());
    let width = span
        .len()
        .clamp(1, text.len().saturating_sub(caret_col).max(1));
    let gutter = lc.line.to_string().len();
    let _ = writeln!(out, "{:>gutter$} | {}", lc.line, text.trim_end());
    let _ = writeln!(
        out,
        "{:>gutter$} | {}^{}",
        "",
        " ".repeat(caret_col),
        "~".repeat(width - 1)
    );
}

/// The line that ends a report cut at `--error-limit` errors (lld's wording).
pub(crate) const TOO_MANY_ERRORS: &str =
    "error: too many errors emitted, stopping now (use --error-limit=0 to see all errors)\n";

/// A sortable, limitable collection of diagnostics.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    items: Vec<Diagnostic>,
}

impl Diagnostics {
    /// An empty collection.
    pub fn new() -> Diagnostics {
        Diagnostics::default()
    }

    /// Adds one.
    pub fn push(&mut self, d: Diagnostic) {
        self.items.push(d);
    }

    /// Adds many.
    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        self.items.extend(ds);
    }

    /// Sorts into the deterministic report order.
    pub fn sort(&mut self) {
        self.items.sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
    }

    /// Number of errors.
    pub fn error_count(&self) -> usize {
        self.items.iter().filter(|d| d.is_error()).count()
    }

    /// True if any error is present.
    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Diagnostic::is_error)
    }

    /// All diagnostics in their current order.
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.items.iter()
    }

    /// Number of diagnostics.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Renders everything, stopping after `limit` errors (0 = no limit), the way lld's
    /// `--error-limit` does.
    pub fn render(&self, sources: &SourceMap, limit: usize) -> String {
        let mut out = String::new();
        let mut errors = 0;
        for d in &self.items {
            if d.is_error() {
                if limit != 0 && errors == limit {
                    out.push_str(TOO_MANY_ERRORS);
                    break;
                }
                errors += 1;
            }
            out.push_str(&d.render(sources));
        }
        out
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}
