//! Walks a function body statement by statement to find references to module-scope
//! symbols, honouring function-scope declarations that shadow them.
//!
//! The walk is shallow: it knows statement boundaries (`;`), labels (`L:`), guards
//! (`@p`, `@!p`), blocks (`{ }`), scoped declarations (`.reg`, `.local`, `.shared`,
//! `.param`, ...), `.loc`, `.pragma`, `.callprototype`, `.calltargets` and
//! `.branchtargets`. Opcodes are never references; every other identifier that names
//! a module-scope symbol and is not shadowed is one.

use rustc_hash::FxHashMap;

use super::cursor::Cursor;
use super::items::loc_args;
use super::resolve::Names;
use crate::diag::Diagnostic;
use crate::ir::{Body, FuncDecl, ItemId, RefKind, Reference, StateSpace, SymbolId};
use crate::lexer::{Token, TokenKind};
use crate::source::{FileId, Span};

/// Names shadowed in the current function: (symbol, block depth that declared it).
/// Labels and parameters are declared at depth 0, i.e. for the whole function.
struct Shadows {
    stack: Vec<(SymbolId, u32)>,
}

impl Shadows {
    fn contains(&self, id: SymbolId) -> bool {
        self.stack.iter().any(|&(s, _)| s == id)
    }
    fn pop_depth(&mut self, depth: u32) {
        while self.stack.last().is_some_and(|&(_, d)| d >= depth) {
            self.stack.pop();
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn walk_body<'s>(
    tokens: &'s [Token],
    src: &'s [u8],
    file: FileId,
    item: ItemId,
    func: &FuncDecl,
    body: &Body,
    names: &Names,
    refs: &mut Vec<Reference>,
    body_names: &mut FxHashMap<&'s [u8], (ItemId, Span)>,
    errors: &mut Vec<Diagnostic>,
) {
    let toks = &tokens[body.tokens.range()];
    let mut shadows = Shadows { stack: Vec::new() };

    // Parameters shadow module-scope names for the whole body.
    let sig = &func.signature;
    for p in sig.returns.iter().chain(sig.params.iter()).flatten() {
        if let Some(id) = names.get(&src[p.decl.name.range()]) {
            shadows.stack.push((id, 0));
        }
    }
    // Labels are visible in the whole function, before and after their definition.
    // Inside a body, `name :` is always a label (PTX instructions have no `?:`).
    for (i, t) in toks.iter().enumerate() {
        if t.kind == TokenKind::Ident
            && toks
                .get(i + 1)
                .is_some_and(|n| n.kind == TokenKind::Punct && n.text(src) == b":")
        {
            let text = t.text(src);
            body_names.entry(text).or_insert((item, t.span()));
            if let Some(id) = names.get(text) {
                shadows.stack.push((id, 0));
            }
        }
    }

    let mut c = Cursor::new(file, src, toks);
    // Skip the opening `{`; the closing `}` is handled as a block end.
    c.bump();
    let mut depth = 1u32;
    while let Some(t) = c.peek() {
        match t.kind {
            TokenKind::Punct => match c.text(t) {
                b"{" => {
                    c.bump();
                    depth += 1;
                }
                b"}" => {
                    c.bump();
                    shadows.pop_depth(depth);
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b";" => {
                    // An empty statement.
                    c.bump();
                }
                b"@" => instruction(&mut c, names, &shadows, item, refs),
                _ => {
                    let msg = format!(
                        "expected an instruction or declaration, found {}",
                        c.found()
                    );
                    c.error(t.span(), msg);
                    skip_statement(&mut c);
                }
            },
            TokenKind::Ident => {
                if c.peek_at(1).is_some_and(|n| c.is_punct(n, b":")) {
                    // A label; the statement continues after it.
                    c.bump();
                    c.bump();
                } else {
                    instruction(&mut c, names, &shadows, item, refs);
                }
            }
            TokenKind::Directive => {
                directive(&mut c, names, &mut shadows, depth, item, refs, body_names);
            }
            _ => {
                let msg = format!(
                    "expected an instruction or declaration, found {}",
                    c.found()
                );
                c.error(t.span(), msg);
                skip_statement(&mut c);
            }
        }
    }
    errors.append(&mut c.errors);
}

/// Skips to just after the next `;`, or to a `}` that closes the current block.
fn skip_statement(c: &mut Cursor) {
    let mut depth = 0u32;
    while let Some(t) = c.peek() {
        if t.kind == TokenKind::Punct {
            match c.text(t) {
                b";" if depth == 0 => {
                    c.bump();
                    return;
                }
                b"{" => depth += 1,
                b"}" if depth == 0 => return,
                b"}" => depth -= 1,
                _ => {}
            }
        }
        c.bump();
    }
}

fn use_ident(
    c: &Cursor,
    t: Token,
    kind: RefKind,
    names: &Names,
    shadows: &Shadows,
    item: ItemId,
    refs: &mut Vec<Reference>,
) {
    if let Some(symbol) = names.get(c.text(t)) {
        if !shadows.contains(symbol) {
            refs.push(Reference {
                span: t.span(),
                symbol,
                item,
                kind,
            });
        }
    }
}

/// `[@[!]guard] opcode{.mod} operands ;`
fn instruction(
    c: &mut Cursor,
    names: &Names,
    shadows: &Shadows,
    item: ItemId,
    refs: &mut Vec<Reference>,
) {
    if c.eat_punct(b"@") {
        c.eat_punct(b"!");
        match c.peek() {
            Some(g) if g.kind == TokenKind::Ident => {
                c.bump();
                use_ident(c, g, RefKind::Operand, names, shadows, item, refs);
            }
            _ => {
                c.expected("a predicate after `@`");
                skip_statement(c);
                return;
            }
        }
    }
    let Some(op) = c.peek().filter(|t| t.kind == TokenKind::Ident) else {
        c.expected("an instruction opcode");
        skip_statement(c);
        return;
    };
    c.bump();
    let kind = if c.text(op) == b"call" {
        RefKind::Call
    } else {
        RefKind::Operand
    };
    operands(c, kind, names, shadows, item, refs, "instruction");
}

/// Scans operands up to the terminating `;`, recording references.
fn operands(
    c: &mut Cursor,
    kind: RefKind,
    names: &Names,
    shadows: &Shadows,
    item: ItemId,
    refs: &mut Vec<Reference>,
    what: &str,
) {
    let mut depth = 0u32;
    while let Some(t) = c.peek() {
        match t.kind {
            TokenKind::Ident => use_ident(c, t, kind, names, shadows, item, refs),
            TokenKind::Punct => match c.text(t) {
                b";" if depth == 0 => {
                    c.bump();
                    return;
                }
                b"{" => depth += 1,
                b"}" if depth == 0 => {
                    let span = c.after_prev();
                    c.error(span, format!("expected `;` to end the {what}"));
                    return;
                }
                b"}" => depth -= 1,
                _ => {}
            },
            _ => {}
        }
        c.bump();
    }
    let span = c.after_prev();
    c.error(span, format!("expected `;` to end the {what}"));
}

fn directive<'s>(
    c: &mut Cursor<'s>,
    names: &Names,
    shadows: &mut Shadows,
    depth: u32,
    item: ItemId,
    refs: &mut Vec<Reference>,
    body_names: &mut FxHashMap<&'s [u8], (ItemId, Span)>,
) {
    let t = c.peek().expect("directive() at end");
    let text = c.text(t);
    if StateSpace::from_directive(text).is_some() || text == b".attribute" || text == b".align" {
        declaration(c, names, shadows, depth, item, refs, body_names);
        return;
    }
    match text {
        b".loc" => {
            c.bump();
            match loc_args(c) {
                Ok(Some(label)) => {
                    if let Some(symbol) = names.get(&c.src[label.range()]) {
                        refs.push(Reference {
                            span: label,
                            symbol,
                            item,
                            kind: RefKind::DebugLoc,
                        });
                    }
                }
                Ok(None) => {}
                Err(_) => skip_statement(c),
            }
        }
        b".pragma" => {
            if super::items::pragma(c).is_err() {
                skip_statement(c);
            }
        }
        b".calltargets" => {
            c.bump();
            operands(
                c,
                RefKind::CallTarget,
                names,
                shadows,
                item,
                refs,
                "`.calltargets` list",
            );
        }
        b".branchtargets" | b".callprototype" => {
            c.bump();
            skip_statement(c);
        }
        b".file" => {
            c.error_help(
                t.span(),
                "`.file` is only allowed at module scope, not inside a function body",
                "this looks like raw GCC nvptx output; run it through `nvptx-none-as` first",
            );
            c.bump();
            // `.file N "name"` has no terminating `;`.
            if c.at_kind(TokenKind::Int) {
                c.bump();
            }
            if c.at_kind(TokenKind::String) {
                c.bump();
            }
        }
        _ => {
            let msg = format!(
                "unexpected directive `{}` in a function body",
                String::from_utf8_lossy(text)
            );
            c.error(t.span(), msg);
            c.bump();
            skip_statement(c);
        }
    }
}

/// A scoped declaration: `.reg .b32 %r<5>;`, `.local .align 8 .b8 depot[16];`,
/// `.shared .u32 x = 1;`. Declared names shadow module-scope names until the block ends.
fn declaration<'s>(
    c: &mut Cursor<'s>,
    names: &Names,
    shadows: &mut Shadows,
    depth: u32,
    item: ItemId,
    refs: &mut Vec<Reference>,
    body_names: &mut FxHashMap<&'s [u8], (ItemId, Span)>,
) {
    let start = c.pos;
    // Skip the type specifier directives (and `.attribute(...)`, `.align N`).
    while let Some(t) = c.peek() {
        match t.kind {
            TokenKind::Directive => {
                c.bump();
                if c.text(t) == b".align" && c.at_kind(TokenKind::Int) {
                    c.bump();
                }
                if c.text(t) == b".attribute" && c.at_punct(b"(") {
                    while !c.at_end() && !c.at_punct(b")") {
                        c.bump();
                    }
                    c.eat_punct(b")");
                }
            }
            _ => break,
        }
    }
    if c.pos == start + 1 && !c.at_kind(TokenKind::Ident) {
        c.expected("a type and a name in the declaration");
        skip_statement(c);
        return;
    }
    loop {
        let Some(name) = c.peek().filter(|t| t.kind == TokenKind::Ident) else {
            c.expected("a name in the declaration");
            skip_statement(c);
            return;
        };
        c.bump();
        // Debug sections may name function-scope variables (`__local_depot0`).
        body_names
            .entry(c.text(name))
            .or_insert((item, name.span()));
        if let Some(id) = names.get(c.text(name)) {
            shadows.stack.push((id, depth));
        }
        // `<N>` and `[N]` suffixes.
        while let Some(t) = c.peek() {
            if c.is_punct(t, b"<") || c.is_punct(t, b"[") {
                let close: &[u8] = if c.is_punct(t, b"<") { b">" } else { b"]" };
                while let Some(u) = c.peek() {
                    c.bump();
                    if c.is_punct(u, close) {
                        break;
                    }
                }
            } else {
                break;
            }
        }
        if c.eat_punct(b"=") {
            // Initializer: identifiers in it are uses.
            operands_until_comma_or_semi(c, names, shadows, item, refs);
        }
        if c.eat_punct(b",") {
            continue;
        }
        if c.eat_punct(b";") {
            return;
        }
        let span = c.after_prev();
        c.error(span, "expected `;` to end the declaration");
        skip_statement(c);
        return;
    }
}

fn operands_until_comma_or_semi(
    c: &mut Cursor,
    names: &Names,
    shadows: &Shadows,
    item: ItemId,
    refs: &mut Vec<Reference>,
) {
    let mut depth = 0u32;
    while let Some(t) = c.peek() {
        match t.kind {
            TokenKind::Ident => use_ident(c, t, RefKind::Operand, names, shadows, item, refs),
            TokenKind::Punct => match c.text(t) {
                b"{" | b"(" => depth += 1,
                b"}" | b")" if depth > 0 => depth -= 1,
                b"," | b";" if depth == 0 => return,
                b"}" => return,
                _ => {}
            },
            _ => {}
        }
        c.bump();
    }
}
