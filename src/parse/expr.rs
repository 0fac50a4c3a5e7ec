//! Initializers and constant expressions.
//!
//! The parser checks the shape (balanced braces, operands between operators) and
//! collects the identifiers, which name symbols: `x`, `generic(x)`, `x + 8`.

use super::cursor::{Cursor, PResult};
use crate::diag::{Code, Diagnostic};
use crate::ir::{Initializer, Type};
use crate::lex::TokenKind;
use crate::source::Span;

/// Parses an initializer after `=`: a constant expression or a `{ ... }` list, for a
/// declarator with array dimensions `dims`.
pub(crate) fn initializer(c: &mut Cursor, dims: &[Option<u64>]) -> PResult<Initializer> {
    let start = c.here();
    let mut refs = Vec::new();
    init_value(c, &mut refs, 0, dims)?;
    Ok(Initializer {
        span: start.to(c.after_prev()),
        symbol_refs: refs,
    })
}

const MAX_NESTING: u32 = 256;

/// A `{ ... }` list at brace level `depth` may have at most `dims[depth]` elements
/// (ptxas: "Greater number of elements in array initializer", also for a flat list
/// of a many-dimensional array); levels past the dimensions are vector components.
fn init_value(
    c: &mut Cursor,
    refs: &mut Vec<Span>,
    depth: u32,
    dims: &[Option<u64>],
) -> PResult<()> {
    if depth > MAX_NESTING {
        let span = c.here();
        return Err(c.error(span, "initializer nested too deeply"));
    }
    if c.eat_punct(b"{") {
        if c.eat_punct(b"}") {
            return Ok(());
        }
        // A dimension of 0 with an initializer is sized by it, as `[]` is (ptxas
        // 12.9 assembles `.global .u64 a[0] = {1, 2, 3};`).
        let limit = dims
            .get(depth as usize)
            .copied()
            .flatten()
            .filter(|&n| n > 0);
        let mut elements = 0u64;
        loop {
            elements += 1;
            if limit.is_some_and(|n| elements == n + 1) {
                let span = c.here();
                c.errors.push(Diagnostic::error(
                    Code::InitializerSize,
                    c.file,
                    span,
                    format!(
                        "more elements than the array's {} in this initializer list",
                        limit.unwrap_or(0)
                    ),
                ));
            }
            if depth < MAX_NESTING && is_plain_number(c) {
                // What `init_value` reads of a lone number, in one step: most
                // elements are bytes of a string or a table.
                c.bump();
            } else if is_field_init(c) {
                // Sampler/texture fields: `{ addr_mode_0 = wrap, filter_mode = linear }`.
                c.bump();
                c.bump();
                match c.peek() {
                    Some(t) if matches!(t.kind, TokenKind::Ident | TokenKind::Int) => {
                        c.bump();
                    }
                    _ => return Err(c.expected("a value for the sampler field")),
                }
            } else {
                init_value(c, refs, depth + 1, dims)?;
            }
            if c.eat_punct(b"}") {
                return Ok(());
            }
            if !c.eat_punct(b",") {
                return Err(c.expected("`,` or `}` in initializer list"));
            }
        }
    }
    expr(c, refs, false, depth)
}

/// A number alone in its element: an integer or float followed by `,` or `}`.
fn is_plain_number(c: &Cursor) -> bool {
    c.peek()
        .is_some_and(|t| matches!(t.kind, TokenKind::Int | TokenKind::Float))
        && c.peek_at(1)
            .is_some_and(|t| c.is_punct(t, b",") || c.is_punct(t, b"}"))
}

fn is_field_init(c: &Cursor) -> bool {
    c.at_kind(TokenKind::Ident) && c.peek_at(1).is_some_and(|t| c.is_punct(t, b"="))
}

/// Parses a constant expression. With `section_data`, section names (`.debug_abbrev`)
/// are operands too, as in DWARF data.
pub(crate) fn expr(
    c: &mut Cursor,
    refs: &mut Vec<Span>,
    section_data: bool,
    depth: u32,
) -> PResult<()> {
    unary(c, refs, section_data, depth)?;
    while let Some(t) = c.peek() {
        if t.kind != TokenKind::Punct || !is_binop(c.text(t)) {
            break;
        }
        c.bump();
        if c.text(t) == b"?" {
            expr(c, refs, section_data, depth + 1)?;
            c.expect_punct(b":")?;
        }
        unary(c, refs, section_data, depth)?;
    }
    Ok(())
}

/// True for the binary operators of PTX constant expressions.
pub(crate) fn is_binop(p: &[u8]) -> bool {
    matches!(
        p,
        b"+" | b"-"
            | b"*"
            | b"/"
            | b"%"
            | b"<<"
            | b">>"
            | b"&"
            | b"|"
            | b"^"
            | b"&&"
            | b"||"
            | b"=="
            | b"!="
            | b"<"
            | b">"
            | b"<="
            | b">="
            | b"?"
    )
}

fn unary(c: &mut Cursor, refs: &mut Vec<Span>, section_data: bool, depth: u32) -> PResult<()> {
    if depth > MAX_NESTING {
        let span = c.here();
        return Err(c.error(span, "expression nested too deeply"));
    }
    let Some(t) = c.peek() else {
        return Err(c.expected("an expression"));
    };
    match t.kind {
        TokenKind::Int | TokenKind::Float => {
            c.bump();
            Ok(())
        }
        TokenKind::Ident => {
            c.bump();
            let text = c.text(t);
            if matches!(text, b"generic" | b"mask") && c.at_punct(b"(") {
                c.bump();
                let name = c.expect_ident("a symbol name in `generic(...)`")?;
                refs.push(name.span());
                c.expect_punct(b")")?;
            } else {
                refs.push(t.span());
            }
            Ok(())
        }
        TokenKind::Directive if section_data => {
            c.bump();
            Ok(())
        }
        TokenKind::Punct => {
            let p = c.text(t);
            if matches!(p, b"-" | b"+" | b"!" | b"~") {
                c.bump();
                return unary(c, refs, section_data, depth + 1);
            }
            if p == b"(" {
                c.bump();
                // A cast: `(.s64) expr`.
                if let Some(ty) = c.peek() {
                    if ty.kind == TokenKind::Directive && Type::from_directive(c.text(ty)).is_some()
                    {
                        c.bump();
                        c.expect_punct(b")")?;
                        return unary(c, refs, section_data, depth + 1);
                    }
                }
                expr(c, refs, section_data, depth + 1)?;
                c.expect_punct(b")")?;
                return Ok(());
            }
            Err(c.expected("an expression"))
        }
        _ => Err(c.expected("an expression")),
    }
}
