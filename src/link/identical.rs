//! `--fold-identical`: whether two strong definitions of one symbol are the same
//! code or data, so that one can stand for both. Their texts must be equal byte for
//! byte, and so must the definitions of the module-local symbols they use (which
//! have the same names, the texts being equal, but are each module's own),
//! recursively; global names bind the same way from either.

use rustc_hash::FxHashSet;

use super::db::is_global;
use super::inputs::{Inputs, ModSym};
use crate::source::Span;

/// Where two definitions first differ: a span in each (the rest of the line from
/// the first differing byte), and the module-local symbol whose definitions those
/// are, where the difference is in one.
pub(crate) struct Difference {
    pub a: (ModSym, Span),
    pub b: (ModSym, Span),
    pub local: Option<ModSym>,
}

/// The definition's item text and its span.
fn definition<'a>(inputs: &Inputs<'a>, s: ModSym) -> Option<(Span, &'a [u8])> {
    let m = inputs.module(s);
    let d = m.symbol(s.id).definition()?;
    let span = m.item(d.item).span;
    Some((span, &inputs.src(s.module)[span.range()]))
}

/// The symbols the text of `span` in `s`'s module refers to, in order.
fn references<'a>(inputs: &Inputs<'a>, s: ModSym, span: Span) -> impl Iterator<Item = ModSym> + 'a {
    let m = inputs.module(s);
    let from = m.references.partition_point(|r| r.span.lo < span.lo);
    m.references[from..]
        .iter()
        .take_while(move |r| r.span.hi <= span.hi)
        .map(move |r| ModSym {
            module: s.module,
            id: r.symbol,
        })
}

/// `None` if the definitions of `a` and `b` are identical, with the module-local
/// symbols they use; else where they first differ.
pub(crate) fn difference(inputs: &Inputs, a: ModSym, b: ModSym) -> Option<Difference> {
    let mut seen = FxHashSet::default();
    let mut work = vec![(a, b)];
    while let Some((x, y)) = work.pop() {
        if !seen.insert((x, y)) {
            continue;
        }
        let (Some((sx, tx)), Some((sy, ty))) = (definition(inputs, x), definition(inputs, y))
        else {
            // A local only declared in both (a prototype): nothing to compare.
            continue;
        };
        if tx != ty {
            let at = tx.iter().zip(ty).take_while(|(p, q)| p == q).count();
            let line_end = |t: &[u8]| {
                t[at..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(t.len(), |n| at + n)
            };
            let span = |s: Span, t: &[u8]| {
                Span::new(
                    s.lo + at as u32,
                    s.lo + line_end(t).max(at + 1).min(t.len()) as u32,
                )
            };
            return Some(Difference {
                a: (x, span(sx, tx)),
                b: (y, span(sy, ty)),
                local: (x != a).then_some(x),
            });
        }
        let local = |s: &ModSym| !is_global(inputs.module(*s), s.id);
        for (rx, ry) in references(inputs, x, sx).zip(references(inputs, y, sy)) {
            if local(&rx) && local(&ry) {
                work.push((rx, ry));
            }
        }
    }
    None
}
