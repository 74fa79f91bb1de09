//! Locating a reported keyword in the document: where the keyword the compiler approximated
//! in the schema at a compiled pointer is *written*.
//!
//! A compiled pointer names the schema a keyword was compiled in. After merging it may not
//! exist in the document: `$ref` siblings and `allOf` members are merged into the schema
//! that holds them (their keywords now sit at that schema's pointer), and the siblings of an
//! `anyOf`/`oneOf` are merged into each branch (compiled at `…/anyOf/i`). A coverage entry
//! at such a pointer names no keyword a user, or a validator's error, can find. So each
//! entry is located first: a walk of the document along the compiled pointer that, at each
//! schema, may also continue in the schemas merged into it (its `$ref` target, its `allOf`
//! members; for an `anyOf/i` or `oneOf/i` step, the schema holding the branches and its
//! `then`/`else`, which conditionals are rewritten into branches of; for a `contains` step,
//! the `items` merged into each item the condition counts). Every schema the walk
//! reaches at the end of the pointer that has the keyword written in it is a location; the
//! entry is reported at each. The walk is a bounded search (at most [`MAX_STATES`] steps,
//! each paid in fuel), so the report may name a superset of the places a merged keyword came
//! from, never a place that does not hold the keyword.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value;

use super::{Compiler, R};
use crate::error::GrammarErrorKind;

/// The most schemas one location walk visits.
const MAX_STATES: usize = 256;
/// The most locations one entry is reported at.
const MAX_LOCATIONS: usize = 8;

/// One step of the walk: a schema's location in the document, its base URI, and how much of
/// the compiled pointer is still to follow.
struct State {
    at: String,
    base: String,
    next: usize,
}

/// The segments of a JSON pointer, unescaped.
fn segments(ptr: &str) -> Vec<String> {
    ptr.split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect()
}

fn escape(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

/// Keywords the compiler rewrites into another before reporting: `const` becomes a one-value
/// `enum`.
fn spellings(keyword: &str) -> &[&str] {
    match keyword {
        "enum" => &["enum", "const"],
        "const" => &["const", "enum"],
        _ => &[],
    }
}

impl Compiler<'_> {
    /// The document locations of `keyword` reported at the compiled pointer `ptr`, each with
    /// the keyword as written there. Empty when the walk finds none (the entry stays at `ptr`).
    pub(super) fn locate(&mut self, ptr: &str, keyword: &str) -> R<Vec<(String, String)>> {
        if ptr.starts_with('@') {
            // Another document: its pointers are kept as compiled.
            return Ok(Vec::new());
        }
        let segs = segments(ptr);
        let root_base = self
            .resources
            .first()
            .map(|r| r.2.clone())
            .unwrap_or_default();
        let mut todo = alloc::vec![State {
            at: String::new(),
            base: root_base,
            next: 0,
        }];
        let mut seen: Vec<(String, usize)> = Vec::new();
        let mut found: Vec<(String, String)> = Vec::new();
        let names: &[&str] = match spellings(keyword) {
            [] => core::slice::from_ref(&keyword),
            s => s,
        };
        while let Some(st) = todo.pop() {
            if seen.len() >= MAX_STATES || found.len() >= MAX_LOCATIONS {
                break;
            }
            if seen.iter().any(|(a, n)| *a == st.at && *n == st.next) {
                continue;
            }
            self.spend(1 + st.at.len() as u64 / 16)?;
            seen.push((st.at.clone(), st.next));
            let node = self.lookup(&st.at);
            let (m, base) = match node {
                Some(Value::Object(m)) => (Some(m), self.base_of(m, &st.base)),
                // A list of subschemas (`anyOf`, `prefixItems`): followed, never a location.
                Some(Value::Array(_)) => (None, st.base.clone()),
                _ => continue,
            };
            if st.next == segs.len() {
                if let Some(k) = m.and_then(|m| names.iter().find(|k| m.contains_key(**k))) {
                    found.push((st.at.clone(), k.to_string()));
                }
            } else {
                let seg = &segs[st.next];
                let child = format!("{}/{}", st.at, escape(seg));
                if self.lookup(&child).is_some() {
                    todo.push(State {
                        at: child,
                        base: base.clone(),
                        next: st.next + 1,
                    });
                }
                if seg == "contains" && m.is_some() {
                    // An item counted for a `contains` condition is compiled at the condition
                    // as the item schema and the condition merged.
                    for items in ["items", "additionalItems"] {
                        todo.push(State {
                            at: format!("{}/{items}", st.at),
                            base: base.clone(),
                            next: st.next + 1,
                        });
                    }
                }
                let branch = m.is_some()
                    && matches!(seg.as_str(), "anyOf" | "oneOf")
                    && segs
                        .get(st.next + 1)
                        .is_some_and(|i| i.parse::<usize>().is_ok());
                if branch {
                    // The branch's siblings were merged into it; conditionals became branches.
                    for part in ["", "/then", "/else"] {
                        todo.push(State {
                            at: format!("{}{part}", st.at),
                            base: base.clone(),
                            next: st.next + 2,
                        });
                    }
                }
            }
            let Some(m) = m else { continue };
            // The schemas merged into this one: its `$ref` target and `allOf` members.
            if let Some(Value::Array(subs)) = m.get("allOf") {
                for i in 0..subs.len() {
                    todo.push(State {
                        at: format!("{}/allOf/{i}", st.at),
                        base: base.clone(),
                        next: st.next,
                    });
                }
            }
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                // An unresolvable reference was reported where the compiler met it.
                match self.resolve(r, &base, &st.at) {
                    Ok((at, tb)) => todo.push(State {
                        at,
                        base: tb,
                        next: st.next,
                    }),
                    Err(e) if matches!(e.kind, GrammarErrorKind::Limit(_)) => return Err(e),
                    Err(_) => {}
                }
            }
        }
        found.sort();
        found.dedup();
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec::Vec;

    use serde_json::{Value, json};

    use crate::grammar::json::{CoverageReport, JsonOptions};
    use crate::sync::Arc;
    use crate::{Grammar, Limits, Vocabulary};

    fn report(schema: &Value) -> CoverageReport {
        let vocab = Arc::new(Vocabulary::synthetic(300, 7));
        Grammar::from_json_schema(schema, &JsonOptions::default(), &vocab, &Limits::default())
            .unwrap_or_else(|e| panic!("compile failed: {e}"))
            .1
    }

    /// The `pointer/keyword` locations of the entries for `keyword`, sorted.
    fn at(r: &CoverageReport, keyword: &str) -> Vec<String> {
        let mut v: Vec<String> = r
            .entries
            .iter()
            .filter(|e| e.keyword == keyword)
            .map(|e| alloc::format!("{}/{}", e.pointer, e.keyword))
            .collect();
        v.sort();
        v.dedup();
        v
    }

    #[test]
    fn merged_keywords_are_reported_where_they_are_written() {
        // `allOf` with a `$ref` and an `anyOf` beside other keywords: every branch compiles
        // a merged schema at `/anyOf/i`, which names no place in the document.
        let s = json!({
            "allOf": [{"$ref": "#/definitions/core"}, {"anyOf": [{"required": ["a"]},
                                                                 {"required": ["b"]}]}],
            "definitions": {"core": {"properties": {"a": {"type": "array", "uniqueItems": true}}}}
        });
        assert_eq!(
            at(&report(&s), "uniqueItems"),
            ["/definitions/core/properties/a/uniqueItems"]
        );
        // The siblings of an `anyOf` merged into its branches.
        let s = json!({
            "properties": {"r": {"type": "array", "uniqueItems": true}},
            "anyOf": [{"required": ["r"]}, {"required": ["s"]}]
        });
        assert_eq!(
            at(&report(&s), "uniqueItems"),
            ["/properties/r/uniqueItems"]
        );
        // A `$ref` inside a merged property (draft 7: the target replaces the schema).
        let s = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "properties": {"p": {"$ref": "#/definitions/v"}},
            "anyOf": [{"properties": {"p": {"minItems": 1}}}, {"properties": {"p": {"maxItems": 0}}}],
            "definitions": {"v": {"type": "array", "uniqueItems": true}}
        });
        assert_eq!(
            at(&report(&s), "uniqueItems"),
            ["/definitions/v/uniqueItems"]
        );
        // A divisor merged from three places is reported at each of them.
        let s = json!({"allOf": [{"multipleOf": 2}], "anyOf": [{"multipleOf": 3}],
                       "oneOf": [{"multipleOf": 5}]});
        assert_eq!(
            at(&report(&s), "multipleOf"),
            [
                "/allOf/0/multipleOf",
                "/anyOf/0/multipleOf",
                "/oneOf/0/multipleOf"
            ]
        );
    }

    #[test]
    fn every_location_holds_its_keyword() {
        // Whatever the walk reports lies in the document with that keyword.
        let s = json!({
            "allOf": [{"$ref": "#/$defs/x"}, {"properties": {"q": {"format": "iri"}}}],
            "oneOf": [{"required": ["q"]}, {"required": ["z"]}, {"properties": {"z": {"pattern": "(?=a)"}}}],
            "$defs": {"x": {"properties": {"q": {"type": "string", "format": "idn-email"}}}}
        });
        let r = report(&s);
        assert!(!r.entries.is_empty());
        for e in &r.entries {
            let node = s.pointer(&e.pointer);
            assert!(
                node.and_then(|n| n.get(&e.keyword)).is_some(),
                "{} / {} is not written in the document",
                e.pointer,
                e.keyword
            );
        }
    }
}
