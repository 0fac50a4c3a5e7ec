//! Writing a module back out by splicing its source bytes.
//!
//! The writer never pretty-prints: it copies the input bytes of each item and the
//! trivia between items, and substitutes only the identifier tokens whose symbol is
//! renamed. With no renames the output is the input, byte for byte.

use crate::ir::{Module, SymbolId};
use crate::source::Span;

/// Every span where a symbol's name is written: declarations and references, sorted.
pub fn name_occurrences(m: &Module) -> Vec<(Span, SymbolId)> {
    let mut occ: Vec<(Span, SymbolId)> = m
        .references
        .iter()
        .map(|r| (r.span, r.symbol))
        .chain(
            m.symbols_with_ids()
                .flat_map(|(id, s)| s.decls.iter().map(move |d| (d.name, id))),
        )
        .collect();
    occ.sort_by_key(|&(span, _)| (span.lo, span.hi));
    occ.dedup_by_key(|&mut (span, _)| span);
    occ
}

/// Writes `m` (parsed from `src`) to `out`, replacing the name of every symbol for
/// which `rename` returns a new name. Items are written in source order together
/// with the whitespace and comments around them.
pub fn write_module<'a>(
    m: &Module,
    src: &[u8],
    rename: impl Fn(SymbolId) -> Option<&'a [u8]>,
    out: &mut Vec<u8>,
) {
    out.reserve(src.len());
    let occ = name_occurrences(m);
    let mut occ = occ.iter().peekable();
    let mut pos = 0usize;
    for item in &m.items {
        // Trivia before the item.
        out.extend_from_slice(&src[pos..item.span.lo as usize]);
        pos = item.span.lo as usize;
        while let Some(&&(span, id)) = occ.peek() {
            if span.lo >= item.span.hi {
                break;
            }
            occ.next();
            if let Some(new) = rename(id) {
                out.extend_from_slice(&src[pos..span.lo as usize]);
                out.extend_from_slice(new);
                pos = span.hi as usize;
            }
        }
        out.extend_from_slice(&src[pos..item.span.hi as usize]);
        pos = item.span.hi as usize;
    }
    // Trailing trivia.
    out.extend_from_slice(&src[pos..]);
}
