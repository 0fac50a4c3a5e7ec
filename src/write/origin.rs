//! Where the lines of a target's output come from, for messages about the output
//! (ptxas's, `--verify`) to point at the input that wrote them.
//!
//! The rope already records, for every run of output bytes, the input range it was
//! spliced from; nothing is kept beside it. Only the lines asked for are looked up,
//! in one walk over the pieces that stops after the last of them: a link whose
//! output ptxas accepts never pays for it.

use super::rope::{ModuleText, PieceText, Rope};

/// An input byte: module `module` (an index into the link's modules, as the rope's
/// pieces name them) at byte `offset` of its source.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct InputByte {
    /// The module.
    pub module: u32,
    /// The byte offset in its source.
    pub offset: u32,
}

/// For each of `lines` (1-based output line numbers, counted as ptxas counts them:
/// only `\n` ends a line), the input byte its first non-blank input byte was
/// spliced from. Where ptxld wrote the start of the line itself (a renamed name), that
/// is the next byte of the line that comes from an input; `None` where none does (the
/// merged header) or the output has no such line. `srcs[m]` is what module `m`'s
/// pieces refer to.
pub fn line_origins(rope: &Rope, srcs: &[ModuleText<'_>], lines: &[u64]) -> Vec<Option<InputByte>> {
    let mut wanted: Vec<u64> = lines.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut found: Vec<Option<InputByte>> = vec![None; wanted.len()];
    // The next wanted line, and the output line the walk is on.
    let mut next = 0;
    let mut line = 1u64;
    'walk: for p in rope.pieces.iter() {
        let bytes = rope.slice(p, srcs);
        let mut i = 0;
        while i < bytes.len() {
            if next == wanted.len() {
                break 'walk;
            }
            if line < wanted[next] {
                // Not a wanted line: on to its end.
                match bytes[i..].iter().position(|&b| b == b'\n') {
                    Some(k) => {
                        i += k + 1;
                        line += 1;
                        continue;
                    }
                    None => break,
                }
            }
            match bytes[i] {
                b'\n' => {
                    // The line ended without an input byte: `None` stays.
                    next += 1;
                    line += 1;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => {
                    if let Some(at) = input_byte(p.text(), p.lo + i as u64, srcs) {
                        found[next] = Some(at);
                        next += 1;
                        // The rest of the line is skipped: the next wanted one is later.
                        continue;
                    }
                }
            }
            i += 1;
        }
    }
    lines
        .iter()
        .map(|l| found[wanted.binary_search(l).expect("every line is wanted")])
        .collect()
}

/// The input byte at offset `at` of a piece's text, if it is an input's.
fn input_byte(text: PieceText, at: u64, srcs: &[ModuleText<'_>]) -> Option<InputByte> {
    let (module, offset) = match text {
        PieceText::New => return None,
        PieceText::Source(m) => (m, u32::try_from(at).ok()?),
        PieceText::Kept(m) => (m, srcs[m as usize].kept.source_of(u32::try_from(at).ok()?)?),
    };
    Some(InputByte { module, offset })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Bytes;
    use crate::link::LinkOptions;
    use crate::source::{SourceFile, SourceMap};
    use crate::write::layout::{link, module_sources};

    const A: &str = "\
.version 7.0
.target sm_70
.address_size 64

.func helper()
{
\tret;
}

.visible .entry ka()
{
\t.reg .b32 %r<2>;
\tcall.uni helper;
\tret;
}
";

    // A second module-local `helper`: renamed `helper$m1` in the output, in its
    // definition, its prototype and its call, which starts a line.
    const B: &str = "\
.version 7.0
.target sm_70
.address_size 64

.func helper()
{
\tret;
}

.visible .entry kb()
{
call.uni
helper
;
\tret;
}
";

    /// The (line, column) of an input byte in `text`, 1-based.
    fn line_col(text: &str, offset: u32) -> (usize, usize) {
        let before = &text[..offset as usize];
        let line = before.matches('\n').count() + 1;
        let col = offset as usize - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        (line, col)
    }

    #[test]
    fn output_lines_map_to_the_input_bytes_that_wrote_them() {
        let mut sources = SourceMap::new();
        for (name, text) in [("a.ptx", A), ("b.ptx", B)] {
            let bytes = Bytes::Owned(text.as_bytes().to_vec());
            sources.add(SourceFile::new(name.into(), None, bytes));
        }
        let (modules, diagnostics) = crate::frontend::parse_sources(&sources);
        assert!(diagnostics.is_empty());
        let rope = link(&sources, &modules, &LinkOptions::default())
            .unwrap()
            .remove(0);
        let srcs = module_sources(&sources, &modules);
        let out = String::from_utf8(rope.to_vec(&srcs)).unwrap();
        let out_lines: Vec<&str> = out.lines().collect();
        let number = |what: &str| 1 + out_lines.iter().position(|l| *l == what).unwrap() as u64;
        let lines = [
            1,                              // `.version`: the merged header
            number(".target sm_70"),        // the header
            number("helper$m1"),            // a renamed name alone on its line
            number(";"),                    // the line after it, from b.ptx
            number("\tcall.uni helper;"),   // a.ptx's body
            number(".visible .entry kb()"), // b.ptx
            out_lines.len() as u64 + 5,     // past the end
            number("\tcall.uni helper;"),   // asked twice
        ];
        // A prototype, from the kept copy of the definition's header.
        let proto = out_lines
            .iter()
            .position(|l| *l == ".func helper$m1();")
            .unwrap() as u64
            + 1;
        let mut all = lines.to_vec();
        all.push(proto);
        let found = line_origins(&rope, &srcs, &all);
        let at = |i: usize| {
            found[i].map(|b| {
                let text = [A, B][b.module as usize];
                (b.module, line_col(text, b.offset))
            })
        };
        assert_eq!(at(0), None);
        assert_eq!(at(1), None);
        assert_eq!(at(2), None, "helper$m1 is new text alone on its line");
        assert_eq!(at(3), Some((1, (14, 1))));
        assert_eq!(at(4), Some((0, (13, 2))));
        assert_eq!(at(5), Some((1, (10, 1))));
        assert_eq!(at(6), None);
        assert_eq!(at(7), at(4));
        assert_eq!(at(8), Some((1, (5, 1))), "the prototype of b.ptx's helper");
    }

    /// A line that starts with new text and goes on with an input's: the input byte.
    #[test]
    fn a_line_starting_with_new_text_points_at_its_first_input_byte() {
        use crate::ir::KeptText;
        let src = b"  abc def\nxyz\n";
        let mut kept = KeptText::default();
        kept.keep(src, crate::source::Span::new(10, 13)); // "xyz"
        let srcs = [ModuleText {
            src: super::super::rope::Text::Slice(src),
            kept: &kept,
            pages: None,
        }];
        let mut r = Rope::new();
        r.push_bytes(b".version 9.9\n  ren$m1 ");
        r.push_src(0, 6, 10); // "def\n"
        r.push_bytes(b"\t");
        r.push_kept(0, 0, 3); // "xyz"
        r.push_bytes(b"\n");
        assert_eq!(r.to_vec(&srcs), b".version 9.9\n  ren$m1 def\n\txyz\n");
        let found = line_origins(&r, &srcs, &[3, 2, 1, 4]);
        let byte = |offset| Some(InputByte { module: 0, offset });
        assert_eq!(found, [byte(10), byte(6), None, None]);
    }
}
