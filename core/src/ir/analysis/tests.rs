use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::grammar::{CompileOptions, GrammarSyntax, lower_ir};
use crate::ir::{IrLexeme, LexemeMode};
use crate::regex::RegexAst;

/// A grammar from `rules` (`lhs`, right-hand sides of names): a name that is some rule's
/// `lhs` is a nonterminal, anything else a literal lexeme (`/re/` a pattern). The first
/// `lhs` is the start.
fn grammar(rules: &[(&str, &[&[&str]])]) -> GrammarIr {
    let mut ir = GrammarIr::default();
    let mut nts: Vec<String> = Vec::new();
    for (lhs, _) in rules {
        if !nts.iter().any(|n| n == lhs) {
            nts.push((*lhs).into());
            ir.add_nonterminal(*lhs, None);
        }
    }
    let mut lexemes: Vec<String> = Vec::new();
    for (lhs, alts) in rules {
        let a = nts.iter().position(|n| n == lhs).unwrap() as u32;
        for alt in alts.iter() {
            let mut rhs = Vec::new();
            for &s in alt.iter() {
                if let Some(b) = nts.iter().position(|n| n == s) {
                    rhs.push(IrSymbol::Nonterminal(b as u32));
                    continue;
                }
                let l = match lexemes.iter().position(|n| n == s) {
                    Some(l) => l as u32,
                    None => {
                        lexemes.push(s.into());
                        let regex = match s.strip_prefix('/').and_then(|x| x.strip_suffix('/')) {
                            Some(p) => RegexAst::Pattern(p.into(), Default::default()),
                            None => RegexAst::literal(s),
                        };
                        ir.add_lexeme(IrLexeme {
                            name: s.into(),
                            regex,
                            mode: LexemeMode::Greedy,
                            ignore: false,
                            span: None,
                        })
                    }
                };
                rhs.push(IrSymbol::Lexeme(l));
            }
            ir.add_rule(a, rhs);
        }
    }
    ir
}

fn info(ir: &GrammarIr) -> GrammarInfo {
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    analyze(ir, None, &limits, &mut budget).unwrap()
}

fn rule<'a>(g: &'a GrammarInfo, name: &str) -> &'a RuleInfo {
    g.rules.iter().find(|r| r.name == name).unwrap()
}

fn shortest(g: &GrammarInfo, name: &str) -> String {
    rule(g, name).shortest.as_ref().unwrap().text.clone()
}

#[test]
fn without_recursion_is_regular() {
    let g = info(&grammar(&[
        ("s", &[&["a", "b"], &["c"]]),
        ("b", &[&["x", "y"]]),
    ]));
    assert_eq!(g.class, GrammarClass::Regular, "{}", g.why);
    assert_eq!(g.why, "no recursion");
    // Two nonterminals in one production, no recursion: still regular.
    let g = info(&grammar(&[("s", &[&["b", "b"]]), ("b", &[&["x"]])]));
    assert_eq!(g.class, GrammarClass::Regular);
    assert!(!g.syntactically_linear);
    assert!(rule(&g, "b").syntactically_linear);
}

#[test]
fn right_and_left_linear_recursion_is_regular() {
    let right = info(&grammar(&[("s", &[&["a", "s"], &["b"]])]));
    assert_eq!(right.class, GrammarClass::Regular, "{}", right.why);
    assert!(right.why.contains("left-linear or all right-linear"));
    let left = info(&grammar(&[("s", &[&["s", "a"], &["b"]])]));
    assert_eq!(left.class, GrammarClass::Regular);
    // A right-linear cycle through two rules, with a non-linear, non-recursive part below.
    let g = info(&grammar(&[
        ("s", &[&["a", "t"], &["w"]]),
        ("t", &[&["w", "w", "s"]]),
        ("w", &[&["x"]]),
    ]));
    assert_eq!(g.class, GrammarClass::Regular, "{}", g.why);
}

#[test]
fn self_embedding_is_linear() {
    // S → a S b | ε
    let g = info(&grammar(&[("s", &[&["a", "s", "b"], &[]])]));
    assert_eq!(g.class, GrammarClass::Linear);
    assert!(g.why.contains("`s` is self-embedding"), "{}", g.why);
    assert!(g.why.contains("`s → a s b`"), "{}", g.why);
    // A cycle mixing left and right recursion: linear, not strongly regular.
    let g = info(&grammar(&[
        ("a", &[&["x", "b"], &["c"]]),
        ("b", &[&["a", "y"]]),
    ]));
    assert_eq!(g.class, GrammarClass::Linear);
    assert!(g.why.contains("mixes right recursion"), "{}", g.why);
}

#[test]
fn two_nonterminals_in_a_recursive_grammar_is_general() {
    let g = info(&grammar(&[
        ("value", &[&["object"], &["n"]]),
        ("object", &[&["{", "member", ",", "member", "}"]]),
        ("member", &[&["k", ":", "value"]]),
    ]));
    assert_eq!(g.class, GrammarClass::General);
    assert!(g.why.contains("self-embedding"), "{}", g.why);
    assert!(
        g.why
            .contains("not linear: `object → { member , member }` has 2 nonterminals"),
        "{}",
        g.why
    );
    // Each rule's class is that of what it reaches: all three are in the cycle.
    assert_eq!(g.census.general, 3);
    // S → S S | a
    let g = info(&grammar(&[("s", &[&["s", "s"], &["a"]])]));
    assert_eq!(g.class, GrammarClass::General);
    assert!(
        g.why.contains("recurses through both `s` and `s`"),
        "{}",
        g.why
    );
}

#[test]
fn classes_per_rule() {
    // `list` is regular (right-linear), `pal` linear, `top` general through `pal pal`.
    let g = info(&grammar(&[
        ("top", &[&["pal", "pal", "top"], &["list"]]),
        ("pal", &[&["a", "pal", "a"], &["b"]]),
        ("list", &[&["x", "list"], &[]]),
    ]));
    assert_eq!(rule(&g, "list").class, GrammarClass::Regular);
    assert_eq!(rule(&g, "pal").class, GrammarClass::Linear);
    assert_eq!(rule(&g, "top").class, GrammarClass::General);
    assert!(rule(&g, "top").why.contains("`pal` is self-embedding"));
    assert_eq!(
        (g.census.regular, g.census.linear, g.census.general),
        (1, 1, 1)
    );
}

#[test]
fn nullable_productive_reachable() {
    let g = info(&grammar(&[
        ("s", &[&["a"], &["b"], &["d", "z"]]),
        ("a", &[&[]]),
        ("b", &[&["b", "x"]]),
        ("c", &[&["c1"]]),
        ("d", &[&["a", "a"]]),
    ]));
    let flags = |n: &str| {
        let r = rule(&g, n);
        (r.nullable, r.productive, r.reachable)
    };
    assert_eq!(flags("s"), (true, true, true));
    assert_eq!(flags("a"), (true, true, true));
    assert_eq!(flags("b"), (false, false, true));
    assert_eq!(flags("c"), (false, true, false));
    assert_eq!(flags("d"), (true, true, true));
    assert!(rule(&g, "b").shortest.is_none());
}

#[test]
fn shortest_strings() {
    let g = info(&grammar(&[
        ("s", &[&["ab", "t", "t"], &["abcdefgh"]]),
        ("t", &[&["/[0-9]+/"], &["xyz"]]),
        ("u", &[&["/[A-Z]{3}(x|yy)/"]]),
        ("w", &[&["/\"[^\"]*\"/", "/ */"]]),
    ]));
    assert_eq!(shortest(&g, "s"), "ab00");
    assert_eq!(rule(&g, "s").shortest.as_ref().unwrap().len, 4);
    assert_eq!(shortest(&g, "t"), "0");
    assert_eq!(shortest(&g, "u"), "AAAx");
    assert_eq!(shortest(&g, "w"), "\"\"");
    assert!(rule(&g, "s").shortest.as_ref().unwrap().exact);
    // The shortest derivation is found whatever the production order.
    let g = info(&grammar(&[("e", &[&["(", "e", ")"], &["1"]])]));
    assert_eq!(shortest(&g, "e"), "1");
}

#[test]
fn long_shortest_strings_are_cut() {
    // Each level doubles the string: 2^30 bytes, shown cut.
    let mut rules: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    for i in 0..30 {
        let next = format!("n{}", i + 1);
        rules.push((format!("n{i}"), vec![vec![next.clone(), next]]));
    }
    rules.push(("n30".into(), vec![vec!["ab".into()]]));
    let alts: Vec<Vec<Vec<&str>>> = rules
        .iter()
        .map(|(_, a)| {
            a.iter()
                .map(|p| p.iter().map(String::as_str).collect())
                .collect()
        })
        .collect();
    let alt_refs: Vec<Vec<&[&str]>> = alts
        .iter()
        .map(|a| a.iter().map(Vec::as_slice).collect())
        .collect();
    let spec: Vec<(&str, &[&[&str]])> = rules
        .iter()
        .zip(&alt_refs)
        .map(|((n, _), a)| (n.as_str(), a.as_slice()))
        .collect();
    let g = info(&grammar(&spec));
    let s = rule(&g, "n0").shortest.as_ref().unwrap();
    assert_eq!(s.len, 2 << 30);
    assert!(s.text.ends_with('…'));
    assert_eq!(s.text.chars().count(), SHORTEST_SHOWN + 1);
}

#[test]
fn special_tokens_show_by_name() {
    let vocab = Vocabulary::new(
        vec![b"a".to_vec(), b"<|end|>".to_vec(), b"b".to_vec()],
        &[1],
        &[1],
    )
    .unwrap();
    let mut ir = grammar(&[("s", &[&["x", "a"]])]);
    ir.lexemes[0].regex = RegexAst::Literal(Vocabulary::special_encoding(1));
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let g = analyze(&ir, Some(&vocab), &limits, &mut budget).unwrap();
    assert_eq!(shortest(&g, "s"), "<|end|>a");
    let mut budget = CompileBudget::new(&limits);
    let g = analyze(&ir, None, &limits, &mut budget).unwrap();
    assert_eq!(shortest(&g, "s"), "<|special 1|>a");
}

#[test]
fn deep_grammars_use_no_stack() {
    // A chain 200,000 rules long, and a cycle as long: no recursion in the walks.
    let n = 200_000u32;
    let mut ir = GrammarIr::default();
    for i in 0..n {
        ir.add_nonterminal(format!("n{i}"), None);
    }
    let x = ir.add_lexeme(IrLexeme {
        name: "x".into(),
        regex: RegexAst::literal("x"),
        mode: LexemeMode::Greedy,
        ignore: false,
        span: None,
    });
    for i in 0..n - 1 {
        ir.add_rule(i, vec![IrSymbol::Lexeme(x), IrSymbol::Nonterminal(i + 1)]);
    }
    ir.add_rule(n - 1, vec![IrSymbol::Lexeme(x)]);
    let g = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let a = info(&ir);
            ir.add_rule(n - 1, vec![IrSymbol::Nonterminal(0), IrSymbol::Lexeme(x)]);
            (a, info(&ir))
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(g.0.class, GrammarClass::Regular);
    assert_eq!(g.0.rules[0].shortest.as_ref().unwrap().len, u64::from(n));
    // The long cycle mixes right recursion (`n0 → x n1`) and left (`n199999 → n0 x`).
    assert_eq!(g.1.class, GrammarClass::Linear);
    assert!(g.1.why.contains("200000 in all"), "{}", g.1.why);
}

#[test]
fn the_budget_bounds_the_analysis() {
    let ir = grammar(&[("s", &[&["a", "s"], &["b"]])]);
    let limits = Limits {
        compile_fuel: 3,
        ..Limits::default()
    };
    let mut budget = CompileBudget::new(&limits);
    let err = analyze(&ir, None, &limits, &mut budget).unwrap_err();
    assert_eq!(
        err.kind,
        crate::GrammarErrorKind::Limit(LimitKind::CompileFuel)
    );
}

#[test]
fn json_report_format() {
    let src = "start: \"a\" start \"b\" | \"c\"\nunused: \"u\"\n";
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let vocab = Vocabulary::new(vec![b"a".to_vec()], &[], &[]).unwrap();
    let ir = lower_ir(
        GrammarSyntax::Lark,
        src,
        &CompileOptions::default(),
        &vocab,
        &limits,
        &mut budget,
    )
    .unwrap();
    let g = analyze(&ir, Some(&vocab), &limits, &mut budget).unwrap();
    let j = g.to_json();
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "class",
            "why",
            "syntactically_linear",
            "start",
            "rules",
            "lexemes",
            "conflicts",
            "census"
        ]
    );
    assert_eq!(j["class"], "linear");
    assert_eq!(j["syntactically_linear"], true);
    assert_eq!(j["start"], "start");
    let start = j["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "start")
        .unwrap();
    let keys: Vec<&str> = start
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "class",
            "why",
            "syntactically_linear",
            "nullable",
            "productive",
            "reachable",
            "shortest",
            "shortest_len",
            "shortest_exact",
            "span",
            "in_lexeme"
        ]
    );
    assert_eq!(start["shortest"], "c");
    assert_eq!(start["span"]["line"], 1);
    assert_eq!(start["span"]["column"], 1);
    let unused = j["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "unused")
        .unwrap();
    assert_eq!(unused["reachable"], false);
    assert_eq!(unused["span"]["line"], 2);
    assert!(g.to_text().contains("grammar: linear"));
}

#[test]
fn a_read_past_lexeme_names_its_follower_and_a_lost_string() {
    // Not repaired (`%ignore`): after `0`, `E` continues NUM (`0E5`), so `END` is never lexed.
    let src = "start: \"BEG\" NUM \"END\"\nNUM: /[0-9]+(E[0-9]+)?/\n%ignore \" \"\n";
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let vocab = crate::sync::Arc::new(Vocabulary::synthetic(300, 7));
    let opts = CompileOptions::default();
    let ir = lower_ir(
        GrammarSyntax::Lark,
        src,
        &opts,
        &vocab,
        &limits,
        &mut budget,
    )
    .unwrap();
    let mut report = info(&ir);
    let c = report
        .conflicts
        .iter()
        .find(|c| c.first == c.second && c.kind == ConflictKind::ProperPrefix)
        .expect("NUM is read past");
    assert_eq!(c.first_name, "NUM");
    assert!(c.candidates.iter().any(|x| x.text == b"BEG0END"));
    // Nothing is claimed until a matcher rejects it.
    let mut unconfirmed = report.clone();
    unconfirmed.confirm_lost(&ir, None, |_| false);
    assert!(unconfirmed.conflicts.iter().all(|c| c.lost.is_none()));
    assert!(unconfirmed.to_text().contains("no lost string confirmed"));
    let g = crate::Grammar::from_lowered_ir(&ir, &vocab, &limits).unwrap();
    report.confirm_lost(&ir, None, |t| {
        let mut m = crate::Matcher::new(&g);
        !(m.try_consume_bytes(t) && m.is_accepting())
    });
    let lost = report
        .conflicts
        .iter()
        .find_map(|c| c.lost.clone())
        .unwrap();
    // `BEG`, the shortest number, `END`: a string of the grammar as written.
    assert_eq!(lost.text, "BEG0END");
    assert!(lost.follower.contains("END"), "{}", lost.follower);
    let text = report.to_text();
    assert!(
        text.contains("NUM (line 2, column 1) reads on into") && text.contains("\"BEG0END\""),
        "{text}"
    );
    let json = report.to_json();
    assert_eq!(json["conflicts"][0]["lost"], "BEG0END");
}
