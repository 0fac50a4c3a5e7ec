//! Output names. Global names never change (other modules and the driver bind by
//! name). A module-local symbol keeps its name unless a global symbol or an earlier
//! local already uses it; then it becomes `name$mN` (N = the module's position on
//! the command line), with `_K` appended in the unlikely case that is taken too.
//! The first claimant keeps the name, so the result depends only on link order.

use rustc_hash::FxHashSet;

use super::report::Inputs;
use super::resolve::Resolution;

pub(crate) fn assign(inputs: &Inputs, res: &mut Resolution) {
    let mut used: FxHashSet<Vec<u8>> = FxHashSet::default();
    for out in res.outs.iter_mut().filter(|o| o.global) {
        out.name = inputs.name(out.origin).to_vec();
        used.insert(out.name.clone());
    }
    for out in res.outs.iter_mut().filter(|o| !o.global) {
        let name = inputs.name(out.origin);
        let mut candidate = name.to_vec();
        if used.contains(&candidate) {
            candidate =
                format!("{}$m{}", String::from_utf8_lossy(name), out.origin.module).into_bytes();
            let base = candidate.clone();
            let mut k = 1;
            while used.contains(&candidate) {
                candidate = base.clone();
                candidate.extend_from_slice(format!("_{k}").as_bytes());
                k += 1;
            }
        }
        used.insert(candidate.clone());
        out.name = candidate;
    }
}
