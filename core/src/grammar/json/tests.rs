//! Accept/reject tests per keyword family, checked byte by byte with a matcher over a small
//! synthetic vocabulary (the same semantics as token masks).

use crate::sync::Arc;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Value, json};

use super::{CoverageStatus, JsonOptions, PropertyOrder, Whitespace};
use crate::{Grammar, GrammarErrorKind, Limits, Matcher, Vocabulary};

fn vocab() -> Arc<Vocabulary> {
    Arc::new(Vocabulary::synthetic(300, 7))
}

fn build(schema: Value, opts: &JsonOptions) -> (Grammar, super::CoverageReport) {
    Grammar::from_json_schema(&schema, opts, &vocab(), &Limits::default())
        .unwrap_or_else(|e| panic!("compile failed: {e}"))
}

fn accepts(g: &Grammar, text: &str) -> bool {
    let mut m = Matcher::new(g);
    m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
}

/// Compile with `Whitespace::Python` and check each text.
fn check(schema: Value, good: &[&str], bad: &[&str]) {
    check_with(schema, &python(), good, bad);
}

fn python() -> JsonOptions {
    JsonOptions {
        whitespace: Whitespace::Python,
        ..JsonOptions::default()
    }
}

fn check_with(schema: Value, opts: &JsonOptions, good: &[&str], bad: &[&str]) {
    let (g, report) = build(schema.clone(), opts);
    for t in good {
        assert!(
            accepts(&g, t),
            "should accept {t} for {schema} ({report:?})"
        );
    }
    for t in bad {
        assert!(!accepts(&g, t), "should reject {t} for {schema}");
    }
}

#[test]
fn types() {
    check(json!({"type": "null"}), &["null"], &["0", "\"\"", "nul"]);
    check(
        json!({"type": "boolean"}),
        &["true", "false"],
        &["null", "1"],
    );
    check(
        json!({"type": "integer"}),
        &["0", "-12", "1234567890123"],
        &["1.5", "01", "-", "\"1\""],
    );
    check(
        json!({"type": "number"}),
        &["0", "-1.25", "1e-05", "1.5e+16", "3"],
        &["1.", ".5", "+1", "01"],
    );
    check(
        json!({"type": ["string", "null"]}),
        &["\"a\"", "null", "\"\\u00e9\\n\""],
        &["1", "\"\\x\"", "\"\u{1}\""],
    );
    check(
        json!({}),
        &["{\"a\": [1, {}]}", "[]", "\"x\"", "-0.5"],
        &["{\"a\" 1}"],
    );
    check(json!(true), &["1"], &[]);
    let never =
        Grammar::from_json_schema(&json!({"not": {}}), &python(), &vocab(), &Limits::default());
    assert!(never.is_err(), "a schema accepting nothing cannot start");
    check(
        json!({"not": {"type": "string"}}),
        &["1", "null"],
        &["\"a\""],
    );
}

#[test]
fn enum_const() {
    check(
        json!({"enum": ["a", 1, null, [1, 2], {"k": true}]}),
        &["\"a\"", "1", "1.0", "null", "[1, 2]", "{\"k\": true}"],
        &["\"b\"", "2", "[1]", "{\"k\": false}"],
    );
    check(json!({"const": 2.5}), &["2.5", "2.50"], &["2.4", "25"]);
    check(
        json!({"type": "string", "enum": ["a", 1]}),
        &["\"a\""],
        &["1"],
    );
    check(json!({"const": "x\"y"}), &["\"x\\\"y\""], &["\"xy\""]);
}

#[test]
fn objects_any_order() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
        "required": ["a", "b"],
        "additionalProperties": false
    });
    check(
        s,
        &[
            "{\"a\": 1, \"b\": \"x\"}",
            "{\"b\": \"x\", \"a\": 1}",
            "{\"c\": true, \"b\": \"x\", \"a\": 1}",
        ],
        &[
            "{\"a\": 1}",
            "{\"a\": 1, \"b\": \"x\", \"d\": 1}",
            "{\"a\": \"1\", \"b\": \"x\"}",
            "{\"a\": 1, \"a\": 1}",
            "{}",
        ],
    );
}

#[test]
fn objects_schema_order() {
    let opts = JsonOptions {
        property_order: PropertyOrder::SchemaOrder,
        ..python()
    };
    let s = json!({
        "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
        "required": ["b"]
    });
    check_with(
        s,
        &opts,
        &[
            "{\"a\": 1, \"b\": \"x\"}",
            "{\"b\": \"x\"}",
            "{\"b\": \"x\", \"zz\": [1]}",
        ],
        &[
            "{\"b\": \"x\", \"a\": 1}",
            "{\"a\": 1}",
            "{\"zz\": 1, \"b\": \"x\"}",
        ],
    );
}

#[test]
fn many_required_keys_any_order() {
    let mut props = serde_json::Map::new();
    let mut req = Vec::new();
    for i in 0..14 {
        let k = alloc::format!("k{i}");
        props.insert(k.clone(), json!({"type": "integer"}));
        req.push(Value::String(k));
    }
    let s = json!({"type": "object", "properties": props, "required": req, "additionalProperties": false});
    let mut fwd = String::from("{");
    let mut rev = String::from("{");
    for i in 0..14 {
        if i > 0 {
            fwd.push_str(", ");
            rev.push_str(", ");
        }
        fwd.push_str(&alloc::format!("\"k{i}\": {i}"));
        rev.push_str(&alloc::format!("\"k{}\": {i}", 13 - i));
    }
    fwd.push('}');
    rev.push('}');
    check(s, &[&fwd, &rev], &["{\"k0\": 1}"]);
}

#[test]
fn additional_and_pattern_properties() {
    check(
        json!({
            "properties": {"id": {"type": "integer"}},
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": {"type": "boolean"}
        }),
        &["{\"id\": 1, \"x-a\": \"s\", \"other\": true}", "{}"],
        &["{\"id\": true}", "{\"x-a\": true}", "{\"other\": \"s\"}"],
    );
    check(
        json!({"propertyNames": {"pattern": "^[a-z]+$"}}),
        &["{\"abc\": 1}"],
        &["{\"aB\": 1}"],
    );
    check(
        json!({"minProperties": 1, "maxProperties": 2}),
        &["{\"a\": 1}", "{\"a\": 1, \"b\": 2}"],
        &["{}", "{\"a\": 1, \"b\": 2, \"c\": 3}"],
    );
    check(
        json!({"additionalProperties": false, "required": ["a"]}),
        &[],
        &["{\"a\": 1}", "{}"],
    );
}

#[test]
fn arrays() {
    check(
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}),
        &["[1]", "[1, 2, 3]"],
        &["[]", "[1, 2, 3, 4]", "[\"a\"]"],
    );
    check(
        json!({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}),
        &["[]", "[\"a\"]", "[\"a\", 1]"],
        &["[1]", "[\"a\", 1, 2]"],
    );
    check(
        json!({"items": [{"type": "string"}], "additionalItems": {"type": "null"}}),
        &["[\"a\", null, null]"],
        &["[\"a\", 1]"],
    );
    check(
        json!({"type": "array"}),
        &["[]", "[1, [2, [3]], {\"a\": null}]"],
        &["[1,]", "["],
    );
}

#[test]
fn strings() {
    check(
        json!({"type": "string", "minLength": 2, "maxLength": 3}),
        &["\"ab\"", "\"abc\"", "\"a\\n\"", "\"éé\""],
        &["\"a\"", "\"abcd\"", "\"\\n\""],
    );
    check(
        json!({"type": "string", "pattern": "^[a-z]+-\\d{2}$"}),
        &["\"ab-12\""],
        &["\"ab-1\"", "\"AB-12\"", "\"ab-123\""],
    );
    check(
        json!({"type": "string", "pattern": "b+"}),
        &["\"abbc\"", "\"b\""],
        &["\"ac\""],
    );
    check(
        json!({"type": "string", "pattern": "^((?:.?[0-9]+){3,}(?:[-a-z]+)?)$"}),
        &["\"6.0.1\"", "\"123\""],
        &["\"1.2\""],
    );
    check(
        json!({"type": "string", "pattern": "^[^\"]*$"}),
        &["\"a\\\\b\""],
        &["\"a\\\"b\""],
    );
}

#[test]
fn formats() {
    let f = |name: &str| json!({"type": "string", "format": name});
    check(
        f("date-time"),
        &[
            "\"2024-02-29T12:30:00Z\"",
            "\"2024-01-01T00:00:00.5+01:00\"",
        ],
        &["\"2024-13-01T00:00:00Z\"", "\"2024-01-01 00:00:00Z\""],
    );
    check(
        f("date"),
        &["\"2024-04-30\""],
        &["\"2024-04-31\"", "\"24-01-01\""],
    );
    check(f("time"), &["\"23:59:60Z\""], &["\"24:00:00Z\""]);
    check(f("email"), &["\"a.b@c.org\""], &["\"a@\"", "\"ab\""]);
    check(f("ipv4"), &["\"192.168.0.1\""], &["\"256.1.1.1\""]);
    check(f("ipv6"), &["\"::1\"", "\"fe80::1:2\""], &["\"1:::2\""]);
    check(
        f("uuid"),
        &["\"123e4567-e89b-12d3-a456-426614174000\""],
        &["\"123\""],
    );
    check(
        f("uri"),
        &["\"https://x.org/a?b#c\""],
        &["\"x y\"", "\"/rel\""],
    );
    check(f("uri-reference"), &["\"/rel\"", "\"a/b\""], &["\"://\""]);
    check(
        f("duration"),
        &["\"P1DT2H\"", "\"P3W\"", "\"PT5S\""],
        &["\"P\"", "\"PT\""],
    );
    check(f("hostname"), &["\"a-b.example.com\""], &["\"-a.com\""]);
}

#[test]
fn numbers() {
    check(
        json!({"type": "integer", "minimum": -5, "exclusiveMaximum": 10}),
        &["-5", "0", "9"],
        &["-6", "10", "100"],
    );
    check(
        json!({"type": "number", "minimum": 0.5, "maximum": 2.25}),
        &["0.5", "1", "2.25", "2.2"],
        &["0.49", "2.26", "3", "-1"],
    );
    check(
        json!({"type": "number", "exclusiveMinimum": 0}),
        &["0.001", "5", "1e+20"],
        &["0", "-1", "0.0"],
    );
    check(
        json!({"$schema": "http://json-schema.org/draft-04/schema#",
               "type": "integer", "minimum": 1, "exclusiveMinimum": true}),
        &["2"],
        &["1"],
    );
    check(
        json!({"type": "integer", "multipleOf": 5}),
        &["0", "15", "-20"],
        &["7", "21"],
    );
}

/// Drafts 3 and 4 define an integer by its spelling ("a JSON number without a fraction or
/// exponent part"); drafts 6 on by its value (`1.0` is an integer).
#[test]
fn integers_by_draft() {
    const D4: &str = "http://json-schema.org/draft-04/schema#";
    const D3: &str = "http://json-schema.org/draft-03/schema#";
    const D7: &str = "http://json-schema.org/draft-07/schema#";
    for d in [D3, D4] {
        check(
            json!({"$schema": d, "type": "integer"}),
            &["12345", "0", "-7"],
            &["12345.0", "1e2", "1.5", "1E+2", "-0.0"],
        );
        check(
            json!({"$schema": d, "type": "integer", "minimum": 1, "maximum": 500}),
            &["1", "500"],
            &["1.0", "2e2", "0", "501"],
        );
        // Not an integer (a negated number keyword admits canonical spellings only,
        // reported: `1.0` is not one).
        check(
            json!({"$schema": d, "type": "number", "not": {"type": "integer"}}),
            &["1.5", "-2.25"],
            &["1", "-3"],
        );
        // `multipleOf` judges the value in every draft.
        check(
            json!({"$schema": d, "type": "number", "multipleOf": 1}),
            &["1", "1.0", "2e1"],
            &["1.5"],
        );
        check(
            json!({"$schema": d, "type": "object", "properties": {"userId": {"type": "integer"}}}),
            &[r#"{"userId": 12345}"#],
            &[r#"{"userId": 12345.0}"#],
        );
    }
    for s in [
        json!({"$schema": D7, "type": "integer"}),
        json!({"type": "integer"}),
    ] {
        check(s, &["12345", "12345.0", "1e2"], &["1.5"]);
    }
    check(
        json!({"type": "number", "multipleOf": 0.01}),
        &["1.25", "3", "0.1"],
        &["0.125"],
    );
}

#[test]
fn combinators() {
    check(
        json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 3}]}),
        &["\"a\"", "3"],
        &["2", "null"],
    );
    check(
        json!({"type": "object", "required": ["a"],
               "oneOf": [{"properties": {"a": {"const": 1}}}, {"properties": {"a": {"const": 2}, "b": {"type": "string"}}, "required": ["b"]}]}),
        &["{\"a\": 1}", "{\"a\": 2, \"b\": \"x\"}"],
        &["{\"a\": 3}", "{\"a\": 2}"],
    );
    check(
        json!({"allOf": [
            {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"], "additionalProperties": false}
        ]}),
        &[],
        &["{\"a\": 1, \"b\": \"x\"}", "{\"b\": \"x\"}"],
    );
    check(
        json!({"allOf": [{"type": "integer"}, {"minimum": 2}, {"maximum": 4}]}),
        &["2", "4"],
        &["1", "5", "2.5"],
    );
}

#[test]
fn refs_and_recursion() {
    let s = json!({
        "$defs": {"node": {"type": "object", "properties": {
            "v": {"type": "integer"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}
        }, "required": ["v"], "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    check(
        s,
        &[
            "{\"v\": 1}",
            "{\"v\": 1, \"kids\": [{\"v\": 2, \"kids\": [{\"v\": 3}]}]}",
        ],
        &["{\"v\": 1, \"kids\": [{}]}"],
    );
    check(
        json!({"definitions": {"a~b/c d": {"type": "null"}}, "$ref": "#/definitions/a~0b~1c%20d"}),
        &["null"],
        &["1"],
    );
    check(
        json!({"$id": "http://x.org/root.json", "$defs": {"s": {"$anchor": "str", "type": "string"}},
               "properties": {"a": {"$ref": "#str"}, "b": {"$ref": "root.json#/$defs/s"}}}),
        &["{\"a\": \"x\", \"b\": \"y\"}"],
        &["{\"a\": 1}", "{\"b\": 1}"],
    );
    check(
        json!({"definitions": {"list": {"type": "array", "items": {"allOf": [{"$ref": "#/definitions/list"}]}}},
               "$ref": "#/definitions/list"}),
        &["[[], [[]]]"],
        &["[1]"],
    );
}

#[test]
fn whitespace_modes() {
    let s = json!({"type": "object", "properties": {"a": {"type": "array"}}});
    let compact = JsonOptions {
        whitespace: Whitespace::Compact,
        ..JsonOptions::default()
    };
    check_with(
        s.clone(),
        &compact,
        &["{\"a\":[1,2]}"],
        &["{\"a\": [1, 2]}"],
    );
    check_with(
        s.clone(),
        &python(),
        &["{\"a\": [1, 2]}"],
        &["{\"a\":[1,2]}", "{ \"a\": []}"],
    );
    let flex = JsonOptions {
        whitespace: Whitespace::Flexible { max: 2 },
        ..JsonOptions::default()
    };
    check_with(
        s,
        &flex,
        &[
            "{\"a\":[1,2]}",
            "{\"a\": [1, 2]}",
            "{\n \"a\" : [ 1 ,2 ]\n}",
        ],
        &["{\"a\":   [1]}", " {\"a\": []}"],
    );
}

#[test]
fn report_and_strict() {
    let s = json!({"type": "array", "uniqueItems": true, "x-custom": 1});
    let (_, report) = build(s.clone(), &python());
    assert!(report.entries.iter().any(|e| e.keyword == "uniqueItems"
        && e.status == CoverageStatus::Unsupported
        && e.pointer.is_empty()));
    assert!(
        report
            .entries
            .iter()
            .any(|e| e.keyword == "x-custom" && e.status == CoverageStatus::Unknown)
    );
    let strict = JsonOptions {
        strict: true,
        ..python()
    };
    let err = Grammar::from_json_schema(&s, &strict, &vocab(), &Limits::default()).unwrap_err();
    assert_eq!(err.kind, GrammarErrorKind::Unsupported);
    assert_eq!(err.pointer(), Some("/uniqueItems"), "{err}");
    assert!(err.to_string().contains("uniqueItems"), "{err}");
    // A `not` this compiler cannot push down is reported (ignored: a superset).
    let s = json!({"properties": {"p": {"not": {"uniqueItems": true}}}});
    let (_, report) = build(s, &python());
    assert!(
        report
            .entries
            .iter()
            .any(|e| e.pointer == "/properties/p" && e.keyword == "not"),
        "{report:?}"
    );
}

#[test]
fn rewritten_keywords_are_exact() {
    let strict = JsonOptions {
        strict: true,
        ..python()
    };
    // Exact over values: strict mode compiles it. Numbers keep their spellings with small
    // exponents only (`numeric::spelling_losses`): such a schema reports spelling entries
    // (never value approximations), which strict mode accepts.
    let exact = |s: Value, good: &[&str], bad: &[&str]| {
        let (_, report) = Grammar::from_json_schema(&s, &strict, &vocab(), &Limits::default())
            .unwrap_or_else(|e| panic!("{s}: {e}"));
        assert!(
            report.entries.iter().all(|e| matches!(
                e.status,
                CoverageStatus::Unknown | CoverageStatus::Spelling { .. }
            )),
            "{s}: {report:?}"
        );
        check_with(s, &strict, good, bad);
    };
    // Overlapping `oneOf`: exactly one branch.
    exact(
        json!({"oneOf": [{"type": "string"}, {"minLength": 2}]}),
        &["\"a\"", "5", "null"],
        &["\"ab\""],
    );
    // `not` pushed down to each keyword's type.
    exact(
        json!({"not": {"type": "integer", "minimum": 3}}),
        &["2", "1.5", "\"x\"", "-7"],
        &["3", "10"],
    );
    exact(
        json!({"not": {"enum": ["a", 1, null]}}),
        &["\"b\"", "2", "true", "[]"],
        &["\"a\"", "1", "null"],
    );
    exact(
        json!({"type": "string", "not": {"pattern": "^a"}}),
        &["\"ba\"", "\"\""],
        &["\"a\"", "\"abc\""],
    );
    exact(
        json!({"type": "object", "not": {"required": ["a"]}}),
        &["{}", "{\"b\": 1}"],
        &["{\"a\": 1}"],
    );
    exact(
        json!({"type": "array", "not": {"items": {"type": "integer"}}}),
        &["[1, \"x\"]", "[null]"],
        &["[]", "[1, 2]"],
    );
    // if / then / else.
    exact(
        json!({"if": {"minimum": 10}, "then": {"multipleOf": 2}, "else": {"maximum": 0}}),
        &["12", "-3", "\"s\""],
        &["11", "5"],
    );
    // Dependencies.
    exact(
        json!({"type": "object", "dependentRequired": {"a": ["b"]}}),
        &["{}", "{\"b\": 1}", "{\"a\": 1, \"b\": 2}"],
        &["{\"a\": 1}"],
    );
    exact(
        json!({"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}),
        &["{\"b\": 1}", "{\"a\": 1, \"b\": \"x\"}"],
        &["{\"a\": 1, \"b\": 2}"],
    );
    // contains / minContains / maxContains.
    exact(
        json!({"contains": {"type": "string"}, "minContains": 2, "maxContains": 3}),
        &["[\"a\", 1, \"b\"]", "[\"a\", \"b\", \"c\"]", "7"],
        &["[]", "[\"a\", 1]", "[\"a\", \"b\", \"c\", \"d\"]"],
    );
    exact(
        json!({"type": "array", "contains": {"const": 1}}),
        &["[1]", "[2, 1, 3]", "[2, 3, 4, 1]"],
        &["[]", "[2]", "[2, 3, 4, 5]"],
    );
    // `enum` values are checked against the other keywords.
    exact(
        json!({"enum": ["a", "bb", 1, 5], "minLength": 2, "minimum": 2}),
        &["\"bb\"", "5"],
        &["\"a\"", "1"],
    );
    // Key order of `const` objects is free.
    exact(
        json!({"const": {"a": 1, "b": 2}}),
        &["{\"a\": 1, \"b\": 2}", "{\"b\": 2, \"a\": 1}"],
        &["{\"a\": 1}", "{\"a\": 1, \"b\": 2, \"c\": 3}"],
    );
    // Draft 4 has no `if`: it is an unknown keyword there.
    check(
        json!({"$schema": "http://json-schema.org/draft-04/schema#",
               "if": {"type": "string"}, "then": {"maxLength": 1}}),
        &["\"abc\""],
        &[],
    );
    // A negated `$ref` merged with siblings keeps them (draft 4 resolves refs alone).
    exact(
        json!({"$schema": "http://json-schema.org/draft-04/schema#",
               "definitions": {"car": {"properties": {"t": {"enum": ["car"]}}},
                               "props": {"properties": {"y": {"minimum": 0}}}},
               "oneOf": [{"not": {"$ref": "#/definitions/car"}},
                         {"allOf": [{"$ref": "#/definitions/car"},
                                    {"$ref": "#/definitions/props"}]}]}),
        &["{\"t\": \"car\", \"y\": 1}", "{\"t\": \"bus\", \"y\": -1}"],
        &["{\"t\": \"car\", \"y\": -1}"],
    );
    // Counts written as floats.
    exact(json!({"maxLength": 2.0}), &["\"ab\""], &["\"abc\""]);
}

#[test]
fn hostile_schemas() {
    let limits = Limits::default();
    let err = Grammar::from_json_schema(
        &json!({"minLength": 1_000_000_000}),
        &python(),
        &vocab(),
        &limits,
    )
    .unwrap_err();
    assert!(matches!(err.kind, GrammarErrorKind::Limit(_)), "{err}");
    let err = Grammar::from_json_schema(
        &json!({"type": "array", "minItems": 1_000_000_000u64}),
        &python(),
        &vocab(),
        &limits,
    )
    .unwrap_err();
    assert!(matches!(err.kind, GrammarErrorKind::Limit(_)), "{err}");
    // Long $ref chain.
    let mut defs = serde_json::Map::new();
    for i in 0..5000 {
        defs.insert(
            alloc::format!("d{i}"),
            json!({"$ref": alloc::format!("#/$defs/d{}", i + 1)}),
        );
    }
    defs.insert("d5000".into(), json!({"type": "null"}));
    let s = json!({"$defs": defs, "$ref": "#/$defs/d0"});
    let (g, _) = build(s, &python());
    assert!(accepts(&g, "null"));
    // A self-referencing allOf is bounded.
    let s = json!({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}], "type": "object"}}, "$ref": "#/$defs/a"});
    let _ = Grammar::from_json_schema(&s, &python(), &vocab(), &limits);
    // A big enum is compiled or refused, not hung.
    let values: Vec<Value> = (0..20_000)
        .map(|i| Value::String(alloc::format!("v{i}")))
        .collect();
    let small = Limits {
        max_grammar_size: 10_000,
        ..Limits::default()
    };
    let r = Grammar::from_json_schema(&json!({"enum": values}), &python(), &vocab(), &small);
    assert!(r.is_err());
    // Deep nesting is refused at `max_nesting_depth`. The compiler recurses natively up
    // to that depth; unoptimized builds use about 20 KiB of stack per level, more than a
    // test thread's default 2 MiB at depth 200, so this part runs on a larger stack.
    let deep = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(|| {
            let mut s = json!({"type": "null"});
            for _ in 0..1000 {
                s = json!({"items": s});
            }
            Grammar::from_json_schema(&s, &python(), &vocab(), &Limits::default()).unwrap_err()
        })
        .expect("spawn")
        .join()
        .expect("join");
    assert!(matches!(deep.kind, GrammarErrorKind::Limit(_)), "{deep}");
}

#[test]
fn schema_text_errors() {
    let err = Grammar::from_json_schema_str(
        "{\n  \"type\": ,\n}",
        &python(),
        &vocab(),
        &Limits::default(),
    )
    .unwrap_err();
    assert_eq!(err.kind, GrammarErrorKind::Syntax);
    let span = err.span.unwrap();
    assert_eq!(span.start.line, 2);
}

/// The report's entries for `keyword` at the root, as (direction) list.
fn directions(report: &super::CoverageReport, keyword: &str) -> Vec<super::Direction> {
    report
        .entries
        .iter()
        .filter(|e| e.pointer.is_empty() && e.keyword == keyword)
        .filter_map(|e| match &e.status {
            CoverageStatus::Approximated { direction, .. } => Some(*direction),
            CoverageStatus::Spelling { .. } => Some(super::Direction::Subset),
            _ => None,
        })
        .collect()
}

/// The directions of `keyword`'s entries wherever they are located, each direction once
/// (a merged keyword is reported at every place it is written: `compiler/locate.rs`).
fn directions_anywhere(report: &super::CoverageReport, keyword: &str) -> Vec<super::Direction> {
    let mut out: Vec<super::Direction> = Vec::new();
    for e in report.entries.iter().filter(|e| e.keyword == keyword) {
        let d = match &e.status {
            CoverageStatus::Approximated { direction, .. } => *direction,
            CoverageStatus::Spelling { .. } => super::Direction::Subset,
            _ => continue,
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

#[test]
fn relative_ids_apply_once_on_every_path() {
    // A resource with a relative `$id`, reached by its URI and by a pointer through it: the
    // reference inside resolves against that `$id` once (`sub/` + `int.json`), never twice
    // (`sub/sub/int.json`) and never by the file name alone.
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    let opts = JsonOptions {
        documents: alloc::vec![
            ("http://h/other/int.json".to_string(), string),
            ("http://h/sub/int.json".to_string(), int),
        ],
        ..python()
    };
    for r in ["sub/", "#/$defs/a", "#/$defs/a/$defs/b"] {
        let s = json!({"$id": "http://h/root.json", "properties": {"x": {"$ref": r}},
                       "$defs": {"a": {"$id": "sub/", "items": {"$ref": "int.json"},
                                       "$defs": {"b": {"items": {"$ref": "int.json"}}}}}});
        check_with(s, &opts, &["{\"x\": [1]}"], &["{\"x\": [\"a\"]}"]);
    }
    // A document is found by the URI it was given under, whatever its own `$id` says.
    let opts = JsonOptions {
        documents: alloc::vec![(
            "http://h/given.json".to_string(),
            json!({"$id": "http://h/elsewhere.json", "type": "string"})
        )],
        ..python()
    };
    check_with(
        json!({"$ref": "http://h/given.json"}),
        &opts,
        &["\"a\""],
        &["1"],
    );
}

#[test]
fn refs_of_a_merged_resource_keep_its_base() {
    // `$ref` with siblings merges its target into the referring schema; a reference inside
    // the target still resolves against the target's own `$id`: `#` here is the array
    // schema (extra items allowed), not the root (`unevaluatedItems: false`). From the
    // JSON-Schema-Test-Suite (draft2019-09 ref.json, "extra items allowed for inner arrays").
    let s = json!({"$id": "https://example.com/schemas/root", "$ref": "/schemas/allowed",
                   "unevaluatedItems": false,
                   "$defs": {"x": {"$id": "/schemas/allowed", "type": "array",
                                   "prefixItems": [{"type": "string"}, {"$ref": "#"}]}}});
    check(
        s.clone(),
        &[
            "[\"foo\", [\"bar\", [], 8]]",
            "[\"a\"]",
            "[\"a\", [\"b\", [\"c\"], 2]]",
        ],
        &["[\"foo\", [\"bar\"], 8]", "[1]"],
    );
    // Draft 7: the target replaces the schema; `#/definitions/...` inside it is its own.
    let s = json!({"$schema": "http://json-schema.org/draft-07/schema#",
                   "$id": "http://h/root.json",
                   "properties": {"x": {"$ref": "other.json"}},
                   "definitions": {"o": {"$id": "other.json",
                                         "definitions": {"n": {"type": "integer"}},
                                         "items": {"$ref": "#/definitions/n"}},
                                   "n": {"type": "string"}}});
    check(s, &["{\"x\": [1]}"], &["{\"x\": [\"a\"]}"]);
}

#[test]
fn unevaluated_beside_an_ignored_dynamic_ref_is_ignored_too() {
    // `$dynamicRef` is not compiled; the items it evaluates are unknown, so
    // `unevaluatedItems: false` beside it must not reject them (suite: draft2020-12
    // unevaluatedItems.json, "unevaluatedItems with $dynamicRef"). A superset, reported
    // where the keyword is written.
    let s = json!({"$id": "https://h/derived", "$ref": "./base",
                   "$defs": {"derived": {"$dynamicAnchor": "addons",
                                         "prefixItems": [true, {"type": "string"}]},
                             "base": {"$id": "./base", "unevaluatedItems": false,
                                      "type": "array", "prefixItems": [{"type": "string"}],
                                      "$dynamicRef": "#addons",
                                      "$defs": {"d": {"$dynamicAnchor": "addons"}}}}});
    let (g, report) = build(s, &python());
    assert!(accepts(&g, "[\"foo\", \"bar\"]"));
    assert!(!accepts(&g, "{}"));
    assert!(
        report.entries.iter().any(|e| e.pointer == "/$defs/base"
            && e.keyword == "unevaluatedItems"
            && matches!(
                e.status,
                CoverageStatus::Approximated {
                    direction: super::Direction::Superset,
                    ..
                }
            )),
        "{report:?}"
    );
}

#[test]
fn a_metaschema_of_its_own_is_reported() {
    // Its vocabularies may be off (then `minimum` applies to nothing) or on: both directions.
    let s = json!({"$schema": "http://h/meta.json", "minimum": 10});
    let (_, report) = build(s.clone(), &python());
    let d = directions(&report, "$schema");
    assert!(d.contains(&super::Direction::Subset), "{report:?}");
    assert!(d.contains(&super::Direction::Superset), "{report:?}");
    let strict = JsonOptions {
        strict: true,
        ..python()
    };
    let e = Grammar::from_json_schema(&s, &strict, &vocab(), &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("$schema"), "{e}");
    for known in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        strict_exact(&json!({"$schema": known, "type": "string", "maxLength": 3}));
    }
}

/// Strict mode compiles `s` with an exact report.
fn strict_exact(s: &Value) -> Grammar {
    let strict = JsonOptions {
        strict: true,
        ..python()
    };
    let (g, r) = Grammar::from_json_schema(s, &strict, &vocab(), &Limits::default())
        .unwrap_or_else(|e| panic!("{s}: {e}"));
    assert!(r.is_exact(), "{s}: {r:?}");
    g
}

#[test]
fn integer_spellings() {
    use super::Direction::Subset;
    let s = json!({"type": "integer"});
    let (g, r) = build(s, &python());
    for t in [
        "1", "1.0", "1.00", "1e0", "1E+2", "10e-1", "0.1e1", "-0", "1.5e1", "-0.0e-7", "2.50e1",
        "12e+012", "100E-2", "0e99", "7.000e0",
    ] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in ["1.5", "1e-1", "0.15e1", "1.05e1", "1.1", "15e-1"] {
        assert!(!accepts(&g, t), "{t}");
    }
    // `1.0000000000001e20` is an integer the regex cannot reach: reported.
    assert!(!accepts(&g, "1.0000000000001e20"));
    assert_eq!(directions(&r, "type"), [Subset]);
}

#[test]
fn bounded_number_spellings() {
    use super::Direction::Subset;
    let (g, r) = build(json!({"maximum": 1000}), &python());
    // Plain notation in every spelling; exponent notation where a whole sign class is in
    // range (every negative, zero).
    for t in [
        "1000.0", "999.50", "-0", "-5e10", "-1e300", "0e500", "-0.0E1",
    ] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in ["1.1e3", "2e3", "1000.5", "10001e-1", "0.5e4"] {
        assert!(!accepts(&g, t), "{t}");
    }
    // A positive in exponent notation is valid but rejected: reported
    // (`numeric::BOUND_EXP_CASES`).
    for t in ["1e2", "1E3", "0.5e3", "10000e-1"] {
        assert!(!accepts(&g, t), "{t}");
    }
    assert_eq!(directions(&r, "maximum"), [Subset]);
    // Bounds at zero split the sign classes: every spelling, exact.
    let g = strict_exact(&json!({"minimum": 0}));
    for t in ["1e400", "5e7", "-0e3", "0e-2", "0.0", "-0"] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in ["-1e-9", "-0.5"] {
        assert!(!accepts(&g, t), "{t}");
    }
    let g = strict_exact(&json!({"exclusiveMinimum": 0, "type": "number"}));
    assert!(!accepts(&g, "0e5") && !accepts(&g, "-0.0E1") && accepts(&g, "1e-300"));
    // `const`/`enum` numbers: every spelling with a small exponent.
    let (g, r) = build(json!({"const": 2}), &python());
    for t in ["2", "2.0", "2e0", "0.2e1", "20e-1", "200E-2", "0.0002e+4"] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in ["2.1", "3e0", "2e1"] {
        assert!(!accepts(&g, t), "{t}");
    }
    assert_eq!(directions(&r, "const"), [Subset]);
    let g = strict_exact(&json!({"enum": [0, "a"]}));
    assert!(accepts(&g, "0e9") && accepts(&g, "-0.0E-3") && accepts(&g, "\"\\u0061\""));
}

#[test]
fn string_spellings() {
    let g = strict_exact(&json!({"type": "string", "pattern": "^a+$"}));
    for t in [r#""\u0061a""#, r#""a\u0061""#, r#""aa""#] {
        assert!(accepts(&g, t), "{t}");
    }
    for t in [r#""\u0062""#, r#""\u0041""#, r#""""#] {
        assert!(!accepts(&g, t), "{t}");
    }
    let g = strict_exact(&json!({"type": "string", "pattern": "^/\\d\"é😀$"}));
    for t in [
        r#""/1\"é😀""#,
        r#""\/\u0031\u0022\u00e9\ud83d\ude00""#,
        r#""\u002F1\"\u00E9\uD83D\uDE00""#,
    ] {
        assert!(accepts(&g, t), "{t}");
    }
    assert!(!accepts(&g, r#""/1\"e😀""#));
    let g = strict_exact(&json!({"type": "string", "pattern": "^[^a]$"}));
    for t in [r#""\u0062""#, r#""\n""#, r#""\u000A""#, r#""\ud800\udc00""#] {
        assert!(accepts(&g, t), "{t}");
    }
    assert!(!accepts(&g, r#""\u0061""#) && !accepts(&g, r#""a""#));
    // `enum`/`const` strings and literal keys.
    let g = strict_exact(&json!({"enum": ["a\"b", "\n"]}));
    for t in [r#""a\"b""#, r#""\u0061\u0022b""#, r#""\u000a""#, r#""\n""#] {
        assert!(accepts(&g, t), "{t}");
    }
    let g = strict_exact(
        &json!({"type": "object", "properties": {"a": {"type": "string"}},
                "additionalProperties": false}),
    );
    assert!(accepts(&g, r#"{"\u0061": "x"}"#));
    assert!(!accepts(&g, r#"{"\u0061": null}"#));
    // Negated string keywords are complemented over every spelling.
    let g = strict_exact(&json!({"type": "string", "not": {"pattern": "^a"}}));
    assert!(!accepts(&g, r#""\u0061""#) && accepts(&g, r#""\u0062""#));
    // Formats.
    let g = strict_exact(&json!({"type": "string", "format": "ipv4"}));
    assert!(accepts(&g, r#""1.2.3.\u0034""#) && !accepts(&g, r#""1.2.3.\u0041""#));
}

#[test]
fn an_all_of_of_contains_conditions_is_exact() {
    // Suite `unevaluatedItems.json` #22: both `contains` evaluate their items (the valid
    // `[2,3,4,5,6]` was rejected when the second condition was dropped).
    let s = json!({"allOf": [{"contains": {"multipleOf": 2}}, {"contains": {"multipleOf": 3}}],
                   "unevaluatedItems": {"multipleOf": 5}});
    let (g, r) = build(s, &python());
    assert!(
        directions_anywhere(&r, "contains").is_empty()
            && directions_anywhere(&r, "allOf").is_empty()
    );
    assert!(accepts(&g, "[2, 3, 4, 5, 6]"));
    let s = json!({"allOf": [{"contains": {"minimum": 5}}, {"contains": {"maximum": 1}}],
                   "unevaluatedItems": {"const": 3}});
    let (g, r) = build(s, &python());
    assert!(
        directions_anywhere(&r, "contains").is_empty()
            && directions_anywhere(&r, "allOf").is_empty()
    );
    assert!(accepts(&g, "[0, 3, 6]") && accepts(&g, "[6, 0]") && accepts(&g, "[1, 5, 3, 3]"));
    assert!(!accepts(&g, "[0, 4, 6]") && !accepts(&g, "[0, 3]") && !accepts(&g, "[6, 3]"));
    // Past what one automaton holds, the first conditions are enforced and the rest
    // reported as a superset (at each member's `contains`: merged, they are one keyword).
    let five: Vec<Value> = (1..=5).map(|i| json!({"contains": {"const": i}})).collect();
    let (g, r) = build(json!({"type": "array", "allOf": five}), &python());
    assert_eq!(
        directions_anywhere(&r, "contains"),
        [super::Direction::Superset]
    );
    assert!(accepts(&g, "[1, 2, 3, 4]") && !accepts(&g, "[1, 2, 3]"));
    let wide = json!({"type": "array", "allOf": [
        {"contains": {"const": 1}, "maxContains": 40},
        {"contains": {"const": 2}, "maxContains": 40}]});
    let (g, r) = build(wide, &python());
    assert_eq!(
        directions_anywhere(&r, "contains"),
        [super::Direction::Superset]
    );
    assert!(accepts(&g, "[1]") && !accepts(&g, "[2]"));
    // Every array of up to five items of eight strings, against the conditions evaluated
    // here directly (counts of matching items, separate from the compiler's automaton).
    // Each condition is a set of the strings, given as a bit mask.
    let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let set = |bits: u8| -> Value {
        Value::Array(
            (0..8)
                .filter(|i| bits & (1 << i) != 0)
                .map(|i| Value::from(names[i]))
                .collect(),
        )
    };
    // (condition, minContains, maxContains) twice, and maxItems.
    type Cond = (u8, u64, Option<u64>);
    let cases: [(Cond, Cond, Option<u64>); 5] = [
        ((0b0101_0101, 1, None), (0b0100_1001, 1, None), None),
        ((0b0101_0101, 1, Some(2)), (0b1110_0000, 2, None), None),
        ((0b1111_1000, 2, Some(3)), (0b0001_1111, 0, Some(1)), None),
        ((0b0000_0010, 2, None), (0b0000_0010, 1, Some(2)), Some(4)),
        (
            (0b0000_0011, 1, Some(1)),
            (0b0000_0110, 1, Some(1)),
            Some(3),
        ),
    ];
    for ((pb, pmin, pmax), (qb, qmin, qmax), max_items) in cases {
        let cond = |bits: u8, lo: u64, hi: Option<u64>| {
            let mut m = json!({"contains": {"enum": set(bits)}, "minContains": lo});
            if let Some(h) = hi {
                m["maxContains"] = h.into();
            }
            m
        };
        let mut schema = json!({"type": "array",
                                "allOf": [cond(pb, pmin, pmax), cond(qb, qmin, qmax)]});
        if let Some(n) = max_items {
            schema["maxItems"] = n.into();
        }
        let g = strict_exact(&schema);
        // The negation: each condition fails on its own.
        let negated = json!({"type": "array", "not": {"allOf": schema["allOf"].clone()}});
        let ng = strict_exact(&negated);
        let holds = |n: u64, lo: u64, hi: Option<u64>| n >= lo && hi.is_none_or(|h| n <= h);
        for len in 0..=5u32 {
            for code in 0..8usize.pow(len) {
                let items: Vec<usize> = (0..len).map(|i| code / 8usize.pow(i) % 8).collect();
                let count = |bits: u8| items.iter().filter(|&&x| bits & (1 << x) != 0).count();
                let want = holds(count(pb) as u64, pmin, pmax)
                    && holds(count(qb) as u64, qmin, qmax)
                    && max_items.is_none_or(|n| items.len() as u64 <= n);
                let text: Vec<&str> = items.iter().map(|&i| names[i]).collect();
                let text = alloc::format!("{text:?}");
                assert_eq!(accepts(&g, &text), want, "{schema} on {text}");
                let conds =
                    holds(count(pb) as u64, pmin, pmax) && holds(count(qb) as u64, qmin, qmax);
                assert_eq!(accepts(&ng, &text), !conds, "{negated} on {text}");
            }
        }
    }
}

/// `enum` strings are one prefix-sharing tree (`ecma::quoted_set_spellings`): for random
/// sets of strings that are prefixes of each other and random JSON spellings of members,
/// near misses and extensions, the grammar accepts a text iff `serde_json` decodes it to a
/// member (an oracle independent of the spelling code).
#[test]
fn enum_string_sets_match_a_json_decoder() {
    let mut state = 0x5eed_u64;
    let mut next = move |n: usize| {
        // SplitMix64.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) % n as u64) as usize
    };
    let alphabet = ['a', 'b', '"', '\\', '\n', '/', 'é', '😀', '\u{1}'];
    let spell = |c: char, pick: usize| -> String {
        let mut ways: Vec<String> = Vec::new();
        if !(c < ' ' || c == '"' || c == '\\') {
            ways.push(c.to_string());
        }
        match c {
            '"' => ways.push("\\\"".into()),
            '\\' => ways.push("\\\\".into()),
            '/' => ways.push("\\/".into()),
            '\n' => ways.push("\\n".into()),
            _ => {}
        }
        let mut units = [0u16; 2];
        let mut u = String::new();
        for unit in c.encode_utf16(&mut units) {
            u.push_str(&alloc::format!("\\u{unit:04x}"));
        }
        ways.push(u.to_uppercase().replace("\\U", "\\u"));
        ways.push(u);
        ways[pick % ways.len()].clone()
    };
    let (mut yes, mut no) = (0, 0);
    for round in 0..12 {
        let mut members: Vec<String> = Vec::new();
        for _ in 0..1 + next(6) {
            let base = members
                .get(next(members.len() + 1))
                .cloned()
                .unwrap_or_default();
            let keep = next(base.chars().count() + 1);
            let mut s: String = base.chars().take(keep).collect();
            for _ in 0..next(4) {
                s.push(alphabet[next(alphabet.len())]);
            }
            members.push(s);
        }
        let (g, _) = build(json!({ "enum": members }), &JsonOptions::default());
        for _ in 0..60 {
            let mut target: String = members[next(members.len())].clone();
            match next(4) {
                0 => {
                    target.pop();
                }
                1 => target.push(alphabet[next(alphabet.len())]),
                _ => {}
            }
            let text: String = core::iter::once("\"".to_string())
                .chain(target.chars().map(|c| spell(c, next(4))))
                .chain(core::iter::once("\"".to_string()))
                .collect();
            let decoded: String =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let want = members.contains(&decoded);
            assert_eq!(
                accepts(&g, &text),
                want,
                "round {round}: {text} for {members:?}"
            );
            if want { yes += 1 } else { no += 1 }
        }
    }
    assert!(yes > 100 && no > 100, "{yes} members, {no} non-members");
}

#[test]
fn property_names_through_a_ref_are_exact() {
    // `propertyNames` naming an enum through `$ref` (MaskBench Github_medium---o90904):
    // the keys are the enum's, exactly, where only string keywords were followed before.
    let s = json!({"$defs": {"dir": {"enum": ["N", "S"]}, "alias": {"$ref": "#/$defs/dir"}},
                   "type": "object", "propertyNames": {"$ref": "#/$defs/alias"}});
    let g = strict_exact(&s);
    assert!(accepts(&g, "{\"N\": 1, \"S\": 2}"));
    assert!(!accepts(&g, "{\"W\": 1}"));
    assert!(!accepts(&g, "{\"NS\": 1}"));
}

mod options;
