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

use crate::ir::SymbolKind;

use super::db::name_hash;
use super::inputs::Inputs;
use super::resolve::{OutSym, Resolution};
use super::shards::NameShards;

/// The output name of each output symbol that does not keep its origin's name.
pub(crate) struct Names {
    /// By output symbol: where its new name is in `made`, or [`KEPT`].
    made_at: Vec<u32>,
    /// The made-up names, in output order.
    made: Vec<Vec<u8>>,
}

/// In [`Names::made_at`]: the symbol keeps the name as written.
const KEPT: u32 = u32::MAX;

/// Output symbols per parallel task in [`places`].
const PLACES_CHUNK: usize = 8192;

/// For each of `n` output symbols, its place in `losers` (sorted, distinct), or
/// [`KEPT`]. Found in parallel chunks of output symbols, each finding the first of
/// its losers and walking its own (in order, this was 0.13 ms of the 105 MB
/// benchmark link's serial time).
fn places(losers: &[u32], n: usize) -> Vec<u32> {
    let mut at = vec![0; n];
    at.par_chunks_mut(PLACES_CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            chunk.fill(KEPT);
            let (base, end) = (c * PLACES_CHUNK, c * PLACES_CHUNK + chunk.len());
            let from = losers.partition_point(|&i| (i as usize) < base);
            let mine = losers[from..].iter().take_while(|&&i| (i as usize) < end);
            for (k, &i) in mine.enumerate() {
                chunk[i as usize - base] = (from + k) as u32;
            }
        });
    at
}

impl Names {
    /// The new name of output symbol `o`, if it was renamed.
    pub fn renamed(&self, o: u32) -> Option<&[u8]> {
        match self.made_at[o as usize] {
            KEPT => None,
            at => Some(&self.made[at as usize]),
        }
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
    let all = 0..outs.len() as u32;
    let mut claims: Vec<u32> = all
        .clone()
        .into_par_iter()
        .filter(|&i| outs[i as usize].global)
        .collect();
    claims.par_extend(all.into_par_iter().filter(|&i| {
        let o = &outs[i as usize];
        !o.global && !apart(o)
    }));
    let hashes: Vec<u64> = claims
        .par_iter()
        .map(|&i| name_hash(inputs.name(outs[i as usize].origin)))
        .collect();
    let name = |claim: u32| inputs.name(outs[claims[claim as usize] as usize].origin);
    let (shards, first) = NameShards::build(&hashes, &name);
    // Whether a kept name is `candidate`, whose hash is `hash`.
    let kept = |hash: u64, candidate: &[u8]| {
        shards
            .find(hash, |claim| name(claim) == candidate)
            .is_some()
    };
    // The locals that lose their names, in output order.
    let mut losers: Vec<u32> = (0..claims.len())
        .into_par_iter()
        .filter(|&c| first[c] != c as u32)
        .map(|c| claims[c])
        .filter(|&i| !outs[i as usize].global)
        .collect();
    losers.par_extend(
        (0..outs.len() as u32)
            .into_par_iter()
            .filter(|&i| apart(&outs[i as usize])),
    );
    losers.par_sort_unstable();
    // `name$mN` for each, its hash, and whether a kept name is already that.
    let mut made: Vec<(Vec<u8>, u64, bool)> = losers
        .par_iter()
        .map(|&i| {
            let o = &outs[i as usize];
            let written = String::from_utf8_lossy(inputs.name(o.origin));
            let base = format!("{written}$m{}", o.origin.module);
            let hash = name_hash(base.as_bytes());
            let clash = kept(hash, base.as_bytes());
            (base.into_bytes(), hash, clash)
        })
        .collect();
    // In output order, a made-up name must differ from the earlier ones too: those
    // are found by hash among the names made so far (positions in `made`).
    let mut taken = hashbrown::HashTable::<u32>::with_capacity(made.len());
    let earlier =
        |taken: &hashbrown::HashTable<u32>, made: &[(Vec<u8>, u64, bool)], hash, c: &[u8]| {
            taken.find(hash, |&j| made[j as usize].0 == c).is_some()
        };
    for k in 0..made.len() {
        let (name, hash, clash) = &made[k];
        if *clash || earlier(&taken, &made, *hash, name) {
            let (free, hash) = (1..)
                .map(|n| {
                    let c = [&name[..], format!("_{n}").as_bytes()].concat();
                    let hash = name_hash(&c);
                    (c, hash)
                })
                .find(|(c, hash)| !earlier(&taken, &made, *hash, c) && !kept(*hash, c))
                .expect("some suffix is free");
            made[k] = (free, hash, false);
        }
        taken.insert_unique(made[k].1, k as u32, |&j| made[j as usize].1);
    }
    let made_at = places(&losers, outs.len());
    Names {
        made_at,
        made: made.into_iter().map(|(name, ..)| name).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::{places, KEPT, PLACES_CHUNK};

    /// Each loser gets its place, every other output symbol none, with losers on
    /// both sides of chunk boundaries, none in some chunks, and at the very end.
    #[test]
    fn places_are_found_across_chunks() {
        let n = 3 * PLACES_CHUNK + 17;
        let losers: Vec<u32> = (0..n as u32)
            .filter(|&i| i % 7 == 3 || (i as usize).is_multiple_of(PLACES_CHUNK))
            .filter(|&i| !(PLACES_CHUNK..2 * PLACES_CHUNK).contains(&(i as usize)))
            .chain([n as u32 - 1])
            .collect();
        let mut expected = vec![KEPT; n];
        for (k, &i) in losers.iter().enumerate() {
            expected[i as usize] = k as u32;
        }
        assert_eq!(places(&losers, n), expected);
        assert_eq!(places(&[], 5), vec![KEPT; 5]);
        assert!(places(&[], 0).is_empty());
    }
}
