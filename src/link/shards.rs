//! Equal names among hundreds of thousands, found in parallel: the names are split
//! into shards by hash, and each shard, small enough to stay in cache, is searched
//! on its own thread. A shard holds (hash, key) pairs, not names, and a name is
//! read only when a hash matches; keys are numbered by the caller, in the order
//! that decides which of several equal names comes first.

use std::sync::atomic::{AtomicU32, Ordering};

use rayon::prelude::*;

use crate::parallel::split_by_lengths;

/// Shards are chosen by bits of the hash that neither the bucket index nor the
/// control bytes of a shard's table use.
const SHARD_BITS: u32 = 6;

const SHARDS: usize = 1 << SHARD_BITS;

/// Keys per parallel task of the counting sort into shards.
const KEYS_PER_CHUNK: usize = 8192;

fn shard_of(hash: u64) -> usize {
    ((hash >> 32) & ((1 << SHARD_BITS) - 1)) as usize
}

/// One shard: the hash and first key of each of its distinct names.
type Shard = hashbrown::HashTable<(u64, u32)>;

/// The first key of each distinct name, in shards.
pub(crate) struct NameShards(Vec<Shard>);

impl NameShards {
    /// For keys `0..hashes.len()` with the given name hashes and names: the shards,
    /// and for each key the first key whose name equals its own.
    pub fn build<'n, F>(hashes: &[u64], name: &F) -> (NameShards, Vec<u32>)
    where
        F: Fn(u32) -> &'n [u8] + Sync,
    {
        // Each shard's keys, ascending: a counting sort in parallel chunks of keys.
        // Each chunk counts its keys per shard; a chunk's keys of a shard go after
        // those of the chunks before it, so `pos[key]`, the key's place among all
        // shards' keys, is found by each chunk on its own.
        let counts: Vec<[u32; SHARDS]> = hashes
            .par_chunks(KEYS_PER_CHUNK)
            .map(|chunk| {
                let mut count = [0u32; SHARDS];
                for &h in chunk {
                    count[shard_of(h)] += 1;
                }
                count
            })
            .collect();
        let mut starts = vec![0usize; SHARDS + 1];
        let mut chunk_at = vec![[0u32; SHARDS]; counts.len()];
        let mut at = 0u32;
        for s in 0..SHARDS {
            for (c, count) in counts.iter().enumerate() {
                chunk_at[c][s] = at;
                at += count[s];
            }
            starts[s + 1] = at as usize;
        }
        let mut pos = vec![0u32; hashes.len()];
        pos.par_chunks_mut(KEYS_PER_CHUNK)
            .zip(hashes.par_chunks(KEYS_PER_CHUNK))
            .zip(chunk_at)
            .for_each(|((pos, hashes), mut at)| {
                for (p, &h) in pos.iter_mut().zip(hashes) {
                    let s = shard_of(h);
                    *p = at[s];
                    at[s] += 1;
                }
            });
        // Each place is written once, from the key that has it.
        let members: Vec<AtomicU32> = (0..hashes.len()).map(|_| AtomicU32::new(0)).collect();
        pos.par_iter().enumerate().for_each(|(key, &p)| {
            members[p as usize].store(key as u32, Ordering::Relaxed);
        });
        // Each shard finds the first key of each of its keys' names, into its own
        // range of `firsts` (in the order of `members`).
        let mut firsts = vec![0u32; hashes.len()];
        let lengths = starts.windows(2).map(|w| w[1] - w[0]);
        let tables: Vec<Shard> = starts
            .par_windows(2)
            .zip(split_by_lengths(&mut firsts, lengths))
            .map(|(w, firsts)| {
                let keys = &members[w[0]..w[1]];
                let mut table = Shard::with_capacity(keys.len());
                for (key, first) in keys.iter().zip(firsts) {
                    let key = key.load(Ordering::Relaxed);
                    let h = hashes[key as usize];
                    let same = |&(hk, k): &(u64, u32)| hk == h && name(k) == name(key);
                    *first = match table.find(h, same) {
                        Some(&(_, f)) => f,
                        None => {
                            table.insert_unique(h, (h, key), |&(hk, _)| hk);
                            key
                        }
                    };
                }
                table
            })
            .collect();
        let first: Vec<u32> = pos.par_iter().map(|&p| firsts[p as usize]).collect();
        (NameShards(tables), first)
    }

    /// The first key of the name with hash `hash` for which `same(key)` holds.
    pub fn find(&self, hash: u64, same: impl Fn(u32) -> bool) -> Option<u32> {
        self.0[shard_of(hash)]
            .find(hash, |&(h, key)| h == hash && same(key))
            .map(|&(_, key)| key)
    }
}

#[cfg(test)]
mod tests {
    use super::NameShards;
    use crate::link::db::name_hash;

    /// Each key finds the first of its equal names, whichever shards they fall in,
    /// and every distinct name is found by its text.
    #[test]
    fn each_key_gets_the_first_key_of_its_name() {
        let names: Vec<Vec<u8>> = (0..20_000u32)
            .map(|i| format!("n{}", (i * 7919) % 3001).into_bytes())
            .collect();
        let hashes: Vec<u64> = names.iter().map(|n| name_hash(n)).collect();
        let name = |k: u32| names[k as usize].as_slice();
        let (shards, first) = NameShards::build(&hashes, &name);
        let mut firsts = std::collections::HashMap::new();
        for (k, n) in names.iter().enumerate() {
            let expected = *firsts.entry(n).or_insert(k as u32);
            assert_eq!(first[k], expected, "{}", String::from_utf8_lossy(n));
            assert_eq!(
                shards.find(hashes[k], |j| name(j) == n.as_slice()),
                Some(expected)
            );
        }
        assert_eq!(
            shards.find(name_hash(b"absent"), |j| name(j) == b"absent"),
            None
        );
        assert_eq!(
            first
                .iter()
                .enumerate()
                .filter(|&(k, &f)| k as u32 == f)
                .count(),
            3001
        );
    }
}
