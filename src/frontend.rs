//! Loading and parsing many inputs in parallel, with deterministic results.
//!
//! Files are mapped and parsed on the rayon pool; results are collected in input
//! order and diagnostics are sorted, so the outcome does not depend on the number of
//! threads or on scheduling.

use std::path::PathBuf;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::diag::{Code, Diagnostic, Diagnostics};
use crate::input::container::{extract, Target};
use crate::input::fatbin;
use crate::input::{read_path, Bytes};
use crate::ir::Module;
use crate::lex::Token;
use crate::parallel::map_largest_first;
use crate::parse::{parse_module, parse_module_deferred, Parsed};
use crate::source::{FileId, SourceFile, SourceMap};

/// Parsed inputs: the source map, one module per loaded file (in input order), and
/// every diagnostic, sorted.
pub struct ParsedInputs {
    /// The loaded files.
    pub sources: SourceMap,
    /// One module per file in `sources`, same order.
    pub modules: Vec<Module>,
    /// Load errors and parse errors of all files, sorted.
    pub diagnostics: Diagnostics,
    /// For each module, the index of the unit (input) it was parsed from.
    pub origins: Vec<usize>,
}

/// How inputs are loaded.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Keep each module's token array; `false` releases it right after parsing
    /// ([`Module::release_tokens`]), which is all the linker needs.
    pub keep_tokens: bool,
    /// The link target, for choosing among the PTX entries of container inputs
    /// (`.fatbin` files, ELF objects); `None` takes each container's highest entry.
    pub target: Option<Target>,
    /// Where to record what each module uses by the instruction table as its
    /// bodies are lexed (for lowering, the link map and `--verify`), when tokens are
    /// not kept.
    pub record_uses: RecordUses,
}

/// When the parse records what the modules use ([`LoadOptions::record_uses`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RecordUses {
    /// Never: the link does not ask.
    #[default]
    Never,
    /// Always: the link asks (`--ptx-version=min`, the link map, `--verify`).
    Always,
    /// Where the link may lower: some module's header is above this `.version`, or
    /// beyond one of these targets (read from each module's first bytes before the
    /// parse; a header not found there counts as above). A link that does not lower
    /// pays nothing; one that does finds every module recorded.
    Above {
        /// `--ptx-version`.
        version: Option<crate::options::PtxVersion>,
        /// `--arch`, each.
        archs: Vec<crate::options::Arch>,
    },
}

impl RecordUses {
    /// Whether the modules of `sources` are recorded.
    fn applies(&self, sources: &[(FileId, &SourceFile)]) -> bool {
        match self {
            RecordUses::Never => false,
            RecordUses::Always => true,
            RecordUses::Above { version, archs } => sources
                .par_iter()
                .any(|(_, f)| header_above(f.bytes(), *version, archs)),
        }
    }
}

/// Bytes from a module's start that its header is looked for in (comments may come
/// first).
const HEADER_BYTES: usize = 16 << 10;

/// Whether the header at the start of `src` is above `version` or beyond one of
/// `archs` (as `link::header::may_lower` decides), or is not found: the first
/// `.version X.Y` and `.target sm_NN` words in its first bytes. Only where the
/// parse records depends on this, never what a link does.
fn header_above(
    src: &[u8],
    version: Option<crate::options::PtxVersion>,
    archs: &[crate::options::Arch],
) -> bool {
    let head = &src[..src.len().min(HEADER_BYTES)];
    let word_after = |name: &[u8]| -> Option<&[u8]> {
        let at = head.windows(name.len()).position(|w| w == name)? + name.len();
        let rest = &head[at..];
        let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
        let rest = &rest[start..];
        let len = rest
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b',')
            .unwrap_or(rest.len());
        Some(&rest[..len])
    };
    let own_version = word_after(b".version").and_then(|w| {
        let (major, minor) = std::str::from_utf8(w).ok()?.split_once('.')?;
        Some((major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?))
    });
    let own_arch = word_after(b".target").and_then(crate::options::Arch::parse_bytes);
    let (Some(own_version), Some(own_arch)) = (own_version, own_arch) else {
        return true;
    };
    version.is_some_and(|v| own_version > (v.major, v.minor))
        || archs.iter().any(|&want| {
            crate::link::header::beyond(own_arch.sm(), own_arch.suffix(), want.sm(), want.suffix())
        })
}

impl Default for LoadOptions {
    fn default() -> LoadOptions {
        LoadOptions {
            keep_tokens: true,
            target: None,
            record_uses: RecordUses::Never,
        }
    }
}

/// Maps and parses `paths` in parallel. A file that cannot be read is reported as
/// an error and left out; every other file is parsed even if some fail.
pub fn parse_files(paths: &[PathBuf]) -> ParsedInputs {
    parse_files_with(paths, &LoadOptions::default())
}

/// Like [`parse_files`], with options.
pub fn parse_files_with(paths: &[PathBuf], opts: &LoadOptions) -> ParsedInputs {
    let (units, errors) = read_units(paths);
    let mut parsed = parse_units(units, opts);
    parsed.diagnostics.extend(errors);
    parsed.diagnostics.sort();
    parsed
}

/// One input to parse: a file, or a member of an archive, already in memory.
pub struct Unit {
    /// The name used in messages (`lib.a(member.ptx)`).
    pub name: String,
    /// The file it came from, if any.
    pub path: Option<PathBuf>,
    /// Its bytes: PTX text or a container.
    pub bytes: Bytes,
}

/// Reads `paths` in parallel into units; unreadable files become diagnostics.
pub fn read_units(paths: &[PathBuf]) -> (Vec<Unit>, Vec<Diagnostic>) {
    let loaded: Vec<_> = paths.par_iter().map(|p| read_path(p)).collect();
    let mut units = Vec::new();
    let mut errors = Vec::new();
    for (path, r) in paths.iter().zip(loaded) {
        match r {
            Ok(bytes) => units.push(Unit {
                name: path.display().to_string(),
                path: Some(path.clone()),
                bytes,
            }),
            Err(e) => errors.push(Diagnostic::from(&e)),
        }
    }
    (units, errors)
}

/// Extracts containers and parses every unit in parallel. Units that cannot be used
/// (corrupt containers, binary data) are reported and left out; `origins[i]` is the
/// unit index of `modules[i]`.
pub fn parse_units(units: Vec<Unit>, opts: &LoadOptions) -> ParsedInputs {
    let (sources, mut diagnostics, flags, origins) = load_units(units, opts.target);
    let (modules, parse_diags) = parse_sources_with(&sources, opts);
    diagnostics.extend(parse_diags);
    // A container entry's host flags must match its own PTX: 64-bit hosts run
    // `.address_size 64` code (the header merge then makes all modules agree).
    for (m, (_, f)) in modules.iter().zip(sources.files()) {
        if let Some(flags) = flags[m.file.index()] {
            let entry_64 = flags & fatbin::flags::ADDR64 != 0;
            if entry_64 != (m.header.address_bits() == 64) {
                diagnostics.push(Diagnostic::global_error(
                    Code::AddressSize,
                    format!(
                        "host platform mismatch: {}: the container entry is for a {}-bit host but \
                     its PTX has .address_size {}",
                        f.name(),
                        if entry_64 { 64 } else { 32 },
                        m.header.address_bits()
                    ),
                ));
            }
        }
    }
    diagnostics.sort();
    ParsedInputs {
        sources,
        modules,
        diagnostics,
        origins,
    }
}

/// Like [`parse_files`], but only reports: each module is dropped as soon as it is
/// parsed, so memory stays bounded by the modules in flight (`--syntax-only`).
pub fn check_files(paths: &[PathBuf]) -> (SourceMap, Diagnostics) {
    let (units, errors) = read_units(paths);
    let (sources, mut diagnostics, _, _) = load_units(units, None);
    diagnostics.extend(errors);
    let files: Vec<_> = sources.files().collect();
    let per_file: Vec<Vec<Diagnostic>> = files
        .par_iter()
        .map(|&(id, f)| parse_from_copy(id, f, false).diagnostics)
        .collect();
    diagnostics.extend(per_file.into_iter().flatten());
    diagnostics.sort();
    (sources, diagnostics)
}

thread_local! {
    /// Each thread's token array, reused from file to file.
    static TOKENS: std::cell::Cell<Vec<Token>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Parses a file and releases its tokens into this thread's reusable array (the
/// linker needs the module structure, not the tokens).
fn parse_reusing_tokens(id: FileId, src: &[u8], record: bool) -> Parsed {
    let mut p = parse_module_deferred(id, src, TOKENS.take(), record);
    TOKENS.set(std::mem::take(&mut p.module.tokens));
    p.module.release_tokens();
    p
}

thread_local! {
    /// Each thread's copy of the file it parses.
    static COPY: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Files up to this size are parsed from a copy (see [`parse_from_copy`]).
const MAX_COPY: usize = 16 << 20;

/// Parses a mapped file kept open from a copy read into this thread's buffer, so
/// that parsing leaves no page of the mapping resident: the writer reads the text
/// again when it needs it (docs/performance.md). A larger file is parsed through
/// its mapping, whose pages are released afterwards (one TLB shootdown, not a
/// doubled input). Spans are the same either way.
fn parse_from_copy(id: FileId, f: &SourceFile, record: bool) -> Parsed {
    let pages = f.pages();
    if !pages.is_readable_file() {
        return parse_reusing_tokens(id, f.bytes(), record);
    }
    if f.len() > MAX_COPY {
        let parsed = parse_reusing_tokens(id, f.bytes(), record);
        pages.release();
        return parsed;
    }
    // The buffer keeps the length of the largest file it held, so that it is zeroed
    // only where it grows.
    let mut buf = COPY.take();
    let len = f.len();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    // A file rewritten since it was opened is caught by the stamp check before the
    // output is written. One that cannot be read whole was cut short (or cannot be
    // read at all): its mapping holds no more (touching its pages past the new end
    // raises SIGBUS), so the link fails here.
    let parsed = match pages.read_at(0, &mut buf[..len]) {
        Ok(()) => parse_reusing_tokens(id, &buf[..len], record),
        Err(e) => {
            let mut p = parse_reusing_tokens(id, b"", false);
            p.diagnostics = vec![Diagnostic::from(&e)];
            p
        }
    };
    COPY.set(buf);
    parsed
}

/// True for data no PTX text starts with: control bytes (other than whitespace) in
/// the first 64 bytes. PTX may end with a NUL (NVRTC's buffers do), but never starts
/// with one.
fn is_binary(data: &[u8]) -> bool {
    data.iter()
        .take(64)
        .any(|&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
}

/// The PTX each container among `units` gives for `target` (`None` for text and for
/// containers without a usable entry). Targets with the same choices link the same
/// text, from one parse.
pub(crate) fn container_choices(units: &[Unit], target: Option<Target>) -> Vec<Option<Vec<u8>>> {
    units
        .par_iter()
        .map(|u| {
            let head = u.bytes.head();
            let container = crate::input::container::is_container(head);
            container
                .then(|| extract(u.bytes.as_slice(), target))
                .flatten()
                .and_then(Result::ok)
                .map(|x| x.text)
        })
        .collect()
}

/// Turns units into source files: a container is replaced by the PTX of its chosen
/// entry, named `unit(entry)`. Returns the entry flags by file id and the unit index
/// of each file.
#[allow(clippy::type_complexity)]
fn load_units(
    units: Vec<Unit>,
    target: Option<Target>,
) -> (SourceMap, Diagnostics, Vec<Option<u64>>, Vec<usize>) {
    let loaded: Vec<_> = units
        .into_par_iter()
        .map(|u| {
            let head = u.bytes.head();
            let container = crate::input::container::is_container(head);
            let r = match container
                .then(|| extract(u.bytes.as_slice(), target))
                .flatten()
            {
                None if is_binary(head) => Err(Diagnostic::global_error(
                    Code::BinaryInput,
                    format!(
                    "{}: binary data, neither PTX text nor a fatbin or ELF object carrying one \
                     (a fatbin starts with 50 ED 55 BA)",
                    u.name
                ),
                )),
                None => Ok((u.bytes, None, None)),
                Some(Ok(x)) => Ok((Bytes::Owned(x.text), Some(x.label), Some(x.flags))),
                Some(Err(e)) => Err(Diagnostic::global_error(
                    Code::Container,
                    format!("{}: {e}", u.name),
                )),
            };
            // The file is made here, in parallel: the loop below only moves it.
            r.map_err(Box::new).map(|(bytes, label, entry_flags)| {
                let name = match label {
                    Some(l) => format!("{}({l})", u.name),
                    None => u.name,
                };
                (SourceFile::new(name, u.path, bytes), entry_flags)
            })
        })
        .collect();
    let mut sources = SourceMap::with_capacity(loaded.len());
    let mut diagnostics = Diagnostics::new();
    let mut flags = Vec::with_capacity(loaded.len());
    let mut origins = Vec::with_capacity(loaded.len());
    for (i, result) in loaded.into_iter().enumerate() {
        match result {
            Ok((file, entry_flags)) => {
                sources.add(file);
                flags.push(entry_flags);
                origins.push(i);
            }
            Err(d) => diagnostics.push(*d),
        }
    }
    (sources, diagnostics, flags, origins)
}

/// Parses every file of `sources` in parallel; modules come back in file order.
pub fn parse_sources(sources: &SourceMap) -> (Vec<Module>, Diagnostics) {
    parse_sources_with(sources, &LoadOptions::default())
}

/// Modules parsed by this process so far: tests check that a link parses each input
/// once, however many targets and reports it produces.
static PARSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The number of modules this process parsed for links so far.
pub fn parsed_modules() -> usize {
    PARSED.load(std::sync::atomic::Ordering::Relaxed)
}

fn parse_sources_with(sources: &SourceMap, opts: &LoadOptions) -> (Vec<Module>, Diagnostics) {
    let files: Vec<_> = sources.files().collect();
    let record = !opts.keep_tokens && opts.record_uses.applies(&files);
    PARSED.fetch_add(files.len(), std::sync::atomic::Ordering::Relaxed);
    // Largest first: a link's largest modules (libdevice) often come last, and one
    // of them parsed alone at the end kept the other threads waiting. Modules go
    // straight to their place in the vector; the few files with diagnostics hand
    // them over apart, put back in file order below.
    let sizes: Vec<u64> = files.iter().map(|(_, f)| f.len() as u64).collect();
    let per_file: Mutex<Vec<(usize, Vec<Diagnostic>)>> = Mutex::new(Vec::new());
    let modules: Vec<Module> = map_largest_first(&sizes, |i| {
        let (id, f) = files[i];
        let p = if opts.keep_tokens {
            parse_module(id, f.bytes())
        } else {
            parse_from_copy(id, f, record)
        };
        if !p.diagnostics.is_empty() {
            let mut per_file = per_file.lock().unwrap_or_else(|e| e.into_inner());
            per_file.push((i, p.diagnostics));
        }
        p.module
    });
    let mut per_file = per_file.into_inner().unwrap_or_else(|e| e.into_inner());
    per_file.sort_unstable_by_key(|&(i, _)| i);
    let mut diagnostics = Diagnostics::new();
    diagnostics.extend(per_file.into_iter().flat_map(|(_, d)| d));
    diagnostics.sort();
    (modules, diagnostics)
}

#[cfg(test)]
mod record_tests {
    use super::header_above;
    use crate::options::{Arch, PtxVersion};

    /// The header sniff reads the first `.version` and `.target`, after comments,
    /// as the link's lowering rule compares them; without a header it says above.
    #[test]
    fn a_header_above_the_options_is_found_before_the_parse() {
        let src = b"//\n// Generated by NVIDIA NVVM Compiler\n//\n\n.version 8.8\n.target sm_90a, debug\n.address_size 64\n";
        let v = |major, minor| Some(PtxVersion { major, minor });
        let arch = |sm| vec![Arch::new(sm)];
        assert!(header_above(src, v(7, 0), &[]));
        assert!(!header_above(src, v(8, 8), &[]));
        assert!(header_above(src, None, &arch(80)));
        assert!(!header_above(
            src,
            None,
            &[Arch::parse_bytes(b"sm_90a").unwrap()]
        ));
        // `sm_90a` code is for sm_90a alone.
        assert!(header_above(src, v(9, 0), &arch(100)));
        let plain = b".version 7.0\n.target sm_80\n";
        assert!(!header_above(plain, v(9, 0), &arch(100)));
        assert!(header_above(b".entry e() { ret; }", v(9, 0), &arch(100)));
    }
}
