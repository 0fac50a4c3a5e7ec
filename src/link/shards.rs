//! Equal names among hundreds of thousands, found in parallel: the names are split
//! into shards by hash, and each shard, small enough to stay in cache, is searched
//! on its own thread. A shard holds (hash, key) pairs, not names, and a name is
//! read only when a hash matches; keys are numbered by the caller, in the order
//! that decides which of several equal names comes first.

use rayon::prelude::*;

/// Shards are chosen by bits of the hash that neither the bucket index nor the
/// control bytes of a shard's table use.
const SHARD_BITS: u32 = 6;

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
        // Each shard's keys, ascending (a counting sort).
        let mut starts = vec![0usize; (1 << SHARD_BITS) + 1];
        for &h in hashes {
            starts[shard_of(h) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut members = vec![0u32; hashes.len()];
        for (key, &h) in hashes.iter().enumerate() {
            let s = shard_of(h);
            members[next[s]] = key as u32;
            next[s] += 1;
        }
        let built: Vec<(Shard, Vec<u32>)> = starts
            .par_windows(2)
            .map(|w| {
                let keys = &members[w[0]..w[1]];
                let mut table = Shard::with_capacity(keys.len());
                let firsts = keys
                    .iter()
                    .map(|&key| {
                        let h = hashes[key as usize];
                        let same = |&(hk, k): &(u64, u32)| hk == h && name(k) == name(key);
                        match table.find(h, same) {
                            Some(&(_, first)) => first,
                            None => {
                                table.insert_unique(h, (h, key), |&(hk, _)| hk);
                                key
                            }
                        }
                    })
                    .collect();
                (table, firsts)
            })
            .collect();
        let mut first = vec![0u32; hashes.len()];
        let mut tables = Vec::with_capacity(built.len());
        for (w, (table, firsts)) in starts.windows(2).zip(built) {
            for (&key, f) in members[w[0]..w[1]].iter().zip(firsts) {
                first[key as usize] = f;
            }
            tables.push(table);
        }
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
