//! Output names. Global names never change (other modules and the driver bind by
//! name). A module-local symbol keeps its name unless a global symbol or an earlier
//! local already uses it; then it becomes `name$mN` (N = the module's position on
//! the command line), with `_K` appended in the unlikely case that is taken too.
//! The first claimant keeps the name, so the result depends only on link order.
//!
//! Names that debug sections define or refer to (section labels, and the labels and
//! `__local_depotN` of bodies they name) are always renamed `name$mN` when several
//! modules are linked: ptxas resolves them at module scope, also against same-named
//! labels of other modules' bodies, which are no symbols here, and then silently
//! binds the debug data to the wrong function's code or frame (measured with ptxas
//! 12.9: research/dwarf-merge/REPORT.md rule 5, docs/linking.md "Debug information").

use rustc_hash::FxHashSet;

use crate::ir::SymbolKind;

use super::report::Inputs;
use super::resolve::Resolution;

pub(crate) fn assign(inputs: &Inputs, res: &mut Resolution) {
    // Names as written (borrowed from the modules), and the few made up here.
    let mut used: FxHashSet<&[u8]> =
        FxHashSet::with_capacity_and_hasher(res.outs.len(), Default::default());
    let mut made: FxHashSet<Vec<u8>> = FxHashSet::default();
    for out in res.outs.iter().filter(|o| o.global) {
        used.insert(inputs.name(out.origin));
    }
    let several = inputs.modules.len() > 1;
    for out in res.outs.iter_mut().filter(|o| !o.global) {
        let name = inputs.name(out.origin);
        let taken = |c: &[u8]| used.contains(c) || made.contains(c);
        let apart = several && matches!(out.kind, SymbolKind::SectionLabel | SymbolKind::BodyName);
        if !apart && !taken(name) {
            used.insert(name);
            continue;
        }
        let base = format!("{}$m{}", String::from_utf8_lossy(name), out.origin.module).into_bytes();
        let mut candidate = base.clone();
        let mut k = 1;
        while taken(&candidate) {
            candidate = base.clone();
            candidate.extend_from_slice(format!("_{k}").as_bytes());
            k += 1;
        }
        made.insert(candidate.clone());
        out.renamed = Some(candidate);
    }
}
