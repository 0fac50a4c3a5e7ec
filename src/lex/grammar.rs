//! The grammar of an instruction's operand list, as far as ptxas refuses a slip in
//! it as a syntax error: operands are separated by commas, brackets pair up, and a
//! list never has an empty place. The rules are stated on bytes next to each other
//! (whitespace aside), so that the compact lexer can check them with the byte masks
//! it already computes (`operand_skip.rs`) and this token check, which the body walk
//! and the compact lexer's full statements use, finds exactly what those find.
//!
//! With `a` and `b` the last and first significant bytes of two neighbouring tokens:
//! - **juxtaposition**: `a` ends a term (a name character, `]`, `)` or `}`) and `b`
//!   starts one (a name character, `%`, `[`, `{`, `(` or a string). Allowed once,
//!   for the space between the opcode with its modifiers and the first operand;
//! - **empty place**: `,` followed by `,` or `)`; `;`, `]` or `}` after anything
//!   but the end of a term; `[` or `{` followed by `,`, `;`, `)`, `]` or `}`;
//! - **brackets**: `[` inside an address, `]` outside one, `;` inside one;
//! - **modifiers**: `.reg` is none (`ld.reg.b32`), and a modifier never starts an
//!   operand (`, .x`, `[.b32`) nor follows one that is not a name (`0 .aligned`,
//!   `[%rd1] .x`: only a register takes a detached `.x`, as a component or video
//!   selector); no `,` right after the opcode; no `:` but in `::`;
//! - **numbers**: only a number follows `+` (`[%rd1+8]`, not `[%rd1+g]`).
//!
//! docs/linking.md ("Statements") has the ptxas experiments.

use super::class::{is, FOLLOW};
use super::{Token, TokenKind};

/// Whether statements are checked. Only a build for measuring what the check costs
/// turns it off (`--cfg ptxld_unchecked_statements`, which `just bench` builds and
/// times against this one); both ways always compile, and the compiler drops the
/// dead one.
pub(super) const CHECKED: bool = !cfg!(ptxld_unchecked_statements);

/// Which slip an instruction has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slip {
    /// A statement that starts with a register or another non-opcode.
    NoOpcode,
    /// Two operands without a `,` between them (or a missing `;` before the next
    /// instruction).
    Juxtaposed,
    /// A `,` with no operand after it.
    EmptyAfterComma,
    /// A `,` right after the opcode, with no operand before it.
    EmptyBeforeComma,
    /// A `:` that is not half of a `::` qualifier.
    StrayColon,
    /// A name after `+`, where only a number may follow.
    NotANumber,
    /// A call that is not `call [(rets),] callee [, (args)] [, prototype];`.
    CallShape(&'static str),
    /// A `;`, `]` or `}` right after an operator, a `,` or an opening bracket.
    EmptyBeforeClose,
    /// `[` or `{` followed by `,` or a closing bracket, or `[`, `{` or `,` followed by
    /// a modifier (`.x` without its `%tid`).
    EmptyAfterOpen,
    /// `.reg`, which ptxas does not take as an instruction's modifier.
    RegModifier,
    /// A modifier after an operand other than a name (`bar.sync 0 .aligned`).
    ModifierAfterOperand,
    /// A detached modifier after an opcode word that ptxas reads as a keyword and a
    /// number (`bar.warp0xffffffff .sync`).
    ModifierAfterGluedNumber,
    /// `[` inside an address.
    NestedBracket,
    /// `]` with no `[`.
    UnopenedBracket,
    /// `;` inside an address.
    UnclosedBracket,
}

impl Slip {
    /// What the diagnostic says, at the token where the slip shows.
    pub fn message(self, at: &str) -> String {
        match self {
            Slip::NoOpcode => format!("expected an instruction opcode, found `{at}`"),
            Slip::Juxtaposed => {
                format!("expected `,` or `;` before `{at}`: two operands without a comma, or a missing `;`")
            }
            Slip::EmptyAfterComma => format!("expected an operand after `,`, found `{at}`"),
            Slip::CallShape(what) => format!("expected {what} in this call, found `{at}`"),
            Slip::NotANumber => format!("expected a number after `+`, found `{at}`"),
            Slip::EmptyBeforeComma => "expected an operand before `,`".to_string(),
            Slip::StrayColon => {
                "unexpected `:` in an instruction: a label needs its own statement".to_string()
            }
            Slip::EmptyBeforeClose => format!("expected an operand before `{at}`"),
            Slip::EmptyAfterOpen => format!("expected an operand, found `{at}`"),
            Slip::ModifierAfterOperand => {
                format!("modifier `{at}` after an operand: modifiers go right after the opcode")
            }
            Slip::ModifierAfterGluedNumber => format!(
                "modifier `{at}` after an operand: ptxas reads digits glued to a keyword of \
                 its own (`bar.warp0x1` is `bar.warp 0x1`) as the first operand"
            ),
            Slip::RegModifier => {
                "`.reg` is a declaration's state space, not an instruction's".to_string()
            }
            Slip::NestedBracket => "`[` inside an address: expected `]` first".to_string(),
            Slip::UnopenedBracket => "`]` without a matching `[`".to_string(),
            Slip::UnclosedBracket => {
                "expected `]` before `;`: the address is not closed".to_string()
            }
        }
    }
}

/// A byte that ends a term.
#[inline(always)]
pub(super) fn ends_term(b: u8) -> bool {
    is(b, FOLLOW) || matches!(b, b']' | b')' | b'}')
}

/// A byte that starts a term (a string only in tokens: the compact lexer lexes a
/// statement with a string in full).
#[inline(always)]
pub(super) fn starts_term(b: u8) -> bool {
    is(b, FOLLOW) || matches!(b, b'%' | b'[' | b'{' | b'(' | b'"')
}

/// Whether the `+` at `p` of an instruction's operands is followed (whitespace aside)
/// by a name or a `%`-name, where only a number may follow (`[%rd1+8]`, `g+4`;
/// ptxas: "Parsing error near 'g'" for `[%rd1+g]`). The compact lexer's loops stop at
/// every `+` and ask this (out of line: a `+` is rare, and the loops' registers are
/// better spent on the common stops); the tokens' rule is [`Slip::NotANumber`].
#[cold]
#[inline(never)]
pub(super) fn name_after_plus(src: &[u8], p: usize) -> bool {
    let after = src.get(p + 1..).unwrap_or_default();
    after
        .iter()
        .find(|&&b| !is(b, super::class::WS))
        .is_some_and(|&b| b == b'%' || is(b, FOLLOW) && !b.is_ascii_digit())
}

/// A byte that may not follow `[` or `{`.
#[inline(always)]
pub(super) fn empty_after_open(b: u8) -> bool {
    matches!(b, b',' | b';' | b')' | b']' | b'}')
}

/// Whether `t` is the one-byte punctuation `p`.
#[inline(always)]
fn is_punct(src: &[u8], t: &Token, p: u8) -> bool {
    t.kind == TokenKind::Punct && t.hi == t.lo + 1 && src[t.lo as usize] == p
}

/// The first slip in the statement `toks` (an instruction with its guard, through
/// its `;`), and the index of the token where it shows.
pub fn instruction_slip(src: &[u8], toks: &[Token]) -> Option<(usize, Slip)> {
    if !CHECKED {
        return None;
    }
    let first = |t: &Token| src[t.lo as usize];
    let last = |t: &Token| src[t.hi as usize - 1];
    let punct = |t: &Token, p: u8| is_punct(src, t, p);
    let mut i = 0;
    if toks.first().is_some_and(|t| punct(t, b'@')) {
        i = 1;
        if toks.get(i).is_some_and(|t| punct(t, b'!')) {
            i += 1;
        }
        i += 1;
    }
    let opcode = toks.get(i)?;
    if opcode.kind != TokenKind::Ident || first(opcode) == b'%' {
        return Some((i, Slip::NoOpcode));
    }

    // A juxtaposition is allowed once: the space between the opcode with its
    // modifiers and the first operand. (Counting them, rather than placing that one,
    // is what the compact lexer's masks can do; an instruction whose first operand
    // starts with `-` or `!` and has a second slip is the price.)
    let mut juxtaposed = false;
    let mut brackets = 0u32;
    // Still in the opcode's word: its modifiers, `::` qualifiers and what is glued
    // to them.
    let mut word = true;
    // Whether the opcode's word is a keyword of ptxas with digits glued to it
    // (`bar.warp0xffffffff`), which ptxas reads as the keyword and a number: asked
    // only at a detached modifier, which is rare.
    let number_glued = || {
        toks.get(i + 1).is_some_and(|m| {
            m.kind == TokenKind::Directive
                && m.lo == opcode.hi
                && keyword_then_digit(src, opcode, m)
        })
    };
    // The byte of a one-byte punctuation token, 0 for any other token: read once per
    // token rather than compared as text at each rule.
    let one = |t: &Token| {
        if t.kind == TokenKind::Punct && t.hi == t.lo + 1 {
            src[t.lo as usize]
        } else {
            0
        }
    };
    for k in i + 1..toks.len() {
        let (a, b) = (&toks[k - 1], &toks[k]);
        let (pa, pb) = (one(a), one(b));
        let directive = b.kind == TokenKind::Directive;
        let colon = pb == b':';
        if colon {
            // Only `::` qualifiers have colons (`.L2::128B`): a label's colon
            // inside an instruction is a missing `;` or a stray name before it.
            let pair = pa == b':' && a.hi == b.lo
                || toks
                    .get(k + 1)
                    .is_some_and(|n| one(n) == b':' && b.hi == n.lo);
            if !pair {
                return Some((k, Slip::StrayColon));
            }
        }
        if directive && b.text(src) == b".reg" {
            return Some((k, Slip::RegModifier));
        }
        // A modifier with whitespace before it (`add.s32 .sat`).
        let detached = directive && a.hi != b.lo;
        if word {
            if detached && number_glued() {
                return Some((k, Slip::ModifierAfterGluedNumber));
            }
            let glued = || a.hi == b.lo && b.text(src).iter().all(|&c| is(c, FOLLOW) || c == b'.');
            if directive || colon || pa == b':' || glued() {
                continue;
            }
            word = false;
        }
        // Only a name takes a detached modifier (a component or a video selector,
        // which ptxas then types).
        let not_a_name = matches!(a.kind, TokenKind::Int | TokenKind::Float)
            || a.kind == TokenKind::Punct && matches!(first(a), b']' | b'}' | b')');
        if detached && not_a_name {
            return Some((k, Slip::ModifierAfterOperand));
        }
        if matches!(pa, b'[' | b'{') && empty_after_open(first(b)) {
            return Some((k, Slip::EmptyAfterOpen));
        }
        if pa == b'+' && matches!(b.kind, TokenKind::Ident | TokenKind::String) {
            return Some((k, Slip::NotANumber));
        }
        if directive && matches!(pa, b'[' | b'{' | b',') {
            return Some((k, Slip::EmptyAfterOpen));
        }
        if ends_term(last(a)) && starts_term(first(b)) {
            if juxtaposed {
                return Some((k, Slip::Juxtaposed));
            }
            juxtaposed = true;
        } else if b.kind == TokenKind::Punct {
            let p = first(b);
            if pa == b',' && matches!(p, b',' | b')') {
                return Some((k, Slip::EmptyAfterComma));
            }
            if matches!(p, b';' | b']' | b'}') && !ends_term(last(a)) {
                return Some((k, Slip::EmptyBeforeClose));
            }
        }
        match pb {
            b'[' => {
                if brackets > 0 {
                    return Some((k, Slip::NestedBracket));
                }
                brackets += 1;
            }
            b']' => {
                if brackets == 0 {
                    return Some((k, Slip::UnopenedBracket));
                }
                brackets -= 1;
            }
            b';' if brackets > 0 => return Some((k, Slip::UnclosedBracket)),
            // A comma before the first juxtaposition: the first operand is missing
            // (`mov.u32 , %r1`, `f, (param0)`), or starts with `-` or `!`, which no
            // instruction's first operand does (the compact lexer's masks tell these
            // apart only by this order).
            b',' if !juxtaposed => return Some((k, Slip::EmptyBeforeComma)),
            _ => {}
        }
    }
    if opcode.text(src) == b"call" {
        return call_slip(src, toks, i + 1);
    }
    None
}

/// The opcode words ptxas 12.9 lexes as one keyword, opcode and first modifier, as
/// far as the instruction table's modifiers go: `bar.warp7 .aligned;` is "Parsing
/// error near '.aligned'" (`bar.warp`, `7`, then a modifier after a number), where
/// `bar.sync7 .aligned;` is "Unknown modifier '.sync7'" (docs/linking.md,
/// "Statements"). Each modifier here also stands for the longer ones it begins with
/// digits (`suld.b32` is `suld.b` and `32`).
const KEYWORD_WORDS: &[(&[u8], &[&[u8]])] = &[
    (b"bar", &[b".arrive", b".cta", b".red", b".warp"]),
    (b"barrier", &[b".arrive", b".cluster", b".red"]),
    (b"brx", &[b".idx"]),
    (b"cp", &[b".1d", b".2d", b".3d", b".async"]),
    (b"createpolicy", &[b".fractional", b".range"]),
    (b"cvta", &[b".to"]),
    (b"div", &[b".full"]),
    (b"dp2a", &[b".hi", b".lo"]),
    (b"fence", &[b".proxy"]),
    (b"mad", &[b".hi", b".lo", b".wide"]),
    (b"madc", &[b".hi", b".lo"]),
    (
        b"mbarrier",
        &[
            b".arrive",
            b".arrive_drop",
            b".complete_tx",
            b".expect_tx",
            b".init",
            b".inval",
            b".pending_count",
            b".test_wait",
            b".try_wait",
        ],
    ),
    (b"membar", &[b".proxy"]),
    (b"mul", &[b".hi", b".lo", b".wide"]),
    (b"mul24", &[b".lo"]),
    (b"pmevent", &[b".mask"]),
    (b"setmaxnreg", &[b".dec", b".inc"]),
    (b"shf", &[b".l", b".r"]),
    (b"suld", &[b".1d", b".2d", b".b"]),
    (b"sust", &[b".1d", b".2d", b".b"]),
    (b"tex", &[b".1d", b".2d", b".3d", b".grad", b".level"]),
    (b"tld4", &[b".2d"]),
    (
        b"wgmma",
        &[b".commit_group", b".fence", b".mma_async", b".wait_group"],
    ),
    (b"wmma", &[b".mma"]),
];

/// Whether `modifier`, glued to `opcode`, is one of ptxas's keyword words
/// ([`KEYWORD_WORDS`]) with a digit right after it.
fn keyword_then_digit(src: &[u8], opcode: &Token, modifier: &Token) -> bool {
    let text = modifier.text(src);
    KEYWORD_WORDS
        .iter()
        .filter(|(op, _)| *op == opcode.text(src))
        .flat_map(|(_, words)| words.iter())
        .any(|w| text.starts_with(w) && text.get(w.len()).is_some_and(u8::is_ascii_digit))
}

/// The shape of a call from token `i` (after `call`): `[.mods] [(rets),] callee
/// [, (args)] [, prototype];`, each list `()` or single-token operands separated by
/// commas (ptxas 12.9: `call (r), (p);` "Parsing error near '('", `( (p)` near
/// `p`, `(p) )` near `)`, `(p;` near `;`, `f, f, (p)` and `r, f, (p)` near `,`,
/// `(r) f` near `f`).
fn call_slip(src: &[u8], toks: &[Token], mut i: usize) -> Option<(usize, Slip)> {
    let punct = |i: usize, p: u8| toks.get(i).is_some_and(|t| is_punct(src, t, p));
    let operand = |i: usize| {
        toks.get(i)
            .is_some_and(|t| t.kind != TokenKind::Punct && t.kind != TokenKind::Directive)
    };
    let name = |i: usize| toks.get(i).is_some_and(|t| t.kind == TokenKind::Ident);
    let at = |i: usize| i.min(toks.len() - 1);
    // `(a, b, ...)` or `()` from `i`: the index after its `)`.
    let list = |mut i: usize| -> Result<usize, (usize, Slip)> {
        i += 1;
        if punct(i, b')') {
            return Ok(i + 1);
        }
        loop {
            if !operand(i) {
                return Err((at(i), Slip::CallShape("an operand")));
            }
            i += 1;
            if punct(i, b')') {
                return Ok(i + 1);
            }
            if !punct(i, b',') {
                return Err((at(i), Slip::CallShape("`,` or `)`")));
            }
            i += 1;
        }
    };
    while toks.get(i).is_some_and(|t| t.kind == TokenKind::Directive) {
        i += 1;
    }
    if punct(i, b'(') {
        i = match list(i) {
            Ok(i) => i,
            Err(slip) => return Some(slip),
        };
        if !punct(i, b',') {
            return Some((at(i), Slip::CallShape("`,` after the return values")));
        }
        i += 1;
    }
    if !name(i) {
        return Some((at(i), Slip::CallShape("the callee")));
    }
    i += 1;
    if punct(i, b',') && punct(i + 1, b'(') {
        i = match list(i + 1) {
            Ok(i) => i,
            Err(slip) => return Some(slip),
        };
    }
    if punct(i, b',') {
        if !name(i + 1) {
            return Some((at(i + 1), Slip::CallShape("a prototype or targets")));
        }
        i += 2;
    }
    if !punct(i, b';') {
        return Some((at(i), Slip::CallShape("`;`")));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::lex;
    use crate::source::FileId;

    fn slip(stmt: &str) -> Option<(String, Slip)> {
        let l = lex(FileId(0), stmt.as_bytes());
        instruction_slip(stmt.as_bytes(), &l.tokens).map(|(k, s)| {
            let t = l.tokens[k];
            (
                String::from_utf8_lossy(t.text(stmt.as_bytes())).into_owned(),
                s,
            )
        })
    }

    #[test]
    fn well_formed_instructions_have_no_slip() {
        for stmt in [
            "ret;",
            "ret ;",
            "exit;",
            "bar.sync 0;",
            "mov.u32 %r1, %r2;",
            "mov.u32 %r1 , 1 ;",
            "@%p1 bra $L__BB0_2;",
            "@!%p1 bra.uni L;",
            "ld.global.L2::128B.u32 %r1, [%rd1+-16];",
            "ld.param.v2.u32 {%r1, %r2}, [p];",
            "tex.2d.v4.s32.f32 {%r1,%r2,%r3,%r4}, [tex, {%f1, %f2}];",
            "mov.b64 %rd1, {%r1, _};",
            "setp.eq.s32 %p1|%p2, %r1, -1;",
            "call.uni (retval0), f, (param0, param1);",
            "call.uni f, ();",
            "call (retval0), f, (param0), proto;",
            "mov.u32 %r1, %tid.x;",
            "ld.u32 %r1, [ %rd1 + 4 ];",
            "shfl.sync.idx.b32 %r1|%p1, %r2, 0, 31, -1;",
            "selp.b32 %r1, 1, 0, !%p1;",
            "add.s32 .sat %r1, %r2, 1;",
            "bar.warp .sync 0xffffffff;",
            "mbarrier.arrive_drop.shared.b64 %rd1, [%rd2];",
            "suld.b.1d.v4.b32.trap {%r1, %r2, %r3, %r4}, [s, {%r5}];",
            "vadd.s32.u32.s32 %r1, %r2 .b0, %r3 .h1;",
            "mov.u32 %r1, %tid .x;",
        ] {
            assert_eq!(slip(stmt), None, "{stmt}");
        }
    }

    #[test]
    fn slips_are_found_where_they_show() {
        use Slip::*;
        for (stmt, at, want) in [
            ("mov.u32 %r1, 1\n ret;", "ret", Juxtaposed),
            ("%r1, %r2;", "%r1", NoOpcode),
            ("@%p1 %r1, %r2;", "%r1", NoOpcode),
            ("mov.u32 %r1 %r2;", "%r2", Juxtaposed),
            ("add.s32 %r1, %r2 %r2, %r3;", "%r2", Juxtaposed),
            ("st.u32 [%rd1] %r1;", "%r1", Juxtaposed),
            ("mov.u32 %r1, %r2, ;", ";", EmptyBeforeClose),
            ("add.s32 %r1, , %r3;", ",", EmptyAfterComma),
            ("call f, (a, );", ")", EmptyAfterComma),
            ("ld.u32 %r1, [];", "]", EmptyAfterOpen),
            ("ld.u32 %r1, [%rd1+];", "]", EmptyBeforeClose),
            ("mov.b64 %rd1, {, %r2};", ",", EmptyAfterOpen),
            ("ld.u32 %r1, [[%rd1];", "[", NestedBracket),
            ("ld.u32 %r1, %rd1];", "]", UnopenedBracket),
            ("ld.u32 %r1, [%rd1;", ";", UnclosedBracket),
            ("ld.reg.b32 %r1, [%rd1];", ".reg", RegModifier),
            ("mov.u32 , %r1;", ",", EmptyBeforeComma),
            ("f, (param0);", ",", EmptyBeforeComma),
            ("f, call.uni (r), (p);", ",", EmptyBeforeComma),
            ("ld.f32 %f7, [+retval00];", "retval00", NotANumber),
            ("call.uni (r), (p);", "(", CallShape("the callee")),
            ("call.uni (r), f, ( (p);", "(", CallShape("an operand")),
            ("call.uni (r), f, (p) );", ")", CallShape("`;`")),
            ("call.uni (r), f, (p;", ";", CallShape("`,` or `)`")),
            ("call.uni (r), f, f, (p);", ",", CallShape("`;`")),
            ("call.uni (r) f, (p);", "f", Juxtaposed),
            (
                "call.uni (r); ",
                ";",
                CallShape("`,` after the return values"),
            ),
            ("call.uni r, f, (p);", ",", CallShape("`;`")),
            ("ld.u32 %r1, [%rd1+%r2];", "%r2", NotANumber),
            ("bra $L2:;", ":", StrayColon),
            ("mov.u32 %r1, .x;", ".x", EmptyAfterOpen),
            ("st.param[ .b32p+0], %r2;", ".b32p", EmptyAfterOpen),
            ("bar.sync 0 .aligned;", ".aligned", ModifierAfterOperand),
            ("add.s32 %r1, %r2, 1 .sat;", ".sat", ModifierAfterOperand),
            ("st.u32 [%rd1] .x, %r1;", ".x", ModifierAfterOperand),
            ("mov.f32 %f1, 1.5 .x;", ".x", ModifierAfterOperand),
            ("mov.b64 %rd1, {%r1, %r2} .x;", ".x", ModifierAfterOperand),
            (
                "bar.warp0xffffffff .sync;",
                ".sync",
                ModifierAfterGluedNumber,
            ),
            (
                "mul.wide7 .s32 %rd1, %r1, %r2;",
                ".s32",
                ModifierAfterGluedNumber,
            ),
        ] {
            assert_eq!(slip(stmt), Some((at.to_string(), want)), "{stmt}");
        }
    }
}
