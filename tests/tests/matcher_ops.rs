//! rollback, validate_tokens, compute_ff_tokens and EOS handling, checked against
//! step-by-step consumption.

use sieve_core::{Matcher, MatcherError};
use sieve_tests::{Rng, allowed_tokens, lark, synthetic_vocab};

const GRAMMAR: &str = r#"
start: "{" pair ("," pair)* "}"
pair: KEY ":" VALUE
KEY: /"[a-z]+"/
VALUE: /[0-9]+/ | "true" | "false"
"#;

/// A random token path through the grammar, as sampled from its own masks.
fn random_path(m: &mut Matcher, rng: &mut Rng, len: usize) -> Vec<u32> {
    let vocab = m.grammar().vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut path = Vec::new();
    for _ in 0..len {
        m.compute_mask(&mut mask).unwrap();
        let choices = allowed_tokens(&mask);
        if choices.is_empty() {
            break;
        }
        let t = choices[rng.below(choices.len())];
        m.consume_token(t).unwrap();
        path.push(t);
        if m.is_stopped() {
            break;
        }
    }
    path
}

fn mask_of(m: &mut Matcher) -> Vec<u32> {
    let mut mask = vec![0u32; m.mask_words()];
    m.compute_mask(&mut mask).unwrap();
    mask
}

#[test]
fn rollback_restores_masks() {
    let vocab = synthetic_vocab();
    let g = lark(GRAMMAR, &vocab);
    let mut rng = Rng::new(3);
    for _ in 0..20 {
        let mut m = Matcher::new(&g);
        let path = random_path(&mut m, &mut rng, 30);
        // Masks of a fresh matcher at every prefix length.
        let mut fresh = Matcher::new(&g);
        let mut want = vec![mask_of(&mut fresh)];
        for &t in &path {
            fresh.consume_token(t).unwrap();
            want.push(mask_of(&mut fresh));
        }
        for k in (0..path.len()).rev() {
            m.rollback(1).unwrap();
            assert_eq!(m.num_tokens(), k);
            assert_eq!(mask_of(&mut m), want[k], "after rollback to {k} tokens");
        }
    }
}

#[test]
fn validate_counts_the_accepted_prefix_and_changes_nothing() {
    let vocab = synthetic_vocab();
    let g = lark(GRAMMAR, &vocab);
    let mut rng = Rng::new(4);
    for _ in 0..20 {
        let mut m = Matcher::new(&g);
        let path = random_path(&mut m.clone(), &mut rng, 25);
        let cut = rng.below(path.len() + 1);
        m.consume_tokens(&path[..cut]).unwrap();
        let before = mask_of(&mut m);
        let mut draft = path[cut..].to_vec();
        let bad_at = rng.below(draft.len() + 1);
        // A token no grammar path allows here: '}' right after '{' or ':' is never valid
        // in the middle of a pair; use a token that is rejected by the step-by-step check.
        let mut step = m.clone();
        let mut expected = 0;
        for (i, &t) in draft.iter().enumerate() {
            if i == bad_at {
                break;
            }
            step.consume_token(t).unwrap();
            expected += 1;
        }
        if bad_at < draft.len() {
            let rejected = (0..vocab.vocab_size() as u32)
                .find(|&t| !step.clone().is_allowed(t).unwrap())
                .unwrap();
            draft.insert(bad_at, rejected);
        }
        assert_eq!(m.validate_tokens(&draft).unwrap(), expected);
        assert_eq!(m.num_tokens(), cut);
        assert_eq!(mask_of(&mut m), before);
        assert!(m.error().is_none());
    }
}

#[test]
fn ff_tokens_are_forced_and_allowed() {
    let vocab = synthetic_vocab();
    let g = lark(
        r#"
start: "{\"name\": \"" NAME "\", \"kind\": " KIND "}"
NAME: /[a-z]+/
KIND: "1" | "2"
"#,
        &vocab,
    );
    let mut m = Matcher::new(&g);
    let forced = m.forced_bytes().unwrap();
    assert_eq!(forced, b"{\"name\": \"");
    let ff = m.compute_ff_tokens().unwrap();
    assert!(!ff.is_empty());
    let bytes = vocab.tokens_to_bytes(&ff);
    assert!(
        forced.starts_with(&bytes),
        "{ff:?} is not a prefix of the forced bytes"
    );
    assert!(
        bytes.len() < forced.len(),
        "the last forced token is held back"
    );
    for &t in &ff {
        assert!(m.is_allowed(t).unwrap());
        m.consume_token(t).unwrap();
    }
    // The held-back rest of the forced run, then a name.
    assert!(m.try_consume_bytes(&forced[bytes.len()..]));
    assert!(m.try_consume_bytes(b"ab"));
    // Inside NAME nothing is forced.
    let mut n = Matcher::new(&g);
    assert!(n.try_consume_bytes(b"{\"name\": \"ab"));
    assert!(n.compute_ff_tokens().unwrap().is_empty());
    assert!(n.try_consume_bytes(b"\", \"kind\": 1"));
    // Only "}" can follow, and the grammar must end after it: the whole run is forced.
    assert_eq!(n.forced_bytes().unwrap(), b"}");
    let ff = n.compute_ff_tokens().unwrap();
    assert_eq!(vocab.tokens_to_bytes(&ff), b"}");
}

#[test]
fn eos_only_when_accepting_and_stops() {
    let vocab = synthetic_vocab();
    let eos = vocab.eos_tokens()[0];
    let g = lark("start: \"ab\" \"c\"?\n", &vocab);
    let mut m = Matcher::new(&g);
    assert!(!sieve_tests::bit(&mask_of(&mut m), eos as usize));
    assert!(m.try_consume_bytes(b"ab"));
    assert!(sieve_tests::bit(&mask_of(&mut m), eos as usize));
    m.consume_token(eos).unwrap();
    assert!(m.is_stopped());
    assert_eq!(
        allowed_tokens(&mask_of(&mut m)),
        vocab.eos_tokens().to_vec()
    );
    assert_eq!(m.consume_token(eos), Err(MatcherError::Stopped));
    m.reset();
    m.consume_token(eos).unwrap_err();
}

#[test]
fn rollback_of_eos_resumes() {
    let vocab = synthetic_vocab();
    let eos = vocab.eos_tokens()[0];
    let g = lark("start: \"ab\" \"c\"?\n", &vocab);
    let mut m = Matcher::new(&g);
    assert!(m.try_consume_bytes(b"ab"));
    m.consume_token(eos).unwrap();
    m.rollback(1).unwrap();
    assert!(!m.is_stopped());
    assert!(m.try_consume_bytes(b"c"));
    assert!(m.is_accepting());
}
