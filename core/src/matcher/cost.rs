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
