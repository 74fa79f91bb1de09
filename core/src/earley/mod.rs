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
//! [`Parser::start_step`]), and the lexer's.

mod rules;
mod statemask;

pub use rules::{END, Rules, TERMINAL};

use alloc::sync::Arc;
use alloc::vec::Vec;
use hashbrown::HashSet;

use crate::error::LimitKind;
use crate::lexer::{Lexer, SLOW_BIT, StateId};
use crate::limits::Limits;
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

/// The parser: rules, the lexer, rows, and the byte stack.
#[derive(Debug, Clone)]
pub struct Parser {
    rules: Arc<Rules>,
    lexer: Lexer,
    ignore: Vec<u32>,
    rows: Vec<Row>,
    items: Vec<u64>,
    stack: Vec<Entry>,
    seen: HashSet<u64>,
    lexeme_scratch: Vec<u32>,
    max_items_per_row: usize,
    max_items_per_mask: usize,
    items_this_step: usize,
    error: Option<LimitKind>,
    next_serial: u64,
    state_masks: statemask::StateMasks,
}

impl Parser {
    /// A parser at the start of input.
    pub fn new(rules: Arc<Rules>, lexer: Lexer, limits: &Limits) -> Result<Parser, LimitKind> {
        let ignore = lexer
            .lexemes()
            .iter()
            .enumerate()
            .filter(|(_, l)| l.ignore)
            .map(|(i, _)| i as u32)
            .collect();
        let mut p = Parser {
            rules,
            lexer,
            ignore,
            rows: Vec::new(),
            items: Vec::new(),
            stack: Vec::new(),
            seen: HashSet::new(),
            lexeme_scratch: Vec::new(),
            max_items_per_row: limits.max_items_per_row,
            max_items_per_mask: limits.max_items_per_mask,
            items_this_step: 0,
            error: None,
            next_serial: 0,
            state_masks: statemask::StateMasks::new(limits.max_memory_bytes),
        };
        p.start_step();
        let start = p.rules.start;
        p.items.push(item(
            p.rules.rules_of(start).first().copied().unwrap_or(0),
            0,
        ));
        p.close_row(0, u32::MAX)?;
        let first = p.rows.first().map_or(StateId::DEAD, |r| r.lexer_start);
        p.stack.push(Entry {
            row: 0,
            state: first,
        });
        Ok(p)
    }

    /// Reset the per-step budgets (call before each mask or token).
    pub fn start_step(&mut self) {
        self.items_this_step = 0;
        self.error = None;
        self.lexer.refuel();
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
        self.lexer.slice_for(state)
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

    /// The lexer (for statistics).
    pub fn lexer(&self) -> &Lexer {
        &self.lexer
    }

    /// Rows and items held (statistics).
    pub fn bytes_used(&self) -> usize {
        self.items.len() * 8
            + self.rows.len() * 20
            + self.stack.len() * 8
            + self.lexer.bytes_used()
            + self.state_masks.bytes_used()
    }

    /// Lexer states with a remembered mask (see [`Parser::state_mask_walk`]).
    pub fn state_masks(&self) -> usize {
        self.state_masks.len()
    }

    /// Whether the input so far is a complete sentence.
    pub fn is_accepting(&mut self) -> bool {
        let Some(&top) = self.stack.last() else {
            return false;
        };
        let flags = self.lexer.flags(top.state);
        if flags & Lexer::START != 0 {
            return self.row_accepting(top.row);
        }
        if flags & Lexer::ACCEPT == 0 {
            return false;
        }
        match self.finish_lexeme(top.row, top.state) {
            Ok(Some(row)) => self.row_accepting(row),
            _ => false,
        }
    }

    fn row_accepting(&self, row: u32) -> bool {
        self.rows.get(row as usize).is_some_and(|r| r.accepting)
    }

    /// Complete the lexeme matched in `state` after `row`: the row to continue from, or
    /// `None` when no item expects it. An ignored lexeme continues in `row` itself.
    fn finish_lexeme(&mut self, row: u32, state: StateId) -> Result<Option<u32>, LimitKind> {
        let set = self.lexer.accept_set_id(state);
        let flags = self.lexer.flags(state);
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
        for i in from.start as usize..from.end as usize {
            let it = self.items[i];
            let sym = self.rules.rhs[dot_of(it) as usize];
            if sym != END
                && sym & TERMINAL != 0
                && self.lexer.accept_set(set).contains(&(sym & !TERMINAL))
            {
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
                for j in o.start as usize..o.end as usize {
                    let w = self.items[j];
                    if self.rules.rhs[dot_of(w) as usize] == lhs {
                        self.add_item(item(dot_of(w) + 1, origin_of(w)))?;
                    }
                }
            } else if sym & TERMINAL != 0 {
                self.lexeme_scratch.push(sym & !TERMINAL);
            } else {
                let rules = Arc::clone(&self.rules);
                for &p in rules.rules_of(sym) {
                    self.add_item(item(p, row))?;
                }
                if rules.nullable.get(sym as usize).copied().unwrap_or(false) {
                    self.add_item(item(dot + 1, origin_of(it)))?;
                }
            }
        }
        self.lexeme_scratch.extend_from_slice(&self.ignore);
        self.lexeme_scratch.sort_unstable();
        self.lexeme_scratch.dedup();
        let lexer_start = self.lexer.initial_state(&self.lexeme_scratch)?;
        self.next_serial += 1;
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
        if self.seen.insert(it) {
            self.items_this_step += 1;
            if self.items_this_step > self.max_items_per_mask {
                return Err(LimitKind::ItemsPerMask);
            }
            let row_start = self.rows.last().map_or(0, |r| r.end as usize);
            if self.items.len() - row_start >= self.max_items_per_row {
                return Err(LimitKind::ItemsPerRow);
            }
            self.items.push(it);
        }
        Ok(())
    }

    /// The entry for reaching `state` in `row`, or where a lazy lexeme ends there, the
    /// start of the next one (`None`: that end is rejected).
    #[inline(always)]
    fn entry_for(&mut self, row: u32, state: StateId) -> Result<Option<Entry>, LimitKind> {
        if self.lexer.flags(state) & Lexer::LAZY != 0 {
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
        let next = self.lexer.next(top.state, byte)?;
        if next != StateId::DEAD {
            return self.entry_for(top.row, next);
        }
        self.push_after_lexeme(top, byte)
    }

    #[inline(never)]
    fn push_after_lexeme(&mut self, top: Entry, byte: u8) -> Result<Option<Entry>, LimitKind> {
        if self.lexer.flags(top.state) & Lexer::ACCEPT == 0 {
            return Ok(None);
        }
        let Some(row) = self.finish_lexeme(top.row, top.state)? else {
            return Ok(None);
        };
        let start = self.row_start_state(row);
        let next = self.lexer.next(start, byte)?;
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
        core::mem::take(&mut self.stack)
    }

    fn return_stack(&mut self, stack: Vec<Entry>) {
        if !stack.is_empty() {
            self.stack = stack;
        }
    }

    /// The table decides a computed transition to a live state that is not lazy, and a
    /// dead one out of a state where no lexeme can end (the lexer marks dead transitions
    /// out of accepting states with `SLOW_BIT`: a lexeme may end there).
    #[inline(always)]
    fn fast_step(&self, top: Entry, byte: u8) -> FastStep<Entry> {
        let raw = self.lexer.next_raw(top.state, byte);
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
