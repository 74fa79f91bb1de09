//! Earley parser over lexemes, driven one byte at a time.
//!
//! Terminology after Kallmeyer: an *item* is a dotted rule plus the row it started in,
//! packed in a `u64` (dot position low, origin row high). A *row* (Earley set) is built
//! whenever the lexer completes a lexeme: the items of the previous row that expected one
//! of the matched lexemes are advanced (scan) and closed under prediction and completion
//! (with the Aycock–Horspool rule for nullable nonterminals, so left recursion, nullable
//! rules and ambiguity need no special cases). All rows share one item arena.
//!
//! The parser keeps one [`Entry`] (row, lexer state) per input byte. Walking the token trie
//! pushes and pops entries; rows beyond the top entry's row are kept as a cache, so when the
//! walk backtracks and completes the same lexeme again at the same place the row is reused
//! instead of rebuilt. Most trie nodes never reach the parser: the lexer DFA accepts or
//! rejects the byte by itself.
//!
//! Budgets: `max_items_per_row`, `max_items_per_mask` (counted since the last
//! [`Parser::start_step`]), the lexer's, `fuel_per_mask` (completion and scanning spend one
//! unit per item of the row they read, from the lexer's fuel) and `max_memory_bytes`: every
//! buffer the parser grows (items, rows, the `seen` set, the byte stack, the lexer's
//! tables) is checked before it grows, against what the owner charged from outside
//! ([`Parser::set_outside`]) plus what the parser holds ([`Parser::heap_bytes`]).

mod complete;
pub(crate) mod ends;
mod memo;
mod rules;
mod statemask;

pub use complete::Completion;

pub use rules::{END, Rules, TERMINAL};

use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::vec::Vec;
use hashbrown::HashSet;

use crate::error::LimitKind;
use crate::lexer::{Lexer, SLOW_BIT, StateId, reserve, table_bytes, vec_bytes};
use crate::limits::Limits;
use crate::roomy::Roomy;
use crate::toktrie::{FastStep, Recognizer, Stepper, StopWalk};

/// One input byte's parser state: the row the current lexeme started after, and the lexer
/// state inside that lexeme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Index of the current row.
    pub row: u32,
    /// Lexer state (a start state at a lexeme boundary).
    pub state: StateId,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    start: u32,
    end: u32,
    /// Lexer start state for the lexemes this row allows.
    lexer_start: StateId,
    /// The accept set that was scanned to build this row (for reuse).
    scan_key: u32,
    /// Contains the completed start item.
    accepting: bool,
    /// Unique per row built: names the whole row stack up to this row, since rebuilding a
    /// lower row discards every row above it.
    serial: u64,
}

/// Rows up to this many items are left in the order they were built: reading all of one
/// costs less than sorting it (most rows of JSON grammars are this short, and most rows a
/// trie walk builds are never read again).
const SORTED_ROW: usize = 16;

#[inline(always)]
fn item(dot: u32, origin: u32) -> u64 {
    dot as u64 | ((origin as u64) << 32)
}

#[inline(always)]
fn dot_of(item: u64) -> u32 {
    item as u32
}

#[inline(always)]
fn origin_of(item: u64) -> u32 {
    (item >> 32) as u32
}

/// The tables a grammar's matchers build lazily and share (see `Grammar::tables`): the
/// lexer and the masks remembered per lexer state. A parser holds them only during a
/// matcher's call, and a placeholder ([`Lexer::placeholder`]) otherwise.
#[derive(Debug, Clone)]
pub(crate) struct Tables {
    /// Boxed, so that lending the tables to a parser and back is a pointer swap (the lexer
    /// is 2.5 KB inline: two swaps of it per matcher call were 1% of mask time).
    pub(crate) lexer: Box<Lexer>,
    pub(crate) state_masks: statemask::StateMasks,
}

/// A published read-only copy of [`Tables`], shared by `Arc` (see [`crate::matcher`]): the
/// lexer inline, so that a read through the `Arc` costs no more loads than one through the
/// master tables' box.
#[derive(Debug)]
pub(crate) struct Snapshot {
    pub(crate) lexer: Lexer,
    pub(crate) state_masks: statemask::StateMasks,
}

impl Tables {
    /// A read-only copy for a published snapshot (see [`crate::matcher`]): the lexer's
    /// lookup tables and the remembered masks (shared), not the expression store.
    pub(crate) fn snapshot(&self) -> Snapshot {
        Snapshot {
            lexer: self.lexer.snapshot(),
            state_masks: self.state_masks.snapshot(),
        }
    }

    /// Heap bytes [`Tables::snapshot`] would hold.
    pub(crate) fn snapshot_bytes(&self) -> usize {
        self.lexer.snapshot_bytes() + self.state_masks.snapshot_bytes()
    }

    /// Extensions so far: a snapshot with the same count holds everything these do.
    pub(crate) fn changes(&self) -> u64 {
        self.lexer.changes() + self.state_masks.changes()
    }

    /// Whether these are the placeholder (a real lexer always has its dead state).
    pub(crate) fn is_placeholder(&self) -> bool {
        self.lexer.num_states() == 0
    }

    /// Heap bytes held, by capacity.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.lexer.bytes_used() + self.state_masks.bytes_used()
    }
}

/// The parser: rules, the lexer, rows, and the byte stack.
#[derive(Debug, Clone)]
pub struct Parser {
    rules: Arc<Rules>,
    lexer: Box<Lexer>,
    ignore: Vec<u32>,
    rows: Roomy<Row>,
    items: Roomy<u64>,
    stack: Roomy<Entry>,
    seen: HashSet<u64>,
    lexeme_scratch: Roomy<u32>,
    /// Scratch: a long row's sort keys ([`Parser::close_row`]).
    sort_keys: Roomy<u128>,
    max_items_per_row: usize,
    max_items_per_mask: usize,
    items_this_step: usize,
    error: Option<LimitKind>,
    next_serial: u64,
    state_masks: statemask::StateMasks,
    /// A published read-only copy of the grammar's tables this parser reads instead of
    /// `lexer` and `state_masks` (the placeholders then); see [`crate::matcher`].
    snapshot: Option<Arc<Snapshot>>,
    /// The step's fuel while reading a snapshot (with own tables the lexer counts it).
    fuel: u64,
    fuel_per_step: u64,
    /// Fuel spent reading a snapshot before the last [`Parser::start_step`] (see
    /// [`Parser::snapshot_fuel_spent`]).
    snap_spent: u64,
    /// A lookup in the snapshot found nothing: the step failed for that alone, and the
    /// caller redoes it on the master tables.
    missed: bool,
    /// `max_memory_bytes`: what the owner's charge plus this parser's heap may reach.
    max_bytes: usize,
    /// Bytes charged outside the parser (see [`Parser::set_outside`]).
    outside: usize,
    /// Capacities (bytes, tokens) of the output buffers of the matcher that handed this
    /// parser back to its grammar: a new matcher copying it reserves as much up front, so
    /// its first masks do not regrow them (see [`crate::roomy`]).
    pub(crate) output_room: (usize, usize),
}

impl Parser {
    /// A parser at the start of input.
    pub fn new(rules: Arc<Rules>, lexer: Lexer, limits: &Limits) -> Result<Parser, LimitKind> {
        let rules_size = rules_bytes(&rules);
        let ignore = lexer
            .lexemes()
            .iter()
            .enumerate()
            .filter(|(_, l)| l.ignore)
            .map(|(i, _)| i as u32)
            .collect();
        let mut p = Parser {
            rules,
            lexer: Box::new(lexer),
            ignore,
            rows: Roomy::default(),
            items: Roomy::default(),
            stack: Roomy::default(),
            seen: HashSet::new(),
            lexeme_scratch: Roomy::default(),
            sort_keys: Roomy::default(),
            max_items_per_row: limits.max_items_per_row,
            max_items_per_mask: limits.max_items_per_mask,
            items_this_step: 0,
            error: None,
            next_serial: 0,
            state_masks: statemask::StateMasks::new(limits.max_memory_bytes),
            snapshot: None,
            fuel: limits.fuel_per_mask,
            fuel_per_step: limits.fuel_per_mask,
            snap_spent: 0,
            missed: false,
            max_bytes: limits.max_memory_bytes,
            outside: rules_size,
            output_room: (0, 0),
        };
        p.sync_lexer_budget();
        p.start_step();
        let start = p.rules.start;
        p.grow_items(1)?;
        p.items.push(item(
            p.rules.rules_of(start).first().copied().unwrap_or(0),
            0,
        ));
        p.close_row(0, u32::MAX)?;
        let first = p.rows.first().map_or(StateId::DEAD, |r| r.lexer_start);
        p.reserve_stack(1)?;
        p.stack.push(Entry {
            row: 0,
            state: first,
        });
        Ok(p)
    }

    /// Exchange this parser's tables with `tables` (the grammar's shared ones in, the
    /// placeholder out, and back), and size the lexer's budget for this parser.
    pub(crate) fn swap_tables(&mut self, tables: &mut Tables) {
        self.snapshot = None;
        core::mem::swap(&mut self.lexer, &mut tables.lexer);
        core::mem::swap(&mut self.state_masks, &mut tables.state_masks);
        self.sync_lexer_budget();
    }

    /// A copy of this parser's tables.
    pub(crate) fn tables(&self) -> Tables {
        Tables {
            lexer: self.lexer.clone(),
            state_masks: self.state_masks.clone(),
        }
    }

    /// Take this parser's tables out, leaving the placeholder ([`Lexer::placeholder`]).
    pub(crate) fn take_tables(&mut self) -> Tables {
        let mut tables = Tables {
            lexer: Box::new(Lexer::placeholder()),
            state_masks: statemask::StateMasks::default(),
        };
        self.swap_tables(&mut tables);
        tables
    }

    /// Read `tables` (a published snapshot) from now on, instead of the tables this parser
    /// holds (the placeholder: see [`Parser::swap_tables`]).
    pub(crate) fn set_snapshot(&mut self, tables: Arc<Snapshot>) {
        self.snapshot = Some(tables);
        self.missed = false;
    }

    /// Stop reading a snapshot (a matcher handed back to its grammar keeps none alive).
    pub(crate) fn drop_snapshot(&mut self) {
        self.snapshot = None;
    }

    /// The snapshot this parser reads, if any.
    pub(crate) fn snapshot(&self) -> Option<&Arc<Snapshot>> {
        self.snapshot.as_ref()
    }

    /// Heap bytes of the snapshot this parser reads (the grammar's, counted in
    /// [`Parser::heap_bytes`] while it reads them); 0 without one.
    pub(crate) fn snapshot_heap(&self) -> usize {
        self.snapshot
            .as_ref()
            .map_or(0, |t| t.lexer.bytes_used() + t.state_masks.bytes_used())
    }

    /// Whether a snapshot lookup found nothing since [`Parser::clear_missed`].
    pub(crate) fn missed(&self) -> bool {
        self.missed
    }

    pub(crate) fn clear_missed(&mut self) {
        self.missed = false;
    }

    /// [`Tables::changes`] of the tables this parser holds (its own: the master tables
    /// during a master call).
    pub(crate) fn tables_changes(&self) -> u64 {
        self.lexer.changes() + self.state_masks.changes()
    }

    /// Record a snapshot miss; the error a step stops with.
    #[cold]
    fn miss(&mut self) -> LimitKind {
        self.missed = true;
        LimitKind::Fuel
    }

    /// The lexer tables read: the snapshot's, or this parser's own.
    #[inline(always)]
    fn lx(&self) -> &Lexer {
        match &self.snapshot {
            Some(t) => &t.lexer,
            None => &self.lexer,
        }
    }

    /// The remembered state masks read: the snapshot's, or this parser's own.
    #[inline(always)]
    fn masks(&self) -> &statemask::StateMasks {
        match &self.snapshot {
            Some(t) => &t.state_masks,
            None => &self.state_masks,
        }
    }

    /// The flags of `s` in the tables read. The parser's rows and byte stack may name states
    /// newer than a snapshot (made on the master tables since it was published): reading
    /// one is a miss. (The accept set and transitions of a state found here are in the same
    /// tables: they were added with it.)
    #[inline(always)]
    fn state_flags(&mut self, s: StateId) -> Result<u8, LimitKind> {
        match self.lx().flags_of(s) {
            Some(f) => Ok(f),
            None => Err(self.miss()),
        }
    }

    /// Spend `units` of the step's fuel on parser work (see [`Lexer::spend`]).
    #[inline]
    pub(crate) fn spend(&mut self, units: u64) -> Result<(), LimitKind> {
        if self.snapshot.is_none() {
            return self.lexer.spend(units);
        }
        if self.fuel < units {
            self.fuel = 0;
            return Err(LimitKind::Fuel);
        }
        self.fuel -= units;
        Ok(())
    }

    /// Fuel spent reading snapshots since this parser was made or the count was reset
    /// (`fuel` only falls below `fuel_per_step` on a snapshot: with its own tables the lexer
    /// counts the fuel).
    pub(crate) fn snapshot_fuel_spent(&self) -> u64 {
        // `fuel <= fuel_per_step` always; counts never wrap in practice (wrapping keeps the
        // code small on 32-bit targets).
        self.snap_spent
            .wrapping_add(self.fuel_per_step.wrapping_sub(self.fuel))
    }

    /// Start [`Parser::snapshot_fuel_spent`] from 0 (a parser handed to a new matcher).
    pub(crate) fn reset_fuel_count(&mut self) {
        self.snap_spent = 0;
        self.fuel = self.fuel_per_step;
    }

    /// A count of fuel spent: what this parser spent reading snapshots, plus what the lexer
    /// it holds spent since that lexer was made. The lexer is the grammar's master during a
    /// master call, so only the difference across a stretch in which the parser keeps the
    /// same tables is this parser's work (see `Matcher::stats`).
    pub(crate) fn fuel_counter(&self) -> u64 {
        self.snapshot_fuel_spent()
            .wrapping_add(self.lexer.fuel_spent())
    }

    /// [`Lexer::next`] on the tables read (a snapshot answers from its table or misses).
    #[inline]
    fn lexer_next(&mut self, s: StateId, byte: u8) -> Result<StateId, LimitKind> {
        match &self.snapshot {
            None => self.lexer.next(s, byte),
            Some(t) => match t.lexer.next_known(s, byte) {
                Some(n) => Ok(n),
                None => Err(self.miss()),
            },
        }
    }

    /// Reset the per-step budgets (call before each mask or token).
    pub fn start_step(&mut self) {
        self.items_this_step = 0;
        self.error = None;
        self.snap_spent = self.snapshot_fuel_spent();
        self.fuel = self.fuel_per_step;
        self.lexer.refuel();
        self.sync_lexer_budget();
    }

    /// The limit hit by the last push, if any (pushes fail once one is hit).
    pub fn error(&self) -> Option<LimitKind> {
        self.error
    }

    /// Bytes pushed since the start (the byte stack depth).
    pub fn depth(&self) -> usize {
        self.stack.len() - 1
    }

    /// A key that determines the mask: equal keys (within one parser) mean equal parser
    /// states as far as any continuation is concerned.
    pub fn state_key(&self) -> (u64, u32) {
        let top = self.stack.last().copied().unwrap_or(Entry {
            row: 0,
            state: StateId::DEAD,
        });
        let serial = self.rows.get(top.row as usize).map_or(0, |r| r.serial);
        (serial, top.state.0)
    }

    /// The vocabulary slice every token of which is allowed here without walking it (see
    /// [`Lexer::slice_for`]).
    pub fn top_slice(&mut self) -> Option<usize> {
        let state = self.stack.last()?.state;
        match &self.snapshot {
            None => self.lexer.slice_for(state),
            Some(t) => match t.lexer.slice_known(state) {
                Some(known) => known,
                None => {
                    self.miss();
                    None
                }
            },
        }
    }

    /// The slice of the top lexer state as far as the tables read now know it (`None`: not
    /// known); nothing is computed.
    pub(crate) fn top_slice_known(&self) -> Option<Option<usize>> {
        self.lx().slice_known(self.stack.last()?.state)
    }

    /// Back to the start of input, discarding cached rows (the lexer tables are kept).
    pub fn reset_to_start(&mut self) {
        self.stack.truncate(1);
        self.rows.truncate(1);
        let end = self.rows.first().map_or(0, |r| r.end as usize);
        self.items.truncate(end);
        self.seen.clear();
        self.error = None;
    }

    /// Drop back to `depth` bytes.
    pub fn truncate(&mut self, depth: usize) {
        self.stack.truncate(depth + 1);
    }

    /// Drops the lexer's derivative cache (a cache: masks are unchanged).
    pub fn clear_deriv_cache(&mut self) {
        self.lexer.clear_deriv_cache();
    }

    /// The lexer (for statistics).
    pub fn lexer(&self) -> &Lexer {
        self.lx()
    }

    /// Heap bytes held by this parser (its rules are shared and not included).
    pub fn bytes_used(&self) -> usize {
        self.heap_bytes()
    }

    /// Heap bytes held by this parser, buffers counted by capacity: the Earley arena, rows,
    /// `seen`, the byte stack and scratch, the lexer's tables, the remembered state masks.
    /// The rules are shared (`Arc`) by every parser of a grammar: the grammar charges them.
    pub fn heap_bytes(&self) -> usize {
        self.arena_bytes() + self.lx().bytes_used() + self.masks().bytes_used()
    }

    /// The part of [`Parser::heap_bytes`] that grows with the output: items, rows, `seen`,
    /// the byte stack and scratch.
    pub fn arena_bytes(&self) -> usize {
        vec_bytes(&self.items)
            + vec_bytes(&self.rows)
            + vec_bytes(&self.stack)
            + table_bytes(self.seen.capacity(), 8)
            + vec_bytes(&self.lexeme_scratch)
            + vec_bytes(&self.sort_keys)
            + vec_bytes(&self.ignore)
    }

    /// Bytes the owner holds beside this parser and charges to the same budget (the
    /// grammar's share, a matcher's byte log); the parser grows only while `outside` plus
    /// its own heap stays within `max_memory_bytes`.
    pub fn set_outside(&mut self, outside: usize) {
        self.outside = outside;
        self.sync_lexer_budget();
    }

    /// What `outside` is now.
    pub fn outside(&self) -> usize {
        self.outside
    }

    /// Bytes left in the budget.
    pub fn free_bytes(&self) -> usize {
        self.max_bytes
            .saturating_sub(self.outside.saturating_add(self.heap_bytes()))
    }

    /// Give the lexer what the budget leaves it (after the owner's charge and the rest of
    /// the parser).
    fn sync_lexer_budget(&mut self) {
        let rest = self
            .outside
            .saturating_add(self.arena_bytes() + self.masks().bytes_used());
        self.lexer
            .set_max_bytes(self.max_bytes.saturating_sub(rest));
    }

    /// Entries the byte stack holds beyond its depth without growing.
    pub(crate) fn stack_room(&self) -> usize {
        self.stack.capacity() - self.stack.len()
    }

    /// Room for `more` entries on the byte stack beyond its depth, charged now: a trie walk
    /// pushes up to a token's length of entries and must not grow the stack itself.
    pub fn reserve_stack(&mut self, more: usize) -> Result<(), LimitKind> {
        let free = self.free_bytes();
        let r = reserve(&mut self.stack, more, free);
        self.sync_lexer_budget();
        r
    }

    #[cold]
    fn grow_items_cold(&mut self, more: usize) -> Result<(), LimitKind> {
        let free = self.free_bytes();
        let r = reserve(&mut self.items, more, free);
        self.sync_lexer_budget();
        r
    }

    #[inline(always)]
    fn grow_items(&mut self, more: usize) -> Result<(), LimitKind> {
        if self.items.capacity() - self.items.len() >= more {
            return Ok(());
        }
        self.grow_items_cold(more)
    }

    /// Room for one more key in `seen` (a full hashbrown table doubles its buckets).
    #[inline(always)]
    fn grow_seen(&mut self) -> Result<(), LimitKind> {
        if self.seen.len() < self.seen.capacity() {
            return Ok(());
        }
        self.grow_seen_cold()
    }

    #[cold]
    fn grow_seen_cold(&mut self) -> Result<(), LimitKind> {
        let cap = self.seen.capacity();
        if table_bytes(cap + 1, 8) > self.free_bytes() {
            return Err(LimitKind::Memory);
        }
        // Full: one more key doubles the buckets (what `table_bytes(cap + 1)` counts).
        let r = self.seen.try_reserve(1).map_err(|_| LimitKind::Memory);
        self.sync_lexer_budget();
        r
    }

    /// Lexer states with a remembered mask (see [`Parser::state_mask_walk`]).
    pub fn state_masks(&self) -> usize {
        self.masks().len()
    }

    /// Whether the input so far is a complete sentence.
    pub fn is_accepting(&mut self) -> bool {
        self.accepting().unwrap_or(false)
    }

    /// [`Parser::is_accepting`], with the limit that stopped the check (or a snapshot miss).
    pub(crate) fn accepting(&mut self) -> Result<bool, LimitKind> {
        let Some(&top) = self.stack.last() else {
            return Ok(false);
        };
        let flags = self.state_flags(top.state)?;
        if flags & Lexer::START != 0 {
            return Ok(self.row_accepting(top.row));
        }
        if flags & Lexer::ACCEPT == 0 {
            return Ok(false);
        }
        Ok(self
            .finish_lexeme(top.row, top.state)?
            .is_some_and(|row| self.row_accepting(row)))
    }

    fn row_accepting(&self, row: u32) -> bool {
        self.rows.get(row as usize).is_some_and(|r| r.accepting)
    }

    /// Complete the lexeme matched in `state` after `row`: the row to continue from, or
    /// `None` when no item expects it. An ignored lexeme continues in `row` itself.
    fn finish_lexeme(&mut self, row: u32, state: StateId) -> Result<Option<u32>, LimitKind> {
        let flags = self.state_flags(state)?;
        let set = self.lx().accept_set_id(state);
        if flags & Lexer::ONLY_IGNORED != 0 {
            return Ok(Some(row));
        }
        let ignored = flags & Lexer::IGNORED != 0;
        // A real lexeme wins over an ignored one matching the same bytes.
        if let Some(next) = self.scan(row, set)? {
            return Ok(Some(next));
        }
        Ok(ignored.then_some(row))
    }

    /// Build (or reuse) the row after `row` for the lexemes of accept set `set`.
    fn scan(&mut self, row: u32, set: u32) -> Result<Option<u32>, LimitKind> {
        let next = row as usize + 1;
        if self.rows.get(next).is_some_and(|r| r.scan_key == set) {
            return Ok(Some(next as u32));
        }
        let Some(&from) = self.rows.get(row as usize) else {
            return Ok(None);
        };
        self.rows.truncate(next);
        self.items.truncate(from.end as usize);
        let start = self.items.len();
        let (lo, hi) = self.symbol_range(from, TERMINAL, END);
        self.spend((hi - lo) as u64 + 1)?;
        for i in lo..hi {
            let it = self.items[i];
            let sym = self.rules.rhs[dot_of(it) as usize];
            if sym != END
                && sym & TERMINAL != 0
                && self.lx().accept_set(set).contains(&(sym & !TERMINAL))
            {
                self.grow_items(1)?;
                self.items.push(item(dot_of(it) + 1, origin_of(it)));
            }
        }
        if self.items.len() == start {
            return Ok(None);
        }
        self.close_row(start, set)?;
        Ok(Some(next as u32))
    }

    /// Close the items from `start` to the end of the arena into a new row.
    fn close_row(&mut self, start: usize, scan_key: u32) -> Result<(), LimitKind> {
        let row = self.rows.len() as u32;
        self.seen.clear();
        // Deduplicate the kernel.
        let mut w = start;
        for r in start..self.items.len() {
            let it = self.items[r];
            self.grow_seen()?;
            if self.seen.insert(it) {
                self.items[w] = it;
                w += 1;
            }
        }
        self.items.truncate(w);
        self.lexeme_scratch.clear();
        let mut accepting = false;
        let mut i = start;
        while i < self.items.len() {
            let it = self.items[i];
            i += 1;
            let dot = dot_of(it);
            let sym = self.rules.rhs[dot as usize];
            if sym == END {
                let origin = origin_of(it);
                if dot == self.rules.accept_dot {
                    accepting = true;
                }
                if origin == row {
                    // Nullable completions were advanced at prediction time.
                    continue;
                }
                let lhs = self.rules.lhs_at[dot as usize];
                let Some(&o) = self.rows.get(origin as usize) else {
                    continue;
                };
                // Completion reads the origin row's items waiting for `lhs` (a closed row is
                // sorted by the symbol after the dot): one unit of fuel each, so ambiguous
                // grammars (whose rows grow with the input) end in `Fuel`, not in a hang.
                let (lo, hi) = self.waiting(o, lhs);
                self.spend((hi - lo) as u64 + 1)?;
                for j in lo..hi {
                    let w = self.items[j];
                    // (A small row is not sorted: its range is the whole row.)
                    if self.rules.rhs.get(dot_of(w) as usize) == Some(&lhs) {
                        self.add_item(item(dot_of(w) + 1, origin_of(w)))?;
                    }
                }
            } else if sym & TERMINAL != 0 {
                self.lexeme_scratch.push(sym & !TERMINAL);
            } else {
                let rules = Arc::clone(&self.rules);
                self.spend(rules.rules_of(sym).len() as u64 + 1)?;
                for &p in rules.rules_of(sym) {
                    self.add_item(item(p, row))?;
                }
                if rules.nullable.get(sym as usize).copied().unwrap_or(false) {
                    self.add_item(item(dot + 1, origin_of(it)))?;
                }
            }
        }
        // Sort the row by the symbol after the dot: completions into it then read only the
        // items waiting for their symbol ([`Parser::waiting`]), and scans only the items
        // before a terminal (which sort after every nonterminal).
        let n = self.items.len() - start;
        if n > SORTED_ROW {
            // One integer key, computed once per item: the symbol after the dot (a missing
            // one first), then the item.
            self.sort_keys.clear();
            if self.sort_keys.capacity() < n {
                let free = self.free_bytes();
                reserve(&mut self.sort_keys, n, free)?;
                self.sync_lexer_budget();
            }
            let rhs = &self.rules.rhs;
            let keys = &mut self.sort_keys;
            keys.extend(self.items[start..].iter().map(|&it| {
                let sym = rhs
                    .get(dot_of(it) as usize)
                    .map_or(0, |&s| u128::from(s) + 1);
                (sym << 64) | u128::from(it)
            }));
            keys.sort_unstable();
            for (dst, &k) in self.items[start..].iter_mut().zip(keys.iter()) {
                *dst = k as u64;
            }
        }
        self.lexeme_scratch.extend_from_slice(&self.ignore);
        self.lexeme_scratch.sort_unstable();
        self.lexeme_scratch.dedup();
        let lexer_start = match &self.snapshot {
            None => self.lexer.initial_state(&self.lexeme_scratch)?,
            Some(t) => match t.lexer.initial_known(&self.lexeme_scratch) {
                Some(s) => s,
                None => return Err(self.miss()),
            },
        };
        self.next_serial += 1;
        if self.rows.len() == self.rows.capacity() {
            let free = self.free_bytes();
            reserve(&mut self.rows, 1, free)?;
            self.sync_lexer_budget();
        }
        self.rows.push(Row {
            start: start as u32,
            end: self.items.len() as u32,
            lexer_start,
            scan_key,
            accepting,
            serial: self.next_serial,
        });
        Ok(())
    }

    #[inline]
    fn add_item(&mut self, it: u64) -> Result<(), LimitKind> {
        self.grow_seen()?;
        if self.seen.insert(it) {
            self.items_this_step += 1;
            if self.items_this_step > self.max_items_per_mask {
                return Err(LimitKind::ItemsPerMask);
            }
            let row_start = self.rows.last().map_or(0, |r| r.end as usize);
            if self.items.len() - row_start >= self.max_items_per_row {
                return Err(LimitKind::ItemsPerRow);
            }
            self.grow_items(1)?;
            self.items.push(it);
        }
        Ok(())
    }

    /// The arena range of `row`'s items waiting for nonterminal `sym`.
    #[inline]
    fn waiting(&self, row: Row, sym: u32) -> (usize, usize) {
        self.symbol_range(row, sym, sym + 1)
    }

    /// The arena range of `row`'s items whose symbol after the dot is in `from..to` (a
    /// closed row longer than [`SORTED_ROW`] is sorted by that symbol); a shorter row's whole
    /// range, which callers filter.
    fn symbol_range(&self, row: Row, from: u32, to: u32) -> (usize, usize) {
        let (a, b) = (row.start as usize, row.end as usize);
        if b - a <= SORTED_ROW {
            return (a, b);
        }
        let Some(items) = self.items.get(a..b) else {
            return (a, a);
        };
        let sym = |it: &u64| self.rules.rhs.get(dot_of(*it) as usize).copied();
        let lo = items.partition_point(|it| sym(it) < Some(from));
        let hi = items.partition_point(|it| sym(it) < Some(to));
        (a + lo, a + hi.max(lo))
    }

    /// The entry for reaching `state` in `row`, or where a lazy lexeme ends there, the
    /// start of the next one (`None`: that end is rejected).
    #[inline(always)]
    fn entry_for(&mut self, row: u32, state: StateId) -> Result<Option<Entry>, LimitKind> {
        if self.state_flags(state)? & Lexer::LAZY != 0 {
            return self.lazy_end(row, state);
        }
        Ok(Some(Entry { row, state }))
    }

    /// A lazy lexeme ends at this byte: continue from the start of the next one.
    #[inline(never)]
    fn lazy_end(&mut self, row: u32, state: StateId) -> Result<Option<Entry>, LimitKind> {
        let Some(next) = self.finish_lexeme(row, state)? else {
            return Ok(None);
        };
        let start = self.row_start_state(next);
        Ok(Some(Entry {
            row: next,
            state: start,
        }))
    }

    fn row_start_state(&self, row: u32) -> StateId {
        self.rows
            .get(row as usize)
            .map_or(StateId::DEAD, |r| r.lexer_start)
    }

    /// A computed transition to a live state that is not lazy, read from the table.
    #[inline(always)]
    fn fast_entry(&self, top: Entry, byte: u8) -> Option<Entry> {
        match self.fast_step(top, byte) {
            FastStep::Push(e) => Some(e),
            _ => None,
        }
    }

    /// The entry after `byte` from `top` (`None`: rejected).
    #[inline(always)]
    fn next_entry(&mut self, top: Entry, byte: u8) -> Result<Option<Entry>, LimitKind> {
        if let Some(e) = self.fast_entry(top, byte) {
            return Ok(Some(e));
        }
        self.slow_entry(top, byte)
    }

    /// [`Parser::next_entry`] past the table: a transition to compute, a lazy state, or the
    /// end of a lexeme.
    #[inline(never)]
    fn slow_entry(&mut self, top: Entry, byte: u8) -> Result<Option<Entry>, LimitKind> {
        let next = self.lexer_next(top.state, byte)?;
        if next != StateId::DEAD {
            return self.entry_for(top.row, next);
        }
        self.push_after_lexeme(top, byte)
    }

    #[inline(never)]
    fn push_after_lexeme(&mut self, top: Entry, byte: u8) -> Result<Option<Entry>, LimitKind> {
        match self.end_lexeme(top)? {
            Some((row, start)) => self.start_with(row, start, byte),
            None => Ok(None),
        }
    }

    /// Ends the lexeme matched in `top` (if its state accepts): the row to go on from and
    /// its lexer start state, or `None` when the state does not accept or nothing expects
    /// the lexeme.
    #[inline(never)]
    fn end_lexeme(&mut self, top: Entry) -> Result<Option<(u32, StateId)>, LimitKind> {
        if self.state_flags(top.state)? & Lexer::ACCEPT == 0 {
            return Ok(None);
        }
        Ok(self
            .finish_lexeme(top.row, top.state)?
            .map(|row| (row, self.row_start_state(row))))
    }

    /// `byte` read as the first of a lexeme starting in `row` at lexer state `start`.
    #[inline(never)]
    fn start_with(
        &mut self,
        row: u32,
        start: StateId,
        byte: u8,
    ) -> Result<Option<Entry>, LimitKind> {
        let next = self.lexer_next(start, byte)?;
        if next == StateId::DEAD {
            return Ok(None);
        }
        self.entry_for(row, next)
    }
}

impl Stepper for Parser {
    type Entry = Entry;

    fn take_stack(&mut self) -> Vec<Entry> {
        if self.error.is_some() {
            // Pushes fail once a budget ran out: lend an empty stack.
            return Vec::new();
        }
        core::mem::take(&mut self.stack.0)
    }

    fn return_stack(&mut self, stack: Vec<Entry>) {
        if !stack.is_empty() {
            self.stack.0 = stack;
        }
    }

    /// The table decides a computed transition to a live state that is not lazy, and a
    /// dead one out of a state where no lexeme can end (the lexer marks dead transitions
    /// out of accepting states with `SLOW_BIT`: a lexeme may end there).
    #[inline(always)]
    fn fast_step(&self, top: Entry, byte: u8) -> FastStep<Entry> {
        let raw = self.lx().next_raw(top.state, byte);
        if raw & SLOW_BIT != 0 {
            FastStep::Slow
        } else if raw == StateId::DEAD.0 {
            FastStep::Reject
        } else {
            FastStep::Push(Entry {
                row: top.row,
                state: StateId(raw),
            })
        }
    }

    #[inline(always)]
    fn step(&mut self, top: Entry, byte: u8) -> Result<Option<Entry>, StopWalk> {
        self.slow_entry(top, byte).map_err(|kind| {
            self.error = Some(kind);
            StopWalk
        })
    }
}

impl Recognizer for Parser {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        if self.error.is_some() {
            return false;
        }
        let Some(&top) = self.stack.last() else {
            return false;
        };
        match self.next_entry(top, byte) {
            Ok(Some(e)) => {
                if self.stack.len() == self.stack.capacity()
                    && let Err(kind) = self.reserve_stack(1)
                {
                    self.error = Some(kind);
                    return false;
                }
                self.stack.push(e);
                true
            }
            Ok(None) => false,
            Err(kind) => {
                self.error = Some(kind);
                false
            }
        }
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        let keep = self.stack.len().saturating_sub(n).max(1);
        self.stack.truncate(keep);
    }
}

/// Bytes held by the rules (charged to the grammar that shares them).
fn rules_bytes(rules: &Rules) -> usize {
    core::mem::size_of::<Rules>() + rules.bytes_used()
}
