//! `Matcher::fill_draft_tree` for C++: masks for every node of a draft token tree
//! (speculative decoding), by the core's [`sieve_core::Matcher::fill_draft_tree`].

use sieve_core::DraftTreeError;

use crate::{Error, ErrorCode, Matcher, guard};

impl Matcher {
    /// Masks for every node of a draft token tree, in one pass that walks each shared
    /// prefix once. Node `i` has token `tokens[i]` and parent `parents[i]`: an earlier node
    /// (`< i`) or -1 for the current state. `masks` holds rows of `mask_words` words: row 0
    /// receives the mask at the current state, row `i + 1` the mask after the path to node
    /// `i`. A node whose token its parent's row does not allow (or out of range, or after an
    /// EOS) gets a zero row, and so do its descendants. Returns how many rows hold a mask
    /// (row 0 and the accepted nodes'). The matcher ends in the state where it started.
    ///
    /// # Errors
    /// [`ErrorCode::InvalidArgument`] when `parents` and `tokens` differ in length or a parent
    /// is not an earlier node; [`ErrorCode::InsufficientSize`] when `mask_words` is below
    /// [`Matcher::mask_words`] or `masks` has fewer than `(tokens.len() + 1) * mask_words`
    /// words (nothing is written then). The sticky matcher error, or a budget exceeded on the
    /// way ([`ErrorCode::LimitExceeded`], now sticky), with `masks` zeroed.
    pub fn fill_draft_tree(
        &mut self,
        tokens: &[u32],
        parents: &[i32],
        masks: &mut [u32],
        mask_words: usize,
    ) -> Result<usize, Error> {
        guard(|| {
            let m = &mut self.matcher;
            match m.fill_draft_tree(tokens, parents, masks, mask_words) {
                Ok(fill) if fill.failed_row.is_none() => Ok(fill.filled),
                Ok(_) => {
                    let rows = (tokens.len() + 1) * mask_words;
                    masks[..rows].fill(0);
                    Err(m.error().map_or_else(
                        || Error::new(ErrorCode::MatcherError, "matcher in error"),
                        Error::matcher,
                    ))
                }
                Err(
                    e @ (DraftTreeError::RowTooShort { .. } | DraftTreeError::TooFewRows { .. }),
                ) => Err(Error::new(ErrorCode::InsufficientSize, e)),
                Err(e) => Err(Error::new(ErrorCode::InvalidArgument, e)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::{ErrorCode, grammar_from_regex, matcher_new, tokenizer_from_byte_table};

    #[test]
    fn fill_draft_tree_equals_one_by_one() {
        let words: [&[u8]; 5] = [b"a", b"b", b"ab", b"<|eos|>", b"c"];
        let bytes: Vec<u8> = words.concat();
        let lens: Vec<u32> = words.iter().map(|w| w.len() as u32).collect();
        let tok = tokenizer_from_byte_table(&bytes, &lens, &[3], &[3]).expect("tokenizer");
        let g = grammar_from_regex(&tok, "(a|b)+c").expect("regex compiles");
        let mut m = matcher_new(&g).expect("matcher");
        m.consume_token(0).expect("a");
        // After "a": b, then c under it ("abc", complete) and a under that (refused); ab; c
        // ("ac"); EOS (refused: "a" is not complete).
        let tokens = [1, 4, 2, 4, 3, 0];
        let parents = [-1, 0, -1, -1, -1, 1];
        let mut masks = vec![0xABAB_ABABu32; tokens.len() + 1];
        let filled = m
            .fill_draft_tree(&tokens, &parents, &mut masks, 1)
            .expect("tree");
        let mut want = Vec::new();
        for node in -1..tokens.len() as i32 {
            let mut path = Vec::new();
            let mut i = node;
            while i >= 0 {
                path.push(tokens[i as usize]);
                i = parents[i as usize];
            }
            let mut r = matcher_new(&g).expect("matcher");
            r.consume_token(0).expect("a");
            let mut row = [0u32];
            if path.iter().rev().all(|&t| r.consume_token(t).is_ok()) {
                r.compute_mask(&mut row).expect("mask");
            }
            want.push(row[0]);
        }
        assert_eq!(masks, want);
        assert_eq!(filled, 1 + want[1..].iter().filter(|&&w| w != 0).count());
        assert_eq!(want[6], 0, "a token after the finished c is refused");
        // The matcher is where it started: "a" consumed, b and c allowed.
        let mut row = [0u32];
        m.compute_mask(&mut row).expect("mask");
        assert_eq!(row[0], want[0]);

        let e = m
            .fill_draft_tree(&[1, 1], &[-1, 1], &mut masks, 1)
            .expect_err("bad parent");
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = m
            .fill_draft_tree(&[1, 1], &[-1, 0], &mut masks[..2], 1)
            .expect_err("short");
        assert_eq!(e.code, ErrorCode::InsufficientSize);
        let e = m.consume_token(3).expect_err("eos mid-word");
        let err = m
            .fill_draft_tree(&[1], &[-1], &mut masks, 1)
            .expect_err("matcher in error");
        assert_eq!(err.code, e.code);
        assert_eq!(&masks[..2], &[0, 0]);
    }
}
