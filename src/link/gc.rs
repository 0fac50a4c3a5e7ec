//! `--gc-sections`: keep the kernels, the exported symbols and the managed variables
//! (the host uses those directly), and whatever they reach
//! through the reference graph (calls, address-taking, initializers, `.calltargets`,
//! `.alias`); everything else is removed. An indirect call can only reach a function
//! whose address was taken somewhere, and address-taking is an edge of the graph, so
//! every possible target of a live indirect call is live too.
//!
//! References from debug sections do not keep anything alive; when something is
//! removed, the debug sections (which may name it) are dropped.

use super::db::SymbolDb;
use super::inputs::Inputs;
use super::inputs::ModSym;
use super::resolve::Resolution;
use crate::diag::{Code, Diagnostic};
use crate::ir::{Linkage, SymbolKind};

/// What the host uses, which is kept with what it reaches.
#[derive(Clone, Debug, Default)]
pub struct GcOptions {
    /// `--export SYM` and `-u SYM`: kept with what they reach.
    pub exports: Vec<String>,
    /// `--export-all`: every `.visible` symbol is kept.
    pub export_all: bool,
    /// `--kernels-used` (nvJitLink's `-kernels-used`): the kernels the host
    /// launches; `None`: every kernel.
    pub kernels: Option<Vec<String>>,
    /// Which variables the host uses.
    pub variables: VariableRoots,
}

/// Which variables the host uses (beyond managed ones, which it always may).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum VariableRoots {
    /// None: a variable stays only where kept code reaches it (`--gc-sections`,
    /// nvJitLink's `-optimize-unused-variables`).
    #[default]
    Reached,
    /// Every variable (nvJitLink's default: `--kernels-used` alone removes kernels and
    /// functions, never variables).
    All,
    /// Those named (`--variables-used`).
    Named(Vec<String>),
}

/// Liveness of input symbols and output symbols.
pub(crate) struct Live {
    /// `syms[module][symbol]`.
    pub syms: Vec<Vec<bool>>,
    /// By output symbol.
    pub outs: Vec<bool>,
    /// Who made each symbol live first (`None` for the roots), for `--why-live`.
    pub parent: rustc_hash::FxHashMap<ModSym, Option<ModSym>>,
}

/// True if the function defined by item `item` of module `mi` is live.
fn item_is_live(m: &crate::ir::Module, mi: u32, item: crate::ir::ItemId, live: &Live) -> bool {
    m.symbols_with_ids().any(|(id, s)| {
        live.syms[mi as usize][id.0 as usize] && s.definition().is_some_and(|d| d.item == item)
    })
}

/// Marks everything reachable from `work`.
fn propagate(
    inputs: &Inputs,
    db: &SymbolDb,
    res: &Resolution,
    live: &mut Live,
    mut work: Vec<(ModSym, Option<ModSym>)>,
) {
    while let Some((s, from)) = work.pop() {
        let flag = &mut live.syms[s.module as usize][s.id.0 as usize];
        if *flag {
            continue;
        }
        *flag = true;
        live.parent.insert(s, from);
        if let Some(o) = res.out_of(s) {
            let origin = res.outs[o as usize].origin;
            live.outs[o as usize] |= origin == s;
            // An import is live through its definition: same step in the chain.
            work.push((origin, from.or(Some(s)).filter(|_| origin != s)));
        }
        if let Some(a) = inputs.module(s).symbol(s.id).aliasee {
            let a = ModSym {
                module: s.module,
                id: a,
            };
            work.push((a, Some(s)));
        }
        work.extend(db.uses(s).map(|u| (u, Some(s))));
    }
}

/// A warning for each name of `--kernels-used` and `--variables-used` that names
/// no kernel or variable of the link: it keeps nothing (nvJitLink says nothing of
/// it, and a misspelt kernel then removes every kernel).
pub(crate) fn unknown_names(
    inputs: &Inputs,
    res: &Resolution,
    opts: &GcOptions,
) -> Vec<Diagnostic> {
    let has = |kind: SymbolKind, name: &str| {
        res.outs
            .iter()
            .any(|o| o.kind == kind && o.global && inputs.name(o.origin) == name.as_bytes())
    };
    let variables = match &opts.variables {
        VariableRoots::Named(v) => v.as_slice(),
        _ => &[],
    };
    let kernels = opts.kernels.as_deref().unwrap_or_default();
    let kernels = kernels
        .iter()
        .map(|k| (SymbolKind::Entry, "--kernels-used", "kernel", k));
    let variables = variables
        .iter()
        .map(|v| (SymbolKind::Variable, "--variables-used", "variable", v));
    kernels
        .chain(variables)
        .filter(|&(kind, _, _, name)| !has(kind, name))
        .map(|(_, option, what, name)| {
            Diagnostic::global_warning(
                Code::Usage,
                format!(
                    "{option} {name}: no {what} of the link has that name, so it keeps nothing"
                ),
            )
        })
        .collect()
}

/// An error when dead-code removal keeps nothing of a link that defines something:
/// its output would be a header without code, which a build would ship without a
/// word (GNU ld 2.40 refuses `ld -r --gc-sections` without a root the same way:
/// "--gc-sections requires a defined symbol root specified by -e or -u").
pub(crate) fn keeps_nothing(live: &Live, opts: &GcOptions) -> Option<Diagnostic> {
    if live.outs.is_empty() || live.outs.contains(&true) {
        return None;
    }
    let roots = if opts.kernels.is_some() {
        "no kernel named by --kernels-used"
    } else {
        "no kernel"
    };
    Some(
        Diagnostic::global_error(
            Code::GcKeepsNothing,
            format!(
                "dead-code removal keeps nothing: the link has {roots} and no exported \
                 symbol, so the output would hold no code"
            ),
        )
        .with_help(
            "keep what the host uses with --export NAME or -u NAME (Build::export, \
             Build::undefined), every .visible symbol with --export-all, or link without \
             --gc-sections",
        ),
    )
}

pub(crate) fn mark(inputs: &Inputs, db: &SymbolDb, res: &Resolution, opts: &GcOptions) -> Live {
    let mut live = Live {
        syms: inputs
            .modules
            .iter()
            .map(|m| vec![false; m.symbols.len()])
            .collect(),
        outs: vec![false; res.outs.len()],
        parent: Default::default(),
    };
    // (symbol, who reached it); depth-first, so the chains are short but not shortest.
    let mut work: Vec<(ModSym, Option<ModSym>)> = Vec::new();
    for o in &res.outs {
        let sym = inputs.module(o.origin).symbol(o.origin.id);
        let name = inputs.name(o.origin);
        // Managed variables are read and written by the host directly.
        let managed = o.kind == SymbolKind::Variable
            && matches!(
                &inputs.module(o.origin).item(sym.decls[0].item).kind,
                crate::ir::ItemKind::Variable(v) if v.spec.managed
            );
        let named = |list: &[String]| list.iter().any(|e| e.as_bytes() == name);
        let kernel = o.kind == SymbolKind::Entry
            && opts.kernels.as_deref().is_none_or(|k| o.global && named(k));
        let variable = o.kind == SymbolKind::Variable
            && match &opts.variables {
                VariableRoots::Reached => false,
                VariableRoots::All => true,
                VariableRoots::Named(v) => o.global && named(v),
            };
        let root = kernel
            || variable
            || managed
            || (o.global && opts.exports.iter().any(|e| e.as_bytes() == name))
            || (opts.export_all && sym.linkage == Linkage::Visible);
        if root {
            work.push((o.origin, None));
        }
    }
    // Roots first in output order: reverse, since the work list is a stack.
    work.reverse();
    propagate(inputs, db, res, &mut live, work);
    // A live indirect call (`call %rd, ...`) may reach any function whose address is
    // taken anywhere, also through a table the host fills: keep them all.
    let indirect = inputs.modules.iter().enumerate().any(|(mi, m)| {
        m.calls.iter().any(|c| {
            let direct = m
                .references
                .binary_search_by_key(&c.callee.lo, |r| r.span.lo)
                .is_ok();
            !direct && item_is_live(m, mi as u32, c.item, &live)
        })
    });
    if indirect {
        let mut taken = Vec::new();
        for (mi, m) in inputs.modules.iter().enumerate() {
            for r in &m.references {
                let f = m.symbol(r.symbol);
                if f.kind == SymbolKind::Function && r.kind != crate::ir::RefKind::Call {
                    taken.push((
                        ModSym {
                            module: mi as u32,
                            id: r.symbol,
                        },
                        None,
                    ));
                }
            }
        }
        propagate(inputs, db, res, &mut live, taken);
    }
    live
}
