//! Compatibility of declarations across modules: variable sizes and function
//! prototypes, by PTX's type compatibility (ISA 5.2.1; docs/linking.md §6, §7).

use crate::ir::{element_bytes, Declarator, Param, Signature, Type, TypeClass, TypeSpec};

/// Size of a variable in bytes; `None` for unsized (`[]`) and opaque variables.
/// Checked: a size that does not fit 64 bits would be `None` too, but the parser
/// refuses such a declaration (`size too large`), so none reaches the linker.
pub(crate) fn var_size(spec: &TypeSpec, decl: &Declarator) -> Option<u64> {
    if spec.ty.is_opaque() {
        return None;
    }
    decl.element_count()?
        .checked_mul(element_bytes(spec.ty, spec.vector))
}

/// Two fundamental types of the same size are compatible when they have the same
/// basic type, are signed and unsigned integers, or one is a bit type (`.bN`).
fn types_compatible(a: Type, b: Type) -> bool {
    use TypeClass::*;
    if a.bits != b.bits {
        return false;
    }
    match (a.class, b.class) {
        (Bits, _) | (_, Bits) => true,
        (Unsigned | Signed, Unsigned | Signed) => true,
        (x, y) => x == y,
    }
}

fn param_shape(p: &Param) -> (Type, u8, Option<u64>, bool) {
    let count = p.element_count();
    (p.spec.ty, p.spec.vector.unwrap_or(1), count, p.is_array())
}

/// Why parameter `a` does not match `b`, if it does not.
fn param_mismatch(a: &Param, b: &Param) -> Option<&'static str> {
    let (ta, va, na, array_a) = param_shape(a);
    let (tb, vb, nb, array_b) = param_shape(b);
    if array_a != array_b {
        return Some("an aggregate against a scalar");
    }
    if array_a {
        if na != nb || u64::from(ta.bits) * u64::from(va) != u64::from(tb.bits) * u64::from(vb) {
            return Some("aggregates of different size or element type");
        }
        if !types_compatible(ta, tb) {
            return Some("aggregates of incompatible element types");
        }
        return None;
    }
    if va != vb {
        return Some("different vector widths");
    }
    if ta.bits != tb.bits {
        return Some("parameters of different size");
    }
    if !types_compatible(ta, tb) {
        return Some("incompatible types (a float against an integer)");
    }
    None
}

/// Why two prototypes do not match, if they do not: `None` when compatible.
pub(crate) fn signature_mismatch(a: &Signature, b: &Signature) -> Option<String> {
    let none: &[Param] = &[];
    let ra = a.returns().unwrap_or(none);
    let rb = b.returns().unwrap_or(none);
    let pa = a.params().unwrap_or(none);
    let pb = b.params().unwrap_or(none);
    if ra.len() != rb.len() {
        return Some(if ra.is_empty() || rb.is_empty() {
            "one returns a value and the other does not".to_string()
        } else {
            "different number of return values".to_string()
        });
    }
    if pa.len() != pb.len() {
        return Some(format!(
            "different number of parameters ({} and {})",
            pa.len(),
            pb.len()
        ));
    }
    for (i, (x, y)) in ra.iter().zip(rb).enumerate() {
        if let Some(why) = param_mismatch(x, y) {
            return Some(format!("return value {}: {why}", i + 1));
        }
    }
    for (i, (x, y)) in pa.iter().zip(pb).enumerate() {
        if let Some(why) = param_mismatch(x, y) {
            return Some(format!("parameter {}: {why}", i + 1));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(t: &str) -> Type {
        Type::from_directive(t.as_bytes()).unwrap()
    }

    #[test]
    fn ptx_type_compatibility() {
        assert!(types_compatible(ty(".b32"), ty(".f32")));
        assert!(types_compatible(ty(".b32"), ty(".u32")));
        assert!(types_compatible(ty(".u32"), ty(".s32")));
        assert!(types_compatible(ty(".f64"), ty(".b64")));
        assert!(!types_compatible(ty(".f32"), ty(".u32")));
        assert!(!types_compatible(ty(".f32"), ty(".s32")));
        assert!(!types_compatible(ty(".b32"), ty(".b64")));
        assert!(!types_compatible(ty(".u16"), ty(".u32")));
    }
}
