//! What parsing computes for the linker once a module is resolved (see the
//! documentation of [`Module`]): the symbols' names, the kept text, the functions
//! with aggregate parameters, the texture users and the `.file` items.

use crate::ir::{ItemId, ItemKind, KeptText, Module, SymbolId, SymbolKind};
use crate::source::Span;

/// Fills the fields of `m` that the linker reads instead of the items; `src` is the
/// module's source.
pub(super) fn finish(m: &mut Module, src: &[u8]) {
    copy_symbol_names(m, src);
    keep_text(m, src);
    m.aggregate_param_functions = aggregate_param_functions(m);
    (m.uses_textures, m.file_directives) = textures_and_files(m);
}

/// Fills [`Module::symbol_names`] from `src`, the module's source.
fn copy_symbol_names(m: &mut Module, src: &[u8]) {
    let len = m.symbols.iter().map(|s| s.name.len()).sum();
    m.symbol_names = Vec::with_capacity(len);
    m.symbol_name_ends = Vec::with_capacity(m.symbols.len());
    for s in &m.symbols {
        m.symbol_names.extend_from_slice(&src[s.name.range()]);
        m.symbol_name_ends.push(m.symbol_names.len() as u32);
    }
}

/// Fills [`Module::kept`] from `src`, the module's source.
fn keep_text(m: &mut Module, src: &[u8]) {
    let mut spans: Vec<Span> = m
        .items
        .iter()
        .filter_map(|item| match &item.kind {
            // A prototype is written from the definition's header. A declaration's
            // is written only for a function no module defines (a system call),
            // and then read from the input: copied for every declaration, the
            // headers of a link of thousands of modules that each declare the same
            // library functions were most of the kept text.
            ItemKind::Function(f) if f.body.is_some() => {
                Some(Span::new(item.span.lo, f.header_end))
            }
            // `.alias` directives are written and their names looked up.
            ItemKind::Variable(_) | ItemKind::File(_) | ItemKind::Alias { .. } => Some(item.span),
            _ => None,
        })
        .collect();
    // The `//:` comments, which the layout reads and writes the offloading map
    // comments of; they may lie inside an item, even inside a kept header.
    if !m.map_comments.is_empty() {
        spans.extend_from_slice(&m.map_comments);
        spans.sort_by_key(|s| (s.lo, std::cmp::Reverse(s.hi)));
        let mut end = 0;
        spans.retain(|s| {
            let inside = s.hi <= end;
            end = end.max(s.hi);
            !inside
        });
    }
    // Sized first: growing the copy as it is made copied it again and again.
    let bytes = spans.iter().map(|s| s.len()).sum();
    let mut kept = KeptText {
        text: Vec::with_capacity(bytes),
        spans: Vec::with_capacity(spans.len()),
    };
    for span in spans {
        kept.keep(src, span);
    }
    m.kept = kept;
}

/// [`Module::uses_textures`] and [`Module::file_directives`], in one pass over the
/// items.
fn textures_and_files(m: &Module) -> (bool, Vec<ItemId>) {
    let mut textures = false;
    let mut files = Vec::new();
    for (i, item) in m.items.iter().enumerate() {
        match &item.kind {
            ItemKind::File(_) => files.push(ItemId(i as u32)),
            ItemKind::Variable(v) => textures |= v.spec.ty.is_opaque(),
            ItemKind::Function(f) => {
                let params = f.signature.params().unwrap_or_default();
                textures |= params.iter().any(|p| p.spec.ty.is_opaque());
            }
            _ => {}
        }
    }
    (textures, files)
}

/// The functions defined in `m` with an aggregate parameter or return value.
fn aggregate_param_functions(m: &Module) -> Vec<SymbolId> {
    m.symbols_with_ids()
        .filter(|(_, s)| s.kind == SymbolKind::Function)
        .filter(|(_, s)| {
            s.definition().is_some_and(|d| match &m.item(d.item).kind {
                ItemKind::Function(f) => f
                    .signature
                    .all()
                    .iter()
                    .any(|p| p.spec.align.is_some() && p.is_array()),
                _ => false,
            })
        })
        .map(|(id, _)| id)
        .collect()
}
