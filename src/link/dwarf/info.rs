//! Re-encoding one module's `.debug_info` (DWARF 2 to 4, 32-bit) against the union
//! abbreviation table of the merged module.
//!
//! ptxas finds the abbreviation of a DIE by its position in the table at
//! `.debug_abbrev+0` and ignores the compilation unit's abbreviation offset
//! (research/dwarf-merge/REPORT.md, rule 2). So every DIE code is rewritten to the
//! code of its abbreviation in one deduplicated table whose entry k has code k, and
//! every unit header points at `.debug_abbrev`. Codes may change their ULEB size, and
//! `DW_AT_decl_file`/`DW_AT_call_file` their value (and, as ULEB, their size): unit
//! lengths and unit-relative references (`DW_FORM_ref*`, e.g. `DW_AT_sibling`) are
//! recomputed. Everything else is copied, relocations included.

use rustc_hash::FxHashMap;

use crate::ir::{Reloc, RelocValue, SectionData};

/// Why a module's `.debug_info` cannot be re-encoded: the offset in it and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fail {
    /// Offset in the module's `.debug_info` (or `.debug_abbrev` for table errors).
    pub at: usize,
    /// What is not supported, as a noun phrase.
    pub what: String,
}

fn fail<T>(at: usize, what: impl Into<String>) -> Result<T, Fail> {
    Err(Fail {
        at,
        what: what.into(),
    })
}

const DW_AT_DECL_FILE: u64 = 0x3a;
const DW_AT_CALL_FILE: u64 = 0x58;
const DW_AT_STMT_LIST: u64 = 0x10;

/// Attributes whose `data4`/`data8` value is an offset into another debug section in
/// DWARF 2 and 3 (the loclistptr, rangelistptr and macptr classes).
const SECTION_OFFSET_ATTRS: [u64; 12] = [
    0x02, 0x19, 0x2a, 0x2c, 0x38, 0x40, 0x43, 0x46, 0x48, 0x4a, 0x4d, 0x55,
];

/// Reads an unsigned LEB128 number; `None` when truncated or beyond 64 bits.
pub(crate) fn read_uleb(b: &[u8], p: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let byte = *b.get(*p)?;
        *p += 1;
        let bits = u64::from(byte & 0x7f);
        if shift >= 64 || (shift > 57 && bits >> (64 - shift) != 0) {
            return None;
        }
        v |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
    }
}

/// Appends `v` as unsigned LEB128 in `len` bytes (padded with continuation bytes, which
/// every reader accepts); `len` 0 means the shortest encoding. False if it needs more.
pub(crate) fn write_uleb(out: &mut Vec<u8>, mut v: u64, len: usize) -> bool {
    let mut n = 0;
    loop {
        let low = (v & 0x7f) as u8;
        v >>= 7;
        n += 1;
        if v == 0 && n >= len {
            out.push(low);
            return len == 0 || n == len;
        }
        out.push(low | 0x80);
    }
}

/// One abbreviation: what the union table is deduplicated by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Abbrev {
    pub tag: u64,
    pub children: u8,
    /// (attribute, form) pairs in order.
    pub attrs: Vec<(u64, u64)>,
}

/// Reads the abbreviation table at offset `at` of `b`: code → abbreviation.
pub(crate) fn read_table(b: &[u8], at: usize) -> Result<FxHashMap<u64, Abbrev>, Fail> {
    let mut table = FxHashMap::default();
    let mut p = at;
    let truncated = |p| Fail {
        at: p,
        what: "a truncated abbreviation table".into(),
    };
    loop {
        let start = p;
        let code = read_uleb(b, &mut p).ok_or_else(|| truncated(start))?;
        if code == 0 {
            return Ok(table);
        }
        let tag = read_uleb(b, &mut p).ok_or_else(|| truncated(p))?;
        let children = *b.get(p).ok_or_else(|| truncated(p))?;
        p += 1;
        if children > 1 {
            return fail(p - 1, format!("DW_CHILDREN value {children}"));
        }
        let mut attrs = Vec::new();
        loop {
            let attr = read_uleb(b, &mut p).ok_or_else(|| truncated(p))?;
            let form = read_uleb(b, &mut p).ok_or_else(|| truncated(p))?;
            if attr == 0 && form == 0 {
                break;
            }
            attrs.push((attr, form));
        }
        let a = Abbrev {
            tag,
            children,
            attrs,
        };
        if table.insert(code, a).is_some() {
            return fail(start, format!("abbreviation code {code} defined twice"));
        }
    }
}

/// The merged abbreviation table: entry k has code k (k = 1, 2, ...).
#[derive(Clone, Debug, Default)]
pub(crate) struct Union {
    entries: Vec<Abbrev>,
    codes: FxHashMap<Abbrev, u64>,
}

impl Union {
    /// The code of `a`, added at the end if new.
    pub fn code(&mut self, a: &Abbrev) -> u64 {
        if let Some(&c) = self.codes.get(a) {
            return c;
        }
        self.entries.push(a.clone());
        let c = self.entries.len() as u64;
        self.codes.insert(a.clone(), c);
        c
    }

    /// The number of entries (to roll back to with [`Union::truncate`]).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no unit uses the table.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets the entries after the first `len` (those of a module that was dropped).
    pub fn truncate(&mut self, len: usize) {
        for a in self.entries.drain(len..) {
            self.codes.remove(&a);
        }
    }

    /// The `.debug_abbrev` bytes: the entries with codes 1, 2, ..., then the 0 that ends
    /// the table.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, a) in self.entries.iter().enumerate() {
            write_uleb(&mut out, i as u64 + 1, 0);
            write_uleb(&mut out, a.tag, 0);
            out.push(a.children);
            for &(attr, form) in &a.attrs {
                write_uleb(&mut out, attr, 0);
                write_uleb(&mut out, form, 0);
            }
            out.extend_from_slice(&[0, 0]);
        }
        out.push(0);
        out
    }
}

/// A re-encoded `.debug_info` and where its units and DIEs moved.
#[derive(Debug)]
pub(crate) struct Reencoded {
    /// The new data; unit headers refer to `.debug_abbrev` (+0).
    pub block: SectionData,
    /// (old offset, new offset) of every unit start, DIE and unit end, increasing.
    pub offsets: Vec<(u32, u32)>,
}

impl Reencoded {
    /// The new offset of a unit start, DIE or unit end at `old`.
    pub fn moved(&self, old: u64) -> Option<u32> {
        let i = self
            .offsets
            .binary_search_by_key(&old, |&(o, _)| u64::from(o))
            .ok()?;
        Some(self.offsets[i].1)
    }
}

/// Hands out the relocations of the old data field by field, in order.
struct Relocs<'a> {
    all: &'a [Reloc],
    next: usize,
}

impl<'a> Relocs<'a> {
    /// The relocations inside `[lo, hi)`; an error if one straddles a bound.
    fn take(&mut self, lo: usize, hi: usize) -> Result<&'a [Reloc], Fail> {
        let start = self.next;
        while let Some(r) = self.all.get(self.next).filter(|r| (r.at as usize) < hi) {
            if (r.at as usize) < lo || r.at as usize + r.width as usize > hi {
                return fail(r.at as usize, "a symbolic value across DWARF fields");
            }
            self.next += 1;
        }
        Ok(&self.all[start..self.next])
    }

    /// Requires `[lo, hi)` to hold plain data: `what` names the field otherwise.
    fn none(&mut self, lo: usize, hi: usize, what: &str) -> Result<(), Fail> {
        if self.take(lo, hi)?.is_empty() {
            Ok(())
        } else {
            fail(lo, format!("a symbolic {what}"))
        }
    }
}

/// A unit-relative reference to patch once the unit's DIEs have moved.
struct RefFix {
    /// Where the value is in the new data, and its size there.
    at: usize,
    len: usize,
    /// The ULEB form (`DW_FORM_ref_udata`) rather than a fixed size.
    uleb: bool,
    /// The old target, an offset in the old data.
    target: u64,
    /// Where the value was in the old data (for messages).
    old_at: usize,
}

fn le(b: &[u8]) -> u64 {
    b.iter().rev().fold(0, |v, &x| (v << 8) | u64::from(x))
}

/// The value of an attribute's field: a ULEB128 (`uleb`) or a little-endian integer
/// of the field's width.
fn field_value(field: &[u8], uleb: bool) -> u64 {
    if uleb {
        read_uleb(field, &mut 0).unwrap_or(0)
    } else {
        le(field)
    }
}

/// Re-encodes `info` (one module's `.debug_info`, whose units use tables in `abbrev`)
/// with the codes of `union`, renumbering file indices with `files` (`None`: the index
/// names no `.file`).
pub(crate) fn reencode(
    info: &SectionData,
    abbrev: &[u8],
    files: &dyn Fn(u64) -> Option<u64>,
    union: &mut Union,
) -> Result<Reencoded, Fail> {
    let b = &info.bytes;
    let mut out = SectionData::default();
    let mut offsets: Vec<(u32, u32)> = Vec::new();
    let mut tables: FxHashMap<u64, FxHashMap<u64, Abbrev>> = FxHashMap::default();
    let mut relocs = Relocs {
        all: &info.relocs,
        next: 0,
    };
    let mut p = 0usize;
    while p < b.len() {
        let cu = p;
        let cu_new = out.bytes.len();
        offsets.push((cu as u32, cu_new as u32));
        if b.len() - p < 11 {
            return fail(p, "a truncated compilation unit header");
        }
        relocs.none(p, p + 4, "unit length")?;
        let length = le(&b[p..p + 4]);
        if length >= 0xffff_fff0 {
            return fail(p, "64-bit DWARF");
        }
        let end = p + 4 + length as usize;
        if end > b.len() || length < 7 {
            return fail(p, "a compilation unit whose length exceeds the section");
        }
        relocs.none(p + 4, p + 6, "DWARF version")?;
        let version = le(&b[p + 4..p + 6]);
        if !(2..=4).contains(&version) {
            return fail(p + 4, format!("DWARF version {version}"));
        }
        let table_at = match relocs.take(p + 6, p + 10)? {
            [] => le(&b[p + 6..p + 10]),
            [Reloc {
                width: 4,
                value: RelocValue::Section { name, addend },
                ..
            }] if name == b".debug_abbrev" && *addend >= 0 => *addend as u64,
            _ => return fail(p + 6, "an abbreviation offset other than `.debug_abbrev+N`"),
        };
        relocs.none(p + 10, p + 11, "address size")?;
        let addr_size = b[p + 10];
        if addr_size != 4 && addr_size != 8 {
            return fail(p + 10, format!("address size {addr_size}"));
        }
        let table = match tables.entry(table_at) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let at = usize::try_from(table_at).unwrap_or(usize::MAX);
                if at >= abbrev.len() {
                    return fail(p + 6, "an abbreviation offset beyond `.debug_abbrev`");
                }
                e.insert(read_table(abbrev, at)?)
            }
        };
        out.bytes.extend_from_slice(&[0; 4]);
        out.bytes.extend_from_slice(&b[p + 4..p + 6]);
        out.relocs.push(Reloc {
            at: out.bytes.len() as u32,
            width: 4,
            value: RelocValue::Section {
                name: b".debug_abbrev".to_vec(),
                addend: 0,
            },
        });
        out.bytes.extend_from_slice(&[0, 0, 0, 0, addr_size]);
        p += 11;

        let mut fixes: Vec<RefFix> = Vec::new();
        while p < end {
            offsets.push((p as u32, out.bytes.len() as u32));
            let start = p;
            let code = read_uleb(b, &mut p).ok_or(Fail {
                at: start,
                what: "a malformed DIE code".into(),
            })?;
            relocs.none(start, p, "DIE code")?;
            if code == 0 {
                out.bytes.push(0);
                continue;
            }
            let Some(a) = table.get(&code) else {
                return fail(start, format!("DIE code {code}, which its table lacks"));
            };
            write_uleb(&mut out.bytes, union.code(a), 0);
            for &(attr, form) in &a.attrs {
                let q = p;
                p = value_end(form, version, addr_size, b, p, end)?;
                let field = &b[q..p];
                let raw_offset =
                    |what| fail(q, format!("a numeric {what} (it cannot be relocated)"));
                match form {
                    // Indices of the one line table ptxas generates from `.file`.
                    0x0b | 0x05 | 0x06 | 0x07 | 0x0f
                        if attr == DW_AT_DECL_FILE || attr == DW_AT_CALL_FILE =>
                    {
                        relocs.none(q, p, "file index")?;
                        let uleb = form == 0x0f;
                        let old = field_value(field, uleb);
                        let new = match old {
                            0 => 0,
                            _ => files(old).ok_or_else(|| Fail {
                                at: q,
                                what: format!("file index {old}, which no `.file` declares"),
                            })?,
                        };
                        if uleb {
                            write_uleb(&mut out.bytes, new, 0);
                        } else if field.len() < 8 && new >> (8 * field.len()) != 0 {
                            return fail(
                                q,
                                format!(
                                    "file {new} of the merged module in a {}-byte field",
                                    field.len()
                                ),
                            );
                        } else {
                            out.bytes
                                .extend_from_slice(&new.to_le_bytes()[..field.len()]);
                        }
                    }
                    _ if attr == DW_AT_DECL_FILE || attr == DW_AT_CALL_FILE => {
                        return fail(q, format!("a file index of form {form:#x}"));
                    }
                    // Unit-relative references: patched at the end of the unit.
                    0x11..=0x15 => {
                        relocs.none(q, p, "unit-relative reference")?;
                        let uleb = form == 0x15;
                        let rel = field_value(field, uleb);
                        fixes.push(RefFix {
                            at: out.bytes.len(),
                            len: field.len(),
                            uleb,
                            target: (cu as u64).saturating_add(rel),
                            old_at: q,
                        });
                        out.bytes.extend(std::iter::repeat_n(0, field.len()));
                    }
                    // Section offsets must be symbolic, so that they can be moved:
                    // `DW_FORM_strp`, `DW_FORM_ref_addr`, `DW_FORM_sec_offset` and
                    // DWARF 2/3 `data4`/`data8` location and range list offsets.
                    // The line table is the exception: ptxas generates one, at 0.
                    0x0e | 0x10 | 0x17 | 0x06 | 0x07 => {
                        let section_offset = match form {
                            0x0e | 0x10 => true,
                            0x17 => attr != DW_AT_STMT_LIST,
                            _ => version < 4 && SECTION_OFFSET_ATTRS.contains(&attr),
                        };
                        let moved = relocs.take(q, p)?;
                        if section_offset && moved.is_empty() {
                            return raw_offset(match form {
                                0x0e => "DW_FORM_strp",
                                0x10 => "DW_FORM_ref_addr",
                                _ => "section offset",
                            });
                        }
                        copy(&mut out, field, moved, q);
                    }
                    _ => {
                        let moved = relocs.take(q, p)?;
                        copy(&mut out, field, moved, q);
                    }
                }
            }
        }
        if p != end {
            return fail(cu, "a DIE that runs past the end of its unit");
        }
        offsets.push((end as u32, out.bytes.len() as u32));
        let unit = &offsets[offsets.partition_point(|&(o, _)| (o as usize) < cu)..];
        for f in fixes {
            let found = unit
                .binary_search_by_key(&f.target, |&(o, _)| u64::from(o))
                .ok()
                .filter(|_| f.target < end as u64);
            let Some(i) = found else {
                return fail(
                    f.old_at,
                    "a reference to something other than a DIE of its unit",
                );
            };
            let rel = (unit[i].1 as usize - cu_new) as u64;
            if f.uleb {
                let mut enc = Vec::new();
                if !write_uleb(&mut enc, rel, f.len) {
                    return fail(f.old_at, "a DW_FORM_ref_udata that grows");
                }
                out.bytes[f.at..f.at + f.len].copy_from_slice(&enc);
            } else if f.len < 8 && rel >> (8 * f.len) != 0 {
                return fail(f.old_at, "a reference that no longer fits its form");
            } else {
                out.bytes[f.at..f.at + f.len].copy_from_slice(&rel.to_le_bytes()[..f.len]);
            }
        }
        let new_len = (out.bytes.len() - cu_new - 4) as u64;
        if new_len >= 0xffff_fff0 {
            return fail(cu, "a compilation unit that grows beyond 4 GiB");
        }
        out.bytes[cu_new..cu_new + 4].copy_from_slice(&(new_len as u32).to_le_bytes());
        p = end;
    }
    offsets.dedup();
    let mut re = Reencoded {
        block: out,
        offsets,
    };
    for &(at, name) in &info.labels {
        match re.moved(u64::from(at)) {
            Some(new) => re.block.labels.push((new, name)),
            None => return fail(at as usize, "a label inside a DIE"),
        }
    }
    if u32::try_from(re.block.bytes.len()).is_err() {
        return fail(0, "a `.debug_info` that grows beyond 4 GiB");
    }
    Ok(re)
}

/// Appends `field` (at `old_at` in the old data) and its relocations `moved`.
fn copy(out: &mut SectionData, field: &[u8], moved: &[Reloc], old_at: usize) {
    let base = out.bytes.len();
    out.bytes.extend_from_slice(field);
    for r in moved {
        out.relocs.push(Reloc {
            at: (base + (r.at as usize - old_at)) as u32,
            ..r.clone()
        });
    }
}

/// The end of the value of `form` that starts at `p` (before `end`, the unit's end).
fn value_end(
    form: u64,
    version: u64,
    addr_size: u8,
    b: &[u8],
    p: usize,
    end: usize,
) -> Result<usize, Fail> {
    let truncated = || Fail {
        at: p,
        what: "a value that runs past the end of its unit".into(),
    };
    let fixed = |n: usize| Ok::<usize, Fail>(n);
    let len = match form {
        0x01 => fixed(addr_size as usize),
        0x0b | 0x0c | 0x11 => fixed(1),
        0x05 | 0x12 => fixed(2),
        0x06 | 0x13 | 0x0e | 0x17 => fixed(4),
        0x07 | 0x14 => fixed(8),
        0x10 if version == 2 => fixed(addr_size as usize),
        0x10 => fixed(4),
        0x19 => fixed(0),
        0x08 => match b[p..end].iter().position(|&c| c == 0) {
            Some(n) => fixed(n + 1),
            None => return Err(truncated()),
        },
        0x0a => fixed(1 + *b.get(p).filter(|_| p < end).ok_or_else(truncated)? as usize),
        0x03 if end - p >= 2 => fixed(2 + le(&b[p..p + 2]) as usize),
        0x04 if end - p >= 4 => fixed(4 + le(&b[p..p + 4]) as usize),
        0x09 | 0x18 => {
            let mut q = p;
            let n = read_uleb(&b[..end], &mut q).ok_or_else(truncated)?;
            let n = usize::try_from(n).map_err(|_| truncated())?;
            fixed((q - p).checked_add(n).ok_or_else(truncated)?)
        }
        0x0d | 0x0f | 0x15 => {
            let n = b[p..end]
                .iter()
                .position(|&c| c & 0x80 == 0)
                .ok_or_else(truncated)?;
            fixed(n + 1)
        }
        0x03 | 0x04 => return Err(truncated()),
        0x16 => return fail(p, "DW_FORM_indirect"),
        0x20 => return fail(p, "DW_FORM_ref_sig8 (type units)"),
        _ => return fail(p, format!("DWARF form {form:#x}")),
    }?;
    match p.checked_add(len) {
        Some(e) if e <= end => Ok(e),
        _ => Err(truncated()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uleb_round_trips_and_pads() {
        for v in [0u64, 1, 127, 128, 300, 16_383, 16_384, u64::MAX] {
            let mut b = Vec::new();
            assert!(write_uleb(&mut b, v, 0));
            let mut p = 0;
            assert_eq!(read_uleb(&b, &mut p), Some(v));
            assert_eq!(p, b.len());
        }
        let mut b = Vec::new();
        assert!(write_uleb(&mut b, 5, 3));
        assert_eq!(b, [0x85, 0x80, 0x00]);
        assert_eq!(read_uleb(&b, &mut 0), Some(5));
        assert!(!write_uleb(&mut Vec::new(), 300, 1), "300 needs 2 bytes");
        // Truncated, and beyond 64 bits.
        assert_eq!(read_uleb(&[0x80], &mut 0), None);
        assert_eq!(read_uleb(&[0xff; 10], &mut 0), None);
        assert_eq!(
            read_uleb(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                &mut 0
            ),
            None
        );
    }

    fn abbrev(tag: u64, children: u8, attrs: &[(u64, u64)]) -> Abbrev {
        Abbrev {
            tag,
            children,
            attrs: attrs.to_vec(),
        }
    }

    #[test]
    fn union_deduplicates_and_numbers_in_order() {
        let cu = abbrev(0x11, 1, &[(0x03, 0x08)]);
        let var = abbrev(0x34, 0, &[(0x03, 0x08), (0x3a, 0x0b)]);
        let var4 = abbrev(0x34, 0, &[(0x03, 0x08), (0x3a, 0x0b), (0x3b, 0x0b)]);
        let mut u = Union::default();
        assert_eq!(u.code(&cu), 1);
        assert_eq!(u.code(&var), 2);
        assert_eq!(u.code(&cu), 1);
        assert_eq!(u.code(&var4), 3);
        let bytes = u.encode();
        let t = read_table(&bytes, 0).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(
            (t[&1].clone(), t[&2].clone(), t[&3].clone()),
            (cu, var, var4.clone())
        );
        u.truncate(2);
        assert_eq!(u.len(), 2);
        assert_eq!(
            u.code(&var4),
            3,
            "a dropped entry is added again at the end"
        );
    }

    /// Table: 1 = compile unit (name string, children), 2 = variable (decl_file data1,
    /// type ref4, location exprloc), 3 = base type (name string).
    fn module_abbrevs() -> Vec<u8> {
        let mut u = Union::default();
        u.code(&abbrev(0x11, 1, &[(0x03, 0x08)]));
        u.code(&abbrev(
            0x34,
            0,
            &[(0x3a, 0x0b), (0x49, 0x13), (0x02, 0x18)],
        ));
        u.code(&abbrev(0x24, 0, &[(0x03, 0x08)]));
        u.encode()
    }

    /// One unit: CU "a" { variable (file 1, type -> base, DW_OP_addr sym), base "i" }.
    fn module_info() -> SectionData {
        let mut b = vec![0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8];
        b.extend_from_slice(&[1, b'a', 0]); // CU at 11
        let var = b.len();
        b.extend_from_slice(&[2, 1]); // variable: code, decl_file 1
        let type_ref = b.len();
        b.extend_from_slice(&[0, 0, 0, 0]); // ref4, patched below
        b.extend_from_slice(&[9, 3]); // exprloc of 9 bytes: DW_OP_addr ...
        let addr = b.len();
        b.extend_from_slice(&[0; 8]);
        let base = b.len();
        b.extend_from_slice(&[3, b'i', 0, 0]); // base type, then end of children
        b[type_ref..type_ref + 4].copy_from_slice(&(base as u32).to_le_bytes());
        let len = (b.len() - 4) as u32;
        b[0..4].copy_from_slice(&len.to_le_bytes());
        let _ = var;
        SectionData {
            bytes: b,
            relocs: vec![
                Reloc {
                    at: 6,
                    width: 4,
                    value: RelocValue::Section {
                        name: b".debug_abbrev".to_vec(),
                        addend: 0,
                    },
                },
                Reloc {
                    at: addr as u32,
                    width: 8,
                    value: RelocValue::Expr(Vec::new()),
                },
            ],
            labels: Vec::new(),
        }
    }

    #[test]
    fn reencoding_with_the_same_codes_is_the_identity() {
        let info = module_info();
        let mut u = Union::default();
        let r = reencode(&info, &module_abbrevs(), &|f| Some(f), &mut u).unwrap();
        assert_eq!(r.block, info);
        assert_eq!(u.encode(), module_abbrevs());
    }

    #[test]
    fn grown_codes_move_dies_and_fix_lengths_references_and_files() {
        let info = module_info();
        // 200 entries already in the union: the module's codes become 201..203, two bytes each.
        let mut u = Union::default();
        for k in 0..200 {
            u.code(&abbrev(0x4100 + k, 0, &[]));
        }
        let files = |f: u64| (f == 1).then_some(7);
        let r = reencode(&info, &module_abbrevs(), &files, &mut u).unwrap();
        let b = &r.block.bytes;
        assert_eq!(
            b.len(),
            info.bytes.len() + 3,
            "three DIE codes grew by a byte"
        );
        assert_eq!(le(&b[0..4]) as usize, b.len() - 4, "unit length");
        // CU code 201 at 11, then "a\0", then the variable at 15: code 202, decl_file 7.
        assert_eq!(&b[11..13], &[201 & 0x7f | 0x80, 1]);
        assert_eq!(&b[15..18], &[202 & 0x7f | 0x80, 1, 7]);
        // The type reference points at the base type's new offset (30 before).
        let base = r.moved(30).unwrap() as usize;
        assert_eq!(base, 32);
        assert_eq!(b[base], 203 & 0x7f | 0x80);
        assert_eq!(le(&b[18..22]) as usize, base);
        // The DW_OP_addr relocation moved with its block (exprloc length, DW_OP_addr).
        assert_eq!(r.block.relocs[1].at, 24);
        assert_eq!(r.block.relocs[1].value, RelocValue::Expr(Vec::new()));
    }

    /// Corrupted units and tables (every byte replaced by values that matter: 0, 1,
    /// 0x7f, 0x80, 0xff) are refused or re-encoded, never a panic, and whatever is
    /// re-encoded decodes again with the union's table.
    #[test]
    fn corrupt_input_never_panics() {
        let info = module_info();
        let abbrevs = module_abbrevs();
        for at in 0..info.bytes.len() + abbrevs.len() {
            for v in [0u8, 1, 2, 0x7f, 0x80, 0xff] {
                let (mut i, mut a) = (info.clone(), abbrevs.clone());
                match at.checked_sub(i.bytes.len()) {
                    None => i.bytes[at] = v,
                    Some(k) => a[k] = v,
                }
                let mut u = Union::default();
                if let Ok(r) = reencode(&i, &a, &Some, &mut u) {
                    let again = reencode(&r.block, &u.encode(), &Some, &mut u.clone());
                    assert!(again.is_ok(), "byte {at} = {v}: {again:?}");
                }
            }
        }
    }

    #[test]
    fn unsupported_input_fails_instead_of_guessing() {
        let abbrevs = module_abbrevs();
        let mut u = Union::default();
        let reenc = |info: &SectionData, u: &mut Union| reencode(info, &abbrevs, &|f| Some(f), u);
        // 64-bit DWARF.
        let mut info = module_info();
        info.bytes[0..4].copy_from_slice(&[0xff; 4]);
        assert!(reenc(&info, &mut u).unwrap_err().what.contains("64-bit"));
        // DWARF 5.
        let mut info = module_info();
        info.bytes[4] = 5;
        assert!(reenc(&info, &mut u).unwrap_err().what.contains("version 5"));
        // A file index beyond one byte after renumbering.
        let info = module_info();
        let e = reencode(&info, &abbrevs, &|_| Some(256), &mut u).unwrap_err();
        assert!(e.what.contains("1-byte field"), "{e:?}");
        // A file index without `.file`.
        let e = reencode(&info, &abbrevs, &|_| None, &mut u).unwrap_err();
        assert!(e.what.contains("no `.file`"), "{e:?}");
        // A reference into the middle of a DIE.
        let mut info = module_info();
        info.bytes[16] += 1;
        assert!(reenc(&info, &mut u).unwrap_err().what.contains("reference"));
        // An unknown code.
        let mut info = module_info();
        info.bytes[11] = 9;
        assert!(reenc(&info, &mut u)
            .unwrap_err()
            .what
            .contains("DIE code 9"));
        // A truncated unit.
        let mut info = module_info();
        info.bytes.truncate(20);
        assert!(reenc(&info, &mut u).is_err());
    }
}
