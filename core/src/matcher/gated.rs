//! The matcher's side of a [`Gate`]: the reasoning and waiting phases in front of the
//! grammar (see [`crate::gate`] and `core/docs/gate.md`).
//!
//! While not active the matcher's parser stays at the start of the grammar, its byte log and
//! token list empty; the gate keeps one [`Record`] per token consumed (the phase, trigger
//! state and reasoning count before it), so `rollback` restores them. The activating token
//! is the parser's first consumed token: its bytes are the trigger text plus the rest of the
//! token. While waiting, the tokens that complete a trigger the grammar then rejects are
//! kept in `rejected` (recomputed after each token; remembered per trigger state when the
//! state alone decides the trigger's text, as for literal triggers).

use alloc::vec::Vec;

use hashbrown::HashMap;

use super::{Consumed, Matcher};
use crate::error::{LimitKind, MatcherError};
use crate::gate::{Gate, GatePos, MAX_TRIGGER_BYTES};
use crate::grammar::Grammar;
use sieve_kernels as kernels;

/// Where a gated matcher is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatePhase {
    /// Reasoning: every token allowed (only the end tokens once the budget is spent).
    Reasoning,
    /// Waiting for a trigger: every token allowed except those completing a trigger the
    /// grammar rejects.
    Waiting,
    /// The grammar constrains.
    Active,
}

/// The gate's state before a token.
#[derive(Debug, Clone, Copy)]
struct Snap {
    phase: GatePhase,
    pos: GatePos,
    thought: u32,
}

/// One token consumed while not active.
#[derive(Debug, Clone, Copy)]
struct Record {
    token: u32,
    before: Snap,
}

/// A matcher's gate state.
#[derive(Debug, Clone)]
pub(crate) struct GateRun {
    gate: Gate,
    phase: GatePhase,
    pos: GatePos,
    /// Reasoning tokens consumed.
    thought: u32,
    records: Vec<Record>,
    /// The state before the activating token, when a trigger activated the grammar.
    activated_from: Option<Snap>,
    /// Sorted: tokens completing a trigger from `pos` whose text the grammar rejects.
    rejected: Vec<u32>,
    /// Sorted: trigger token ids the grammar rejects (fixed).
    token_rejected: Vec<u32>,
    /// `rejected` per state, for states that alone decide the trigger text.
    remembered: HashMap<u64, Vec<u32>>,
    remembered_bytes: usize,
}

impl GateRun {
    fn first_phase(gate: &Gate) -> GatePhase {
        if gate.has_reasoning() {
            GatePhase::Reasoning
        } else if gate.has_triggers() {
            GatePhase::Waiting
        } else {
            GatePhase::Active
        }
    }

    fn snap(&self) -> Snap {
        Snap {
            phase: self.phase,
            pos: self.pos,
            thought: self.thought,
        }
    }

    fn restore(&mut self, s: Snap) {
        self.phase = s.phase;
        self.pos = s.pos;
        self.thought = s.thought;
    }

    fn exhausted(&self) -> bool {
        self.phase == GatePhase::Reasoning && self.gate.budget().is_some_and(|b| self.thought >= b)
    }

    fn is_rejected(&self, t: u32) -> bool {
        self.rejected.binary_search(&t).is_ok() || self.token_rejected.binary_search(&t).is_ok()
    }

    /// Heap bytes, charged to the matcher's budget.
    pub(crate) fn bytes(&self) -> usize {
        crate::lexer::vec_bytes(&self.records)
            + crate::lexer::vec_bytes(&self.rejected)
            + crate::lexer::vec_bytes(&self.token_rejected)
            + self.remembered_bytes
    }

    fn key(pos: GatePos) -> u64 {
        (u64::from(pos.lit) << 32) | u64::from(pos.rx)
    }
}

impl Matcher {
    /// A matcher whose grammar is behind `gate` (a reasoning phase and/or triggers; see
    /// [`crate::gate`]). `gate` must be built for the grammar's vocabulary. The gate is kept
    /// through [`Matcher::reset`].
    pub fn with_gate(grammar: &Grammar, gate: &Gate) -> Matcher {
        let mut m = Matcher::new(grammar);
        let phase = GateRun::first_phase(gate);
        m.gate = Some(alloc::boxed::Box::new(GateRun {
            gate: gate.clone(),
            phase,
            pos: gate.start_pos(),
            thought: 0,
            records: Vec::new(),
            activated_from: None,
            rejected: Vec::new(),
            token_rejected: Vec::new(),
            remembered: HashMap::new(),
            remembered_bytes: 0,
        }));
        if m.error.is_none() {
            m.with_tables(|m| {
                if let Err(kind) = m.gate_init() {
                    m.error = Some(MatcherError::Limit(kind));
                }
            });
        }
        m
    }

    /// The gate's phase (`None` for a matcher without a gate).
    pub fn gate_phase(&self) -> Option<GatePhase> {
        self.gate.as_ref().map(|g| g.phase)
    }

    /// O(1): the mask is all ones (every id of the vocabulary), so the host may skip
    /// computing and applying it. True while reasoning (budget not spent) and while waiting
    /// for a trigger when no token completes a trigger the grammar would reject; exact.
    pub fn is_unconstrained(&self) -> bool {
        self.error.is_none()
            && !self.stopped
            && self.gate.as_ref().is_some_and(|g| match g.phase {
                GatePhase::Reasoning => !g.exhausted(),
                GatePhase::Waiting => g.rejected.is_empty() && g.token_rejected.is_empty(),
                GatePhase::Active => false,
            })
    }

    /// A gate in front of the grammar that is not active yet.
    #[inline]
    pub(super) fn gated(&self) -> bool {
        self.gate
            .as_ref()
            .is_some_and(|g| g.phase != GatePhase::Active)
    }

    /// The trigger tokens the grammar rejects, and the first state's rejected list.
    fn gate_init(&mut self) -> Result<(), LimitKind> {
        let Some(g) = self.gate.as_ref() else {
            return Ok(());
        };
        let gate = g.gate.clone();
        let vocab = self.grammar.match_vocab().clone();
        let mut rejected = Vec::new();
        for &t in gate.trigger_tokens() {
            if !vocab.eos_tokens().contains(&t) && !self.grammar_accepts(vocab.trie_bytes(t))? {
                rejected.push(t);
            }
        }
        if let Some(g) = self.gate.as_mut() {
            g.token_rejected = rejected;
        }
        self.gate_refresh()
    }

    /// Does the grammar accept `bytes` from its start (the parser is at depth 0)?
    fn grammar_accepts(&mut self, bytes: &[u8]) -> Result<bool, LimitKind> {
        if bytes.is_empty() {
            return Ok(false);
        }
        let r = self.push_step(bytes);
        self.parser.truncate(0);
        r
    }

    /// The last `max` bytes (or fewer) of the waiting phase's output.
    fn waiting_tail(&self, max: usize) -> Vec<u8> {
        let Some(g) = self.gate.as_ref() else {
            return Vec::new();
        };
        let vocab = self.grammar.match_vocab();
        let mut parts = Vec::new();
        let mut len = 0;
        for r in g.records.iter().rev() {
            if r.before.phase != GatePhase::Waiting || len >= max {
                break;
            }
            let b = vocab.trie_bytes(r.token);
            len += b.len();
            parts.push(b);
        }
        let mut out = Vec::with_capacity(len);
        for p in parts.iter().rev() {
            out.extend_from_slice(p);
        }
        let cut = out.len().saturating_sub(max);
        out.drain(..cut);
        out
    }

    /// Recompute the rejected list for the current waiting state.
    fn gate_refresh(&mut self) -> Result<(), LimitKind> {
        let Some(g) = self.gate.as_mut() else {
            return Ok(());
        };
        g.rejected.clear();
        if g.phase != GatePhase::Waiting {
            return Ok(());
        }
        let key = GateRun::key(g.pos);
        if let Some(r) = g.remembered.get(&key) {
            g.rejected.extend_from_slice(r);
            return Ok(());
        }
        let gate = g.gate.clone();
        let list = gate.completing(g.pos);
        if list.is_empty() {
            // Remembered too (an empty list allocates nothing): the next visit skips the
            // gate's lock.
            let free = self.parser.free_bytes();
            if let Some(g) = self.gate.as_mut()
                && g.remembered_bytes + 96 <= free
            {
                g.remembered.insert(key, Vec::new());
                g.remembered_bytes += 48;
            }
            return Ok(());
        }
        let vocab = self.grammar.match_vocab().clone();
        let tail = self.waiting_tail(MAX_TRIGGER_BYTES);
        let cacheable = list.iter().all(|c| !c.rx);
        let live = if cacheable {
            Vec::new()
        } else {
            gate.live_starts(&tail)
        };
        let mut rejected = Vec::new();
        let mut stream = Vec::new();
        for c in list.iter() {
            if gate.is_trigger_token(c.token) || vocab.eos_tokens().contains(&c.token) {
                continue;
            }
            let bytes = vocab.trie_bytes(c.token);
            let end = (c.end as usize).min(bytes.len());
            stream.clear();
            stream.extend_from_slice(&tail);
            stream.extend_from_slice(&bytes[..end]);
            let start = gate.trigger_start(&live, tail.len(), &bytes[..end], c.lit_len, c.rx);
            stream.drain(..start);
            stream.extend_from_slice(&bytes[end..]);
            if !self.grammar_accepts(&stream)? {
                rejected.push(c.token);
            }
        }
        rejected.sort_unstable();
        let free = self.parser.free_bytes();
        let Some(g) = self.gate.as_mut() else {
            return Ok(());
        };
        g.rejected.clone_from(&rejected);
        let cost = rejected.capacity() * 4 + 48;
        if cacheable && cost.saturating_mul(2) <= free {
            g.remembered.insert(key, rejected);
            g.remembered_bytes += cost;
        }
        self.charge_outside();
        Ok(())
    }

    /// The mask while not active (`mask` is exactly `mask_words` long).
    pub(super) fn gate_mask(&mut self, mask: &mut [u32]) -> Result<(), MatcherError> {
        let vocab = self.grammar.match_vocab().clone();
        let Some(g) = self.gate.as_ref() else {
            return Ok(());
        };
        if g.exhausted() {
            kernels::fill(mask, 0);
            kernels::set_bits(mask, g.gate.end_tokens());
            return Ok(());
        }
        kernels::fill_prefix(mask, vocab.vocab_size());
        if g.phase == GatePhase::Waiting {
            kernels::clear_bits(mask, &g.rejected);
            kernels::clear_bits(mask, &g.token_rejected);
        }
        Ok(())
    }

    /// [`Matcher::is_allowed`] while not active.
    pub(super) fn gate_allowed(&self, token: u32) -> bool {
        match self.gate.as_ref() {
            Some(g) if g.exhausted() => g.gate.is_end_token(token),
            Some(g) if g.phase == GatePhase::Waiting => !g.is_rejected(token),
            _ => true,
        }
    }

    /// Is the output accepting while not active? (Yes, unless the reasoning budget is spent.)
    pub(super) fn gate_accepting(&self) -> bool {
        self.gate.as_ref().is_some_and(|g| !g.exhausted())
    }

    /// The forced token while not active: the end token once the reasoning budget is spent,
    /// when there is exactly one.
    pub(super) fn gate_forced(&self) -> Option<u32> {
        let g = self.gate.as_ref()?;
        match g.gate.end_tokens() {
            [t] if g.exhausted() => Some(*t),
            _ => None,
        }
    }

    /// Push a record of `token` (consumed from state `before`).
    fn gate_record(&mut self, token: u32, before: Snap) -> Result<(), LimitKind> {
        if let Some(g) = self.gate.as_mut()
            && g.records.len() < g.records.capacity()
        {
            g.records.push(Record { token, before });
            return Ok(());
        }
        let free = self.parser.free_bytes();
        if let Some(g) = self.gate.as_mut() {
            crate::lexer::reserve(&mut g.records, 1, free)?;
            g.records.push(Record { token, before });
        }
        self.charge_outside();
        Ok(())
    }

    /// [`Matcher::consume_token`] while not active (the token is in range, not stopped).
    pub(super) fn gate_consume(&mut self, token: u32) -> Result<(), MatcherError> {
        let vocab = self.grammar.match_vocab().clone();
        let Some(g) = self.gate.as_ref() else {
            return Ok(());
        };
        let position = self.num_tokens();
        let before = g.snap();
        let gate = g.gate.clone();
        let is_eos = vocab.eos_tokens().contains(&token);
        if !self.gate_allowed(token) {
            return self.fail(MatcherError::TokenRejected { token, position });
        }
        let r = match before.phase {
            GatePhase::Reasoning => {
                let r = self.gate_record(token, before);
                if let Some(g) = self.gate.as_mut() {
                    if is_eos && !gate.is_end_token(token) {
                        self.stopped = true;
                    } else if gate.is_end_token(token) {
                        g.phase = if gate.has_triggers() {
                            GatePhase::Waiting
                        } else {
                            GatePhase::Active
                        };
                        g.pos = gate.start_pos();
                    } else {
                        g.thought = g.thought.saturating_add(1);
                    }
                }
                r.and_then(|()| self.gate_refresh())
            }
            GatePhase::Waiting if is_eos => {
                let r = self.gate_record(token, before);
                self.stopped = true;
                r
            }
            GatePhase::Waiting => {
                let bytes = vocab.trie_bytes(token);
                if gate.is_trigger_token(token) {
                    return self.gate_activate(token, bytes.to_vec(), before);
                }
                let (pos, hit) = gate.advance(before.pos, bytes);
                if let Some((end, lit_len, rx)) = hit {
                    let mut stream = self.waiting_tail(MAX_TRIGGER_BYTES);
                    let live = if rx {
                        gate.live_starts(&stream)
                    } else {
                        Vec::new()
                    };
                    let tail_len = stream.len();
                    stream.extend_from_slice(&bytes[..end]);
                    let start = gate.trigger_start(&live, tail_len, &bytes[..end], lit_len, rx);
                    stream.drain(..start);
                    stream.extend_from_slice(&bytes[end..]);
                    return self.gate_activate(token, stream, before);
                }
                let r = self.gate_record(token, before);
                if let Some(g) = self.gate.as_mut() {
                    g.pos = pos;
                }
                r.and_then(|()| self.gate_refresh())
            }
            GatePhase::Active => Ok(()),
        };
        r.or_else(|kind| self.fail(MatcherError::Limit(kind)))
    }

    /// Activate the grammar with `fed` (the trigger text and the rest of `token`).
    fn gate_activate(
        &mut self,
        token: u32,
        fed: Vec<u8>,
        before: Snap,
    ) -> Result<(), MatcherError> {
        let position = self.num_tokens();
        match self.push_step(&fed) {
            Ok(true) => {
                self.consumed.push(Consumed { depth_before: 0 });
                self.bytes.extend_from_slice(&fed);
                self.plan = None;
                if let Some(g) = self.gate.as_mut() {
                    g.activated_from = Some(before);
                    g.phase = GatePhase::Active;
                    g.rejected.clear();
                }
                self.charge_outside();
                Ok(())
            }
            Ok(false) => {
                self.parser.truncate(0);
                self.fail(MatcherError::TokenRejected { token, position })
            }
            Err(kind) => {
                self.parser.truncate(0);
                self.fail(MatcherError::Limit(kind))
            }
        }
    }

    /// [`Matcher::rollback`] with a gate (tables held).
    pub(super) fn gate_rollback(&mut self, n: usize) -> Result<(), MatcherError> {
        self.check()?;
        let Some(g) = self.gate.as_ref() else {
            return self.rollback_plain(n);
        };
        let c = if g.phase == GatePhase::Active {
            self.consumed.len()
        } else {
            0
        };
        let total = g.records.len() + c;
        if n > total {
            return Err(MatcherError::RollbackTooFar {
                requested: n,
                available: total,
            });
        }
        if n < c || (n == c && g.activated_from.is_none()) {
            return self.rollback_plain(n);
        }
        if c > 0 {
            self.rollback_plain(c)?;
        }
        self.stopped = false;
        self.plan = None;
        if let Some(g) = self.gate.as_mut() {
            // Back before the activating token (if a trigger activated the grammar and it is
            // undone), then before each record popped.
            let mut snap = g.snap();
            if let Some(a) = g.activated_from.take() {
                snap = a;
            }
            for _ in c..n {
                if let Some(r) = g.records.pop() {
                    snap = r.before;
                }
            }
            g.restore(snap);
        }
        self.gate_refresh()
            .or_else(|kind| self.fail(MatcherError::Limit(kind)))
    }

    /// Back to the gate's first phase (inside [`Matcher::reset`]).
    pub(super) fn gate_reset(&mut self) {
        let Some(g) = self.gate.as_mut() else {
            return;
        };
        g.phase = GateRun::first_phase(&g.gate);
        g.pos = g.gate.start_pos();
        g.thought = 0;
        g.records.clear();
        g.activated_from = None;
        self.with_tables(|m| {
            if let Err(kind) = m.gate_refresh() {
                m.error = Some(MatcherError::Limit(kind));
            }
        });
    }

    /// Tokens consumed while not active.
    pub(super) fn gate_records(&self) -> usize {
        self.gate.as_ref().map_or(0, |g| g.records.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{GateConfig, Reasoning, Triggers};
    use crate::sync::Arc;
    use crate::{GrammarErrorKind, Limits, Vocabulary};
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    /// Text tokens (some hold a trigger in the middle, some span its end), then the specials.
    const TOKS: [&str; 26] = [
        "<", "t", "c", ">", "{", "}", "1", "2", "x", " ", // 0..=9
        "<t", "c>", "<tc>", "x<tc>", "c>{", "c>x", "<tc>{", "tc>{1", "x<t", "}x", "c><",
        "1}", // 10..=21
        "<think>", "</think>", "<tool>", "<eos>", // 22..=25
    ];
    const THINK: u32 = 22;
    const THINK_END: u32 = 23;
    const TOOL: u32 = 24;
    const EOS: u32 = 25;

    fn vocab() -> Arc<Vocabulary> {
        let tokens = TOKS.iter().map(|t| t.as_bytes().to_vec()).collect();
        Arc::new(Vocabulary::new(tokens, &[THINK, THINK_END, TOOL, EOS], &[EOS]).unwrap())
    }

    /// `<tc>{N}` or `<tool>{N}`, N digits.
    fn grammar(v: &Arc<Vocabulary>) -> Grammar {
        let src = "start: (\"<tc>\" | <[24]>) \"{\" NUM \"}\"\nNUM: /[0-9]+/\n";
        Grammar::from_lark(src, v, &Limits::default()).unwrap()
    }

    fn triggers(strings: &[&str], tokens: &[u32], patterns: &[&str]) -> Triggers {
        Triggers {
            strings: strings.iter().map(|s| s.as_bytes().to_vec()).collect(),
            tokens: tokens.to_vec(),
            patterns: patterns.iter().map(|p| String::from(*p)).collect(),
        }
    }

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum P {
        Reasoning,
        Waiting,
        Active,
    }

    /// The model of the gate: the whole waiting text searched naively for triggers, phases
    /// and the reasoning budget kept by plain counting. It is independent of the gate's code
    /// (its incremental trigger search, its masks), not of the engine: the grammar after
    /// the trigger, and the trigger patterns, are checked with fresh matchers of this crate
    /// and `try_consume_bytes`. For the grammar that part is a consistency check (sieve
    /// against sieve); exactness of the grammar's masks rests on the independent oracles
    /// (brute force over the vocabulary and the CYK/Earley recognizers of `tests/`).
    #[derive(Clone)]
    struct Oracle {
        vocab: Arc<Vocabulary>,
        grammar: Grammar,
        lits: Vec<Vec<u8>>,
        /// Each pattern as an anchored grammar.
        pats: Vec<Grammar>,
        tokens: Vec<u32>,
        end: Vec<u32>,
        budget: Option<u32>,
        triggers: bool,
        phase: P,
        thought: u32,
        stream: Vec<u8>,
        fed: Vec<u8>,
        stopped: bool,
    }

    impl Oracle {
        fn new(v: &Arc<Vocabulary>, g: &Grammar, config: &GateConfig) -> Oracle {
            let t = config.triggers.clone().unwrap_or_default();
            let r = config.reasoning.clone();
            let phase = if r.is_some() {
                P::Reasoning
            } else if config.triggers.is_some() {
                P::Waiting
            } else {
                P::Active
            };
            Oracle {
                vocab: v.clone(),
                grammar: g.clone(),
                lits: t.strings.clone(),
                pats: t
                    .patterns
                    .iter()
                    .map(|p| Grammar::from_regex(p, v, &Limits::default()).unwrap())
                    .collect(),
                tokens: t.tokens.clone(),
                end: r.as_ref().map(|r| r.end_tokens.clone()).unwrap_or_default(),
                budget: r.and_then(|r| r.budget),
                triggers: config.triggers.is_some(),
                phase,
                thought: 0,
                stream: Vec::new(),
                fed: Vec::new(),
                stopped: false,
            }
        }

        fn accepts(&self, bytes: &[u8]) -> bool {
            !bytes.is_empty() && Matcher::new(&self.grammar).try_consume_bytes(bytes)
        }

        fn is_match(&self, s: &[u8]) -> bool {
            self.lits.iter().any(|l| l.as_slice() == s)
                || self.pats.iter().any(|p| {
                    let mut m = Matcher::new(p);
                    m.try_consume_bytes(s) && m.is_accepting()
                })
        }

        /// The first trigger ending in `bytes` after the stream: the text fed to the grammar.
        fn find(&self, bytes: &[u8]) -> Option<Vec<u8>> {
            for k in 1..=bytes.len() {
                let mut s = self.stream.clone();
                s.extend_from_slice(&bytes[..k]);
                if let Some(j) = (0..s.len()).find(|&j| self.is_match(&s[j..])) {
                    let mut fed = s[j..].to_vec();
                    fed.extend_from_slice(&bytes[k..]);
                    return Some(fed);
                }
            }
            None
        }

        fn exhausted(&self) -> bool {
            self.phase == P::Reasoning && self.budget.is_some_and(|b| self.thought >= b)
        }

        fn allowed(&self, t: u32) -> bool {
            let bytes = self.vocab.trie_bytes(t);
            if self.stopped {
                return t == EOS;
            }
            match self.phase {
                P::Reasoning if self.exhausted() => self.end.contains(&t),
                P::Reasoning => true,
                P::Waiting if t == EOS => true,
                P::Waiting if self.tokens.contains(&t) => self.accepts(bytes),
                P::Waiting => self.find(bytes).is_none_or(|fed| self.accepts(&fed)),
                P::Active => {
                    let mut all = self.fed.clone();
                    all.extend_from_slice(bytes);
                    self.accepts(&all) || (t == EOS && self.accepting())
                }
            }
        }

        fn accepting(&self) -> bool {
            match self.phase {
                P::Active => {
                    let mut m = Matcher::new(&self.grammar);
                    (self.fed.is_empty() || m.try_consume_bytes(&self.fed)) && m.is_accepting()
                }
                _ => !self.exhausted(),
            }
        }

        fn consume(&mut self, t: u32) {
            let bytes = self.vocab.trie_bytes(t).to_vec();
            match self.phase {
                P::Reasoning if t == EOS && !self.end.contains(&t) => self.stopped = true,
                P::Reasoning if self.end.contains(&t) => {
                    self.phase = if self.triggers { P::Waiting } else { P::Active }
                }
                P::Reasoning => self.thought += 1,
                P::Waiting if t == EOS => self.stopped = true,
                P::Waiting if self.tokens.contains(&t) => {
                    self.fed = bytes;
                    self.phase = P::Active;
                }
                P::Waiting => match self.find(&bytes) {
                    Some(fed) => {
                        self.fed = fed;
                        self.phase = P::Active;
                    }
                    None => self.stream.extend_from_slice(&bytes),
                },
                P::Active => {
                    let mut all = self.fed.clone();
                    all.extend_from_slice(&bytes);
                    if self.accepts(&all) {
                        self.fed = all;
                    } else {
                        self.stopped = true;
                    }
                }
            }
        }
    }

    fn bit(mask: &[u32], t: u32) -> bool {
        mask[t as usize / 32] & (1 << (t % 32)) != 0
    }

    /// Check the matcher against the oracle at its current state.
    fn check(m: &mut Matcher, o: &Oracle) -> Vec<u32> {
        let n = o.vocab.vocab_size() as u32;
        let mut mask = vec![0u32; m.mask_words()];
        m.compute_mask(&mut mask).unwrap();
        let mut all = true;
        for t in 0..n {
            let want = o.allowed(t);
            assert_eq!(
                bit(&mask, t),
                want,
                "token {t} {:?} in {:?}",
                TOKS[t as usize],
                o.phase
            );
            assert_eq!(m.is_allowed(t).unwrap(), want, "is_allowed {t}");
            all &= want;
        }
        if o.phase != P::Active && !o.stopped {
            assert_eq!(
                m.is_unconstrained(),
                all,
                "unconstrained flag in {:?}",
                o.phase
            );
        } else {
            assert!(!m.is_unconstrained());
        }
        assert_eq!(m.is_accepting(), o.stopped || o.accepting());
        (0..n).filter(|&t| bit(&mask, t)).collect()
    }

    /// A random walk (`steps`: which allowed token, or a rollback) checked against the
    /// oracle at every step.
    fn walk(config: &GateConfig, steps: &[(u8, u8)]) {
        let v = vocab();
        let g = grammar(&v);
        let gate = Gate::new(config, &v, &Limits::default()).unwrap();
        let mut m = Matcher::with_gate(&g, &gate);
        let mut history = vec![Oracle::new(&v, &g, config)];
        for &(action, pick) in steps {
            let o = history.last().unwrap().clone();
            let allowed = check(&mut m, &o);
            assert_eq!(m.num_tokens(), history.len() - 1);
            if action < 40 && history.len() > 1 {
                let k = 1 + pick as usize % (history.len() - 1).min(4);
                m.rollback(k).unwrap();
                history.truncate(history.len() - k);
                continue;
            }
            if allowed.is_empty() || o.stopped {
                break;
            }
            let t = allowed[pick as usize % allowed.len()];
            m.consume_token(t).unwrap();
            let mut o = o;
            o.consume(t);
            history.push(o);
        }
        let o = history.last().unwrap().clone();
        check(&mut m, &o);
    }

    fn literal_config() -> GateConfig {
        GateConfig {
            reasoning: None,
            triggers: Some(triggers(&["<tc>", "c>"], &[TOOL], &[])),
        }
    }

    fn pattern_config() -> GateConfig {
        GateConfig {
            reasoning: None,
            triggers: Some(triggers(&[], &[], &["<t+c>", "x<"])),
        }
    }

    fn reasoning_config() -> GateConfig {
        GateConfig {
            reasoning: Some(Reasoning {
                end_tokens: vec![THINK_END],
                budget: Some(3),
            }),
            triggers: Some(triggers(&["<tc>"], &[TOOL], &["}x"])),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn literal_and_token_triggers_match_the_oracle(
            steps in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..14)
        ) {
            walk(&literal_config(), &steps);
        }

        #[test]
        fn pattern_triggers_match_the_oracle(
            steps in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..14)
        ) {
            walk(&pattern_config(), &steps);
        }

        #[test]
        fn reasoning_then_triggers_match_the_oracle(
            steps in proptest::collection::vec((any::<u8>(), any::<u8>()), 0..16)
        ) {
            walk(&reasoning_config(), &steps);
        }
    }

    fn matcher(config: &GateConfig) -> Matcher {
        let v = vocab();
        let gate = Gate::new(config, &v, &Limits::default()).unwrap();
        Matcher::with_gate(&grammar(&v), &gate)
    }

    #[test]
    fn waiting_masks_reject_only_bad_trigger_completions() {
        let mut m = matcher(&literal_config());
        // From the start, "c>" alone (token 11, "c>x", "c>{", "c><") completes the trigger
        // "c>", which the grammar rejects: not unconstrained.
        assert!(!m.is_unconstrained());
        assert!(!m.is_allowed(11).unwrap());
        assert!(m.is_allowed(12).unwrap()); // "<tc>"
        assert!(m.is_allowed(13).unwrap()); // "x<tc>": the trigger in the middle
        assert!(m.is_allowed(TOOL).unwrap());
        assert!(m.is_allowed(EOS).unwrap());
        m.consume_token(8).unwrap(); // "x"
        m.consume_token(10).unwrap(); // "<t"
        assert_eq!(m.gate_phase(), Some(GatePhase::Waiting));
        assert!(m.is_allowed(14).unwrap()); // "c>{" ends "<tc>{"
        assert!(!m.is_allowed(15).unwrap()); // "c>x": "<tc>x" is rejected
        m.consume_token(14).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
        assert_eq!(m.num_tokens(), 3);
        m.consume_tokens(&[6, 21]).unwrap(); // "1", "1}"
        assert!(m.is_accepting());
        m.consume_token(EOS).unwrap();
        assert!(m.is_stopped());
        // Back across the activation point: waiting after "x<t" again.
        m.rollback(4).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Waiting));
        assert_eq!(m.num_tokens(), 2);
        assert!(!m.is_allowed(15).unwrap());
        assert!(m.is_accepting());
        // The trigger token activates with its own bytes.
        m.consume_token(TOOL).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
        assert_eq!(m.forced_bytes().unwrap(), b"{".to_vec());
        assert!(m.is_allowed(4).unwrap());
        assert!(!m.is_allowed(8).unwrap());
        m.reset();
        assert_eq!(m.gate_phase(), Some(GatePhase::Waiting));
        assert_eq!(m.num_tokens(), 0);
        m.rollback(0).unwrap();
        assert!(matches!(
            m.rollback(1),
            Err(MatcherError::RollbackTooFar { .. })
        ));
    }

    #[test]
    fn unconstrained_while_no_completion_is_rejected() {
        let config = GateConfig {
            reasoning: None,
            triggers: Some(triggers(&["<tc>"], &[], &[])),
        };
        let mut m = matcher(&config);
        assert!(m.is_unconstrained());
        let mut mask = vec![0u32; m.mask_words()];
        m.compute_mask(&mut mask).unwrap();
        assert_eq!(mask, vec![(1u32 << TOKS.len()) - 1]);
        assert!(m.forced_bytes().unwrap().is_empty());
        assert!(m.compute_ff_tokens().unwrap().is_empty());
        m.consume_token(10).unwrap(); // "<t": now "c>x" would complete "<tc>x"
        assert!(!m.is_unconstrained());
        m.compute_mask(&mut mask).unwrap();
        // "c>x" and "c><" complete "<tc>x" and "<tc><".
        assert_eq!(mask[0], (1u32 << TOKS.len()) - 1 - (1 << 15) - (1 << 20));
        assert!(!m.try_consume_bytes(b"c>"));
        assert!(matches!(
            m.consume_token(15),
            Err(MatcherError::TokenRejected {
                token: 15,
                position: 1
            })
        ));
    }

    #[test]
    fn reasoning_budget_forces_the_end_token() {
        let config = GateConfig {
            reasoning: Some(Reasoning {
                end_tokens: vec![THINK_END],
                budget: Some(2),
            }),
            triggers: None,
        };
        let mut m = matcher(&config);
        assert_eq!(m.gate_phase(), Some(GatePhase::Reasoning));
        assert!(m.is_unconstrained());
        m.consume_tokens(&[THINK, 8]).unwrap();
        assert!(!m.is_unconstrained());
        assert!(!m.is_accepting());
        let mut mask = vec![0u32; m.mask_words()];
        m.compute_mask(&mut mask).unwrap();
        assert_eq!(mask, vec![1 << THINK_END]);
        assert_eq!(m.compute_ff_tokens().unwrap(), vec![THINK_END]);
        assert_eq!(
            m.forced_bytes().unwrap(),
            Vocabulary::special_encoding(THINK_END)
        );
        assert!(m.clone().consume_token(8).is_err());
        m.consume_token(THINK_END).unwrap();
        // No triggers: the grammar constrains at once.
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
        assert!(!m.is_allowed(8).unwrap());
        assert!(m.is_allowed(12).unwrap());
        m.consume_token(16).unwrap(); // "<tc>{"
        assert_eq!(m.num_tokens(), 4);
        m.rollback(1).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
        m.rollback(1).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Reasoning));
        assert!(!m.is_unconstrained());
        m.rollback(1).unwrap();
        assert!(m.is_unconstrained());
        // EOS ends the output while reasoning.
        m.consume_token(EOS).unwrap();
        assert!(m.is_stopped());
        m.rollback(1).unwrap();
        assert!(!m.is_stopped());
        assert_eq!(m.num_tokens(), 1);
    }

    #[test]
    fn budget_mode_and_memory_while_waiting() {
        let mut m = matcher(&literal_config());
        let mut exact = vec![0u32; m.mask_words()];
        let mut within = vec![0u32; m.mask_words()];
        m.consume_token(10).unwrap(); // "<t"
        m.compute_mask(&mut exact).unwrap();
        m.compute_mask_within(&mut within, 1).unwrap();
        assert_eq!(exact, within);
        assert_eq!(m.shortest_completion().unwrap(), Some(Vec::new()));
        assert_eq!(m.completion_tokens().unwrap(), Some(0));
        // Records are charged: a long waiting phase grows the matcher's bytes.
        let before = m.bytes_used();
        for _ in 0..200 {
            m.consume_token(9).unwrap();
        }
        assert!(
            m.bytes_used() >= before + 200 * 8,
            "{} {}",
            before,
            m.bytes_used()
        );
        // A budget too small for the records is a typed, sticky error.
        let v = vocab();
        let g = grammar(&v);
        let tight = Limits {
            max_memory_bytes: g.bytes_used() + 4 * 1024 + 64 * 1024,
            ..Limits::default()
        };
        let g = Grammar::from_lark(
            "start: (\"<tc>\" | <[24]>) \"{\" NUM \"}\"\nNUM: /[0-9]+/\n",
            &v,
            &tight,
        )
        .unwrap();
        let gate = Gate::new(&literal_config(), &v, &tight).unwrap();
        let mut m = Matcher::with_gate(&g, &gate);
        let mut err = None;
        for _ in 0..100_000 {
            if let Err(e) = m.consume_token(9) {
                err = Some(e);
                break;
            }
        }
        assert_eq!(err, Some(MatcherError::Limit(LimitKind::Memory)));
        assert!(m.consume_token(9).is_err());
    }

    /// Consume `tokens` one by one, checking every step against the oracle.
    fn script(config: &GateConfig, tokens: &[u32]) -> Matcher {
        let v = vocab();
        let g = grammar(&v);
        let gate = Gate::new(config, &v, &Limits::default()).unwrap();
        let mut m = Matcher::with_gate(&g, &gate);
        let mut o = Oracle::new(&v, &g, config);
        for &t in tokens {
            check(&mut m, &o);
            assert!(o.allowed(t), "token {t} not allowed");
            m.consume_token(t).unwrap();
            o.consume(t);
        }
        check(&mut m, &o);
        m
    }

    #[test]
    fn pattern_matches_starting_in_earlier_tokens() {
        let config = pattern_config();
        // "<" "t" then "c>{": the match "<tc>" started two tokens back.
        let m = script(&config, &[9, 0, 1, 14]);
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
        // "<tt": "c>{" would feed "<ttc>{", which the grammar rejects.
        let mut m = script(&config, &[0, 1, 1]);
        assert!(!m.is_allowed(14).unwrap());
        assert!(!m.is_unconstrained());
        // "x<" is a trigger too: "x" then "<t" activates with "x<t", which is rejected.
        let mut m = script(&config, &[8]);
        assert!(!m.is_allowed(10).unwrap());
        assert!(!m.is_allowed(0).unwrap());
        m.consume_token(9).unwrap();
        assert!(m.is_allowed(0).unwrap());
    }

    #[test]
    fn validate_tokens_probes_across_the_activation() {
        let mut m = matcher(&reasoning_config());
        // Reasoning, end, waiting text, the trigger, grammar tokens, then a rejected one.
        let tokens = [THINK, 8, THINK_END, 9, 12, 4, 6, 21, 8];
        assert_eq!(m.validate_tokens(&tokens).unwrap(), 8);
        assert_eq!(m.num_tokens(), 0);
        assert_eq!(m.gate_phase(), Some(GatePhase::Reasoning));
        assert!(m.is_unconstrained());
        m.consume_tokens(&tokens[..8]).unwrap();
        assert!(m.is_accepting());
        let branch = m.clone();
        m.rollback(6).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Reasoning));
        assert_eq!(branch.gate_phase(), Some(GatePhase::Active));
        assert_eq!(branch.num_tokens(), 8);
    }

    #[test]
    fn a_special_name_trigger_string_triggers_on_the_token() {
        let config = GateConfig {
            reasoning: None,
            triggers: Some(triggers(&["<tool>"], &[], &[])),
        };
        let mut m = matcher(&config);
        m.consume_token(TOOL).unwrap();
        assert_eq!(m.gate_phase(), Some(GatePhase::Active));
    }

    #[test]
    fn errors_are_typed() {
        let v = vocab();
        let limits = Limits::default();
        let kind = |c: GateConfig, l: &Limits| Gate::new(&c, &v, l).unwrap_err().kind;
        let t = |s: &[&str], tok: &[u32], p: &[&str]| GateConfig {
            reasoning: None,
            triggers: Some(triggers(s, tok, p)),
        };
        assert_eq!(
            kind(t(&[""], &[], &[]), &limits),
            GrammarErrorKind::Unsupported
        );
        let ff = GateConfig {
            reasoning: None,
            triggers: Some(Triggers {
                strings: vec![vec![b'a', 0xFF]],
                ..Triggers::default()
            }),
        };
        assert_eq!(kind(ff, &limits), GrammarErrorKind::Unsupported);
        assert_eq!(
            kind(t(&[], &[999], &[]), &limits),
            GrammarErrorKind::UnknownSpecialToken
        );
        assert_eq!(
            kind(t(&[], &[], &["("]), &limits),
            GrammarErrorKind::InvalidRegex
        );
        assert_eq!(
            kind(t(&[], &[], &["a*"]), &limits),
            GrammarErrorKind::EmptyLexeme
        );
        let no_end = GateConfig {
            reasoning: Some(Reasoning::default()),
            triggers: None,
        };
        assert_eq!(kind(no_end, &limits), GrammarErrorKind::Unsupported);
        let tiny = Limits {
            max_lexer_states: 3,
            ..Limits::default()
        };
        assert_eq!(
            kind(t(&["abcdef"], &[], &[]), &tiny),
            GrammarErrorKind::Limit(LimitKind::LexerStates)
        );
        assert_eq!(
            kind(t(&[], &[], &["abcdef"]), &tiny),
            GrammarErrorKind::Limit(LimitKind::LexerStates)
        );
        let small = Limits {
            max_memory_bytes: 4096,
            ..Limits::default()
        };
        assert_eq!(
            kind(t(&["abcdefgh"], &[], &[]), &small),
            GrammarErrorKind::Limit(LimitKind::Memory)
        );
    }
}
