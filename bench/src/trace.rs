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
//! A keyword inside an embedded resource (a subschema with its own `$id`) is located by the
//! validator relative to that resource; its absolute keyword location (`URI#/pointer`) is
//! mapped back to a pointer in the root document through the resources' `$id`s
//! ([`resources`]) and taken as a third location.
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

/// The embedded resources of `schema`: each subschema's `$id` (draft 4: `id`) resolved
/// against the base around it, without fragment, with the JSON pointer of that subschema in
/// the document. Values of `const`, `enum`, `default` and `examples` are data, not searched.
/// An explicit stack: no recursion on the schema's depth.
pub fn resources(schema: &Value) -> Vec<(String, String)> {
    const DATA: [&str; 4] = ["const", "enum", "default", "examples"];
    let mut out = Vec::new();
    let mut stack: Vec<(&Value, String, Option<fluent_uri::Uri<String>>)> =
        vec![(schema, String::new(), None)];
    while let Some((v, ptr, base)) = stack.pop() {
        match v {
            Value::Object(m) => {
                let id = m
                    .get("$id")
                    .or_else(|| m.get("id"))
                    .and_then(Value::as_str)
                    .filter(|id| !id.starts_with('#'));
                let mut base = base;
                if let Some(id) = id
                    && let Ok(r) = fluent_uri::UriRef::parse(id)
                {
                    let abs = match &base {
                        Some(b) => r.resolve_against(b).ok(),
                        None => fluent_uri::Uri::parse(id.to_owned()).ok(),
                    };
                    if let Some(abs) = abs {
                        let key = abs.as_str().split('#').next().unwrap_or("").to_owned();
                        out.push((key, ptr.clone()));
                        base = Some(abs);
                    }
                }
                for (k, x) in m {
                    if !DATA.contains(&k.as_str()) {
                        let seg = k.replace('~', "~0").replace('/', "~1");
                        stack.push((x, format!("{ptr}/{seg}"), base.clone()));
                    }
                }
            }
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    stack.push((x, format!("{ptr}/{i}"), base.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

/// The pointer in the root document of an absolute keyword location `URI#/pointer`, when
/// `URI` is one of `resources`.
fn document_location(resources: &[(String, String)], absolute: &str) -> Option<String> {
    let (uri, frag) = absolute.split_once('#').unwrap_or((absolute, ""));
    let (_, at) = resources.iter().find(|(u, _)| u == uri)?;
    let frag = percent_decode(frag);
    Some(format!("{at}{frag}"))
}

/// `%XX` escapes of a URI fragment decoded (invalid ones kept as written).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(x)) => {
                out.push(x);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
        let schema = self.schema;
        let validator = match self.validator() {
            Ok(v) => v,
            Err(e) => return Trace::NoValidator(e.clone()),
        };
        let mut entries: Vec<String> = Vec::new();
        let mut uncovered: Vec<String> = Vec::new();
        let mut any = false;
        let mut table: Option<Vec<(String, String)>> = None;
        for err in validator.iter_errors(instance) {
            any = true;
            let keyword = err.schema_path().as_str();
            let evaluation = err.evaluation_path().as_str();
            let absolute = err.absolute_keyword_location().and_then(|u| {
                let res = table.get_or_insert_with(|| resources(schema));
                document_location(res, u.as_str())
            });
            let hit = supersets.iter().find(|e| {
                covers(e, keyword)
                    || covers(e, evaluation)
                    || absolute.as_deref().is_some_and(|a| covers(e, a))
            });
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
    fn embedded_resources_map_to_document_pointers() {
        let s = json!({"$id": "https://h/root", "$ref": "./base",
                       "enum": [{"$id": "https://h/data"}],
                       "$defs": {"b": {"$id": "./base", "items": {"$id": "sub/x",
                                                                  "type": "string"}}}});
        let r = resources(&s);
        assert!(r.contains(&("https://h/root".into(), String::new())));
        assert!(r.contains(&("https://h/base".into(), "/$defs/b".into())));
        assert!(r.contains(&("https://h/sub/x".into(), "/$defs/b/items".into())));
        assert_eq!(r.len(), 3, "{r:?}");
        assert_eq!(
            document_location(&r, "https://h/base#/unevaluatedItems").as_deref(),
            Some("/$defs/b/unevaluatedItems")
        );
        assert_eq!(
            document_location(&r, "https://h/sub/x#/type").as_deref(),
            Some("/$defs/b/items/type")
        );
        assert_eq!(document_location(&r, "https://elsewhere#/type"), None);
        assert_eq!(percent_decode("/a%25b/%zz"), "/a%b/%zz");
    }

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
