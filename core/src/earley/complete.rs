//! Shortest completions: the shortest byte string that takes the parser from its current
//! state to an accepting one, found by an IDA* search over bytes on the parser itself.
//!
//! The heuristic is a lower bound on the bytes still needed, read off the Earley chart:
//! - [`MinLens`]: the shortest string of each lexeme's regex ([`ExprSet::min_len`], a lower
//!   bound with `&`/`~`), of each nonterminal (Knuth's generalisation of Dijkstra over the
//!   rules) and of each rule suffix (per dot position);
//! - [`RowCosts`], per row `i`: `C(A, i)`, the fewest bytes from "nonterminal `A` started in
//!   row `i` is complete" to the end of the sentence: the minimum, over the items of row `i`
//!   waiting for `A` (`B → γ • A δ`, from row `k`), of `min_len(δ) + C(B, k)`, with
//!   `C(start, 0) = 0` (a fixpoint inside the row for items predicted there), and for each
//!   lexeme `T` the least `min_len(β) + C(A, origin)` over items `A → α • T β`;
//! - at entry (row `r`, lexer state `q`): the least, over the lexemes alive in `q`, of what
//!   that lexeme still has to match (the `min_len` of its derivative) plus row `r`'s cost of
//!   that lexeme (or of starting afresh in row `r`, for an ignored one); 0 at a boundary of an
//!   accepting row.
//!
//! Every accepted continuation finishes some chain of items this way, each lexeme consuming
//! at least its regex's shortest match, so the bound is admissible. The search tries one byte
//! per byte class (the smallest: all bytes of a class step every state alike), in increasing
//! order, deepening the bound `g + h` by the least value that exceeded it, and skips a state
//! (by [`Parser::state_key`]) already reached within as few bytes in this round. The first
//! completion found is therefore the shortest, and among the shortest the least in byte order:
//! a function of the parser's state alone. The parser itself decides every step, so lexer
//! max-munch, lazy and ignored lexemes are honoured and the result really is accepted.
//!
//! Searches of one call (and of later calls from the same top row) share their answers: a
//! state on a completion found before is a leaf of known exact cost (`earley/memo.rs`, which
//! argues why the result is unchanged).
//!
//! Budgets: the search runs inside one step's budgets (`fuel_per_mask`, one unit per byte
//! pushed plus the parser's own work; `max_items_per_mask`; memory, with the transposition
//! table charged to the parser). Rows are walked with loops, never recursion.

use alloc::boxed::Box;
use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;
use hashbrown::HashMap;

use super::memo::{Known, Paths};
use super::{END, Entry, Parser, TERMINAL, dot_of, origin_of};
use crate::error::LimitKind;
use crate::lexer::{Lexer, StateId, table_bytes, vec_bytes};
use crate::toktrie::Recognizer;

/// No string: an unreachable goal.
pub(crate) const NONE: u32 = u32::MAX;

#[inline]
fn add(a: u32, b: u32) -> u32 {
    if a == NONE || b == NONE {
        NONE
    } else {
        a.saturating_add(b).min(NONE - 1)
    }
}

/// Lower bounds on the bytes each grammar symbol derives (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct MinLens {
    /// Per lexeme: the shortest match of its regex (a lower bound).
    lexeme: Vec<u32>,
    /// Per dot position: the shortest string the rest of its rule derives.
    suffix: Vec<u32>,
}

impl MinLens {
    /// The bounds for `p`'s grammar: linear in the rules (plus a heap over nonterminals).
    pub(crate) fn new(p: &Parser) -> MinLens {
        // Completion reads the expression store: only the master tables have it.
        debug_assert!(p.snapshot().is_none());
        let rules = &p.rules;
        let mut memo = HashMap::new();
        let exprs = p.lexer.exprs();
        let lexeme: Vec<u32> = p
            .lexer
            .lexemes()
            .iter()
            .map(|l| exprs.min_len(l.expr, &mut memo))
            .collect();
        let sym_len = |s: u32, nt: &[u32]| -> u32 {
            if s & TERMINAL != 0 {
                lexeme
                    .get((s & !TERMINAL) as usize)
                    .copied()
                    .unwrap_or(NONE)
            } else {
                nt.get(s as usize).copied().unwrap_or(NONE)
            }
        };
        // Knuth's algorithm: a rule fires once all its nonterminals are final; the least
        // tentative value on the heap is final.
        let n = rules.by_lhs_start.len().saturating_sub(1);
        let starts = &rules.by_lhs;
        let mut pending = Vec::with_capacity(starts.len());
        let mut sum = Vec::with_capacity(starts.len());
        let mut uses_start = alloc::vec![0u32; n + 1];
        let mut lhs_of = Vec::with_capacity(starts.len());
        for &p0 in starts {
            let mut k = 0u32;
            let mut s = 0u32;
            let mut i = p0 as usize;
            while let Some(&sym) = rules.rhs.get(i) {
                if sym == END {
                    break;
                }
                if sym & TERMINAL != 0 {
                    s = add(s, sym_len(sym, &[]));
                } else {
                    k += 1;
                    if let Some(c) = uses_start.get_mut(sym as usize + 1) {
                        *c += 1;
                    }
                }
                i += 1;
            }
            pending.push(k);
            sum.push(s);
            lhs_of.push(rules.lhs_at.get(p0 as usize).copied().unwrap_or(0));
        }
        for i in 1..uses_start.len() {
            uses_start[i] += uses_start[i - 1];
        }
        let mut fill = uses_start.clone();
        let mut uses = alloc::vec![0u32; uses_start.last().copied().unwrap_or(0) as usize];
        for (ri, &p0) in starts.iter().enumerate() {
            let mut i = p0 as usize;
            while let Some(&sym) = rules.rhs.get(i) {
                if sym == END {
                    break;
                }
                if sym & TERMINAL == 0
                    && let Some(at) = fill.get_mut(sym as usize)
                {
                    if let Some(slot) = uses.get_mut(*at as usize) {
                        *slot = ri as u32;
                    }
                    *at += 1;
                }
                i += 1;
            }
        }
        let mut nt = alloc::vec![NONE; n];
        let mut heap = BinaryHeap::new();
        for (ri, &k) in pending.iter().enumerate() {
            if k == 0 && sum[ri] != NONE {
                heap.push(Reverse((sum[ri], lhs_of[ri])));
            }
        }
        while let Some(Reverse((v, x))) = heap.pop() {
            let Some(slot) = nt.get_mut(x as usize) else {
                continue;
            };
            if *slot != NONE {
                continue;
            }
            *slot = v;
            let a = uses_start.get(x as usize).copied().unwrap_or(0) as usize;
            let b = uses_start.get(x as usize + 1).copied().unwrap_or(0) as usize;
            for &ri in uses.get(a..b).unwrap_or(&[]) {
                let ri = ri as usize;
                sum[ri] = add(sum[ri], v);
                pending[ri] -= 1;
                if pending[ri] == 0 && sum[ri] != NONE {
                    heap.push(Reverse((sum[ri], lhs_of[ri])));
                }
            }
        }
        let mut suffix = alloc::vec![0u32; rules.rhs.len()];
        let mut acc = 0u32;
        for i in (0..rules.rhs.len()).rev() {
            let sym = rules.rhs[i];
            acc = if sym == END {
                0
            } else {
                add(sym_len(sym, &nt), acc)
            };
            suffix[i] = acc;
        }
        MinLens { lexeme, suffix }
    }

    fn bytes_used(&self) -> usize {
        vec_bytes(&self.lexeme) + vec_bytes(&self.suffix)
    }

    #[inline]
    fn suffix(&self, dot: u32) -> u32 {
        self.suffix.get(dot as usize).copied().unwrap_or(NONE)
    }
}

/// The costs of one row (see the module docs), valid while the row at its index has
/// `serial` (a serial names the whole row stack below it).
#[derive(Debug, Clone, Default)]
struct RowCosts {
    /// 0: not computed (serials start at 1).
    serial: u64,
    /// `(A, C(A, row))` for each nonterminal some item of the row waits for, sorted.
    waiting: Vec<(u32, u32)>,
    /// `(T, cost)` for each lexeme some item of the row expects, sorted.
    terminals: Vec<(u32, u32)>,
    /// The fewest bytes from a lexeme boundary in this row: 0 if accepting.
    start: u32,
}

fn lookup(table: &[(u32, u32)], key: u32) -> u32 {
    table
        .binary_search_by_key(&key, |&(k, _)| k)
        .ok()
        .and_then(|i| table.get(i))
        .map_or(NONE, |&(_, v)| v)
}

/// What shortest-completion searches keep between calls: the grammar's bounds and the costs
/// of the rows they have seen (rebuilt rows get new serials, so stale entries never match).
#[derive(Debug, Clone, Default)]
pub struct Completion {
    mins: Option<MinLens>,
    rows: Vec<RowCosts>,
    /// Expression id → `min_len`, kept from call to call (expressions are only added to a
    /// lexer); cleared by [`Completion::forget_exprs`] when the tables are replaced (a
    /// rebuilt lexer reuses ids).
    expr_memo: HashMap<u32, u32>,
    /// The transposition table of one search round: state key → fewest bytes it was
    /// reached with.
    tt: HashMap<(u64, u32), u32>,
    /// The smallest byte of each lexer byte class, in order (see [`Lexer::class_leaders`]).
    leaders: Vec<u8>,
    /// Exact answers of earlier searches from the same base row, and the keys of the
    /// search's path (see `earley/memo.rs`); made by the first search.
    paths: Option<Box<Paths>>,
}

impl Completion {
    /// Heap bytes held (by capacity).
    pub fn bytes_used(&self) -> usize {
        self.mins.as_ref().map_or(0, MinLens::bytes_used)
            + vec_bytes(&self.rows)
            + self
                .rows
                .iter()
                .map(|r| vec_bytes(&r.waiting) + vec_bytes(&r.terminals))
                .sum::<usize>()
            + table_bytes(self.expr_memo.capacity(), 8)
            + table_bytes(self.tt.capacity(), 16)
            + vec_bytes(&self.leaders)
            + self.paths.as_ref().map_or(0, |m| m.bytes_used())
    }

    /// Start a call, with the parser at the depth every search of the call starts at or
    /// above: the per-call memo cleared, the grammar's bounds computed on first use, the
    /// answers of earlier searches kept if the top row is the same row stack.
    pub(crate) fn begin(&mut self, p: &Parser) {
        debug_assert!(p.snapshot().is_none());
        self.tt.clear();
        if self.mins.is_none() {
            self.mins = Some(MinLens::new(p));
        }
        let leaders = p.lexer.class_leaders();
        let paths = self.paths.get_or_insert_with(Box::default);
        if leaders != self.leaders {
            // Answers are strings of leaders: other classes, other answers.
            paths.memo.forget();
        }
        self.leaders = leaders;
        paths.memo.begin(p.top_row(), p.state_key().0);
    }

    /// Forgets what was learnt of the lexer's expressions and states: call when the
    /// parser's tables are replaced (their ids then name other expressions and states).
    pub(crate) fn forget_exprs(&mut self) {
        self.expr_memo.clear();
        if let Some(m) = self.paths.as_mut() {
            m.memo.forget();
        }
    }

    /// Make the costs of rows `0..=row` current.
    fn ensure_row(&mut self, p: &mut Parser, row: u32) -> Result<(), LimitKind> {
        let row = row as usize;
        let mut from = row + 1;
        while from > 0 {
            let j = from - 1;
            let serial = p.rows.get(j).map_or(0, |r| r.serial);
            if self
                .rows
                .get(j)
                .is_some_and(|c| c.serial == serial && serial != 0)
            {
                break;
            }
            from = j;
        }
        if self.rows.len() <= row {
            self.rows.resize_with(row + 1, RowCosts::default);
        }
        for j in from..=row {
            self.compute_row(p, j)?;
        }
        Ok(())
    }

    fn compute_row(&mut self, p: &mut Parser, j: usize) -> Result<(), LimitKind> {
        let Some(mins) = self.mins.as_ref() else {
            return Ok(());
        };
        let Some(&row) = p.rows.get(j) else {
            return Ok(());
        };
        let mut rc = core::mem::take(&mut self.rows[j]);
        rc.waiting.clear();
        rc.terminals.clear();
        let items = p
            .items
            .get(row.start as usize..row.end as usize)
            .unwrap_or(&[]);
        let rules = &p.rules;
        for &it in items {
            let sym = rules.rhs.get(dot_of(it) as usize).copied().unwrap_or(END);
            if sym != END && sym & TERMINAL == 0 {
                rc.waiting.push((sym, NONE));
            }
        }
        rc.waiting.sort_unstable();
        rc.waiting.dedup();
        // C(B, k): the start symbol completed from row 0 ends the sentence.
        let rows = &self.rows;
        let cost_after = |lhs: u32, k: u32, own: &[(u32, u32)]| -> u32 {
            if lhs == rules.start && k == 0 {
                0
            } else if k as usize == j {
                lookup(own, lhs)
            } else {
                rows.get(k as usize)
                    .map_or(NONE, |c| lookup(&c.waiting, lhs))
            }
        };
        // Relax until nothing changes: items predicted in this row refer to its own costs.
        loop {
            p.lexer.spend(items.len() as u64 + 1)?;
            let mut changed = false;
            for &it in items {
                let dot = dot_of(it);
                let sym = rules.rhs.get(dot as usize).copied().unwrap_or(END);
                if sym == END || sym & TERMINAL != 0 {
                    continue;
                }
                let lhs = rules.lhs_at.get(dot as usize).copied().unwrap_or(0);
                let c = add(
                    mins.suffix(dot + 1),
                    cost_after(lhs, origin_of(it), &rc.waiting),
                );
                if let Ok(i) = rc.waiting.binary_search_by_key(&sym, |&(k, _)| k)
                    && c < rc.waiting[i].1
                {
                    rc.waiting[i].1 = c;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for &it in items {
            let dot = dot_of(it);
            let sym = rules.rhs.get(dot as usize).copied().unwrap_or(END);
            if sym == END || sym & TERMINAL == 0 {
                continue;
            }
            let lhs = rules.lhs_at.get(dot as usize).copied().unwrap_or(0);
            let c = add(
                mins.suffix(dot + 1),
                cost_after(lhs, origin_of(it), &rc.waiting),
            );
            rc.terminals.push((sym & !TERMINAL, c));
        }
        rc.terminals.sort_unstable();
        rc.terminals.dedup_by_key(|&mut (k, _)| k);
        rc.start = if row.accepting {
            0
        } else {
            rc.terminals
                .iter()
                .map(|&(t, c)| add(mins.lexeme.get(t as usize).copied().unwrap_or(NONE), c))
                .min()
                .unwrap_or(NONE)
        };
        rc.serial = row.serial;
        self.rows[j] = rc;
        Ok(())
    }

    /// The lower bound at entry `e` (see the module docs); [`NONE`] when no continuation can
    /// be accepted.
    fn heuristic(&mut self, p: &mut Parser, e: Entry) -> Result<u32, LimitKind> {
        self.ensure_row(p, e.row)?;
        let Some(rc) = self.rows.get(e.row as usize) else {
            return Ok(NONE);
        };
        if e.state == StateId::DEAD {
            return Ok(NONE);
        }
        if p.lexer.flags(e.state) & Lexer::START != 0 {
            return Ok(rc.start);
        }
        let exprs = p.lexer.exprs();
        let mut h = NONE;
        for (lex, expr) in p.lexer.live_pairs(e.state) {
            let d = exprs.min_len(expr, &mut self.expr_memo);
            let mut rest = lookup(&rc.terminals, lex);
            if p.lexer
                .lexemes()
                .get(lex as usize)
                .is_some_and(|l| l.ignore)
            {
                rest = rest.min(rc.start);
            }
            h = h.min(add(d, rest));
        }
        Ok(h)
    }

    /// The lower bound at the parser's current state.
    pub(crate) fn bound_here(&mut self, p: &mut Parser) -> Result<u32, LimitKind> {
        let Some(&top) = p.stack.last() else {
            return Ok(NONE);
        };
        self.heuristic(p, top)
    }

    /// The shortest bytes that take `p` to an accepting state (the least in byte order among
    /// the shortest), `None` when there is none. The parser is back at its depth afterwards.
    /// Call [`Completion::begin`] first (once per call of the matcher) and
    /// [`Parser::start_step`] for the budgets.
    pub(crate) fn shortest(&mut self, p: &mut Parser) -> Result<Option<Vec<u8>>, LimitKind> {
        let base = p.depth();
        let r = self.search(p);
        p.truncate(base);
        r
    }

    fn search(&mut self, p: &mut Parser) -> Result<Option<Vec<u8>>, LimitKind> {
        if p.is_accepting() {
            return Ok(Some(Vec::new()));
        }
        let mut paths = self.paths.take();
        let r = self.search_with(p, paths.as_deref_mut());
        self.paths = paths;
        r
    }

    /// [`Completion::search`] with the memo, if any, taken out.
    fn search_with(
        &mut self,
        p: &mut Parser,
        paths: Option<&mut Paths>,
    ) -> Result<Option<Vec<u8>>, LimitKind> {
        // The memo names states from its base row: only searches at or above it use it.
        let mut paths = paths.and_then(|m| {
            let b = m.memo.base_row().filter(|&b| p.top_row() >= b)?;
            m.keys.clear();
            m.ends.clear();
            p.path_key(b, &mut m.keys);
            m.ends.push(m.keys.len());
            Some((m, b))
        });
        if let Some((m, _)) = paths.as_mut() {
            match m.memo.get(&m.keys) {
                Some(Known::Completion(s)) => return Ok(Some(s.to_vec())),
                Some(Known::Never) => return Ok(None),
                None => {}
            }
        }
        let leaders = core::mem::take(&mut self.leaders);
        let r = self.deepen(p, &leaders, paths.as_mut().map(|(m, b)| (&mut **m, *b)));
        self.leaders = leaders;
        if let Some((m, _)) = paths {
            let free = p.free_bytes();
            let grown = match &r {
                Ok(Some(full)) => m.memo.record(&m.keys, &m.ends, full, free),
                Ok(None) => {
                    let root = m.keys.get(..m.ends.first().copied().unwrap_or(0));
                    m.memo.record_never(root.unwrap_or(&[]), free)
                }
                Err(_) => 0,
            };
            p.set_outside(p.outside().saturating_add(grown));
        }
        r
    }

    /// IDA*: depth-first rounds, each bounded by `g + h <= bound`. With a memo `base`, the
    /// states of the current path are named in `keys` (ending at `ends`: the start's key is
    /// there already), and a state with a known answer is a leaf of exact cost (see
    /// `earley/memo.rs`).
    fn deepen(
        &mut self,
        p: &mut Parser,
        leaders: &[u8],
        mut paths: Option<(&mut Paths, u32)>,
    ) -> Result<Option<Vec<u8>>, LimitKind> {
        let mut bound = self.bound_here(p)?;
        if bound == NONE {
            return Ok(None);
        }
        if let Some(k) = p.error() {
            return Err(k);
        }
        let mut path: Vec<u8> = Vec::new();
        // Per depth: the index of the next leader byte to try.
        let mut frames: Vec<u16> = Vec::new();
        loop {
            self.tt.clear();
            let mut next = NONE;
            frames.clear();
            frames.push(0);
            while let Some(top) = frames.last_mut() {
                let Some(&b) = leaders.get(*top as usize) else {
                    frames.pop();
                    if path.pop().is_some() {
                        p.pop_bytes(1);
                        if let Some((m, _)) = paths.as_mut() {
                            m.ends.pop();
                            m.keys.truncate(m.ends.last().copied().unwrap_or(0));
                        }
                    }
                    continue;
                };
                *top += 1;
                if !p.push_byte(b) {
                    if let Some(k) = p.error() {
                        return Err(k);
                    }
                    continue;
                }
                p.lexer.spend(1)?;
                let g = path.len() as u32 + 1;
                let Some(&e) = p.stack.last() else {
                    return Ok(None);
                };
                if let Some((m, b0)) = paths.as_mut() {
                    p.path_key(*b0, &mut m.scratch);
                    match m.memo.get(&m.scratch) {
                        Some(Known::Never) => {
                            p.pop_bytes(1);
                            continue;
                        }
                        Some(Known::Completion(s)) => {
                            let f = add(g, s.len() as u32);
                            if f > bound {
                                next = next.min(f);
                                p.pop_bytes(1);
                                continue;
                            }
                            let mut full = Vec::with_capacity(path.len() + 1 + s.len());
                            full.extend_from_slice(&path);
                            full.push(b);
                            full.extend_from_slice(s);
                            return Ok(Some(full));
                        }
                        None => {}
                    }
                }
                let h = self.heuristic(p, e)?;
                let f = add(g, h);
                if f > bound {
                    next = next.min(f);
                    p.pop_bytes(1);
                    continue;
                }
                let key = p.state_key();
                if self.tt.get(&key).is_some_and(|&g0| g0 <= g) {
                    p.pop_bytes(1);
                    continue;
                }
                self.grow_tt(p)?;
                self.tt.insert(key, g);
                path.push(b);
                if let Some((m, _)) = paths.as_mut() {
                    m.keys.extend_from_slice(&m.scratch);
                    m.ends.push(m.keys.len());
                }
                if p.is_accepting() {
                    return Ok(Some(path));
                }
                if let Some(k) = p.error() {
                    return Err(k);
                }
                if frames.len() >= u16::MAX as usize {
                    return Err(LimitKind::Fuel);
                }
                frames.push(0);
            }
            if next == NONE {
                return Ok(None);
            }
            bound = next;
        }
    }

    /// Room for one more entry in the transposition table, charged to the parser's budget.
    fn grow_tt(&mut self, p: &mut Parser) -> Result<(), LimitKind> {
        if self.tt.len() < self.tt.capacity() {
            return Ok(());
        }
        let cap = self.tt.capacity();
        let grown = table_bytes(cap + 1, 16).saturating_sub(table_bytes(cap, 16));
        if grown > p.free_bytes() {
            return Err(LimitKind::Memory);
        }
        self.tt.try_reserve(1).map_err(|_| LimitKind::Memory)?;
        let outside = p.outside().saturating_add(grown);
        p.set_outside(outside);
        Ok(())
    }
}

impl Parser {
    /// A key for the parser state after bytes pushed above `base_row` (the top entry's row
    /// at the depth where the caller started): the scan keys of the rows built since, then
    /// the top lexer state. Within one call of the caller, equal keys mean equal states:
    /// each row is a function of the row below and its scan key.
    pub(crate) fn path_key(&self, base_row: u32, out: &mut Vec<u32>) {
        out.clear();
        let Some(&top) = self.stack.last() else {
            return;
        };
        for j in base_row as usize + 1..=top.row as usize {
            out.push(self.rows.get(j).map_or(u32::MAX, |r| r.scan_key));
        }
        out.push(top.state.0);
    }

    /// The row of the top entry.
    pub(crate) fn top_row(&self) -> u32 {
        self.stack.last().map_or(0, |e| e.row)
    }

    /// The top entry's row and lexer state.
    pub(crate) fn top_entry(&self) -> (u32, u32) {
        self.stack.last().map_or((0, 0), |e| (e.row, e.state.0))
    }
}
