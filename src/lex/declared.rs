//! Whether a body declares a name where it is used, read again from the source.
//!
//! The compact lexer passes over plain `%`-register declarations without tokens, so
//! the body walk cannot tell an undeclared `%`-name from one declared there. Only a
//! call's operands and callee need to know (ptxas refuses a call naming an
//! undeclared one: "Illegal argument for formal parameter", "Call to '%rd1' requires
//! call prototype"), and those are few: for them the body is lexed again in full,
//! up to the use, instead of keeping every declaration of every body.

use super::{declares, Bodies, Lexer, Token, TokenKind};
use crate::source::FileId;

/// Whether the body whose `{` is at `open` declares `name` in the block of position
/// `at` or an enclosing one, before `at`. Where a declaration cannot be read (a
/// count that is not a decimal number), it is taken to declare every name of its
/// stem: this never refuses what ptxas may accept.
pub(crate) fn declared_before(src: &[u8], open: usize, at: usize, name: &[u8]) -> bool {
    let mut lexer = Lexer::new(FileId(0), src, Vec::new(), Bodies::Full);
    lexer.pos = open;
    lexer.full_body();
    let toks = lexer.out.tokens;
    let mut scope = Declared::default();
    let mut statement_start = true;
    let mut i = 0;
    while let Some(&t) = toks.get(i) {
        if t.lo as usize >= at {
            break;
        }
        let text = t.text(src);
        match (t.kind, text) {
            (TokenKind::Punct, b"{") => {
                scope.depth += 1;
                statement_start = true;
            }
            (TokenKind::Punct, b"}") => {
                scope.close();
                statement_start = true;
            }
            (TokenKind::Punct, b";" | b":") => statement_start = true,
            (TokenKind::Directive, _) if statement_start && super::class::is_state_space(text) => {
                i = scope.declaration(src, &toks, i);
                statement_start = true;
                continue;
            }
            _ => statement_start = false,
        }
        i += 1;
    }
    scope.names.iter().any(|d| match d.count {
        Count::Exact(n) => declares(d.name, n, name),
        Count::Unread => name.starts_with(d.name),
    })
}

/// How many names a declared name stands for.
#[derive(Clone, Copy)]
enum Count {
    /// `name` (`None`) or `name<N>`.
    Exact(Option<u32>),
    /// `name<...>` with a count this does not read.
    Unread,
}

struct Name<'s> {
    name: &'s [u8],
    count: Count,
    depth: u32,
}

/// The names declared in the open blocks.
#[derive(Default)]
struct Declared<'s> {
    names: Vec<Name<'s>>,
    depth: u32,
}

impl<'s> Declared<'s> {
    /// A block ends: its names are gone.
    fn close(&mut self) {
        while self.names.last().is_some_and(|n| n.depth >= self.depth) {
            self.names.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    /// Records the names of the declaration whose first token is `toks[i]`; returns
    /// the index after its `;` (or the end).
    fn declaration(&mut self, src: &'s [u8], toks: &[Token], mut i: usize) -> usize {
        let punct = |t: &Token, p: &[u8]| t.kind == TokenKind::Punct && t.text(src) == p;
        // A declarator's name is the first identifier of the statement and the first
        // after each comma outside brackets and initializers.
        let mut expect_name = true;
        let mut nesting = 0u32;
        while let Some(t) = toks.get(i) {
            i += 1;
            if nesting == 0 && punct(t, b";") {
                break;
            }
            match t.kind {
                TokenKind::Punct => match t.text(src) {
                    b"[" | b"{" | b"(" => nesting += 1,
                    b"]" | b"}" | b")" => nesting = nesting.saturating_sub(1),
                    b"," if nesting == 0 => expect_name = true,
                    // An initializer's identifiers are not declared.
                    b"=" => expect_name = false,
                    _ => {}
                },
                TokenKind::Ident if expect_name && nesting == 0 => {
                    expect_name = false;
                    let count = match toks.get(i..i + 3) {
                        Some([lt, n, gt]) if punct(lt, b"<") && punct(gt, b">") => {
                            match std::str::from_utf8(n.text(src))
                                .ok()
                                .and_then(|s| s.parse().ok())
                            {
                                Some(n) => Count::Exact(Some(n)),
                                None => Count::Unread,
                            }
                        }
                        Some([lt, ..]) if punct(lt, b"<") => Count::Unread,
                        _ => Count::Exact(None),
                    };
                    self.names.push(Name {
                        name: t.text(src),
                        count,
                        depth: self.depth,
                    });
                }
                _ => {}
            }
        }
        i
    }
}

#[cfg(test)]
mod tests {
    use super::declared_before;

    /// A name is declared from its declaration to the end of its block, by
    /// `name<N>` ranges too; a sibling block's declarations are gone, and a
    /// declaration after the use does not count.
    #[test]
    fn declarations_in_scope_at_a_use() {
        let src =
            "{\n .reg .b64 %rd<14>;\n { .param .b32 %in_ar0, %x; }\n { .param .b32 %out[2];\n \
                   call (%out), f, (%rd13);\n }\n .reg .b32 %late;\n}";
        let at = src.find("call").unwrap();
        let declared = |name: &str| declared_before(src.as_bytes(), 0, at, name.as_bytes());
        assert!(declared("%rd13"));
        assert!(declared("%rd1"));
        assert!(declared("%out"));
        assert!(!declared("%rd14"));
        assert!(!declared("%in_ar0"), "a sibling block's");
        assert!(!declared("%x"), "a sibling block's");
        assert!(!declared("%late"), "declared after the use");
        assert!(!declared("%r1"));
    }

    /// A count it cannot read declares every name of its stem (never a false
    /// refusal).
    #[test]
    fn an_unread_count_declares_the_stem() {
        let src = "{\n .reg .b32 %r<0x10>;\n call f, (%r12);\n}";
        let at = src.find("call").unwrap();
        assert!(declared_before(src.as_bytes(), 0, at, b"%r12"));
        assert!(!declared_before(src.as_bytes(), 0, at, b"%q1"));
    }
}
