//! An independent reference for Lark grammars: random small context-free grammars over the
//! alphabet `{a, b, c}` (every terminal a one-character literal, so lexing is trivial and the
//! language is exactly the grammar's language over characters), a recognizer written here
//! from scratch (a textbook Earley chart parser with the nullable-completion fix, nothing
//! shared with the engine), and sieve's masks compared with it at every step of random walks.
//!
//! Over a vocabulary of every string of one or two letters plus an EOS token, at text `s`:
//! - token `t` is allowed iff `s + t` is a viable prefix: the Earley chart of `s + t` has an
//!   item at its last position. Every nonterminal of the generated grammars is productive
//!   (made so by construction), so a non-empty chart means some completion exists;
//! - EOS is allowed iff `s` is in the language: `start → α •` spans the whole text.
//!
//! The walk picks allowed tokens at random (EOS excluded) for up to 12 steps.

use std::sync::Arc;

use proptest::prelude::*;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use sieve_tests::Rng;
use sieve_tests::cfg::{ALPHABET, Cfg, Sym, cfg_strategy, recognize};

/// Every string of one or two letters of [`ALPHABET`], then EOS (`<eos>`, special).
fn vocab() -> (Arc<Vocabulary>, Vec<Vec<u8>>, u32) {
    let mut tokens: Vec<Vec<u8>> = Vec::new();
    for &x in ALPHABET {
        tokens.push(vec![x]);
        for &y in ALPHABET {
            tokens.push(vec![x, y]);
        }
    }
    let eos = tokens.len() as u32;
    tokens.push(b"<eos>".to_vec());
    let vocab = match Vocabulary::new(tokens.clone(), &[eos], &[eos]) {
        Ok(v) => Arc::new(v),
        Err(e) => panic!("the test vocabulary is well formed: {e}"),
    };
    (vocab, tokens, eos)
}

fn bit(mask: &[u32], t: u32) -> bool {
    mask.get(t as usize / 32)
        .is_some_and(|w| w >> (t % 32) & 1 == 1)
}

/// Random walks of `g` compared with the recognizer; `Err` describes the first difference.
fn check(g: &Cfg, seed: u64) -> Result<(), String> {
    let src = g.to_lark();
    let (vocab, tokens, eos) = vocab();
    let grammar = Grammar::from_lark(&src, &vocab, &Limits::default())
        .map_err(|e| format!("does not compile: {e}"))?;
    let nullable = g.nullable();
    let mut rng = Rng::new(seed);
    for walk in 0..3 {
        let mut m = Matcher::new(&grammar);
        let mut text: Vec<u8> = Vec::new();
        let mut mask = vec![0u32; vocab.mask_words()];
        for step in 0..12 {
            m.compute_mask(&mut mask)
                .map_err(|e| format!("walk {walk} step {step}: mask error {e}"))?;
            let mut choices = Vec::new();
            for (t, bytes) in tokens.iter().enumerate() {
                let t = t as u32;
                let want = if t == eos {
                    recognize(g, &nullable, &text).complete
                } else {
                    let mut next = text.clone();
                    next.extend_from_slice(bytes);
                    recognize(g, &nullable, &next).viable
                };
                let got = bit(&mask, t);
                if got != want {
                    return Err(format!(
                        "walk {walk} step {step}, after {:?}: token {:?}: sieve says {got}, \
                         the recognizer says {want}",
                        String::from_utf8_lossy(&text),
                        String::from_utf8_lossy(bytes)
                    ));
                }
                if want && t != eos {
                    choices.push(t);
                }
            }
            if choices.is_empty() {
                break;
            }
            let t = choices[rng.below(choices.len())];
            m.consume_token(t)
                .map_err(|e| format!("walk {walk} step {step}: allowed token refused: {e}"))?;
            text.extend_from_slice(&tokens[t as usize]);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn masks_match_an_independent_earley_recognizer(g in cfg_strategy(), seed in any::<u64>()) {
        check(&g, seed).map_err(|e| TestCaseError::fail(format!("{e}\n{}", g.to_lark())))?;
    }
}

/// The recognizer itself, on grammars whose languages are known.
#[test]
fn recognizer_knows_simple_languages() {
    use Sym::{N, T};
    // n0 → "a" n0 "b" | ε : a^k b^k.
    let g = Cfg {
        rules: vec![vec![vec![T(b'a'), N(0), T(b'b')], vec![]]],
    };
    let null = g.nullable();
    let v = |s: &str| recognize(&g, &null, s.as_bytes());
    assert!(v("").complete && v("ab").complete && v("aabb").complete);
    assert!(v("aab").viable && !v("aab").complete);
    assert!(!v("abb").viable && !v("ba").viable);
    // Left recursion and a nullable middle: n0 → n0 n1 "c" | "a" ; n1 → "b" | ε.
    let g = Cfg {
        rules: vec![
            vec![vec![N(0), N(1), T(b'c')], vec![T(b'a')]],
            vec![vec![T(b'b')], vec![]],
        ],
    };
    let null = g.nullable();
    let v = |s: &str| recognize(&g, &null, s.as_bytes());
    assert!(v("a").complete && v("ac").complete && v("abc").complete && v("acbc").complete);
    assert!(v("ab").viable && !v("ab").complete);
    assert!(!v("abb").viable && !v("c").viable);
}
