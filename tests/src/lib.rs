//! Shared helpers for sieve's cross-crate tests: a seeded PRNG, a brute-force mask oracle,
//! and random walks through a grammar driven by its own masks.

pub mod cfg;
pub mod fuzzprops;
pub mod heap;
pub mod native;
pub mod tight;

use std::sync::Arc;

use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

pub use fuzzprops::{Rng, bit};

/// The synthetic test vocabulary shared by the tests.
pub fn synthetic_vocab() -> Arc<Vocabulary> {
    Arc::new(Vocabulary::synthetic(300, 7))
}

/// Token ids whose bit is set.
pub fn allowed_tokens(mask: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    for (i, &w) in mask.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            out.push(i as u32 * 32 + w.trailing_zeros());
            w &= w - 1;
        }
    }
    out
}

/// The per-token mask: token `t` is allowed iff a copy of the matcher accepts `t`'s bytes
/// pushed one by one (no trie, no row reuse across tokens); EOS iff the matcher accepts.
///
/// A **consistency** check, not an independent oracle: it runs the engine's own lexer and
/// parser byte by byte, so it proves the trie walk, slices, state masks and caches agree with
/// the engine's byte-level answer, not that the answer is right. Exactness rests on the
/// independent oracles (`cfg::recognize`, the GBNF reference in `gbnf_oracle.rs`,
/// `jsonschema` in `json_exact.rs`, regex-automata's DFA in `oracle.rs`).
pub fn per_token_mask(m: &Matcher) -> Vec<u32> {
    let vocab = m.grammar().vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut probe = m.clone();
    let accepting = probe.is_accepting();
    for t in 0..vocab.vocab_size() as u32 {
        let bytes = vocab.trie_bytes(t);
        let ok = if bytes.is_empty() {
            false
        } else {
            let mut copy = m.clone();
            copy.try_consume_bytes(bytes)
        };
        if ok || (accepting && vocab.eos_tokens().contains(&t)) {
            mask[t as usize / 32] |= 1 << (t % 32);
        }
    }
    mask
}

/// [`per_token_mask`] for large vocabularies: `is_allowed` per token (pushes the token's
/// bytes and truncates; no trie walk). A consistency check, as [`per_token_mask`] is.
pub fn per_token_mask_is_allowed(m: &Matcher) -> Vec<u32> {
    let vocab = m.grammar().vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut probe = m.clone();
    for t in 0..vocab.vocab_size() as u32 {
        if probe.is_allowed(t).unwrap_or(false) {
            mask[t as usize / 32] |= 1 << (t % 32);
        }
    }
    mask
}

/// Describe the first difference between two masks.
pub fn mask_diff(vocab: &Vocabulary, got: &[u32], want: &[u32]) -> Option<String> {
    for t in 0..vocab.vocab_size() {
        let (g, w) = (bit(got, t), bit(want, t));
        if g != w {
            return Some(format!(
                "token {t} {:?}: mask says {g}, oracle says {w}",
                String::from_utf8_lossy(vocab.trie_bytes(t as u32))
            ));
        }
    }
    None
}

/// Walk `steps` random tokens through `grammar`, checking at each step that
/// `compute_mask` equals `oracle(matcher)`. Returns the text generated.
pub fn check_walk(
    grammar: &Grammar,
    seed: u64,
    steps: usize,
    oracle: &mut dyn FnMut(&Matcher, &[u8]) -> Vec<u32>,
) -> Result<Vec<u8>, String> {
    let vocab = grammar.vocab().clone();
    let mut m = Matcher::new(grammar);
    let mut rng = Rng::new(seed);
    let mut text = Vec::new();
    let mut mask = vec![0u32; vocab.mask_words()];
    for step in 0..steps {
        let want = oracle(&m, &text);
        // Three times: a lexer state's first visit walks the trie, the second builds its
        // remembered mask, the third reuses it; all must equal the oracle.
        for pass in 0..3 {
            m.forget_last_mask();
            m.compute_mask(&mut mask).map_err(|e| e.to_string())?;
            if let Some(d) = mask_diff(&vocab, &mask, &want) {
                return Err(format!(
                    "step {step} (pass {pass}), after {:?}: {d}",
                    String::from_utf8_lossy(&text)
                ));
            }
        }
        let choices: Vec<u32> = allowed_tokens(&mask)
            .into_iter()
            .filter(|t| !vocab.eos_tokens().contains(t))
            .collect();
        if choices.is_empty() {
            break;
        }
        let t = choices[rng.below(choices.len())];
        m.consume_token(t).map_err(|e| e.to_string())?;
        text.extend_from_slice(vocab.trie_bytes(t));
    }
    Ok(text)
}

/// Compile a Lark grammar over `vocab` with default limits, panicking with the error.
pub fn lark(src: &str, vocab: &Arc<Vocabulary>) -> Grammar {
    match Grammar::from_lark(src, vocab, &Limits::default()) {
        Ok(g) => g,
        Err(e) => panic!("grammar failed to compile: {e}\n{src}"),
    }
}

/// Does `grammar` accept `text` in full (pushed as bytes)?
pub fn accepts(grammar: &Grammar, text: &str) -> bool {
    let mut m = Matcher::new(grammar);
    m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
}

/// Is `text` a valid prefix of `grammar`?
pub fn is_prefix(grammar: &Grammar, text: &str) -> bool {
    Matcher::new(grammar).try_consume_bytes(text.as_bytes())
}

/// Is this a CI run (`CI` set and not empty, `0` or `false`)? `.ci/run` runs with
/// `CI=true`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Llama 3's vocabulary from `../shared/tokenizers/llama3.json` beside the checkout
/// (`SIEVE_SHARED` names another `shared`), default slices; `None` after a
/// [`skip_missing_data`] line when the file is missing.
pub fn llama3_vocab() -> Option<Arc<Vocabulary>> {
    let shared = std::env::var_os("SIEVE_SHARED").map_or_else(
        || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
        std::path::PathBuf::from,
    );
    let path = shared.join("tokenizers/llama3.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(Arc::new(Vocabulary::from_tokenizer_json(&text).unwrap())),
        Err(_) => {
            skip_missing_data(&format!("{} not found (set SIEVE_SHARED)", path.display()));
            None
        }
    }
}

/// Skips a test for a missing data folder or file: prints `SKIP: <reason>` to stderr, or
/// panics under CI ([`in_ci`]), where the data must be there.
pub fn skip_missing_data(reason: &str) {
    assert!(!in_ci(), "missing data in CI (CI is set): {reason}");
    eprintln!("SKIP: {reason}");
}
