//! Module-scope items: header directives, variables, functions, debug sections.

use super::cursor::{Cursor, PResult, Reported};
use super::decl::{check_size, check_variable, declarator, param_list, type_spec};
use super::expr::{expr, is_binop};
use super::section::Decoder;
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    Arch, Body, FileDirective, FuncDecl, FuncDirective, FuncKind, Header, Item, ItemKind, Linkage,
    Locs, Param, Section, SectionData, Signature, StateSpace, Target, TexMode, TokenRange, VarDecl,
    Version,
};
use crate::lex::TokenKind;
use crate::source::Span;

/// Parses every module-scope item. Never fails: unparsable stretches become
/// [`ItemKind::Error`] items after a diagnostic.
pub(crate) fn items(c: &mut Cursor, header: &mut Header, locs: &mut Locs) -> Vec<Item> {
    // Items are gathered in this thread's scratch vector and moved into one of exact
    // size: growing each module's vector by doubling copied it several times and
    // left unused room in every module's IR.
    let mut items = SCRATCH.take();
    while !c.at_end() {
        let start = c.pos;
        let kind = match item(c, header, locs) {
            Ok(kind) => kind,
            Err(Reported) => {
                recover(c, start);
                ItemKind::Error
            }
        };
        let first = c.toks[start];
        let last = c.toks[c.pos - 1];
        items.push(Item {
            span: Span::new(first.lo, last.hi),
            tokens: TokenRange {
                start: start as u32,
                end: c.pos as u32,
            },
            kind,
        });
    }
    if items.len() > SCRATCH_MAX {
        // A module this large keeps the vector itself: a thread holding on to it
        // would keep that memory for the rest of the link.
        return items;
    }
    let mut exact = Vec::with_capacity(items.len());
    exact.append(&mut items);
    SCRATCH.set(items);
    exact
}

/// The most items a thread's scratch vector is kept for (8 MiB of them).
pub(super) const SCRATCH_MAX: usize = (8 << 20) / std::mem::size_of::<Item>();

thread_local! {
    /// Each thread's vector the items of a module are gathered in ([`items`]).
    static SCRATCH: std::cell::Cell<Vec<Item>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Skips to a point where parsing can resume: after a `;` or a balanced `}` at
/// depth 0, or before a directive that starts a module-scope item.
fn recover(c: &mut Cursor, start: usize) {
    let mut depth = 0usize;
    if c.pos == start {
        c.bump();
        // The offending token itself may open a block.
        if c.is_punct(c.toks[start], b"{") {
            depth = 1;
        } else if c.is_punct(c.toks[start], b";") {
            return;
        }
    }
    while let Some(t) = c.peek() {
        if t.kind == TokenKind::Punct {
            match c.text(t) {
                b"{" => depth += 1,
                b"}" => {
                    c.bump();
                    if depth <= 1 {
                        return;
                    }
                    depth -= 1;
                    continue;
                }
                b";" if depth == 0 => {
                    c.bump();
                    return;
                }
                _ => {}
            }
        } else if depth == 0 && t.kind == TokenKind::Directive && starts_item(c.text(t)) {
            return;
        }
        c.bump();
    }
}

fn starts_item(d: &[u8]) -> bool {
    matches!(
        d,
        b".version"
            | b".target"
            | b".address_size"
            | b".file"
            | b".section"
            | b".visible"
            | b".extern"
            | b".weak"
            | b".common"
            | b".func"
            | b".entry"
            | b".global"
            | b".const"
            | b".shared"
            | b".alias"
            | b".pragma"
    )
}

fn item(c: &mut Cursor, header: &mut Header, locs: &mut Locs) -> PResult<ItemKind> {
    let t = c.peek().expect("item() called at end");
    if c.is_punct(t, b"}") {
        return Err(c.error(
            t.span(),
            "unexpected `}` at module scope: there is no `{` to close",
        ));
    }
    if t.kind != TokenKind::Directive {
        return Err(c.error_help(
            t.span(),
            format!(
                "expected a module-scope directive or declaration, found {}",
                c.found()
            ),
            "instructions are only allowed inside a `.func` or `.entry` body",
        ));
    }
    match c.text(t) {
        b".version" => version(c, header),
        b".target" => target(c, header),
        b".address_size" => address_size(c, header),
        b".file" => file(c),
        b".loc" => {
            c.bump();
            loc_args(c, locs)?;
            Ok(ItemKind::Loc)
        }
        b".pragma" => {
            pragma(c)?;
            Ok(ItemKind::Pragma)
        }
        b".alias" => alias(c),
        b".section" => section(c),
        _ => declaration(c),
    }
}

fn version(c: &mut Cursor, header: &mut Header) -> PResult<ItemKind> {
    let d = c.bump();
    let v = match c.peek() {
        Some(t) if t.kind == TokenKind::Float => {
            c.bump();
            let text = c.text(t);
            let mut parts = text.splitn(2, |&b| b == b'.');
            let num = |p: Option<&[u8]>| {
                p.and_then(|p| std::str::from_utf8(p).ok())
                    .and_then(|p| p.parse::<u32>().ok())
            };
            match (num(parts.next()), num(parts.next())) {
                (Some(major), Some(minor)) => Version {
                    major,
                    minor,
                    span: t.span(),
                },
                _ => {
                    return Err(c.error(t.span(), "malformed version number; expected MAJOR.MINOR"))
                }
            }
        }
        _ => {
            let msg = format!(
                "`.version` needs a version number MAJOR.MINOR, found {}",
                c.found()
            );
            return Err(c.error(d.span(), msg));
        }
    };
    if let Some(prev) = header.version {
        let _ = prev;
        return Err(c.error(d.span(), "duplicate `.version` directive"));
    }
    header.version = Some(v);
    Ok(ItemKind::Version)
}

fn target(c: &mut Cursor, header: &mut Header) -> PResult<ItemKind> {
    let d = c.bump();
    let mut t = Target {
        arch: None,
        texmode: None,
        map_f64_to_f32: false,
        debug: false,
        span: d.span(),
    };
    loop {
        let word = c.expect_ident("a target (`sm_80`) or target option")?;
        let text = c.text(word);
        match text {
            b"texmode_unified" => t.texmode = Some(TexMode::Unified),
            b"texmode_independent" => t.texmode = Some(TexMode::Independent),
            b"map_f64_to_f32" => t.map_f64_to_f32 = true,
            b"debug" => t.debug = true,
            _ => match parse_arch(text) {
                Some((sm, suffix)) if t.arch.is_none() => {
                    t.arch = Some(Arch {
                        sm,
                        suffix,
                        span: word.span(),
                    })
                }
                Some(_) => {
                    return Err(c.error(word.span(), "more than one architecture in `.target`"))
                }
                None => {
                    return Err(c.error_help(
                        word.span(),
                        format!(
                            "unknown `.target` option `{}`",
                            String::from_utf8_lossy(text)
                        ),
                        "expected sm_NN[a|f], texmode_unified, texmode_independent, \
                         map_f64_to_f32 or debug",
                    ))
                }
            },
        }
        if !c.eat_punct(b",") {
            break;
        }
    }
    t.span = d.span().to(c.after_prev());
    if header.target.is_some() {
        return Err(c.error(d.span(), "duplicate `.target` directive"));
    }
    header.target = Some(t);
    Ok(ItemKind::Target)
}

/// `sm_80` → (80, None); `sm_90a` → (90, Some(b'a')).
pub fn parse_arch(text: &[u8]) -> Option<(u32, Option<u8>)> {
    crate::Arch::parse_bytes(text).map(|a| (a.sm(), a.suffix()))
}

fn address_size(c: &mut Cursor, header: &mut Header) -> PResult<ItemKind> {
    let d = c.bump();
    if !c.at_kind(TokenKind::Int) {
        let msg = format!("`.address_size` needs 32 or 64, found {}", c.found());
        return Err(c.error(d.span(), msg));
    }
    let (n, span) = c.expect_int("32 or 64 after `.address_size`")?;
    if n != 32 && n != 64 {
        return Err(c.error(span, format!("`.address_size` must be 32 or 64, not {n}")));
    }
    if header.address_size.is_some() {
        return Err(c.error(d.span(), "duplicate `.address_size` directive"));
    }
    header.address_size = Some((n as u32, span));
    Ok(ItemKind::AddressSize)
}

fn file(c: &mut Cursor) -> PResult<ItemKind> {
    c.bump();
    let (index, index_span) = c.expect_int("a file index after `.file`")?;
    let name = match c.peek() {
        Some(t) if t.kind == TokenKind::String => c.bump().span(),
        _ => return Err(c.expected("a quoted file name")),
    };
    // Optional `, timestamp, size`.
    if c.eat_punct(b",") {
        c.expect_int("a timestamp")?;
        if c.eat_punct(b",") {
            c.expect_int("a file size")?;
        }
    }
    Ok(ItemKind::File(FileDirective {
        index: index.min(u32::MAX as u64) as u32,
        index_span,
        name,
    }))
}

/// The arguments of `.loc file line col [, function_name L [+ off]] [, inlined_at f l c]`.
/// Returns the `function_name` label, if any; file indices go to `files`.
pub(crate) fn loc_args(c: &mut Cursor, locs: &mut Locs) -> PResult<Option<Span>> {
    let (f, span) = c.expect_int("a file index after `.loc`")?;
    locs.files.push((span, f.min(u32::MAX as u64) as u32));
    c.expect_int("a line number")?;
    c.expect_int("a column number")?;
    let mut label = None;
    let attrs_start = c.here();
    let mut any_attr = false;
    while c.eat_punct(b",") {
        any_attr = true;
        let key = c.expect_ident("`function_name` or `inlined_at`")?;
        match c.text(key) {
            b"function_name" => {
                label = Some(c.expect_ident("a label after `function_name`")?.span());
                if c.eat_punct(b"+") {
                    c.expect_int("an offset")?;
                }
            }
            b"inlined_at" => {
                let (f, span) = c.expect_int("a file index")?;
                locs.files.push((span, f.min(u32::MAX as u64) as u32));
                c.expect_int("a line number")?;
                c.expect_int("a column number")?;
            }
            _ => {
                return Err(c.error(
                    key.span(),
                    format!(
                        "unknown `.loc` attribute `{}`",
                        String::from_utf8_lossy(c.text(key))
                    ),
                ))
            }
        }
    }
    if any_attr {
        locs.attrs.push(attrs_start.to(c.after_prev()));
    }
    Ok(label)
}

/// `.pragma "a" [, "b"] ;`
pub(crate) fn pragma(c: &mut Cursor) -> PResult<()> {
    c.bump();
    loop {
        match c.peek() {
            Some(t) if t.kind == TokenKind::String => {
                c.bump();
            }
            _ => return Err(c.expected("a quoted string after `.pragma`")),
        }
        if !c.eat_punct(b",") {
            break;
        }
    }
    c.expect_punct(b";")?;
    Ok(())
}

fn alias(c: &mut Cursor) -> PResult<ItemKind> {
    c.bump();
    let alias = c.expect_ident("the alias name")?.span();
    c.expect_punct(b",")?;
    let aliasee = c.expect_ident("the aliased function")?.span();
    c.expect_punct(b";")?;
    Ok(ItemKind::Alias { alias, aliasee })
}

fn section(c: &mut Cursor) -> PResult<ItemKind> {
    c.bump();
    let name = match c.peek() {
        Some(t) if t.kind == TokenKind::Directive => c.bump().span(),
        _ => return Err(c.expected("a section name such as `.debug_info`")),
    };
    let open = c.expect_punct(b"{")?;
    let first = c.pos;
    let mut s = Section {
        name,
        labels: Vec::new(),
        section_refs: Vec::new(),
        ident_refs: Vec::new(),
        data: Box::new(Ok(SectionData::default())),
    };
    // The data the DWARF merge reads, decoded from the tokens as they are parsed.
    let mut data = Decoder::default();
    loop {
        let Some(t) = c.peek() else {
            return Err(c.error(open.span(), "unclosed `{` of `.section`"));
        };
        if c.is_punct(t, b"}") {
            c.bump();
            break;
        }
        if t.kind == TokenKind::Ident && c.peek_at(1).is_some_and(|n| c.is_punct(n, b":")) {
            c.bump();
            c.bump();
            s.labels.push(t.span());
            data.label(t);
            continue;
        }
        let width: u8 = if t.kind != TokenKind::Directive {
            0
        } else {
            match c.text(t) {
                b".b8" | b".u8" | b".s8" => 1,
                b".b16" | b".u16" | b".s16" => 2,
                b".b32" | b".u32" | b".s32" => 4,
                b".b64" | b".u64" | b".s64" => 8,
                _ => 0,
            }
        };
        let is_data = width != 0;
        if !is_data {
            return Err(c.expected("a label or data directive (`.b8`, `.b32`, ...) in `.section`"));
        }
        c.bump();
        loop {
            // Most data is integers alone (`.b8 1,2,...`): `expr` would read just the
            // one token, with nothing to report or collect, at several times the cost.
            let int_alone = c.at_kind(TokenKind::Int)
                && c.peek_at(1).is_none_or(|n| {
                    n.kind != TokenKind::Punct || c.text(n) == b"," || !is_binop(c.text(n))
                });
            if int_alone {
                let t = c.bump();
                data.int(c.src, t, width);
            } else {
                let before = c.pos;
                expr(c, &mut s.ident_refs, true, 0)?;
                let value = &c.toks[before..c.pos];
                for tok in value {
                    if tok.kind == TokenKind::Directive {
                        s.section_refs.push(tok.span());
                    }
                }
                data.value(c.src, value, width);
            }
            // Data items are separated by `,`; the list ends at the first token that
            // is not a `,` (newlines carry no meaning in PTX).
            if !c.eat_punct(b",") {
                break;
            }
        }
        // Some producers end data lines with `;`.
        c.eat_punct(b";");
    }
    // The tokens between the braces (`c.pos - 1` is the `}`).
    s.data = data.finish(c.src, &c.toks[first..c.pos - 1]);
    Ok(ItemKind::Section(s))
}

fn linkage_of(text: &[u8]) -> Option<Linkage> {
    Some(match text {
        b".extern" => Linkage::Extern,
        b".visible" => Linkage::Visible,
        b".weak" => Linkage::Weak,
        b".common" => Linkage::Common,
        _ => return None,
    })
}

fn declaration(c: &mut Cursor) -> PResult<ItemKind> {
    let first = c.peek().expect("declaration() at end");
    let mut linkage = Linkage::Local;
    if let Some(l) = linkage_of(c.text(first)) {
        c.bump();
        linkage = l;
    }
    let Some(t) = c.peek() else {
        return Err(c.expected("a declaration after the linkage directive"));
    };
    if t.kind == TokenKind::Directive {
        let kind = match c.text(t) {
            b".func" => Some(FuncKind::Func),
            b".entry" => Some(FuncKind::Entry),
            _ => None,
        };
        if let Some(kind) = kind {
            if linkage == Linkage::Common {
                // ptxas: "Parsing error near '.func'". Reported without stopping, so
                // that the function is still declared for the module's calls.
                let what = format!("a `{}`", String::from_utf8_lossy(c.text(t)));
                common_refused(c, first.span(), what);
            }
            return function(c, linkage, kind);
        }
        let text = c.text(t);
        let is_var_start = StateSpace::from_directive(text).is_some() || text == b".attribute";
        if is_var_start {
            return variable(c, linkage, first.span());
        }
    }
    let msg = if linkage == Linkage::Local {
        format!("unknown module-scope directive {}", c.found())
    } else {
        format!(
            "expected `.func`, `.entry` or a variable declaration after `{}`, found {}",
            linkage.as_str(),
            c.found()
        )
    };
    let span = c.here();
    Err(c.error(span, msg))
}

/// `.common` before something other than a `.global` variable (docs/linking.md,
/// "Declarations checked in each module"): `what` is what it stands before.
fn common_refused(c: &mut Cursor, common: Span, what: String) {
    c.errors.push(
        Diagnostic::error(
            Code::Linkage,
            c.file,
            common,
            format!("`.common` declares only `.global` variables, not {what}"),
        )
        .with_help("use `.visible` or `.weak`, or declare a `.global` variable"),
    );
}

/// A variable item; `first` is its first token (the linkage directive, if any).
fn variable(c: &mut Cursor, linkage: Linkage, first: Span) -> PResult<ItemKind> {
    let spec = type_spec(c, None)?;
    if matches!(
        spec.space,
        StateSpace::Reg | StateSpace::Sreg | StateSpace::Param
    ) {
        let span = c.here();
        return Err(c.error(
            span,
            format!(
                "`{}` variables are not allowed at module scope",
                spec.space.as_str()
            ),
        ));
    }
    module_space_refused(c, &spec);
    if linkage == Linkage::Common && spec.space != StateSpace::Global {
        // ptxas: ".common variables must be declared in .global space".
        common_refused(c, first, format!("`{}` ones", spec.space.as_str()));
    }
    // Room for one: a variable item almost always declares a single name, and the
    // first push of an empty vector makes room for four (80-byte declarators that a
    // link of thousands of modules would hold, unused, until it ends).
    let mut declarators = Vec::with_capacity(1);
    loop {
        let decl = declarator(c, true)?;
        check_size(c, spec.ty, spec.vector, &decl.dims, decl.span)?;
        check_variable(c, &spec, &decl, linkage == Linkage::Extern);
        declarators.push(decl);
        if !c.eat_punct(b",") {
            break;
        }
    }
    c.expect_punct(b";")?;
    Ok(ItemKind::Variable(VarDecl {
        linkage,
        spec,
        declarators,
    }))
}

/// The state spaces ptxas refuses for module-scope variables although PTX once had
/// them there (docs/linking.md, "Declarations checked in each module"): `.local`
/// ("Module-scoped variables in .local state space are not allowed with ABI"; every
/// `.version` and target ptxas 12.9 assembles has the ABI) and `.tex` ("Deprecated
/// feature: '.tex' not supported as of PTX version 1.5", which every target ptxas
/// 12.9 assembles needs). Reported without stopping the parse.
fn module_space_refused(c: &mut Cursor, spec: &crate::ir::TypeSpec) {
    let help = match spec.space {
        StateSpace::Local => "declare it inside the function that uses it, or in `.global`",
        StateSpace::Tex => "declare a texture reference `.global .texref`",
        _ => return,
    };
    c.errors.push(
        Diagnostic::error(
            Code::Declaration,
            c.file,
            spec.space_span,
            format!(
                "`{}` variables are not allowed at module scope",
                spec.space.as_str()
            ),
        )
        .with_help(help),
    );
}

thread_local! {
    /// Each thread's array for the parameters of the function being parsed.
    static PARAMS: std::cell::Cell<Vec<Param>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The return list (for a `.func`), the name and the parameter list of a function.
fn signature(c: &mut Cursor, kind: FuncKind) -> PResult<(Span, Signature)> {
    // Both lists are parsed into this thread's array, then moved into one exactly
    // sized array: most lists hold one or two parameters, and growing an array of
    // its own for each list left room for four (a third of the parsed IR of a large
    // link was such slack) and cost an allocation per list.
    let mut list = PARAMS.take();
    list.clear();
    let mut parse = |list: &mut Vec<Param>| {
        let mut returns = None;
        if kind == FuncKind::Func && c.at_punct(b"(") {
            param_list(c, list)?;
            returns = Some(list.len() as u32);
        }
        let name = c.expect_ident("a function name")?.span();
        let has_params = c.at_punct(b"(");
        if has_params {
            param_list(c, list)?;
        }
        Ok((name, returns, has_params))
    };
    let parsed = parse(&mut list);
    let sig = parsed.map(|(name, returns, has_params)| {
        let sig = Signature::from_list(list.drain(..).collect(), returns, has_params);
        (name, sig)
    });
    PARAMS.set(list);
    sig
}

fn function(c: &mut Cursor, linkage: Linkage, kind: FuncKind) -> PResult<ItemKind> {
    c.bump();
    let (name, signature) = signature(c, kind)?;
    let header_end = c.after_prev().hi;
    let mut directives = Vec::new();
    loop {
        let Some(t) = c.peek() else {
            return Err(c.expected("`;` or a function body"));
        };
        if t.kind != TokenKind::Directive {
            break;
        }
        let text = c.text(t);
        if text == b".pragma" {
            let start = c.pos;
            pragma(c)?;
            directives.push(FuncDirective {
                name: t.span(),
                args: Vec::new(),
                span: t.span().to(c.toks[c.pos - 1].span()),
            });
            let _ = start;
            continue;
        }
        if starts_item(text) {
            // The declaration ended without `;` (see below).
            break;
        }
        let arity = match text {
            b".noreturn" | b".explicitcluster" | b".blocksareclusters" => 0..=0,
            b".maxntid" | b".reqntid" | b".reqnctapercluster" => 1..=3,
            b".minnctapersm" | b".maxnctapersm" | b".maxnreg" | b".maxclusterrank" => 1..=1,
            _ => {
                return Err(c.error_help(
                    t.span(),
                    format!(
                        "unknown function directive `{}`",
                        String::from_utf8_lossy(text)
                    ),
                    "expected `;`, a body `{`, or one of .maxntid .reqntid .minnctapersm \
                     .maxnreg .noreturn .explicitcluster .reqnctapercluster .maxclusterrank .pragma",
                ))
            }
        };
        c.bump();
        let mut args = Vec::new();
        if *arity.end() > 0 {
            loop {
                args.push(c.expect_int("a number")?.0);
                if !c.eat_punct(b",") {
                    break;
                }
            }
            if !arity.contains(&args.len()) {
                return Err(c.error(
                    t.span().to(c.after_prev()),
                    format!(
                        "`{}` takes {} argument(s), found {}",
                        String::from_utf8_lossy(text),
                        if arity.start() == arity.end() {
                            arity.start().to_string()
                        } else {
                            format!("{} to {}", arity.start(), arity.end())
                        },
                        args.len()
                    ),
                ));
            }
        }
        directives.push(FuncDirective {
            name: t.span(),
            args,
            span: t.span().to(c.after_prev()),
        });
    }
    let body = if c.at_punct(b"{") {
        Some(body(c)?)
    } else if c.eat_punct(b";") {
        None
    } else if c
        .peek()
        .is_none_or(|t| t.kind == TokenKind::Directive && starts_item(c.text(t)))
    {
        // ptxas accepts a declaration without `;` when the next module-scope item
        // follows (NVVM writes `.func ... f(...)` directly before `.alias f, g;`).
        None
    } else {
        c.expect_punct(b";")?;
        None
    };
    check_parameters(c, kind, &signature, body.is_some());
    if linkage == Linkage::Extern && body.is_some() {
        // ptxas: "Function definition conflicts with '.extern' declaration".
        let shown = String::from_utf8_lossy(&c.src[name.range()]).into_owned();
        c.errors.push(
            Diagnostic::error(
                Code::ExternConflict,
                c.file,
                name,
                format!("`{shown}` is declared `.extern` but defined here with a body"),
            )
            .with_help(
                "`.extern` declares a function another module defines: define it `.visible` \
                 or `.weak` instead",
            ),
        );
    }
    let noreturn = directives
        .iter()
        .any(|d| c.src[d.name.range()] == *b".noreturn");
    Ok(ItemKind::Function(FuncDecl {
        linkage,
        kind,
        name,
        signature,
        directives,
        body,
        header_end,
        noreturn,
    }))
}

/// What ptxas refuses in a function's parameter lists (docs/linking.md, "Declarations
/// checked in each module"): a kernel parameter outside `.param` ("Entry parameter
/// must have .param state space"), and in a definition, two parameters or return
/// values of one name ("Duplicate definition of variable"; a declaration may repeat
/// a name). Reported without stopping the parse.
fn check_parameters(c: &mut Cursor, kind: FuncKind, signature: &Signature, defined: bool) {
    let params = signature.all();
    if kind == FuncKind::Entry {
        for p in params.iter().filter(|p| p.spec.space != StateSpace::Param) {
            let shown = String::from_utf8_lossy(&c.src[p.name.range()]).into_owned();
            c.errors.push(
                Diagnostic::error(
                    Code::EntryParameterSpace,
                    c.file,
                    p.name,
                    format!("kernel parameter `{shown}` is not in the `.param` state space"),
                )
                .with_help("declare kernel parameters `.param`"),
            );
        }
    }
    if defined {
        for (i, p) in params.iter().enumerate() {
            let name = &c.src[p.name.range()];
            if let Some(first) = params[..i].iter().find(|q| c.src[q.name.range()] == *name) {
                let shown = String::from_utf8_lossy(name).into_owned();
                c.errors.push(
                    Diagnostic::error(
                        Code::Redefinition,
                        c.file,
                        p.name,
                        format!("parameter `{shown}` is declared twice in this definition"),
                    )
                    .with_note(c.file, first.name, "first declared at"),
                );
            }
        }
    }
}

/// Matches the braces of a body; the statements inside are walked later, once every
/// module-scope name is known.
fn body(c: &mut Cursor) -> PResult<Body> {
    let open_idx = c.pos;
    let open = c.bump();
    let mut depth = 1usize;
    while let Some(t) = c.peek() {
        c.bump();
        if t.kind == TokenKind::Punct {
            match c.text(t) {
                b"{" => depth += 1,
                b"}" => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(Body {
                            span: Span::new(open.lo, t.hi),
                            tokens: TokenRange {
                                start: open_idx as u32,
                                end: c.pos as u32,
                            },
                        });
                    }
                }
                _ => {}
            }
        }
    }
    Err(c.error(
        open.span(),
        "unclosed `{`: function body has no matching `}`",
    ))
}
