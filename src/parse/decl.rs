//! Declarations: type specifiers, declarators, parameter lists.

use super::cursor::{Cursor, PResult};
use super::expr::initializer;
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    element_bytes, known_size, Declarator, Param, ParamSpec, PtrAttr, StateSpace, Type, TypeClass,
    TypeSpec,
};
use crate::lex::{Token, TokenKind};
use crate::source::Span;

/// The largest `.align` ptxas accepts (12.9; `.align 4294967296` is "Constant
/// overflow" there, 2^31 is taken): the largest power of two of 32 bits.
const MAX_ALIGN: u64 = 1 << 31;

/// Refuses a declaration of `name` whose size in bytes does not fit 64 bits: it
/// would wrap (ptxas gives `.b32 x[4611686018427387905]` 4 bytes), and a variable
/// of 2^64 + 4 bytes would then bind to a 4-byte extern. Unknown (`[]`) dimensions
/// count as one.
pub(crate) fn check_size(
    c: &mut Cursor,
    ty: Type,
    vector: Option<u8>,
    dims: &[Option<u64>],
    at: Span,
) -> PResult<()> {
    let elem = element_bytes(ty, vector);
    if known_size(elem, dims).is_some() {
        return Ok(());
    }
    let shown: String = dims
        .iter()
        .map(|d| d.map_or("[]".to_string(), |n| format!("[{n}]")))
        .collect();
    Err(c.error(
        at,
        format!(
            "size too large: {shown} elements of {elem} bytes make 2^64 bytes or more; \
             no object can be that large"
        ),
    ))
}

/// Parses the directives before a declared name: state space, `.align`, vector,
/// type, `.ptr` attributes, `.attribute(.managed)`, in any order producers use.
/// `space` is the state space if the caller already consumed it.
pub(crate) fn type_spec(c: &mut Cursor, mut space: Option<StateSpace>) -> PResult<TypeSpec> {
    let start = c.here();
    let mut space_span = if space.is_some() {
        c.prev().map(|t| t.span()).unwrap_or_default()
    } else {
        Span::default()
    };
    let mut align_span = None;
    let mut align = None;
    let mut vector = None;
    let mut ty: Option<(Type, Span)> = None;
    let mut ptr: Option<PtrAttr> = None;
    let mut managed = false;
    while let Some(t) = c.peek() {
        if t.kind != TokenKind::Directive {
            break;
        }
        let text = c.text(t);
        if text == b".align" {
            c.bump();
            let (n, span) = c.expect_int("an alignment after `.align`")?;
            if !n.is_power_of_two() {
                return Err(c.error(span, format!("alignment {n} is not a power of two")));
            }
            if n > MAX_ALIGN {
                return Err(c.error(
                    span,
                    format!("alignment {n} is too large: ptxas accepts at most {MAX_ALIGN} (2^31)"),
                ));
            }
            match &mut ptr {
                Some(p) => p.align = Some(n as u32),
                None => {
                    align = Some(n as u32);
                    align_span = Some(span);
                }
            }
        } else if let Some(s) = StateSpace::from_directive(text) {
            c.bump();
            match (&mut ptr, space) {
                (Some(p), _) if p.space.is_none() => p.space = Some(s),
                (None, None) => {
                    space = Some(s);
                    space_span = t.span();
                }
                _ => return Err(c.error(t.span(), "more than one state space in declaration")),
            }
        } else if let Some(n) = vector_width(text) {
            c.bump();
            if vector.is_some() {
                return Err(c.error(t.span(), "more than one vector width in declaration"));
            }
            if ty.is_some() {
                // ptxas: "Parsing error near '.v2'".
                return Err(c.error(t.span(), "a vector width goes before the type"));
            }
            vector = Some(n);
        } else if let Some(parsed) = Type::from_directive(text) {
            c.bump();
            if ty.is_some() {
                return Err(c.error(t.span(), "more than one type in declaration"));
            }
            ty = Some((parsed, t.span()));
        } else if text == b".ptr" {
            c.bump();
            ptr = Some(PtrAttr {
                space: None,
                align: None,
            });
        } else if text == b".attribute" {
            c.bump();
            c.expect_punct(b"(")?;
            loop {
                let a = c.peek();
                match a {
                    Some(a) if a.kind == TokenKind::Directive && c.text(a) == b".managed" => {
                        c.bump();
                        managed = true;
                    }
                    Some(a) if a.kind == TokenKind::Directive && c.text(a) == b".unified" => {
                        // `.unified(uuid1, uuid2)`
                        c.bump();
                        if c.eat_punct(b"(") {
                            while !c.at_end() && !c.at_punct(b")") {
                                c.bump();
                            }
                            c.expect_punct(b")")?;
                        }
                    }
                    _ => return Err(c.expected("`.managed` or `.unified` in `.attribute(...)`")),
                }
                if !c.eat_punct(b",") {
                    break;
                }
            }
            c.expect_punct(b")")?;
        } else {
            break;
        }
    }
    let Some(space) = space else {
        let msg = format!(
            "expected a state space (`.global`, `.param`, ...), found {}",
            c.found()
        );
        return Err(c.error(start, msg));
    };
    let Some((ty, ty_span)) = ty else {
        return Err(c.expected("a type (`.u32`, `.b8`, `.f64`, ...)"));
    };
    Ok(TypeSpec {
        space,
        align,
        vector,
        ty,
        ptr,
        managed,
        ty_span,
        space_span,
        align_span,
    })
}

fn vector_width(text: &[u8]) -> Option<u8> {
    match text {
        b".v2" => Some(2),
        b".v4" => Some(4),
        b".v8" => Some(8),
        _ => None,
    }
}

/// Reports what ptxas refuses in a variable declared with `spec` and `decl` (at
/// module scope or in a body; `external` for `.extern`): an initializer outside
/// `.global` and `.const` or on an external variable ("No initial value is allowed"),
/// a `.pred` outside `.reg` ("Predicate variable must be in register state space"),
/// and an array of unknown size that no initializer sizes ("Non-external variable has
/// incomplete type", "Array of incomplete type"). docs/linking.md ("Declarations
/// checked in each module") has the experiments.
pub(crate) fn check_variable(c: &mut Cursor, spec: &TypeSpec, decl: &Declarator, external: bool) {
    // The name, for messages only: `{name}` formats it (most declarations have
    // none, and an allocation per declaration shows in a link's profile).
    let name = Lossy(&c.src[decl.name.range()]);
    let mut refuse = |span: Span, msg: String| {
        c.errors
            .push(Diagnostic::error(Code::Declaration, c.file, span, msg));
    };
    if let Some(init) = &decl.init {
        if external {
            refuse(
                init.span,
                format!("`{name}` is `.extern`: an external variable has no initializer"),
            );
        } else if !matches!(spec.space, StateSpace::Global | StateSpace::Const) {
            refuse(
                init.span,
                format!(
                    "`{name}` is in `{}`: only `.global` and `.const` variables have initializers",
                    spec.space.as_str()
                ),
            );
        }
    }
    if spec.ty.class == TypeClass::Pred && spec.space != StateSpace::Reg {
        refuse(
            spec.ty_span,
            format!("`{name}` is a `.pred`, which only `.reg` can hold"),
        );
    }
    let unknown = |d: &Option<u64>| d.is_none_or(|n| n == 0);
    if decl.dims.iter().skip(1).any(unknown) {
        refuse(
            decl.span,
            format!("`{name}` is an array of arrays of unknown size"),
        );
    } else if decl.dims.first().is_some_and(unknown) && decl.init.is_none() && !external {
        refuse(
            decl.span,
            format!(
                "`{name}` has no size: an array of unknown size needs an initializer, or `.extern`"
            ),
        );
    }
}

/// Bytes shown as text, lossily, without a copy until shown.
#[derive(Clone, Copy)]
pub(super) struct Lossy<'a>(pub &'a [u8]);

impl std::fmt::Display for Lossy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

/// Parses `name [<N>] [dims] [= init]`.
pub(crate) fn declarator(c: &mut Cursor, allow_init: bool) -> PResult<Declarator> {
    let name = c.expect_ident("a name")?.span();
    let mut reg_count = None;
    if c.at_punct(b"<") {
        c.bump();
        let (n, span) = c.expect_int("a register count")?;
        if n > u32::MAX as u64 {
            return Err(c.error(span, "register count too large"));
        }
        reg_count = Some(n as u32);
        c.expect_punct(b">")?;
    }
    let mut dims = Vec::new();
    while c.eat_punct(b"[") {
        if c.eat_punct(b"]") {
            dims.push(None);
            continue;
        }
        let (n, _) = c.expect_int("an array size or `]`")?;
        dims.push(Some(n));
        c.expect_punct(b"]")?;
    }
    let mut init = None;
    if c.at_punct(b"=") {
        if !allow_init {
            let span = c.here();
            return Err(c.error(span, "initializers are not allowed here"));
        }
        c.bump();
        init = Some(initializer(c, &dims)?);
    }
    Ok(Declarator {
        name,
        dims,
        reg_count,
        init,
        span: name.to(c.after_prev()),
    })
}

/// A declaration of the shape most declarations in bodies and parameter lists
/// have, `space [.align N] .type name [[N]]` followed by `,`, `;` or `)`, read by
/// [`plain_declaration`].
pub(crate) struct Plain {
    space: StateSpace,
    space_span: Span,
    /// `.align N`: `N` and its span.
    align: Option<(u32, Span)>,
    ty: Type,
    ty_span: Span,
    name: Span,
    /// `[N]`: `N`.
    dim: Option<u64>,
    /// The declarator's last token: the name or the `]`.
    last: Span,
    /// The position of the `,`, `;` or `)` after it.
    pub end: usize,
}

impl Plain {
    /// What [`type_spec`] makes of it.
    pub fn spec(&self) -> TypeSpec {
        TypeSpec {
            space: self.space,
            align: self.align.map(|(n, _)| n),
            vector: None,
            ty: self.ty,
            ptr: None,
            managed: false,
            ty_span: self.ty_span,
            space_span: self.space_span,
            align_span: self.align.map(|(_, span)| span),
        }
    }

    /// What [`declarator`] makes of it.
    pub fn declarator(&self) -> Declarator {
        Declarator {
            name: self.name,
            dims: self.dims(),
            reg_count: None,
            init: None,
            span: self.name.to(self.last),
        }
    }

    fn dims(&self) -> Vec<Option<u64>> {
        match self.dim {
            Some(n) => vec![Some(n)],
            None => Vec::new(),
        }
    }
}

/// Reads a declaration of the shape most declarations in bodies and parameter
/// lists have (see [`Plain`]) in one step, without consuming it: the general
/// parsers cost several times more per declaration, and a link reads hundreds of
/// thousands of these. `None` for any other shape, and wherever [`type_spec`] or
/// [`declarator`] would report something (an alignment that is no power of two or
/// too large, a number past 64 bits), so that they read it. Where it answers, they
/// would make the same of it (`type_spec(c, None)`, or `type_spec(c, Some(space))`
/// after the space) and stop at the same token.
pub(crate) fn plain_declaration(c: &Cursor) -> Option<Plain> {
    use TokenKind::{Directive, Ident, Int, Punct};
    let src = c.src;
    let toks = c.toks.get(c.pos..c.end)?;
    let is_byte = |t: &Token, b: u8| {
        t.kind == Punct && t.hi == t.lo + 1 && src.get(t.lo as usize) == Some(&b)
    };
    let (space_tok, mut rest) = toks.split_first()?;
    if space_tok.kind != Directive {
        return None;
    }
    let space = StateSpace::from_directive(space_tok.text(src))?;
    let mut align = None;
    if let [a, n, more @ ..] = rest {
        if a.kind == Directive && n.kind == Int && a.text(src) == b".align" {
            let value = c.int_value(*n)?;
            if !value.is_power_of_two() || value > MAX_ALIGN {
                return None;
            }
            align = Some((value as u32, n.span()));
            rest = more;
        }
    }
    let [ty_tok, name_tok, rest @ ..] = rest else {
        return None;
    };
    if ty_tok.kind != Directive || name_tok.kind != Ident {
        return None;
    }
    let ty = Type::from_directive(ty_tok.text(src))?;
    let (dim, last, rest) = match rest {
        [open, n, close, more @ ..]
            if is_byte(open, b'[') && n.kind == Int && is_byte(close, b']') =>
        {
            (Some(c.int_value(*n)?), close.span(), more)
        }
        _ => (None, name_tok.span(), rest),
    };
    let next = rest.first()?;
    if !(is_byte(next, b',') || is_byte(next, b';') || is_byte(next, b')')) {
        return None;
    }
    Some(Plain {
        space,
        space_span: space_tok.span(),
        align,
        ty,
        ty_span: ty_tok.span(),
        name: name_tok.span(),
        dim,
        last,
        end: c.pos + (toks.len() - rest.len()),
    })
}

/// Parses a parenthesized parameter list `( .param .b32 a, .reg .u64 b )` onto
/// the end of `params`. The cursor is at `(`.
pub(crate) fn param_list(c: &mut Cursor, params: &mut Vec<Param>) -> PResult<()> {
    c.expect_punct(b"(")?;
    if c.eat_punct(b")") {
        return Ok(());
    }
    loop {
        let start = c.here();
        if let Some(plain) = plain_declaration(c) {
            if matches!(plain.space, StateSpace::Param | StateSpace::Reg) {
                c.pos = plain.end;
                // A scalar's size is its type's, which always fits.
                let dims = plain.dims();
                if !dims.is_empty() {
                    check_size(c, plain.ty, None, &dims, plain.name.to(plain.last))?;
                }
                let spec = ParamSpec {
                    ty: plain.ty,
                    space: plain.space,
                    vector: None,
                    align: plain.align.map(|(n, _)| n),
                    ptr: None,
                };
                let span = start.to(plain.last);
                params.push(Param::new(spec, plain.name, dims, span));
                if c.eat_punct(b")") {
                    return Ok(());
                }
                if !c.eat_punct(b",") {
                    return Err(c.expected("`,` or `)` in parameter list"));
                }
                continue;
            }
        }
        let space = match c.peek() {
            Some(t) if t.kind == TokenKind::Directive => {
                match StateSpace::from_directive(c.text(t)) {
                    Some(s @ (StateSpace::Param | StateSpace::Reg)) => {
                        c.bump();
                        s
                    }
                    _ => return Err(c.expected("`.param` or `.reg`")),
                }
            }
            _ => return Err(c.expected("a parameter (`.param` or `.reg`)")),
        };
        let spec = type_spec(c, Some(space))?;
        let decl = declarator(c, false)?;
        check_size(c, spec.ty, spec.vector, &decl.dims, decl.span)?;
        let span = start.to(c.after_prev());
        params.push(Param::new(
            ParamSpec::from(&spec),
            decl.name,
            decl.dims,
            span,
        ));
        if c.eat_punct(b")") {
            return Ok(());
        }
        if !c.eat_punct(b",") {
            return Err(c.expected("`,` or `)` in parameter list"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::FileId;

    /// Where [`plain_declaration`] answers, the general parsers make the same of the
    /// declaration, report nothing and stop at the same token; where they report
    /// something, it does not answer.
    #[test]
    fn plain_declarations_read_as_the_general_parsers_read_them() {
        let answered = [
            ".reg .b32 r;",
            ".param .b64 param0;",
            ".param .b32 p, q;",
            ".local .align 8 .b8 depot[16];",
            ".param .align 16 .b8 retval0[24];",
            ".shared .f32 x[0];",
            ".global .u32 g[0x10];",
            ".param .u64 a)",
            ".reg .pred %p;",
            ".param .align 2147483648 .b8 big[4];",
            ".const .b8 huge[18446744073709551615];",
            ".reg .b32 r [4];x",
        ];
        let declined = [
            ".reg .b32 r",
            ".reg .b32 r<4>;",
            ".reg .v2 .b32 v;",
            ".reg .b32 r = 1;",
            ".global .b8 a[];",
            ".global .b8 a[2][3];",
            ".local .align 3 .b8 d[4];",
            ".local .align 4294967296 .b8 d[4];",
            ".local .align 0 .b8 d[4];",
            ".local .align 8 .b8 d[99999999999999999999];",
            ".align 8 .local .b8 d[4];",
            ".local .b8 .align 8 d[4];",
            ".param .ptr .b64 p;",
            ".param .b32 .b32 p;",
            ".reg .b32 .reg r;",
            ".attribute(.managed) .global .b32 m;",
            ".b32 r;",
            ".reg r;",
            ".reg .b32 r:",
        ];
        let read = |text: &str, plain: bool| {
            let lexed = crate::lex::lex(FileId(0), text.as_bytes());
            let mut c = Cursor::new(FileId(0), text.as_bytes(), &lexed.tokens);
            if plain {
                let p = plain_declaration(&c)?;
                c.pos = p.end;
                return Some((p.spec(), p.declarator(), c.pos));
            }
            let spec = type_spec(&mut c, None).ok()?;
            let decl = declarator(&mut c, true).ok()?;
            c.errors.is_empty().then_some((spec, decl, c.pos))
        };
        for text in answered {
            let plain = read(text, true);
            assert!(plain.is_some(), "{text}");
            assert_eq!(plain, read(text, false), "{text}");
        }
        for text in declined {
            assert_eq!(read(text, true), None, "{text}");
        }
    }
}
