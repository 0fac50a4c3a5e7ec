//! The module-scope names of one module: the table the body walk, the resolver
//! and the compact lexer of deferred bodies look identifiers up in.

use rustc_hash::FxHashMap;

use crate::ir::SymbolId;
use crate::lex::SymbolFilter;

/// Name → symbol lookup for one module.
pub(crate) struct Names<'a> {
    map: FxHashMap<&'a [u8], SymbolId>,
    /// True if any module-scope name starts with `%`; otherwise `%r1`-style
    /// identifiers (most of a body) can skip the lookup.
    pub any_percent: bool,
    /// One bit per [`sketch`] of each name in `map`: a name whose bit is clear is
    /// not there. Most identifiers a body walk asks about (labels, a function's
    /// own `_param_N` names) are not module-scope symbols, and this answers them
    /// without hashing the whole name and probing the map.
    sketches: [u64; SKETCH_WORDS],
}

/// Size of [`Names::sketches`] in 64-bit words: 4,096 bits, so that a module with a
/// few hundred names still turns most other names away.
const SKETCH_WORDS: usize = 64;

/// A 12-bit digest of `name` from its length and its first and last eight bytes
/// (zero-padded when shorter): names that differ only in their middle share it,
/// which only costs a map lookup.
fn sketch(name: &[u8]) -> usize {
    let word = |bytes: &[u8]| {
        let mut w = [0u8; 8];
        w[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(w)
    };
    let n = name.len();
    let (head, tail) = if n >= 8 {
        (word(&name[..8]), word(&name[n - 8..]))
    } else {
        (word(name), 0)
    };
    let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 52) as usize
}

impl<'a> Names<'a> {
    pub fn new(map: FxHashMap<&'a [u8], SymbolId>) -> Names<'a> {
        let mut sketches = [0u64; SKETCH_WORDS];
        for name in map.keys() {
            let s = sketch(name);
            sketches[s / 64] |= 1 << (s % 64);
        }
        Names {
            any_percent: map.keys().any(|k| k.first() == Some(&b'%')),
            map,
            sketches,
        }
    }

    pub fn get(&self, name: &[u8]) -> Option<SymbolId> {
        if !self.any_percent && name.first() == Some(&b'%') {
            return None;
        }
        let s = sketch(name);
        if self.sketches[s / 64] & (1 << (s % 64)) == 0 {
            return None;
        }
        self.map.get(name).copied()
    }
}

/// What the compact lexing of a deferred body asks: a name no module-scope symbol
/// has leaves no token.
impl SymbolFilter for Names<'_> {
    fn may_be_symbol(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sketch only turns names away that the map does not hold: every name of a
    /// module is found, whatever its length, and others are answered as the map does.
    #[test]
    fn names_answer_as_their_map_does() {
        let held: Vec<Vec<u8>> = (0..600)
            .map(|i| match i % 4 {
                0 => format!("f{i}").into_bytes(),
                1 => format!("__nv_fn_{i}").into_bytes(),
                2 => format!("_Z{}name{i}v", i % 10).into_bytes(),
                _ => format!("%g{i}").into_bytes(),
            })
            .collect();
        let map: FxHashMap<&[u8], SymbolId> = held
            .iter()
            .enumerate()
            .map(|(i, n)| (&n[..], SymbolId(i as u32)))
            .collect();
        let names = Names::new(map.clone());
        assert!(names.any_percent);
        for (i, n) in held.iter().enumerate() {
            assert_eq!(names.get(n), Some(SymbolId(i as u32)), "{:?}", n);
        }
        let mut turned_away = 0;
        for i in 0..2000 {
            let other = format!("__nv_fn_{i}_param_0").into_bytes();
            assert_eq!(names.get(&other), None);
            let label = format!("$L__BB{i}_1").into_bytes();
            assert_eq!(names.get(&label), map.get(&label[..]).copied());
            turned_away += usize::from(
                names.sketches[sketch(&other) / 64] & (1 << (sketch(&other) % 64)) == 0,
            );
        }
        // 600 names set at most 600 of 4,096 bits: most other names stop there.
        assert!(turned_away > 1500, "{turned_away}");
    }
}
