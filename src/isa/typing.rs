//! Operand typing as ptxas judges it, for the instructions producers write most
//! (arithmetic, comparisons, selects, shifts, moves, conversions, loads and stores):
//! how many operands an instruction takes, what kind each is (a register, a number,
//! an address, a vector), whether a register's declared type fits the instruction's
//! type, and whether a variable an address names is in the instruction's state
//! space. Also the register names that no declaration before them covers.
//!
//! A link leaves these to ptxas (the fast body walk skips operands); `ptxld check`
//! reports them (unless `--verify` has ptxas judge them), from the full lexing it
//! does for what a link needs (`scan.rs`).
//! Every rule is measured with ptxas 12.9 (docs/linking.md, "Operand types";
//! `typing.tsv` holds the experiments, which one test runs through ptxas and another
//! through this check).
//!
//! Only what is certain is judged: an instruction with a modifier or a type these
//! rules do not cover, an operand the walk does not classify, or a name it does not
//! resolve is passed over. A missed slip is a ptxas error later; a wrong one would
//! refuse a module that assembles.

use rustc_hash::FxHashMap;

use super::forms::{form, illegal, Role, JUDGED};
use super::scan::{loc_end, walk_body, word_end, Statements};
use super::table::{split_word, table};
use crate::ir::{FuncDecl, FuncKind, ItemKind, Module, StateSpace, Type, TypeClass};
use crate::lex::{Token, TokenKind};
use crate::source::Span;

/// One operand that ptxas would refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slip {
    /// The operand (or the instruction's word, for the operand count).
    pub span: Span,
    pub message: String,
    /// Where the register or variable the operand names is declared, if that is
    /// what does not fit.
    pub declared: Option<Span>,
}

/// What a name is declared as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decl {
    /// A scalar register of this type.
    Reg(Type),
    /// A variable of this state space; `input` for a kernel's parameter, which
    /// cannot be written.
    Var { space: StateSpace, input: bool },
    /// Something these rules do not judge (a vector register, a function, an
    /// opaque variable).
    Other,
}

/// The names visible at a point of a body: module scope, parameters, then the
/// body's nested blocks. A name may be declared by itself or by a range
/// (`%r<16>` declares `%r0` .. `%r15`); the latest declaration in scope wins.
#[derive(Default)]
struct Scopes<'s> {
    names: FxHashMap<&'s [u8], Vec<Entry>>,
    /// By the range's prefix (`%r`), with its count.
    ranges: FxHashMap<&'s [u8], Vec<(u32, Entry)>>,
    /// What each open block declared, to forget at its `}`.
    blocks: Vec<Vec<(&'s [u8], bool)>>,
    /// Declarations so far (their order).
    seq: u32,
}

/// One declaration: its order among the declarations, what it declares, where.
#[derive(Clone, Copy)]
struct Entry {
    seq: u32,
    decl: Decl,
    at: Span,
}

/// A name's lookup.
enum Found {
    Is(Decl, Span),
    /// Not declared in scope.
    Missing,
    /// Not judged (`%r01`: a range's name with a leading zero).
    Unsure,
}

impl<'s> Scopes<'s> {
    fn declare(&mut self, name: &'s [u8], decl: Decl, span: Span) {
        self.seq += 1;
        let entry = Entry {
            seq: self.seq,
            decl,
            at: span,
        };
        self.names.entry(name).or_default().push(entry);
        if let Some(b) = self.blocks.last_mut() {
            b.push((name, false));
        }
    }

    fn declare_range(&mut self, prefix: &'s [u8], count: u32, decl: Decl, span: Span) {
        self.seq += 1;
        let entry = Entry {
            seq: self.seq,
            decl,
            at: span,
        };
        self.ranges.entry(prefix).or_default().push((count, entry));
        if let Some(b) = self.blocks.last_mut() {
            b.push((prefix, true));
        }
    }

    fn open(&mut self) {
        self.blocks.push(Vec::new());
    }

    fn close(&mut self) {
        for (name, range) in self.blocks.pop().unwrap_or_default() {
            if range {
                self.ranges.get_mut(name).and_then(Vec::pop);
            } else {
                self.names.get_mut(name).and_then(Vec::pop);
            }
        }
    }

    fn lookup(&self, name: &[u8]) -> Found {
        let exact = self.names.get(name).and_then(|v| v.last()).copied();
        let ranged = match split_index(name) {
            Some((prefix, Some(index))) => self.ranges.get(prefix).and_then(|v| {
                v.iter()
                    .rev()
                    .find(|(count, _)| index < *count)
                    .map(|&(_, e)| e)
            }),
            Some((_, None)) => return Found::Unsure,
            None => None,
        };
        // The later of the two declarations is the one in effect.
        match (exact, ranged) {
            (Some(a), Some(b)) => {
                let e = if a.seq > b.seq { a } else { b };
                Found::Is(e.decl, e.at)
            }
            (Some(e), None) | (None, Some(e)) => Found::Is(e.decl, e.at),
            (None, None) => Found::Missing,
        }
    }

    /// The range declaration in scope with `name`'s prefix (its count and place), if
    /// `name` is a prefix and a number.
    fn range_of(&self, name: &[u8]) -> Option<(u32, Span)> {
        let (prefix, _) = split_index(name)?;
        self.ranges
            .get(prefix)
            .and_then(|v| v.last())
            .map(|&(count, e)| (count, e.at))
    }
}

/// `%r12` as (`%r`, Some(12)); a number with a leading zero (`%r01`) as (`%r`,
/// None); None where the name does not end in digits.
fn split_index(name: &[u8]) -> Option<(&[u8], Option<u32>)> {
    let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == name.len() {
        return None;
    }
    let (prefix, number) = name.split_at(name.len() - digits);
    if number.len() > 1 && number[0] == b'0' {
        return Some((prefix, None));
    }
    Some((prefix, std::str::from_utf8(number).ok()?.parse().ok()))
}

/// The declaration a register of `ty` (a vector when `vector`) gets.
fn register(ty: Option<Type>, vector: bool) -> Decl {
    match ty {
        Some(t) if !vector && judged(t) => Decl::Reg(t),
        _ => Decl::Other,
    }
}

/// Whether these rules judge type `t`: bits, integers and floats up to 64 bits, and
/// predicates (not `.f16x2`, `.bf16`, `.b128` or the opaque types).
fn judged(t: Type) -> bool {
    use TypeClass::*;
    match t.class {
        Bits | Unsigned | Signed => matches!(t.bits, 8 | 16 | 32 | 64),
        Float => matches!(t.bits, 16 | 32 | 64),
        Pred => true,
        _ => false,
    }
}

/// The module-scope names of `m`.
fn module_scope<'s>(m: &Module, src: &'s [u8]) -> Scopes<'s> {
    let mut scopes = Scopes::default();
    for item in &m.items {
        match &item.kind {
            ItemKind::Variable(v) => {
                for d in &v.declarators {
                    let decl = if v.spec.ty.is_opaque() {
                        Decl::Other
                    } else {
                        Decl::Var {
                            space: v.spec.space,
                            input: false,
                        }
                    };
                    scopes.declare(&src[d.name.range()], decl, d.name);
                }
            }
            ItemKind::Function(f) => scopes.declare(&src[f.name.range()], Decl::Other, f.name),
            _ => {}
        }
    }
    scopes
}

/// Checks every function body of module `m`; `within` gives the tokens of a span.
pub(crate) fn check_module<'t>(
    m: &Module,
    src: &[u8],
    within: impl Fn(Span) -> &'t [Token],
) -> Vec<Slip> {
    let mut out = Vec::new();
    let mut scopes = module_scope(m, src);
    for item in &m.items {
        if let ItemKind::Function(f) = &item.kind {
            if let Some(body) = &f.body {
                check_function(&mut scopes, f, src, within(body.span), &mut out);
            }
        }
    }
    out
}

/// Checks the body `toks` (from `{` through `}`) of `f`.
fn check_function<'s>(
    scopes: &mut Scopes<'s>,
    f: &FuncDecl,
    src: &'s [u8],
    toks: &[Token],
    out: &mut Vec<Slip>,
) {
    scopes.open();
    for p in f.signature.all() {
        let decl = match p.spec.space {
            StateSpace::Reg => register(Some(p.spec.ty), p.spec.vector.is_some()),
            space => Decl::Var {
                space,
                input: f.kind == FuncKind::Entry,
            },
        };
        scopes.declare(&src[p.name.range()], decl, p.name);
    }
    let mut walk = Walk {
        src,
        scopes,
        body: toks,
        later: None,
        out,
    };
    walk_body(toks, src, &mut walk);
    scopes.close();
}

/// The names a body declares, in any block, with where: to tell a name used before
/// its declaration, or outside the block that declares it, from one never declared.
fn declared_in_body<'s>(toks: &[Token], src: &'s [u8]) -> Scopes<'s> {
    let mut later = Scopes::default();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t.kind == TokenKind::Directive {
            i = if t.text(src) == b".loc" {
                loc_end(toks, i, src)
            } else {
                declaration(toks, i, src, &mut later)
            };
        } else {
            i += 1;
        }
    }
    later
}

/// The declaration statement at `toks[i]` (a state-space directive), declared into
/// `scopes`; returns the index after its `;`. Other directive statements are
/// passed over.
fn declaration<'s>(toks: &[Token], i: usize, src: &'s [u8], scopes: &mut Scopes<'s>) -> usize {
    let end = (i..toks.len())
        .find(|&k| toks[k].kind == TokenKind::Punct && toks[k].text(src) == b";")
        .unwrap_or(toks.len());
    let Some(space) = StateSpace::from_directive(toks[i].text(src)) else {
        return end + 1;
    };
    let stmt = &toks[i..end];
    let mut ty = None;
    let mut vector = false;
    for t in stmt.iter().filter(|t| t.kind == TokenKind::Directive) {
        let text = t.text(src);
        if let Some(x) = Type::from_directive(text) {
            ty = Some(x);
        } else if text.starts_with(b".v") {
            vector = true;
        }
    }
    let decl = match space {
        StateSpace::Reg => register(ty, vector),
        _ if ty.is_some_and(|t| t.is_opaque()) => Decl::Other,
        space => Decl::Var {
            space,
            input: false,
        },
    };
    // Declarators: names at depth 0, each maybe `<N>`, `[dims]` or `= init`.
    let mut k = 1;
    let mut depth = 0u32;
    while k < stmt.len() {
        let t = stmt[k];
        let text = t.text(src);
        match (t.kind, text) {
            (TokenKind::Punct, b"[" | b"{" | b"(") => depth += 1,
            (TokenKind::Punct, b"]" | b"}" | b")") => depth = depth.saturating_sub(1),
            (TokenKind::Punct, b"=") if depth == 0 => {
                // Skip the initializer to the next declarator.
                while k < stmt.len() && !(depth == 0 && stmt[k].text(src) == b",") {
                    match stmt[k].text(src) {
                        b"{" | b"(" | b"[" => depth += 1,
                        b"}" | b")" | b"]" => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                    k += 1;
                }
                continue;
            }
            (TokenKind::Ident, _) if depth == 0 => {
                let count = match (stmt.get(k + 1), stmt.get(k + 2), stmt.get(k + 3)) {
                    (Some(lt), Some(n), Some(gt))
                        if lt.text(src) == b"<"
                            && n.kind == TokenKind::Int
                            && gt.text(src) == b">" =>
                    {
                        std::str::from_utf8(n.text(src))
                            .ok()
                            .and_then(|s| s.parse::<u32>().ok())
                    }
                    _ => None,
                };
                match count {
                    Some(n) => {
                        scopes.declare_range(text, n, decl, t.span());
                        k += 4;
                        continue;
                    }
                    None if stmt.get(k + 1).is_some_and(|n| n.text(src) == b"<") => {
                        // A range the walk does not read: no judgment of it.
                        scopes.declare(text, Decl::Other, t.span());
                    }
                    None => scopes.declare(text, decl, t.span()),
                }
            }
            _ => {}
        }
        k += 1;
    }
    end + 1
}

/// Source bytes shown in a message, converted only when one is written.
#[derive(Clone, Copy)]
struct Text<'a>(&'a [u8]);

impl std::fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

/// One operand, as far as these rules read it.
#[derive(Clone, Debug)]
enum Operand {
    /// A name (`%r1`, `gv`).
    Name(Token),
    /// `!%p`.
    Not(Token),
    /// `%p|%q`.
    Pair(Token, Token),
    /// `_`.
    Sink,
    Int,
    /// `0f3F800000`, `0d...`.
    HexFloat,
    /// `1.5`, `2e3`.
    DecFloat,
    /// `[...]`, with its variable where it is `[name]` or `[name+N]`; `immediate`
    /// where it is only a number (`[8]`, `[+8]`).
    Address {
        base: Option<Token>,
        immediate: bool,
    },
    /// `{a, b}`, by its length.
    Vector(usize),
    /// Anything else (`%tid.x`, an expression).
    Other,
}

/// Reads one operand from its tokens.
fn operand(toks: &[Token], src: &[u8]) -> Operand {
    let text = |i: usize| toks.get(i).map_or(&b""[..], |t| t.text(src));
    let kind = |i: usize| toks.get(i).map(|t| t.kind);
    match toks.len() {
        1 => match toks[0].kind {
            TokenKind::Ident if text(0) == b"_" => Operand::Sink,
            TokenKind::Ident => Operand::Name(toks[0]),
            TokenKind::Int => Operand::Int,
            TokenKind::Float => float(text(0)),
            _ => Operand::Other,
        },
        2 if text(0) == b"!" && kind(1) == Some(TokenKind::Ident) => Operand::Not(toks[1]),
        2 if text(0) == b"-" && kind(1) == Some(TokenKind::Int) => Operand::Int,
        2 if text(0) == b"-" && kind(1) == Some(TokenKind::Float) => float(text(1)),
        3 if text(1) == b"|"
            && kind(0) == Some(TokenKind::Ident)
            && kind(2) == Some(TokenKind::Ident) =>
        {
            Operand::Pair(toks[0], toks[2])
        }
        n if n >= 2 && text(0) == b"[" && text(n - 1) == b"]" => {
            let inner = &toks[1..n - 1];
            let named = kind(1) == Some(TokenKind::Ident)
                && (inner.len() == 1
                    || inner.len() == 3
                        && matches!(inner[1].text(src), b"+" | b"-")
                        && inner[2].kind == TokenKind::Int);
            let immediate = match inner {
                [n] => n.kind == TokenKind::Int,
                [sign, n] => matches!(sign.text(src), b"+" | b"-") && n.kind == TokenKind::Int,
                _ => false,
            };
            Operand::Address {
                base: named.then_some(toks[1]),
                immediate,
            }
        }
        n if n >= 2 && text(0) == b"{" && text(n - 1) == b"}" => {
            let mut len = 0;
            match split_operands(&toks[1..n - 1], src, |_| len += 1) {
                true => Operand::Vector(len),
                false => Operand::Other,
            }
        }
        _ => Operand::Other,
    }
}

fn float(text: &[u8]) -> Operand {
    if text.len() > 2 && text[0] == b'0' && matches!(text[1], b'f' | b'F' | b'd' | b'D') {
        Operand::HexFloat
    } else {
        Operand::DecFloat
    }
}

/// Hands `each` the parts of `toks` between its commas outside brackets, braces and
/// parentheses; false where they do not nest.
fn split_operands<'t>(toks: &'t [Token], src: &[u8], mut each: impl FnMut(&'t [Token])) -> bool {
    let (mut depth, mut from, mut any) = (0i32, 0, false);
    for (k, t) in toks.iter().enumerate() {
        if t.kind != TokenKind::Punct {
            continue;
        }
        match t.text(src) {
            b"[" | b"{" | b"(" => depth += 1,
            b"]" | b"}" | b")" => depth -= 1,
            b"," if depth == 0 => {
                each(&toks[from..k]);
                from = k + 1;
                any = true;
            }
            _ => {}
        }
        if depth < 0 {
            return false;
        }
    }
    if depth != 0 {
        return false;
    }
    if from < toks.len() || any {
        each(&toks[from..]);
    }
    true
}

/// Up to `N` values without an allocation (an instruction's types, modifiers and
/// operands: typing runs on every instruction of a link); `full` once one more was
/// pushed, which these rules then pass over.
struct Small<T: Copy, const N: usize> {
    items: [T; N],
    len: usize,
    full: bool,
}

impl<T: Copy, const N: usize> Small<T, N> {
    /// Empty; `fill` stands in the unused places.
    fn new(fill: T) -> Self {
        Small {
            items: [fill; N],
            len: 0,
            full: false,
        }
    }

    fn push(&mut self, x: T) {
        match self.items.get_mut(self.len) {
            Some(slot) => {
                *slot = x;
                self.len += 1;
            }
            None => self.full = true,
        }
    }

    fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }
}

struct Walk<'a, 's> {
    src: &'s [u8],
    scopes: &'a mut Scopes<'s>,
    /// The body's tokens, and what it declares anywhere (read at the first name
    /// that no declaration in scope covers, which is rare).
    body: &'a [Token],
    later: Option<Scopes<'s>>,
    out: &'a mut Vec<Slip>,
}

/// An instruction being judged.
struct Insn<'w> {
    word: Text<'w>,
    opcode: &'w [u8],
    /// The instruction's type; for `cvt`, the destination's.
    ty: Type,
    /// `cvt`'s source type.
    source_ty: Type,
    /// The state space of `ld` and `st` (None: generic).
    space: Option<StateSpace>,
    /// `.v2`, `.v4`.
    vector: Option<usize>,
    /// Its source may be a variable, whose address it takes (`mov`, `cvta` without
    /// `.to`).
    takes_address: bool,
}

impl Statements for Walk<'_, '_> {
    fn open(&mut self) {
        self.scopes.open();
    }

    fn close(&mut self) {
        self.scopes.close();
    }

    fn directive(&mut self, _: &[u8], toks: &[Token], i: usize) -> usize {
        declaration(toks, i, self.src, self.scopes)
    }

    fn instruction(&mut self, _: &[u8], toks: &[Token], i: usize) -> usize {
        self.judge_instruction(toks, i)
    }
}

impl<'a, 's> Walk<'a, 's> {
    /// The instruction whose opcode is `toks[i]`; returns the index after its `;`.
    fn judge_instruction(&mut self, toks: &[Token], i: usize) -> usize {
        let src = self.src;
        let end = (i..toks.len())
            .find(|&k| toks[k].kind == TokenKind::Punct && toks[k].text(src) == b";")
            .unwrap_or(toks.len());
        let Some(opcode) = toks.get(i).filter(|t| t.kind == TokenKind::Ident) else {
            return end + 1;
        };
        if !JUDGED.contains(&opcode.text(src)) {
            return end + 1;
        }
        let word_end = word_end(src, opcode.lo as usize);
        let first = (i + 1..end)
            .find(|&k| toks[k].lo as usize >= word_end)
            .unwrap_or(end);
        let word = &src[opcode.lo as usize..word_end];
        let mut parts = split_word(word);
        let name = parts.next().unwrap_or_default();
        let mut types = Small::<Type, 4>::new(PRED);
        let mut modifiers = Small::<&[u8], 12>::new(b"");
        // A `.lo`, `.hi` or `.wide` after the type (`mad.s32.lo`, `mul.u32.wide`).
        let mut half_after_type = false;
        for p in parts {
            match Type::from_directive(p) {
                Some(t) => types.push(t),
                None => {
                    half_after_type |= !types.is_empty() && matches!(p, b".lo" | b".hi" | b".wide");
                    modifiers.push(p);
                }
            }
        }
        if types.full || modifiers.full {
            return end + 1;
        }
        let (types, modifiers) = (types.as_slice(), modifiers.as_slice());
        let word_span = Span::new(opcode.lo, word_end as u32);
        let word_text = Text(word);
        if types.iter().any(|&t| !judged(t)) {
            return end + 1;
        }
        let Some(form) = form(name, modifiers, types) else {
            return end + 1;
        };
        let why = if half_after_type && matches!(name, b"mul" | b"mad") {
            // "Unexpected instruction types specified for 'mad'", "Unknown modifier
            // '.wide'".
            Some("`.lo`, `.hi` and `.wide` come before the type".to_string())
        } else {
            illegal(name, modifiers, types)
        };
        if let Some(why) = why {
            self.out.push(Slip {
                span: word_span,
                message: format!("`{word_text}`: {why}"),
                declared: None,
            });
            return end + 1;
        }
        let mut ops = Small::<&[Token], 8>::new(&[]);
        if !split_operands(&toks[first..end], src, |part| ops.push(part)) || ops.full {
            return end + 1;
        }
        let ops = ops.as_slice();
        if ops.iter().any(|o| o.is_empty()) {
            // A syntax slip, which the parser reports.
            return end + 1;
        }
        let n = form.roles.len();
        if ops.len() != n && !(form.optional_last && ops.len() == n + 1) {
            let expected = if form.optional_last {
                format!("{n} or {}", n + 1)
            } else {
                n.to_string()
            };
            self.out.push(Slip {
                span: word_span,
                message: format!("`{word_text}` takes {expected} operands, not {}", ops.len()),
                declared: None,
            });
            return end + 1;
        }
        let space = modifiers.iter().find_map(|m| match *m {
            b".shared::cta" => Some(StateSpace::Shared),
            m => StateSpace::from_directive(m),
        });
        let vector = modifiers.iter().find_map(|m| match *m {
            b".v2" => Some(2),
            b".v4" => Some(4),
            _ => None,
        });
        let insn = Insn {
            word: word_text,
            opcode: name,
            ty: types[0],
            source_ty: *types.last().unwrap_or(&types[0]),
            space,
            vector,
            takes_address: name == b"mov" || (name == b"cvta" && !modifiers.contains(&&b".to"[..])),
        };
        if name == b"st" && space == Some(StateSpace::Const) {
            self.out.push(Slip {
                span: word_span,
                message: format!("`{word_text}` stores to .const, which is read-only"),
                declared: None,
            });
            return end + 1;
        }
        // One slip per instruction, as ptxas gives one message: the first operand's.
        let before = self.out.len();
        for (k, part) in ops.iter().enumerate() {
            let role = form.roles.get(k).copied().unwrap_or(Role::Source);
            let op = operand(part, src);
            let span = Span::new(part[0].lo, part[part.len() - 1].hi);
            self.judge(&insn, k + 1, role, &op, span);
            if self.out.len() > before {
                break;
            }
        }
        end + 1
    }

    /// Judges operand `n` (1-based) `op` at `span` in role `role`.
    fn judge(&mut self, insn: &Insn, n: usize, role: Role, op: &Operand, span: Span) {
        use Role::*;
        let word = insn.word;
        let slip = |message: String| Slip {
            span,
            message,
            declared: None,
        };
        match (role, op) {
            // "Immediate addresses allowed only for .local state space".
            (
                Address,
                Operand::Address {
                    immediate: true, ..
                },
            ) if insn.space != Some(StateSpace::Local) => self.out.push(slip(format!(
                "operand {n} of `{word}` is an address without a register or variable, \
                     which only .local takes"
            ))),
            (
                Address,
                Operand::Address {
                    base: Some(base), ..
                },
            ) => self.address(insn, *base),
            (Address, Operand::Address { .. }) => {}
            (Address, _) => self.out.push(slip(format!(
                "operand {n} of `{word}` must be an address in brackets (`[%rd1]`, `[name]`)"
            ))),
            (_, Operand::Address { .. }) => self.out.push(slip(format!(
                "operand {n} of `{word}` is an address; it takes a register{}",
                if matches!(role, Dest | DestWide | DestRelaxed | PredDest) {
                    ""
                } else {
                    " or a number"
                }
            ))),
            (Dest | DestWide | DestRelaxed | PredDest, Operand::Int)
            | (Dest | DestWide | DestRelaxed | PredDest, Operand::HexFloat)
            | (Dest | DestWide | DestRelaxed | PredDest, Operand::DecFloat) => self.out.push(slip(
                format!("operand {n} of `{word}` is a number; the result must go to a register"),
            )),
            // Only a vector's length: ptxas judges its elements by rules of their
            // own (`ld.global.v2.u32 {%r1, %f2}` assembles, `{%r1, %rd2}` does not).
            (DestRelaxed | SourceRelaxed, &Operand::Vector(len))
                if insn.vector.is_some() && insn.opcode != b"cvt" =>
            {
                let want = insn.vector.unwrap_or(1);
                if len != want {
                    self.out.push(slip(format!(
                        "operand {n} of `{word}` has {len} elements; .v{want} takes {want}"
                    )));
                }
            }
            // A vector register (GCC declares `.reg .v2 .u32 %r50`) or a scalar one,
            // which does not fit.
            (DestRelaxed | SourceRelaxed, _) if insn.vector.is_some() => {
                let scalar = match op {
                    Operand::Name(t) => matches!(
                        self.scopes.lookup(t.text(self.src)),
                        Found::Is(Decl::Reg(_), _)
                    ),
                    Operand::Int | Operand::HexFloat | Operand::DecFloat => true,
                    _ => false,
                };
                if scalar {
                    let want = insn.vector.unwrap_or(1);
                    self.out.push(slip(format!(
                        "operand {n} of `{word}` must be a vector of {want} registers (`{{%r1, %r2}}`)"
                    )));
                }
            }
            (DestRelaxed | SourceRelaxed, Operand::Vector(_))
                if matches!(insn.opcode, b"ld" | b"st") =>
            {
                self.out.push(slip(format!(
                    "operand {n} of `{word}` is a vector, but the instruction has no .v2 or .v4"
                )));
            }
            (_, Operand::Name(t)) => self.register(insn, n, role, *t),
            (Pred | PredDest, Operand::Not(t)) => self.register(insn, n, Pred, *t),
            (PredDest, Operand::Pair(a, b)) => {
                self.register(insn, n, PredDest, *a);
                self.register(insn, n, PredDest, *b);
            }
            (Source | SourceWide | SourceRelaxed, _) if insn.opcode != b"cvt" => {
                let ty = if role == SourceWide {
                    wide(insn.ty)
                } else {
                    insn.ty
                };
                self.number(insn, n, ty, op, span);
            }
            _ => {}
        }
    }

    /// A number as operand `n` of type `ty`: an integer does not fit a float type;
    /// a decimal fraction fits only a float type, a hex float a float or bit type.
    fn number(&mut self, insn: &Insn, n: usize, ty: Type, op: &Operand, span: Span) {
        use TypeClass::*;
        let (fits, what) = match op {
            Operand::Int => (ty.class != Float, "an integer"),
            Operand::HexFloat => (matches!(ty.class, Float | Bits | Pred), "a hex float"),
            Operand::DecFloat => (matches!(ty.class, Float | Pred), "a decimal fraction"),
            _ => return,
        };
        if !fits {
            self.out.push(Slip {
                span,
                message: format!(
                    "operand {n} of `{}` is {what}, which is not a {} number{}",
                    insn.word,
                    type_name(ty),
                    match ty.class {
                        Float => " (write it as 1.0 or 0f3F800000)",
                        _ => "",
                    }
                ),
                declared: None,
            });
        }
    }

    /// The name `t` as operand `n` in `role`.
    fn register(&mut self, insn: &Insn, n: usize, role: Role, t: Token) {
        use Role::*;
        let name = t.text(self.src);
        let span = t.span();
        let text = Text(name);
        let word = insn.word;
        let decl = match self.scopes.lookup(name) {
            Found::Is(d, s) => (d, s),
            Found::Unsure => return,
            // Special registers are declared nowhere (`%laneid`, `%tid` of `%tid.x`).
            Found::Missing if table().special_register(name) => return,
            Found::Missing => return self.missing(name, span, false),
        };
        let (ty, declared_at) = match decl {
            (Decl::Reg(ty), at) => (ty, at),
            (Decl::Var { .. }, at) => {
                // `mov` and `cvta` take a variable's address; the others want a
                // register ("must be register").
                if !(insn.takes_address && role == Source) {
                    self.out.push(Slip {
                        span,
                        message: format!(
                            "operand {n} of `{word}` is the variable `{text}`; it must be a register"
                        ),
                        declared: Some(at),
                    });
                }
                return;
            }
            (Decl::Other, _) => return,
        };
        let want = match role {
            Dest | Source => insn.ty,
            DestWide | SourceWide => wide(insn.ty),
            DestRelaxed => insn.ty,
            SourceRelaxed if insn.opcode == b"cvt" => insn.source_ty,
            SourceRelaxed => insn.ty,
            Pred | PredDest => PRED,
            Shift => {
                if !(ty.bits == 32
                    && matches!(
                        ty.class,
                        TypeClass::Bits | TypeClass::Unsigned | TypeClass::Signed
                    ))
                {
                    self.out.push(Slip {
                        span,
                        message: format!(
                            "operand {n} of `{word}` is `{text}`, a {} register; a shift amount is a 32-bit integer (.u32)",
                            type_name(ty)
                        ),
                        declared: Some(declared_at),
                    });
                }
                return;
            }
            Address => return,
        };
        let fits = match role {
            DestRelaxed | SourceRelaxed => relaxed_fits(want, ty),
            _ => exact_fits(want, ty),
        };
        if !fits {
            self.out.push(Slip {
                span,
                message: format!(
                    "operand {n} of `{word}` is `{text}`, a {} register, which does not fit {}",
                    type_name(ty),
                    type_name(want)
                ),
                declared: Some(declared_at),
            });
        }
    }

    /// A name that no declaration in scope covers (ptxas: "Unknown symbol", or for
    /// an address "Illegal operand type"): one the function declares later, one only
    /// another block declares, a range's name past its end, or a `%`-name (any name,
    /// if `any`) declared nowhere.
    fn missing(&mut self, name: &[u8], span: Span, any: bool) {
        let text = Text(name);
        let mut slip = |message: String, declared: Option<Span>| {
            self.out.push(Slip {
                span,
                message,
                declared,
            })
        };
        let (body, src) = (self.body, self.src);
        let later = self
            .later
            .get_or_insert_with(|| declared_in_body(body, src));
        if let Found::Is(_, at) = later.lookup(name) {
            if at.lo > span.lo {
                slip(format!("`{text}` is used before its declaration"), Some(at));
                return;
            }
            slip(
                format!("`{text}` is not declared here: its declaration is in a block that does not hold this use"),
                Some(at),
            );
            return;
        }
        if let Some((count, at)) = self.scopes.range_of(name) {
            let (prefix, _) = split_index(name).unwrap_or_default();
            let prefix = String::from_utf8_lossy(prefix);
            slip(
                format!(
                    "`{text}` is not declared: `{prefix}<{count}>` declares {prefix}0 to {prefix}{}",
                    count.saturating_sub(1)
                ),
                Some(at),
            );
            return;
        }
        if any || name.first() == Some(&b'%') {
            slip(format!("`{text}` is not declared"), None);
        }
    }

    /// The variable `base` that `insn` addresses (`[name]`, `[name+8]`): in the
    /// instruction's state space, or one a generic address reaches.
    fn address(&mut self, insn: &Insn, base: Token) {
        let name = base.text(self.src);
        let text = Text(name);
        let (space, input, at) = match self.scopes.lookup(name) {
            Found::Is(Decl::Var { space, input }, at) => (space, input, at),
            // "Illegal to use symbol '%f1' of type .f32 as address operand".
            Found::Is(Decl::Reg(t), at)
                if matches!(t.class, TypeClass::Float | TypeClass::Pred) =>
            {
                self.out.push(Slip {
                    span: base.span(),
                    message: format!(
                        "`{text}` is a {} register; an address is an integer",
                        type_name(t)
                    ),
                    declared: Some(at),
                });
                return;
            }
            Found::Missing => return self.missing(name, base.span(), true),
            _ => return,
        };
        let word = insn.word;
        let message = match insn.space {
            Some(StateSpace::Param) if insn.opcode == b"st" && input => Some(format!(
                "`{word}` writes `{text}`, a kernel parameter, which is read-only"
            )),
            Some(s) if s != space => Some(format!(
                "`{word}` addresses `{text}`, a {} variable, in {}",
                space.as_str(),
                s.as_str()
            )),
            None if matches!(space, StateSpace::Const | StateSpace::Param) => Some(format!(
                "`{word}` addresses `{text}`, a {} variable, generically; name the state space ({}.{})",
                space.as_str(),
                String::from_utf8_lossy(insn.opcode),
                &space.as_str()[1..]
            )),
            _ => None,
        };
        if let Some(message) = message {
            self.out.push(Slip {
                span: base.span(),
                message,
                declared: Some(at),
            });
        }
    }
}

const PRED: Type = Type {
    class: TypeClass::Pred,
    bits: 1,
};

/// `ty` at twice its width (`.s32` → `.s64`).
fn wide(ty: Type) -> Type {
    Type {
        class: ty.class,
        bits: ty.bits * 2,
    }
}

/// `.u32`.
fn type_name(ty: Type) -> String {
    use TypeClass::*;
    let class = match ty.class {
        Bits => "b",
        Unsigned => "u",
        Signed => "s",
        Float => "f",
        Pred => return ".pred".into(),
        _ => "?",
    };
    format!(".{class}{}", ty.bits)
}

/// Whether a register of type `reg` fits an instruction of type `want` (PTX's type
/// rules: same size, and a bit type fits any class, signed and unsigned each other;
/// a predicate only a predicate).
fn exact_fits(want: Type, reg: Type) -> bool {
    use TypeClass::*;
    if want.class == Pred || reg.class == Pred {
        return want.class == reg.class;
    }
    if want.bits != reg.bits {
        return false;
    }
    matches!(
        (want.class, reg.class),
        (Bits, _) | (_, Bits) | (Signed | Unsigned, Signed | Unsigned) | (Float, Float)
    )
}

/// The relaxed rule of `ld`, `st` and `cvt`: a register at least as wide, of any
/// class for a bit type, of a bit or integer class for an integer type; for a float
/// type a bit register at least as wide, or a float one of the same size.
fn relaxed_fits(want: Type, reg: Type) -> bool {
    use TypeClass::*;
    if want.class == Pred || reg.class == Pred {
        return want.class == reg.class;
    }
    match want.class {
        Bits => reg.bits >= want.bits,
        Signed | Unsigned => matches!(reg.class, Bits | Signed | Unsigned) && reg.bits >= want.bits,
        Float => {
            (reg.class == Bits && reg.bits >= want.bits)
                || (reg.class == Float && reg.bits == want.bits)
        }
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::module_uses;

    /// What `ptxld check` says of `statement` in the kernel of src/isa/preamble.ptx.
    fn slips(statement: &str) -> Vec<String> {
        let text = include_str!("preamble.ptx")
            .replace("VERSION", "8.0")
            .replace("TARGET", "sm_80")
            .replace("MODULE_SCOPE", "")
            .replace("EXAMPLE", statement);
        let parsed = crate::parse::parse_module(crate::source::FileId(0), text.as_bytes());
        assert!(
            parsed.diagnostics.is_empty(),
            "{statement}: {:?}",
            parsed.diagnostics
        );
        let uses = module_uses(&parsed.module, text.as_bytes(), true);
        uses.slips.into_iter().map(|s| s.message).collect()
    }

    /// Every experiment of typing.tsv (ptxas's verdicts, which
    /// tests/it/operand_typing.rs checks): `refuse` lines get a slip, `accept` and
    /// `missed` lines none.
    #[test]
    fn the_check_agrees_with_every_experiment() {
        let mut wrong = Vec::new();
        for (n, line) in include_str!("typing.tsv").lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            let found = slips(cols[1]);
            if found.is_empty() == (cols[0] == "refuse") {
                wrong.push(format!(
                    "typing.tsv:{}: {} `{}`: {found:?}",
                    n + 1,
                    cols[0],
                    cols[1]
                ));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn messages_name_the_operand_and_what_it_needs() {
        assert_eq!(
            slips("add.s32 %r1, %f2, %r3;"),
            ["operand 2 of `add.s32` is `%f2`, a .f32 register, which does not fit .s32"]
        );
        assert_eq!(
            slips("add.s32 %r16, %r1, 1;"),
            ["`%r16` is not declared: `%r<16>` declares %r0 to %r15"]
        );
        assert_eq!(
            slips("ld.global.u32 %r1, [cv];"),
            ["`ld.global.u32` addresses `cv`, a .const variable, in .global"]
        );
        // Statements after a `.loc`, which has no `;`, are judged too.
        assert_eq!(slips(".loc 1 2 3\n\tmov.f32 %f1, 1;").len(), 1);
    }

    #[test]
    fn register_ranges_and_scopes() {
        assert!(split_index(b"%r01").is_some_and(|(_, i)| i.is_none()));
        assert_eq!(split_index(b"%rd12"), Some((&b"%rd"[..], Some(12))));
        assert_eq!(split_index(b"%r"), None);
        // An inner block's declaration hides the outer one until its `}`.
        assert!(slips("{ .reg .f32 %r1; add.f32 %r1, %r1, %r1; } add.s32 %r1, %r1, 1;").is_empty());
        // One slip per instruction, the first operand's.
        assert_eq!(slips("{ .reg .f32 %r1; add.s32 %r1, %r1, 1; }").len(), 1);
    }
}
