//! Copies of source text a module keeps for the writer ([`super::Module::kept`]).

use crate::source::Span;

/// Copies of some source ranges of a module (see [`Module::kept`](super::Module::kept)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeptText {
    /// The copied bytes, range after range.
    pub text: Vec<u8>,
    /// `(source span, offset of its copy in text)`, sorted and disjoint.
    pub spans: Vec<(Span, u32)>,
}

impl KeptText {
    /// Copies `span` of `src` (spans must come in source order, without overlap).
    pub fn keep(&mut self, src: &[u8], span: Span) {
        debug_assert!(self.spans.last().is_none_or(|(s, _)| s.hi <= span.lo));
        self.spans.push((span, self.text.len() as u32));
        self.text.extend_from_slice(&src[span.range()]);
    }

    /// Where the copy of `span` starts in [`KeptText::text`], if a kept range holds
    /// all of it.
    pub fn offset_of(&self, span: Span) -> Option<u32> {
        let i = self.spans.partition_point(|(s, _)| s.hi < span.hi);
        let &(s, at) = self.spans.get(i)?;
        (s.lo <= span.lo && span.hi <= s.hi).then(|| at + (span.lo - s.lo))
    }

    /// The source offset whose copy is byte `at` of [`KeptText::text`], if `at` is
    /// in it: to say where an output byte written from a copy came from.
    pub fn source_of(&self, at: u32) -> Option<u32> {
        // Copies are appended in source order, so their offsets grow with the spans.
        let i = self.spans.partition_point(|&(_, copy)| copy <= at);
        let &(span, copy) = self.spans.get(i.checked_sub(1)?)?;
        (at - copy < span.len() as u32).then(|| span.lo + (at - copy))
    }

    /// The copy of `span`, if a kept range holds all of it.
    pub fn slice(&self, span: Span) -> Option<&[u8]> {
        let at = self.offset_of(span)? as usize;
        Some(&self.text[at..at + span.len()])
    }
}
