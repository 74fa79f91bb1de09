//! Budget mode: masks narrowed to tokens after which the output can still be completed
//! within a number of tokens, and the completion counts it rests on (see
//! `core/docs/budget.md`).

use alloc::vec::Vec;

use super::{Matcher, Plan, advance_plan};
use crate::earley::ends::Ends;
use crate::earley::{Completion, Parser};
use crate::error::{LimitKind, MatcherError};
use crate::toktrie::TokTrie;
use crate::vocab::Vocabulary;
use sieve_kernels as kernels;

impl Matcher {
    /// How many tokens a complete output is away: the number of tokens of the greedy
    /// longest-match tokenization ([`crate::toktrie::TokTrie::greedy_count`]) of
    /// [`Matcher::shortest_completion`], or of the completion
    /// [`Matcher::compute_mask_within`] remembers for this state if that one takes fewer.
    /// `Some(0)` when accepting; `None` when no completion exists (or the vocabulary cannot
    /// spell it greedily).
    ///
    /// Every tokenization of an accepted string is allowed by exact masks, so this many
    /// tokens are always enough: with `completion_tokens() <= n`, a generation of at most
    /// `n` more tokens that follows [`Matcher::compute_mask_within`] ends accepting.
    ///
    /// # Errors
    /// As [`Matcher::shortest_completion`].
    pub fn completion_tokens(&mut self) -> Result<Option<usize>, MatcherError> {
        self.with_tables(|m| {
            let s = m.shortest_completion_held()?;
            let trie = m.grammar.match_vocab().trie();
            let mut best = s.and_then(|s| trie.greedy_count(&s));
            if let Some(plan) = m.plan.as_ref().filter(|p| p.depth == m.parser.depth())
                && let Some(n) = trie.greedy_count(&plan.bytes)
            {
                best = Some(best.map_or(n, |b| b.min(n)));
            }
            Ok(best)
        })
    }

    /// Budget mode: the mask of [`Matcher::compute_mask`] narrowed to the tokens after which
    /// the output can still be completed within the budget. `remaining` is the number of
    /// tokens the host may still consume, this one included.
    ///
    /// Token `t` (not EOS) stays iff after `t` a completion of at most `remaining - 1`
    /// tokens is known: the greedy tokenization of the shortest completion after `t`, or of
    /// the rest of a remembered completion when `t`'s bytes start it. EOS tokens stay iff
    /// the output is accepting, as in [`Matcher::compute_mask`]. When `remaining` is less
    /// than [`Matcher::completion_tokens`], it is raised to that: the mask then follows the
    /// fastest known way to a complete output.
    ///
    /// # Guarantee
    /// If `completion_tokens() <= remaining`, the mask holds the first token of a completion
    /// within `remaining` tokens (the first greedy token of the best completion known, or an
    /// EOS token when accepting and the vocabulary has one), and every token it holds leaves
    /// a completion within `remaining - 1` tokens known. The matcher remembers the best
    /// completion across [`Matcher::consume_token`], so by induction a forward generation
    /// that calls this with `remaining = n - i` at step `i` and picks from the mask is
    /// accepting after at most `n` tokens (and may stop earlier on EOS). The guarantee is for
    /// forward generation: [`Matcher::rollback`] and [`Matcher::reset`] forget the
    /// remembered completion, and the next call starts again from the shortest one. When no
    /// completion exists at all, the mask is [`Matcher::compute_mask`]'s.
    ///
    /// # Cost
    /// One shortest-completion search per distinct parser state the allowed tokens lead to,
    /// counts kept while the top row stays the same. Tokens that stay in the current lexeme
    /// are grouped by the lexer state they end in (groups kept per lexer state with the
    /// grammar's tables: one push per group); tokens that cross a lexeme boundary are pushed
    /// one by one. All within one step's budgets ([`crate::Limits::fuel_per_mask`] for the
    /// whole call). See `core/docs/budget.md` for how, and numbers.
    ///
    /// # Errors
    /// As [`Matcher::compute_mask`]; a budget run into by the searches is not sticky (see
    /// [`Matcher::shortest_completion`]). On error the mask is zeroed.
    pub fn compute_mask_within(
        &mut self,
        mask: &mut [u32],
        remaining: usize,
    ) -> Result<(), MatcherError> {
        let before = self.fuel_total();
        let done = self.with_tables(|m| m.compute_mask_within_held(mask, remaining));
        self.step_done(before);
        done
    }

    /// [`Matcher::compute_mask_within`] with the tables held.
    fn compute_mask_within_held(
        &mut self,
        mask: &mut [u32],
        remaining: usize,
    ) -> Result<(), MatcherError> {
        self.compute_mask_held(mask)?;
        if self.stopped || self.gated() {
            return Ok(());
        }
        let vocab = self.grammar.match_vocab().clone();
        let mut kept = Vec::new();
        let r = self.with_rebuild(|m| m.narrow(&vocab, mask, &mut kept, remaining));
        self.charge_outside();
        match r {
            Ok(true) => {
                vocab.trie().or_duplicates(&mut kept);
                kernels::set_bits(&mut kept, vocab.eos_tokens());
                // `kept` is `mask_words` long; the words of `mask` past it are zero already.
                kernels::and_into(mask, &kept);
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(kind) => {
                kernels::fill(mask, 0);
                self.search_failed(kind)
            }
        }
    }

    /// Budget mode's narrowing (see [`Matcher::compute_mask_within`]): sets in `kept` the
    /// bits of the allowed tokens (`mask`'s; EOS and duplicate ids aside) after which a
    /// completion within `remaining - 1` tokens is known, and remembers the best completion
    /// known here. `Ok(false)` when no completion exists (nothing to narrow).
    fn narrow(
        &mut self,
        vocab: &Vocabulary,
        mask: &[u32],
        kept: &mut Vec<u32>,
        remaining: usize,
    ) -> Result<bool, LimitKind> {
        self.reserve_output(0)?;
        self.parser.start_step();
        self.completion.begin(&self.parser);
        kept.clear();
        kept.resize(vocab.mask_words(), 0);
        let depth = self.parser.depth();
        let trie = vocab.trie();
        // The completions known here, fewest tokens first: the shortest one, and the one
        // remembered from the last step.
        let mut plans: Vec<(Vec<u8>, usize)> = Vec::new();
        if let Some(s) = self.completion.shortest(&mut self.parser)?
            && let Some(n) = trie.greedy_count(&s)
        {
            plans.push((s, n));
        }
        if let Some(plan) = self.plan.take().filter(|p| p.depth == depth)
            && let Some(n) = trie.greedy_count(&plan.bytes)
        {
            plans.push((plan.bytes, n));
        }
        plans.sort_by_key(|&(_, n)| n);
        let Some((best, best_n)) = plans.first() else {
            // No completion: nothing to steer towards.
            return Ok(false);
        };
        self.plan = Some(Plan {
            depth,
            bytes: best.clone(),
        });
        let Some(limit) = remaining.max(*best_n).checked_sub(1) else {
            // Accepting with no budget left: EOS only.
            return Ok(true);
        };
        // Every token was within `widest` here last time (a function of the state, as the
        // shortest completion is): nothing to narrow at a budget at least that large.
        let key = self.parser.state_key();
        if let Some((k, Some(widest))) = self.widest
            && k == key
            && widest <= limit
        {
            return Ok(false);
        }
        // Counts from the last call stay good while the top row is the same.
        let mut cache = core::mem::take(&mut self.counts);
        if cache.serial != Some(key.0) || cache.entries() > MAX_KEPT_COUNTS {
            cache = CountCache::default();
        }
        cache.serial = Some(key.0);
        let mut counts = Counts::new(depth, self.parser.top_row(), limit, cache);
        match self.parser.top_ends(vocab) {
            Ok(Some(ends)) => self.narrow_by_ends(&ends, vocab, mask, kept, &mut counts),
            Ok(None) => self.narrow_by_walk(vocab, kept, &mut counts),
            Err(kind) => counts.failed = Some(kind),
        }
        self.parser.truncate(depth);
        // A failed search leaves no entry; a rebuild renames rows and states (and resets the
        // cache itself).
        if counts.failed.is_none() && self.parser.error().is_none() {
            self.counts = counts.cache;
        }
        if let Some(kind) = counts.failed.or(self.parser.error()) {
            return Err(kind);
        }
        // The tokens that start a known completion and leave one within `limit` tokens.
        for (s, _) in &plans {
            trie.prefix_tokens(s, |t, len| {
                let rest = s.get(len..).and_then(|rest| trie.greedy_count(rest));
                if rest.is_some_and(|n| n <= limit) {
                    kernels::set_bit(kept, t);
                }
            });
        }
        // The key again: a rebuild during the walk would have renamed the rows.
        self.widest = Some((self.parser.state_key(), counts.widest));
        Ok(true)
    }

    /// [`Matcher::narrow`] by the groups of the top lexer state: one count per group of
    /// tokens that stay in the current lexeme (by pushing its shortest token), one per
    /// allowed token that crosses a lexeme boundary. A budget run into ends it in
    /// `counts.failed`; the parser is left at its depth.
    fn narrow_by_ends(
        &mut self,
        ends: &Ends,
        vocab: &Vocabulary,
        mask: &[u32],
        kept: &mut [u32],
        counts: &mut Counts,
    ) {
        let trie = vocab.trie();
        for g in ends.groups() {
            let bytes = trie.token_bytes(g.rep);
            let within = self.count_after(bytes, trie, counts);
            debug_assert!(
                counts.failed.is_some() || self.parser.top_entry().1 == g.state.0,
                "a group's token ends in its state"
            );
            self.parser.truncate(counts.depth);
            if counts.failed.is_some() {
                return;
            }
            if within {
                ends.or_group(g, kept);
            }
        }
        // The allowed tokens that cross a lexeme boundary (EOS among them when accepting:
        // its bytes do not push, and the caller sets it).
        for (w, (&m, &inside)) in mask.iter().zip(ends.within()).enumerate() {
            let mut bits = m & !inside;
            while bits != 0 {
                let t = (w as u32) * 32 + bits.trailing_zeros();
                bits &= bits - 1;
                let within = self.count_after(trie.token_bytes(t), trie, counts);
                self.parser.truncate(counts.depth);
                if counts.failed.is_some() {
                    return;
                }
                if within {
                    kernels::set_bit(kept, t);
                }
            }
        }
    }

    /// Pushes `bytes` and counts the completion after them: whether it is within the
    /// limit (false when they do not push). The caller truncates the parser.
    fn count_after(&mut self, bytes: &[u8], trie: &TokTrie, counts: &mut Counts) -> bool {
        if !self.push_bytes(bytes) {
            counts.failed = counts.failed.or(self.parser.error());
            return false;
        }
        counts.within(&mut self.parser, &mut self.completion, trie)
    }

    /// [`Matcher::narrow`] by walking the trie through the parser (when the top state's
    /// groups do not fit the memory budget).
    fn narrow_by_walk(&mut self, vocab: &Vocabulary, kept: &mut [u32], counts: &mut Counts) {
        let trie = vocab.trie();
        let completion = &mut self.completion;
        trie.walk_visit(&mut self.parser, |parser, t| {
            if counts.within(parser, completion, trie) {
                kernels::set_bit(kept, t);
            }
            counts.failed.is_none()
        });
    }

    /// After `bytes` were consumed from `depth`: the remembered completion goes on if it
    /// starts with them, and is dropped otherwise.
    pub(super) fn advance_plan(&mut self, depth: usize, bytes: &[u8]) {
        advance_plan(&mut self.plan, depth, bytes);
    }
}

/// Counts kept past this many entries are dropped (they are a cache).
const MAX_KEPT_COUNTS: usize = 4096;

/// Completion counts after tokens (`None`: no completion), by the parser state a token leads
/// to from a top row: for tokens that end in that row (no lexeme ends inside them) by the
/// lexer state alone, otherwise by the path key (see `Parser::path_key`). Within one row the
/// states a token leads to, and so their shortest completions, are the same from step to
/// step: the counts are kept while the top row's serial (which names the whole row stack)
/// is the same, and dropped with the tables' state ids.
#[derive(Debug, Clone, Default)]
pub(super) struct CountCache {
    serial: Option<u64>,
    in_row: hashbrown::HashMap<u32, Option<usize>>,
    by_path: hashbrown::HashMap<Vec<u32>, Option<usize>>,
}

impl CountCache {
    fn entries(&self) -> usize {
        self.in_row.len() + self.by_path.len()
    }
}

/// One narrowing's counting: the cache, the limit, and what the counts found.
struct Counts {
    /// The parser's depth and top row before any token.
    depth: usize,
    base_row: u32,
    /// The most tokens a completion may take.
    limit: usize,
    cache: CountCache,
    path: Vec<u32>,
    /// Tokens next to each other often reach the same lexer state.
    last: Option<(u32, Option<usize>)>,
    /// The most tokens the shortest completion after a token counted so far takes (`None`:
    /// some token has no completion).
    widest: Option<usize>,
    /// The budget a search ran into.
    failed: Option<LimitKind>,
}

impl Counts {
    fn new(depth: usize, base_row: u32, limit: usize, cache: CountCache) -> Counts {
        Counts {
            depth,
            base_row,
            limit,
            cache,
            path: Vec::new(),
            last: None,
            widest: Some(0),
            failed: None,
        }
    }

    /// Whether the shortest completion from the parser's state takes at most `limit`
    /// tokens (greedily tokenized); a search's budget error is kept in `failed`.
    fn within(&mut self, parser: &mut Parser, completion: &mut Completion, trie: &TokTrie) -> bool {
        let (row, state) = parser.top_entry();
        let in_row = row == self.base_row;
        let known = if in_row {
            match self.last {
                Some((s, n)) if s == state => Some(n),
                _ => self.cache.in_row.get(&state).copied(),
            }
        } else {
            parser.path_key(self.base_row, &mut self.path);
            self.cache.by_path.get(&self.path).copied()
        };
        let n = match known {
            Some(n) => n,
            None => {
                let n = match completion.shortest(parser) {
                    Ok(s) => s.and_then(|s| trie.greedy_count(&s)),
                    Err(kind) => {
                        self.failed = Some(kind);
                        return false;
                    }
                };
                if in_row {
                    self.cache.in_row.insert(state, n);
                } else {
                    self.cache.by_path.insert(self.path.clone(), n);
                }
                n
            }
        };
        if in_row {
            self.last = Some((state, n));
        }
        self.widest = self.widest.zip(n).map(|(w, n)| w.max(n));
        n.is_some_and(|n| n <= self.limit)
    }
}
