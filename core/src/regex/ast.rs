//! The un-interned regex tree that front ends build and [`super::ExprSet::compile`] interns.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
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
