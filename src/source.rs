//! Source map: every input gets a [`FileId`]; positions are byte [`Span`]s relative to
//! that file. Line/column lookup is computed lazily, once per file, and only when a
//! diagnostic needs it, so the hot parse path never pays for it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::input::Bytes;

/// Dense index of an input file in a [`SourceMap`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

impl FileId {
    /// The index as a `usize`, for slice indexing.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Half-open byte range `lo..hi` within one file.
///
/// Offsets are `u32`: an input larger than 4 GiB - 1 byte is refused when it is
/// loaded (see [`crate::input::MAX_INPUT_LEN`]), so every offset fits.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Span {
    /// A span from `lo` to `hi`.
    pub const fn new(lo: u32, hi: u32) -> Span {
        Span { lo, hi }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.lo.min(other.lo), self.hi.max(other.hi))
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.hi - self.lo) as usize
    }

    /// True for an empty span.
    pub fn is_empty(self) -> bool {
        self.hi == self.lo
    }

    /// The byte range, for slicing the file text.
    pub fn range(self) -> std::ops::Range<usize> {
        self.lo as usize..self.hi as usize
    }
}

/// 1-based line and column (the column counts bytes, so a tab is one column).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    /// 1-based line number.
    pub line: u32,
    /// 1-based byte column.
    pub col: u32,
}

/// One input file: its display name and its bytes.
pub struct SourceFile {
    name: String,
    path: Option<PathBuf>,
    bytes: Bytes,
    line_starts: OnceLock<Vec<u32>>,
}

impl SourceFile {
    /// A file whose bytes came from `path` (or from elsewhere, when `path` is `None`).
    pub fn new(name: String, path: Option<PathBuf>, bytes: Bytes) -> SourceFile {
        SourceFile {
            name,
            path,
            bytes,
            line_starts: OnceLock::new(),
        }
    }

    /// The name used in diagnostics (the path as the user wrote it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file system path, if the file came from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The number of bytes (without mapping a file that is not mapped yet).
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The bytes as loaded (for paging hints on mapped files).
    pub fn pages(&self) -> &Bytes {
        &self.bytes
    }

    /// The bytes of `span`.
    pub fn slice(&self, span: Span) -> &[u8] {
        &self.bytes()[span.range()]
    }

    fn line_starts(&self) -> &[u32] {
        self.line_starts.get_or_init(|| {
            // `\n`, `\r\n` and a lone `\r` (old Mac line ends, which ptxas accepts) each
            // end a line.
            let b = self.bytes();
            let mut starts = vec![0u32];
            for (i, &c) in b.iter().enumerate() {
                let ends = c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n'));
                if ends {
                    starts.push(i as u32 + 1);
                }
            }
            starts
        })
    }

    /// Line and column of byte `offset`.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let starts = self.line_starts();
        let line = starts.partition_point(|&s| s <= offset) - 1;
        LineCol {
            line: line as u32 + 1,
            col: offset - starts[line] + 1,
        }
    }

    /// The text of 1-based line `line`, without its line terminator.
    pub fn line_text(&self, line: u32) -> &[u8] {
        let starts = self.line_starts();
        let idx = (line as usize).saturating_sub(1).min(starts.len() - 1);
        let lo = starts[idx] as usize;
        let hi = starts
            .get(idx + 1)
            .map(|&s| s as usize)
            .unwrap_or(self.bytes().len());
        let mut text = &self.bytes()[lo..hi];
        while let [rest @ .., b'\n' | b'\r'] = text {
            text = rest;
        }
        text
    }
}

/// All input files of one run, indexed by [`FileId`].
#[derive(Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// An empty map.
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    /// An empty map with room for `n` files.
    pub fn with_capacity(n: usize) -> SourceMap {
        SourceMap {
            files: Vec::with_capacity(n),
        }
    }

    /// Adds a file and returns its id.
    pub fn add(&mut self, file: SourceFile) -> FileId {
        let id = FileId(self.files.len() as u32);
        self.files.push(file);
        id
    }

    /// The file with id `id`.
    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.index()]
    }

    /// All files in id order.
    pub fn files(&self) -> impl ExactSizeIterator<Item = (FileId, &SourceFile)> {
        self.files
            .iter()
            .enumerate()
            .map(|(i, f)| (FileId(i as u32), f))
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when no file was added.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
