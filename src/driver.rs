//! One link job from start to finish, shared by the command line and the
//! [`crate::build::Build`] API: resolve `-l`, read inputs and archives, choose archive
//! members (GNU ld rules, [`crate::select`]), link once per target, wrap the result
//! (PTX, fatbin or ELF object), write it atomically, and write the dependency file.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::diag::Diagnostics;
use crate::frontend::{parse_units, LoadOptions, Unit};
use crate::input::archive;
use crate::input::{
    file_key, open_path, read_opened, read_path_and_metadata, Bytes, FileKey, InputError, Opened,
};
use crate::ir::Module;
use crate::link::{link, module_sources, GcOptions, HeaderOptions, LinkOptions, Linked, Rope};
use crate::parse::parse_arch;
use crate::select::{needs, select, Needs, Piece};
use crate::source::SourceMap;
use crate::timing::{PhaseTime, Stopwatch};
use crate::write::elf::write_host_object;
use crate::write::fatbin::{self, PtxEntry};
use crate::write::Emit;

/// One command-line input item, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputSpec {
    /// A PTX file, container or archive.
    File(PathBuf),
    /// `-lNAME` (`libNAME.a` in the search directories) or `-l:FILE` (given as `:FILE`).
    Lib(std::ffi::OsString),
    /// `--whole-archive` (true) / `--no-whole-archive` (false).
    WholeArchive(bool),
    /// `--start-group` (true) / `--end-group` (false).
    Group(bool),
}

/// Everything a link needs to know.
#[derive(Clone, Debug)]
pub struct Job {
    /// Inputs in command-line order.
    pub inputs: Vec<InputSpec>,
    /// `-L` directories, in order.
    pub lib_dirs: Vec<PathBuf>,
    /// `-u` symbols.
    pub undefined: Vec<String>,
    /// `-o`; `-` is standard output.
    pub output: PathBuf,
    /// `--emit`; `None` chooses by the output's extension.
    pub emit: Option<Emit>,
    /// `--arch`, possibly several (one fatbin entry each).
    pub archs: Vec<String>,
    /// `--ptx-version`.
    pub ptx_version: Option<(u32, u32)>,
    /// `--symbol` base name for objects.
    pub symbol: String,
    /// `--error-limit` (0 = none).
    pub error_limit: usize,
    /// `--fatal-warnings`.
    pub fatal_warnings: bool,
    /// `--verbose`: report which archive member was loaded for which symbol.
    pub verbose: bool,
    /// `--dependency-file`.
    pub depfile: Option<PathBuf>,
    /// Further files the job depended on (response files), for the depfile.
    pub extra_deps: Vec<PathBuf>,
    /// `--gc-sections`: remove what no kernel, `--export` or `-u` symbol reaches.
    pub gc_sections: bool,
    /// `--export SYM`: kept by `--gc-sections`.
    pub exports: Vec<String>,
    /// `--export-all`: every `.visible` symbol is kept by `--gc-sections`.
    pub export_all: bool,
    /// `--print-gc-sections`: list what `--gc-sections` removed.
    pub print_gc_sections: bool,
    /// `-Map FILE`: write the link map there.
    pub map_file: Option<PathBuf>,
    /// `--print-map`: print the link map on standard output.
    pub print_map: bool,
    /// `--trace-symbol` / `-y` names.
    pub trace: Vec<String>,
    /// `--why-live` names (with `--gc-sections`).
    pub why_live: Vec<String>,
    /// `--strip-debug`.
    pub strip_debug: bool,
    /// `--stats`: report the wall and CPU time of each phase and the peak memory.
    pub stats: bool,
}

impl Job {
    /// The files named as inputs (not `-l` libraries), in order.
    pub fn input_files(&self) -> Vec<PathBuf> {
        self.inputs
            .iter()
            .filter_map(|i| match i {
                InputSpec::File(p) => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    /// A job with defaults: PTX by extension, error limit 20, symbol base `ptxld`.
    pub fn new(output: impl Into<PathBuf>) -> Job {
        Job {
            inputs: Vec::new(),
            lib_dirs: Vec::new(),
            undefined: Vec::new(),
            output: output.into(),
            emit: None,
            archs: Vec::new(),
            ptx_version: None,
            symbol: "ptxld".to_string(),
            error_limit: 20,
            fatal_warnings: false,
            verbose: false,
            depfile: None,
            extra_deps: Vec::new(),
            gc_sections: false,
            exports: Vec::new(),
            export_all: false,
            print_gc_sections: false,
            map_file: None,
            print_map: false,
            trace: Vec::new(),
            why_live: Vec::new(),
            strip_debug: false,
            stats: false,
        }
    }
}

/// A finished link.
#[derive(Debug)]
pub struct Outcome {
    /// What was (or, for [`link_job`], would be) written to the output.
    output: Output,
    /// Rendered warnings and `--verbose` lines (empty when there is nothing to say).
    pub messages: String,
    /// Every file read: inputs, archives, response files.
    pub files_read: Vec<PathBuf>,
    /// The link map (of the first target), if `-Map` or `--print-map` asked for it.
    pub map: Option<String>,
    /// The inputs' size and time when read.
    stamps: Vec<Stamp>,
}

/// The output of a link, not yet written.
enum Output {
    /// Assembled bytes (containers).
    Bytes(Vec<u8>),
    /// A merged PTX module as ranges of its inputs, with the sources it refers to.
    Ptx {
        rope: Rope,
        sources: SourceMap,
        /// The modules whose sources the rope's pieces refer to, in module order.
        /// Kept rather than freed module by module: the command line exits without
        /// freeing what the operating system reclaims anyway.
        modules: Vec<Module>,
    },
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Output::Ptx { rope, .. } => write!(f, "Ptx({} bytes)", rope.len()),
        }
    }
}

impl Outcome {
    /// What was (or, for [`link_job`], would be) written to the output, as one buffer.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.output {
            Output::Bytes(b) => b.clone(),
            Output::Ptx { rope, .. } => rope.to_vec(&self.srcs()),
        }
    }

    /// Like [`Outcome::bytes`], without a copy where the output is already one buffer.
    pub fn into_bytes(self) -> Vec<u8> {
        match self.output {
            Output::Bytes(b) => b,
            Output::Ptx { .. } => self.bytes(),
        }
    }

    /// The output's length in bytes.
    pub fn len(&self) -> u64 {
        match &self.output {
            Output::Bytes(b) => b.len() as u64,
            Output::Ptx { rope, .. } => rope.len(),
        }
    }

    /// True if the output is empty (a link never produces an empty output).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes the output to `w`: PTX straight from the mapped inputs, in large
    /// vectored writes.
    /// `file` is the file `w` writes to, if it is one: large pieces of the inputs
    /// are then copied into it by the kernel.
    pub fn write_to(
        &self,
        w: &mut dyn std::io::Write,
        file: Option<&std::fs::File>,
    ) -> std::io::Result<()> {
        self.write_to_then(w, file, &|| {})
    }

    /// Like [`Outcome::write_to`], calling `after_reads` once the inputs are not
    /// read any more (see [`crate::link::Rope::write_to_then`]; at once for an
    /// output held in memory).
    pub fn write_to_then(
        &self,
        w: &mut dyn std::io::Write,
        file: Option<&std::fs::File>,
        after_reads: &(dyn Fn() + Sync),
    ) -> std::io::Result<()> {
        match &self.output {
            Output::Bytes(b) => {
                after_reads();
                w.write_all(b)
            }
            Output::Ptx { rope, .. } => rope.write_to_then(&self.srcs(), w, file, after_reads),
        }
    }

    /// The inputs of a merged PTX output (`None` for containers, which own their
    /// bytes).
    pub fn sources(&self) -> Option<&SourceMap> {
        match &self.output {
            Output::Bytes(_) => None,
            Output::Ptx { sources, .. } => Some(sources),
        }
    }

    fn srcs(&self) -> Vec<crate::link::ModuleText<'_>> {
        match &self.output {
            Output::Bytes(_) => Vec::new(),
            Output::Ptx {
                sources, modules, ..
            } => module_sources(sources, modules),
        }
    }
}

/// A failed link: the rendered diagnostics.
#[derive(Debug)]
pub struct Failure {
    /// The diagnostics, as printed.
    pub messages: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.messages.trim_end())
    }
}

impl std::error::Error for Failure {}

pub(crate) fn fail(msg: impl Into<String>) -> Failure {
    Failure {
        messages: format!("error: {}\n", msg.into()),
    }
}

/// Finds `-lNAME` / `-l:FILE` in the search directories.
fn find_lib(name: &std::ffi::OsStr, dirs: &[PathBuf]) -> Result<PathBuf, Failure> {
    let bytes = crate::path_bytes::bytes_of(name);
    let file: std::ffi::OsString = match bytes.strip_prefix(b":") {
        Some(f) => crate::path_bytes::from_bytes(f),
        None => {
            let mut f = std::ffi::OsString::from("lib");
            f.push(name);
            f.push(".a");
            f
        }
    };
    for d in dirs {
        let p = d.join(&file);
        if p.is_file() {
            return Ok(p);
        }
    }
    let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    Err(fail(format!(
        "unable to find library -l{} ({}); searched: {}",
        name.to_string_lossy(),
        file.to_string_lossy(),
        if searched.is_empty() {
            "no directories (add one with -L DIR)".to_string()
        } else {
            searched.join(", ")
        }
    )))
}

/// Inputs read and laid out for selection.
struct Plan {
    units: Vec<Unit>,
    pieces: Vec<Piece>,
    files_read: Vec<PathBuf>,
    /// Time spent reading (mapping) the inputs, for `--stats`.
    read_time: Option<PhaseTime>,
}

/// A file read by a link: its size and modification time, to notice a file that
/// changes while the link runs (a build writing it concurrently), taken when the file
/// is read, from the open file ([`plan_stamped`]), and again just before the output is
/// written ([`run`]); and its identity, so that no file the link writes is one it
/// read ([`check_destinations`]).
#[derive(Clone, Debug)]
struct Stamp {
    path: PathBuf,
    /// How the file came to be read, for messages.
    source: Source,
    /// Device and inode when read.
    key: Option<FileKey>,
    /// Size and modification time when read.
    state: Option<(u64, std::time::SystemTime)>,
}

/// How a file came to be read.
#[derive(Clone, Debug)]
enum Source {
    /// Named as an input (or found inside one).
    Input,
    /// Found through `-lNAME` (holds `NAME`).
    Library(std::ffi::OsString),
    /// A response file (`@FILE`).
    ResponseFile,
}

impl Stamp {
    /// The file as messages name it: `input lib/libk.a (found through -lk)`.
    fn describe(&self) -> String {
        let path = self.path.display();
        match &self.source {
            Source::Input => format!("input {path}"),
            Source::Library(name) => {
                format!("input {path} (found through -l{})", name.to_string_lossy())
            }
            Source::ResponseFile => format!("response file {path}"),
        }
    }
}

/// `path`'s stamp now.
fn stamp(path: &Path) -> Stamp {
    stamp_of(path, std::fs::metadata(path).ok())
}

/// The stamp of input `path`, from its metadata `meta` as read.
fn stamp_of(path: &Path, meta: Option<std::fs::Metadata>) -> Stamp {
    Stamp {
        path: path.to_path_buf(),
        source: Source::Input,
        key: meta.as_ref().and_then(|m| file_key(path, Some(m))),
        state: meta.and_then(|m| Some((m.len(), m.modified().ok()?))),
    }
}

/// The read errors of one link, reported as diagnostics are: after `--error-limit`
/// errors (0: no limit), one line says the rest are left out.
struct ReadErrors {
    text: String,
    count: usize,
    limit: usize,
}

impl ReadErrors {
    fn new(limit: usize) -> ReadErrors {
        ReadErrors {
            text: String::new(),
            count: 0,
            limit,
        }
    }

    fn push(&mut self, message: impl std::fmt::Display) {
        if self.limit == 0 || self.count < self.limit {
            self.text.push_str(&format!("error: {message}\n"));
        } else if self.count == self.limit {
            self.text.push_str(crate::diag::TOO_MANY_ERRORS);
        }
        self.count += 1;
    }
}

impl Plan {
    /// Reads a member of a thin archive from `file`, as any input is read: the
    /// file is stamped and listed among the files read.
    fn read_member(&mut self, file: &Path, stamps: &mut Vec<Stamp>) -> Result<Bytes, InputError> {
        let (bytes, meta) = read_path_and_metadata(file)?;
        self.record(file, meta, Source::Input, stamps);
        Ok(bytes)
    }

    /// Records `path` among the files read and, for a regular file (`meta` as read),
    /// its stamp.
    fn record(
        &mut self,
        path: &Path,
        meta: Option<std::fs::Metadata>,
        source: Source,
        stamps: &mut Vec<Stamp>,
    ) {
        self.files_read.push(path.to_path_buf());
        if meta.is_some() {
            stamps.push(Stamp {
                source,
                ..stamp_of(path, meta)
            });
        }
    }

    /// Adds thin archive `name`, read from `path` (its bytes `data`): its members
    /// are read from their own files, found relative to the archive's directory as
    /// GNU ld finds them, and become units of one archive piece. A member that GNU
    /// ar took from a normal archive is taken from that archive, read once.
    /// Unreadable members are read errors, added to `errors`.
    #[allow(clippy::too_many_arguments)]
    fn add_thin(
        &mut self,
        name: String,
        path: &Path,
        data: &[u8],
        whole: bool,
        group: Option<u32>,
        stamps: &mut Vec<Stamp>,
        errors: &mut ReadErrors,
    ) -> Result<(), Failure> {
        let entries = archive::thin_members(data).map_err(|e| fail(format!("{name}: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut nested: std::collections::HashMap<PathBuf, Option<Bytes>> = Default::default();
        let first = self.units.len();
        let mut modules = Vec::new();
        for entry in entries {
            let file = dir.join(&entry.path);
            let missing = |e: &dyn std::fmt::Display| {
                format!(
                    "{name}: member {}: {e}; a thin archive holds only the paths of its \
                     members, relative to its own directory: restore the file or rebuild \
                     the archive",
                    entry.path.display()
                )
            };
            modules.clear();
            match entry.nested {
                None => match self.read_member(&file, stamps) {
                    Ok(bytes) => archive::split_member(
                        format!("{name}({})", file.display()),
                        bytes.as_slice(),
                        &mut modules,
                    ),
                    Err(e) => {
                        errors.push(missing(&e));
                        continue;
                    }
                },
                Some(offset) => {
                    if !nested.contains_key(&file) {
                        let read = self.read_member(&file, stamps);
                        if let Err(e) = &read {
                            errors.push(missing(e));
                        }
                        nested.insert(file.clone(), read.ok());
                    }
                    let Some(Some(outer)) = nested.get(&file) else {
                        continue;
                    };
                    match archive::member_at(outer.as_slice(), offset) {
                        Ok((member, bytes)) => archive::split_member(
                            format!("{}({member})", file.display()),
                            bytes,
                            &mut modules,
                        ),
                        Err(e) => {
                            errors.push(missing(&format!("{}: {e}", file.display())));
                            continue;
                        }
                    }
                }
            }
            for m in modules.drain(..) {
                self.units.push(Unit {
                    name: m.name,
                    path: Some(file.clone()),
                    bytes: Bytes::Owned(m.bytes),
                });
            }
        }
        self.close_archive(name, first, whole, group);
        Ok(())
    }

    /// Makes the units from `first` on the members of archive `name`.
    fn close_archive(&mut self, name: String, first: usize, whole: bool, group: Option<u32>) {
        self.pieces.push(Piece::Archive {
            name,
            members: (first..self.units.len()).collect(),
            whole,
            group,
        });
    }

    /// Adds one input: an archive's members become units of one archive piece,
    /// anything else one unit of its own.
    fn add(
        &mut self,
        name: String,
        path: Option<PathBuf>,
        bytes: Bytes,
        whole: bool,
        group: Option<u32>,
    ) -> Result<(), Failure> {
        if !archive::is_archive(bytes.head()) {
            self.pieces.push(Piece::Object(self.units.len(), group));
            self.units.push(Unit { name, path, bytes });
            return Ok(());
        }
        let members =
            archive::members(bytes.as_slice()).map_err(|e| fail(format!("{name}: {e}")))?;
        let first = self.units.len();
        for m in members {
            self.units.push(Unit {
                name: format!("{name}({})", m.name),
                path: path.clone(),
                bytes: Bytes::Owned(m.bytes),
            });
        }
        self.close_archive(name, first, whole, group);
        Ok(())
    }
}

/// A named input as the parallel first pass leaves it: a regular file read (mapped),
/// or anything else opened, to be read in order.
enum Opening {
    Read((Bytes, Option<std::fs::Metadata>)),
    Later(Opened),
}

fn plan(job: &Job) -> Result<Plan, Failure> {
    plan_stamped(job, &mut Vec::new())
}

/// Reads the inputs of `job` one after the other, in command-line order, on the
/// calling thread, and adds to `stamps` the stamp of every regular file read (inputs
/// and archives, from the open file, so it describes exactly the bytes mapped) and of
/// the response files. Standard input, pipes and FIFOs get none: what was read from
/// them cannot change.
fn plan_stamped(job: &Job, stamps: &mut Vec<Stamp>) -> Result<Plan, Failure> {
    let start = Stopwatch::start();
    let mut p = Plan {
        units: Vec::new(),
        pieces: Vec::new(),
        files_read: job.extra_deps.clone(),
        read_time: Default::default(),
    };
    // Named files are opened in parallel first, and regular files mapped (opening
    // and mapping thousands of files is a good part of a link); everything else
    // (archives found with `-l`, FIFOs and devices, already open, and standard
    // input) is read below, in order. Opening never blocks, even on a FIFO.
    let mut mapped: Vec<Option<Result<_, _>>> = job
        .inputs
        .par_iter()
        .map(|spec| match spec {
            InputSpec::File(f) if f != Path::new("-") => Some(open_path(f).and_then(|o| {
                Ok(if o.is_file() {
                    Opening::Read(read_opened(f, o)?)
                } else {
                    Opening::Later(o)
                })
            })),
            _ => None,
        })
        .collect();
    // Response files were read while parsing the arguments; this is as early as the
    // driver sees them.
    stamps.extend(job.extra_deps.iter().map(|f| Stamp {
        source: Source::ResponseFile,
        ..stamp(f)
    }));
    let mut whole = false;
    let mut group: Option<u32> = None;
    let mut groups = 0;
    let mut errors = ReadErrors::new(job.error_limit);
    // File identity → the name it was first given as.
    let mut seen: std::collections::HashMap<FileKey, PathBuf> = Default::default();
    for (i, spec) in job.inputs.iter().enumerate() {
        let path = match spec {
            InputSpec::WholeArchive(on) => {
                whole = *on;
                continue;
            }
            InputSpec::Group(true) => {
                if group.is_some() {
                    return Err(fail("--start-group inside a group (groups do not nest)"));
                }
                groups += 1;
                group = Some(groups);
                continue;
            }
            InputSpec::Group(false) => {
                if group.take().is_none() {
                    return Err(fail("--end-group without --start-group"));
                }
                continue;
            }
            InputSpec::Lib(name) => find_lib(name, &job.lib_dirs)?,
            InputSpec::File(f) => f.clone(),
        };
        let source = match spec {
            InputSpec::Lib(name) => Source::Library(name.clone()),
            _ => Source::Input,
        };
        let read = match mapped[i].take() {
            Some(Ok(Opening::Read(r))) => Ok(r),
            Some(Ok(Opening::Later(o))) => read_opened(&path, o),
            Some(Err(e)) => Err(e),
            None => read_path_and_metadata(&path),
        };
        let (bytes, meta) = match read {
            Ok(r) => r,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if !archive::is_archive(bytes.head()) && path != Path::new("-") {
            if let Some(key) = file_key(&path, meta.as_ref()) {
                if let Some(first) = seen.get(&key) {
                    errors.push(format!(
                        "{} is given twice (also as {}); each of its definitions would be \
                         duplicated",
                        path.display(),
                        first.display()
                    ));
                    continue;
                }
                seen.insert(key, path.clone());
            }
        }
        p.record(&path, meta, source, stamps);
        let name = path.display().to_string();
        if archive::is_thin(bytes.head()) {
            p.add_thin(
                name,
                &path,
                bytes.as_slice(),
                whole,
                group,
                stamps,
                &mut errors,
            )?;
            continue;
        }
        p.add(name, Some(path), bytes, whole, group)?;
    }
    if group.is_some() {
        return Err(fail("--start-group without --end-group"));
    }
    if errors.count > 0 {
        return Err(Failure {
            messages: errors.text,
        });
    }
    if p.units.is_empty() {
        return Err(fail("no input files"));
    }
    p.read_time = Some(start.stop("read inputs"));
    Ok(p)
}

/// The modules a link uses, after parsing, container extraction and archive member
/// selection, with their sources; `warned` says whether warnings were reported.
struct Prepared {
    sources: crate::source::SourceMap,
    modules: Vec<crate::ir::Module>,
    files_read: Vec<PathBuf>,
    warned: bool,
}

fn prepare(
    job: &Job,
    plan: Plan,
    arch: Option<&str>,
    messages: &mut String,
) -> Result<Prepared, Failure> {
    let files_read = plan.files_read;
    let names: Vec<String> = plan.units.iter().map(|u| u.name.clone()).collect();
    let load = LoadOptions {
        keep_tokens: false,
        target: arch.and_then(|a| parse_arch(a.as_bytes())),
    };
    let parsed = parse_units(plan.units, &load);
    // Symbols of the units that parsed, for member selection: found when selection
    // asks for them, which it does only when an archive is scanned.
    let mut module_of: Vec<Option<usize>> = vec![None; names.len()];
    for (mi, &unit) in parsed.origins.iter().enumerate() {
        module_of[unit] = Some(mi);
    }
    let by_unit: Vec<std::cell::OnceCell<Option<Needs>>> = (0..names.len())
        .map(|_| std::cell::OnceCell::new())
        .collect();
    let lookup = |u: usize| {
        by_unit[u]
            .get_or_init(|| module_of[u].map(|mi| needs(&parsed.modules[mi])))
            .as_ref()
    };
    let name_of = |u: usize| names[u].clone();
    let selection = select(&plan.pieces, &lookup, &name_of, &job.undefined);
    if job.verbose {
        for line in &selection.log {
            messages.push_str(&format!("ptxld: {line}\n"));
        }
    }
    // Keep the selected modules, in load order; diagnostics of members never loaded
    // do not matter (GNU ld never looks at them either).
    let mut slots: Vec<Option<crate::ir::Module>> = (0..names.len()).map(|_| None).collect();
    let sources = parsed.sources;
    for (m, unit) in parsed.modules.into_iter().zip(parsed.origins) {
        slots[unit] = Some(m);
    }
    let modules: Vec<crate::ir::Module> = selection
        .order
        .iter()
        .filter_map(|&u| slots[u].take())
        .collect();
    let kept: std::collections::HashSet<_> = modules.iter().map(|m| m.file).collect();
    let mut diagnostics = Diagnostics::new();
    diagnostics.extend(
        parsed
            .diagnostics
            .into_iter()
            .filter(|d| d.file.is_none_or(|f| kept.contains(&f))),
    );
    messages.push_str(&diagnostics.render(&sources, job.error_limit));
    if diagnostics.has_errors() {
        return Err(Failure {
            messages: std::mem::take(messages),
        });
    }
    Ok(Prepared {
        sources,
        modules,
        files_read,
        warned: !diagnostics.is_empty(),
    })
}

fn link_options(job: &Job, arch: Option<&str>) -> LinkOptions {
    LinkOptions {
        header: HeaderOptions {
            arch: arch.map(str::to_string),
            ptx_version: job.ptx_version,
        },
        gc: job.gc_sections.then(|| GcOptions {
            exports: job.exports.iter().chain(&job.undefined).cloned().collect(),
            export_all: job.export_all,
        }),
        map: job.map_file.is_some() || job.print_map,
        why_live: job.why_live.clone(),
        strip_debug: job.strip_debug,
    }
}

/// One link for one target; returns the link result and what to report.
fn link_one(
    job: &Job,
    plan: Plan,
    arch: Option<&str>,
    messages: &mut String,
) -> Result<(Linked, Vec<PathBuf>, SourceMap, Vec<Module>), Failure> {
    let read_time = plan.read_time;
    let t = Stopwatch::start();
    let Prepared {
        sources,
        modules,
        files_read,
        warned,
    } = prepare(job, plan, arch, messages)?;
    let parse_time = t.stop("parse, select members");
    let opts = link_options(job, arch);
    // Traces go first, so they are there when the link fails too.
    messages.push_str(&crate::link::trace_symbols(&sources, &modules, &job.trace));
    match link(&sources, &modules, &opts) {
        Ok(l) => {
            if job.print_gc_sections {
                for r in &l.removed {
                    messages.push_str(&format!("ptxld: removing unused {r}\n"));
                }
            }
            messages.push_str(&l.why_live);
            if job.stats {
                let bytes: usize = modules.iter().map(|m| sources.file(m.file).len()).sum();
                messages.push_str(&format!(
                    "ptxld: stats: {} modules, {:.1} MB of PTX\n",
                    modules.len(),
                    bytes as f64 / 1e6
                ));
                let phases = read_time.iter().chain([&parse_time]).chain(&l.timings);
                for phase in phases {
                    messages.push_str(&phase.render());
                }
            }
            messages.push_str(&l.warnings.render(&sources, job.error_limit));
            if job.fatal_warnings && (warned || !l.warnings.is_empty()) {
                messages.push_str("error: warnings are errors (--fatal-warnings)\n");
                return Err(Failure {
                    messages: std::mem::take(messages),
                });
            }
            Ok((l, files_read, sources, modules))
        }
        Err(errors) => {
            messages.push_str(&errors.render(&sources, job.error_limit));
            Err(Failure {
                messages: std::mem::take(messages),
            })
        }
    }
}

/// Links `job` and returns the output bytes without writing anything.
pub fn link_job(job: &Job) -> Result<Outcome, Failure> {
    link_job_stamped(job, &Default::default())
}

/// [`link_job`], which also leaves the stamps of the first reading of the inputs in
/// `first` when the link fails (those of the files read until it failed).
fn link_job_stamped(
    job: &Job,
    first: &std::cell::RefCell<Option<Vec<Stamp>>>,
) -> Result<Outcome, Failure> {
    // Each target reads the inputs again; the stamps of the first reading count.
    let mut outcome = link_plans(job, &|| {
        let mut stamps = Vec::new();
        let plan = plan_stamped(job, &mut stamps);
        first.borrow_mut().get_or_insert(stamps);
        plan
    })?;
    outcome.stamps = first.borrow_mut().take().unwrap_or_default();
    Ok(outcome)
}

/// An input held in memory, for [`link_in_memory`].
#[derive(Clone, Debug)]
pub struct MemoryInput {
    /// The name used in messages.
    pub name: String,
    /// PTX text, a container, or an archive.
    pub bytes: Vec<u8>,
}

/// Links inputs held in memory, in order, with the options of `job` (its `inputs`
/// and `lib_dirs` are ignored; `emit` defaults by `job.output`'s extension). Nothing
/// is read from or written to disk.
pub fn link_in_memory(inputs: &[MemoryInput], job: &Job) -> Result<Outcome, Failure> {
    let make = || -> Result<Plan, Failure> {
        let mut p = Plan {
            units: Vec::new(),
            pieces: Vec::new(),
            files_read: Vec::new(),
            read_time: None,
        };
        for input in inputs {
            let bytes = Bytes::Owned(input.bytes.clone());
            p.add(input.name.clone(), None, bytes, false, None)?;
        }
        if p.units.is_empty() {
            return Err(fail("no input modules"));
        }
        Ok(p)
    };
    link_plans(job, &make)
}

fn link_plans(
    job: &Job,
    make_plan: &dyn Fn() -> Result<Plan, Failure>,
) -> Result<Outcome, Failure> {
    let emit = job.emit.unwrap_or_else(|| Emit::from_path(&job.output));
    if emit == Emit::Ptx && job.archs.len() > 1 {
        return Err(fail(
            "several --arch give several PTX modules: use --emit fatbin or --emit obj",
        ));
    }
    let targets: Vec<Option<&str>> = if job.archs.is_empty() {
        vec![None]
    } else {
        job.archs.iter().map(|a| Some(a.as_str())).collect()
    };
    let mut messages = String::new();
    let mut linked = Vec::new();
    let mut files_read = Vec::new();
    // A PTX output stays a rope over its sources until it is written; container
    // entries are assembled while each target's sources are still mapped.
    let mut ptx_output = None;
    let mut texts = Vec::new();
    for (i, arch) in targets.iter().enumerate() {
        // Warnings are reported once, for the first target.
        let mut msgs = String::new();
        let (mut l, files, sources, modules) = make_plan()
            .and_then(|plan| link_one(job, plan, *arch, &mut msgs))
            .map_err(|f| Failure {
                messages: format!("{messages}{}", f.messages),
            })?;
        if i == 0 {
            messages.push_str(&msgs);
            files_read = files;
        }
        let rope = std::mem::take(&mut l.ptx);
        if emit == Emit::Ptx {
            ptx_output = Some(Output::Ptx {
                rope,
                sources,
                modules,
            });
        } else {
            texts.push(rope.to_vec(&module_sources(&sources, &modules)));
        }
        linked.push(l);
    }
    let output = match emit {
        Emit::Ptx => ptx_output.expect("one target links for --emit ptx"),
        Emit::Fatbin | Emit::Obj => {
            let identifier = match job.output.file_stem().and_then(|s| s.to_str()) {
                Some(stem) if job.output != Path::new("-") => format!("{stem}.ptx"),
                _ => "ptxld.ptx".to_string(),
            };
            let entries: Vec<PtxEntry> = linked
                .iter()
                .zip(&texts)
                .map(|(l, text)| PtxEntry {
                    text,
                    sm: l.header.sm,
                    suffix: l.header.suffix,
                    version: l.header.version,
                    address_bits: l.header.address_size,
                    debug: l.header.debug,
                    identifier: &identifier,
                })
                .collect();
            let container = fatbin::write(&entries);
            Output::Bytes(if emit == Emit::Fatbin {
                container
            } else {
                write_host_object(&container, &job.symbol)
                    .map_err(|e| fail(format!("cannot build the ELF object: {e}")))?
            })
        }
    };
    let map = linked[0].map.take();
    Ok(Outcome {
        output,
        messages,
        files_read,
        map,
        // Set by the caller that read the files (in-memory inputs have none).
        stamps: Vec::new(),
    })
}

/// Links `job`, writes the output atomically, the link map and the dependency file.
/// After a failure no output is left behind (an older one is removed, as GNU ld
/// does), except when the link was refused because a file it would write is one it
/// read, or two files it would write are one file: then nothing is written or
/// removed.
pub fn run(job: &Job) -> Result<Outcome, Failure> {
    check_standard_output(job)?;
    let first = Default::default();
    let mut o = match link_job_stamped(job, &first) {
        Ok(o) => o,
        Err(f) => {
            remove_failed_output(job, &first.into_inner().unwrap_or_default());
            return Err(f);
        }
    };
    check_destinations(job, &o.stamps)?;
    let written = match &job.depfile {
        Some(_) => crate::depfile::depfile(&job.output, &o.files_read).map(Some),
        None => Ok(None),
    }
    .and_then(|dep| write_outputs(job, &mut o, dep));
    match written {
        Ok(()) => Ok(o),
        Err(f) => {
            remove_failed_output(job, &o.stamps);
            Err(f)
        }
    }
}

/// How messages name the file at `path`: `-` is standard output.
fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// The error of a failed write of `path`.
fn cannot_write(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| fail(format!("cannot write {}: {e}", shown(path)))
}

/// Refuses two outputs on standard output (`-o -`, `-Map -`, `--print-map`): they
/// would be interleaved into one stream.
fn check_standard_output(job: &Job) -> Result<(), Failure> {
    let dash = Path::new("-");
    let on_stdout: Vec<&str> = [
        (job.output == dash, "-o -"),
        (job.map_file.as_deref() == Some(dash), "-Map -"),
        (job.print_map, "--print-map"),
    ]
    .into_iter()
    .filter_map(|(on, what)| on.then_some(what))
    .collect();
    match on_stdout[..] {
        [a, b, ..] => Err(fail(format!("{a} and {b} both write standard output"))),
        _ => Ok(()),
    }
}

/// Refuses a link one of whose files to write (output, `-Map` file, dependency
/// file) is the same file (device and inode, after following symbolic links) as a
/// file the link read (inputs, archives, response files: every file `stamps`
/// records), or the same file as another one it writes (the same existing file, or
/// the same new name in the same directory). Called once the inputs are read and
/// before anything is written.
fn check_destinations(job: &Job, stamps: &[Stamp]) -> Result<(), Failure> {
    use crate::write::output::Destination;
    let mut written: Vec<(String, Destination)> = Vec::new();
    let output = if job.output == Path::new("-") {
        "standard output (-o -)".to_string()
    } else {
        format!("output file {}", job.output.display())
    };
    written.push((output, Destination::of(&job.output)));
    if let Some(map) = &job.map_file {
        let what = format!("-Map file {}", shown(map));
        written.push((what, Destination::of(map)));
    }
    if let Some(dep) = &job.depfile {
        let what = format!("dependency file {}", shown(dep));
        written.push((what, Destination::of(dep)));
    }
    for (i, (what, dest)) in written.iter().enumerate() {
        if let Some(key) = dest.key() {
            if let Some(s) = stamps.iter().find(|s| s.key.as_ref() == Some(key)) {
                return Err(fail(format!(
                    "{what} is the same file as {}; refusing to overwrite it",
                    s.describe()
                )));
            }
        }
        if let Some((other, _)) = written[..i].iter().find(|(_, d)| d.same_file_as(dest)) {
            return Err(fail(format!(
                "{what} is the same file as the {other}; refusing to overwrite it"
            )));
        }
    }
    Ok(())
}

/// After a failed link, removes an older output (as GNU ld does), so that a build
/// system cannot take it for up to date: only a regular file (or a symbolic link to
/// one), never a special file, and never a file the link read or was to read.
/// `stamps` are those of the files read; the link may have failed before reading
/// them all, so the files named on the command line are looked at too.
fn remove_failed_output(job: &Job, stamps: &[Stamp]) {
    if job.output == Path::new("-") {
        return;
    }
    let Ok(meta) = std::fs::metadata(&job.output) else {
        return;
    };
    if !meta.is_file() {
        return;
    }
    let Some(key) = file_key(&job.output, Some(&meta)) else {
        return;
    };
    if stamps.iter().any(|s| s.key.as_ref() == Some(&key)) {
        return;
    }
    let libs = job.inputs.iter().filter_map(|i| match i {
        InputSpec::Lib(name) => find_lib(name, &job.lib_dirs).ok(),
        _ => None,
    });
    let named = job.input_files().into_iter().chain(job.extra_deps.clone());
    if named
        .chain(libs)
        .any(|p| file_key(&p, None).as_ref() == Some(&key))
    {
        return;
    }
    let _ = std::fs::remove_file(&job.output);
}

/// Writes the output, then the link map and the dependency file (`dep`, made
/// already), and only then puts them in place, one after the other: a failure
/// writing any of them leaves none of them new.
fn write_outputs(job: &Job, o: &mut Outcome, dep: Option<Vec<u8>>) -> Result<(), Failure> {
    use crate::write::output::OutputFile;
    let t = Stopwatch::start();
    // Whether an input changed: one `stat` per input (thousands in a large link);
    // the first changed input in command-line order is the one reported, and it
    // fails the link.
    let changed = std::sync::OnceLock::new();
    let first_changed = |s: &&Stamp| stamp(&s.path).state != s.state;
    // Standard output cannot be taken back: checked before anything is written, in
    // parallel.
    let to_stdout = job.output == Path::new("-");
    if to_stdout {
        if let Some(s) = o.stamps.par_iter().find_first(first_changed) {
            let _ = changed.set(s.path.clone());
        }
    }
    // A file is checked after the inputs were read for the last time, by the thread
    // that read them (while the writer writes the last chunks), before it replaces
    // anything.
    let check_file = || {
        if let Some(s) = o.stamps.iter().find(first_changed) {
            let _ = changed.set(s.path.clone());
        }
    };
    let after_reads: &(dyn Fn() + Sync) = if to_stdout { &|| {} } else { &check_file };
    let mut output = None;
    let written = match changed.get() {
        Some(_) => Ok(()),
        None => OutputFile::create(&job.output).and_then(|mut f| {
            f.write_with(&mut |w, file| {
                o.write_to_then(w, file, after_reads)?;
                match changed.get() {
                    Some(_) => Err(std::io::Error::other("an input changed")),
                    None => Ok(()),
                }
            })?;
            output = Some(f);
            Ok(())
        }),
    };
    if let Some(path) = changed.get() {
        return Err(fail(InputError::Changed { path: path.clone() }.to_string()));
    }
    written.map_err(|e| {
        // An input the writer could not read again (cut short meanwhile) is reported
        // as such, not as a failure to write.
        match e.get_ref().and_then(|e| e.downcast_ref::<InputError>()) {
            Some(input) => fail(input.to_string()),
            None => cannot_write(&job.output)(e),
        }
    })?;
    if job.stats {
        o.messages.push_str(&t.stop("writing the output").render());
    }
    let mut files = vec![(output, job.output.as_path())];
    if let (Some(path), Some(map)) = (&job.map_file, &o.map) {
        let mut f = OutputFile::create(path).map_err(cannot_write(path))?;
        f.write_all(map.as_bytes()).map_err(cannot_write(path))?;
        files.push((Some(f), path));
    }
    if job.stats {
        if let Some(kb) = peak_rss_kb() {
            o.messages.push_str(&format!(
                "ptxld: stats: peak resident memory {:.1} MB\n",
                kb as f64 / 1e3
            ));
        }
    }
    if let (Some(path), Some(dep)) = (&job.depfile, dep) {
        let mut f = OutputFile::create(path).map_err(cannot_write(path))?;
        f.write_all(&dep).map_err(cannot_write(path))?;
        files.push((Some(f), path));
    }
    for (f, path) in files {
        if let Some(f) = f {
            f.commit().map_err(cannot_write(path))?;
        }
    }
    Ok(())
}

/// `ptxld check`: links without writing anything and reports every finding (errors,
/// ABI warnings, and where NVIDIA's nvJitLink would decide differently) as text or
/// JSON. Returns the report and whether the set links.
pub fn check(job: &Job, json: bool) -> (String, bool) {
    let arch = job.archs.first().map(String::as_str);
    let mut messages = String::new();
    let prepared = plan(job).and_then(|p| prepare(job, p, arch, &mut messages));
    let findings = match prepared {
        Err(f) => vec![crate::link::check::Finding {
            severity: "error",
            message: f
                .messages
                .trim_end()
                .trim_start_matches("error: ")
                .to_string(),
            locations: Vec::new(),
        }],
        Ok(p) => crate::link::check::check(&p.sources, &p.modules, &link_options(job, arch)),
    };
    // With --fatal-warnings a warning fails the check as it fails the link.
    let ok = !findings
        .iter()
        .any(|f| f.severity == "error" || (job.fatal_warnings && f.severity == "warning"));
    let report = if json {
        crate::link::check::to_json(&findings, ok)
    } else {
        crate::link::check::to_text(&findings)
    };
    (report, ok)
}

/// Peak resident set size of this process in kB (Linux `VmHWM`), for `--stats`.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
