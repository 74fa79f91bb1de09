//! Budget mode's view of a lexer state: the tokens the lexer decides alone, grouped by the
//! lexer state each one ends in.
//!
//! [`crate::Matcher::compute_mask_within`] needs, for every allowed token, the greedy token
//! count of the shortest completion after it. A token of `within(s)` (the tokens whose bytes
//! all keep a lexeme of state `s` alive, see `statemask.rs`) crosses no lexeme boundary, so
//! after it the parser's rows are those of now and only the top lexer state differs: its
//! completion is a function of the state it ends in. Grouping `within(s)` by that state
//! turns budget mode's walk of the whole trie through the parser (every allowed token's
//! bytes pushed) into one push and one search per group, plus one push per allowed token
//! outside `within(s)` (those that cross a lexeme boundary: usually a few dozen, like `",`).
//!
//! Building a state's groups takes one lexer-only walk of the trie (a table read per node,
//! as a state mask's first build). They are kept per lexer state beside the state masks, in
//! the grammar's master tables (budget mode always runs on them, never on a snapshot, so
//! snapshots do not copy them), within the state masks' memory bound; past it they are
//! built for the call and dropped. A group is a token list, or a mask when it holds at
//! least as many tokens as a mask has words (fewer bytes either way).

use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::vec::Vec;

use super::Parser;
use super::statemask::LexerSplit;
use crate::error::LimitKind;
use crate::lexer::{Lexer, StateId};
use crate::slicer::JSON_TEXT;
use crate::toktrie::{Split, Splitter, StopWalk};
use crate::vocab::Vocabulary;
use sieve_kernels as kernels;

/// The tokens of `within(s)` that end in one lexer state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EndGroup {
    /// The lexer state the tokens end in.
    pub(crate) state: StateId,
    /// The group's shortest token: pushing it reaches the group's parser state.
    pub(crate) rep: u32,
    /// `tokens[start..end]`, or `dense[start..end]` (mask words) when `dense`.
    start: u32,
    end: u32,
    dense: bool,
}

/// `within(s)` of one lexer state, grouped by end state.
#[derive(Debug)]
pub(crate) struct Ends {
    /// `within(s)` with the duplicate ids of its tokens, `mask_words` long.
    within: Box<[u32]>,
    groups: Box<[EndGroup]>,
    /// The tokens of the listed groups.
    tokens: Box<[u32]>,
    /// The masks of the dense groups.
    dense: Box<[u32]>,
}

impl Ends {
    /// `within(s)` as a mask (duplicate ids included).
    pub(crate) fn within(&self) -> &[u32] {
        &self.within
    }

    /// The groups, by end state.
    pub(crate) fn groups(&self) -> &[EndGroup] {
        &self.groups
    }

    /// Sets the bits of group `g`'s tokens in `mask` (duplicate ids aside).
    pub(crate) fn or_group(&self, g: &EndGroup, mask: &mut [u32]) {
        let range = g.start as usize..g.end as usize;
        if g.dense {
            kernels::or_into(mask, self.dense.get(range).unwrap_or(&[]));
        } else {
            kernels::set_bits(mask, self.tokens.get(range).unwrap_or(&[]));
        }
    }

    fn bytes(&self) -> usize {
        core::mem::size_of::<Ends>()
            + (self.within.len() + self.tokens.len() + self.dense.len()) * 4
            + self.groups.len() * core::mem::size_of::<EndGroup>()
    }
}

impl Parser {
    /// The [`Ends`] of the top lexer state: remembered, or built now (and remembered while
    /// the state masks' bound has room). `Ok(None)` on a snapshot or when the memory budget
    /// has no room to build them (narrow by walking the trie then). A lexer budget run into
    /// while building is the error.
    pub(crate) fn top_ends(&mut self, vocab: &Vocabulary) -> Result<Option<Arc<Ends>>, LimitKind> {
        let Some(&top) = self.stack.last() else {
            return Ok(None);
        };
        if self.snapshot.is_some() {
            return Ok(None);
        }
        let idx = top.state.as_usize();
        if let Some(Some(ends)) = self.state_masks.ends.get(idx) {
            return Ok(Some(Arc::clone(ends)));
        }
        // The build holds a mask, the tokens by end state, and the groups (at most a list
        // entry per token, or a mask per group of at least a mask's words).
        let words = vocab.mask_words();
        let need = words * 4 * 3 + vocab.vocab_size() * 16 + (idx + 1) * 8;
        if need > self.free_bytes() {
            return Ok(None);
        }
        let ends = Arc::new(self.build_ends(vocab, top.state)?);
        let m = &mut self.state_masks;
        if m.bytes + m.ends_bytes + ends.bytes() <= m.max_bytes {
            if m.ends.len() <= idx {
                m.ends.resize(idx + 1, None);
            }
            if let Some(slot) = m.ends.get_mut(idx) {
                m.changes += 1;
                m.ends_bytes += ends.bytes();
                *slot = Some(Arc::clone(&ends));
            }
        }
        Ok(Some(ends))
    }

    fn build_ends(&mut self, vocab: &Vocabulary, state: StateId) -> Result<Ends, LimitKind> {
        let words = vocab.mask_words();
        let mut within = alloc::vec![0u32; words].into_boxed_slice();
        // With a slice whose tokens loop in one state once they reach it (inside a string:
        // after its first character), the slice's tokens are that state's group but for
        // the few that never reach it: only the rest trie is walked in full, and the trie
        // as far as the loop state.
        let mut slice = None;
        if let Some(s) = self
            .lexer
            .slice_for(state)
            .and_then(|k| vocab.slices().get(k))
            && let Some(l) = self.slice_loop(state, s.pattern())?
        {
            slice = Some((s, l));
        }
        let mut runs = Runs::default();
        if let Some((_, l)) = slice {
            runs.group(l);
        }
        let trie = slice.map_or(vocab.trie(), |(s, _)| s.rest());
        let mut stack = core::mem::take(&mut self.state_masks.split_stack);
        let mut split = LexerSplit {
            lexer: &mut self.lexer,
            error: None,
        };
        let walked = trie.walk_split_ends(&mut split, state, &mut stack, |token, end| {
            kernels::set_bit(&mut within, token);
            runs.add(end, token);
        });
        let mut error = split.error;
        self.state_masks.split_stack = stack;
        // The slice's tokens that do not end in the loop state (primaries).
        let mut off_loop = Vec::new();
        let walked = walked.and_then(|()| {
            let Some((s, l)) = slice else {
                return Ok(());
            };
            let mut split = LoopSplit {
                inner: LexerSplit {
                    lexer: &mut self.lexer,
                    error: None,
                },
                loop_state: l,
            };
            let mut stack = Vec::new();
            let r = vocab.trie().walk_split_ends(
                &mut split,
                (state, 0),
                &mut stack,
                |token, (end, _)| {
                    if kernels::test_bit(s.mask(), token) {
                        off_loop.push(token);
                        runs.add(end, token);
                    }
                },
            );
            error = error.or(split.inner.error);
            r
        });
        if let Err(StopWalk) = walked {
            return Err(error.unwrap_or(LimitKind::Fuel));
        }
        let looped = slice.map(|(s, _)| {
            kernels::or_into(&mut within, s.mask());
            // The loop state's group: the slice but the tokens (and their duplicates) that
            // end elsewhere.
            let mut m = Vec::from(s.mask());
            let mut off = alloc::vec![0u32; words];
            kernels::set_bits(&mut off, &off_loop);
            vocab.trie().or_duplicates(&mut off);
            kernels::andnot_into(&mut m, &off);
            m
        });
        vocab.trie().or_duplicates(&mut within);
        Ok(group_runs(vocab, within, runs.runs, looped.as_deref()))
    }

    /// The loop state of `pattern`, a slice of JSON string text ([`JSON_TEXT`] repeated),
    /// from `state`: a state `l` that every character leads to from `l` itself, reached by
    /// one of a few characters from `state` (inside a string, the state after any first
    /// character; where names are expected too, after one that starts none). `None` when
    /// none is found or `pattern` is another slice.
    fn slice_loop(&mut self, state: StateId, pattern: &str) -> Result<Option<StateId>, LimitKind> {
        if !pattern.starts_with(JSON_TEXT) {
            return Ok(None);
        }
        let mut tried = Vec::with_capacity(4);
        for c in [b'a', b'~', b'`', b'|'] {
            let l = self.lexer.next(state, c)?;
            if tried.contains(&l) {
                continue;
            }
            tried.push(l);
            if self.every_char_leads(l, l)? {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }

    /// Whether every character of JSON string text leads from `from` to `to`, a live state
    /// that is not lazy, without a dead or lazy state on the way: every printable ASCII byte
    /// but the quote and the backslash, and every well-formed UTF-8 sequence of two to four
    /// bytes (a few hundred table reads, memoised by state).
    fn every_char_leads(&mut self, from: StateId, to: StateId) -> Result<bool, LimitKind> {
        if to == StateId::DEAD || self.lexer.flags(to) & Lexer::LAZY != 0 {
            return Ok(false);
        }
        for b in 0x20u8..0x7F {
            if b != b'"' && b != b'\\' && self.lexer.next(from, b)? != to {
                return Ok(false);
            }
        }
        // (lexer state, continuation bytes still due after this one), explored once each;
        // continuation bytes past the second are any of 0x80..=0xBF.
        let mut todo: Vec<(StateId, u8, u8, u8)> = Vec::new();
        for lead in 0xC2u8..=0xF4 {
            let (due, lo, hi) = match lead {
                0xC2..=0xDF => (0, 0x80, 0xBF),
                0xE0 => (1, 0xA0, 0xBF),
                0xED => (1, 0x80, 0x9F),
                0xE1..=0xEF => (1, 0x80, 0xBF),
                0xF0 => (2, 0x90, 0xBF),
                0xF4 => (2, 0x80, 0x8F),
                _ => (2, 0x80, 0xBF),
            };
            todo.push((self.lexer.next(from, lead)?, due, lo, hi));
        }
        let mut seen: Vec<(StateId, u8, u8, u8)> = Vec::new();
        while let Some(item @ (q, due, lo, hi)) = todo.pop() {
            if seen.contains(&item) {
                continue;
            }
            if seen.len() > 64 {
                return Ok(false);
            }
            seen.push(item);
            if q == StateId::DEAD || self.lexer.flags(q) & Lexer::LAZY != 0 {
                return Ok(false);
            }
            for b in lo..=hi {
                let next = self.lexer.next(q, b)?;
                match due.checked_sub(1) {
                    None if next != to => return Ok(false),
                    None => {}
                    Some(due) => todo.push((next, due, 0x80, 0xBF)),
                }
            }
        }
        Ok(true)
    }
}

/// The [`Ends`] of `within` grouped as `runs` (tokens by end state; the first run also holds
/// the tokens of `looped`, a mask, when given): a token list each, or a mask when it holds
/// at least as many tokens as a mask has words.
fn group_runs(
    vocab: &Vocabulary,
    within: Box<[u32]>,
    runs: Vec<(StateId, Vec<u32>)>,
    looped: Option<&[u32]>,
) -> Ends {
    let trie = vocab.trie();
    let words = vocab.mask_words();
    let mut groups = Vec::with_capacity(runs.len());
    let listed: usize = runs
        .iter()
        .map(|(_, r)| r.len())
        .filter(|&n| n < words)
        .sum();
    let mut tokens = Vec::with_capacity(listed);
    let mut dense: Vec<u32> = Vec::new();
    for (i, (end_state, run)) in runs.into_iter().enumerate() {
        let slice = looped.filter(|_| i == 0);
        let first_of_slice = || {
            let s = slice?;
            let w = s.iter().position(|&w| w != 0)?;
            Some(w as u32 * 32 + s.get(w)?.trailing_zeros())
        };
        let shortest = run
            .iter()
            .copied()
            .min_by_key(|&t| trie.token_bytes(t).len());
        let Some(rep) = shortest.or_else(first_of_slice) else {
            continue;
        };
        let is_dense = slice.is_some() || run.len() >= words;
        let start = if is_dense { dense.len() } else { tokens.len() };
        if is_dense {
            dense.resize(start + words, 0);
            let m = dense.get_mut(start..).unwrap_or(&mut []);
            kernels::set_bits(m, &run);
            if let Some(s) = slice {
                kernels::or_into(m, s);
            }
        } else {
            tokens.extend_from_slice(&run);
        }
        let end = if is_dense { dense.len() } else { tokens.len() };
        groups.push(EndGroup {
            state: end_state,
            rep,
            start: start as u32,
            end: end as u32,
            dense: is_dense,
        });
    }
    Ends {
        within,
        groups: groups.into_boxed_slice(),
        tokens: tokens.into_boxed_slice(),
        dense: dense.into_boxed_slice(),
    }
}

/// Tokens by end state, in the order the states were met. Neighbours in the trie mostly end
/// in the same state: the last run is tried before the map.
#[derive(Default)]
struct Runs {
    runs: Vec<(StateId, Vec<u32>)>,
    index: hashbrown::HashMap<u32, usize>,
    last: Option<(StateId, usize)>,
}

impl Runs {
    /// The run of `state`, made if new.
    fn group(&mut self, state: StateId) -> usize {
        match self.last {
            Some((s, i)) if s == state => i,
            _ => {
                let runs = &mut self.runs;
                let i = *self.index.entry(state.0).or_insert_with(|| {
                    runs.push((state, Vec::new()));
                    runs.len() - 1
                });
                self.last = Some((state, i));
                i
            }
        }
    }

    fn add(&mut self, state: StateId, token: u32) {
        let i = self.group(state);
        if let Some((_, run)) = self.runs.get_mut(i) {
            run.push(token);
        }
    }
}

/// [`LexerSplit`] that also stops where a slice's token would loop for good: entries carry
/// the continuation bytes a character still needs, and a push that completes a character in
/// the loop state rejects the node instead (its subtree's slice tokens end there). Deferred
/// nodes are rejected too (no slice token crosses a lexeme boundary).
struct LoopSplit<'a> {
    inner: LexerSplit<'a>,
    loop_state: StateId,
}

impl Splitter for LoopSplit<'_> {
    type Entry = (StateId, u8);

    fn split(&mut self, top: (StateId, u8), byte: u8) -> Result<Split<(StateId, u8)>, StopWalk> {
        let due = match byte {
            0..=0x7F => 0,
            0x80..=0xBF => top.1.saturating_sub(1),
            0xC0..=0xDF => 1,
            0xE0..=0xEF => 2,
            _ => 3,
        };
        Ok(match self.inner.split(top.0, byte)? {
            Split::Push(next) if due == 0 && next == self.loop_state => Split::Reject,
            Split::Push(next) => Split::Push((next, due)),
            Split::Reject | Split::Defer => Split::Reject,
        })
    }
}
