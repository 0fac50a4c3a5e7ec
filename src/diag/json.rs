//! `ptxld check --format json`: the report as one JSON object on one line,
//! serialised with serde. The schema is documented in docs/diagnostics.md; [`VERSION`] changes
//! whenever a field changes meaning or goes away (new fields may be added without).
//!
//! ```json
//! {"version": 1, "ok": false, "diagnostics": [
//!   {"severity": "error", "code": "duplicate-symbol", "message": "duplicate symbol: f",
//!    "location": null,
//!    "notes": [{"message": "defined at", "location": {"file": "a.ptx", "line": 2, "column": 12}}],
//!    "help": null}]}
//! ```

use serde::Serialize;

use super::{CheckReport, Diagnostic, Location, Note, Report};

/// The version of the JSON schema.
pub const VERSION: u32 = 1;

/// The report.
#[derive(Serialize)]
struct JsonReport<'a> {
    version: u32,
    ok: bool,
    diagnostics: Vec<JsonDiagnostic<'a>>,
}

/// One diagnostic.
#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    severity: &'static str,
    code: &'static str,
    message: &'a str,
    location: Option<JsonLocation<'a>>,
    notes: Vec<JsonNote<'a>>,
    help: Option<&'a str>,
}

/// A note.
#[derive(Serialize)]
struct JsonNote<'a> {
    message: &'a str,
    location: Option<JsonLocation<'a>>,
}

/// A location: file name, 1-based line, 1-based column (in bytes).
#[derive(Serialize)]
struct JsonLocation<'a> {
    file: &'a str,
    line: u32,
    column: u32,
}

/// `l` as JSON; the report's locations are resolved, so an unresolved one (which has
/// no name to give) is left out.
fn location(l: &Option<Location>) -> Option<JsonLocation<'_>> {
    match l.as_ref()? {
        Location::Resolved(r) => Some(JsonLocation {
            file: &r.file,
            line: r.line,
            column: r.column,
        }),
        Location::Source { .. } => {
            debug_assert!(false, "an unresolved location in a JSON report");
            None
        }
    }
}

fn note(n: &Note) -> JsonNote<'_> {
    JsonNote {
        message: &n.message,
        location: location(&n.location),
    }
}

fn diagnostic(d: &Diagnostic) -> JsonDiagnostic<'_> {
    JsonDiagnostic {
        severity: d.severity.as_str(),
        code: d.code.as_str(),
        message: &d.message,
        location: location(&d.location),
        notes: d.notes.iter().map(note).collect(),
        help: d.help.as_deref(),
    }
}

impl Report {
    /// A link's report in the form of `ptxld check --json` (docs/diagnostics.md): `ok`
    /// when it has no error; one line, newline-terminated. Log lines are left out.
    pub fn to_json(&self) -> String {
        let report = JsonReport {
            version: VERSION,
            ok: !self.has_errors(),
            diagnostics: self.diagnostics().map(diagnostic).collect(),
        };
        let mut s = serde_json::to_string(&report).expect("the report serialises");
        s.push('\n');
        s
    }
}

impl CheckReport {
    /// The machine-readable report (docs/diagnostics.md): one line, newline-terminated.
    pub fn to_json(&self) -> String {
        let report = JsonReport {
            version: VERSION,
            ok: self.ok,
            diagnostics: self.diagnostics.iter().map(diagnostic).collect(),
        };
        let mut s = serde_json::to_string(&report).expect("the report serialises");
        s.push('\n');
        s
    }
}
