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
//! benchmark link), so the kept names are found in parallel: the names are hashed,
//! split into shards by hash, and each shard, small enough to stay in cache, is
//! searched on its own. Only the made-up names (a tenth of them there) are chosen
//! one after another.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use crate::ir::SymbolKind;

use super::db::name_hash;
use super::report::Inputs;
use super::resolve::{OutSym, Resolution};

/// Shards of the kept names, chosen by bits of the name's hash that neither the
/// bucket index nor the control bytes of a shard's table use.
const SHARD_BITS: u32 = 6;

fn shard_of(hash: u64) -> usize {
    ((hash >> 32) & ((1 << SHARD_BITS) - 1)) as usize
}

/// An output symbol that may keep its name: its name's hash, its index, and
/// whether it is global. Shards hold these, not indices into the outputs, so a
/// shard is searched without reading the other outputs it is interleaved with.
#[derive(Clone, Copy, Default)]
struct Claim {
    hash: u64,
    out: u32,
    global: bool,
}

pub(crate) fn assign(inputs: &Inputs, res: &mut Resolution) {
    let several = inputs.modules.len() > 1;
    let outs = &res.outs;
    // Debug names never keep theirs (module doc), and claim none.
    let apart = |o: &OutSym| {
        !o.global && several && matches!(o.kind, SymbolKind::SectionLabel | SymbolKind::BodyName)
    };
    let claims: Vec<Option<Claim>> = outs
        .par_iter()
        .enumerate()
        .map(|(i, o)| {
            (!apart(o)).then(|| Claim {
                hash: name_hash(inputs.name(o.origin)),
                out: i as u32,
                global: o.global,
            })
        })
        .collect();
    // Each shard's claims, in output order (a counting sort).
    let mut starts = vec![0usize; (1 << SHARD_BITS) + 1];
    for c in claims.iter().flatten() {
        starts[shard_of(c.hash) + 1] += 1;
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut next = starts.clone();
    let mut sorted = vec![Claim::default(); starts[starts.len() - 1]];
    for c in claims.iter().flatten() {
        let s = shard_of(c.hash);
        sorted[next[s]] = *c;
        next[s] += 1;
    }
    drop(claims);
    let name = |out: u32| inputs.name(outs[out as usize].origin);
    // Each shard: the table of its kept names, and its locals that lose theirs.
    let shards: Vec<(Shard, Vec<u32>)> = starts
        .par_windows(2)
        .map(|w| Shard::build(&sorted[w[0]..w[1]], &name))
        .collect();
    let kept = |candidate: &[u8]| {
        let hash = name_hash(candidate);
        shards[shard_of(hash)]
            .0
            .holds(hash, |out| name(out) == candidate)
    };
    let mut losers: Vec<u32> = shards.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    losers.extend((0..outs.len() as u32).filter(|&i| apart(&outs[i as usize])));
    losers.par_sort_unstable();
    // `name$mN` for each, and whether a kept name is already that.
    let made: Vec<(u32, Vec<u8>, bool)> = losers
        .par_iter()
        .map(|&i| {
            let o = &outs[i as usize];
            let base = format!("{}$m{}", String::from_utf8_lossy(name(i)), o.origin.module);
            let clash = kept(base.as_bytes());
            (i, base.into_bytes(), clash)
        })
        .collect();
    // In output order, a made-up name must differ from the earlier ones too.
    let mut taken: FxHashSet<&[u8]> = FxHashSet::default();
    taken.reserve(made.len());
    let mut suffixed: FxHashSet<Vec<u8>> = FxHashSet::default();
    let mut replaced: Vec<(usize, Vec<u8>)> = Vec::new();
    for (at, (_, base, clash)) in made.iter().enumerate() {
        let free = |c: &[u8], taken: &FxHashSet<&[u8]>| {
            !taken.contains(c) && !suffixed.contains(c) && !kept(c)
        };
        if !clash && !taken.contains(base.as_slice()) && !suffixed.contains(base) {
            taken.insert(base);
            continue;
        }
        let mut k = 1;
        let candidate = loop {
            let mut c = base.clone();
            c.extend_from_slice(format!("_{k}").as_bytes());
            if free(&c, &taken) {
                break c;
            }
            k += 1;
        };
        suffixed.insert(candidate.clone());
        replaced.push((at, candidate));
    }
    drop(taken);
    let mut replaced = replaced.into_iter().peekable();
    for (at, (i, base, _)) in made.into_iter().enumerate() {
        let name = match replaced.next_if(|(r, _)| *r == at) {
            Some((_, c)) => c,
            None => base,
        };
        res.outs[i as usize].renamed = Some(name);
    }
}

/// One shard of the kept names: every global's, and each first local's whose name
/// no global has. The table holds each kept name's output index.
struct Shard(hashbrown::HashTable<(u64, u32)>);

impl Shard {
    /// From the shard's claims in output order: the table, and the locals that do
    /// not keep their names.
    fn build<'n>(claims: &[Claim], name: &impl Fn(u32) -> &'n [u8]) -> (Shard, Vec<u32>) {
        let mut shard = Shard(hashbrown::HashTable::with_capacity(claims.len()));
        let mut losers = Vec::new();
        // Globals first: a local never keeps a global's name, wherever it comes.
        let globals = claims.iter().filter(|c| c.global);
        for c in globals.chain(claims.iter().filter(|c| !c.global)) {
            // The name is read only if a kept one has the same hash.
            if shard.holds(c.hash, |out| name(out) == name(c.out)) {
                if !c.global {
                    losers.push(c.out);
                }
            } else {
                shard.0.insert_unique(c.hash, (c.hash, c.out), |&(h, _)| h);
            }
        }
        (shard, losers)
    }

    /// True if a kept name has hash `hash` and is the same (`same(its output)`).
    fn holds(&self, hash: u64, same: impl Fn(u32) -> bool) -> bool {
        self.0
            .find(hash, |&(h, out)| h == hash && same(out))
            .is_some()
    }
}
