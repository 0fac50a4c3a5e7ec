//! What the output carries of the inputs' debug information: the policy for the
//! DWARF sections, and the numbering of the `.file` directives.

use rustc_hash::FxHashMap;

use crate::ir::ItemKind;
use crate::source::Span;

use super::dwarf::Merged;
use super::inputs::Inputs;

/// The debug information of the output: the policy, the numbering of `.file`
/// directives, and with [`Dwarf::Merge`] the merged sections.
pub(crate) struct DebugPlan<'a> {
    pub dwarf: Dwarf,
    pub files: FileNumbers,
    pub merged: Option<Merged<'a>>,
}

impl<'a> DebugPlan<'a> {
    /// The plan for policy `dwarf`: the `.file` numbering, and with [`Dwarf::Merge`]
    /// the merged sections.
    pub fn make(inputs: &Inputs<'a>, dwarf: Dwarf) -> DebugPlan<'a> {
        let files = number_files(inputs);
        let merged = (dwarf == Dwarf::Merge).then(|| super::dwarf::merge(inputs, &files.maps));
        DebugPlan {
            dwarf,
            files,
            merged,
        }
    }
}

/// How debug sections are carried over.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Dwarf {
    /// The sections of all modules are merged, one block per section
    /// ([`super::dwarf`]). A module whose debug data could not be merged loses its
    /// sections and the `.loc` attributes that name their labels.
    Merge,
    /// Drop all sections and the `.loc` attributes that name their labels: code
    /// removed by `--gc-sections` that the DWARF describes.
    Drop,
    /// `--strip-debug`: also drop `.file`, every `.loc` and the `debug` target option.
    Strip,
}

/// The `.file` numbering of the merged module (see [`number_files`]).
pub(crate) struct FileNumbers {
    /// Per module: old index → new index.
    pub maps: Vec<FxHashMap<u32, u32>>,
    /// The `.file` items to emit, one per new number: (module, item index).
    pub items: Vec<(u32, usize)>,
}

/// Numbers the `.file` entries of all modules 1, 2, ...; identical entries (same
/// name, timestamp and size) share a number.
pub(crate) fn number_files(inputs: &Inputs) -> FileNumbers {
    let mut by_text: FxHashMap<&[u8], u32> = FxHashMap::default();
    let mut maps = Vec::new();
    let mut items = Vec::new();
    for (mi, m) in inputs.modules.iter().enumerate() {
        let mut map = FxHashMap::default();
        for &id in &m.file_directives {
            let (ii, item) = (id.0 as usize, m.item(id));
            if let ItemKind::File(f) = &item.kind {
                let key = Span::new(f.index_span.hi, item.span.hi);
                let key = m
                    .kept
                    .slice(key)
                    .unwrap_or_else(|| &inputs.src(mi as u32)[key.range()]);
                let next = by_text.len() as u32 + 1;
                let new = *by_text.entry(key).or_insert_with(|| {
                    items.push((mi as u32, ii));
                    next
                });
                map.insert(f.index, new);
            }
        }
        maps.push(map);
    }
    FileNumbers { maps, items }
}
