//! Budget mode: masks narrowed to tokens after which the output can still be completed
//! within a number of tokens, and the completion counts it rests on (see
//! `core/docs/budget.md`). Moved here from `matcher.rs` unchanged.

use alloc::vec::Vec;

use super::{Matcher, Plan, advance_plan};
use crate::error::{LimitKind, MatcherError};
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
            let trie = m.grammar.vocab().trie();
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
    /// One shortest-completion search per distinct parser state the allowed tokens lead to
    /// (tokens that stay inside one lexeme share one), each token's bytes pushed once; all
    /// within one step's budgets ([`crate::Limits::fuel_per_mask`] for the whole call). See
    /// `core/docs/budget.md` for numbers.
    ///
    /// # Errors
    /// As [`Matcher::compute_mask`]; a budget run into by the searches is not sticky (see
    /// [`Matcher::shortest_completion`]). On error the mask is zeroed.
    pub fn compute_mask_within(
        &mut self,
        mask: &mut [u32],
        remaining: usize,
    ) -> Result<(), MatcherError> {
        self.with_tables(|m| m.compute_mask_within_held(mask, remaining))
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
        let vocab = self.grammar.vocab().clone();
        let mut kept = Vec::new();
        let r = self.with_rebuild(|m| m.narrow(&vocab, &mut kept, remaining));
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
    /// bits of the allowed tokens (EOS and duplicate ids aside) after which a completion
    /// within `remaining - 1` tokens is known, and remembers the best completion known here.
    /// `Ok(false)` when no completion exists (nothing to narrow).
    fn narrow(
        &mut self,
        vocab: &Vocabulary,
        kept: &mut Vec<u32>,
        remaining: usize,
    ) -> Result<bool, LimitKind> {
        self.reserve_output(0)?;
        self.parser.start_step();
        self.completion.begin(&self.parser);
        kept.clear();
        kept.resize(vocab.mask_words(), 0);
        let depth = self.parser.depth();
        let base_row = self.parser.top_row();
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
        // Tokens of the shortest completion after a token, by the parser state it leads to:
        // for tokens that end in the current row (most: no lexeme ends inside them) the lexer
        // state alone, otherwise the path key (see `Parser::path_key`).
        let mut in_row: hashbrown::HashMap<u32, Option<usize>> = hashbrown::HashMap::new();
        let mut cache: hashbrown::HashMap<Vec<u32>, Option<usize>> = hashbrown::HashMap::new();
        let mut path = Vec::new();
        let mut failed = None;
        // The most tokens the shortest completion after a token takes (`None`: no completion).
        let mut widest: Option<usize> = Some(0);
        // The tokens that start a known completion and leave one within `limit` tokens.
        let mut by_plan: Vec<u32> = Vec::new();
        for (s, _) in &plans {
            trie.prefix_tokens(s, |t, len| {
                let rest = s.get(len..).and_then(|rest| trie.greedy_count(rest));
                if rest.is_some_and(|n| n <= limit) {
                    by_plan.push(t);
                }
            });
        }
        by_plan.sort_unstable();
        // Tokens next to each other in the trie often reach the same lexer state.
        let mut last: Option<(u32, Option<usize>)> = None;
        let completion = &mut self.completion;
        trie.walk_visit(&mut self.parser, |parser, t| {
            // Plan tokens are evaluated too (they usually hit the caches), for `widest`.
            let on_plan = by_plan.binary_search(&t).is_ok();
            let within = {
                let (row, state) = parser.top_entry();
                let known = if row == base_row {
                    match last {
                        Some((s, n)) if s == state => Some(n),
                        _ => in_row.get(&state).copied(),
                    }
                } else {
                    parser.path_key(base_row, &mut path);
                    cache.get(&path).copied()
                };
                let n = match known {
                    Some(n) => n,
                    None => {
                        let n = match completion.shortest(parser) {
                            Ok(s) => s.and_then(|s| trie.greedy_count(&s)),
                            Err(kind) => {
                                failed = Some(kind);
                                return false;
                            }
                        };
                        if row == base_row {
                            in_row.insert(state, n);
                        } else {
                            cache.insert(path.clone(), n);
                        }
                        n
                    }
                };
                if row == base_row {
                    last = Some((state, n));
                }
                widest = widest.zip(n).map(|(w, n)| w.max(n));
                n.is_some_and(|n| n <= limit)
            };
            let ok = on_plan || within;
            if ok {
                kernels::set_bit(kept, t);
            }
            true
        });
        self.parser.truncate(depth);
        if let Some(kind) = failed.or(self.parser.error()) {
            return Err(kind);
        }
        // The key again: a rebuild during the walk would have renamed the rows.
        self.widest = Some((self.parser.state_key(), widest));
        Ok(true)
    }

    /// After `bytes` were consumed from `depth`: the remembered completion goes on if it
    /// starts with them, and is dropped otherwise.
    pub(super) fn advance_plan(&mut self, depth: usize, bytes: &[u8]) {
        advance_plan(&mut self.plan, depth, bytes);
    }
}
