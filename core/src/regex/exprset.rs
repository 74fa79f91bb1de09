//! Hash-consed expression store with simplifying smart constructors.
//!
//! Every node lives in one flat `Vec<u32>`: a header word (tag plus flags) followed by the
//! arguments. Node `i` occupies `data[starts[i]..starts[i + 1]]`, and a `HashTable` over node
//! ids keyed by those words makes structurally equal nodes share one [`ExprId`]. Children are
//! always interned before their parents, so a child's id is smaller than its parent's: the
//! store is a DAG in topological order, which lets every walk use an explicit stack.
//!
//! Canonical forms kept by the constructors: `Concat` is binary and right-nested; `Or`/`And`
//! lists are flat, sorted and deduplicated, with all byte sets merged into one item; a byte
//! set of one byte is a `Byte`; `Repeat` has `min <= max`, `max >= 1`, `(min, max) != (1, 1)`
//! and `min = 0` whenever its body is nullable. Without `And`/`Not` (other than
//! [`ExprId::ANY_STRING`]) a node denotes the empty language iff it is [`ExprId::NOTHING`].
//!
//! Cost: interning is one hash of the node words plus one comparison on a hit.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;
use core::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use crate::error::LimitKind;
use crate::limits::Limits;
use crate::roomy::Roomy;

/// An interned expression. Reserved ids: [`ExprId::NOTHING`], [`ExprId::EPSILON`],
/// [`ExprId::ANY_STRING`] (all byte strings; `Not(NOTHING)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ExprId(pub u32);

impl ExprId {
    /// The empty language.
    pub const NOTHING: ExprId = ExprId(0);
    /// The language `{""}`.
    pub const EPSILON: ExprId = ExprId(1);
    /// Every byte string.
    pub const ANY_STRING: ExprId = ExprId(2);

    /// The id as an index.
    #[inline(always)]
    pub fn as_usize(self) -> usize {
        self.0 as usize
    }
}

/// Fuel units of `Limits::compile_fuel` one unit of regex work costs while a grammar is
/// compiled (a derivative node computed, an emptiness-search step, constructor work). The
/// JSON compiler's rewriting costs 16 units per cloned node for the same reason: the
/// whole default budget (20,000,000) must end in well under a second. Unweighted, regex
/// work ran 300-350 ns a unit on intersected patterns whose tables outgrow the caches
/// (MaskBench `Handwritten---allany17`: 7 s on this machine before `CompileFuel`).
pub const COMPILE_REGEX_WEIGHT: u64 = 8;

pub(crate) const TAG_NOTHING: u32 = 0;
pub(crate) const TAG_EPSILON: u32 = 1;
pub(crate) const TAG_BYTE: u32 = 2;
pub(crate) const TAG_BYTE_SET: u32 = 3;
pub(crate) const TAG_CONCAT: u32 = 4;
pub(crate) const TAG_OR: u32 = 5;
pub(crate) const TAG_AND: u32 = 6;
pub(crate) const TAG_NOT: u32 = 7;
pub(crate) const TAG_REPEAT: u32 = 8;

const TAG_MASK: u32 = 0xff;
const FLAG_NULLABLE: u32 = 1 << 8;
const FLAG_AND_NOT: u32 = 1 << 9;
/// Set when the expression has a `Repeat` or `Not` node: without one its language is a
/// finite set of byte strings (see [`ExprSet::is_literal_set`]; byte sets are finite, so a
/// key in every JSON spelling, `(k|\u006[bB])...`, is still a literal set).
const FLAG_WIDE: u32 = 1 << 10;

/// [`ExprSet::min_len`] of an expression that matches nothing.
pub(crate) const MIN_LEN_NONE: u32 = u32::MAX;

/// `Repeat` upper bound meaning "unbounded".
pub(crate) const REPEAT_INF: u32 = u32::MAX;

/// A decoded view of one node.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Node<'a> {
    Nothing,
    Epsilon,
    Byte(u8),
    ByteSet(&'a [u32]),
    Concat(ExprId, ExprId),
    Or(&'a [u32]),
    And(&'a [u32]),
    Not(ExprId),
    /// Body, min, max (`REPEAT_INF` = unbounded).
    Repeat(ExprId, u32, u32),
}

/// The expression store.
#[derive(Debug, Clone)]
pub struct ExprSet {
    /// Node words: header then arguments.
    pub(crate) data: Vec<u32>,
    /// Start of each node in `data`, plus one final entry (`data.len()`).
    pub(crate) starts: Vec<u32>,
    /// Hash-consing table of node ids.
    pub(crate) table: HashTable<u32>,
    pub(crate) hasher: DefaultHashBuilder,
    /// Derivative cache: `(expr, byte) -> derivative`.
    pub(crate) deriv_cache: HashMap<(u32, u8), u32>,
    /// Emptiness results already decided.
    pub(crate) empty_cache: HashMap<u32, bool>,
    /// `(member, star) -> part forms` for [`ExprSet::is_surely_nonempty`]'s star rule
    /// (bounded: cleared when it grows past a few thousand entries).
    pub(crate) star_forms: HashMap<(u32, u32), u8>,
    pub(crate) fuel: u64,
    /// Fuel spent before the last [`ExprSet::set_fuel`] (see [`ExprSet::fuel_spent`]).
    pub(crate) spent: u64,
    /// The fuel the last [`ExprSet::set_fuel`] gave.
    pub(crate) granted: u64,
    /// Fuel units one unit of regex work costs: [`COMPILE_REGEX_WEIGHT`] while a grammar is
    /// compiled, 1 while masks are computed (see [`ExprSet::set_weight`]).
    pub(crate) weight: u64,
    /// Work done by `Or`/`And` constructors since the last reset (charged as fuel by
    /// derivative computations).
    pub(crate) work: u64,
    /// Scratch buffers of [`ExprSet::derivative`].
    pub(crate) scratch_stack: Roomy<ExprId>,
    pub(crate) scratch_missing: Roomy<ExprId>,
    pub(crate) scratch_ds: Roomy<ExprId>,
    /// Scratch list of [`ExprSet::mk_or`].
    pub(crate) scratch_or: Roomy<u32>,
    /// Scratch buffers of [`ExprSet::is_empty_language_with`].
    pub(crate) empty_seen: hashbrown::HashSet<ExprId>,
    pub(crate) empty_stack: Roomy<(ExprId, usize)>,
    /// Short witnesses of recent non-emptiness proofs, most recent first (see
    /// [`ExprSet::is_empty_language_with`]); fixed size, so replaying them never allocates.
    pub(crate) witnesses: [Witness; WITNESSES],
    /// Derivative pairs `(s, e)` known to satisfy [`ExprSet::is_prefix_contained`], and that
    /// check's scratch buffers.
    pub(crate) prefix_memo: hashbrown::HashSet<(u32, u32)>,
    pub(crate) prefix_seen: hashbrown::HashSet<(u32, u32)>,
    pub(crate) prefix_stack: Roomy<(ExprId, ExprId)>,
    /// Scratch of [`ExprSet::class_blocks`]: leaves, nodes seen, traversal stack, blocks.
    pub(crate) block_leaves: Roomy<ExprId>,
    pub(crate) block_seen: hashbrown::HashSet<u32>,
    pub(crate) block_stack: Roomy<ExprId>,
    pub(crate) prefix_blocks: Roomy<[u64; 4]>,
    pub(crate) max_nodes: usize,
    pub(crate) max_repeat: u32,
    pub(crate) max_nesting_depth: usize,
    pub(crate) max_memory: usize,
}

/// How many recent witnesses an emptiness check replays before searching.
pub(crate) const WITNESSES: usize = 6;
/// The longest witness kept, in bytes.
pub(crate) const WITNESS_LEN: usize = 96;

/// A byte string that took some expression to a nullable one.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Witness {
    pub(crate) len: u8,
    pub(crate) bytes: [u8; WITNESS_LEN],
}

impl Witness {
    pub(crate) const EMPTY: Witness = Witness {
        len: 0,
        bytes: [0; WITNESS_LEN],
    };

    pub(crate) fn as_slice(&self) -> &[u8] {
        self.bytes.get(..self.len as usize).unwrap_or(&[])
    }
}

/// Is `b` in the 256-bit set?
#[inline(always)]
pub(crate) fn set_contains(set: &[u32], b: u8) -> bool {
    set.get((b >> 5) as usize)
        .is_some_and(|w| w & (1u32 << (b & 31)) != 0)
}

fn set_bits(set: &[u32; 8]) -> u32 {
    set.iter().map(|w| w.count_ones()).sum()
}

fn first_bit(set: &[u32; 8]) -> u8 {
    for (i, w) in set.iter().enumerate() {
        if *w != 0 {
            return (i as u32 * 32 + w.trailing_zeros()) as u8;
        }
    }
    0
}

impl ExprSet {
    /// An empty store enforcing `limits.max_expr_nodes`, `max_repeat`, `max_nesting_depth`
    /// and `max_memory_bytes`; its fuel starts at `limits.compile_fuel`.
    pub fn new(limits: &Limits) -> ExprSet {
        let mut set = ExprSet::bare(limits);
        set.starts.push(0);
        // The three reserved nodes; the limits above are at least 3, so these succeed.
        let _ = set.intern(&[TAG_NOTHING]);
        let _ = set.intern(&[TAG_EPSILON | FLAG_NULLABLE]);
        // ANY_STRING = Not(NOTHING). It is flagged as free of And/Not: its language is
        // known to be non-empty.
        let _ = set.intern(&[TAG_NOT | FLAG_NULLABLE | FLAG_WIDE, ExprId::NOTHING.0]);
        set
    }

    /// A store with no nodes that allocates nothing: what a parser holds while its grammar's
    /// shared tables are with it only during a call (see `crate::lexer::Lexer::placeholder`).
    /// Every lookup in it finds nothing.
    pub(crate) fn placeholder() -> ExprSet {
        ExprSet::bare(&Limits::default())
    }

    fn bare(limits: &Limits) -> ExprSet {
        ExprSet {
            data: Vec::new(),
            starts: Vec::new(),
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            deriv_cache: HashMap::new(),
            empty_cache: HashMap::new(),
            star_forms: HashMap::new(),
            scratch_stack: Roomy::default(),
            scratch_missing: Roomy::default(),
            scratch_ds: Roomy::default(),
            scratch_or: Roomy::default(),
            empty_seen: hashbrown::HashSet::new(),
            empty_stack: Roomy::default(),
            witnesses: [Witness::EMPTY; WITNESSES],
            prefix_memo: hashbrown::HashSet::new(),
            prefix_seen: hashbrown::HashSet::new(),
            prefix_stack: Roomy::default(),
            block_leaves: Roomy::default(),
            block_seen: hashbrown::HashSet::new(),
            block_stack: Roomy::default(),
            prefix_blocks: Roomy::default(),
            fuel: limits.compile_fuel,
            spent: 0,
            granted: limits.compile_fuel,
            weight: 1,
            work: 0,
            max_nodes: limits.max_expr_nodes.max(3),
            max_repeat: limits.max_repeat,
            max_nesting_depth: limits.max_nesting_depth,
            max_memory: limits.max_memory_bytes,
        }
    }

    /// How many nodes are interned.
    pub fn num_nodes(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Approximate heap bytes held by the store and its caches.
    pub fn bytes_used(&self) -> usize {
        self.data.capacity() * 4
            + self.starts.capacity() * 4
            + self.table.capacity() * 5
            + self.deriv_cache.capacity() * 13
            + self.empty_cache.capacity() * 9
            + self.star_forms.capacity() * 10
            + self.prefix_memo.capacity() * 9
    }

    /// Drops the derivative cache and releases its buffer (see `Grammar::build`: the
    /// pristine parser, kept for rebuilds, does not keep the compile's cache).
    pub fn clear_deriv_cache(&mut self) {
        self.deriv_cache = HashMap::new();
    }

    /// Set the remaining work budget for derivatives, emptiness and containment checks.
    pub fn set_fuel(&mut self, fuel: u64) {
        self.spent = self.fuel_spent();
        self.granted = fuel;
        self.fuel = fuel;
    }

    /// The remaining work budget.
    pub fn fuel_left(&self) -> u64 {
        self.fuel
    }

    /// Charge each unit of regex work `weight` units of fuel from now on (1 unless set).
    pub fn set_weight(&mut self, weight: u64) {
        self.weight = weight.max(1);
    }

    /// Spend `n` units of regex work (`n` times the weight in fuel); `Err(Fuel)` when the
    /// budget is exhausted.
    #[inline]
    pub(crate) fn spend(&mut self, n: u64) -> Result<(), LimitKind> {
        self.spend_fuel(n.saturating_mul(self.weight))
    }

    /// Spend `n` units of fuel as they are (work that is not regex work: the JSON compiler's
    /// rewriting, Earley steps).
    #[inline]
    pub(crate) fn spend_fuel(&mut self, n: u64) -> Result<(), LimitKind> {
        if self.fuel < n {
            self.fuel = 0;
            return Err(LimitKind::Fuel);
        }
        self.fuel -= n;
        Ok(())
    }

    /// Fuel spent since this set was made, refuels included: a count of the work done, for
    /// tests and statistics (never reset). Kept at [`ExprSet::set_fuel`] only,
    /// so spending costs nothing more.
    pub fn fuel_spent(&self) -> u64 {
        // `fuel <= granted` always (set together, then only spent); wrapping keeps the code
        // small on 32-bit targets, and a u64 count does not wrap in practice.
        self.spent
            .wrapping_add(self.granted.wrapping_sub(self.fuel))
    }

    #[inline(always)]
    fn words(&self, e: ExprId) -> &[u32] {
        let i = e.as_usize();
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&s), Some(&t)) => self.data.get(s as usize..t as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    #[inline(always)]
    fn header(&self, e: ExprId) -> u32 {
        self.starts
            .get(e.as_usize())
            .and_then(|&s| self.data.get(s as usize))
            .copied()
            .unwrap_or(0)
    }

    /// Decode node `e` (an unknown id reads as `Nothing`).
    pub(crate) fn node(&self, e: ExprId) -> Node<'_> {
        let w = self.words(e);
        let Some((&h, args)) = w.split_first() else {
            return Node::Nothing;
        };
        let arg = |i: usize| args.get(i).copied().unwrap_or(0);
        match h & TAG_MASK {
            TAG_EPSILON => Node::Epsilon,
            TAG_BYTE => Node::Byte(arg(0) as u8),
            TAG_BYTE_SET => Node::ByteSet(args),
            TAG_CONCAT => Node::Concat(ExprId(arg(0)), ExprId(arg(1))),
            TAG_OR => Node::Or(args),
            TAG_AND => Node::And(args),
            TAG_NOT => Node::Not(ExprId(arg(0))),
            TAG_REPEAT => Node::Repeat(ExprId(arg(0)), arg(1), arg(2)),
            _ => Node::Nothing,
        }
    }

    /// A lower bound on the length of the shortest string `e` matches ([`MIN_LEN_NONE`] only
    /// when it matches nothing): exact for bytes, concatenation, alternation and repetition;
    /// an intersection counts its longest member and a complement 0 or 1 (whether it excludes
    /// the empty string), so expressions with `&` or `~` may get less than their true length.
    /// Memoised in `memo` (expression id → bound); the walk uses an explicit stack (children
    /// are interned before their parents, so the graph has no cycle).
    pub(crate) fn min_len(&self, e: ExprId, memo: &mut HashMap<u32, u32>) -> u32 {
        if let Some(&v) = memo.get(&e.0) {
            return v;
        }
        let mut stack: Vec<(ExprId, bool)> = Vec::new();
        stack.push((e, false));
        while let Some((x, expanded)) = stack.pop() {
            if memo.contains_key(&x.0) {
                continue;
            }
            let node = self.node(x);
            let get = |memo: &HashMap<u32, u32>, c: u32| memo.get(&c).copied().unwrap_or(0);
            if !expanded {
                stack.push((x, true));
                let mut child = |c: u32| {
                    if !memo.contains_key(&c) {
                        stack.push((ExprId(c), false));
                    }
                };
                match node {
                    Node::Concat(a, b) => {
                        child(a.0);
                        child(b.0);
                    }
                    Node::Or(xs) | Node::And(xs) => xs.iter().for_each(|&c| child(c)),
                    Node::Not(a) | Node::Repeat(a, _, _) => child(a.0),
                    _ => {}
                }
                continue;
            }
            let v = match node {
                Node::Nothing => MIN_LEN_NONE,
                Node::Epsilon => 0,
                Node::Byte(_) | Node::ByteSet(_) => 1,
                Node::Concat(a, b) => {
                    let (a, b) = (get(memo, a.0), get(memo, b.0));
                    if a == MIN_LEN_NONE || b == MIN_LEN_NONE {
                        MIN_LEN_NONE
                    } else {
                        a.saturating_add(b).min(MIN_LEN_NONE - 1)
                    }
                }
                Node::Or(xs) => xs
                    .iter()
                    .map(|&c| get(memo, c))
                    .min()
                    .unwrap_or(MIN_LEN_NONE),
                Node::And(xs) => xs.iter().map(|&c| get(memo, c)).max().unwrap_or(0),
                Node::Not(a) => u32::from(self.is_nullable(a)),
                Node::Repeat(a, min, _) => {
                    if min == 0 {
                        0
                    } else {
                        let a = get(memo, a.0);
                        if a == MIN_LEN_NONE {
                            MIN_LEN_NONE
                        } else {
                            a.saturating_mul(min).min(MIN_LEN_NONE - 1)
                        }
                    }
                }
            };
            memo.insert(x.0, v);
        }
        memo.get(&e.0).copied().unwrap_or(0)
    }

    /// Does `e` match the empty string? O(1).
    #[inline]
    pub fn is_nullable(&self, e: ExprId) -> bool {
        self.header(e) & FLAG_NULLABLE != 0
    }

    /// Does `e` contain `And` or `Not` (other than [`ExprId::ANY_STRING`]) anywhere? When it
    /// does not, `e` denotes the empty language iff it is [`ExprId::NOTHING`]. O(1).
    #[inline]
    pub fn has_and_not(&self, e: ExprId) -> bool {
        self.header(e) & FLAG_AND_NOT != 0
    }

    /// Whether `e` is built from bytes, byte sets, concatenation, alternation and
    /// intersection only, so that its language is a finite set of strings (a list of keys or
    /// enum values, in any of their spellings).
    #[inline]
    pub fn is_literal_set(&self, e: ExprId) -> bool {
        self.header(e) & FLAG_WIDE == 0
    }

    /// The byte set of a `Byte`/`ByteSet` node.
    pub(crate) fn as_byte_set(&self, e: ExprId) -> Option<[u32; 8]> {
        match self.node(e) {
            Node::Byte(b) => {
                let mut s = [0u32; 8];
                s[(b >> 5) as usize] |= 1 << (b & 31);
                Some(s)
            }
            Node::ByteSet(w) => {
                let mut s = [0u32; 8];
                for (d, x) in s.iter_mut().zip(w) {
                    *d = *x;
                }
                Some(s)
            }
            _ => None,
        }
    }

    /// The body and bounds of a `Repeat` node (`None` for an unbounded one).
    pub(crate) fn as_repeat(&self, e: ExprId) -> Option<(ExprId, u32, Option<u32>)> {
        match self.node(e) {
            Node::Repeat(x, min, max) => Some((x, min, (max != REPEAT_INF).then_some(max))),
            _ => None,
        }
    }

    /// Intern the node `words` (header with flags already set).
    fn intern(&mut self, words: &[u32]) -> Result<ExprId, LimitKind> {
        let hash = self.hasher.hash_one(words);
        let (data, starts) = (&self.data, &self.starts);
        let slice_of = |id: u32| -> &[u32] {
            let i = id as usize;
            match (starts.get(i), starts.get(i + 1)) {
                (Some(&s), Some(&t)) => data.get(s as usize..t as usize).unwrap_or(&[]),
                _ => &[],
            }
        };
        if let Some(&id) = self.table.find(hash, |&id| slice_of(id) == words) {
            return Ok(ExprId(id));
        }
        if self.num_nodes() >= self.max_nodes {
            return Err(LimitKind::ExprNodes);
        }
        if self.bytes_used() + words.len() * 4 + 16 > self.max_memory {
            return Err(LimitKind::Memory);
        }
        let end = self.data.len() + words.len();
        if end > u32::MAX as usize || self.num_nodes() >= u32::MAX as usize - 1 {
            return Err(LimitKind::Memory);
        }
        let id = self.num_nodes() as u32;
        self.data.extend_from_slice(words);
        self.starts.push(end as u32);
        let (data, starts, hasher) = (&self.data, &self.starts, &self.hasher);
        self.table.insert_unique(hash, id, |&id| {
            let i = id as usize;
            let w = match (starts.get(i), starts.get(i + 1)) {
                (Some(&s), Some(&t)) => data.get(s as usize..t as usize).unwrap_or(&[]),
                _ => &[],
            };
            hasher.hash_one(w)
        });
        Ok(ExprId(id))
    }

    /// A byte set: bit `b % 32` of word `b / 32` set means byte `b` is in it. The empty set
    /// is [`ExprId::NOTHING`]; a single byte becomes a `Byte` node.
    pub fn mk_byte_set(&mut self, set: &[u32; 8]) -> Result<ExprId, LimitKind> {
        match set_bits(set) {
            0 => Ok(ExprId::NOTHING),
            1 => self.mk_byte(first_bit(set)),
            _ => {
                let mut w = [0u32; 9];
                w[0] = TAG_BYTE_SET;
                w[1..].copy_from_slice(set);
                self.intern(&w)
            }
        }
    }

    /// A single byte.
    pub fn mk_byte(&mut self, b: u8) -> Result<ExprId, LimitKind> {
        self.intern(&[TAG_BYTE, b as u32])
    }

    /// The byte string `bytes` (empty: [`ExprId::EPSILON`]).
    pub fn mk_literal(&mut self, bytes: &[u8]) -> Result<ExprId, LimitKind> {
        // Its suffixes are `bytes.len()` distinct nodes: fail before building them.
        if bytes.len() > self.max_nodes {
            return Err(LimitKind::ExprNodes);
        }
        let mut r = ExprId::EPSILON;
        for &b in bytes.iter().rev() {
            let x = self.mk_byte(b)?;
            r = self.mk_concat(x, r)?;
        }
        Ok(r)
    }

    /// `a` followed by `b`.
    pub fn mk_concat(&mut self, a: ExprId, b: ExprId) -> Result<ExprId, LimitKind> {
        if a == ExprId::NOTHING || b == ExprId::NOTHING {
            return Ok(ExprId::NOTHING);
        }
        if a == ExprId::EPSILON {
            return Ok(b);
        }
        if b == ExprId::EPSILON {
            return Ok(a);
        }
        if a == ExprId::ANY_STRING && b == ExprId::ANY_STRING {
            return Ok(a);
        }
        if let Node::Concat(..) = self.node(a) {
            // Re-associate to the right: collect the left spine, then fold from the right.
            let mut spine = Vec::new();
            let mut cur = a;
            while let Node::Concat(x, y) = self.node(cur) {
                spine.push(x);
                cur = y;
            }
            spine.push(cur);
            let mut r = b;
            for &x in spine.iter().rev() {
                r = self.intern_concat(x, r)?;
            }
            return Ok(r);
        }
        self.intern_concat(a, b)
    }

    /// Intern `Concat(a, b)` where `a` is not a `Concat` and neither is trivial.
    fn intern_concat(&mut self, a: ExprId, b: ExprId) -> Result<ExprId, LimitKind> {
        let ha = self.header(a);
        let hb = self.header(b);
        let mut h = TAG_CONCAT | ((ha | hb) & (FLAG_AND_NOT | FLAG_WIDE));
        if ha & hb & FLAG_NULLABLE != 0 {
            h |= FLAG_NULLABLE;
        }
        self.intern(&[h, a.0, b.0])
    }

    /// Alternation of `items` (flattened, byte sets merged, sorted, deduplicated).
    pub fn mk_or(&mut self, items: &[ExprId]) -> Result<ExprId, LimitKind> {
        let mut list = core::mem::take(&mut self.scratch_or);
        list.clear();
        let r = self.mk_or_in(items, &mut list);
        self.scratch_or = list;
        r
    }

    /// [`ExprSet::mk_or`] with `list` (empty) as its working list.
    fn mk_or_in(&mut self, items: &[ExprId], list: &mut Vec<u32>) -> Result<ExprId, LimitKind> {
        let mut extra = items.len() as u64;
        let mut set = [0u32; 8];
        let mut has_set = false;
        for &e in items {
            match self.node(e) {
                Node::Nothing => {}
                Node::Or(xs) => {
                    extra += xs.len() as u64;
                    for &x in xs {
                        if let Some(s) = self.as_byte_set(ExprId(x)) {
                            has_set = true;
                            for (d, w) in set.iter_mut().zip(s) {
                                *d |= w;
                            }
                        } else {
                            list.push(x);
                        }
                    }
                }
                Node::Byte(_) | Node::ByteSet(_) => {
                    if let Some(s) = self.as_byte_set(e) {
                        has_set = true;
                        for (d, w) in set.iter_mut().zip(s) {
                            *d |= w;
                        }
                    }
                }
                _ => {
                    if e == ExprId::ANY_STRING {
                        return Ok(ExprId::ANY_STRING);
                    }
                    list.push(e.0);
                }
            }
        }
        self.work += extra;
        if has_set {
            let s = self.mk_byte_set(&set)?;
            list.push(s.0);
        }
        list.sort_unstable();
        list.dedup();
        // `ε | x` with `x` nullable is just `x`. EPSILON (id 1) sorts first.
        if list.len() > 1
            && list.first() == Some(&ExprId::EPSILON.0)
            && list.iter().skip(1).any(|&x| self.is_nullable(ExprId(x)))
        {
            list.remove(0);
        }
        // `x* | x{m,n} | x` is `x*`.
        let mut stars: Vec<u32> = Vec::new();
        for &x in list.iter() {
            if let Node::Repeat(body, 0, REPEAT_INF) = self.node(ExprId(x)) {
                stars.push(body.0);
            }
        }
        if !stars.is_empty() {
            stars.sort_unstable();
            list.retain(|&x| {
                let body = match self.node(ExprId(x)) {
                    Node::Repeat(body, min, max) if !(min == 0 && max == REPEAT_INF) => body.0,
                    _ => x,
                };
                stars.binary_search(&body).is_err()
            });
        }
        match list.len() {
            0 => Ok(ExprId::NOTHING),
            1 => Ok(ExprId(list[0])),
            _ => {
                let mut h = TAG_OR;
                for &x in list.iter() {
                    let hx = self.header(ExprId(x));
                    h |= hx & (FLAG_NULLABLE | FLAG_AND_NOT | FLAG_WIDE);
                }
                list.insert(0, h);
                self.intern(list)
            }
        }
    }

    /// Intersection of `items` (flattened, sorted, deduplicated; byte sets intersected).
    pub fn mk_and(&mut self, items: &[ExprId]) -> Result<ExprId, LimitKind> {
        let mut list: Vec<u32> = Vec::with_capacity(items.len());
        let mut extra = items.len() as u64;
        let mut set = [u32::MAX; 8];
        let mut has_set = false;
        let mut has_eps = false;
        for &e in items {
            match self.node(e) {
                Node::Nothing => return Ok(ExprId::NOTHING),
                Node::Epsilon => has_eps = true,
                Node::And(xs) => {
                    extra += xs.len() as u64;
                    for &x in xs {
                        if let Some(s) = self.as_byte_set(ExprId(x)) {
                            has_set = true;
                            for (d, w) in set.iter_mut().zip(s) {
                                *d &= w;
                            }
                        } else {
                            list.push(x);
                        }
                    }
                }
                Node::Byte(_) | Node::ByteSet(_) => {
                    if let Some(s) = self.as_byte_set(e) {
                        has_set = true;
                        for (d, w) in set.iter_mut().zip(s) {
                            *d &= w;
                        }
                    }
                }
                _ => {
                    if e != ExprId::ANY_STRING {
                        list.push(e.0);
                    }
                }
            }
        }
        self.work += extra;
        if has_eps {
            // {ε} ∩ L is {ε} when every other item is nullable, else empty.
            let all = !has_set && list.iter().all(|&x| self.is_nullable(ExprId(x)));
            return Ok(if all {
                ExprId::EPSILON
            } else {
                ExprId::NOTHING
            });
        }
        if has_set {
            let s = self.mk_byte_set(&set)?;
            if s == ExprId::NOTHING {
                return Ok(s);
            }
            list.push(s.0);
        }
        list.sort_unstable();
        list.dedup();
        // x & ~x is empty.
        for &x in &list {
            if let Node::Not(y) = self.node(ExprId(x))
                && list.binary_search(&y.0).is_ok()
            {
                return Ok(ExprId::NOTHING);
            }
        }
        match list.len() {
            0 => Ok(ExprId::ANY_STRING),
            1 => Ok(ExprId(list[0])),
            _ => {
                let mut h = TAG_AND | FLAG_AND_NOT | FLAG_NULLABLE;
                for &x in &list {
                    if !self.is_nullable(ExprId(x)) {
                        h &= !FLAG_NULLABLE;
                    }
                    h |= self.header(ExprId(x)) & FLAG_WIDE;
                }
                list.insert(0, h);
                self.intern(&list)
            }
        }
    }

    /// Complement of `e` over all byte strings.
    pub fn mk_not(&mut self, e: ExprId) -> Result<ExprId, LimitKind> {
        if let Node::Not(x) = self.node(e) {
            return Ok(x);
        }
        if e == ExprId::NOTHING {
            return Ok(ExprId::ANY_STRING);
        }
        let mut h = TAG_NOT | FLAG_AND_NOT | FLAG_WIDE;
        if !self.is_nullable(e) {
            h |= FLAG_NULLABLE;
        }
        self.intern(&[h, e.0])
    }

    /// `min` to `max` (inclusive; `None` = unbounded) repetitions of `e`. Counts above
    /// [`Limits::max_repeat`] are `Err(RepeatCount)`; `min > max` is [`ExprId::NOTHING`].
    pub fn mk_repeat(
        &mut self,
        e: ExprId,
        min: u32,
        max: Option<u32>,
    ) -> Result<ExprId, LimitKind> {
        if min > self.max_repeat {
            return Err(LimitKind::RepeatCount);
        }
        let max = match max {
            None => REPEAT_INF,
            Some(m) if m > self.max_repeat || m == REPEAT_INF => {
                return Err(LimitKind::RepeatCount);
            }
            Some(m) => m,
        };
        self.mk_repeat_raw(e, min, max)
    }

    /// `mk_repeat` without the count limit; `max == REPEAT_INF` is unbounded.
    pub(crate) fn mk_repeat_raw(
        &mut self,
        e: ExprId,
        mut min: u32,
        max: u32,
    ) -> Result<ExprId, LimitKind> {
        if min > max {
            return Ok(ExprId::NOTHING);
        }
        if max == 0 || e == ExprId::EPSILON {
            return Ok(ExprId::EPSILON);
        }
        if e == ExprId::NOTHING {
            return Ok(if min == 0 {
                ExprId::EPSILON
            } else {
                ExprId::NOTHING
            });
        }
        if e == ExprId::ANY_STRING {
            return Ok(e);
        }
        if min == 1 && max == 1 {
            return Ok(e);
        }
        if self.is_nullable(e) {
            min = 0;
        }
        match self.node(e) {
            // (x*){m,n}, (x+){m,n}, (x?){m,} and friends.
            Node::Repeat(x, a, REPEAT_INF) if a <= 1 => {
                let m = if a == 0 { 0 } else { min };
                return self.mk_repeat_raw(x, m, REPEAT_INF);
            }
            Node::Repeat(x, 0, 1) if max == REPEAT_INF => {
                return self.mk_repeat_raw(x, 0, REPEAT_INF);
            }
            Node::ByteSet(w) if max == REPEAT_INF && min == 0 && w.iter().all(|&x| x == !0) => {
                return Ok(ExprId::ANY_STRING);
            }
            _ => {}
        }
        let mut h = TAG_REPEAT | FLAG_WIDE | (self.header(e) & FLAG_AND_NOT);
        if min == 0 {
            h |= FLAG_NULLABLE;
        }
        self.intern(&[h, e.0, min, max])
    }

    /// A regex-like rendering of `e`, for debugging.
    pub fn display(&self, e: ExprId) -> String {
        enum Task {
            Expr(ExprId),
            Str(&'static str),
            Owned(String),
        }
        let mut out = String::new();
        let mut stack = alloc::vec![Task::Expr(e)];
        while let Some(t) = stack.pop() {
            let e = match t {
                Task::Str(s) => {
                    out.push_str(s);
                    continue;
                }
                Task::Owned(s) => {
                    out.push_str(&s);
                    continue;
                }
                Task::Expr(e) => e,
            };
            if e == ExprId::ANY_STRING {
                out.push('⊤');
                continue;
            }
            match self.node(e) {
                Node::Nothing => out.push('∅'),
                Node::Epsilon => out.push('ε'),
                Node::Byte(b) => push_byte(&mut out, b, false),
                Node::ByteSet(w) => {
                    out.push('[');
                    let mut b = 0u32;
                    while b < 256 {
                        if set_contains(w, b as u8) {
                            let lo = b;
                            while b + 1 < 256 && set_contains(w, (b + 1) as u8) {
                                b += 1;
                            }
                            push_byte(&mut out, lo as u8, true);
                            if b > lo {
                                if b > lo + 1 {
                                    out.push('-');
                                }
                                push_byte(&mut out, b as u8, true);
                            }
                        }
                        b += 1;
                    }
                    out.push(']');
                }
                Node::Concat(a, b) => {
                    stack.push(Task::Expr(b));
                    stack.push(Task::Expr(a));
                }
                Node::Or(xs) | Node::And(xs) => {
                    let sep = if matches!(self.node(e), Node::Or(_)) {
                        "|"
                    } else {
                        "&"
                    };
                    out.push('(');
                    stack.push(Task::Str(")"));
                    for (i, &x) in xs.iter().enumerate().rev() {
                        stack.push(Task::Expr(ExprId(x)));
                        if i > 0 {
                            stack.push(Task::Str(sep));
                        }
                    }
                }
                Node::Not(x) => {
                    out.push_str("~(");
                    stack.push(Task::Str(")"));
                    stack.push(Task::Expr(x));
                }
                Node::Repeat(x, min, max) => {
                    let suffix = match (min, max) {
                        (0, REPEAT_INF) => String::from(")*"),
                        (1, REPEAT_INF) => String::from(")+"),
                        (0, 1) => String::from(")?"),
                        (m, REPEAT_INF) => alloc::format!("){{{m},}}"),
                        (m, n) if m == n => alloc::format!("){{{m}}}"),
                        (m, n) => alloc::format!("){{{m},{n}}}"),
                    };
                    out.push('(');
                    stack.push(Task::Owned(suffix));
                    stack.push(Task::Expr(x));
                }
            }
        }
        out
    }
}

fn push_byte(out: &mut String, b: u8, in_class: bool) {
    let special: &[u8] = if in_class {
        b"\\]-^["
    } else {
        b"\\.+*?()|[]{}^$&~"
    };
    if b.is_ascii_graphic() && !special.contains(&b) || b == b' ' {
        out.push(b as char);
    } else if special.contains(&b) {
        out.push('\\');
        out.push(b as char);
    } else {
        let _ = write!(out, "\\x{b:02x}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_of(bytes: &[u8]) -> [u32; 8] {
        let mut s = [0u32; 8];
        for &b in bytes {
            s[(b >> 5) as usize] |= 1 << (b & 31);
        }
        s
    }

    #[test]
    fn store_is_send_sync_clone() {
        fn check<T: Send + Sync + Clone + core::fmt::Debug>() {}
        check::<ExprSet>();
        check::<super::super::ByteClasses>();
    }

    #[test]
    fn reserved_ids() {
        let mut s = ExprSet::new(&Limits::default());
        assert_eq!(s.num_nodes(), 3);
        assert_eq!(s.mk_not(ExprId::NOTHING).unwrap(), ExprId::ANY_STRING);
        assert_eq!(s.mk_not(ExprId::ANY_STRING).unwrap(), ExprId::NOTHING);
        assert!(s.is_nullable(ExprId::EPSILON));
        assert!(s.is_nullable(ExprId::ANY_STRING));
        assert!(!s.is_nullable(ExprId::NOTHING));
        assert!(!s.has_and_not(ExprId::ANY_STRING));
    }

    #[test]
    fn hash_consing_and_simplification() {
        let mut s = ExprSet::new(&Limits::default());
        let a = s.mk_byte(b'a').unwrap();
        let b = s.mk_byte(b'b').unwrap();
        let ab1 = s.mk_literal(b"ab").unwrap();
        let ab2 = s.mk_concat(a, b).unwrap();
        assert_eq!(ab1, ab2);
        assert_eq!(s.mk_byte_set(&set_of(b"a")).unwrap(), a);
        assert_eq!(s.mk_byte_set(&[0; 8]).unwrap(), ExprId::NOTHING);
        let or1 = s.mk_or(&[a, b]).unwrap();
        let set_ab = s.mk_byte_set(&set_of(b"ab")).unwrap();
        assert_eq!(or1, set_ab);
        let or2 = s.mk_or(&[ab1, a, ExprId::NOTHING, ab1]).unwrap();
        let or3 = s.mk_or(&[a, ab1]).unwrap();
        assert_eq!(or2, or3);
        assert_eq!(s.mk_or(&[]).unwrap(), ExprId::NOTHING);
        assert_eq!(
            s.mk_or(&[a, ExprId::ANY_STRING]).unwrap(),
            ExprId::ANY_STRING
        );
        assert_eq!(s.mk_and(&[]).unwrap(), ExprId::ANY_STRING);
        assert_eq!(s.mk_and(&[a, b]).unwrap(), ExprId::NOTHING);
        assert_eq!(s.mk_and(&[set_ab, a]).unwrap(), a);
        assert_eq!(s.mk_and(&[a, ExprId::ANY_STRING]).unwrap(), a);
        let na = s.mk_not(a).unwrap();
        assert_eq!(s.mk_and(&[a, na]).unwrap(), ExprId::NOTHING);
        assert_eq!(s.mk_not(na).unwrap(), a);
        assert_eq!(s.mk_concat(a, ExprId::NOTHING).unwrap(), ExprId::NOTHING);
        assert_eq!(s.mk_concat(ExprId::EPSILON, a).unwrap(), a);
        // Right-nesting: (ab)c == a(bc).
        let c = s.mk_byte(b'c').unwrap();
        let bc = s.mk_concat(b, c).unwrap();
        let l = s.mk_concat(ab1, c).unwrap();
        let r = s.mk_concat(a, bc).unwrap();
        assert_eq!(l, r);
        assert_eq!(s.mk_repeat(a, 0, Some(0)).unwrap(), ExprId::EPSILON);
        assert_eq!(s.mk_repeat(a, 1, Some(1)).unwrap(), a);
        assert_eq!(
            s.mk_repeat(ExprId::NOTHING, 0, None).unwrap(),
            ExprId::EPSILON
        );
        assert_eq!(
            s.mk_repeat(ExprId::NOTHING, 1, None).unwrap(),
            ExprId::NOTHING
        );
        let astar = s.mk_repeat(a, 0, None).unwrap();
        let astarstar = s.mk_repeat(astar, 0, None).unwrap();
        assert_eq!(astar, astarstar);
        let aplus = s.mk_repeat(a, 1, None).unwrap();
        assert_eq!(s.mk_repeat(aplus, 0, None).unwrap(), astar);
        assert_eq!(s.mk_repeat(astar, 1, None).unwrap(), astar);
        assert_eq!(s.mk_repeat(a, 3, Some(2)).unwrap(), ExprId::NOTHING);
        assert_eq!(s.mk_repeat(a, 10_001, None), Err(LimitKind::RepeatCount));
        assert_eq!(s.mk_repeat(a, 0, Some(10_001)), Err(LimitKind::RepeatCount));
        let full = s.mk_byte_set(&[!0; 8]).unwrap();
        assert_eq!(s.mk_repeat(full, 0, None).unwrap(), ExprId::ANY_STRING);
        // ε | a* == a*
        assert_eq!(s.mk_or(&[ExprId::EPSILON, astar]).unwrap(), astar);
        assert!(s.is_nullable(astar));
        assert!(!s.is_nullable(aplus));
        assert!(s.has_and_not(na));
        assert!(!s.has_and_not(or3));
    }

    #[test]
    fn display_works() {
        let mut s = ExprSet::new(&Limits::default());
        let a = s.mk_literal(b"a.").unwrap();
        let set = s.mk_byte_set(&set_of(b"xyz0")).unwrap();
        let r = s.mk_repeat(set, 1, None).unwrap();
        let o = s.mk_or(&[a, r]).unwrap();
        let d = s.display(o);
        assert!(d.contains("a\\."), "{d}");
        assert!(d.contains("[0x-z]"), "{d}");
    }

    #[test]
    fn node_limit() {
        let limits = Limits {
            max_expr_nodes: 10,
            ..Limits::default()
        };
        let mut s = ExprSet::new(&limits);
        let r = s.mk_literal(b"abcdefghijklmnop");
        assert_eq!(r, Err(LimitKind::ExprNodes));
    }
}
