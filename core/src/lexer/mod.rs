//! The lexer: one lazily built DFA over *vectors* of lexeme expressions.
//!
//! A lexer state is the hash-consed list of `(lexeme, expression)` pairs still alive after
//! the bytes read since the current lexeme started; one automaton thus tracks every lexeme
//! the parser allows at that point and can say which of them match. The parser asks for the
//! start state of a given set of allowed lexemes ([`Lexer::initial_state`]); start states
//! carry a sentinel pair, so "at a lexeme boundary" is a property of the state id itself.
//!
//! Transitions are filled on demand into one flat table, `next[state * classes + class]`,
//! over compressed byte classes, so the hot path ([`Lexer::next`]) is two array reads and
//! a compare; a missing entry takes derivatives of each pair (cold path). State 0 is dead.
//!
//! Lexemes end in two ways. A lazy lexeme ends as soon as it matches (the state gets
//! [`Lexer::LAZY`]). A greedy lexeme ends when the next byte cannot extend any live lexeme
//! while the current state matches it ([`Lexer::ACCEPT`]): one byte of lookahead and no
//! backtracking, as in LLGuidance.
//!
//! Budgets: states (`max_lexer_states`), expression nodes and fuel (through the
//! [`ExprSet`]), table bytes (`max_memory_bytes`).

mod slice;
mod snapshot;

use alloc::vec::Vec;
use core::hash::{BuildHasher, Hash};
use hashbrown::{DefaultHashBuilder, HashMap, HashSet, HashTable};

use crate::error::LimitKind;
use crate::limits::Limits;
use crate::regex::{ByteClasses, ExprId, ExprSet};
use crate::roomy::Roomy;

/// A lexer state. `StateId::DEAD` (0) matches nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct StateId(pub u32);

impl StateId {
    /// The state with no live lexemes.
    pub const DEAD: StateId = StateId(0);

    /// The id as an index.
    #[inline(always)]
    pub fn as_usize(self) -> usize {
        self.0 as usize
    }
}

/// One lexeme as the lexer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexemeInfo {
    /// Its expression in the lexer's [`ExprSet`].
    pub expr: ExprId,
    /// Ends at the shortest match.
    pub lazy: bool,
    /// Skipped between lexemes (`%ignore`).
    pub ignore: bool,
}

/// The sentinel lexeme index marking a start state.
const START_MARK: u32 = u32::MAX;
/// A transition not computed yet.
const MISSING: u32 = u32::MAX;
/// A transition not computed yet, in a row whose classes are grouped into blocks: `UNSET +
/// c` where `c` is the first class of its block (see `partition_row`). Like [`MISSING`], every
/// such entry has [`SLOW_BIT`] set.
const UNSET: u32 = u32::MAX - 256;
/// Set in a transition-table entry whose target state is [`Lexer::LAZY`], in a dead entry
/// out of an [`Lexer::ACCEPT`] state, and in [`MISSING`]: the walk's fast path tests one bit
/// instead of reading the flags, and decides every entry without it.
pub(crate) const SLOW_BIT: u32 = 1 << 31;

/// What `Lexer::reserve_exprs` last granted the expression store's budget from.
#[derive(Debug)]
struct Granted {
    max_bytes: usize,
    own_caps: usize,
    /// Per growing expression table (arena, starts, intern table, derivative cache,
    /// emptiness cache): the length up to which it still has its spare room.
    marks: [usize; 5],
}

/// The room `Lexer::reserve_exprs` keeps free in an expression table of capacity `cap`: a
/// quarter of it, at least 64 entries.
fn spare_room(cap: usize) -> usize {
    (cap / 4).max(64)
}

/// A grant record that a clone drops: a cloned buffer may have less spare room than the
/// original had, so the copy grants afresh before its first regex work.
#[derive(Debug, Default)]
struct GrantRecord(Option<Granted>);

impl Clone for GrantRecord {
    fn clone(&self) -> Self {
        GrantRecord(None)
    }
}

#[derive(Debug, Clone, Copy)]
struct StateDesc {
    /// Interned accept set (0 = nothing matches here).
    accept_set: u32,
}

/// Interns slices of `T` in one arena, so that cloning is a few `memcpy`s (no allocation
/// per key). Ids are dense, in insertion order.
#[derive(Debug, Clone)]
struct Interner<T> {
    data: Vec<T>,
    /// Per id, `data[starts[id]..starts[id + 1]]`.
    starts: Vec<u32>,
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl<T: Copy + Hash + Eq> Interner<T> {
    fn new() -> Self {
        Interner {
            data: Vec::new(),
            starts: alloc::vec![0],
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        }
    }

    /// An interner holding nothing, not even the first start offset (allocates nothing;
    /// every id reads as empty).
    fn empty() -> Self {
        Interner {
            data: Vec::new(),
            starts: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
        }
    }

    fn get(&self, id: u32) -> &[T] {
        let (Some(&a), Some(&b)) = (
            self.starts.get(id as usize),
            self.starts.get(id as usize + 1),
        ) else {
            return &[];
        };
        self.data.get(a as usize..b as usize).unwrap_or(&[])
    }

    fn find(&self, key: &[T]) -> Option<u32> {
        let hash = self.hasher.hash_one(key);
        self.table.find(hash, |&id| self.get(id) == key).copied()
    }

    /// The id of `key`, added if new.
    fn intern(&mut self, key: &[T]) -> u32 {
        if let Some(id) = self.find(key) {
            return id;
        }
        let id = (self.starts.len() - 1) as u32;
        self.data.extend_from_slice(key);
        self.starts.push(self.data.len() as u32);
        let hash = self.hasher.hash_one(key);
        let Interner {
            table,
            data,
            starts,
            hasher,
        } = self;
        table.insert_unique(hash, id, |&other| {
            let a = starts[other as usize] as usize;
            let b = starts[other as usize + 1] as usize;
            hasher.hash_one(&data[a..b])
        });
        id
    }

    fn bytes_used(&self) -> usize {
        vec_bytes(&self.data) + vec_bytes(&self.starts) + table_bytes(self.table.capacity(), 4)
    }

    /// The sum of its buffers' capacities (changes whenever one grows).
    fn capacity(&self) -> usize {
        self.data.capacity() + self.starts.capacity() + self.table.capacity()
    }

    /// Bytes that interning a new key of `len` elements may allocate (the arena, the starts
    /// and the table each grow by doubling when full).
    fn growth_bytes(&self, len: usize) -> usize {
        vec_growth(&self.data, len)
            + vec_growth(&self.starts, 1)
            + if self.table.len() >= self.table.capacity() {
                table_bytes(self.table.capacity() + 1, 4)
            } else {
                0
            }
    }
}

/// Heap bytes of a vector's buffer.
pub(crate) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity().saturating_mul(core::mem::size_of::<T>())
}

/// The capacity a vector grows to when `more` elements do not fit: double, or what is
/// needed, at least 4 (the standard library's policy for small elements).
fn grown_capacity(cap: usize, need: usize) -> usize {
    need.max(cap.saturating_mul(2)).max(4)
}

/// Bytes of the new buffer a vector allocates to take `more` elements (0 if they fit).
pub(crate) fn vec_growth<T>(v: &Vec<T>, more: usize) -> usize {
    let need = v.len().saturating_add(more);
    if need <= v.capacity() {
        return 0;
    }
    grown_capacity(v.capacity(), need).saturating_mul(core::mem::size_of::<T>())
}

/// Make room for `more` elements in `v` if the new buffer fits in `free` bytes (the old
/// buffer is still counted by the caller while both are alive); `Err(Memory)` otherwise,
/// and when the allocator refuses.
pub(crate) fn reserve<T>(v: &mut Vec<T>, more: usize, free: usize) -> Result<(), LimitKind> {
    let need = v.len().saturating_add(more);
    if need <= v.capacity() {
        return Ok(());
    }
    let size = core::mem::size_of::<T>().max(1);
    // No room to double: take what fits (the old buffer stays alive during the copy).
    let cap = grown_capacity(v.capacity(), need).min(free / size);
    if cap < need {
        return Err(LimitKind::Memory);
    }
    v.try_reserve_exact(cap - v.len())
        .map_err(|_| LimitKind::Memory)
}

/// Heap bytes of a hashbrown table of capacity `cap` with `entry`-byte entries: a power of
/// two of buckets (8 per 7 entries), an entry and a control byte each, and one group of
/// control bytes.
pub(crate) fn table_bytes(cap: usize, entry: usize) -> usize {
    if cap == 0 {
        return 0;
    }
    let buckets = if cap < 4 {
        4
    } else if cap < 8 {
        8
    } else {
        (cap.saturating_mul(8) / 7).next_power_of_two()
    };
    buckets.saturating_mul(entry + 1).saturating_add(16)
}

/// The multi-lexeme lazy DFA. Cloning copies the tables (a matcher owns its lexer).
#[derive(Debug, Clone)]
pub struct Lexer {
    exprs: ExprSet,
    lexemes: Vec<LexemeInfo>,
    classes: ByteClasses,
    num_classes: usize,
    /// `next[state * num_classes + class]`.
    next: Vec<u32>,
    flags: Vec<u8>,
    states: Vec<StateDesc>,
    /// State id → its pairs (id 0, the dead state, has none).
    pairs: Interner<(u32, ExprId)>,
    /// Accept set id → sorted lexeme ids (id 0 is the empty set).
    accept_sets: Interner<u32>,
    /// Allowed-lexeme sets seen so far, and their start states.
    initial_sets: Interner<u32>,
    initial_states: Vec<StateId>,
    scratch: Roomy<(u32, ExprId)>,
    accept_scratch: Roomy<u32>,
    max_states: usize,
    max_bytes: usize,
    /// What the expression store's budget was last granted from (see `reserve_exprs`):
    /// `max_bytes`, the lexer's own capacities ([`Lexer::own_caps`]), and the lengths of the
    /// expression tables up to which they keep their spare room. `None` forces a grant.
    granted: GrantRecord,
    fuel_per_step: u64,
    /// Slice regexes (see [`crate::slicer`]), in the vocabulary's order.
    slice_exprs: Vec<ExprId>,
    /// Per state: [`SLICE_UNKNOWN`], [`SLICE_NONE`], or the index of the slice it subsumes.
    slice_of_state: Vec<u8>,
    /// Per slice: its unit and count when it has the shape `X{1,n}` ([`slice`]).
    slice_shapes: Vec<Option<slice::Shape>>,
    /// Per slice: the ASCII bytes whose one-byte string it holds (empty when not given).
    #[cfg(feature = "json-schema")]
    slice_bytes: Vec<[u32; 4]>,
    /// The index of the [`crate::slicer::TAG_FREE_TEXT`] slice, if the lexer keeps it.
    #[cfg(feature = "structural")]
    tag_slice: Option<usize>,
    /// The units of the shaped slices and their memoised state graphs.
    units: Vec<slice::Unit>,
    /// Consecutive misses of the per-lexeme fallback check (see `find_slice`).
    fallback_misses: u32,
    /// Scratch of `partition_row`: the leaves found, the nodes seen, the traversal stack,
    /// and the blocks (class sets).
    leaves: Roomy<ExprId>,
    leaf_seen: HashSet<u32>,
    leaf_stack: Roomy<ExprId>,
    blocks: Roomy<[u64; 4]>,
    /// Leaf node → the classes it matches (see `leaf_classes`).
    leaf_class_sets: HashMap<u32, [u64; 4]>,
    /// Extensions of what a snapshot holds (see [`Lexer::changes`]).
    changes: u64,
}

/// Call `f` with the index of every set bit of `set`, in increasing order.
fn for_each_bit(set: &[u64; 4], mut f: impl FnMut(usize)) {
    for (w, &word) in set.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            f(w * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// The slice check has not run for this state.
const SLICE_UNKNOWN: u8 = u8::MAX;
/// No slice is subsumed by this state.
const SLICE_NONE: u8 = u8::MAX - 1;
/// Derivative pairs explored per slice check before giving up (and walking instead).
const SLICE_MAX_PAIRS: usize = 512;
/// The same for the quick per-lexeme check before the DFA check of a shaped slice.
const SLICE_QUICK_PAIRS: usize = 160;
/// Derivatives (pair and byte class) one per-lexeme check may compute: with large key
/// unions a lexer has ~100 byte classes, and 512 pairs of new expressions took tens of
/// milliseconds; a typical successful check needs a few thousand.
const SLICE_MAX_STEPS: usize = 8192;
/// Consecutive failed full per-lexeme checks after which a lexer stops trying them for
/// unbounded slices the DFA check left open.
const MAX_FALLBACK_MISSES: u32 = 16;

impl Lexer {
    /// The state is a start state (no byte of the current lexeme read yet).
    pub const START: u8 = 1;
    /// Some lexeme matches the bytes read so far.
    pub const ACCEPT: u8 = 2;
    /// Some lazy lexeme matches: the lexeme ends here, before the next byte.
    pub const LAZY: u8 = 4;
    /// An ignored (`%ignore`) lexeme matches.
    pub const IGNORED: u8 = 8;
    /// Only ignored lexemes match.
    pub const ONLY_IGNORED: u8 = 16;

    /// A lexer over `lexemes`, whose expressions (and the slice regexes `slice_exprs`) live
    /// in `exprs`.
    pub fn new(
        exprs: ExprSet,
        lexemes: Vec<LexemeInfo>,
        slice_exprs: Vec<ExprId>,
        limits: &Limits,
    ) -> Lexer {
        Lexer::with_slices(exprs, lexemes, slice_exprs, Vec::new(), None, limits)
    }

    /// [`Lexer::new`] with the slices' one-byte strings (see
    /// [`crate::slicer::Slice::one_byte_strings`], in the order of `slice_exprs`: a state
    /// that one of them kills is refused the slice at once, without the subsumption
    /// search) and the index of the [`crate::slicer::TAG_FREE_TEXT`] slice, which is kept
    /// only when the lexemes already give `<` a byte class of its own. Otherwise the slice
    /// would split a class (one more transition to build per lexer state: about 3% more
    /// mask time on JSON Schemas) in a grammar where no trigger starts with `<`, and
    /// where `[^<]+` is no more use than the JSON text slices.
    pub(crate) fn with_slices(
        mut exprs: ExprSet,
        lexemes: Vec<LexemeInfo>,
        #[cfg_attr(not(feature = "structural"), allow(unused_mut))] mut slice_exprs: Vec<ExprId>,
        slice_bytes: Vec<[u32; 4]>,
        tag_slice: Option<usize>,
        limits: &Limits,
    ) -> Lexer {
        // The slice regexes take part in the classes so that the slice check can use them.
        let mut roots: Vec<ExprId> = lexemes.iter().map(|l| l.expr).collect();
        for (k, &e) in slice_exprs.iter().enumerate() {
            if Some(k) != tag_slice {
                roots.push(e);
            }
        }
        #[cfg(not(feature = "json-schema"))]
        let _ = slice_bytes;
        #[cfg_attr(not(feature = "structural"), allow(unused_mut))]
        let mut classes = exprs.byte_classes(&roots);
        #[cfg(feature = "structural")]
        let mut kept_tag_slice = None;
        // The tag slice comes as `ExprId::NOTHING` (never taken, see `find_slice`; the
        // indices stay the vocabulary's) and is compiled here if kept.
        #[cfg(feature = "structural")]
        if let Some(k) = tag_slice
            && let Some(e) = slice_exprs.get_mut(k)
        {
            let lt = classes.class_of(b'<');
            if (0..=255u8).all(|b| b == b'<' || classes.class_of(b) != lt)
                && let Ok(tag) =
                    exprs.compile_pattern(crate::slicer::TAG_FREE_TEXT, Default::default())
            {
                *e = tag;
                roots.push(tag);
                classes = exprs.byte_classes(&roots);
                kept_tag_slice = Some(k);
            }
        }
        // Mask work: `fuel_per_mask` counts regex units as they are.
        exprs.set_weight(1);
        let num_classes = classes.num_classes();
        let mut lexer = Lexer {
            exprs,
            lexemes,
            classes,
            num_classes,
            pairs: Interner::new(),
            accept_sets: Interner::new(),
            initial_sets: Interner::new(),
            max_states: limits.max_lexer_states.max(2),
            max_bytes: limits.max_memory_bytes,
            granted: GrantRecord(None),
            fuel_per_step: limits.fuel_per_mask,
            slice_exprs: slice_exprs.into_iter().take(SLICE_NONE as usize).collect(),
            #[cfg(feature = "json-schema")]
            slice_bytes,
            #[cfg(feature = "structural")]
            tag_slice: kept_tag_slice,
            ..Lexer::placeholder()
        };
        let (units, shapes) = slice::shapes(&lexer);
        lexer.units = units;
        lexer.slice_shapes = shapes;
        // State 0: dead. Its row of transitions points back at itself.
        lexer.accept_sets.intern(&[]);
        lexer.pairs.intern(&[]);
        lexer.states.push(StateDesc { accept_set: 0 });
        lexer.flags.push(0);
        lexer.next.resize(num_classes, 0);
        lexer
    }

    /// A lexer with no lexemes and no tables that allocates nothing: what a matcher's parser
    /// holds between calls while its grammar keeps the shared tables (see
    /// `Grammar::tables`). Reading it is safe (every transition is missing, every state
    /// dead) but never meaningful: a matcher swaps the shared tables in before any step.
    /// [`Lexer::new`] starts from it too.
    pub(crate) fn placeholder() -> Lexer {
        Lexer {
            exprs: ExprSet::placeholder(),
            lexemes: Vec::new(),
            classes: ByteClasses::single(),
            num_classes: 1,
            next: Vec::new(),
            flags: Vec::new(),
            states: Vec::new(),
            pairs: Interner::empty(),
            accept_sets: Interner::empty(),
            initial_sets: Interner::empty(),
            initial_states: Vec::new(),
            scratch: Roomy::default(),
            accept_scratch: Roomy::default(),
            max_states: 0,
            max_bytes: 0,
            granted: GrantRecord(None),
            fuel_per_step: 0,
            slice_exprs: Vec::new(),
            slice_of_state: Vec::new(),
            slice_shapes: Vec::new(),
            #[cfg(feature = "json-schema")]
            slice_bytes: Vec::new(),
            #[cfg(feature = "structural")]
            tag_slice: None,
            units: Vec::new(),
            fallback_misses: 0,
            leaves: Roomy::default(),
            leaf_seen: HashSet::new(),
            leaf_stack: Roomy::default(),
            blocks: Roomy::default(),
            leaf_class_sets: HashMap::new(),
            changes: 0,
        }
    }

    /// The lexemes, indexed by lexeme id.
    pub fn lexemes(&self) -> &[LexemeInfo] {
        &self.lexemes
    }

    /// Fuel spent since this lexer was made, refuels included (see [`ExprSet::fuel_spent`]).
    pub fn fuel_spent(&self) -> u64 {
        self.exprs.fuel_spent()
    }

    /// Refill the regex fuel (once per mask or token).
    pub fn refuel(&mut self) {
        self.exprs.set_fuel(self.fuel_per_step);
    }

    /// How many states have been built.
    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    /// How full the lexer's budgets are (states, expression nodes, table bytes): the fullest
    /// one, in thousandths.
    pub fn fill_per_mille(&self) -> usize {
        let per_mille = |used: usize, max: usize| used.saturating_mul(1000) / max.max(1);
        per_mille(self.states.len(), self.max_states)
            .max(per_mille(self.exprs.num_nodes(), self.exprs.max_nodes))
            .max(per_mille(self.bytes_used(), self.max_bytes))
    }

    /// Heap bytes held: tables and scratch by capacity, the expression store included.
    pub fn bytes_used(&self) -> usize {
        self.own_bytes() + self.exprs_bytes()
    }

    /// Heap bytes of the expression store's growing tables, by capacity.
    fn exprs_bytes(&self) -> usize {
        let x = &self.exprs;
        vec_bytes(&x.data)
            + vec_bytes(&x.starts)
            + table_bytes(x.table.capacity(), 4)
            + table_bytes(x.deriv_cache.capacity(), 12)
            + table_bytes(x.empty_cache.capacity(), 8)
            + table_bytes(x.prefix_memo.capacity(), 8)
            + table_bytes(x.prefix_seen.capacity(), 8)
            + table_bytes(x.empty_seen.capacity(), 4)
            + table_bytes(x.block_seen.capacity(), 4)
            + vec_bytes(&x.scratch_stack)
            + vec_bytes(&x.scratch_missing)
            + vec_bytes(&x.scratch_ds)
            + vec_bytes(&x.empty_stack)
            + vec_bytes(&x.prefix_stack)
            + vec_bytes(&x.block_leaves)
            + vec_bytes(&x.block_stack)
            + vec_bytes(&x.prefix_blocks)
    }

    /// Before regex work (a transition, a start state, a slice check): give each growing
    /// table of the expression store spare room for a quarter of its size (at least 64
    /// entries), paid from the budget now, old and new buffer both. The work itself then
    /// grows a table only if it adds more than that in one go; running out of budget here is
    /// `Memory` before anything is computed.
    ///
    /// Called once per cold transition, so the common case is a few compares: when no
    /// expression table has used up its spare room since the last call, and neither the
    /// budget nor any of the lexer's own tables changed, the last grant still holds.
    #[inline]
    fn reserve_exprs(&mut self) -> Result<(), LimitKind> {
        if let Some(g) = &self.granted.0 {
            let x = &self.exprs;
            if x.data.len() <= g.marks[0]
                && x.starts.len() <= g.marks[1]
                && x.table.len() <= g.marks[2]
                && x.deriv_cache.len() <= g.marks[3]
                && x.empty_cache.len() <= g.marks[4]
                && g.max_bytes == self.max_bytes
                && g.own_caps == self.own_caps()
            {
                return Ok(());
            }
        }
        self.reserve_exprs_slow()
    }

    #[inline(never)]
    fn reserve_exprs_slow(&mut self) -> Result<(), LimitKind> {
        fn want(len: usize, cap: usize) -> Option<usize> {
            let spare = spare_room(cap);
            (cap - len.min(cap) < spare).then_some(spare)
        }
        let room = |lx: &Lexer| lx.max_bytes.saturating_sub(lx.bytes_used());
        macro_rules! table {
            ($t:expr, $entry:expr) => {
                let (len, cap) = ($t.len(), $t.capacity());
                if let Some(more) = want(len, cap) {
                    if table_bytes((len + more).max(cap + 1), $entry) > room(self) {
                        return Err(LimitKind::Memory);
                    }
                    $t.try_reserve(more).map_err(|_| LimitKind::Memory)?;
                }
            };
        }
        if let Some(more) = want(self.exprs.data.len(), self.exprs.data.capacity()) {
            let free = room(self);
            reserve(&mut self.exprs.data, more, free)?;
        }
        if let Some(more) = want(self.exprs.starts.len(), self.exprs.starts.capacity()) {
            let free = room(self);
            reserve(&mut self.exprs.starts, more, free)?;
        }
        let (len, cap) = (self.exprs.table.len(), self.exprs.table.capacity());
        if let Some(more) = want(len, cap) {
            if table_bytes((len + more).max(cap + 1), 4) > room(self) {
                return Err(LimitKind::Memory);
            }
            let x = &mut self.exprs;
            let (data, starts, hasher) = (&x.data, &x.starts, &x.hasher);
            x.table
                .try_reserve(more, |&id| {
                    let i = id as usize;
                    match (starts.get(i), starts.get(i + 1)) {
                        (Some(&a), Some(&b)) => {
                            hasher.hash_one(data.get(a as usize..b as usize).unwrap_or(&[]))
                        }
                        _ => 0,
                    }
                })
                .map_err(|_| LimitKind::Memory)?;
        }
        table!(self.exprs.deriv_cache, 12);
        table!(self.exprs.empty_cache, 8);
        self.grant_exprs();
        // The lengths up to which each table keeps its spare room (`want` is `None`).
        let mark = |cap: usize| cap.saturating_sub(spare_room(cap));
        let x = &self.exprs;
        self.granted.0 = Some(Granted {
            max_bytes: self.max_bytes,
            own_caps: self.own_caps(),
            marks: [
                mark(x.data.capacity()),
                mark(x.starts.capacity()),
                mark(x.table.capacity()),
                mark(x.deriv_cache.capacity()),
                mark(x.empty_cache.capacity()),
            ],
        });
        Ok(())
    }

    /// The sum of the capacities of the lexer's own tables and scratch (those
    /// [`Lexer::own_bytes`] charges, but the slice units): none shrinks, so any growth
    /// changes it. Cheap next to `own_bytes` (no per-table byte arithmetic).
    fn own_caps(&self) -> usize {
        self.next.capacity()
            + self.flags.capacity()
            + self.states.capacity()
            + self.pairs.capacity()
            + self.accept_sets.capacity()
            + self.initial_sets.capacity()
            + self.initial_states.capacity()
            + self.scratch.capacity()
            + self.accept_scratch.capacity()
            + self.lexemes.capacity()
            + self.slice_exprs.capacity()
            + self.slice_of_state.capacity()
            + self.slice_shapes.capacity()
            + self.leaves.capacity()
            + self.leaf_stack.capacity()
            + self.blocks.capacity()
            + self.leaf_seen.capacity()
            + self.leaf_class_sets.capacity()
            + self.units.len()
    }

    /// [`Lexer::bytes_used`] without the expression store.
    fn own_bytes(&self) -> usize {
        vec_bytes(&self.next)
            + vec_bytes(&self.flags)
            + vec_bytes(&self.states)
            + self.pairs.bytes_used()
            + self.accept_sets.bytes_used()
            + self.initial_sets.bytes_used()
            + vec_bytes(&self.initial_states)
            + vec_bytes(&self.scratch)
            + vec_bytes(&self.accept_scratch)
            + vec_bytes(&self.lexemes)
            + vec_bytes(&self.slice_exprs)
            + vec_bytes(&self.slice_of_state)
            + vec_bytes(&self.slice_shapes)
            + self.slice_bytes_held()
            + vec_bytes(&self.leaves)
            + vec_bytes(&self.leaf_stack)
            + vec_bytes(&self.blocks)
            + table_bytes(self.leaf_seen.capacity(), 4)
            + table_bytes(self.leaf_class_sets.capacity(), 36)
            + self
                .units
                .iter()
                .map(slice::Unit::bytes_used)
                .sum::<usize>()
    }

    /// Set the bytes this lexer may hold (its tables and its expression store, whose tables
    /// get their growth room ahead of regex work, see `reserve_exprs`). Called by the parser
    /// whenever its own share changes, so it only stores the number: the expression store's
    /// share is granted from it by `reserve_exprs`, which every entry point that does regex
    /// work (a transition, a start state, a slice check) calls first.
    pub fn set_max_bytes(&mut self, max_bytes: usize) {
        self.max_bytes = max_bytes;
    }

    fn grant_exprs(&mut self) {
        let room = self.max_bytes.saturating_sub(self.bytes_used());
        self.exprs.max_memory = self.exprs.bytes_used() + room;
    }

    /// Spend `units` of this step's fuel on parser work (Earley completion and scanning
    /// share the regex fuel of [`Limits::fuel_per_mask`]).
    #[inline]
    pub fn spend(&mut self, units: u64) -> Result<(), LimitKind> {
        self.exprs.spend_fuel(units)
    }

    /// The flags ([`Lexer::START`], [`Lexer::ACCEPT`], [`Lexer::LAZY`]) of `s`.
    #[inline(always)]
    pub fn flags(&self, s: StateId) -> u8 {
        self.flags[s.as_usize()]
    }

    /// The interned id of the set of lexemes that match in `s` (0 = none).
    #[inline(always)]
    pub fn accept_set_id(&self, s: StateId) -> u32 {
        self.states[s.as_usize()].accept_set
    }

    /// The live `(lexeme, expression)` pairs of `s`: what each lexeme still has to match
    /// (a start state's sentinel pair left out).
    pub(crate) fn live_pairs(&self, s: StateId) -> impl Iterator<Item = (u32, ExprId)> + '_ {
        self.pairs
            .get(s.0)
            .iter()
            .copied()
            .filter(|&(lex, _)| lex != START_MARK)
    }

    /// The smallest byte of each byte class, in increasing order: every byte of a class
    /// steps every state alike, so these are the only bytes a search needs to try.
    pub(crate) fn class_leaders(&self) -> Vec<u8> {
        let mut out: Vec<u8> = (0..self.num_classes)
            .map(|c| self.classes.representative(c as u8))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The lexemes (sorted ids) of accept set `id`.
    pub fn accept_set(&self, id: u32) -> &[u32] {
        self.accept_sets.get(id)
    }

    /// The start state for the sorted, deduplicated lexeme ids `allowed`.
    pub fn initial_state(&mut self, allowed: &[u32]) -> Result<StateId, LimitKind> {
        if let Some(&s) = self
            .initial_sets
            .find(allowed)
            .and_then(|id| self.initial_states.get(id as usize))
        {
            return Ok(s);
        }
        self.reserve_exprs()?;
        let mut pairs = core::mem::take(&mut self.scratch);
        pairs.clear();
        pairs.push((START_MARK, ExprId::NOTHING));
        for &lex in allowed {
            if let Some(info) = self.lexemes.get(lex as usize) {
                pairs.push((lex, info.expr));
            }
        }
        let result = self.intern_state(&pairs);
        self.scratch = pairs;
        let s = result?;
        self.initial_sets.intern(allowed);
        self.initial_states.push(s);
        self.changes += 1;
        Ok(s)
    }

    /// The state after reading `byte` in state `s`.
    #[inline(always)]
    pub fn next(&mut self, s: StateId, byte: u8) -> Result<StateId, LimitKind> {
        let class = self.classes.class_of(byte) as usize;
        let idx = s.as_usize() * self.num_classes + class;
        match self.next.get(idx) {
            Some(&n) if n < UNSET => Ok(StateId(n & !SLOW_BIT)),
            _ => self.next_cold(s, byte, idx),
        }
    }

    /// The raw table entry for reading `byte` in `s`: a state id without [`SLOW_BIT`] (0 is
    /// dead), or an entry with it set when the target is lazy, when it is dead out of an
    /// accepting state, or when it is not computed yet (then call [`Lexer::next`]).
    #[inline(always)]
    pub(crate) fn next_raw(&self, s: StateId, byte: u8) -> u32 {
        let class = self.classes.class_of(byte) as usize;
        let idx = s.as_usize() * self.num_classes + class;
        self.next.get(idx).copied().unwrap_or(MISSING)
    }

    #[inline(never)]
    fn next_cold(&mut self, s: StateId, byte: u8, idx: usize) -> Result<StateId, LimitKind> {
        self.reserve_exprs()?;
        if self.next.get(idx) == Some(&MISSING) {
            // A state's first transition is computed on its own (most states reached in a
            // walk need one or two); from the second on, the row is split into blocks.
            let row = s.as_usize() * self.num_classes;
            let started = self
                .next
                .get(row..row + self.num_classes)
                .is_some_and(|r| r.iter().any(|&n| n != MISSING));
            if started {
                self.partition_row(s);
            }
        }
        if let Some(&n) = self.next.get(idx).filter(|&&n| n < UNSET) {
            // Filled in by the partition from a computed class of the same block.
            return Ok(StateId(n & !SLOW_BIT));
        }
        // The class whose transition stands for this one's (computed with the first).
        let block = self
            .next
            .get(idx)
            .and_then(|&n| n.checked_sub(UNSET))
            .unwrap_or(MISSING - UNSET);
        // One unit of fuel per pair derived (cached derivatives included): a state with many
        // live lexemes costs its size on every transition computed.
        let n = self.pairs.get(s.0).len();
        self.exprs.spend(n as u64)?;
        // The budget is read only when the scratch must grow (summing it walks every table).
        let room = if self.scratch.capacity() >= n {
            0
        } else {
            self.max_bytes.saturating_sub(self.bytes_used())
        };
        let mut out = core::mem::take(&mut self.scratch);
        out.clear();
        let mut result = reserve(&mut out, n, room);
        for i in 0..n {
            if result.is_err() {
                break;
            }
            let Some(&(lex, e)) = self.pairs.get(s.0).get(i) else {
                break;
            };
            if lex == START_MARK {
                continue;
            }
            match self.derive_live(e, byte) {
                Ok(Some(d)) => out.push((lex, d)),
                Ok(None) => {}
                Err(k) => {
                    result = Err(k);
                    break;
                }
            }
        }
        let next = match result {
            Ok(()) if out.is_empty() => Ok(StateId::DEAD),
            Ok(()) => self.intern_state(&out),
            Err(k) => Err(k),
        };
        self.scratch = out;
        let next = next?;
        // The walk's fast path decides only plain transitions: a lazy target ends a lexeme,
        // and a dead one out of an accepting state may end one and start the next.
        let slow = if next == StateId::DEAD {
            self.flags(s) & Lexer::ACCEPT != 0
        } else {
            self.flags(next) & Lexer::LAZY != 0
        };
        let entry = next.0 | if slow { SLOW_BIT } else { 0 };
        self.changes += 1;
        if let Some(slot) = self.next.get_mut(idx) {
            *slot = entry;
        }
        let row = s.as_usize() * self.num_classes;
        if block < MISSING - UNSET
            && let Some(row) = self.next.get_mut(row..row + self.num_classes)
        {
            for dst in row.iter_mut().filter(|n| **n == UNSET + block) {
                *dst = entry;
            }
        }
        Ok(next)
    }

    /// Mark the missing transitions of `s` with their block (`UNSET + first class of the
    /// block`): classes on the same side of every leaf that the derivatives of its
    /// expressions test read alike, so one derivative serves the whole block. A large
    /// lexer has ~100 classes, and a state inside a string tells only a few groups apart
    /// (the quote, the backslash, the UTF-8 lead bytes, the rest).
    fn partition_row(&mut self, s: StateId) {
        let nc = self.num_classes;
        let mut leaves = core::mem::take(&mut self.leaves);
        let mut seen = core::mem::take(&mut self.leaf_seen);
        let mut stack = core::mem::take(&mut self.leaf_stack);
        let mut blocks = core::mem::take(&mut self.blocks);
        leaves.clear();
        seen.clear();
        for &(lex, e) in self.pairs.get(s.0) {
            if lex != START_MARK {
                self.exprs
                    .first_leaves(e, &mut leaves, &mut seen, &mut stack);
            }
        }
        // Refine {all classes} by each leaf's class set.
        crate::regex::refine_blocks(
            nc,
            leaves.iter().map(|&leaf| self.leaf_classes(leaf)),
            &mut blocks,
        );
        let row = s.as_usize() * nc;
        if let Some(row) = self.next.get_mut(row..row + nc) {
            for block in &blocks {
                let mut first = None;
                let mut known = None;
                for_each_bit(block, |c| {
                    first.get_or_insert(c);
                    if let Some(&n) = row.get(c).filter(|&&n| n < UNSET) {
                        known.get_or_insert(n);
                    }
                });
                let fill = known.or(first.map(|c| UNSET + c as u32));
                if let Some(fill) = fill {
                    for_each_bit(block, |c| {
                        if let Some(dst) = row.get_mut(c).filter(|n| **n == MISSING) {
                            *dst = fill;
                        }
                    });
                }
            }
        }
        self.leaves = leaves;
        self.leaf_seen = seen;
        self.leaf_stack = stack;
        self.blocks = blocks;
    }

    /// The classes whose representative leaf `leaf` matches (memoised per leaf).
    fn leaf_classes(&mut self, leaf: ExprId) -> [u64; 4] {
        if let Some(&set) = self.leaf_class_sets.get(&leaf.0) {
            return set;
        }
        let bytes = self.exprs.leaf_bytes(leaf);
        let mut set = [0u64; 4];
        for c in 0..self.num_classes {
            let byte = self.classes.representative(c as u8);
            if (bytes[(byte >> 5) as usize] >> (byte & 31)) & 1 != 0 {
                set[c >> 6] |= 1 << (c & 63);
            }
        }
        self.leaf_class_sets.insert(leaf.0, set);
        set
    }

    /// The derivative of `e` by `byte`, or `None` when it matches nothing.
    fn derive_live(&mut self, e: ExprId, byte: u8) -> Result<Option<ExprId>, LimitKind> {
        let d = self.exprs.derivative(e, byte)?;
        if d == ExprId::NOTHING {
            return Ok(None);
        }
        // The lexer's classes are fine enough for every derivative of its lexemes: derivatives
        // only combine byte sets that occur in the lexemes.
        if self.exprs.has_and_not(d) && self.exprs.is_empty_language_with(d, Some(&self.classes))? {
            return Ok(None);
        }
        Ok(Some(d))
    }

    fn intern_state(&mut self, pairs: &[(u32, ExprId)]) -> Result<StateId, LimitKind> {
        if let Some(id) = self.pairs.find(pairs) {
            return Ok(StateId(id));
        }
        if self.states.len() >= self.max_states.min((UNSET & !SLOW_BIT) as usize) {
            return Err(LimitKind::LexerStates);
        }
        // Check what this state may allocate before it does (each table doubles when full).
        let growth = vec_growth(&self.next, self.num_classes)
            + vec_growth(&self.flags, 1)
            + vec_growth(&self.states, 1)
            + vec_growth(&self.slice_of_state, 1)
            + self.pairs.growth_bytes(pairs.len())
            + self.accept_sets.growth_bytes(pairs.len());
        // Nothing to check when no table grows (the heap does not change).
        if growth > 0 && self.bytes_used().saturating_add(growth) > self.max_bytes {
            return Err(LimitKind::Memory);
        }
        let id = self.states.len() as u32;
        let mut flags = 0u8;
        let mut accept = core::mem::take(&mut self.accept_scratch);
        accept.clear();
        for &(lex, e) in pairs {
            if lex == START_MARK {
                flags |= Lexer::START;
            } else if self.exprs.is_nullable(e) {
                accept.push(lex);
                flags |= Lexer::ACCEPT;
                let info = self.lexemes.get(lex as usize);
                if info.is_some_and(|l| l.lazy) {
                    flags |= Lexer::LAZY;
                }
                if info.is_some_and(|l| l.ignore) {
                    flags |= Lexer::IGNORED;
                }
            }
        }
        if flags & Lexer::IGNORED != 0
            && accept
                .iter()
                .all(|&l| self.lexemes.get(l as usize).is_some_and(|l| l.ignore))
        {
            flags |= Lexer::ONLY_IGNORED;
        }
        let accept_set = self.intern_accept_set(&accept);
        self.accept_scratch = accept;
        self.pairs.intern(pairs);
        self.states.push(StateDesc { accept_set });
        self.flags.push(flags);
        self.next
            .resize(self.states.len() * self.num_classes, MISSING);
        if growth > 0 {
            self.grant_exprs();
        }
        Ok(StateId(id))
    }

    fn intern_accept_set(&mut self, lexemes: &[u32]) -> u32 {
        self.accept_sets.intern(lexemes)
    }

    /// The first slice (index into the vocabulary's slices, largest first) every string of
    /// which can be read from `s` without a dead or lazy transition, so that every token of
    /// the slice is allowed in `s` with no lexeme ending inside it. Computed once per state;
    /// `None` when no slice qualifies or the checks run out of budget (the trie is then
    /// walked in full, so the mask stays exact).
    ///
    /// Two checks, cheapest first: one lexeme on its own against the slice regex, on
    /// derivative pairs ([`ExprSet::is_prefix_contained`]); then, for slices of the shape
    /// `X{1,n}`/`X+`, the depth of `s` in the lexer's own `X`-successor graph, memoised
    /// across states (see `lexer/slice.rs`).
    pub fn slice_for(&mut self, s: StateId) -> Option<usize> {
        let idx = s.as_usize();
        if self.slice_of_state.len() <= idx {
            self.slice_of_state
                .resize(self.states.len().max(idx + 1), SLICE_UNKNOWN);
        }
        let cached = self.slice_of_state.get(idx).copied().unwrap_or(SLICE_NONE);
        let found = if cached == SLICE_UNKNOWN {
            let found = self.find_slice(s).unwrap_or(None);
            // The unit checks grow tables `own_caps` does not see: grant afresh.
            self.granted.0 = None;
            let code = found.map_or(SLICE_NONE, |k| k as u8);
            self.changes += 1;
            if let Some(slot) = self.slice_of_state.get_mut(idx) {
                *slot = code;
            }
            code
        } else {
            cached
        };
        (found != SLICE_NONE).then_some(found as usize)
    }

    fn find_slice(&mut self, s: StateId) -> Result<Option<usize>, LimitKind> {
        if s == StateId::DEAD || self.slice_exprs.is_empty() {
            return Ok(None);
        }
        self.reserve_exprs()?;
        // The unit checks keep per-state tables (16 bytes a state, doubling) and scratch:
        // without room for them, no slice (the trie is walked, the mask stays exact).
        let unit_room = self.states.len().saturating_mul(48).saturating_add(4096);
        if unit_room.saturating_mul(self.units.len())
            > self.max_bytes.saturating_sub(self.bytes_used())
        {
            return Ok(None);
        }
        let lazy = self.tracks_lazy_lexeme(s);
        for k in 0..self.slice_exprs.len() {
            let shape = self.slice_shapes.get(k).copied().flatten();
            if let Some(known) = shape.and_then(|sh| self.unit_known(sh, s)) {
                if known {
                    return Ok(Some(k));
                }
                continue;
            }
            if (cfg!(feature = "structural") && self.slice_exprs[k] == ExprId::NOTHING)
                || self.killed_by_one_byte(s, k)?
                || (self.is_tag_slice(k) && self.next(s, b'<')? == self.next(s, b'a')?)
            {
                // The tag slice only where `<` means something else than a letter here:
                // elsewhere (free text until `{"name": `, say) its search would fail the
                // long way, and where it could hold, a text slice does too.
                continue;
            }
            // One lexeme on its own, on expression pairs: for a union of lexemes whose
            // closure is large while one lexeme's is small (a generic key among many literal
            // keys), with a small budget when the DFA check below can settle it; in full for
            // slices that check does not handle. (On one lexeme the DFA check below is the
            // same search, memoised.)
            let shape = match shape {
                Some(sh) if self.unit_usable(sh)? => Some(sh),
                _ => None,
            };
            let budget = match shape {
                None => SLICE_MAX_PAIRS,
                Some(_) if self.lexeme_count(s) > 1 => SLICE_QUICK_PAIRS,
                Some(_) => 0,
            };
            // The tag slice is decided by the DFA check alone: the pair checks are for JSON
            // keys, and on free text that a trigger ends they fail the long way.
            let tag = self.is_tag_slice(k);
            if !lazy && !tag && budget > 0 && self.some_lexeme_subsumes(s, k, budget)? {
                return Ok(Some(k));
            }
            let Some(shape) = shape else {
                continue;
            };
            match self.unit_subsumes(shape, s)? {
                Some(true) => return Ok(Some(k)),
                Some(false) => {}
                // An unbounded slice the DFA search could not settle on a union of lexemes
                // (a generic key beside many literal keys has a large closure, the generic
                // key alone a small one): the full per-lexeme check, as for unshaped
                // slices. With one lexeme the DFA search already was that check.
                //
                // In large objects every key prefix is a new state whose generic key tracks
                // the literal keys it could still become, and the check mostly runs out of
                // pairs (the bounded slices then apply anyway): it stops being tried after a
                // run of misses.
                None if shape.is_unbounded()
                    && !lazy
                    && !tag
                    && self.fallback_misses < MAX_FALLBACK_MISSES
                    && self.lexeme_count(s) > 1 =>
                {
                    if self.some_lexeme_subsumes(s, k, SLICE_MAX_PAIRS)? {
                        self.fallback_misses = 0;
                        return Ok(Some(k));
                    }
                    self.fallback_misses += 1;
                }
                None => {}
            }
        }
        Ok(None)
    }

    /// Whether slice `k` is the [`crate::slicer::TAG_FREE_TEXT`] slice (never without the
    /// structural-tag front end, which brings it: the code is left out of such builds).
    #[cfg(feature = "structural")]
    pub(super) fn is_tag_slice(&self, k: usize) -> bool {
        Some(k) == self.tag_slice
    }

    #[cfg(not(feature = "structural"))]
    pub(super) fn is_tag_slice(&self, _: usize) -> bool {
        false
    }

    #[cfg(not(feature = "json-schema"))]
    fn killed_by_one_byte(&mut self, _: StateId, _: usize) -> Result<bool, LimitKind> {
        Ok(false)
    }

    /// Heap bytes of the slices' one-byte strings.
    #[cfg(feature = "json-schema")]
    fn slice_bytes_held(&self) -> usize {
        vec_bytes(&self.slice_bytes)
    }

    #[cfg(not(feature = "json-schema"))]
    fn slice_bytes_held(&self) -> usize {
        0
    }

    /// Whether some one-byte string of slice `k` kills every lexeme of `s` (a dead
    /// transition): then `s` cannot take the slice, and the search is skipped. Inside a
    /// JSON string `\0` does it for [`crate::slicer::TAG_FREE_TEXT`], in most other states
    /// the first letter. The transitions read here are the ones the state's first mask walk
    /// reads anyway (every ASCII byte starts some token of a large vocabulary). Only with
    /// the JSON Schema front end, whose states it is for (firmware without it stays
    /// smaller).
    #[cfg(feature = "json-schema")]
    fn killed_by_one_byte(&mut self, s: StateId, k: usize) -> Result<bool, LimitKind> {
        let Some(&set) = self.slice_bytes.get(k) else {
            return Ok(false);
        };
        for b in 0u8..128 {
            if set[usize::from(b >> 5)] >> (b & 31) & 1 != 0 && self.next(s, b)? == StateId::DEAD {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether `s` tracks a lazy lexeme (one that ends inside a token as soon as it matches).
    fn tracks_lazy_lexeme(&self, s: StateId) -> bool {
        self.pairs
            .get(s.0)
            .iter()
            .any(|&(lex, _)| self.lexemes.get(lex as usize).is_some_and(|l| l.lazy))
    }

    /// How many lexemes `s` tracks.
    fn lexeme_count(&self, s: StateId) -> usize {
        let pairs = self.pairs.get(s.0);
        pairs.iter().filter(|p| p.0 != START_MARK).count()
    }

    /// Whether one lexeme of `s` on its own keeps every string of slice `k` alive, decided
    /// on expression pairs within `budget` pairs.
    fn some_lexeme_subsumes(
        &mut self,
        s: StateId,
        k: usize,
        budget: usize,
    ) -> Result<bool, LimitKind> {
        let slice = self.slice_exprs[k];
        for i in 0..self.pairs.get(s.0).len() {
            let Some(&(lex, e)) = self.pairs.get(s.0).get(i) else {
                break;
            };
            // A finite set of literals (keys, enum values) is never worth the search: it
            // would have to hold every string of the slice. Skipping a lexeme only means
            // walking instead of slicing.
            if lex != START_MARK
                && !self.exprs.is_literal_set(e)
                && self.exprs.is_prefix_contained(
                    slice,
                    e,
                    budget,
                    SLICE_MAX_STEPS,
                    Some(&self.classes),
                )?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Drops the expression store's derivative cache (a cache: transitions are unchanged).
    pub fn clear_deriv_cache(&mut self) {
        self.exprs.clear_deriv_cache();
    }

    /// The expression store (for the slicer and diagnostics).
    pub fn exprs(&self) -> &ExprSet {
        &self.exprs
    }
}

#[cfg(test)]
mod tests;
