//! What a link can tell about itself, read from its [`Analysis`]: the link map
//! (`-Map`, `--print-map`), symbol traces (`--trace-symbol`), liveness chains
//! (`--why-live`), what `--gc-sections` removed, and `ptxld check`'s findings.
//! Nothing here runs a linker phase again.

pub mod check;
mod map;

use crate::link::report::display_name;
use crate::link::{is_code_or_data, Analysis};

/// The link map, when the link resolved.
pub(crate) fn link_map(a: &Analysis) -> Option<String> {
    let res = a.resolution.as_ref()?;
    let names = a.names.as_ref()?;
    let mut out = map::map(&a.inputs, res, names, a.live.as_ref());
    if let (Some(needs), Some(h)) = (&a.needs, a.headers.first()) {
        map::needs(&mut out, &a.inputs, needs, h.arch);
    }
    Some(out)
}

/// `--trace-symbol`: every declaration, definition and reference of `names`, and
/// what each became (also when the link failed).
pub(crate) fn trace(a: &Analysis, names: &[String]) -> String {
    if names.is_empty() || a.inputs.modules.is_empty() {
        return String::new();
    }
    let res = a.resolution.as_ref().zip(a.names.as_ref());
    map::trace(&a.inputs, res, names)
}

/// `--why-live`: the chain of references that keeps each of `names`.
pub(crate) fn why_live(a: &Analysis, names: &[String]) -> String {
    match (&a.live, &a.resolution, &a.names) {
        (Some(l), Some(r), Some(n)) => map::why_live(&a.inputs, r, n, l, names),
        _ if names.is_empty() => String::new(),
        (None, ..) => "ptxld: --why-live needs --gc-sections\n".to_string(),
        _ => String::new(),
    }
}

/// With `--gc-sections`: what was removed, one line each (`function foo (a.ptx:3:1)`).
pub(crate) fn removed(a: &Analysis) -> Vec<String> {
    let (Some(live), Some(res)) = (&a.live, &a.resolution) else {
        return Vec::new();
    };
    let inputs = &a.inputs;
    let mut removed = Vec::new();
    for (o, &keep) in res.outs.iter().zip(&live.outs) {
        if !keep && is_code_or_data(o.kind) {
            let f = inputs.sources.file(inputs.module(o.origin).file);
            let lc = f.line_col(inputs.def_span(o.origin).lo);
            let what = match o.kind {
                crate::ir::SymbolKind::Variable => "variable",
                crate::ir::SymbolKind::Entry => "kernel",
                _ => "function",
            };
            removed.push(format!(
                "{what} {} ({}:{}:{})",
                display_name(inputs.name(o.origin)),
                f.name(),
                lc.line,
                lc.col
            ));
        }
    }
    removed
}
