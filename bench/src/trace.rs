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
//! An `anyOf` error, or a `oneOf` error for "no branch matches", is also covered when some
//! branch's errors (the validator's `context`) are all covered: the grammar let the instance
//! through that branch. A `oneOf` that fails because several branches match is covered only
//! by an entry at (or above) the `oneOf`. A `contains` error (no item matches) is covered by
//! an entry inside the condition: it let an item through that the validator does not.
//!
//! An instance the validator accepts is traced by the error the data recorded with it
//! (MaskBench's `python_error`, Python `jsonschema`'s message): explained when the location
//! it names lies under a superset entry ([`explain_recorded`]); otherwise it, and a schema
//! the validator cannot build, is unexplained, with the reason in the detail.
//!
//! An error reached through a `$dynamicRef` or `$recursiveRef` is also located by its
//! evaluation path walked through the document (`$ref`s resolved statically) up to that
//! dynamic reference, so that an entry at the dynamic reference covers it.
//!
//! The compiler reports each entry where its keyword is written in the document
//! (`core/src/grammar/json/compiler/locate.rs`), so an entry's location is one a
//! validator's error can name.
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

/// The document location of an evaluation path (`/$ref/items/$dynamicRef/type`): its
/// keywords walked from the root, each `$ref` resolved statically (against the `$id`s on the
/// way, to a pointer or an `$anchor`/`$dynamicAnchor` of a resource of `res`), up to the first
/// `$dynamicRef` or `$recursiveRef`, whose target is dynamic: from there on the path is kept
/// as it is (`/$defs/list/items/$dynamicRef/type`), so that an entry at the dynamic reference
/// covers what the validator found behind it. `None` when a step cannot be resolved.
fn document_path(schema: &Value, res: &[(String, String)], evaluation: &str) -> Option<String> {
    let segs: Vec<String> = evaluation
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let mut at = String::new();
    // The base URI of the node at `at`.
    let mut base: Option<fluent_uri::Uri<String>> = None;
    for (i, seg) in segs.iter().enumerate() {
        let node = schema.pointer(&at)?;
        if let Some(id) = node.get("$id").and_then(Value::as_str)
            && !id.starts_with('#')
        {
            base = resolve_uri(base.as_ref(), id);
        }
        match seg.as_str() {
            "$dynamicRef" | "$recursiveRef" => {
                let rest: Vec<String> = segs[i..]
                    .iter()
                    .map(|s| s.replace('~', "~0").replace('/', "~1"))
                    .collect();
                return Some(format!("{at}/{}", rest.join("/")));
            }
            "$ref" => {
                let r = node.get("$ref")?.as_str()?;
                let target = resolve_uri(base.as_ref(), r);
                let full = target
                    .as_ref()
                    .map_or(r.to_owned(), |u| u.as_str().to_owned());
                let (uri, frag) = full.split_once('#').unwrap_or((&full, ""));
                let res_at = if uri.is_empty() {
                    String::new()
                } else {
                    res.iter().find(|(u, _)| u == uri)?.1.clone()
                };
                let frag = percent_decode(frag);
                at = if frag.is_empty() || frag.starts_with('/') {
                    format!("{res_at}{frag}")
                } else {
                    anchor(schema.pointer(&res_at)?, &frag).map(|p| format!("{res_at}{p}"))?
                };
                let uri = uri.to_owned();
                base = fluent_uri::Uri::parse(uri).ok().or(base);
            }
            _ => {
                let esc = seg.replace('~', "~0").replace('/', "~1");
                at = format!("{at}/{esc}");
            }
        }
    }
    Some(at)
}

/// `r` resolved against `base` (or parsed alone without one).
fn resolve_uri(base: Option<&fluent_uri::Uri<String>>, r: &str) -> Option<fluent_uri::Uri<String>> {
    let rr = fluent_uri::UriRef::parse(r.to_owned()).ok()?;
    match base {
        Some(b) => rr.resolve_against(b).ok(),
        None => fluent_uri::Uri::parse(r.to_owned()).ok(),
    }
}

/// The pointer (relative to `v`) of the subschema with `$anchor` or `$dynamicAnchor` `name`,
/// the first found (an explicit stack).
fn anchor(v: &Value, name: &str) -> Option<String> {
    let mut stack = vec![(v, String::new())];
    while let Some((x, ptr)) = stack.pop() {
        match x {
            Value::Object(m) => {
                let named = |k: &str| m.get(k).and_then(Value::as_str) == Some(name);
                if named("$anchor") || named("$dynamicAnchor") {
                    return Some(ptr);
                }
                for (k, c) in m {
                    let seg = k.replace('~', "~0").replace('/', "~1");
                    stack.push((c, format!("{ptr}/{seg}")));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    stack.push((c, format!("{ptr}/{i}")));
                }
            }
            _ => {}
        }
    }
    None
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
    /// The independent validator accepts the instance, and the error the data recorded
    /// (Python `jsonschema`'s) names a keyword location under a superset entry.
    ExplainedByRecord {
        /// The keyword location the recorded error names.
        location: String,
        /// The covering entry location.
        entry: String,
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
        matches!(
            self,
            Trace::Explained { .. } | Trace::ExplainedByRecord { .. }
        )
    }

    /// For humans.
    pub fn describe(&self) -> String {
        match self {
            Trace::Explained { entries } => {
                format!("explained by superset at {}", entries.join(", "))
            }
            Trace::ExplainedByRecord { location, entry } => format!(
                "the independent validator accepts it; the recorded error fails it at \
                 {location}: explained by superset at {entry}"
            ),
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
    ///
    /// An error is covered when a superset entry covers one of its locations; an `anyOf` or
    /// `oneOf` error for "no branch matches" is covered too when, for some branch, every
    /// error of that branch is covered (the grammar let the instance through that branch).
    /// A `oneOf` that fails because several branches match is covered only at the `oneOf`.
    pub fn explain(&mut self, instance: &Value, supersets: &[String]) -> Trace {
        let schema = self.schema;
        let validator = match self.validator() {
            Ok(v) => v,
            Err(e) => return Trace::NoValidator(e.clone()),
        };
        let mut entries: Vec<String> = Vec::new();
        let mut uncovered: Vec<String> = Vec::new();
        let mut any = false;
        let mut places = Places {
            schema,
            supersets,
            table: None,
        };
        for err in validator.iter_errors(instance) {
            any = true;
            match places.cover(&err, 0) {
                Ok(found) => {
                    for e in found {
                        if !entries.contains(&e) {
                            entries.push(e);
                        }
                    }
                }
                Err(keyword) => {
                    if !uncovered.contains(&keyword) {
                        uncovered.push(keyword);
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

/// How deep [`Places::cover`] follows the branch errors of `anyOf`/`oneOf` errors.
const MAX_BRANCH_DEPTH: usize = 32;

/// The superset locations and the schema's resources, for covering validation errors.
struct Places<'s> {
    schema: &'s Value,
    supersets: &'s [String],
    table: Option<Vec<(String, String)>>,
}

impl Places<'_> {
    /// The entries covering `err` (see [`Tracer::explain`]), or its keyword location when
    /// it is not covered.
    fn cover(
        &mut self,
        err: &jsonschema::ValidationError<'_>,
        depth: usize,
    ) -> Result<Vec<String>, String> {
        use jsonschema::error::ValidationErrorKind as K;
        let keyword = err.schema_path().as_str();
        let evaluation = err.evaluation_path().as_str();
        let schema = self.schema;
        let absolute = err.absolute_keyword_location().and_then(|u| {
            let res = self.table.get_or_insert_with(|| resources(schema));
            document_location(res, u.as_str())
        });
        let dynamic = evaluation.contains("/$dynamicRef") || evaluation.contains("/$recursiveRef");
        let mapped = if dynamic {
            let res = self.table.get_or_insert_with(|| resources(schema));
            document_path(schema, res, evaluation)
        } else {
            None
        };
        let hit = self.supersets.iter().find(|e| {
            covers(e, keyword)
                || covers(e, evaluation)
                || absolute.as_deref().is_some_and(|a| covers(e, a))
                || mapped.as_deref().is_some_and(|a| covers(e, a))
        });
        if let Some(e) = hit {
            return Ok(vec![e.clone()]);
        }
        let branches = match err.kind() {
            K::AnyOf { context } | K::OneOfNotValid { context } => context,
            K::Contains => {
                // No item matches the condition: a superset inside it let one through.
                let inside = |e: &String| {
                    covers(keyword, e)
                        || covers(evaluation, e)
                        || absolute.as_deref().is_some_and(|a| covers(a, e))
                };
                return match self.supersets.iter().find(|e| inside(e)) {
                    Some(e) => Ok(vec![e.clone()]),
                    None => Err(keyword.to_owned()),
                };
            }
            _ => return Err(keyword.to_owned()),
        };
        if depth < MAX_BRANCH_DEPTH {
            for branch in branches.iter().filter(|b| !b.is_empty()) {
                let found: Result<Vec<Vec<String>>, String> =
                    branch.iter().map(|e| self.cover(e, depth + 1)).collect();
                if let Ok(found) = found {
                    return Ok(found.concat());
                }
            }
        }
        Err(keyword.to_owned())
    }
}

/// The keyword location a recorded Python `jsonschema` error names (`Failed validating
/// 'format' in schema['properties']['a']:`), when that location holds the keyword in
/// `schema` (Python's path is relative to the subschema it failed in: one under a `$ref`
/// names no place of the root, and gives `None`).
pub fn recorded_location(schema: &Value, error: &str) -> Option<String> {
    let rest = error.split("Failed validating '").nth(1)?;
    let (keyword, rest) = rest.split_once('\'')?;
    let path = rest.strip_prefix(" in schema")?;
    let path = &path[..path.find(":\n").or_else(|| path.find(':'))?];
    let mut ptr = String::new();
    let mut p = path;
    while let Some(r) = p.strip_prefix('[') {
        let end = r.find(']')?;
        let seg = &r[..end];
        let seg = seg
            .strip_prefix('\'')
            .and_then(|x| x.strip_suffix('\''))
            .unwrap_or(seg);
        ptr.push('/');
        ptr.push_str(&seg.replace('~', "~0").replace('/', "~1"));
        p = &r[end + 1..];
    }
    if !p.is_empty() {
        return None;
    }
    let loc = entry_location(&ptr, keyword);
    schema.pointer(&loc).is_some().then_some(loc)
}

/// Traces an acceptance the independent validator agrees with, by the error the data
/// recorded (Python `jsonschema`'s): explained when a superset entry covers the location
/// it names ([`recorded_location`]).
pub fn explain_recorded(schema: &Value, error: &str, supersets: &[String]) -> Option<Trace> {
    let at = recorded_location(schema, error)?;
    let e = supersets.iter().find(|e| covers(e, &at))?;
    Some(Trace::ExplainedByRecord {
        location: at,
        entry: e.clone(),
    })
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

    #[test]
    fn branches_of_a_failed_any_of_are_traced() {
        let schema = json!({
            "properties": {"p": {"anyOf": [{"type": "string"},
                                           {"type": "array", "uniqueItems": true}]}},
            "oneOf": [{"required": ["p"]}, {"required": ["p", "q"]}]
        });
        let mut t = Tracer::new(&schema, true, &[]);
        let unique = vec![entry_location("/properties/p/anyOf/1", "uniqueItems")];
        // No branch matches; the array branch fails only at its approximated keyword.
        assert!(t.explain(&json!({"p": [1, 1]}), &unique).explained());
        // Both branches fail at exact keywords: nothing explains it.
        assert_eq!(
            t.explain(&json!({"p": 3}), &unique),
            Trace::Unexplained {
                locations: vec!["/properties/p/anyOf".to_owned()]
            }
        );
        // Several `oneOf` branches match: only an entry at the `oneOf` covers it.
        let one_of = vec![entry_location("", "oneOf")];
        assert!(!t.explain(&json!({"p": "a", "q": 1}), &unique).explained());
        assert!(t.explain(&json!({"p": "a", "q": 1}), &one_of).explained());
    }

    #[test]
    fn recorded_errors_name_document_locations() {
        let schema = json!({"properties": {"a/b": {"properties": {"h": {"format": "iri"}}}},
                            "anyOf": [{"$ref": "#/x"}]});
        let err = "'x' is not a 'iri'\n\nFailed validating 'format' in \
                   schema['properties']['a/b']['properties']['h']:\n    {'format': 'iri'}";
        assert_eq!(
            recorded_location(&schema, err).as_deref(),
            Some("/properties/a~1b/properties/h/format")
        );
        let entry = vec![entry_location("/properties/a~1b/properties/h", "format")];
        assert!(explain_recorded(&schema, err, &entry).is_some_and(|t| t.explained()));
        assert!(explain_recorded(&schema, err, &[entry_location("", "anyOf")]).is_none());
        // A path relative to a subschema (Python's, under a `$ref`) names no root location.
        let rel = "Failed validating 'type' in schema[0]['properties']['h']:\n";
        assert_eq!(recorded_location(&schema, rel), None);
    }

    #[test]
    fn dynamic_references_are_traced_to_where_they_are_written() {
        // Suite draft2020-12 `dynamicRef.json` #3: `$ref: list` under the root's `$id`.
        let schema = json!({
            "$id": "https://t.test/root", "$ref": "list",
            "$defs": {"foo": {"$dynamicAnchor": "items", "type": "string"},
                      "list": {"$id": "list", "type": "array",
                               "items": {"$dynamicRef": "#items"},
                               "$defs": {"items": {"$dynamicAnchor": "items"}}}}
        });
        let res = resources(&schema);
        assert_eq!(
            document_path(&schema, &res, "/$ref/items/$dynamicRef/type").as_deref(),
            Some("/$defs/list/items/$dynamicRef/type")
        );
        // An anchor target, and a path without dynamic references.
        let anchored = json!({"$defs": {"a": {"$anchor": "x", "properties": {"p": {}}}},
                              "properties": {"q": {"$ref": "#x"}}});
        let res = resources(&anchored);
        assert_eq!(
            document_path(&anchored, &res, "/properties/q/$ref/properties/p").as_deref(),
            Some("/$defs/a/properties/p")
        );
        assert_eq!(document_path(&anchored, &res, "/properties/zz/$ref"), None);
        let mut t = Tracer::new(&schema, true, &[]);
        let entry = vec![entry_location("/$defs/list/items", "$dynamicRef")];
        assert!(t.explain(&json!(["foo", 42]), &entry).explained());
        assert!(!t.explain(&json!(["foo", 42]), &[]).explained());
    }
}
