//! Finds, sixteen or 64 bytes at a time, the next byte of an instruction's operands
//! that the compact lexer has to look at (`compact.rs`, `Lexer::operands`).
//!
//! Most operand bytes are skipped without effect: whitespace, the punctuation of
//! addresses and lists, `%`-names and `.`-modifiers. Deciding that byte by byte costs
//! a hard-to-predict branch per byte, and that branch was the largest single cost of
//! linking (a `perf annotate` of the operand loop). Here each byte is classified with
//! vector table lookups instead, and the loop only sees the bytes that matter: the
//! start of an identifier or a number, `;`, braces, parentheses (a call's, lexed in
//! full), `/`, `+` (after which only a number may come: the loops look at what does;
//! `+` is rare, and a mark for it cost every window more than the stops cost), and
//! anything unusual.
//!
//! Each window also marks where the operand grammar (`grammar.rs`) may be broken,
//! without adding events where it holds: a term start whose previous significant
//! byte ends a term (a juxtaposition: counted, see [`Passed`]), and (in
//! [`Events::breaks_grammar`]) a `,` or modifier after a `,`, an empty place after `[`
//! or `{` or before `]`, `}` or `;`, `.reg`, a modifier after whitespace that
//! follows a term, and brackets that do not alternate. The previous significant byte
//! of every position is found at once by an addition whose carries run through the whitespace (bit tricks as in simdjson):
//! `(space + (A << 1)) & !space` sets the first non-space bit after each bit of A;
//! whether a position is inside an address is the parity of the brackets before it, a
//! prefix XOR (one carry-less multiplication). A window hands the next one the carries
//! of its additions and its parity, so a scan through contiguous windows looks nothing
//! up byte by byte.
//!
//! A byte is skipped exactly when the byte-by-byte loop would skip it with no effect,
//! judging only from it and its two neighbours:
//! - whitespace and the punctuation `, [ ] - ! * | & ^ ~ < > = ? @`;
//! - `%` followed by a name character (a `%`-name begins);
//! - `.` followed by a name character that is not a digit (a modifier begins);
//! - a name character after a name character, `%` or `.` (the middle of a name).
//!
//! The last rule assumes the loop is not at the start of a token; the caller keeps to
//! that by stepping byte by byte while the byte before is one of those three.
//!
//! The operand loop asks once per token it keeps, a few times per instruction, so
//! [`next_operand_event`] classifies 64 bytes at once and keeps the result: most
//! calls then fall in the window the previous one loaded.

use super::grammar::CHECKED;

/// Bytes always skipped: whitespace (as the lexer's `WS` class) and the punctuation
/// the operand loop passes over (`+` too where statements are not checked).
const fn is_plain(b: u8) -> bool {
    !CHECKED && b == b'+'
        || matches!(
            b,
            b' ' | b'\t'
                | b'\n'
                | b'\r'
                | 0x0b
                | 0x0c
                | b','
                | b'['
                | b']'
                | b'-'
                | b'!'
                | b'*'
                | b'|'
                | b'&'
                | b'^'
                | b'~'
                | b'<'
                | b'>'
                | b'='
                | b'?'
                | b'@'
        )
}

/// Name characters (the lexer's `FOLLOW` class).
const fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Lookup tables for a set of ASCII bytes: `b` is in the set exactly when
/// `lo[b & 15] & hi[b >> 4] != 0` (one bit per high nibble 0..7; bytes from 0x80 have
/// no bit, so they are never in it).
const fn nibble_tables(set: Set) -> ([u8; 16], [u8; 16]) {
    let (mut lo, mut hi) = ([0u8; 16], [0u8; 16]);
    let mut h = 0;
    while h < 8 {
        hi[h] = 1 << h;
        let mut l = 0;
        while l < 16 {
            if set.contains((h << 4 | l) as u8) {
                lo[l] |= 1 << h;
            }
            l += 1;
        }
        h += 1;
    }
    (lo, hi)
}

/// The byte sets the vector code looks up.
#[derive(Clone, Copy)]
enum Set {
    Plain,
    Name,
    Space,
}

impl Set {
    const fn contains(self, b: u8) -> bool {
        match self {
            Set::Plain => is_plain(b),
            Set::Name => is_name(b),
            Set::Space => is_space(b),
        }
    }
}

/// Whitespace (the lexer's `WS` class).
const fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

const PLAIN: ([u8; 16], [u8; 16]) = nibble_tables(Set::Plain);
const NAME: ([u8; 16], [u8; 16]) = nibble_tables(Set::Name);
const SPACE: ([u8; 16], [u8; 16]) = nibble_tables(Set::Space);

/// Whether position `i` of `src` is skipped, by the rules above (the scalar
/// definition the vector code must agree with; `0 < i < src.len() - 1`).
#[cfg(test)]
fn skipped(src: &[u8], i: usize) -> bool {
    let (prev, b, next) = (src[i - 1], src[i], src[i + 1]);
    is_plain(b)
        || b == b'%' && is_name(next)
        || b == b'.' && is_name(next) && !next.is_ascii_digit()
        || is_name(b) && (is_name(prev) || prev == b'%' || prev == b'.')
}

/// The byte classes of one loaded vector, one bit per byte (bit k is byte k).
#[derive(Clone, Copy, Default)]
struct Classes<T> {
    plain: T,
    name: T,
    pct: T,
    dot: T,
    /// Name characters but digits.
    alpha: T,
    space: T,
    /// The grammar's bytes: `[` or `{`, `]` or `}`, `,`, `;`, and `g` (the last
    /// letter of `.reg`). (`[` and `]` are the first two's plain bytes.)
    grammar: [T; GRAMMAR],
}

/// How many masks [`Classes::grammar`] has.
const GRAMMAR: usize = 5;

/// The grammar's masks of the bytes `v` (one vector), from `eq(b)`, the bytes equal
/// to `b`, `eq_folded(b)`, the bytes equal to `b` once bit 5 is set in each (which
/// folds `[` onto `{` and `]` onto `}`, and nothing else onto them), and `mask` (the
/// bits of a vector's bytes).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn grammar_masks<V: Copy>(
    eq: impl Fn(u8) -> V,
    eq_folded: impl Fn(u8) -> V,
    mask: impl Fn(V) -> u64,
) -> [u64; GRAMMAR] {
    if !CHECKED {
        return [0; GRAMMAR];
    }
    [
        mask(eq_folded(b'{')),
        mask(eq_folded(b'}')),
        mask(eq(b',')),
        mask(eq(b';')),
        mask(eq(b'g')),
    ]
}

impl Classes<u64> {
    /// Which bytes are not skipped, by the rules above: bit k needs bits k - 1 and
    /// k + 1, so the lowest and highest bits of the block are not decided.
    fn events(&self) -> u64 {
        let after_name = (self.name | self.pct | self.dot) << 1;
        let skip = self.plain
            | (self.pct & (self.name >> 1))
            | (self.dot & (self.alpha >> 1))
            | (self.name & after_name);
        !skip
    }
}

/// Classifies the sixteen bytes at `at`.
///
/// # Safety
/// The CPU has SSSE3 (the caller is compiled with it, so this inlines), and
/// `at .. at + 16` is readable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn classify16(at: *const u8) -> Classes<u64> {
    use std::arch::x86_64::*;
    let table = |t: [u8; 16]| _mm_loadu_si128(t.as_ptr() as *const __m128i);
    let low_nibble = _mm_set1_epi8(0x0f);
    let zero = _mm_setzero_si128();
    // Digits: `b - '0' < 10` as a signed compare after moving the range to -128.
    let digit_bias = _mm_set1_epi8((0x80u8.wrapping_sub(b'0')) as i8);
    let digit_limit = _mm_set1_epi8((0x80u8 + 10) as i8);
    let v = _mm_loadu_si128(at as *const __m128i);
    let lo = _mm_and_si128(v, low_nibble);
    let hi = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
    // The bytes outside a set.
    let outside = |(tlo, thi): ([u8; 16], [u8; 16])| {
        let t = _mm_and_si128(
            _mm_shuffle_epi8(table(tlo), lo),
            _mm_shuffle_epi8(table(thi), hi),
        );
        _mm_cmpeq_epi8(t, zero)
    };
    let mask = |m: __m128i| _mm_movemask_epi8(m) as u32 as u64;
    let member = |set| !mask(outside(set)) & 0xffff;
    let is = |b: u8| mask(_mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)));
    let folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
    let grammar = grammar_masks(
        |b| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8)),
        |b| _mm_cmpeq_epi8(folded, _mm_set1_epi8(b as i8)),
        mask,
    );
    let not_name = outside(NAME);
    let digit = _mm_cmplt_epi8(_mm_add_epi8(v, digit_bias), digit_limit);
    Classes {
        plain: member(PLAIN),
        name: !mask(not_name) & 0xffff,
        pct: is(b'%'),
        dot: is(b'.'),
        alpha: !mask(_mm_or_si128(not_name, digit)) & 0xffff,
        space: member(SPACE),
        grammar,
    }
}

/// Positions decided by one window: bytes `base - 1 .. base + 63` are loaded.
const WINDOW: usize = 62;

/// Bits `0 .. WINDOW`.
const DECIDED: u64 = (1 << WINDOW) - 1;

/// What the last 64-byte window looked at holds: where its events are, and which
/// of its bytes are name characters and whitespace. An instruction's operands are
/// short, so the next question usually falls in the same window and costs a shift
/// and a bit scan.
#[derive(Clone, Copy, Debug)]
pub(super) struct Events {
    /// The first position of the window; [`Events::NONE`] before the first.
    base: usize,
    /// Bit j: position `base + j` is an event or breaks the operand grammar (j <
    /// [`WINDOW`]).
    mask: u64,
    /// Bit j: byte `base + j` is not a name character (the lexer's `FOLLOW`; j <
    /// [`WINDOW`]).
    not_name: u64,
    /// Bit j: byte `base + j` is not whitespace (the lexer's `WS`; j < [`WINDOW`]).
    not_space: u64,
    /// Bit j: position `base + j` starts a term right after another (whitespace
    /// aside), which is a slip unless it is an instruction's first operand.
    juxtaposed: u64,
    /// Bit j: position `base + j` breaks the operand grammar otherwise.
    gram: u64,
    /// Bit j: byte `base + j` is a `,`.
    comma: u64,
    /// The carries of the window that follows this one (at `base + WINDOW`); while
    /// a window is loaded, its own.
    next: Carries,
}

impl Events {
    /// A base no position falls in the window of: `pos.wrapping_sub(NONE)` is
    /// `pos + WINDOW + 1`, never below [`WINDOW`].
    const NONE: usize = usize::MAX - WINDOW;

    pub const fn new() -> Events {
        Events {
            base: Events::NONE,
            mask: 0,
            not_name: 0,
            not_space: 0,
            juxtaposed: 0,
            gram: 0,
            comma: 0,
            next: Carries::NONE,
        }
    }
}

/// The first position at or after `pos` whose bit `pick` sets in a window's decided
/// bits, loading windows as needed; where no window fits (the last 64 bytes of
/// `src`), `scalar` answers from there.
#[inline(always)]
fn find(
    src: &[u8],
    mut pos: usize,
    cache: &mut Events,
    pick: impl Fn(&Events) -> u64,
    scalar: impl Fn(&[u8], usize) -> usize,
) -> usize {
    loop {
        let off = pos.wrapping_sub(cache.base);
        if off < WINDOW {
            let bits = pick(cache) >> off;
            if bits != 0 {
                return pos + bits.trailing_zeros() as usize;
            }
            pos = cache.base + WINDOW;
        }
        if !load_window(src, pos, cache) {
            return scalar(src, pos);
        }
    }
}

/// What an operand loop has passed of an instruction: juxtapositions (a term
/// starting right after another, whitespace aside), of which a well-formed one has
/// one at most, its first operand, and whether a comma came before that first
/// operand, which a well-formed one never has.
///
/// The windows' marks are counted a range at a time, not at each event: when the
/// scan leaves a window, and at the `;` ([`Passed::slip`]). Between the events the
/// operand loops step over tokens (names, numbers), inside which there are no marks,
/// so every position from the first one counted to the `;` may be counted.
#[derive(Clone, Copy)]
pub(super) struct Passed {
    /// The first position not counted yet.
    from: usize,
    /// A juxtaposition was counted.
    one: bool,
    /// A second juxtaposition, or a comma before the first.
    slip: bool,
}

impl Passed {
    /// Nothing passed yet; counting starts at `from`.
    pub(super) fn new(from: usize) -> Passed {
        Passed {
            from,
            one: false,
            slip: false,
        }
    }

    /// Adds the juxtapositions of `marks` (one bit each) and the commas of `commas`,
    /// bits of one window. Only "none", "one" and "more" matter, which needs no bit
    /// count: a juxtaposition counted before is a mark below them all (a window has
    /// [`WINDOW`] bits, so shifting them up loses none).
    #[inline(always)]
    fn add(&mut self, marks: u64, commas: u64) {
        let marks = marks << 1 | self.one as u64;
        let below_first = marks ^ marks.wrapping_sub(1);
        self.slip |= (commas << 1 & below_first) | (marks & marks.wrapping_sub(1)) != 0;
        self.one = marks != 0;
    }

    /// Counts the marks of `cache`'s window from [`Passed::from`] through `to`, a
    /// position in it (a position before the window was stepped over inside a token
    /// whose window was replaced).
    #[inline(always)]
    fn count(&mut self, cache: &Events, to: usize) {
        let from = self.from.saturating_sub(cache.base);
        let range = (u64::MAX << from) & (u64::MAX >> (63 - (to - cache.base)));
        self.add(cache.juxtaposed & range, cache.comma & range);
        self.from = to + 1;
    }

    /// Counts the marks up to `at`, the last event [`next_operand_event`] returned,
    /// before the scan steps over a token that may run into another window.
    #[inline(always)]
    pub(super) fn settle(&mut self, cache: &Events, at: usize) {
        if CHECKED {
            self.count(cache, at);
        }
    }

    /// Whether the statement has a slip: more juxtapositions than the first
    /// operand's, or a comma before it (`mov.u32 , %r1`, `f, (param0)`, `f,
    /// call.uni (r), ...`), counting through `at`, the `;` that
    /// [`next_operand_event`] returned.
    #[inline(always)]
    pub(super) fn slip(&mut self, cache: &Events, at: usize) -> bool {
        if !CHECKED {
            return false;
        }
        self.count(cache, at);
        self.slip
    }
}

/// The next position at or after `pos` that the operand loop looks at: an event, or
/// one that breaks the operand grammar ([`Events::breaks_grammar`]); counts into
/// `passed` the marks of each window it leaves. `None` where no window fits (the last
/// 64 bytes of `src`): the caller then lexes the statement in full, and checks its
/// tokens.
#[inline(always)]
pub(super) fn next_operand_event(
    src: &[u8],
    mut pos: usize,
    cache: &mut Events,
    passed: &mut Passed,
) -> Option<usize> {
    loop {
        let off = pos.wrapping_sub(cache.base);
        if off < WINDOW {
            let bits = cache.mask >> off;
            if bits != 0 {
                return Some(pos + bits.trailing_zeros() as usize);
            }
        }
        // The scan leaves the window forwards (not one loaded after `pos`): what
        // it has not counted of it, it passed.
        if pos >= cache.base {
            let end = cache.base + WINDOW;
            if CHECKED && passed.from < end {
                passed.count(cache, end - 1);
            }
            pos = pos.max(end);
        }
        if !load_window(src, pos, cache) {
            return None;
        }
    }
}

impl Events {
    /// Whether position `pos`, which the last [`next_operand_event`] returned, breaks
    /// the operand grammar otherwise: a `,` or `)` after a `,`; `,`, `;`, `)`, `]` or
    /// `}` after `[` or `{`; `]`, `}` or `;` after anything but the end of a term; `[`
    /// inside an address, `]` or `;` outside one; `.reg`.
    #[inline(always)]
    pub(super) fn breaks_grammar(&self, pos: usize) -> bool {
        CHECKED && (self.gram >> (pos - self.base)) & 1 != 0
    }
}

/// The first position at or after `pos` that is not a name character (the end of
/// the name `pos` is in), or `src.len()`, through `cache`. `pos` must be at least 1.
#[inline(always)]
pub(super) fn name_end_cached(src: &[u8], pos: usize, cache: &mut Events) -> usize {
    find(
        src,
        pos,
        cache,
        |e| e.not_name,
        |src, pos| {
            src[pos..]
                .iter()
                .position(|&b| !is_name(b))
                .map_or(src.len(), |i| pos + i)
        },
    )
}

/// The first position at or after `pos` that is not whitespace, or `src.len()`,
/// through `cache`. `pos` must be at least 1.
#[inline(always)]
pub(super) fn space_end_cached(src: &[u8], pos: usize, cache: &mut Events) -> usize {
    find(
        src,
        pos,
        cache,
        |e| e.not_space,
        super::scan::skip_whitespace,
    )
}

/// Loads the window at `pos` into `cache`; false where it does not fit in `src`
/// (or the CPU has no SSSE3).
#[inline(always)]
fn load_window(src: &[u8], pos: usize, cache: &mut Events) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let load = LOADER.load(std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `LOADER` only ever holds a `Loader` (`detect` or one it chose for
        // this CPU).
        unsafe { std::mem::transmute::<*mut (), Loader>(load)(src, pos, cache) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (src, pos, cache);
        false
    }
}

/// A window loader for one instruction set: [`load_window`]'s contract, callable
/// only where the CPU has that set.
#[cfg(target_arch = "x86_64")]
type Loader = unsafe fn(&[u8], usize, &mut Events) -> bool;

/// The loader for this CPU, chosen at the first load (a pointer rather than a
/// feature test at each load: a window is loaded every 62 bytes of a body, and the
/// tests and a second call cost a visible share of a load).
#[cfg(target_arch = "x86_64")]
static LOADER: std::sync::atomic::AtomicPtr<()> =
    std::sync::atomic::AtomicPtr::new(detect as Loader as *mut ());

/// Chooses the loader for this CPU, and loads with it.
#[cfg(target_arch = "x86_64")]
unsafe fn detect(src: &[u8], pos: usize, cache: &mut Events) -> bool {
    let load: Loader = if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("pclmulqdq")
    {
        load_avx2
    } else if std::arch::is_x86_feature_detected!("ssse3") {
        load_ssse3
    } else {
        load_none
    };
    LOADER.store(load as *mut (), std::sync::atomic::Ordering::Relaxed);
    // SAFETY: the CPU has what `load` needs (detected just above).
    unsafe { load(src, pos, cache) }
}

/// Whether the window at `pos` (bytes `pos - 1 .. pos + 63`) fits in `src`; if so,
/// sets `cache.next` to its carries, which the window in the cache knows where it
/// is the one just before.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prepare(src: &[u8], pos: usize, cache: &mut Events) -> bool {
    if pos == 0 || pos - 1 + 64 > src.len() {
        return false;
    }
    // Elsewhere they are looked up byte by byte.
    if pos != cache.base.wrapping_add(WINDOW) {
        cache.next = Carries::before(src, pos);
    }
    true
}

/// [`load_window`] with AVX2 and PCLMULQDQ.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,pclmulqdq")]
unsafe fn load_avx2(src: &[u8], pos: usize, cache: &mut Events) -> bool {
    if !prepare(src, pos, cache) {
        return false;
    }
    // SAFETY: the CPU has AVX2 and PCLMULQDQ (this function's contract), and the
    // window fits.
    unsafe { window_avx2(src, pos, cache) };
    true
}

/// [`load_window`] with SSSE3.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
unsafe fn load_ssse3(src: &[u8], pos: usize, cache: &mut Events) -> bool {
    if !prepare(src, pos, cache) {
        return false;
    }
    // SAFETY: the CPU has SSSE3 (this function's contract), and the window fits.
    unsafe { window_ssse3(src, pos, cache) };
    true
}

/// [`load_window`] without the vector instructions it needs: no window fits.
#[cfg(target_arch = "x86_64")]
unsafe fn load_none(_: &[u8], _: usize, _: &mut Events) -> bool {
    false
}

/// The prefix XOR of `x` (bit k: the parity of bits 0 ..= k), by shifts.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefix_xor(mut x: u64) -> u64 {
    for shift in [1, 2, 4, 8, 16, 32] {
        x ^= x << shift;
    }
    x
}

/// The prefix XOR of `x` in one carry-less multiplication by all ones.
///
/// # Safety
/// The CPU has PCLMULQDQ (the caller is compiled with it, so this inlines).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefix_xor_clmul(x: u64) -> u64 {
    use std::arch::x86_64::*;
    let product = _mm_clmulepi64_si128(_mm_cvtsi64_si128(x as i64), _mm_set1_epi8(-1), 0);
    _mm_cvtsi128_si64(product) as u64
}

impl Classes<u64> {
    /// The window at `pos` from the classes of bytes `pos - 1 .. pos + 63` (bit k is
    /// byte `pos - 1 + k`), with what the bytes before say of its first bytes;
    /// `parity` is a prefix XOR.
    #[inline(always)]
    fn window(
        &self,
        src: &[u8],
        pos: usize,
        carries: Carries,
        parity: impl Fn(u64) -> u64,
    ) -> Events {
        let [open, close, comma, semi, g] = self.grammar;
        let (name, space) = (self.name, self.space);
        // The previous significant byte of each position: `(space + (a << 1)) &
        // !space` has the first significant bit after each bit of `a`; a carry into
        // bit 0 continues one from before the window through its leading whitespace,
        // and a whitespace bit the carries ran through is clear in the sum (which
        // hands the next window its carry: see `Carries`).
        let sum = |a: u64, carry: u64| space.wrapping_add(a << 1 | carry);
        // (Parentheses are events: the operand loops lex a statement with one in
        // full, and its tokens are checked.)
        let ends_term = name | close;
        let term_sum = sum(ends_term, carries.term);
        let after_term = term_sum & !space;
        // A name character right after one is the same token.
        let name_start = name & !(name << 1);
        let juxtaposed = after_term & (name_start | self.pct | open);
        // A modifier: `.` then a name character that is not a digit (`.5` is a
        // number).
        let modifier = self.dot & (self.alpha >> 1);
        // After `,`, `[` or `{`: no `,` and no modifier; no `;`, `]` or `}` either,
        // which `before_close` marks (neither ends a term).
        let list_sum = sum(comma | open, carries.list);
        let after_list = list_sum & !space & (comma | modifier);
        let before_close = (close | semi) & !after_term;
        // Bit k: byte k is inside an address, or is the `[` that opens one (a carry
        // into bit 0 flips them all). A `[` there has none open before it, a `]` one.
        let square = (open | close) & self.plain;
        let inside = parity(square ^ carries.inside);
        let brackets = (square & (open ^ inside)) | (semi & inside);
        // A modifier after whitespace that follows a term (`0 .aligned`, but also
        // `add.s32 .sat`): rare, and only the tokens tell an operand from the
        // opcode's word.
        let detached = after_term & modifier & (space << 1);
        let gram = after_list | before_close | brackets | detached | reg(src, pos, self, g);
        // (A build that does not check statements drops all of the above.)
        let (juxtaposed, gram, comma) = if CHECKED {
            (juxtaposed, gram, comma)
        } else {
            (0, 0, 0)
        };
        // A carry ran through whitespace bit WINDOW, the byte before the next
        // window's first: it goes on into that window.
        let carry_out = |sum: u64| (!sum & space) >> WINDOW & 1;
        Events {
            base: pos,
            mask: ((self.events() | gram) >> 1) & DECIDED,
            not_name: !(name >> 1) & DECIDED,
            not_space: !(space >> 1) & DECIDED,
            juxtaposed: (juxtaposed >> 1) & DECIDED,
            comma: (comma >> 1) & DECIDED,
            gram: (gram >> 1) & DECIDED,
            next: if CHECKED {
                Carries {
                    term: carry_out(term_sum),
                    list: carry_out(list_sum),
                    inside: inside >> (WINDOW - 1) & 1,
                }
            } else {
                Carries::NONE
            },
        }
    }
}

/// `.reg` in the window of `classes` at `pos`, which ptxas never takes as a modifier:
/// bit k where byte `pos - 1 + k` starts `.reg` and no name character follows. The
/// window's `g` bits three bytes after a `.` find the candidates, which are rare, and
/// `src` decides; a `.` in the last decided bits has its `g` after the window, so
/// `src` decides for each of those too.
#[inline(always)]
fn reg(src: &[u8], pos: usize, classes: &Classes<u64>, g: u64) -> u64 {
    const LAST: u64 = 0b11 << (WINDOW - 1);
    let mut candidates = classes.dot & ((g >> 3) | LAST);
    let mut reg = 0;
    while candidates != 0 {
        let k = candidates.trailing_zeros() as usize;
        let at = pos - 1 + k;
        if src.get(at + 1..at + 4) == Some(&b"reg"[..])
            && src.get(at + 4).is_none_or(|&b| !is_name(b))
        {
            reg |= 1 << k;
        }
        candidates &= candidates - 1;
    }
    reg
}

/// What the bytes before a window say of its first ones, each 0 or 1 (a number to
/// add, or to flip bits with): whether the last significant byte before its leading
/// whitespace ends a term or is a `,`, `[` or `{` (`list`), and whether the
/// window starts inside an address. Where no whitespace leads, bit 0 is the
/// significant byte and these are 0; where nothing significant comes before, the
/// first one counts as after something that ends no term.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Carries {
    term: u64,
    list: u64,
    inside: u64,
}

impl Carries {
    const NONE: Carries = Carries {
        term: 0,
        list: 0,
        inside: 0,
    };

    /// The carries of the window at `pos` (bytes `pos - 1 ..`) by looking back, where
    /// it does not follow the window in the cache: it starts where a statement or an
    /// operand starts, outside an address (were it inside, a well-formed `]` would
    /// look unopened: the statement would only be lexed in full).
    #[inline(always)]
    fn before(src: &[u8], pos: usize) -> Carries {
        if !CHECKED || !is_space(src[pos - 1]) {
            return Carries::NONE;
        }
        match src[..pos - 1].iter().rev().find(|&&b| !is_space(b)) {
            Some(&b) => Carries {
                term: (is_name(b) || matches!(b, b']' | b'}')) as u64,
                list: matches!(b, b',' | b'[' | b'{') as u64,
                inside: 0,
            },
            None => Carries::NONE,
        }
    }
}

/// [`window_ssse3`] with two 32-byte loads.
///
/// The window is written into `out` rather than returned: copied out of a
/// returned value, its fields were read back before the stores that wrote them
/// had landed: a 16-byte load of fields just written by 8-byte stores cannot be
/// forwarded, and stalls (a visible share of a link's time in `perf`).
///
/// # Safety
/// The CPU has AVX2 and PCLMULQDQ (the caller is compiled with them, so this
/// inlines), and the window is in `src`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn window_avx2(src: &[u8], pos: usize, out: &mut Events) {
    let at = src.as_ptr().add(pos - 1);
    let parts = [classify32(at), classify32(at.add(32))];
    *out = Classes::combine(parts, 32).window(src, pos, out.next, |x| prefix_xor_clmul(x));
}

/// Classifies the 32 bytes at `at`.
///
/// # Safety
/// The CPU has AVX2 (the caller is compiled with it, so this inlines), and
/// `at .. at + 32` is readable.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn classify32(at: *const u8) -> Classes<u64> {
    use std::arch::x86_64::*;
    // The nibble tables in both 16-byte lanes (the shuffle looks up within a lane).
    let table =
        |t: [u8; 16]| _mm256_broadcastsi128_si256(_mm_loadu_si128(t.as_ptr() as *const __m128i));
    let low_nibble = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    let digit_bias = _mm256_set1_epi8((0x80u8.wrapping_sub(b'0')) as i8);
    let digit_limit = _mm256_set1_epi8((0x80u8 + 10) as i8);
    let v = _mm256_loadu_si256(at as *const __m256i);
    let lo = _mm256_and_si256(v, low_nibble);
    let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibble);
    let mask = |m: __m256i| _mm256_movemask_epi8(m) as u32 as u64;
    // The bytes outside a set.
    let outside = |(tlo, thi): ([u8; 16], [u8; 16])| {
        let t = _mm256_and_si256(
            _mm256_shuffle_epi8(table(tlo), lo),
            _mm256_shuffle_epi8(table(thi), hi),
        );
        _mm256_cmpeq_epi8(t, zero)
    };
    let member = |set| !mask(outside(set)) & 0xffff_ffff;
    let eq = |b: u8| _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b as i8));
    let folded = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
    let not_name = outside(NAME);
    let digit = _mm256_cmpgt_epi8(digit_limit, _mm256_add_epi8(v, digit_bias));
    Classes {
        plain: member(PLAIN),
        name: !mask(not_name) & 0xffff_ffff,
        pct: mask(eq(b'%')),
        dot: mask(eq(b'.')),
        alpha: !mask(_mm256_or_si256(not_name, digit)) & 0xffff_ffff,
        space: member(SPACE),
        grammar: grammar_masks(
            eq,
            |b| _mm256_cmpeq_epi8(folded, _mm256_set1_epi8(b as i8)),
            mask,
        ),
    }
}

/// The window of positions `pos .. pos + WINDOW`, from bytes `pos - 1 .. pos + 63`,
/// with the carries in `out`.
///
/// # Safety
/// The CPU has SSSE3 (the caller is compiled with it, so this inlines), and the
/// window is in `src`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn window_ssse3(src: &[u8], pos: usize, out: &mut Events) {
    let at = src.as_ptr().add(pos - 1);
    let parts = [0, 1, 2, 3].map(|i| classify16(at.add(16 * i)));
    *out = Classes::combine(parts, 16).window(src, pos, out.next, prefix_xor);
}

impl Classes<u64> {
    /// The classes of `N` consecutive vectors of `width` bytes, in one.
    #[inline(always)]
    fn combine<const N: usize>(parts: [Classes<u64>; N], width: usize) -> Classes<u64> {
        let join = |f: &dyn Fn(&Classes<u64>) -> u64| {
            (0..N).fold(0, |all, i| all | f(&parts[i]) << (width * i))
        };
        Classes {
            plain: join(&|c| c.plain),
            name: join(&|c| c.name),
            pct: join(&|c| c.pct),
            dot: join(&|c| c.dot),
            alpha: join(&|c| c.alpha),
            space: join(&|c| c.space),
            grammar: std::array::from_fn(|k| join(&|c| c.grammar[k])),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random texts made of the interesting bytes, `rounds` of them, each up to
    /// `max_len` bytes; every other one mostly skippable, so that scans run over
    /// several blocks.
    fn texts(rounds: usize, max_len: u64) -> Vec<Vec<u8>> {
        let alphabet = b"aZ_$09%.;,[]{}()/ \t\n\r\x0b\x0c:\"+-!@x\x80\x00";
        let mut rand = crate::lex::xorshift(0x9e37_79b9_7f4a_7c15);
        (0..rounds)
            .map(|round| {
                let len = 2 + (rand() % max_len) as usize;
                let mut text: Vec<u8> = (0..len)
                    .map(|_| {
                        let r = rand();
                        if round % 2 == 0 && r % 4 != 0 {
                            b" %r1.u32,[+]"[(r >> 8) as usize % 12]
                        } else {
                            alphabet[(r >> 8) as usize % alphabet.len()]
                        }
                    })
                    .collect();
                // `.reg` now and then, and `.re` cut short.
                for _ in 0..len / 40 {
                    let at = (rand() % len as u64) as usize;
                    let word: &[u8] = if rand() % 2 == 0 { b".reg" } else { b".re" };
                    for (k, &b) in word.iter().enumerate() {
                        if let Some(x) = text.get_mut(at + k) {
                            *x = b;
                        }
                    }
                }
                text
            })
            .collect()
    }

    /// The marks of byte `i` by the scalar rules: (juxtaposed, breaks the grammar).
    /// Whether `i` is inside an address is counted from byte `start`, with `inside`
    /// before it (a window chain's first byte: the windows know no more).
    fn marks(src: &[u8], start: usize, inside: bool, i: usize) -> (bool, bool) {
        let b = src[i];
        let ends_term = |b: u8| is_name(b) || matches!(b, b']' | b'}');
        // The previous significant byte; with none, the first one counts as after
        // something that ends no term.
        let q = (0..i).rev().find(|&k| !is_space(src[k]));
        let p = q.map(|q| src[q]);
        let term = p.is_some_and(ends_term);
        let comma = p == Some(b',');
        let open = matches!(p, Some(b'[' | b'{'));
        let other = !term;
        let same_token = q == Some(i - 1) && is_name(src[i - 1]) && is_name(b);
        let juxtaposed = term && (is_name(b) || matches!(b, b'%' | b'[' | b'{')) && !same_token;
        let mut inside = inside;
        for &x in &src[start..=i] {
            inside ^= matches!(x, b'[' | b']');
        }
        let modifier = b == b'.'
            && src
                .get(i + 1)
                .is_some_and(|&n| is_name(n) && !n.is_ascii_digit());
        let reg = b == b'.'
            && src.get(i + 1..i + 4) == Some(&b"reg"[..])
            && src.get(i + 4).is_none_or(|&n| !is_name(n));
        let detached = modifier && term && is_space(src[i - 1]);
        let gram = detached
            || comma && (b == b',' || modifier)
            || open && (matches!(b, b',' | b';' | b']' | b'}') || modifier)
            || reg
            || other && matches!(b, b']' | b'}' | b';')
            || b == b'[' && !inside
            || matches!(b, b']' | b';') && inside;
        (juxtaposed, gram)
    }

    /// Whether the juxtapositions and commas of positions `from ..= to` make a slip:
    /// more than one juxtaposition, or a comma before the first.
    fn slip(src: &[u8], start: usize, from: usize, to: usize) -> bool {
        let juxtaposed = |k: usize| marks(src, start, false, k).0;
        let n = (from..=to).filter(|&k| juxtaposed(k)).count();
        let first_mark = (from..=to).find(|&k| juxtaposed(k));
        let first_comma = (from..=to).find(|&k| src[k] == b',');
        n > 1 || first_comma.is_some_and(|f| first_mark.is_none_or(|m| f < m))
    }

    /// Each window's marks are the scalar rules', from both vector widths, and so are
    /// the carries it hands the next window; the operand scan stops at the first event
    /// or mark, for every start in texts made of the interesting bytes, with a fresh
    /// cache and with one carried from call to call (forwards, as the operand loop
    /// goes, and backwards, as after it takes back a statement); where no window fits,
    /// it says so. Scans through several windows count the marks they pass.
    #[test]
    fn operand_scan_agrees_with_the_rules() {
        let (mut checked, mut beyond) = (0, 0);
        for src in texts(1500, 240) {
            let len = src.len();
            let starts = (1..len - 1)
                .map(|p| (p, 0))
                .chain((1..len - 1).rev().map(|p| (p, 1)));
            let mut carried = [Events::new(), Events::new()];
            for (pos, pass) in starts {
                if pos - 1 + 64 <= len {
                    // A window of its own at `pos`, its carries found by looking back.
                    let c = Carries::before(&src, pos);
                    let mut fresh = Events::new();
                    assert!(load_window(&src, pos, &mut fresh));
                    for j in 0..WINDOW {
                        let i = pos + j;
                        let (juxtaposed, gram) = marks(&src, pos - 1, false, i);
                        assert_eq!(
                            (fresh.juxtaposed >> j & 1 != 0, fresh.breaks_grammar(i)),
                            (juxtaposed, gram),
                            "{src:?} window {pos} at {i}, {c:?}"
                        );
                        let stop = !skipped(&src, i) || gram;
                        assert_eq!(fresh.mask >> j & 1 != 0, stop, "{src:?} at {i}");
                        if !skipped(&src, i) || gram {
                            // The first stop from `pos`, with the marks passed on the way.
                            let first = (pos..i)
                                .all(|k| skipped(&src, k) && !marks(&src, pos - 1, false, k).1);
                            if first {
                                let mut cache = fresh;
                                let mut counted = Passed::new(pos);
                                let found = next_operand_event(&src, pos, &mut cache, &mut counted);
                                assert_eq!(found, Some(i), "{src:?} from {pos}");
                                let want = slip(&src, pos - 1, pos, i);
                                assert_eq!(counted.slip(&cache, i), want, "{src:?} from {pos}");
                            }
                        }
                    }
                    // The carries it hands the next window are the ones looking back
                    // finds, and whether that one starts inside an address.
                    let mut inside = false;
                    for &x in &src[pos - 1..pos + WINDOW - 1] {
                        inside ^= matches!(x, b'[' | b']');
                    }
                    let back = Carries::before(&src, pos + WINDOW);
                    let want = Carries {
                        inside: inside as u64,
                        ..back
                    };
                    assert_eq!(fresh.next, want, "{src:?} after the window at {pos}");
                    #[cfg(target_arch = "x86_64")]
                    if std::arch::is_x86_feature_detected!("avx2")
                        && std::arch::is_x86_feature_detected!("pclmulqdq")
                    {
                        // SAFETY: the CPU has AVX2 and PCLMULQDQ (and so SSSE3).
                        let (mut a, mut b) = (Events::new(), Events::new());
                        unsafe {
                            assert!(load_ssse3(&src, pos, &mut a));
                            assert!(load_avx2(&src, pos, &mut b));
                        }
                        let bits = |e: &Events| (e.mask, e.juxtaposed, e.gram, e.next);
                        assert_eq!(bits(&a), bits(&b), "{src:?} at {pos}");
                    }
                    if pass == 0 {
                        // A scan from `pos` through every event and the windows after
                        // it, as an operand loop steps, now and then counting the marks
                        // up to an event (before a name that may run into the next
                        // window): at each event, the marks passed since `pos`.
                        let mut cache = Events::new();
                        let mut counted = Passed::new(pos);
                        let mut p = pos;
                        while let Some(e) = next_operand_event(&src, p, &mut cache, &mut counted) {
                            let gram = marks(&src, pos - 1, false, e).1;
                            assert!(!skipped(&src, e) || gram, "{src:?} from {pos}: {e}");
                            beyond += (e >= pos + WINDOW) as usize;
                            let mut probe = counted;
                            let want = slip(&src, pos - 1, pos, e);
                            assert_eq!(probe.slip(&cache, e), want, "{src:?} from {pos} to {e}");
                            if e % 3 == 0 {
                                counted.settle(&cache, e);
                            }
                            p = e + 1;
                        }
                    }
                }
                // Through a carried cache: the position found is one the loaded
                // window marks (`None`: the scan ran into the last bytes).
                let cache = &mut carried[pass];
                if let Some(got) = next_operand_event(&src, pos, cache, &mut Passed::new(pos)) {
                    assert!(got >= pos && got < len, "{src:?} from {pos}: {got}");
                    let off = got - cache.base;
                    let marked = cache.mask >> off & 1 != 0;
                    assert!(marked, "{src:?} from {pos}: {got} is not marked");
                }
                checked += 1;
            }
        }
        assert!(checked > 100_000);
        // Scans that counted through windows they left.
        assert!(beyond > 10_000, "{beyond}");
    }

    /// The windows' name and whitespace masks end names and whitespace where the
    /// byte loops do, for every start, with a fresh cache and with one carried from
    /// call to call in both directions.
    #[test]
    fn name_and_space_ends_agree_with_the_byte_loops() {
        let mut checked = 0;
        for src in texts(1500, 240) {
            let len = src.len();
            let scalar = |pos: usize, member: fn(u8) -> bool| {
                (pos..len).find(|&i| !member(src[i])).unwrap_or(len)
            };
            let starts = (1..len)
                .map(|p| (p, 0))
                .chain((1..len).rev().map(|p| (p, 1)));
            let mut carried = [Events::new(), Events::new()];
            for (pos, pass) in starts {
                let (name, space) = (scalar(pos, is_name), scalar(pos, is_space));
                let mut fresh = Events::new();
                assert_eq!(
                    name_end_cached(&src, pos, &mut fresh),
                    name,
                    "{src:?} {pos}"
                );
                assert_eq!(
                    space_end_cached(&src, pos, &mut fresh),
                    space,
                    "{src:?} {pos}"
                );
                let cache = &mut carried[pass];
                assert_eq!(name_end_cached(&src, pos, cache), name, "{src:?} {pos}");
                assert_eq!(space_end_cached(&src, pos, cache), space, "{src:?} {pos}");
                checked += 1;
            }
        }
        assert!(checked > 100_000);
    }
}
