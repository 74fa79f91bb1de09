//! The un-interned regex tree that front ends build and [`super::ExprSet::compile`] interns.

use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Flags for a textual pattern (Python-`re`/Lark style).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PatternFlags {
    /// `i`: case-insensitive.
    pub case_insensitive: bool,
    /// `s`: `.` also matches `\n`.
    pub dot_matches_new_line: bool,
    /// `x`: verbose (whitespace and `#` comments ignored).
    pub ignore_whitespace: bool,
    /// `m`: multi-line (`^`/`$` at line ends; anchors are otherwise rejected).
    pub multi_line: bool,
}

/// A regex as a tree. Front ends (Lark, JSON Schema) build these; the regex engine interns
/// them. Deep trees are fine: compilation uses an explicit stack, bounded by
/// [`crate::Limits::max_nesting_depth`] only for textual patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegexAst {
    /// Matches nothing.
    Nothing,
    /// Matches only the empty string.
    Epsilon,
    /// Matches exactly these bytes.
    Literal(Vec<u8>),
    /// Matches one byte from the set: bit `b % 32` of word `b / 32`.
    ByteSet([u32; 8]),
    /// A textual pattern in `regex-syntax` syntax (which accepts Python-`re` classes and
    /// escapes). Matches the whole string (implicitly anchored). Lookaround, backreferences
    /// and anchors other than a leading `^`/trailing `$` are errors.
    Pattern(String, PatternFlags),
    /// Concatenation.
    Concat(Vec<RegexAst>),
    /// Alternation.
    Or(Vec<RegexAst>),
    /// Intersection.
    And(Vec<RegexAst>),
    /// Complement over all byte strings.
    Not(Box<RegexAst>),
    /// `min` to `max` (inclusive; `None` = unbounded) repetitions.
    Repeat(Box<RegexAst>, u32, Option<u32>),
    /// A subexpression shared by several trees (a Lark terminal used by other terminals):
    /// the regex is a DAG, never a copy. [`super::ExprSet::compile`] interns each shared
    /// node once per call, so its cost is the DAG's size, not the expanded tree's.
    Shared(Arc<RegexAst>),
}

impl RegexAst {
    /// A hash of the tree's structure and its node count, computed on an explicit stack
    /// (no recursion, whatever the height). Equal trees hash equal; a [`RegexAst::Shared`]
    /// node is hashed by its contents each time it is reached (a DAG costs its expanded
    /// size here, so callers charge the returned count).
    pub fn structural_hash(&self) -> (u64, usize) {
        use core::hash::{Hash, Hasher};
        // A fixed function (a `BuildHasher`'s default may be seeded per instance, and equal
        // trees must hash equal across calls).
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        let mut stack: Vec<&RegexAst> = alloc::vec![self];
        let mut nodes = 0usize;
        while let Some(e) = stack.pop() {
            nodes += 1;
            match e {
                RegexAst::Nothing => 0u8.hash(&mut h),
                RegexAst::Epsilon => 1u8.hash(&mut h),
                RegexAst::Literal(b) => {
                    2u8.hash(&mut h);
                    b.hash(&mut h);
                }
                RegexAst::ByteSet(w) => {
                    3u8.hash(&mut h);
                    w.hash(&mut h);
                }
                RegexAst::Pattern(p, f) => {
                    4u8.hash(&mut h);
                    p.hash(&mut h);
                    (
                        f.case_insensitive,
                        f.dot_matches_new_line,
                        f.ignore_whitespace,
                        f.multi_line,
                    )
                        .hash(&mut h);
                }
                RegexAst::Concat(xs) | RegexAst::Or(xs) | RegexAst::And(xs) => {
                    let tag: u8 = match e {
                        RegexAst::Concat(_) => 5,
                        RegexAst::Or(_) => 6,
                        _ => 7,
                    };
                    tag.hash(&mut h);
                    xs.len().hash(&mut h);
                    stack.extend(xs.iter().rev());
                }
                RegexAst::Not(x) => {
                    8u8.hash(&mut h);
                    stack.push(x);
                }
                RegexAst::Repeat(x, min, max) => {
                    9u8.hash(&mut h);
                    (min, max).hash(&mut h);
                    stack.push(x);
                }
                RegexAst::Shared(x) => {
                    // Hashed as its contents: a shared node equals its unshared copy.
                    stack.push(x);
                }
            }
        }
        (h.finish(), nodes)
    }
}

/// FNV-1a, 64 bits: a fixed hash for [`RegexAst::structural_hash`].
struct Fnv(u64);

impl core::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl Drop for RegexAst {
    /// Flat drop: children that have children of their own are moved to a heap stack and
    /// emptied one at a time, so a tree of any height (or a long chain of uniquely owned
    /// [`RegexAst::Shared`] nodes) is dropped without recursion. Leaves drop in place, so a
    /// tree of height at most two never allocates here.
    fn drop(&mut self) {
        let mut stack: Vec<RegexAst> = Vec::new();
        self.take_inner(&mut stack);
        while let Some(mut node) = stack.pop() {
            node.take_inner(&mut stack);
        }
    }
}

impl RegexAst {
    /// Move the children that have children out of `self` onto `out`.
    fn take_inner(&mut self, out: &mut Vec<RegexAst>) {
        let inner = |x: &RegexAst| match x {
            RegexAst::Concat(v) | RegexAst::Or(v) | RegexAst::And(v) => !v.is_empty(),
            RegexAst::Not(_) | RegexAst::Repeat(..) | RegexAst::Shared(_) => true,
            _ => false,
        };
        match self {
            RegexAst::Concat(v) | RegexAst::Or(v) | RegexAst::And(v) => {
                for x in v.iter_mut() {
                    if inner(x) {
                        out.push(core::mem::replace(x, RegexAst::Nothing));
                    }
                }
            }
            RegexAst::Not(b) | RegexAst::Repeat(b, ..) if inner(b) => {
                out.push(core::mem::replace(&mut **b, RegexAst::Nothing));
            }
            RegexAst::Shared(a) => {
                // The last owner takes the body; other owners only drop their count.
                if let Some(x) = Arc::get_mut(a)
                    && inner(x)
                {
                    out.push(core::mem::replace(x, RegexAst::Nothing));
                }
            }
            _ => {}
        }
    }

    /// A literal string.
    pub fn literal(s: &str) -> RegexAst {
        RegexAst::Literal(s.as_bytes().to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structural_hash_is_a_function_of_the_tree() {
        let mk = |s: &str| {
            RegexAst::Concat(alloc::vec![
                RegexAst::literal(s),
                RegexAst::Repeat(Box::new(RegexAst::ByteSet([1; 8])), 0, Some(3)),
            ])
        };
        // Equal trees, built apart, hash equal (and count their nodes); others differ.
        assert_eq!(mk("ab").structural_hash(), mk("ab").structural_hash());
        assert_eq!(mk("ab").structural_hash().1, 4);
        assert_ne!(mk("ab").structural_hash().0, mk("ba").structural_hash().0);
        let or = RegexAst::Or(alloc::vec![mk("a")]);
        let and = RegexAst::And(alloc::vec![mk("a")]);
        assert_ne!(or.structural_hash().0, and.structural_hash().0);
    }
}
