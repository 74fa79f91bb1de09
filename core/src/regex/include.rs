//! Syntactic language inclusion, and the common part of two expressions.
//!
//! [`ExprSet::is_syntactic_subset`] is a sound, incomplete test of `L(a) ⊆ L(b)` on the
//! shapes of the two expressions (a member of a union, a conjunct of an intersection, the
//! same concatenation with smaller parts, ...): `true` is a proof, `false` only "not shown".
//! [`ExprSet::common_part`] builds an expression contained in both of its arguments from
//! the structure they share. The slicer uses the pair to find a part of a lexer state that
//! every unit string reproduces (see `lexer/slice.rs`).
//!
//! Both are plain recursions bounded by a depth and a step count: past either they give up
//! (`false` / `None`), which is always sound.

use alloc::vec::Vec;

use super::exprset::Node;
use super::{ExprId, ExprSet};
use crate::error::LimitKind;

/// Deepest recursion of either walk.
const MAX_DEPTH: u32 = 48;
/// Most node pairs one inclusion test (or one common-part construction) compares.
const MAX_STEPS: u32 = 4096;

fn ids(words: &[u32]) -> impl Iterator<Item = ExprId> + '_ {
    words.iter().map(|&w| ExprId(w))
}

impl ExprSet {
    /// Whether `L(a) ⊆ L(b)` follows from the shapes of `a` and `b`. Sound: `true` only when
    /// the inclusion holds; `false` when it does not or could not be shown.
    pub fn is_syntactic_subset(&self, a: ExprId, b: ExprId) -> bool {
        let mut steps = 0;
        self.subset_rec(a, b, 0, &mut steps)
    }

    fn subset_rec(&self, a: ExprId, b: ExprId, depth: u32, steps: &mut u32) -> bool {
        if a == b || a == ExprId::NOTHING || b == ExprId::ANY_STRING {
            return true;
        }
        *steps += 1;
        if depth >= MAX_DEPTH || *steps > MAX_STEPS {
            return false;
        }
        let d = depth + 1;
        let (na, nb) = (self.node(a), self.node(b));
        if let Node::Or(items) = na {
            return ids(items).all(|x| self.subset_rec(x, b, d, steps));
        }
        if let Node::Or(items) = nb
            && ids(items).any(|y| self.subset_rec(a, y, d, steps))
        {
            return true;
        }
        if let Node::And(items) = na {
            // ∩a ⊆ a_i for each i; and ∩a ⊆ ∩b when every b_j contains some a_i.
            if ids(items).any(|x| self.subset_rec(x, b, d, steps)) {
                return true;
            }
            if let Node::And(bs) = nb {
                return ids(bs).all(|y| ids(items).any(|x| self.subset_rec(x, y, d, steps)));
            }
            return false;
        }
        match (na, nb) {
            (Node::Epsilon, _) => self.is_nullable(b),
            (Node::Byte(_) | Node::ByteSet(_), Node::Byte(_) | Node::ByteSet(_)) => {
                match (self.as_byte_set(a), self.as_byte_set(b)) {
                    (Some(x), Some(y)) => x.iter().zip(&y).all(|(x, y)| x & !y == 0),
                    _ => false,
                }
            }
            (Node::Concat(a1, a2), Node::Concat(b1, b2))
                if self.subset_rec(a1, b1, d, steps) && self.subset_rec(a2, b2, d, steps) =>
            {
                true
            }
            // `a ⊆ b1 b2` when `a ⊆ b1` and `b2` matches the empty string.
            (_, Node::Concat(b1, b2)) => self.is_nullable(b2) && self.subset_rec(a, b1, d, steps),
            (Node::Repeat(x, m1, n1), Node::Repeat(y, m2, n2)) => {
                m2 <= m1 && n1 <= n2 && self.subset_rec(x, y, d, steps)
            }
            (_, Node::Repeat(y, m, n)) => self.subset_of_repeat(a, y, m, n, d, steps),
            (Node::Not(x), Node::Not(y)) => self.subset_rec(y, x, d, steps),
            _ => false,
        }
    }

    /// `a ⊆ y{m,n}`, `a` not a repetition: `a` is one `y` (`m ≤ 1 ≤ n`), or a concatenation
    /// `a1 a2` with `a1 ⊆ y` and `a2 ⊆ y{m-1,n-1}` (`\u0061` inside `\u[0-9a-f]{4}`).
    fn subset_of_repeat(
        &self,
        a: ExprId,
        y: ExprId,
        m: u32,
        n: u32,
        depth: u32,
        steps: &mut u32,
    ) -> bool {
        let (mut a, mut m, mut n, mut depth) = (a, m, n, depth);
        loop {
            if a == ExprId::EPSILON {
                return m == 0;
            }
            *steps += 1;
            if depth >= MAX_DEPTH || *steps > MAX_STEPS || n == 0 {
                return false;
            }
            depth += 1;
            match self.node(a) {
                Node::Concat(a1, a2) if self.subset_rec(a1, y, depth, steps) => {
                    a = a2;
                    m = m.saturating_sub(1);
                    if n != super::exprset::REPEAT_INF {
                        n -= 1;
                    }
                }
                Node::Concat(..) => return false,
                _ => return m <= 1 && self.subset_rec(a, y, depth, steps),
            }
        }
    }

    /// `e` without the conjuncts `Not(F)`, `F` a finite set of literals, of its top-level
    /// intersection (`e` itself when it has none): a superset of `e` that exceeds it by
    /// finitely many strings, as do its derivatives (`∂(A ∩ ¬F) = ∂A ∩ ¬∂F`, `∂F` finite).
    /// A generic JSON key (`"[^"]*"` minus the listed keys) becomes the plain string.
    pub fn without_finite_exclusions(&mut self, e: ExprId) -> Result<ExprId, LimitKind> {
        let Node::And(items) = self.node(e) else {
            return Ok(e);
        };
        let finite_not = |s: &ExprSet, x: ExprId| match s.node(x) {
            Node::Not(f) => s.is_literal_set(f),
            _ => false,
        };
        if !ids(items).any(|x| finite_not(self, x)) {
            return Ok(e);
        }
        let keep: Vec<ExprId> = ids(items).filter(|&x| !finite_not(self, x)).collect();
        if keep.is_empty() {
            return Ok(e);
        }
        self.mk_and(&keep)
    }

    /// An expression contained in both `a` and `b`, built from the structure they share:
    /// the union members of one that the other contains, and the same concatenation or
    /// intersection with common parts. `None` when they share nothing this finds. The
    /// result is meant as a candidate: callers check what they need of it.
    pub fn common_part(&mut self, a: ExprId, b: ExprId) -> Result<Option<ExprId>, LimitKind> {
        let mut steps = 0;
        self.common_rec(a, b, 0, &mut steps)
    }

    fn common_rec(
        &mut self,
        a: ExprId,
        b: ExprId,
        depth: u32,
        steps: &mut u32,
    ) -> Result<Option<ExprId>, LimitKind> {
        if a == b || self.subset_rec(a, b, depth, steps) {
            return Ok(Some(a));
        }
        if self.subset_rec(b, a, depth, steps) {
            return Ok(Some(b));
        }
        if depth >= MAX_DEPTH || *steps > MAX_STEPS {
            return Ok(None);
        }
        let d = depth + 1;
        match (self.node(a), self.node(b)) {
            (Node::Or(items), _) => {
                let items: Vec<ExprId> = ids(items).collect();
                let mut keep = Vec::new();
                for x in items {
                    if let Some(c) = self.common_rec(x, b, d, steps)? {
                        keep.push(c);
                    }
                }
                if keep.is_empty() {
                    Ok(None)
                } else {
                    self.mk_or(&keep).map(Some)
                }
            }
            (_, Node::Or(_)) => self.common_rec(b, a, d, steps),
            (Node::Concat(a1, a2), Node::Concat(b1, b2)) => {
                let (Some(c1), Some(c2)) = (
                    self.common_rec(a1, b1, d, steps)?,
                    self.common_rec(a2, b2, d, steps)?,
                ) else {
                    return Ok(None);
                };
                self.mk_concat(c1, c2).map(Some)
            }
            (Node::And(xs), Node::And(ys)) if xs.len() == ys.len() => {
                // Conjuncts in both stay; the one left on each side (if any) is met.
                let xs: Vec<ExprId> = ids(xs).collect();
                let ys: Vec<ExprId> = ids(ys).collect();
                let mut out: Vec<ExprId> = xs.iter().copied().filter(|x| ys.contains(x)).collect();
                let only_a: Vec<ExprId> = xs.iter().copied().filter(|x| !ys.contains(x)).collect();
                let only_b: Vec<ExprId> = ys.iter().copied().filter(|y| !xs.contains(y)).collect();
                match (only_a.as_slice(), only_b.as_slice()) {
                    ([], []) => {}
                    ([x], [y]) => match self.common_rec(*x, *y, d, steps)? {
                        Some(c) => out.push(c),
                        None => return Ok(None),
                    },
                    _ => return Ok(None),
                }
                self.mk_and(&out).map(Some)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Limits;
    use crate::regex::RegexAst;

    fn compile(set: &mut ExprSet, pattern: &str) -> ExprId {
        set.compile(&RegexAst::Pattern(pattern.into(), Default::default()))
            .unwrap()
    }

    #[test]
    fn shapes_that_prove_inclusion() {
        let mut set = ExprSet::new(&Limits::default());
        let cases = [
            ("a", "a|b", true),
            ("a|b", "a", false),
            ("[a-c]", "[a-z]", true),
            ("[a-z]", "[a-c]", false),
            ("ab*", "ab*|c", true),
            ("x(ab|c)", "x(ab|c|d)", true),
            ("x(ab|c|d)", "x(ab|c)", false),
            ("a{2,3}", "a{1,5}", true),
            ("a{1,5}", "a{2,3}", false),
            ("", "a*", true),
            ("", "a+", false),
        ];
        for (a, b, want) in cases {
            let (ea, eb) = (compile(&mut set, a), compile(&mut set, b));
            assert_eq!(set.is_syntactic_subset(ea, eb), want, "{a} ⊆ {b}");
        }
        // Intersections: a conjunct contains the whole; conjunct-wise inclusion.
        let star = compile(&mut set, "[a-z]*");
        let abx = compile(&mut set, "ab[a-z]*");
        let ab = compile(&mut set, "ab");
        let and1 = set.mk_and(&[star, abx]).unwrap();
        let and2 = set.mk_and(&[star, ab]).unwrap();
        assert!(set.is_syntactic_subset(and1, abx));
        assert!(set.is_syntactic_subset(and2, and1));
        assert!(!set.is_syntactic_subset(and1, and2));
    }

    #[test]
    fn the_common_part_is_in_both() {
        let mut set = ExprSet::new(&Limits::default());
        let x = compile(&mut set, "[a-z]*(foo|bar)[a-z]*");
        let oo = compile(&mut set, "oo[a-z]*");
        let ar = compile(&mut set, "ar[a-z]*");
        let a = set.mk_or(&[x, oo]).unwrap();
        let b = set.mk_or(&[x, ar]).unwrap();
        let quote = set.mk_byte(b'"').unwrap();
        let star = compile(&mut set, "[^\"]*");
        let wrap = |set: &mut ExprSet, e| {
            let and = set.mk_and(&[star, e]).unwrap();
            set.mk_concat(and, quote).unwrap()
        };
        let (wa, wb, wx) = (wrap(&mut set, a), wrap(&mut set, b), wrap(&mut set, x));
        assert_eq!(set.common_part(a, b).unwrap(), Some(x));
        assert_eq!(set.common_part(wa, wb).unwrap(), Some(wx));
        assert_eq!(set.common_part(oo, ar).unwrap(), None);
    }
}
