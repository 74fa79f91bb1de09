//! The slice check on the DFA itself, for slices of the form `X{1,n}` and `X+`.
//!
//! Every default slice repeats one *unit* `X` (a JSON string-body character). Whether every
//! string of `X{1,n}` can be read from lexer state `q` without a dead or lazy transition is a
//! question about the graph whose edges are "read one `X`": `q` subsumes `X{1,n}` iff no
//! *dying* state (one with some `X` string that kills it) lies fewer than `n` edges from `q`.
//! We call that distance the *depth* of `q` (∞ when no dying state is reachable).
//!
//! Unlike the generic check on expression pairs ([`crate::regex::ExprSet::is_prefix_contained`]),
//! everything here is memoised across states and masks:
//! - the unit's own automaton over the lexer's byte classes is built once;
//! - each lexer state's `X`-successors are computed once, by following (cached) lexer
//!   transitions;
//! - a depth search from `q` leaves a lower bound on every state it visits (`depth(r) >=
//!   depth(q) - dist(q, r)`), so the states the next masks start from are usually answered
//!   without searching.
//!
//! A state the search cannot settle within its budget is answered conservatively (a smaller
//! slice or none): the slice is then walked like the rest of the trie, so masks stay exact.

use alloc::vec::Vec;
use hashbrown::HashSet;

use super::{Lexer, START_MARK, StateId};
use crate::error::LimitKind;
use crate::regex::ExprId;

/// Most states of a unit's automaton (a UTF-8 character class needs fewer than ten).
const MAX_UNIT_STATES: usize = 64;
/// Most (unit state, lexer state) pairs explored for one state's successors.
const MAX_SUCC_PAIRS: usize = 4096;
/// Budgets of one depth search: states expanded, and lexer states it may build. Building
/// states is what costs; the states within a token's length of `q` are the ones the walk
/// needs anyway, so a search up to [`TOKEN_CHARS`] may build many, a deeper or unbounded
/// one only a few (it then succeeds over the next masks, as its frontier advances with the
/// output).
const MAX_EXPANSIONS: usize = 4096;
const MAX_NEW_STATES: usize = 1024;
const MAX_NEW_STATES_DEEP: usize = 512;
const MAX_NEW_STATES_INF: usize = 64;
const MAX_EXPANSIONS_INF: usize = 256;
/// The bounds of a quick unit's search ([`crate::slicer::TAG_FREE_TEXT`]'s): free text
/// until a `<` trigger settles in the state itself and the few partial-UTF-8 states its
/// walk builds anyway, while free text that a trigger without `<` ends (`{"name": `) would
/// explore up to the bounds above, building lexer states for every class at each, only to
/// fail: 8 new states cost 2.1 ms more on the first mask of Llama 3's JSON tool calls, 4
/// cost nothing measurable.
const MAX_EXPANSIONS_QUICK: usize = 32;
const MAX_NEW_STATES_QUICK: usize = 4;
/// Expression fuel one depth search may burn. States cost ~100-400 fuel each in
/// counted-word patterns (a 1,024-state search stays under it); a few grammars have states
/// costing thousands (large unions of patterned strings), where the state budget alone let
/// one search take 70 ms.
const MAX_SEARCH_FUEL: u64 = 250_000;
/// Characters in a typical long token.
const TOKEN_CHARS: u32 = 16;

/// Most expressions a unit remembers as reproduced by every unit string (see
/// `Lexer::unit_immortal`).
const MAX_IMMORTAL: usize = 32;
/// Rounds of narrowing one candidate of that check.
const IMMORTAL_ROUNDS: usize = 3;
/// Most (unit state, expression) pairs one round of it explores.
const MAX_CLOSURE_PAIRS: usize = 256;

/// Depth word: bits 0..16 a proven lower bound on the depth ([`INF`] = no dying state
/// reachable), [`EXACT`] when it is the depth itself, [`NO_INF`] when a search for an
/// unbounded slice already ran out of budget from a state that reaches this one, [`NO_DEEP`]
/// the same for a slice longer than a token, [`TRIED`] when `Lexer::unit_immortal` ran on it.
const DEPTH_MASK: u32 = 0xFFFF;
const INF: u32 = 0xFFFF;
const EXACT: u32 = 1 << 16;
const NO_INF: u32 = 1 << 17;
/// Depth word flag: the immortality check ran on this state.
const TRIED: u32 = 1 << 18;
const NO_DEEP: u32 = 1 << 19;

/// Whether an earlier search that reached a state with depth word `word` gave up on `goal`.
fn given_up(word: u32, goal: u32) -> bool {
    if goal == INF {
        word & NO_INF != 0
    } else {
        goal > TOKEN_CHARS && word & NO_DEEP != 0
    }
}

/// Successor list marker: not computed yet.
const SUCC_UNKNOWN: (u32, u32) = (u32::MAX, 0);
/// Successor list marker: some unit string kills the state.
const SUCC_DYING: (u32, u32) = (u32::MAX - 1, 0);

/// One unit `X` and what is known about the lexer states' `X`-graph.
#[derive(Debug, Clone)]
pub(super) struct Unit {
    expr: ExprId,
    /// The unit's automaton: `xnext[x * classes + class]`, state 0 dead, state 1 the start.
    xnext: Vec<u16>,
    /// Per unit state: a whole `X` string has been read.
    xfinal: Vec<bool>,
    /// Per unit state: some byte continues it.
    xmore: Vec<bool>,
    /// Per lexer state: `(start, len)` of its successors in `arena`, or a marker.
    succ: Vec<(u32, u32)>,
    arena: Vec<u32>,
    /// Per lexer state: the depth word (0 = nothing known).
    depth: Vec<u32>,
    /// Per lexer state: the search that last visited it (a generation number, see `unit_depth`).
    mark: Vec<u32>,
    generation: u32,
    /// Scratch: the search's visited states with their distances, and the pair stack and
    /// set of the successor exploration.
    visited: Vec<(u32, u32)>,
    pairs: Vec<(u16, u32)>,
    seen: HashSet<(u16, u32)>,
    /// Expressions every unit string reproduces (their derivatives by one contain them):
    /// a state with a pair containing one of them never dies.
    immortal: Vec<ExprId>,
    /// Searches give up early ([`MAX_EXPANSIONS_QUICK`], [`MAX_NEW_STATES_QUICK`]): the
    /// unit of [`crate::slicer::TAG_FREE_TEXT`].
    quick: bool,
}

/// What one unit string does to a candidate of `Lexer::unit_immortal`.
enum Closure {
    /// Every unit string's derivative contains the candidate.
    Closed,
    /// This derivative does not (as far as the syntactic test shows).
    Escapes(ExprId),
    /// Too many pairs to tell.
    Unknown,
}

/// A slice the unit check can answer: its unit and its largest count (`None` = unbounded).
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    unit: usize,
    max: Option<u32>,
}

impl Shape {
    /// `X+` (no upper count).
    pub(super) fn is_unbounded(self) -> bool {
        self.max.is_none()
    }

    /// The depth this slice needs.
    fn goal(self) -> u32 {
        self.max.map_or(INF, |n| n.min(INF - 1))
    }
}

impl Unit {
    fn new(expr: ExprId) -> Unit {
        Unit {
            expr,
            xnext: Vec::new(),
            xfinal: Vec::new(),
            xmore: Vec::new(),
            succ: Vec::new(),
            arena: Vec::new(),
            depth: Vec::new(),
            mark: Vec::new(),
            generation: 0,
            visited: Vec::new(),
            pairs: Vec::new(),
            seen: HashSet::new(),
            immortal: Vec::new(),
            quick: false,
        }
    }

    fn grow(&mut self, states: usize) {
        if self.succ.len() < states {
            self.succ.resize(states, SUCC_UNKNOWN);
            self.depth.resize(states, 0);
            self.mark.resize(states, 0);
        }
    }

    /// Heap bytes held, buffers by capacity.
    pub(super) fn bytes_used(&self) -> usize {
        use super::{table_bytes, vec_bytes};
        vec_bytes(&self.xnext)
            + vec_bytes(&self.xfinal)
            + vec_bytes(&self.xmore)
            + vec_bytes(&self.succ)
            + vec_bytes(&self.arena)
            + vec_bytes(&self.depth)
            + vec_bytes(&self.mark)
            + vec_bytes(&self.visited)
            + vec_bytes(&self.pairs)
            + table_bytes(self.seen.capacity(), 8)
            + vec_bytes(&self.immortal)
    }
}

/// Split the slice regexes into units: `Some(shape)` for `X{m,n}` / `X+` with `m <= 1` and
/// `X` not nullable, `None` for slices the generic check handles.
pub(super) fn shapes(lexer: &Lexer) -> (Vec<Unit>, Vec<Option<Shape>>) {
    let mut units: Vec<Unit> = Vec::new();
    let mut shapes = Vec::with_capacity(lexer.slice_exprs.len());
    for (k, &e) in lexer.slice_exprs.iter().enumerate() {
        let shape = match lexer.exprs.as_repeat(e) {
            Some((x, min, max)) if min <= 1 && !lexer.exprs.is_nullable(x) => {
                let unit = match units.iter().position(|u| u.expr == x) {
                    Some(i) => i,
                    None => {
                        let mut u = Unit::new(x);
                        u.quick = lexer.is_tag_slice(k);
                        units.push(u);
                        units.len() - 1
                    }
                };
                Some(Shape { unit, max })
            }
            _ => None,
        };
        shapes.push(shape);
    }
    (units, shapes)
}

impl Lexer {
    /// Build unit `u`'s automaton over the lexer's classes (once). `false` when it has too
    /// many states for this check.
    fn unit_automaton(&mut self, u: &mut Unit) -> Result<bool, LimitKind> {
        if !u.xfinal.is_empty() {
            return Ok(u.xfinal.len() <= MAX_UNIT_STATES);
        }
        let nc = self.num_classes;
        let mut ids: Vec<ExprId> = alloc::vec![ExprId::NOTHING, u.expr];
        let mut i = 1;
        let mut xnext = alloc::vec![0u16; 2 * nc];
        while i < ids.len() {
            for c in 0..nc {
                let b = self.classes.representative(c as u8);
                let d = self.exprs.derivative(ids[i], b)?;
                let j = match ids.iter().position(|&x| x == d) {
                    Some(j) => j,
                    None => {
                        if ids.len() >= MAX_UNIT_STATES {
                            u.xfinal = alloc::vec![false; MAX_UNIT_STATES + 1];
                            return Ok(false);
                        }
                        ids.push(d);
                        xnext.resize(ids.len() * nc, 0);
                        ids.len() - 1
                    }
                };
                xnext[i * nc + c] = j as u16;
            }
            i += 1;
        }
        u.xfinal = ids.iter().map(|&x| self.exprs.is_nullable(x)).collect();
        u.xmore = (0..ids.len())
            .map(|x| (0..nc).any(|c| xnext[x * nc + c] != 0))
            .collect();
        u.xnext = xnext;
        Ok(true)
    }

    /// The `X`-successors of `q` (states after one whole unit string), or `None` when some
    /// unit string kills `q` (or the exploration is too large to finish).
    fn unit_successors(
        &mut self,
        u: &mut Unit,
        q: StateId,
    ) -> Result<Option<(u32, u32)>, LimitKind> {
        let known = u.succ[q.as_usize()];
        if known == SUCC_DYING {
            return Ok(None);
        }
        if known != SUCC_UNKNOWN {
            return Ok(Some(known));
        }
        let nc = self.num_classes;
        let start = u.arena.len();
        let mut pairs = core::mem::take(&mut u.pairs);
        let mut seen = core::mem::take(&mut u.seen);
        pairs.clear();
        seen.clear();
        pairs.push((1, q.0));
        let mut explored = 0usize;
        let mut dying = false;
        'outer: while let Some((x, s)) = pairs.pop() {
            for c in 0..nc {
                let x2 = u.xnext[x as usize * nc + c];
                if x2 == 0 {
                    continue;
                }
                let b = self.classes.representative(c as u8);
                let s2 = self.next(StateId(s), b)?;
                if s2 == StateId::DEAD || self.flags(s2) & Lexer::LAZY != 0 {
                    dying = true;
                    break 'outer;
                }
                if u.xfinal[x2 as usize] && !u.arena[start..].contains(&s2.0) {
                    u.arena.push(s2.0);
                }
                if u.xmore[x2 as usize] && seen.insert((x2, s2.0)) {
                    explored += 1;
                    if explored > MAX_SUCC_PAIRS {
                        dying = true;
                        break 'outer;
                    }
                    pairs.push((x2, s2.0));
                }
            }
        }
        u.pairs = pairs;
        u.seen = seen;
        // `next` may have built states: make room for them.
        u.grow(self.states.len());
        if dying {
            u.arena.truncate(start);
            u.succ[q.as_usize()] = SUCC_DYING;
            return Ok(None);
        }
        let entry = (start as u32, (u.arena.len() - start) as u32);
        u.succ[q.as_usize()] = entry;
        Ok(Some(entry))
    }

    /// Whether no unit string ever kills `q` (depth ∞), shown without searching the state
    /// graph: some pair of `q` contains an expression `C` that every unit string reproduces
    /// (the derivative of `C` by any unit string contains `C`, syntactically). By induction
    /// that pair's derivative by any `X` string contains the non-empty `C`, so the state
    /// never dies. A string with an unanchored pattern, `"[^"]*"` intersected with
    /// `.*(us-east-1a|...).*`, has a closure of hundreds of states (every partial match of
    /// every alternative) which the depth search cannot settle, while `C`, the part without
    /// the partial matches, is found at once.
    ///
    /// `C` is found by narrowing: start from what the pair shares with its derivative by
    /// one unit string ([`ExprSet::common_part`]), and while some unit string's derivative
    /// escapes it, keep what the candidate shares with that derivative. Candidates proven
    /// are remembered per unit, so the states after the next tokens are answered by one
    /// inclusion test.
    ///
    /// A pair `A ∩ ¬F` with `F` a finite set of literals (a generic key beside the listed
    /// keys) is checked on `A` ([`ExprSet::without_finite_exclusions`]): if `C ⊆ A` is
    /// reproduced by every unit `x` (`x C ⊆ C`), `C` is infinite, so `∂_w A ⊇ C` minus the
    /// finite `∂_w F` is never empty.
    ///
    /// When no pair has such a `C`, their union may (a key matching `^[.]` beside the keys
    /// matching no pattern: `.` kills one, every other character the other). The same
    /// argument holds for `C` inside the union of the pairs' `A`s: `∂_w` of the state's union
    /// contains `C` minus finitely many strings.
    fn unit_immortal(&mut self, u: &mut Unit, q: StateId) -> Result<bool, LimitKind> {
        if self.tracks_lazy_lexeme(q) {
            return Ok(false);
        }
        let n = self.pairs.get(q.0).len();
        let candidate = |lx: &mut Lexer, i: usize| -> Result<Option<ExprId>, LimitKind> {
            let e = lx
                .pairs
                .get(q.0)
                .get(i)
                .filter(|&&(lex, e)| lex != START_MARK && !lx.exprs.is_literal_set(e))
                .map(|&(_, e)| e);
            match e {
                Some(e) => lx.exprs.without_finite_exclusions(e).map(Some),
                None => Ok(None),
            }
        };
        let mut cands = Vec::new();
        for i in 0..n {
            if let Some(e) = candidate(self, i)? {
                cands.push(e);
            }
        }
        for &e in &cands {
            if u.immortal
                .iter()
                .any(|&c| self.exprs.is_syntactic_subset(c, e))
            {
                return Ok(true);
            }
        }
        // A one-byte unit string to start from.
        let nc = self.num_classes;
        let Some(first) = (0..nc).find(|&c| {
            let x = u.xnext.get(nc + c).copied().unwrap_or(0) as usize;
            x != 0 && u.xfinal.get(x).copied().unwrap_or(false)
        }) else {
            return Ok(false);
        };
        let first = self.classes.representative(first as u8);
        for &e in &cands {
            if self.reproduced_within(u, e, first)? {
                return Ok(true);
            }
        }
        // No pair lives on its own, but together they may: a key matching a pattern beside
        // the keys matching none (`"^[.]"` and the rest), one dies where the other lives.
        if cands.len() > 1 {
            let all = self.exprs.mk_or(&cands)?;
            if u.immortal
                .iter()
                .any(|&c| self.exprs.is_syntactic_subset(c, all))
            {
                return Ok(true);
            }
            return self.reproduced_within(u, all, first);
        }
        Ok(false)
    }

    /// Whether some `C` contained in `e`, found by narrowing from what `e` shares with its
    /// derivative by `first` (a one-byte unit string), is reproduced by every unit string;
    /// remembered in the unit when it is.
    fn reproduced_within(&mut self, u: &mut Unit, e: ExprId, first: u8) -> Result<bool, LimitKind> {
        let d = self.exprs.derivative(e, first)?;
        let mut cand = self.exprs.common_part(e, d)?;
        for _ in 0..IMMORTAL_ROUNDS {
            let Some(c) = cand.filter(|&c| c != ExprId::NOTHING) else {
                break;
            };
            match self.unit_closure(u, c)? {
                Closure::Closed => {
                    let empty = self.exprs.has_and_not(c)
                        && self.exprs.is_empty_language_with(c, Some(&self.classes))?;
                    if empty || !self.exprs.is_syntactic_subset(c, e) {
                        break;
                    }
                    if u.immortal.len() < MAX_IMMORTAL {
                        u.immortal.push(c);
                    }
                    return Ok(true);
                }
                Closure::Escapes(d) => cand = self.exprs.common_part(c, d)?,
                Closure::Unknown => break,
            }
        }
        Ok(false)
    }

    /// Whether the derivative of `c` by every unit string contains `c`.
    fn unit_closure(&mut self, u: &mut Unit, c: ExprId) -> Result<Closure, LimitKind> {
        let nc = self.num_classes;
        let mut stack = core::mem::take(&mut u.pairs);
        let mut seen = core::mem::take(&mut u.seen);
        stack.clear();
        seen.clear();
        stack.push((1, c.0));
        let mut result = Closure::Closed;
        'outer: while let Some((x, e)) = stack.pop() {
            let e = ExprId(e);
            for class in 0..nc {
                let x2 = u.xnext.get(x as usize * nc + class).copied().unwrap_or(0);
                if x2 == 0 {
                    continue;
                }
                let b = self.classes.representative(class as u8);
                let d = self.exprs.derivative(e, b)?;
                if d == ExprId::NOTHING {
                    result = Closure::Escapes(d);
                    break 'outer;
                }
                if u.xfinal.get(x2 as usize).copied().unwrap_or(false)
                    && !self.exprs.is_syntactic_subset(c, d)
                {
                    result = Closure::Escapes(d);
                    break 'outer;
                }
                if u.xmore.get(x2 as usize).copied().unwrap_or(false) && seen.insert((x2, d.0)) {
                    if seen.len() > MAX_CLOSURE_PAIRS {
                        result = Closure::Unknown;
                        break 'outer;
                    }
                    stack.push((x2, d.0));
                }
            }
        }
        u.pairs = stack;
        u.seen = seen;
        Ok(result)
    }

    /// A proven lower bound on `q`'s depth, searching breadth-first until `goal` is proven,
    /// the depth is settled, or the budget runs out; and whether it is the depth itself.
    fn unit_depth(
        &mut self,
        u: &mut Unit,
        q: StateId,
        goal: u32,
    ) -> Result<(u32, bool), LimitKind> {
        u.grow(self.states.len());
        let word = u.depth[q.as_usize()];
        let lower = word & DEPTH_MASK;
        let goal = if given_up(word, goal) {
            lower.max(1)
        } else {
            goal
        };
        if word & EXACT != 0 || lower >= goal {
            return Ok((lower, word & EXACT != 0));
        }
        u.generation = u.generation.wrapping_add(1);
        if u.generation == 0 {
            u.mark.fill(0);
            u.generation = 1;
        }
        let generation = u.generation;
        let (max_expansions, max_new) = if cfg!(feature = "structural") && u.quick {
            (MAX_EXPANSIONS_QUICK, MAX_NEW_STATES_QUICK)
        } else if goal == INF {
            (MAX_EXPANSIONS_INF, MAX_NEW_STATES_INF)
        } else if goal > TOKEN_CHARS {
            (MAX_EXPANSIONS, MAX_NEW_STATES_DEEP)
        } else {
            (MAX_EXPANSIONS, MAX_NEW_STATES)
        };
        let states_before = self.states.len();
        let fuel_before = self.exprs.fuel_left();
        let mut visited = core::mem::take(&mut u.visited);
        visited.clear();
        visited.push((q.0, 0));
        u.mark[q.as_usize()] = generation;
        // Distance to the nearest dying state found so far, and whether states were skipped
        // on a lower bound only (then `bound` is not known to be the minimum).
        let mut bound = INF;
        let mut pruned = false;
        let mut exhausted = false;
        let mut head = 0usize;
        let mut result = None;
        while head < visited.len() {
            let (r, dist) = visited[head];
            if dist >= bound {
                break;
            }
            if dist >= goal {
                // Everything closer than `goal` is alive.
                result = Some(goal);
                break;
            }
            // Past three quarters of the state budget, proofs would hasten a rebuild of the
            // tables (see `Matcher`); matchers start from tables at most half full.
            if head >= max_expansions
                || self.states.len() - states_before > max_new
                || fuel_before.saturating_sub(self.exprs.fuel_left()) > MAX_SEARCH_FUEL
                || self.states.len() > self.max_states / 4 * 3
            {
                exhausted = true;
                result = Some(dist);
                break;
            }
            head += 1;
            let Some((start, len)) = self.unit_successors(u, StateId(r))? else {
                bound = bound.min(dist);
                continue;
            };
            for k in start..start + len {
                let s = u.arena[k as usize];
                if u.mark[s as usize] == generation {
                    continue;
                }
                u.mark[s as usize] = generation;
                let w = u.depth[s as usize];
                let d = dist + 1;
                if w & EXACT != 0 {
                    bound = bound.min(d.saturating_add(w & DEPTH_MASK).min(INF));
                    continue;
                }
                if d.saturating_add(w & DEPTH_MASK) >= goal {
                    pruned = true;
                    continue;
                }
                visited.push((s, d));
            }
        }
        let (value, exact) = match result {
            Some(v) => (v.min(bound), false),
            // The search settled: every state closer than `bound` was expanded.
            None if pruned => (bound.min(goal), bound <= goal),
            None => (bound, true),
        };
        // depth(r) >= depth(q) - dist(q, r) for every state the search reached.
        for &(r, dist) in &visited {
            let w = &mut u.depth[r as usize];
            let derived = if value == INF {
                INF
            } else {
                value - dist.min(value)
            };
            let mut flags = *w & (EXACT | NO_INF | NO_DEEP | TRIED);
            if exhausted && goal == INF {
                flags |= NO_INF;
            } else if exhausted && goal > TOKEN_CHARS {
                // Word-counted strings under a length bound (`(\S+\s+){0,199}\S+` within
                // 300 characters) build ~20 states per character; a search for `{1,30}`
                // that gave up would give up again from each next state, a few ms per
                // mask. The states it reached take the shorter slices instead.
                flags |= NO_DEEP;
            }
            if exact && (value == INF || dist == 0) {
                flags |= EXACT;
            }
            *w = derived.max(*w & DEPTH_MASK) | flags;
        }
        u.visited = visited;
        Ok((value, exact))
    }

    /// Whether every string of slice `shape` can be read from `q` without a dead or lazy
    /// transition: `Some(true)` proven, `Some(false)` disproven, `None` when the search ran
    /// out of budget or the unit is not suited to this check.
    pub(super) fn unit_subsumes(
        &mut self,
        shape: Shape,
        q: StateId,
    ) -> Result<Option<bool>, LimitKind> {
        let mut units = core::mem::take(&mut self.units);
        let result = match units.get_mut(shape.unit) {
            Some(u) => self.unit_subsumes_with(u, shape, q),
            None => Ok(None),
        };
        self.units = units;
        result
    }

    /// Whether the DFA check can handle slice `shape` (its unit's automaton is small).
    pub(super) fn unit_usable(&mut self, shape: Shape) -> Result<bool, LimitKind> {
        let mut units = core::mem::take(&mut self.units);
        let result = match units.get_mut(shape.unit) {
            Some(u) => self.unit_automaton(u),
            None => Ok(false),
        };
        self.units = units;
        result
    }

    /// [`Lexer::unit_subsumes`] from what earlier searches left, without searching.
    pub(super) fn unit_known(&mut self, shape: Shape, q: StateId) -> Option<bool> {
        let states = self.states.len();
        let u = self.units.get_mut(shape.unit)?;
        u.grow(states);
        Self::unit_memo(u, shape, q)
    }

    fn unit_memo(u: &Unit, shape: Shape, q: StateId) -> Option<bool> {
        let word = *u.depth.get(q.as_usize())?;
        let goal = shape.goal();
        let lower = word & DEPTH_MASK;
        if lower >= goal {
            Some(true)
        } else if word & EXACT != 0 || given_up(word, goal) {
            // Exactly known, or a search from an earlier state that reaches this one gave
            // up on `+` (or on a slice this long): then so does this state, without a
            // search (or the caller's fallback) of its own.
            Some(false)
        } else {
            None
        }
    }

    fn unit_subsumes_with(
        &mut self,
        u: &mut Unit,
        shape: Shape,
        q: StateId,
    ) -> Result<Option<bool>, LimitKind> {
        if !self.unit_automaton(u)? {
            return Ok(None);
        }
        let goal = shape.goal();
        if let Some(known) = Self::unit_memo(u, shape, q) {
            return Ok(Some(known));
        }
        u.grow(self.states.len());
        if u.depth[q.as_usize()] & TRIED == 0 {
            u.depth[q.as_usize()] |= TRIED;
            if self.unit_immortal(u, q)? {
                u.depth[q.as_usize()] |= INF | EXACT;
                return Ok(Some(true));
            }
        }
        let (depth, exact) = self.unit_depth(u, q, goal)?;
        Ok(if depth >= goal {
            Some(true)
        } else if exact {
            Some(false)
        } else {
            None
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::LexemeInfo;
    use crate::limits::Limits;
    use crate::regex::{ExprSet, PatternFlags};

    /// A lexer with one lexeme and the default slices in their defining order
    /// (`{1,10}`, `{1,30}`, `+`), in the state after the opening quote.
    fn after_quote(pattern: &str) -> (Lexer, StateId) {
        after_quote_with(|exprs| {
            exprs
                .compile_pattern(pattern, PatternFlags::default())
                .unwrap()
        })
    }

    /// [`after_quote`] for a lexeme built by `build`.
    fn after_quote_with(build: impl FnOnce(&mut ExprSet) -> ExprId) -> (Lexer, StateId) {
        after_quote_lexemes(|exprs| alloc::vec![build(exprs)])
    }

    /// [`after_quote_with`] for several lexemes, all allowed.
    fn after_quote_lexemes(
        build: impl FnOnce(&mut ExprSet) -> alloc::vec::Vec<ExprId>,
    ) -> (Lexer, StateId) {
        let limits = Limits::default();
        let mut exprs = ExprSet::new(&limits);
        let flags = PatternFlags::default();
        let lexemes: alloc::vec::Vec<LexemeInfo> = build(&mut exprs)
            .into_iter()
            .map(|expr| LexemeInfo {
                expr,
                lazy: false,
                ignore: false,
            })
            .collect();
        let ids: alloc::vec::Vec<u32> = (0..lexemes.len() as u32).collect();
        // The JSON text slices (the default ones but the free-text slice, which these
        // tests are not about).
        let slices = crate::slicer::default_slices()
            .iter()
            .filter(|p| *p != crate::slicer::TAG_FREE_TEXT)
            .map(|p| exprs.compile_pattern(p, flags).unwrap())
            .collect();
        let mut lexer = Lexer::new(exprs, lexemes, slices, &limits);
        let start = lexer.initial_state(&ids).unwrap();
        let q = lexer.next(start, b'"').unwrap();
        (lexer, q)
    }

    fn read(lexer: &mut Lexer, mut q: StateId, text: &str) -> StateId {
        for &b in text.as_bytes() {
            q = lexer.next(q, b).unwrap();
        }
        q
    }

    /// For each default slice: does the unit check prove, disprove, or leave it open?
    fn verdicts(lexer: &mut Lexer, q: StateId) -> alloc::vec::Vec<Option<bool>> {
        (0..lexer.slice_shapes.len())
            .map(|k| {
                let shape = lexer.slice_shapes[k].expect("default slices are X{m,n}");
                lexer.unit_subsumes(shape, q).unwrap()
            })
            .collect()
    }

    #[test]
    fn default_slices_share_one_unit() {
        let (lexer, _) = after_quote(r#""[^"\\]*""#);
        assert_eq!(lexer.units.len(), 1);
        let maxes: alloc::vec::Vec<_> = lexer.slice_shapes.iter().map(|s| s.unwrap().max).collect();
        assert_eq!(maxes, [Some(10), Some(30), None]);
    }

    #[test]
    fn free_text_takes_every_slice() {
        let (mut lexer, q) = after_quote(r#""[^"\\]*""#);
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        let q = read(&mut lexer, q, "héllo wörld");
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
    }

    #[test]
    fn a_length_bound_is_the_depth() {
        let (mut lexer, q) = after_quote(r#""[^"\\]{0,12}""#);
        // 12 characters left: `{1,10}` fits, `{1,30}` and `+` do not (settled exactly).
        assert_eq!(
            verdicts(&mut lexer, q),
            [Some(true), Some(false), Some(false)]
        );
        // Two-byte characters count once.
        let q = read(&mut lexer, q, "éé");
        assert_eq!(verdicts(&mut lexer, q)[0], Some(true));
        let q = read(&mut lexer, q, "abc");
        assert_eq!(verdicts(&mut lexer, q)[0], Some(false));
    }

    #[test]
    fn a_narrow_class_dies_at_once() {
        let (mut lexer, q) = after_quote(r#""[a-z]*""#);
        assert_eq!(verdicts(&mut lexer, q), [Some(false); 3]);
    }

    #[test]
    fn counted_words_allow_the_bounded_slices_only() {
        // At most 21 words: from inside the first word, reaching a state that some character
        // kills (a space after the 21st word) takes 40 characters, so `{1,10}` and `{1,30}`
        // hold; `+` never does.
        let (mut lexer, q) = after_quote(r#""(?:[^ "\\]+ +){0,20}[^ "\\]+""#);
        assert_eq!(
            verdicts(&mut lexer, q)[0],
            Some(false),
            "a space first is not allowed"
        );
        let q = read(&mut lexer, q, "a");
        let v = verdicts(&mut lexer, q);
        assert_eq!(v[..2], [Some(true), Some(true)]);
        assert_ne!(v[2], Some(true));
    }

    #[test]
    fn a_later_state_reuses_the_bounds_found_before() {
        let (mut lexer, q) = after_quote(r#""[^"\\]{0,100}""#);
        assert_eq!(verdicts(&mut lexer, q)[1], Some(true));
        let q2 = read(&mut lexer, q, "abcd");
        let u = &lexer.units[0];
        let word = u.depth[q2.as_usize()];
        assert!(
            word & DEPTH_MASK >= 30,
            "bound left by the first search: {word:#x}"
        );
        assert_eq!(verdicts(&mut lexer, q2)[1], Some(true));
    }

    #[test]
    fn an_unanchored_pattern_never_dies_without_a_search() {
        // A search pattern with many alternatives: every partial match is a state of its
        // own, too many for the depth search; the part `[^"\\]*(...)[^"\\]*"` of every
        // state is reproduced by every character.
        let alts: alloc::vec::Vec<alloc::string::String> =
            (0..300).map(|i| alloc::format!("k{i:03}z")).collect();
        let pattern = alloc::format!(r#""[^"\\]*(?:{})[^"\\]*""#, alts.join("|"));
        let (mut lexer, q) = after_quote(&pattern);
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        let q = read(&mut lexer, q, "xk01");
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        let q = read(&mut lexer, q, "7z and more");
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        let u = &lexer.units[0];
        assert_eq!(u.generation, 0, "no depth search ran");
        assert_eq!(u.immortal.len(), 1, "one part proven, then reused");
    }

    #[test]
    fn a_bounded_or_anchored_part_is_not_immortal() {
        // The prefix `k` must come first: `z` kills the state at once.
        let (mut lexer, q) = after_quote(r#""k[^"\\]*""#);
        assert_eq!(verdicts(&mut lexer, q), [Some(false); 3]);
        // Bounded: every character shortens the bound, so no part is reproduced (the depth
        // search then proves the bounded slices and gives up on `+`).
        let (mut lexer, q) = after_quote(r#""(?:[^"\\]{0,40}(?:ab|cd))""#);
        let v = verdicts(&mut lexer, q);
        assert_eq!(v[..2], [Some(true), Some(true)]);
        assert_ne!(v[2], Some(true));
        assert!(lexer.units[0].immortal.is_empty());
    }

    #[test]
    fn a_generic_key_beside_listed_keys_never_dies() {
        // `"[^"\\]*"` minus 200 listed keys: the exclusions are finite, so no character
        // string kills it, though every prefix of a listed key is a state of its own.
        let (mut lexer, q) = after_quote_with(|exprs| {
            let flags = PatternFlags::default();
            let any = exprs.compile_pattern(r#""[^"\\]*""#, flags).unwrap();
            let keys: alloc::vec::Vec<alloc::string::String> =
                (0..200).map(|i| alloc::format!("\"key{i:03}\"")).collect();
            let keys = exprs.compile_pattern(&keys.join("|"), flags).unwrap();
            let not_keys = exprs.mk_not(keys).unwrap();
            exprs.mk_and(&[any, not_keys]).unwrap()
        });
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        let q = read(&mut lexer, q, "key01");
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        assert_eq!(lexer.units[0].generation, 0, "no depth search ran");
        // An exclusion that is not a finite set of literals is kept: `"[^"]*"` minus the
        // strings with an `x` dies on `x`.
        let (mut lexer, q) = after_quote_with(|exprs| {
            let flags = PatternFlags::default();
            let any = exprs.compile_pattern(r#""[^"\\]*""#, flags).unwrap();
            let with_x = exprs
                .compile_pattern(r#""[^"\\]*x[^"\\]*""#, flags)
                .unwrap();
            let not_x = exprs.mk_not(with_x).unwrap();
            exprs.mk_and(&[any, not_x]).unwrap()
        });
        assert_ne!(verdicts(&mut lexer, q)[2], Some(true));
    }

    #[test]
    fn keys_that_live_only_together_never_die() {
        // A key matching a pattern (`^[.]`) beside the keys matching none, both minus the
        // listed keys: `.` kills the second and anything else the first, but not both.
        let flags = PatternFlags::default();
        let two = |exprs: &mut ExprSet, other: &str| {
            let keys = exprs.compile_pattern(r#""\.k1"|"k2""#, flags).unwrap();
            let not_keys = exprs.mk_not(keys).unwrap();
            let any = exprs.compile_pattern(r#""[^"\\]*""#, flags).unwrap();
            let dot = exprs.compile_pattern(r#""\.[^"\\]*""#, flags).unwrap();
            // As the JSON compiler writes a pattern key: a string, and the pattern.
            let pattern = exprs.mk_and(&[any, dot, not_keys]).unwrap();
            let other = exprs.compile_pattern(other, flags).unwrap();
            let rest = exprs.mk_and(&[any, not_keys, other]).unwrap();
            alloc::vec![pattern, rest]
        };
        let (mut lexer, q) = after_quote_lexemes(|exprs| {
            let not_dot = exprs.compile_pattern(r#""\.[^"\\]*""#, flags).unwrap();
            let not_dot = exprs.mk_not(not_dot).unwrap();
            let mut v = two(exprs, r#""[^"\\]*""#);
            let rest = v.pop().unwrap();
            v.push(exprs.mk_and(&[rest, not_dot]).unwrap());
            v
        });
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        assert_eq!(lexer.units[0].generation, 0, "no depth search ran");
        let q = read(&mut lexer, q, "k");
        assert_eq!(verdicts(&mut lexer, q), [Some(true); 3]);
        // Together they still die when no pair covers a character: `.` or `a` first only.
        let (mut lexer, q) = after_quote_lexemes(|exprs| two(exprs, r#""a[^"\\]*""#));
        assert_eq!(verdicts(&mut lexer, q), [Some(false); 3]);
    }

    #[test]
    fn a_deep_search_that_gave_up_is_not_repeated_ahead() {
        // Counted words under a length bound: each character is a new state, and Unicode
        // spaces split the multi-byte characters into many classes; the `{1,30}` search
        // runs out of states. The states it reached do not search again.
        let (mut lexer, q) = after_quote_with(|exprs| {
            let flags = PatternFlags::default();
            let len = exprs.compile_pattern(r#""[^"\\]{0,294}""#, flags).unwrap();
            let words = exprs
                .compile_pattern(r#""(?:[^\s"\\]+\s+){0,199}[^\s"\\]+""#, flags)
                .unwrap();
            exprs.mk_and(&[len, words]).unwrap()
        });
        let q = read(&mut lexer, q, "ab");
        let v = verdicts(&mut lexer, q);
        assert_eq!(v[0], Some(true));
        assert_ne!(
            v[1],
            Some(true),
            "the search is expected to run out of states"
        );
        let searches = lexer.units[0].generation;
        let q = read(&mut lexer, q, "c d");
        let v = verdicts(&mut lexer, q);
        assert_eq!(v[0], Some(true));
        assert_eq!(v[1], Some(false));
        assert_eq!(
            lexer.units[0].generation, searches,
            "no new search for `{{1,30}}`"
        );
    }
}
