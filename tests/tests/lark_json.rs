//! Inline JSON Schemas in Lark grammars (`name: %json {...}`): whole texts accepted or
//! rejected, masks checked against the per-token consistency check (the engine's own
//! byte-level answers, `sieve_tests::per_token_mask`), and the `%ignore` boundary.

use sieve_core::grammar::json::serde_json;
use sieve_core::{Grammar, GrammarErrorKind, Limits, Matcher};
use sieve_tests::{
    accepts, allowed_tokens, bit, check_walk, is_prefix, lark, mask_diff, per_token_mask,
    synthetic_vocab,
};

const ANSWER: &str = r#"start: "Answer: " answer
answer: %json {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
"#;

/// A call with JSON arguments between Lark tokens, and a Lark `%ignore`.
const CALL: &str = r#"
start: "call" NAME "(" args ")" ";"?
args: %json {
  "type": "object",
  "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9}, "tag": {"enum": ["a", "b}"]}},
  "required": ["n"],
  "additionalProperties": false
}
NAME: /[a-z]+/
%ignore /[ \t]+/
"#;

/// Several schemas, repetition around them, and plain Lark alternatives.
const MIXED: &str = r#"
start: (item ";")+
item: "int " %json {"type": "integer"}
    | "list " %json {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}
    | "word " WORD
WORD: /[a-z]+/
"#;

fn check_cases(name: &str, grammar: &str, accept: &[&str], reject: &[&str]) {
    let vocab = synthetic_vocab();
    let g = lark(grammar, &vocab);
    let mut failures = Vec::new();
    for text in accept {
        if !accepts(&g, text) {
            failures.push(format!("{name}: should accept {text:?}"));
        }
        for (i, _) in text.char_indices() {
            if !is_prefix(&g, &text[..i]) {
                failures.push(format!("{name}: prefix {:?} of {text:?}", &text[..i]));
            }
        }
    }
    for text in reject {
        if accepts(&g, text) {
            failures.push(format!("{name}: should reject {text:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn answer_accepts_exactly_the_schema() {
    check_cases(
        "answer",
        ANSWER,
        &[
            r#"Answer: {"x": 1}"#,
            r#"Answer: {"x":-5,"y":"z"}"#,
            r#"Answer: {"y": [1, {"}": "{"}], "x": 0}"#,
            "Answer: {\n \"x\": 12\n}",
            // Pretty-printed (the default whitespace policy since issue 16).
            "Answer: {\n  \"x\": 12\n}",
        ],
        &[
            "Answer: {}",
            r#"Answer: {"x": 1.5}"#,
            r#"Answer: {"x": "1"}"#,
            r#"Answer:{"x": 1}"#,
            r#"Answer: {"x": 1} "#,
            r#"Answer: {"x": 1}}"#,
            r#"Answer:  {"x": 1}"#,
            // JSON whitespace is bounded by the default options (at most 2 per side, or a
            // line break and up to 64 spaces or tabs).
            r#"Answer: {"x":   1}"#,
            r#"{"x": 1}"#,
            "Answer: {\n\n  \"x\": 12\n}",
        ],
    );
}

#[test]
fn call_keeps_lark_ignore_outside_the_json_value() {
    check_cases(
        "call",
        CALL,
        &[
            r#"call f({"n": 3})"#,
            r#"call  f ( {"n":3}	) ;"#,
            r#"call f({"tag": "b}", "n": 0});"#,
            r#"call f( {"n": 9} )   "#,
        ],
        &[
            // Inside the value only JSON's own (bounded) whitespace is allowed.
            r#"call f({"n":   3})"#,
            r#"call f({   "n": 3})"#,
            r#"call f({"n": 3   })"#,
            r#"call f({"n": 10})"#,
            r#"call f({"n": 3, "m": 1})"#,
            r#"call f({"tag": "a"})"#,
            r#"call f({"n": 3})) "#,
        ],
    );
}

#[test]
fn mixed_schemas_and_rules() {
    check_cases(
        "mixed",
        MIXED,
        &[
            "int 5;",
            "int -12;list [true, false];word abc;",
            "list [];int 0;",
            // An integer is any number with a zero fraction (JSON Schema), `5.0` included.
            "int 5.0;",
        ],
        &[
            "int 5",
            "int 5.5;",
            "list [true, false, true];",
            "list [1];",
            "word 5;",
            "int abc;",
        ],
    );
}

#[test]
fn alternatives_of_schemas_are_their_union() {
    check_cases(
        "union",
        r#"
start: a | b
a: %json {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false}
b: %json {"type": "object", "properties": {"y": {"type": "string"}}, "required": ["y"], "additionalProperties": false}
"#,
        &[r#"{"x": 1}"#, r#"{"y": "s"}"#],
        &[
            r#"{"x": "s"}"#,
            r#"{"y": 1}"#,
            r#"{"x": 1, "y": "s"}"#,
            "{}",
        ],
    );
}

#[test]
fn masks_inside_the_json_value() {
    let vocab = synthetic_vocab();
    let g = lark(ANSWER, &vocab);
    let mut m = Matcher::new(&g);
    assert!(m.try_consume_bytes(br#"Answer: {"x": "#));
    let mut mask = vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).expect("mask");
    assert_eq!(mask_diff(&vocab, &mask, &per_token_mask(&m)), None);
    let allowed = allowed_tokens(&mask);
    assert!(!allowed.is_empty());
    for t in &allowed {
        let first = vocab.trie_bytes(*t)[0];
        assert!(
            b"-0123456789 \t\r\n".contains(&first),
            "token {:?} allowed where an integer must start",
            String::from_utf8_lossy(vocab.trie_bytes(*t))
        );
    }
    assert!(m.try_consume_bytes(b"42}"));
    assert!(m.is_accepting());
    m.compute_mask(&mut mask).expect("mask");
    // Nothing may follow the value: only EOS.
    let allowed = allowed_tokens(&mask);
    assert!(!allowed.is_empty());
    assert!(
        allowed.iter().all(|t| vocab.eos_tokens().contains(t)),
        "{allowed:?}"
    );
}

#[test]
fn masks_match_the_oracle_on_random_walks() {
    let vocab = synthetic_vocab();
    for (name, src) in [("answer", ANSWER), ("call", CALL), ("mixed", MIXED)] {
        let g = lark(src, &vocab);
        for seed in 0..4 {
            let mut oracle = |m: &Matcher, _: &[u8]| per_token_mask(m);
            if let Err(e) = check_walk(&g, seed, 20, &mut oracle) {
                panic!("{name}, seed {seed}: {e}");
            }
        }
    }
}

/// Valid documents fed one byte token at a time: every mask equals the oracle's, holds the
/// next byte, and allows EOS exactly where the text so far is complete.
#[test]
fn byte_by_byte_documents() {
    let vocab = synthetic_vocab();
    let mut byte_token = [None; 256];
    for t in 0..vocab.vocab_size() as u32 {
        if let [b] = vocab.trie_bytes(t) {
            byte_token[*b as usize].get_or_insert(t);
        }
    }
    let eos = vocab.eos_tokens()[0];
    for (src, doc) in [
        (ANSWER, r#"Answer: {"y": [true, {"}": null}], "x": -7}"#),
        (CALL, r#"call f ( {"tag": "b}", "n": 4} ) ;"#),
        (MIXED, "list [false];int 3;word z;"),
    ] {
        let g = lark(src, &vocab);
        let mut m = Matcher::new(&g);
        let mut mask = vec![0u32; vocab.mask_words()];
        for (i, b) in doc.bytes().enumerate() {
            m.compute_mask(&mut mask).expect("mask");
            assert_eq!(
                mask_diff(&vocab, &mask, &per_token_mask(&m)),
                None,
                "{doc} at {i}"
            );
            let t = byte_token[b as usize].expect("single-byte token");
            assert!(bit(&mask, t as usize), "{doc}: byte {i} not allowed");
            let complete = accepts(&g, &doc[..i]);
            assert_eq!(bit(&mask, eos as usize), complete, "{doc}: EOS at {i}");
            m.consume_token(t).expect("allowed");
        }
        m.compute_mask(&mut mask).expect("mask");
        assert!(bit(&mask, eos as usize), "{doc}: EOS at the end");
        // The JSON part of the document is valid JSON.
        let json_start = doc.find(['{', '[']).expect("a JSON value");
        let json_end = doc.rfind(['}', ']']).expect("a JSON value") + 1;
        let v: serde_json::Value =
            serde_json::from_str(&doc[json_start..json_end]).expect("valid JSON");
        assert!(!v.is_null());
    }
}

#[test]
fn errors_point_into_the_grammar_text() {
    let vocab = synthetic_vocab();
    let limits = Limits::default();
    let src = "start: a\na: %json {\n  \"type\": \"object\",\n  \"properties\": {\"x\": ]}\n}\n";
    let e = Grammar::from_lark(src, &vocab, &limits).expect_err("invalid JSON");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    let span = e.span.expect("span");
    assert_eq!((span.start.line, span.start.column), (4, 23));
    assert_eq!(&src[span.start.offset..span.start.offset + 1], "]");
    let src = "start: a\na: %json {\"properties\": {\"x\": {\"$ref\": \"#/nowhere\"}}}";
    let e = Grammar::from_lark(src, &vocab, &limits).expect_err("bad ref");
    let span = e.span.expect("span");
    assert_eq!(
        &src[span.start.offset..span.end.offset],
        r##"{"$ref": "#/nowhere"}"##
    );
}

#[test]
fn approximated_schemas_compile() {
    // Keywords the compiler approximates or ignores are fine with the default options.
    let vocab = synthetic_vocab();
    let g = lark(
        r#"start: %json {"type": "array", "uniqueItems": true, "items": {"not": {"minimum": 3}, "x-custom": 1}}"#,
        &vocab,
    );
    assert!(accepts(&g, "[1, 1]"));
    assert!(!accepts(&g, "[1, 1"));
    // A pattern the ECMA translation cannot read is ignored (a reported superset).
    let g = lark(
        r#"start: "s=" %json {"type": "string", "pattern": "("}"#,
        &vocab,
    );
    assert!(accepts(&g, r#"s="abc""#));
    assert!(!accepts(&g, "s=abc"));
}
