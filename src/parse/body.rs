//! Walks a function body statement by statement to find references to module-scope
//! symbols, honouring function-scope declarations that shadow them.
//!
//! The walk is shallow: it knows statement boundaries (`;`), labels (`L:`), guards
//! (`@p`, `@!p`), blocks (`{ }`), scoped declarations (`.reg`, `.local`, `.shared`,
//! `.param`, ...), `.loc`, `.pragma`, `.callprototype`, `.calltargets` and
//! `.branchtargets`. Opcodes are never references; every other identifier that names
//! a module-scope symbol and is not shadowed is one.

use std::num::NonZeroU64;

use rustc_hash::FxHashMap;

use super::calls::operand_refusal;
use super::cursor::Cursor;
use super::decl::{check_variable, declarator, plain_declaration, type_spec};
use super::items::{loc_args, pragma};
use super::names::Names;
use super::scope::{Local, Scope};
use crate::diag::{Code, Diagnostic};
use crate::ir::{
    CallOperand, CallSite, FuncDecl, ItemId, LocalParam, Locs, Param, RefKind, Reference,
    StateSpace, SymbolId,
};
use crate::lex::{clashes, declares, instruction_slip, Def, Token, TokenKind};
use crate::source::{FileId, Span};

/// Names defined inside bodies (labels, function-scope variables), for debug sections
/// that refer to them: name → (function, first definition).
pub(crate) type BodyNames<'s> = FxHashMap<&'s [u8], (ItemId, Span)>;

/// The state of one body walk.
struct Walker<'s, 'r, 't> {
    /// Over the body's tokens, which may live shorter than the source text.
    c: Cursor<'t>,
    src: &'s [u8],
    names: &'r Names<'s>,
    item: ItemId,
    /// The function's return parameters and parameters: they shadow module-scope
    /// names in the whole body, and calls may pass them (after every variable in
    /// `scope`, which they enclose).
    params: &'r [Param],
    /// The walk's arrays.
    s: &'r mut Scratch,
    /// Whether `s.label_shadows` holds the body's labels: they are looked for only
    /// when the body names a module-scope symbol, or for the debug sections'
    /// `body_names`.
    labels_known: bool,
    depth: u32,
    refs: &'r mut Vec<Reference>,
    /// `None` when no debug section could refer into a body.
    body_names: Option<&'r mut BodyNames<'s>>,
    locs: &'r mut Locs,
    calls: &'r mut Vec<CallSite>,
    legacy_warp_op: &'r mut Option<Span>,
    /// The tokens are the body's every token, so the walk checks each instruction's
    /// operand grammar; a compactly lexed body was checked by the lexer.
    complete: bool,
    /// In a compactly lexed body: every label and declaration the lexer saw, with
    /// its block (`lex::Def`), the plain register declarations it kept no token of
    /// among them.
    lexed_defs: &'t [Def],
    /// How many of `s.defs` are the function's parameters, once `parameters_known`
    /// (they come first); in a compactly lexed body they are added only when a
    /// definition may clash with one.
    parameters: usize,
    parameters_known: bool,
}

/// Where the walk of one body reads from and writes to.
pub(crate) struct BodyCtx<'s, 'r> {
    pub src: &'s [u8],
    pub file: FileId,
    pub names: &'r Names<'s>,
    pub refs: &'r mut Vec<Reference>,
    pub body_names: Option<&'r mut BodyNames<'s>>,
    pub locs: &'r mut Locs,
    pub calls: &'r mut Vec<CallSite>,
    pub legacy_warp_op: &'r mut Option<Span>,
    pub errors: &'r mut Vec<Diagnostic>,
}

/// Walks the body whose tokens are `toks` (from its `{` through its `}`);
/// `compact` holds the lexer's definitions when they are not all of its tokens (a
/// compact lexing).
pub(crate) fn walk_body(
    cx: &mut BodyCtx<'_, '_>,
    item: ItemId,
    func: &FuncDecl,
    toks: &[Token],
    compact: Option<&[Def]>,
) {
    SCRATCH.with_borrow_mut(|s| {
        s.clear();
        walk(cx, item, func, toks, compact, s);
    });
}

fn walk<'t>(
    cx: &mut BodyCtx<'_, '_>,
    item: ItemId,
    func: &FuncDecl,
    toks: &'t [Token],
    compact: Option<&'t [Def]>,
    s: &mut Scratch,
) {
    let complete = compact.is_none();
    let src = cx.src;
    let mut w = Walker {
        c: Cursor::new(cx.file, src, toks),
        src,
        names: cx.names,
        item,
        params: func.signature.all(),
        s,
        labels_known: false,
        depth: 0,
        refs: cx.refs,
        body_names: cx.body_names.as_deref_mut(),
        locs: cx.locs,
        calls: cx.calls,
        legacy_warp_op: cx.legacy_warp_op,
        complete,
        lexed_defs: compact.unwrap_or_default(),
        parameters: 0,
        parameters_known: false,
    };
    if complete {
        w.define_parameters();
    }
    if w.body_names.is_some() {
        w.define_labels();
    }
    w.statements();
    // The parameters alone never clash: each name is kept once, in one block.
    let found = if w.s.defs.len() > w.parameters {
        clashes(src, &w.s.defs)
    } else {
        Vec::new()
    };
    for (later, earlier) in found {
        let (l, e) = (&w.s.defs[later], &w.s.defs[earlier]);
        let at = Span::new(l.lo, l.hi);
        let mut name = String::from_utf8_lossy(&src[at.range()]).into_owned();
        if let Some(n) = l.count {
            name = format!("{name}<{n}>");
        }
        w.c.errors.push(
            Diagnostic::error(
                Code::Redefinition,
                cx.file,
                at,
                format!("`{name}` is defined twice in this block"),
            )
            .with_note(cx.file, Span::new(e.lo, e.hi), "defined here first"),
        );
    }
    cx.errors.append(&mut w.c.errors);
}

/// The arrays of a walk, kept from body to body, cleared and not freed: most
/// bodies are small, and allocating and freeing them for each one showed in a
/// link's profile.
#[derive(Default)]
struct Scratch {
    /// Module-scope symbols that variables declared in the open blocks shadow, with
    /// the block depth that declared them.
    shadows: Vec<(SymbolId, u32)>,
    /// Module-scope symbols the body's labels shadow (in the whole function).
    label_shadows: Vec<SymbolId>,
    /// The names the walk sees defined (parameters, labels, variables), each with
    /// its block, for the clashes of `lex::clashes`.
    defs: Vec<Def>,
    /// The open blocks: the token index of each `{`.
    blocks: Vec<u32>,
    /// The function-scope variables in scope, for the calls that pass them.
    scope: Scope,
    /// A call list's elements: the token that stands for each, and whether it is
    /// the whole element.
    elements: Vec<(Token, bool)>,
}

impl Scratch {
    fn clear(&mut self) {
        self.shadows.clear();
        self.label_shadows.clear();
        self.defs.clear();
        self.blocks.clear();
        self.scope.clear();
    }
}

thread_local! {
    /// Each thread's arrays for [`walk_body`].
    static SCRATCH: std::cell::RefCell<Scratch> = const {
        std::cell::RefCell::new(Scratch {
            shadows: Vec::new(),
            label_shadows: Vec::new(),
            defs: Vec::new(),
            blocks: Vec::new(),
            scope: Scope::new(),
            elements: Vec::new(),
        })
    };
}

impl<'s> Walker<'s, '_, '_> {
    /// Adds the parameters to `defs`: they are defined in the body's outermost
    /// block (the `{` at token 0). A name used twice among them is the parser's to
    /// report, so each name is kept once, and they never clash among themselves.
    fn define_parameters(&mut self) {
        let (params, src) = (self.params, self.src);
        for (i, p) in params.iter().enumerate() {
            let name = &src[p.name.range()];
            if params[..i].iter().any(|q| &src[q.name.range()] == name) {
                continue;
            }
            self.s.defs.push(Def {
                scope: 0,
                lo: p.name.lo,
                hi: p.name.hi,
                count: None,
            });
        }
        self.parameters = self.s.defs.len();
        self.parameters_known = true;
    }

    /// Defines the body's labels, which are visible in the whole function, before
    /// and after their definition. Inside a body, `name :` is always a label (PTX
    /// instructions have no `?:`).
    fn define_labels(&mut self) {
        let (toks, src) = (self.c.toks, self.src);
        for pair in toks.windows(2) {
            let (t, n) = (pair[0], pair[1]);
            // The colon first: it is rare, and one byte.
            let colon = n.kind == TokenKind::Punct
                && src.get(n.lo as usize) == Some(&b':')
                && n.hi == n.lo + 1;
            if colon && t.kind == TokenKind::Ident {
                let text = t.text(src);
                if let Some(body_names) = self.body_names.as_deref_mut() {
                    body_names.entry(text).or_insert((self.item, t.span()));
                }
                if let Some(id) = self.names.get(text) {
                    self.s.label_shadows.push(id);
                }
            }
        }
        self.labels_known = true;
    }

    /// A name defined in the body at `depth`: it shadows a module-scope symbol of the
    /// same name until its block ends, and may be named by a debug section.
    fn define(&mut self, name: Span, depth: u32) {
        let text = &self.src[name.range()];
        if let Some(body_names) = self.body_names.as_deref_mut() {
            body_names.entry(text).or_insert((self.item, name));
        }
        if let Some(id) = self.names.get(text) {
            self.s.shadows.push((id, depth));
        }
    }

    /// Records that the current block defines the name at `span` (`count`: the `N`
    /// of `name<N>`).
    ///
    /// In a compactly lexed body the lexer has looked for clashes among every label
    /// and declaration already (`lex::compact`); the walk adds only what it alone
    /// knows, the parameters, so it keeps a definition there only if a parameter
    /// has its stem.
    fn define_in_block(&mut self, span: Span, count: Option<u32>) {
        if !self.complete {
            if !self.may_be_parameter(span, count) {
                return;
            }
            if !self.parameters_known {
                self.define_parameters();
            }
        }
        self.s.defs.push(Def {
            scope: self.s.blocks.last().copied().unwrap_or(0),
            lo: span.lo,
            hi: span.hi,
            count,
        });
    }

    /// Whether the name at `span` (`name<count>`) may clash with a parameter.
    fn may_be_parameter(&self, span: Span, count: Option<u32>) -> bool {
        let (src, name) = (self.src, &self.src[span.range()]);
        // `name<N>` declares longer names only; `declares` of a plain name is equality.
        let longer = count.is_some();
        self.params
            .iter()
            .any(|p| match p.name.len().cmp(&name.len()) {
                std::cmp::Ordering::Equal => &src[p.name.range()] == name,
                std::cmp::Ordering::Greater => {
                    longer && declares(name, count, &src[p.name.range()])
                }
                std::cmp::Ordering::Less => false,
            })
    }

    fn use_ident(&mut self, t: Token, kind: RefKind) {
        self.use_name(t.span(), kind);
    }

    /// A use of the name at `span`: a reference if it names a module-scope symbol
    /// that nothing in the body shadows.
    fn use_name(&mut self, span: Span, kind: RefKind) {
        let text = &self.src[span.range()];
        if let Some(symbol) = self.names.get(text) {
            if !self.shadowed(symbol, text) {
                self.refs.push(Reference {
                    span,
                    symbol,
                    item: self.item,
                    kind,
                });
            }
        }
    }

    /// Whether the module-scope `symbol`, named `text`, is shadowed here: by a
    /// variable of an open block, a parameter or a label.
    fn shadowed(&mut self, symbol: SymbolId, text: &[u8]) -> bool {
        if self.s.shadows.iter().any(|&(s, _)| s == symbol) {
            return true;
        }
        let src = self.src;
        if self.params.iter().any(|p| &src[p.name.range()] == text) {
            return true;
        }
        if !self.labels_known {
            self.define_labels();
        }
        self.s.label_shadows.contains(&symbol)
    }

    fn statements(&mut self) {
        // The body's own `{` opens depth 1; its `}` closes it and ends the walk.
        while let Some(t) = self.c.peek() {
            match t.kind {
                TokenKind::Punct => match self.c.punct_byte(t) {
                    Some(b'{') => {
                        self.s.blocks.push(self.c.pos as u32);
                        self.c.bump();
                        self.depth += 1;
                    }
                    Some(b'}') => {
                        self.s.blocks.pop();
                        self.c.bump();
                        let depth = self.depth;
                        while self.s.shadows.last().is_some_and(|&(_, d)| d >= depth) {
                            self.s.shadows.pop();
                        }
                        self.s.scope.close(depth);
                        self.depth -= 1;
                        if self.depth == 0 {
                            return;
                        }
                    }
                    // ptxas refuses an empty statement ("Parsing error near ';'").
                    Some(b';') => {
                        let t = self.c.bump();
                        self.c.error(
                            t.span(),
                            "`;` with no instruction before it: an empty statement",
                        );
                    }
                    Some(b'@') => self.instruction(),
                    _ => self.not_a_statement(),
                },
                TokenKind::Ident => {
                    if self.c.peek_at(1).is_some_and(|n| self.c.is_punct(n, b":")) {
                        // A label; the statement continues after it.
                        self.define_in_block(t.span(), None);
                        self.c.bump();
                        self.c.bump();
                    } else {
                        self.instruction();
                    }
                }
                TokenKind::Directive => self.directive(),
                _ => self.not_a_statement(),
            }
        }
    }

    /// Reports a token that cannot start a statement and skips the statement.
    fn not_a_statement(&mut self) {
        let msg = format!(
            "expected an instruction or declaration, found {}",
            self.c.found()
        );
        let span = self.c.here();
        self.c.error(span, msg);
        self.skip_statement();
    }

    /// Skips to just after the next `;`, or to a `}` that closes the current block.
    fn skip_statement(&mut self) {
        let c = &mut self.c;
        let mut depth = 0u32;
        while let Some(t) = c.peek() {
            match c.punct_byte(t) {
                Some(b';') if depth == 0 => {
                    c.bump();
                    return;
                }
                Some(b'{') => depth += 1,
                Some(b'}') if depth == 0 => return,
                Some(b'}') => depth -= 1,
                _ => {}
            }
            c.bump();
        }
    }

    /// `[@[!]guard] opcode{.mod} operands ;`
    fn instruction(&mut self) {
        let start = self.c.pos;
        if self.c.eat_punct(b"@") {
            self.c.eat_punct(b"!");
            match self.c.peek() {
                Some(g) if g.kind == TokenKind::Ident => {
                    self.c.bump();
                    self.use_ident(g, RefKind::Operand);
                }
                _ => {
                    self.c.expected("a predicate after `@`");
                    self.skip_statement();
                    return;
                }
            }
        }
        let Some(op) = self.c.peek().filter(|t| t.kind == TokenKind::Ident) else {
            self.c.expected("an instruction opcode");
            self.skip_statement();
            return;
        };
        self.c.bump();
        let opcode = self.c.text(op);
        if matches!(opcode, b"shfl" | b"vote") && self.legacy_warp_op.is_none() {
            let mut i = self.c.pos;
            let mut sync = false;
            while let Some(t) = self
                .c
                .toks
                .get(i)
                .filter(|t| t.kind == TokenKind::Directive)
            {
                sync |= t.text(self.c.src) == b".sync";
                i += 1;
            }
            if !sync {
                *self.legacy_warp_op = Some(op.span());
            }
        }
        if opcode == b"call" {
            let operands = self.c.pos;
            self.operands(RefKind::Call, "instruction");
            self.call_site(operands, self.c.pos);
        } else {
            self.operands(RefKind::Operand, "instruction");
        }
        let ended = self.c.prev().is_some_and(|t| self.c.is_punct(t, b";"));
        if self.complete && ended {
            let toks = &self.c.toks[start..self.c.pos];
            if let Some((k, slip)) = instruction_slip(self.src, toks) {
                let at = toks[k];
                let msg = slip.message(&String::from_utf8_lossy(self.c.text(at)));
                self.c.error(at.span(), msg);
            }
        }
    }

    /// A call's return value or argument, with its `.param` declaration in scope (a
    /// call names variables its block or an enclosing one declared before it). An
    /// identifier that is the whole `element` of its list is judged as ptxas judges
    /// it (`calls::operand_refusal`).
    fn operand(&mut self, span: Span, element: bool) -> CallOperand {
        let name = &self.src[span.range()];
        let found = self.lookup(name);
        let decl = match &found {
            Some((_, Local::Variable { param, .. })) => param.clone(),
            _ => None,
        };
        let found = found.as_ref().map(|(at, local)| (*at, local));
        if element {
            // Only an operand no variable or parameter declares may be a module-scope
            // symbol's name.
            let module_scope = found.is_none() && self.names.get(name).is_some();
            if found.is_some() || module_scope || !self.declared_unseen(span) {
                let refusal = operand_refusal(self.c.file, self.src, span, found, module_scope);
                self.c.errors.extend(refusal);
            }
        }
        CallOperand { span, decl }
    }

    /// The variable or parameter `name` names where the walk is, with the span of
    /// its declaration: the innermost variable, else a parameter (they enclose every
    /// block), the last-declared first.
    fn lookup(&self, name: &[u8]) -> Option<(Span, Local)> {
        let src = self.src;
        if let Some((at, local)) = self.s.scope.find(src, name) {
            return Some((at, local.clone()));
        }
        let p = self
            .params
            .iter()
            .rev()
            .find(|p| &src[p.name.range()] == name)?;
        let space = p.spec.space;
        Some((p.name, Local::Formal { space }))
    }

    /// Whether the `%`-name at `span`, absent from the walk's scope, is declared
    /// where it is used by a declaration the walk did not see: a compactly lexed
    /// body leaves plain register declarations out, but the lexer's definitions
    /// hold them, each with its block; a special register (`%laneid`) needs none.
    /// In a body lexed in full the scope holds every declaration.
    fn declared_unseen(&self, span: Span) -> bool {
        let name = &self.src[span.range()];
        if !name.starts_with(b"%") {
            return false;
        }
        if crate::isa::table().special_register(name) {
            return true;
        }
        // A block is known by the position of its `{` (the body's own at token 0).
        let at = span.lo;
        let open_blocks = || {
            std::iter::once(0)
                .chain(self.s.blocks.iter().copied())
                .map(|i| self.c.toks[i as usize].lo)
        };
        self.lexed_defs.iter().any(|d| {
            d.lo < at
                && declares(&self.src[d.lo as usize..d.hi as usize], d.count, name)
                && open_blocks().any(|b| b == d.scope)
        })
    }

    /// The elements of a call's list `toks` (inside its parentheses), as call
    /// operands: an identifier with its `.param` declaration, or the first token of
    /// an immediate or another operand. Each element counts, as ptxas counts them
    /// against the prototype. In an array of their exact size: most calls pass one
    /// or two, and an array grown by pushing starts with room for four
    /// (docs/performance.md); the elements are found once, into `elements`.
    fn call_operands(&mut self, toks: &[Token]) -> Box<[CallOperand]> {
        let src = self.src;
        let comma = |t: &Token| t.kind == TokenKind::Punct && t.text(src) == b",";
        let mut elements = std::mem::take(&mut self.s.elements);
        elements.clear();
        elements.extend(toks.split(comma).filter_map(|e| {
            let first = e.iter().find(|t| t.kind == TokenKind::Ident).or(e.first());
            first.map(|&t| (t, e.len() == 1))
        }));
        let operands = elements
            .iter()
            .map(|&(t, alone)| match t.kind {
                TokenKind::Ident => self.operand(t.span(), alone),
                _ => CallOperand {
                    span: t.span(),
                    decl: None,
                },
            })
            .collect();
        self.s.elements = elements;
        operands
    }

    /// Records the callee and arguments of `call[.uni] [(ret),] f[, (args)][, proto];`
    /// from the tokens `start..end` after the opcode.
    fn call_site(&mut self, start: usize, end: usize) {
        let toks = &self.c.toks[start..end];
        let src = self.c.src;
        let punct = |t: &Token, p: &[u8]| t.kind == TokenKind::Punct && t.text(src) == p;
        let mut i = 0;
        while toks.get(i).is_some_and(|t| t.kind == TokenKind::Directive) {
            i += 1;
        }
        // `(ret),`
        let mut rets = Box::default();
        if toks.get(i).is_some_and(|t| punct(t, b"(")) {
            let close = toks[i..]
                .iter()
                .position(|t| punct(t, b")"))
                .map_or(toks.len(), |k| i + k);
            rets = self.call_operands(&toks[i + 1..close]);
            i = close + 2;
        }
        let Some(callee) = toks.get(i).filter(|t| t.kind == TokenKind::Ident) else {
            return;
        };
        self.check_register_callee(callee.span());
        let mut args = Box::default();
        if toks.get(i + 1).is_some_and(|t| punct(t, b","))
            && toks.get(i + 2).is_some_and(|t| punct(t, b"("))
        {
            let list = &toks[i + 3..];
            let close = list
                .iter()
                .position(|t| punct(t, b")"))
                .unwrap_or(list.len());
            args = self.call_operands(&list[..close]);
        }
        self.calls.push(CallSite {
            item: self.item,
            callee: callee.span(),
            rets,
            args,
        });
    }

    /// Refuses the callee at `span` if it is a `%`-name declared neither in the body
    /// nor at module scope: ptxas takes it for an indirect call's register and finds
    /// none ("Call to '%rd3' requires call prototype").
    fn check_register_callee(&mut self, span: Span) {
        let name = &self.src[span.range()];
        if !name.starts_with(b"%")
            || self.lookup(name).is_some()
            || self.names.get(name).is_some()
            || self.declared_unseen(span)
        {
            return;
        }
        let name = String::from_utf8_lossy(name);
        let d = Diagnostic::error(
            Code::CallArgument,
            self.c.file,
            span,
            format!(
                "call target `{name}` is not declared in this block or an enclosing one before \
                 the call (ptxas: \"Call to '{name}' requires call prototype\")"
            ),
        )
        .with_help(
            "declare the register that holds the function's address, or call the function by name",
        );
        self.c.errors.push(d);
    }

    /// Scans operands up to the terminating `;`, recording references.
    fn operands(&mut self, kind: RefKind, what: &str) {
        let mut depth = 0u32;
        while let Some(t) = self.c.peek() {
            match t.kind {
                TokenKind::Ident => self.use_ident(t, kind),
                TokenKind::Punct => match self.c.punct_byte(t) {
                    Some(b';') if depth == 0 => {
                        self.c.bump();
                        return;
                    }
                    Some(b'{') => depth += 1,
                    Some(b'}') if depth == 0 => break,
                    Some(b'}') => depth -= 1,
                    _ => {}
                },
                _ => {}
            }
            self.c.bump();
        }
        let span = self.c.after_prev();
        self.c
            .error(span, format!("expected `;` to end the {what}"));
    }

    fn directive(&mut self) {
        let t = self.c.peek().expect("directive() at end");
        let text = self.c.text(t);
        if StateSpace::from_directive(text).is_some() || text == b".attribute" || text == b".align"
        {
            self.declaration();
            return;
        }
        match text {
            b".loc" => {
                self.c.bump();
                let args = loc_args(&mut self.c, self.locs);
                self.locs.directives.push(t.span().to(self.c.after_prev()));
                match args {
                    Ok(Some(label)) => {
                        if let Some(symbol) = self.names.get(&self.c.src[label.range()]) {
                            self.refs.push(Reference {
                                span: label,
                                symbol,
                                item: self.item,
                                kind: RefKind::DebugLoc,
                            });
                        }
                    }
                    Ok(None) => {}
                    Err(_) => self.skip_statement(),
                }
            }
            b".pragma" => {
                if pragma(&mut self.c).is_err() {
                    self.skip_statement();
                }
            }
            b".calltargets" => {
                self.c.bump();
                self.operands(RefKind::CallTarget, "`.calltargets` list");
            }
            b".callprototype" => {
                self.c.bump();
                self.prototype_spaces();
                self.skip_statement();
            }
            b".branchtargets" => {
                self.c.bump();
                self.skip_statement();
            }
            b".file" => {
                self.c.error_help(
                    t.span(),
                    "`.file` is only allowed at module scope, not inside a function body",
                    "this looks like raw GCC nvptx output; run it through `nvptx-none-as` first",
                );
                self.c.bump();
                // `.file N "name"` has no terminating `;`.
                if self.c.at_kind(TokenKind::Int) {
                    self.c.bump();
                }
                if self.c.at_kind(TokenKind::String) {
                    self.c.bump();
                }
            }
            _ => {
                let msg = format!(
                    "unexpected directive `{}` in a function body",
                    String::from_utf8_lossy(text)
                );
                self.c.error(t.span(), msg);
                self.c.bump();
                self.skip_statement();
            }
        }
    }

    /// ptxas refuses a `.callprototype` parameter or return value outside `.param`
    /// and `.reg` ("Function parameter '_' has illegal state space"), as in a
    /// function's own lists; reports each, leaving the cursor where it was.
    fn prototype_spaces(&mut self) {
        let (toks, src) = (self.c.toks, self.src);
        let statement = toks[self.c.pos..]
            .iter()
            .take_while(|t| !(t.kind == TokenKind::Punct && t.text(src) == b";"));
        for &t in statement {
            let text = t.text(src);
            let space = StateSpace::from_directive(text);
            if space.is_some_and(|s| !matches!(s, StateSpace::Param | StateSpace::Reg)) {
                let msg = format!(
                    "expected `.param` or `.reg`, found `{}` (ptxas: \"Function parameter \
                     has illegal state space\")",
                    String::from_utf8_lossy(text)
                );
                self.c.error(t.span(), msg);
            }
        }
    }

    /// A scoped declaration: `.reg .b32 %r<5>;`, `.local .align 8 .b8 depot[16];`,
    /// `.shared .u32 x = 1;`, read by the module scope's declaration parser, with the
    /// same rules (`decl::check_variable`). Declared names shadow module-scope names
    /// until the block ends.
    fn declaration(&mut self) {
        let (spec, mut decl) = match plain_declaration(&self.c) {
            Some(plain) => {
                self.c.pos = plain.end;
                (plain.spec(), plain.declarator())
            }
            None => {
                let Ok(spec) = type_spec(&mut self.c, None) else {
                    self.skip_statement();
                    return;
                };
                let Ok(decl) = declarator(&mut self.c, true) else {
                    self.skip_statement();
                    return;
                };
                (spec, decl)
            }
        };
        loop {
            check_variable(&mut self.c, &spec, &decl, false);
            self.define(decl.name, self.depth);
            self.define_in_block(decl.name, decl.reg_count);
            let param = (spec.space == StateSpace::Param).then(|| LocalParam {
                name: decl.name,
                align: spec.align.zip(spec.align_span),
                space: spec.space_span,
                ty: spec.ty,
                vector: spec.vector,
                elements: (!decl.is_scalar()).then(|| {
                    let n = decl.element_count().unwrap_or(0);
                    NonZeroU64::new(n).unwrap_or(NonZeroU64::MAX)
                }),
            });
            let local = Local::Variable {
                space: spec.space,
                param,
            };
            let count = decl.reg_count;
            self.s.scope.declare(decl.name, count, self.depth, local);
            for &span in decl.init.iter().flat_map(|init| &init.symbol_refs) {
                self.use_name(span, RefKind::Operand);
            }
            if self.c.eat_punct(b",") {
                let Ok(next) = declarator(&mut self.c, true) else {
                    self.skip_statement();
                    return;
                };
                decl = next;
                continue;
            }
            if self.c.eat_punct(b";") {
                return;
            }
            let span = self.c.after_prev();
            self.c.error(span, "expected `;` to end the declaration");
            self.skip_statement();
            return;
        }
    }
}
