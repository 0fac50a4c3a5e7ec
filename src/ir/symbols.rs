//! Module-scope symbols, their declarations, and the references to them.

use super::types::{Linkage, StateSpace};
use super::{ItemId, SymbolId};
use crate::source::Span;

/// What a module-scope symbol is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SymbolKind {
    /// `.func`.
    Function,
    /// `.entry`.
    Entry,
    /// A variable in any state space.
    Variable,
    /// A label defined inside a debug `.section`.
    SectionLabel,
    /// A label or variable defined in a function body and referred to from a debug
    /// section (`Lfunc_begin0`, `__local_depot0`).
    BodyName,
}

/// Where a symbol is declared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decl {
    /// The declaring item.
    pub item: ItemId,
    /// The name token in it.
    pub name: Span,
    /// Which declarator of a variable item (0 otherwise).
    pub declarator: u32,
    /// True for a definition (a function with a body, a non-`.extern` variable, a label).
    pub is_definition: bool,
}

/// Every declaration of a symbol, in source order. Most symbols have one, kept in
/// place: an array per symbol was an eighth of a large link's allocations.
#[derive(Clone, Debug)]
pub struct Decls {
    first: Decl,
    /// Boxed: 8 bytes in every symbol instead of a vector's 24; few symbols have it.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Decl>>>,
}

impl Decls {
    /// The declarations, starting with `first`.
    pub fn new(first: Decl) -> Decls {
        Decls { first, more: None }
    }

    /// Adds a later declaration.
    pub fn push(&mut self, d: Decl) {
        self.more.get_or_insert_with(Box::default).push(d);
    }

    /// The first declaration.
    pub fn first(&self) -> &Decl {
        &self.first
    }

    /// The declarations in source order.
    pub fn iter(&self) -> std::iter::Chain<std::iter::Once<&Decl>, std::slice::Iter<'_, Decl>> {
        std::iter::once(&self.first).chain(self.more())
    }

    /// The declarations after the first.
    fn more(&self) -> &[Decl] {
        self.more.as_deref().map_or(&[], |v| v)
    }
}

impl std::ops::Index<usize> for Decls {
    type Output = Decl;

    fn index(&self, i: usize) -> &Decl {
        match i {
            0 => &self.first,
            i => &self.more()[i - 1],
        }
    }
}

impl<'a> IntoIterator for &'a Decls {
    type Item = &'a Decl;
    type IntoIter = std::iter::Chain<std::iter::Once<&'a Decl>, std::slice::Iter<'a, Decl>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A module-scope symbol.
#[derive(Clone, Debug)]
pub struct Symbol {
    /// The name as it appears (the first declaration's name token).
    pub name: Span,
    /// What it is.
    pub kind: SymbolKind,
    /// Linkage: the definition's, else the first declaration's.
    pub linkage: Linkage,
    /// State space for variables (`None` for functions and labels).
    pub space: Option<StateSpace>,
    /// Every declaration, in source order.
    pub decls: Decls,
    /// For `.alias this, aliasee;`: the function this name is an alias of.
    pub aliasee: Option<SymbolId>,
}

impl Symbol {
    /// The defining declaration, if any.
    pub fn definition(&self) -> Option<&Decl> {
        self.decls.iter().find(|d| d.is_definition)
    }

    /// True if the module defines the symbol: by a definition or by `.alias`.
    pub fn is_defined(&self) -> bool {
        self.aliasee.is_some() || self.definition().is_some()
    }
}

/// What kind of use a reference is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefKind {
    /// The callee of a `call` instruction.
    Call,
    /// Any other instruction operand (address taken, loaded, stored, texture...).
    Operand,
    /// A name in a `.calltargets` list.
    CallTarget,
    /// A name in a variable initializer.
    Initializer,
    /// A name in an `.alias` directive.
    Alias,
    /// `function_name` label of a `.loc` directive.
    DebugLoc,
    /// A label or symbol used as data in a debug `.section`.
    Dwarf,
}

/// One use of a module-scope symbol.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The identifier token.
    pub span: Span,
    /// The symbol it names.
    pub symbol: SymbolId,
    /// The item it occurs in.
    pub item: ItemId,
    /// What kind of use.
    pub kind: RefKind,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One declaration or several: indexing, iteration and `first` see them in the
    /// order they were declared.
    #[test]
    fn declarations_keep_their_order() {
        let decl = |i: u32| Decl {
            item: ItemId(i),
            name: Span::new(i, i + 1),
            declarator: 0,
            is_definition: i == 2,
        };
        let mut d = Decls::new(decl(0));
        assert_eq!(d.iter().map(|d| d.item.0).collect::<Vec<_>>(), [0]);
        for i in 1..4 {
            d.push(decl(i));
        }
        assert_eq!(
            (&d).into_iter().map(|d| d.item.0).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(
            (d[0].item, d[3].item, d.first().item),
            (ItemId(0), ItemId(3), ItemId(0))
        );
        let sym = Symbol {
            name: Span::new(0, 1),
            kind: SymbolKind::Function,
            linkage: Linkage::Visible,
            space: None,
            decls: d,
            aliasee: None,
        };
        assert_eq!(sym.definition().map(|d| d.item), Some(ItemId(2)));
    }
}
