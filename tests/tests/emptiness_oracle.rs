//! Intersection emptiness against brute force: `ExprSet::is_empty_language` on an `And` of
//! small patterns over `{a, b}` agrees with enumerating every string up to the longest the
//! intersection can hold, each checked by regex-automata's DFA (independent of sieve's
//! derivatives, shape rules and length bounds).

use proptest::prelude::*;
use regex_automata::Input;
use regex_automata::dfa::{Automaton, dense};
use sieve_core::Limits;
use sieve_core::regex::{ExprSet, RegexAst};

/// A pattern tree, so that its longest string is known without asking either engine.
#[derive(Debug, Clone)]
enum Pat {
    Lit(&'static str),
    Class,
    Cat(Box<Pat>, Box<Pat>),
    Alt(Box<Pat>, Box<Pat>),
    /// `{min,max}`; `max = None` is unbounded.
    Rep(Box<Pat>, u32, Option<u32>),
}

impl Pat {
    fn text(&self) -> String {
        match self {
            Pat::Lit(s) => (*s).to_string(),
            Pat::Class => "[ab]".to_string(),
            Pat::Cat(a, b) => format!("{}{}", a.text(), b.text()),
            Pat::Alt(a, b) => format!("(?:{}|{})", a.text(), b.text()),
            Pat::Rep(a, lo, Some(hi)) => format!("(?:{}){{{lo},{hi}}}", a.text()),
            Pat::Rep(a, lo, None) => format!("(?:{}){{{lo},}}", a.text()),
        }
    }

    /// The longest string's length (`None`: unbounded).
    fn max_len(&self) -> Option<u32> {
        match self {
            Pat::Lit(s) => Some(s.len() as u32),
            Pat::Class => Some(1),
            Pat::Cat(a, b) => Some(a.max_len()? + b.max_len()?),
            Pat::Alt(a, b) => Some(a.max_len()?.max(b.max_len()?)),
            Pat::Rep(a, _, hi) => match (a.max_len()?, hi) {
                (0, _) => Some(0),
                (n, Some(hi)) => Some(n * hi),
                (_, None) => None,
            },
        }
    }
}

fn pat_strategy() -> impl Strategy<Value = Pat> {
    let leaf = prop_oneof![
        Just(Pat::Lit("a")),
        Just(Pat::Lit("b")),
        Just(Pat::Lit("ab")),
        Just(Pat::Lit("bba")),
        Just(Pat::Class),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pat::Cat(a.into(), b.into())),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pat::Alt(a.into(), b.into())),
            (inner.clone(), 0u32..4, 0u32..3).prop_map(|(a, lo, extra)| Pat::Rep(
                a.into(),
                lo,
                Some(lo + extra)
            )),
            (inner, 0u32..3).prop_map(|(a, lo)| Pat::Rep(a.into(), lo, None)),
        ]
    })
}

/// Whether the DFA of `^(?:pattern)$` matches `s`.
fn full_match(dfa: &dense::DFA<Vec<u32>>, s: &[u8]) -> bool {
    dfa.try_search_fwd(&Input::new(s))
        .expect("search")
        .is_some()
}

/// Every string over `{a, b}` of length `0..=max`, shortest first.
fn strings_up_to(max: u32) -> impl Iterator<Item = Vec<u8>> {
    (0..=max).flat_map(|len| {
        (0u32..1 << len).map(move |bits| {
            (0..len)
                .map(|i| if bits >> i & 1 == 1 { b'b' } else { b'a' })
                .collect()
        })
    })
}

/// Longest strings enumerated (2^13 strings at most per case).
const BRUTE_MAX: u32 = 12;

/// Compares the two on `pats`: `Ok(false)` when enumeration cannot decide (every part
/// unbounded, or strings longer than [`BRUTE_MAX`]), so nothing was compared.
fn check(pats: &[Pat]) -> Result<bool, TestCaseError> {
    // The intersection holds no string longer than its shortest part's longest.
    let Some(max) = pats.iter().filter_map(Pat::max_len).min() else {
        return Ok(false); // all unbounded: enumeration cannot decide emptiness
    };
    if max > BRUTE_MAX {
        return Ok(false);
    }
    let texts: Vec<String> = pats.iter().map(Pat::text).collect();
    let dfas: Vec<_> = texts
        .iter()
        .map(|t| dense::DFA::new(&format!("^(?:{t})$")).expect("dfa"))
        .collect();
    let witness = strings_up_to(max).find(|s| dfas.iter().all(|d| full_match(d, s)));
    let mut set = ExprSet::new(&Limits::default());
    let parts: Vec<_> = texts
        .iter()
        .map(|t| {
            set.compile(&RegexAst::Pattern(t.clone(), Default::default()))
                .expect("compile")
        })
        .collect();
    let and = set.mk_and(&parts).expect("mk_and");
    let empty = set.is_empty_language(and).expect("within fuel");
    prop_assert_eq!(
        empty,
        witness.is_none(),
        "{:?}: witness {:?}",
        texts,
        witness.map(|w| String::from_utf8(w).unwrap())
    );
    Ok(true)
}

/// 2,000 random intersections; the ones enumeration cannot decide are skipped, and at least
/// half must be decided (so the comparison cannot pass by skipping).
#[test]
fn intersection_emptiness_matches_brute_force() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cases = 2000;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    let decided = AtomicUsize::new(0);
    let strategy = proptest::collection::vec(pat_strategy(), 2..4);
    runner
        .run(&strategy, |pats| {
            if check(&pats)? {
                decided.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let decided = decided.into_inner();
    eprintln!("{decided} of {cases} intersections decided by enumeration");
    assert!(
        decided * 2 >= cases as usize,
        "only {decided} of {cases} intersections were compared"
    );
}

/// Cases the length bounds decide on their own (and one they must not).
#[test]
fn length_bounds_cases() {
    let rep = |p: Pat, lo, hi| Pat::Rep(p.into(), lo, hi);
    // `[ab]{0,5}` and `(ab){3,}`: 6 bytes at least, 5 at most.
    assert!(check(&[rep(Pat::Class, 0, Some(5)), rep(Pat::Lit("ab"), 3, None)]).unwrap());
    // `[ab]{0,6}` and `(ab){3,}`: `ababab`.
    assert!(check(&[rep(Pat::Class, 0, Some(6)), rep(Pat::Lit("ab"), 3, None)]).unwrap());
    // Lengths meet, strings do not: `a{2}` and `b{2}`.
    assert!(
        check(&[
            rep(Pat::Lit("a"), 2, Some(2)),
            rep(Pat::Lit("b"), 2, Some(2)),
        ])
        .unwrap()
    );
}
