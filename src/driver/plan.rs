//! Reading a job's inputs: `-l` libraries found, files and archives read, thin
//! archive members, response files; every file read is stamped (device, inode,
//! size, time) so that nothing the link read is later written or found changed.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic, Report};
use crate::frontend::Unit;
use crate::input::archive;
use crate::input::{
    file_key, open_path, read_opened, read_path_and_metadata, Bytes, FileKey, InputError, Opened,
};
use crate::select::Piece;
use crate::timing::{PhaseTime, Stopwatch};

use super::job::{InputSpec, Job};
use super::outcome::{fail, Failure};

/// Finds `-lNAME` / `-l:FILE` in the search directories.
pub(super) fn find_lib(name: &std::ffi::OsStr, dirs: &[PathBuf]) -> Result<PathBuf, Failure> {
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
    Err(fail(
        Code::LibraryNotFound,
        format!(
            "unable to find library -l{} ({}); searched: {}",
            name.to_string_lossy(),
            file.to_string_lossy(),
            if searched.is_empty() {
                "no directories (add one with -L DIR)".to_string()
            } else {
                searched.join(", ")
            }
        ),
    ))
}

/// Inputs read and laid out for selection.
pub(super) struct Plan {
    pub(super) units: Vec<Unit>,
    pub(super) pieces: Vec<Piece>,
    pub(super) files_read: Vec<PathBuf>,
    /// The inputs that could not be read or found: the link goes on parsing the
    /// others, so that it reports every input's errors at once, and then fails.
    pub(super) unreadable: Report,
    /// Time spent reading (mapping) the inputs, for `--stats`.
    pub(super) read_time: Option<PhaseTime>,
}

/// A file read by a link: its size and modification time, to notice a file that
/// changes while the link runs (a build writing it concurrently), taken when the file
/// is read, from the open file ([`plan_stamped`]), and again just before the output is
/// written ([`run`]); and its identity, so that no file the link writes is one it
/// read ([`check_destinations`]).
#[derive(Clone, Debug)]
pub(super) struct Stamp {
    pub(super) path: PathBuf,
    /// How the file came to be read, for messages.
    pub(super) source: Source,
    /// Device and inode when read.
    pub(super) key: Option<FileKey>,
    /// Size and modification time when read.
    pub(super) state: Option<(u64, std::time::SystemTime)>,
}

/// How a file came to be read.
#[derive(Clone, Debug)]
pub(super) enum Source {
    /// Named as an input (or found inside one).
    Input,
    /// Found through `-lNAME` (holds `NAME`).
    Library(std::ffi::OsString),
    /// A response file (`@FILE`).
    ResponseFile,
}

impl Stamp {
    /// The file as messages name it: `input lib/libk.a (found through -lk)`.
    pub(super) fn describe(&self) -> String {
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
pub(super) fn stamp(path: &Path) -> Stamp {
    stamp_of(path, std::fs::metadata(path).ok())
}

/// The stamp of input `path`, from its metadata `meta` as read.
pub(super) fn stamp_of(path: &Path, meta: Option<std::fs::Metadata>) -> Stamp {
    Stamp {
        path: path.to_path_buf(),
        source: Source::Input,
        key: meta.as_ref().and_then(|m| file_key(path, Some(m))),
        state: meta.and_then(|m| Some((m.len(), m.modified().ok()?))),
    }
}

impl Plan {
    /// Reads a member of a thin archive from `file`, as any input is read: the
    /// file is stamped and listed among the files read.
    pub(super) fn read_member(
        &mut self,
        file: &Path,
        stamps: &mut Vec<Stamp>,
    ) -> Result<Bytes, InputError> {
        let (bytes, meta) = read_path_and_metadata(file)?;
        self.record(file, meta, Source::Input, stamps);
        Ok(bytes)
    }

    /// Records `path` among the files read and, for a regular file (`meta` as read),
    /// its stamp.
    pub(super) fn record(
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
    pub(super) fn add_thin(
        &mut self,
        name: String,
        path: &Path,
        data: &[u8],
        whole: bool,
        group: Option<u32>,
        stamps: &mut Vec<Stamp>,
        errors: &mut Report,
    ) -> Result<(), Failure> {
        let entries =
            archive::thin_members(data).map_err(|e| fail(Code::Archive, format!("{name}: {e}")))?;
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut nested: std::collections::HashMap<PathBuf, Option<Bytes>> = Default::default();
        let first = self.units.len();
        let mut modules = Vec::new();
        for entry in entries {
            let file = dir.join(&entry.path);
            let missing = |e: &dyn std::fmt::Display| {
                let message = format!(
                    "{name}: member {}: {e}; a thin archive holds only the paths of its \
                     members, relative to its own directory: restore the file or rebuild \
                     the archive",
                    entry.path.display()
                );
                Diagnostic::global_error(Code::Archive, message)
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
    pub(super) fn close_archive(
        &mut self,
        name: String,
        first: usize,
        whole: bool,
        group: Option<u32>,
    ) {
        self.pieces.push(Piece::Archive {
            name,
            members: (first..self.units.len()).collect(),
            whole,
            group,
        });
    }

    /// Adds one input: an archive's members become units of one archive piece,
    /// anything else one unit of its own.
    pub(super) fn add(
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
        let members = archive::members(bytes.as_slice())
            .map_err(|e| fail(Code::Archive, format!("{name}: {e}")))?;
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
pub(super) enum Opening {
    Read(ReadInput),
    Later(Opened),
}

/// An input read, with what the plan records of it, prepared where it was read
/// (for named files, in the parallel first pass).
pub(super) struct ReadInput {
    bytes: Bytes,
    /// The file's identity, for inputs given twice: `None` for archives and
    /// standard input, which may be.
    key: Option<FileKey>,
    /// `None` for standard input, pipes, FIFOs and devices.
    stamp: Option<Stamp>,
    /// The name diagnostics give it.
    name: String,
    /// The path for the list of files read, and again for the plan's unit (copies
    /// made where it was read: in the parallel pass for named files).
    listed: PathBuf,
    path: PathBuf,
}

impl ReadInput {
    fn of(path: &Path, (bytes, meta): (Bytes, Option<std::fs::Metadata>)) -> ReadInput {
        let identified = !archive::is_archive(bytes.head()) && path != Path::new("-");
        ReadInput {
            key: identified.then(|| file_key(path, meta.as_ref())).flatten(),
            stamp: meta.map(|m| stamp_of(path, Some(m))),
            name: path.display().to_string(),
            listed: path.to_path_buf(),
            path: path.to_path_buf(),
            bytes,
        }
    }
}

pub(super) fn plan(job: &Job) -> Result<Plan, Failure> {
    plan_stamped(job, &mut Vec::new())
}

/// Reads the inputs of `job` one after the other, in command-line order, on the
/// calling thread, and adds to `stamps` the stamp of every regular file read (inputs
/// and archives, from the open file, so it describes exactly the bytes mapped) and of
/// the response files. Standard input, pipes and FIFOs get none: what was read from
/// them cannot change.
pub(super) fn plan_stamped(job: &Job, stamps: &mut Vec<Stamp>) -> Result<Plan, Failure> {
    let start = Stopwatch::start();
    // Room for one of each per input given, so that the ordered loop below does not
    // grow (and copy) its vectors thousands of times.
    let given = job.inputs.len();
    let mut files_read = Vec::with_capacity(job.extra_deps.len() + given);
    files_read.extend_from_slice(&job.extra_deps);
    let mut p = Plan {
        units: Vec::with_capacity(given),
        pieces: Vec::with_capacity(given),
        files_read,
        unreadable: Report::new(),
        read_time: Default::default(),
    };
    // Named files are opened in parallel first, and regular files mapped (opening
    // and mapping thousands of files is a good part of a link); everything else
    // (archives found with `-l`, FIFOs and devices, already open, and standard
    // input) is read below, in order. Opening never blocks, even on a FIFO.
    let mut mapped: Vec<Option<Result<_, _>>> =
        crate::parallel::map_each(job.inputs.len(), |i| match &job.inputs[i] {
            InputSpec::File(f) if f != Path::new("-") => Some(open_path(f).and_then(|o| {
                Ok(if o.is_file() {
                    Opening::Read(ReadInput::of(f, read_opened(f, o)?))
                } else {
                    Opening::Later(o)
                })
            })),
            _ => None,
        });
    // Response files were read while parsing the arguments; this is as early as the
    // driver sees them.
    stamps.extend(job.extra_deps.iter().map(|f| Stamp {
        source: Source::ResponseFile,
        ..stamp(f)
    }));
    let mut whole = false;
    let mut group: Option<u32> = None;
    let mut groups = 0;
    // Read errors are collected, so that one link reports every unreadable input.
    let mut errors = Report::new();
    // File identity → where in `files_read` the name it was first given as is.
    let mut seen: rustc_hash::FxHashMap<FileKey, usize> = rustc_hash::FxHashMap::default();
    seen.reserve(given);
    stamps.reserve(given);
    for (i, spec) in job.inputs.iter().enumerate() {
        let path = match spec {
            InputSpec::WholeArchive(on) => {
                whole = *on;
                continue;
            }
            InputSpec::Group(true) => {
                if group.is_some() {
                    return Err(fail(
                        Code::Usage,
                        "--start-group inside a group (groups do not nest)",
                    ));
                }
                groups += 1;
                group = Some(groups);
                continue;
            }
            InputSpec::Group(false) => {
                if group.take().is_none() {
                    return Err(fail(Code::Usage, "--end-group without --start-group"));
                }
                continue;
            }
            InputSpec::Lib(name) => match find_lib(name, &job.lib_dirs) {
                Ok(path) => Cow::Owned(path),
                Err(failure) => {
                    errors.append(failure.report);
                    continue;
                }
            },
            InputSpec::File(f) => Cow::Borrowed(f.as_path()),
        };
        let source = match spec {
            InputSpec::Lib(name) => Source::Library(name.clone()),
            _ => Source::Input,
        };
        let read = match mapped[i].take() {
            Some(Ok(Opening::Read(r))) => Ok(r),
            Some(Ok(Opening::Later(o))) => read_opened(&path, o).map(|r| ReadInput::of(&path, r)),
            Some(Err(e)) => Err(e),
            None => read_path_and_metadata(&path).map(|r| ReadInput::of(&path, r)),
        };
        let ReadInput {
            bytes,
            key,
            stamp,
            name,
            listed,
            path: unit_path,
        } = match read {
            Ok(r) => r,
            Err(e) => {
                errors.push(Diagnostic::from(&e));
                continue;
            }
        };
        if let Some(key) = key {
            if let Some(&first) = seen.get(&key) {
                let first: &Path = &p.files_read[first];
                errors.push(Diagnostic::global_error(
                    Code::DuplicateInput,
                    format!(
                        "{} is given twice (also as {}); each of its definitions would be \
                     duplicated",
                        path.display(),
                        first.display()
                    ),
                ));
                continue;
            }
            seen.insert(key, p.files_read.len());
        }
        if let Some(stamp) = stamp {
            stamps.push(Stamp { source, ..stamp });
        }
        p.files_read.push(listed);
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
        p.add(name, Some(unit_path), bytes, whole, group)?;
    }
    if group.is_some() {
        return Err(fail(Code::Usage, "--start-group without --end-group"));
    }
    if p.units.is_empty() {
        if !errors.is_empty() {
            return Err(Failure::from(errors));
        }
        return Err(fail(Code::NoInput, "no input files"));
    }
    p.unreadable = errors;
    p.read_time = Some(start.stop("read inputs"));
    Ok(p)
}
