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

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use sieve_tests::Rng;

const ALPHABET: &[u8] = b"abc";

/// A grammar symbol: a terminal (one byte) or a nonterminal index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Sym {
    T(u8),
    N(usize),
}

/// `rules[n]` = the alternatives of nonterminal `n`; nonterminal 0 is the start.
#[derive(Debug, Clone)]
struct Cfg {
    rules: Vec<Vec<Vec<Sym>>>,
}

impl Cfg {
    /// Nonterminals that derive some terminal string (the empty one included).
    fn productive(&self) -> Vec<bool> {
        let mut prod = vec![false; self.rules.len()];
        loop {
            let mut changed = false;
            for (n, alts) in self.rules.iter().enumerate() {
                if prod[n] {
                    continue;
                }
                let ok = alts.iter().any(|alt| {
                    alt.iter().all(|s| match *s {
                        Sym::T(_) => true,
                        Sym::N(m) => prod[m],
                    })
                });
                if ok {
                    prod[n] = true;
                    changed = true;
                }
            }
            if !changed {
                return prod;
            }
        }
    }

    /// Nonterminals that derive the empty string.
    fn nullable(&self) -> Vec<bool> {
        let mut null = vec![false; self.rules.len()];
        loop {
            let mut changed = false;
            for (n, alts) in self.rules.iter().enumerate() {
                if !null[n]
                    && alts
                        .iter()
                        .any(|alt| alt.iter().all(|s| matches!(*s, Sym::N(m) if null[m])))
                {
                    null[n] = true;
                    changed = true;
                }
            }
            if !changed {
                return null;
            }
        }
    }

    /// The grammar in Lark syntax: `start: n0`, rules `n0..nK`.
    fn to_lark(&self) -> String {
        let mut src = String::from("start: n0\n");
        for (n, alts) in self.rules.iter().enumerate() {
            let alts: Vec<String> = alts
                .iter()
                .map(|alt| {
                    alt.iter()
                        .map(|s| match *s {
                            Sym::T(b) => format!("\"{}\"", b as char),
                            Sym::N(m) => format!("n{m}"),
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            src.push_str(&format!("n{n}: {}\n", alts.join(" | ")));
        }
        src
    }
}

/// An Earley item: nonterminal, alternative, dot, origin.
type Item = (usize, usize, usize, usize);

/// The recognizer's verdict on a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Verdict {
    /// The text is a prefix of some sentence.
    viable: bool,
    /// The text is a sentence.
    complete: bool,
}

/// Earley recognition of `text` from nonterminal 0 (with Aycock–Horspool's fix: predicting
/// a nullable nonterminal also advances the predicting item).
fn recognize(g: &Cfg, nullable: &[bool], text: &[u8]) -> Verdict {
    let mut chart: Vec<BTreeSet<Item>> = vec![BTreeSet::new(); text.len() + 1];
    for a in 0..g.rules[0].len() {
        chart[0].insert((0, a, 0, 0));
    }
    for i in 0..=text.len() {
        let mut work: Vec<Item> = chart[i].iter().copied().collect();
        while let Some((n, a, dot, origin)) = work.pop() {
            let alt = &g.rules[n][a];
            let mut add = |chart: &mut Vec<BTreeSet<Item>>, at: usize, item: Item| {
                if chart[at].insert(item) && at == i {
                    work.push(item);
                }
            };
            match alt.get(dot) {
                Some(&Sym::N(m)) => {
                    for b in 0..g.rules[m].len() {
                        add(&mut chart, i, (m, b, 0, i));
                    }
                    if nullable[m] {
                        add(&mut chart, i, (n, a, dot + 1, origin));
                    }
                }
                Some(&Sym::T(t)) => {
                    if text.get(i) == Some(&t) {
                        add(&mut chart, i + 1, (n, a, dot + 1, origin));
                    }
                }
                None => {
                    // Complete: advance every item at `origin` waiting for `n`.
                    let waiting: Vec<Item> = chart[origin]
                        .iter()
                        .copied()
                        .filter(|&(n2, a2, d2, _)| g.rules[n2][a2].get(d2) == Some(&Sym::N(n)))
                        .collect();
                    for (n2, a2, d2, o2) in waiting {
                        add(&mut chart, i, (n2, a2, d2 + 1, o2));
                    }
                }
            }
        }
    }
    let last = &chart[text.len()];
    Verdict {
        viable: !last.is_empty(),
        complete: last
            .iter()
            .any(|&(n, a, dot, origin)| n == 0 && origin == 0 && dot == g.rules[0][a].len()),
    }
}

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

/// Random grammars: 1 to 4 nonterminals, 1 to 3 alternatives of 0 to 3 symbols (empty
/// alternatives are rare), each symbol a letter or a nonterminal. A nonterminal that is not
/// productive gets one more alternative of letters only, so every one is.
fn cfg_strategy() -> impl Strategy<Value = Cfg> {
    (1usize..=4).prop_flat_map(|k| {
        let sym = prop_oneof![
            3 => (0..ALPHABET.len()).prop_map(|i| Sym::T(ALPHABET[i])),
            2 => (0..k).prop_map(Sym::N),
        ];
        let alt = prop_oneof![
            1 => Just(Vec::new()),
            6 => prop::collection::vec(sym, 1..=3),
        ];
        let alts = prop::collection::vec(alt, 1..=3);
        let fix = prop::collection::vec((0..ALPHABET.len(), 0..ALPHABET.len()), k);
        (prop::collection::vec(alts, k), fix).prop_map(|(rules, fix)| {
            let mut g = Cfg { rules };
            let prod = g.productive();
            for (n, ok) in prod.into_iter().enumerate() {
                if !ok {
                    let (x, y) = fix[n];
                    g.rules[n].push(vec![Sym::T(ALPHABET[x]), Sym::T(ALPHABET[y])]);
                }
            }
            g
        })
    })
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
