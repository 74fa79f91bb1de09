//! Prefix containment: does every string of `S` keep `E` alive?

use alloc::vec::Vec;
use hashbrown::HashSet;

use super::{ExprId, ExprSet};
use crate::error::LimitKind;

impl ExprSet {
    /// Whether for every string `w` of `s` some continuation of `w` matches `e` (every
    /// `w ∈ L(s)` is a prefix of a string of `L(e)`). Explores pairs of derivatives of `s` and
    /// `e` over byte classes; answers `false` when more than `max_pairs` pairs are needed,
    /// or more than `max_steps` derivative pairs computed (one per pair and byte class: with
    /// the hundred classes of a large grammar's lexer, the steps are what costs).
    ///
    /// `classes` must not separate bytes that `s` or `e` (or their derivatives) distinguish;
    /// `None` computes them.
    pub fn is_prefix_contained(
        &mut self,
        s: ExprId,
        e: ExprId,
        max_pairs: usize,
        max_steps: usize,
        classes: Option<&super::ByteClasses>,
    ) -> Result<bool, LimitKind> {
        let computed;
        let classes = match classes {
            Some(c) => c,
            None => {
                computed = self.byte_classes(&[s, e]);
                &computed
            }
        };
        let reps: Vec<u8> = (0..classes.num_classes())
            .map(|c| classes.representative(c as u8))
            .collect();
        let mut seen: HashSet<(ExprId, ExprId)> = HashSet::new();
        let mut stack = alloc::vec![(s, e)];
        seen.insert((s, e));
        let mut steps = 0usize;
        while let Some((a, b)) = stack.pop() {
            steps += reps.len();
            if steps > max_steps {
                return Ok(false);
            }
            for &byte in &reps {
                let da = self.derivative(a, byte)?;
                if da == ExprId::NOTHING {
                    continue;
                }
                let db = self.derivative(b, byte)?;
                if db == ExprId::NOTHING
                    || (self.has_and_not(db) && self.is_empty_language_with(db, Some(classes))?)
                {
                    return Ok(false);
                }
                if seen.insert((da, db)) {
                    if seen.len() > max_pairs {
                        return Ok(false);
                    }
                    stack.push((da, db));
                }
            }
        }
        Ok(true)
    }
}
