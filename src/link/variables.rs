//! The order of the output's variables: PTX cannot declare a variable before its
//! definition, so a variable whose initializer names another comes after it.

use petgraph::graph::DiGraph;
use rustc_hash::FxHashMap;

use super::db::SymbolDb;
use super::inputs::Inputs;
use super::names::Names;
use super::report::display_name;
use super::resolve::Resolution;
use crate::diag::{Code, Diagnostic};
use crate::ir::SymbolKind;

/// Variables in link order, except that a variable whose initializer names another
/// comes after it (a topological order of the initializer graph, stable by link order).
/// On a cycle, returns the output symbols caught in it.
pub(crate) fn order(
    db: &SymbolDb,
    res: &Resolution,
    keep: &dyn Fn(usize) -> bool,
) -> Result<Vec<u32>, Vec<u32>> {
    let vars: Vec<u32> = (0..res.outs.len() as u32)
        .filter(|&o| res.outs[o as usize].kind == SymbolKind::Variable && keep(o as usize))
        .collect();
    let mut g: DiGraph<u32, ()> = DiGraph::new();
    let node: FxHashMap<u32, _> = vars.iter().map(|&o| (o, g.add_node(o))).collect();
    for &o in &vars {
        for used in db.uses(res.outs[o as usize].origin) {
            if let Some(w) = res.out_of(used) {
                if w != o && node.contains_key(&w) {
                    g.update_edge(node[&w], node[&o], ());
                }
            }
        }
    }
    // Kahn's algorithm, always taking the earliest ready variable.
    let mut indeg: Vec<usize> = g
        .node_indices()
        .map(|n| {
            g.neighbors_directed(n, petgraph::Direction::Incoming)
                .count()
        })
        .collect();
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<(u32, usize)>> = g
        .node_indices()
        .filter(|n| indeg[n.index()] == 0)
        .map(|n| std::cmp::Reverse((g[n], n.index())))
        .collect();
    let mut order = Vec::with_capacity(vars.len());
    while let Some(std::cmp::Reverse((o, n))) = ready.pop() {
        order.push(o);
        for t in g.neighbors(petgraph::graph::NodeIndex::new(n)) {
            indeg[t.index()] -= 1;
            if indeg[t.index()] == 0 {
                ready.push(std::cmp::Reverse((g[t], t.index())));
            }
        }
    }
    if order.len() < vars.len() {
        return Err(g
            .node_indices()
            .filter(|n| indeg[n.index()] > 0)
            .map(|n| g[n])
            .collect());
    }
    Ok(order)
}

/// The error for variables whose initializers refer to each other.
pub(crate) fn cycle_error(
    inputs: &Inputs,
    res: &Resolution,
    names: &Names,
    stuck: &[u32],
) -> Diagnostic {
    let stuck: Vec<String> = stuck
        .iter()
        .map(|&o| display_name(names.of(inputs, res, o)))
        .collect();
    Diagnostic::global_error(
        Code::InitializerCycle,
        format!(
            "variables {} refer to each other in their initializers; PTX has no way to \
         declare a variable before its definition, so the cycle cannot be emitted",
            stuck.join(", ")
        ),
    )
}
