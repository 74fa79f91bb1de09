//! Accept/reject tests per format type, checked with a matcher over small vocabularies,
//! whole and byte by byte (greedy lexing at every split).
//!
//! In test strings, `«name»` is the special token `name` (its encoding); everything else is
//! text.

use crate::sync::Arc;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Value, json};

use crate::grammar::json::JsonOptions;
use crate::{Grammar, GrammarError, GrammarErrorKind, Limits, Matcher, Vocabulary};

const SPECIALS: &[&str] = &[
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<|eos|>",
    "<|im_end|>",
];

/// Single bytes for printable ASCII and `\n`, some words, then the specials.
fn vocab_with(specials: &[&str]) -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = vec![b"\n".to_vec()];
    tokens.extend((0x20u8..0x7F).map(|b| vec![b]));
    for w in ["<tool", "_call>", "</", "call", "abc", "{\"", "\":", "é"] {
        tokens.push(w.as_bytes().to_vec());
    }
    tokens.extend([0xC3u8, 0xA9].iter().map(|&b| vec![b]));
    let first = tokens.len() as u32;
    for s in specials {
        tokens.push(s.as_bytes().to_vec());
    }
    let ids: Vec<u32> = (first..first + specials.len() as u32).collect();
    let eos: Vec<u32> = specials
        .iter()
        .position(|s| *s == "<|eos|>")
        .map(|i| first + i as u32)
        .into_iter()
        .collect();
    Arc::new(Vocabulary::new(tokens, &ids, &eos).unwrap())
}

fn specials() -> Arc<Vocabulary> {
    vocab_with(SPECIALS)
}

fn plain() -> Arc<Vocabulary> {
    vocab_with(&["<|eos|>"])
}

/// `«name»` → the special token's encoding.
fn encode(vocab: &Vocabulary, s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('«') {
        out.extend_from_slice(&rest.as_bytes()[..i]);
        let after = &rest[i + '«'.len_utf8()..];
        let j = after.find('»').unwrap();
        let id = vocab.special_by_name(&after[..j]).unwrap();
        out.extend(Vocabulary::special_encoding(id));
        rest = &after[j + '»'.len_utf8()..];
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

fn compile(v: &Value, vocab: &Arc<Vocabulary>) -> Result<Grammar, GrammarError> {
    Grammar::from_structural_tag(
        &v.to_string(),
        &JsonOptions::default(),
        vocab,
        &Limits::default(),
    )
}

fn accepts(g: &Grammar, bytes: &[u8]) -> bool {
    let mut m = Matcher::new(g);
    let whole = m.try_consume_bytes(bytes) && m.is_accepting();
    let mut m = Matcher::new(g);
    let mut ok = true;
    for b in bytes {
        if !m.try_consume_bytes(&[*b]) {
            ok = false;
            break;
        }
    }
    let bytewise = ok && m.is_accepting();
    assert_eq!(whole, bytewise, "whole vs byte by byte differ on {bytes:?}");
    whole
}

fn check_in(vocab: &Arc<Vocabulary>, format: Value, good: &[&str], bad: &[&str]) {
    let tag = json!({"type": "structural_tag", "format": format});
    let g = compile(&tag, vocab).unwrap_or_else(|e| panic!("compile {tag}: {e}"));
    for s in good {
        assert!(
            accepts(&g, &encode(vocab, s)),
            "should accept {s:?} for {tag}"
        );
    }
    for s in bad {
        assert!(
            !accepts(&g, &encode(vocab, s)),
            "should reject {s:?} for {tag}"
        );
    }
}

fn check(format: Value, good: &[&str], bad: &[&str]) {
    check_in(&plain(), format, good, bad);
}

fn error(v: Value, vocab: &Arc<Vocabulary>) -> GrammarError {
    match compile(&v, vocab) {
        Ok(_) => panic!("expected an error for {v}"),
        Err(e) => e,
    }
}

fn text(s: &str) -> Value {
    json!({"type": "const_string", "value": s})
}

fn any() -> Value {
    json!({"type": "any_text"})
}

#[test]
fn const_string() {
    check(text("hello"), &["hello"], &["", "hell", "hello!"]);
    check(text(""), &[""], &["a"]);
}

#[test]
fn top_level_forms() {
    let g = compile(&text("ab"), &plain()).unwrap();
    assert!(accepts(&g, b"ab"));
    let legacy = json!({
        "structures": [{"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"}],
        "triggers": ["<f="]
    });
    let g = compile(&legacy, &plain()).unwrap();
    assert!(accepts(&g, b"hi <f=a>12</f> bye"));
    assert!(!accepts(&g, b"hi <f=a>x</f>"));
    assert!(!accepts(&g, b"hi <f=b>1</f>"));
    let legacy = json!({
        "structures": [
            {"begin": "<f=a>", "schema": {"type": "integer"}, "end": "</f>"},
            {"begin": "<f=b>", "schema": {"type": "object", "x-guidance": 3}, "end": "</f>"}
        ],
        "triggers": ["<f="]
    });
    let e = error(legacy, &plain());
    assert_eq!(e.pointer(), Some("/structures/1/schema/x-guidance"), "{e}");
}

#[test]
fn any_text_alone_and_excludes() {
    check(any(), &["", "anything at all <tool"], &[]);
    check(
        json!({"type": "any_text", "excludes": ["<stop>"]}),
        &["a <stop", "stop>", ""],
        &["a <stop> b", "<stop>"],
    );
    check(
        json!({"type": "any_text", "max_chars": 3}),
        &["", "abc", "éé", "ééé"],
        &["abcd", "éééé"],
    );
}

#[test]
fn any_text_then_literal_first_occurrence() {
    check(
        json!({"type": "sequence", "elements": [any(), text("END")]}),
        &["END", "abcEND", "EN EENEND"],
        &["ENDEND", "abc", "abcEN", "aENDb"],
    );
    check(
        json!({"type": "sequence", "elements": [
            {"type": "any_text", "excludes": ["x"], "max_chars": 2}, text("!")]}),
        &["!", "ab!", "é!"],
        &["x!", "abc!"],
    );
}

#[test]
fn tag_with_any_text_and_ends() {
    check(
        json!({"type": "tag", "begin": "<a>", "content": any(), "end": ["</a>", "</b>"]}),
        &["<a></a>", "<a>x</b>", "<a> </ </a</a>"],
        &["<a>x</a></a>", "<a>x", "<a>x</a>y", "<a></b></a>"],
    );
}

#[test]
fn nesting_sequence_or_tag() {
    let inner = json!({"type": "tag", "begin": "(", "content": any(), "end": ")"});
    check(
        json!({"type": "sequence", "elements": [
            text("f"),
            {"type": "or", "elements": [inner, text("-")]},
            {"type": "optional", "content": text("?")},
            text(";")
        ]}),
        &["f(x);", "f-;", "f();", "f(x)?;", "f-?;"],
        &["f(x));", "f(x)", "f;", "f(x)??;"],
    );
}

#[test]
fn star_plus_repeat() {
    check(
        json!({"type": "star", "content": text("ab")}),
        &["", "ab", "abab"],
        &["a", "aba"],
    );
    check(
        json!({"type": "plus", "content": text("ab")}),
        &["ab", "abab"],
        &["", "aba"],
    );
    check(
        json!({"type": "repeat", "min": 2, "max": 3, "content": text("a")}),
        &["aa", "aaa"],
        &["a", "aaaa"],
    );
    check(
        json!({"type": "repeat", "min": 1, "max": -1, "content": text("a")}),
        &["a", "aaaaa"],
        &[""],
    );
    // Huge bounds are a limit error, not a blow-up.
    let e = error(
        json!({"type": "repeat", "min": 0, "max": 1_000_000_000u64, "content": text("a")}),
        &plain(),
    );
    assert!(matches!(e.kind, GrammarErrorKind::Limit(_)), "{e}");
    assert!(e.to_string().contains("at /:"), "{e}");
}

#[test]
fn regex_and_grammar_and_json() {
    check(
        json!({"type": "regex", "pattern": "[0-9]+"}),
        &["1", "42"],
        &["", "a"],
    );
    check(
        json!({"type": "grammar", "grammar": "start: \"a\" b\nb: \"x\" | \"y\""}),
        &["ax", "ay"],
        &["a", "az"],
    );
    check(
        json!({"type": "json_schema", "json_schema": {"type": "object",
            "properties": {"a": {"type": "integer"}}, "required": ["a"]}}),
        &["{\"a\": 1}", "{\"a\":1}"],
        &["{}", "{\"a\": \"x\"}"],
    );
    check(
        json!({"type": "sequence", "elements": [
            text("<f>"),
            {"type": "json_schema", "json_schema": {"type": "integer"}},
            text("</f>")]}),
        &["<f>1</f>", "<f>-20</f>"],
        &["<f></f>", "<f>1.5</f>"],
    );
    // GBNF (XGrammar's EBNF) next to text.
    check(
        json!({"type": "sequence", "elements": [
            text("<g>"),
            {"type": "grammar", "grammar": "root ::= \"a\" [0-9]{1,2}"},
            text("</g>")]}),
        &["<g>a1</g>", "<g>a42</g>"],
        &["<g>a</g>", "<g>a123</g>", "<g>b1</g>"],
    );
    let e = error(
        json!({"type": "grammar", "grammar": "root ::= \"a"}),
        &plain(),
    );
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert_eq!(e.pointer(), Some("/grammar"), "{e}");
    assert!(e.span.is_some(), "{e}");
}

#[test]
fn json_schema_options() {
    let f = |extra: Value| {
        let mut v = json!({"type": "json_schema", "json_schema": {"type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    check(
        f(json!({})),
        &["{\"a\": 1, \"b\": 2}"],
        &["{\"b\": 2, \"a\": 1}"],
    );
    check(
        f(json!({"any_order": true})),
        &["{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}"],
        &[],
    );
    check(
        f(json!({"max_whitespace_cnt": 1})),
        &["{\"a\":1,\"b\": 2}"],
        &["{\"a\":  1,\"b\":2}"],
    );
}

#[test]
fn triggered_tags_basic() {
    let f = json!({"type": "triggered_tags", "triggers": ["<tool"],
    "tags": [
        {"type": "tag", "begin": "<tool_call>", "content": any(), "end": "</tool_call>"},
        {"type": "tag", "begin": "<tool_x>", "content": text("X"), "end": "</x>"}
    ]});
    check(
        f.clone(),
        &[
            "",
            "hello",
            "a <too b",
            "a <tool_call>hi</tool_call> b",
            "<tool_x>X</x><tool_call></tool_call>",
            "a <to",
        ],
        &[
            "a <tool",
            "a <tool_call>hi",
            "a <toolbox>",
            "<tool_x>Y</x>",
            "<tool_call>a</tool_call>b<tool",
        ],
    );
}

#[test]
fn triggered_tags_flags_and_excludes() {
    let tags = json!([{"type": "tag", "begin": "<t>", "content": any(), "end": "</t>"}]);
    let f = |alo: bool, saf: bool| {
        json!({"type": "triggered_tags", "triggers": ["<t>"], "tags": tags,
            "at_least_one": alo, "stop_after_first": saf, "excludes": ["BAD"]})
    };
    check(
        f(false, false),
        &["", "x<t>a</t>y<t></t>", "BA D"],
        &["BAD", "x<t>a</t>BAD"],
    );
    check(
        f(true, false),
        &["<t>a</t>", "<t>a</t> more <t></t>"],
        &["", "x<t>a</t>"],
    );
    check(
        f(false, true),
        &["", "x", "x<t>a</t>"],
        &["x<t>a</t>y", "x<t>a</t><t></t>"],
    );
    check(
        f(true, true),
        &["<t>a</t>"],
        &["", "<t>a</t>x", "x<t>a</t>"],
    );
}

#[test]
fn triggered_tags_overlapping_triggers() {
    let f = json!({"type": "triggered_tags", "triggers": ["<a", "<ab"],
    "tags": [
        {"begin": "<a>", "content": text("1"), "end": "/"},
        {"begin": "<ab>", "content": text("2"), "end": "/"}
    ]});
    check(
        f,
        &["<a>1/", "<ab>2/", "x<a>1/y<ab>2/"],
        &["<ab>1/", "<a>2/", "<ac"],
    );
}

#[test]
fn triggered_tags_begin_without_trigger() {
    let f = json!({"type": "structural_tag", "format": {"type": "triggered_tags",
        "triggers": ["<a"], "tags": [{"begin": "<b>", "content": any(), "end": "</b>"}]}});
    let e = error(f, &plain());
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert!(e.to_string().starts_with("at /format/tags/0/begin:"), "{e}");
}

#[test]
fn tags_with_separator() {
    let tags = json!([{"begin": "<a>", "content": any(), "end": "</a>"}]);
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ","}),
        &["", "<a>x</a>", "<a>x</a>,<a>,</a>"],
        &["<a>x</a>,", "x", "<a>x</a> <a></a>"],
    );
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "at_least_one": true}),
        &["<a>x</a>"],
        &[""],
    );
    check(
        json!({"type": "tags_with_separator", "tags": tags, "separator": ",", "stop_after_first": true}),
        &["", "<a>x</a>"],
        &["<a>x</a>,<a></a>"],
    );
}

#[test]
fn dispatch() {
    let f = |looping: bool| {
        json!({"type": "dispatch", "loop": looping, "excludes": ["!!"],
            "rules": [["call:", {"type": "regex", "pattern": "[a-z]+;"}]]})
    };
    check(
        f(true),
        &["", "hi call:abc; ok call:x;", "cal"],
        &["call:", "call:1;", "!!"],
    );
    check(f(false), &["x call:ab;"], &["call:a;call:b;", "call:a; x"]);
}

#[test]
fn control_tokens_in_literals() {
    let v = specials();
    check_in(
        &v,
        text("<tool_call>"),
        &["«<tool_call>»"],
        &["<tool_call>"],
    );
    check_in(
        &v,
        text("a<think>b</think>"),
        &["a«<think>»b«</think>»"],
        &["a<think>b</think>"],
    );
    check_in(
        &v,
        json!({"type": "tag", "begin": "<think>", "content": any(), "end": "</think>"}),
        &["«<think>»«</think>»", "«<think>»reason </th «</think>»"],
        &["«<think>»a</think>«</think>»", "«<think>»a"],
    );
    // An end that is text then a control token.
    check_in(
        &v,
        json!({"type": "tag", "begin": "A", "content": any(), "end": "\n<|im_end|>"}),
        &["A\n«<|im_end|>»", "Ax\ny\n«<|im_end|>»"],
        &["A«<|im_end|>»", "A\n"],
    );
    // Without the special tokens, the same names are text.
    check(text("<tool_call>"), &["<tool_call>"], &[]);
}

#[test]
fn triggered_tags_with_control_tokens() {
    let v = specials();
    let f = json!({"type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"begin": "<tool_call>\n", "content": {"type": "json_schema",
            "json_schema": {"type": "integer"}}, "end": "\n</tool_call>"}]});
    check_in(
        &v,
        f,
        &[
            "",
            "a <tool b",
            "a «<tool_call>»\n1\n«</tool_call>» b",
            "«<tool_call>»\n2\n«</tool_call>»",
        ],
        &[
            "a <tool_call>\n1\n</tool_call>",
            "«<tool_call>»1«</tool_call>»",
            "«<tool_call>»",
        ],
    );
}

#[test]
fn token_formats() {
    let v = specials();
    check_in(
        &v,
        json!({"type": "token", "token": "<think>"}),
        &["«<think>»"],
        &["<think>", ""],
    );
    let id = v.special_by_name("<tool_call>").unwrap();
    check_in(
        &v,
        json!({"type": "token", "token": id}),
        &["«<tool_call>»"],
        &["«<think>»"],
    );
    let e = error(json!({"type": "token", "token": 5}), &v);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    assert!(e.message.contains("use const_string"), "{e}");
    check_in(
        &v,
        json!({"type": "exclude_token", "exclude_tokens": ["<think>"]}),
        &["«</think>»", "abc"],
        &["«<think>»", "", "«<tool_call>»«<tool_call>»"],
    );
    check_in(
        &v,
        json!({"type": "any_tokens", "exclude_tokens": ["<think>"]}),
        &["", "a«</think>»b«<tool_call>»", "«</think>»«</think>»"],
        &["a«<think>»"],
    );
    let e = error(json!({"type": "any_tokens", "max_tokens": 3}), &v);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    let e = error(json!({"type": "any_text", "max_tokens": 3}), &v);
    assert!(e.message.contains("token counting"), "{e}");
}

#[test]
fn token_triggered_tags_and_dispatch() {
    let v = specials();
    check_in(
        &v,
        json!({"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"],
            "exclude_tokens": ["<think>"],
            "tags": [{"begin": {"type": "token", "token": "<tool_call>"}, "content": any(),
                "end": {"type": "token", "token": "</tool_call>"}}]}),
        &["", "hi «</think>» x", "a«<tool_call>»b«</tool_call>»c"],
        &[
            "«<think>»",
            "«<tool_call>»b",
            "a«<tool_call>»b«</tool_call>»«<think>»",
        ],
    );
    check_in(
        &v,
        json!({"type": "token_dispatch", "loop": false,
            "rules": [["<think>", text("T")]]}),
        &["", "x«<think>»T", "«</think>»«<think>»T"],
        &["«<think>»", "«<think>»T«<think>»T"],
    );
}

#[test]
fn errors_carry_pointers() {
    let v = plain();
    let e = error(
        json!({"type": "structural_tag", "format": {"type": "sequence",
            "elements": [text("a"), {"type": "tag", "begin": "x", "content": {"type": "nope"}, "end": "y"}]}}),
        &v,
    );
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert!(
        e.to_string()
            .starts_with("at /format/elements/1/content/type:"),
        "{e}"
    );
    let e = error(
        json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "json_schema", "json_schema": {"type": "object", "x-guidance": 1}}]}}),
        &v,
    );
    assert_eq!(
        e.pointer(),
        Some("/format/elements/0/json_schema/x-guidance"),
        "{e}"
    );
    let e = error(
        json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
            {"type": "json_schema", "json_schema": {"type": "object"}, "style": "yaml"}]}}),
        &v,
    );
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    assert!(
        e.to_string().starts_with("at /format/elements/0/style:"),
        "{e}"
    );
    let e = error(
        json!({"type": "structural_tag", "format": {"type": "const_string"}}),
        &v,
    );
    assert!(
        e.to_string()
            .starts_with("at /format: missing field \"value\""),
        "{e}"
    );
    let e = error(
        json!({"type": "structural_tag", "format": {"type": "regex", "pattern": "(?=a)"}}),
        &v,
    );
    assert!(!e.message.is_empty());
    let s: String = "x".repeat(3);
    assert_eq!(s.len(), 3);
}

#[test]
fn deep_nesting_is_bounded() {
    // 60 nested `optional`s (the JSON text depth limit is 64): lowered on the work list.
    let mut f = text("a");
    for _ in 0..30 {
        f = json!({"type": "optional", "content": f});
    }
    check(f, &["", "a"], &["aa"]);
}

#[test]
fn trigger_prefix_in_free_text() {
    let f = json!({"type": "triggered_tags", "triggers": ["<tool_call>"],
        "tags": [{"begin": "<tool_call>", "content": any(), "end": "</tool_call>"}]});
    check(
        f,
        &[
            "a <tool x <tool_call>y</tool_call>",
            "<tool<tool_call></tool_call><tool_cal",
            "<<tool_call>a</tool_call>",
        ],
        &[
            "a <tool x <tool_call>y",
            "<tool_call></tool_call><tool_call>",
        ],
    );
}

#[test]
fn triggered_tags_inside_a_tag() {
    let inner = json!({"type": "triggered_tags", "triggers": ["<t>"],
        "tags": [{"begin": "<t>", "content": any(), "end": "</t>"}]});
    check(
        json!({"type": "sequence", "elements": [
            {"type": "tag", "begin": "<r>", "content": inner, "end": "</r>"},
            text("!")
        ]}),
        &[
            "<r></r>!",
            "<r>a<t>b</t>c</r>!",
            "<r><t></r></t></r>!",
            "<r></r!</r>!",
        ],
        &["<r>a</r>b</r>!", "<r><t>x</r>!", "<r></r>", "<r></r>!!"],
    );
}

#[test]
fn any_text_then_control_token_begin() {
    let v = specials();
    check_in(
        &v,
        json!({"type": "sequence", "elements": [
            any(),
            {"type": "tag", "begin": "<think>", "content": any(), "end": "</think>"},
            any()
        ]}),
        &["«<think>»«</think>»", "ab<thin«<think>»c«</think>»d"],
        // The text spelling of a control token the format uses is not free text.
        &[
            "ab",
            "«<think>»«</think>»«<think>»«</think>»",
            "ab<think>«<think>»«</think>»",
        ],
    );
}

#[test]
fn empty_end_means_unterminated() {
    check(
        json!({"type": "tag", "begin": "<a>", "content": any(), "end": ["</a>", ""]}),
        &["<a>", "<a>xyz", "<a>x</a>"],
        &["<a>x</a>y"],
    );
}

#[test]
fn trigger_without_tags_is_excluded() {
    check(
        json!({"type": "triggered_tags", "triggers": ["<a>", "<b>"],
            "tags": [{"begin": "<a>", "content": text("1"), "end": "."}]}),
        &["x<a>1.", "<b"],
        &["x<b>", "<a>1.<b>"],
    );
    let e = error(
        json!({"type": "triggered_tags", "triggers": [], "tags": [], "at_least_one": true}),
        &plain(),
    );
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
}

#[test]
fn text_spelling_of_control_token_triggers_is_not_free_text() {
    let v = specials();
    check_in(
        &v,
        json!({"type": "triggered_tags", "triggers": ["<tool_call>"],
            "tags": [{"begin": "<tool_call>", "content": text("x"), "end": "</tool_call>"}]}),
        &["a«<tool_call>»x«</tool_call>»", "<tool_cal"],
        &["a<tool_call>", "a«<tool_call>»x</tool_call>"],
    );
}

#[test]
fn any_tokens_as_tag_content() {
    let v = specials();
    check_in(
        &v,
        json!({"type": "tag", "begin": "[", "content": {"type": "any_tokens"}, "end": "]"}),
        &[
            "[]",
            "[a«<think>»b]",
            "[«<think>»]",
            "[a«<think>»«</think>»b]",
        ],
        &["[a]b]", "[a", "[«<|eos|>»]"],
    );
    let e = error(json!({"type": "any_tokens", "exclude_tokens": [40]}), &v);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    assert!(e.to_string().starts_with("at /exclude_tokens/0:"), "{e}");
}

#[test]
fn limits_are_enforced() {
    let tag = json!({"type": "structural_tag", "format": {"type": "sequence",
        "elements": [text("a"), text("b"), text("c"), text("d")]}});
    let limits = Limits {
        max_grammar_size: 3,
        ..Limits::default()
    };
    let e =
        Grammar::from_structural_tag(&tag.to_string(), &JsonOptions::default(), &plain(), &limits)
            .err()
            .unwrap();
    assert_eq!(
        e.kind,
        GrammarErrorKind::Limit(crate::LimitKind::GrammarSize),
        "{e}"
    );
    let limits = Limits {
        max_memory_bytes: 4096,
        ..Limits::default()
    };
    let e =
        Grammar::from_structural_tag(&tag.to_string(), &JsonOptions::default(), &plain(), &limits)
            .err()
            .unwrap();
    assert!(matches!(e.kind, GrammarErrorKind::Limit(_)), "{e}");
    let e = error(json!({"type": "any_text", "max_chars": 100_000}), &plain());
    assert!(matches!(e.kind, GrammarErrorKind::Limit(_)), "{e}");
}

#[test]
fn malformed_fields_are_syntax_errors() {
    let v = plain();
    for (f, at) in [
        (
            json!({"type": "sequence", "elements": 3}),
            "at /format/elements:",
        ),
        (
            json!({"type": "or", "elements": []}),
            "at /format/elements:",
        ),
        (
            json!({"type": "tag", "begin": 1, "content": any(), "end": "x"}),
            "at /format/begin:",
        ),
        (
            json!({"type": "repeat", "min": 3, "max": 1, "content": any()}),
            "at /format:",
        ),
        (
            json!({"type": "dispatch", "rules": [["a"]]}),
            "at /format/rules/0:",
        ),
        (
            json!({"type": "triggered_tags", "triggers": [""], "tags": []}),
            "at /format/triggers/0:",
        ),
        (json!({"type": 7}), "at /format/type:"),
    ] {
        let e = error(json!({"type": "structural_tag", "format": f}), &v);
        assert_eq!(e.kind, GrammarErrorKind::Syntax, "{e}");
        assert!(e.to_string().starts_with(at), "{e} (expected {at})");
        let pointer = at.strip_prefix("at ").and_then(|p| p.strip_suffix(':'));
        assert_eq!(e.pointer(), pointer, "{e}");
    }
    let e = Grammar::from_structural_tag(
        "{\"type\": ",
        &JsonOptions::default(),
        &v,
        &Limits::default(),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
}

#[test]
fn tool_calls_compute_masks() {
    // A Hermes/Qwen-style tool-call format over a synthetic vocabulary: masks at several
    // points must be computable within the default limits, and agree with the byte checks.
    let vocab = Arc::new(Vocabulary::synthetic(2000, 3));
    let tags: Vec<Value> = ["get_weather", "get_time", "search"]
        .iter()
        .map(|name| {
            json!({"begin": format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": "),
                "content": {"type": "json_schema", "json_schema": {"type": "object",
                    "properties": {"q": {"type": "string"}}, "required": ["q"]}},
                "end": "}\n</tool_call>"})
        })
        .collect();
    let f = json!({"type": "structural_tag", "format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": any(), "end": "</think>"},
        {"type": "triggered_tags", "triggers": ["<tool_call>"], "tags": tags}
    ]}});
    let g = compile(&f, &vocab).unwrap();
    let text = "<think>hmm <tool_call> is </thin</think>Let me <tool call.\
        <tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"q\": \"now\"}}\n</tool_call> done";
    assert!(accepts(&g, text.as_bytes()));
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; vocab.mask_words()];
    let bytes = text.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if i % 7 == 0 {
            m.compute_mask(&mut mask).unwrap();
            // The next byte's single-byte token is allowed.
            let tok = vocab.greedy_tokenize_text(&[b]).unwrap()[0];
            assert!(mask[tok as usize / 32] & (1 << (tok % 32)) != 0, "at {i}");
        }
        assert!(m.try_consume_bytes(&[b]), "at {i}");
    }
    assert!(m.is_accepting());
}

#[test]
fn any_text_then_or_of_tags() {
    let alt = |b: &str, e: &str| json!({"type": "tag", "begin": b, "content": any(), "end": e});
    check(
        json!({"type": "sequence", "elements": [
            any(),
            {"type": "or", "elements": [alt("<a>", "</a>"), alt("<b>", "</b>"), text("!")]}
        ]}),
        &["x<a>1</a>", "<b></b>", "hi!", "<a!", "x</a><b>y</b>"],
        &["x<a>1</a>!", "x!y!", "x<b>1</a>", "x"],
    );
    // With a literal after the `or`, and the whole inside a tag.
    check(
        json!({"type": "tag", "begin": "[", "content": {"type": "sequence", "elements": [
            any(),
            {"type": "or", "elements": [alt("<a>", "</a>"), text("!")]},
            text(";")
        ]}, "end": "]"}),
        &["[x<a>1</a>;]", "[!;]", "[a;b!;]"],
        &["[x<a>1</a>]", "[x!]", "[x!;;]", "[x;]"],
    );
}

/// Every string over `alphabet` of length at most `max_len`.
fn all_strings(alphabet: &[u8], max_len: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut start = 0;
    for _ in 0..max_len {
        let end = out.len();
        for i in start..end {
            for &c in alphabet {
                let mut s = out[i].clone();
                s.push(c);
                out.push(s);
            }
        }
        start = end;
    }
    out
}

fn contains(s: &[u8], x: &[u8]) -> bool {
    s.windows(x.len()).any(|w| w == x)
}

#[test]
fn free_text_with_ends_matches_an_oracle() {
    // `tag("", any_text(excludes), ends)`: accepted iff the first place where an end
    // occurrence ends is the end of the string, and the text before that end avoids the
    // excludes.
    let ends: [&[u8]; 2] = [b"<a>", b"ab"];
    let excludes: &[u8] = b"ba";
    let g = compile(
        &json!({"type": "tag", "begin": "", "content": {"type": "any_text", "excludes": ["ba"]},
            "end": ["<a>", "ab"]}),
        &plain(),
    )
    .unwrap();
    for s in all_strings(b"ab<>", 6) {
        let first_end = (1..=s.len()).find(|&n| ends.iter().any(|e| s[..n].ends_with(e)));
        let expected = first_end == Some(s.len())
            && ends
                .iter()
                .any(|e| s.ends_with(e) && !contains(&s[..s.len() - e.len()], excludes));
        assert_eq!(
            accepts(&g, &s),
            expected,
            "{:?}",
            String::from_utf8_lossy(&s)
        );
    }
}

#[test]
fn triggered_tags_match_an_oracle() {
    // Trigger `<t`, one tag `<t>x/`: free text must not contain the trigger except where a
    // tag starts, and never `xx` (excluded).
    fn ok(s: &[u8]) -> bool {
        match s.windows(2).position(|w| w == b"<t") {
            None => !contains(s, b"xx"),
            Some(i) => {
                !contains(&s[..i + 1], b"xx") && s[i..].starts_with(b"<t>x/") && ok(&s[i + 5..])
            }
        }
    }
    let g = compile(
        &json!({"type": "triggered_tags", "triggers": ["<t"], "excludes": ["xx"],
            "tags": [{"begin": "<t>", "content": text("x"), "end": "/"}]}),
        &plain(),
    )
    .unwrap();
    for s in all_strings(b"<t>x/", 6) {
        assert_eq!(accepts(&g, &s), ok(&s), "{:?}", String::from_utf8_lossy(&s));
    }
}

#[test]
fn control_token_trigger_matches_an_oracle() {
    // Trigger and begin: the control token `<t>` (S); content: text up to the first `/`.
    // Free text must not spell `<t>` as text; a tag's content is text only.
    let v = vocab_with(&["<t>", "<|eos|>"]);
    let s_enc = Vocabulary::special_encoding(v.special_by_name("<t>").unwrap());
    let g = compile(
        &json!({"type": "triggered_tags", "triggers": ["<t>"],
            "tags": [{"begin": "<t>", "content": any(), "end": "/"}]}),
        &v,
    )
    .unwrap();
    // Units: indices into `text_units`, or 255 for S.
    let text_units = b"<t>/a";
    fn ok(units: &[u8], text_units: &[u8]) -> bool {
        let bytes = |us: &[u8]| -> Vec<u8> { us.iter().map(|&u| text_units[u as usize]).collect() };
        match units.iter().position(|&u| u == 255) {
            None => !contains(&bytes(units), b"<t>"),
            Some(i) => {
                if contains(&bytes(&units[..i]), b"<t>") {
                    return false;
                }
                let rest = &units[i + 1..];
                match rest
                    .iter()
                    .position(|&u| u == 255 || text_units[u as usize] == b'/')
                {
                    Some(j) if rest[j] != 255 => ok(&rest[j + 1..], text_units),
                    _ => false,
                }
            }
        }
    }
    // Short strings over `<`, `t`, `>`, `/`, `a` and S.
    let alphabet: Vec<u8> = vec![0, 1, 2, 3, 4, 255];
    for units in all_strings(&alphabet, 5) {
        let mut bytes = Vec::new();
        for &u in &units {
            if u == 255 {
                bytes.extend_from_slice(&s_enc);
            } else {
                bytes.push(text_units[u as usize]);
            }
        }
        assert_eq!(accepts(&g, &bytes), ok(&units, text_units), "{units:?}");
    }
}

#[test]
fn deepest_format_lowers_on_a_small_stack() {
    extern crate std;
    // 63 nested formats (JSON text allows 64 levels): the format walk uses a work list
    // (it passes on 64 KiB in debug builds on x86-64; 128 KiB leaves a margin).
    let mut text = String::from("{\"type\": \"const_string\", \"value\": \"a\"}");
    for _ in 0..63 {
        text = format!("{{\"type\": \"optional\", \"content\": {text}}}");
    }
    let h = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(move || {
            let limits = Limits::default();
            let mut budget = crate::CompileBudget::new(&limits);
            super::lower(
                &text,
                &JsonOptions::default(),
                &plain(),
                &limits,
                &mut budget,
            )
            .is_ok()
        });
    assert!(matches!(h.map(|h| h.join()), Ok(Ok(true))));
}

#[test]
fn large_max_chars_compiles() {
    let n = Limits::default().max_repeat;
    let g = compile(
        &json!({"type": "tag", "begin": "<a>", "content": {"type": "any_text", "max_chars": n},
            "end": "</a>"}),
        &plain(),
    )
    .unwrap();
    assert!(accepts(&g, b"<a>hello</a>"));
    let long = format!("<a>{}</a>", "x".repeat(n as usize + 1));
    let mut m = Matcher::new(&g);
    assert!(!(m.try_consume_bytes(long.as_bytes()) && m.is_accepting()));
}

/// Free text followed by a format that does not start with a literal cannot be ended by
/// sieve's greedy lexer: refused with the text's pointer, instead of masks with dead ends.
/// Followed by a literal, a tag, or nothing, it compiles.
#[test]
fn free_text_before_a_non_literal_is_refused() {
    let schema = json!({"type": "json_schema", "json_schema": {"type": "integer"}});
    for (format, pointer) in [
        (
            json!({"type": "sequence", "elements": [any(), schema.clone()]}),
            "/format/elements/0",
        ),
        (
            json!({"type": "sequence", "elements": [
                {"type": "or", "elements": [any(), text("x")]},
                {"type": "regex", "pattern": "[0-9]+"}]}),
            "/format/elements/0/elements/0",
        ),
        (json!({"type": "star", "content": any()}), "/format/content"),
        (
            json!({"type": "sequence", "elements": [
                {"type": "optional", "content": any()}, schema.clone()]}),
            "/format/elements/0/content",
        ),
    ] {
        let e = error(
            json!({"type": "structural_tag", "format": format}),
            &plain(),
        );
        assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
        assert_eq!(e.pointer(), Some(pointer), "{e}");
        assert!(!e.message.starts_with("at "), "{e}");
    }
    for format in [
        json!({"type": "sequence", "elements": [any(), text("x"), schema.clone()]}),
        json!({"type": "sequence", "elements": [schema.clone(), any()]}),
        json!({"type": "tag", "begin": "<a>", "content": any(), "end": "</a>"}),
        json!({"type": "optional", "content": any()}),
    ] {
        let v = json!({"type": "structural_tag", "format": format});
        assert!(compile(&v, &plain()).is_ok(), "{v}");
    }
}

/// Token-level content of a tag whose end is a control token stops at that token: the end
/// token is not one of the tokens the content may interleave (XGrammar excludes it too).
#[test]
fn token_content_stops_at_a_token_end() {
    let v = specials();
    let end = "</think>";
    for content in [
        json!({"type": "any_tokens"}),
        json!({"type": "exclude_token", "exclude_tokens": []}),
        json!({"type": "token_triggered_tags", "trigger_tokens": ["<tool_call>"],
               "tags": [{"type": "tag", "begin": "<tool_call>", "content": any(), "end": "</tool_call>"}]}),
    ] {
        let format = json!({"type": "tag", "begin": "<think>", "content": content, "end": end});
        let g =
            compile(&json!({"type": "structural_tag", "format": format}), &v).expect("compiles");
        let once = encode(&v, "«<think>»a«</think>»");
        let twice = encode(&v, "«<think>»a«</think>»b«</think>»");
        assert!(accepts(&g, &once), "{format}");
        assert!(!accepts(&g, &twice), "{format}");
    }
}

/// Ends that are prefixes of each other: the text stops where the first end *starts*, and
/// either end may follow (`x</a>!` ends with `</a>!`, `x</a>` with `</a>`).
#[test]
fn tag_ends_prefixes_of_each_other() {
    check(
        json!({"type": "tag", "begin": "<a>", "content": any(), "end": ["</a>", "</a>!"]}),
        &["<a>x</a>", "<a>x</a>!", "<a></a>!", "<a>x<y</a>"],
        &["<a>x</a>y</a>", "<a>x</a>!!", "<a>x</a>!</a>"],
    );
}
