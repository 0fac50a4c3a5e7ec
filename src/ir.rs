//! The front end's IR: one [`Module`] per input file.
//!
//! The IR is shallow and lossless. It records module-scope structure (header
//! directives, variables, functions, debug sections) with byte spans into the
//! source, keeps function bodies as token ranges, and lists every module-scope symbol
//! and every place that refers to one. The source bytes themselves are not stored here
//! (they stay in the [`crate::source::SourceMap`]); everything is a span into them.

use crate::lexer::Token;
use crate::source::{FileId, Span};

/// Index of an [`Item`] in [`Module::items`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemId(pub u32);

/// Index of a [`Symbol`] in [`Module::symbols`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymbolId(pub u32);

/// Half-open range of indices into [`Module::tokens`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TokenRange {
    /// First token index.
    pub start: u32,
    /// One past the last token index.
    pub end: u32,
}

impl TokenRange {
    /// The indices as a `usize` range.
    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// One parsed input file.
#[derive(Debug)]
pub struct Module {
    /// The file this module was parsed from.
    pub file: FileId,
    /// All tokens of the file.
    pub tokens: Vec<Token>,
    /// The `//:` comments (GCC's `//:FUNC_MAP` and `//:VAR_MAP` for the offloading
    /// runtime), the only comments that carry meaning for the linker. Other comments
    /// are trivia and are not listed.
    pub map_comments: Vec<Span>,
    /// Module-scope items in source order. Their spans do not overlap, and the bytes
    /// between them are whitespace and comments only.
    pub items: Vec<Item>,
    /// `.version`, `.target` and `.address_size`, when present.
    pub header: Header,
    /// Module-scope symbols, in order of first declaration.
    pub symbols: Vec<Symbol>,
    /// The symbols' names, copied out of the source when parsing ends: symbol `i` is
    /// `symbol_names[symbol_name_ends[i - 1]..symbol_name_ends[i]]`. The linker looks
    /// names up many times after parsing; the copy is a few compact bytes per symbol
    /// where the source names are scattered over every page of the input, and with
    /// [`Module::kept`] it lets the linker leave the input's pages alone until it
    /// writes the output (docs/performance.md).
    pub symbol_names: Vec<u8>,
    /// End offsets into [`Module::symbol_names`], one per symbol.
    pub symbol_name_ends: Vec<u32>,
    /// Copies of the text the merged module needs before any definition (the headers
    /// of function definitions, for prototypes; variables; `.file` entries), so that
    /// the writer reads each input's source once, in order (docs/performance.md).
    pub kept: KeptText,
    /// Every reference to a module-scope symbol, sorted by span.
    pub references: Vec<Reference>,
    /// Where `.loc` directives name files and debug labels.
    pub locs: Locs,
    /// Direct calls (`call (r), f, (a, b);`), in source order.
    pub calls: Vec<CallSite>,
    /// The first `shfl` or `vote` without `.sync` (pre-6.0 warp code, which ptxas
    /// rejects for `.target sm_70` and later at PTX ISA 6.4 and later).
    pub legacy_warp_op: Option<Span>,
    /// The functions whose definition here has an aggregate parameter or return
    /// value (`.param .align N .b8 x[M]`), ascending: the only callees whose call
    /// sites may need an argument's alignment rewritten. Known without visiting
    /// each callee's definition again when linking.
    pub aggregate_param_functions: Vec<SymbolId>,
    /// True if a variable or a function parameter has a texture, sampler or surface
    /// type (the merged module's texture mode must suit every such module). Found
    /// while the items are fresh from parsing: a large link would otherwise read
    /// every item and parameter of every module again, on one thread.
    pub uses_textures: bool,
    /// The `.file` items, in order.
    pub file_directives: Vec<ItemId>,
}

/// Copies of some source ranges of a module (see [`Module::kept`]).
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

    /// The copy of `span`, if a kept range holds all of it.
    pub fn slice(&self, span: Span) -> Option<&[u8]> {
        let at = self.offset_of(span)? as usize;
        Some(&self.text[at..at + span.len()])
    }
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

/// A `.param` variable declared inside a function body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalParam {
    /// Its name.
    pub name: Span,
    /// `.align N`: the value and the span of `N`.
    pub align: Option<(u32, Span)>,
    /// The `.param` directive (a missing `.align` goes after it).
    pub space: Span,
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

/// The number of elements of an array of dimensions `dims`, if every one is known
/// and the count fits 64 bits.
fn element_count(dims: &[Option<u64>]) -> Option<u64> {
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

/// A variable initializer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Initializer {
    /// From the first token after `=` through the last token before `;`.
    pub span: Span,
    /// Spans of identifiers that name symbols (`x`, `generic(x)`, `x+8`).
    pub symbol_refs: Vec<Span>,
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

/// `.func` or `.entry`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FuncKind {
    /// A device function.
    Func,
    /// A kernel.
    Entry,
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

/// A function body.
#[derive(Clone, Debug)]
pub struct Body {
    /// From `{` through `}`.
    pub span: Span,
    /// The tokens from `{` through `}`.
    pub tokens: TokenRange,
}

/// What a module-scope symbol is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SymbolKind {
    /// `.func`.
    Function,
    /// `.entry`.
    Entry,
    /// A variable in any state space.
    Variable,
    /// A label defined inside a debug `.section`.
    SectionLabel,
    /// A label or variable defined in a function body and referred to from a debug
    /// section (`Lfunc_begin0`, `__local_depot0`).
    BodyName,
}

/// Where a symbol is declared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Decl {
    /// The declaring item.
    pub item: ItemId,
    /// The name token in it.
    pub name: Span,
    /// Which declarator of a variable item (0 otherwise).
    pub declarator: u32,
    /// True for a definition (a function with a body, a non-`.extern` variable, a label).
    pub is_definition: bool,
}

/// Every declaration of a symbol, in source order. Most symbols have one, kept in
/// place: an array per symbol was an eighth of a large link's allocations.
#[derive(Clone, Debug)]
pub struct Decls {
    first: Decl,
    /// Boxed: 8 bytes in every symbol instead of a vector's 24; few symbols have it.
    #[allow(clippy::box_collection)]
    more: Option<Box<Vec<Decl>>>,
}

impl Decls {
    /// The declarations, starting with `first`.
    pub fn new(first: Decl) -> Decls {
        Decls { first, more: None }
    }

    /// Adds a later declaration.
    pub fn push(&mut self, d: Decl) {
        self.more.get_or_insert_with(Box::default).push(d);
    }

    /// The first declaration.
    pub fn first(&self) -> &Decl {
        &self.first
    }

    /// The declarations in source order.
    pub fn iter(&self) -> std::iter::Chain<std::iter::Once<&Decl>, std::slice::Iter<'_, Decl>> {
        std::iter::once(&self.first).chain(self.more())
    }

    /// The declarations after the first.
    fn more(&self) -> &[Decl] {
        self.more.as_deref().map_or(&[], |v| v)
    }
}

impl std::ops::Index<usize> for Decls {
    type Output = Decl;

    fn index(&self, i: usize) -> &Decl {
        match i {
            0 => &self.first,
            i => &self.more()[i - 1],
        }
    }
}

impl<'a> IntoIterator for &'a Decls {
    type Item = &'a Decl;
    type IntoIter = std::iter::Chain<std::iter::Once<&'a Decl>, std::slice::Iter<'a, Decl>>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// A module-scope symbol.
#[derive(Clone, Debug)]
pub struct Symbol {
    /// The name as it appears (the first declaration's name token).
    pub name: Span,
    /// What it is.
    pub kind: SymbolKind,
    /// Linkage: the definition's, else the first declaration's.
    pub linkage: Linkage,
    /// State space for variables (`None` for functions and labels).
    pub space: Option<StateSpace>,
    /// Every declaration, in source order.
    pub decls: Decls,
    /// For `.alias this, aliasee;`: the function this name is an alias of.
    pub aliasee: Option<SymbolId>,
}

impl Symbol {
    /// The defining declaration, if any.
    pub fn definition(&self) -> Option<&Decl> {
        self.decls.iter().find(|d| d.is_definition)
    }

    /// True if the module defines the symbol: by a definition or by `.alias`.
    pub fn is_defined(&self) -> bool {
        self.aliasee.is_some() || self.definition().is_some()
    }
}

/// What kind of use a reference is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RefKind {
    /// The callee of a `call` instruction.
    Call,
    /// Any other instruction operand (address taken, loaded, stored, texture...).
    Operand,
    /// A name in a `.calltargets` list.
    CallTarget,
    /// A name in a variable initializer.
    Initializer,
    /// A name in an `.alias` directive.
    Alias,
    /// `function_name` label of a `.loc` directive.
    DebugLoc,
    /// A label or symbol used as data in a debug `.section`.
    Dwarf,
}

/// One use of a module-scope symbol.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The identifier token.
    pub span: Span,
    /// The symbol it names.
    pub symbol: SymbolId,
    /// The item it occurs in.
    pub item: ItemId,
    /// What kind of use.
    pub kind: RefKind,
}

impl Module {
    /// True if `id`'s definition in this module has an aggregate parameter or
    /// return value ([`Module::aggregate_param_functions`]).
    pub fn has_aggregate_params(&self, id: SymbolId) -> bool {
        self.aggregate_param_functions.binary_search(&id).is_ok()
    }

    /// The symbol with id `id`.
    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id.0 as usize]
    }

    /// The name of symbol `id` (a copy of its first declaration's name token).
    pub fn symbol_name(&self, id: SymbolId) -> &[u8] {
        let i = id.0 as usize;
        let lo = if i == 0 {
            0
        } else {
            self.symbol_name_ends[i - 1] as usize
        };
        &self.symbol_names[lo..self.symbol_name_ends[i] as usize]
    }

    /// Fills [`Module::symbol_names`] from `src`, the module's source.
    pub(crate) fn copy_symbol_names(&mut self, src: &[u8]) {
        let len = self.symbols.iter().map(|s| s.name.len()).sum();
        self.symbol_names = Vec::with_capacity(len);
        self.symbol_name_ends = Vec::with_capacity(self.symbols.len());
        for s in &self.symbols {
            self.symbol_names.extend_from_slice(&src[s.name.range()]);
            self.symbol_name_ends.push(self.symbol_names.len() as u32);
        }
    }

    /// Fills [`Module::kept`] from `src`, the module's source.
    pub(crate) fn keep_text(&mut self, src: &[u8]) {
        let mut spans: Vec<Span> = self
            .items
            .iter()
            .filter_map(|item| match &item.kind {
                // A prototype is written from the definition's header. A declaration's
                // is written only for a function no module defines (a system call),
                // and then read from the input: copied for every declaration, the
                // headers of a link of thousands of modules that each declare the same
                // library functions were most of the kept text.
                ItemKind::Function(f) if f.body.is_some() => {
                    Some(Span::new(item.span.lo, f.header_end))
                }
                // `.alias` directives are written and their names looked up.
                ItemKind::Variable(_) | ItemKind::File(_) | ItemKind::Alias { .. } => {
                    Some(item.span)
                }
                _ => None,
            })
            .collect();
        // The `//:` comments, which the layout reads and writes the offloading map
        // comments of; they may lie inside an item, even inside a kept header.
        if !self.map_comments.is_empty() {
            spans.extend_from_slice(&self.map_comments);
            spans.sort_by_key(|s| (s.lo, std::cmp::Reverse(s.hi)));
            let mut end = 0;
            spans.retain(|s| {
                let inside = s.hi <= end;
                end = end.max(s.hi);
                !inside
            });
        }
        // Sized first: growing the copy as it is made copied it again and again.
        let bytes = spans.iter().map(|s| s.len()).sum();
        let mut kept = KeptText {
            text: Vec::with_capacity(bytes),
            spans: Vec::with_capacity(spans.len()),
        };
        for span in spans {
            kept.keep(src, span);
        }
        self.kept = kept;
    }

    /// For each item, the function or kernel it defines (by index; `None` for
    /// items that define none). An array, not a map: the symbol table and the
    /// layout ask it for every item of every module.
    pub fn function_definitions(&self) -> Vec<Option<SymbolId>> {
        let mut defines = vec![None; self.items.len()];
        for (id, s) in self.symbols_with_ids() {
            if matches!(s.kind, SymbolKind::Function | SymbolKind::Entry) {
                if let Some(d) = s.definition() {
                    defines[d.item.0 as usize] = Some(id);
                }
            }
        }
        defines
    }

    /// The item with id `id`.
    pub fn item(&self, id: ItemId) -> &Item {
        &self.items[id.0 as usize]
    }

    /// All symbols with their ids.
    pub fn symbols_with_ids(&self) -> impl Iterator<Item = (SymbolId, &Symbol)> {
        self.symbols
            .iter()
            .enumerate()
            .map(|(i, s)| (SymbolId(i as u32), s))
    }

    /// The tokens of `range`.
    pub fn tokens_in(&self, range: TokenRange) -> &[Token] {
        &self.tokens[range.range()]
    }

    /// Frees the token array, for consumers that only need spans (the linker). Every
    /// token range in the module becomes empty. On a 170 MB link this saves a third
    /// of the memory and most of the page faults (docs/performance.md).
    pub fn release_tokens(&mut self) {
        self.tokens = Vec::new();
        for item in &mut self.items {
            item.tokens = TokenRange::default();
            if let ItemKind::Function(FuncDecl {
                body: Some(body), ..
            }) = &mut item.kind
            {
                body.tokens = TokenRange::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parsed IR of a large link is mostly parameters and items: their sizes
    /// are budgeted (docs/performance.md), and a field added to either should be a
    /// decision, not an accident.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn parameters_stay_small() {
        assert_eq!(std::mem::size_of::<Param>(), 48);
        assert_eq!(std::mem::size_of::<ParamSpec>(), 24);
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

    /// One declaration or several: indexing, iteration and `first` see them in the
    /// order they were declared.
    #[test]
    fn declarations_keep_their_order() {
        let decl = |i: u32| Decl {
            item: ItemId(i),
            name: Span::new(i, i + 1),
            declarator: 0,
            is_definition: i == 2,
        };
        let mut d = Decls::new(decl(0));
        assert_eq!(d.iter().map(|d| d.item.0).collect::<Vec<_>>(), [0]);
        for i in 1..4 {
            d.push(decl(i));
        }
        assert_eq!(
            (&d).into_iter().map(|d| d.item.0).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert_eq!(
            (d[0].item, d[3].item, d.first().item),
            (ItemId(0), ItemId(3), ItemId(0))
        );
        let sym = Symbol {
            name: Span::new(0, 1),
            kind: SymbolKind::Function,
            linkage: Linkage::Visible,
            space: None,
            decls: d,
            aliasee: None,
        };
        assert_eq!(sym.definition().map(|d| d.item), Some(ItemId(2)));
    }

    /// A signature tells a list not written from an empty one, for returns and
    /// parameters alike, with both lists in one array.
    #[test]
    fn signature_lists_written_or_not() {
        let src = b".func (.param .b32 r) f (.param .b64 a, .param .b64 b);";
        let parsed = crate::parse::parse_module(crate::source::FileId(0), src);
        let ItemKind::Function(f) = &parsed.module.items[0].kind else {
            panic!("{:?}", parsed.module.items);
        };
        let names = |ps: Option<&[Param]>| {
            ps.map(|ps| ps.iter().map(|p| &src[p.name.range()]).collect::<Vec<_>>())
        };
        let sig = &f.signature;
        assert_eq!(names(sig.returns()), Some(vec![&b"r"[..]]));
        assert_eq!(names(sig.params()), Some(vec![&b"a"[..], b"b"]));
        assert_eq!(sig.all().len(), 3);
        let none = Signature::new(None, Some(Vec::new()));
        assert_eq!((none.returns(), none.params()), (None, Some(&[][..])));
        let empty = Signature::new(Some(Vec::new()), None);
        assert_eq!((empty.returns(), empty.params()), (Some(&[][..]), None));
        let both = Signature::new(Some(sig.returns().unwrap().to_vec()), None);
        assert_eq!(names(both.returns()), Some(vec![&b"r"[..]]));
        assert!(both.params().is_none() && both.all().len() == 1);
    }
}
