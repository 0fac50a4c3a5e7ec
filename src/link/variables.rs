//! The order of the output's variables: PTX cannot declare a variable before its
//! definition, so a variable whose initializer names another comes after it.

use std::cmp::Reverse;

use rayon::prelude::*;

use super::db::SymbolDb;
use super::inputs::Inputs;
use super::names::Names;
use super::report::display_name;
use super::resolve::Resolution;
use crate::diag::{Code, Diagnostic};
use crate::ir::SymbolKind;

/// Variables in link order, except that a variable whose initializer names another
/// comes after it (a topological order of the initializer graph, stable by link order:
/// the earliest variable whose initializer names nothing still to come is next).
/// On a cycle, returns the output symbols caught in it.
///
/// The variables each initializer names are found in parallel; most name none, and
/// those are taken in order, so only the others wait in a heap.
pub(crate) fn order(
    db: &SymbolDb,
    res: &Resolution,
    keep: &(dyn Fn(usize) -> bool + Sync),
) -> Result<Vec<u32>, Vec<u32>> {
    let vars: Vec<u32> = (0..res.outs.len() as u32)
        .into_par_iter()
        .filter(|&o| res.outs[o as usize].kind == SymbolKind::Variable && keep(o as usize))
        .collect();
    // The positions in `vars` of the other variables each initializer names.
    let named: Vec<Vec<u32>> = vars
        .par_iter()
        .map(|&o| {
            let mut named: Vec<u32> = db
                .uses(res.outs[o as usize].origin)
                .filter_map(|used| res.out_of(used))
                .filter(|&w| w != o)
                .filter_map(|w| vars.binary_search(&w).ok().map(|i| i as u32))
                .collect();
            named.sort_unstable();
            named.dedup();
            named
        })
        .collect();
    if named.iter().all(Vec::is_empty) {
        return Ok(vars);
    }
    // For each variable, those whose initializers name it; and how many variables
    // each still waits for.
    let mut named_by: Vec<Vec<u32>> = vec![Vec::new(); vars.len()];
    for (i, n) in named.iter().enumerate() {
        for &w in n {
            named_by[w as usize].push(i as u32);
        }
    }
    let mut waits: Vec<usize> = named.iter().map(Vec::len).collect();
    // Kahn's algorithm, always taking the earliest ready variable: the next
    // variable that never waited, or the earliest of those whose wait ended.
    let mut ready = std::collections::BinaryHeap::new();
    let mut next = 0;
    let mut order = Vec::with_capacity(vars.len());
    loop {
        while next < vars.len() && !named[next].is_empty() {
            next += 1;
        }
        let i = match ready.peek() {
            Some(&Reverse(r)) if next >= vars.len() || r < next => {
                ready.pop();
                r
            }
            _ if next < vars.len() => {
                next += 1;
                next - 1
            }
            _ => break,
        };
        order.push(vars[i]);
        for &t in &named_by[i] {
            waits[t as usize] -= 1;
            if waits[t as usize] == 0 {
                ready.push(Reverse(t as usize));
            }
        }
    }
    if order.len() < vars.len() {
        return Err((0..vars.len())
            .filter(|&i| waits[i] > 0)
            .map(|i| vars[i])
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
