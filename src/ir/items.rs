//! Module-scope items and declarations: variables, functions with their
//! signatures and bodies, debug sections, and what `.loc` directives name.

use std::num::NonZeroU64;

use super::types::{element_count, Linkage, PtrAttr, StateSpace, Type, TypeSpec};
use super::{ItemId, TokenRange};
use crate::source::Span;

/// A module-scope item.
#[derive(Clone, Debug)]
pub struct Item {
    /// From the first token through the terminating `;` or `}`.
    pub span: Span,
    /// The tokens of the item.
    pub tokens: TokenRange,
    /// What it is.
    pub kind: ItemKind,
}

/// The kinds of module-scope item.
#[derive(Clone, Debug)]
pub enum ItemKind {
    /// `.version`.
    Version,
    /// `.target`.
    Target,
    /// `.address_size`.
    AddressSize,
    /// `.file N "name" [, timestamp, size]`.
    File(FileDirective),
    /// `.loc` at module scope.
    Loc,
    /// `.pragma "..." [, "..."];`.
    Pragma,
    /// `.alias alias, aliasee;`.
    Alias {
        /// The alias name.
        alias: Span,
        /// The aliased function.
        aliasee: Span,
    },
    /// `.section name { ... }` (DWARF data).
    Section(Section),
    /// A variable declaration or definition (one or more declarators).
    Variable(VarDecl),
    /// A `.func` or `.entry` declaration or definition.
    Function(FuncDecl),
    /// Tokens that could not be parsed; a diagnostic was reported.
    Error,
}

/// `.file` directive.
#[derive(Clone, Debug)]
pub struct FileDirective {
    /// The file index.
    pub index: u32,
    /// Span of the index number.
    pub index_span: Span,
    /// Span of the quoted name.
    pub name: Span,
}

/// A debug `.section`.
#[derive(Clone, Debug)]
pub struct Section {
    /// Span of the section name (`.debug_info`).
    pub name: Span,
    /// Labels defined in the section, by name span.
    pub labels: Vec<Span>,
    /// Spans of section names used as data (`.b32 .debug_abbrev`).
    pub section_refs: Vec<Span>,
    /// Spans of identifiers used as data (labels, symbols).
    pub ident_refs: Vec<Span>,
    /// The block decoded as the DWARF merge reads it, or why it cannot be: decoded
    /// while parsing, from the same tokens. A failure is no parse error: it is
    /// reported only if the debug sections are merged (docs/linking.md, "Debug
    /// information"). Out of line, so that a section is a smaller item than a
    /// function: every item of every module pays for the largest kind.
    pub data: Box<Result<SectionData, Unsupported>>,
}

/// One debug `.section` block decoded: the bytes ptxas lays out, the words whose
/// value is symbolic (relocations), and the labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SectionData {
    /// The data, with symbolic words as zeros.
    pub bytes: Vec<u8>,
    /// The symbolic words, sorted by offset, never overlapping.
    pub relocs: Vec<Reloc>,
    /// Labels: offset in `bytes` and name (a span of the module's source), in order.
    pub labels: Vec<(u32, Span)>,
}

/// A word of a debug section whose value ptxas computes (a relocation in the cubin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reloc {
    /// Offset of the word in the block.
    pub at: u32,
    /// 4 or 8 bytes.
    pub width: u8,
    /// What it refers to.
    pub value: RelocValue,
}

/// The value of a symbolic word of a debug section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RelocValue {
    /// `.debug_loc+133`: an offset into a section of this module.
    Section {
        /// The section name as written (`.debug_loc`).
        name: Vec<u8>,
        /// The offset.
        addend: i64,
    },
    /// Labels and symbols with `+`, `-` and integers, e.g. `Lfunc_begin0`: the tokens
    /// (the identifiers among them are renamed on output).
    Expr(Vec<Span>),
}

/// What the DWARF merge cannot handle in a module's debug data (the module then
/// loses it): where, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    /// In the module's source.
    pub span: Span,
    /// A noun phrase: "DWARF version 5", "64-bit DWARF", ...
    pub what: String,
}

impl Unsupported {
    /// `what` is not supported, at `span`.
    pub fn at(span: Span, what: impl Into<String>) -> Unsupported {
        Unsupported {
            span,
            what: what.into(),
        }
    }
}

/// A variable declaration or definition.
#[derive(Clone, Debug)]
pub struct VarDecl {
    /// Linkage directive.
    pub linkage: Linkage,
    /// Type and layout.
    pub spec: TypeSpec,
    /// The declared names (PTX allows `a, b, c`).
    pub declarators: Vec<Declarator>,
}

/// One declared name with its array dimensions and initializer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declarator {
    /// The name.
    pub name: Span,
    /// Array dimensions; `None` for `[]`.
    pub dims: Vec<Option<u64>>,
    /// Parameterized register count (`%r<100>`), function scope only.
    pub reg_count: Option<u32>,
    /// From the name through the end of the initializer (or dimensions).
    pub span: Span,
    /// The initializer after `=`, if any.
    pub init: Option<Initializer>,
}

impl Declarator {
    /// True for a scalar (no array dimensions).
    pub fn is_scalar(&self) -> bool {
        self.dims.is_empty()
    }

    /// The number of elements, if every dimension is known (1 for scalars).
    pub fn element_count(&self) -> Option<u64> {
        element_count(&self.dims)
    }
}

/// A variable initializer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Initializer {
    /// From the first token after `=` through the last token before `;`.
    pub span: Span,
    /// Spans of identifiers that name symbols (`x`, `generic(x)`, `x+8`).
    pub symbol_refs: Vec<Span>,
}

/// `.func` or `.entry`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FuncKind {
    /// A device function.
    Func,
    /// A kernel.
    Entry,
}

/// A `.func` or `.entry` declaration or definition.
#[derive(Clone, Debug)]
pub struct FuncDecl {
    /// Linkage directive.
    pub linkage: Linkage,
    /// `.func` or `.entry`.
    pub kind: FuncKind,
    /// The name.
    pub name: Span,
    /// Return and parameter lists.
    pub signature: Signature,
    /// `.maxntid`, `.noreturn`, `.pragma`, ...
    pub directives: Vec<FuncDirective>,
    /// The body, for definitions.
    pub body: Option<Body>,
    /// End offset of the signature (after the parameter list, or the name): the
    /// text from the item start to here is the prototype without attributes.
    pub header_end: u32,
    /// `.noreturn` given.
    pub noreturn: bool,
}

/// A function signature: its return parameters and parameters in one array (one
/// allocation per function, not one per list: the lists of a large link's
/// prototypes were a fifth of its allocations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The return parameters, then the parameters.
    list: Box<[Param]>,
    /// How many of `list` are return parameters, if a return list was written.
    returns: Option<u32>,
    /// False when no parameter list was written (GCC writes `f;`).
    has_params: bool,
}

impl Signature {
    /// The signature with these lists (`None`: not written).
    pub fn new(returns: Option<Vec<Param>>, params: Option<Vec<Param>>) -> Signature {
        let n = returns.as_ref().map(|r| r.len() as u32);
        let has_params = params.is_some();
        let list = returns.into_iter().chain(params).flatten().collect();
        Signature::from_list(list, n, has_params)
    }

    /// The signature whose first `returns` parameters of `list` are return
    /// parameters (`None`: no return list) and the rest parameters (if
    /// `has_params`; otherwise there is no rest).
    pub(crate) fn from_list(
        list: Box<[Param]>,
        returns: Option<u32>,
        has_params: bool,
    ) -> Signature {
        debug_assert!(has_params || list.len() == returns.unwrap_or(0) as usize);
        Signature {
            list,
            returns,
            has_params,
        }
    }

    /// Return parameters; `None` when no return list was written.
    pub fn returns(&self) -> Option<&[Param]> {
        self.returns.map(|n| &self.list[..n as usize])
    }

    /// Parameters; `None` when no parameter list was written (GCC writes `f;`).
    pub fn params(&self) -> Option<&[Param]> {
        self.has_params
            .then(|| &self.list[self.returns.unwrap_or(0) as usize..])
    }

    /// The return parameters, then the parameters.
    pub fn all(&self) -> &[Param] {
        &self.list
    }
}

/// A parameter (or return parameter) of a function or prototype.
///
/// A large link holds hundreds of thousands of parameters (every definition's and
/// prototype's), so a parameter keeps only what the linker reads from it: 48
/// bytes, where a [`TypeSpec`] and a declarator's dimensions made it 88, and a
/// whole declarator 144 (docs/performance.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Type and layout (`space` is `.param` or `.reg`).
    pub spec: ParamSpec,
    /// The name.
    pub name: Span,
    /// Whole parameter.
    pub span: Span,
    /// Array dimensions, as in [`Declarator::dims`]; `None` for a scalar.
    dims: Option<Box<Box<[Option<u64>]>>>,
}

impl Param {
    /// The parameter `name` of type `spec` with array dimensions `dims`, spanning
    /// `span`.
    pub fn new(spec: ParamSpec, name: Span, dims: Vec<Option<u64>>, span: Span) -> Param {
        let dims = (!dims.is_empty()).then(|| Box::new(dims.into_boxed_slice()));
        Param {
            spec,
            name,
            span,
            dims,
        }
    }

    /// Array dimensions, as in [`Declarator::dims`] (empty for a scalar).
    pub fn dims(&self) -> &[Option<u64>] {
        self.dims.as_deref().map_or(&[], |d| d)
    }

    /// True for an aggregate (a parameter with array dimensions).
    pub fn is_array(&self) -> bool {
        self.dims.is_some()
    }

    /// The number of elements, if every dimension is known (1 for scalars).
    pub fn element_count(&self) -> Option<u64> {
        element_count(self.dims())
    }
}

/// A parameter's type and layout: the values of a [`TypeSpec`] that apply to a
/// parameter, without the spans (the linker never edits a parameter's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// The element type.
    pub ty: Type,
    /// The state space.
    pub space: StateSpace,
    /// `.v2`, `.v4`, `.v8`: the element count.
    pub vector: Option<u8>,
    /// `.align N`.
    pub align: Option<u32>,
    /// `.ptr` attributes (kernel parameters only, so kept out of line).
    pub ptr: Option<Box<PtrAttr>>,
}

impl From<&TypeSpec> for ParamSpec {
    fn from(spec: &TypeSpec) -> ParamSpec {
        ParamSpec {
            ty: spec.ty,
            space: spec.space,
            vector: spec.vector,
            align: spec.align,
            ptr: spec.ptr.map(Box::new),
        }
    }
}

/// A performance-tuning or other attribute directive between signature and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncDirective {
    /// The directive name span (`.maxntid`).
    pub name: Span,
    /// Numeric arguments.
    pub args: Vec<u64>,
    /// Whole directive.
    pub span: Span,
}

/// A function body.
#[derive(Clone, Debug)]
pub struct Body {
    /// From `{` through `}`.
    pub span: Span,
    /// The tokens from `{` through `}`.
    pub tokens: TokenRange,
}

/// A `call` instruction with a named callee.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// The function containing the call.
    pub item: ItemId,
    /// The callee identifier.
    pub callee: Span,
    /// The return-value identifiers, in order.
    pub rets: Box<[CallOperand]>,
    /// The argument identifiers, in order.
    pub args: Box<[CallOperand]>,
}

/// A return value or argument of a [`CallSite`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallOperand {
    /// The identifier.
    pub span: Span,
    /// The caller's declaration of it: the last `.param` variable of that name its
    /// body declares before the call. Found while the body's tokens are at hand, so
    /// that the linker, which may rewrite its alignment, never reads the body again.
    pub decl: Option<LocalParam>,
}

/// A `.param` variable declared inside a function body: where the linker may raise
/// its alignment, and its layout, which ptxas compares with the formal parameter it
/// is passed for. In every call operand that names one, so it keeps only that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalParam {
    /// Its name.
    pub name: Span,
    /// `.align N`: the value and the span of `N`.
    pub align: Option<(u32, Span)>,
    /// The `.param` directive (a missing `.align` goes after it).
    pub space: Span,
    /// The element type.
    pub ty: Type,
    /// `.v2`, `.v4`, `.v8`: the element count of the vector.
    pub vector: Option<u8>,
    /// The number of elements of an array; `None` for a scalar. An array whose size
    /// is refused anyway (`[]`, `[0]`, past 64 bits) counts `u64::MAX` elements.
    pub elements: Option<NonZeroU64>,
}

/// What the `.loc` directives of a module refer to.
#[derive(Clone, Debug, Default)]
pub struct Locs {
    /// File-index numbers of every `.loc` (and its `inlined_at`), with their spans.
    pub files: Vec<(Span, u32)>,
    /// The `, function_name L, inlined_at F L C` tails of `.loc` directives, from the
    /// first `,` through the last token.
    pub attrs: Vec<Span>,
    /// Whole `.loc` directives inside function bodies (for `--strip-debug`).
    pub directives: Vec<Span>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parsed IR of a large link is mostly parameters and items: their sizes
    /// are budgeted (docs/performance.md), and a field added to either should be a
    /// decision, not an accident. So are the call-block `.param` declarations that
    /// call operands carry.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn parameters_stay_small() {
        assert_eq!(std::mem::size_of::<Param>(), 48);
        assert_eq!(std::mem::size_of::<ParamSpec>(), 24);
        assert_eq!(std::mem::size_of::<LocalParam>(), 48);
    }

    /// An item is as large as a function, its largest kind: a debug section (whose
    /// data is out of line) costs the items of other modules nothing.
    #[test]
    fn items_are_as_large_as_a_function() {
        assert_eq!(
            std::mem::size_of::<ItemKind>(),
            std::mem::size_of::<FuncDecl>()
        );
    }

    /// A parameter's dimensions, kept out of line only for an aggregate.
    #[test]
    fn parameter_dimensions() {
        let spec = ParamSpec {
            ty: Type::from_directive(b".b8").unwrap(),
            space: StateSpace::Param,
            vector: None,
            align: Some(8),
            ptr: None,
        };
        let span = Span::default();
        let scalar = Param::new(spec.clone(), span, Vec::new(), span);
        assert!(!scalar.is_array() && scalar.dims().is_empty());
        assert_eq!(scalar.element_count(), Some(1));
        let array = Param::new(spec.clone(), span, vec![Some(4), Some(6)], span);
        assert!(array.is_array() && array.dims() == [Some(4), Some(6)]);
        assert_eq!(array.element_count(), Some(24));
        let open = Param::new(spec, span, vec![None], span);
        assert!(open.is_array() && open.element_count().is_none());
    }
}
