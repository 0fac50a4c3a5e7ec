//! Writing a link's files safely: refusing to write what the link read, the output
//! written atomically (or a special file in place), the link map and the depfile,
//! and removing a stale output when the link fails.

use std::path::Path;

use rayon::prelude::*;

use crate::diag::{Code, Diagnostic, Report};
use crate::input::{file_key, InputError};
use crate::timing::Stopwatch;

use super::job::{InputSpec, Job};
use super::link::{limited, link_job_stamped};
use super::outcome::{fail, Failure, Outcome};
use super::plan::{find_lib, stamp, Stamp};

/// Links `job`, writes the output atomically, the link map and the dependency file.
/// After a failure no output is left behind (an older one is removed, as GNU ld
/// does), except when the link was refused because a file it would write is one it
/// read, or two files it would write are one file: then nothing is written or
/// removed.
pub fn run(job: &Job) -> Result<Outcome, Failure> {
    limited(job, link_and_write(job))
}

pub(super) fn link_and_write(job: &Job) -> Result<Outcome, Failure> {
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
        Some(_) => super::depfile::depfile(&job.output, &o.files_read).map(Some),
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
pub(super) fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        "standard output".to_string()
    } else {
        path.display().to_string()
    }
}

/// The error of a failed write of `path`.
pub(super) fn cannot_write(path: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| fail(Code::Io, format!("cannot write {}: {e}", shown(path)))
}

/// Refuses two outputs on standard output (`-o -`, `-Map -`, `--print-map`): they
/// would be interleaved into one stream.
pub(super) fn check_standard_output(job: &Job) -> Result<(), Failure> {
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
        [a, b, ..] => Err(fail(
            Code::Usage,
            format!("{a} and {b} both write standard output"),
        )),
        _ => Ok(()),
    }
}

/// Refuses a link one of whose files to write (output, `-Map` file, dependency
/// file) is the same file (device and inode, after following symbolic links) as a
/// file the link read (inputs, archives, response files: every file `stamps`
/// records), or the same file as another one it writes (the same existing file, or
/// the same new name in the same directory). Called once the inputs are read and
/// before anything is written.
pub(super) fn check_destinations(job: &Job, stamps: &[Stamp]) -> Result<(), Failure> {
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
                return Err(fail(
                    Code::SameFile,
                    format!(
                        "{what} is the same file as {}; refusing to overwrite it",
                        s.describe()
                    ),
                ));
            }
        }
        if let Some((other, _)) = written[..i].iter().find(|(_, d)| d.same_file_as(dest)) {
            return Err(fail(
                Code::SameFile,
                format!("{what} is the same file as the {other}; refusing to overwrite it"),
            ));
        }
    }
    Ok(())
}

/// After a failed link, removes an older output (as GNU ld does), so that a build
/// system cannot take it for up to date: only a regular file (or a symbolic link to
/// one), never a special file, and never a file the link read or was to read.
/// `stamps` are those of the files read; the link may have failed before reading
/// them all, so the files named on the command line are looked at too.
pub(super) fn remove_failed_output(job: &Job, stamps: &[Stamp]) {
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
pub(super) fn write_outputs(
    job: &Job,
    o: &mut Outcome,
    dep: Option<Vec<u8>>,
) -> Result<(), Failure> {
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
    // A file is checked after the inputs were read for the last time (once it is
    // written; into a device, by the thread that read last while the writer writes
    // the last chunks), before it replaces anything, in parallel.
    let check_file = || {
        if let Some(s) = o.stamps.par_iter().find_first(first_changed) {
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
        let changed = InputError::Changed { path: path.clone() };
        return Err(Failure::from(Report::of(Diagnostic::from(&changed))));
    }
    written.map_err(|e| {
        // An input the writer could not read again (cut short meanwhile) is reported
        // as such, not as a failure to write.
        match e.get_ref().and_then(|e| e.downcast_ref::<InputError>()) {
            Some(input) => Failure::from(Report::of(Diagnostic::from(input))),
            None => cannot_write(&job.output)(e),
        }
    })?;
    if job.stats {
        o.report.log(t.stop("writing the output").render());
    }
    let mut files = vec![(output, job.output.as_path())];
    if let (Some(path), Some(map)) = (&job.map_file, &o.map) {
        let mut f = OutputFile::create(path).map_err(cannot_write(path))?;
        f.write_all(map.as_bytes()).map_err(cannot_write(path))?;
        files.push((Some(f), path));
    }
    if job.stats {
        if let Some(kb) = crate::timing::peak_rss_kb() {
            o.report.log(format!(
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
