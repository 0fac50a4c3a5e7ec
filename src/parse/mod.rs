//! The PTX front end: lexing, module-scope parsing, and symbol resolution.
//!
//! [`parse_module`] never fails and never panics on any input: it returns a
//! [`Module`] together with every diagnostic found.

mod alias;
mod body;
mod calls;
mod cursor;
mod decl;
mod deferred;
mod expr;
mod finish;
mod items;
mod names;
mod resolve;
mod scope;
mod section;

pub use cursor::parse_int;
pub use items::parse_arch;

use crate::diag::{Code, Diagnostic};
use crate::ir::{Header, Locs, Module};
use crate::lex;
use crate::source::FileId;

/// A parsed module and the diagnostics found while parsing it (sorted by position).
pub struct Parsed {
    /// The module; complete as far as the input allowed.
    pub module: Module,
    /// Lexical, syntax and name errors.
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one PTX module. `src.len()` must not exceed [`crate::input::MAX_INPUT_LEN`].
pub fn parse_module(file: FileId, src: &[u8]) -> Parsed {
    parse_module_into(file, src, Vec::new())
}

/// Like [`parse_module`], lexing into `tokens`' allocation (see [`lex::lex_into`]);
/// the module's `tokens` can be handed back for the next file.
pub fn parse_module_into(file: FileId, src: &[u8], tokens: Vec<lex::Token>) -> Parsed {
    assert!(
        src.len() as u64 <= crate::input::MAX_INPUT_LEN,
        "inputs are length-checked when loaded"
    );
    parse_lexed(file, src, lex::lex_into(file, src, tokens), &[], 0, false).0
}

/// Like [`parse_module_into`], for consumers that release the tokens right after
/// parsing (the linker). Function bodies are skipped when the module is lexed and
/// lexed one at a time, compactly, when they are walked
/// ([`lex::Bodies::Deferred`]): the token array holds only the declarations, and
/// the front end takes about half the time. The module is the same as
/// [`parse_module_into`]'s except for its tokens and token ranges; where that cannot
/// be shown cheaply (any diagnostic, a skipped `{` the parser did not take as a body,
/// a `%`-name at module scope that a register could refer to), the module is parsed
/// again in full.
///
/// A module of [`SPLIT_MIN`] bytes or more has its bodies walked in parallel, in
/// groups of about [`SPLIT_BYTES`]; the module is the same.
///
/// With `record`, what the module uses by the instruction table is recorded as its
/// bodies are lexed (`Module::recorded_uses`), except in a module parsed in full
/// or walked in groups, which `link::needs` lexes again.
pub fn parse_module_deferred(
    file: FileId,
    src: &[u8],
    tokens: Vec<lex::Token>,
    record: bool,
) -> Parsed {
    let split = if src.len() >= SPLIT_MIN {
        SPLIT_BYTES
    } else {
        0
    };
    parse_deferred(file, src, tokens, split, record)
}

/// Modules at least this large have their bodies walked in parallel: one module
/// would otherwise keep a single core busy (a 2 GB module takes seconds to walk).
/// Chosen by size alone, so the same module takes the same path on any machine.
pub const SPLIT_MIN: usize = 32 << 20;

/// Bytes of bodies per group when they are walked in parallel: enough to make the
/// per-group setup negligible, and several groups per core even at [`SPLIT_MIN`].
pub const SPLIT_BYTES: usize = 4 << 20;

/// [`parse_module_deferred`] with the bodies walked in groups of `split` bytes
/// (`0`: in one walk).
fn parse_deferred(
    file: FileId,
    src: &[u8],
    tokens: Vec<lex::Token>,
    split: usize,
    record: bool,
) -> Parsed {
    let mut lexed = lex::lex_bodies_into(file, src, tokens, lex::Bodies::Deferred);
    let deferred = std::mem::take(&mut lexed.compacted);
    let (parsed, exact) = parse_lexed(file, src, lexed, &deferred, split, record);
    if deferred.is_empty()
        || (exact
            && parsed.diagnostics.is_empty()
            && bodies_agree(&parsed.module, &deferred)
            && !declares_percent_name(&parsed.module, src))
    {
        return parsed;
    }
    parse_module_into(file, src, parsed.module.tokens)
}

/// True if every deferred `{` opens a function body of `m` (both lists ascend).
fn bodies_agree(m: &Module, deferred: &[u32]) -> bool {
    let mut bodies = m.items.iter().filter_map(|i| match &i.kind {
        crate::ir::ItemKind::Function(f) => f.body.as_ref().map(|b| b.span.lo),
        _ => None,
    });
    deferred.iter().all(|&lo| bodies.any(|b| b == lo))
}

/// True if a module-scope name, or a name a debug section refers to, starts with `%`
/// like the registers that compact lexing leaves out.
fn declares_percent_name(m: &Module, src: &[u8]) -> bool {
    let percent = |s: crate::source::Span| src[s.range()].starts_with(b"%");
    m.symbols.iter().any(|s| percent(s.name))
        || m.items.iter().any(|i| match &i.kind {
            crate::ir::ItemKind::Section(s) => s.ident_refs.iter().any(|&r| percent(r)),
            _ => false,
        })
}

/// Parses lexed tokens; `deferred` lists the bodies the lexer left out. Returns
/// false with the module if a deferred body did not lex exactly. With `record` (and
/// no `split`), records what the module uses.
fn parse_lexed(
    file: FileId,
    src: &[u8],
    lexed: lex::Lexed,
    deferred: &[u32],
    split: usize,
    record: bool,
) -> (Parsed, bool) {
    let mut diagnostics = lexed.errors;
    let mut header = Header::default();
    let mut locs = Locs::default();
    let items = {
        let mut c = cursor::Cursor::new(file, src, &lexed.tokens);
        let items = items::items(&mut c, &mut header, &mut locs);
        diagnostics.append(&mut c.errors);
        items
    };
    let mut module = Module {
        file,
        tokens: lexed.tokens,
        map_comments: lexed
            .comments
            .into_iter()
            .filter(|c| src[c.range()].starts_with(b"//:"))
            .collect(),
        items,
        header,
        symbols: Vec::new(),
        symbol_names: Vec::new(),
        symbol_name_ends: Vec::new(),
        kept: Default::default(),
        references: Vec::new(),
        locs,
        calls: Vec::new(),
        legacy_warp_op: None,
        aggregate_param_functions: Vec::new(),
        uses_textures: false,
        file_directives: Vec::new(),
        recorded_uses: None,
    };
    let mut bodies = deferred::DeferredBodies::new(deferred);
    bodies.split = split;
    if record && split == 0 {
        bodies.recorder = Some(crate::isa::Recorder::default());
    }
    resolve::resolve(&mut module, src, &mut diagnostics, &mut bodies);
    if let Some(rec) = bodies.recorder.take() {
        let uses = record_the_rest(&module, src, deferred, rec, &bodies.recorded);
        module.recorded_uses = Some(Box::new(uses));
    }
    if !bodies.map_comments.is_empty() {
        module.map_comments.append(&mut bodies.map_comments);
        module.map_comments.sort_by_key(|c| c.lo);
    }
    finish::finish(&mut module, src);
    check_header_order(&module, &mut diagnostics);
    // The module lives until the link ends: give back growth slack.
    module.items.shrink_to_fit();
    module.map_comments.shrink_to_fit();
    module.references.shrink_to_fit();
    module.symbols.shrink_to_fit();
    module.calls.shrink_to_fit();
    module.locs.files.sort_by_key(|&(span, _)| span.lo);
    module.locs.attrs.sort_by_key(|span| span.lo);
    diagnostics.sort_by_key(|d| d.span().map(|s| (s.lo, s.hi)));
    (
        Parsed {
            module,
            diagnostics,
        },
        bodies.exact,
    )
}

/// What module `m` uses: `rec` holds what its bodies in `recorded` use (recorded
/// as the walk lexed them); the items' heads and any other body are read here, from
/// the module's tokens or, for a deferred body the walk did not ask for, lexed in
/// full.
fn record_the_rest(
    m: &Module,
    src: &[u8],
    deferred: &[u32],
    mut rec: crate::isa::Recorder,
    recorded: &[u32],
) -> crate::isa::ModuleUses {
    use crate::ir::ItemKind;
    let within = |span| crate::isa::tokens_within(&m.tokens, span);
    for item in &m.items {
        rec.head(src, item, within(crate::isa::head_span(item)));
        let ItemKind::Function(f) = &item.kind else {
            continue;
        };
        let Some(body) = &f.body else { continue };
        if recorded.binary_search(&body.span.lo).is_ok() {
            continue;
        }
        if deferred.binary_search(&body.span.lo).is_ok() {
            let full = lex::lex_body_full(m.file, src, body.span.lo as usize, Default::default());
            rec.full_body(src, &full.tokens);
        } else {
            rec.full_body(src, within(body.span));
        }
    }
    rec.finish()
}

/// PTX ISA 4.1: a module begins with `.version`, followed by `.target` (comments may
/// come first). ptxas rejects anything else ("Missing .version directive").
fn check_header_order(m: &Module, diagnostics: &mut Vec<Diagnostic>) {
    use crate::ir::ItemKind;
    let mut kinds = m.items.iter();
    let first = kinds.next();
    let at = |i: Option<&crate::ir::Item>| i.map_or(crate::source::Span::default(), |i| i.span);
    match first.map(|i| &i.kind) {
        // A malformed directive was reported already.
        Some(ItemKind::Error) => {}
        Some(ItemKind::Version)
            if !matches!(
                kinds.next().map(|i| &i.kind),
                Some(ItemKind::Target | ItemKind::Error)
            ) =>
        {
            diagnostics.push(
                Diagnostic::error(
                    Code::ModuleHeader,
                    m.file,
                    at(first),
                    "`.version` must be followed by `.target`",
                )
                .with_help("add a line such as `.target sm_80` after `.version`"),
            );
        }
        Some(ItemKind::Version) => {}
        _ if m.items.iter().any(|i| matches!(i.kind, ItemKind::Version)) || first.is_some() => {
            diagnostics.push(
                Diagnostic::error(
                    Code::ModuleHeader,
                    m.file,
                    at(first),
                    "a PTX module must begin with `.version`",
                )
                .with_help("only comments may come before `.version` and `.target`"),
            );
        }
        _ if m.items.is_empty() => diagnostics.push(
            Diagnostic::error(
                Code::EmptyInput,
                m.file,
                crate::source::Span::default(),
                "empty input: no PTX in this file",
            )
            .with_help("check that the producer wrote its output (a full disk truncates files)"),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes of the diagnostics of `text` after a `.version 7.0`, `sm_80`,
    /// 64-bit header (`head` replaces it where given).
    fn codes_of(head: &str, text: &str) -> Vec<crate::diag::Code> {
        let src = format!("{head}{text}");
        parse_module(FileId(0), src.as_bytes())
            .diagnostics
            .iter()
            .map(|d| d.code)
            .collect()
    }

    /// Every fixture parses to the same module (and diagnostics) with its bodies
    /// walked one by one and in parallel groups of one body each.
    #[test]
    fn bodies_walked_in_parallel_groups_give_the_same_module() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut files = Vec::new();
        let mut dirs = vec![root];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "ptx") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() >= 100, "only {} fixtures", files.len());
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let mut bodies = 0;
        for path in &files {
            let src = std::fs::read(path).unwrap();
            let strip = |mut p: Parsed| {
                p.module.release_tokens();
                format!("{:?}\n{:?}", p.module, p.diagnostics)
            };
            let one = strip(parse_deferred(FileId(0), &src, Vec::new(), 0, false));
            let split = pool.install(|| parse_deferred(FileId(0), &src, Vec::new(), 1, false));
            bodies += split
                .module
                .items
                .iter()
                .filter(|i| matches!(&i.kind, crate::ir::ItemKind::Function(f) if f.body.is_some()))
                .count();
            assert!(one == strip(split), "{}", path.display());
        }
        assert!(bodies > 500, "only {bodies} bodies");
    }

    /// A module with more items than a thread's scratch vector is kept for, then a
    /// small one on the same thread: each gets exactly its own items.
    #[test]
    fn items_of_a_large_module_then_a_small_one() {
        let names = |p: &Parsed, src: &str| -> Vec<String> {
            p.module
                .symbols
                .iter()
                .map(|s| {
                    let d = &s.decls[0];
                    let item = &p.module.items[d.item.0 as usize];
                    src[item.span.range()].to_string()
                })
                .collect()
        };
        let head = ".version 7.0\n.target sm_70\n.address_size 64\n";
        let n = items::SCRATCH_MAX + 10;
        let mut large = head.to_string();
        for i in 0..n {
            large.push_str(&format!(".extern .func f{i}();\n"));
        }
        let small = format!("{head}.extern .func g();\n.visible .global .u32 v;\n");
        for _ in 0..2 {
            let p = parse_module(FileId(0), large.as_bytes());
            assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
            assert_eq!(p.module.items.len(), n + 3);
            assert_eq!(
                names(&p, &large)[n - 1],
                format!(".extern .func f{}();", n - 1)
            );
            let p = parse_module(FileId(0), small.as_bytes());
            assert_eq!(p.module.items.len(), 5);
            assert_eq!(
                names(&p, &small),
                [".extern .func g();", ".visible .global .u32 v;"]
            );
        }
    }

    /// A signature tells a list not written from an empty one, for returns and
    /// parameters alike, with both lists in one array.
    /// ptxas 12.9 refuses a kernel parameter outside `.param` (declared or defined),
    /// and a name used twice among a definition's parameters and return values; an
    /// `.extern` declaration may repeat a name.
    #[test]
    fn parameter_lists_follow_ptxas() {
        use crate::diag::Code;
        let head = ".version 7.0\n.target sm_80\n.address_size 64\n";
        let codes = |item: &str| codes_of(head, &format!("{item}\n"));
        let body = "{\nret;\n}";
        assert_eq!(
            codes(&format!(".visible .entry k(.reg .u32 x)\n{body}")),
            [Code::EntryParameterSpace]
        );
        assert_eq!(
            codes(".extern .entry k(.reg .u32 x);"),
            [Code::EntryParameterSpace]
        );
        for twice in [
            ".visible .func f(.param .u32 x, .param .u32 x)",
            ".visible .func (.param .u32 x) f(.param .u32 x)",
            ".visible .func f(.reg .u32 x, .param .u32 x)",
        ] {
            assert_eq!(
                codes(&format!("{twice}\n{body}")),
                [Code::Redefinition],
                "{twice}"
            );
        }
        for fine in [
            format!(".visible .entry k(.param .u32 x)\n{body}"),
            format!(".visible .func f(.reg .u32 x)\n{body}"),
            ".extern .func f(.param .u32 x, .param .u32 x);".to_string(),
        ] {
            assert_eq!(codes(&fine), [], "{fine}");
        }
    }

    /// ptxas 12.9 refuses an initializer list longer than its array dimension, at every
    /// level, also a flat list for a two-dimensional array ("Greater number of
    /// elements in array initializer"); shorter lists, unsized arrays and vector
    /// components are fine.
    #[test]
    fn initializer_lists_fit_their_arrays() {
        let head = ".version 7.0\n.target sm_80\n.address_size 64\n";
        let codes = |decl: &str| codes_of(head, &format!(".visible .global {decl};\n"));
        for decl in [
            ".u32 a[2] = {1,2,3}",
            ".u32 a[2][2] = {1,2,3,4}",
            ".u32 a[2][2] = {{1,2,3},{3,4}}",
            ".u32 a[2][2] = {{1,2},{3,4},{5,6}}",
            ".v2 .u32 b[2] = {{1,2},{3,4},{5,6}}",
        ] {
            assert_eq!(codes(decl), [crate::diag::Code::InitializerSize], "{decl}");
        }
        for decl in [
            ".u32 a[4] = {1,2,3}",
            ".u32 a[] = {1,2,3}",
            ".u64 a[0] = {1,2,3}",
            ".u32 a[2][2] = {{1,2},{3}}",
            ".v2 .u32 b[2] = {{1,2},{3,4}}",
            ".v4 .u32 v = {1,2,3,4}",
        ] {
            assert_eq!(codes(decl), [], "{decl}");
        }
    }

    /// ptxas 12.9 refuses a function declared `.extern` that its module declares or
    /// defines otherwise, in either order ("Inconsistent redefinition of variable"),
    /// and accepts the same mix for a variable.
    #[test]
    fn extern_functions_are_not_also_declared_otherwise() {
        let head = ".version 7.0\n.target sm_80\n.address_size 64\n";
        let codes = |body: &str| codes_of(head, body);
        let refused = crate::diag::Code::ExternConflict;
        for body in [
            ".extern .func f;\n.visible .func f\n{\nret;\n}\n",
            ".visible .func f\n{\nret;\n}\n.extern .func f;\n",
            ".visible .func f;\n.extern .func f;\n",
            ".extern .func f;\n.weak .func f;\n",
        ] {
            assert_eq!(codes(body), [refused], "{body}");
        }
        for body in [
            ".extern .func f;\n.extern .func f;\n",
            ".visible .func f;\n.visible .func f\n{\nret;\n}\n",
            ".extern .global .u32 g;\n.visible .global .u32 g;\n",
            ".visible .global .u32 g;\n.extern .global .u32 g;\n",
            ".extern .global .u32 g;\n.common .global .u32 g;\n",
        ] {
            assert_eq!(codes(body), [], "{body}");
        }
    }

    /// ptxas 12.9 on the linkage directives of one module's declarations
    /// (docs/linking.md, "Declarations checked in each module"), measured with
    /// `ptxas -c` on each pair below.
    #[test]
    fn linkage_directives_follow_ptxas() {
        use crate::diag::Code::{ExternConflict, Linkage, LinkageConflict};
        let head = ".version 8.5\n.target sm_80\n.address_size 64\n";
        let codes = |body: &str| codes_of(head, body);
        // `.common` is for `.global` variables alone ("Parsing error near '.func'",
        // ".common variables must be declared in .global space").
        for body in [
            ".common .func f();",
            ".common .func f() { ret; }",
            ".common .entry k() { ret; }",
            ".common .shared .u32 x;",
            ".common .const .u32 x = 1;",
        ] {
            assert_eq!(codes(body), [Linkage], "{body}");
        }
        // A body under `.extern` ("Function definition conflicts with '.extern'
        // declaration"), also after an `.extern` declaration.
        for body in [
            ".extern .func f() { ret; }",
            ".extern .entry k(.param .u32 a) { ret; }",
            ".extern .func f();\n.extern .func f() { ret; }",
        ] {
            assert_eq!(codes(body), [ExternConflict], "{body}");
        }
        // Two declarations of a function or kernel: the same linkage, or none after
        // the first; otherwise "Inconsistent redefinition of variable".
        for kind in [".func f()", ".entry k()"] {
            for (first, then, want) in [
                ("", "", None),
                (".visible", "", None),
                (".weak", "", None),
                (".visible", ".visible", None),
                (".weak", ".weak", None),
                ("", ".visible", Some(LinkageConflict)),
                ("", ".weak", Some(LinkageConflict)),
                (".visible", ".weak", Some(LinkageConflict)),
                (".weak", ".visible", Some(LinkageConflict)),
                ("", ".extern", Some(ExternConflict)),
                (".extern", "", Some(ExternConflict)),
                (".extern", ".weak", Some(ExternConflict)),
            ] {
                let body = format!("{first} {kind};\n{then} {kind} {{ ret; }}");
                assert_eq!(codes(&body), Vec::from_iter(want), "{body}");
            }
        }
        // A variable declared `.extern` and then defined without a directive ("'.extern'
        // variable 'x' cannot be resolved by a '.static'"); the other order is fine.
        assert_eq!(
            codes(".extern .global .u32 x;\n.global .u32 x;"),
            [ExternConflict]
        );
        for body in [
            ".global .u32 x;\n.extern .global .u32 x;",
            ".extern .shared .u32 x;\n.visible .shared .u32 x;",
            ".extern .global .u32 x;\n.weak .global .u32 x;",
            ".common .global .u32 x;",
            ".extern .entry k(.param .u32 a);",
        ] {
            assert_eq!(codes(body), [], "{body}");
        }
    }

    /// A function defined without a directive after a `.visible` or `.weak`
    /// declaration is bound as that declaration says (ptxas 12.9: the cubin's symbol
    /// is GLOBAL, resp. WEAK).
    #[test]
    fn a_definition_without_linkage_takes_the_declarations() {
        let src = b".version 8.5\n.target sm_80\n.address_size 64\n\
            .visible .func f();\n.func f() { ret; }\n.weak .func g();\n.func g() { ret; }";
        let parsed = parse_module(FileId(0), src);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        let linkages: Vec<crate::ir::Linkage> =
            parsed.module.symbols.iter().map(|s| s.linkage).collect();
        assert_eq!(
            linkages,
            [crate::ir::Linkage::Visible, crate::ir::Linkage::Weak]
        );
    }

    /// Module-scope `.local` ("Module-scoped variables in .local state space are not
    /// allowed with ABI", for every `.version` from 3.0 and target from sm_50 that
    /// ptxas 12.9 assembles) and `.tex` ("Deprecated feature: '.tex' not supported as
    /// of PTX version 1.5") variables are refused; `.local` in a body is not.
    #[test]
    fn module_scope_local_and_tex_variables_are_refused() {
        let head = ".version 8.5\n.target sm_80\n.address_size 64\n";
        let codes = |body: &str| codes_of(head, body);
        for body in [
            ".local .u32 x;",
            ".visible .local .u32 x;",
            ".extern .local .u32 x;",
            ".tex .u32 t;",
        ] {
            assert_eq!(codes(body), [crate::diag::Code::Declaration], "{body}");
        }
        for body in [
            ".global .texref t;",
            ".visible .entry k() { .local .u32 x; ret; }",
        ] {
            assert_eq!(codes(body), [], "{body}");
        }
    }

    /// A debug section naming a label that nothing defines is a warning (once for the
    /// name): ptxas 12.9 assembles it (`-c` and whole-program), the name an undefined
    /// local symbol. The name becomes a body name declared at its first use, so that a
    /// link renames it.
    #[test]
    fn debug_labels_without_definition_are_warnings() {
        let src = b".version 8.5\n.target sm_80, debug\n.address_size 64\n\
            .visible .entry k() { L1: ret; }\n\
            .section .debug_info { .b64 L1\n.b64 Lgone\n.b64 Lgone }\n";
        let parsed = parse_module(FileId(0), src);
        let found: Vec<_> = parsed
            .diagnostics
            .iter()
            .map(|d| (d.code, d.severity))
            .collect();
        assert_eq!(
            found,
            [(
                crate::diag::Code::UndefinedLabel,
                crate::diag::Severity::Warning
            )],
            "one warning for the name"
        );
        let m = &parsed.module;
        let gone: Vec<_> = m
            .symbols
            .iter()
            .filter(|s| &src[s.name.range()] == b"Lgone")
            .collect();
        assert_eq!(gone.len(), 1, "one symbol for both uses");
        assert_eq!(gone[0].kind, crate::ir::SymbolKind::BodyName);
        let uses = m
            .references
            .iter()
            .filter(|r| &src[r.span.range()] == b"Lgone")
            .count();
        assert_eq!(
            uses, 1,
            "the first use is the declaration, the second a reference"
        );
    }

    #[test]
    fn signature_lists_written_or_not() {
        let src = b".func (.param .b32 r) f (.param .b64 a, .param .b64 b);";
        let parsed = parse_module(FileId(0), src);
        let crate::ir::ItemKind::Function(f) = &parsed.module.items[0].kind else {
            panic!("{:?}", parsed.module.items);
        };
        let names = |ps: Option<&[crate::ir::Param]>| {
            ps.map(|ps| ps.iter().map(|p| &src[p.name.range()]).collect::<Vec<_>>())
        };
        let sig = &f.signature;
        assert_eq!(names(sig.returns()), Some(vec![&b"r"[..]]));
        assert_eq!(names(sig.params()), Some(vec![&b"a"[..], b"b"]));
        assert_eq!(sig.all().len(), 3);
        let none = crate::ir::Signature::new(None, Some(Vec::new()));
        assert_eq!((none.returns(), none.params()), (None, Some(&[][..])));
        let empty = crate::ir::Signature::new(Some(Vec::new()), None);
        assert_eq!((empty.returns(), empty.params()), (Some(&[][..]), None));
        let both = crate::ir::Signature::new(Some(sig.returns().unwrap().to_vec()), None);
        assert_eq!(names(both.returns()), Some(vec![&b"r"[..]]));
        assert!(both.params().is_none() && both.all().len() == 1);
    }
}
