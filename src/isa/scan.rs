//! What one module uses, by the table: every distinct instruction opcode word, the
//! special registers its operands read and the directives it writes, each with the
//! first place it occurs and what the table says it needs.
//!
//! The module is lexed again in full for this (the linker keeps no tokens, and the
//! fast body walk no opcodes), so it runs only where a link asks what its modules
//! need: lowering the version or target, `ptxld check` and the link map.

use rustc_hash::FxHashSet;

use super::table::{table, Lookup, Need};
use super::typing::{check_module, Slip};
use crate::ir::{FuncKind, ItemKind, Module};
use crate::lex::{is_name_byte, lex_bodies_into, Bodies, Token, TokenKind};
use crate::source::Span;

/// One distinct thing a module uses that needs more than PTX ISA 1.0 on any target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Use {
    /// Its first occurrence: an opcode word (`cp.async.bulk.shared::cluster...`), a
    /// special register or a directive.
    pub span: Span,
    pub need: Need,
}

/// Everything a module uses, by the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ModuleUses {
    /// What needs more than the base ISA, in source order.
    pub uses: Vec<Use>,
    /// Opcode words the table does not know (the first occurrence of each).
    pub unknown: Vec<Span>,
    /// Operands ptxas would refuse (`typing.rs`), where the scan was asked to type
    /// them.
    pub slips: Vec<Slip>,
}

impl ModuleUses {
    /// The highest need of all uses (unknown words aside).
    pub fn need(&self) -> Need {
        self.uses.iter().fold(Need::NONE, |n, u| n.max(u.need))
    }
}

/// Scans module `m` (its source `src`), and types its operands if `typing`.
pub(crate) fn module_uses(m: &Module, src: &[u8], typing: bool) -> ModuleUses {
    let mut scan = Scan {
        src,
        seen: FxHashSet::default(),
        out: ModuleUses::default(),
    };
    // The linker keeps no tokens: the module is lexed again, in full.
    let lexed = lex_bodies_into(m.file, src, Vec::new(), Bodies::Full);
    let all = &lexed.tokens;
    let within = |span: Span| {
        let from = all.partition_point(|t| t.lo < span.lo);
        let to = all.partition_point(|t| t.lo < span.hi);
        &all[from..to]
    };
    for item in &m.items {
        let body = match &item.kind {
            ItemKind::Function(f) => f.body.as_ref(),
            _ => None,
        };
        let head = Span::new(item.span.lo, body.map_or(item.span.hi, |b| b.span.lo));
        let toks = within(head);
        for t in toks.iter().filter(|t| t.kind == TokenKind::Directive) {
            scan.named(Span::new(t.lo, t.hi));
        }
        scan.pragma(toks);
        for (name, span) in forms(&item.kind, toks, src) {
            scan.operator(span, name);
        }
        if let Some(body) = body {
            let src = scan.src;
            walk_body(within(body.span), src, &mut scan);
        }
    }
    if typing {
        scan.out.slips = check_module(m, src, within);
    }
    scan.out
}

/// What a walk of a body's statements ([`walk_body`]) does with each.
pub(super) trait Statements {
    /// A `{` (`open`) or `}` (`close`) inside the body.
    fn open(&mut self) {}
    fn close(&mut self) {}
    /// The directive statement at `toks[i]`; returns the index after it.
    fn directive(&mut self, toks: &[Token], i: usize) -> usize;
    /// The instruction whose opcode is `toks[i]`; returns the index after it.
    fn instruction(&mut self, toks: &[Token], i: usize) -> usize;
}

/// Walks the statements of a body (its tokens from `{` through `}`): blocks,
/// directives, `.loc` (passed over: it has no `;`), labels, and instructions after
/// their guard (`@p`, `@!p`).
pub(super) fn walk_body(toks: &[Token], src: &[u8], walk: &mut impl Statements) {
    let punct = |t: &Token, p: &[u8]| t.kind == TokenKind::Punct && t.text(src) == p;
    let mut i = 1;
    while i < toks.len() {
        let t = toks[i];
        i = match t.kind {
            TokenKind::Punct if punct(&t, b"{") => {
                walk.open();
                i + 1
            }
            // The body's own `}` is its last token.
            TokenKind::Punct if punct(&t, b"}") && i + 1 < toks.len() => {
                walk.close();
                i + 1
            }
            TokenKind::Directive if t.text(src) == b".loc" => loc_end(toks, i, src),
            TokenKind::Directive => walk.directive(toks, i),
            TokenKind::Punct if punct(&t, b"@") => {
                let mut k = i + 1;
                if toks.get(k).is_some_and(|t| punct(t, b"!")) {
                    k += 1;
                }
                walk.instruction(toks, k + 1)
            }
            TokenKind::Ident if toks.get(i + 1).is_some_and(|n| punct(n, b":")) => i + 2,
            TokenKind::Ident => walk.instruction(toks, i),
            _ => i + 1,
        };
    }
}

/// The index after the `.loc` statement at `toks[i]`, which has no `;`: `.loc file
/// line column`, then `, function_name label[+N]` or `, inlined_at file line
/// column` (as the parser's `loc_args` reads it).
pub(crate) fn loc_end(toks: &[Token], i: usize, src: &[u8]) -> usize {
    let text = |k: usize| toks.get(k).map_or(&b""[..], |t| t.text(src));
    let int = |k: usize| toks.get(k).is_some_and(|t| t.kind == TokenKind::Int);
    let mut k = i + 1;
    while k < i + 4 && int(k) {
        k += 1;
    }
    while text(k) == b"," {
        match text(k + 1) {
            b"function_name" => {
                k += 3;
                if text(k) == b"+" && int(k + 1) {
                    k += 2;
                }
            }
            b"inlined_at" => {
                k += 2;
                let stop = k + 3;
                while k < stop && int(k) {
                    k += 1;
                }
            }
            _ => break,
        }
    }
    k
}

/// The uses at module scope that no single token names, as the table's names for
/// them: `generic(x)` in an initializer, a label with an offset (`$L+4`) or a
/// difference of labels in a debug section, a `.file` with a timestamp, an `.entry`
/// declared without a body.
fn forms(kind: &ItemKind, toks: &[Token], src: &[u8]) -> Vec<(&'static [u8], Span)> {
    let text = |i: usize| toks.get(i).map_or(&b""[..], |t| t.text(src));
    let ident = |i: usize| toks.get(i).is_some_and(|t| t.kind == TokenKind::Ident);
    let span = |a: usize, b: usize| Span::new(toks[a].lo, toks[b].hi);
    let mut out = Vec::new();
    for i in 0..toks.len() {
        if ident(i) && text(i) == b"generic" && text(i + 1) == b"(" {
            out.push((&b"generic()"[..], span(i, i + 1)));
        }
        if let ItemKind::Section(_) = kind {
            if ident(i) && text(i + 1) == b"+" {
                out.push((&b"label+offset"[..], span(i, i + 2)));
            }
            if ident(i) && text(i + 1) == b"-" && ident(i + 2) {
                out.push((&b"label-label"[..], span(i, i + 2)));
            }
        }
    }
    match kind {
        // `.file 1 "a.cu", 1700000000, 123`
        ItemKind::File(_) if toks.iter().any(|t| t.text(src) == b",") => {
            out.push((&b".file timestamp"[..], span(0, toks.len() - 1)));
        }
        ItemKind::Function(f) if f.kind == FuncKind::Entry && f.body.is_none() => {
            out.push((&b".entry prototype"[..], span(0, toks.len() - 1)));
        }
        _ => {}
    }
    out
}

struct Scan<'s> {
    src: &'s [u8],
    /// Texts already looked up.
    seen: FxHashSet<&'s [u8]>,
    out: ModuleUses,
}

impl Statements for Scan<'_> {
    fn directive(&mut self, toks: &[Token], i: usize) -> usize {
        self.directive_words(toks, i)
    }

    fn instruction(&mut self, toks: &[Token], i: usize) -> usize {
        self.instruction_words(toks, i)
    }
}

impl<'s> Scan<'s> {
    /// A directive or special register: a use if the table has a row of that name
    /// (the first of each).
    fn named(&mut self, span: Span) {
        let text = &self.src[span.range()];
        if let Some(need) = table().named(text) {
            if self.seen.insert(text) {
                self.out.uses.push(Use { span, need });
            }
        }
    }

    /// A form that the table names `name` (`generic()`, `tex offset`), at `span`.
    fn operator(&mut self, span: Span, name: &'static [u8]) {
        if self.seen.insert(name) {
            if let Some(need) = table().named(name) {
                self.out.uses.push(Use { span, need });
            }
        }
    }

    /// A `.pragma "name ..."` at the start of `toks`: the table names it `.pragma
    /// name` (`"enable_smem_spilling"` needs 8.7).
    fn pragma(&mut self, toks: &[Token]) {
        let src = self.src;
        let [directive, string, ..] = toks else {
            return;
        };
        if directive.text(src) != b".pragma" || string.kind != TokenKind::String {
            return;
        }
        let text = string.text(src);
        let inner = &text[1..text.len().saturating_sub(1).max(1)];
        let word = inner
            .split(|b| b.is_ascii_whitespace())
            .next()
            .unwrap_or_default();
        let name = [&b".pragma "[..], word].concat();
        if let Some(need) = table().named(&name) {
            if self.seen.insert(text) {
                let span = Span::new(directive.lo, string.hi);
                self.out.uses.push(Use { span, need });
            }
        }
    }

    /// A directive statement at `toks[i]` (a declaration, `.pragma`, ...): its words.
    fn directive_words(&mut self, toks: &[Token], i: usize) -> usize {
        let src = self.src;
        self.pragma(&toks[i..]);
        let mut i = i;
        while i < toks.len() && !(toks[i].kind == TokenKind::Punct && toks[i].text(src) == b";") {
            if toks[i].kind == TokenKind::Directive {
                self.named(Span::new(toks[i].lo, toks[i].hi));
            }
            i += 1;
        }
        i
    }

    /// The instruction whose opcode is token `i`: its word and the special
    /// registers among its operands; returns the index after its `;`.
    fn instruction_words(&mut self, toks: &[Token], i: usize) -> usize {
        let Some(opcode) = toks.get(i).filter(|t| t.kind == TokenKind::Ident) else {
            return i;
        };
        let src = self.src;
        let end = word_end(src, opcode.lo as usize);
        let word = &src[opcode.lo as usize..end];
        let span = Span::new(opcode.lo, end as u32);
        if self.seen.insert(word) {
            match table().lookup(word) {
                Lookup::Known(need) if need != Need::NONE => {
                    self.out.uses.push(Use { span, need });
                }
                Lookup::Known(_) => {}
                Lookup::Unknown => self.out.unknown.push(span),
            }
        }
        // Top-level commas (outside `[]` and `{}`): a texture fetch with a third
        // operand has an offset (ptxas 12.9: "Feature 'offset operand' requires
        // .target sm_30 or higher"); a `|` after its destination, a predicate result
        // ("Feature 'Texture instruction with optional predicate result' requires
        // .target sm_60 or higher").
        let (mut depth, mut commas, mut bar) = (0u32, 0u32, false);
        let mut k = i + 1;
        while let Some(t) = toks.get(k) {
            k += 1;
            let name = t.text(src);
            if t.kind == TokenKind::Punct {
                match name {
                    b";" => break,
                    b"[" | b"{" => depth += 1,
                    b"]" | b"}" => depth = depth.saturating_sub(1),
                    b"," if depth == 0 => commas += 1,
                    b"|" if depth == 0 && commas == 0 => bar = true,
                    _ => {}
                }
            }
            if t.kind == TokenKind::Ident && name[0] == b'%' && may_be_special(name) {
                self.named(Span::new(t.lo, t.hi));
            }
        }
        if matches!(opcode.text(src), b"tex" | b"tld4") {
            if commas >= 2 {
                self.operator(span, b"tex offset");
            }
            if bar {
                self.operator(span, b"tex predicate");
            }
        }
        k
    }
}

/// Whether the `%`-name `name` may be a special register that needs more than the
/// floor: the registers producers write end in a digit (`%r12`, `%rd3`), which of
/// those special registers only the performance monitors (`%pm4`, `%pm0_64`),
/// `%clock64` and `%reserved_smem_offset_0` and `_1` do (a test holds every `%` row
/// of the table above the floor to this; `%envreg3` needs nothing).
fn may_be_special(name: &[u8]) -> bool {
    !name.last().is_some_and(u8::is_ascii_digit)
        || name.starts_with(b"%pm")
        || name == b"%clock64"
        || name.starts_with(b"%reserved_smem_offset_")
}

/// The end of the opcode word that starts at `lo`: the opcode, then its modifiers
/// (`.global`, `.L2::128B`, `.2d`), glued or, as ptxas allows, after whitespace (a
/// modifier after whitespace starts with a letter: `.5` is a number).
pub(crate) fn word_end(src: &[u8], lo: usize) -> usize {
    let is_name = is_name_byte;
    let mut p = lo;
    while p < src.len() && is_name(src[p]) {
        p += 1;
    }
    loop {
        let mut q = p;
        while q < src.len() && src[q].is_ascii_whitespace() {
            q += 1;
        }
        let next = src.get(q + 1).copied().unwrap_or(0);
        let modifier =
            src.get(q) == Some(&b'.') && is_name(next) && (q == p || !next.is_ascii_digit());
        if !modifier {
            return p;
        }
        p = q + 1;
        while p < src.len() && (is_name(src[p]) || src[p] == b':') {
            p += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of what `src` uses that needs more than the base ISA, and of the
    /// opcode words the table does not know.
    fn uses(src: &str) -> (Vec<String>, Vec<String>) {
        let parsed = crate::parse::parse_module(crate::source::FileId(0), src.as_bytes());
        let u = module_uses(&parsed.module, src.as_bytes(), false);
        let text = |s: &Span| src[s.range()].to_string();
        (
            u.uses.iter().map(|u| text(&u.span)).collect(),
            u.unknown.iter().map(text).collect(),
        )
    }

    #[test]
    fn a_module_uses_its_words_directives_registers_and_forms() {
        let (found, unknown) = uses(
            ".version 8.0\n.target sm_90\n.address_size 64\n\
             .file 1 \"a.cu\", 1700000000, 12\n\
             .weak .global .u32 w;\n\
             .global .u64 p = generic(w);\n\
             .visible .entry e();\n\
             .visible .entry e() .explicitcluster\n{\n\
             .reg .b32 %r<3>;\n\
             .pragma \"enable_smem_spilling\";\n\
             $L: mov.u32 %r1, %cluster_ctarank;\n\
             @%r1 shfl.sync.idx.b32 %r1, %r2, 1, 31, -1;\n\
             shfl.sync.idx.b32 %r1, %r2, 1, 31, -1;\n\
             frobnicate.u32 %r1;\n\
             tex.2d.v4.f32.f32 {%r1, %r1, %r1, %r1}, [t, {%r2, %r2}], {%r1, %r1};\n\
             tld4.r.2d.v4.f32.f32 {%r1, %r1, %r1, %r1}|%r2, [t, {%r2, %r2}];\n\
             ret;\n}\n\
             .section .debug_info { .b64 $L+4 }\n",
        );
        assert_eq!(
            found,
            [
                ".file 1 \"a.cu\", 1700000000, 12",
                ".weak",
                "generic(",
                ".visible .entry e();",
                ".explicitcluster",
                ".pragma \"enable_smem_spilling\"",
                "%cluster_ctarank",
                "shfl.sync.idx.b32",
                "tex.2d.v4.f32.f32",
                // The word (sm_20), then its predicate result (7.1, sm_60).
                "tld4.r.2d.v4.f32.f32",
                "tld4.r.2d.v4.f32.f32",
                "$L+4",
            ]
        );
        assert_eq!(unknown, ["frobnicate.u32"]);
    }

    /// A `.loc` has no `;`: the instruction after it is read, not skipped with it.
    #[test]
    fn the_instruction_after_a_loc_is_scanned() {
        let (found, _) = uses(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .file 1 \"a.cu\"\n\
             .visible .entry e()\n{\n.reg .b32 %r<3>;\n\
             .loc 1 2 3\n\
             shfl.sync.idx.b32 %r1, %r2, 1, 31, -1;\n\
             ret;\n}\n",
        );
        assert_eq!(found, ["shfl.sync.idx.b32"]);
    }

    #[test]
    fn every_special_register_of_the_table_is_looked_up() {
        let names = table().names();
        let specials: Vec<&[u8]> = names
            .filter(|n| n.starts_with(b"%") && table().named(n) != Some(Need::NONE))
            .collect();
        assert!(specials.len() > 30, "{}", specials.len());
        for name in specials {
            assert!(may_be_special(name), "{}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn opcode_words_end_before_the_operands() {
        fn end(s: &str) -> &str {
            &s[..word_end(s.as_bytes(), 0)]
        }
        assert_eq!(
            end("ld.global.L2::128B.u32 %r1, [%rd1];"),
            "ld.global.L2::128B.u32"
        );
        assert_eq!(end("ret;"), "ret");
        assert_eq!(end("bar.warp .sync 0;"), "bar.warp .sync");
        assert_eq!(end("tex.2d.v4.f32.s32 {%f1"), "tex.2d.v4.f32.s32");
        assert_eq!(end("mov.f32 .5;"), "mov.f32");
    }
}
