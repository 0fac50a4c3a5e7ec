//! What one module uses, by the table: every distinct instruction opcode word, the
//! special registers its operands read and the directives it writes, each with the
//! first place it occurs and what the table says it needs.
//!
//! A [`Recorder`] collects it, from an item, a body or a statement at a time. Where
//! a link asks (lowering the version or target, the link map, `--verify`), the
//! parse records as it lexes each body compactly: the lexer notes where each
//! instruction starts and each register declaration it skipped, the
//! directive statements keep their tokens, and a body that may read a special
//! register above the floor (`specials.rs`) or has a texture fetch is lexed in full
//! for it. Opcode words are classified through a table kept from module to module
//! (`words.rs`), so most instructions cost a vector compare and one probe.
//! [`module_uses`] finds the same by lexing a module again in full: for `ptxld
//! check`, which types operands from those tokens, and for modules the parse could
//! not record.

use rustc_hash::FxHashMap;

use super::table::{table, Lookup, Need};
use super::typing::{check_module, Slip};
use super::words::{Class, Probe, Segment, WordTable};
use crate::ir::{FuncKind, Item, ItemKind, Module};
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

/// Scans module `m` (its source `src`), and types its operands if `typing`: the
/// module is lexed again in full.
pub(crate) fn module_uses(m: &Module, src: &[u8], typing: bool) -> ModuleUses {
    let mut rec = Recorder::default();
    // The linker keeps no tokens: the module is lexed again, in full.
    let lexed = lex_bodies_into(m.file, src, Vec::new(), Bodies::Full);
    let within = |span: Span| tokens_within(&lexed.tokens, span);
    for item in &m.items {
        let body = match &item.kind {
            ItemKind::Function(f) => f.body.as_ref(),
            _ => None,
        };
        rec.head(src, item, within(head_span(item)));
        if let Some(body) = body {
            rec.full_body(src, within(body.span));
        }
    }
    let mut out = rec.finish();
    if typing {
        out.slips = check_module(m, src, within);
    }
    out
}

/// The tokens of `all` (in source order) that start within `span`.
pub(crate) fn tokens_within(all: &[Token], span: Span) -> &[Token] {
    let from = all.partition_point(|t| t.lo < span.lo);
    let to = all.partition_point(|t| t.lo < span.hi);
    &all[from..to]
}

/// An item's span up to its body: the declaration, its directives and attributes.
pub(crate) fn head_span(item: &Item) -> Span {
    let body = match &item.kind {
        ItemKind::Function(f) => f.body.as_ref(),
        _ => None,
    };
    Span::new(item.span.lo, body.map_or(item.span.hi, |b| b.span.lo))
}

/// What a walk of a body's statements ([`walk_body`]) does with each.
pub(super) trait Statements {
    /// A `{` (`open`) or `}` (`close`) inside the body.
    fn open(&mut self) {}
    fn close(&mut self) {}
    /// The directive statement at `toks[i]` (tokens of `src`); returns the index
    /// after it.
    fn directive(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize;
    /// The instruction whose opcode is `toks[i]`; returns the index after it.
    fn instruction(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize;
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
            TokenKind::Directive => walk.directive(src, toks, i),
            TokenKind::Punct if punct(&t, b"@") => {
                let mut k = i + 1;
                if toks.get(k).is_some_and(|t| punct(t, b"!")) {
                    k += 1;
                }
                walk.instruction(src, toks, k + 1)
            }
            TokenKind::Ident if toks.get(i + 1).is_some_and(|n| punct(n, b":")) => i + 2,
            TokenKind::Ident => walk.instruction(src, toks, i),
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
    // Only initializers and debug sections have such operands (a function's head
    // is most of a module's declarations).
    if matches!(kind, ItemKind::Variable(_) | ItemKind::Section(_)) {
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

/// What a module uses, recorded an item, a body or a statement at a time, in any
/// order: the first occurrence (in the source) of each text, an opcode word, a
/// directive, a special register or a form.
#[derive(Default)]
pub(crate) struct Recorder {
    /// Each text recorded, and where `out` has it.
    seen: FxHashMap<Box<[u8]>, Seen>,
    /// Opcode words classified by their segments without hashing (`words.rs`):
    /// this thread's table, taken at the first compactly lexed body.
    short: Option<Box<WordTable>>,
    out: ModuleUses,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Some(table) = self.short.take() {
            table.give_back();
        }
    }
}

/// What a recorded text is.
#[derive(Clone, Copy)]
enum Seen {
    /// `out.uses[i]`.
    Use(usize),
    /// `out.unknown[i]`.
    Unknown(usize),
    /// Nothing beyond the base ISA.
    Floor,
}

impl Statements for Recorder {
    fn directive(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        self.directive_words(src, toks, i)
    }

    fn instruction(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        self.instruction_words(src, toks, i)
    }
}

/// A body lexed compactly: its directive statements, which keep their tokens (its
/// instructions' words come from the lexer).
struct Directives<'r>(&'r mut Recorder);

impl Statements for Directives<'_> {
    fn directive(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        self.0.directive_words(src, toks, i)
    }

    fn instruction(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        let semi = |t: &Token| t.kind == TokenKind::Punct && t.text(src) == b";";
        toks[i..]
            .iter()
            .position(semi)
            .map_or(toks.len(), |k| i + k + 1)
    }
}

impl Recorder {
    /// What the module uses, in source order.
    pub fn finish(mut self) -> ModuleUses {
        let mut out = std::mem::take(&mut self.out);
        out.uses.sort_by_key(|u| u.span.lo);
        out.unknown.sort_by_key(|s| s.lo);
        out
    }

    /// Records `key`, the text at `span` (or a form's name), unless an occurrence as
    /// early was recorded; `find` says what it needs.
    fn record(&mut self, key: &[u8], span: Span, find: impl FnOnce() -> Lookup) -> Seen {
        if let Some(&seen) = self.seen.get(key) {
            let earlier = |s: &mut Span| {
                if span.lo < s.lo {
                    *s = span;
                }
            };
            match seen {
                Seen::Use(i) => earlier(&mut self.out.uses[i].span),
                Seen::Unknown(i) => earlier(&mut self.out.unknown[i]),
                Seen::Floor => {}
            }
            return seen;
        }
        let seen = match find() {
            Lookup::Known(need) if need != Need::NONE => {
                self.out.uses.push(Use { span, need });
                Seen::Use(self.out.uses.len() - 1)
            }
            Lookup::Known(_) => Seen::Floor,
            Lookup::Unknown => {
                self.out.unknown.push(span);
                Seen::Unknown(self.out.unknown.len() - 1)
            }
        };
        self.seen.insert(key.into(), seen);
        seen
    }

    /// A directive or special register at `span`: a use if the table has a row of
    /// that name above the floor (looked up first: most directives are at the
    /// floor, and are then not recorded at all).
    fn named(&mut self, src: &[u8], span: Span) {
        let text = &src[span.range()];
        if let Some(need) = table().named_above_floor(text) {
            self.record(text, span, || Lookup::Known(need));
        }
    }

    /// A form that the table names `name` (`generic()`, `tex offset`), at `span`.
    fn operator(&mut self, span: Span, name: &'static [u8]) {
        self.record(name, span, || {
            Lookup::Known(table().named_above_floor(name).unwrap_or(Need::NONE))
        });
    }

    /// The opcode word that starts at `lo`, which `lookup` looks up where it is
    /// new: what it is, and where it ends.
    fn word(
        &mut self,
        src: &[u8],
        lo: usize,
        lookup: impl FnOnce(&[u8]) -> Lookup,
    ) -> (Seen, usize) {
        let end = word_end(src, lo);
        let word = &src[lo..end];
        let seen = self.record(word, Span::new(lo as u32, end as u32), || lookup(word));
        (seen, end)
    }

    /// The head of `item` (everything before its body), lexed in full as `toks`:
    /// its directives, a `.pragma` and the forms no single token names.
    pub fn head(&mut self, src: &[u8], item: &Item, toks: &[Token]) {
        for t in toks.iter().filter(|t| t.kind == TokenKind::Directive) {
            self.named(src, t.span());
        }
        self.pragma(src, toks);
        for (name, span) in forms(&item.kind, toks, src) {
            self.operator(span, name);
        }
    }

    /// A body lexed in full (its tokens from `{` through `}`).
    pub fn full_body(&mut self, src: &[u8], toks: &[Token]) {
        walk_body(toks, src, self);
    }

    /// A body lexed compactly ([`crate::lex::lex_body`] recording): its tokens,
    /// where its instructions start (their guard or opcode) and where its register
    /// declarations that kept no token start. Returns false, with part of it
    /// recorded, if it must be recorded from its tokens in full instead: it has a
    /// texture fetch, whose operands tell what it needs.
    pub fn compact_body(
        &mut self,
        src: &[u8],
        toks: &[Token],
        words: &[u32],
        declarations: &[u32],
    ) -> bool {
        let mut table = self.short.take().unwrap_or_else(WordTable::take);
        let mut texture = false;
        for &lo in words {
            let lo = after_guard(src, lo as usize);
            let short = Segment::at(src, lo);
            let slot = match short.as_ref().map(|w| table.probe(w)) {
                Some(Probe::Floor | Probe::Seen) => continue,
                Some(Probe::Texture) => {
                    texture = true;
                    break;
                }
                Some(Probe::Again(slot, lookup)) => {
                    self.word(src, lo, |_| lookup);
                    table.mark(slot);
                    continue;
                }
                Some(Probe::New(slot)) => Some(slot),
                None => None,
            };
            texture = matches!(opcode(src, lo), b"tex" | b"tld4");
            let class = match self.word(src, lo, |word| table.lookup(word)).0 {
                _ if texture => Class::Texture,
                Seen::Floor => Class::Floor,
                Seen::Use(i) => Class::Other(Lookup::Known(self.out.uses[i].need)),
                Seen::Unknown(_) => Class::Other(Lookup::Unknown),
            };
            if let (Some(slot), Some(word)) = (slot, short) {
                table.set(slot, word, class);
            }
            if texture {
                break;
            }
        }
        self.short = Some(table);
        if texture {
            return false;
        }
        for &lo in declarations {
            // `.reg .v4 .b32 %r<4>;`: its directives, up to the first name.
            let mut p = lo as usize;
            while src.get(p) == Some(&b'.') {
                let end = p
                    + 1
                    + src[p + 1..]
                        .iter()
                        .take_while(|&&b| is_name_byte(b))
                        .count();
                self.named(src, Span::new(p as u32, end as u32));
                p = end
                    + src[end..]
                        .iter()
                        .take_while(|b| b.is_ascii_whitespace())
                        .count();
            }
        }
        walk_body(toks, src, &mut Directives(self));
        true
    }

    /// A `.pragma "name ..."` at the start of `toks`: the table names it `.pragma
    /// name` (`"enable_smem_spilling"` needs 8.7).
    fn pragma(&mut self, src: &[u8], toks: &[Token]) {
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
        let span = Span::new(directive.lo, string.hi);
        self.record(&name, span, || {
            Lookup::Known(table().named_above_floor(&name).unwrap_or(Need::NONE))
        });
    }

    /// A directive statement at `toks[i]` (a declaration, `.pragma`, ...): its words.
    fn directive_words(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        self.pragma(src, &toks[i..]);
        let mut i = i;
        while i < toks.len() && !(toks[i].kind == TokenKind::Punct && toks[i].text(src) == b";") {
            if toks[i].kind == TokenKind::Directive {
                self.named(src, toks[i].span());
            }
            i += 1;
        }
        i
    }

    /// The instruction whose opcode is token `i`: its word and the special
    /// registers among its operands; returns the index after its `;`.
    fn instruction_words(&mut self, src: &[u8], toks: &[Token], i: usize) -> usize {
        let Some(opcode) = toks.get(i).filter(|t| t.kind == TokenKind::Ident) else {
            return i;
        };
        let (_, end) = self.word(src, opcode.lo as usize, |word| table().lookup(word));
        let span = Span::new(opcode.lo, end as u32);
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
                self.named(src, t.span());
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

/// Where the opcode of the instruction at `lo` starts: after its guard (`@%p1`,
/// `@!p`, with whitespace as the lexer allows), if it has one.
fn after_guard(src: &[u8], lo: usize) -> usize {
    if src[lo] != b'@' {
        return lo;
    }
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let space = |p: usize| p + src[p..].iter().take_while(|b| is_space(b)).count();
    let mut p = space(lo + 1);
    if src.get(p) == Some(&b'!') {
        p = space(p + 1);
    }
    // The guard: a `%`-name or an identifier.
    p += usize::from(src.get(p) == Some(&b'%'));
    p += src[p..].iter().take_while(|&&b| is_name_byte(b)).count();
    space(p)
}

/// The opcode of the word at `lo`: its name before the first `.`.
fn opcode(src: &[u8], lo: usize) -> &[u8] {
    let n = src[lo..].iter().take_while(|&&b| is_name_byte(b)).count();
    &src[lo..lo + n]
}

/// Whether the `%`-name `name` may be a special register that needs more than the
/// floor: the registers producers write end in a digit (`%r12`, `%rd3`), which of
/// those special registers only the performance monitors (`%pm4`, `%pm0_64`),
/// `%clock64` and `%reserved_smem_offset_0` and `_1` do (a test holds every `%` row
/// of the table above the floor to this; `%envreg3` needs nothing).
pub(super) fn may_be_special(name: &[u8]) -> bool {
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
    /// What `src` uses, scanned afterwards ([`module_uses`]) and, where the parse
    /// records it, as recorded while its bodies were lexed (which must agree).
    fn scanned_and_recorded(src: &[u8]) -> (ModuleUses, Option<ModuleUses>) {
        let file = crate::source::FileId(0);
        let parsed = crate::parse::parse_module(file, src);
        let scanned = module_uses(&parsed.module, src, false);
        let recorded = crate::parse::parse_module_deferred(file, src, Vec::new(), true)
            .module
            .recorded_uses
            .map(|u| *u);
        if let Some(r) = &recorded {
            assert_eq!(r, &scanned, "{}", String::from_utf8_lossy(src));
        }
        (scanned, recorded)
    }

    fn uses(src: &str) -> (Vec<String>, Vec<String>) {
        let (u, recorded) = scanned_and_recorded(src.as_bytes());
        assert!(recorded.is_some(), "{src}");
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

    /// What the parse records is what a scan afterwards finds, for every module of
    /// the fixtures; nearly all are recorded.
    #[test]
    fn the_parse_records_what_a_scan_finds_in_every_fixture() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut stack = vec![root];
        let (mut modules, mut recorded) = (0, 0);
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "ptx") {
                    let src = std::fs::read(&path).unwrap();
                    modules += 1;
                    recorded += usize::from(scanned_and_recorded(&src).1.is_some());
                }
            }
        }
        assert!(modules > 300, "{modules}");
        assert!(recorded * 10 > modules * 9, "{recorded} of {modules}");
    }

    /// The parse's record takes what it cannot read from a compactly lexed body
    /// from the body lexed in full: special registers (also in a comment, which is
    /// then no use), texture fetches' operands, modifiers after whitespace, long
    /// words, and register declarations that kept no token.
    #[test]
    fn the_record_reads_what_compact_lexing_leaves_out() {
        let (found, unknown) = uses(
            ".version 8.3\n.target sm_90\n.address_size 64\n\
             .global .texref t;\n\
             .visible .entry e()\n{\n\
             .reg .b32 %r<3>;\n.reg .b128 %rq<2>;\n.reg .pred %p<2>;\n\
             // %clock64 and %lanemask_lt in a comment\n\
             mov.u32 %r1, %tid.x;\n\
             bar.warp .sync 0;\n\
             @%p1 shfl.sync.idx.b32 %r1, %r2, 1, 31, -1;\n\
             frobnicate.with.a.very.long.list.of.modifiers.u32 %r1;\n\
             ret;\n}\n\
             .visible .entry f()\n{\n.reg .b32 %r<3>;\n.reg .b64 %rd<2>;\n\
             mov.u32 %r1, %lanemask_lt;\n\
             mov.u64 %rd1, %clock64;\n\
             ret;\n}\n\
             .visible .entry g()\n{\n.reg .f32 %f<5>;\n.reg .b32 %r<3>;\n\
             tex.2d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [t, {%r1, %r2}], {%r1, %r1};\n\
             ret;\n}\n",
        );
        assert_eq!(
            found,
            [
                ".b128",
                "bar.warp .sync",
                "shfl.sync.idx.b32",
                "%lanemask_lt",
                "%clock64",
                "tex.2d.v4.f32.s32",
            ]
        );
        assert_eq!(
            unknown,
            ["frobnicate.with.a.very.long.list.of.modifiers.u32"]
        );
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
