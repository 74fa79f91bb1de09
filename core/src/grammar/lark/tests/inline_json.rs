//! Inline JSON Schema (`%json`) in Lark grammars.

use super::*;

const ANSWER: &str = r#"start: "Answer: " answer
answer: %json {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
"#;

#[test]
fn inline_json_is_a_nonterminal() {
    let ir = ok(ANSWER);
    check_invariants(&ir);
    assert_eq!(shown_rules(&ir, "start"), ["\"Answer: \" answer"]);
    assert_eq!(shown_rules(&ir, "answer"), ["answer.json.start"]);
    // The schema's own nonterminals and lexemes come along, located at the `%json`.
    let json_nts: Vec<_> = ir
        .nonterminals
        .iter()
        .filter(|n| n.name.starts_with("answer.json."))
        .collect();
    assert!(json_nts.len() > 1, "{json_nts:?}");
    for n in &json_nts {
        let span = n.span.expect("span");
        assert_eq!((span.start.line, span.start.column), (2, 9));
    }
    let json_lexemes = ir.lexemes.iter().filter(|l| l.name != "\"Answer: \"");
    assert!(json_lexemes.clone().count() > 2);
    for l in json_lexemes {
        assert!(!l.ignore);
        assert_eq!(l.span.map(|s| s.start.line), Some(2), "{}", l.name);
    }
}

#[test]
fn inline_json_spans_lines_and_braces_in_strings() {
    let src = r##"start: item+
item: "<" obj ">"
    | "#" NUMBER
obj: %json
{
  "description": "a } brace, a \" quote and a { brace",
  "type": "object",
  "properties": {"s": {"type": "string", "pattern": "^[{}]+$"}}
}   // a comment after the object
    | "null"
NUMBER: /[0-9]+/
"##;
    let ir = ok(src);
    check_invariants(&ir);
    assert_eq!(shown_rules(&ir, "obj"), ["obj.json.start", "\"null\""]);
    assert_eq!(shown_rules(&ir, "item").len(), 2);
    assert!(ir.lexemes.iter().any(|l| l.name == "NUMBER"));
}

#[test]
fn inline_json_in_expressions_and_shared() {
    let schema = r#"%json {"type": "integer"}"#;
    let src = format!(
        "start: \"<\" {schema} \">\" | {schema}* \";\" | other\n\
         other: %json {{ \"type\" : \"integer\" }} | %json{{\"type\": \"string\"}}\n"
    );
    let ir = ok(&src);
    check_invariants(&ir);
    // Equal schemas (compared as JSON values) are compiled once.
    let starts: Vec<&str> = ir
        .nonterminals
        .iter()
        .map(|n| n.name.as_str())
        .filter(|n| n.ends_with(".json.start"))
        .collect();
    assert_eq!(starts, ["start.json.start", "other.json.start"]);
    assert_eq!(
        shown_rules(&ir, "other"),
        ["start.json.start", "other.json.start"]
    );
    let start = shown_rules(&ir, "start");
    assert_eq!(start[0], "\"<\" start.json.start \">\"");
    assert!(start[1].starts_with("start_star_"), "{start:?}");
}

#[test]
fn inline_json_without_ignore_keeps_lark_ignore_global() {
    // No `%json`: `%ignore` stays one global ignore lexeme.
    let ir = ok("start: \"a\" \"b\"\n%ignore \" \"");
    assert_eq!(ir.lexemes.iter().filter(|l| l.ignore).count(), 1);
}

#[test]
fn inline_json_with_ignore() {
    let src = r#"start: "a" j "b"
j: %json {"type": "array", "items": {"type": "integer"}}
%ignore " "
"#;
    let ir = ok(src);
    check_invariants(&ir);
    // No global ignore lexeme: it would apply between the JSON lexemes too.
    assert!(ir.lexemes.iter().all(|l| !l.ignore));
    let ign = lexeme(&ir, "%ignore \" \"");
    let star = ir
        .nonterminals
        .iter()
        .position(|n| n.name.starts_with("ignore_star_"));
    let star = star.expect("ignore helper") as u32;
    let star_name = ir.nonterminals[star as usize].name.clone();
    assert_eq!(
        rules_of(&ir, star),
        [
            vec![],
            vec![IrSymbol::Nonterminal(star), IrSymbol::Lexeme(ign)]
        ]
    );
    // Before every Lark lexeme, and at the end of the text.
    let start_rules: Vec<String> = ir
        .rules
        .iter()
        .filter(|r| ir.nonterminals[r.lhs as usize].name == "start")
        .map(|r| show(&ir, &r.rhs))
        .collect();
    assert_eq!(
        start_rules,
        [
            format!("{star_name} \"a\" j {star_name} \"b\""),
            format!("start {star_name}"),
        ]
    );
    assert_eq!(ir.nonterminals[ir.start as usize].name, "start");
    // Before a JSON value too, as a unit.
    assert_eq!(shown_rules(&ir, "j"), [format!("{star_name} j.json.start")]);
    // JSON rules are untouched.
    for r in &ir.rules {
        let lhs = &ir.nonterminals[r.lhs as usize].name;
        if lhs.starts_with("j.json.") {
            assert!(!r.rhs.contains(&IrSymbol::Nonterminal(star)), "{lhs}");
            assert!(!r.rhs.contains(&IrSymbol::Lexeme(ign)), "{lhs}");
        }
    }
}

#[test]
fn inline_json_syntax_errors() {
    // Invalid JSON: the exact byte, in grammar coordinates.
    let e = err("start: a\na: %json {\n  \"properties\": {\"x\": }\n}\n");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert_eq!(line_col(&e), (3, 23));
    assert!(e.message.contains("invalid JSON"), "{e}");
    assert!(
        !e.message.contains("line"),
        "serde's own position is dropped: {e}"
    );
    let e = err("start: a\na: %json {\"a\": 1,}");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (2, 18))
    );
    let e = err("start: a\na: %json {\"a\": \"é\" \"b\"}");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (2, 20))
    );
    // Unterminated: at the opening brace (a brace in a string does not close it).
    let e = err("start: a\na: %json {\"a\": \"}\"");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (2, 10))
    );
    // `%json` needs an object.
    let e = err("start: %json \"x\"");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (1, 8))
    );
    let e = err("start: %json");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    // Not a statement of its own.
    let e = err("start: \"a\"\n%json {}");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (2, 1))
    );
    // Extra closing brace.
    let e = err("start: %json {}}");
    assert_eq!(
        (e.kind.clone(), line_col(&e)),
        (GrammarErrorKind::Syntax, (1, 16))
    );
}

#[test]
fn inline_json_only_in_rules() {
    for (src, at) in [
        ("start: A\nA: %json {}", (2, 4)),
        ("start: A\nA: \"x\" (%json {})?", (2, 9)),
        ("start: \"a\"\n%ignore %json {}", (2, 9)),
        ("start: a\na[lazy]: %json {}", (2, 10)),
        ("start: a\na[stop=\"x\"]: %json {}", (2, 14)),
    ] {
        let e = err(src);
        assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{src}: {e}");
        assert_eq!(line_col(&e), at, "{src}: {e}");
    }
}

#[test]
fn inline_json_compile_errors_point_into_the_schema() {
    let src = "start: a\na: %json {\n  \"type\": \"object\",\n  \"properties\": {\n    \"x\": {\"$ref\": \"https://example.com/s.json\"}\n  }\n}\n";
    let e = err(src);
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    // The span covers the value of `/properties/x`.
    assert_eq!(line_col(&e), (5, 10));
    let span = e.span.expect("span");
    assert_eq!(
        &src[span.start.offset..span.end.offset],
        "{\"$ref\": \"https://example.com/s.json\"}"
    );
    assert_eq!(e.pointer(), Some("/properties/x"), "{e}");
    assert!(e.message.starts_with("in `%json` schema: "), "{e}");
    // Limits keep their kind.
    let src = "start: a\na: %json {\"type\": \"string\", \"minLength\": 100000000}";
    let e = err(src);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    let span = e.span.expect("span");
    assert_eq!(&src[span.start.offset..span.end.offset], "100000000");
    // A pointer into an unresolvable `$ref`.
    let src = "start: a\na: %json {\"prefixItems\": [true, {\"$ref\": \"#/$defs/nope\"}]}";
    let e = err(src);
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol, "{e}");
    let span = e.span.expect("span");
    assert_eq!(
        &src[span.start.offset..span.end.offset],
        "{\"$ref\": \"#/$defs/nope\"}"
    );
    // The schema's grammar is charged against `max_grammar_size`.
    let limits = Limits {
        max_grammar_size: 40,
        ..Limits::default()
    };
    let src = "start: a\na: %json {\"type\": \"array\", \"items\": {\"type\": \"object\"}}";
    let e = err_with(src, &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    assert!(e.span.is_some());
}

#[test]
fn json_pointer_lookup() {
    use super::super::schema::value_range;
    let text = r#"{ "a": [10, {"b~/c": "x}"}, true], "a": {"d": 1}, "e\u0066": null }"#;
    let at = |p: &str| {
        let (s, e) = value_range(text, p);
        &text[s..e]
    };
    assert_eq!(at(""), text);
    assert_eq!(at("#"), text);
    // Duplicate keys: the last one wins, as in the parsed value.
    assert_eq!(at("/a"), r#"{"d": 1}"#);
    assert_eq!(at("/a/d"), "1");
    assert_eq!(at("/ef"), "null");
    // Missing parts: the deepest value that exists.
    assert_eq!(at("/a/zz/y"), r#"{"d": 1}"#);
    assert_eq!(at("/nope"), text);
    let text = r#"[10, {"b~/c": "x}"}, true]"#;
    let at = |p: &str| {
        let (s, e) = value_range(text, p);
        &text[s..e]
    };
    assert_eq!(at("/0"), "10");
    assert_eq!(at("/1/b~0~1c"), "\"x}\"");
    assert_eq!(at("/2"), "true");
    assert_eq!(at("/3"), text);
    assert_eq!(at("/x"), text);
    // Malformed text never panics.
    for bad in [
        "",
        "{",
        "[",
        "{\"a\"",
        "{\"a\":",
        "[1,",
        "\"",
        "{]",
        "}",
        "{\"a\" 1}",
    ] {
        let _ = value_range(bad, "/a/0/b");
    }
}
