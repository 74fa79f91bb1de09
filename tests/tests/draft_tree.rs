//! `Matcher::fill_draft_tree` (masks for every node of a speculative-decoding draft tree)
//! against a sequential reference: for each node, a fresh matcher consumes the start prefix
//! and the path's tokens one by one and computes the mask (a zero row if any token is
//! refused). Random trees (chains, stars, EAGLE-like wide-then-deep, random parents) with
//! tokens drawn mostly from the parent's allowed tokens, over a JSON schema, a Lark grammar
//! and a regex; on the synthetic vocabulary always, on Llama 3's when the shared folder has
//! it. Also: invalid input is refused with nothing written, and the matcher always ends in
//! the state where it started.

use std::sync::Arc;

use sieve_core::grammar::json::JsonOptions;
use sieve_core::{
    DraftTreeError, Gate, GateConfig, Grammar, LimitKind, Limits, Matcher, MatcherError, Triggers,
    Vocabulary,
};
use sieve_tests::{Rng, allowed_tokens, lark, synthetic_vocab};

const LARK: &str = r#"
start: "{" pair ("," pair)* "}"
pair: KEY ":" VALUE
KEY: /"[a-z]+"/
VALUE: /[0-9]+/ | "true" | "false"
"#;

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["a", "bb", "ccc"]}},
    "ok": {"type": "boolean"}
  },
  "required": ["name", "age"]
}"#;

const REGEX: &str = r"(ab|cd)+[0-9]{1,4}(x|yz)*";

fn grammars(vocab: &Arc<Vocabulary>) -> Vec<(&'static str, Grammar)> {
    let limits = Limits::default();
    let (json, _) =
        Grammar::from_json_schema_str(SCHEMA, &JsonOptions::default(), vocab, &limits).unwrap();
    vec![
        ("json", json),
        ("lark", lark(LARK, vocab)),
        ("regex", Grammar::from_regex(REGEX, vocab, &limits).unwrap()),
    ]
}

/// A random tree shape: `parents` for `n` nodes.
fn shape(rng: &mut Rng, n: usize) -> Vec<i32> {
    match rng.below(4) {
        // A chain.
        0 => (0..n as i32).map(|i| i - 1).collect(),
        // A star on the current state, or on one first node.
        1 => {
            let hub = rng.below(2) as i32 - 1;
            (0..n).map(|i| if i == 0 { -1 } else { hub }).collect()
        }
        // EAGLE-like: a few candidates at each level, the top one growing deeper.
        2 => {
            let width = 1 + rng.below(4);
            let mut parents = Vec::with_capacity(n);
            let mut level_start = 0usize;
            let mut top: i32 = -1;
            while parents.len() < n {
                let w = width.min(n - parents.len());
                for _ in 0..w {
                    parents.push(top);
                }
                top = (level_start + rng.below(w)) as i32;
                level_start = parents.len();
            }
            parents
        }
        // Any earlier node.
        _ => (0..n).map(|i| rng.below(i + 1) as i32 - 1).collect(),
    }
}

/// The reference row of a node: a fresh matcher, `prefix`, then `path` one by one.
fn reference(g: &Grammar, prefix: &[u32], path: &[u32]) -> Vec<u32> {
    let mut m = Matcher::new(g);
    let mut row = vec![0u32; m.mask_words()];
    m.consume_tokens(prefix).unwrap();
    if path.iter().all(|&t| m.consume_token(t).is_ok()) {
        m.compute_mask(&mut row).unwrap();
    }
    row
}

fn path_to(parents: &[i32], tokens: &[u32], mut i: i32) -> Vec<u32> {
    let mut path = Vec::new();
    while i >= 0 {
        path.push(tokens[i as usize]);
        i = parents[i as usize];
    }
    path.reverse();
    path
}

/// A random prefix of up to `len` tokens, sampled from the grammar's masks (no EOS).
fn prefix(g: &Grammar, rng: &mut Rng, len: usize) -> Vec<u32> {
    let mut m = Matcher::new(g);
    let eos = g.vocab().eos_tokens().to_vec();
    let mut mask = vec![0u32; m.mask_words()];
    let mut out = Vec::new();
    for _ in 0..len {
        m.compute_mask(&mut mask).unwrap();
        let choices: Vec<u32> = allowed_tokens(&mask)
            .into_iter()
            .filter(|t| !eos.contains(t))
            .collect();
        if choices.is_empty() {
            break;
        }
        let t = choices[rng.below(choices.len())];
        m.consume_token(t).unwrap();
        out.push(t);
    }
    out
}

/// One random tree on `g` checked against the reference; returns (nodes, accepted nodes,
/// lexer rebuilds during the fill).
fn check_tree(g: &Grammar, rng: &mut Rng, what: &str) -> (usize, usize, u64) {
    check_tree_on(g, g, rng, what)
}

/// [`check_tree`] with the tree filled on `on`, the same grammar compiled apart (its own
/// lexer tables, other limits).
fn check_tree_on(g: &Grammar, on: &Grammar, rng: &mut Rng, what: &str) -> (usize, usize, u64) {
    let vocab = g.vocab().clone();
    let n = 1 + rng.below(20);
    let parents = shape(rng, n);
    let len = rng.below(6);
    let start = prefix(g, rng, len);
    // Tokens: mostly allowed by the parent's reference mask (so paths go deep), sometimes
    // any token (mostly refused), EOS, or out of range.
    let mut tokens = Vec::with_capacity(n);
    let mut want: Vec<Vec<u32>> = vec![reference(g, &start, &[])];
    for i in 0..n {
        let parent_row = &want[(parents[i] + 1) as usize];
        let allowed = allowed_tokens(parent_row);
        let t = match rng.below(20) {
            0 => vocab.vocab_size() as u32 + rng.below(5) as u32,
            1 | 2 => rng.below(vocab.vocab_size()) as u32,
            3 => vocab.eos_tokens().first().copied().unwrap_or(0),
            _ if !allowed.is_empty() => allowed[rng.below(allowed.len())],
            _ => rng.below(vocab.vocab_size()) as u32,
        };
        tokens.push(t);
        want.push(reference(g, &start, &path_to(&parents, &tokens, i as i32)));
    }
    let mut m = Matcher::new(on);
    m.consume_tokens(&start).unwrap();
    let w = m.mask_words() + rng.below(2);
    let mut before = vec![0u32; m.mask_words()];
    m.compute_mask(&mut before).unwrap();
    let mut rows = vec![0xdead_beef_u32; (n + 1) * w + 3];
    let rebuilds = m.stats().lexer_rebuilds;
    let fill = m.fill_draft_tree(&tokens, &parents, &mut rows, w).unwrap();
    let rebuilds = m.stats().lexer_rebuilds - rebuilds;
    if let (Some(r), false) = (fill.failed_row, std::ptr::eq(g, on)) {
        // A limit of `on` that the node's mask does not fit either when reached one token
        // at a time: skipped.
        let mut f = Matcher::new(on);
        let mut row = vec![0u32; f.mask_words()];
        let path = if r == 0 {
            Vec::new()
        } else {
            path_to(&parents, &tokens, r as i32 - 1)
        };
        let fresh = f
            .consume_tokens(&start)
            .and_then(|()| f.consume_tokens(&path))
            .and_then(|()| f.compute_mask(&mut row));
        assert_eq!(fresh.err(), m.error().cloned(), "{what}: row {r}");
        return (n, 0, rebuilds);
    }
    assert_eq!(fill.failed_row, None, "{what}");
    let mut accepted = 0;
    for (r, want) in want.iter().enumerate() {
        let row = &rows[r * w..(r + 1) * w];
        assert_eq!(
            &row[..want.len()],
            &want[..],
            "{what}: row {r}, parents {parents:?}, tokens {tokens:?}, start {start:?}"
        );
        assert!(
            row[want.len()..].iter().all(|&x| x == 0),
            "{what}: row {r} tail"
        );
        accepted += usize::from(r > 0 && want.iter().any(|&x| x != 0));
    }
    assert_eq!(
        &rows[(n + 1) * w..],
        &[0xdead_beef; 3],
        "{what}: past the rows"
    );
    assert_eq!(fill.filled, 1 + accepted, "{what}: filled");
    // The matcher is where it started.
    assert_eq!(m.num_tokens(), start.len(), "{what}");
    assert!(m.error().is_none() && !m.is_stopped(), "{what}");
    let mut after = vec![0u32; m.mask_words()];
    let cached = m.stats().cached;
    m.compute_mask(&mut after).unwrap();
    assert_eq!(after, before, "{what}: mask after the tree");
    if rebuilds == 0 {
        // Row 0 is remembered: the next mask in this state is a copy of it.
        assert_eq!(m.stats().cached, cached + 1, "{what}: row 0 remembered");
    }
    if let Some(&t) = allowed_tokens(&after)
        .iter()
        .find(|t| !vocab.eos_tokens().contains(t))
    {
        let mut path = start.clone();
        path.push(t);
        m.consume_token(t).unwrap();
        m.compute_mask(&mut after).unwrap();
        assert_eq!(
            after,
            reference(g, &path, &[]),
            "{what}: after one more token"
        );
    }
    (n, accepted, rebuilds)
}

fn check_vocab(vocab: &Arc<Vocabulary>, trees: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for (name, g) in grammars(vocab) {
        let (mut nodes, mut accepted) = (0, 0);
        for k in 0..trees {
            let (n, a, _) = check_tree(&g, &mut rng, &format!("{name} tree {k}"));
            nodes += n;
            accepted += a;
        }
        eprintln!("{name}: {trees} trees, {nodes} nodes, {accepted} accepted");
        assert!(
            accepted * 5 > nodes * 2,
            "{name}: too few nodes accepted to go deep"
        );
    }
}

#[test]
fn random_trees_match_sequential_reference_synthetic() {
    check_vocab(&synthetic_vocab(), 250, 40);
}

#[test]
fn random_trees_match_sequential_reference_llama3() {
    let Some(vocab) = sieve_tests::llama3_vocab() else {
        return;
    };
    let trees = if cfg!(debug_assertions) { 20 } else { 200 };
    check_vocab(&vocab, trees, 41);
}

#[test]
fn invalid_input_writes_nothing() {
    let vocab = synthetic_vocab();
    let g = lark(LARK, &vocab);
    let mut m = Matcher::new(&g);
    let t = allowed_first(&mut m);
    m.consume_token(t).unwrap();
    let w = m.mask_words();
    // (tokens, parents, buffer words, words per row, the error)
    type Case = (Vec<u32>, Vec<i32>, usize, usize, DraftTreeError);
    let cases: Vec<Case> = vec![
        (
            vec![1, 2],
            vec![-1],
            3 * w,
            w,
            DraftTreeError::LengthMismatch {
                tokens: 2,
                parents: 1,
            },
        ),
        (
            vec![1, 2],
            vec![-1, 1],
            3 * w,
            w,
            DraftTreeError::BadParent { node: 1, parent: 1 },
        ),
        (
            vec![1, 2],
            vec![-2, 0],
            3 * w,
            w,
            DraftTreeError::BadParent {
                node: 0,
                parent: -2,
            },
        ),
        (
            vec![1],
            vec![-1],
            2 * w,
            w - 1,
            DraftTreeError::RowTooShort {
                needed: w,
                given: w - 1,
            },
        ),
        (
            vec![1, 2],
            vec![-1, 0],
            3 * w - 1,
            w,
            DraftTreeError::TooFewRows {
                needed: 3 * w,
                given: 3 * w - 1,
            },
        ),
    ];
    let mut before = vec![0u32; w];
    m.compute_mask(&mut before).unwrap();
    for (tokens, parents, len, words, err) in cases {
        let mut rows = vec![7u32; len];
        let got = m.fill_draft_tree(&tokens, &parents, &mut rows, words);
        assert_eq!(got, Err(err));
        assert!(!err.to_string().is_empty());
        assert!(rows.iter().all(|&x| x == 7), "{err}: rows written");
        assert_eq!(m.num_tokens(), 1);
    }
    let mut after = vec![0u32; w];
    m.compute_mask(&mut after).unwrap();
    assert_eq!(after, before);
    // An empty tree is row 0 alone.
    let mut rows = vec![7u32; w];
    let fill = m.fill_draft_tree(&[], &[], &mut rows, w).unwrap();
    assert_eq!((fill.filled, fill.failed_row), (1, None));
    assert_eq!(rows, before);
}

fn allowed_first(m: &mut Matcher) -> u32 {
    let mut mask = vec![0u32; m.mask_words()];
    m.compute_mask(&mut mask).unwrap();
    allowed_tokens(&mask)[0]
}

#[test]
fn matcher_in_error_fills_nothing_and_stays() {
    let vocab = synthetic_vocab();
    let g = lark(LARK, &vocab);
    let mut m = Matcher::new(&g);
    let t = allowed_first(&mut m);
    m.consume_token(t).unwrap();
    // A token the grammar refuses puts the matcher in error.
    let mut mask = vec![0u32; m.mask_words()];
    m.compute_mask(&mut mask).unwrap();
    let bad = (0..vocab.vocab_size() as u32)
        .find(|&t| !sieve_tests::bit(&mask, t as usize))
        .unwrap();
    assert!(m.consume_token(bad).is_err());
    let w = m.mask_words();
    let mut rows = vec![7u32; 3 * w];
    let fill = m.fill_draft_tree(&[t, t], &[-1, 0], &mut rows, w).unwrap();
    assert_eq!((fill.filled, fill.failed_row), (0, Some(0)));
    assert!(rows.iter().all(|&x| x == 0));
    assert!(m.error().is_some());
    assert_eq!(m.num_tokens(), 1);
}

#[test]
fn after_eos_only_eos_row_then_zero() {
    let vocab = synthetic_vocab();
    let g = Grammar::from_regex("ab", &vocab, &Limits::default()).unwrap();
    let mut m = Matcher::new(&g);
    m.consume_tokens(&prefix(&g, &mut Rng::new(1), 10)).unwrap();
    assert!(m.is_accepting());
    let eos = vocab.eos_tokens()[0];
    let w = m.mask_words();
    let start = m.num_tokens();
    // EOS, then EOS again under it, and a sibling EOS.
    let tokens = [eos, eos, eos];
    let parents = [-1, 0, -1];
    let mut rows = vec![7u32; 4 * w];
    let fill = m.fill_draft_tree(&tokens, &parents, &mut rows, w).unwrap();
    assert_eq!((fill.filled, fill.failed_row), (3, None));
    let only_eos: Vec<u32> = allowed_tokens(&rows[w..2 * w]);
    assert_eq!(only_eos, vocab.eos_tokens());
    assert!(rows[2 * w..3 * w].iter().all(|&x| x == 0), "EOS after EOS");
    assert_eq!(allowed_tokens(&rows[3 * w..]), vocab.eos_tokens());
    assert_eq!(m.num_tokens(), start);
    assert!(!m.is_stopped() && m.error().is_none());
}

/// A budget exceeded part way through the tree (`fuel_per_mask`, on a fresh grammar whose
/// lexer meets a 400-way alternation only after the tree's first tokens): the rows before
/// it are the reference's, the failing row and the rest are zero, the error is sticky and
/// the matcher is back at its position.
#[test]
fn limit_mid_tree_stops_and_restores() {
    let vocab = synthetic_vocab();
    let values: Vec<String> = (0..400).map(|i| format!("\"v{i}x\"")).collect();
    let src = format!(
        "start: \"{{\" KEY \":\" VALUE \"}}\"\nKEY: /\"[a-z]+\"/\nVALUE: {}\n",
        values.join(" | ")
    );
    let generous = lark(&src, &vocab);
    let start = vocab.greedy_tokenize_text(b"{\"ab").unwrap();
    let mut tokens = vocab.greedy_tokenize_text(b"c\":v123x}").unwrap();
    let mut parents: Vec<i32> = (0..tokens.len() as i32).map(|i| i - 1).collect();
    // A sibling branch after the chain in index order, visited last.
    tokens.push(tokens[0]);
    parents.push(-1);
    let n = tokens.len();
    let mut found = 0;
    for fuel in (0..48).map(|k| (20u64 << (k / 4)) + (k as u64 % 4) * (5u64 << (k / 4))) {
        let limits = Limits {
            fuel_per_mask: fuel,
            ..Limits::default()
        };
        let Ok(g) = Grammar::from_lark(&src, &vocab, &limits) else {
            continue;
        };
        let mut m = Matcher::new(&g);
        if m.consume_tokens(&start).is_err() {
            continue;
        }
        let w = m.mask_words();
        let mut rows = vec![7u32; (n + 1) * w];
        let fill = m.fill_draft_tree(&tokens, &parents, &mut rows, w).unwrap();
        assert_eq!(
            m.num_tokens(),
            start.len(),
            "fuel {fuel}: back at its position"
        );
        let Some(failed) = fill.failed_row else {
            assert_eq!(fill.filled, n + 1, "fuel {fuel}");
            continue;
        };
        assert!(
            matches!(m.error(), Some(MatcherError::Limit(LimitKind::Fuel))),
            "fuel {fuel}: {:?}",
            m.error()
        );
        // Depth-first order here is index order: rows before the failing one are filled.
        for r in 0..failed {
            let want = reference(&generous, &start, &tokens[..r]);
            assert_eq!(&rows[r * w..(r + 1) * w], &want[..], "fuel {fuel}: row {r}");
        }
        assert!(rows[failed * w..].iter().all(|&x| x == 0), "fuel {fuel}");
        assert_eq!(fill.filled, failed, "fuel {fuel}");
        found += usize::from(failed > 0);
    }
    eprintln!("{found} of 48 fuel limits stopped the tree part way");
    assert!(found > 0, "no fuel limit stopped the tree part way");
}

/// Lexer tables rebuilt during the tree (a small `max_lexer_states`): the rows still equal
/// the reference and the matcher's next masks are right (the remembered mask is not put back
/// under renamed state ids).
#[test]
fn lexer_rebuilds_mid_tree() {
    let vocab = synthetic_vocab();
    let mut rng = Rng::new(77);
    let mut rebuilt = 0;
    let generous = lark(LARK, &vocab);
    for states in [16, 17, 18, 19] {
        let limits = Limits {
            max_lexer_states: states,
            ..Limits::default()
        };
        let Ok(g) = Grammar::from_lark(LARK, &vocab, &limits) else {
            continue;
        };
        for k in 0..40 {
            let what = format!("max_lexer_states {states}, tree {k}");
            let (_, _, r) = check_tree_on(&generous, &g, &mut rng, &what);
            rebuilt += r;
        }
    }
    eprintln!("{rebuilt} lexer rebuilds seen");
    assert!(
        rebuilt > 0,
        "no rebuild happened: the limits are too generous"
    );
}

/// A gated matcher (free text until the trigger `<a>`, then the grammar): random trees
/// across the trigger against fresh gated matchers consuming each path; the matcher ends in
/// its phase and position.
#[test]
fn gated_matcher_trees() {
    let pieces: [&[u8]; 8] = [b"Sure: ", b"<a>", b"1", b"2", b"</a>", b"x", b"<", b"<eos>"];
    let tokens: Vec<Vec<u8>> = pieces.iter().map(|p| p.to_vec()).collect();
    let vocab = Arc::new(Vocabulary::new(tokens, &[7], &[7]).unwrap());
    let limits = Limits::default();
    let g = Grammar::from_regex("<a>[0-9]+</a>", &vocab, &limits).unwrap();
    let config = GateConfig {
        triggers: Some(Triggers {
            strings: vec![b"<a>".to_vec()],
            ..Triggers::default()
        }),
        ..GateConfig::default()
    };
    let gate = Gate::new(&config, &vocab, &limits).unwrap();
    let fresh = |path: &[u32]| -> Option<Matcher> {
        let mut m = Matcher::with_gate(&g, &gate);
        path.iter()
            .all(|&t| m.consume_token(t).is_ok())
            .then_some(m)
    };
    let row_of = |path: &[u32]| -> Vec<u32> {
        let mut row = vec![0u32; vocab.mask_words()];
        if let Some(mut m) = fresh(path) {
            m.compute_mask(&mut row).unwrap();
        }
        row
    };
    let mut rng = Rng::new(5);
    let mut accepted = 0;
    for k in 0..300 {
        let start: Vec<u32> = (0..rng.below(4)).map(|_| [0, 5, 6][rng.below(3)]).collect();
        let n = 1 + rng.below(12);
        let parents = shape(&mut rng, n);
        let mut tokens = Vec::new();
        let mut want = vec![row_of(&start)];
        for i in 0..n {
            let allowed = allowed_tokens(&want[(parents[i] + 1) as usize]);
            let t = if !allowed.is_empty() && rng.below(5) > 0 {
                allowed[rng.below(allowed.len())]
            } else {
                rng.below(8) as u32
            };
            tokens.push(t);
            let mut path = start.clone();
            path.extend(path_to(&parents, &tokens, i as i32));
            want.push(row_of(&path));
        }
        let mut m = fresh(&start).unwrap();
        let (phase, count) = (m.gate_phase(), m.num_tokens());
        let w = m.mask_words();
        let mut rows = vec![7u32; (n + 1) * w];
        let fill = m.fill_draft_tree(&tokens, &parents, &mut rows, w).unwrap();
        assert_eq!(fill.failed_row, None, "tree {k}");
        for (r, want) in want.iter().enumerate() {
            assert_eq!(
                &rows[r * w..(r + 1) * w],
                &want[..],
                "tree {k} row {r}: {tokens:?} {parents:?} {start:?}"
            );
        }
        assert_eq!((m.gate_phase(), m.num_tokens()), (phase, count), "tree {k}");
        assert_eq!(row_of(&start), {
            let mut row = vec![0u32; w];
            m.compute_mask(&mut row).unwrap();
            row
        });
        accepted += fill.filled - 1;
    }
    eprintln!("gated: {accepted} nodes accepted");
}
