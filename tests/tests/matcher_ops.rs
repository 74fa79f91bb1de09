//! rollback, validate_tokens, compute_ff_tokens and EOS handling, checked against
//! step-by-step consumption.

use sieve_core::{Grammar, LimitKind, Limits, Matcher, MatcherError};
use sieve_tests::{Rng, allowed_tokens, lark, synthetic_vocab};

const GRAMMAR: &str = r#"
start: "{" pair ("," pair)* "}"
pair: KEY ":" VALUE
KEY: /"[a-z]+"/
VALUE: /[0-9]+/ | "true" | "false"
"#;

/// A random token path through the grammar, as sampled from its own masks; EOS only when
/// nothing else is allowed (so paths are as long as asked where the grammar allows it).
fn random_path(m: &mut Matcher, rng: &mut Rng, len: usize) -> Vec<u32> {
    let vocab = m.grammar().vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut path = Vec::new();
    for _ in 0..len {
        m.compute_mask(&mut mask).unwrap();
        let mut choices = allowed_tokens(&mask);
        if choices.iter().any(|t| !vocab.eos_tokens().contains(t)) {
            choices.retain(|t| !vocab.eos_tokens().contains(t));
        }
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
    for &t in &ff {
        assert!(m.is_allowed(t).unwrap());
        m.consume_token(t).unwrap();
    }
    // The held-back rest of the forced run (if any), then a name.
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

/// Which forced tokens are held back, over a hand-made vocabulary where the answer is known:
/// the forced text `{"name": "` is followed by a name `[a-z]+`.
#[test]
fn ff_tokens_hold_back_what_a_longer_token_could_cover() {
    use sieve_core::Vocabulary;
    use std::sync::Arc;
    let src = "start: \"{\\\"name\\\": \\\"\" NAME \"\\\"}\"\nNAME: /[a-z]+/\n";
    let with = |extra: &[&str]| {
        let mut tokens: Vec<Vec<u8>> = ["{", "\"", "name", "\":", " ", "\": \"", "}", "<eos>"]
            .iter()
            .map(|t| t.as_bytes().to_vec())
            .collect();
        tokens.extend((b'a'..=b'z').map(|b| vec![b]));
        tokens.extend(extra.iter().map(|t| t.as_bytes().to_vec()));
        Arc::new(Vocabulary::new(tokens, &[7], &[7]).unwrap())
    };
    // No token starts with `"` and goes on with a letter: the whole run is forced, greedily.
    let vocab = with(&[]);
    let mut m = Matcher::new(&lark(src, &vocab));
    assert_eq!(m.compute_ff_tokens().unwrap(), vec![0, 1, 2, 5]);
    // `"a` could cover the last `"` and the name's first letter: `": "` is held back.
    let vocab = with(&["\"a"]);
    let mut m = Matcher::new(&lark(src, &vocab));
    assert_eq!(m.compute_ff_tokens().unwrap(), vec![0, 1, 2]);
    // `"}` starts with `"` too, but `}` cannot follow the forced text: nothing held back.
    let vocab = with(&["\"}"]);
    let mut m = Matcher::new(&lark(src, &vocab));
    assert_eq!(m.compute_ff_tokens().unwrap(), vec![0, 1, 2, 5]);
    // The host's tokenizer decides the segmentation: `":` then ` ` then `"`.
    let vocab = with(&[]);
    let mut m = Matcher::new(&lark(src, &vocab));
    let mut host = |text: &[u8]| {
        assert_eq!(text, b"{\"name\": \"");
        Some(vec![0, 1, 2, 3, 4, 1])
    };
    assert_eq!(
        m.compute_ff_tokens_with(&mut host).unwrap(),
        vec![0, 1, 2, 3, 4, 1]
    );
    // A tokenizer that does not spell the text is cut where it stops, and the last good
    // token is left to the model.
    let mut m = Matcher::new(&lark(src, &vocab));
    let mut wrong = |_: &[u8]| Some(vec![0, 1, 6, 2]);
    assert_eq!(m.compute_ff_tokens_with(&mut wrong).unwrap(), vec![0]);
    let mut m = Matcher::new(&lark(src, &vocab));
    assert_eq!(
        m.compute_ff_tokens_with(&mut |_| None).unwrap(),
        Vec::<u32>::new()
    );
    // Nothing was consumed.
    assert_eq!(m.forced_bytes().unwrap(), b"{\"name\": \"");
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

/// A schema whose masks build many lexer states off the output's path: every character
/// position of a bounded string, with and without escapes, in every string.
const LONG_STRINGS: &str = r#"{"type":"array","items":{"type":"string","maxLength":40}}"#;

/// A random path of up to `len` tokens consumed by `m`: the first seed whose path has more
/// than 60 tokens (a path ends early when it closes the array).
fn long_path(m: &mut Matcher, len: usize) -> Vec<u32> {
    let seed = (5..500)
        .find(|&s| random_path(&mut m.clone(), &mut Rng::new(s), len).len() > 60)
        .expect("some seed gives a long path");
    random_path(m, &mut Rng::new(seed), len)
}

fn with_lexer_states(max_lexer_states: usize) -> Grammar {
    let vocab = synthetic_vocab();
    let limits = Limits {
        max_lexer_states,
        ..Limits::default()
    };
    let (g, _) = Grammar::from_json_schema_str(LONG_STRINGS, &Default::default(), &vocab, &limits)
        .expect("compiles");
    g
}

#[test]
fn a_full_lexer_is_rebuilt_and_masks_do_not_change() {
    let mut roomy = Matcher::new(&with_lexer_states(50_000));
    let path = long_path(&mut roomy, 120);
    assert!(
        path.len() > 60,
        "the path is long enough to fill small budgets"
    );
    let built = roomy.lexer_states();
    for limit in [built / 2, built / 5] {
        let g = with_lexer_states(limit);
        let mut tight = Matcher::new(&g);
        let mut fresh = Matcher::new(&with_lexer_states(50_000));
        for (i, &t) in path.iter().enumerate() {
            assert_eq!(
                mask_of(&mut tight),
                mask_of(&mut fresh),
                "limit {limit}, token {i}"
            );
            assert!(tight.lexer_states() <= limit);
            // The single-token queries rebuild too.
            assert!(tight.is_allowed(t).unwrap(), "limit {limit}, token {i}");
            tight.consume_token(t).unwrap();
            fresh.consume_token(t).unwrap();
        }
        let rebuilds = tight.stats().lexer_rebuilds;
        assert!(
            rebuilds > 0,
            "limit {limit} of {built} states: never rebuilt"
        );
        // Rollback across rebuilds restores the earlier masks.
        for k in [path.len() / 2, 1] {
            tight.rollback(tight.num_tokens() - k).unwrap();
            let mut replay = Matcher::new(&with_lexer_states(50_000));
            replay.consume_tokens(&path[..k]).unwrap();
            assert_eq!(
                mask_of(&mut tight),
                mask_of(&mut replay),
                "limit {limit}, back to {k}"
            );
        }
        println!("{built} states without a limit; limit {limit}: {rebuilds} rebuilds");
    }
}

#[test]
fn a_path_longer_than_the_budget_still_fails_with_the_limit() {
    // Every byte of a 40-character string is its own state: 30 states cannot hold the path.
    let g = with_lexer_states(30);
    let vocab = g.vocab().clone();
    let mut m = Matcher::new(&g);
    let a = (0..vocab.vocab_size() as u32)
        .find(|&t| vocab.trie_bytes(t) == b"a")
        .expect("the synthetic vocabulary has \"a\"");
    let mut err = None;
    assert!(m.try_consume_bytes(b"[\""));
    for _ in 0..40 {
        let mut mask = vec![0u32; vocab.mask_words()];
        if let Err(e) = m.compute_mask(&mut mask).and_then(|()| m.consume_token(a)) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(MatcherError::Limit(LimitKind::LexerStates)));
    assert!(m.stats().lexer_rebuilds > 0, "it tried a rebuild first");
}

#[test]
fn a_full_expression_store_is_rebuilt_too() {
    let vocab = synthetic_vocab();
    let compile = |max_expr_nodes: usize| {
        let limits = Limits {
            max_expr_nodes,
            ..Limits::default()
        };
        Grammar::from_json_schema_str(LONG_STRINGS, &Default::default(), &vocab, &limits)
            .ok()
            .map(|(g, _)| g)
    };
    // The smallest budget the grammar compiles under: about the nodes it starts with.
    let (mut lo, mut hi) = (3usize, 1 << 20);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if compile(mid).is_some() {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut roomy = Matcher::new(&with_lexer_states(50_000));
    let path = long_path(&mut roomy, 120);
    let g = compile(lo + 400).expect("compiles at its minimum plus room");
    let mut tight = Matcher::new(&g);
    let mut fresh = Matcher::new(&with_lexer_states(50_000));
    for (i, &t) in path.iter().enumerate() {
        assert_eq!(mask_of(&mut tight), mask_of(&mut fresh), "token {i}");
        tight.consume_token(t).unwrap();
        fresh.consume_token(t).unwrap();
    }
    assert!(
        tight.stats().lexer_rebuilds > 0,
        "{lo} + 400 expression nodes: never rebuilt"
    );
}

#[test]
fn matchers_share_the_grammars_tables() {
    let g = with_lexer_states(50_000);
    let mut first = Matcher::new(&g);
    let path = long_path(&mut first, 120);
    let built = first.lexer_states();
    // A second matcher reads and extends the same tables: the same path adds no state.
    let mut second = Matcher::new(&g);
    for &t in &path {
        mask_of(&mut second);
        second.consume_token(t).unwrap();
    }
    assert_eq!(second.lexer_states(), built);
    // Neither holds the tables between calls: they are the grammar's.
    let tables = g.tables_bytes();
    for m in [&first, &second] {
        assert!(
            m.bytes_used() < tables,
            "matcher {} bytes, tables {tables}",
            m.bytes_used()
        );
    }
}

#[test]
fn interleaved_matchers_replay_after_another_resets_the_tables() {
    // Three paths, walked in turns by matchers of one grammar whose lexer-state budget
    // cannot hold what all of them explore: each reset (a rebuild) makes the others replay
    // their output. Every mask equals that of a matcher with a grammar of its own.
    let paths = roomy_paths(0..3, 80);
    let (g, limit) = quarter_budget_grammar();
    let mut shared: Vec<Matcher> = paths.iter().map(|_| Matcher::new(&g)).collect();
    let mut own: Vec<Matcher> = paths
        .iter()
        .map(|_| Matcher::new(&with_lexer_states(50_000)))
        .collect();
    let longest = paths.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for (k, path) in paths.iter().enumerate() {
            let Some(&t) = path.get(i) else { continue };
            assert_eq!(
                mask_of(&mut shared[k]),
                mask_of(&mut own[k]),
                "path {k}, token {i}"
            );
            shared[k].consume_token(t).unwrap();
            own[k].consume_token(t).unwrap();
        }
    }
    let rebuilds: u64 = shared.iter().map(|m| m.stats().lexer_rebuilds).sum();
    assert!(rebuilds > 1, "limit {limit}: {rebuilds} rebuilds");
}

#[test]
fn eight_threads_sharing_a_grammar_see_the_masks_of_one() {
    // Issue 15, item 6: the same grammar, limits and tokens give the same masks whether the
    // grammar is used by one thread or eight. Eight paths are walked at once, one thread
    // each, by matchers of one grammar whose lexer-state budget holds a quarter of what one
    // long path builds (so the threads reset the shared tables under each other); every
    // mask must equal that of a matcher with a roomy grammar of its own, walked alone.
    let paths = roomy_paths(100..108, 100);
    let expected = alone_masks(&paths);
    let (g, _) = quarter_budget_grammar();
    let [_, _, rebuilds] = walk_in_threads(&g, &paths, &expected);
    assert!(
        rebuilds > 0,
        "the tight budget never reset the shared tables"
    );
}

/// Walks `paths` at once, one scoped thread each, on matchers of `g`, asserting every mask
/// equals `expected`; returns (masks computed, masks computed lock-free, lexer rebuilds).
fn walk_in_threads(g: &Grammar, paths: &[Vec<u32>], expected: &[Vec<Vec<u32>>]) -> [u64; 3] {
    std::thread::scope(|s| {
        let handles: Vec<_> = paths
            .iter()
            .zip(expected)
            .enumerate()
            .map(|(k, (path, want))| {
                s.spawn(move || {
                    let mut m = Matcher::new(g);
                    for (i, (&t, want)) in path.iter().zip(want).enumerate() {
                        assert_eq!(&mask_of(&mut m), want, "thread {k}, token {i}");
                        m.consume_token(t).unwrap();
                    }
                    let st = m.stats();
                    [st.masks, st.lock_free, st.lexer_rebuilds]
                })
            })
            .collect();
        // A panicked thread fails the test (join's error is unwrapped, never dropped).
        handles.into_iter().fold([0; 3], |acc, h| {
            let r = h.join().unwrap();
            [acc[0] + r[0], acc[1] + r[1], acc[2] + r[2]]
        })
    })
}

/// The masks of matchers of a roomy grammar of their own, each path walked alone.
fn alone_masks(paths: &[Vec<u32>]) -> Vec<Vec<Vec<u32>>> {
    paths
        .iter()
        .map(|path| {
            let mut m = Matcher::new(&with_lexer_states(50_000));
            path.iter()
                .map(|&t| {
                    let mask = mask_of(&mut m);
                    m.consume_token(t).unwrap();
                    mask
                })
                .collect()
        })
        .collect()
}

#[test]
fn warm_masks_of_sixteen_threads_are_lock_free_and_equal_those_of_one() {
    // Issue 36: matchers of one grammar read its published snapshot without the grammar's
    // lock. Sixteen threads walk sixteen paths on one roomy grammar, twice: in the first pass
    // they build the tables under each other (misses go to the master tables), in the second
    // the tables are warm and masks come from the snapshot. Every mask of both passes equals
    // that of a matcher with a grammar of its own walked alone.
    let paths = roomy_paths(200..216, 80);
    let expected = alone_masks(&paths);
    let g = with_lexer_states(50_000);
    let [cold, _, _] = walk_in_threads(&g, &paths, &expected);
    let [masks, lock_free, rebuilds] = walk_in_threads(&g, &paths, &expected);
    assert_eq!(cold, masks);
    assert_eq!(rebuilds, 0);
    // Once warm, all but the masks of the few steps before a snapshot catches up with the
    // master tables are computed without the lock.
    assert!(
        lock_free * 10 >= masks * 9,
        "{lock_free} of {masks} warm masks were lock-free"
    );
}

#[test]
fn steps_on_the_master_tables_then_on_a_snapshot_agree() {
    // A matcher's rows can name lexer states newer than the published snapshot: steps that
    // always take the master tables (`try_consume_bytes`, `is_allowed`) build them, and the
    // next mask or acceptance check reads the snapshot. Those reads are misses (redone on
    // the master tables), never out-of-range reads or wrong answers. Checked against a
    // matcher of a grammar of its own that only consumes tokens.
    let paths = roomy_paths(400..404, 80);
    let g = with_lexer_states(50_000);
    // The snapshot stays the first one published: every state built later is newer.
    g.defer_publishing(true);
    // Another matcher warms the tables and gets a snapshot published.
    let mut warm = Matcher::new(&g);
    for &t in &paths[0] {
        mask_of(&mut warm);
        warm.consume_token(t).unwrap();
    }
    for path in &paths[1..] {
        let mut alone = Matcher::new(&with_lexer_states(50_000));
        let mut m = Matcher::new(&g);
        for (i, &t) in path.iter().enumerate() {
            // The acceptance check first: right after a master step, before a mask.
            assert_eq!(m.is_accepting(), alone.is_accepting(), "token {i}");
            assert_eq!(mask_of(&mut m), mask_of(&mut alone), "token {i}");
            // (A path's last token may be EOS, which is no text: it is consumed as a token.)
            if i % 2 == 0 && i + 1 < path.len() {
                assert!(m.is_allowed(t).unwrap());
                assert!(m.try_consume_bytes(g.vocab().trie_bytes(t)), "token {i}");
            } else {
                m.consume_token(t).unwrap();
            }
            alone.consume_token(t).unwrap();
        }
    }
}

#[test]
fn sixteen_threads_under_tiny_budgets_see_the_masks_of_one() {
    // The stress test of the snapshot scheme: sixteen threads on a grammar whose lexer-state
    // budget holds a quarter of what one long path builds, so that the master tables are
    // reset under readers of older snapshots again and again (generations move on, matchers
    // replay); every mask still equals that of a roomy grammar walked alone.
    let paths = roomy_paths(300..316, 100);
    let expected = alone_masks(&paths);
    let (g, _) = quarter_budget_grammar();
    let [_, _, rebuilds] = walk_in_threads(&g, &paths, &expected);
    assert!(
        rebuilds > 0,
        "the tight budget never reset the shared tables"
    );
    // Again with snapshots published only at resets: most steps miss into the master.
    let (g, _) = quarter_budget_grammar();
    g.defer_publishing(true);
    let [_, _, rebuilds] = walk_in_threads(&g, &paths, &expected);
    assert!(
        rebuilds > 0,
        "the tight budget never reset the shared tables"
    );
}

/// `seeds.len()` random paths of up to `len` tokens sampled from matchers with a roomy
/// budget: those of the first seeds from `seeds.start` whose path has more than `len / 2`
/// tokens (a path ends early when it closes the array).
fn roomy_paths(seeds: core::ops::Range<u64>, len: usize) -> Vec<Vec<u32>> {
    let want = seeds.clone().count();
    (seeds.start..seeds.start + 500)
        .map(|s| {
            random_path(
                &mut Matcher::new(&with_lexer_states(50_000)),
                &mut Rng::new(s),
                len,
            )
        })
        .filter(|p| p.len() > len / 2)
        .take(want)
        .collect()
}

/// The grammar under a quarter of the lexer states one long path builds (and that
/// budget): matchers walking several paths on it reset its shared tables
/// (`a_full_lexer_is_rebuilt_...` uses a fifth).
fn quarter_budget_grammar() -> (Grammar, usize) {
    let mut roomy = Matcher::new(&with_lexer_states(50_000));
    long_path(&mut roomy, 120);
    let limit = roomy.lexer_states() / 4;
    (with_lexer_states(limit), limit)
}

/// Compiles one test grammar under the given limits.
type MakeGrammar = fn(&Limits) -> Grammar;

#[test]
fn masks_under_tiny_lexer_budgets_match_or_fail_with_the_limit() {
    let vocab = synthetic_vocab();
    let grammars: [(&str, MakeGrammar); 3] = [
        ("json-like lark", |l| {
            Grammar::from_lark(GRAMMAR, &synthetic_vocab(), l).expect("compiles")
        }),
        ("bounded strings", |l| {
            let schema = r#"{"type":"object","properties":{"a":{"type":"string","maxLength":25},
                "b":{"type":"array","items":{"type":"string","pattern":"^[a-z]+( [a-z]+){0,6}$"}}}}"#;
            Grammar::from_json_schema_str(schema, &Default::default(), &synthetic_vocab(), l)
                .expect("compiles")
                .0
        }),
        ("counting regex", |l| {
            Grammar::from_regex("(([a-c]{2,9}) ){1,40}", &synthetic_vocab(), l).expect("compiles")
        }),
    ];
    let (mut compared, mut rebuilds, mut limited) = (0, 0, 0);
    for (name, make) in grammars {
        let roomy = make(&Limits::default());
        for budget in [12, 20, 32, 64] {
            let tight = make(&Limits {
                max_lexer_states: budget,
                ..Limits::default()
            });
            for seed in 0..6 {
                let mut rng = Rng::new(seed);
                let (mut a, mut b) = (Matcher::new(&roomy), Matcher::new(&tight));
                for step in 0..120 {
                    let want = mask_of(&mut a);
                    let mut got = vec![0u32; vocab.mask_words()];
                    match b.compute_mask(&mut got) {
                        Ok(()) => assert_eq!(
                            got, want,
                            "{name}, budget {budget}, seed {seed}, step {step}"
                        ),
                        Err(MatcherError::Limit(LimitKind::LexerStates)) => {
                            limited += 1;
                            break;
                        }
                        Err(e) => panic!("{name}, budget {budget}, seed {seed}, step {step}: {e}"),
                    }
                    compared += 1;
                    // EOS only when nothing else is allowed: long outputs fill the budgets.
                    let all = allowed_tokens(&want);
                    let text: Vec<u32> = all
                        .iter()
                        .copied()
                        .filter(|t| !vocab.eos_tokens().contains(t))
                        .collect();
                    let choices = if text.is_empty() { all } else { text };
                    if choices.is_empty() || a.is_stopped() {
                        break;
                    }
                    let t = choices[rng.below(choices.len())];
                    a.consume_token(t).unwrap();
                    if b.consume_token(t).is_err() {
                        limited += 1;
                        break;
                    }
                }
                rebuilds += b.stats().lexer_rebuilds;
            }
        }
    }
    println!("{compared} masks compared, {rebuilds} rebuilds, {limited} walks ended by the budget");
    assert!(
        compared > 500 && rebuilds > 20,
        "{compared} masks, {rebuilds} rebuilds"
    );
}

/// Budget mode's masks (searches, plans, caches keyed by lexer states) are the same when
/// the lexer tables are rebuilt under a tight state budget.
#[test]
fn budget_masks_do_not_change_when_the_lexer_is_rebuilt() {
    let mut roomy = Matcher::new(&with_lexer_states(50_000));
    let path = long_path(&mut roomy, 80);
    let built = roomy.lexer_states();
    let limit = built / 2;
    let mut tight = Matcher::new(&with_lexer_states(limit));
    let mut fresh = Matcher::new(&with_lexer_states(50_000));
    let within = |m: &mut Matcher, remaining: usize| {
        let mut mask = vec![0u32; m.mask_words()];
        m.compute_mask_within(&mut mask, remaining).unwrap();
        (mask, m.completion_tokens().unwrap())
    };
    let n = path.len() + 4;
    for (i, &t) in path.iter().enumerate() {
        assert_eq!(
            within(&mut tight, n - i),
            within(&mut fresh, n - i),
            "limit {limit}, token {i}"
        );
        tight.consume_token(t).unwrap();
        fresh.consume_token(t).unwrap();
    }
    assert!(
        tight.stats().lexer_rebuilds > 0,
        "limit {limit}: never rebuilt"
    );
}

/// Walks `path` (compute_mask before each token) on a fresh matcher of `g`, returning the
/// first error and the matcher's statistics.
fn walk_counted(g: &Grammar, path: &[u32]) -> (Option<MatcherError>, sieve_core::MaskStats) {
    let mut m = Matcher::new(g);
    let mut mask = vec![0u32; m.mask_words()];
    for &t in path {
        if let Err(e) = m.compute_mask(&mut mask).and_then(|()| m.consume_token(t)) {
            return (Some(e), m.stats());
        }
    }
    (m.compute_mask(&mut mask).err(), m.stats())
}

/// `MaskStats::fuel` and `max_step_fuel` count the work `Limits::fuel_per_mask` limits: the
/// same walk counts the same on a fresh grammar every time (counts, not clocks, so tests can
/// bound work by them), and a per-mask budget of the largest step's count lets the walk
/// finish, while half of it stops it with a fuel error.
#[test]
fn fuel_counts_are_deterministic_and_are_what_the_budget_limits() {
    let vocab = synthetic_vocab();
    // Ambiguous, so that masks do Earley work that costs fuel.
    let src = "start: s\ns: s s | \"a\" | \"b\" | \"ab\"";
    let g = lark(src, &vocab);
    let mut rng = Rng::new(5);
    let path = random_path(&mut Matcher::new(&g), &mut rng, 12);
    assert!(path.len() >= 6, "path too short: {path:?}");
    let runs: Vec<_> = (0..3)
        .map(|_| walk_counted(&lark(src, &vocab), &path))
        .collect();
    let (err, stats) = runs[0].clone();
    assert!(err.is_none(), "{err:?}");
    assert!(stats.fuel > 0 && stats.max_step_fuel > 0, "{stats:?}");
    assert!(stats.max_step_fuel <= stats.fuel, "{stats:?}");
    for (e, s) in &runs[1..] {
        assert!(e.is_none());
        assert_eq!((s.fuel, s.max_step_fuel), (stats.fuel, stats.max_step_fuel));
    }
    let limited = |fuel: u64| {
        let limits = Limits {
            fuel_per_mask: fuel,
            ..Limits::default()
        };
        let g = Grammar::from_lark(src, &vocab, &limits).unwrap();
        walk_counted(&g, &path)
    };
    let (err, at_max) = limited(stats.max_step_fuel);
    assert!(err.is_none(), "budget = largest step: {err:?}");
    assert_eq!(at_max.max_step_fuel, stats.max_step_fuel);
    // A step may run several budgeted stretches (a snapshot try redone on the master
    // tables, a slice looked up before the walk), so the least budget that lets this walk
    // finish is at most the largest step's count; here it is 517 of 684. Half of it is
    // too little.
    let (err, _) = limited(stats.max_step_fuel / 2);
    assert_eq!(err, Some(MatcherError::Limit(LimitKind::Fuel)));
}
