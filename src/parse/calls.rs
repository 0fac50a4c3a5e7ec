//! Call sites checked as ptxas checks them against the callee's prototype in the
//! calling module. ptxas counts a call's return values and arguments (every element
//! of its lists, registers and immediates too) and refuses another number ("Call has
//! wrong number of parameters"); it refuses an operand that is a variable of another
//! state space than `.param` and `.reg`, a module-scope symbol, a `.param` parameter
//! of the calling function or a name declared nowhere in scope; and it compares a
//! `.param` variable's layout with the formal parameter's. Declarations that disagree
//! across modules are the link's `prototype-mismatch`; together every call matches
//! the definition it reaches. docs/linking.md ("Declarations checked in each module")
//! has the experiments.

use super::alias::prototype_difference;
use super::decl::Lossy;
use super::names::Names;
use super::scope::Local;
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    element_bytes, CallOperand, CallSite, ItemKind, LocalParam, Module, Param, Reference,
    StateSpace, Symbol, SymbolKind, Type, TypeClass,
};
use crate::source::{FileId, Span};

/// Why ptxas refuses the call operand at `span`, an identifier that is a whole
/// element of its list, which the body's scope resolves to `found`; `module_scope`
/// when it names a module-scope symbol instead (judged by [`check_calls`], which
/// knows the symbol). The caller judges a `%`-name only where it knows every
/// declaration before it (the compact lexer leaves plain register declarations out
/// of the scope).
pub(super) fn operand_refusal(
    file: FileId,
    src: &[u8],
    span: Span,
    found: Option<(Span, &Local)>,
    module_scope: bool,
) -> Option<Diagnostic> {
    let text = &src[span.range()];
    // Shown only in a message: most operands are fine.
    let name = Lossy(text);
    let declared_here =
        |d: Diagnostic, at: Span| d.with_note(file, at, format!("`{name}` is declared here"));
    match found {
        Some((at, &Local::Variable { space, .. })) => {
            // Measured: `.shared`, `.local`, `.global`, `.const` are refused, `.reg`
            // and `.param` accepted; `.tex` in a body was not tried.
            let refused = matches!(
                space,
                StateSpace::Shared | StateSpace::Local | StateSpace::Global | StateSpace::Const
            );
            refused.then(|| {
                declared_here(
                    space_error(
                        file,
                        span,
                        name,
                        &format!("a `{}` variable", space.as_str()),
                    ),
                    at,
                )
            })
        }
        Some((at, &Local::Formal { space })) => (space == StateSpace::Param).then(|| {
            let d = Diagnostic::error(
                Code::CallArgument,
                file,
                span,
                format!(
                    "call operand `{name}` is a `.param` parameter of the calling function, \
                     which a call cannot pass on (ptxas: \"Formal parameter '{name}' declared \
                     in .param space cannot be used as argument to call\")"
                ),
            )
            .with_help("copy it into a `.param` variable declared in the call's block");
            declared_here(d, at)
        }),
        // `WARP_SZ` is an immediate.
        None if module_scope || text == b"WARP_SZ" => None,
        None => Some(
            Diagnostic::error(
                Code::CallArgument,
                file,
                span,
                format!(
                    "call operand `{name}` is not declared in this block or an enclosing one \
                     before the call (ptxas: \"Illegal argument for formal parameter\")"
                ),
            )
            .with_help("a variable is in scope from its declaration to the `}` of its block"),
        ),
    }
}

/// The error for an operand `name` that is `what` (in a state space a call cannot
/// pass).
fn space_error(file: FileId, span: Span, name: impl std::fmt::Display, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::CallArgument,
        file,
        span,
        format!(
            "call operand `{name}` is {what}: a call passes `.param` and `.reg` variables, \
             registers and immediates (ptxas: \"Call argument '{name}' has illegal state space\")"
        ),
    )
}

/// The errors of the calls in `calls` of module `m` against their callees'
/// prototypes (functions of `m` named by `names`): the number of return values and
/// arguments, and each `.param` operand's layout against its formal parameter; and
/// the operands that name module-scope symbols, found among `refs` (sorted by
/// position). Indirect calls (through a register) and calls of names that are not
/// functions are left to ptxas.
pub(super) fn check_calls(
    m: &Module,
    src: &[u8],
    names: &Names,
    symbols: &[Symbol],
    refs: &[Reference],
    calls: &[CallSite],
    errors: &mut Vec<Diagnostic>,
) {
    for call in calls {
        for op in call.rets.iter().chain(&call.args) {
            module_scope_operand(m.file, src, symbols, refs, op, errors);
        }
        let name = &src[call.callee.range()];
        let Some(symbol) = names.get(name) else {
            continue;
        };
        let decl = symbols[symbol.0 as usize].decls.first();
        let ItemKind::Function(f) = &m.items[decl.item.0 as usize].kind else {
            continue;
        };
        // Shown only in a message: most calls are fine.
        let name = Lossy(name);
        let none: &[Param] = &[];
        let returns = f.signature.returns().unwrap_or(none);
        let params = f.signature.params().unwrap_or(none);
        let (rets, args) = (call.rets.len(), call.args.len());
        if (rets, args) != (returns.len(), params.len()) {
            let (what, have, want) = if args != params.len() {
                ("argument", args, params.len())
            } else {
                ("return value", rets, returns.len())
            };
            errors.push(count_error(m.file, call, name, what, have, want).with_note(
                m.file,
                decl.name,
                format!("`{name}` is declared here"),
            ));
            continue;
        }
        let pairs = (call.rets.iter().zip(returns).map(|p| ("return value", p)))
            .chain(call.args.iter().zip(params).map(|p| ("argument", p)));
        for (what, (op, formal)) in pairs {
            let Some(actual) = &op.decl else { continue };
            if let Some(e) = layout_error(m.file, src, name, what, op, actual, formal) {
                errors.push(e);
            }
        }
    }
}

/// The error for call operand `op` if it names a module-scope variable or function
/// (a reference at its position), which ptxas refuses as an argument whatever its
/// state space.
fn module_scope_operand(
    file: FileId,
    src: &[u8],
    symbols: &[Symbol],
    refs: &[Reference],
    op: &CallOperand,
    errors: &mut Vec<Diagnostic>,
) {
    let Ok(i) = refs.binary_search_by_key(&(op.span.lo, op.span.hi), |r| (r.span.lo, r.span.hi))
    else {
        return;
    };
    let s = &symbols[refs[i].symbol.0 as usize];
    let what = match (s.kind, s.space) {
        (SymbolKind::Variable, Some(space)) => {
            format!("a module-scope `{}` variable", space.as_str())
        }
        (SymbolKind::Function, _) => "a function".to_string(),
        (SymbolKind::Entry, _) => "a kernel".to_string(),
        // Labels of debug sections and bodies: not measured.
        _ => return,
    };
    let name = String::from_utf8_lossy(&src[op.span.range()]);
    errors.push(space_error(file, op.span, &name, &what).with_note(
        file,
        s.decls.first().name,
        format!("`{name}` is declared here"),
    ));
}

fn count_error(
    file: FileId,
    call: &CallSite,
    name: Lossy,
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

/// How a `.param` operand differs from its formal parameter, as ptxas tells them
/// apart.
#[derive(Debug, PartialEq, Eq)]
enum Mismatch {
    /// "Type of argument does not match formal parameter": shape, size or type.
    Type(String),
    /// "Alignment of argument does not match formal parameter": the alignments
    /// (explicit or natural), operand's then formal's.
    Align(u64, u64),
}

/// The error for `.param` operand `op` (declared `actual`) of a call to `callee` if
/// its layout differs from its formal parameter's.
fn layout_error(
    file: FileId,
    src: &[u8],
    callee: Lossy,
    what: &str,
    op: &CallOperand,
    actual: &LocalParam,
    formal: &Param,
) -> Option<Diagnostic> {
    let mismatch = mismatch(actual, formal)?;
    let name = String::from_utf8_lossy(&src[op.span.range()]);
    let formal_name = String::from_utf8_lossy(&src[formal.name.range()]);
    let (why, ptxas) = match mismatch {
        Mismatch::Type(why) => (why, "Type"),
        Mismatch::Align(have, want) => (
            format!(
                "it is aligned to {}, the parameter to {}",
                bytes(have),
                bytes(want)
            ),
            "Alignment",
        ),
    };
    Some(
        Diagnostic::error(
            Code::CallMismatch,
            file,
            op.span,
            format!(
                "{what} `{name}` does not match parameter `{formal_name}` of `{callee}`: {why} \
                 (ptxas: \"{ptxas} of argument does not match formal parameter '{formal_name}'\")"
            ),
        )
        .with_note(file, actual.name, format!("`{name}` is declared here"))
        .with_note(
            file,
            formal.name,
            format!("`{formal_name}` is declared here"),
        ),
    )
}

/// How ptxas finds `.param` operand `a` to differ from formal parameter `f`
/// (measured with ptxas 12.9, docs/linking.md): both scalars or both arrays, of the
/// same size in bytes; scalars of compatible types (a `.bN` matches any type of its
/// size, `.uN` matches `.sN`), arrays with equal element types unless one of them
/// is a bit type (`.b8 a[8]` takes `.u32 p[2]`, `.u32 a[2]` refuses `.s32 p[2]`);
/// then the same alignment, each the larger of its `.align` and its element's size.
fn mismatch(a: &LocalParam, f: &Param) -> Option<Mismatch> {
    let (fty, fvec) = (f.spec.ty, f.spec.vector);
    // Opaque and `.pred` parameters: not measured.
    if [a.ty, fty]
        .iter()
        .any(|t| t.is_opaque() || t.class == TypeClass::Pred)
    {
        return None;
    }
    let element = element_bytes(a.ty, a.vector);
    let f_element = element_bytes(fty, fvec);
    let count = a.elements.map_or(1, |n| n.get());
    match (a.elements.is_some(), f.is_array()) {
        (true, false) => {
            return Some(Mismatch::Type(
                "it is an array, the parameter a scalar".into(),
            ))
        }
        (false, true) => {
            return Some(Mismatch::Type(
                "it is a scalar, the parameter an array".into(),
            ))
        }
        _ => {}
    }
    let size = count.checked_mul(element);
    let f_size = f.element_count().and_then(|n| n.checked_mul(f_element));
    if let (Some(have), Some(want)) = (size, f_size) {
        if have != want {
            let size = format!("it is {}, the parameter {}", bytes(have), bytes(want));
            return Some(Mismatch::Type(size));
        }
    }
    if a.vector != fvec {
        return Some(Mismatch::Type("their vector widths differ".into()));
    }
    let compatible = if f.is_array() {
        bits(a.ty) || bits(fty) || a.ty == fty
    } else {
        scalar_types_compatible(a.ty, fty)
    };
    if !compatible {
        return Some(Mismatch::Type("their types are incompatible".into()));
    }
    let align = |explicit: Option<u32>, element: u64| element.max(explicit.map_or(0, u64::from));
    let have = align(a.align.map(|(n, _)| n), element);
    let want = align(f.spec.align, f_element);
    (have != want).then_some(Mismatch::Align(have, want))
}

fn bytes(n: u64) -> String {
    format!("{n} byte{}", if n == 1 { "" } else { "s" })
}

fn bits(t: Type) -> bool {
    t.class == TypeClass::Bits
}

/// Scalars of one size: a bit type matches any type, signed and unsigned integers
/// match each other, others only their own class.
fn scalar_types_compatible(a: Type, b: Type) -> bool {
    use TypeClass::*;
    a.bits == b.bits
        && match (a.class, b.class) {
            (Bits, _) | (_, Bits) => true,
            (Unsigned | Signed, Unsigned | Signed) => true,
            (x, y) => x == y,
        }
}

/// One error for each later declaration of a function of `m` whose prototype differs
/// from its first declaration's (ptxas 12.9: "Inconsistent prototypes of 'f',
/// parameter types differ", also for `.f32` against `.b32`, a list against none,
/// declarations and definitions alike; other parameter names are fine).
pub(super) fn check_prototypes_agree(
    m: &Module,
    src: &[u8],
    symbols: &[Symbol],
    errors: &mut Vec<Diagnostic>,
) {
    let signature = |item: crate::ir::ItemId| match &m.items[item.0 as usize].kind {
        ItemKind::Function(f) => Some(&f.signature),
        _ => None,
    };
    for symbol in symbols.iter().filter(|s| s.decls.iter().nth(1).is_some()) {
        let first = symbol.decls.first();
        let Some(want) = signature(first.item) else {
            continue;
        };
        for later in symbol.decls.iter().skip(1) {
            let Some(why) = signature(later.item).and_then(|have| prototype_difference(want, have))
            else {
                continue;
            };
            let name = String::from_utf8_lossy(&src[later.name.range()]);
            errors.push(
                Diagnostic::error(
                    Code::PrototypeMismatch,
                    m.file,
                    later.name,
                    format!(
                        "this declaration of `{name}` has another prototype than the first: {why}"
                    ),
                )
                .with_note(m.file, first.name, "first declared here"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::diag::Code;
    use crate::parse::{parse_module, parse_module_deferred};
    use crate::source::FileId;

    /// The codes and lines of the diagnostics of a module declaring `protos`, whose
    /// kernel body is `body`; the same whether the body is lexed in full or
    /// compactly (which keeps no token of plain register declarations).
    fn refusals(protos: &str, body: &str) -> Vec<(Code, usize)> {
        let src = format!(
            ".version 7.0\n.target sm_80\n.address_size 64\n.visible .global .b32 g;\n\
             {protos}\n.visible .func k(.param .b32 in, .reg .b32 rin)\n{{\n\
             .reg .b32 %r<2>;\n{body}\nret;\n}}\n"
        );
        let [full, compact] = [
            parse_module(FileId(0), src.as_bytes()),
            parse_module_deferred(FileId(0), src.as_bytes(), Vec::new(), false),
        ]
        .map(|p| {
            p.diagnostics
                .iter()
                .map(|d| {
                    let Some(crate::diag::Location::Source { span, .. }) = d.location else {
                        panic!("{d:?}");
                    };
                    let line = src[..span.lo as usize].matches('\n').count() + 1;
                    (d.code, line)
                })
                .collect::<Vec<_>>()
        });
        assert_eq!(full, compact, "{body}");
        full
    }

    /// Each operand as ptxas 12.9 judged it (docs/linking.md): `.param` and `.reg`
    /// variables, `.reg` parameters, registers, immediates and `WARP_SZ` pass (and
    /// special registers, which ptxas refuses with another message, are left to it);
    /// other spaces, module-scope symbols, `.param` parameters and names not in
    /// scope, `%`-names too, do not, judged before the callee (an indirect call's
    /// too).
    #[test]
    fn operands_are_refused_as_ptxas_refuses_them() {
        let f = ".extern .func f(.param .b32 a);";
        for fine in [
            ".param .b32 p;\ncall.uni f, (p);",
            ".reg .b32 p;\ncall.uni f, (p);",
            ".reg .b32 p<3>;\ncall.uni f, (p2);",
            "call.uni f, (rin);",
            "call.uni f, (%r1);",
            "call.uni f, (%laneid);",
            ".reg .b32 %x;\n{\ncall.uni f, (%x);\n}",
            ".reg .b64 %rd<2>;\nproto: .callprototype _ (.param .b32 _);\ncall.uni %rd1, (%r1), proto;",
            "call.uni f, (7);",
            "call.uni f, (WARP_SZ);",
            ".param .b32 p;\n{\ncall.uni f, (p);\n}",
            ".shared .b32 p;\n{\n.param .b32 p;\ncall.uni f, (p);\n}",
        ] {
            assert_eq!(refusals(f, fine), [], "{fine}");
        }
        for (refused, line) in [
            ("call.uni f, (%undeclared);", 9),
            ("call.uni f, (%r2);", 9),
            ("{\n.reg .b32 %x;\n}\ncall.uni f, (%x);", 12),
            ("call.uni %rd1, (%r1), proto;", 9),
            (".shared .b32 p;\ncall.uni f, (p);", 10),
            (".local .b32 p;\ncall.uni f, (p);", 10),
            (".global .b32 p;\ncall.uni f, (p);", 10),
            (".const .b32 p;\ncall.uni f, (p);", 10),
            (
                ".param .b32 p;\n{\n.shared .b32 p;\ncall.uni f, (p);\n}",
                12,
            ),
            (".shared .b32 p<2>;\ncall.uni f, (p1);", 10),
            ("call.uni f, (g);", 9),
            ("call.uni f, (f);", 9),
            ("call.uni f, (in);", 9),
            ("call.uni f, (nowhere);", 9),
            (".reg .b32 p<2>;\ncall.uni f, (p2);", 10),
            ("{\n.param .b32 p;\n}\ncall.uni f, (p);", 12),
            ("call.uni f, (p);\n.param .b32 p;", 9),
            ("call.uni f, (L);\nL:", 9),
            (
                ".reg .b64 %rd<2>;\n.shared .b32 s;\n\
                 pr: .callprototype _ (.param .b32 _);\ncall.uni %rd1, (s), pr;",
                12,
            ),
        ] {
            assert_eq!(
                refusals(f, refused),
                [(Code::CallArgument, line)],
                "{refused}"
            );
        }
        let h = ".extern .func (.param .b32 r) h(.param .b32 a);";
        let ret = ".shared .b32 r;\n.param .b32 p;\ncall.uni (r), h, (p);";
        assert_eq!(refusals(h, ret), [(Code::CallArgument, 11)]);
    }

    /// A `.param` operand's layout against the formal parameter's, as ptxas 12.9
    /// judged each pair (docs/linking.md).
    #[test]
    fn param_layouts_are_compared_as_ptxas_compares_them() {
        let call = |formal: &str, actual: &str| {
            let protos = format!(".extern .func f(.param {formal} a);");
            refusals(&protos, &format!(".param {actual} p;\ncall.uni f, (p);"))
        };
        let fine = [
            (".b32", ".b32"),
            (".b32", ".f32"),
            (".f32", ".b32"),
            (".b32", ".u32"),
            (".u32", ".s32"),
            (".f64", ".b64"),
            (".f16", ".b16"),
            (".b8", ".u8"),
            (".b32", ".align 2 .b32"),
            (".b32", ".align 4 .b32"),
        ];
        for (formal, actual) in fine {
            assert_eq!(call(formal, actual), [], "{formal} / {actual}");
        }
        let aggregate = |formal: &str, actual: &str| {
            let protos = format!(".extern .func f(.param {formal});");
            refusals(&protos, &format!(".param {actual};\ncall.uni f, (p);"))
        };
        for (formal, actual) in [
            (".align 4 .b8 a[4]", ".align 4 .b8 p[4]"),
            (".align 4 .b8 a[8]", ".align 4 .u32 p[2]"),
            (".align 4 .b32 a[2]", ".align 4 .b8 p[8]"),
            (".align 4 .u32 a[2]", ".align 4 .b32 p[2]"),
            (".align 4 .f32 a[2]", ".align 4 .b32 p[2]"),
            (".align 8 .b8 a[8]", ".align 8 .u64 p[1]"),
            (".align 4 .b16 a[4]", ".align 4 .u32 p[2]"),
            (".b8 a[4]", ".b8 p[4]"),
            (".b8 a[4]", ".align 1 .b8 p[4]"),
            (".b32 a[2]", ".align 1 .b32 p[2]"),
            (".b32 a[2]", ".align 4 .b8 p[8]"),
        ] {
            assert_eq!(aggregate(formal, actual), [], "{formal} / {actual}");
        }
        let refused = [(Code::CallMismatch, 10)];
        for (formal, actual) in [
            (".b32", ".b8"),
            (".b32", ".b64"),
            (".u32", ".f32"),
            (".f32", ".u32"),
            (".f16", ".u16"),
            (".f32", ".f64"),
            (".align 8 .b32", ".b32"),
            (".b32", ".align 8 .b32"),
        ] {
            assert_eq!(call(formal, actual), refused, "{formal} / {actual}");
        }
        for (formal, actual) in [
            (".b32 a", ".align 4 .b8 p[4]"),
            (".align 4 .b8 a[4]", ".b32 p"),
            (".b32 a[1]", ".b32 p"),
            (".align 4 .b8 a[4]", ".align 4 .b8 p[8]"),
            (".align 4 .u32 a[2]", ".align 4 .s32 p[2]"),
            (".align 4 .u32 a[2]", ".align 4 .f32 p[2]"),
            (".align 4 .u8 a[8]", ".align 4 .u32 p[2]"),
            (".align 8 .f32 a[2]", ".align 8 .f64 p[1]"),
            (".align 4 .b8 a[4]", ".align 8 .b8 p[4]"),
            (".align 4 .b8 a[4]", ".b8 p[4]"),
            (".b8 a[4]", ".align 4 .b8 p[4]"),
            (".b32 a[2]", ".b8 p[8]"),
            (".align 4 .u32 a[2]", ".align 4 .b64 p[1]"),
        ] {
            assert_eq!(aggregate(formal, actual), refused, "{formal} / {actual}");
        }
        // GCC's `%`-named call-block `.param`s are compared too.
        let gcc = ".param .f32 %out_arg1;\ncall.uni f, (%out_arg1);";
        assert_eq!(refusals(".extern .func f(.param .b32 a);", gcc), []);
        let gcc = ".param .b64 %out_arg1;\ncall.uni f, (%out_arg1);";
        assert_eq!(refusals(".extern .func f(.param .b32 a);", gcc), refused);
        // Return values alike; a count mismatch is reported alone.
        let protos = ".extern .func (.param .b32 r) f(.param .b32 a);";
        let body = ".param .b32 p;\n.param .b64 r;\ncall.uni (r), f, (p);";
        assert_eq!(refusals(protos, body), [(Code::CallMismatch, 11)]);
        let body = ".param .b64 p;\ncall.uni f, (p);";
        assert_eq!(refusals(protos, body), [(Code::CallMismatch, 10)]);
    }

    /// A `.callprototype` list holds `.param` and `.reg` only.
    #[test]
    fn prototypes_take_param_and_reg() {
        let none = "";
        let fine = "pr: .callprototype (.reg .b32 _) _ (.param .b32 _, .reg .b64 _);";
        assert_eq!(refusals(none, fine), []);
        for space in [".shared", ".local", ".global", ".const"] {
            let proto = format!("pr: .callprototype _ (.param .b32 _, {space} .b32 _);");
            assert_eq!(refusals(none, &proto), [(Code::Syntax, 9)], "{space}");
        }
    }
}
