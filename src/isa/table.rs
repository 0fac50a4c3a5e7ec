//! The instruction table (`table.tsv`, compiled in): for an instruction's opcode
//! word, the lowest PTX ISA version and target that have everything it uses.
//! docs/isa-table.md describes the file and how its rows were measured.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;

use crate::options::{suffix_rank, Arch};

/// A PTX ISA version, `(major, minor)`.
pub(crate) type Version = (u32, u32);

/// What one use asks of the output: a PTX ISA version, and a target or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Need {
    pub ptx: Version,
    pub target: Option<Arch>,
}

impl Need {
    /// Nothing beyond PTX ISA 1.0 and any target.
    pub const NONE: Need = Need {
        ptx: (1, 0),
        target: None,
    };

    /// Both of `self`'s and `other`'s requirements.
    pub fn max(self, other: Need) -> Need {
        Need {
            ptx: self.ptx.max(other.ptx),
            target: higher_target(self.target, other.target),
        }
    }
}

/// The higher of two target requirements: the higher number, and at the same
/// number an arch-specific (`a`) above a family (`f`) above a plain one.
pub(crate) fn higher_target(a: Option<Arch>, b: Option<Arch>) -> Option<Arch> {
    match (a, b) {
        (Some(x), Some(y)) => Some(
            if (y.sm(), suffix_rank(y.suffix())) > (x.sm(), suffix_rank(x.suffix())) {
                y
            } else {
                x
            },
        ),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Whether `.target have` offers what `need` asks: a plain requirement any target
/// at least as high; `sm_NNa` only that architecture's own target; `sm_NNf` the
/// targets of its family (same tens, at least as high) with a suffix.
pub(crate) fn target_satisfies(have: Arch, need: Arch) -> bool {
    match need.suffix() {
        None => have.sm() >= need.sm(),
        Some(b'a') => have.sm() == need.sm() && have.suffix() == Some(b'a'),
        Some(_) => {
            have.suffix().is_some() && have.sm() / 10 == need.sm() / 10 && have.sm() >= need.sm()
        }
    }
}

/// One row of the table.
#[derive(Debug)]
struct Row {
    /// Modifiers that must all be present (with their dots), sorted.
    modifiers: Box<[Box<[u8]>]>,
    need: Need,
}

/// The table, by opcode (`*` rows apply to every opcode; special registers are
/// rows whose opcode starts with `%`).
#[derive(Debug, Default)]
pub(crate) struct Table {
    rows: FxHashMap<Box<[u8]>, Vec<Row>>,
    /// The names (directives, special registers, forms) that need more than the
    /// floor, with what they need.
    above_floor: FxHashMap<Box<[u8]>, Need>,
    /// A bit for each [`filter_key`] of those names: a name whose bit is clear is
    /// at the floor, found without hashing it (a module's declarations have
    /// hundreds of directives, nearly all at the floor).
    filter: Box<[u64]>,
}

const FILTER_BITS: usize = 4096;

/// A name's bit in [`Table::filter`]: from its length and three of its bytes (a
/// few instructions, without hashing it).
#[inline]
fn filter_key(name: &[u8]) -> usize {
    let at = |i: usize| name.get(i).copied().unwrap_or(0) as usize;
    let last = name.last().copied().unwrap_or(0) as usize;
    (((name.len() * 61 + at(1)) * 67 + at(2)) * 71 + last) % FILTER_BITS
}

/// What the table says of an opcode word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// Every part is in the table: the highest of the rows that apply.
    Known(Need),
    /// The opcode, or one of its modifiers, is not in the table.
    Unknown,
}

/// The compiled-in table.
pub(crate) fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        Table::parse(include_str!("table.tsv")).expect("src/isa/table.tsv is well-formed")
    })
}

impl Table {
    /// Reads the tab-separated rows (`#` lines are comments): opcode, modifiers (or
    /// `-`), PTX ISA version, target (or `-`), then columns this does not read.
    pub fn parse(text: &str) -> Result<Table, String> {
        let mut table = Table {
            filter: vec![0; FILTER_BITS / 64].into(),
            ..Table::default()
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |what: &str| format!("table.tsv:{}: {what}: {line}", n + 1);
            let cols: Vec<&str> = line.split('\t').collect();
            let [opcode, modifiers, ptx, target, ..] = cols[..] else {
                return Err(bad("expected at least four tab-separated columns"));
            };
            let ptx = parse_version(ptx).ok_or_else(|| bad("bad PTX ISA version"))?;
            let target = match target {
                "-" => None,
                t => Some(Arch::parse_bytes(t.as_bytes()).ok_or_else(|| bad("bad target"))?),
            };
            let mut modifiers: Vec<Box<[u8]>> = match modifiers {
                "-" => Vec::new(),
                m => m.split(' ').map(|s| s.as_bytes().into()).collect(),
            };
            if modifiers.iter().any(|m| m.first() != Some(&b'.')) {
                return Err(bad("a modifier starts with `.`"));
            }
            modifiers.sort();
            table
                .rows
                .entry(opcode.as_bytes().into())
                .or_default()
                .push(Row {
                    modifiers: modifiers.into(),
                    need: Need { ptx, target },
                });
        }
        for (name, rows) in &table.rows {
            let need = rows.iter().fold(Need::NONE, |n, r| n.max(r.need));
            if need != Need::NONE {
                table.above_floor.insert(name.clone(), need);
                let key = filter_key(name);
                table.filter[key / 64] |= 1 << (key % 64);
            }
        }
        Ok(table)
    }

    /// What the opcode word `word` needs (`ld.global.nc.v4.f32`; whitespace before
    /// a modifier, which ptxas allows, is ignored).
    pub fn lookup(&self, word: &[u8]) -> Lookup {
        let mut parts = split_word(word);
        let opcode = parts.next().unwrap_or_default();
        let modifiers: Vec<&[u8]> = parts.collect();
        let Some(own) = self.rows.get(opcode) else {
            return Lookup::Unknown;
        };
        let any: &[Row] = self.rows.get(&b"*"[..]).map_or(&[], |r| r.as_slice());
        if !own.iter().any(|r| r.modifiers.is_empty()) {
            return Lookup::Unknown;
        }
        let known = |m: &[u8]| {
            own.iter()
                .chain(any)
                .any(|r| r.modifiers.iter().any(|x| &x[..] == m))
        };
        if !modifiers.iter().all(|m| known(m)) {
            return Lookup::Unknown;
        }
        let applies = |r: &&Row| r.modifiers.iter().all(|x| modifiers.contains(&&x[..]));
        let need = own
            .iter()
            .chain(any)
            .filter(applies)
            .fold(Need::NONE, |n, r| n.max(r.need));
        Lookup::Known(need.max(generic_addressing(opcode, &modifiers)))
    }

    /// What the directive (`.alias`) or special register (`%cluster_ctarank`) `name`
    /// needs, if the table has rows of that name.
    #[cfg(test)]
    pub fn named(&self, name: &[u8]) -> Option<Need> {
        let rows = self.rows.get(name)?;
        Some(rows.iter().fold(Need::NONE, |n, r| n.max(r.need)))
    }

    /// What the directive, special register or form `name` needs where that is
    /// more than the floor (as [`Self::named`], cheaply for the names at the floor).
    #[inline]
    pub fn named_above_floor(&self, name: &[u8]) -> Option<Need> {
        let key = filter_key(name);
        if self.filter[key / 64] >> (key % 64) & 1 == 0 {
            return None;
        }
        self.above_floor.get(name).copied()
    }

    /// Whether `name` is a special register (`%laneid`, `%envreg3`): the table has a
    /// row for each, those every target has at the floor.
    pub fn special_register(&self, name: &[u8]) -> bool {
        name.first() == Some(&b'%') && self.rows.contains_key(name)
    }

    /// The first column of every row (opcodes and names), each once.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &[u8]> {
        self.rows.keys().map(|k| &k[..])
    }
}

/// A memory access without a state space addresses generically, which needs sm_20
/// (ptxas 12.9 on `ld.u32` at `.target sm_13`: "Feature 'generic addressing' requires
/// .target sm_20 or higher"). A row cannot say this: rows add what a modifier that is
/// present needs, and here it is one that is absent.
fn generic_addressing(opcode: &[u8], modifiers: &[&[u8]]) -> Need {
    const ACCESSES: &[&[u8]] = &[b"ld", b"st", b"atom", b"red", b"prefetch"];
    const SPACES: &[&[u8]] = &[b".global", b".shared", b".local", b".const", b".param"];
    let space = |m: &&[u8]| SPACES.iter().any(|s| m.starts_with(s));
    if ACCESSES.contains(&opcode) && !modifiers.iter().any(space) {
        Need {
            ptx: (1, 0),
            target: Some(Arch::new(20)),
        }
    } else {
        Need::NONE
    }
}

/// `X.Y`.
pub(crate) fn parse_version(s: &str) -> Option<Version> {
    let (a, b) = s.split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The opcode, then each modifier with its dot (`::` qualifiers stay with theirs).
pub(crate) fn split_word(word: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = word;
    std::iter::from_fn(move || {
        while rest.first().is_some_and(u8::is_ascii_whitespace) {
            rest = &rest[1..];
        }
        if rest.is_empty() {
            return None;
        }
        let end = rest[1..]
            .iter()
            .position(|&b| b == b'.' || b.is_ascii_whitespace())
            .map_or(rest.len(), |i| i + 1);
        let (part, tail) = rest.split_at(end);
        rest = tail;
        Some(part)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filtered lookup agrees with the rows for every name of the table, and
    /// finds nothing for names it does not have.
    #[test]
    fn names_above_the_floor_are_found_through_the_filter() {
        let t = table();
        let mut above = 0;
        for name in t.names() {
            let want = t.named(name).filter(|&n| n != Need::NONE);
            assert_eq!(
                t.named_above_floor(name),
                want,
                "{}",
                String::from_utf8_lossy(name)
            );
            above += usize::from(want.is_some());
        }
        assert!(above > 50, "{above}");
        for name in [
            ".visible",
            ".param",
            ".b32",
            "%tid",
            "%r1",
            ".pragma nounroll",
            "",
        ] {
            assert_eq!(t.named_above_floor(name.as_bytes()), None, "{name}");
        }
    }

    const ROWS: &str = "# test rows\n\
        shfl\t-\t1.0\tsm_30\n\
        shfl\t.sync\t6.0\t-\n\
        shfl\t.idx\t1.0\t-\n\
        shfl\t.b32\t1.0\t-\n\
        ld\t-\t1.0\t-\n\
        ld\t.global\t1.0\t-\n\
        ld\t.L2::128B\t7.4\tsm_75\n\
        cvt\t-\t1.0\t-\n\
        cvt\t.f32\t1.0\t-\n\
        cvt\t.bf16 .f32\t7.0\tsm_80\n\
        *\t.bf16\t7.0\tsm_80\n\
        %cluster_ctarank\t-\t7.8\tsm_90\n";

    fn need(ptx: Version, target: Option<&str>) -> Lookup {
        Lookup::Known(Need {
            ptx,
            target: target.map(|t| Arch::parse_bytes(t.as_bytes()).unwrap()),
        })
    }

    #[test]
    fn a_word_needs_the_highest_of_its_rows() {
        let t = Table::parse(ROWS).unwrap();
        assert_eq!(t.lookup(b"shfl.idx.b32"), need((1, 0), Some("sm_30")));
        assert_eq!(t.lookup(b"shfl.sync.idx.b32"), need((6, 0), Some("sm_30")));
        // Whitespace before a modifier, as ptxas allows it.
        assert_eq!(
            t.lookup(b"shfl .sync.idx .b32"),
            need((6, 0), Some("sm_30"))
        );
        assert_eq!(t.lookup(b"ld.global.L2::128B"), need((7, 4), Some("sm_75")));
        assert_eq!(t.lookup(b"cvt.f32.bf16"), need((7, 0), Some("sm_80")));
        // Generic addressing: no state space.
        assert_eq!(t.lookup(b"ld"), need((1, 0), Some("sm_20")));
        assert_eq!(t.lookup(b"ld.global"), need((1, 0), None));
    }

    #[test]
    fn unknown_opcodes_and_modifiers_are_unknown() {
        let t = Table::parse(ROWS).unwrap();
        assert_eq!(t.lookup(b"bar.sync"), Lookup::Unknown);
        assert_eq!(t.lookup(b"ld.global.nc"), Lookup::Unknown);
        assert_eq!(t.lookup(b"shfl.warp0xffffffff"), Lookup::Unknown);
    }

    #[test]
    fn special_registers_and_targets() {
        let t = Table::parse(ROWS).unwrap();
        let a = |s: &str| Arch::parse_bytes(s.as_bytes()).unwrap();
        assert_eq!(t.named(b"%cluster_ctarank").map(|n| n.ptx), Some((7, 8)));
        assert_eq!(t.named(b"%tid"), None);
        assert!(target_satisfies(a("sm_90"), a("sm_80")));
        assert!(!target_satisfies(a("sm_100a"), a("sm_90a")));
        assert!(target_satisfies(a("sm_90a"), a("sm_90a")));
        assert!(target_satisfies(a("sm_103f"), a("sm_100f")));
        assert!(!target_satisfies(a("sm_103"), a("sm_100f")));
        assert!(Table::parse("ld\tglobal\t1.0\t-\n").is_err());
    }

    #[test]
    fn the_compiled_in_table_parses() {
        assert!(table().lookup(b"mov.u32") != Lookup::Unknown);
    }
}
