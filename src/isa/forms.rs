//! What the operand typing of `typing.rs` knows of each instruction it judges: the
//! operands it takes (`form`), and the combinations of modifiers and types ptxas
//! refuses before it looks at an operand (`illegal`). Every rule is measured with
//! ptxas 12.9; `typing.tsv` holds the experiments.

use crate::ir::{Type, TypeClass};

/// What an instruction asks of an operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// A register of the instruction's type.
    Dest,
    /// A register or number of the instruction's type.
    Source,
    /// The same, of twice its width (`mul.wide`, `mad.wide`).
    DestWide,
    SourceWide,
    /// A register that the relaxed rules of `ld`, `st` and `cvt` fit (wider
    /// registers of most classes); a vector of them for `.v2`, `.v4`.
    DestRelaxed,
    SourceRelaxed,
    /// A `[...]` address.
    Address,
    /// A predicate register, maybe negated.
    Pred,
    /// A predicate register, or two joined by `|` (`setp`).
    PredDest,
    /// A 32-bit integer register or a number (a shift amount).
    Shift,
}

/// How an instruction's operands are read: what it asks of each.
pub(super) struct Form {
    pub roles: &'static [Role],
    /// One more operand is allowed (`min`, `max` with three sources).
    pub optional_last: bool,
}

const ROUNDING: &[&[u8]] = &[b".rn", b".rz", b".rm", b".rp"];
const INT_ROUNDING: &[&[u8]] = &[b".rni", b".rzi", b".rmi", b".rpi"];
/// Both kinds.
const ANY_ROUNDING: &[&[u8]] = &[
    b".rn", b".rz", b".rm", b".rp", b".rni", b".rzi", b".rmi", b".rpi",
];
const COMPARE: &[&[u8]] = &[
    b".eq", b".ne", b".lt", b".le", b".gt", b".ge", b".lo", b".ls", b".hi", b".hs", b".equ",
    b".neu", b".ltu", b".leu", b".gtu", b".geu", b".num", b".nan",
];
const BOOL: &[&[u8]] = &[b".and", b".or", b".xor"];
const SPACES: &[&[u8]] = &[
    b".global",
    b".shared",
    b".shared::cta",
    b".local",
    b".const",
    b".param",
];
const LOAD_STORE: &[&[u8]] = &[
    b".volatile",
    b".relaxed",
    b".acquire",
    b".release",
    b".weak",
    b".cta",
    b".gpu",
    b".sys",
    b".ca",
    b".cg",
    b".cs",
    b".lu",
    b".cv",
    b".wb",
    b".wt",
    b".nc",
    b".v2",
    b".v4",
    b".L1::evict_normal",
    b".L1::evict_unchanged",
    b".L1::evict_first",
    b".L1::evict_last",
    b".L1::no_allocate",
    b".L2::64B",
    b".L2::128B",
    b".L2::256B",
];

/// The form of `opcode` with `modifiers` (types removed, `types` apart); None
/// where these rules do not judge it (an opcode or a modifier they do not know).
pub(super) fn form(opcode: &[u8], modifiers: &[&[u8]], types: &[Type]) -> Option<Form> {
    use Role::*;
    let only = |allowed: &[&[&[u8]]]| {
        modifiers
            .iter()
            .all(|m| allowed.iter().any(|set| set.contains(m)))
    };
    let has = |m: &[u8]| modifiers.contains(&m);
    let float = types.iter().all(|t| t.class == TypeClass::Float);
    let roles: &'static [Role] = match opcode {
        b"add" | b"sub" if only(&[ROUNDING, &[b".sat", b".cc", b".ftz"]]) => {
            &[Dest, Source, Source]
        }
        // A third source only for floats (sm_100: "min.f32 with 3 input operands";
        // `max.s32 d, a, b, c` is an "Arguments mismatch").
        b"min" | b"max" if only(&[&[b".ftz", b".NaN", b".xorsign", b".abs"]]) => {
            return Some(Form {
                roles: &[Dest, Source, Source],
                optional_last: float,
            })
        }
        b"mul" if only(&[ROUNDING, &[b".lo", b".hi", b".wide", b".ftz", b".sat"]]) => {
            if has(b".wide") {
                &[DestWide, Source, Source]
            } else {
                &[Dest, Source, Source]
            }
        }
        b"mad"
            if only(&[
                ROUNDING,
                &[b".lo", b".hi", b".wide", b".ftz", b".sat", b".cc"],
            ]) =>
        {
            if has(b".wide") {
                &[DestWide, Source, Source, SourceWide]
            } else {
                &[Dest, Source, Source, Source]
            }
        }
        b"fma" if only(&[ROUNDING, &[b".ftz", b".sat"]]) => &[Dest, Source, Source, Source],
        b"div" if only(&[ROUNDING, &[b".approx", b".full", b".ftz"]]) => &[Dest, Source, Source],
        b"rem" | b"and" | b"or" | b"xor" if modifiers.is_empty() => &[Dest, Source, Source],
        b"neg" | b"abs" if only(&[&[b".ftz"]]) => &[Dest, Source],
        b"not" | b"mov" if modifiers.is_empty() => &[Dest, Source],
        b"selp" if modifiers.is_empty() => &[Dest, Source, Source, Pred],
        b"shl" | b"shr" if modifiers.is_empty() => &[Dest, Source, Shift],
        b"setp" if only(&[COMPARE, BOOL, &[b".ftz"]]) => {
            if BOOL.iter().any(|b| has(b)) {
                &[PredDest, Source, Source, Pred]
            } else {
                &[PredDest, Source, Source]
            }
        }
        b"cvt" if only(&[ROUNDING, INT_ROUNDING, &[b".ftz", b".sat"]]) => {
            &[DestRelaxed, SourceRelaxed]
        }
        b"cvta" if only(&[SPACES, &[b".to"]]) => &[Dest, Source],
        b"sqrt" | b"rcp" if only(&[ROUNDING, &[b".approx", b".ftz"]]) => &[Dest, Source],
        b"ld" if only(&[SPACES, LOAD_STORE]) => &[DestRelaxed, Address],
        b"st" if only(&[SPACES, LOAD_STORE]) => &[Address, SourceRelaxed],
        _ => return None,
    };
    Some(Form {
        roles,
        optional_last: false,
    })
}

/// The opcodes these rules judge (an instruction of another is passed over at its
/// name).
pub(super) const JUDGED: &[&[u8]] = &[
    b"add", b"sub", b"mul", b"mad", b"fma", b"min", b"max", b"div", b"rem", b"and", b"or", b"xor",
    b"not", b"neg", b"abs", b"mov", b"selp", b"shl", b"shr", b"setp", b"cvt", b"cvta", b"sqrt",
    b"rcp", b"ld", b"st",
];

/// Why ptxas refuses `opcode` with `modifiers` and `types` whatever its operands
/// (its message in parentheses), if it does.
pub(super) fn illegal(opcode: &[u8], modifiers: &[&[u8]], types: &[Type]) -> Option<String> {
    use TypeClass::*;
    let count = |set: &[&[u8]]| modifiers.iter().filter(|m| set.contains(m)).count();
    let has = |m: &[u8]| modifiers.contains(&m);
    let is = |names: &[&[u8]]| names.contains(&opcode);
    // "Multiple comparisons set", "Multiple rounding modifiers specified",
    // "Unexpected number of state spaces specified", and for `mul`, `mad` "Comparison
    // qualifier is not allowed".
    for (set, what) in [
        (COMPARE, "comparison"),
        (ANY_ROUNDING, "rounding modifier"),
        (SPACES, "state space"),
        (
            &[&b".lo"[..], b".hi", b".wide"][..],
            "of .lo, .hi and .wide",
        ),
    ] {
        if count(set) > 1 {
            return Some(format!("more than one {what}"));
        }
    }
    // "Unexpected instruction types specified" (for no type too: `add %r1, ...`,
    // `ld.global %r1, [%rd1]`).
    let wanted = if opcode == b"cvt" { 2 } else { 1 };
    if types.len() != wanted {
        return Some(match (wanted, types.len()) {
            (2, _) => "`cvt` takes two types, the destination's then the source's".into(),
            (_, 0) => "no type (such as .u32 or .f32)".into(),
            _ => "more than one type".into(),
        });
    }
    let t = types[0];
    let arithmetic: &[&[u8]] = &[
        b"add", b"sub", b"mul", b"mad", b"min", b"max", b"div", b"rem", b"neg", b"abs",
    ];
    let logic: &[&[u8]] = &[b"and", b"or", b"xor", b"not"];
    let bad_type = match t.class {
        _ if t.bits == 8 => !is(&[b"ld", b"st", b"cvt"]),
        Pred => !is(&[b"and", b"or", b"xor", b"not", b"mov"]),
        Bits => is(arithmetic) || is(&[b"cvt", b"fma"]),
        Unsigned | Signed => {
            is(logic)
                || opcode == b"shl"
                || opcode == b"fma"
                || (t.class == Unsigned && is(&[b"neg", b"abs"]))
        }
        Float => {
            // `ld.global.f16`: "Unexpected instruction types" (.b16 it is).
            (t.bits == 16 && is(&[b"ld", b"st"]))
                || is(logic)
                || is(&[b"shl", b"shr", b"rem"])
                || (is(&[b"mul", b"mad"]) && count(&[b".lo", b".hi", b".wide"]) > 0)
        }
        _ => false,
    };
    let bad_type = bad_type
        || (opcode == b"cvt" && types.iter().any(|t| matches!(t.class, Bits | Pred)))
        // `mul.s32`: an integer product says which half (or `.wide`).
        || (is(&[b"mul", b"mad"]) && t.class != Float && count(&[b".lo", b".hi", b".wide"]) == 0);
    if bad_type {
        return Some("this type is not one the instruction takes".into());
    }
    // "Instruction 'cvta.to' requires .u32 or .u64 type"; `sqrt.rn.s32`: "Unexpected
    // instruction types".
    if opcode == b"cvta" && !(t.class == Unsigned && t.bits >= 32) {
        return Some("`cvta` takes .u32 or .u64".into());
    }
    if is(&[b"sqrt", b"rcp"]) && !(t.class == Float && t.bits >= 32) {
        return Some("this type is not one the instruction takes".into());
    }
    let int = matches!(t.class, Signed | Unsigned | Bits);
    // `.ftz` is for 32-bit floats ("Illegal modifier '.ftz'"; `cvt` names one of
    // its types; `rcp.approx.ftz.f64` is the exception).
    if has(b".ftz") && opcode != b"rcp" && !types.iter().any(|t| t.class == Float && t.bits != 64) {
        return Some("`.ftz` applies only to .f32".into());
    }
    // "Modifier '.sat' does not apply to '.u32' type", "Illegal modifier '.sat' for
    // instruction 'mad.lo'".
    if has(b".sat")
        && ((is(&[b"add", b"sub"]) && (t.class == Unsigned || t.bits == 64))
            || (opcode == b"mad" && has(b".lo")))
    {
        return Some("`.sat` does not apply here".into());
    }
    if is(&[b"add", b"sub", b"mul", b"mad", b"div"]) && int && count(ROUNDING) > 0 {
        return Some("an integer operation takes no rounding modifier".into());
    }
    // "Rounding modifier required for instruction 'mad'", and for `fma` and `div`;
    // a 64-bit `div` takes neither `.approx` nor `.full`.
    if t.class == Float && t.bits >= 32 {
        let rounded = count(ROUNDING) > 0;
        let missing = match opcode {
            b"mad" | b"fma" => !rounded,
            b"div" if t.bits == 64 => !rounded || has(b".approx") || has(b".full"),
            b"div" => !rounded && !has(b".approx") && !has(b".full"),
            b"sqrt" if t.bits == 64 => !rounded || has(b".approx"),
            b"sqrt" | b"rcp" => !rounded && !has(b".approx"),
            _ => false,
        };
        if missing {
            return Some(match (opcode, t.bits) {
                (b"div" | b"sqrt", 64) => {
                    "at .f64 it takes a rounding modifier (.rn, .rz, .rm, .rp)".into()
                }
                (b"div", _) => "a .f32 division takes a rounding modifier, .approx or .full".into(),
                (b"sqrt" | b"rcp", _) => "it takes a rounding modifier or .approx".into(),
                _ => "a float multiply-add takes a rounding modifier (.rn, .rz, .rm, .rp)".into(),
            });
        }
    }
    if opcode == b"cvt" {
        return conversion_rounding(
            types[0],
            types[1],
            count(ROUNDING) > 0,
            count(INT_ROUNDING) > 0,
        );
    }
    if opcode == b"setp" {
        let unsigned_only: &[&[u8]] = &[b".lo", b".ls", b".hi", b".hs"];
        let unordered: &[&[u8]] = &[
            b".equ", b".neu", b".ltu", b".leu", b".gtu", b".geu", b".num", b".nan",
        ];
        let ordered: &[&[u8]] = &[b".lt", b".le", b".gt", b".ge"];
        let mismatch = match t.class {
            Float => count(unsigned_only) > 0,
            Bits => count(unordered) > 0 || count(ordered) > 0,
            _ => count(unordered) > 0,
        };
        if mismatch {
            return Some("this comparison does not apply to the type".into());
        }
    }
    None
}

/// Which rounding a conversion from `from` to `to` takes ("Rounding modifier
/// required", "Illegal rounding modifier for instruction 'cvt'"): none between
/// integers or to a wider float; an integer rounding (`.rzi`) from a float to an
/// integer, a float one (`.rn`) from an integer to a float or to a narrower float;
/// between floats of one size at most an integer rounding.
fn conversion_rounding(to: Type, from: Type, float: bool, int: bool) -> Option<String> {
    let is_float = |t: Type| t.class == TypeClass::Float;
    let (required, allowed) = match (is_float(to), is_float(from)) {
        (false, false) => (None, None),
        (false, true) => (
            Some("an integer rounding (.rni, .rzi, .rmi, .rpi)"),
            Some(true),
        ),
        (true, false) => (
            Some("a rounding modifier (.rn, .rz, .rm, .rp)"),
            Some(false),
        ),
        (true, true) if to.bits < from.bits => (
            Some("a rounding modifier (.rn, .rz, .rm, .rp)"),
            Some(false),
        ),
        (true, true) if to.bits > from.bits => (None, None),
        (true, true) => {
            return float.then(|| {
                "a conversion between floats of one size takes only an integer rounding".into()
            })
        }
    };
    match (required, allowed) {
        (None, _) if float || int => Some("this conversion takes no rounding modifier".into()),
        (Some(what), Some(int_kind)) => {
            let (right, wrong) = if int_kind { (int, float) } else { (float, int) };
            if wrong {
                Some(format!("this conversion takes {what}, not the other kind"))
            } else if !right {
                Some(format!("this conversion needs {what}"))
            } else {
                None
            }
        }
        _ => None,
    }
}
