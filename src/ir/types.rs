//! Linkage, state spaces, types, and the sizes of variables.

use crate::source::Span;

/// Linkage directive.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Linkage {
    /// No linkage directive: module-local.
    Local,
    /// `.extern`: an import.
    Extern,
    /// `.visible`: a strong definition.
    Visible,
    /// `.weak`: a weak definition.
    Weak,
    /// `.common`: a tentative definition.
    Common,
}

impl Linkage {
    /// The directive as written, or `""` for module-local.
    pub fn as_str(self) -> &'static str {
        match self {
            Linkage::Local => "",
            Linkage::Extern => ".extern",
            Linkage::Visible => ".visible",
            Linkage::Weak => ".weak",
            Linkage::Common => ".common",
        }
    }
}

/// State spaces.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StateSpace {
    /// `.reg`.
    Reg,
    /// `.sreg`.
    Sreg,
    /// `.const`.
    Const,
    /// `.global`.
    Global,
    /// `.local`.
    Local,
    /// `.param`.
    Param,
    /// `.shared`.
    Shared,
    /// `.tex`.
    Tex,
}

impl StateSpace {
    /// Parses a state-space directive (`.global`, ...).
    pub fn from_directive(text: &[u8]) -> Option<StateSpace> {
        Some(match text {
            b".reg" => StateSpace::Reg,
            b".sreg" => StateSpace::Sreg,
            b".const" => StateSpace::Const,
            b".global" => StateSpace::Global,
            b".local" => StateSpace::Local,
            b".param" => StateSpace::Param,
            b".shared" => StateSpace::Shared,
            b".tex" => StateSpace::Tex,
            _ => return None,
        })
    }

    /// The directive as written.
    pub fn as_str(self) -> &'static str {
        match self {
            StateSpace::Reg => ".reg",
            StateSpace::Sreg => ".sreg",
            StateSpace::Const => ".const",
            StateSpace::Global => ".global",
            StateSpace::Local => ".local",
            StateSpace::Param => ".param",
            StateSpace::Shared => ".shared",
            StateSpace::Tex => ".tex",
        }
    }
}

/// Classes of fundamental types (PTX ISA 5.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeClass {
    /// `.bN`: untyped bits.
    Bits,
    /// `.uN`.
    Unsigned,
    /// `.sN`.
    Signed,
    /// `.fN`, `.f16x2`.
    Float,
    /// `.bf16`, `.bf16x2`.
    BFloat,
    /// `.tf32`, `.e4m3`, `.e5m2` and other alternate float formats.
    AltFloat,
    /// `.pred`.
    Pred,
    /// `.texref`.
    TexRef,
    /// `.samplerref`.
    SamplerRef,
    /// `.surfref`.
    SurfRef,
}

/// A fundamental or opaque type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// The class.
    pub class: TypeClass,
    /// Size in bits (0 for opaque types, 1 for `.pred`).
    pub bits: u16,
}

impl Type {
    /// Parses a type directive (`.u32`, `.f16x2`, `.texref`, ...).
    pub fn from_directive(text: &[u8]) -> Option<Type> {
        use TypeClass::*;
        let t = |class, bits| Some(Type { class, bits });
        match text {
            b".b8" => t(Bits, 8),
            b".b16" => t(Bits, 16),
            b".b32" => t(Bits, 32),
            b".b64" => t(Bits, 64),
            b".b128" => t(Bits, 128),
            b".u8" => t(Unsigned, 8),
            b".u16" => t(Unsigned, 16),
            b".u32" => t(Unsigned, 32),
            b".u64" => t(Unsigned, 64),
            b".s8" => t(Signed, 8),
            b".s16" => t(Signed, 16),
            b".s32" => t(Signed, 32),
            b".s64" => t(Signed, 64),
            b".f16" => t(Float, 16),
            b".f16x2" => t(Float, 32),
            b".f32" => t(Float, 32),
            b".f64" => t(Float, 64),
            b".bf16" => t(BFloat, 16),
            b".bf16x2" => t(BFloat, 32),
            b".tf32" => t(AltFloat, 32),
            b".e4m3" | b".e5m2" | b".e2m3" | b".e3m2" | b".ue8m0" => t(AltFloat, 8),
            b".e4m3x2" | b".e5m2x2" | b".e2m3x2" | b".e3m2x2" | b".ue8m0x2" => t(AltFloat, 16),
            b".e2m1" => t(AltFloat, 4),
            b".e2m1x2" => t(AltFloat, 8),
            b".pred" => t(Pred, 1),
            b".texref" => t(TexRef, 0),
            b".samplerref" => t(SamplerRef, 0),
            b".surfref" => t(SurfRef, 0),
            _ => None,
        }
    }

    /// True for `.texref`, `.samplerref`, `.surfref`.
    pub fn is_opaque(self) -> bool {
        matches!(
            self.class,
            TypeClass::TexRef | TypeClass::SamplerRef | TypeClass::SurfRef
        )
    }
}

/// `.ptr` attributes of a kernel parameter: `.ptr [.space] [.align N]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PtrAttr {
    /// The pointed-to state space, if given.
    pub space: Option<StateSpace>,
    /// The pointed-to alignment, if given.
    pub align: Option<u32>,
}

/// Type and layout of a variable or parameter (everything before its name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeSpec {
    /// The state space.
    pub space: StateSpace,
    /// `.align N`.
    pub align: Option<u32>,
    /// `.v2`, `.v4`, `.v8`: the element count.
    pub vector: Option<u8>,
    /// The element type.
    pub ty: Type,
    /// `.ptr` attributes (kernel parameters).
    pub ptr: Option<PtrAttr>,
    /// `.attribute(.managed)` given.
    pub managed: bool,
    /// Span of the type directive.
    pub ty_span: Span,
    /// Span of the state-space directive (where a missing `.align` can be inserted).
    pub space_span: Span,
    /// Span of the alignment number of `.align N`, if given.
    pub align_span: Option<Span>,
}

/// The number of elements of an array of dimensions `dims`, if every one is known
/// and the count fits 64 bits.
pub(super) fn element_count(dims: &[Option<u64>]) -> Option<u64> {
    let known: Option<Vec<u64>> = dims.iter().copied().collect();
    product(1, &known?)
}

/// `first` times every one of `factors`, checked: `None` if it does not fit 64
/// bits, unless a factor is zero (the product is zero then, however large the
/// others).
fn product(first: u64, factors: &[u64]) -> Option<u64> {
    if factors.contains(&0) {
        return Some(0);
    }
    factors.iter().try_fold(first, |acc, &d| acc.checked_mul(d))
}

/// The bytes of one element of type `ty` with vector width `vector`: at least one
/// (`.pred` and the 4-bit types take a byte).
pub fn element_bytes(ty: Type, vector: Option<u8>) -> u64 {
    (u64::from(ty.bits) / 8).max(1) * u64::from(vector.unwrap_or(1))
}

/// The size in bytes of an array of dimensions `dims` of elements of `elem` bytes,
/// counting unknown (`[]`) dimensions as one; `None` if it does not fit 64 bits.
pub fn known_size(elem: u64, dims: &[Option<u64>]) -> Option<u64> {
    let known: Vec<u64> = dims.iter().flatten().copied().collect();
    product(elem, &known)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes are checked: a product past 64 bits is `None`, not a wrapped number
    /// (`.b32 x[4611686018427387905]` wrapped to 4 bytes), unless a dimension is
    /// zero.
    #[test]
    fn sizes_are_checked() {
        let b32 = Type::from_directive(b".b32").unwrap();
        assert_eq!(element_bytes(b32, Some(4)), 16);
        assert_eq!(
            known_size(4, &[Some(4611686018427387904 - 1)]),
            Some(u64::MAX - 3)
        );
        assert_eq!(known_size(4, &[Some(4611686018427387905)]), None);
        assert_eq!(known_size(1, &[Some(1 << 32), Some(1 << 32)]), None);
        assert_eq!(known_size(8, &[Some(1 << 62), Some(4), Some(0)]), Some(0));
        assert_eq!(known_size(8, &[None, Some(3)]), Some(24));
        assert_eq!(element_count(&[Some(1 << 32), Some(1 << 32)]), None);
        assert_eq!(element_count(&[Some(1 << 62), Some(4), Some(0)]), Some(0));
        assert_eq!(element_count(&[Some(2), None]), None);
    }

    /// The lexer knows the state spaces by a list of its own (it uses nothing of the
    /// IR): the same directives as [`StateSpace::from_directive`].
    #[test]
    fn the_lexer_knows_the_same_state_spaces() {
        use StateSpace::*;
        for space in [Reg, Sreg, Const, Global, Local, Param, Shared, Tex] {
            assert!(
                crate::lex::is_state_space(space.as_str().as_bytes()),
                "{space:?}"
            );
        }
        for other in [
            ".regs",
            ".re",
            ".b32",
            ".entry",
            ".attribute",
            ".align",
            ".texref",
            "",
        ] {
            let text = other.as_bytes();
            assert!(!crate::lex::is_state_space(text), "{other}");
            assert_eq!(StateSpace::from_directive(text), None, "{other}");
        }
    }
}
