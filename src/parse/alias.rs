//! What ptxas accepts in `.alias alias, aliasee;` (PTX ISA 6.3): the aliasee is a
//! `.func` this module defines with a body, not `.weak` and not itself an alias; the
//! alias is a `.func` declared without a body and aliased once; both have the same
//! prototype. docs/linking.md ("Declarations checked in each module") has the
//! experiments.

use super::decl::Lossy;
use crate::ir::{ItemKind, Linkage, Module, Param, Signature, Symbol, SymbolKind};

/// Why ptxas refuses `.alias alias, aliasee;`, in the words of a diagnostic, or
/// `None` if it accepts it. `aliased` is true if an earlier `.alias` made `alias` an
/// alias already.
pub(super) fn alias_refusal(
    m: &Module,
    src: &[u8],
    alias: &Symbol,
    aliasee: &Symbol,
    aliased: bool,
) -> Option<String> {
    // Shown only in a message: most aliases are fine.
    let name = |s: &Symbol| Lossy(&src[s.name.range()]);
    let (a, b) = (name(alias), name(aliasee));
    for (s, n) in [(alias, &a), (aliasee, &b)] {
        match s.kind {
            SymbolKind::Function => {}
            SymbolKind::Entry => {
                return Some(format!(
                    "`{n}` is a kernel: only a `.func` can be aliased or be an alias"
                ))
            }
            _ => {
                return Some(format!(
                    "`{n}` is not a function: only a `.func` can be aliased or be an alias"
                ))
            }
        }
    }
    if aliased {
        return Some(format!("`{a}` is already an alias"));
    }
    if alias.definition().is_some() {
        return Some(format!("`{a}` has a body, so it cannot also be an alias"));
    }
    if aliasee.aliasee.is_some() {
        return Some(format!(
            "`{b}` is itself an alias: alias the function it names"
        ));
    }
    match aliasee.linkage {
        Linkage::Extern => {
            return Some(format!(
                "`{b}` is `.extern`: only a function this module defines can be aliased"
            ))
        }
        Linkage::Weak => {
            return Some(format!(
                "`{b}` is `.weak`, and a `.weak` function cannot be aliased"
            ))
        }
        _ => {}
    }
    if aliasee.definition().is_none() {
        return Some(format!(
            "`{b}` has no body in this module: only a function this module defines can be aliased"
        ));
    }
    let signature = |s: &Symbol| match &m.items[s.decls.first().item.0 as usize].kind {
        ItemKind::Function(f) => Some(&f.signature),
        _ => None,
    };
    let (Some(sa), Some(sb)) = (signature(alias), signature(aliasee)) else {
        return None;
    };
    prototype_difference(sa, sb)
        .map(|why| format!("the prototypes of alias `{a}` and aliasee `{b}` differ: {why}"))
}

/// How two prototypes differ for ptxas's alias check, and its check of one module's
/// declarations of a function ("Inconsistent prototypes"), which want the same number
/// of parameters and return values (none where no list is written), each of the same
/// type (`.u32` is not `.b32`), vector width, alignment and shape; names may differ.
pub(super) fn prototype_difference(a: &Signature, b: &Signature) -> Option<String> {
    fn lists(s: &Signature) -> [&[Param]; 2] {
        [s.returns().unwrap_or(&[]), s.params().unwrap_or(&[])]
    }
    let kinds = [
        ("return value", "return values"),
        ("parameter", "parameters"),
    ];
    for ((x, y), (one, many)) in lists(a).into_iter().zip(lists(b)).zip(kinds) {
        if x.len() != y.len() {
            return Some(format!("number of {many} ({} and {})", x.len(), y.len()));
        }
        let same = |p: &Param, q: &Param| {
            (p.spec.ty, p.spec.vector, p.spec.align, p.dims())
                == (q.spec.ty, q.spec.vector, q.spec.align, q.dims())
        };
        if let Some(i) = x.iter().zip(y).position(|(p, q)| !same(p, q)) {
            return Some(format!("the type of {one} {}", i + 1));
        }
    }
    None
}
