//! Prefix containment: does every string of `S` keep `E` alive?

use super::{ExprId, ExprSet};
use crate::error::LimitKind;

/// Most derivative pairs remembered as contained ([`ExprSet::is_prefix_contained`]).
const PREFIX_MEMO_MAX: usize = 1 << 16;

impl ExprSet {
    /// Whether for every string `w` of `s` some continuation of `w` matches `e` (every
    /// `w ∈ L(s)` is a prefix of a string of `L(e)`). Explores pairs of derivatives of `s` and
    /// `e` over byte classes; answers `false` when more than `max_pairs` pairs are needed,
    /// or more than `max_steps` derivative pairs computed (one per pair and byte class: with
    /// the hundred classes of a large grammar's lexer, the steps are what costs).
    ///
    /// `classes` must not separate bytes that `s` or `e` (or their derivatives) distinguish;
    /// `None` computes them.
    ///
    /// A search that succeeds remembers every pair it met (each one's closure was checked),
    /// and later searches stop at remembered pairs: as a key is generated, the check for
    /// the next state mostly lands on pairs the previous check explored.
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
        if self.prefix_memo.contains(&(s.0, e.0)) {
            return Ok(true);
        }
        // Scratch kept in the store (an error return drops it; it is allocated again).
        let mut seen = core::mem::take(&mut self.prefix_seen);
        let mut stack = core::mem::take(&mut self.prefix_stack);
        seen.clear();
        stack.clear();
        seen.insert((s.0, e.0));
        stack.push((s, e));
        let mut blocks = core::mem::take(&mut self.prefix_blocks);
        let mut steps = 0usize;
        let mut contained = true;
        'search: while let Some((a, b)) = stack.pop() {
            // One derivative pair per block of classes `a` and `b` cannot tell apart.
            self.class_blocks(&[a, b], classes, &mut blocks);
            steps += blocks.len();
            if steps > max_steps {
                contained = false;
                break;
            }
            for block in &blocks {
                let Some(c) = block
                    .iter()
                    .enumerate()
                    .find(|(_, w)| **w != 0)
                    .map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
                else {
                    continue;
                };
                let byte = classes.representative(c as u8);
                let da = self.derivative(a, byte)?;
                if da == ExprId::NOTHING {
                    continue;
                }
                let db = self.derivative(b, byte)?;
                if db == ExprId::NOTHING
                    || (self.has_and_not(db) && self.is_empty_language_with(db, Some(classes))?)
                {
                    contained = false;
                    break 'search;
                }
                if self.prefix_memo.contains(&(da.0, db.0)) {
                    continue;
                }
                if seen.insert((da.0, db.0)) {
                    if seen.len() > max_pairs {
                        contained = false;
                        break 'search;
                    }
                    stack.push((da, db));
                }
            }
        }
        if contained && self.prefix_memo.len() + seen.len() <= PREFIX_MEMO_MAX {
            // Every pair the search met has its whole closure checked.
            self.prefix_memo.extend(seen.iter().copied());
        }
        self.prefix_seen = seen;
        self.prefix_stack = stack;
        self.prefix_blocks = blocks;
        Ok(contained)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    fn set(lo: u8, hi: u8) -> [u32; 8] {
        let mut s = [0u32; 8];
        for b in lo..=hi {
            s[(b >> 5) as usize] |= 1 << (b & 31);
        }
        s
    }

    /// A generic key `"[a-z]{0,max}"` that is none of a few literal keys, and the slices
    /// `[a-z]+`, `[a-z]{1,3}`, `[a-z]{1,10}`.
    fn build(x: &mut ExprSet, max: Option<u32>) -> (ExprId, [ExprId; 3]) {
        let az = x.mk_byte_set(&set(b'a', b'z')).unwrap();
        let body = x.mk_repeat(az, 0, max).unwrap();
        let lits: alloc::vec::Vec<ExprId> = ["apple", "apply", "banana"]
            .iter()
            .map(|k| x.mk_literal(k.as_bytes()).unwrap())
            .collect();
        let keys = x.mk_or(&lits).unwrap();
        let not_keys = x.mk_not(keys).unwrap();
        let key = x.mk_and(&[body, not_keys]).unwrap();
        let q = x.mk_byte(b'"').unwrap();
        let tail = x.mk_concat(key, q).unwrap();
        let e = x.mk_concat(q, tail).unwrap();
        let slices = [
            x.mk_repeat(az, 1, None).unwrap(),
            x.mk_repeat(az, 1, Some(3)).unwrap(),
            x.mk_repeat(az, 1, Some(10)).unwrap(),
        ];
        (e, slices)
    }

    #[test]
    fn remembered_pairs_agree_with_a_fresh_search() {
        // One store answers every query (its memo grows); each answer is checked against a
        // store that has never run the check.
        let limits = Limits::default();
        let mut shared = ExprSet::new(&limits);
        let (mut yes, mut no) = (0, 0);
        for max in [None, Some(6)] {
            let (e, slices) = build(&mut shared, max);
            for text in [
                "\"", "\"a", "\"ap", "\"appl", "\"apple", "\"b", "\"banan", "\"zzzz",
            ] {
                for (k, &slice) in slices.iter().enumerate() {
                    let d = shared.derivative_bytes(e, text.as_bytes()).unwrap();
                    let got = shared
                        .is_prefix_contained(slice, d, 512, 1 << 20, None)
                        .unwrap();
                    let mut fresh = ExprSet::new(&limits);
                    let (fe, fslices) = build(&mut fresh, max);
                    let fd = fresh.derivative_bytes(fe, text.as_bytes()).unwrap();
                    let want = fresh
                        .is_prefix_contained(fslices[k], fd, 512, 1 << 20, None)
                        .unwrap();
                    assert_eq!(got, want, "max {max:?}, {text:?}, slice {k}");
                    if got { yes += 1 } else { no += 1 }
                }
            }
        }
        assert!(yes > 10 && no > 10, "{yes} contained, {no} not");
        assert!(!shared.prefix_memo.is_empty());
    }
}
