//! Brzozowski derivatives, emptiness and containment.
//!
//! `derivative(e, b)` is computed bottom-up over the sub-DAG of `e` with an explicit stack
//! (never recursion), caching `(node, byte) -> derivative` for every inner node it visits, so
//! the derivatives of shared sub-expressions are computed once. Each computed node costs one
//! unit of fuel plus the length of its `Or`/`And` list.
//!
//! Emptiness of an expression with `And`/`Not` is decided by exploring its derivatives
//! depth-first over byte-class representatives until a nullable (or `And`/`Not`-free,
//! non-`NOTHING`) state shows up, or no new state does. That is exact: the set of
//! derivatives modulo the constructors' simplifications is finite, and fuel bounds the walk.

use super::exprset::{
    ExprId, ExprSet, Node, REPEAT_INF, WITNESS_LEN, WITNESSES, Witness, set_contains,
};
use crate::error::LimitKind;
use alloc::vec::Vec;
use hashbrown::HashSet;

/// Expressions a depth-bounded round of the emptiness search may expand before it gives way
/// to the unbounded search.
const MAX_BOUNDED_PUSHES: usize = 64;

/// Calls one [`ExprSet::is_surely_nonempty`] may make.
const SURELY_STEPS: u32 = 1024;

/// Most nodes [`ExprSet::is_surely_nonempty`] walks to show an intersection covered.
const COVER_WALK: usize = 4096;

/// Remembered part forms of the star rule (`(member, star) -> forms`), for
/// [`ExprSet::is_surely_nonempty`].
type StarForms = hashbrown::HashMap<(u32, u32), u8>;
/// Entries kept in [`StarForms`] before it is cleared.
const MAX_STAR_FORMS: usize = 4096;
/// Part forms of the star rule.
const FLOATING: u8 = 1;
const PREFIX: u8 = 2;
const SUFFIX: u8 = 4;

/// Byte lengths an expression's strings may have, `(min, max)` with `u64::MAX` for
/// unbounded; `None` when the language is empty.
type Lengths = Option<(u64, u64)>;
/// Nodes [`ExprSet::length_bounds`] visits (the DAG is walked as a tree) and how deep it
/// nests before it gives up. Its stack lives in the function's frame: no heap.
const LENGTH_VISITS: usize = 1024;
const LENGTH_DEPTH: usize = 48;

/// The lengths of a node that needs no child's, or `None` when it does.
fn leaf_lengths(node: &Node<'_>) -> Option<Lengths> {
    match node {
        Node::Nothing => Some(None),
        Node::Epsilon => Some(Some((0, 0))),
        Node::Byte(_) | Node::ByteSet(_) => Some(Some((1, 1))),
        // A complement (`ANY_STRING` among them) may hold strings of any length.
        Node::Not(_) => Some(Some((0, u64::MAX))),
        Node::Concat(..) | Node::Or(_) | Node::And(_) | Node::Repeat(..) => None,
    }
}

/// The value a compound node's lengths start from, before its children are folded in.
fn start_lengths(node: &Node<'_>) -> Lengths {
    match node {
        Node::Or(_) => None,
        Node::And(_) => Some((0, u64::MAX)),
        _ => Some((0, 0)),
    }
}

/// The `i`-th child of a compound node.
fn length_child(node: &Node<'_>, i: usize) -> Option<ExprId> {
    match *node {
        Node::Concat(a, b) => [a, b].get(i).copied(),
        Node::Or(xs) | Node::And(xs) => xs.get(i).map(|&x| ExprId(x)),
        Node::Repeat(x, _, _) => (i == 0).then_some(x),
        _ => None,
    }
}

/// Fold a child's lengths `v` into its parent's `acc`.
fn fold_lengths(node: &Node<'_>, acc: Lengths, v: Lengths) -> Lengths {
    match (*node, acc, v) {
        (Node::Concat(..), Some(a), Some(b)) => {
            Some((a.0.saturating_add(b.0), a.1.saturating_add(b.1)))
        }
        (Node::Or(_), None, v) | (Node::Or(_), v, None) => v,
        (Node::Or(_), Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (Node::And(_), Some(a), Some(b)) => {
            let (lo, hi) = (a.0.max(b.0), a.1.min(b.1));
            (lo <= hi).then_some((lo, hi))
        }
        (Node::Repeat(_, lo, _), _, None) => (lo == 0).then_some((0, 0)),
        (Node::Repeat(_, lo, hi), _, Some(b)) => {
            let max = if b.1 == 0 {
                0
            } else if hi == REPEAT_INF {
                u64::MAX
            } else {
                b.1.saturating_mul(u64::from(hi))
            };
            Some((b.0.saturating_mul(u64::from(lo)), max))
        }
        _ => None,
    }
}

/// The shape of a node, detached from the store's borrow.
#[derive(Clone, Copy)]
enum Kind {
    Concat(ExprId, ExprId),
    Or,
    And,
    Not,
    Repeat(ExprId, u32, u32),
    Leaf,
}

impl ExprSet {
    /// The derivative of `e` for a leaf node, or the cached one for an inner node.
    #[inline]
    fn known_deriv(&self, e: ExprId, b: u8) -> Option<ExprId> {
        match self.node(e) {
            Node::Nothing | Node::Epsilon => Some(ExprId::NOTHING),
            Node::Byte(x) => Some(if x == b {
                ExprId::EPSILON
            } else {
                ExprId::NOTHING
            }),
            Node::ByteSet(w) => Some(if set_contains(w, b) {
                ExprId::EPSILON
            } else {
                ExprId::NOTHING
            }),
            _ if e == ExprId::ANY_STRING => Some(ExprId::ANY_STRING),
            _ => self.deriv_cache.get(&(e.0, b)).map(|&d| ExprId(d)),
        }
    }

    /// The derivative of `e` by `byte`: the strings `s` with `byte s` in `L(e)`. Cached;
    /// spends fuel on cache misses.
    pub fn derivative(&mut self, e: ExprId, byte: u8) -> Result<ExprId, LimitKind> {
        if let Some(d) = self.known_deriv(e, byte) {
            return Ok(d);
        }
        // Scratch buffers are kept in the store (an error return drops them; they are
        // simply allocated again).
        let mut stack = core::mem::take(&mut self.scratch_stack);
        let mut missing = core::mem::take(&mut self.scratch_missing);
        let mut ds = core::mem::take(&mut self.scratch_ds);
        stack.clear();
        stack.push(e);
        while let Some(&top) = stack.last() {
            if self.known_deriv(top, byte).is_some() {
                stack.pop();
                continue;
            }
            missing.clear();
            ds.clear();
            let node = self.node(top);
            let kind = match node {
                Node::Concat(a, b) => Kind::Concat(a, b),
                Node::Or(_) => Kind::Or,
                Node::And(_) => Kind::And,
                Node::Not(_) => Kind::Not,
                Node::Repeat(x, min, max) => Kind::Repeat(x, min, max),
                _ => Kind::Leaf,
            };
            match node {
                Node::Concat(a, b) => {
                    let need_b = self.is_nullable(a);
                    match self.known_deriv(a, byte) {
                        Some(d) => ds.push(d),
                        None => missing.push(a),
                    }
                    if need_b {
                        match self.known_deriv(b, byte) {
                            Some(d) => ds.push(d),
                            None => missing.push(b),
                        }
                    }
                }
                Node::Or(xs) | Node::And(xs) => {
                    for &x in xs {
                        match self.known_deriv(ExprId(x), byte) {
                            Some(d) => ds.push(d),
                            None => missing.push(ExprId(x)),
                        }
                    }
                }
                Node::Not(x) | Node::Repeat(x, _, _) => match self.known_deriv(x, byte) {
                    Some(d) => ds.push(d),
                    None => missing.push(x),
                },
                // Leaves are always known.
                Node::Nothing | Node::Epsilon | Node::Byte(_) | Node::ByteSet(_) => {}
            }
            if !missing.is_empty() {
                stack.extend(missing.iter().rev());
                continue;
            }
            self.spend(1)?;
            self.work = 0;
            let d = match kind {
                Kind::Concat(a, b) => {
                    let da = ds.first().copied().unwrap_or(ExprId::NOTHING);
                    let first = self.mk_concat(da, b)?;
                    if self.is_nullable(a) {
                        let db = ds.get(1).copied().unwrap_or(ExprId::NOTHING);
                        self.mk_or(&[first, db])?
                    } else {
                        first
                    }
                }
                Kind::Or => self.mk_or(&ds)?,
                Kind::And => self.mk_and(&ds)?,
                Kind::Not => {
                    let dx = ds.first().copied().unwrap_or(ExprId::NOTHING);
                    self.mk_not(dx)?
                }
                Kind::Repeat(x, min, max) => {
                    let dx = ds.first().copied().unwrap_or(ExprId::NOTHING);
                    if dx == ExprId::NOTHING {
                        ExprId::NOTHING
                    } else {
                        let max = if max == REPEAT_INF {
                            REPEAT_INF
                        } else {
                            max.saturating_sub(1)
                        };
                        let rest = self.mk_repeat_raw(x, min.saturating_sub(1), max)?;
                        self.mk_concat(dx, rest)?
                    }
                }
                Kind::Leaf => ExprId::NOTHING,
            };
            let work = core::mem::take(&mut self.work);
            self.spend(work)?;
            self.deriv_cache.insert((top.0, byte), d.0);
            stack.pop();
        }
        self.scratch_stack = stack;
        self.scratch_missing = missing;
        self.scratch_ds = ds;
        if self.bytes_used() > self.max_memory {
            return Err(LimitKind::Memory);
        }
        Ok(self.known_deriv(e, byte).unwrap_or(ExprId::NOTHING))
    }

    /// Push onto `out` the leaves (`Byte` and `ByteSet` nodes) that the derivative of `e`
    /// tests a byte against, skipping nodes already in `seen`. Two bytes on the same side of
    /// every such leaf give `e` the same derivative: a lexer state uses this to compute one
    /// transition for a whole group of byte classes. `stack` is scratch.
    pub(crate) fn first_leaves(
        &self,
        e: ExprId,
        out: &mut Vec<ExprId>,
        seen: &mut HashSet<u32>,
        stack: &mut Vec<ExprId>,
    ) {
        stack.clear();
        stack.push(e);
        while let Some(x) = stack.pop() {
            // `ANY_STRING` derives to itself whatever the byte.
            if x == ExprId::ANY_STRING || !seen.insert(x.0) {
                continue;
            }
            // The nodes `derivative` visits: a concatenation's tail only after a nullable head.
            match self.node(x) {
                Node::Nothing | Node::Epsilon => {}
                Node::Byte(_) | Node::ByteSet(_) => out.push(x),
                Node::Concat(a, b) => {
                    stack.push(a);
                    if self.is_nullable(a) {
                        stack.push(b);
                    }
                }
                Node::Or(xs) | Node::And(xs) => stack.extend(xs.iter().map(|&y| ExprId(y))),
                Node::Not(y) | Node::Repeat(y, _, _) => stack.push(y),
            }
        }
    }

    /// Split the classes of `classes` into blocks (class sets, written to `blocks`) that
    /// every expression of `roots` derives alike: classes on the same side of every leaf
    /// its derivative tests ([`ExprSet::first_leaves`]).
    pub(crate) fn class_blocks(
        &mut self,
        roots: &[ExprId],
        classes: &super::ByteClasses,
        blocks: &mut Vec<[u64; 4]>,
    ) {
        let mut leaves = core::mem::take(&mut self.block_leaves);
        let mut seen = core::mem::take(&mut self.block_seen);
        let mut stack = core::mem::take(&mut self.block_stack);
        leaves.clear();
        seen.clear();
        for &e in roots {
            self.first_leaves(e, &mut leaves, &mut seen, &mut stack);
        }
        let n = classes.num_classes();
        let sets = leaves.iter().map(|&leaf| {
            let bytes = self.leaf_bytes(leaf);
            let mut set = [0u64; 4];
            for c in 0..n {
                let b = classes.representative(c as u8);
                if (bytes[(b >> 5) as usize] >> (b & 31)) & 1 != 0 {
                    set[c >> 6] |= 1 << (c & 63);
                }
            }
            set
        });
        super::classes::refine_blocks(n, sets, blocks);
        self.block_leaves = leaves;
        self.block_seen = seen;
        self.block_stack = stack;
    }

    /// The bytes leaf `e` (a `Byte` or `ByteSet` node) matches, as a 256-bit set (empty for
    /// other nodes).
    pub(crate) fn leaf_bytes(&self, e: ExprId) -> [u32; 8] {
        let mut set = [0u32; 8];
        match self.node(e) {
            Node::Byte(x) => set[(x >> 5) as usize] |= 1 << (x & 31),
            Node::ByteSet(w) => {
                for (dst, &src) in set.iter_mut().zip(w) {
                    *dst = src;
                }
            }
            _ => {}
        }
        set
    }

    /// The derivative of `e` by the byte string `bytes`.
    pub fn derivative_bytes(&mut self, e: ExprId, bytes: &[u8]) -> Result<ExprId, LimitKind> {
        let mut cur = e;
        for &b in bytes {
            if cur == ExprId::NOTHING {
                break;
            }
            cur = self.derivative(cur, b)?;
        }
        Ok(cur)
    }

    /// Does `e` match the whole of `bytes`?
    pub fn matches(&mut self, e: ExprId, bytes: &[u8]) -> Result<bool, LimitKind> {
        let d = self.derivative_bytes(e, bytes)?;
        Ok(self.is_nullable(d))
    }

    /// Is `L(e)` empty? Exact. Without `And`/`Not` this is `e == NOTHING` (O(1)); otherwise
    /// derivatives are explored depth-first, spending fuel (`Err(Fuel)` when it runs out).
    pub fn is_empty_language(&mut self, e: ExprId) -> Result<bool, LimitKind> {
        self.is_empty_language_with(e, None)
    }

    /// Bounds on the byte lengths of `e`'s strings, from its structure: `Some(None)` when
    /// they show the language empty (an intersection whose parts' lengths cannot meet, such
    /// as a pattern that needs 10^6 characters under a `maxLength` of 10,000), `None` when
    /// the walk gives up (more than [`LENGTH_VISITS`] nodes or [`LENGTH_DEPTH`] levels).
    /// Sound: every string of `e` has a length within the bounds.
    pub(crate) fn length_bounds(&self, e: ExprId) -> Option<Lengths> {
        let root = self.node(e);
        if let Some(v) = leaf_lengths(&root) {
            return Some(v);
        }
        let mut frames = [(ExprId::NOTHING, 0usize, None::<(u64, u64)>); LENGTH_DEPTH];
        frames[0] = (e, 0, start_lengths(&root));
        let mut depth = 1;
        for _ in 0..LENGTH_VISITS {
            let (x, i, acc) = frames[depth - 1];
            let node = self.node(x);
            if let Some(c) = length_child(&node, i) {
                frames[depth - 1].1 += 1;
                let child = self.node(c);
                if let Some(v) = leaf_lengths(&child) {
                    frames[depth - 1].2 = fold_lengths(&node, acc, v);
                } else if depth == LENGTH_DEPTH {
                    return None;
                } else {
                    frames[depth] = (c, 0, start_lengths(&child));
                    depth += 1;
                }
                continue;
            }
            depth -= 1;
            if depth == 0 {
                return Some(acc);
            }
            let (parent, _, parent_acc) = frames[depth - 1];
            frames[depth - 1].2 = fold_lengths(&self.node(parent), parent_acc, acc);
        }
        None
    }

    /// Whether the shape of `e` shows it non-empty, without derivatives: a concatenation of
    /// non-empty parts, a union with a non-empty member, an intersection of nullable
    /// expressions (all hold the empty string), the complement of a finite set of literals.
    /// Sound, not complete (`false` = not shown). The lexer checks every new state with
    /// `And` for emptiness; a JSON string under `maxLength` and a pattern is
    /// `(X{0,n} & P) "`, shown non-empty here whenever `P` can end.
    ///
    /// Bounded: at most 32 levels and [`SURELY_STEPS`] calls (an intersection's cover check
    /// counts 64), so a DAG that would unfold exponentially is cut short (`false`).
    pub(crate) fn is_surely_nonempty(&mut self, e: ExprId, depth: u32) -> bool {
        self.surely_nonempty_tier(e, depth, true)
    }

    /// [`ExprSet::is_surely_nonempty`] without the two intersection rules that walk whole
    /// conjuncts (the cover and star rules, thousands of instructions each when they fail):
    /// what the emptiness search checks first, before a short search for a witness.
    fn is_shallowly_nonempty(&mut self, e: ExprId) -> bool {
        self.surely_nonempty_tier(e, 0, false)
    }

    fn surely_nonempty_tier(&mut self, e: ExprId, depth: u32, walks: bool) -> bool {
        let mut steps = SURELY_STEPS;
        let mut forms = core::mem::take(&mut self.star_forms);
        if forms.len() > MAX_STAR_FORMS {
            forms.clear();
        }
        let r = self.surely_nonempty(e, depth, &mut steps, &mut forms, walks);
        self.star_forms = forms;
        r
    }

    fn surely_nonempty(
        &self,
        e: ExprId,
        depth: u32,
        steps: &mut u32,
        forms: &mut StarForms,
        walks: bool,
    ) -> bool {
        if !self.has_and_not(e) {
            return e != ExprId::NOTHING;
        }
        if self.is_nullable(e) {
            return true;
        }
        if depth >= 32 || *steps == 0 {
            return false;
        }
        *steps -= 1;
        match self.node(e) {
            Node::Concat(a, b) => {
                self.surely_nonempty(a, depth + 1, steps, forms, walks)
                    && self.surely_nonempty(b, depth + 1, steps, forms, walks)
            }
            Node::Or(xs) => xs
                .iter()
                .any(|&x| self.surely_nonempty(ExprId(x), depth + 1, steps, forms, walks)),
            Node::And(xs) => {
                if xs.iter().all(|&x| self.is_nullable(ExprId(x))) {
                    return true;
                }
                if self.is_infinite_minus_finite(xs) {
                    return true;
                }
                if !walks || *steps < 64 {
                    return false;
                }
                *steps -= 64;
                self.is_covered_by_stars(xs) || self.is_star_separable(xs, forms)
            }
            Node::Repeat(x, min, _) => {
                min == 0 || self.surely_nonempty(x, depth + 1, steps, forms, walks)
            }
            Node::Not(x) => self.is_literal_set(x),
            _ => false,
        }
    }

    /// Whether the intersection `xs` is one conjunct with infinitely many strings, free of
    /// `And`/`Not`, beside complements of finite sets (`¬F`, [`ExprSet::is_literal_set`]):
    /// those remove finitely many strings, so some are left. A generic JSON key inside its
    /// string (the rest of `"[^"]*"` minus the rest of every spelling of the listed keys).
    fn is_infinite_minus_finite(&self, xs: &[u32]) -> bool {
        let mut positive = None;
        for &x in xs {
            let x = ExprId(x);
            match self.node(x) {
                Node::Not(f) if self.is_literal_set(f) => {}
                _ if !self.has_and_not(x) && positive.is_none() => positive = Some(x),
                _ => return false,
            }
        }
        positive.is_some_and(|p| self.is_infinite(p, 0))
    }

    /// Whether `e`, free of `And`/`Not`, has infinitely many strings: an unbounded
    /// repetition of something with a non-empty string, in a concatenation of non-empty
    /// parts or a member of a union. `false` when unsure (past depth 32).
    fn is_infinite(&self, e: ExprId, depth: u32) -> bool {
        if depth >= 32 || e == ExprId::NOTHING {
            return false;
        }
        match self.node(e) {
            Node::Repeat(y, _, REPEAT_INF) => self.has_nonempty_string(y, depth + 1),
            Node::Repeat(y, _, max) => max > 0 && self.is_infinite(y, depth + 1),
            // Neither side is `NOTHING` (the constructors fold it), so both are non-empty.
            Node::Concat(a, b) => self.is_infinite(a, depth + 1) || self.is_infinite(b, depth + 1),
            Node::Or(xs) => xs.iter().any(|&x| self.is_infinite(ExprId(x), depth + 1)),
            _ => false,
        }
    }

    /// Whether `e`, free of `And`/`Not`, has a string other than the empty one.
    fn has_nonempty_string(&self, e: ExprId, depth: u32) -> bool {
        if e == ExprId::NOTHING || e == ExprId::EPSILON {
            return false;
        }
        if !self.is_nullable(e) {
            return true;
        }
        if depth >= 32 {
            return false;
        }
        match self.node(e) {
            Node::Concat(a, b) => {
                self.has_nonempty_string(a, depth + 1) || self.has_nonempty_string(b, depth + 1)
            }
            Node::Or(xs) => xs
                .iter()
                .any(|&x| self.has_nonempty_string(ExprId(x), depth + 1)),
            Node::Repeat(y, _, max) => max > 0 && self.has_nonempty_string(y, depth + 1),
            _ => false,
        }
    }

    /// Whether the intersection `xs` has a witness built conjunct by conjunct around one
    /// star `S = y*`: every conjunct is `S`, or holds (itself, or a member of its union) a
    /// *floating* part `S w S`, a *prefix* part `p S` or a *suffix* part `S q`, with `w`, `p`,
    /// `q` free of `And`/`Not`, not `NOTHING` (so non-empty) and inside `S`, and at most one
    /// conjunct needs a prefix part and one a suffix part. Then `p w1 w2 ... wn q` is in
    /// every conjunct. This is a JSON string under many unanchored `pattern`s (`allOf` of
    /// `pattern`s, each `any* lit any*` in every spelling): the search for one string with
    /// every literal in it explores thousands of intersections, and its derivatives keep the
    /// `any* lit any*` member, so every lexer state is shown non-empty here.
    fn is_star_separable(&self, xs: &[u32], forms: &mut StarForms) -> bool {
        let mut stars: Vec<ExprId> = Vec::new();
        for &x in xs.iter().take(8) {
            let x = ExprId(x);
            let members: &[u32] = match self.node(x) {
                Node::Or(ms) => ms,
                _ => core::slice::from_ref(&x.0),
            };
            for &m in members.iter().take(8) {
                let first = self.factors(ExprId(m)).0;
                if self.is_plain_star(first) && !stars.contains(&first) {
                    stars.push(first);
                }
            }
        }
        stars
            .iter()
            .take(4)
            .any(|&star| self.is_separable_around(xs, star, forms))
    }

    /// `e` is `y*` with `y` free of `And`/`Not`.
    fn is_plain_star(&self, e: ExprId) -> bool {
        matches!(self.node(e), Node::Repeat(y, 0, REPEAT_INF) if !self.has_and_not(y))
    }

    /// The first and last factor of a concatenation (`e` itself twice otherwise).
    fn factors(&self, e: ExprId) -> (ExprId, ExprId) {
        let (mut first, mut last) = (e, e);
        let mut n = 0;
        while let Node::Concat(a, _) = self.node(first) {
            first = a;
            n += 1;
            if n > 64 {
                break;
            }
        }
        while let Node::Concat(_, b) = self.node(last) {
            last = b;
            n += 1;
            if n > 128 {
                break;
            }
        }
        (first, last)
    }

    /// [`ExprSet::is_star_separable`] with the star chosen.
    fn is_separable_around(&self, xs: &[u32], star: ExprId, cache: &mut StarForms) -> bool {
        let mut steps = COVER_WALK as u32;
        let (mut need_prefix, mut need_suffix, mut need_either) = (0u32, 0u32, 0u32);
        for &x in xs {
            let x = ExprId(x);
            if x == star || x == ExprId::ANY_STRING {
                continue;
            }
            let members: &[u32] = match self.node(x) {
                Node::Or(ms) => ms,
                _ => core::slice::from_ref(&x.0),
            };
            let mut forms = 0u8;
            for &m in members {
                forms |= match cache.get(&(m, star.0)) {
                    Some(&f) => f,
                    None => {
                        let f = self.star_form(ExprId(m), star, &mut steps);
                        cache.insert((m, star.0), f);
                        f
                    }
                };
                if forms & FLOATING != 0 || steps == 0 {
                    break;
                }
            }
            if forms & FLOATING != 0 {
                continue;
            }
            match forms {
                PREFIX => need_prefix += 1,
                SUFFIX => need_suffix += 1,
                0 => return false,
                _ => need_either += 1,
            }
        }
        // One prefix slot and one suffix slot.
        need_prefix <= 1 && need_suffix <= 1 && need_prefix + need_suffix + need_either <= 2
    }

    /// Which parts around `star` the union member `m` is: `FLOATING` (`star` itself or
    /// `star w star`), `PREFIX` (`p star`), `SUFFIX` (`star q`), or none (0).
    fn star_form(&self, m: ExprId, star: ExprId, steps: &mut u32) -> u8 {
        if m == star {
            return FLOATING;
        }
        if self.has_and_not(m) || m == ExprId::NOTHING {
            return 0;
        }
        let (first, last) = self.factors(m);
        let (lead, trail) = (first == star, last == star);
        if !(lead || trail) || !self.within_star(m, star, steps) {
            return 0;
        }
        match (lead, trail) {
            (true, true) => FLOATING,
            (false, true) => PREFIX,
            _ => SUFFIX,
        }
    }

    /// Whether `L(x) ⊆ L(star)`, `star = y*`, follows from the shapes: `x` is `star`, the
    /// empty string, inside `y` or `star`, or a concatenation, union or repetition of such.
    fn within_star(&self, x: ExprId, star: ExprId, steps: &mut u32) -> bool {
        let Node::Repeat(y, _, _) = self.node(star) else {
            return false;
        };
        let mut stack = alloc::vec![x];
        while let Some(e) = stack.pop() {
            if *steps == 0 {
                return false;
            }
            *steps -= 1;
            if e == star || e == ExprId::EPSILON {
                continue;
            }
            match self.node(e) {
                Node::Concat(a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                _ if self.is_syntactic_subset(e, y) => {}
                Node::Or(ms) => stack.extend(ms.iter().map(|&m| ExprId(m))),
                Node::Repeat(z, _, _) => stack.push(z),
                _ if self.is_syntactic_subset(e, star) => {}
                _ => return false,
            }
        }
        true
    }

    /// Whether the intersection `xs` is `p & Y1{lo1,hi1} & Y2{lo2,hi2} ...` with `p`
    /// non-empty, free of `And`/`Not`, every byte `p` tests a one-byte member of every `Yi`
    /// and every string of `p` as long as every `Yi{lo,hi}` allows: then every string of
    /// `p` is in every `Yi{lo,hi}`, so the intersection is `p`, non-empty. This is a JSON
    /// string with a `pattern` (`X{minLength,maxLength} & P`): `^(a{1000}){1000}$` is shown
    /// non-empty here instead of by a million-byte derivative search. Walks at most
    /// [`COVER_WALK`] nodes.
    fn is_covered_by_stars(&self, xs: &[u32]) -> bool {
        // Try each conjunct as `p` (intersections are short; at most 8 are tried).
        xs.iter()
            .take(8)
            .any(|&p| self.is_covered_with(ExprId(p), xs))
    }

    /// [`ExprSet::is_covered_by_stars`] with `p` chosen.
    fn is_covered_with(&self, p: ExprId, xs: &[u32]) -> bool {
        let mut allowed = [u32::MAX; 8];
        // Lengths every `Yi{lo,hi}` conjunct allows (in repetitions of one-byte members).
        let (mut lo, mut hi) = (0u64, u64::MAX);
        let mut steps = COVER_WALK as u32;
        for &x in xs {
            let x = ExprId(x);
            if x == p || x == ExprId::ANY_STRING {
                continue;
            }
            // `y*` whose members build `p` (multi-byte members too: a JSON string's
            // characters with their escapes, `p` a pattern in every spelling).
            if self.is_plain_star(x)
                && !self.has_and_not(p)
                && p != ExprId::NOTHING
                && self.within_star(p, x, &mut steps)
            {
                continue;
            }
            let Node::Repeat(y, min, max) = self.node(x) else {
                return false;
            };
            let mut single = self.leaf_bytes(y);
            if let Node::Or(ys) = self.node(y) {
                for &z in ys {
                    let z = self.leaf_bytes(ExprId(z));
                    for (a, b) in single.iter_mut().zip(z) {
                        *a |= b;
                    }
                }
            }
            for (a, b) in allowed.iter_mut().zip(single) {
                *a &= b;
            }
            lo = lo.max(u64::from(min));
            if max != REPEAT_INF {
                hi = hi.min(u64::from(max));
            }
        }
        if p == ExprId::NOTHING || self.has_and_not(p) {
            return false;
        }
        // Every leaf of `p` within `allowed`.
        let mut stack = alloc::vec![p];
        let mut seen: HashSet<ExprId> = HashSet::new();
        while let Some(e) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            if seen.len() > COVER_WALK {
                return false;
            }
            match self.node(e) {
                Node::Byte(_) | Node::ByteSet(_) => {
                    let bytes = self.leaf_bytes(e);
                    if bytes.iter().zip(&allowed).any(|(b, a)| b & !a != 0) {
                        return false;
                    }
                }
                Node::Concat(a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Node::Or(ys) => stack.extend(ys.iter().map(|&y| ExprId(y))),
                Node::Repeat(y, _, _) => stack.push(y),
                Node::Nothing | Node::Epsilon => {}
                Node::And(_) | Node::Not(_) => return false,
            }
        }
        if lo == 0 && hi == u64::MAX {
            return true;
        }
        // Every string of `p` has a length in `lo..=hi`: shortest and longest lengths,
        // children first (a child's id is smaller than its parent's).
        let mut ids: Vec<ExprId> = seen.into_iter().collect();
        ids.sort_unstable();
        let mut len: hashbrown::HashMap<ExprId, (u64, u64)> = hashbrown::HashMap::new();
        let get = |len: &hashbrown::HashMap<ExprId, (u64, u64)>, e: ExprId| {
            len.get(&e).copied().unwrap_or((u64::MAX, 0))
        };
        for &e in &ids {
            let l = match self.node(e) {
                Node::Byte(_) | Node::ByteSet(_) => (1, 1),
                Node::Epsilon => (0, 0),
                Node::Concat(a, b) => {
                    let (a, b) = (get(&len, a), get(&len, b));
                    (a.0.saturating_add(b.0), a.1.saturating_add(b.1))
                }
                Node::Or(ys) => ys.iter().fold((u64::MAX, 0), |acc, &y| {
                    let l = get(&len, ExprId(y));
                    (acc.0.min(l.0), acc.1.max(l.1))
                }),
                Node::Repeat(y, min, max) => {
                    let l = get(&len, y);
                    let top = if max == REPEAT_INF {
                        if l.1 == 0 { 0 } else { u64::MAX }
                    } else {
                        l.1.saturating_mul(u64::from(max))
                    };
                    (l.0.saturating_mul(u64::from(min)), top)
                }
                // Not reached (`p` is non-empty, without And/Not).
                Node::Nothing | Node::And(_) | Node::Not(_) => (u64::MAX, 0),
            };
            len.insert(e, l);
        }
        let (shortest, longest) = get(&len, p);
        shortest >= lo && longest <= hi
    }

    /// [`ExprSet::is_empty_language`] with byte classes known to be fine enough for `e` and
    /// its derivatives (a lexer's classes, computed over its lexemes); `None` computes them.
    pub fn is_empty_language_with(
        &mut self,
        e: ExprId,
        classes: Option<&super::ByteClasses>,
    ) -> Result<bool, LimitKind> {
        if !self.has_and_not(e) {
            return Ok(e == ExprId::NOTHING);
        }
        if let Some(&r) = self.empty_cache.get(&e.0) {
            return Ok(r);
        }
        // Cheapest first: the shape rules that do not walk whole conjuncts, the recent
        // witnesses, a short search (below); only then the rules that walk conjuncts (the
        // cover and star rules, the length bounds), which decide what a search cannot
        // afford (a witness a million bytes long, an empty intersection of long patterns)
        // but cost thousands of instructions where a few derivatives find a witness.
        if self.is_nullable(e) || self.is_shallowly_nonempty(e) {
            self.empty_cache.insert(e.0, false);
            return Ok(false);
        }
        if self.replay_witnesses(e)? {
            self.empty_cache.insert(e.0, false);
            return Ok(false);
        }
        let computed;
        let classes = match classes {
            Some(c) => c,
            None => {
                computed = self.byte_classes(&[e]);
                &computed
            }
        };
        let n = classes.num_classes();
        // Scratch kept in the store; an error return drops it (allocated again next time).
        let mut seen = core::mem::take(&mut self.empty_seen);
        let mut stack = core::mem::take(&mut self.empty_stack);
        // Depth-first with lazy expansion: a non-empty language usually has a short witness,
        // found by following the first live class at each step (JSON string lexemes with
        // Unicode patterns have ~50 byte classes per state; expanding every class of every
        // visited state cost most of a grammar's build time). The depth is bounded, 8, then
        // 64, then not (iterative deepening): following the first live class can walk a long way
        // past a short witness (a space at a time through a 300-character `maxLength` when a
        // letter after the first space would match).
        seen.clear();
        stack.clear();
        // `e` is not nullable (checked above): empty until a witness turns up.
        let mut empty = true;
        let mut bound = 8usize;
        // Decided by the walking rules after the short search (no path to remember).
        let mut by_rule = None;
        let mut short_rounds = true;
        while empty {
            seen.clear();
            stack.clear();
            seen.insert(e);
            stack.push((e, 0));
            let mut cut = false;
            // A bounded round that grows large gives way to the unbounded one: it is meant
            // to find a short witness cheaply, not to search the whole ball.
            let mut pushes = 0usize;
            while let Some(top) = stack.last_mut() {
                let (s, tried) = *top;
                if tried >= n {
                    stack.pop();
                    continue;
                }
                top.1 += 1;
                let b = classes.representative(tried as u8);
                if bound == usize::MAX {
                    // Only the last round pays per step (the bounded rounds pay for the
                    // derivatives they compute, which the last round then finds cached), so
                    // the deepening costs no more fuel than a plain search.
                    self.spend(1)?;
                }
                let d = self.derivative(s, b)?;
                if d == ExprId::NOTHING || !seen.insert(d) {
                    continue;
                }
                // A state the shape rules show non-empty ends the search too: a JSON string
                // in the middle of an escape (`\u00`) is one character away from a state
                // they decide, while its shortest witness may be a million bytes long. The
                // short rounds use the rules that do not walk conjuncts.
                let shown = self.is_nullable(d)
                    || !self.has_and_not(d)
                    || if short_rounds {
                        self.is_shallowly_nonempty(d)
                    } else {
                        self.is_surely_nonempty(d, 0)
                    };
                if shown {
                    // (Remembered, so a witness replay that reaches `d` stops there.)
                    self.empty_cache.insert(d.0, false);
                    empty = false;
                    break;
                }
                if let Some(&r) = self.empty_cache.get(&d.0) {
                    if !r {
                        empty = false;
                        break;
                    }
                    continue;
                }
                if stack.len() >= bound {
                    // Not expanded in this round: it may be reached again on a shorter path.
                    seen.remove(&d);
                    cut = true;
                    continue;
                }
                pushes += 1;
                if bound != usize::MAX && pushes > MAX_BOUNDED_PUSHES {
                    cut = true;
                    bound = 64;
                    break;
                }
                stack.push((d, 0));
            }
            if !cut {
                break;
            }
            bound = if bound < 64 { bound * 8 } else { usize::MAX };
            if bound == usize::MAX && core::mem::take(&mut short_rounds) {
                // The short rounds found nothing: the rules that walk conjuncts, before the
                // search that may have to go a million bytes deep or exhaust a large space.
                if self.is_surely_nonempty(e, 0) {
                    by_rule = Some(false);
                    break;
                }
                if self.length_bounds(e) == Some(None) {
                    by_rule = Some(true);
                    break;
                }
            }
        }
        if let Some(r) = by_rule {
            empty = r;
        } else if empty {
            // Everything reachable from `e` was explored without a match.
            for &x in &seen {
                self.empty_cache.insert(x.0, true);
            }
        } else {
            // The current path leads to a match: every expression on it is non-empty, and
            // the bytes taken along it are a witness worth trying first next time.
            let mut w = Witness::EMPTY;
            let mut fits = stack.len() <= WITNESS_LEN;
            for (i, &(x, tried)) in stack.iter().enumerate() {
                self.empty_cache.insert(x.0, false);
                match w.bytes.get_mut(i) {
                    Some(slot) if fits => *slot = classes.representative((tried - 1) as u8),
                    _ => fits = false,
                }
            }
            if fits {
                w.len = stack.len() as u8;
                self.remember_witness(w);
            }
        }
        self.empty_cache.insert(e.0, empty);
        self.empty_seen = seen;
        self.empty_stack = stack;
        Ok(empty)
    }

    /// Does one of the recent witnesses (or a prefix of it) take `e` to a nullable
    /// expression, or to one known to be non-empty? Expressions met while checking a lexer
    /// state mostly differ by a counter (words or characters left) and share short
    /// witnesses such as `x"`, so one or two derivatives usually decide what a search
    /// would spend dozens of derivatives on.
    fn replay_witnesses(&mut self, e: ExprId) -> Result<bool, LimitKind> {
        for i in 0..WITNESSES {
            let Some(w) = self.witnesses.get(i).copied() else {
                break;
            };
            let mut cur = e;
            for &b in w.as_slice() {
                cur = self.derivative(cur, b)?;
                if cur == ExprId::NOTHING {
                    break;
                }
                let known_live = self.is_nullable(cur)
                    || !self.has_and_not(cur)
                    || self.empty_cache.get(&cur.0) == Some(&false);
                if known_live {
                    self.remember_witness(w);
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Puts `w` first among the remembered witnesses (dropping the oldest, or an equal one).
    fn remember_witness(&mut self, w: Witness) {
        let same = self
            .witnesses
            .iter()
            .position(|x| x.as_slice() == w.as_slice())
            .unwrap_or(WITNESSES - 1);
        self.witnesses.copy_within(0..same, 1);
        if let Some(first) = self.witnesses.first_mut() {
            *first = w;
        }
    }

    /// Is `L(a) ⊆ L(b)`? Decided as emptiness of `a & ~b`.
    pub fn is_contained_in(&mut self, a: ExprId, b: ExprId) -> Result<bool, LimitKind> {
        if a == b || a == ExprId::NOTHING || b == ExprId::ANY_STRING {
            return Ok(true);
        }
        let nb = self.mk_not(b)?;
        let both = self.mk_and(&[a, nb])?;
        self.is_empty_language(both)
    }

    /// The bytes `b` for which `derivative(e, b)` denotes a non-empty language, as a 256-bit
    /// set. Exact (uses emptiness checks when `e` has `And`/`Not`).
    pub fn first_bytes(&mut self, e: ExprId) -> Result<[u32; 8], LimitKind> {
        let mut out = [0u32; 8];
        if e == ExprId::NOTHING {
            return Ok(out);
        }
        let classes = self.byte_classes(&[e]);
        let mut live = [false; 256];
        for c in 0..classes.num_classes() {
            let rep = classes.representative(c as u8);
            let d = self.derivative(e, rep)?;
            if !self.is_empty_language(d)?
                && let Some(l) = live.get_mut(c)
            {
                *l = true;
            }
        }
        for b in 0..=255u8 {
            if live
                .get(classes.class_of(b) as usize)
                .copied()
                .unwrap_or(false)
            {
                out[(b >> 5) as usize] |= 1 << (b & 31);
            }
        }
        Ok(out)
    }
}

/// Breadth-first over the derivative automaton of `e` (finite): is some state nullable?
/// The tests' oracle for the shape rules, independent of them; panics past `cap` states.
#[cfg(test)]
pub(crate) fn nonempty_by_bfs(s: &mut ExprSet, e: ExprId, cap: usize) -> bool {
    let classes = s.byte_classes(&[e]);
    let mut seen = HashSet::new();
    seen.insert(e);
    let mut queue = alloc::collections::VecDeque::from([e]);
    while let Some(x) = queue.pop_front() {
        if s.is_nullable(x) {
            return true;
        }
        for c in 0..classes.num_classes() {
            let d = s.derivative(x, classes.representative(c as u8)).unwrap();
            if d != ExprId::NOTHING && seen.insert(d) {
                queue.push_back(d);
            }
        }
        assert!(seen.len() < cap, "more than {cap} derivatives");
    }
    false
}

#[cfg(test)]
mod tests;
