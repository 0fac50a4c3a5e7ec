//! The function-scope variables a call's operand may name, looked up as ptxas looks
//! them up: a variable is visible from its declaration to the end of its block
//! (`{ ... }`), an inner block's declaration hides an outer one, and a sibling
//! block's declarations are gone. The calling function's parameters are visible in
//! the whole body, enclosing every block: the walk looks them up itself when no
//! variable here has the name (`body.rs`), so that a body without calls costs
//! nothing per parameter. docs/linking.md ("Declarations checked in each module")
//! has the experiments.
//!
//! The compact lexer skips plain `%`-register declarations (`.reg .b32 %r<5>;`),
//! so in a compactly lexed body a `%`-name's absence here proves nothing by itself:
//! the walk then looks among the lexer's definitions of the body (`lex::Def`).
//! `%`-names declared otherwise are kept: GCC names its call-block `.param`s
//! `%out_arg1`, whose alignment the linker may raise. Special registers (`%laneid`)
//! need no declaration.

use crate::ir::{LocalParam, StateSpace};
use crate::lex::declares;
use crate::source::Span;

/// What a name in scope is.
#[derive(Clone, Debug)]
pub(super) enum Local {
    /// A variable the body declares in `space`; for `.param`, its declaration as the
    /// call records it.
    Variable {
        space: StateSpace,
        param: Option<LocalParam>,
    },
    /// A parameter (or return parameter) of the calling function, in `space` (not
    /// kept in a [`Scope`]: the walk makes one for the lookup that finds it).
    Formal { space: StateSpace },
}

/// One declared name.
#[derive(Clone, Debug)]
struct Entry {
    /// The name as declared (without `<N>`).
    name: Span,
    /// `name<N>` declares `name0` ... `name{N-1}`.
    count: Option<u32>,
    /// The block depth that declared it (0: the whole function).
    depth: u32,
    local: Local,
}

/// The names in scope at the walk's position, innermost last.
#[derive(Default)]
pub(super) struct Scope {
    entries: Vec<Entry>,
}

impl Scope {
    pub const fn new() -> Scope {
        Scope {
            entries: Vec::new(),
        }
    }

    /// Declares `name` (`name<count>`) at block `depth`.
    pub fn declare(&mut self, name: Span, count: Option<u32>, depth: u32, local: Local) {
        self.entries.push(Entry {
            name,
            count,
            depth,
            local,
        });
    }

    /// Forgets every name (a new body).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Forgets the names declared at `depth` and deeper: their block ended.
    pub fn close(&mut self, depth: u32) {
        while self.entries.last().is_some_and(|e| e.depth >= depth) {
            self.entries.pop();
        }
    }

    /// The innermost declaration of `name` in scope, with the span of its name.
    pub fn find(&self, src: &[u8], name: &[u8]) -> Option<(Span, &Local)> {
        self.entries
            .iter()
            .rev()
            .find(|e| declares(&src[e.name.range()], e.count, name))
            .map(|e| (e.name, &e.local))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn var(space: StateSpace) -> Local {
        Local::Variable { space, param: None }
    }

    fn space_of(scope: &Scope, src: &[u8], name: &str) -> Option<StateSpace> {
        scope.find(src, name.as_bytes()).map(|(_, l)| match l {
            Local::Variable { space, .. } | Local::Formal { space } => *space,
        })
    }

    /// An inner block hides an outer declaration until it ends; a sibling block's
    /// declarations are not visible; `p<2>` declares `p0`, `p1` (and `p01`), not
    /// `p2` or `p`.
    #[test]
    fn names_are_block_scoped() {
        let src = b"x p x %r q";
        let at = |lo: u32, hi: u32| Span::new(lo, hi);
        let mut s = Scope::default();
        s.declare(at(0, 1), None, 1, var(StateSpace::Shared));
        assert_eq!(space_of(&s, src, "x"), Some(StateSpace::Shared));
        s.declare(at(4, 5), None, 2, var(StateSpace::Param));
        s.declare(at(2, 3), Some(2), 2, var(StateSpace::Reg));
        assert_eq!(space_of(&s, src, "x"), Some(StateSpace::Param));
        assert_eq!(space_of(&s, src, "p1"), Some(StateSpace::Reg));
        assert_eq!(space_of(&s, src, "p01"), Some(StateSpace::Reg));
        for absent in ["p2", "p", "p1x", "p99999999999999999999999", "q"] {
            assert_eq!(space_of(&s, src, absent), None, "{absent}");
        }
        s.close(2);
        assert_eq!(space_of(&s, src, "x"), Some(StateSpace::Shared));
        assert_eq!(space_of(&s, src, "p1"), None);
        s.declare(at(6, 8), None, 2, var(StateSpace::Shared));
        assert_eq!(space_of(&s, src, "%r"), Some(StateSpace::Shared));
        s.close(1);
        assert_eq!(space_of(&s, src, "x"), None);
    }
}
