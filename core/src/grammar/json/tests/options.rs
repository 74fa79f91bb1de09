//! JSON options: whitespace, separators, LLGuidance's defaults and `x-guidance`, `oneOf` coercion, and any-order objects (no repeated keys).

use super::*;

fn ws(whitespace: Whitespace) -> JsonOptions {
    JsonOptions {
        whitespace,
        ..JsonOptions::default()
    }
}

#[test]
fn whitespace_pretty_is_the_default() {
    assert_eq!(JsonOptions::default().whitespace, Whitespace::DEFAULT);
    assert_eq!(Whitespace::DEFAULT, Whitespace::Pretty { max_indent: 64 });
    let s = json!({"type": "object", "properties": {"a": {"type": "integer"},
                   "b": {"type": "array", "items": {"type": "object"}}}});
    let deep = alloc::format!("{{\n{}\"a\": 1\n}}", " ".repeat(64));
    let too_deep = alloc::format!("{{\n{}\"a\": 1\n}}", " ".repeat(65));
    check_with(
        s.clone(),
        &JsonOptions::default(),
        &[
            "{\"a\":1,\"b\":[]}",
            "{\"a\": 1, \"b\": [{}, {\"x\": 2}]}",
            // json.dumps(indent=2)
            "{\n  \"a\": 1,\n  \"b\": [\n    {},\n    {\n      \"x\": 2\n    }\n  ]\n}",
            // indent=4, CRLF, tabs
            "{\r\n    \"a\": 1,\r\n    \"b\": []\r\n}",
            "{\n\t\"a\": 1,\n\t\"b\": [\n\t\t{}\n\t]\n}",
            "{ \"a\" : 1 }",
            &deep,
        ],
        &[
            &too_deep,
            "{\"a\":   1}",
            "{\n\n  \"a\": 1}",
            "{\n  \n  \"a\": 1}",
            "\n{\"a\": 1}",
            "{\"a\": 1}\n",
        ],
    );
    check_with(
        s,
        &ws(Whitespace::Pretty { max_indent: 2 }),
        &["{\n  \"a\": 1\n}"],
        &["{\n   \"a\": 1\n}"],
    );
}

#[test]
fn whitespace_unbounded_and_pattern() {
    let s = json!({"type": "array", "items": {"type": "integer"}});
    let long = alloc::format!("[{}1,\n\n\r\t2{}]", " ".repeat(300), "\n".repeat(100));
    check_with(
        s.clone(),
        &ws(Whitespace::Unbounded),
        &["[1,2]", "[ 1 , 2 ]", &long],
        &[" [1]", "[1] ", "[1 2]"],
    );
    // At most one match of the pattern per gap.
    let p = ws(Whitespace::Pattern(String::from(" ")));
    check_with(
        s.clone(),
        &p,
        &["[1,2]", "[ 1 , 2 ]", "[1, 2]"],
        &["[  1]", "[1,\n2]"],
    );
    let p = ws(Whitespace::Pattern(String::from("\n *")));
    check_with(s.clone(), &p, &["[\n  1,\n  2\n]"], &["[ 1]"]);
    let bad = ws(Whitespace::Pattern(String::from("(")));
    let e = Grammar::from_json_schema(&s, &bad, &vocab(), &Limits::default()).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::InvalidRegex);
    assert!(e.message.contains("whitespace_pattern"), "{e}");
}

#[test]
fn separators() {
    let s = json!({"type": "object", "properties": {"a": {"type": "array"}}});
    let opts = JsonOptions {
        whitespace: Whitespace::Compact,
        item_separator: String::from(", "),
        key_separator: String::from(": "),
        ..JsonOptions::default()
    };
    check_with(
        s.clone(),
        &opts,
        &["{\"a\": [1, 2]}"],
        &["{\"a\":[1,2]}", "{\"a\" : [1, 2]}", "{\"a\": [1,  2]}"],
    );
    // Regexes, surrounded by the whitespace gaps.
    let opts = JsonOptions {
        whitespace: Whitespace::Flexible { max: 1 },
        item_separator: String::from("[,;]"),
        ..JsonOptions::default()
    };
    check_with(s, &opts, &["{\"a\": [1; 2 ,3]}"], &["{\"a\": [1. 2]}"]);
}

#[test]
fn llguidance_defaults() {
    let o = JsonOptions::llguidance();
    assert_eq!(o.whitespace, Whitespace::Unbounded);
    assert_eq!(o.property_order, PropertyOrder::SchemaOrder);
    assert_eq!(
        (o.item_separator.as_str(), o.key_separator.as_str()),
        (",", ":")
    );
    assert!(o.assert_formats && !o.coerce_one_of && !o.strict);
    let s = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                   "required": ["a", "b"]});
    check_with(
        s,
        &o,
        &["{\"a\":1,\"b\":2}", "{\n      \"a\" :  1,\n\n \"b\":2}"],
        &["{\"b\":2,\"a\":1}"],
    );
}

fn xg(options: Value) -> Result<JsonOptions, crate::GrammarError> {
    let mut o = JsonOptions::default();
    o.apply_x_guidance(&json!({"x-guidance": options, "type": "integer"}))?;
    Ok(o)
}

#[test]
fn x_guidance_options() {
    let d = JsonOptions::default();
    assert_eq!(xg(json!({})).unwrap(), d);
    let mut none = d.clone();
    none.apply_x_guidance(&json!({"type": "integer"})).unwrap();
    assert_eq!(none, d);
    assert_eq!(
        xg(json!({"whitespace_flexible": true})).unwrap().whitespace,
        Whitespace::Unbounded
    );
    assert_eq!(
        xg(json!({"whitespace_flexible": false}))
            .unwrap()
            .whitespace,
        Whitespace::Compact
    );
    // The pattern overrides `whitespace_flexible`, whatever the key order.
    for o in [
        json!({"whitespace_pattern": " ?", "whitespace_flexible": false}),
        json!({"whitespace_flexible": false, "whitespace_pattern": " ?"}),
    ] {
        assert_eq!(
            xg(o).unwrap().whitespace,
            Whitespace::Pattern(String::from(" ?"))
        );
    }
    assert_eq!(
        xg(json!({"whitespace_pattern": null})).unwrap().whitespace,
        d.whitespace
    );
    let o = xg(json!({"item_separator": ", ", "key_separator": ": "})).unwrap();
    assert_eq!(
        (o.item_separator.as_str(), o.key_separator.as_str()),
        (", ", ": ")
    );
    assert!(xg(json!({"coerce_one_of": true})).unwrap().coerce_one_of);
    let mut strict = JsonOptions {
        strict: true,
        ..JsonOptions::default()
    };
    strict
        .apply_x_guidance(&json!({"x-guidance": {"lenient": true}}))
        .unwrap();
    assert!(!strict.strict && strict.coerce_one_of);
    assert_eq!(xg(json!({"lenient": false})).unwrap(), d);
    for bad in [
        json!({"whitespace_flexibel": true}),
        json!({"coerce_one_of": "yes"}),
        json!({"item_separator": 1}),
        json!([1]),
    ] {
        let e = xg(bad.clone()).unwrap_err();
        assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{bad}");
        assert!(e.to_string().starts_with("at /x-guidance"), "{e}");
    }
}

#[test]
fn x_guidance_in_the_schema() {
    // Compiling honours it, and it is no unknown keyword.
    let s = json!({"x-guidance": {"whitespace_flexible": false, "item_separator": ";"},
                   "type": "array", "items": {"type": "integer"}});
    let (g, report) = build(s, &JsonOptions::default());
    assert!(
        report.entries.iter().all(|e| e.keyword != "x-guidance"),
        "{report:?}"
    );
    assert!(accepts(&g, "[1;2]"));
    assert!(!accepts(&g, "[1,2]"));
    assert!(!accepts(&g, "[1; 2]"));
    // Only at the top level (below, it is ignored like an annotation).
    let s = json!({"type": "array", "items": {"x-guidance": {"whitespace_flexible": false}}});
    let (g, report) = build(s, &JsonOptions::default());
    assert!(
        report.entries.iter().all(|e| e.keyword != "x-guidance"),
        "{report:?}"
    );
    assert!(accepts(&g, "[1, 2]"));
    let s = json!({"x-guidance": {"nope": 1}});
    let e = Grammar::from_json_schema(&s, &JsonOptions::default(), &vocab(), &Limits::default())
        .unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
}

#[test]
fn coerce_one_of() {
    let s = json!({"oneOf": [{"type": "integer"}, {"minimum": 5}]});
    let exact = JsonOptions::default();
    check_with(s.clone(), &exact, &["3", "5.5"], &["7"]);
    let coerced = JsonOptions {
        coerce_one_of: true,
        ..JsonOptions::default()
    };
    let (g, report) = build(s.clone(), &coerced);
    assert!(accepts(&g, "7") && accepts(&g, "3") && accepts(&g, "5.5"));
    assert!(report.entries.iter().any(|e| e.keyword == "oneOf"));
    let (g, _) = build(
        json!({"x-guidance": {"coerce_one_of": true}, "oneOf": s["oneOf"].clone()}),
        &exact,
    );
    assert!(accepts(&g, "7"));
}

// ---- no repeated keys in any-order objects -------------------------------------------------

/// A small xorshift generator (deterministic).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The oracle: does the object with these member keys (in order) satisfy the schema's key
/// rules? Repeats are forbidden for named keys, except optional ones of an open object.
fn keys_ok(keys: &[&str], named: &[String], required: &[String], open: bool) -> bool {
    let mut seen: Vec<&str> = Vec::new();
    for &k in keys {
        if named.iter().any(|n| n == k) {
            let optional = !required.iter().any(|r| r == k);
            if seen.contains(&k) && !(open && optional) {
                return false;
            }
            seen.push(k);
        } else if !open {
            return false;
        }
    }
    required.iter().all(|r| seen.contains(&r.as_str()))
}

fn object_text(keys: &[&str]) -> String {
    let members: Vec<String> = keys.iter().map(|k| alloc::format!("\"{k}\":0")).collect();
    alloc::format!("{{{}}}", members.join(","))
}

/// Every key sequence up to `max_len` over the named keys plus `x` (an extra key), compiled
/// in any order, checked against [`keys_ok`]: exactly the sequences without repeated named
/// keys (optional keys of open objects excepted), with every required key, and `x` only when
/// the object is open.
#[test]
fn any_order_keys_exact_against_oracle() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let compact = ws(Whitespace::Compact);
    for round in 0..24 {
        let n = 1 + round % 5;
        let named: Vec<String> = (0..n).map(|i| alloc::format!("k{i}")).collect();
        let required: Vec<String> = named
            .iter()
            .filter(|_| rng.below(3) == 0)
            .cloned()
            .collect();
        let open = rng.below(3) == 0;
        let mut props = serde_json::Map::new();
        for k in &named {
            props.insert(k.clone(), json!({"type": "integer"}));
        }
        let s = json!({"type": "object", "properties": props, "required": required,
                       "additionalProperties": open});
        let (g, _) = build(s.clone(), &compact);
        let mut alphabet: Vec<&str> = named.iter().map(String::as_str).collect();
        alphabet.push("x");
        // All sequences up to n + 1 keys (5^... at most 6^6 = 46656 for n = 5: sample those).
        let max_len = n + 1;
        let mut seqs: Vec<Vec<&str>> = vec![Vec::new()];
        let mut frontier: Vec<Vec<&str>> = vec![Vec::new()];
        for _ in 0..max_len {
            let mut next = Vec::new();
            for f in &frontier {
                for &a in &alphabet {
                    let mut g = f.clone();
                    g.push(a);
                    next.push(g);
                }
            }
            seqs.extend(next.iter().cloned());
            frontier = next;
        }
        let step = if seqs.len() > 6000 { 7 } else { 1 };
        for (i, keys) in seqs.iter().enumerate() {
            let want = keys_ok(keys, &named, &required, open);
            // Every valid sequence, and a sample of the others.
            if !want && i % step != 0 {
                continue;
            }
            let text = object_text(keys);
            assert_eq!(accepts(&g, &text), want, "{text} under {s}");
        }
    }
}

/// `calculate_NPV` (BFCL): once every key of a closed object is present, the only way on is
/// `}` (no `,` and a repeated key until `max_tokens`).
#[test]
fn closed_object_ends_after_its_keys() {
    let s = json!({"type": "object",
        "properties": {"cash_flows": {"type": "array", "items": {"type": "integer"}},
                       "discount_rate": {"type": "number"},
                       "years": {"type": "array", "items": {"type": "integer"}}},
        "required": ["cash_flows", "discount_rate"], "additionalProperties": false});
    let (g, _) = build(s, &JsonOptions::default());
    let prefix = "{\"cash_flows\": [1], \"discount_rate\": 0.1, \"years\": [1]";
    let mut m = Matcher::new(&g);
    assert!(m.try_consume_bytes(prefix.as_bytes()));
    for b in 0u8..=127 {
        let mut m2 = m.clone();
        let ok = m2.try_consume_bytes(&[b]);
        assert_eq!(
            ok,
            matches!(b, b'}' | b' ' | b'\t' | b'\n' | b'\r'),
            "byte {b:?} after {prefix}"
        );
    }
    for repeat in [
        ", \"years\": [2]}",
        ", \"discount_rate\": 1}",
        ",\n  \"cash_flows\": []\n}",
    ] {
        assert!(
            !accepts(&g, &alloc::format!("{prefix}{repeat}")),
            "{repeat}"
        );
    }
}

/// Objects with more named keys than are tracked: any order still, no repeated required
/// key, and a closed object holds at most as many members as it names (no loop).
#[test]
fn large_any_order_objects_are_bounded() {
    let n = 14;
    let named: Vec<String> = (0..n).map(|i| alloc::format!("k{i}")).collect();
    let mut props = serde_json::Map::new();
    for k in &named {
        props.insert(k.clone(), json!({"type": "integer"}));
    }
    let required = vec![named[3].clone(), named[9].clone()];
    let s = json!({"type": "object", "properties": props, "required": required,
                   "additionalProperties": false});
    let (g, _) = build(s, &ws(Whitespace::Compact));
    let mut rng = Rng(7);
    for _ in 0..200 {
        // A random subset holding the required keys, in random order.
        let mut keys: Vec<&str> = named
            .iter()
            .enumerate()
            .filter(|(i, _)| *i == 3 || *i == 9 || rng.below(2) == 0)
            .map(|(_, k)| k.as_str())
            .collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i + 1));
        }
        assert!(accepts(&g, &object_text(&keys)), "{keys:?}");
        let mut dup = keys.clone();
        dup.push(keys[rng.below(keys.len())]);
        if dup.len() > n {
            assert!(!accepts(&g, &object_text(&dup)), "{dup:?}");
        }
    }
    // Required keys are tracked: never twice.
    let all: Vec<&str> = named.iter().map(String::as_str).collect();
    let mut twice = all[..n - 1].to_vec();
    twice.retain(|k| *k != "k0");
    twice.push("k3");
    assert!(!accepts(&g, &object_text(&twice)));
    let mut over = all.clone();
    over.push("k0");
    assert!(!accepts(&g, &object_text(&over)));
}

/// Hundreds of closed objects: past a quarter of the grammar budget each tracks fewer keys
/// (`MAX_OBJECT_RULES_LEAN`), so the schema compiles; every object still rejects a repeated
/// tracked key and more members than it names, and takes its keys in any order.
#[test]
fn many_objects_stay_within_the_grammar_budget() {
    let objects: Vec<Value> = (0..300)
        .map(|i| {
            let mut props = serde_json::Map::new();
            for j in 0..7 {
                props.insert(alloc::format!("p{i}_{j}"), json!({"type": "integer"}));
            }
            json!({"type": "object", "properties": props, "additionalProperties": false})
        })
        .collect();
    let s = json!({"type": "array", "items": {"anyOf": objects}});
    let (g, _) = build(s, &ws(Whitespace::Compact));
    for i in [0, 299] {
        let keys: Vec<String> = (0..7).map(|j| alloc::format!("p{i}_{j}")).collect();
        let k: Vec<&str> = keys.iter().map(String::as_str).collect();
        let rev: Vec<&str> = k.iter().rev().copied().collect();
        let arr = |keys: &[&str]| alloc::format!("[{}]", object_text(keys));
        assert!(accepts(&g, &arr(&k)) && accepts(&g, &arr(&rev)), "{i}");
        assert!(!accepts(&g, &arr(&[k[0], k[0]])), "{i}");
        let mut over = k.clone();
        over.push(k[6]);
        assert!(!accepts(&g, &arr(&over)), "{i}");
    }
}
