//! ABI conformance, after NVIDIA's "PTX Writer's Guide to Interoperability"
//! (CUDA 13.0 documentation; the § below are its sections): reported as warnings during a
//! link and by `ptxld check`.
//!
//! * PTX ISA before 2.0 cannot make ABI calls;
//! * integer parameters narrower than 32 bits are widened to `.u32`/`.s32` (§2.3, A);
//! * `.f16` is never a parameter or return value (§2.3, C);
//! * aggregates are `.align N .b8 name[size]`, N in 1, 2, 4, ..., 128 (§2.3, D);
//! * `.ptr` kernel parameters are `.u64`/`.u32` as `.address_size` says;
//! * the system calls have the guide's prototypes for the module's address size (§3).
//!
//! Module-scope `.local` variables, legacy PTX without the ABI, are refused by the
//! parser: ptxas 12.9 refuses them for every target it assembles.

use crate::diag::{Code, Diagnostic};
use crate::ir::{FuncKind, ItemKind, Module, Param, TypeClass};
use std::sync::OnceLock;

use crate::source::{FileId, Span};

use super::compat::signature_mismatch;

fn warn(file: FileId, span: Span, msg: String) -> Diagnostic {
    Diagnostic::warning(Code::Abi, file, span, format!("ABI: {msg}"))
}

/// The guide's system-call prototypes for an address size (32 or 64), parsed once.
fn system_calls(bits: u32) -> &'static [(String, crate::ir::Signature)] {
    static CALLS: [OnceLock<Vec<(String, crate::ir::Signature)>>; 2] =
        [OnceLock::new(), OnceLock::new()];
    CALLS[usize::from(bits == 64)].get_or_init(|| parse_system_calls(bits))
}

/// The guide's system-call prototypes for an address size: each name with its
/// signature, parsed from PTX text with ptxld's own parser.
fn parse_system_calls(bits: u32) -> Vec<(String, crate::ir::Signature)> {
    let (p, s) = if bits == 64 {
        (".b64", ".b64")
    } else {
        (".b32", ".b32")
    };
    let text = format!(
        ".version 7.0\n.target sm_80\n.address_size {bits}\n\
         .extern .func (.param .s32 status) vprintf (.param {p} format, .param {p} valist);\n\
         .extern .func (.param {p} ptr) malloc (.param {s} size);\n\
         .extern .func free (.param {p} ptr);\n\
         .extern .func __assertfail (.param {p} message, .param {p} file, .param .b32 line, \
         .param {p} function, .param {s} charSize);\n"
    );
    let parsed = crate::parse::parse_module(FileId(0), text.as_bytes());
    parsed
        .module
        .items
        .iter()
        .filter_map(|item| match &item.kind {
            ItemKind::Function(f) => Some((
                String::from_utf8_lossy(&text.as_bytes()[f.name.range()]).into_owned(),
                f.signature.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// Checks one parameter; `name` and `which` (the function, and which parameter)
/// are only spelled out when there is something to report.
fn check_param(
    m: &Module,
    name: &dyn Fn() -> String,
    which: &dyn Fn() -> String,
    p: &Param,
    out: &mut Vec<Diagnostic>,
) {
    let t = p.spec.ty;
    let f = m.file;
    if p.is_array() {
        let bits8 = t.class == TypeClass::Bits && t.bits == 8;
        let align_ok = p.spec.align.is_none_or(|a| a.is_power_of_two() && a <= 128);
        if !bits8 || !align_ok {
            out.push(warn(
                f,
                p.span,
                format!(
                    "{} of {} is an aggregate that is not `.align N .b8 name[size]` \
                     with N in 1..128",
                    which(),
                    name()
                ),
            ));
        }
        return;
    }
    if matches!(t.class, TypeClass::Unsigned | TypeClass::Signed) && t.bits < 32 {
        out.push(warn(
            f,
            p.span,
            format!(
                "{} of {} is narrower than 32 bits; widen it to .u32/.s32",
                which(),
                name()
            ),
        ));
    }
    if t.class == TypeClass::Float && t.bits == 16 {
        out.push(warn(
            f,
            p.span,
            format!(
                "{} of {} is .f16, which cannot be passed or returned",
                which(),
                name()
            ),
        ));
    }
}

/// ABI findings of one module (its source is `src`).
/// `src` gives the module's source text; it is asked for only to name a function in
/// a finding (a file not mapped yet is then mapped).
pub(crate) fn findings<'s>(m: &Module, src: &dyn Fn() -> &'s [u8]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let bits = m.header.address_bits();
    if let Some(v) = m.header.version {
        if (v.major, v.minor) < (2, 0) && !m.calls.is_empty() {
            out.push(warn(
                m.file,
                v.span,
                format!(
                    "PTX ISA {}.{} predates the ABI (2.0): its calls cannot link with ABI code",
                    v.major, v.minor
                ),
            ));
        }
    }
    let sys = system_calls(bits);
    // The items declaring system calls, found through the module's compact copy of
    // the names rather than each function's name in the source.
    let mut sys_items = rustc_hash::FxHashMap::default();
    for (id, s) in m.symbols_with_ids() {
        if let Some((_, canon)) = sys.iter().find(|(n, _)| n.as_bytes() == m.symbol_name(id)) {
            sys_items.extend(s.decls.iter().map(|d| (d.item.0 as usize, canon)));
        }
    }
    for (ii, item) in m.items.iter().enumerate() {
        let ItemKind::Function(f) = &item.kind else {
            continue;
        };
        let name = || String::from_utf8_lossy(&src()[f.name.range()]).into_owned();
        let sig = &f.signature;
        if f.kind == FuncKind::Func {
            for (i, p) in sig.returns().into_iter().flatten().enumerate() {
                let which = || format!("return value {}", i + 1);
                check_param(m, &name, &which, p, &mut out);
            }
            for (i, p) in sig.params().into_iter().flatten().enumerate() {
                let which = || format!("parameter {}", i + 1);
                check_param(m, &name, &which, p, &mut out);
            }
            if let Some(canon) = sys_items.get(&ii) {
                if let Some(why) = signature_mismatch(canon, sig) {
                    let name = name();
                    out.push(warn(
                        m.file,
                        f.name,
                        format!(
                            "system call {name} does not have the guide's prototype \
                             for {bits}-bit addresses: {why}"
                        ),
                    ));
                }
            }
        } else {
            for p in sig.params().into_iter().flatten() {
                let want = if bits == 64 { 64 } else { 32 };
                if p.spec.ptr.is_some() && p.spec.ty.bits != want {
                    out.push(warn(
                        m.file,
                        p.span,
                        format!(
                            "pointer parameter of kernel {} is not .u{want} \
                             (.address_size {bits})",
                            name()
                        ),
                    ));
                }
            }
        }
    }
    out
}
