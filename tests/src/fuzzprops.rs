//! The properties the fuzz targets in `tests/fuzz/` check, shared with
//! `tests/tests/fuzz_regressions.rs`, which replays the saved inputs under
//! `tests/fuzz/regressions/<target>/` through the same functions.
//!
//! Each `check_*` takes the raw fuzz input and returns `Err(description)` when a property
//! fails; an input that does not compile is fine as long as the error is typed. The checks
//! rely on `sieve_core` and `std` only: the fuzz crate includes this file by path (it does not
//! build the rest of `sieve-tests`).
//!
//! Properties, on every matcher state visited:
//! - the mask agrees with `Matcher::is_allowed` for every token id;
//! - every allowed token (a sample of at most [`MAX_ALLOWED_PROBES`]) is consumed without an
//!   error, and `rollback(1)` after it gives back the mask from before;
//! - a sample of refused tokens is refused by `validate_tokens` and, consumed, fails with
//!   `TokenRejected`, and the error is sticky;
//! - a budget run into is a typed [`MatcherError::Limit`] and is sticky.

use std::sync::{Arc, OnceLock};

use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, Limits, Matcher, MatcherError, Vocabulary};

/// Allowed tokens consumed (then rolled back) per state.
pub const MAX_ALLOWED_PROBES: usize = 48;
/// Refused tokens probed per state.
pub const MAX_REFUSED_PROBES: usize = 8;

/// The fuzzers' vocabulary: the synthetic vocabulary of the other tests (built once).
pub fn vocab() -> Arc<Vocabulary> {
    static VOCAB: OnceLock<Arc<Vocabulary>> = OnceLock::new();
    VOCAB
        .get_or_init(|| Arc::new(Vocabulary::synthetic(300, 7)))
        .clone()
}

/// SplitMix64: small, seeded, good enough to pick tokens. The fuzz properties seed it from
/// the input ([`Rng::from_input`]), so a replay makes the same choices; the other tests
/// use it as `sieve_tests::Rng`.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator seeded with the FNV-1a hash of `data`.
    pub fn from_input(data: &[u8]) -> Rng {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in data {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(h)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// Is bit `t` set?
pub fn bit(mask: &[u32], t: usize) -> bool {
    mask.get(t / 32).is_some_and(|w| w >> (t % 32) & 1 == 1)
}

fn ids_where(mask: &[u32], n: usize, allowed: bool) -> Vec<u32> {
    (0..n)
        .filter(|&t| bit(mask, t) == allowed)
        .map(|t| t as u32)
        .collect()
}

/// Up to `k` elements of `v`, chosen by `rng` (all of them when `v` is short).
fn sample(v: &[u32], k: usize, rng: &mut Rng) -> Vec<u32> {
    if v.len() <= k {
        return v.to_vec();
    }
    (0..k).map(|_| v[rng.below(v.len())]).collect()
}

fn token_name(vocab: &Vocabulary, t: u32) -> String {
    format!("{t} {:?}", String::from_utf8_lossy(vocab.trie_bytes(t)))
}

/// What a state check found.
pub enum State {
    /// The mask, checked.
    Mask(Vec<u32>),
    /// A budget was exceeded (typed and sticky, checked): the walk ends here.
    Limit,
}

/// `m`'s sticky error must be `err`, returned again by `compute_mask`.
fn check_sticky(m: &mut Matcher, err: &MatcherError, what: &str) -> Result<(), String> {
    if m.error() != Some(err) {
        return Err(format!(
            "{what}: error {err:?} is not the sticky error ({:?})",
            m.error()
        ));
    }
    let mut mask = vec![0u32; m.mask_words()];
    match m.compute_mask(&mut mask) {
        Err(e) if &e == err => Ok(()),
        other => Err(format!(
            "{what}: after error {err:?}, compute_mask gave {other:?}"
        )),
    }
}

/// Compute the mask of `m` and check it against `is_allowed` for every token id, and the
/// allowed and refused samples against consumption. `m` is left as it was.
pub fn check_state(m: &mut Matcher, rng: &mut Rng, what: &str) -> Result<State, String> {
    let vocab = m.grammar().vocab().clone();
    let n = vocab.vocab_size();
    let mut mask = vec![0u32; m.mask_words()];
    if let Err(e) = m.compute_mask(&mut mask) {
        return match e {
            MatcherError::Limit(_) => {
                check_sticky(m, &e, what)?;
                Ok(State::Limit)
            }
            e => Err(format!("{what}: compute_mask failed with {e:?}")),
        };
    }
    for t in 0..n as u32 {
        match m.is_allowed(t) {
            Ok(a) if a == bit(&mask, t as usize) => {}
            Ok(a) => {
                return Err(format!(
                    "{what}: token {}: mask says {}, is_allowed says {a}",
                    token_name(&vocab, t),
                    !a
                ));
            }
            Err(e @ MatcherError::Limit(_)) => {
                check_sticky(m, &e, what)?;
                return Ok(State::Limit);
            }
            Err(e) => return Err(format!("{what}: is_allowed({t}) failed with {e:?}")),
        }
    }
    if m.is_allowed(n as u32) != Ok(false) {
        return Err(format!("{what}: is_allowed(vocab_size) is not Ok(false)"));
    }
    // Every allowed token (a sample) is consumed, and rollback(1) restores the mask. After
    // an EOS only EOS ids are set, and consuming one is `Stopped` (documented): not probed.
    let allowed = if m.is_stopped() {
        Vec::new()
    } else {
        ids_where(&mask, n, true)
    };
    let mut probe = m.clone();
    for t in sample(&allowed, MAX_ALLOWED_PROBES, rng) {
        match probe.consume_token(t) {
            Ok(()) => {}
            Err(e @ MatcherError::Limit(_)) => {
                check_sticky(&mut probe, &e, what)?;
                return Ok(State::Limit);
            }
            Err(e) => {
                return Err(format!(
                    "{what}: allowed token {} not consumed: {e:?}",
                    token_name(&vocab, t)
                ));
            }
        }
        probe
            .rollback(1)
            .map_err(|e| format!("{what}: rollback(1) after {t} failed: {e:?}"))?;
        let mut again = vec![0u32; mask.len()];
        match probe.compute_mask(&mut again) {
            Ok(()) if again == mask => {}
            Ok(()) => {
                return Err(format!(
                    "{what}: consume {} then rollback(1) changed the mask",
                    token_name(&vocab, t)
                ));
            }
            Err(e @ MatcherError::Limit(_)) => {
                check_sticky(&mut probe, &e, what)?;
                return Ok(State::Limit);
            }
            Err(e) => return Err(format!("{what}: compute_mask after rollback: {e:?}")),
        }
    }
    // Refused tokens are refused by validate_tokens and by consume_token (sticky).
    let refused = ids_where(&mask, n, false);
    for (i, t) in sample(&refused, MAX_REFUSED_PROBES, rng)
        .into_iter()
        .enumerate()
    {
        match m.validate_tokens(&[t]) {
            Ok(0) => {}
            Ok(k) => {
                return Err(format!(
                    "{what}: validate_tokens accepted {k} of refused token {}",
                    token_name(&vocab, t)
                ));
            }
            Err(e @ MatcherError::Limit(_)) => {
                check_sticky(m, &e, what)?;
                return Ok(State::Limit);
            }
            Err(e) => return Err(format!("{what}: validate_tokens([{t}]): {e:?}")),
        }
        if i < 2 {
            let mut copy = m.clone();
            match copy.consume_token(t) {
                Err(e @ MatcherError::TokenRejected { .. }) | Err(e @ MatcherError::Stopped) => {
                    check_sticky(&mut copy, &e, what)?;
                }
                Err(MatcherError::Limit(_)) => {}
                other => {
                    return Err(format!(
                        "{what}: refused token {} consumed: {other:?}",
                        token_name(&vocab, t)
                    ));
                }
            }
        }
    }
    Ok(State::Mask(mask))
}

/// Walk up to `steps` tokens from `m` (chosen among the allowed ones), checking every state,
/// and that `rollback(1)` after each step gives back the previous mask.
pub fn check_walk(m: &mut Matcher, rng: &mut Rng, steps: usize) -> Result<(), String> {
    let vocab = m.grammar().vocab().clone();
    for step in 0..steps {
        let what = format!("step {step}");
        let State::Mask(mask) = check_state(m, rng, &what)? else {
            return Ok(());
        };
        let choices = ids_where(&mask, vocab.vocab_size(), true);
        if choices.is_empty() || m.is_stopped() {
            return Ok(());
        }
        let t = choices[rng.below(choices.len())];
        match m.consume_token(t) {
            Ok(()) => {}
            Err(MatcherError::Limit(_)) => return Ok(()),
            Err(e) => return Err(format!("{what}: consuming allowed token {t}: {e:?}")),
        }
        let mut next = vec![0u32; mask.len()];
        if m.compute_mask(&mut next).is_err() {
            return Ok(());
        }
        m.rollback(1)
            .map_err(|e| format!("{what}: rollback(1): {e:?}"))?;
        let mut back = vec![0u32; mask.len()];
        match m.compute_mask(&mut back) {
            Ok(()) if back == mask => {}
            Ok(()) => {
                return Err(format!(
                    "{what}: rollback(1) after {} did not restore the mask",
                    token_name(&vocab, t)
                ));
            }
            Err(_) => return Ok(()),
        }
        m.consume_token(t)
            .map_err(|e| format!("{what}: consuming {t} again after rollback: {e:?}"))?;
    }
    Ok(())
}

/// Target `regex`: the input is a regex (UTF-8); on success its states are checked along a
/// short walk.
pub fn check_regex(data: &[u8]) -> Result<(), String> {
    let Ok(pattern) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let Ok(g) = Grammar::from_regex(pattern, &vocab(), &Limits::default()) else {
        return Ok(());
    };
    let mut rng = Rng::from_input(data);
    check_walk(&mut Matcher::new(&g), &mut rng, 6)
}

/// Target `lark`: the input is a Lark grammar (UTF-8); as for `regex`.
pub fn check_lark(data: &[u8]) -> Result<(), String> {
    let Ok(src) = std::str::from_utf8(data) else {
        return Ok(());
    };
    // LLGuidance's request format: Lark text, or (from `{`) a JSON grammar list whose Lark
    // grammars reference each other by `@name`.
    let Ok(g) =
        Grammar::from_llguidance(src, &JsonOptions::default(), &vocab(), &Limits::default())
    else {
        return Ok(());
    };
    let mut rng = Rng::from_input(data);
    check_walk(&mut Matcher::new(&g), &mut rng, 6)
}

/// Target `json_schema`: the first byte chooses the options (bit 0: strict), the rest is
/// the schema text; as for `regex`.
pub fn check_json_schema(data: &[u8]) -> Result<(), String> {
    let Some((&flags, text)) = data.split_first() else {
        return Ok(());
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return Ok(());
    };
    let opts = JsonOptions {
        strict: flags & 1 == 1,
        ..JsonOptions::default()
    };
    let Ok((g, _report)) = Grammar::from_json_schema_str(text, &opts, &vocab(), &Limits::default())
    else {
        return Ok(());
    };
    let mut rng = Rng::from_input(data);
    check_walk(&mut Matcher::new(&g), &mut rng, 6)
}

/// Target `structural_tag`: the input is a structural tag (XGrammar's JSON format, UTF-8);
/// as for `regex`. The fuzz vocabulary's special tokens (`<|eos|>`, `<|tool|>`) are control
/// tokens a tag may name.
pub fn check_structural_tag(data: &[u8]) -> Result<(), String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let Ok(g) =
        Grammar::from_structural_tag(text, &JsonOptions::default(), &vocab(), &Limits::default())
    else {
        return Ok(());
    };
    let mut rng = Rng::from_input(data);
    check_walk(&mut Matcher::new(&g), &mut rng, 6)
}

/// Largest vocabulary whose every token is inspected by [`check_vocab`].
pub const MAX_INSPECTED: usize = 1 << 16;

/// A vocabulary's invariants: EOS and special ids in range and marked special, the mask size,
/// the trie bytes of every id (up to [`MAX_INSPECTED`]) readable.
pub fn check_vocab(v: &Vocabulary) -> Result<(), String> {
    let n = v.vocab_size();
    if v.mask_words() != n.div_ceil(32) {
        return Err(format!("mask_words {} for {n} tokens", v.mask_words()));
    }
    for &e in v.eos_tokens() {
        if e as usize >= n {
            return Err(format!("EOS id {e} out of range ({n} tokens)"));
        }
    }
    for &s in v.special_tokens() {
        if s as usize >= n {
            return Err(format!("special id {s} out of range ({n} tokens)"));
        }
        if !v.is_special(s) {
            return Err(format!("special id {s} not is_special"));
        }
    }
    for t in 0..n.min(MAX_INSPECTED) as u32 {
        let _ = v.trie_bytes(t);
        let _ = v.token_text(t);
    }
    Ok(())
}

/// Target `tokenizer_json`, core half: the input as `tokenizer.json` text; a vocabulary
/// built from it keeps its invariants. Returns the vocabulary size, or `None` on a (typed)
/// error, for the C ABI half to compare with.
pub fn check_tokenizer_json(data: &[u8]) -> Result<Option<usize>, String> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(None);
    };
    match Vocabulary::from_tokenizer_json(text) {
        Ok(v) => {
            check_vocab(&v)?;
            Ok(Some(v.vocab_size()))
        }
        Err(_) => Ok(None),
    }
}

/// The grammars of target `matcher_ops` (chosen by the input's first byte).
pub const OPS_GRAMMARS: [(&str, &str); 3] = [
    (
        "lark",
        r#"start: value
value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" (pair ("," pair)*)? "}"
pair: STRING ":" value
array: "[" (value ("," value)*)? "]"
STRING: /"[a-z ]*"/
NUMBER: /-?[0-9]+(\.[0-9]+)?/
%ignore /[ \n]+/
"#,
    ),
    (
        "regex",
        r"(ab|a[0-9]{1,3}|\{\x22[a-z]+\x22: (true|null)\})+ ?x?",
    ),
    (
        "json",
        r#"{"type":"object","properties":{"a":{"type":"integer","minimum":-5},"b":{"type":"array","items":{"enum":["x","yz",1]},"maxItems":3},"c":{"type":"string","pattern":"^[a-c]+$"}},"required":["a"],"additionalProperties":false}"#,
    ),
];

fn ops_grammar(i: usize) -> Result<Grammar, String> {
    static GRAMMARS: OnceLock<Vec<Result<Grammar, String>>> = OnceLock::new();
    let all = GRAMMARS.get_or_init(|| {
        let v = vocab();
        let l = Limits::default();
        OPS_GRAMMARS
            .iter()
            .map(|&(kind, src)| {
                match kind {
                    "lark" => Grammar::from_lark(src, &v, &l),
                    "regex" => Grammar::from_regex(src, &v, &l),
                    _ => Grammar::from_json_schema_str(src, &JsonOptions::default(), &v, &l)
                        .map(|(g, _)| g),
                }
                .map_err(|e| format!("fixed grammar {kind} does not compile: {e}"))
            })
            .collect()
    });
    all[i % all.len()].clone()
}

/// The next argument byte of an operation (0 past the end).
/// One budget-mode check of [`check_matcher_ops`] (op `0xF0..=0xFF`) with `remaining` tokens.
fn check_budget(
    m: &mut Matcher,
    remaining: usize,
    what: &str,
    model: &mut Model,
) -> Result<(), String> {
    let n = m.grammar().vocab().vocab_size();
    let mut exact = vec![0u32; m.mask_words()];
    if let Err(e) = m.compute_mask(&mut exact) {
        model.error = Some(e);
        return Ok(());
    }
    let tokens = m.completion_tokens();
    let mut narrowed = vec![0u32; m.mask_words()];
    let r = m.compute_mask_within(&mut narrowed, remaining);
    // A search that runs out of its step budget is not sticky; a sticky one is recorded.
    if let Some(e) = m.error() {
        model.error = Some(e.clone());
        return Ok(());
    }
    if r.is_err() || !matches!(tokens, Ok(Some(_)) | Ok(None)) {
        return Ok(());
    }
    for (i, (&a, &b)) in narrowed.iter().zip(&exact).enumerate() {
        if a & !b != 0 {
            return Err(format!(
                "{what}: budget mask allows token {} the exact mask does not",
                i * 32 + (a & !b).trailing_zeros() as usize
            ));
        }
    }
    let eos = m.grammar().vocab().eos_tokens().to_vec();
    let accepting = m.is_accepting();
    if let Ok(Some(t)) = tokens
        && t <= remaining.max(1)
        && !m.is_stopped()
        && (!accepting || !eos.is_empty())
        && ids_where(&narrowed, n, true).is_empty()
    {
        return Err(format!(
            "{what}: completion_tokens {t} within {remaining} but the budget mask is empty"
        ));
    }
    if let Ok(Some(s)) = m.shortest_completion()
        && !m.is_stopped()
    {
        let mut copy = m.clone();
        let pushed = copy.try_consume_bytes(&s);
        let limited = copy
            .error()
            .is_some_and(|e| matches!(e, MatcherError::Limit(_)));
        let accepted = pushed && copy.is_accepting();
        if !limited && !accepted {
            return Err(format!(
                "{what}: shortest completion {:?} is not accepted",
                String::from_utf8_lossy(&s)
            ));
        }
    }
    Ok(())
}

fn take(ops: &mut &[u8]) -> u32 {
    let (&b, rest) = ops.split_first().unwrap_or((&0, &[]));
    *ops = rest;
    u32::from(b)
}

/// A model of the matcher's history: the masks before each consumed token.
struct Model {
    /// `masks[i]`: the mask before token `i` was consumed (`None` when not computed).
    masks: Vec<Option<Vec<u32>>>,
    /// The sticky error the matcher must report, if any.
    error: Option<MatcherError>,
}

/// Target `matcher_ops`: the first byte chooses one of [`OPS_GRAMMARS`], the rest is a
/// sequence of operations (one byte of opcode, then its arguments) run on one matcher and
/// checked against a model: masks agree with `is_allowed`, allowed tokens are consumed,
/// rollback gives back the mask from before, errors are typed and sticky until `reset`.
pub fn check_matcher_ops(data: &[u8]) -> Result<(), String> {
    let Some((&which, mut ops)) = data.split_first() else {
        return Ok(());
    };
    let g = ops_grammar(which as usize)?;
    let vocab = g.vocab().clone();
    let n = vocab.vocab_size();
    let mut m = Matcher::new(&g);
    let mut rng = Rng::from_input(data);
    let mut model = Model {
        masks: Vec::new(),
        error: None,
    };
    let mut current: Option<Vec<u32>> = None;
    let mut step = 0usize;
    while let Some((&op, rest)) = ops.split_first() {
        ops = rest;
        step += 1;
        if step > 64 {
            break;
        }
        let what = format!("op {step} ({op:#04x})");
        // Every fallible call must give the sticky error while there is one.
        let expect_sticky = |r: &Result<(), MatcherError>, model: &Model| -> Result<(), String> {
            match (&model.error, r) {
                (Some(e), Err(got)) if got == e => Ok(()),
                (Some(e), other) => Err(format!(
                    "{what}: sticky error {e:?} not returned (got {other:?})"
                )),
                (None, _) => Ok(()),
            }
        };
        // Budget mode (ops 0xF0..=0xFF): the narrowed mask is a subset of the exact one, not
        // empty while a completion within the budget is known, and the shortest completion
        // is accepted when pushed; the searches' limit errors are not sticky.
        if op >= 0xF0 {
            if model.error.is_none() {
                check_budget(&mut m, take(&mut ops) as usize % 12, &what, &mut model)?;
            }
            continue;
        }
        match op % 9 {
            // compute_mask (full check)
            0 => {
                if model.error.is_some() {
                    let mut mask = vec![0u32; m.mask_words()];
                    expect_sticky(&m.compute_mask(&mut mask), &model)?;
                    continue;
                }
                match check_state(&mut m, &mut rng, &what)? {
                    State::Mask(mask) => {
                        if current.as_ref().is_some_and(|prev| prev != &mask) {
                            return Err(format!(
                                "{what}: the mask changed with no operation in between"
                            ));
                        }
                        current = Some(mask);
                    }
                    State::Limit => model.error = m.error().cloned(),
                }
            }
            // consume an allowed token (the mask is computed first)
            1 | 2 => {
                let pick = take(&mut ops) as usize;
                if model.error.is_some() {
                    expect_sticky(&m.consume_token(0), &model)?;
                    continue;
                }
                let mut mask = vec![0u32; m.mask_words()];
                if let Err(e) = m.compute_mask(&mut mask) {
                    model.error = Some(e);
                    continue;
                }
                let allowed = ids_where(&mask, n, true);
                let Some(&t) = allowed.get(pick % allowed.len().max(1)) else {
                    continue;
                };
                match m.consume_token(t) {
                    Ok(()) => {
                        model.masks.push(Some(mask));
                        current = None;
                    }
                    Err(e @ MatcherError::Limit(_)) => model.error = Some(e),
                    Err(e @ MatcherError::Stopped) if m.is_stopped() => model.error = Some(e),
                    Err(e) => {
                        return Err(format!(
                            "{what}: allowed token {} refused: {e:?}",
                            token_name(&vocab, t)
                        ));
                    }
                }
            }
            // consume an arbitrary token id
            3 => {
                let t = take(&mut ops) | take(&mut ops) << 8;
                let t = if op & 0x80 != 0 { t | 0xFFFF_0000 } else { t };
                if model.error.is_some() {
                    expect_sticky(&m.consume_token(t), &model)?;
                    continue;
                }
                let before = m.is_allowed(t);
                let mut mask = vec![0u32; m.mask_words()];
                let had_mask = m.compute_mask(&mut mask).is_ok().then_some(mask);
                let stopped = m.is_stopped();
                match (before, m.consume_token(t)) {
                    (_, Err(e @ MatcherError::Limit(_))) | (Err(e), _) => {
                        model.error = Some(e);
                    }
                    (Ok(true), Err(e @ MatcherError::Stopped)) if stopped => {
                        model.error = Some(e);
                    }
                    (Ok(true), Ok(())) => {
                        model.masks.push(had_mask);
                        current = None;
                    }
                    (Ok(false), Err(e)) => {
                        let typed = matches!(
                            e,
                            MatcherError::TokenRejected { .. }
                                | MatcherError::TokenOutOfRange { .. }
                                | MatcherError::Stopped
                        );
                        if !typed {
                            return Err(format!("{what}: refused token {t} gave {e:?}"));
                        }
                        model.error = Some(e.clone());
                        check_sticky(&mut m, &e, &what)?;
                    }
                    (b, r) => {
                        return Err(format!(
                            "{what}: is_allowed({t}) was {b:?} but consume_token gave {r:?}"
                        ));
                    }
                }
            }
            // rollback n
            4 => {
                let k = take(&mut ops) as usize % 6;
                let r = m.rollback(k);
                if model.error.is_some() {
                    expect_sticky(&r, &model)?;
                    continue;
                }
                let have = model.masks.len();
                match r {
                    Ok(()) if k <= have => {
                        if k > 0 {
                            let want = model.masks[have - k].clone();
                            model.masks.truncate(have - k);
                            current = None;
                            if let Some(want) = want {
                                let mut mask = vec![0u32; m.mask_words()];
                                match m.compute_mask(&mut mask) {
                                    Ok(()) if mask == want => current = Some(mask),
                                    Ok(()) => {
                                        return Err(format!(
                                            "{what}: rollback({k}) did not restore the mask"
                                        ));
                                    }
                                    Err(e) => model.error = Some(e),
                                }
                            }
                        }
                    }
                    Err(MatcherError::RollbackTooFar {
                        requested,
                        available,
                    }) if k > have && requested == k && available == have => {}
                    other => {
                        return Err(format!(
                            "{what}: rollback({k}) with {have} tokens gave {other:?}"
                        ));
                    }
                }
            }
            // validate_tokens on a draft of allowed-or-arbitrary tokens
            5 => {
                let len = take(&mut ops) as usize % 5;
                let draft: Vec<u32> = (0..len).map(|_| take(&mut ops) % (n as u32 + 3)).collect();
                let r = m.validate_tokens(&draft);
                if model.error.is_some() {
                    expect_sticky(&r.map(|_| ()), &model)?;
                    continue;
                }
                match r {
                    Ok(k) => {
                        let mut copy = m.clone();
                        let mut want = 0;
                        for &t in &draft {
                            if copy.consume_token(t).is_err() {
                                break;
                            }
                            want += 1;
                        }
                        if copy
                            .error()
                            .is_some_and(|e| matches!(e, MatcherError::Limit(_)))
                        {
                            continue;
                        }
                        if k != want {
                            return Err(format!(
                                "{what}: validate_tokens({draft:?}) = {k}, consuming accepts {want}"
                            ));
                        }
                        if m.num_tokens() != model.masks.len() {
                            return Err(format!("{what}: validate_tokens changed the state"));
                        }
                    }
                    Err(e @ MatcherError::Limit(_)) => model.error = Some(e),
                    Err(e) => return Err(format!("{what}: validate_tokens: {e:?}")),
                }
            }
            // compute_ff_tokens: the forced tokens are consumed in order
            6 => {
                let r = m.compute_ff_tokens();
                if model.error.is_some() {
                    expect_sticky(&r.map(|_| ()), &model)?;
                    continue;
                }
                match r {
                    Ok(ff) => {
                        let mut copy = m.clone();
                        for &t in &ff {
                            match copy.consume_token(t) {
                                Ok(()) => {}
                                Err(MatcherError::Limit(_)) => break,
                                Err(e) => {
                                    return Err(format!(
                                        "{what}: forced tokens {ff:?}: {} refused: {e:?}",
                                        token_name(&vocab, t)
                                    ));
                                }
                            }
                        }
                    }
                    Err(e @ MatcherError::Limit(_)) => model.error = Some(e),
                    Err(e) => return Err(format!("{what}: compute_ff_tokens: {e:?}")),
                }
            }
            // reset
            7 => {
                m.reset();
                model.masks.clear();
                model.error = None;
                current = None;
                if m.num_tokens() != 0 || m.error().is_some() || m.is_stopped() {
                    return Err(format!("{what}: reset left state behind"));
                }
            }
            // is_accepting: agrees with the EOS bit of the mask
            _ => {
                let acc = m.is_accepting();
                if model.error.is_some() {
                    if acc && !m.is_stopped() {
                        return Err(format!("{what}: accepting while in error"));
                    }
                    continue;
                }
                let mut mask = vec![0u32; m.mask_words()];
                if let Err(e) = m.compute_mask(&mut mask) {
                    model.error = Some(e);
                    continue;
                }
                for &e in vocab.eos_tokens() {
                    if bit(&mask, e as usize) != acc {
                        return Err(format!(
                            "{what}: is_accepting {acc} but the EOS {e} bit is {}",
                            !acc
                        ));
                    }
                }
            }
        }
        if let Some(e) = &model.error
            && m.error() != Some(e)
        {
            return Err(format!(
                "{what}: error {e:?} not sticky (matcher reports {:?})",
                m.error()
            ));
        }
    }
    Ok(())
}
