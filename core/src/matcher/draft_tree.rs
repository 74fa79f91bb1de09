//! Masks for a draft token tree (speculative decoding with EAGLE / Medusa-shaped drafts):
//! [`Matcher::fill_draft_tree`].
//!
//! A tree of `n` draft tokens is given by `tokens[i]` and `parents[i]`, the index of an
//! earlier node (`< i`) or -1 for the matcher's current state. Row 0 of the output gets the
//! mask at the current state, row `i + 1` the mask after the path from the current state to
//! node `i` (its ancestors' tokens, then its own).
//!
//! The nodes are visited depth first (an explicit stack, no recursion), in preorder: each
//! accepted node's token is consumed once, on top of its parent's state, and its mask
//! computed; leaving a subtree rolls back to the next node's parent. So every shared prefix
//! is walked once, and the work is one token and one mask per accepted node. A node whose
//! token its parent's mask does not allow (or that is out of range, or comes after an EOS)
//! gets a zero row, and so do all its descendants. At the end the matcher is rolled back to
//! where it started, its remembered mask and budget plan restored.

use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use super::Matcher;
use sieve_kernels as kernels;

/// Why [`Matcher::fill_draft_tree`] refused its input. Nothing was written and the matcher
/// is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DraftTreeError {
    /// `tokens` and `parents` differ in length.
    LengthMismatch {
        /// `tokens.len()`.
        tokens: usize,
        /// `parents.len()`.
        parents: usize,
    },
    /// `parents[node]` is neither -1 nor the index of an earlier node.
    BadParent {
        /// The node.
        node: usize,
        /// Its parent as given.
        parent: i32,
    },
    /// A row (`words_per_row`) is shorter than a mask ([`Matcher::mask_words`]).
    RowTooShort {
        /// Words a mask needs.
        needed: usize,
        /// `words_per_row`.
        given: usize,
    },
    /// The buffer has fewer than `(n + 1) * words_per_row` words (`usize::MAX`: the
    /// product overflows).
    TooFewRows {
        /// Words needed.
        needed: usize,
        /// Words given.
        given: usize,
    },
}

impl fmt::Display for DraftTreeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            DraftTreeError::LengthMismatch { tokens, parents } => {
                write!(f, "{tokens} draft tokens but {parents} parents")
            }
            DraftTreeError::BadParent { node, parent } => write!(
                f,
                "node {node} has parent {parent}: must be -1 or an earlier node"
            ),
            DraftTreeError::RowTooShort { needed, given } => {
                write!(f, "rows of {given} words, a mask needs {needed}")
            }
            DraftTreeError::TooFewRows { needed, given } => {
                write!(f, "bitmask of {given} words, the tree needs {needed}")
            }
        }
    }
}

impl core::error::Error for DraftTreeError {}

/// What [`Matcher::fill_draft_tree`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DraftTreeFill {
    /// Rows that hold a computed mask: row 0 and the rows of the accepted nodes (a tree
    /// every node of which is accepted fills `n + 1`).
    pub filled: usize,
    /// The row whose mask failed with a matcher error (the sticky error it already had,
    /// or a budget of [`crate::Limits`] exceeded on the way, now sticky: see
    /// [`Matcher::error`]). That row and every row not yet filled are zero.
    pub failed_row: Option<usize>,
}

/// The nodes in depth-first preorder, children in index order. `parents` is valid (each
/// -1 or below its node's index).
fn preorder(parents: &[i32]) -> Vec<usize> {
    let n = parents.len();
    // Children lists, compressed: node `p`'s children (slot `p + 1`; slot 0 the root's)
    // are `children[start[p + 1]..start[p + 2]]`, in index order.
    let mut start = vec![0usize; n + 2];
    for &p in parents {
        start[slot(p) + 1] += 1;
    }
    for k in 1..start.len() {
        start[k] += start[k - 1];
    }
    let mut next = start.clone();
    let mut children = vec![0usize; n];
    for (i, &p) in parents.iter().enumerate() {
        children[next[slot(p)]] = i;
        next[slot(p)] += 1;
    }
    let mut order = Vec::with_capacity(n);
    let mut stack: Vec<usize> = children[start[0]..start[1]].iter().rev().copied().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        stack.extend(children[start[i + 1]..start[i + 2]].iter().rev());
    }
    order
}

/// Checks that every `parents[i]` is -1 or an earlier node (`< i`), as
/// [`Matcher::fill_draft_tree`] requires: the first node that is not, as
/// [`DraftTreeError::BadParent`]. For bindings that check a whole batch before any work.
pub fn check_parents(parents: &[i32]) -> Result<(), DraftTreeError> {
    match parents
        .iter()
        .enumerate()
        .find(|&(i, &p)| p < -1 || usize::try_from(p).is_ok_and(|p| p >= i))
    {
        Some((node, &parent)) => Err(DraftTreeError::BadParent { node, parent }),
        None => Ok(()),
    }
}

/// The children-list slot of parent `p` (-1: the root, slot 0).
fn slot(p: i32) -> usize {
    usize::try_from(p).map_or(0, |p| p + 1)
}

impl Matcher {
    /// Masks for every node of a draft token tree, in one pass: row 0 of `rows` (each row
    /// `words_per_row` words, at least [`Matcher::mask_words`]) gets the mask at the current
    /// state, row `i + 1` the mask after the path to node `i`, whose parent is `parents[i]`
    /// (an earlier node, or -1 for the current state) and whose token is `tokens[i]`.
    ///
    /// Each shared prefix is consumed once (see the module docs). A node whose token its
    /// parent's row does not allow (or out of range) gets a zero row, as do its descendants.
    /// A matcher already in error, or a budget exceeded on the way, stops the fill: the row
    /// being computed and every later one are zero ([`DraftTreeFill::failed_row`]). Words of
    /// `rows` past row `n` are untouched.
    ///
    /// The matcher ends in the state where it started (its output, its remembered mask and
    /// budget plan); an error met on the way stays sticky, as it would consuming the tokens
    /// one by one. Invalid input (lengths, a parent not before its node, too small a buffer)
    /// is a [`DraftTreeError`], with nothing written.
    pub fn fill_draft_tree(
        &mut self,
        tokens: &[u32],
        parents: &[i32],
        rows: &mut [u32],
        words_per_row: usize,
    ) -> Result<DraftTreeFill, DraftTreeError> {
        let n = tokens.len();
        if parents.len() != n {
            return Err(DraftTreeError::LengthMismatch {
                tokens: n,
                parents: parents.len(),
            });
        }
        check_parents(parents)?;
        let needed = self.mask_words();
        if words_per_row < needed {
            return Err(DraftTreeError::RowTooShort {
                needed,
                given: words_per_row,
            });
        }
        let total = n
            .checked_add(1)
            .and_then(|r| r.checked_mul(words_per_row))
            .unwrap_or(usize::MAX);
        if rows.len() < total {
            return Err(DraftTreeError::TooFewRows {
                needed: total,
                given: rows.len(),
            });
        }
        let rows = &mut rows[..total];
        let plan = self.plan.clone();
        let tables = (self.generation, self.stats.lexer_rebuilds);
        // The nodes' masks are not remembered (a copy each, for a state the tree leaves):
        // the remembered mask stays the one from before, or row 0's below.
        self.remember = false;
        let (fill, consumed) = self.fill_tree_rows(tokens, parents, rows, words_per_row);
        self.remember = true;
        // Back to where the matcher was; a sticky error is set aside for the rollback (it
        // refuses to run in error) and put back after it.
        let error = self.error.take();
        let _ = self.rollback(consumed);
        self.error = error;
        self.plan = plan;
        // Row 0 is the mask here, unless the lexer tables were rebuilt or reset on the way
        // (state keys were renamed then) or it came from the gate or a stop: keep it for the
        // next call in this state, as `compute_mask` would have.
        if fill.failed_row != Some(0)
            && (self.generation, self.stats.lexer_rebuilds) == tables
            && !self.stopped
            && !self.gated()
            && self.reserve_mask_copy(self.mask_words()).is_ok()
        {
            let key = self.parser.state_key();
            let needed = self.mask_words();
            self.keep_mask(&rows[..needed], key);
        }
        Ok(fill)
    }

    /// The traversal of [`Matcher::fill_draft_tree`] on validated input; returns the fill
    /// and how many tokens are still consumed (to roll back).
    fn fill_tree_rows(
        &mut self,
        tokens: &[u32],
        parents: &[i32],
        rows: &mut [u32],
        w: usize,
    ) -> (DraftTreeFill, usize) {
        let mut fill = DraftTreeFill::default();
        let (row0, _) = rows.split_at_mut(w);
        if self.compute_mask(row0).is_err() {
            kernels::fill(rows, 0);
            fill.failed_row = Some(0);
            return (fill, 0);
        }
        fill.filled = 1;
        let vocab_size = self.grammar.match_vocab().vocab_size();
        let order = preorder(parents);
        // Path length (tokens consumed) after each accepted node; 0: rejected.
        let mut depth = vec![0usize; tokens.len()];
        let mut consumed = 0;
        for (k, &i) in order.iter().enumerate() {
            let (before, after) = rows.split_at_mut((i + 1) * w);
            let row = &mut after[..w];
            let p = usize::try_from(parents[i]).ok();
            let (parent_row, keep) = match p {
                None => (&before[..w], Some(0)),
                Some(p) => (
                    &before[(p + 1) * w..(p + 2) * w],
                    Some(depth[p]).filter(|&d| d > 0),
                ),
            };
            let t = tokens[i];
            let Some(keep) =
                keep.filter(|_| (t as usize) < vocab_size && kernels::test_bit(parent_row, t))
            else {
                kernels::fill(row, 0);
                continue;
            };
            // Back to the parent's state (it is on the current path: preorder), then on
            // with this node's token, unless the parent's path ended with EOS.
            let back = self.rollback(consumed - keep).is_ok();
            if back && self.stopped {
                consumed = keep;
                kernels::fill(row, 0);
                continue;
            }
            let ok = back && {
                consumed = keep;
                self.consume_token(t).is_ok()
            };
            consumed += usize::from(ok);
            if !ok || self.compute_mask(row).is_err() {
                for &j in &order[k..] {
                    kernels::fill(&mut rows[(j + 1) * w..(j + 2) * w], 0);
                }
                fill.failed_row = Some(i + 1);
                return (fill, consumed);
            }
            depth[i] = consumed;
            fill.filled += 1;
        }
        (fill, consumed)
    }
}
