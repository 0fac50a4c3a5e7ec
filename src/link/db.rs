//! The symbol database: every module-scope symbol of every input, the global names
//! that bind across modules, and the petgraph graph of references between symbols.

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::ir::{ItemKind, Linkage, Module, RefKind, SymbolId, SymbolKind};

use super::inputs::{Inputs, ModSym};

/// A node of the reference graph: a symbol, or a module's "root" (uses that belong to
/// no symbol, such as debug sections).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Symbol(ModSym),
    Root(u32),
}

pub(crate) struct SymbolDb<'a> {
    /// Exported names (`.extern`, `.visible`, `.weak`, `.common`, aliases, and
    /// name-bound texture references) → every module symbol with that name, in link
    /// order.
    pub globals: Globals<'a>,
    /// Every symbol and root; edges go from the user to the used symbol.
    pub graph: DiGraph<Node, RefKind>,
    /// Node of each module symbol: `nodes[module][symbol]`.
    pub nodes: Vec<Vec<NodeIndex>>,
}

/// True for symbols bound by name across modules.
pub(crate) fn is_global(m: &Module, id: SymbolId) -> bool {
    let s = m.symbol(id);
    if matches!(s.kind, SymbolKind::SectionLabel | SymbolKind::BodyName) {
        return false;
    }
    s.linkage != Linkage::Local || s.aliasee.is_some() || is_opaque_var(m, id)
}

/// `.texref`, `.samplerref`, `.surfref` variables: the driver binds them by name, so
/// even module-local ones are one symbol per name (docs/linking.md §8).
pub(crate) fn is_opaque_var(m: &Module, id: SymbolId) -> bool {
    let s = m.symbol(id);
    s.kind == SymbolKind::Variable
        && matches!(&m.item(s.decls[0].item).kind, ItemKind::Variable(v) if v.spec.ty.is_opaque())
}

/// The global names and their symbols: one range of `syms` per name, not a vector
/// each (most names have a single symbol).
pub(crate) struct Globals<'a> {
    /// Each name, in order of its first symbol (link order, then symbol order),
    /// with its range of `syms`.
    pub names: Vec<(&'a [u8], std::ops::Range<u32>)>,
    /// The symbols of each name, in link order.
    syms: Vec<ModSym>,
}

impl<'a> Globals<'a> {
    /// The symbols of the name whose range of `syms` is `range`.
    pub fn syms(&self, range: &std::ops::Range<u32>) -> &[ModSym] {
        &self.syms[range.start as usize..range.end as usize]
    }

    /// Each name with its symbols.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &[ModSym])> + '_ {
        self.names.iter().map(|(n, r)| (*n, self.syms(r)))
    }

    /// From each global symbol with the index of its name in `names` (in link
    /// order), and each name with its number of symbols.
    fn gather(named: Vec<(u32, ModSym)>, names: Vec<(&'a [u8], u32)>) -> Globals<'a> {
        // A counting sort by name keeps each name's symbols in link order.
        let mut next = Vec::with_capacity(names.len());
        let mut at = 0u32;
        let names = names
            .into_iter()
            .map(|(name, count)| {
                next.push(at);
                at += count;
                (name, at - count..at)
            })
            .collect();
        let mut syms = vec![
            ModSym {
                module: 0,
                id: SymbolId(0)
            };
            named.len()
        ];
        for (name, s) in named {
            syms[next[name as usize] as usize] = s;
            next[name as usize] += 1;
        }
        Globals { names, syms }
    }
}

impl<'a> SymbolDb<'a> {
    pub fn build(inputs: &Inputs<'a>) -> SymbolDb<'a> {
        // Which symbol each reference comes from is found per module in parallel,
        // beside the nodes and the name index, which are built in order.
        let (edges, mut db): (Vec<Vec<Edge>>, _) = rayon::join(
            || inputs.modules.par_iter().map(reference_sources).collect(),
            || Self::nodes_and_names(inputs),
        );
        for (mi, edges) in edges.into_iter().enumerate() {
            let root = db.graph.add_node(Node::Root(mi as u32));
            let nodes = &db.nodes[mi];
            for (from, to, kind) in edges {
                let from = from.map_or(root, |id| nodes[id.0 as usize]);
                db.graph.add_edge(from, nodes[to.0 as usize], kind);
            }
        }
        db
    }

    /// The graph's symbol nodes and the global-name index, without edges.
    fn nodes_and_names(inputs: &Inputs<'a>) -> SymbolDb<'a> {
        let symbols: usize = inputs.modules.iter().map(|m| m.symbols.len()).sum();
        let references: usize = inputs.modules.iter().map(|m| m.references.len()).sum();
        let mut graph = DiGraph::with_capacity(symbols + inputs.modules.len(), references);
        let mut nodes = Vec::with_capacity(inputs.modules.len());
        // Each name with its number of symbols; each global symbol with its name.
        let mut names: Vec<(&'a [u8], u32)> = Vec::new();
        let mut named: Vec<(u32, ModSym)> = Vec::new();
        let mut index = NameIndex::with_capacity(symbols);
        for (mi, m) in inputs.modules.iter().enumerate() {
            let mi = mi as u32;
            let mut ns = Vec::with_capacity(m.symbols.len());
            for (id, _) in m.symbols_with_ids() {
                let s = ModSym { module: mi, id };
                ns.push(graph.add_node(Node::Symbol(s)));
                if is_global(m, id) {
                    let name = inputs.name(s);
                    let slot = index.get_or_push(name, &mut names, 0);
                    names[slot as usize].1 += 1;
                    named.push((slot, s));
                }
            }
            nodes.push(ns);
        }
        SymbolDb {
            globals: Globals::gather(named, names),
            graph,
            nodes,
        }
    }

    /// True if anything in its module refers to the symbol.
    pub fn is_used(&self, s: ModSym) -> bool {
        let n = self.nodes[s.module as usize][s.id.0 as usize];
        self.graph
            .neighbors_directed(n, petgraph::Direction::Incoming)
            .next()
            .is_some()
    }

    /// The symbols that `s`'s definition refers to.
    pub fn uses(&self, s: ModSym) -> impl Iterator<Item = ModSym> + '_ {
        let n = self.nodes[s.module as usize][s.id.0 as usize];
        self.graph.neighbors(n).filter_map(|t| match self.graph[t] {
            Node::Symbol(s) => Some(s),
            Node::Root(_) => None,
        })
    }
}

/// The global names seen so far: each name's position in a list of names, found by
/// hash. A slot holds the 4-byte position alone, not the name (a 16-byte slice) and
/// position, so the table of a large link (200,000 names) is a fifth of the size and
/// its probes miss the cache far less: with a map from names, building the index
/// grew faster than the input, since the table outgrew the caches
/// (docs/performance.md).
struct NameIndex(hashbrown::HashTable<u32>);

impl NameIndex {
    fn with_capacity(n: usize) -> NameIndex {
        NameIndex(hashbrown::HashTable::with_capacity(n))
    }

    /// The position of `name` in `names` (by first elements), after pushing it
    /// with `value` if it is new.
    fn get_or_push<'a, T>(
        &mut self,
        name: &'a [u8],
        names: &mut Vec<(&'a [u8], T)>,
        value: T,
    ) -> u32 {
        let entry = self.0.entry(
            name_hash(name),
            |&i| names[i as usize].0 == name,
            |&i| name_hash(names[i as usize].0),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(o) => *o.get(),
            hashbrown::hash_table::Entry::Vacant(v) => {
                names.push((name, value));
                *v.insert(names.len() as u32 - 1).get()
            }
        }
    }
}

/// The hash of a symbol name.
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(name);
    h.finish()
}

/// A reference as (referring symbol, or `None` for the module itself; referenced
/// symbol; kind).
type Edge = (Option<SymbolId>, SymbolId, RefKind);

/// Each reference of `m` as an [`Edge`].
fn reference_sources(m: &Module) -> Vec<Edge> {
    // The function each function item defines; each variable declarator's symbol.
    let owner = m.function_definitions();
    let mut var_owner: Vec<(crate::source::Span, SymbolId)> = Vec::new();
    for (id, s) in m.symbols_with_ids() {
        if s.kind != SymbolKind::Variable {
            continue;
        }
        for d in &s.decls {
            if let ItemKind::Variable(v) = &m.item(d.item).kind {
                var_owner.push((v.declarators[d.declarator as usize].span, id));
            }
        }
    }
    var_owner.sort_unstable_by_key(|(span, _)| span.lo);
    // One edge per (user, used, kind) among consecutive references of one user (a
    // function's references are consecutive): a function that names a variable in
    // every other instruction is still one edge, so a huge body does not make the
    // graph as large as its references, and the set stays as small as one user's
    // references. The last of equal edges is kept, so each symbol's neighbours come
    // in the order the duplicates gave them.
    let mut seen: FxHashSet<(SymbolId, RefKind)> = FxHashSet::default();
    let mut user = None;
    let mut edges: Vec<_> = m
        .references
        .iter()
        .rev()
        .map(|r| {
            let from = match &m.item(r.item).kind {
                ItemKind::Function(_) => owner[r.item.0 as usize],
                ItemKind::Variable(_) => {
                    // The declarator whose span holds the reference (they do not overlap).
                    let i = var_owner.partition_point(|(span, _)| span.lo <= r.span.lo);
                    i.checked_sub(1)
                        .map(|i| var_owner[i])
                        .filter(|(span, _)| r.span.hi <= span.hi)
                        .map(|(_, id)| id)
                }
                _ => None,
            };
            (from, r.symbol, r.kind)
        })
        .filter(|&(from, to, kind)| {
            if from != user {
                // A set that grew large is dropped rather than cleared: clearing
                // costs its capacity, once per user.
                if seen.len() > 256 {
                    seen = FxHashSet::default();
                } else {
                    seen.clear();
                }
                user = from;
            }
            seen.insert((to, kind))
        })
        .collect();
    edges.reverse();
    edges
}

#[cfg(test)]
mod tests {
    use super::NameIndex;

    #[test]
    fn a_name_keeps_the_position_it_was_first_pushed_at() {
        let words: Vec<Vec<u8>> = (0..5000u32)
            .map(|i| format!("name_{}", i % 1700).into_bytes())
            .collect();
        let mut names: Vec<(&[u8], ())> = Vec::new();
        // Too small on purpose: the table grows on the way.
        let mut index = NameIndex::with_capacity(4);
        for (i, w) in words.iter().enumerate() {
            let at = index.get_or_push(w, &mut names, ());
            assert_eq!(at as usize, i % 1700, "{}", String::from_utf8_lossy(w));
        }
        assert_eq!(names.len(), 1700);
        assert!(names
            .iter()
            .enumerate()
            .all(|(i, (n, ()))| *n == format!("name_{i}").as_bytes()));
    }
}
