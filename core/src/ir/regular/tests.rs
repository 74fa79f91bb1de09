//! Lexify keeps the language and every prefix's viability: brute force over short strings,
//! on grammars of the shapes the GBNF front end lowers to (one lexeme per code point).
//!
//! A consistency check (the grammar with and without lexify, both run by sieve's matcher),
//! not a proof of exactness: `tests/tests/gbnf_oracle.rs` checks GBNF masks against an
//! independent Earley reference.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::ir::builder::Builder;
use crate::{Grammar, Matcher, Vocabulary};

type Seq = Vec<IrSymbol>;

/// A GBNF-style literal: one lexeme per character.
fn lit(b: &mut Builder, s: &str) -> Seq {
    s.chars()
        .map(|c| {
            let mut buf = [0u8; 4];
            IrSymbol::Lexeme(b.literal(c.encode_utf8(&mut buf).as_bytes(), None).unwrap())
        })
        .collect()
}

fn class(b: &mut Builder, ranges: &[(char, char)], negated: bool) -> Seq {
    vec![IrSymbol::Lexeme(b.class(ranges, negated, None).unwrap())]
}

fn nt(n: u32) -> Seq {
    vec![IrSymbol::Nonterminal(n)]
}

fn cat(parts: &[&Seq]) -> Seq {
    parts.iter().flat_map(|p| p.iter().copied()).collect()
}

fn vocab() -> Arc<Vocabulary> {
    Arc::new(Vocabulary::synthetic(300, 7))
}

fn compile(ir: &GrammarIr) -> Grammar {
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    Grammar::build(ir, &vocab(), &limits, true, &mut budget).unwrap()
}

fn lexified(ir: &GrammarIr) -> GrammarIr {
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    lexify(ir.clone(), &limits, &mut budget).unwrap()
}

fn names(ir: &GrammarIr) -> Vec<String> {
    ir.lexemes.iter().map(|l| l.name.clone()).collect()
}

/// Every string over `alphabet` up to `max_len` bytes: viable prefix and accepted alike
/// with and without lexify. Returns how many strings were viable.
fn same_language(ir: &GrammarIr, alphabet: &[u8], max_len: usize) -> usize {
    let lex = lexified(ir);
    let (g0, g1) = (compile(ir), compile(&lex));
    let mut viable = 0;
    let mut stack = vec![(Vec::<u8>::new(), Matcher::new(&g0), Matcher::new(&g1))];
    while let Some((s, m0, m1)) = stack.pop() {
        viable += 1;
        let (mut a0, mut a1) = (m0.clone(), m1.clone());
        assert_eq!(
            a0.is_accepting(),
            a1.is_accepting(),
            "accepting {:?}; lexemes {:?}",
            String::from_utf8_lossy(&s),
            names(&lex)
        );
        if s.len() == max_len {
            continue;
        }
        for &c in alphabet {
            let (mut n0, mut n1) = (m0.clone(), m1.clone());
            let (v0, v1) = (n0.try_consume_bytes(&[c]), n1.try_consume_bytes(&[c]));
            let mut t = s.clone();
            t.push(c);
            assert_eq!(
                v0,
                v1,
                "viable {:?}; lexemes {:?}",
                String::from_utf8_lossy(&t),
                names(&lex)
            );
            if v0 {
                stack.push((t, n0, n1));
            }
        }
    }
    viable
}

/// `root ::= "(" root ")"`: makes `root` recursive (not a lexeme itself).
fn nest(b: &mut Builder, root: u32) {
    let (open, close) = (lit(b, "("), lit(b, ")"));
    b.rule(root, cat(&[&open, &nt(root), &close]), None)
        .unwrap();
}

fn with_builder(f: impl FnOnce(&mut Builder) -> u32) -> GrammarIr {
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let mut b = Builder::new(&limits, &mut budget);
    let start = f(&mut b);
    b.finish(start)
}

#[test]
fn ab_or_a_bc_stays_exact() {
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let ab = lit(b, "ab");
        let a = lit(b, "a");
        let bc = lit(b, "bc");
        b.rule(root, ab, None).unwrap();
        b.rule(root, cat(&[&a, &bc]), None).unwrap();
        root
    });
    let lex = lexified(&ir);
    assert_eq!(names(&lex), ["root"]);
    assert!(same_language(&ir, b"abc", 5) > 3);
}

#[test]
fn greedy_conflict_falls_back() {
    // root ::= x "a"; x ::= "a"*: `x` would read the final "a".
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let x = b.nonterminal("x", None).unwrap();
        let a = lit(b, "a");
        let star = b.star(vec![a.clone()], "x", None).unwrap();
        b.rule(x, star, None).unwrap();
        b.rule(root, cat(&[&nt(x), &a]), None).unwrap();
        nest(b, root);
        root
    });
    let lex = lexified(&ir);
    assert!(!names(&lex).contains(&String::from("x")));
    same_language(&ir, b"a()", 6);
    // root ::= x y; x ::= "a" | "ab"; y ::= "b" "c" | "c".
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let x = b.nonterminal("x", None).unwrap();
        let y = b.nonterminal("y", None).unwrap();
        let (a, ab, bc, c) = (lit(b, "a"), lit(b, "ab"), lit(b, "bc"), lit(b, "c"));
        b.rule(x, a, None).unwrap();
        b.rule(x, ab, None).unwrap();
        b.rule(y, bc, None).unwrap();
        b.rule(y, c, None).unwrap();
        b.rule(root, cat(&[&nt(x), &nt(y)]), None).unwrap();
        nest(b, root);
        root
    });
    let lex = lexified(&ir);
    // `x` reads past "a" into "ab"; then "b" (from `x`'s pieces) and `y` ("bc") conflict.
    assert!(!names(&lex).contains(&String::from("x")));
    same_language(&ir, b"abc()", 5);
}

#[test]
fn bounded_repetitions_fold_to_one_repeat() {
    // root ::= "(" root ")" | x | "b"{0,3} "b"; x ::= "a" "b"{0,5} "c"{1,6}, with `{m,n}` as
    // tail chains (`Builder::repeat`) and as doubling helpers (`Builder::repeat_doubling`).
    for doubling in [false, true] {
        let ir = with_builder(|b| {
            let root = b.nonterminal("root", None).unwrap();
            let x = b.nonterminal("x", None).unwrap();
            let (a, bb, c) = (lit(b, "a"), lit(b, "b"), lit(b, "c"));
            let mut rep = |s: &Seq, m, n| {
                let alts = vec![s.clone()];
                if doubling {
                    b.repeat_doubling(alts, m, Some(n), "x", None).unwrap()
                } else {
                    b.repeat(alts, m, Some(n), "x", None).unwrap()
                }
            };
            let (bs, cs, bs3) = (rep(&bb, 0, 5), rep(&c, 1, 6), rep(&bb, 0, 3));
            b.rule(x, cat(&[&a, &bs, &cs]), None).unwrap();
            b.rule(root, nt(x), None).unwrap();
            // The lexer would read the last "b" into `b{0,3}`: its rules stay.
            b.rule(root, cat(&[&bs3, &bb]), None).unwrap();
            nest(b, root);
            root
        });
        let lex = lexified(&ir);
        let x = lex.lexemes.iter().find(|l| l.name == "x").unwrap();
        let shown = std::format!("{:?}", x.regex);
        assert!(
            shown.contains("0, Some(5))") && shown.contains("1, Some(6))"),
            "{shown}"
        );
        same_language(&ir, b"abc()", 8);
    }
}

#[test]
fn recursive_rules_keep_regular_children() {
    // root ::= ws "a"+ ws | "(" root ")" item{0,2}; ws ::= [ ] ws | ""; item ::= "b" | "ab"
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let ws = b.nonterminal("ws", None).unwrap();
        let item = b.nonterminal("item", None).unwrap();
        let sp = class(b, &[(' ', ' ')], false);
        b.rule(ws, cat(&[&sp, &nt(ws)]), None).unwrap();
        b.rule(ws, Vec::new(), None).unwrap();
        let (bb, ab) = (lit(b, "b"), lit(b, "ab"));
        b.rule(item, bb, None).unwrap();
        b.rule(item, ab, None).unwrap();
        let a = lit(b, "a");
        let plus = b.plus(vec![a], "root", None).unwrap();
        b.rule(root, cat(&[&nt(ws), &plus, &nt(ws)]), None).unwrap();
        let (open, close) = (lit(b, "("), lit(b, ")"));
        let rep = b.repeat(vec![nt(item)], 0, Some(2), "root", None).unwrap();
        b.rule(root, cat(&[&open, &nt(root), &close, &rep]), None)
            .unwrap();
        root
    });
    let lex = lexified(&ir);
    let n = names(&lex);
    assert!(n.contains(&String::from("ws")), "{n:?}");
    same_language(&ir, b"ab() ", 6);
}

#[test]
fn star_plus_and_counted_helpers() {
    // root ::= "x" ("ab" | "c")* [0-9]{1,3} "y"+ | "z" root
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let (x, ab, c, y, z) = (
            lit(b, "x"),
            lit(b, "ab"),
            lit(b, "c"),
            lit(b, "y"),
            lit(b, "z"),
        );
        let star = b.star(vec![ab, c], "root", None).unwrap();
        let digit = class(b, &[('0', '9')], false);
        let rep = b.repeat(vec![digit], 1, Some(3), "root", None).unwrap();
        let plus = b.plus(vec![y], "root", None).unwrap();
        b.rule(root, cat(&[&x, &star, &rep, &plus]), None).unwrap();
        b.rule(root, cat(&[&z, &nt(root)]), None).unwrap();
        root
    });
    let lex = lexified(&ir);
    // `root` is right-linear: the whole grammar is one lexeme.
    assert_eq!(names(&lex), ["root"]);
    same_language(&ir, b"xabc1y", 6);
}

#[test]
fn same_text_lexemes_are_both_offered() {
    // root ::= x "c" | y "d"; x ::= "ab"; y ::= "a" "b"+
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let x = b.nonterminal("x", None).unwrap();
        let y = b.nonterminal("y", None).unwrap();
        let (ab, a, bb, c, d) = (
            lit(b, "ab"),
            lit(b, "a"),
            lit(b, "b"),
            lit(b, "c"),
            lit(b, "d"),
        );
        b.rule(x, ab, None).unwrap();
        let plus = b.plus(vec![bb], "y", None).unwrap();
        b.rule(y, cat(&[&a, &plus]), None).unwrap();
        b.rule(root, cat(&[&nt(x), &c]), None).unwrap();
        b.rule(root, cat(&[&nt(y), &d]), None).unwrap();
        nest(b, root);
        root
    });
    same_language(&ir, b"abcd(", 6);
    let lex = lexified(&ir);
    let limits = Limits::default();
    let conflicts = lexeme_conflicts(&lex, &limits, &mut CompileBudget::new(&limits)).unwrap();
    assert!(
        conflicts.iter().any(|c| c.kind == ConflictKind::SameText),
        "{conflicts:?} {:?}",
        names(&lex)
    );
}

/// `/work/shared/data/gbnf/json.gbnf`, lowered as the GBNF front end does.
fn json_gbnf(b: &mut Builder) -> u32 {
    let root = b.nonterminal("root", None).unwrap();
    let value = b.nonterminal("value", None).unwrap();
    let object = b.nonterminal("object", None).unwrap();
    let array = b.nonterminal("array", None).unwrap();
    let string = b.nonterminal("string", None).unwrap();
    let number = b.nonterminal("number", None).unwrap();
    let ws = b.nonterminal("ws", None).unwrap();
    b.rule(root, nt(object), None).unwrap();
    let (t, f, n) = (lit(b, "true"), lit(b, "false"), lit(b, "null"));
    let tfn = b.group(vec![t, f, n], "value", None).unwrap();
    for alt in [nt(object), nt(array), nt(string), nt(number)] {
        b.rule(value, alt, None).unwrap();
    }
    b.rule(value, cat(&[&tfn, &nt(ws)]), None).unwrap();
    let (lb, rb, colon, comma) = (lit(b, "{"), lit(b, "}"), lit(b, ":"), lit(b, ","));
    let member = cat(&[&nt(string), &colon, &nt(ws), &nt(value)]);
    let more = b
        .star(vec![cat(&[&comma, &nt(ws), &member])], "object", None)
        .unwrap();
    let body = b
        .optional(vec![cat(&[&member, &more])], "object", None)
        .unwrap();
    b.rule(object, cat(&[&lb, &nt(ws), &body, &rb, &nt(ws)]), None)
        .unwrap();
    let (ls, rs) = (lit(b, "["), lit(b, "]"));
    let more = b
        .star(vec![cat(&[&comma, &nt(ws), &nt(value)])], "array", None)
        .unwrap();
    let body = b
        .optional(vec![cat(&[&nt(value), &more])], "array", None)
        .unwrap();
    b.rule(array, cat(&[&ls, &nt(ws), &body, &rs, &nt(ws)]), None)
        .unwrap();
    let q = lit(b, "\"");
    let plain = class(
        b,
        &[('"', '"'), ('\\', '\\'), ('\x7F', '\x7F'), ('\0', '\x1F')],
        true,
    );
    let bs = lit(b, "\\");
    let simple = class(
        b,
        &[
            ('"', '"'),
            ('\\', '\\'),
            ('b', 'b'),
            ('f', 'f'),
            ('n', 'n'),
            ('r', 'r'),
            ('t', 't'),
        ],
        false,
    );
    let u = lit(b, "u");
    let hex = class(b, &[('0', '9'), ('a', 'f'), ('A', 'F')], false);
    let hex4 = b.repeat(vec![hex], 4, Some(4), "string", None).unwrap();
    let esc = b
        .group(vec![simple, cat(&[&u, &hex4])], "string", None)
        .unwrap();
    let ch = b
        .group(vec![plain, cat(&[&bs, &esc])], "string", None)
        .unwrap();
    let chars = b.star(vec![ch], "string", None).unwrap();
    b.rule(string, cat(&[&q, &chars, &q, &nt(ws)]), None)
        .unwrap();
    let minus = lit(b, "-");
    let minus_opt = b.optional(vec![minus], "number", None).unwrap();
    let digit = class(b, &[('0', '9')], false);
    let d19 = class(b, &[('1', '9')], false);
    let tail = b
        .repeat(vec![digit.clone()], 0, Some(15), "number", None)
        .unwrap();
    let int = b
        .group(vec![digit.clone(), cat(&[&d19, &tail])], "number", None)
        .unwrap();
    let dot = lit(b, ".");
    let digits = b.plus(vec![digit.clone()], "number", None).unwrap();
    let frac = b
        .optional(vec![cat(&[&dot, &digits])], "number", None)
        .unwrap();
    let e = class(b, &[('e', 'e'), ('E', 'E')], false);
    let sign = class(b, &[('-', '-'), ('+', '+')], false);
    let sign_opt = b.optional(vec![sign], "number", None).unwrap();
    let tail19 = b.repeat(vec![d19], 0, Some(15), "number", None).unwrap();
    let exp = b
        .optional(vec![cat(&[&e, &sign_opt, &digit, &tail19])], "number", None)
        .unwrap();
    b.rule(number, cat(&[&minus_opt, &int, &frac, &exp, &nt(ws)]), None)
        .unwrap();
    let sp = lit(b, " ");
    let nl = lit(b, "\n");
    let indent = class(b, &[(' ', ' '), ('\t', '\t')], false);
    let indent = b.repeat(vec![indent], 0, Some(20), "ws", None).unwrap();
    b.rule(ws, Vec::new(), None).unwrap();
    b.rule(ws, sp, None).unwrap();
    b.rule(ws, cat(&[&nl, &indent]), None).unwrap();
    root
}

#[test]
fn json_rules_become_lexemes() {
    let ir = with_builder(json_gbnf);
    let lex = lexified(&ir);
    let n = names(&lex);
    for want in ["ws", "string", "number"] {
        // `ws` also merges into the lexeme before it (`"," ws`).
        let merged = alloc::format!(" {want}");
        assert!(
            n.iter().any(|x| x == want || x.ends_with(&merged)),
            "{want} not in {n:?}"
        );
    }
    let g = compile(&lex);
    for (text, ok) in [
        ("{}", true),
        ("{\"a\": [1, -2.5e+3, true, null, \"x\\u00e9\"]}", true),
        ("{\"a\":\n  {\"b\" : []}} ", true),
        ("{\"a\": 01}", false),
        ("{\"a\" 1}", false),
        ("[1]", false),
    ] {
        let mut m = Matcher::new(&g);
        assert_eq!(
            m.try_consume_bytes(text.as_bytes()) && m.is_accepting(),
            ok,
            "{text}"
        );
    }
    same_language(&ir, b"{}\":1 ", 5);
}

#[test]
fn optional_runs_merge_exactly() {
    // root ::= "(" root ")" ws | "a" ws "a" | "a" " " "b" | "b" ws; ws ::= " "?
    let ir = with_builder(|b| {
        let root = b.nonterminal("root", None).unwrap();
        let ws = b.nonterminal("ws", None).unwrap();
        let sp = lit(b, " ");
        let opt = b.optional(vec![sp.clone()], "ws", None).unwrap();
        b.rule(ws, opt, None).unwrap();
        let (a, bb) = (lit(b, "a"), lit(b, "b"));
        b.rule(root, cat(&[&a, &nt(ws), &a]), None).unwrap();
        b.rule(root, cat(&[&a, &sp, &bb]), None).unwrap();
        b.rule(root, cat(&[&bb, &nt(ws)]), None).unwrap();
        let (open, close) = (lit(b, "("), lit(b, ")"));
        b.rule(root, cat(&[&open, &nt(root), &close, &nt(ws)]), None)
            .unwrap();
        root
    });
    same_language(&ir, b"ab() ", 6);
}

/// `cargo test -p sieve-core --lib --release -- --ignored lexify_timing --nocapture`
#[test]
#[ignore = "timing, not a check"]
fn lexify_timing() {
    let limits = Limits::default();
    let ir = with_builder(json_gbnf);
    let n = 300;
    let t = std::time::Instant::now();
    for _ in 0..n {
        core::hint::black_box(with_builder(json_gbnf));
    }
    let build_ir = t.elapsed() / n;
    let t = std::time::Instant::now();
    let mut lex = ir.clone();
    for _ in 0..n {
        lex = lexified(&ir);
    }
    let lexify_t = t.elapsed() / n;
    let v = vocab();
    let t = std::time::Instant::now();
    for _ in 0..n {
        let mut budget = CompileBudget::new(&limits);
        core::hint::black_box(Grammar::build(&lex, &v, &limits, true, &mut budget).unwrap());
    }
    let build_t = t.elapsed() / n;
    std::eprintln!("builder {build_ir:?}, lexify {lexify_t:?}, build {build_t:?}");
}

/// The real front end on `shared/data/gbnf/json.gbnf` (skipped when the file is missing).
#[test]
fn json_gbnf_file_lexemes() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/gbnf/json.gbnf"
    );
    let Ok(src) = std::fs::read_to_string(path) else {
        std::eprintln!("skipped: no {path}");
        return;
    };
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let ir = crate::grammar::lower_ir(
        crate::grammar::GrammarSyntax::Gbnf,
        &src,
        &Default::default(),
        &vocab(),
        &limits,
        &mut budget,
    )
    .unwrap();
    let n = names(&ir);
    std::eprintln!("{n:?}");
    for want in ["string", "number"] {
        assert!(n.iter().any(|x| x == want), "{want} not in {n:?}");
    }
    assert!(n.iter().any(|x| x.ends_with(" ws")), "{n:?}");
    assert!(n.len() <= 12, "{n:?}");
}

/// `cargo test -p sieve-core --lib --release -- --ignored from_gbnf_timing --nocapture`:
/// `Grammar::from_gbnf`'s stages on `shared/data/gbnf/json.gbnf` (skipped without it).
#[test]
#[ignore = "timing, not a check"]
fn from_gbnf_timing() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/data/gbnf/json.gbnf"
    );
    let Ok(src) = std::fs::read_to_string(path) else {
        std::eprintln!("skipped: no {path}");
        return;
    };
    let limits = Limits::default();
    let v = vocab();
    let opts = crate::grammar::gbnf::GbnfOptions::default();
    let n: u32 = std::env::var("SIEVE_TIMING_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let only = std::env::var("SIEVE_TIMING_ONLY").unwrap_or_default();
    let (mut lower, mut lex, mut build) = (
        core::time::Duration::ZERO,
        core::time::Duration::ZERO,
        core::time::Duration::ZERO,
    );
    for _ in 0..if only == "lark" { 0 } else { n } {
        let mut budget = CompileBudget::new(&limits);
        let t = std::time::Instant::now();
        let ir = crate::grammar::gbnf::lower(&src, &opts, &*v, &limits, &mut budget).unwrap();
        let t1 = std::time::Instant::now();
        let (ir, c) = lexify_compiled(ir, &limits, &mut budget).unwrap();
        let t2 = std::time::Instant::now();
        core::hint::black_box(
            Grammar::build_compiled(&ir, c, &v, &limits, true, &mut budget).unwrap(),
        );
        let t3 = std::time::Instant::now();
        lower += t1 - t;
        lex += t2 - t1;
        build += t3 - t2;
    }
    let lark = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/grammars/json.lark"
    ))
    .unwrap();
    let t = std::time::Instant::now();
    for _ in 0..if only == "gbnf" { 0 } else { n } {
        core::hint::black_box(Grammar::from_lark(&lark, &v, &limits).unwrap());
    }
    let lark_time = t.elapsed() / n;
    std::eprintln!(
        "gbnf: lower {:?}, lexify {:?}, build {:?}; lark json: {lark_time:?}",
        lower / n,
        lex / n,
        build / n
    );
}
