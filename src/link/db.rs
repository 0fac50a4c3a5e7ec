//! The symbol database: every module-scope symbol of every input, the global names
//! that bind across modules, and the petgraph graph of references between symbols.

use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;

use crate::ir::{ItemKind, Linkage, Module, RefKind, SymbolId, SymbolKind};

use super::report::Inputs;

/// A symbol of one input module.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ModSym {
    /// Index of the module in link order.
    pub module: u32,
    /// The symbol within that module.
    pub id: SymbolId,
}

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
    pub globals: Vec<(&'a [u8], Vec<ModSym>)>,
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
/// even module-local ones are one symbol per name (linking-rules.md §8).
pub(crate) fn is_opaque_var(m: &Module, id: SymbolId) -> bool {
    let s = m.symbol(id);
    s.kind == SymbolKind::Variable
        && matches!(&m.item(s.decls[0].item).kind, ItemKind::Variable(v) if v.spec.ty.is_opaque())
}

impl<'a> SymbolDb<'a> {
    pub fn build(inputs: &Inputs<'a>) -> SymbolDb<'a> {
        let mut graph = DiGraph::new();
        let mut nodes = Vec::with_capacity(inputs.modules.len());
        let mut index: FxHashMap<&'a [u8], usize> = FxHashMap::default();
        let mut globals: Vec<(&'a [u8], Vec<ModSym>)> = Vec::new();
        for (mi, m) in inputs.modules.iter().enumerate() {
            let mi = mi as u32;
            let mut ns = Vec::with_capacity(m.symbols.len());
            for (id, _) in m.symbols_with_ids() {
                let s = ModSym { module: mi, id };
                ns.push(graph.add_node(Node::Symbol(s)));
                if is_global(m, id) {
                    let name = inputs.name(s);
                    let slot = *index.entry(name).or_insert_with(|| {
                        globals.push((name, Vec::new()));
                        globals.len() - 1
                    });
                    globals[slot].1.push(s);
                }
            }
            nodes.push(ns);
        }
        let mut db = SymbolDb {
            globals,
            graph,
            nodes,
        };
        for (mi, m) in inputs.modules.iter().enumerate() {
            db.add_edges(mi as u32, m);
        }
        db
    }

    fn add_edges(&mut self, mi: u32, m: &Module) {
        let root = self.graph.add_node(Node::Root(mi));
        // The symbol that owns each item (for variables, per declarator).
        let mut owner: FxHashMap<u32, SymbolId> = FxHashMap::default();
        let mut var_owner: Vec<(crate::source::Span, SymbolId)> = Vec::new();
        for (id, s) in m.symbols_with_ids() {
            if matches!(s.kind, SymbolKind::SectionLabel | SymbolKind::BodyName) {
                continue;
            }
            for d in &s.decls {
                match &m.item(d.item).kind {
                    ItemKind::Variable(v) => {
                        var_owner.push((v.declarators[d.declarator as usize].span, id));
                    }
                    ItemKind::Function(_) if d.is_definition => {
                        owner.insert(d.item.0, id);
                    }
                    _ => {}
                }
            }
        }
        for r in &m.references {
            let from = match &m.item(r.item).kind {
                ItemKind::Function(_) => owner.get(&r.item.0).copied(),
                ItemKind::Variable(_) => var_owner
                    .iter()
                    .find(|(span, _)| span.lo <= r.span.lo && r.span.hi <= span.hi)
                    .map(|&(_, id)| id),
                ItemKind::Alias { .. } => None,
                _ => None,
            };
            let from = match from {
                Some(id) => self.nodes[mi as usize][id.0 as usize],
                None => root,
            };
            let to = self.nodes[mi as usize][r.symbol.0 as usize];
            self.graph.add_edge(from, to, r.kind);
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
