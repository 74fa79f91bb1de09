//! What the output is checked against, and the checks.
//!
//! A JSON Schema output is parsed by `serde_json` and validated by the `jsonschema` crate,
//! independently of sieve. A regex output is matched by the `regex` crate, anchored at both
//! ends (`\A(?:RE)\z`); a pattern the `regex` crate rejects falls back to sieve's check. A
//! Lark output is re-parsed by a fresh sieve [`Matcher`] fed the text's bytes: that check
//! is sieve's own, not independent.

use anyhow::{Result, anyhow};
use serde_json::Value;
use sieve_core::grammar::json::{CoverageReport, JsonOptions};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use std::sync::Arc;

/// The constraint of a run.
#[derive(Debug, Clone)]
pub enum Constraint {
    /// A JSON Schema: the output is a JSON document it describes.
    JsonSchema {
        /// The parsed schema.
        schema: Value,
        /// Names it in errors (e.g. its path).
        name: String,
    },
    /// A Lark grammar.
    Lark {
        /// The grammar text.
        src: String,
        /// Names it in errors (e.g. its path).
        name: String,
    },
    /// A regex the whole output must match.
    Regex(String),
    /// A structural tag (XGrammar's JSON format for tool calls: free text, tags, triggers).
    StructuralTag {
        /// The structural tag's JSON text.
        text: String,
        /// Names it in errors (e.g. its path).
        name: String,
    },
}

impl Constraint {
    /// Compiles the constraint over `vocab`. JSON Schemas use LLGuidance's spellings
    /// (`JsonOptions::llguidance_spellings`: canonical keys and numbers, what models write),
    /// which makes declared key names forced text for jump-forward. Returns the coverage
    /// entries of a JSON Schema (keywords not compiled exactly).
    ///
    /// # Errors
    /// The grammar, regex or schema does not compile.
    pub fn compile(&self, vocab: &Arc<Vocabulary>) -> Result<(Grammar, Vec<String>)> {
        let limits = Limits::default();
        match self {
            Constraint::JsonSchema { schema, name } => {
                let opts = JsonOptions {
                    llguidance_spellings: true,
                    ..JsonOptions::default()
                };
                let (g, report): (Grammar, CoverageReport) =
                    Grammar::from_json_schema(schema, &opts, vocab, &limits)
                        .map_err(|e| anyhow!("{name}: {e}"))?;
                Ok((g, report.entries.iter().map(ToString::to_string).collect()))
            }
            Constraint::Lark { src, name } => Ok((
                Grammar::from_lark(src, vocab, &limits).map_err(|e| anyhow!("{name}:{e}"))?,
                Vec::new(),
            )),
            Constraint::Regex(re) => Ok((
                Grammar::from_regex(re, vocab, &limits)
                    .map_err(|e| anyhow!("regex {re:?}: {e}"))?,
                Vec::new(),
            )),
            Constraint::StructuralTag { text, name } => {
                let opts = JsonOptions {
                    llguidance_spellings: true,
                    ..JsonOptions::default()
                };
                Ok((
                    Grammar::from_structural_tag(text, &opts, vocab, &limits)
                        .map_err(|e| anyhow!("{name}: {e}"))?,
                    Vec::new(),
                ))
            }
        }
    }

    /// The user turn asking for output of this constraint, for runs without `--prompt`.
    pub fn default_prompt(&self) -> String {
        match self {
            Constraint::JsonSchema { schema, .. } => format!(
                "Reply with a JSON document that matches this JSON Schema, and nothing \
                 else.\n\nSchema:\n{}",
                serde_json::to_string_pretty(schema).unwrap_or_default()
            ),
            Constraint::Lark { src, .. } => format!(
                "Reply with text that matches this Lark grammar, and nothing else.\n\n{src}"
            ),
            Constraint::Regex(re) => format!(
                "Reply with text that matches this regular expression, and nothing else: {re}"
            ),
            Constraint::StructuralTag { .. } => {
                "Answer the question, calling a tool if it helps.".to_owned()
            }
        }
    }
}

/// The verdict on one output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Validity {
    /// The check passed.
    pub valid: bool,
    /// Which check ran (`"jsonschema"`, `"regex crate"`, `"sieve re-parse"`).
    pub checker: &'static str,
    /// Why it failed.
    pub detail: Option<String>,
}

/// Checks `text` against `constraint` (see the module docs for which checker runs).
pub fn check(constraint: &Constraint, grammar: &Grammar, text: &[u8]) -> Validity {
    match constraint {
        Constraint::JsonSchema { schema, .. } => {
            let checker = "jsonschema";
            let fail = |d: String| Validity {
                valid: false,
                checker,
                detail: Some(d),
            };
            let Ok(s) = std::str::from_utf8(text) else {
                return fail("not UTF-8".into());
            };
            let instance: Value = match serde_json::from_str(s) {
                Ok(v) => v,
                Err(e) => return fail(format!("not JSON: {e}")),
            };
            let validator = match jsonschema::validator_for(schema) {
                Ok(v) => v,
                Err(e) => return fail(format!("the jsonschema crate rejects the schema: {e}")),
            };
            match validator.validate(&instance) {
                Ok(()) => Validity {
                    valid: true,
                    checker,
                    detail: None,
                },
                Err(e) => fail(format!("{e} at {}", e.instance_path())),
            }
        }
        Constraint::Regex(re) => match regex::Regex::new(&format!(r"\A(?:{re})\z")) {
            Ok(r) => {
                let ok = std::str::from_utf8(text).is_ok_and(|s| r.is_match(s));
                Validity {
                    valid: ok,
                    checker: "regex crate",
                    detail: (!ok).then(|| "no anchored match".to_owned()),
                }
            }
            Err(_) => sieve_check(grammar, text),
        },
        Constraint::Lark { .. } | Constraint::StructuralTag { .. } => sieve_check(grammar, text),
    }
}

fn sieve_check(grammar: &Grammar, text: &[u8]) -> Validity {
    let mut m = Matcher::new(grammar);
    let ok = m.try_consume_bytes(text) && m.is_accepting();
    Validity {
        valid: ok,
        checker: "sieve re-parse",
        detail: (!ok).then(|| "a fresh matcher does not accept the text".to_owned()),
    }
}
