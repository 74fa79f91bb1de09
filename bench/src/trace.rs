//! Tracing an invalid acceptance to the keyword whose approximation allowed it.
//!
//! When a grammar accepts an instance the test data marks invalid, the harnesses ask an
//! independent validator (the `jsonschema` crate) *why* the instance is invalid: each of its
//! validation errors names a keyword location in the schema. The acceptance is **explained**
//! when every error is covered by a superset entry of the coverage report (an
//! [`Approximated`](sieve_core::grammar::json::CoverageStatus::Approximated) superset or an
//! `Unsupported` keyword); otherwise it is **unexplained**, a bug of the compiler or of its
//! report.
//!
//! The rule, precisely. A coverage entry at object pointer `P` for keyword `k` has the location
//! `E = P + "/" + escape(k)` (JSON-pointer escaping). A validation error has two locations: its
//! keyword location (`schema_path`: a JSON pointer into the schema document, `$ref`s not
//! followed, i.e. where the failing keyword is written) and its evaluation path (the same walk
//! with `$ref`/`$dynamicRef` segments, from the root). `E` covers the error when `E` equals
//! one of the two locations or is an ancestor of it, segment-wise (`E` followed by `/`). So
//! a superset `anyOf` at `/properties/a` covers an error at `/properties/a/anyOf` and at
//! `/properties/a/anyOf/1/type`, but not one at `/properties/a/type` nor at
//! `/properties/ab/anyOf`. The instance is explained iff **every** error is covered: an error
//! at an exactly compiled keyword means the grammar should have rejected the instance there.
//! An instance the validator accepts (no error to trace) or a schema the validator cannot
//! build is unexplained, with the reason in the detail.
//!
//! The validator asserts `format` exactly when the sieve compile did
//! ([`sieve_core::grammar::json::JsonOptions::assert_formats`]), and resolves the same extra
//! documents (the suite's `remotes/`); nothing is fetched. It is built lazily, only for a
//! schema with an invalid instance accepted.

use std::collections::HashMap;

use serde_json::Value;

/// The superset locations of a coverage report, as JSON pointers `pointer/keyword`.
pub fn entry_location(pointer: &str, keyword: &str) -> String {
    let kw = keyword.replace('~', "~0").replace('/', "~1");
    format!("{pointer}/{kw}")
}

/// Is `entry` equal to `location` or an ancestor of it (segment-wise)?
pub fn covers(entry: &str, location: &str) -> bool {
    match location.strip_prefix(entry) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

/// Why an accepted invalid instance was accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trace {
    /// Every validation error lies at or under a superset entry; `entries` are the covering
    /// entry locations (deduplicated, in error order).
    Explained {
        /// Covering entry locations.
        entries: Vec<String>,
    },
    /// Some validation error lies under no superset entry.
    Unexplained {
        /// The keyword locations of the uncovered errors (deduplicated).
        locations: Vec<String>,
    },
    /// The independent validator finds the instance valid: nothing to trace.
    ValidatorAccepts,
    /// The independent validator could not be built for this schema.
    NoValidator(String),
}

impl Trace {
    /// Counted as explained?
    pub fn explained(&self) -> bool {
        matches!(self, Trace::Explained { .. })
    }

    /// For humans.
    pub fn describe(&self) -> String {
        match self {
            Trace::Explained { entries } => {
                format!("explained by superset at {}", entries.join(", "))
            }
            Trace::Unexplained { locations } => format!(
                "UNEXPLAINED: the validator fails it at {} (no superset entry there)",
                locations.join(", ")
            ),
            Trace::ValidatorAccepts => {
                "UNEXPLAINED: the independent validator accepts it (nothing to trace)".to_owned()
            }
            Trace::NoValidator(e) => format!("UNEXPLAINED: no independent validator: {e}"),
        }
    }
}

/// An independent validator of one schema, built on first use.
pub struct Tracer<'a> {
    schema: &'a Value,
    assert_formats: bool,
    documents: &'a [(String, Value)],
    validator: Option<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for Tracer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("assert_formats", &self.assert_formats)
            .field("built", &self.validator.is_some())
            .finish_non_exhaustive()
    }
}

/// Serves the given documents by URI (without fragment); nothing else.
struct Documents(HashMap<String, Value>);

impl jsonschema::Retrieve for Documents {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str();
        let key = key.split_once('#').map_or(key, |(k, _)| k);
        self.0
            .get(key)
            .cloned()
            .ok_or_else(|| format!("{key}: not a known document (nothing is fetched)").into())
    }
}

impl<'a> Tracer<'a> {
    /// A tracer for `schema`, as compiled with `assert_formats` and extra `documents`.
    pub fn new(schema: &'a Value, assert_formats: bool, documents: &'a [(String, Value)]) -> Self {
        Tracer {
            schema,
            assert_formats,
            documents,
            validator: None,
        }
    }

    fn validator(&mut self) -> &Result<jsonschema::Validator, String> {
        let (schema, formats, docs) = (self.schema, self.assert_formats, self.documents);
        self.validator.get_or_insert_with(|| {
            let docs = Documents(docs.iter().cloned().collect());
            jsonschema::options()
                .should_validate_formats(formats)
                .with_retriever(docs)
                .build(schema)
                .map_err(|e| e.to_string())
        })
    }

    /// Traces the acceptance of `instance` (marked invalid by the data) to the superset
    /// entry locations `supersets` ([`entry_location`] of each entry).
    pub fn explain(&mut self, instance: &Value, supersets: &[String]) -> Trace {
        let validator = match self.validator() {
            Ok(v) => v,
            Err(e) => return Trace::NoValidator(e.clone()),
        };
        let mut entries: Vec<String> = Vec::new();
        let mut uncovered: Vec<String> = Vec::new();
        let mut any = false;
        for err in validator.iter_errors(instance) {
            any = true;
            let keyword = err.schema_path().as_str();
            let evaluation = err.evaluation_path().as_str();
            let hit = supersets
                .iter()
                .find(|e| covers(e, keyword) || covers(e, evaluation));
            match hit {
                Some(e) => {
                    if !entries.contains(e) {
                        entries.push(e.clone());
                    }
                }
                None => {
                    if !uncovered.iter().any(|l| l == keyword) {
                        uncovered.push(keyword.to_owned());
                    }
                }
            }
        }
        if !any {
            Trace::ValidatorAccepts
        } else if uncovered.is_empty() {
            Trace::Explained { entries }
        } else {
            Trace::Unexplained {
                locations: uncovered,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn ancestor_rule() {
        assert!(covers("/properties/a/anyOf", "/properties/a/anyOf"));
        assert!(covers("/properties/a/anyOf", "/properties/a/anyOf/1/type"));
        assert!(!covers("/properties/a/anyOf", "/properties/a/type"));
        assert!(!covers("/properties/a", "/properties/ab/type"));
        assert!(!covers("/properties/a/anyOf/1", "/properties/a/anyOf"));
        assert_eq!(entry_location("", "pattern"), "/pattern");
        assert_eq!(
            entry_location("/properties/x", "a/b~"),
            "/properties/x/a~1b~0"
        );
    }

    #[test]
    fn explained_only_under_the_reported_keyword() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "pattern": "^x+$"},
                "b": {"type": "integer", "minimum": 3}
            }
        });
        let mut t = Tracer::new(&schema, true, &[]);
        let pattern = vec![entry_location("/properties/a", "pattern")];
        // Fails only the pattern: explained by a superset `pattern`.
        let only_pattern = json!({"a": "y"});
        assert_eq!(
            t.explain(&only_pattern, &pattern),
            Trace::Explained {
                entries: pattern.clone()
            }
        );
        // Fails `minimum` too: the grammar should have rejected it there.
        let also_minimum = json!({"a": "y", "b": 1});
        assert_eq!(
            t.explain(&also_minimum, &pattern),
            Trace::Unexplained {
                locations: vec!["/properties/b/minimum".to_owned()]
            }
        );
        // A superset elsewhere explains nothing.
        let elsewhere = vec![entry_location("/properties/b", "multipleOf")];
        assert!(!t.explain(&only_pattern, &elsewhere).explained());
        // An ancestor entry covers what is below it.
        let parent = vec![entry_location("", "properties")];
        assert!(t.explain(&also_minimum, &parent).explained());
        assert_eq!(
            t.explain(&json!({"a": "xx"}), &pattern),
            Trace::ValidatorAccepts
        );
    }

    #[test]
    fn refs_and_documents() {
        let schema = json!({
            "$defs": {"n": {"type": "integer", "maximum": 9}},
            "properties": {"a": {"$ref": "#/$defs/n"}, "r": {"$ref": "http://x.test/d.json"}}
        });
        let docs = vec![("http://x.test/d.json".to_owned(), json!({"type": "string"}))];
        let mut t = Tracer::new(&schema, true, &docs);
        // The keyword location is where `maximum` is written, under `$defs`.
        let at_def = vec![entry_location("/$defs/n", "maximum")];
        assert!(t.explain(&json!({"a": 10}), &at_def).explained());
        // The evaluation path goes through the `$ref`.
        let at_ref = vec![entry_location("/properties/a", "$ref")];
        assert!(t.explain(&json!({"a": 10}), &at_ref).explained());
        let other = vec![entry_location("/properties/a", "type")];
        assert!(!t.explain(&json!({"a": 10}), &other).explained());
        // The remote document resolves.
        assert!(matches!(
            t.explain(&json!({"r": 1}), &[]),
            Trace::Unexplained { .. }
        ));
    }
}
