//! The module header: `.version`, `.target` and `.address_size`.

use crate::source::Span;

/// The module header.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// `.version major.minor`.
    pub version: Option<Version>,
    /// `.target ...`.
    pub target: Option<Target>,
    /// `.address_size 32|64`, with the span of the number.
    pub address_size: Option<(u32, Span)>,
}

impl Header {
    /// The effective address size: PTX says a module without `.address_size` is 32-bit.
    pub fn address_bits(&self) -> u32 {
        self.address_size.map_or(32, |(bits, _)| bits)
    }
}

/// A `.version` number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Where it was written.
    pub span: Span,
}

/// Texture mode option of `.target`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TexMode {
    /// `texmode_unified` (the default).
    Unified,
    /// `texmode_independent`.
    Independent,
}

/// A `.target` directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The architecture, e.g. `sm_80`, `sm_90a`; `None` if only options were given.
    pub arch: Option<Arch>,
    /// `texmode_*`, if given.
    pub texmode: Option<TexMode>,
    /// `map_f64_to_f32` given.
    pub map_f64_to_f32: bool,
    /// `debug` given.
    pub debug: bool,
    /// The whole directive.
    pub span: Span,
}

/// An `sm_NN[a|f]` architecture.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Arch {
    /// The number: 80 for `sm_80`.
    pub sm: u32,
    /// `a` or `f` for arch- or family-specific targets.
    pub suffix: Option<u8>,
    /// Where it was written.
    pub span: Span,
}
