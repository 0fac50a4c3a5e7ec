//! Output names. Global names never change (other modules and the driver bind by
//! name). A module-local symbol keeps its name if it is the first local of that name
//! (in link order) and no global symbol has it; otherwise it becomes `name$mN` (N =
//! the module's position on the command line), with `_K` appended in the unlikely
//! case that a kept name or an earlier made-up one is already `name$mN`. Which names
//! are kept depends only on the names as written, and the result only on link order.
//!
//! Names that debug sections define or refer to (section labels, and the labels and
//! `__local_depotN` of bodies they name) are always renamed `name$mN` when several
//! modules are linked: ptxas resolves them at module scope, also against same-named
//! labels of other modules' bodies, which are no symbols here, and then silently
//! binds the debug data to the wrong function's code or frame (measured with ptxas
//! 12.9: research/dwarf-merge/REPORT.md rule 5, docs/linking.md "Debug information").
//!
//! A large link has hundreds of thousands of output symbols (220,000 for the x4
//! benchmark link), so the kept names are found in parallel ([`NameShards`]). Only
//! the made-up names (a tenth of them there) are chosen one after another.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::ir::SymbolKind;

use super::db::name_hash;
use super::inputs::Inputs;
use super::resolve::{OutSym, Resolution};
use super::shards::NameShards;

/// The output name of each output symbol that does not keep its origin's name.
pub(crate) struct Names {
    /// By output symbol; `None` keeps the name as written.
    renamed: Vec<Option<Vec<u8>>>,
}

impl Names {
    /// The new name of output symbol `o`, if it was renamed.
    pub fn renamed(&self, o: u32) -> Option<&[u8]> {
        self.renamed[o as usize].as_deref()
    }

    /// The output name of output symbol `o`.
    pub fn of<'s>(&'s self, inputs: &Inputs<'s>, res: &Resolution, o: u32) -> &'s [u8] {
        self.renamed(o)
            .unwrap_or_else(|| inputs.name(res.outs[o as usize].origin))
    }
}

pub(crate) fn assign(inputs: &Inputs, res: &Resolution) -> Names {
    let several = inputs.modules.len() > 1;
    let outs = &res.outs;
    // Debug names never keep theirs (module doc), and claim none.
    let apart = |o: &OutSym| {
        !o.global && several && matches!(o.kind, SymbolKind::SectionLabel | SymbolKind::BodyName)
    };
    // The outputs that may keep their names: globals first, since a local never
    // keeps a global's name, wherever it comes; then locals, in output order.
    let claims: Vec<u32> = (0..outs.len() as u32)
        .filter(|&i| outs[i as usize].global)
        .chain((0..outs.len() as u32).filter(|&i| {
            let o = &outs[i as usize];
            !o.global && !apart(o)
        }))
        .collect();
    let hashes: Vec<u64> = claims
        .par_iter()
        .map(|&i| name_hash(inputs.name(outs[i as usize].origin)))
        .collect();
    let name = |claim: u32| inputs.name(outs[claims[claim as usize] as usize].origin);
    let (shards, first) = NameShards::build(&hashes, &name);
    let kept = |candidate: &[u8]| {
        shards
            .find(name_hash(candidate), |claim| name(claim) == candidate)
            .is_some()
    };
    // The locals that lose their names, in output order.
    let mut losers: Vec<u32> = (0..claims.len())
        .filter(|&c| first[c] != c as u32)
        .map(|c| claims[c])
        .filter(|&i| !outs[i as usize].global)
        .collect();
    losers.extend((0..outs.len() as u32).filter(|&i| apart(&outs[i as usize])));
    losers.par_sort_unstable();
    // `name$mN` for each, and whether a kept name is already that.
    let mut made: Vec<(u32, Vec<u8>, bool)> = losers
        .par_iter()
        .map(|&i| {
            let o = &outs[i as usize];
            let written = String::from_utf8_lossy(inputs.name(o.origin));
            let base = format!("{written}$m{}", o.origin.module);
            let clash = kept(base.as_bytes());
            (i, base.into_bytes(), clash)
        })
        .collect();
    // In output order, a made-up name must differ from the earlier ones too.
    let mut taken: FxHashSet<Vec<u8>> = FxHashSet::default();
    taken.reserve(made.len());
    for (_, name, clash) in &mut made {
        if *clash || taken.contains(name) {
            let base = std::mem::take(name);
            *name = (1..)
                .map(|k| [&base[..], format!("_{k}").as_bytes()].concat())
                .find(|c| !taken.contains(c) && !kept(c))
                .expect("some suffix is free");
        }
        taken.insert(name.clone());
    }
    let mut renamed = vec![None; outs.len()];
    for (i, name, _) in made {
        renamed[i as usize] = Some(name);
    }
    Names { renamed }
}
