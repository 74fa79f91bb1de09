//! What a matcher's next mask will cost, roughly: batch runners start the expensive ones first.

use super::Matcher;

/// The kind of work a matcher's next [`Matcher::compute_mask`] does, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MaskCost {
    /// Nothing to compute: an error, a stopped or gated matcher, or the state of the last
    /// mask (a copy).
    Copy,
    /// The lexer state has a remembered mask (a copy plus a few parser steps).
    StateMask,
    /// A slice's mask plus a walk of the rest of the trie.
    Slice,
    /// A walk of the whole token trie.
    Walk,
}

impl Matcher {
    /// A cheap guess of what the next mask costs (see [`MaskCost`]), read off the tables the
    /// matcher last read (the grammar's published snapshot); nothing is computed or locked.
    pub fn mask_cost_hint(&self) -> MaskCost {
        if self.error.is_some() || self.stopped || self.gate.is_some() {
            return MaskCost::Copy;
        }
        if self.cached_key == Some(self.parser.state_key()) {
            return MaskCost::Copy;
        }
        if self.parser.top_has_state_mask() {
            return MaskCost::StateMask;
        }
        match self.parser.top_slice_known() {
            Some(Some(_)) => MaskCost::Slice,
            _ => MaskCost::Walk,
        }
    }
}

impl MaskCost {
    /// A rough figure for what a mask of this kind takes, in nanoseconds, for masks of
    /// `mask_words` 32-bit words: what a batch runner weighs against waking a sleeping
    /// thread. Measured on the 2-CPU x86-64 VM of `bench/perf.md` with the Llama 3 vocabulary
    /// (4,008 words): a copy about 0.5 µs, a remembered state mask 1-2 µs, a slice 0.1 ms and
    /// a full walk 1.7 ms; scaled by the words (walks visit about 32 tokens a word).
    pub fn typical_ns(self, mask_words: usize) -> u64 {
        let words = mask_words as u64;
        match self {
            MaskCost::Copy => 100 + words / 8,
            MaskCost::StateMask => 500 + words / 4,
            MaskCost::Slice => 2_000 + words * 25,
            MaskCost::Walk => 4_000 + words * 420,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::MaskCost;
    use alloc::vec::Vec;

    #[test]
    fn typical_costs_rise_with_the_kind_and_the_vocabulary() {
        let kinds = [
            MaskCost::Copy,
            MaskCost::StateMask,
            MaskCost::Slice,
            MaskCost::Walk,
        ];
        for words in [0, 1, 1_000, 4_008, 6_250] {
            let ns: Vec<u64> = kinds.iter().map(|k| k.typical_ns(words)).collect();
            assert!(ns.windows(2).all(|w| w[0] < w[1]), "{words}: {ns:?}");
        }
        // The Llama 3 figures quoted above, within a factor of 2.
        let llama3 = |k: MaskCost| k.typical_ns(4_008);
        assert!((250..=1_000).contains(&llama3(MaskCost::Copy)));
        assert!((50_000..=200_000).contains(&llama3(MaskCost::Slice)));
        assert!((850_000..=3_400_000).contains(&llama3(MaskCost::Walk)));
    }
}
