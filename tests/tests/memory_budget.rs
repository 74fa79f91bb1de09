//! `max_memory_bytes` bounds the heap: for a sweep of budgets and adversarial grammars, the
//! peak heap of compiling a grammar, creating a matcher and walking it with masks stays
//! within the budget plus [`SLACK`] (the constant documented on
//! [`Limits::max_memory_bytes`]), or the run ends in a typed limit error, never in an abort.
//! A per-thread counting global allocator measures the heap ([`sieve_tests::heap`]).

use std::sync::Arc;

use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, GrammarErrorKind, LimitKind, Limits, Matcher, MatcherError, Vocabulary};
use sieve_tests::heap::{counting_installed, peak_heap};
use sieve_tests::{Rng, allowed_tokens, synthetic_vocab};

#[global_allocator]
static ALLOC: sieve_tests::heap::Counting = sieve_tests::heap::Counting;

use sieve_tests::heap::SLACK;

const BUDGETS: [usize; 4] = [256 << 10, 1 << 20, 4 << 20, 16 << 20];

const JSON_LARK: &str = r#"
start: value
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1F]|\\["\\\/bfnrt])*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?/
%ignore /[ \n]+/
"#;

/// Chooses the next token among the allowed ones.
type Pick<'a> = &'a dyn Fn(&[u32], &mut Rng) -> u32;

enum Source {
    Lark(&'static str),
    Regex(&'static str),
    Schema(&'static str),
}

/// How a run ended.
#[derive(Debug)]
enum End {
    /// Every step succeeded (or the grammar ended).
    Done(usize),
    /// A typed limit error, at compile or in a step.
    Limit(LimitKind),
}

fn compile(src: &Source, vocab: &Arc<Vocabulary>, limits: &Limits) -> Result<Grammar, LimitKind> {
    let r = match src {
        Source::Lark(s) => Grammar::from_lark(s, vocab, limits),
        Source::Regex(s) => Grammar::from_regex(s, vocab, limits),
        Source::Schema(v) => {
            Grammar::from_json_schema_str(v, &JsonOptions::default(), vocab, limits).map(|(g, _)| g)
        }
    };
    match r {
        Ok(g) => Ok(g),
        Err(e) => match e.kind {
            GrammarErrorKind::Limit(k) => Err(k),
            _ => panic!("not a limit error: {e}"),
        },
    }
}

fn limit(e: MatcherError) -> LimitKind {
    match e {
        MatcherError::Limit(k) => k,
        e => panic!("not a limit error: {e}"),
    }
}

/// Compile, then walk `steps` tokens: `pick` chooses among the allowed ones.
fn run(
    src: &Source,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
    steps: usize,
    pick: &dyn Fn(&[u32], &mut Rng) -> u32,
) -> End {
    let g = match compile(src, vocab, limits) {
        Ok(g) => g,
        Err(k) => return End::Limit(k),
    };
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; m.mask_words()];
    let mut rng = Rng::new(7);
    for step in 0..steps {
        if let Err(e) = m.compute_mask(&mut mask) {
            return End::Limit(limit(e));
        }
        let allowed: Vec<u32> = allowed_tokens(&mask)
            .into_iter()
            .filter(|t| !vocab.eos_tokens().contains(t))
            .collect();
        if allowed.is_empty() {
            return End::Done(step);
        }
        if let Err(e) = m.consume_token(pick(&allowed, &mut rng)) {
            return End::Limit(limit(e));
        }
    }
    End::Done(steps)
}

fn token(vocab: &Vocabulary, text: &str) -> u32 {
    (0..vocab.vocab_size() as u32)
        .find(|&t| vocab.trie_bytes(t) == text.as_bytes())
        .unwrap_or_else(|| panic!("no token {text:?}"))
}

#[test]
fn peak_heap_stays_within_the_budget_or_ends_in_a_limit() {
    assert!(
        counting_installed(),
        "the counting allocator is not installed"
    );
    let vocab = synthetic_vocab();
    let a = token(&vocab, "a");
    let random = |al: &[u32], rng: &mut Rng| al[rng.below(al.len())];
    let only_a = move |_: &[u32], _: &mut Rng| a;
    // Long strings: stay inside the string while some token allows it.
    let v = Arc::clone(&vocab);
    let no_quote = move |al: &[u32], rng: &mut Rng| {
        let inside: Vec<u32> = al
            .iter()
            .copied()
            .filter(|&t| !v.trie_bytes(t).contains(&b'"'))
            .collect();
        let from = if inside.is_empty() { al } else { &inside[..] };
        from[rng.below(from.len())]
    };
    // (name, source, tokens to walk, how to pick them, the smallest budget at which the
    // walk must finish without any limit).
    let cases: Vec<(&str, Source, usize, Pick, usize)> = vec![
        (
            "s: s s | a, 2000 tokens",
            Source::Lark("start: s\ns: s s | \"a\""),
            2000,
            &only_a,
            usize::MAX,
        ),
        (
            "JSON-like Lark, random tokens",
            Source::Lark(JSON_LARK),
            400,
            &random,
            256 << 10,
        ),
        (
            "long string under a regex",
            Source::Regex(r#""[^"]{0,9000}""#),
            1500,
            &no_quote,
            4 << 20,
        ),
        (
            "counted repetitions",
            Source::Regex("(ab|[a-z]{3}|x){100,2000}"),
            1500,
            &random,
            16 << 20,
        ),
        (
            "JSON schema",
            Source::Schema(
                r#"{"type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLength": 3000},
                        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,40}$"}},
                        "n": {"type": "integer", "minimum": -5, "maximum": 100000}
                    },
                    "required": ["name", "tags", "n"]}"#,
            ),
            1000,
            &random,
            // Since patterns and numbers accept every JSON spelling, the grammar no longer
            // fits 256 KiB (it ends in a typed Memory error there, within the budget).
            1 << 20,
        ),
    ];
    let mut over = Vec::new();
    for (name, src, steps, pick, finishes_at) in &cases {
        for &budget in &BUDGETS {
            let limits = Limits {
                max_memory_bytes: budget,
                ..Limits::default()
            };
            let (end, used) = peak_heap(|| run(src, &vocab, &limits, *steps, pick));
            eprintln!("{name}, budget {budget}: peak {} ({end:?})", used.peak);
            if used.peak > budget + SLACK {
                over.push(format!(
                    "{name}, budget {budget}: peak {} ({end:?})",
                    used.peak
                ));
            }
            if budget >= *finishes_at {
                assert!(
                    matches!(end, End::Done(n) if n > 0),
                    "{name}, budget {budget}: {end:?}"
                );
            }
            if let End::Limit(k) = end {
                assert!(
                    matches!(
                        k,
                        LimitKind::Memory
                            | LimitKind::Fuel
                            | LimitKind::ItemsPerMask
                            | LimitKind::ItemsPerRow
                    ) || budget < 16 << 20,
                    "{name}, budget {budget}: unexpected {k:?}"
                );
            }
        }
    }
    assert!(
        over.is_empty(),
        "over budget + {SLACK}:\n{}",
        over.join("\n")
    );
}

#[test]
fn dropping_a_matcher_does_not_allocate() {
    assert!(
        counting_installed(),
        "the counting allocator is not installed"
    );
    let vocab = synthetic_vocab();
    let g = Grammar::from_lark(JSON_LARK, &vocab, &Limits::default()).expect("compiles");
    for round in 0..3 {
        let mut m = Matcher::new(&g);
        let mut mask = vec![0u32; m.mask_words()];
        let mut rng = Rng::new(round);
        for _ in 0..50 {
            m.compute_mask(&mut mask).expect("mask");
            let allowed = allowed_tokens(&mask);
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            if vocab.eos_tokens().contains(&t) {
                break;
            }
            m.consume_token(t).expect("allowed token");
        }
        let states = m.lexer_states();
        let ((), used) = peak_heap(|| drop(m));
        assert_eq!(used.allocations, 0, "round {round}: drop allocated");
        // The hand-back still works: the next matcher starts with at least the states this
        // one built.
        assert!(Matcher::new(&g).lexer_states() >= states, "round {round}");
    }
}
