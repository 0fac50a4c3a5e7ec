//! Which archive members a link uses, by GNU ld's rules: inputs are processed in
//! command-line order; an archive member is loaded only when it defines a symbol that
//! is undefined at that point, and the archive is rescanned until nothing more is
//! loaded; `--start-group ... --end-group` rescans all its archives together until
//! nothing changes; `--whole-archive` loads every member; `-u SYM` starts with SYM
//! undefined. Members are placed in the link in the order they are loaded (which
//! matters: among `.weak` definitions the first wins).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::ir::{Linkage, Module, SymbolKind};

/// One command-line item after `-l` resolution.
#[derive(Clone, Debug)]
pub enum Piece {
    /// A module given directly (by unit index), and the group it is in, if any.
    Object(usize, Option<u32>),
    /// An archive: its members' unit indices.
    Archive {
        /// The archive's path, for messages.
        name: String,
        /// Unit indices of its members, in archive order.
        members: Vec<usize>,
        /// `--whole-archive` was in effect.
        whole: bool,
        /// The `--start-group` it belongs to, if any.
        group: Option<u32>,
    },
}

/// What a module defines and needs, by global name.
#[derive(Clone, Debug, Default)]
pub struct Needs {
    /// Global names it defines.
    pub defines: Vec<Vec<u8>>,
    /// Names it uses but does not define (`.extern` functions it refers to, and every
    /// `.extern` variable, which must be resolved even when unused).
    pub undefined: Vec<Vec<u8>>,
}

/// The definitions and imports of `m`.
pub fn needs(m: &Module) -> Needs {
    let mut used = vec![false; m.symbols.len()];
    for r in &m.references {
        used[r.symbol.0 as usize] = true;
    }
    let mut n = Needs::default();
    for (id, s) in m.symbols_with_ids() {
        if matches!(s.kind, SymbolKind::SectionLabel | SymbolKind::BodyName) {
            continue;
        }
        let name = m.symbol_name(id).to_vec();
        if s.is_defined() && (s.linkage != Linkage::Local || s.aliasee.is_some()) {
            n.defines.push(name);
        } else if s.linkage == Linkage::Extern
            && (used[id.0 as usize] || s.kind == SymbolKind::Variable)
        {
            n.undefined.push(name);
        }
    }
    n
}

/// The modules to link, in order, and what `--verbose` reports about them.
pub struct Selection {
    /// Unit indices in link order.
    pub order: Vec<usize>,
    /// One line per member loaded from an archive, saying why.
    pub log: Vec<String>,
}

struct State<'a> {
    needs: &'a dyn Fn(usize) -> Option<&'a Needs>,
    names: &'a dyn Fn(usize) -> String,
    defined: FxHashSet<Vec<u8>>,
    /// Undefined name → who referred to it first.
    undefined: FxHashMap<Vec<u8>, String>,
    loaded: FxHashSet<usize>,
    out: Selection,
}

impl State<'_> {
    fn load(&mut self, unit: usize) {
        if !self.loaded.insert(unit) {
            return;
        }
        self.out.order.push(unit);
        let Some(n) = (self.needs)(unit) else { return };
        for d in &n.defines {
            self.undefined.remove(d);
            self.defined.insert(d.clone());
        }
        for u in &n.undefined {
            if !self.defined.contains(u) && !self.undefined.contains_key(u) {
                self.undefined.insert(u.clone(), (self.names)(unit));
            }
        }
    }

    /// One pass over an archive: loads every member that defines a currently
    /// undefined name, until a pass loads nothing. Returns whether anything loaded.
    fn scan(&mut self, archive: &str, members: &[usize]) -> bool {
        let mut any = false;
        loop {
            let mut pulled = false;
            for &m in members {
                if self.loaded.contains(&m) {
                    continue;
                }
                let Some(n) = (self.needs)(m) else { continue };
                let Some(sym) = n.defines.iter().find(|d| self.undefined.contains_key(*d)) else {
                    continue;
                };
                let by = self.undefined[sym].clone();
                let line = format!(
                    "{}: loaded for {} (referenced by {by}) from {archive}",
                    (self.names)(m),
                    String::from_utf8_lossy(sym)
                );
                self.out.log.push(line);
                self.load(m);
                pulled = true;
            }
            if !pulled {
                return any;
            }
            any = true;
        }
    }
}

/// Whether selecting from `pieces` scans an archive for members (one not loaded
/// whole): only then does selection ask what a unit defines, needs or is called.
pub(crate) fn scans_archives(pieces: &[Piece]) -> bool {
    pieces
        .iter()
        .any(|p| matches!(p, Piece::Archive { whole: false, .. }))
}

/// Applies GNU ld's archive rules to `pieces`. `needs(unit)` gives a unit's symbols
/// (`None` for units that could not be parsed); `forced` are the `-u` names.
pub fn select<'a>(
    pieces: &[Piece],
    needs: &'a dyn Fn(usize) -> Option<&'a Needs>,
    names: &'a dyn Fn(usize) -> String,
    forced: &[String],
) -> Selection {
    let mut st = State {
        needs,
        names,
        defined: FxHashSet::default(),
        undefined: forced
            .iter()
            .map(|s| (s.as_bytes().to_vec(), "-u".to_string()))
            .collect(),
        loaded: FxHashSet::default(),
        out: Selection {
            order: Vec::new(),
            log: Vec::new(),
        },
    };
    // Without an archive to scan, every object and whole-archive member is loaded,
    // in order, and nobody asks what defines what (or what a unit is called).
    if !scans_archives(pieces) {
        fn units(p: &Piece) -> &[usize] {
            match p {
                Piece::Object(u, _) => std::slice::from_ref(u),
                Piece::Archive { members, .. } => members,
            }
        }
        let count = pieces.iter().flat_map(units).max().map_or(0, |&u| u + 1);
        let mut loaded = vec![false; count];
        st.out.order = (pieces.iter().flat_map(units))
            .copied()
            .filter(|&u| !std::mem::replace(&mut loaded[u], true))
            .collect();
        return st.out;
    }
    let mut i = 0;
    while i < pieces.len() {
        match &pieces[i] {
            Piece::Object(u, None) => {
                st.load(*u);
                i += 1;
            }
            Piece::Archive {
                members,
                whole: true,
                group: None,
                ..
            } => {
                for &m in members {
                    st.load(m);
                }
                i += 1;
            }
            Piece::Object(_, Some(g)) | Piece::Archive { group: Some(g), .. } => {
                let g = *g;
                let j = i + pieces[i..]
                    .iter()
                    .take_while(|p| group_of(p) == Some(g))
                    .count();
                // Objects and whole archives inside a group are loaded once; the other
                // archives are rescanned as a whole until a full pass loads nothing.
                for p in &pieces[i..j] {
                    match p {
                        Piece::Object(u, _) => st.load(*u),
                        Piece::Archive {
                            members,
                            whole: true,
                            ..
                        } => {
                            for &m in members {
                                st.load(m);
                            }
                        }
                        Piece::Archive { .. } => {}
                    }
                }
                loop {
                    let mut any = false;
                    for p in &pieces[i..j] {
                        if let Piece::Archive {
                            name,
                            members,
                            whole: false,
                            ..
                        } = p
                        {
                            any |= st.scan(name, members);
                        }
                    }
                    if !any {
                        break;
                    }
                }
                i = j;
            }
            Piece::Archive { name, members, .. } => {
                st.scan(name, members);
                i += 1;
            }
        }
    }
    st.out
}

fn group_of(p: &Piece) -> Option<u32> {
    match p {
        Piece::Object(_, g) | Piece::Archive { group: g, .. } => *g,
    }
}
