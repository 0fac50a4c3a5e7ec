//! Calls against the callee's prototype in the calling module: ptxas counts a call's
//! return values and arguments (every element of its lists, registers and immediates
//! too) against the declaration the module has of the callee, and refuses another
//! number ("Call has wrong number of parameters"). Declarations that disagree across
//! modules are the link's `prototype-mismatch`; together every call matches the
//! definition it reaches. docs/linking.md ("Calls") has the experiments.

use super::names::Names;
use crate::diag::{Code, Diagnostic};
use crate::ir::{CallSite, ItemKind, Module, Symbol};
use crate::source::FileId;

/// One error for each call in `calls` whose lists do not have the lengths of its
/// callee's prototype (a function of `m` named by `names`); indirect calls (through
/// a register) and calls of names that are not functions are left to ptxas.
pub(super) fn check_calls(
    m: &Module,
    src: &[u8],
    names: &Names,
    symbols: &[Symbol],
    calls: &[CallSite],
    errors: &mut Vec<Diagnostic>,
) {
    for call in calls {
        let name = &src[call.callee.range()];
        let Some(symbol) = names.get(name) else {
            continue;
        };
        let decl = symbols[symbol.0 as usize].decls.first();
        let ItemKind::Function(f) = &m.items[decl.item.0 as usize].kind else {
            continue;
        };
        let returns = f.signature.returns().map_or(0, <[_]>::len);
        let params = f.signature.params().map_or(0, <[_]>::len);
        let (rets, args) = (call.rets.len(), call.args.len());
        if (rets, args) == (returns, params) {
            continue;
        }
        let name = String::from_utf8_lossy(name);
        let (what, have, want) = if args != params {
            ("argument", args, params)
        } else {
            ("return value", rets, returns)
        };
        errors.push(call_error(m.file, call, &name, what, have, want).with_note(
            m.file,
            decl.name,
            format!("`{name}` is declared here"),
        ));
    }
}

fn call_error(
    file: FileId,
    call: &CallSite,
    name: &str,
    what: &str,
    have: usize,
    want: usize,
) -> Diagnostic {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    Diagnostic::error(
        Code::CallMismatch,
        file,
        call.callee,
        format!(
            "call to `{name}` has {have} {what}{}, but its prototype has {want} \
             (ptxas: \"Call has wrong number of parameters\")",
            plural(have)
        ),
    )
}
