//! ptxas on the link's output: `--verify`, which assembles each target's output
//! before it is written, and machine code (`--emit cubin`, `--gpu-code sm_NN`), which
//! keeps what ptxas writes. ptxas's messages point at the inputs the offending lines
//! came from.
//!
//! ptxld checks what linking needs (symbols, prototypes, headers), not every
//! instruction; ptxas does. Each target's text is written into a private temporary
//! folder the way the output is written (streamed from the inputs, never a second
//! copy in memory), ptxas runs on it (`ptxas -arch=sm_XX FILE -o FILE.cubin`, the
//! targets in parallel, as many at once as the link has threads), and the folder is
//! removed. A message about line N of that text becomes a [`Diagnostic`] at the input
//! byte that line was spliced from ([`crate::write::origin`]), with a note naming the
//! target and the output line.
//!
//! The files of this module: `find.rs` (which ptxas), `messages.rs` (ptxas's output,
//! parsed).

mod find;
mod messages;
pub(crate) mod nvjitlink;

use std::path::Path;
use std::process::{Command, Stdio};

use rustc_hash::FxHashMap;

use crate::diag::{Code, Diagnostic, Diagnostics, Location, Severity};
use crate::input::InputError;
use crate::ir::Module;
use crate::options::Arch;
use crate::source::{FileId, SourceMap, Span};
use crate::write::layout::module_sources;
use crate::write::origin::line_origins;
use crate::write::rope::{ModuleText, Rope};
use crate::write::RemovedOnSignal;

pub use find::{find_ptxas, ENV};
use messages::{parse, Message, ABORTED};

/// One output to assemble: a target's text and its architecture.
pub(crate) struct Target<'a> {
    /// The text, as written to the output.
    pub rope: &'a Rope,
    /// `-arch` for ptxas: the output's `.target`.
    pub arch: Arch,
    /// Whether the cubin is wanted (otherwise ptxas only checks the text).
    pub keep: bool,
    /// For a part of a split assembly (`--split-kernels`): which of how many. A
    /// part is assembled for a later link: `ptxas -ewp` (extensible whole program: whole
    /// program code, with the variables other parts define left to nvJitLink).
    pub part: Option<(usize, usize)>,
}

impl Target<'_> {
    /// The target as notes name it: `sm_80`, `sm_80 part 2 of 4`.
    fn describe(&self) -> String {
        match self.part {
            Some((i, n)) => format!("{} part {} of {n}", self.arch, i + 1),
            None => self.arch.to_string(),
        }
    }
}

/// What ptxas made of the targets.
pub(crate) struct Assembled {
    /// What it reported, unresolved: one diagnostic per message, the same message at
    /// the same input place for several targets once, with a note for each target.
    pub diagnostics: Diagnostics,
    /// Each target's cubin where it was kept and ptxas succeeded.
    pub cubins: Vec<Option<Vec<u8>>>,
}

/// Runs `ptxas` with `options` on every target's text (the ropes refer to
/// `modules`, parsed from `sources`).
pub(crate) fn assemble(
    ptxas: &Path,
    options: &[String],
    targets: &[Target<'_>],
    sources: &SourceMap,
    modules: &[Module],
) -> Assembled {
    let mut out = Diagnostics::new();
    let mut cubins = Vec::with_capacity(targets.len());
    let dir = match tempfile::Builder::new().prefix("ptxld-verify-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            out.push(Diagnostic::global_error(
                Code::Io,
                format!("cannot make a temporary folder for ptxas: {e}"),
            ));
            return Assembled {
                diagnostics: out,
                cubins: targets.iter().map(|_| None).collect(),
            };
        }
    };
    let srcs = module_sources(sources, modules);
    let at = |line: &Located| line.resolve(sources, modules);
    // ptxas on a large output takes as much memory as a link: no more runs at once
    // than the link has threads.
    let at_once = rayon::current_num_threads().max(1);
    let mut found: Vec<Vec<Diagnostic>> = Vec::with_capacity(targets.len());
    for (batch, group) in targets.chunks(at_once).enumerate() {
        let (dir, srcs) = (dir.path(), &srcs[..]);
        std::thread::scope(|s| {
            let runs: Vec<_> = group
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    s.spawn(move || run(ptxas, options, dir, batch * at_once + i, t, srcs))
                })
                .collect();
            for r in runs {
                let run = r.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
                match run {
                    Ok(mut r) => {
                        cubins.push(r.cubin.take());
                        found.push(r.diagnostics(&at));
                    }
                    Err(d) => {
                        cubins.push(None);
                        found.push(vec![*d]);
                    }
                }
            }
        });
    }
    // Removing the folder may fail only where nothing can be done about it.
    let _ = dir.close();
    out.extend(merged(found.into_iter().flatten()));
    Assembled {
        diagnostics: out,
        cubins,
    }
}

/// What ptxas said about one target.
struct Run<'r> {
    /// The target as notes name it ([`Target::describe`]).
    target: String,
    /// What its lines are lines of: `output`, or `part` of a split assembly.
    text: &'static str,
    /// Its standard error then its standard output, as text.
    output: String,
    status: std::process::ExitStatus,
    /// The text it read, to place its lines.
    rope: &'r Rope,
    srcs: &'r [ModuleText<'r>],
    /// The cubin, where it was wanted and ptxas wrote one.
    cubin: Option<Vec<u8>>,
}

/// Writes target `t` (the `index`th) into `dir` and runs ptxas on it.
fn run<'r>(
    ptxas: &Path,
    options: &[String],
    dir: &Path,
    index: usize,
    t: &Target<'r>,
    srcs: &'r [ModuleText<'r>],
) -> Result<Run<'r>, Box<Diagnostic>> {
    let name = format!("{index}-{}", t.arch);
    let ptx = dir.join(format!("{name}.ptx"));
    let cubin = dir.join(format!("{name}.cubin"));
    // Removed by the command line's signal handler too (the folder itself, empty,
    // stays behind then).
    let _registered = [&ptx, &cubin].map(|f| RemovedOnSignal::new(f));
    let written =
        std::fs::File::create_new(&ptx).and_then(|f| t.rope.write_to(srcs, &mut &f, Some(&f)));
    if let Err(e) = written {
        // An input cut short since it was read is reported as such.
        return Err(Box::new(
            match e.get_ref().and_then(|e| e.downcast_ref::<InputError>()) {
                Some(input) => Diagnostic::from(input),
                None => Diagnostic::global_error(
                    Code::Io,
                    format!(
                        "cannot write the output for {} to {} for ptxas: {e}",
                        t.arch,
                        ptx.display()
                    ),
                ),
            },
        ));
    }
    let done = Command::new(ptxas)
        .arg(format!("-arch={}", t.arch))
        .args(t.part.map(|_| "-ewp"))
        .args(options)
        .arg(&ptx)
        .arg("-o")
        .arg(&cubin)
        .stdin(Stdio::null())
        .output();
    let kept = match &done {
        Ok(d) if t.keep && d.status.success() => std::fs::read(&cubin).ok(),
        _ => None,
    };
    // A target's text may be gigabytes: gone as soon as ptxas is done with it, not
    // when every target is.
    for f in [&ptx, &cubin] {
        let _ = std::fs::remove_file(f);
    }
    let done = done.map_err(|e| {
        Box::new(Diagnostic::global_error(
            Code::Ptxas,
            format!("cannot run {}: {e}", ptxas.display()),
        ))
    })?;
    let mut output = String::from_utf8_lossy(&done.stderr).into_owned();
    output.push('\n');
    output.push_str(&String::from_utf8_lossy(&done.stdout));
    Ok(Run {
        target: t.describe(),
        text: if t.part.is_some() { "part" } else { "output" },
        output,
        status: done.status,
        rope: t.rope,
        srcs,
        cubin: kept,
    })
}

/// Where a message about an output line points.
enum Located {
    /// The input byte the line's text came from.
    Input { module: u32, offset: u32 },
    /// A line ptxld wrote itself, from no input (the merged header).
    Generated,
    /// No line (`ptxas fatal : ...`).
    Nowhere,
}

impl Located {
    /// The file and the span the diagnostic shows: from the byte to the end of its
    /// statement (`;`) or of its line.
    fn resolve(&self, sources: &SourceMap, modules: &[Module]) -> Option<(FileId, Span)> {
        let &Located::Input { module, offset } = self else {
            return None;
        };
        let file = modules[module as usize].file;
        let text = sources.file(file).bytes();
        let rest = &text[offset as usize..];
        let line = rest
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .unwrap_or(rest.len());
        let end = rest[..line]
            .iter()
            .position(|&b| b == b';')
            .map_or(line, |i| i + 1);
        let len = rest[..end]
            .iter()
            .rposition(|&b| b != b' ' && b != b'\t')
            .map_or(0, |i| i + 1);
        Some((file, Span::new(offset, offset + len as u32)))
    }
}

impl Run<'_> {
    /// One diagnostic per message; `at` places a message's output line.
    fn diagnostics(&self, at: &dyn Fn(&Located) -> Option<(FileId, Span)>) -> Vec<Diagnostic> {
        let mut messages = parse(&self.output);
        // ptxas ends a failure with "Ptx assembly aborted due to errors", which says
        // nothing the errors before it do not.
        let errors = |ms: &[Message]| ms.iter().filter(|m| m.severity == Severity::Error).count();
        if errors(&messages) > 1 {
            messages.retain(|m| !(m.line.is_none() && m.text == ABORTED));
        }
        let lines: Vec<u64> = messages.iter().filter_map(|m| m.line).collect();
        let origins = line_origins(self.rope, self.srcs, &lines);
        let mut origins = origins.into_iter();
        let mut out: Vec<Diagnostic> = messages
            .iter()
            .map(|m| {
                let located = match m.line {
                    None => Located::Nowhere,
                    Some(_) => match origins.next().flatten() {
                        Some(b) => Located::Input {
                            module: b.module,
                            offset: b.offset,
                        },
                        None => Located::Generated,
                    },
                };
                let mut d = Diagnostic::new(m.severity, Code::Ptxas, format!("ptxas: {}", m.text));
                if let Some((file, span)) = at(&located) {
                    d = d.at(file, span);
                }
                let (target, text) = (&self.target, self.text);
                d.with_remark(match (m.line, located) {
                    (Some(n), Located::Input { .. }) => format!("target {target}, {text} line {n}"),
                    (Some(n), _) => format!(
                        "target {target}, <{text}> line {n} (text ptxld wrote itself, from no \
                         input)"
                    ),
                    (None, _) => format!("target {target}"),
                })
            })
            .collect();
        if !self.status.success() && errors(&messages) == 0 {
            out.push(
                Diagnostic::global_error(
                    Code::Ptxas,
                    format!(
                        "ptxas failed on the output for {} ({})",
                        self.target, self.status
                    ),
                )
                .with_remark(format!("target {}", self.target)),
            );
        }
        out
    }
}

/// `found` with each message that several targets report at the same place kept
/// once, with the notes of all of them, in the order first found.
fn merged(found: impl IntoIterator<Item = Diagnostic>) -> Vec<Diagnostic> {
    type Key = (Severity, String, Option<(FileId, Span)>);
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut seen: FxHashMap<Key, usize> = FxHashMap::default();
    for d in found {
        let place = d.location.as_ref().and_then(Location::source);
        let key = (d.severity, d.message.clone(), place);
        match seen.get(&key) {
            Some(&i) => out[i].notes.extend(d.notes),
            None => {
                seen.insert(key, out.len());
                out.push(d);
            }
        }
    }
    out
}
