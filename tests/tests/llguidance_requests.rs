//! LLGuidance's request format (`Grammar::from_llguidance`): grammar lists with `@name`
//! references, their errors, and masks equal to the same language written as one Lark
//! grammar by hand.
//!
//! The mask comparisons are consistency checks (sieve's LLGuidance front end against its Lark
//! front end, one engine underneath), not proofs of exactness: those rest on the independent
//! recognizers of `budget.rs`, `lark_cyk_oracle.rs` and `gbnf_oracle.rs`.

use sieve_core::grammar::json::{JsonOptions, serde_json};
use sieve_core::{Grammar, GrammarErrorKind, LimitKind, Limits, Matcher};
use sieve_tests::{check_walk, lark, synthetic_vocab};

fn request(data: &str) -> Result<Grammar, sieve_core::GrammarError> {
    Grammar::from_llguidance(
        data,
        &JsonOptions::default(),
        &synthetic_vocab(),
        &Limits::default(),
    )
}

fn accepts(g: &Grammar, text: &str) -> bool {
    let mut m = Matcher::new(g);
    m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
}

/// `{"grammars": [...]}` from (name, kind, body) triples; `kind` is `lark` or `json`.
fn grammars(list: &[(Option<&str>, &str, serde_json::Value)]) -> String {
    let entries: Vec<serde_json::Value> = list
        .iter()
        .map(|(name, kind, body)| {
            let mut e = serde_json::Map::new();
            if let Some(n) = name {
                e.insert("name".into(), (*n).into());
            }
            let key = if *kind == "lark" {
                "lark_grammar"
            } else {
                "json_schema"
            };
            e.insert(key.into(), body.clone());
            serde_json::Value::Object(e)
        })
        .collect();
    serde_json::json!({ "grammars": entries }).to_string()
}

#[test]
fn references_reach_other_grammars() {
    let req = grammars(&[
        (None, "lark", "start: \"x=\" @num \";\" @word".into()),
        (Some("num"), "json", serde_json::json!({"type": "integer"})),
        (Some("word"), "lark", "start: W @num\nW: /[a-z]+/".into()),
    ]);
    let g = request(&req).unwrap();
    assert!(accepts(&g, "x=12;ab7"));
    assert!(accepts(&g, "x=-3;z0"));
    assert!(!accepts(&g, "x=a;ab7"));
    assert!(!accepts(&g, "x=12;ab"));
    // Unreferenced grammars are compiled only when reached: grammar 0 alone decides.
    let g = request(&grammars(&[
        (None, "lark", "start: \"a\"".into()),
        (Some("b"), "lark", "start: \"b\"".into()),
    ]))
    .unwrap();
    assert!(accepts(&g, "a") && !accepts(&g, "b"));
    // A bare entry, and Lark text.
    assert!(accepts(
        &request(r#"{"json_schema": {"const": 1}}"#).unwrap(),
        "1"
    ));
    assert!(accepts(&request("start: \"q\"").unwrap(), "q"));
}

#[test]
fn reference_errors_are_typed() {
    let err =
        |list: &[(Option<&str>, &str, serde_json::Value)]| request(&grammars(list)).unwrap_err();
    let e = err(&[(None, "lark", "start: @nope".into())]);
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol, "{e}");
    assert!(e.span.is_some(), "{e}");
    let e = err(&[
        (None, "lark", "start: @a".into()),
        (Some("a"), "lark", "start: \"x\" @a".into()),
    ]);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("references itself"), "{e}");
    // A chain longer than the nesting bound.
    let mut list = vec![(None, "lark", serde_json::Value::from("start: @g1"))];
    let names: Vec<String> = (1..=12).map(|i| format!("g{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        list.push((
            Some(n.as_str()),
            "lark",
            format!("start: \"a\" @g{}", i + 2).into(),
        ));
    }
    let e = err(&list);
    assert_eq!(
        e.kind,
        GrammarErrorKind::Limit(LimitKind::NestingDepth),
        "{e}"
    );
    // Not in terminals; not numeric; no %ignore of its own.
    let e = err(&[
        (None, "lark", "start: A\nA: @b".into()),
        (Some("b"), "lark", "start: \"b\"".into()),
    ]);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
    let e = request(&grammars(&[(None, "lark", "start: @17".into())])).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Syntax, "{e}");
    let e = err(&[
        (None, "lark", "start: @b".into()),
        (
            Some("b"),
            "lark",
            "start: \"b\" \"c\"\n%ignore \" \"".into(),
        ),
    ]);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
    // An error inside the referenced grammar names it.
    let e = err(&[
        (None, "lark", "start: @b".into()),
        (Some("b"), "lark", "start: ( \"b\"".into()),
    ]);
    assert!(e.message.contains("in grammar @b"), "{e}");
    let e = request(r#"{"grammars": []}"#).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Syntax, "{e}");
    let e = request(r#"{"grammars": [{"name": "x"}]}"#).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
}

/// The referencing grammar's `%ignore` stops at a referenced grammar, as at a `%json` value.
#[test]
fn ignore_does_not_reach_into_a_referenced_grammar() {
    let g = request(&grammars(&[
        (None, "lark", "start: \"a\" @b \"c\"\n%ignore \" \"".into()),
        (Some("b"), "lark", "start: \"x\" \"y\"".into()),
    ]))
    .unwrap();
    assert!(accepts(&g, "a xy c"));
    assert!(accepts(&g, "axyc"));
    assert!(!accepts(&g, "a x y c"));
}

/// Masks of a request equal the masks of the same language written as one grammar: the
/// inline `%json` form for JSON references, the rules spelled out for Lark ones.
#[test]
fn masks_equal_the_hand_inlined_grammar() {
    let vocab = synthetic_vocab();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "yy"]}},
        "required": ["a"]
    });
    let req = grammars(&[
        (
            None,
            "lark",
            "start: \"v\" item+\nitem: \" \" @obj | \" \" @pair".into(),
        ),
        (Some("obj"), "json", schema.clone()),
        (
            Some("pair"),
            "lark",
            "start: \"(\" N \",\" N \")\"\nN: /[0-9]{1,3}/".into(),
        ),
    ]);
    let inlined = format!(
        "start: \"v\" item+\nitem: \" \" obj | \" \" pair\nobj: %json {schema}\n\
         pair: \"(\" N \",\" N \")\"\nN: /[0-9]{{1,3}}/\n"
    );
    let g = request(&req).unwrap();
    let h = lark(&inlined, &vocab);
    for seed in 0..40 {
        let mut oracle = |m: &Matcher, text: &[u8]| {
            let mut other = Matcher::new(&h);
            assert!(other.try_consume_bytes(text) || text.is_empty(), "{text:?}");
            let _ = m;
            let mut mask = vec![0u32; vocab.mask_words()];
            other.compute_mask(&mut mask).unwrap();
            mask
        };
        check_walk(&g, seed, 30, &mut oracle).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
}
