//! `--split-kernels N`: the merged module cut into N modules that ptxas assembles
//! separately (`ptxas -ewp`, in parallel) and nvJitLink links back into one cubin
//! (docs/machine-code.md, "Split assembly").
//!
//! Each part is a whole program for its kernels, cut from the merged text:
//!
//! * the kernels are shared out by size (each kernel with the functions it reaches);
//! * a function is defined in every part that reaches it, module-local, as
//!   whole-program ptxas treats every function that is not a kernel (it compiles
//!   it into each kernel that calls it); copies of one name in several cubins are
//!   separate local symbols to nvJitLink;
//! * `.shared` and `.local` variables are copied too (module-local after the first
//!   part): they live per CTA or per thread, and every access a kernel makes goes
//!   through its own part's copy;
//! * any other variable is one object of the program: the first part that reaches it
//!   defines it (`.visible` if it was module-local and other parts use it), the
//!   others declare it `.extern`;
//! * a kernel whose address another part takes is declared `.extern .entry` there.
//!
//! The merged module's items stay in their order, so everything is still declared
//! before it is used.

use crate::ir::{ItemKind, Linkage, Module, RefKind, StateSpace, SymbolId, SymbolKind};
use crate::lex::TokenKind;
use crate::source::Span;

/// A piece of a part's text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Bytes of the merged text.
    Merged(Span),
    /// New text: a linkage directive or the end of a declaration.
    New(&'static [u8]),
}

/// One part: its text, and which kernels it defines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Part {
    /// The text, in order.
    pub pieces: Vec<Piece>,
    /// The names of its kernels, in the merged module's order.
    pub kernels: Vec<String>,
}

/// How a part writes a symbol it reaches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Role {
    /// As the merged module does.
    Copy,
    /// Without its linkage directive: a module-local copy.
    Local,
    /// With `.visible` added: a module-local variable that other parts declare.
    Exported,
    /// An `.extern` declaration of what another part defines.
    Declare,
}

/// Cuts `module` (parsed from `text`, the merged module) into at most `parts`
/// parts, one kernel or more each; fewer where it has fewer kernels. An error says
/// why the module cannot be split.
pub(crate) fn split(module: &Module, text: &[u8], parts: usize) -> Result<Vec<Part>, String> {
    if module
        .items
        .iter()
        .any(|i| matches!(i.kind, ItemKind::Section(_)))
    {
        return Err(
            "the link has DWARF debug sections (-g inputs), which refer to the code of \
                    every part: add --strip-debug (line information stays), or leave out \
                    --split-kernels"
                .into(),
        );
    }
    let graph = Graph::new(module);
    let kernels: Vec<SymbolId> = module
        .symbols_with_ids()
        .filter(|(_, s)| s.kind == SymbolKind::Entry && s.is_defined())
        .map(|(id, _)| id)
        .collect();
    let parts = parts.clamp(1, kernels.len().max(1));
    let roots = share_out(module, &graph, &kernels, parts);
    let plan = Plan::new(module, &graph, &roots);
    Ok((0..parts)
        .map(|p| Part {
            pieces: plan.write(module, text, p),
            kernels: roots[p]
                .iter()
                .filter(|&&s| module.symbol(s).kind == SymbolKind::Entry)
                .map(|&s| String::from_utf8_lossy(module.symbol_name(s)).into_owned())
                .collect(),
        })
        .collect())
}

/// What each symbol's definition refers to.
struct Graph {
    /// `uses[symbol]`: the symbols its definition names (and an alias's aliasee).
    uses: Vec<Vec<SymbolId>>,
    /// `size[symbol]`: the bytes of its definition.
    size: Vec<u64>,
}

impl Graph {
    fn new(m: &Module) -> Graph {
        let mut defines: Vec<Option<SymbolId>> = vec![None; m.items.len()];
        let mut size = vec![0u64; m.symbols.len()];
        for (id, s) in m.symbols_with_ids() {
            if let Some(d) = s.definition() {
                defines[d.item.0 as usize] = Some(id);
                size[id.0 as usize] = m.item(d.item).span.len() as u64;
            }
        }
        let mut uses: Vec<Vec<SymbolId>> = vec![Vec::new(); m.symbols.len()];
        for r in &m.references {
            if matches!(r.kind, RefKind::DebugLoc | RefKind::Dwarf) {
                continue;
            }
            if let Some(s) = defines[r.item.0 as usize] {
                uses[s.0 as usize].push(r.symbol);
            }
        }
        for (id, s) in m.symbols_with_ids() {
            if let Some(a) = s.aliasee {
                uses[id.0 as usize].push(a);
            }
        }
        for u in &mut uses {
            u.sort_unstable();
            u.dedup();
        }
        Graph { uses, size }
    }

    /// Marks in `seen` what `from` reaches, stopping at the symbols `stop` says
    /// (they are marked, not followed) unless they are in `from`.
    fn reach(&self, from: &[SymbolId], seen: &mut [bool], stop: &dyn Fn(SymbolId) -> bool) {
        let mut work: Vec<SymbolId> = Vec::new();
        for &s in from {
            if !std::mem::replace(&mut seen[s.0 as usize], true) {
                work.extend(self.uses[s.0 as usize].iter().copied());
            }
        }
        while let Some(s) = work.pop() {
            if std::mem::replace(&mut seen[s.0 as usize], true) {
                continue;
            }
            if !stop(s) {
                work.extend(self.uses[s.0 as usize].iter().copied());
            }
        }
    }
}

/// The roots of each part: the kernels, shared out largest first to the part with
/// the least code so far (a kernel's size counts the functions it reaches); part 0
/// also gets the variables no kernel reaches (the host may use them). A function no
/// kernel or variable reaches is in no part: whole-program ptxas leaves it out too.
fn share_out(m: &Module, g: &Graph, kernels: &[SymbolId], parts: usize) -> Vec<Vec<SymbolId>> {
    let mut seen = vec![false; m.symbols.len()];
    let mut weighed: Vec<(u64, SymbolId)> = kernels
        .iter()
        .map(|&k| {
            seen.fill(false);
            g.reach(&[k], &mut seen, &|s| m.symbol(s).kind == SymbolKind::Entry);
            let size = seen
                .iter()
                .enumerate()
                .filter(|&(_, &r)| r)
                .map(|(s, _)| g.size[s])
                .sum::<u64>();
            (size, k)
        })
        .collect();
    weighed.sort_by_key(|&(size, k)| (std::cmp::Reverse(size), k));
    let mut load = vec![0u64; parts];
    let mut roots: Vec<Vec<SymbolId>> = vec![Vec::new(); parts];
    for (size, k) in weighed {
        let p = (0..parts).min_by_key(|&p| (load[p], p)).expect("a part");
        load[p] += size;
        roots[p].push(k);
    }
    for r in &mut roots {
        r.sort_unstable();
    }
    seen.fill(false);
    g.reach(kernels, &mut seen, &|_| false);
    roots[0].extend(
        m.symbols_with_ids()
            .filter(|&(id, s)| {
                !seen[id.0 as usize] && s.kind == SymbolKind::Variable && s.is_defined()
            })
            .map(|(id, _)| id),
    );
    roots
}

/// Whether a symbol is one object of the program (defined once, declared
/// elsewhere) rather than code or per-CTA/per-thread storage each part copies.
fn is_single(m: &Module, s: SymbolId) -> bool {
    let sym = m.symbol(s);
    match sym.kind {
        SymbolKind::Entry => true,
        SymbolKind::Variable => {
            sym.is_defined() && !matches!(sym.space, Some(StateSpace::Shared | StateSpace::Local))
        }
        _ => false,
    }
}

/// Each part's role for each symbol.
struct Plan {
    /// `roles[part][symbol]`; `None`: not in the part.
    roles: Vec<Vec<Option<Role>>>,
    /// `declares[item]`: the symbol a declaring item declares, and which of its
    /// declarators (a merged module declares one name per item).
    declares: Vec<Option<(SymbolId, u32)>>,
}

impl Plan {
    fn new(m: &Module, g: &Graph, roots: &[Vec<SymbolId>]) -> Plan {
        let n = m.symbols.len();
        let parts = roots.len();
        // Which part owns each single object: its kernel's, else the first that
        // reaches it.
        let mut owner: Vec<Option<usize>> = vec![None; n];
        for (p, r) in roots.iter().enumerate() {
            for &k in r.iter().filter(|&&k| m.symbol(k).kind == SymbolKind::Entry) {
                owner[k.0 as usize] = Some(p);
            }
        }
        let mut seen = vec![false; n];
        for (p, r) in roots.iter().enumerate() {
            seen.fill(false);
            g.reach(r, &mut seen, &|s| m.symbol(s).kind == SymbolKind::Entry);
            for s in (0..n).filter(|&s| seen[s] && is_single(m, SymbolId(s as u32))) {
                owner[s].get_or_insert(p);
            }
        }
        // What each part reaches without following what another part owns.
        let mut reached: Vec<Vec<bool>> = Vec::with_capacity(parts);
        for (p, r) in roots.iter().enumerate() {
            let mut seen = vec![false; n];
            g.reach(r, &mut seen, &|s| {
                is_single(m, s) && owner[s.0 as usize] != Some(p)
            });
            reached.push(seen);
        }
        let mut roles: Vec<Vec<Option<Role>>> = vec![vec![None; n]; parts];
        for s in 0..n {
            let id = SymbolId(s as u32);
            let sym = m.symbol(id);
            let holders: Vec<usize> = (0..parts).filter(|&p| reached[p][s]).collect();
            for (i, &p) in holders.iter().enumerate() {
                roles[p][s] = Some(if is_single(m, id) {
                    match owner[s] == Some(p) {
                        true if sym.linkage == Linkage::Local && holders.len() > 1 => {
                            Role::Exported
                        }
                        true => Role::Copy,
                        false => Role::Declare,
                    }
                } else if sym.is_defined() && (sym.kind == SymbolKind::Function || i > 0) {
                    Role::Local
                } else {
                    Role::Copy
                });
            }
        }
        let mut declares: Vec<Option<(SymbolId, u32)>> = vec![None; m.items.len()];
        for (id, s) in m.symbols_with_ids() {
            for d in s.decls.iter() {
                declares[d.item.0 as usize] = Some((id, d.declarator));
            }
        }
        Plan { roles, declares }
    }

    /// Part `p`'s text: the merged module's items it has, in order.
    fn write(&self, m: &Module, text: &[u8], p: usize) -> Vec<Piece> {
        let roles = &self.roles[p];
        let declares = &self.declares;
        let mut out = Vec::new();
        let mut declared = vec![false; m.symbols.len()];
        for (i, item) in m.items.iter().enumerate() {
            let role = match &item.kind {
                // With its alias (the prototype before it declares the alias).
                ItemKind::Alias { alias, .. } => {
                    let at = m.references.partition_point(|r| r.span.lo < alias.lo);
                    let Some(r) = m.references.get(at).filter(|r| r.span == *alias) else {
                        continue;
                    };
                    match roles[r.symbol.0 as usize] {
                        Some(_) => Role::Copy,
                        None => continue,
                    }
                }
                ItemKind::Variable(_) | ItemKind::Function(_) => {
                    let Some((s, _)) = declares[i] else { continue };
                    match roles[s.0 as usize] {
                        Some(r) => r,
                        None => continue,
                    }
                }
                ItemKind::Section(_) | ItemKind::Error => continue,
                _ => Role::Copy,
            };
            let linkage = linkage_token(m, text, item);
            match role {
                Role::Copy => out.push(Piece::Merged(item.span)),
                Role::Local => match linkage {
                    Some(t) => {
                        out.push(Piece::Merged(Span::new(item.span.lo, t.lo)));
                        out.push(Piece::Merged(Span::new(t.hi, item.span.hi)));
                    }
                    None => out.push(Piece::Merged(item.span)),
                },
                Role::Exported => {
                    out.push(Piece::New(b".visible "));
                    out.push(Piece::Merged(item.span));
                }
                Role::Declare => {
                    let (s, declarator) = declares[i].expect("a declaring item");
                    // Once, where the symbol is first declared.
                    if std::mem::replace(&mut declared[s.0 as usize], true) {
                        continue;
                    }
                    let end = match &item.kind {
                        ItemKind::Function(f) => f.header_end,
                        ItemKind::Variable(v) => {
                            let d = &v.declarators[declarator as usize];
                            match &d.init {
                                Some(init) => {
                                    let before = &text[d.span.lo as usize..init.span.lo as usize];
                                    let eq = before.iter().rposition(|&b| b == b'=');
                                    let name = &before[..eq.unwrap_or(before.len())];
                                    let kept = name.trim_ascii_end().len();
                                    d.span.lo + kept as u32
                                }
                                None => d.span.hi,
                            }
                        }
                        _ => item.span.hi,
                    };
                    out.push(Piece::New(b".extern "));
                    let after = linkage.map_or(item.span.lo, |t| t.hi);
                    out.push(Piece::Merged(Span::new(after, end)));
                    out.push(Piece::New(b";"));
                }
            }
            out.push(Piece::New(b"\n"));
        }
        out
    }
}

/// The linkage directive (`.visible`, `.weak`, `.extern`, `.common`) of `item` with
/// the blanks after it, if it has one: among its tokens before the name.
fn linkage_token(m: &Module, text: &[u8], item: &crate::ir::Item) -> Option<Span> {
    let name_at = match &item.kind {
        ItemKind::Function(f) => f.name.lo,
        ItemKind::Variable(v) => v.declarators.first()?.span.lo,
        _ => return None,
    };
    let t = m
        .tokens_in(item.tokens)
        .iter()
        .take_while(|t| t.lo < name_at)
        .find(|t| {
            t.kind == TokenKind::Directive
                && matches!(
                    &text[t.lo as usize..t.hi as usize],
                    b".visible" | b".weak" | b".extern" | b".common"
                )
        })?;
    let blanks = text[t.hi as usize..name_at as usize]
        .iter()
        .take_while(|b| b.is_ascii_whitespace())
        .count();
    Some(Span::new(t.lo, t.hi + blanks as u32))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_module;
    use crate::source::FileId;

    fn parts(src: &str, n: usize) -> Vec<(String, Vec<String>)> {
        let parsed = parse_module(FileId(0), src.as_bytes());
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        split(&parsed.module, src.as_bytes(), n)
            .unwrap()
            .into_iter()
            .map(|p| {
                let mut text = Vec::new();
                for piece in &p.pieces {
                    match *piece {
                        Piece::Merged(s) => text.extend_from_slice(&src.as_bytes()[s.range()]),
                        Piece::New(b) => text.extend_from_slice(b),
                    }
                }
                (String::from_utf8(text).unwrap(), p.kernels)
            })
            .collect()
    }

    const HEADER: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

    /// Functions are copied (local after the first part), program-wide variables
    /// defined once and declared elsewhere, shared memory copied.
    #[test]
    fn code_is_copied_and_data_defined_once() {
        let src = format!(
            "{HEADER}.visible .global .align 4 .u32 g[2] = {{1, 2}};\n\
             .global .align 4 .u32 lv = 5;\n\
             .shared .align 4 .u32 sh[8];\n\
             .visible .func (.param .u32 r) f(.param .u32 x)\n{{\n\
             ld.global.u32 %r1, [lv];\nret;\n}}\n\
             .visible .entry ka()\n{{\nld.global.u32 %r1, [g];\nst.shared.u32 [sh], %r1;\n\
             {{ .param .u32 x; .param .u32 r; call (r), f, (x); }}\nret;\n}}\n\
             .visible .entry kb()\n{{\nld.global.u32 %r1, [g+4];\nst.shared.u32 [sh], %r1;\n\
             {{ .param .u32 x; .param .u32 r; call (r), f, (x); }}\nret;\n}}\n"
        );
        let got = parts(&src, 2);
        assert_eq!(got.len(), 2);
        // The part with the larger kernel comes first.
        assert_eq!(got[0].1, ["kb"]);
        let (a, b) = (&got[0].0, &got[1].0);
        assert!(
            a.contains(".visible .global .align 4 .u32 g[2] = {1, 2};"),
            "{a}"
        );
        assert!(a.contains(".visible .global .align 4 .u32 lv = 5;"), "{a}");
        assert!(a.contains("\n.func (.param .u32 r) f"), "{a}");
        assert!(b.contains(".extern .global .align 4 .u32 g[2];"), "{b}");
        assert!(b.contains(".extern .global .align 4 .u32 lv;"), "{b}");
        assert!(b.contains("\n.func (.param .u32 r) f"), "{b}");
        assert!(a.contains(".shared .align 4 .u32 sh[8];"));
        assert!(b.contains(".shared .align 4 .u32 sh[8];"));
        let kernels: Vec<_> = got.iter().map(|p| p.1.clone()).collect();
        assert_eq!(kernels.concat().len(), 2);
        assert!(a.starts_with(HEADER) && b.starts_with(HEADER));
    }

    /// A kernel whose address another part takes is declared there.
    #[test]
    fn a_kernel_named_elsewhere_is_declared() {
        let src = format!(
            "{HEADER}.entry kb(.param .u64 p)\n{{\nret;\n}}\n\
             .visible .entry kc(.param .u64 p)\n{{\nmov.u64 %rd1, kb;\nret;\nret;\nret;\n}}\n"
        );
        let got = parts(&src, 2);
        let (with_c, other) = match got[0].1 == ["kc"] {
            true => (&got[0].0, &got[1].0),
            false => (&got[1].0, &got[0].0),
        };
        assert!(
            with_c.contains(".extern .entry kb(.param .u64 p);"),
            "{with_c}"
        );
        assert!(
            other.contains(".visible .entry kb(.param .u64 p)\n{"),
            "{other}"
        );
    }

    /// No more parts than kernels; what no kernel reaches is in the first part.
    #[test]
    fn parts_are_at_most_the_kernels() {
        let src = format!(
            "{HEADER}.visible .func unused()\n{{\nret;\n}}\n.visible .entry k()\n{{\nret;\n}}\n"
        );
        let got = parts(&src, 4);
        assert_eq!(got.len(), 1);
        assert!(!got[0].0.contains("unused"));
    }
}
