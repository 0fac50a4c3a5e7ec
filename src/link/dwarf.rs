//! Merging the debug sections of the linked modules into one block per section
//! (docs/linking.md, "Debug information"; the measurements behind every rule are in
//! research/dwarf-merge/REPORT.md).
//!
//! Each module's blocks are decoded into bytes, relocations and labels ([`block`]).
//! Then, in link order:
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

mod block;
mod info;

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::diag::{Code, Diagnostic};
use crate::ir::ItemKind;
use crate::source::Span;

use self::block::{Block, Value};
use super::inputs::Inputs;
use crate::write::rope::Rope;

/// Why a module's debug data is dropped: where, and what is not supported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unsupported {
    /// In the module's source.
    pub span: Span,
    /// A noun phrase: "DWARF version 5", "64-bit DWARF", ...
    pub what: String,
}

impl Unsupported {
    pub fn at(span: Span, what: impl Into<String>) -> Unsupported {
        Unsupported {
            span,
            what: what.into(),
        }
    }
}

/// One section block of a module, decoded.
struct ModuleBlock {
    name: Vec<u8>,
    block: Block,
    /// The section name in the source (where messages point).
    at: Span,
}

/// The merged debug sections, ready to be written.
pub(crate) struct Merged {
    /// In order of first appearance; `.debug_abbrev` is the union table.
    sections: Vec<(Vec<u8>, Vec<Part>)>,
    /// Per module: true unless its debug data was dropped.
    pub kept: Vec<bool>,
    /// One per dropped module.
    pub warnings: Vec<Diagnostic>,
}

/// One module's data in a merged section.
struct Part {
    module: u32,
    block: Block,
}

const ABBREV: &[u8] = b".debug_abbrev";
const INFO: &[u8] = b".debug_info";
const LINE: &[u8] = b".debug_line";

/// Merges the debug sections of `inputs`; `files[m]` maps module m's `.file` numbers
/// to the merged module's.
pub(crate) fn merge(inputs: &Inputs, files: &[FxHashMap<u32, u32>]) -> Merged {
    let decoded: Vec<Result<Vec<ModuleBlock>, Unsupported>> = (0..inputs.modules.len())
        .into_par_iter()
        .map(|mi| decode_module(inputs, mi as u32))
        .collect();
    let mut merged = Merged {
        sections: Vec::new(),
        kept: vec![true; inputs.modules.len()],
        warnings: Vec::new(),
    };
    let mut union = info::Union::default();
    let mut totals: FxHashMap<Vec<u8>, u64> = FxHashMap::default();
    for (mi, blocks) in decoded.into_iter().enumerate() {
        let before = union.len();
        let parts = blocks.and_then(|b| merge_module(b, &files[mi], &mut union, &totals));
        let parts = match parts {
            Ok(p) => p,
            Err(u) => {
                union.truncate(before);
                merged.kept[mi] = false;
                merged.warnings.push(dropped(inputs, mi as u32, &u));
                continue;
            }
        };
        for (name, block) in parts {
            *totals.entry(name.clone()).or_insert(0) += block.bytes.len() as u64;
            let at = match merged.sections.iter().position(|(n, _)| *n == name) {
                Some(at) => at,
                None => {
                    merged.sections.push((name, Vec::new()));
                    merged.sections.len() - 1
                }
            };
            if merged.sections[at].0 != ABBREV {
                merged.sections[at].1.push(Part {
                    module: mi as u32,
                    block,
                });
            }
        }
    }
    // The union table takes the place of the first module's table.
    let table = Block {
        bytes: union.encode(),
        ..Block::default()
    };
    merged.sections.retain_mut(|(name, parts)| {
        if name != ABBREV {
            return true;
        }
        parts.push(Part {
            module: 0,
            block: table.clone(),
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

/// Decodes every `.section` block of module `mi`.
fn decode_module(inputs: &Inputs, mi: u32) -> Result<Vec<ModuleBlock>, Unsupported> {
    let m = &inputs.modules[mi as usize];
    let mut out: Vec<ModuleBlock> = Vec::new();
    for item in &m.items {
        let ItemKind::Section(sec) = &item.kind else {
            continue;
        };
        // Asked for here: most modules have no section, and their files need not be
        // mapped.
        let src = inputs.src(mi);
        let name = src[sec.name.range()].to_vec();
        if out.iter().any(|b| b.name == name) {
            // ptxas lays a repeated block over the first one (REPORT.md, rule 1).
            return Err(Unsupported::at(
                sec.name,
                "two blocks of one section in a module",
            ));
        }
        out.push(ModuleBlock {
            block: block::decode(m.file, src, item.span, sec.size)?,
            name,
            at: sec.name,
        });
    }
    Ok(out)
}

/// A module's parts of the merged sections: section name and data.
type Parts = Vec<(Vec<u8>, Block)>;

/// The parts module `blocks` adds to the merged sections, with every section-relative
/// word moved. `totals` holds the sizes of the merged sections so far.
fn merge_module(
    blocks: Vec<ModuleBlock>,
    files: &FxHashMap<u32, u32>,
    union: &mut info::Union,
    totals: &FxHashMap<Vec<u8>, u64>,
) -> Result<Parts, Unsupported> {
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
            let r = info::reencode(&i.block, &a.block.bytes, &renumber, union).map_err(|f| {
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
        let mut block = match (&*b.name, &mut reencoded) {
            // Replaced by the union table (a table no unit uses is dropped).
            (ABBREV, _) => Block::default(),
            (INFO, Some(r)) => std::mem::take(&mut r.block),
            _ => b.block,
        };
        for r in &mut block.relocs {
            let Value::Section { name, addend } = &mut r.value else {
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
                Some(v) => *addend = v,
                None => {
                    let what = format!(
                        "the reference `{}{addend:+}` in `{}`",
                        String::from_utf8_lossy(name),
                        String::from_utf8_lossy(&b.name)
                    );
                    return Err(Unsupported::at(b.at, what));
                }
            }
        }
        parts.push((b.name, block));
    }
    Ok(parts)
}

impl Merged {
    /// Writes the sections to `out`; `name(module, span)` is the output text of the
    /// token at `span` in that module (a label or symbol renamed, else as written).
    pub fn write(&self, out: &mut Rope, name: &dyn Fn(u32, Span) -> Vec<u8>) {
        for (section, parts) in &self.sections {
            let mut t = Text::default();
            t.out.extend_from_slice(b"\t.section\t");
            t.out.extend_from_slice(section);
            t.out.extend_from_slice(b"\n\t{\n");
            for p in parts {
                t.block(&p.block, &|span| name(p.module, span));
            }
            t.end_run();
            t.out.extend_from_slice(b"\t}\n");
            out.push_bytes(&t.out);
        }
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

    /// Appends `b`; `name(span)` is the output text of a token of its module.
    fn block(&mut self, b: &Block, name: &dyn Fn(Span) -> Vec<u8>) {
        use std::io::Write as _;
        let mut labels = b.labels.iter().peekable();
        let mut relocs = b.relocs.iter().peekable();
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
                    Value::Section { name, addend } => {
                        self.out.extend_from_slice(name);
                        if *addend != 0 {
                            let _ = write!(self.out, "+{addend}");
                        }
                    }
                    Value::Expr(tokens) => {
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

    /// The blocks of a module made of `sections` (`.section N { ... }` texts).
    fn module(sections: &[&str]) -> Vec<ModuleBlock> {
        let src = sections.join("\n");
        let mut blocks = Vec::new();
        let mut lo = 0;
        for s in sections {
            let span = Span::new(lo as u32, (lo + s.len()) as u32);
            let name = s.split_whitespace().nth(1).unwrap().as_bytes().to_vec();
            let block = block::decode(FileId(0), src.as_bytes(), span, 0).unwrap();
            blocks.push(ModuleBlock {
                name,
                block,
                at: span,
            });
            lo += s.len() + 1;
        }
        blocks
    }

    /// Abbreviations: 1 = compile unit (name string, location data4), 2 = variable
    /// (name string, decl_file data1). One DWARF 2 unit: CU "a" at 11 with location
    /// list `.debug_loc+4`, variable "b" at 18 in file 1.
    const ABBREV_TEXT: &str =
        ".section .debug_abbrev { .b8 1,17,1,3,8,2,6,0,0,2,52,0,3,8,58,11,0,0,0 }";
    const INFO_TEXT: &str = ".section .debug_info { .b32 19\n.b8 2,0\n.b32 .debug_abbrev\n.b8 8\n\
                        .b8 1,97,0\n.b32 .debug_loc+4\n.b8 2,98,0,1\n.b8 0 }";

    /// Merges a module of `sections` after earlier modules that put 10 bytes in
    /// `.debug_loc`, 100 in `.debug_info`, 7 in `.debug_str` and one abbreviation in the
    /// union table; its file 1 becomes file 3.
    fn merge_one(sections: &[&str]) -> (Result<Parts, Unsupported>, info::Union) {
        let blocks = module(sections);
        let mut union = info::Union::default();
        union.code(&info::Abbrev {
            tag: 0x11,
            children: 0,
            attrs: Vec::new(),
        });
        let totals: FxHashMap<Vec<u8>, u64> = [
            (b".debug_loc".to_vec(), 10),
            (INFO.to_vec(), 100),
            (b".debug_str".to_vec(), 7),
        ]
        .into_iter()
        .collect();
        let files: FxHashMap<u32, u32> = [(1, 3)].into_iter().collect();
        let r = merge_module(blocks, &files, &mut union, &totals);
        (r, union)
    }

    fn section_refs(b: &Block) -> Vec<String> {
        b.relocs
            .iter()
            .filter_map(|r| match &r.value {
                Value::Section { name, addend } => {
                    Some(format!("{}+{addend}", String::from_utf8_lossy(name)))
                }
                Value::Expr(_) => None,
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
        let b = block::decode(
            FileId(0),
            text.as_bytes(),
            Span::new(0, text.len() as u32),
            0,
        )
        .unwrap();
        let mut t = Text::default();
        let name = |s: Span| {
            let t = &text.as_bytes()[s.range()];
            if t == b"a" {
                b"a$m1".to_vec()
            } else {
                t.to_vec()
            }
        };
        t.block(&b, &name);
        // A second module's part continues the `.b8` line.
        let tail = ".section .debug_str { .b8 3 }";
        let b2 = block::decode(
            FileId(0),
            tail.as_bytes(),
            Span::new(0, tail.len() as u32),
            0,
        )
        .unwrap();
        t.block(&b2, &name);
        t.block(&b2, &name);
        t.end_run();
        assert_eq!(
            String::from_utf8(t.out).unwrap(),
            "L0:\n.b8 1,2\n.b32 .debug_loc+3\n.b64 a$m1+4\nL1:\n.b8 3,3\n"
        );
    }
}
