//! Lazy grammars, triggers and a reasoning phase: a [`Gate`] in front of a grammar.
//!
//! A matcher built with [`crate::Matcher::with_gate`] goes through up to three phases:
//! *Reasoning* (from the first token until one of [`Reasoning::end_tokens`]; every token is
//! allowed, only the end tokens once [`Reasoning::budget`] tokens have been spent), *Waiting*
//! (until a trigger: a literal string, a token id or a regex pattern; every token is allowed
//! except the few that complete a trigger the grammar then rejects) and *Active* (the grammar
//! constrains, fed from the start of the trigger on). See `core/docs/gate.md`.
//!
//! This module holds the compiled, shareable part: an Aho–Corasick automaton (dense, one row
//! of 256 entries per state) for the literal triggers and two eagerly built derivative DFAs
//! for the patterns (`Σ*(p₁|…)` to see a match end, `(p₁|…)` anchored to find its leftmost
//! start), plus a lazily filled, shared cache of the tokens that complete a trigger from each
//! state. A matcher's waiting state is one `GatePos`: detecting a trigger costs two table
//! reads per byte of the token.

use crate::sync::Arc;
use alloc::string::String;
use alloc::vec::Vec;

use hashbrown::HashMap;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::regex::{ExprId, ExprSet, PatternFlags, RegexCompileErrorKind};
use crate::{Limits, Vocabulary};

/// The longest stretch of waiting-phase output searched back for the start of a pattern
/// match (bytes). A pattern match that started further back is fed to the grammar from this
/// far back only. Literal triggers are at most this long.
pub const MAX_TRIGGER_BYTES: usize = 1024;

/// What comes before the grammar: an optional reasoning phase and optional triggers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateConfig {
    /// A reasoning phase from the first token on (`<think>` … `</think>`).
    pub reasoning: Option<Reasoning>,
    /// The grammar is inactive until one of these appears (`None`: active at once, after the
    /// reasoning phase if any).
    pub triggers: Option<Triggers>,
}

/// The reasoning phase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasoning {
    /// Token ids that end the phase (typically the special `</think>`). Not empty.
    pub end_tokens: Vec<u32>,
    /// After this many reasoning tokens only the end tokens are allowed (`None`: no limit).
    pub budget: Option<u32>,
}

/// What activates the grammar.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Triggers {
    /// Literal byte strings (not empty, without the `0xFF` byte). A string equal to a special
    /// token's name also triggers on that token.
    pub strings: Vec<Vec<u8>>,
    /// Token ids (usually special tokens such as `<tool_call>`).
    pub tokens: Vec<u32>,
    /// Regex patterns (`regex-syntax` syntax) that must not match the empty string.
    pub patterns: Vec<String>,
}

/// Where the trigger automata are after the waiting phase's output so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct GatePos {
    /// Aho–Corasick state of the literal triggers.
    pub(crate) lit: u32,
    /// State of the `Σ*(patterns)` DFA (0 when there are no patterns).
    pub(crate) rx: u32,
}

impl GatePos {
    fn key(self) -> u64 {
        (u64::from(self.lit) << 32) | u64::from(self.rx)
    }
}

/// A trigger match ending inside a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Completing {
    /// The token.
    pub token: u32,
    /// Bytes of the token up to and including the match's last byte.
    pub end: u32,
    /// Length of the longest literal trigger ending there (0: none).
    pub lit_len: u32,
    /// A pattern match ends there too (its start needs the output before it).
    pub rx: bool,
}

/// A dense DFA over bytes: `next[s * 256 + b]`, `accept[s]`.
#[derive(Debug, Clone, Default)]
struct Dense {
    next: Vec<u32>,
    accept: Vec<bool>,
}

impl Dense {
    #[inline]
    fn step(&self, s: u32, b: u8) -> u32 {
        self.next
            .get(s as usize * 256 + b as usize)
            .copied()
            .unwrap_or(0)
    }

    fn accepts(&self, s: u32) -> bool {
        self.accept.get(s as usize).copied().unwrap_or(false)
    }

    fn bytes(&self) -> usize {
        self.next.capacity() * 4 + self.accept.capacity()
    }
}

/// The pattern automata.
#[derive(Debug, Clone)]
struct Patterns {
    /// `Σ*(p₁|…)`: accepting where a match ends.
    search: Dense,
    /// `(p₁|…)` anchored; state 0 is dead.
    anchored: Dense,
    /// The anchored DFA's first state.
    anchored_start: u32,
}

#[derive(Debug)]
struct GateInner {
    vocab: Arc<Vocabulary>,
    /// Sorted end tokens; empty without a reasoning phase.
    end_tokens: Vec<u32>,
    reasoning: bool,
    budget: Option<u32>,
    triggers: bool,
    /// Sorted trigger token ids.
    trigger_tokens: Vec<u32>,
    /// Aho–Corasick over the literals: `lit_out[s]` is the length of the longest literal
    /// ending in state `s` (0: none).
    lit: Dense,
    lit_out: Vec<u32>,
    patterns: Option<Patterns>,
    /// Tokens completing a trigger, per state (filled lazily, shared by every matcher).
    cache: crate::sync::Mutex<HashMap<u64, Arc<[Completing]>>>,
    /// Most bytes the cache may hold.
    max_cache_bytes: usize,
}

/// A compiled reasoning phase and trigger set for one vocabulary (`Send + Sync`, cheap to
/// clone): build it once per configuration and hand it to every matcher with
/// [`crate::Matcher::with_gate`].
///
/// ```
/// # use std::sync::Arc;
/// use sieve_core::{Gate, GateConfig, GatePhase, Grammar, Limits, Matcher, Triggers, Vocabulary};
///
/// let tokens = vec![b"Sure: ".to_vec(), b"<a>".to_vec(), b"1".to_vec(), b"</a>".to_vec()];
/// let vocab = Arc::new(Vocabulary::new(tokens, &[], &[]).unwrap());
/// let limits = Limits::default();
/// let grammar = Grammar::from_regex("<a>[0-9]+</a>", &vocab, &limits).unwrap();
/// let config = GateConfig {
///     triggers: Some(Triggers { strings: vec![b"<a>".to_vec()], ..Triggers::default() }),
///     ..GateConfig::default()
/// };
/// let gate = Gate::new(&config, &vocab, &limits).unwrap();
/// let mut m = Matcher::with_gate(&grammar, &gate);
/// m.consume_token(0).unwrap(); // free text while waiting
/// assert!(m.is_unconstrained());
/// m.consume_token(1).unwrap(); // the trigger: the grammar sees "<a>"
/// assert_eq!(m.gate_phase(), Some(GatePhase::Active));
/// assert!(!m.is_allowed(0).unwrap());
/// assert!(m.is_allowed(2).unwrap());
/// ```
#[derive(Debug, Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

fn bad(kind: GrammarErrorKind, message: String) -> GrammarError {
    GrammarError::new(kind, message)
}

/// A dense table of `states * 256` entries, checked against the budgets first.
fn dense_room(states: usize, limits: &Limits, used: usize) -> Result<(), GrammarError> {
    if states > limits.max_lexer_states {
        return Err(GrammarError::limit(LimitKind::LexerStates));
    }
    let bytes = states.saturating_mul(256 * 4 + 1).saturating_add(used);
    if bytes > limits.max_memory_bytes {
        return Err(GrammarError::limit(LimitKind::Memory));
    }
    Ok(())
}

/// Aho–Corasick over `lits` as a dense DFA, with the longest literal ending in each state.
fn aho_corasick(lits: &[Vec<u8>], limits: &Limits) -> Result<(Dense, Vec<u32>), GrammarError> {
    const NONE: u32 = u32::MAX;
    let states = lits.iter().map(Vec::len).sum::<usize>() + 1;
    dense_room(states, limits, 0)?;
    let mut next = alloc::vec![NONE; 256];
    let mut out = alloc::vec![0u32; 1];
    for lit in lits {
        let mut s = 0usize;
        for &b in lit {
            let i = s * 256 + b as usize;
            let t = next.get(i).copied().unwrap_or(NONE);
            s = if t == NONE {
                let n = out.len();
                out.push(0);
                next.extend(core::iter::repeat_n(NONE, 256));
                if let Some(e) = next.get_mut(i) {
                    *e = n as u32;
                }
                n
            } else {
                t as usize
            };
        }
        if let Some(o) = out.get_mut(s) {
            *o = (*o).max(lit.len() as u32);
        }
    }
    // Breadth-first: failure links, outputs, and the missing edges filled from the failure
    // state's (complete, as it is shallower) row.
    let n = out.len();
    let mut fail = alloc::vec![0u32; n];
    let mut queue = alloc::collections::VecDeque::new();
    for b in 0..256 {
        match next.get(b).copied() {
            Some(NONE) | None => {
                if let Some(e) = next.get_mut(b) {
                    *e = 0;
                }
            }
            Some(c) => queue.push_back(c),
        }
    }
    while let Some(u) = queue.pop_front() {
        let u = u as usize;
        let fu = fail.get(u).copied().unwrap_or(0) as usize;
        if let (Some(&fo), Some(o)) = (out.get(fu), out.get(u)) {
            let o = (*o).max(fo);
            if let Some(e) = out.get_mut(u) {
                *e = o;
            }
        }
        for b in 0..256 {
            let via_fail = next.get(fu * 256 + b).copied().unwrap_or(0);
            let i = u * 256 + b;
            match next.get(i).copied() {
                Some(NONE) => {
                    if let Some(e) = next.get_mut(i) {
                        *e = via_fail;
                    }
                }
                Some(c) => {
                    if let Some(f) = fail.get_mut(c as usize) {
                        *f = via_fail;
                    }
                    queue.push_back(c);
                }
                None => {}
            }
        }
    }
    let accept = out.iter().map(|&o| o > 0).collect();
    Ok((Dense { next, accept }, out))
}

/// The DFA of `e` built breadth-first, state 0 = `first` (`dead` also gets a state).
fn determinize(
    set: &mut ExprSet,
    first: ExprId,
    limits: &Limits,
    used: usize,
) -> Result<Dense, GrammarError> {
    let mut ids: HashMap<ExprId, u32> = HashMap::new();
    let mut states = alloc::vec![first];
    ids.insert(first, 0);
    let mut next: Vec<u32> = Vec::new();
    let mut i = 0;
    while let Some(&e) = states.get(i) {
        dense_room(states.len(), limits, used.saturating_add(set.bytes_used()))?;
        for b in 0..=255u8 {
            let d = set.derivative(e, b).map_err(GrammarError::limit)?;
            let id = match ids.get(&d) {
                Some(&id) => id,
                None => {
                    let id = states.len() as u32;
                    ids.insert(d, id);
                    states.push(d);
                    id
                }
            };
            next.push(id);
        }
        i += 1;
    }
    let accept = states.iter().map(|&e| set.is_nullable(e)).collect();
    Ok(Dense { next, accept })
}

fn patterns(pats: &[String], limits: &Limits) -> Result<Patterns, GrammarError> {
    let mut set = ExprSet::new(limits);
    let mut alts = Vec::new();
    for p in pats {
        let e = set
            .compile_pattern(p, PatternFlags::default())
            .map_err(|e| match e.kind {
                RegexCompileErrorKind::Limit(k) => GrammarError::limit(k),
                _ => bad(
                    GrammarErrorKind::InvalidRegex,
                    alloc::format!("trigger pattern {p:?}: {e}"),
                ),
            })?;
        if set.is_nullable(e) {
            return Err(bad(
                GrammarErrorKind::EmptyLexeme,
                alloc::format!("trigger pattern {p:?} matches the empty string"),
            ));
        }
        alts.push(e);
    }
    let any = set.mk_or(&alts).map_err(GrammarError::limit)?;
    let search_e = set
        .mk_concat(ExprId::ANY_STRING, any)
        .map_err(GrammarError::limit)?;
    // Anchored: state 0 must be dead (runs stop there), so the start moves.
    let mut anchored = determinize(&mut set, any, limits, 0)?;
    let dead = (0..anchored.accept.len() as u32)
        .find(|&s| !anchored.accepts(s) && (0..=255u8).all(|b| anchored.step(s, b) == s));
    let anchored_start = match dead {
        Some(d) => {
            swap_states(&mut anchored, 0, d);
            d
        }
        None => {
            add_dead_first(&mut anchored);
            1
        }
    };
    let search = determinize(&mut set, search_e, limits, anchored.bytes())?;
    Ok(Patterns {
        search,
        anchored,
        anchored_start,
    })
}

/// Swap states `a` and `b` of `d` (ids and rows).
fn swap_states(d: &mut Dense, a: u32, b: u32) {
    if a == b {
        return;
    }
    for t in d.next.iter_mut() {
        if *t == a {
            *t = b;
        } else if *t == b {
            *t = a;
        }
    }
    let (a, b) = (a as usize, b as usize);
    for k in 0..256 {
        d.next.swap(a * 256 + k, b * 256 + k);
    }
    d.accept.swap(a, b);
}

/// Insert a dead state as state 0 (every other id moves up by one); the start becomes 1.
fn add_dead_first(d: &mut Dense) {
    for t in d.next.iter_mut() {
        *t += 1;
    }
    let mut next = alloc::vec![0u32; 256];
    next.append(&mut d.next);
    d.next = next;
    d.accept.insert(0, false);
}

impl Gate {
    /// Compile `config` for `vocab` within `limits` (`max_lexer_states` per automaton,
    /// `max_memory_bytes` for the tables, `max_expr_nodes`, `max_repeat`, `compile_fuel` for
    /// the patterns).
    ///
    /// # Errors
    /// A token id not below the vocabulary size or empty end-token list
    /// ([`GrammarErrorKind::UnknownSpecialToken`], [`GrammarErrorKind::Unsupported`]), an
    /// empty literal, one with the `0xFF` byte or longer than [`MAX_TRIGGER_BYTES`]
    /// ([`GrammarErrorKind::Unsupported`]), a pattern that does not compile
    /// ([`GrammarErrorKind::InvalidRegex`]) or matches the empty string
    /// ([`GrammarErrorKind::EmptyLexeme`]), a budget ([`GrammarErrorKind::Limit`]).
    pub fn new(
        config: &GateConfig,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Gate, GrammarError> {
        let size = vocab.vocab_size();
        let check_id = |t: u32, what: &str| {
            if t as usize >= size {
                Err(bad(
                    GrammarErrorKind::UnknownSpecialToken,
                    alloc::format!("{what} token {t} is not below the vocabulary size {size}"),
                ))
            } else {
                Ok(())
            }
        };
        let mut end_tokens = Vec::new();
        let mut budget = None;
        if let Some(r) = &config.reasoning {
            if r.end_tokens.is_empty() {
                return Err(bad(
                    GrammarErrorKind::Unsupported,
                    "a reasoning phase needs at least one end token".into(),
                ));
            }
            for &t in &r.end_tokens {
                check_id(t, "reasoning end")?;
            }
            end_tokens = r.end_tokens.clone();
            end_tokens.sort_unstable();
            end_tokens.dedup();
            budget = r.budget;
        }
        let mut trigger_tokens = Vec::new();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        let mut pats = Vec::new();
        if let Some(t) = &config.triggers {
            for &id in &t.tokens {
                check_id(id, "trigger")?;
                trigger_tokens.push(id);
            }
            for s in &t.strings {
                if s.is_empty() || s.len() > MAX_TRIGGER_BYTES || s.contains(&0xFF) {
                    return Err(bad(
                        GrammarErrorKind::Unsupported,
                        alloc::format!(
                            "trigger string {:?} is empty, contains 0xFF or is longer than {MAX_TRIGGER_BYTES} bytes",
                            String::from_utf8_lossy(s)
                        ),
                    ));
                }
                if let Ok(name) = core::str::from_utf8(s) {
                    trigger_tokens.extend(vocab.specials_named(name));
                }
                lits.push(s.clone());
            }
            pats.clone_from(&t.patterns);
        }
        trigger_tokens.sort_unstable();
        trigger_tokens.dedup();
        let (lit, lit_out) = aho_corasick(&lits, limits)?;
        let patterns = if pats.is_empty() {
            None
        } else {
            Some(patterns(&pats, limits)?)
        };
        let used = lit.bytes()
            + patterns
                .as_ref()
                .map_or(0, |p| p.search.bytes() + p.anchored.bytes());
        if used > limits.max_memory_bytes {
            return Err(GrammarError::limit(LimitKind::Memory));
        }
        Ok(Gate {
            inner: Arc::new(GateInner {
                vocab: Arc::clone(vocab),
                end_tokens,
                reasoning: config.reasoning.is_some(),
                budget,
                triggers: config.triggers.is_some(),
                trigger_tokens,
                lit,
                lit_out,
                patterns,
                cache: crate::sync::Mutex::new(HashMap::new()),
                max_cache_bytes: (limits.max_memory_bytes / 4).saturating_sub(used),
            }),
        })
    }

    /// The vocabulary the gate was built for.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.inner.vocab
    }

    /// Heap bytes of the automata and the shared cache.
    pub fn bytes_used(&self) -> usize {
        let i = &self.inner;
        let cache: usize = i.cache.lock().values().map(|c| c.len() * 16 + 32).sum();
        i.lit.bytes()
            + i.lit_out.capacity() * 4
            + i.patterns
                .as_ref()
                .map_or(0, |p| p.search.bytes() + p.anchored.bytes())
            + cache
    }

    pub(crate) fn has_reasoning(&self) -> bool {
        self.inner.reasoning
    }

    pub(crate) fn has_triggers(&self) -> bool {
        self.inner.triggers
    }

    pub(crate) fn budget(&self) -> Option<u32> {
        self.inner.budget
    }

    pub(crate) fn end_tokens(&self) -> &[u32] {
        &self.inner.end_tokens
    }

    pub(crate) fn is_end_token(&self, t: u32) -> bool {
        self.inner.end_tokens.binary_search(&t).is_ok()
    }

    pub(crate) fn trigger_tokens(&self) -> &[u32] {
        &self.inner.trigger_tokens
    }

    pub(crate) fn is_trigger_token(&self, t: u32) -> bool {
        self.inner.trigger_tokens.binary_search(&t).is_ok()
    }

    /// The state after `bytes` from `pos`, and the first match end within them: `(bytes
    /// up to and including its last byte, longest literal ending there, a pattern match
    /// ends there)`.
    #[inline]
    pub(crate) fn advance(
        &self,
        mut pos: GatePos,
        bytes: &[u8],
    ) -> (GatePos, Option<(usize, u32, bool)>) {
        let i = &self.inner;
        for (k, &b) in bytes.iter().enumerate() {
            pos.lit = i.lit.step(pos.lit, b);
            let lit_len = i.lit_out.get(pos.lit as usize).copied().unwrap_or(0);
            let mut rx = false;
            if let Some(p) = &i.patterns {
                pos.rx = p.search.step(pos.rx, b);
                rx = p.search.accepts(pos.rx);
            }
            if lit_len > 0 || rx {
                return (pos, Some((k + 1, lit_len, rx)));
            }
        }
        (pos, None)
    }

    /// The starts of pattern matches in `tail` (the waiting output's last bytes, at most
    /// [`MAX_TRIGGER_BYTES`]) still alive at its end, leftmost first, with the anchored DFA's
    /// state there. Computed once per step, then continued over each candidate token.
    pub(crate) fn live_starts(&self, tail: &[u8]) -> Vec<(usize, u32)> {
        let Some(p) = &self.inner.patterns else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for j in 0..tail.len() {
            let mut s = p.anchored_start;
            for &b in tail.get(j..).unwrap_or_default() {
                s = p.anchored.step(s, b);
                if s == 0 {
                    break;
                }
            }
            if s != 0 {
                out.push((j, s));
            }
        }
        out
    }

    /// Where the trigger starts in `tail ++ prefix` (`prefix`: the token's bytes up to the
    /// match end), given `live` ([`Gate::live_starts`] of `tail`), the longest literal ending
    /// there and whether a pattern match ends there: the leftmost start of either. A pattern
    /// match whose start is not in the window is fed from the window's start.
    pub(crate) fn trigger_start(
        &self,
        live: &[(usize, u32)],
        tail_len: usize,
        prefix: &[u8],
        lit_len: u32,
        rx: bool,
    ) -> usize {
        let n = tail_len + prefix.len();
        let lit = if lit_len > 0 {
            n.saturating_sub(lit_len as usize)
        } else {
            n
        };
        let Some(p) = self.inner.patterns.as_ref().filter(|_| rx) else {
            return lit;
        };
        let run = |mut s: u32, bytes: &[u8]| {
            for &b in bytes {
                s = p.anchored.step(s, b);
                if s == 0 {
                    return false;
                }
            }
            p.anchored.accepts(s)
        };
        for &(j, s) in live {
            if j >= lit {
                return lit;
            }
            if run(s, prefix) {
                return j;
            }
        }
        for j in 0..prefix.len() {
            if tail_len + j >= lit {
                return lit;
            }
            if run(p.anchored_start, prefix.get(j..).unwrap_or_default()) {
                return tail_len + j;
            }
        }
        if lit < n { lit } else { 0 }
    }

    /// The tokens that complete a trigger from `pos` (not the trigger token ids), computed
    /// once per state and shared.
    pub(crate) fn completing(&self, pos: GatePos) -> Arc<[Completing]> {
        let i = &self.inner;
        if let Some(c) = i.cache.lock().get(&pos.key()) {
            return Arc::clone(c);
        }
        let mut out = Vec::new();
        let vocab = &i.vocab;
        for t in 0..vocab.vocab_size() as u32 {
            let (_, hit) = self.advance(pos, vocab.trie_bytes(t));
            if let Some((end, lit_len, rx)) = hit {
                out.push(Completing {
                    token: t,
                    end: end as u32,
                    lit_len,
                    rx,
                });
            }
        }
        let list: Arc<[Completing]> = out.into();
        let mut cache = i.cache.lock();
        let held: usize = cache.values().map(|c| c.len() * 16 + 32).sum();
        if held + list.len() * 16 + 32 <= i.max_cache_bytes {
            cache.insert(pos.key(), Arc::clone(&list));
        }
        list
    }

    /// The start of waiting: both automata at their first state.
    pub(crate) fn start_pos(&self) -> GatePos {
        GatePos { lit: 0, rx: 0 }
    }
}
