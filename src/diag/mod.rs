//! Diagnostics: one structured type for everything ptxld reports as an error, a
//! warning or a note (docs/diagnostics.md), from the lexer and parser through input
//! reading and the link to the output's write.
//!
//! A [`Diagnostic`] has a [`Severity`], a stable machine-readable [`Code`], a message,
//! an optional primary [`Location`], located [`Note`]s (`>>> defined at ...`) and an
//! optional help line. Phases collect diagnostics per file (possibly in parallel);
//! [`Diagnostics::sort`] puts them in a deterministic order before anything is
//! reported.
//!
//! Locations start as byte spans of a file of a [`SourceMap`] ([`Location::Source`]):
//! that is all the lexer, parser and linker know. Before the sources are dropped, the
//! driver resolves them ([`Diagnostic::resolve`]) into file names, line and column
//! and the source line of the snippet ([`Location::Resolved`]), so that what the
//! library returns ([`Report`], [`CheckReport`]) needs nothing else to be rendered.
//!
//! Rendering happens only at the edges: the command line, the
//! [`crate::build::Build`] API and `ptxld check`'s reporters, with the renderers of
//! [`render`] (lld's shape: `error: file:line:col: message`, the source line, a
//! caret) and [`json`] (`ptxld check --format json`).

use crate::input::InputError;
use crate::source::{FileId, SourceFile, SourceMap, Span};

pub mod json;
pub mod render;

pub use render::TOO_MANY_ERRORS;

/// How bad a diagnostic is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The input is rejected.
    Error,
    /// Reported, but the run continues and may succeed.
    Warning,
    /// Information only (`ptxld check`: where nvJitLink decides differently).
    Note,
}

impl Severity {
    /// The word reports use: `error`, `warning`, `note`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

/// Defines [`Code`], its list [`Code::ALL`] and its names ([`Code::as_str`]) from one
/// table, so that no code can be missing from the list.
macro_rules! codes {
    ($($(#[$attr:meta])* $variant:ident = $name:literal,)*) => {
        /// What kind of problem a diagnostic reports: a stable name for tools
        /// (`ptxld check --format json`), listed with its meaning in docs/diagnostics.md.
        #[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $($(#[$attr])* $variant,)*
        }

        impl Code {
            /// Every code, in the order of docs/diagnostics.md.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];

            /// The stable kebab-case name (`duplicate-symbol`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $name,)*
                }
            }
        }
    };
}

codes! {
    // Reading the inputs.
    /// An input or output could not be opened, read, mapped or written.
    Io = "io",
    /// An input is larger than ptxld can address (4 GiB - 1).
    InputTooLarge = "input-too-large",
    /// An input changed (or was cut short) while the link ran.
    InputChanged = "input-changed",
    /// The same file is given twice as an input.
    DuplicateInput = "duplicate-input",
    /// `-lNAME` is in none of the search directories.
    LibraryNotFound = "library-not-found",
    /// An archive (or a thin archive's member) cannot be read.
    Archive = "archive",
    /// A fatbin or ELF container is malformed or holds no usable PTX, or the ELF
    /// object cannot be built.
    Container = "container",
    /// An input is binary data that is neither PTX nor a container.
    BinaryInput = "binary-input",
    /// There is nothing to link.
    NoInput = "no-input",
    // The front end.
    /// The lexer or parser rejects the text.
    Syntax = "syntax",
    /// `.version` and `.target` are missing or not where PTX requires them.
    ModuleHeader = "module-header",
    /// An input holds no PTX at all.
    EmptyInput = "empty-input",
    /// A NUL byte ends the module before its end.
    NulByte = "nul-byte",
    /// A non-ASCII byte, which ptxas rejects.
    NonAscii = "non-ascii",
    /// A symbol is defined twice in one module.
    Redefinition = "redefinition",
    /// A function is declared `.extern` in a module that also declares or defines it
    /// without `.extern`, or is defined `.extern`; or a variable declared `.extern`
    /// is defined without a linkage directive.
    ExternConflict = "extern-conflict",
    /// A function or kernel is declared with one linkage (`.visible`, `.weak`, none)
    /// and declared or defined again with another.
    LinkageConflict = "linkage-conflict",
    /// A linkage directive where ptxas refuses it: `.common` on a function, a kernel
    /// or a variable outside `.global`.
    Linkage = "linkage",
    /// A name is declared as different kinds of symbol (function, kernel, variable).
    KindMismatch = "kind-mismatch",
    /// An initializer or `.alias` names a symbol the module does not declare.
    UndeclaredSymbol = "undeclared-symbol",
    /// A debug section refers to a label that does not exist.
    UndefinedLabel = "undefined-label",
    // The link.
    /// Two strong definitions of one symbol.
    DuplicateSymbol = "duplicate-symbol",
    /// Identical strong definitions of one symbol were folded into one
    /// (`--fold-identical`).
    FoldedIdentical = "folded-identical",
    /// A symbol is used but no module defines it.
    UndefinedSymbol = "undefined-symbol",
    /// A function is declared `.visible`/`.weak` but not defined in its module.
    DeclaredNotDefined = "declared-not-defined",
    /// The declarations of a function disagree on its parameters or return value.
    PrototypeMismatch = "prototype-mismatch",
    /// The declarations of a variable disagree on its size.
    SizeMismatch = "size-mismatch",
    /// The declarations of a variable disagree on its state space.
    StateSpaceMismatch = "state-space-mismatch",
    /// Modules (or a container entry and its PTX) disagree on the address size.
    AddressSize = "address-size",
    /// The modules' `.target`s (or `--arch`) do not combine.
    Target = "target",
    /// The modules' `.version`s (or `--ptx-version`) do not combine.
    Version = "version",
    /// A module uses an instruction, special register or directive that its own
    /// `.version` or `.target` does not have (ptxas refuses it).
    NewerThanHeader = "newer-than-header",
    /// What a link needs: the lowest PTX ISA version and target that have all it
    /// uses (`ptxld check`, a note).
    Needs = "needs",
    /// Modules that use textures disagree on the texture mode.
    Texmode = "texmode",
    /// A kernel parameter outside the `.param` state space.
    EntryParameterSpace = "entry-parameter-space",
    /// An initializer list with more elements than its array has.
    InitializerSize = "initializer-size",
    /// A variable declaration ptxas refuses: an initializer outside `.global` and
    /// `.const`, a `.pred` outside `.reg`, an array of unknown size.
    Declaration = "declaration",
    /// An `.alias` that ptxas refuses (its aliasee is not a defined, non-`.weak`
    /// `.func`, the alias has a body, or their prototypes differ).
    Alias = "alias",
    /// A call's arguments or return values do not match its callee's prototype in
    /// number, or a `.param` operand's layout differs from its formal parameter's.
    CallMismatch = "call-mismatch",
    /// Variables whose initializers refer to each other in a cycle.
    InitializerCycle = "initializer-cycle",
    /// A violation of the PTX ABI (NVIDIA's interoperability guide).
    Abi = "abi",
    /// Debug information is dropped.
    DebugInfo = "debug-info",
    /// Dead-code removal would keep nothing: no kernel, no exported symbol.
    GcKeepsNothing = "gc-keeps-nothing",
    /// `--fatal-warnings` turned the warnings into an error.
    FatalWarnings = "fatal-warnings",
    /// NVIDIA's nvJitLink decides differently from ptxld (`ptxld check`).
    NvjitlinkDiffers = "nvjitlink-differs",
    // Outputs and the command line.
    /// A file the link would write is a file it read, or another file it writes.
    SameFile = "same-file",
    /// The dependency file cannot name an input for make.
    Depfile = "depfile",
    /// The command line asks for something that cannot be done.
    Usage = "usage",
    /// The operating system refused a resource (threads).
    System = "system",
    // `--verify`.
    /// No ptxas to verify the output with.
    PtxasNotFound = "ptxas-not-found",
    /// No nvJitLink library to link cubins with.
    NvJitLinkNotFound = "nvjitlink-not-found",
    /// ptxas rejects or warns about the output, or cannot be run on it.
    Ptxas = "ptxas",
    /// nvJitLink cannot link the parts of a split assembly (`--split-kernels`).
    NvJitLink = "nvjitlink",
    /// A call's operand is something ptxas does not pass: a variable of another
    /// state space than `.param` and `.reg`, a module-scope symbol, a `.param`
    /// parameter of the calling function, or a name not declared in scope.
    CallArgument = "call-argument",
    /// An instruction's operand that ptxas refuses: too many or too few operands, a
    /// register whose type does not fit the instruction's, a number of the wrong
    /// kind, a variable where a register goes, an address in another state space,
    /// or a register used before (or without) its declaration. Only `ptxld check`
    /// looks.
    OperandType = "operand-type",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a diagnostic or a note points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A span of a file of a [`SourceMap`]: what the lexer, parser and linker know.
    Source {
        /// The file.
        file: FileId,
        /// The bytes pointed at.
        span: Span,
    },
    /// The same, resolved while the sources were at hand: renders without them.
    Resolved(Resolved),
}

/// A location as reports show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The file's name as messages give it (`lib.a(member.ptx)`).
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in bytes.
    pub column: u32,
    /// The source line under the location (primary locations only).
    pub snippet: Option<Snippet>,
}

/// The source line a primary location shows, with the caret under the location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snippet {
    /// At most 200 columns of the line around the caret, tabs as spaces and bytes
    /// other than printable ASCII as `?`, trailing blanks removed.
    pub text: String,
    /// The caret's column within `text`, 0-based.
    pub caret: usize,
    /// How many columns the caret line marks (at least 1).
    pub width: usize,
}

impl Location {
    /// The location resolved against `sources`, with the snippet if `snippet`.
    fn resolve(&mut self, sources: &SourceMap, snippet: bool) {
        if let Location::Source { file, span } = *self {
            *self = Location::Resolved(resolve(sources.file(file), span, snippet));
        }
    }

    /// The file id and span, while unresolved.
    pub fn source(&self) -> Option<(FileId, Span)> {
        match *self {
            Location::Source { file, span } => Some((file, span)),
            Location::Resolved(_) => None,
        }
    }
}

/// Resolves `span` of `f`: its name, line and column, and the snippet if asked for.
fn resolve(f: &SourceFile, span: Span, with_snippet: bool) -> Resolved {
    let lc = f.line_col(span.lo);
    Resolved {
        file: f.name().to_string(),
        line: lc.line,
        column: lc.col,
        snippet: with_snippet.then(|| snippet(f, lc.line, lc.col, span)),
    }
}

/// The snippet of `span`, whose start is at `line`:`col` of `f`.
fn snippet(f: &SourceFile, line: u32, col: u32, span: Span) -> Snippet {
    let text = f.line_text(line);
    // Show at most 200 columns around the caret so minified inputs stay readable.
    let start = (col as usize - 1).saturating_sub(100).min(text.len());
    let end = (start + 200).min(text.len());
    let shown: String = text[start..end]
        .iter()
        .map(|&b| match b {
            b'\t' => ' ',
            0x20..=0x7e => b as char,
            _ => '?',
        })
        .collect();
    let caret = (col as usize - 1 - start).min(shown.len());
    let width = span
        .len()
        .clamp(1, shown.len().saturating_sub(caret).max(1));
    Snippet {
        text: shown.trim_end().to_string(),
        caret,
        width,
    }
}

/// A secondary location attached to a diagnostic (`>>> defined at ...`), or a further
/// remark without one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Where, if the note has a location.
    pub location: Option<Location>,
    /// What it says.
    pub message: String,
}

/// One reported problem.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// Error, warning or note.
    pub severity: Severity,
    /// What kind of problem.
    pub code: Code,
    /// The message, starting lower-case, without a trailing period.
    pub message: String,
    /// Where, if the problem is at one place of one file.
    pub location: Option<Location>,
    /// Further locations and explanations.
    pub notes: Vec<Note>,
    /// What the user can do about it.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic without a location.
    pub fn new(severity: Severity, code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity,
            code,
            message: message.into(),
            location: None,
            notes: Vec::new(),
            help: None,
        }
    }

    /// An error at `span` in `file`.
    pub fn error(code: Code, file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message).at(file, span)
    }

    /// A warning at `span` in `file`.
    pub fn warning(code: Code, file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message).at(file, span)
    }

    /// An error with no source location.
    pub fn global_error(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Error, code, message)
    }

    /// A warning with no source location.
    pub fn global_warning(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(Severity::Warning, code, message)
    }

    /// Sets the primary location.
    pub fn at(mut self, file: FileId, span: Span) -> Diagnostic {
        self.location = Some(Location::Source { file, span });
        self
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds a located note.
    pub fn with_note(mut self, file: FileId, span: Span, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Note {
            location: Some(Location::Source { file, span }),
            message: message.into(),
        });
        self
    }

    /// Adds a note without a location.
    pub fn with_remark(mut self, message: impl Into<String>) -> Diagnostic {
        self.notes.push(Note {
            location: None,
            message: message.into(),
        });
        self
    }

    /// True for errors.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// The primary span, while the location is unresolved.
    pub fn span(&self) -> Option<Span> {
        self.location.as_ref()?.source().map(|(_, s)| s)
    }

    /// Resolves every location against `sources` (which must hold their files), so
    /// that the diagnostic renders without them. Resolved locations stay as they are.
    pub fn resolve(&mut self, sources: &SourceMap) {
        if let Some(l) = &mut self.location {
            l.resolve(sources, true);
        }
        for n in &mut self.notes {
            if let Some(l) = &mut n.location {
                l.resolve(sources, false);
            }
        }
    }

    /// [`Diagnostic::resolve`], by value.
    pub fn resolved(mut self, sources: &SourceMap) -> Diagnostic {
        self.resolve(sources);
        self
    }

    /// The order diagnostics are reported in: by file, then position, then text. A
    /// diagnostic without a primary location (`duplicate symbol: x`) is ordered by its
    /// first located note, so link errors come out in input order.
    fn sort_key(&self) -> (Option<FileId>, u32, u32, Severity, &str) {
        let at = match &self.location {
            Some(l) => l.source(),
            None => self
                .notes
                .iter()
                .find_map(|n| n.location.as_ref().and_then(Location::source)),
        };
        let (file, span) = at.map_or((None, Span::default()), |(f, s)| (Some(f), s));
        (file, span.lo, span.hi, self.severity, &self.message)
    }
}

impl From<&InputError> for Diagnostic {
    /// An input that cannot be read, as a diagnostic (the message names the file).
    fn from(e: &InputError) -> Diagnostic {
        let code = match e {
            InputError::TooLarge { .. } => Code::InputTooLarge,
            InputError::Changed { .. } => Code::InputChanged,
            _ => Code::Io,
        };
        Diagnostic::global_error(code, e.to_string())
    }
}

/// A sortable collection of diagnostics.
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

    /// Resolves every location against `sources` (see [`Diagnostic::resolve`]).
    pub fn resolve(&mut self, sources: &SourceMap) {
        for d in &mut self.items {
            d.resolve(sources);
        }
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// One thing a link reports, in the order it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A diagnostic, resolved.
    Diagnostic(Diagnostic),
    /// Lines that are not diagnostics: `--verbose` member choices, `--stats`,
    /// `--trace-symbol`, `--why-live`, `--print-gc-sections`; each ends with a newline.
    Log(String),
}

/// What a link reports: its diagnostics, resolved, and its log lines, in the order
/// they happened, with the `--error-limit` they are to be shown under. Rendered by
/// the command line and the [`crate::build::Build`] API ([`Report::render`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    entries: Vec<Entry>,
    /// Errors shown before the rest is left out (0: no limit).
    error_limit: usize,
}

impl Report {
    /// An empty report, without an error limit.
    pub fn new() -> Report {
        Report::default()
    }

    /// A report of one usage error without a location (options or inputs an embedder
    /// refused before a link: the C API, the Python package).
    pub fn usage(message: &str) -> Report {
        Report::of(Diagnostic::global_error(Code::Usage, message))
    }

    /// A report of one diagnostic.
    pub fn of(d: Diagnostic) -> Report {
        let mut r = Report::new();
        r.push(d);
        r
    }

    /// Adds a diagnostic, which should be resolved ([`Diagnostic::resolve`]).
    pub fn push(&mut self, d: Diagnostic) {
        self.entries.push(Entry::Diagnostic(d));
    }

    /// Adds diagnostics, resolving them against `sources`.
    pub fn extend_resolved(
        &mut self,
        ds: impl IntoIterator<Item = Diagnostic>,
        sources: &SourceMap,
    ) {
        self.entries.extend(
            ds.into_iter()
                .map(|d| Entry::Diagnostic(d.resolved(sources))),
        );
    }

    /// Adds log text (nothing if empty).
    pub fn log(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !text.is_empty() {
            self.entries.push(Entry::Log(text));
        }
    }

    /// Adds everything `other` reports, after what this one does.
    pub fn append(&mut self, other: Report) {
        self.entries.extend(other.entries);
    }

    /// Everything, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The diagnostics, in order.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Diagnostic(d) => Some(d),
            Entry::Log(_) => None,
        })
    }

    /// True if any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics().any(Diagnostic::is_error)
    }

    /// True if there is nothing to report.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The errors shown before the rest is left out (0: no limit).
    pub fn error_limit(&self) -> usize {
        self.error_limit
    }

    /// Sets the error limit (`--error-limit`; 0: no limit).
    pub fn set_error_limit(&mut self, limit: usize) {
        self.error_limit = limit;
    }
}

/// What `ptxld check` found, for its text and JSON reporters
/// ([`CheckReport::to_text`], [`CheckReport::to_json`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckReport {
    /// Every finding, resolved: the link's errors and warnings (ABI warnings
    /// included), then the notes on where nvJitLink decides differently, then ptxas's
    /// messages (`--verify`, after a missing ptxas first); or, when the
    /// inputs could not be read or parsed, the diagnostics that say why.
    pub diagnostics: Vec<Diagnostic>,
    /// False when the inputs could not be read or parsed, so that nothing was linked:
    /// the text report then shows the diagnostics as a link does, with source lines.
    pub linked: bool,
    /// Whether the set links: no error, and no warning under `--fatal-warnings`.
    pub ok: bool,
    /// `--error-limit`, for the diagnostics of inputs that could not be read or parsed.
    pub error_limit: usize,
}

impl CheckReport {
    /// The number of diagnostics of `severity`.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_a_unique_kebab_case_name_documented_in_the_table() {
        let docs = include_str!("../../docs/diagnostics.md");
        // The table of codes is the last section.
        let docs = &docs[docs.find("\n## Codes\n").expect("a Codes section")..];
        let mut seen = std::collections::HashSet::new();
        for &code in Code::ALL {
            let name = code.as_str();
            assert!(seen.insert(name), "{name} is used twice");
            assert!(
                !name.is_empty()
                    && !name.starts_with('-')
                    && !name.ends_with('-')
                    && !name.contains("--")
                    && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{name} is not kebab-case"
            );
            assert!(
                docs.lines()
                    .any(|l| l.starts_with(&format!("| `{name}` |"))),
                "{name} has no row in docs/diagnostics.md"
            );
        }
        // Every documented code exists: the docs cannot list one the code lost.
        let documented = docs
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |"))
            .map(|(name, _)| name)
            .filter(|name| name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'));
        for name in documented {
            assert!(
                seen.contains(name),
                "docs/diagnostics.md lists unknown code {name}"
            );
        }
    }
}
