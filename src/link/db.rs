//! The symbol database: every module-scope symbol of every input, the global names
//! that bind across modules, and the petgraph graph of references between symbols.

use petgraph::graph::{DiGraph, NodeIndex};
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::ir::{ItemKind, Linkage, Module, RefKind, SymbolId, SymbolKind};

use super::inputs::{Inputs, ModSym};
use super::shards::NameShards;
use crate::parallel::split_by_lengths;

/// Global symbols per parallel task when names are numbered.
const NUMBERING_CHUNK: usize = 4096;

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
    /// The node of each module's first symbol: a module's symbols are consecutive
    /// nodes, in symbol order.
    first_node: Vec<u32>,
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

    /// The names of each module's global symbols, given with their hashes. Equal
    /// names are found in hash shards in parallel ([`NameShards`]) and numbered in
    /// parallel chunks, so what is left in order is placing each name's symbols
    /// ([`Globals::gather`]).
    fn index(inputs: &Inputs<'a>, globals: &[Vec<HashedGlobal>]) -> Globals<'a> {
        // Every global symbol in link order, and its hash: each module's copied to
        // its place in parallel.
        let count: usize = globals.iter().map(Vec::len).sum();
        let nothing = ModSym {
            module: 0,
            id: SymbolId(0),
        };
        let mut syms = vec![nothing; count];
        let mut hashes = vec![0u64; count];
        let lens = || globals.iter().map(Vec::len);
        split_by_lengths(&mut syms, lens())
            .into_par_iter()
            .zip(split_by_lengths(&mut hashes, lens()))
            .zip(globals)
            .enumerate()
            .for_each(|(mi, ((syms, hashes), g))| {
                for ((s, h), &(hash, id)) in syms.iter_mut().zip(hashes).zip(g) {
                    *s = ModSym {
                        module: mi as u32,
                        id,
                    };
                    *h = hash;
                }
            });
        let name = |k: u32| inputs.name(syms[k as usize]);
        let (_, first) = NameShards::build(&hashes, &name);
        // Names are numbered in order of their first symbols: a name's number is
        // the count of first symbols before its own, counted in parallel chunks.
        let is_first = |k: usize| first[k] as usize == k;
        let chunks = count.div_ceil(NUMBERING_CHUNK);
        let in_chunk = |c: usize| c * NUMBERING_CHUNK..((c + 1) * NUMBERING_CHUNK).min(count);
        let firsts_before: Vec<u32> = {
            let per_chunk: Vec<u32> = (0..chunks)
                .into_par_iter()
                .map(|c| in_chunk(c).filter(|&k| is_first(k)).count() as u32)
                .collect();
            let mut before = 0;
            per_chunk
                .iter()
                .map(|&n| {
                    before += n;
                    before - n
                })
                .collect()
        };
        let mut number = vec![0u32; count];
        number
            .par_chunks_mut(NUMBERING_CHUNK)
            .zip(&firsts_before)
            .enumerate()
            .for_each(|(c, (numbers, &before))| {
                let mut next = before;
                for (k, n) in in_chunk(c).zip(numbers) {
                    if is_first(k) {
                        *n = next;
                        next += 1;
                    }
                }
            });
        // Each global symbol with its name's number, and each name's symbol count.
        let named: Vec<(u32, ModSym)> = (0..count)
            .into_par_iter()
            .map(|k| (number[first[k] as usize], syms[k]))
            .collect();
        let firsts: Vec<u32> = (0..count as u32)
            .into_par_iter()
            .filter(|&k| is_first(k as usize))
            .collect();
        let symbols_of: Vec<AtomicU32> = firsts.iter().map(|_| AtomicU32::new(0)).collect();
        named.par_iter().for_each(|&(n, _)| {
            symbols_of[n as usize].fetch_add(1, Ordering::Relaxed);
        });
        let names = firsts
            .par_iter()
            .zip(symbols_of)
            .map(|(&k, n)| (name(k), n.into_inner()))
            .collect();
        Globals::gather(named, names)
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
        // What needs only one module is found per module in parallel: which symbol
        // each reference comes from, and the global symbols with the hashes of their
        // names. What is left in order, the name index and the graph, is built on
        // two threads at once.
        let (edges, hashed): (Vec<Vec<Edge>>, Vec<Vec<HashedGlobal>>) =
            crate::parallel::map_each(inputs.modules.len(), |mi| {
                let m = &inputs.modules[mi];
                (reference_sources(m), hashed_globals(m))
            })
            .into_iter()
            .unzip();
        // Each side frees what only it used (a vector per module, on every thread
        // that is free) while the other side still works.
        let ((graph, first_node), globals) = rayon::join(
            || {
                let graph = graph_of(inputs, &edges);
                crate::parallel::free(edges);
                graph
            },
            || {
                let globals = Globals::index(inputs, &hashed);
                crate::parallel::free(hashed);
                globals
            },
        );
        SymbolDb {
            globals,
            graph,
            first_node,
        }
    }

    /// The graph node of a module symbol.
    fn node(&self, s: ModSym) -> NodeIndex {
        NodeIndex::new(self.first_node[s.module as usize] as usize + s.id.0 as usize)
    }

    /// True if anything in its module refers to the symbol.
    pub fn is_used(&self, s: ModSym) -> bool {
        let n = self.node(s);
        self.graph
            .neighbors_directed(n, petgraph::Direction::Incoming)
            .next()
            .is_some()
    }

    /// The symbols that `s`'s definition refers to.
    pub fn uses(&self, s: ModSym) -> impl Iterator<Item = ModSym> + '_ {
        let n = self.node(s);
        self.graph.neighbors(n).filter_map(|t| match self.graph[t] {
            Node::Symbol(s) => Some(s),
            Node::Root(_) => None,
        })
    }
}

/// The hash of a symbol name.
pub(crate) fn name_hash(name: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(name);
    h.finish()
}

/// The reference graph of the modules, whose references come from `edges` (one
/// list per module): every module's symbols as consecutive nodes, then the
/// modules' roots. Also the node of each module's first symbol.
fn graph_of(inputs: &Inputs, edges: &[Vec<Edge>]) -> (DiGraph<Node, RefKind>, Vec<u32>) {
    let symbols: usize = inputs.modules.iter().map(|m| m.symbols.len()).sum();
    let edge_count: usize = edges.iter().map(Vec::len).sum();
    let mut graph = DiGraph::with_capacity(symbols + inputs.modules.len(), edge_count);
    let mut first_node = Vec::with_capacity(inputs.modules.len());
    for (mi, m) in inputs.modules.iter().enumerate() {
        first_node.push(graph.node_count() as u32);
        for (id, _) in m.symbols_with_ids() {
            graph.add_node(Node::Symbol(ModSym {
                module: mi as u32,
                id,
            }));
        }
    }
    for (mi, edges) in edges.iter().enumerate() {
        let root = graph.add_node(Node::Root(mi as u32));
        let first = first_node[mi] as usize;
        let node = |id: SymbolId| NodeIndex::new(first + id.0 as usize);
        for &(from, to, kind) in edges {
            graph.add_edge(from.map_or(root, node), node(to), kind);
        }
    }
    (graph, first_node)
}

/// A global symbol of a module with the [`name_hash`] of its name.
type HashedGlobal = (u64, SymbolId);

/// The global symbols of `m` (see [`is_global`]), in symbol order.
fn hashed_globals(m: &Module) -> Vec<HashedGlobal> {
    m.symbols_with_ids()
        .filter(|&(id, _)| is_global(m, id))
        .map(|(id, _)| (name_hash(m.symbol_name(id)), id))
        .collect()
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
    use super::{ModSym, SymbolDb};
    use crate::input::Bytes;
    use crate::link::inputs::Inputs;
    use crate::source::{SourceFile, SourceMap};

    /// Parses `texts` as the modules of one link, in order.
    fn link_of(texts: &[String]) -> (SourceMap, Vec<crate::ir::Module>) {
        let mut sources = SourceMap::new();
        let modules = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let file =
                    SourceFile::new(format!("m{i}.ptx"), None, Bytes::Owned(t.clone().into()));
                let id = sources.add(file);
                crate::parse::parse_module(id, t.as_bytes()).module
            })
            .collect();
        (sources, modules)
    }

    /// Names come in order of their first symbols, each with its symbols in link
    /// order, however the hash shards split them; module-local names are not
    /// global; and each reference is an edge from its user.
    #[test]
    fn global_names_in_order_of_first_symbols_with_their_symbols_in_link_order() {
        const HEADER: &str = ".version 7.0\n.target sm_70\n.address_size 64\n";
        // Module i declares f0..f(i+1) and defines g_i, which calls every f;
        // each also has a module-local variable of one name.
        let texts: Vec<String> = (0..40)
            .map(|i| {
                let mut t = String::from(HEADER);
                t.push_str(".global .u32 local_var;\n");
                for f in 0..=i + 1 {
                    t.push_str(&format!(".extern .func f{f}();\n"));
                }
                t.push_str(&format!(".visible .func g{i}()\n{{\n"));
                for f in 0..=i + 1 {
                    t.push_str(&format!("call f{f};\n"));
                }
                t.push_str("ret;\n}\n");
                t
            })
            .collect();
        let (sources, modules) = link_of(&texts);
        let inputs = Inputs {
            sources: &sources,
            modules: &modules,
        };
        let db = SymbolDb::build(&inputs);
        // First symbols in link order: module 0 has f0, f1, g0; module i adds
        // f(i+1) and gi.
        let mut expected: Vec<String> = vec!["f0".into(), "f1".into(), "g0".into()];
        for i in 1..40 {
            expected.push(format!("f{}", i + 1));
            expected.push(format!("g{i}"));
        }
        let names: Vec<String> = db
            .globals
            .iter()
            .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
            .collect();
        assert_eq!(names, expected);
        for (name, syms) in db.globals.iter() {
            let modules: Vec<u32> = syms.iter().map(|s| s.module).collect();
            let first = modules[0];
            let want: Vec<u32> = if name.starts_with(b"g") {
                vec![first]
            } else {
                (first..40).collect()
            };
            assert_eq!(modules, want, "{}", String::from_utf8_lossy(name));
            assert!(syms.iter().all(|&s| inputs.name(s) == name));
        }
        for (mi, m) in modules.iter().enumerate() {
            let g = m
                .symbols_with_ids()
                .find(|&(id, _)| m.symbol_name(id).starts_with(b"g"))
                .map(|(id, _)| ModSym {
                    module: mi as u32,
                    id,
                })
                .unwrap();
            let mut called: Vec<&[u8]> = db.uses(g).map(|s| inputs.name(s)).collect();
            called.sort();
            let mut want: Vec<String> = (0..=mi + 1).map(|f| format!("f{f}")).collect();
            want.sort();
            assert_eq!(
                called,
                want.iter().map(|w| w.as_bytes()).collect::<Vec<_>>()
            );
            assert!(called.iter().all(|&n| {
                let (id, _) = m
                    .symbols_with_ids()
                    .find(|&(id, _)| m.symbol_name(id) == n)
                    .unwrap();
                db.is_used(ModSym {
                    module: mi as u32,
                    id,
                })
            }));
            assert!(!db.is_used(g));
        }
    }
}
