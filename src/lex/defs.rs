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
    if defs.len() < 2 || surely_none(src, defs) {
        return Vec::new();
    }
    exact_clashes(src, defs)
}

/// The definitions of one block and stem seen so far, in [`surely_none`]'s table.
#[derive(Clone, Copy, Default)]
struct Group {
    /// The high half of [`stem_key`] of the block and stem.
    key: u32,
    /// The check that filled the place ([`Groups::epoch`]); the place is empty for
    /// any other.
    epoch: u32,
    /// One more than the largest number of a plain name seen (`L7` is stem `L`,
    /// number 7); 0 if none.
    next: u32,
    /// A plain name without a number (the stem itself) was seen.
    bare: bool,
    /// A range (`stem<N>`) was seen.
    range: bool,
    /// A number not above one before it was seen.
    unsorted: bool,
}

/// Each thread's tables for [`surely_none`], kept from body to body.
#[derive(Default)]
struct Groups {
    /// Open addressing by [`stem_key`], at most half full; not cleared between
    /// checks (a place of another epoch is empty).
    table: Vec<Group>,
    /// The number of the current check.
    epoch: u32,
    /// The numbered plain names: their group's place in `table` above their number.
    numbers: Vec<u64>,
}

thread_local! {
    static GROUPS: std::cell::RefCell<Groups> = Default::default();
}

/// True if no two of `defs` clash; false if some may (then [`exact_clashes`]
/// decides).
///
/// Only definitions of one block and stem can clash, so each goes to its group in
/// a small hash table by a key of block and stem, and a group clashes only if it
/// has two bare names, two ranges, a range and a numbered name, or two equal
/// numbers. Producers number labels and registers upwards (`$L__BB0_1`,
/// `$L__BB0_2`, ...), so the last number of each group settles the numbers
/// usually; only when a group is numbered out of order are the numbers sorted.
/// Most bodies have no clash, and this costs a key and a probe per definition
/// where [`exact_clashes`] sorts them all.
///
/// A key is a hash: two stems with one key share a group, which can only add
/// clashes that may be (a name's own stem always finds its own group). Numbers
/// of more than nine digits are left to [`exact_clashes`].
fn surely_none(src: &[u8], defs: &[Def]) -> bool {
    GROUPS.with(|groups| {
        let Groups {
            table,
            epoch,
            numbers,
        } = &mut *groups.borrow_mut();
        if table.len() < defs.len() * 2 {
            table.clear();
            table.resize((defs.len() * 2).next_power_of_two(), Group::default());
        }
        *epoch = epoch.wrapping_add(1);
        if *epoch == 0 {
            table.fill(Group::default());
            *epoch = 1;
        }
        let epoch = *epoch;
        let bits = table.len().ilog2();
        numbers.clear();
        numbers.reserve(defs.len());
        let mask = table.len() - 1;
        let mut unsorted = false;
        for d in defs {
            let (lo, hi) = (d.lo as usize, d.hi as usize);
            let name = &src[lo..hi];
            // The stem (a range's whole name, a plain name's without its digits)
            // and the number, read backwards.
            let mut stem = name.len();
            let mut number = 0u32;
            if d.count.is_none() {
                let mut place = 1;
                while let Some(digit) = stem
                    .checked_sub(1)
                    .map(|i| name[i].wrapping_sub(b'0'))
                    .filter(|&digit| digit < 10)
                {
                    // Nine digits fit in a u32, with one more than them.
                    if place > 100_000_000 {
                        return false;
                    }
                    number += u32::from(digit) * place;
                    place *= 10;
                    stem -= 1;
                }
            }
            let key = stem_key(src, d.scope, lo, stem);
            let mut at = (key >> (64 - bits)) as usize;
            while table[at].epoch == epoch && table[at].key != (key >> 32) as u32 {
                at = (at + 1) & mask;
            }
            let group = &mut table[at];
            if group.epoch != epoch {
                *group = Group {
                    key: (key >> 32) as u32,
                    epoch,
                    ..Group::default()
                };
            }
            if d.count.is_some() {
                if group.range || group.next != 0 {
                    return false;
                }
                group.range = true;
            } else if stem == name.len() {
                if group.bare {
                    return false;
                }
                group.bare = true;
            } else {
                if group.range {
                    return false;
                }
                if number < group.next {
                    group.unsorted = true;
                    unsorted = true;
                } else {
                    group.next = number + 1;
                }
                numbers.push((at as u64) << 32 | u64::from(number));
            }
        }
        if unsorted {
            // Only the groups numbered out of order have their numbers sorted.
            numbers.retain(|&n| table[(n >> 32) as usize].unsorted);
            numbers.sort_unstable();
            return numbers.windows(2).all(|w| w[0] != w[1]);
        }
        true
    })
}

/// A hash of block `scope` and the `len` bytes at `lo` (a stem), from its length
/// and its first and last eight bytes: cheap, and equal for equal stems. Its high
/// bits are its place in [`surely_none`]'s table, its high half the group's key.
fn stem_key(src: &[u8], scope: u32, lo: usize, len: usize) -> u64 {
    let end = lo + len;
    let tail = if len >= 8 {
        word(src, end - 8)
    } else if len > 0 && end >= 8 {
        // The bytes before the stem are shifted out.
        word(src, end - 8) >> (64 - 8 * len)
    } else {
        let mut w = [0u8; 8];
        w[..len].copy_from_slice(&src[lo..end]);
        u64::from_le_bytes(w)
    };
    let head = if len > 8 { word(src, lo) } else { 0 };
    (tail ^ head.rotate_left(29) ^ u64::from(scope).rotate_left(40) ^ len as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The eight bytes at `at`.
fn word(src: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(src[at..at + 8].try_into().expect("eight bytes"))
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

    /// `names` (`name` or `name<N>`, each with its block) as definitions in a source.
    fn defs_of(names: &[(u32, String)]) -> (Vec<u8>, Vec<Def>) {
        let mut src = Vec::new();
        let mut defs = Vec::new();
        for (scope, n) in names {
            let (name, count) = match n.split_once('<') {
                Some((name, count)) => (name, count.trim_end_matches('>').parse().ok()),
                None => (n.as_str(), None),
            };
            let lo = src.len() as u32;
            src.extend_from_slice(name.as_bytes());
            defs.push(Def {
                scope: *scope,
                lo,
                hi: src.len() as u32,
                count,
            });
            src.push(b' ');
        }
        (src, defs)
    }

    /// The shapes producers write pass the fast check, and a repeated name does not.
    #[test]
    fn the_fast_check_passes_what_producers_write() {
        let pass = |names: &[(u32, &str)]| {
            let names: Vec<_> = names.iter().map(|&(s, n)| (s, n.to_string())).collect();
            let (src, defs) = defs_of(&names);
            surely_none(&src, &defs)
        };
        assert!(pass(&[
            (7, "%p<3>"),
            (7, "%r<12>"),
            (7, "%rd<8>"),
            (7, "$L__BB0_1"),
            (9, "param0"),
            (9, "param1"),
            (12, "param0"),
            (7, "$L__BB0_2"),
            (7, "$L__BB0_10"),
        ]));
        // Labels out of order.
        assert!(pass(&[
            (0, "$L5"),
            (0, "$L6"),
            (0, "$L3"),
            (0, "%r26"),
            (0, "%r27")
        ]));
        assert!(pass(&[(0, "x"), (0, "x1"), (0, "%r<3>"), (0, "%r")]));
        for clash in [
            &[(0, "$L5"), (0, "$L3"), (0, "$L5")][..],
            &[(0, "L1"), (0, "L1")],
            &[(0, "x"), (0, "x")],
            &[(0, "%r<3>"), (0, "%r<3>")],
            &[(0, "%r<3>"), (0, "%r2")],
        ] {
            assert!(!pass(clash), "{clash:?}");
        }
    }

    /// A check sees nothing of the checks before it, also when the epochs wrap.
    #[test]
    fn the_table_forgets_earlier_checks() {
        let (src, defs) = defs_of(&[(0, "x".into()), (0, "y".into())]);
        assert!(surely_none(&src, &defs));
        assert!(surely_none(&src, &defs));
        GROUPS.with(|g| g.borrow_mut().epoch = 0);
        assert!(surely_none(&src, &defs));
        // The next check is number 1 again, as the one above was.
        GROUPS.with(|g| g.borrow_mut().epoch = u32::MAX);
        assert!(surely_none(&src, &defs));
    }

    /// The fast check never passes definitions that clash, on random definitions
    /// (stems with and without digits, short and long, in a few blocks), and
    /// `clashes` finds what the exact search finds.
    #[test]
    fn the_fast_check_agrees_with_the_exact_search() {
        const STEMS: [&str; 10] = [
            "%r",
            "%rd",
            "x",
            "x1",
            "$L__BB0_",
            "$L__BB12_",
            "LBB",
            "%r1",
            "_Z3fooPfS_i_param_",
            "a_stem_of_sixteen_",
        ];
        let mut next = crate::lex::xorshift(0x5eed_def5);
        let (mut passed, mut clashing) = (0, 0);
        for _ in 0..30_000 {
            let n = (next() % 12) as usize;
            let names: Vec<(u32, String)> = (0..n)
                .map(|_| {
                    let scope = (next() % 3) as u32;
                    let stem = STEMS[(next() % STEMS.len() as u64) as usize];
                    let number = next() % 12;
                    let name = match next() % 8 {
                        0 => format!("{stem}<{number}>"),
                        1 => stem.to_string(),
                        2 => format!("{stem}0{number}"),
                        _ => format!("{stem}{number}"),
                    };
                    (scope, name)
                })
                .collect();
            let (src, defs) = defs_of(&names);
            let exact = exact_clashes(&src, &defs);
            if defs.len() >= 2 && surely_none(&src, &defs) {
                assert_eq!(exact, [], "{names:?}");
                passed += 1;
            }
            clashing += usize::from(!exact.is_empty());
            assert_eq!(clashes(&src, &defs), exact, "{names:?}");
        }
        // Neither side is vacuous.
        assert!(passed > 5_000 && clashing > 1_000, "{passed} {clashing}");
    }
}
