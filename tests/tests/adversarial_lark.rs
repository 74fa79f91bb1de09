//! Adversarial Lark grammars, regexes and tokenizer files: each ends in success or a specific
//! typed error within its budget. Every case asserts the compile's work (its fuel,
//! [`COMPILE_FUEL`]), its peak heap (a generous bound, measured with the counting allocator
//! installed below), the outcome, and, when it compiles, the work of each of a few masks over
//! the synthetic vocabulary ([`STEP_FUEL`]). Work is bounded by counts, the same on every
//! machine; times (this thread's CPU time on Linux, elsewhere wall time) are printed, not
//! checked: they belong in benchmarks.

use std::sync::Arc;
use std::time::Duration;

use sieve_core::grammar::json::JsonOptions;
use sieve_core::vocab::VocabError;
use sieve_core::{
    Grammar, GrammarError, GrammarErrorKind, LimitKind, Limits, Matcher, MatcherError, Vocabulary,
};
use sieve_tests::heap::cpu_timed as timed;
use sieve_tests::heap::{Counting, counting_installed, peak_heap, with_stack};
use sieve_tests::tight::{tight_failures, tight_run};
use sieve_tests::{Rng, allowed_tokens, synthetic_vocab};

#[global_allocator]
static ALLOC: Counting = Counting;

/// The most fuel a compile that succeeds may spend (`Grammar::compile_fuel_spent`): about
/// twice the largest case's, measured 2026-11-28 (1,048,636, `T_19 (512 KiB)`).
const COMPILE_FUEL: u64 = 2_500_000;
/// The most fuel one mask or token may spend (`MaskStats::max_step_fuel`): about twice the
/// largest case's, measured 2026-11-28 (1,646,649, `Lark 1 MB source`).
const STEP_FUEL: u64 = 3_500_000;
const MB: usize = 1 << 20;
/// Masks computed for each grammar that compiles.
const MASKS: usize = 4;

fn limit(kind: LimitKind) -> Option<GrammarErrorKind> {
    Some(GrammarErrorKind::Limit(kind))
}

/// Compile with `compile`, assert time, heap and an outcome in `want` (`None` = success),
/// then walk a few masks. Returns the grammar when it compiled.
fn case(
    name: &str,
    heap: usize,
    want: &[Option<GrammarErrorKind>],
    compile: impl Fn(&Arc<Vocabulary>, &Limits) -> Result<Grammar, GrammarError>,
) -> Option<Grammar> {
    assert!(
        counting_installed(),
        "the counting allocator is not installed"
    );
    let vocab = synthetic_vocab();
    let ((got, used), took) = timed(|| peak_heap(|| compile(&vocab, &Limits::default())));
    let kind = got.as_ref().err().map(|e| e.kind.clone());
    eprintln!(
        "{name}: {:?} in {:.1} ms, peak heap {:.1} MB",
        got.as_ref().map(|_| ()).map_err(|e| e.to_string()),
        took.as_secs_f64() * 1e3,
        used.peak as f64 / MB as f64
    );
    if let Ok(g) = &got {
        let spent = g.compile_fuel_spent();
        eprintln!("{name}: compile fuel {spent}");
        assert!(
            spent <= COMPILE_FUEL,
            "{name}: the compile spent {spent} fuel, over {COMPILE_FUEL}"
        );
    }
    assert!(
        used.peak < heap,
        "{name}: peak heap {} > {heap} bytes",
        used.peak
    );
    assert!(
        want.contains(&kind),
        "{name}: got {kind:?}, want one of {want:?}"
    );
    // The same case under a 256 KiB budget (compile and masks under one peak).
    let tight = tight_run(&vocab, MASKS, |limits| compile(&vocab, limits));
    let failures = tight_failures(name, &tight);
    assert!(failures.is_empty(), "{failures:#?}");
    let g = got.ok()?;
    walk(name, &g, MASKS);
    Some(g)
}

/// Compute up to `n` masks, consuming a seeded random allowed token after each; every mask
/// spends at most [`STEP_FUEL`] and either succeeds or ends in a typed limit error. Returns
/// the masks' times (reported by callers).
fn walk(name: &str, g: &Grammar, n: usize) -> Vec<Duration> {
    let eos = g.vocab().eos_tokens().to_vec();
    let mut m = Matcher::new(g);
    let mut mask = vec![0u32; m.mask_words()];
    let mut rng = Rng::new(15);
    let mut times = Vec::new();
    for _ in 0..n {
        let (r, took) = timed(|| m.compute_mask(&mut mask));
        times.push(took);
        match r {
            Ok(()) => {}
            Err(MatcherError::Limit(kind)) => {
                eprintln!("{name}: mask ended with limit {kind:?}");
                break;
            }
            Err(e) => panic!("{name}: mask error {e:?}"),
        }
        let allowed: Vec<u32> = allowed_tokens(&mask)
            .into_iter()
            .filter(|t| !eos.contains(t))
            .collect();
        if allowed.is_empty() {
            break;
        }
        let t = allowed[rng.below(allowed.len())];
        match m.consume_token(t) {
            Ok(()) => {}
            Err(MatcherError::Limit(kind)) => {
                eprintln!("{name}: consume ended with limit {kind:?}");
                break;
            }
            Err(e) => panic!("{name}: consuming allowed token {t} failed: {e:?}"),
        }
    }
    let step_fuel = m.stats().max_step_fuel;
    eprintln!("{name}: largest step fuel {step_fuel}");
    assert!(
        step_fuel <= STEP_FUEL,
        "{name}: a step spent {step_fuel} fuel, over {STEP_FUEL}"
    );
    times
}

fn lark(src: &str) -> impl Fn(&Arc<Vocabulary>, &Limits) -> Result<Grammar, GrammarError> + '_ {
    move |v, l| Grammar::from_lark(src, v, l)
}

fn regex(p: &str) -> impl Fn(&Arc<Vocabulary>, &Limits) -> Result<Grammar, GrammarError> + '_ {
    move |v, l| Grammar::from_regex(p, v, l)
}

/// `T0: "a"`, `T_i: T_{i-1} T_{i-1}` up to `T_n`.
fn doubling_chain(n: usize) -> String {
    let mut src = String::from("T0: \"a\"\n");
    for i in 1..=n {
        src.push_str(&format!("T{i}: T{} T{}\n", i - 1, i - 1));
    }
    src
}

#[test]
fn doubling_terminal_chains() {
    // The issue's 747-byte grammar: T_i doubling chains (it reached 1.6 GB before an
    // error). Terminals are shared, so defining them is cheap; using one is charged its
    // expanded size against the one grammar-size budget.
    let mut src = String::from("start: T40 | A40\n");
    src.push_str(&doubling_chain(40));
    src.push_str("A0: \"b\"\n");
    for i in 1..=40 {
        src.push_str(&format!("A{i}: A{} A{}\n", i - 1, i - 1));
    }
    case(
        "T_i chain 2^40",
        8 * MB,
        &[limit(LimitKind::GrammarSize)],
        lark(&src),
    );
    // Defined but unused: nothing is expanded.
    let unused = format!("start: \"x\"\n{}", doubling_chain(60));
    case("unused T_i chain", 4 * MB, &[None], lark(&unused));
    // Within the budget: a 4096-byte literal built as a DAG of 13 terminals.
    let used = format!("start: T12\n{}", doubling_chain(12));
    case("T_12 (4096 bytes)", 64 * MB, &[None], lark(&used));
    // At the budget's scale: 2^19 bytes; the interning pays (or runs out) from one budget.
    let big = format!("start: T19\n{}", doubling_chain(19));
    case(
        "T_19 (512 KiB)",
        512 * MB,
        &[
            None,
            limit(LimitKind::ExprNodes),
            limit(LimitKind::CompileFuel),
            limit(LimitKind::Memory),
        ],
        lark(&big),
    );
}

#[test]
fn postfix_chains() {
    let stars = "*".repeat(10_000);
    case(
        "\"a\" + 10k *",
        4 * MB,
        &[limit(LimitKind::NestingDepth)],
        lark(&format!("start: \"a\"{stars}")),
    );
    case(
        "A: \"a\" + 10k *",
        4 * MB,
        &[limit(LimitKind::NestingDepth)],
        lark(&format!("start: A\nA: \"a\"{stars}")),
    );
    case(
        "\"a\" + 10k mixed ?*+",
        4 * MB,
        &[limit(LimitKind::NestingDepth)],
        lark(&format!("start: \"a\"{}", "?*+".repeat(3_334))),
    );
    // Under the limit, ?*+ chains fold into one repetition: masks stay cheap.
    let ok = format!("start: \"a\"{} \"b\"", "*?+".repeat(66));
    case("\"a\" + 198 ?*+", 16 * MB, &[None], lark(&ok));
    let ok = format!("start: A \"b\"\nA: \"a\"{}", "+".repeat(199));
    case("A: \"a\" + 199 +", 16 * MB, &[None], lark(&ok));
    // Counted repetitions do not fold; they nest (one helper each), within the limit.
    let ok = format!("start: \"a\"{} \"b\"", "{1,2}".repeat(100));
    case("\"a\" + 100 {1,2}", 64 * MB, &[None], lark(&ok));
    // Regex postfix chains: regex-syntax counts them against the nesting limit.
    case(
        "regex a + 10k *",
        4 * MB,
        &[limit(LimitKind::NestingDepth)],
        regex(&format!("a{stars}")),
    );
    // regex-syntax builds its syntax tree before it reports the nesting.
    case(
        "regex (?:a*) nested 10k",
        16 * MB,
        &[limit(LimitKind::NestingDepth)],
        regex(&format!("{}a{}", "(?:".repeat(10_000), ")*".repeat(10_000))),
    );
}

#[test]
fn many_rules() {
    // 60k chained rules (6.2 s to compile before the fixpoints became work lists).
    let mut src = String::from("start: r0\n");
    for i in 0..60_000 {
        src.push_str(&format!("r{i}: \"a\" r{} | \"b\" r{}\n", i + 1, i + 1));
    }
    src.push_str("r60000: \"b\"\n");
    // The front end's share of the compile, for the report.
    let limits = Limits::default();
    let (ir, took) = timed(|| {
        sieve_core::grammar::lark::parse(
            &src,
            &sieve_core::grammar::lark::NoSpecialTokens,
            &limits,
            &mut sieve_core::CompileBudget::new(&limits),
        )
    });
    eprintln!(
        "60k chained rules: Lark front end {:.1} ms ({} rules)",
        took.as_secs_f64() * 1e3,
        ir.map_or(0, |ir| ir.rules.len())
    );
    case("60k chained rules", 256 * MB, &[None], lark(&src));
    // 10k rules, each its own lexeme.
    let mut src = String::from("start: item+\nitem: ");
    src.push_str(
        &(0..10_000)
            .map(|i| format!("r{i}"))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    src.push('\n');
    for i in 0..10_000 {
        src.push_str(&format!("r{i}: \"w{i}\" \"-\"\n"));
    }
    case("10k rules", 256 * MB, &[None], lark(&src));
}

#[test]
fn twenty_thousand_alternatives() {
    // Compile work is asserted here; per-mask work is the Earley engine's (reported here,
    // asserted by adversarial_matcher.rs).
    let vocab = synthetic_vocab();
    let src = format!(
        "start: {}",
        (0..20_000)
            .map(|i| format!("\"w{i}\""))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let ((g, used), took) =
        timed(|| peak_heap(|| Grammar::from_lark(&src, &vocab, &Limits::default())));
    let g = g.unwrap();
    eprintln!(
        "20k alternatives: compile {:.1} ms, peak heap {:.1} MB",
        took.as_secs_f64() * 1e3,
        used.peak as f64 / MB as f64
    );
    let spent = g.compile_fuel_spent();
    eprintln!("20k alternatives: compile fuel {spent}");
    assert!(spent <= COMPILE_FUEL, "compile spent {spent} fuel");
    assert!(used.peak < 256 * MB);
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; m.mask_words()];
    for i in 0..3 {
        let (r, took) = timed(|| m.compute_mask(&mut mask));
        eprintln!(
            "20k alternatives: mask {i} {r:?} in {:.1} ms (not asserted here)",
            took.as_secs_f64() * 1e3
        );
        let Some(&t) = allowed_tokens(&mask).first() else {
            break;
        };
        if m.consume_token(t).is_err() {
            break;
        }
    }
}

#[test]
fn exponential_regexes() {
    let limits_ok = [
        None,
        limit(LimitKind::CompileFuel),
        limit(LimitKind::ExprNodes),
    ];
    for p in [
        "(a|aa)*",
        "(a|a)*b",
        "(a|a)*",
        "((a|a)|(a|a))*",
        "((a|a)*|(a|a)*)*b",
        "(a*)*",
        "(a*)*b",
        "((a*)*)*c",
        "(a+)+b",
        "(.*a){20}",
        "(.*a.*b){20}",
        "(a|b)*a(a|b){20}",
        "(a?){30}a{30}",
        "([a-z]|[a-c]|[b-d])*x",
        "(\\w+\\s?)*$",
    ] {
        case(p, 128 * MB, &limits_ok, regex(p));
        // The same pattern as a Lark terminal and as an anonymous regex in a rule.
        let src = format!("start: A\nA: /{p}/ \"!\"");
        case(&format!("Lark A: /{p}/"), 128 * MB, &limits_ok, lark(&src));
    }
}

#[test]
fn counted_repetitions() {
    let typed = [
        None,
        limit(LimitKind::CompileFuel),
        limit(LimitKind::ExprNodes),
        limit(LimitKind::RepeatCount),
    ];
    for p in [
        "a{10000}",
        "a{0,10000}",
        "a{1,10000}b",
        "(a|b){10000}",
        "[a-z]{1,10000}",
        "(ab){5000,10000}",
        "(a{100}){100}",
        "((a{10}){10}){10}",
        "(a{1000}){1000}",
        "(a{1,1000}){1,1000}",
        "((a{100}){100}){100}",
        "(a{0,10000}){0,10000}",
    ] {
        case(p, 256 * MB, &typed, regex(p));
    }
    case(
        "a{10001}",
        4 * MB,
        &[limit(LimitKind::RepeatCount)],
        regex("a{10001}"),
    );
    // JSON Schema `pattern` with nested counted repetitions (3.9 s and 369 MB before).
    for schema in [
        r#"{"pattern":"^(a{1000}){1000}$"}"#,
        r#"{"type":"string","pattern":"^(a{1000}){1000}$"}"#,
        r#"{"type":"string","pattern":"^(a{1000}){1000}$","minLength":5}"#,
        r#"{"type":"string","pattern":"^(a{1000}){1000}$","maxLength":10000}"#,
    ] {
        // With maxLength 10000 the language is empty (the pattern needs 10^6 bytes): the
        // length bounds of the intersection show it at once (`ExprSet::length_bounds`; the
        // derivative search took about 2 s and 250 MB to decide it).
        let json_typed = [typed.as_slice(), &[Some(GrammarErrorKind::Unproductive)]].concat();
        case(schema, 256 * MB, &json_typed, |v, l| {
            Grammar::from_json_schema_str(schema, &JsonOptions::default(), v, l).map(|(g, _)| g)
        });
    }
    // Unanchored: `any* P any*` over the JSON character set.
    let schema = r#"{"type":"string","pattern":"(a{100}){100}"}"#;
    case(schema, 256 * MB, &typed, |v, l| {
        Grammar::from_json_schema_str(schema, &JsonOptions::default(), v, l).map(|(g, _)| g)
    });
    // Lark rules and terminals.
    for src in [
        "start: \"a\"{10000}",
        "start: \"a\"{0,10000}",
        "start: \"a\"~10000",
        "start: (\"a\"{100}){100}",
        "start: (\"a\" \"b\"){1,10000}",
        "start: A\nA: \"a\"{10000}",
        "start: A\nA: (\"a\"{1000}){1000}",
        "start: A\nA: ((\"a\"{100}){100}){100}",
        "start: (\"a\"{1000}){1000}",
    ] {
        case(
            src,
            256 * MB,
            &[
                None,
                limit(LimitKind::CompileFuel),
                limit(LimitKind::ExprNodes),
                limit(LimitKind::GrammarSize),
            ],
            lark(src),
        );
    }
}

const STACK: usize = 64 * 1024;

#[test]
fn deep_nesting_on_a_small_stack() {
    with_stack(STACK, || {
        let n = 10_000;
        let nesting = [limit(LimitKind::NestingDepth)];
        let parens = format!("start: {}\"a\"{}", "(".repeat(n), ")".repeat(n));
        case("Lark 10k ( )", 8 * MB, &nesting, lark(&parens));
        let brackets = format!("start: {}\"a\"{}", "[".repeat(n), "]".repeat(n));
        case("Lark 10k [ ]", 8 * MB, &nesting, lark(&brackets));
        let term = format!("start: A\nA: {}\"a\"{}", "(".repeat(n), ")*".repeat(n));
        case("Lark terminal 10k ( )*", 8 * MB, &nesting, lark(&term));
        let groups = format!("{}a{}", "(".repeat(n), ")".repeat(n));
        case("regex 10k ( )", 8 * MB, &nesting, regex(&groups));
        let classes = format!("{}a{}", "[".repeat(n), "]".repeat(n));
        case(
            "regex 10k [ ]",
            8 * MB,
            &[limit(LimitKind::NestingDepth)],
            regex(&classes),
        );
        let in_lark = format!("start: /{}a{}/", "(".repeat(n), ")".repeat(n));
        case("Lark /10k ( )/", 8 * MB, &nesting, lark(&in_lark));
        let postfix = format!("start: \"a\"{}", "+".repeat(n));
        case("Lark 10k +", 8 * MB, &nesting, lark(&postfix));
    });
}

#[test]
fn nesting_just_under_the_limit_on_a_small_stack() {
    with_stack(STACK, || {
        let n = Limits::default().max_nesting_depth;
        // Rules: n - 1 groups, each repeated.
        let rule = format!(
            "start: {}\"a\"{}",
            "(\"b\" ".repeat(n - 1),
            ")*".repeat(n - 1)
        );
        case("Lark rule depth n-1", 64 * MB, &[None], lark(&rule));
        // A terminal: its regex tree is about 2n tall.
        let term = format!(
            "start: A\nA: {}\"a\"{}",
            "(\"b\" ".repeat(n - 1),
            ")+".repeat(n - 1)
        );
        case("Lark terminal depth n-1", 64 * MB, &[None], lark(&term));
        let term = format!(
            "start: A\nA: {}\"a\"{}",
            "(\"b\" | ".repeat(n - 1),
            ")+".repeat(n - 1)
        );
        case("Lark terminal alt depth n-1", 64 * MB, &[None], lark(&term));
        // A regex nested about as deep as regex-syntax's limit allows (it counts a group,
        // its concatenation and its repetition: three levels each).
        let groups = format!("{}a{}", "(?:b".repeat(n / 3 - 1), ")+".repeat(n / 3 - 1));
        case("regex depth n/3-1", 64 * MB, &[None], regex(&groups));
        let in_lark = format!("start: /{groups}/");
        case("Lark /depth n/3-1/", 64 * MB, &[None], lark(&in_lark));
        // Postfix chains at the limit (folded).
        let postfix = format!("start: \"a\"{} \"b\"", "*".repeat(n));
        case("Lark n *", 16 * MB, &[None], lark(&postfix));
    });
}

#[test]
fn megabyte_literals() {
    let text = "ab".repeat(MB / 2);
    let typed = [
        None,
        limit(LimitKind::ExprNodes),
        limit(LimitKind::CompileFuel),
        limit(LimitKind::Memory),
    ];
    case(
        "Lark 1 MB string",
        512 * MB,
        &typed,
        lark(&format!("start: \"{text}\"")),
    );
    case(
        "Lark 1 MB terminal",
        512 * MB,
        &typed,
        lark(&format!("start: A\nA: \"{text}\"")),
    );
    case(
        "Lark 1 MB /regex/",
        512 * MB,
        &typed,
        lark(&format!("start: /{text}/")),
    );
    case("regex 1 MB", 512 * MB, &typed, regex(&text));
    // A 1 MB source of many small definitions.
    let mut src = String::from("start: (");
    src.push_str(
        &(0..40_000)
            .map(|i| format!("\"k{i}\""))
            .collect::<Vec<_>>()
            .join(" | "),
    );
    src.push_str(")+\n");
    while src.len() < MB {
        src.push_str("// padding comment line to reach one megabyte of grammar text\n");
    }
    case("Lark 1 MB source", 512 * MB, &typed, lark(&src));
}

#[test]
fn invalid_utf8_in_regex_byte_escapes() {
    let invalid = [Some(GrammarErrorKind::InvalidRegex)];
    for p in [
        "(?-u:\\xFF)",
        "(?-u:[\\x80-\\xFF])",
        "a(?-u:\\xC3)",
        "(?-u:\\xFF)*",
    ] {
        case(p, 4 * MB, &invalid, regex(p));
        case(
            &format!("Lark /{p}/"),
            4 * MB,
            &invalid,
            lark(&format!("start: /{p}/")),
        );
    }
    // `\xFF` with Unicode on is U+00FF, valid UTF-8 (two bytes): fine.
    let g = case("\\xFF", 16 * MB, &[None], regex("\\xFF")).unwrap();
    assert!(sieve_tests::accepts(&g, "\u{ff}"));
}

#[test]
fn sparse_tokenizer_json() {
    assert!(counting_installed());
    // 65 bytes naming id 16,777,215 (the issue's 71-byte file allocated 658 MB).
    let text = r#"{"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":16777215}}}"#;
    let ((r, used), took) = timed(|| peak_heap(|| Vocabulary::from_tokenizer_json(text)));
    eprintln!(
        "sparse tokenizer.json ({} bytes): {:?}, {:?}, peak {} bytes",
        text.len(),
        r.as_ref().err(),
        took,
        used.peak
    );
    assert!(matches!(
        r,
        Err(VocabError::TokenIdsTooSparse {
            id: 16_777_215,
            entries: 1
        })
    ));
    // The load's work is bounded by what it allocates (checked here); its time is printed.
    assert!(used.peak < MB, "{}", used.peak);
    // Added tokens are validated the same way, and an id above 2^24 is its own error.
    let added = r#"{"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":0}},"added_tokens":[{"id":16777215,"content":"x","special":true}]}"#;
    let (r, used) = peak_heap(|| Vocabulary::from_tokenizer_json(added));
    assert!(
        matches!(r, Err(VocabError::TokenIdsTooSparse { .. })),
        "{r:?}"
    );
    assert!(used.peak < MB);
    let huge = r#"{"decoder":{"type":"ByteLevel"},"model":{"vocab":{"a":99999999999}}}"#;
    let (r, used) = peak_heap(|| Vocabulary::from_tokenizer_json(huge));
    assert!(
        matches!(r, Err(VocabError::TokenIdTooLarge { .. })),
        "{r:?}"
    );
    assert!(used.peak < MB);
}
