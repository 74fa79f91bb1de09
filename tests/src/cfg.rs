//! Random small context-free grammars over the alphabet `{a, b, c}` (every terminal a
//! one-character literal, so lexing is trivial and the language is exactly the grammar's
//! language over characters) and a recognizer written from scratch for them (a textbook
//! Earley chart parser with the nullable-completion fix, nothing shared with the engine):
//! the independent oracle of `tests/lark_cyk_oracle.rs` and `tests/budget.rs`.

use std::collections::BTreeSet;

use proptest::prelude::*;

/// The terminal alphabet.
pub const ALPHABET: &[u8] = b"abc";

/// A grammar symbol: a terminal (one byte) or a nonterminal index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sym {
    /// A terminal (one byte).
    T(u8),
    /// A nonterminal.
    N(usize),
}

/// `rules[n]` = the alternatives of nonterminal `n`; nonterminal 0 is the start.
#[derive(Debug, Clone)]
pub struct Cfg {
    /// The alternatives of each nonterminal.
    pub rules: Vec<Vec<Vec<Sym>>>,
}

impl Cfg {
    /// Nonterminals that derive some terminal string (the empty one included).
    pub fn productive(&self) -> Vec<bool> {
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
    pub fn nullable(&self) -> Vec<bool> {
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
    pub fn to_lark(&self) -> String {
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
pub type Item = (usize, usize, usize, usize);

/// The recognizer's verdict on a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The text is a prefix of some sentence.
    pub viable: bool,
    /// The text is a sentence.
    pub complete: bool,
}

/// Earley recognition of `text` from nonterminal 0 (with Aycock–Horspool's fix: predicting
/// a nullable nonterminal also advances the predicting item).
pub fn recognize(g: &Cfg, nullable: &[bool], text: &[u8]) -> Verdict {
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

/// Random grammars: 1 to 4 nonterminals, 1 to 3 alternatives of 0 to 3 symbols (empty
/// alternatives are rare), each symbol a letter or a nonterminal. A nonterminal that is not
/// productive gets one more alternative of letters only, so every one is.
pub fn cfg_strategy() -> impl Strategy<Value = Cfg> {
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
