//! Exactness of the JSON Schema compiler against an independent validator (the `jsonschema`
//! crate): small schemas (numbers with `type`, bounds, `multipleOf`, `enum`/`const`; strings
//! with `pattern`, `enum`/`const`, `format`) and values written in random JSON spellings
//! (exponent notation, fraction zeros, `-0`; `\uXXXX` escapes in either case, short escapes,
//! surrogate pairs). Each spelling is fed byte by byte to a matcher over the grammar compiled
//! in default mode, and:
//!
//! - valid but rejected ⇒ the report has a subset entry at the schema's pointer (the root
//!   here), and strict mode refuses the schema unless that entry is a spelling restriction;
//! - invalid but accepted ⇒ the report has a superset entry for a keyword the validator
//!   failed the document on (its schema path is the entry's keyword or below it);
//! - a schema that does not compile ⇒ none of the texts is valid.
//!
//! Values stay where `f64` is exact (quarters, small exponents), so the validator's float
//! arithmetic is the mathematical one; `multipleOf` uses integer divisors for the same
//! reason.

use std::sync::Arc;

use proptest::prelude::*;
use sieve_core::grammar::json::serde_json::{self, Value, json};
use sieve_core::grammar::json::{CoverageReport, JsonOptions};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

fn vocab() -> Arc<Vocabulary> {
    Arc::new(Vocabulary::synthetic(300, 7))
}

fn accepts(g: &Grammar, text: &str) -> bool {
    let mut m = Matcher::new(g);
    m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
}

/// Compare the grammar with the validator on each text; returns a failure message.
fn check(schema: &Value, texts: &[String]) -> Result<(), String> {
    check_with(schema, texts, &JsonOptions::default())
}

fn check_with(schema: &Value, texts: &[String], opts: &JsonOptions) -> Result<(), String> {
    let validator = jsonschema::validator_for(schema).map_err(|e| format!("{schema}: {e}"))?;
    let vocab = vocab();
    let limits = Limits::default();
    let (g, report): (Grammar, CoverageReport) =
        match Grammar::from_json_schema(schema, opts, &vocab, &limits) {
            Ok(x) => x,
            // A schema that admits nothing (`minimum` above `maximum`) fails to compile: only
            // when the validator too finds none of the texts valid.
            Err(e) => {
                return match texts.iter().find(|t| {
                    serde_json::from_str::<Value>(t).is_ok_and(|v| validator.is_valid(&v))
                }) {
                    Some(t) => Err(format!(
                        "{schema}: does not compile ({e}), yet {t} is valid"
                    )),
                    None => Ok(()),
                };
            }
        };
    let at_root = |e: &&sieve_core::grammar::json::CoverageEntry| e.pointer.is_empty();
    for text in texts {
        let instance: Value =
            serde_json::from_str(text).map_err(|e| format!("generated bad JSON {text}: {e}"))?;
        let valid = validator.is_valid(&instance);
        let accepted = accepts(&g, text);
        if valid && !accepted {
            if report.subsets().filter(at_root).count() == 0 {
                return Err(format!(
                    "{schema}: valid {text} rejected with no subset reported ({report:?})"
                ));
            }
            let strict = JsonOptions {
                strict: true,
                ..opts.clone()
            };
            // Strict mode refuses value approximations; it compiles a schema whose only
            // losses are reported spelling restrictions.
            if Grammar::from_json_schema(schema, &strict, &vocab, &limits).is_ok()
                && report.spellings().filter(at_root).count() == 0
            {
                return Err(format!(
                    "{schema}: valid {text} rejected, yet strict mode compiles it with no \
                     spelling restriction reported"
                ));
            }
        }
        // An invalid document accepted is excused only by a superset entry on the path of a
        // keyword the validator failed it on (the entry's keyword, or a keyword below it).
        if !valid && accepted {
            let failed: Vec<String> = validator
                .iter_errors(&instance)
                .map(|e| e.schema_path().as_str().to_owned())
                .collect();
            let on_path = |e: &sieve_core::grammar::json::CoverageEntry| {
                let at = format!("{}/{}", e.pointer, e.keyword);
                failed
                    .iter()
                    .any(|f| *f == at || f.starts_with(&format!("{at}/")))
            };
            if !report.supersets().any(on_path) {
                return Err(format!(
                    "{schema}: invalid {text} accepted with no superset reported where the \
                     validator failed it ({failed:?}; {report:?})"
                ));
            }
        }
    }
    Ok(())
}

// ---- number spellings ------------------------------------------------------------------

/// How one number is written.
#[derive(Debug, Clone)]
struct NumSpelling {
    /// Exponent value (`0` may still be written without an exponent part).
    x: i64,
    write_exp: bool,
    extra_zeros: usize,
    upper_e: bool,
    plus: bool,
    exp_zeros: usize,
}

fn num_spelling() -> impl Strategy<Value = NumSpelling> {
    (
        prop_oneof![4 => -4i64..=4, 1 => Just(14i64), 1 => Just(-14i64)],
        any::<bool>(),
        prop_oneof![3 => Just(0usize), 1 => 1usize..3],
        any::<bool>(),
        any::<bool>(),
        prop_oneof![3 => Just(0usize), 1 => 1usize..3],
    )
        .prop_map(
            |(x, write_exp, extra_zeros, upper_e, plus, exp_zeros)| NumSpelling {
                x,
                write_exp: write_exp || x != 0,
                extra_zeros,
                upper_e,
                plus,
                exp_zeros,
            },
        )
}

/// Write `n · 10^-scale` as spelled by `s`; `neg_zero` writes zero as `-0`.
fn spell_number(n: i64, scale: i64, s: &NumSpelling, neg_zero: bool) -> String {
    let t = scale + s.x;
    let mut digits = n.unsigned_abs().to_string();
    let (mut int, mut frac) = if t <= 0 {
        digits.push_str(&"0".repeat((-t) as usize));
        (digits, String::new())
    } else {
        let t = t as usize;
        while digits.len() <= t {
            digits.insert(0, '0');
        }
        let (a, b) = digits.split_at(digits.len() - t);
        (a.to_string(), b.to_string())
    };
    let trimmed = int.trim_start_matches('0');
    int = if trimmed.is_empty() {
        "0".into()
    } else {
        trimmed.into()
    };
    frac.push_str(&"0".repeat(s.extra_zeros));
    let mut out = String::new();
    if n < 0 || (n == 0 && neg_zero) {
        out.push('-');
    }
    out.push_str(&int);
    if !frac.is_empty() {
        out.push('.');
        out.push_str(&frac);
    }
    if s.write_exp {
        out.push(if s.upper_e { 'E' } else { 'e' });
        if s.x < 0 {
            out.push('-');
        } else if s.plus {
            out.push('+');
        }
        out.push_str(&"0".repeat(s.exp_zeros));
        out.push_str(&s.x.unsigned_abs().to_string());
    }
    out
}

/// A number as quarters: `k / 4` = `k · 25 · 10^-2`.
fn quarters(k: i64, s: &NumSpelling, neg_zero: bool) -> String {
    spell_number(k * 25, 2, s, neg_zero)
}

fn bound() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(json!(0))),
        2 => (-12i64..=12).prop_map(|h| Some(json!(h as f64 / 2.0))),
        1 => (-3i64..=3).prop_map(|h| Some(json!(h * 100))),
    ]
}

fn number_schema() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("integer"), Just("number")],
        bound(),
        bound(),
        any::<bool>(),
        any::<bool>(),
        prop_oneof![3 => Just(None), 1 => prop::sample::select(vec![2u64, 5, 10]).prop_map(Some)],
        prop_oneof![
            4 => Just(None),
            1 => prop::collection::vec(-8i64..=8, 1..4).prop_map(Some),
        ],
    )
        .prop_map(|(ty, lo, hi, lo_ex, hi_ex, mult, values)| {
            let mut m = serde_json::Map::new();
            m.insert("type".into(), json!(ty));
            if let Some(lo) = lo {
                let k = if lo_ex { "exclusiveMinimum" } else { "minimum" };
                m.insert(k.into(), lo);
            }
            if let Some(hi) = hi {
                let k = if hi_ex { "exclusiveMaximum" } else { "maximum" };
                m.insert(k.into(), hi);
            }
            if let Some(d) = mult {
                m.insert("multipleOf".into(), json!(d));
            }
            if let Some(v) = values {
                let vals: Vec<Value> = v.iter().map(|k| json!(*k as f64 / 2.0)).collect();
                if vals.len() == 1 {
                    m.insert("const".into(), vals[0].clone());
                } else {
                    m.insert("enum".into(), Value::Array(vals));
                }
            }
            Value::Object(m)
        })
}

fn number_texts() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        (
            prop_oneof![3 => -40i64..=40, 1 => -2000i64..=2000, 1 => Just(0i64)],
            num_spelling(),
            any::<bool>(),
        )
            .prop_map(|(k, s, nz)| quarters(k, &s, nz)),
        12,
    )
}

// ---- string spellings ------------------------------------------------------------------

const ALPHABET: &[char] = &[
    'a', 'b', 'c', '1', '2', '"', '\\', '\n', '/', 'é', '😀', ' ', '-', '.',
];

/// One character in a random JSON spelling (`how`: 0 raw, 1 short escape, 2 `\u` lower,
/// 3 `\u` upper; impossible choices fall back to the next one).
fn spell_char(c: char, how: u8, out: &mut String) {
    let short = match c {
        '"' => Some("\\\""),
        '\\' => Some("\\\\"),
        '/' => Some("\\/"),
        '\n' => Some("\\n"),
        _ => None,
    };
    let raw_ok = !(c == '"' || c == '\\' || (c as u32) < 0x20);
    match how {
        0 if raw_ok => out.push(c),
        0 | 1 if short.is_some() => out.push_str(short.unwrap_or_default()),
        _ => {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let hex = format!("{:04x}", u);
                let hex = if how == 3 { hex.to_uppercase() } else { hex };
                out.push_str("\\u");
                out.push_str(&hex);
            }
        }
    }
}

fn string_text() -> impl Strategy<Value = String> {
    prop::collection::vec((prop::sample::select(ALPHABET), 0u8..4), 0..5).prop_map(|cs| {
        let mut out = String::from("\"");
        for (c, how) in cs {
            spell_char(c, how, &mut out);
        }
        out.push('"');
        out
    })
}

/// A decoded string respelled (so that enum members also appear in other spellings).
fn respell(s: &str, how: u8) -> String {
    let mut out = String::from("\"");
    for (i, c) in s.chars().enumerate() {
        spell_char(c, (how + i as u8) % 4, &mut out);
    }
    out.push('"');
    out
}

const PATTERNS: &[&str] = &[
    "^a+$",
    "^[a-c]*$",
    "b",
    "^\\d{2}$",
    "^[^a]$",
    "^é",
    "😀$",
    "^.$",
    "^\"",
    "\\\\",
    "^/?1",
    "^[\\s-]+$",
    // Counted repetitions at an unanchored end (cut to their minimum by the compiler).
    "[ab]{2,4}",
    "^a{1,3}",
    "(b{2,5})$",
    "-?[a-c1]{1,255}",
    "^1(ab){1,2}",
    "a{0,3}b",
    "^(a|\\/)*$",
];

fn string_schema() -> impl Strategy<Value = Value> {
    let word = prop::collection::vec(prop::sample::select(ALPHABET), 0..3)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    prop_oneof![
        prop::sample::select(PATTERNS).prop_map(|p| json!({"type": "string", "pattern": p})),
        prop::sample::select(PATTERNS)
            .prop_map(|p| json!({"type": "string", "not": {"pattern": p}})),
        (prop::sample::select(PATTERNS), 0u64..3)
            .prop_map(|(p, n)| { json!({"type": "string", "pattern": p, "maxLength": n}) }),
        prop::collection::vec(word.clone(), 1..4).prop_map(|v| json!({"enum": v})),
        word.clone().prop_map(|w| json!({"const": w})),
        word.prop_map(
            |w| json!({"type": "object", "properties": {w: {"type": "null"}},
                                   "additionalProperties": false})
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn numbers_agree_with_validator(schema in number_schema(), texts in number_texts()) {
        let r = check(&schema, &texts);
        prop_assert!(r.is_ok(), "{}", r.err().unwrap_or_default());
    }

    #[test]
    fn strings_agree_with_validator(
        schema in string_schema(),
        mut texts in prop::collection::vec(string_text(), 12),
        how in 0u8..4,
    ) {
        // Members of `enum`/`const` and property keys, respelled.
        let words: Vec<String> = match (&schema["enum"], &schema["const"], &schema["properties"]) {
            (Value::Array(a), _, _) => a.iter().filter_map(|v| v.as_str().map(String::from)).collect(),
            (_, Value::String(s), _) => vec![s.clone()],
            (_, _, Value::Object(o)) => o.keys().cloned().collect(),
            _ => Vec::new(),
        };
        for w in &words {
            let s = respell(w, how);
            if schema.get("properties").is_some() {
                texts.push(format!("{{{s}: null}}"));
                texts.push(format!("{{{s}: 1}}"));
            } else {
                texts.push(s);
            }
        }
        let r = check(&schema, &texts);
        prop_assert!(r.is_ok(), "{}", r.err().unwrap_or_default());
    }
}

/// The issue's cases, each against the validator.
#[test]
fn issue_cases() {
    let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let cases = [
        (
            json!({"type": "integer"}),
            t(&[
                "1.0", "1.00", "1e0", "1E+2", "10e-1", "0.1e1", "-0", "1.5e1", "1.5",
            ]),
        ),
        (
            json!({"maximum": 1000}),
            t(&["1e2", "1E3", "1.1e3", "1000.0"]),
        ),
        (
            json!({"const": 2}),
            t(&["2", "2.0", "2e0", "0.2e1", "20e-1"]),
        ),
        (
            json!({"pattern": "^a+$"}),
            t(&["\"\\u0061a\"", "\"\\u0041\"", "\"aa\""]),
        ),
        (
            json!({"enum": ["a\"b"]}),
            t(&["\"a\\u0022b\"", "\"\\u0061\\\"b\""]),
        ),
        (
            // Both `contains` evaluate their items (suite `unevaluatedItems.json` #22 has this
            // shape with `multipleOf: 3`, whose union with other divisors is approximated).
            json!({"type": "array",
                   "allOf": [{"contains": {"multipleOf": 2}}, {"contains": {"multipleOf": 5}}],
                   "unevaluatedItems": {"const": 7}}),
            t(&["[2, 5, 7]", "[2, 5, 9]", "[10]", "[2, 7]", "[4, 15, 7, 7]"]),
        ),
    ];
    for (schema, texts) in cases {
        if let Err(e) = check(&schema, &texts) {
            panic!("{e}");
        }
    }
}

/// The oracle catches an unreported deviation: `additional_properties_default: false`
/// departs from the specification without a report, and `check` must say so.
#[test]
fn oracle_detects_unreported_subset() {
    let opts = JsonOptions {
        additional_properties_default: false,
        ..JsonOptions::default()
    };
    let r = check_with(
        &json!({"type": "object"}),
        &["{\"a\": 1}".to_string()],
        &opts,
    );
    assert!(
        r.is_err(),
        "an unreported rejection of a valid document went unnoticed"
    );
}
