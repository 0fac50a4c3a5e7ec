//! Names defined twice in one block of a function body, by ptxas's rules: labels,
//! variables and the function's parameters share one namespace per block (an inner
//! block may define a name again); `%r<5>` defines `%r0` to `%r4`, so it clashes with
//! another `%r<N>` in the block and with a `%rK` for K below 5 (`%r02` too). ptxas:
//! "Duplicate definition of label 'L'", "Duplicate definition of variable '%r<'".
//!
//! Both the compact lexer (for the definitions it passes over without tokens) and the
//! body walk (for the others) ask [`clashes`].

/// A name defined in a body.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Def {
    /// The block: any number that differs between blocks of one body.
    pub scope: u32,
    /// The name's bytes in the source.
    pub lo: u32,
    pub hi: u32,
    /// `N` of `name<N>`.
    pub count: Option<u32>,
}

impl Def {
    fn name<'s>(&self, src: &'s [u8]) -> &'s [u8] {
        &src[self.lo as usize..self.hi as usize]
    }

    /// The name without its trailing digits, and their value: what a `<N>` range
    /// of the same stem covers. A range's stem is its whole name.
    fn stem<'s>(&self, src: &'s [u8]) -> (&'s [u8], Option<u64>) {
        let name = self.name(src);
        if self.count.is_some() {
            return (name, None);
        }
        let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        let (stem, number) = name.split_at(name.len() - digits);
        let value = (digits > 0).then(|| {
            number.iter().fold(0u64, |n, &d| {
                n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
            })
        });
        (stem, value)
    }
}

/// True if a definition of `declared` (`declared<count>`) defines `name`: itself, or
/// for `p<N>` the names `p` followed by a decimal number below N (ptxas takes `p01`
/// for `p1`).
pub(crate) fn declares(declared: &[u8], count: Option<u32>, name: &[u8]) -> bool {
    let Some(n) = count else {
        return declared == name;
    };
    let Some(digits) = name.strip_prefix(declared) else {
        return false;
    };
    !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && digits
            .iter()
            .try_fold(0u64, |v, &d| {
                v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
            .is_some_and(|v| v < u64::from(n))
}

/// Every clash among `defs`: (the later definition, the earlier one it clashes
/// with), as indices into `defs`, the later ones in source order.
pub(crate) fn clashes(src: &[u8], defs: &[Def]) -> Vec<(usize, usize)> {
    if defs.len() < 2 || !may_clash(src, defs) {
        return Vec::new();
    }
    exact_clashes(src, defs)
}

/// Each thread's tables for [`may_clash`], kept from body to body.
#[derive(Default)]
struct Seen {
    /// Hashes of (block, name, range or not).
    hashes: rustc_hash::FxHashSet<u64>,
    /// The ranges: block, and the bytes of the stem.
    ranges: Vec<(u32, u32, u32)>,
}

thread_local! {
    static SEEN: std::cell::RefCell<Seen> = Default::default();
}

/// Whether `defs` may have a clash: two equal (block, name, kind) hashes, or a plain
/// name whose stem a range of its block has. Most bodies have none, and this costs
/// a hash per definition where [`exact_clashes`] sorts them all (a body's labels are
/// many).
fn may_clash(src: &[u8], defs: &[Def]) -> bool {
    SEEN.with(|seen| {
        let Seen { hashes, ranges } = &mut *seen.borrow_mut();
        hashes.clear();
        ranges.clear();
        for d in defs {
            if !hashes.insert(quick_hash(d, src)) {
                return true;
            }
            if d.count.is_some() {
                ranges.push((d.scope, d.lo, d.hi));
            }
        }
        !ranges.is_empty()
            && defs.iter().filter(|d| d.count.is_none()).any(|d| {
                let (stem, number) = d.stem(src);
                number.is_some()
                    && ranges.iter().any(|&(scope, lo, hi)| {
                        scope == d.scope && &src[lo as usize..hi as usize] == stem
                    })
            })
    })
}

/// A hash of a definition's block, kind and name, from the name's length and its
/// first and last eight bytes: cheap, and a collision only costs the exact search.
fn quick_hash(d: &Def, src: &[u8]) -> u64 {
    let name = d.name(src);
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        w[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(w)
    };
    let (head, tail) = (
        &name[..name.len().min(8)],
        &name[name.len().saturating_sub(8)..],
    );
    let mixed =
        (u64::from(d.scope) << 33 | (name.len() as u64) << 1 | u64::from(d.count.is_some()))
            ^ word(head).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ word(tail)
                .rotate_left(29)
                .wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    mixed ^ (mixed >> 31)
}

/// [`clashes`], found by sorting.
fn exact_clashes(src: &[u8], defs: &[Def]) -> Vec<(usize, usize)> {
    // Each definition's block and stem, computed once, sorted so that a block's
    // definitions of one stem are together, in source order.
    let mut keyed: Vec<(u32, &[u8], u32, usize)> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.scope, d.stem(src).0, d.lo, i))
        .collect();
    keyed.sort_unstable();
    let mut found = Vec::new();
    for group in keyed.chunk_by(|a, b| (a.0, a.1) == (b.0, b.1)) {
        if group.len() > 1 {
            group_clashes(src, defs, group.iter().map(|k| k.3), &mut found);
        }
    }
    found.sort_unstable_by_key(|&(later, _)| defs[later].lo);
    found
}

/// The clashes among definitions of one stem in one block, `group` in source order.
fn group_clashes(
    src: &[u8],
    defs: &[Def],
    group: impl Iterator<Item = usize>,
    found: &mut Vec<(usize, usize)>,
) {
    let (ranges, mut plain): (Vec<usize>, Vec<usize>) =
        group.partition(|&i| defs[i].count.is_some());
    // A second range of the stem.
    if let [first, rest @ ..] = ranges.as_slice() {
        found.extend(rest.iter().map(|&r| (r, *first)));
        // Registers the (first) range holds.
        let range = &defs[*first];
        for &p in &plain {
            if declares(range.name(src), range.count, defs[p].name(src)) {
                let (a, b) = (p.max(*first), p.min(*first));
                let (later, earlier) = if defs[a].lo > defs[b].lo {
                    (a, b)
                } else {
                    (b, a)
                };
                found.push((later, earlier));
            }
        }
    }
    // The same name twice (labels of one stem, `$L__BB0_1` and `$L__BB0_2`, are
    // many: by name, not pairwise).
    plain.sort_by(|&a, &b| {
        defs[a]
            .name(src)
            .cmp(defs[b].name(src))
            .then(defs[a].lo.cmp(&defs[b].lo))
    });
    for same in plain.chunk_by(|&a, &b| defs[a].name(src) == defs[b].name(src)) {
        found.extend(same[1..].iter().map(|&l| (l, same[0])));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clashes among `names` (`name` or `name<N>`), each in block `scope`, as
    /// (later, earlier) names.
    fn clash_names(names: &[(u32, &str)]) -> Vec<(String, String)> {
        let mut src = String::new();
        let mut defs = Vec::new();
        for &(scope, n) in names {
            let (name, count) = match n.split_once('<') {
                Some((name, count)) => (name, count.trim_end_matches('>').parse().ok()),
                None => (n, None),
            };
            let lo = src.len() as u32;
            src.push_str(name);
            defs.push(Def {
                scope,
                lo,
                hi: src.len() as u32,
                count,
            });
            src.push(' ');
        }
        clashes(src.as_bytes(), &defs)
            .into_iter()
            .map(|(l, e)| (names[l].1.to_string(), names[e].1.to_string()))
            .collect()
    }

    #[test]
    fn names_clash_as_ptxas_finds_them() {
        let s = |a: &str, b: &str| (a.to_string(), b.to_string());
        // The experiments of docs/linking.md.
        assert_eq!(clash_names(&[(0, "L1"), (0, "L1")]), [s("L1", "L1")]);
        assert_eq!(
            clash_names(&[(0, "%r<3>"), (0, "%r<5>")]),
            [s("%r<5>", "%r<3>")]
        );
        assert_eq!(
            clash_names(&[(0, "%r<3>"), (0, "%r2")]),
            [s("%r2", "%r<3>")]
        );
        assert_eq!(
            clash_names(&[(0, "%r2"), (0, "%r<3>")]),
            [s("%r<3>", "%r2")]
        );
        assert_eq!(
            clash_names(&[(0, "%r<3>"), (0, "%r02")]),
            [s("%r02", "%r<3>")]
        );
        assert_eq!(clash_names(&[(0, "x"), (0, "x")]), [s("x", "x")]);
        for fine in [
            &[(0, "%r<3>"), (0, "%r5")][..],
            &[(0, "%r5"), (0, "%r<3>")],
            &[(0, "%rd<3>"), (0, "%r<3>")],
            &[(0, "%r<3>"), (1, "%r<3>")],
            &[(0, "L1"), (1, "L1")],
            &[(0, "%r22"), (0, "%r23"), (0, "%r2"), (0, "%r")],
        ] {
            assert_eq!(clash_names(fine), [], "{fine:?}");
        }
    }
}
