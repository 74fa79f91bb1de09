//! LLGuidance's request format: one text that is Lark, or a JSON "top-level grammar".
//!
//! Accepted forms (what LLGuidance 1.9 clients send through `llg_new_constraint`):
//! - Lark text (anything not starting with `{`), `%llguidance {...}` header included;
//! - `{"grammars": [g0, g1, ...]}`, each entry `{"lark_grammar": "..."}` or
//!   `{"json_schema": {...}}` with an optional `"name"`. Grammar 0 is the start; the others
//!   are reached only through `@name` in a Lark rule (numeric `@17` references are refused,
//!   as LLGuidance 1.9 refuses them). A referenced grammar may reference others; a cycle,
//!   or a chain deeper than [`MAX_GRAMMAR_NESTING`], is an error;
//! - a bare entry, `{"lark_grammar": "..."}` or `{"json_schema": {...}}`.
//!
//! Other keys of the request and of its entries are ignored, as LLGuidance ignores options it
//! does not act on. A referenced grammar is embedded where it is used, like an inline
//! `%json` schema: the referencing grammar's `%ignore` does not reach inside it, and a
//! referenced Lark grammar with an `%ignore` of its own is refused (sieve's lexer would apply
//! it everywhere; LLGuidance scopes it to that grammar's lexeme class).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::RefCell;

use serde_json::Value;

use super::ir::GrammarIr;
use super::json::{self, JsonOptions};
use super::lark::{self, SubGrammars};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::limits::{CompileBudget, Limits};
use crate::vocab::Vocabulary;

/// How deep `@name` references may chain (grammar 0 referencing 1 referencing 2 ...). Each
/// level is a nested call, so the depth is bounded whatever the request.
pub const MAX_GRAMMAR_NESTING: usize = 8;

/// One grammar of a request.
enum Body<'a> {
    Lark(&'a str),
    Json(&'a Value),
}

struct Entry<'a> {
    name: Option<&'a str>,
    body: Body<'a>,
}

/// The grammars of one request, lowered on demand; `active` holds the indices being lowered
/// (to refuse cycles and bound the nesting).
struct Request<'a> {
    entries: Vec<Entry<'a>>,
    vocab: &'a Vocabulary,
    json: &'a JsonOptions,
    active: RefCell<Vec<usize>>,
}

fn syntax(msg: String) -> GrammarError {
    GrammarError::new(
        GrammarErrorKind::Syntax,
        format!("llguidance grammar JSON: {msg}"),
    )
}

impl<'a> Request<'a> {
    fn entry(value: &'a Value, at: usize) -> Result<Entry<'a>, GrammarError> {
        let name = match value.get("name") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(syntax(format!("grammar {at}: \"name\" is not a string"))),
        };
        let body =
            if let Some(lark) = value.get("lark_grammar").filter(|v| !v.is_null()) {
                Body::Lark(lark.as_str().ok_or_else(|| {
                    syntax(format!("grammar {at}: \"lark_grammar\" is not a string"))
                })?)
            } else if let Some(schema) = value.get("json_schema").filter(|v| !v.is_null()) {
                Body::Json(schema)
            } else {
                return Err(GrammarError::new(
                    GrammarErrorKind::Unsupported,
                    format!(
                        "llguidance grammar JSON: grammar {at} needs \"lark_grammar\" or \
                     \"json_schema\" (other forms are not supported by sieve)"
                    ),
                ));
            };
        Ok(Entry { name, body })
    }

    /// Lowers grammar `idx` with `idx` on the active stack.
    fn lower_at(
        &self,
        idx: usize,
        limits: &Limits,
        budget: &mut CompileBudget,
    ) -> Result<GrammarIr, GrammarError> {
        let Some(entry) = self.entries.get(idx) else {
            return Err(syntax(format!("no grammar {idx}")));
        };
        self.active.borrow_mut().push(idx);
        let out = match entry.body {
            Body::Lark(src) => {
                let ctx = lark::Context {
                    specials: self.vocab,
                    json: self.json,
                    grammars: self,
                };
                lark::parse_in(src, &ctx, limits, budget)
            }
            Body::Json(schema) => json::compile(schema, self.json, limits, budget).map(|c| c.0),
        };
        self.active.borrow_mut().pop();
        out
    }
}

impl SubGrammars for Request<'_> {
    fn lower(
        &self,
        name: &str,
        limits: &Limits,
        budget: &mut CompileBudget,
    ) -> Option<Result<GrammarIr, GrammarError>> {
        let idx = self.entries.iter().position(|e| e.name == Some(name))?;
        let active = self.active.borrow();
        if active.contains(&idx) {
            return Some(Err(GrammarError::new(
                GrammarErrorKind::Unsupported,
                format!("grammar @{name} references itself (directly or through others)"),
            )));
        }
        if active.len() >= MAX_GRAMMAR_NESTING {
            return Some(Err(GrammarError::limit(LimitKind::NestingDepth)));
        }
        drop(active);
        Some(self.lower_at(idx, limits, budget))
    }
}

/// What a request compiles to before [`super::Grammar::build`]: the IR, and whether grammar
/// 0 is Lark (whose terminals may match the empty string).
pub(super) struct Lowered {
    pub(super) ir: GrammarIr,
    pub(super) lark: bool,
}

/// Lowers an LLGuidance request (see the module docs) with `json` for its JSON schemas.
pub(super) fn lower(
    data: &str,
    json: &JsonOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<Lowered, GrammarError> {
    let top: Value;
    let request = if data.trim_start().starts_with('{') {
        top = json::parse_schema_within(data, budget)?;
        let entries = match top.get("grammars") {
            Some(list) => {
                let list = list
                    .as_array()
                    .ok_or_else(|| syntax("\"grammars\" is not an array".into()))?;
                if list.is_empty() {
                    return Err(syntax("\"grammars\" is empty".into()));
                }
                list.iter()
                    .enumerate()
                    .map(|(i, g)| Request::entry(g, i))
                    .collect::<Result<Vec<_>, _>>()?
            }
            None => alloc::vec![Request::entry(&top, 0)?],
        };
        Request {
            entries,
            vocab,
            json,
            active: RefCell::new(Vec::new()),
        }
    } else {
        Request {
            entries: alloc::vec![Entry {
                name: None,
                body: Body::Lark(data),
            }],
            vocab,
            json,
            active: RefCell::new(Vec::new()),
        }
    };
    let lark = matches!(request.entries[0].body, Body::Lark(_));
    let ir = request.lower_at(0, limits, budget)?;
    Ok(Lowered { ir, lark })
}
