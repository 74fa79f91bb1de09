//! Budget mode (issue 17 part B): `Matcher::shortest_completion`, `completion_tokens` and
//! `compute_mask_within`, checked against independent oracles.
//!
//! - Random grammars over `{a, b, c}` (`sieve_tests::cfg`, single-letter terminals) with the
//!   from-scratch Earley recognizer as oracle: after a random viable prefix, the shortest
//!   completion equals the first accepted string of a breadth-first enumeration of extensions
//!   in length-then-byte order (pruned to viable prefixes by the recognizer), and the
//!   recognizer accepts it.
//! - Budget walks over a small irregular vocabulary (greedy tokenization is not always
//!   minimal there): for budgets `N >= completion_tokens()`, random walks picking from
//!   `compute_mask_within(.., N - i)` never meet an empty mask before the text is accepted
//!   and end accepted (by the recognizer) within `N` tokens; every token the narrowed mask
//!   holds is viable for the recognizer. The gap between `completion_tokens()` and the least
//!   token count (breadth-first search over token sequences with the recognizer) is printed.
//! - Hand-written grammars where lexing matters (max-munch, ignored and lazy lexemes), with
//!   the answers worked out by hand.

use std::collections::VecDeque;
use std::sync::Arc;

use proptest::prelude::*;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use sieve_tests::cfg::{ALPHABET, Cfg, cfg_strategy, recognize};
use sieve_tests::{Rng, bit};

/// The shortest accepted extension of `prefix` (least in byte order among the shortest),
/// by breadth-first enumeration pruned to viable prefixes; `Err(GaveUp::Length)` when none
/// is found within `max_len` bytes, `Err(GaveUp::Nodes)` past 20,000 strings.
fn brute_shortest(g: &Cfg, prefix: &[u8], max_len: usize) -> Result<Vec<u8>, GaveUp> {
    let nullable = g.nullable();
    let mut level: Vec<Vec<u8>> = vec![Vec::new()];
    let mut nodes = 0;
    for _ in 0..=max_len {
        for s in &level {
            let mut text = prefix.to_vec();
            text.extend_from_slice(s);
            if recognize(g, &nullable, &text).complete {
                return Ok(s.clone());
            }
        }
        let mut next = Vec::new();
        for s in &level {
            for &c in ALPHABET {
                let mut t = s.clone();
                t.push(c);
                let mut text = prefix.to_vec();
                text.extend_from_slice(&t);
                nodes += 1;
                if nodes > 20_000 {
                    return Err(GaveUp::Nodes);
                }
                if recognize(g, &nullable, &text).viable {
                    next.push(t);
                }
            }
        }
        level = next;
    }
    Err(GaveUp::Length)
}

/// Why the brute-force search found no completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GaveUp {
    /// None within the length bound.
    Length,
    /// The search space outgrew the node bound before the length bound (inconclusive).
    Nodes,
}

fn letters_vocab() -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&c| vec![c]).collect();
    tokens.push(b"<eos>".to_vec());
    let eos = tokens.len() as u32 - 1;
    Arc::new(Vocabulary::new(tokens, &[eos], &[eos]).expect("vocabulary"))
}

/// Single letters plus a few longer pieces, so that greedy longest match is sometimes not
/// the fewest tokens (`"aabca"` is `aab c a` greedily, `aa bca` at best).
const PIECES: &[&str] = &[
    "a", "b", "c", "ab", "bc", "ca", "aa", "cc", "abc", "cab", "bca", "aab",
];

fn pieces_vocab() -> (Arc<Vocabulary>, Vec<Vec<u8>>, u32) {
    let mut tokens: Vec<Vec<u8>> = PIECES.iter().map(|p| p.as_bytes().to_vec()).collect();
    let eos = tokens.len() as u32;
    tokens.push(b"<eos>".to_vec());
    let vocab = Arc::new(Vocabulary::new(tokens.clone(), &[eos], &[eos]).expect("vocabulary"));
    (vocab, tokens, eos)
}

/// A random viable prefix of up to `steps` letters, chosen with the recognizer.
fn random_prefix(g: &Cfg, rng: &mut Rng, steps: usize) -> Vec<u8> {
    let nullable = g.nullable();
    let mut text = Vec::new();
    for _ in 0..steps {
        let options: Vec<u8> = ALPHABET
            .iter()
            .copied()
            .filter(|&c| {
                let mut t = text.clone();
                t.push(c);
                recognize(g, &nullable, &t).viable
            })
            .collect();
        if options.is_empty() {
            break;
        }
        text.push(options[rng.below(options.len())]);
    }
    text
}

fn check_shortest(g: &Cfg, seed: u64) -> Result<(), String> {
    let vocab = letters_vocab();
    let grammar = Grammar::from_lark(&g.to_lark(), &vocab, &Limits::default())
        .map_err(|e| format!("does not compile: {e}"))?;
    let nullable = g.nullable();
    let mut rng = Rng::new(seed);
    for walk in 0..4 {
        let steps = rng.below(7);
        let prefix = random_prefix(g, &mut rng, steps);
        let mut m = Matcher::new(&grammar);
        if !m.try_consume_bytes(&prefix) {
            return Err(format!("prefix {:?} refused", lossy(&prefix)));
        }
        let got = m
            .shortest_completion()
            .map_err(|e| format!("walk {walk}: {e}"))?;
        let want = brute_shortest(g, &prefix, 9);
        match (got, want) {
            (Some(s), Ok(w)) => {
                let mut text = prefix.clone();
                text.extend_from_slice(&s);
                if !recognize(g, &nullable, &text).complete {
                    return Err(format!(
                        "after {:?}: {:?} is not accepted by the recognizer",
                        lossy(&prefix),
                        lossy(&s)
                    ));
                }
                if s != w {
                    return Err(format!(
                        "after {:?}: sieve {:?}, brute force {:?}",
                        lossy(&prefix),
                        lossy(&s),
                        lossy(&w)
                    ));
                }
            }
            // Beyond the search's bounds (inconclusive on minimality when it ran out of
            // nodes): sieve's completion must still be accepted.
            (Some(s), Err(gave_up)) if s.len() > 9 || gave_up == GaveUp::Nodes => {
                let mut text = prefix.clone();
                text.extend_from_slice(&s);
                if !recognize(g, &nullable, &text).complete {
                    return Err(format!(
                        "after {:?}: {:?} is not accepted by the recognizer",
                        lossy(&prefix),
                        lossy(&s)
                    ));
                }
            }
            (got, want) => {
                return Err(format!(
                    "after {:?}: sieve {:?}, brute force {:?}",
                    lossy(&prefix),
                    got.map(|s| lossy(&s)),
                    want.map(|s| lossy(&s))
                ));
            }
        }
    }
    Ok(())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The fewest tokens of `tokens` (EOS excluded) that complete `prefix`, by breadth-first
/// search over token sequences pruned with the recognizer; `None` past `max` tokens.
fn brute_min_tokens(
    g: &Cfg,
    tokens: &[Vec<u8>],
    eos: u32,
    prefix: &[u8],
    max: usize,
) -> Option<usize> {
    let nullable = g.nullable();
    let mut queue = VecDeque::from([(prefix.to_vec(), 0usize)]);
    let mut seen = std::collections::HashSet::new();
    while let Some((text, n)) = queue.pop_front() {
        if recognize(g, &nullable, &text).complete {
            return Some(n);
        }
        if n == max {
            continue;
        }
        for (t, bytes) in tokens.iter().enumerate() {
            if t as u32 == eos {
                continue;
            }
            let mut next = text.clone();
            next.extend_from_slice(bytes);
            if recognize(g, &nullable, &next).viable && seen.insert(next.clone()) {
                queue.push_back((next, n + 1));
            }
        }
    }
    None
}

/// Budget walks; returns `(completion_tokens, brute-force minimum)` at the start.
fn check_budget(g: &Cfg, seed: u64) -> Result<(usize, usize), String> {
    let (vocab, tokens, eos) = pieces_vocab();
    let grammar = Grammar::from_lark(&g.to_lark(), &vocab, &Limits::default())
        .map_err(|e| format!("does not compile: {e}"))?;
    let nullable = g.nullable();
    let mut rng = Rng::new(seed);
    let steps = rng.below(4);
    let prefix = random_prefix(g, &mut rng, steps);
    let mut start = Matcher::new(&grammar);
    if !start.try_consume_bytes(&prefix) {
        return Err("prefix refused".into());
    }
    let t0 = start
        .completion_tokens()
        .map_err(|e| e.to_string())?
        .ok_or("no completion for a viable prefix")?;
    // The search stops at `t0` tokens, so what it can catch is a claim too small: no
    // completion of the prefix within `completion_tokens` tokens at all. (It used to check
    // `min > t0`, which a search capped at `t0` can never find.)
    let Some(min) = brute_min_tokens(g, &tokens, eos, &prefix, t0) else {
        return Err(format!(
            "no completion within completion_tokens = {t0} tokens by brute force"
        ));
    };
    let mut mask = vec![0u32; vocab.mask_words()];
    for walk in 0..12 {
        let n = t0 + rng.below(4);
        let mut m = start.clone();
        let mut text = prefix.clone();
        let mut used = 0;
        while used < n {
            m.compute_mask_within(&mut mask, n - used)
                .map_err(|e| format!("walk {walk}: {e}"))?;
            let mut choices = Vec::new();
            for t in 0..tokens.len() as u32 {
                if !bit(&mask, t as usize) {
                    continue;
                }
                if t == eos {
                    if !recognize(g, &nullable, &text).complete {
                        return Err(format!("EOS allowed after {:?}", lossy(&text)));
                    }
                } else {
                    let mut next = text.clone();
                    next.extend_from_slice(&tokens[t as usize]);
                    if !recognize(g, &nullable, &next).viable {
                        return Err(format!(
                            "{:?} allowed after {:?}",
                            lossy(&tokens[t as usize]),
                            lossy(&text)
                        ));
                    }
                }
                choices.push(t);
            }
            if choices.is_empty() {
                return Err(format!(
                    "walk {walk} (budget {n}): empty mask after {:?} with {} left",
                    lossy(&text),
                    n - used
                ));
            }
            let t = choices[rng.below(choices.len())];
            if t == eos {
                break;
            }
            m.consume_token(t).map_err(|e| e.to_string())?;
            text.extend_from_slice(&tokens[t as usize]);
            used += 1;
        }
        if !recognize(g, &nullable, &text).complete {
            return Err(format!(
                "walk {walk} (budget {n} from {:?}): ends at {:?}, not accepted",
                lossy(&prefix),
                lossy(&text)
            ));
        }
    }
    Ok((t0, min))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn shortest_completion_matches_brute_force(g in cfg_strategy(), seed in any::<u64>()) {
        check_shortest(&g, seed).map_err(|e| TestCaseError::fail(format!("{e}\n{}", g.to_lark())))?;
    }
}

/// Budget walks over many random grammars, with the gap to the least token count printed.
#[test]
fn budget_walks_end_accepted_within_the_budget() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let config = proptest::test_runner::Config {
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let strategy = cfg_strategy();
    let (mut cases, mut exact, mut known, mut gap_sum, mut gap_max) = (0, 0, 0, 0, 0);
    for case in 0..300u64 {
        let g = strategy.new_tree(&mut runner).expect("strategy").current();
        match check_budget(&g, case) {
            Ok((t0, min)) => {
                cases += 1;
                known += 1;
                let gap = t0 - min;
                exact += usize::from(gap == 0);
                gap_sum += gap;
                gap_max = gap_max.max(gap);
            }
            Err(e) => panic!("case {case}: {e}\n{}", g.to_lark()),
        }
    }
    eprintln!(
        "budget walks: {cases} grammars x 12 walks; completion_tokens == brute-force minimum in \
         {exact}/{known}, mean gap {:.3}, max gap {gap_max}",
        gap_sum as f64 / known.max(1) as f64
    );
}

fn lark(src: &str) -> Grammar {
    let vocab = Arc::new(Vocabulary::synthetic(300, 7));
    Grammar::from_lark(src, &vocab, &Limits::default()).expect("grammar compiles")
}

fn shortest_after(src: &str, prefix: &str) -> Option<String> {
    let mut m = Matcher::new(&lark(src));
    assert!(m.try_consume_bytes(prefix.as_bytes()), "prefix {prefix:?}");
    m.shortest_completion()
        .expect("search fits")
        .map(|s| String::from_utf8(s).expect("utf-8"))
}

#[test]
fn lexing_decides_the_shortest_completion() {
    // Two numbers with nothing between them: a greedy lexer never ends the first, so the
    // regular rule around them is one lexeme (the boundary repair, issue 38) and `00` is
    // the shortest string, as the grammar says.
    let nn = "start: NUM NUM\nNUM: /[0-9]+/\n";
    assert_eq!(shortest_after(nn, "").as_deref(), Some("00"));
    assert_eq!(shortest_after(nn, "12").as_deref(), Some(""));
    // Inside recursion too: the run `NUM NUM` of the recursive rule is one lexeme.
    let nn_rec = "start: s\ns: \"(\" s \")\" | NUM NUM\nNUM: /[0-9]+/\n";
    assert_eq!(shortest_after(nn_rec, "(12").as_deref(), Some(")"));
    // With ignored spaces they do, with one space.
    let nn_ws = "start: NUM NUM\nNUM: /[0-9]+/\n%ignore \" \"\n";
    assert_eq!(shortest_after(nn_ws, "").as_deref(), Some("0 0"));
    assert_eq!(shortest_after(nn_ws, "12").as_deref(), Some(" 0"));
    assert_eq!(shortest_after(nn_ws, "12 ").as_deref(), Some("0"));
    // A lexeme that swallows what must follow it: repaired where the rule is regular...
    let word = "start: WORD \"!\"\nWORD: /[a-z!]+/\n";
    assert_eq!(shortest_after(word, "ab").as_deref(), Some("!"));
    // ... and not with `%ignore` (not repaired): the lexeme swallows `!` and the space.
    let word_ws = "start: WORD \"!\"\nWORD: /[a-z! ]+/\n%ignore \" \"\n";
    assert_eq!(shortest_after(word_ws, "ab"), None);
    // A lazy lexeme ends at its first match.
    let lazy = "start: L \"x\"\nL[lazy]: /a+b/\n";
    assert_eq!(shortest_after(lazy, "").as_deref(), Some("abx"));
    assert_eq!(shortest_after(lazy, "aaa").as_deref(), Some("bx"));
    // Nesting: one closing bracket per open one.
    let nest = "start: s\ns: \"[\" s \"]\" | \"x\"\n";
    assert_eq!(shortest_after(nest, "[[[").as_deref(), Some("x]]]"));
    assert_eq!(shortest_after(nest, "[[x]").as_deref(), Some("]"));
    assert_eq!(shortest_after(nest, "x").as_deref(), Some(""));
    // Keywords against identifiers: `if` alone is the keyword, the identifier needs more.
    let kw = "start: \"if\" ID | ID ID\nID: /[a-z]+/\n%ignore \" \"\n";
    assert_eq!(shortest_after(kw, "").as_deref(), Some("a a"));
    assert_eq!(shortest_after(kw, "if").as_deref(), Some(" a"));
}

#[test]
fn a_json_schema_completes_mid_object() {
    let vocab = Arc::new(Vocabulary::synthetic(300, 7));
    let schema = r#"{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer"}},"required":["name","n"],"additionalProperties":false}"#;
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let (g, _) =
        Grammar::from_json_schema_str(schema, &opts, &vocab, &Limits::default()).expect("schema");
    let mut m = Matcher::new(&g);
    assert!(m.try_consume_bytes(br#"{"name": "ab"#));
    let s = m.shortest_completion().expect("fits").expect("some");
    assert_eq!(s, br#"","n":0}"#);
    assert!(m.try_consume_bytes(&s));
    assert!(m.is_accepting());
    assert_eq!(m.completion_tokens().expect("fits"), Some(0));
}

/// The 20 schemas `bench/scripts/generate_acceptance.py` draws: MaskBench files ordered by
/// sha256 of their names, schemas of at most 1,500 bytes as compact JSON that compile without
/// a superset approximation, first 20.
fn generate_acceptance_files(root: &std::path::Path, vocab: &Arc<Vocabulary>) -> Vec<String> {
    use sieve_core::grammar::json::serde_json;
    // `list_files` orders by sha256 of the file name, as the script does.
    let Ok(paths) = sieve_bench::maskbench::list_files(&[root.join("data/maskbench")], 0) else {
        return Vec::new();
    };
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let mut chosen = Vec::new();
    for path in paths {
        let Some(name) = path.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        // Python's `json.dumps(separators=(",", ":"))` escapes non-ASCII; compare alike.
        let compact = serde_json::to_string(&v["schema"]).unwrap_or_default();
        let len: usize = compact
            .chars()
            .map(|c| if c.is_ascii() { 1 } else { 6 })
            .sum();
        if len > 1500 {
            continue;
        }
        match Grammar::from_json_schema(&v["schema"], &opts, vocab, &Limits::default()) {
            Ok((_, report)) if report.supersets().next().is_none() => chosen.push(name),
            _ => {}
        }
        if chosen.len() == 20 {
            break;
        }
    }
    chosen
}

/// The cost of budget mode on a real tokenizer (`cargo test --release -p sieve-tests --test
/// budget -- --ignored --nocapture cost_on`; `BUDGET_FILES=a.json,b.json` for other
/// MaskBench files than the 20 of the generate-acceptance run): replays a valid instance of
/// each schema token by token and times `compute_mask` against `compute_mask_within` with
/// a loose and a tight budget, each mode on a grammar of its own (so each pays for the
/// tables it builds, as a process of its own would).
#[test]
#[ignore = "timing; needs ../shared"]
fn cost_on_a_real_tokenizer() {
    use sieve_core::grammar::json::serde_json;
    use std::time::Instant;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let tok = sieve_bench::tokenizer::LoadedTokenizer::load(
        root.join("tokenizers/smollm2.json").to_str().expect("path"),
    )
    .expect("tokenizer");
    let vocab = tok.vocab.clone();
    let files: Vec<String> = match std::env::var("BUDGET_FILES") {
        Ok(list) => list.split(',').map(str::to_owned).collect(),
        Err(_) => generate_acceptance_files(&root, &vocab),
    };
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let mut mask = vec![0u32; vocab.mask_words()];
    let (mut t_exact, mut t_loose, mut t_tight, mut steps) =
        (Vec::new(), Vec::new(), Vec::new(), 0);
    for f in &files {
        let Ok(text) = std::fs::read_to_string(root.join("data/maskbench").join(f)) else {
            eprintln!("skip {f}: not found");
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        // A grammar each, so that each mode pays for the tables it builds (as a process of
        // its own would).
        let compile = || Grammar::from_json_schema(&v["schema"], &opts, &vocab, &Limits::default());
        let (Ok((g, _)), Ok((g_loose, _)), Ok((g_tight, _))) = (compile(), compile(), compile())
        else {
            eprintln!("skip {f}: does not compile");
            continue;
        };
        let Some(inst) = v["tests"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["valid"] == true))
        else {
            continue;
        };
        let doc = serde_json::to_string(&inst["data"]).expect("json");
        let ids = tok.encode(&doc);
        let mut m = Matcher::new(&g);
        let mut loose = Matcher::new(&g_loose);
        let mut budgeted = Matcher::new(&g_tight);
        for (i, &t) in ids.iter().enumerate() {
            let left = ids.len() - i;
            let a = Instant::now();
            m.compute_mask(&mut mask).expect("mask");
            t_exact.push(a.elapsed().as_secs_f64() * 1e6);
            let a = Instant::now();
            loose.compute_mask_within(&mut mask, 10_000).expect("mask");
            t_loose.push(a.elapsed().as_secs_f64() * 1e6);
            let a = Instant::now();
            budgeted.compute_mask_within(&mut mask, left).expect("mask");
            t_tight.push(a.elapsed().as_secs_f64() * 1e6);
            if m.consume_token(t).is_err()
                || loose.consume_token(t).is_err()
                || budgeted.consume_token(t).is_err()
            {
                break;
            }
            steps += 1;
        }
        eprintln!("{f}: {} tokens replayed", ids.len());
    }
    let stat = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
        let p = |q: f64| {
            v.get(((v.len() as f64 - 1.0) * q) as usize)
                .copied()
                .unwrap_or(0.0)
        };
        format!(
            "mean {mean:.0} us, p50 {:.0}, p90 {:.0}, max {:.0}",
            p(0.5),
            p(0.9),
            p(1.0)
        )
    };
    eprintln!(
        "{steps} steps over {} ({} tokens)",
        tok.name,
        vocab.vocab_size()
    );
    eprintln!("compute_mask:                     {}", stat(&mut t_exact));
    eprintln!("compute_mask_within(10000):       {}", stat(&mut t_loose));
    eprintln!("compute_mask_within(tokens left): {}", stat(&mut t_tight));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    eprintln!(
        "mean ratio to compute_mask: loose {:.2}x, tokens left {:.2}x ({} schemas)",
        mean(&t_loose) / mean(&t_exact),
        mean(&t_tight) / mean(&t_exact),
        files.len()
    );
}

/// Budget walks on JSON Schemas over the synthetic tokenizer, with an independent JSON
/// Schema validator (`jsonschema`) as the oracle of the final text: for budgets from
/// `completion_tokens()` up, random walks over `compute_mask_within` never meet an empty
/// mask before the output is complete, and end valid within the budget.
#[test]
fn json_budget_walks_end_valid() {
    use sieve_core::grammar::json::serde_json::{self, Value, json};
    let vocab = Arc::new(Vocabulary::synthetic(300, 7));
    let eos = vocab.eos_tokens()[0];
    let schemas = [
        json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "items": {"enum": ["a", "bb", "ccc"]}, "minItems": 1},
            "kind": {"const": "person"}},
          "required": ["name", "age", "tags", "kind"], "additionalProperties": false}),
        json!({"type": "array", "items": {"type": "object", "properties": {
            "x": {"type": "number"}, "y": {"type": "boolean"},
            "inner": {"type": "object", "properties": {"z": {"type": "string", "pattern": "^[a-z]{2,4}$"}},
                      "required": ["z"]}},
          "required": ["x", "inner"]}, "minItems": 2}),
        json!({"anyOf": [{"type": "string", "minLength": 3}, {"type": "object", "properties": {"k": {"type": "null"}}, "required": ["k"]}]}),
    ];
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let mut rng = Rng::new(17);
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut walks = 0;
    for schema in &schemas {
        let validator = jsonschema::validator_for(schema).expect("validator");
        let (g, _) = Grammar::from_json_schema(schema, &opts, &vocab, &Limits::default())
            .expect("schema compiles");
        for walk in 0..40 {
            let mut m = Matcher::new(&g);
            // Start from a random prefix of free generation, then budget mode.
            let free = rng.below(12);
            let mut text = Vec::new();
            for _ in 0..free {
                m.compute_mask(&mut mask).expect("mask");
                let allowed: Vec<u32> = sieve_tests::allowed_tokens(&mask)
                    .into_iter()
                    .filter(|&t| t != eos)
                    .collect();
                if allowed.is_empty() {
                    break;
                }
                let t = allowed[rng.below(allowed.len())];
                m.consume_token(t).expect("allowed");
                text.extend_from_slice(vocab.trie_bytes(t));
            }
            let t0 = m.completion_tokens().expect("fits").expect("completable");
            let n = t0 + rng.below(6);
            let mut used = 0;
            while used < n {
                m.compute_mask_within(&mut mask, n - used).expect("mask");
                let allowed = sieve_tests::allowed_tokens(&mask);
                assert!(
                    !allowed.is_empty(),
                    "{schema}: walk {walk}: empty mask after {:?} ({} of {n} left)",
                    lossy(&text),
                    n - used
                );
                let t = allowed[rng.below(allowed.len())];
                if t == eos {
                    break;
                }
                m.consume_token(t).expect("allowed");
                text.extend_from_slice(vocab.trie_bytes(t));
                used += 1;
            }
            let doc = String::from_utf8(text.clone()).expect("utf-8");
            let value: Value = serde_json::from_str(&doc)
                .unwrap_or_else(|e| panic!("{schema}: walk {walk} (budget {n}): {doc:?}: {e}"));
            assert!(
                validator.is_valid(&value),
                "{schema}: walk {walk} (budget {n}): {doc:?} is not valid"
            );
            walks += 1;
        }
    }
    eprintln!("json budget walks: {walks} valid");
}

/// Budgets below the minimum, a stopped matcher, rollback and a probe with
/// `validate_tokens`.
#[test]
fn budget_edge_cases() {
    let vocab = letters_vocab();
    let eos = vocab.eos_tokens()[0];
    // a^k b^k: after "aaa" the only completion is "bbb".
    let g = Grammar::from_lark(
        "start: s\ns: \"a\" s \"b\" | \"ab\"\n",
        &vocab,
        &Limits::default(),
    )
    .expect("grammar");
    let mut m = Matcher::new(&g);
    for _ in 0..3 {
        m.consume_token(0).expect("a");
    }
    assert_eq!(
        m.shortest_completion().expect("fits").as_deref(),
        Some(&b"bbb"[..])
    );
    assert_eq!(m.completion_tokens().expect("fits"), Some(3));
    let mut mask = vec![0u32; vocab.mask_words()];
    // A budget below the minimum is raised to it: the mask follows the shortest plan.
    for remaining in [0, 1, 3] {
        m.compute_mask_within(&mut mask, remaining).expect("mask");
        assert_eq!(
            sieve_tests::allowed_tokens(&mask),
            vec![1],
            "budget {remaining}: b only"
        );
    }
    // A loose budget keeps the exact mask.
    m.compute_mask_within(&mut mask, 10).expect("mask");
    assert_eq!(sieve_tests::allowed_tokens(&mask), vec![0, 1]);
    // A probe does not disturb the plan; a rollback forgets it, and budget mode starts again.
    assert_eq!(m.validate_tokens(&[1, 1]).expect("probe"), 2);
    assert_eq!(m.completion_tokens().expect("fits"), Some(3));
    m.consume_token(1).expect("b");
    m.rollback(1).expect("rollback");
    m.compute_mask_within(&mut mask, 3).expect("mask");
    assert_eq!(sieve_tests::allowed_tokens(&mask), vec![1]);
    for _ in 0..3 {
        m.consume_token(1).expect("b");
    }
    assert_eq!(m.completion_tokens().expect("fits"), Some(0));
    m.compute_mask_within(&mut mask, 0).expect("mask");
    assert_eq!(
        sieve_tests::allowed_tokens(&mask),
        vec![eos],
        "accepting, no budget: EOS"
    );
    m.consume_token(eos).expect("eos");
    assert_eq!(
        m.shortest_completion().expect("stopped").as_deref(),
        Some(&b""[..])
    );
    m.compute_mask_within(&mut mask, 5).expect("mask");
    assert_eq!(sieve_tests::allowed_tokens(&mask), vec![eos]);
}

/// The narrowing against its definition (`core/docs/budget.md`, point 3), token by token,
/// on JSON Schemas whose lexer states group tokens in every way `compute_mask_within`
/// groups them (string bodies that loop after one character, free keys beside named ones,
/// bounded strings, enums, numbers, escapes and multi-byte text): on a matcher with no
/// remembered plan, token `t` (not EOS) stays iff the greedy count of
/// `shortest_completion()` after `t` is at most `max(r, T) - 1`, or `t`'s bytes start the
/// shortest completion here and the rest of it counts at most that; EOS stays iff the plain
/// mask has it. Each side is computed from the public calls on clones, not from the
/// narrowing's groups.
#[test]
fn narrowing_keeps_what_its_definition_names() {
    use sieve_core::grammar::json::serde_json::json;
    let vocab = Arc::new(Vocabulary::synthetic(300, 11));
    let trie = vocab.trie();
    let schemas = [
        json!({"type": "object", "properties": {
            "name": {"type": "string"}, "nick": {"type": "string", "maxLength": 5},
            "n": {"type": "number"}, "e": {"enum": ["red", "rose", "é"]}},
          "additionalProperties": {"type": "string"}}),
        json!({"type": "array", "items": {"type": "string", "pattern": "^[a-z é]+$"}, "minItems": 1}),
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"}},
          "required": ["a", "b"], "additionalProperties": false}),
    ];
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let mut rng = Rng::new(5);
    let mut plain = vec![0u32; vocab.mask_words()];
    let mut got = vec![0u32; vocab.mask_words()];
    let mut checked = 0;
    for schema in &schemas {
        let (g, _) = Grammar::from_json_schema(schema, &opts, &vocab, &Limits::default())
            .expect("schema compiles");
        for _ in 0..4 {
            let mut m = Matcher::new(&g);
            // The same walk on a matcher that narrows every time (its caches and its memo
            // of search answers warm from call to call); its remembered plan is dropped at
            // each step (rollback and consume again), as the definition has none.
            let mut warm = Matcher::new(&g);
            let mut walked = Vec::new();
            for _ in 0..24 {
                m.compute_mask(&mut plain).expect("mask");
                let allowed = sieve_tests::allowed_tokens(&plain);
                let count = |c: &mut Matcher| {
                    let s = c.shortest_completion().expect("search");
                    s.and_then(|s| trie.greedy_count(&s))
                };
                let shortest = m.clone().shortest_completion().expect("search");
                let t0 = count(&mut m.clone());
                // The count after each allowed token (EOS aside).
                let after: Vec<(u32, Option<usize>)> = allowed
                    .iter()
                    .filter(|t| !vocab.eos_tokens().contains(t))
                    .map(|&t| {
                        let mut c = m.clone();
                        c.consume_token(t).expect("allowed");
                        (t, count(&mut c))
                    })
                    .collect();
                let Some(t0) = t0 else { break };
                for r in [t0, t0 + 1, t0 + 3, 10_000] {
                    let mut expected = vec![0u32; vocab.mask_words()];
                    for &e in vocab.eos_tokens() {
                        if bit(&plain, e as usize) {
                            expected[e as usize / 32] |= 1 << (e % 32);
                        }
                    }
                    if let Some(limit) = r.max(t0).checked_sub(1) {
                        for &(t, n) in &after {
                            let bytes = vocab.trie_bytes(t);
                            let on_plan = shortest.as_ref().is_some_and(|s| {
                                s.starts_with(bytes)
                                    && trie
                                        .greedy_count(&s[bytes.len()..])
                                        .is_some_and(|k| k <= limit)
                            });
                            if on_plan || n.is_some_and(|n| n <= limit) {
                                expected[t as usize / 32] |= 1 << (t % 32);
                            }
                        }
                    }
                    for (how, c) in [("fresh", &mut m.clone()), ("warm", &mut warm)] {
                        c.compute_mask_within(&mut got, r).expect("mask");
                        assert_eq!(
                            sieve_tests::allowed_tokens(&got),
                            sieve_tests::allowed_tokens(&expected),
                            "{how}: schema {schema}, after {:?}, budget {r} (T = {t0})",
                            String::from_utf8_lossy(&vocab.tokens_to_bytes(&walked)),
                        );
                    }
                    checked += 1;
                }
                let choices: Vec<u32> = after.iter().map(|&(t, _)| t).collect();
                if choices.is_empty() {
                    break;
                }
                let t = choices[rng.below(choices.len())];
                m.consume_token(t).expect("allowed");
                warm.consume_token(t).expect("allowed");
                warm.rollback(1).expect("rollback");
                warm.consume_token(t).expect("allowed");
                walked.push(t);
            }
        }
    }
    eprintln!("{checked} narrowed masks equal their definition");
    assert!(checked > 200, "only {checked} masks checked");
}
