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
    /// A cheap guess of what the next mask costs (see [`MaskCost`]); no tables are touched
    /// and nothing is computed.
    pub fn mask_cost_hint(&self) -> MaskCost {
        if self.error.is_some() || self.stopped || self.gate.is_some() {
            return MaskCost::Copy;
        }
        if self.cached_key == Some(self.parser.state_key()) {
            return MaskCost::Copy;
        }
        MaskCost::Walk
    }
}
