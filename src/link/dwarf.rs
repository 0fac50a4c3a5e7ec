//! Merging the debug sections of the linked modules into one block per section
//! (docs/linking.md, "Debug information"; the measurements behind every rule are in
//! research/dwarf-merge/REPORT.md).
//!
//! Each module's blocks were decoded into bytes, relocations and labels by the
//! parser ([`crate::ir::SectionData`]); the merge reads them from the IR, never the
//! blocks' text. Then, in link order:
//! * its `.debug_info` is re-encoded against one union abbreviation table ([`info`]):
//!   ptxas looks abbreviations up by position in the table at `.debug_abbrev+0`,
//!   so per-module tables cannot be concatenated. `DW_AT_decl_file` and
//!   `DW_AT_call_file` are renumbered like `.file`, because ptxas generates one line
//!   table for the merged module;
//! * a section-relative word `.debug_X+M` is moved by the bytes earlier modules put in
//!   `.debug_X` (through the re-encoding for `.debug_info`), except `.debug_line`,
//!   which ptxas generates and all units share at offset 0;
//! * its parts are appended to the merged sections.
//!
//! Labels and symbols keep their spans: they are renamed when the text is written.
//! A module whose debug data cannot be decoded or merged loses it, with a warning
//! naming the file and the reason; the others are unaffected. Nothing here panics
//! on bad input.

mod info;

use std::borrow::Cow;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::diag::{Code, Diagnostic};
use crate::ir::{ItemKind, RelocValue, SectionData, Unsupported};
use crate::source::Span;

use super::inputs::Inputs;

/// One section block of a module, as the parser decoded it.
struct ModuleBlock<'a> {
    name: &'a [u8],
    block: &'a SectionData,
    /// The section name in the source (where messages point).
    at: Span,
}

/// The merged debug sections, ready to be written; they borrow the modules' blocks.
pub(crate) struct Merged<'a> {
    /// In order of first appearance; `.debug_abbrev` is the union table.
    sections: Vec<(&'a [u8], Vec<Part<'a>>)>,
    /// Per module: true unless its debug data was dropped.
    pub kept: Vec<bool>,
    /// One per dropped module.
    pub warnings: Vec<Diagnostic>,
}

/// One module's data in a merged section.
struct Part<'a> {
    module: u32,
    /// The module's block, or what replaces it (the re-encoded `.debug_info`, the
    /// union table).
    block: Cow<'a, SectionData>,
    /// The offset of each section-relative word of `block`
    /// ([`RelocValue::Section`]), in order, moved into the merged section.
    addends: Vec<i64>,
}

const ABBREV: &[u8] = b".debug_abbrev";
const INFO: &[u8] = b".debug_info";
const LINE: &[u8] = b".debug_line";

/// Merges the debug sections of `inputs`; `files[m]` maps module m's `.file` numbers
/// to the merged module's.
pub(crate) fn merge<'a>(inputs: &Inputs<'a>, files: &[FxHashMap<u32, u32>]) -> Merged<'a> {
    let decoded: Vec<Result<Vec<ModuleBlock<'a>>, Unsupported>> = (0..inputs.modules.len())
        .into_par_iter()
        .map(|mi| module_blocks(inputs, mi as u32))
        .collect();
    let mut merged = Merged {
        sections: Vec::new(),
        kept: vec![true; inputs.modules.len()],
        warnings: Vec::new(),
    };
    let mut union = info::Union::default();
    let mut totals: FxHashMap<&[u8], u64> = FxHashMap::default();
    for (mi, blocks) in decoded.into_iter().enumerate() {
        let before = union.len();
        let parts =
            blocks.and_then(|b| merge_module(mi as u32, b, &files[mi], &mut union, &totals));
        let parts = match parts {
            Ok(p) => p,
            Err(u) => {
                union.truncate(before);
                merged.kept[mi] = false;
                merged.warnings.push(dropped(inputs, mi as u32, &u));
                continue;
            }
        };
        for (name, part) in parts {
            *totals.entry(name).or_insert(0) += part.block.bytes.len() as u64;
            let at = match merged.sections.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    merged.sections.push((name, Vec::new()));
                    merged.sections.len() - 1
                }
            };
            if merged.sections[at].0 != ABBREV {
                merged.sections[at].1.push(part);
            }
        }
    }
    // The union table takes the place of the first module's table.
    let table = SectionData {
        bytes: union.encode(),
        ..SectionData::default()
    };
    merged.sections.retain_mut(|(name, parts)| {
        if *name != ABBREV {
            return true;
        }
        parts.push(Part {
            module: 0,
            block: Cow::Owned(table.clone()),
            addends: Vec::new(),
        });
        !union.is_empty()
    });
    merged
}

fn dropped(inputs: &Inputs, mi: u32, u: &Unsupported) -> Diagnostic {
    let file = inputs.modules[mi as usize].file;
    Diagnostic::warning(
        Code::DebugInfo,
        file,
        u.span,
        format!(
            "the debug information of {} is dropped: ptxld cannot merge {}",
            inputs.file_name(mi),
            u.what
        ),
    )
}

/// Every `.section` block of module `mi`, or the first that cannot be merged.
fn module_blocks<'a>(inputs: &Inputs<'a>, mi: u32) -> Result<Vec<ModuleBlock<'a>>, Unsupported> {
    let m = &inputs.modules[mi as usize];
    let mut out: Vec<ModuleBlock> = Vec::new();
    for item in &m.items {
        let ItemKind::Section(sec) = &item.kind else {
            continue;
        };
        // Asked for here: most modules have no section, and their files need not be
        // mapped.
        let src = inputs.src(mi);
        let name = &src[sec.name.range()];
        if out.iter().any(|b| b.name == name) {
            // ptxas lays a repeated block over the first one (REPORT.md, rule 1).
            return Err(Unsupported::at(
                sec.name,
                "two blocks of one section in a module",
            ));
        }
        out.push(ModuleBlock {
            block: (*sec.data).as_ref().map_err(Unsupported::clone)?,
            name,
            at: sec.name,
        });
    }
    Ok(out)
}

/// A module's parts of the merged sections: section name and data.
type Parts<'a> = Vec<(&'a [u8], Part<'a>)>;

/// The parts module `module` (of `blocks`) adds to the merged sections, with every
/// section-relative word moved. `totals` holds the sizes of the merged sections so
/// far.
fn merge_module<'a>(
    module: u32,
    blocks: Vec<ModuleBlock<'a>>,
    files: &FxHashMap<u32, u32>,
    union: &mut info::Union,
    totals: &FxHashMap<&[u8], u64>,
) -> Result<Parts<'a>, Unsupported> {
    let find = |n: &[u8]| blocks.iter().find(|b| b.name == n);
    let renumber = |f: u64| {
        let f = u32::try_from(f).ok()?;
        files.get(&f).map(|&n| u64::from(n))
    };
    let mut reencoded = match (find(INFO), find(ABBREV)) {
        (Some(i), Some(a)) => {
            if !a.block.relocs.is_empty() || !a.block.labels.is_empty() {
                return Err(Unsupported::at(
                    a.at,
                    "labels or symbolic values in `.debug_abbrev`",
                ));
            }
            let r = info::reencode(i.block, &a.block.bytes, &renumber, union).map_err(|f| {
                Unsupported::at(
                    i.at,
                    format!("{} (at offset {:#x} of `.debug_info`)", f.what, f.at),
                )
            })?;
            Some(r)
        }
        (Some(i), None) => {
            return Err(Unsupported::at(
                i.at,
                "a `.debug_info` without `.debug_abbrev`",
            ));
        }
        _ => None,
    };
    let base = |n: &[u8]| totals.get(n).copied().unwrap_or(0);
    let mut parts = Vec::with_capacity(blocks.len());
    for b in blocks {
        let block = match (b.name, &mut reencoded) {
            // Replaced by the union table (a table no unit uses is dropped).
            (ABBREV, _) => Cow::Owned(SectionData::default()),
            (INFO, Some(r)) => Cow::Owned(std::mem::take(&mut r.block)),
            _ => Cow::Borrowed(b.block),
        };
        let mut addends = Vec::new();
        for r in &block.relocs {
            let RelocValue::Section { name, addend } = &r.value else {
                continue;
            };
            let new = match &**name {
                ABBREV if *addend == 0 => Some(0),
                ABBREV => None,
                LINE => Some(*addend),
                INFO => reencoded
                    .as_ref()
                    .and_then(|re| re.moved(u64::try_from(*addend).ok()?))
                    .and_then(|o| i64::try_from(base(INFO) + u64::from(o)).ok()),
                other => i64::try_from(base(other))
                    .ok()
                    .and_then(|n| n.checked_add(*addend)),
            };
            let fits = |v: i64| v >= 0 && (r.width == 8 || v <= i64::from(u32::MAX));
            match new.filter(|&v| fits(v)) {
                Some(v) => addends.push(v),
                None => {
                    let what = format!(
                        "the reference `{}{addend:+}` in `{}`",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(b.name)
                    );
                    return Err(Unsupported::at(b.at, what));
                }
            }
        }
        parts.push((
            b.name,
            Part {
                module,
                block,
                addends,
            },
        ));
    }
    Ok(parts)
}

impl Merged<'_> {
    /// The text of the sections, one block each; `name(module, span)` is the output
    /// text of the token at `span` in that module (a label or symbol renamed, else as
    /// written).
    pub fn text(&self, name: &dyn Fn(u32, Span) -> Vec<u8>) -> Vec<Vec<u8>> {
        let mut blocks = Vec::with_capacity(self.sections.len());
        for (section, parts) in &self.sections {
            let mut t = Text::default();
            t.out.extend_from_slice(b"\t.section\t");
            t.out.extend_from_slice(section);
            t.out.extend_from_slice(b"\n\t{\n");
            for p in parts {
                t.block(&p.block, &p.addends, &|span| name(p.module, span));
            }
            t.end_run();
            t.out.extend_from_slice(b"\t}\n");
            blocks.push(t.out);
        }
        blocks
    }
}

/// Section text being written: labels and relocations on lines of their own, plain
/// bytes in `.b8` lines of up to 32, which continue from one module's part to the
/// next (so that relinking an output reproduces it).
#[derive(Default)]
struct Text {
    out: Vec<u8>,
    /// Bytes on the current `.b8` line.
    run: usize,
}

impl Text {
    fn end_run(&mut self) {
        if self.run > 0 {
            self.out.push(b'\n');
            self.run = 0;
        }
    }

    /// Appends `b`, whose section-relative words have the offsets `addends` (in
    /// order); `name(span)` is the output text of a token of its module.
    fn block(&mut self, b: &SectionData, addends: &[i64], name: &dyn Fn(Span) -> Vec<u8>) {
        use std::io::Write as _;
        let mut labels = b.labels.iter().peekable();
        let mut relocs = b.relocs.iter().peekable();
        let mut addends = addends.iter();
        let mut pos = 0usize;
        loop {
            while let Some(&(_, label)) = labels.next_if(|l| l.0 as usize == pos) {
                self.end_run();
                self.out.extend_from_slice(&name(label));
                self.out.extend_from_slice(b":\n");
            }
            if pos >= b.bytes.len() {
                return;
            }
            if let Some(r) = relocs.next_if(|r| r.at as usize == pos) {
                self.end_run();
                let _ = write!(self.out, ".b{} ", 8 * u32::from(r.width));
                match &r.value {
                    RelocValue::Section { name, .. } => {
                        self.out.extend_from_slice(name);
                        let addend = addends.next().copied().unwrap_or(0);
                        if addend != 0 {
                            let _ = write!(self.out, "+{addend}");
                        }
                    }
                    RelocValue::Expr(tokens) => {
                        for &span in tokens {
                            self.out.extend_from_slice(&name(span));
                        }
                    }
                }
                self.out.push(b'\n');
                pos += r.width as usize;
                continue;
            }
            let sep = if self.run == 0 { ".b8 " } else { "," };
            let _ = write!(self.out, "{sep}{}", b.bytes[pos]);
            self.run += 1;
            if self.run == 32 {
                self.end_run();
            }
            pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    use crate::ir::Module;

    /// A module of `sections` (`.section N { ... }` texts), parsed.
    fn module(sections: &[&str]) -> (String, Module) {
        let src = sections.join("\n");
        let m = crate::parse::parse_module(FileId(0), src.as_bytes()).module;
        (src, m)
    }

    /// The blocks of `m` (parsed from `src`), as the merge reads them.
    fn blocks<'a>(src: &'a str, m: &'a Module) -> Vec<ModuleBlock<'a>> {
        m.items
            .iter()
            .filter_map(|i| match &i.kind {
                ItemKind::Section(s) => Some(ModuleBlock {
                    name: &src.as_bytes()[s.name.range()],
                    block: (*s.data).as_ref().unwrap(),
                    at: s.name,
                }),
                _ => None,
            })
            .collect()
    }

    /// The data of `p` as written: its section-relative words moved.
    fn moved(p: &Part) -> SectionData {
        let mut block = p.block.clone().into_owned();
        let mut addends = p.addends.iter();
        for r in &mut block.relocs {
            if let RelocValue::Section { addend, .. } = &mut r.value {
                *addend = *addends.next().unwrap();
            }
        }
        assert!(addends.next().is_none());
        block
    }

    /// Abbreviations: 1 = compile unit (name string, location data4), 2 = variable
    /// (name string, decl_file data1). One DWARF 2 unit: CU "a" at 11 with location
    /// list `.debug_loc+4`, variable "b" at 18 in file 1.
    const ABBREV_TEXT: &str =
        ".section .debug_abbrev { .b8 1,17,1,3,8,2,6,0,0,2,52,0,3,8,58,11,0,0,0 }";
    const INFO_TEXT: &str = ".section .debug_info { .b32 19\n.b8 2,0\n.b32 .debug_abbrev\n.b8 8\n\
                        .b8 1,97,0\n.b32 .debug_loc+4\n.b8 2,98,0,1\n.b8 0 }";

    /// A module's parts of the merged sections, as written: name and data.
    type Written = Result<Vec<(Vec<u8>, SectionData)>, Unsupported>;

    /// Merges a module of `sections` after earlier modules that put 10 bytes in
    /// `.debug_loc`, 100 in `.debug_info`, 7 in `.debug_str` and one abbreviation in the
    /// union table; its file 1 becomes file 3.
    fn merge_one(sections: &[&str]) -> (Written, info::Union) {
        let (src, m) = module(sections);
        let blocks = blocks(&src, &m);
        let mut union = info::Union::default();
        union.code(&info::Abbrev {
            tag: 0x11,
            children: 0,
            attrs: Vec::new(),
        });
        let totals: FxHashMap<&[u8], u64> = [
            (&b".debug_loc"[..], 10),
            (INFO, 100),
            (&b".debug_str"[..], 7),
        ]
        .into_iter()
        .collect();
        let files: FxHashMap<u32, u32> = [(1, 3)].into_iter().collect();
        let r = merge_module(0, blocks, &files, &mut union, &totals);
        let r = r.map(|parts| parts.iter().map(|(n, p)| (n.to_vec(), moved(p))).collect());
        (r, union)
    }

    fn section_refs(b: &SectionData) -> Vec<String> {
        b.relocs
            .iter()
            .filter_map(|r| match &r.value {
                RelocValue::Section { name, addend } => {
                    Some(format!("{}+{addend}", String::from_utf8_lossy(name)))
                }
                RelocValue::Expr(_) => None,
            })
            .collect()
    }

    #[test]
    fn later_modules_references_move_by_the_earlier_modules_bytes() {
        let refs = ".section .debug_pubnames { .b32 .debug_info+18\n.b32 .debug_str+1\n\
                    .b32 .debug_line\n.b64 Lfunc_begin0 }";
        let (parts, union) = merge_one(&[ABBREV_TEXT, INFO_TEXT, refs]);
        let parts = parts.unwrap();
        let names: Vec<&[u8]> = parts.iter().map(|(n, _)| n.as_slice()).collect();
        assert_eq!(names, [ABBREV, INFO, b".debug_pubnames"]);
        assert!(
            parts[0].1.bytes.is_empty(),
            "the module's table is replaced"
        );
        let info = &parts[1].1;
        assert_eq!(section_refs(info), [".debug_abbrev+0", ".debug_loc+14"]);
        // Codes 2 and 3 of the union (same size); decl_file 1 is file 3 now.
        assert_eq!(&info.bytes[11..12], &[2]);
        assert_eq!(&info.bytes[18..22], &[3, 98, 0, 3]);
        assert_eq!(union.len(), 3);
        // `.debug_line` stays at 0: ptxas generates one line table for all units.
        assert_eq!(
            section_refs(&parts[2].1),
            [".debug_info+118", ".debug_str+8", ".debug_line+0"]
        );
    }

    #[test]
    fn references_that_cannot_be_moved_drop_the_module() {
        let cases = [
            // Into the middle of a DIE.
            ".section .debug_pubnames { .b32 .debug_info+19 }",
            // Into a per-module abbreviation table, which no longer exists.
            ".section .debug_pubnames { .b32 .debug_abbrev+9 }",
            // Before the section.
            ".section .debug_pubnames { .b32 .debug_str-8 }",
        ];
        for c in cases {
            let (r, _) = merge_one(&[ABBREV_TEXT, INFO_TEXT, c]);
            let e = r.unwrap_err();
            assert!(e.what.starts_with("the reference `"), "{c}: {e:?}");
        }
        let (r, _) = merge_one(&[INFO_TEXT]);
        assert!(r.unwrap_err().what.contains("without `.debug_abbrev`"));
    }

    #[test]
    fn blocks_are_written_as_labels_and_data() {
        let text = ".section .debug_str { L0: .b8 1,2 .b32 .debug_loc+3 .b64 a+4 L1: }";
        let (src, m) = module(&[text]);
        let b = blocks(&src, &m)[0].block;
        let mut t = Text::default();
        let name = |s: Span| {
            let t = &text.as_bytes()[s.range()];
            if t == b"a" {
                b"a$m1".to_vec()
            } else {
                t.to_vec()
            }
        };
        // `.debug_loc+3` moved by 10 bytes of earlier modules.
        t.block(b, &[13], &name);
        // A second module's part continues the `.b8` line.
        let tail = ".section .debug_str { .b8 3 }";
        let (tail_src, tail_m) = module(&[tail]);
        let b2 = blocks(&tail_src, &tail_m)[0].block;
        t.block(b2, &[], &name);
        t.block(b2, &[], &name);
        t.end_run();
        assert_eq!(
            String::from_utf8(t.out).unwrap(),
            "L0:\n.b8 1,2\n.b32 .debug_loc+13\n.b64 a$m1+4\nL1:\n.b8 3,3\n"
        );
    }

    /// The merge reads the blocks the parser decoded, never their text: merged from
    /// sources whose bytes are all blanked except the section names, the modules
    /// give the same sections, the same kept modules and the same warning (a block
    /// the parser could not decode drops its module when the merge runs).
    #[test]
    fn the_merge_reads_the_blocks_from_the_ir_not_their_text() {
        use crate::input::Bytes;
        use crate::source::{SourceFile, SourceMap};
        let refs = ".section .debug_pubnames { $L0: .b32 .debug_info+11\n.b64 $L0+4 }";
        let texts = [
            [ABBREV_TEXT, INFO_TEXT, refs].join("\n"),
            [
                ABBREV_TEXT,
                INFO_TEXT,
                ".section .debug_loc { .b8 1 .b32 2*3 }",
            ]
            .join("\n"),
            [ABBREV_TEXT, INFO_TEXT, refs].join("\n"),
        ];
        let modules: Vec<Module> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| crate::parse::parse_module(FileId(i as u32), t.as_bytes()).module)
            .collect();
        let merged = |blank: bool| {
            let mut sources = SourceMap::new();
            for (i, (t, m)) in texts.iter().zip(&modules).enumerate() {
                let mut bytes = t.as_bytes().to_vec();
                if blank {
                    let mut names = vec![false; bytes.len()];
                    for item in &m.items {
                        if let ItemKind::Section(s) = &item.kind {
                            names[s.name.range()].fill(true);
                        }
                    }
                    for (b, name) in bytes.iter_mut().zip(names) {
                        if !name {
                            *b = b' ';
                        }
                    }
                }
                sources.add(SourceFile::new(
                    format!("m{i}.ptx"),
                    None,
                    Bytes::Owned(bytes),
                ));
            }
            let inputs = Inputs {
                sources: &sources,
                modules: &modules,
            };
            let files = vec![[(1, 1)].into_iter().collect(); modules.len()];
            let merged = merge(&inputs, &files);
            let blocks =
                merged.text(&|mi, span| texts[mi as usize].as_bytes()[span.range()].to_vec());
            let text = String::from_utf8(blocks.concat()).unwrap();
            (text, merged.kept.clone(), merged.warnings.clone())
        };
        let (text, kept, warnings) = merged(false);
        assert_eq!(kept, [true, false, true], "{warnings:?}");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].message.contains("an operator other than"));
        // The third module's reference moved by the first module's 23 bytes.
        assert!(text.contains(".b32 .debug_info+11\n"), "{text}");
        assert!(text.contains(".b32 .debug_info+34\n"), "{text}");
        assert_eq!(merged(true), (text, kept, warnings));
    }
}
