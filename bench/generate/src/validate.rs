//! What the output is checked against, and the checks.
//!
//! A JSON Schema output is parsed by `serde_json` and validated by the `jsonschema` crate,
//! independently of sieve. A regex output is matched by the `regex` crate, anchored at both
//! ends (`\A(?:RE)\z`); a pattern the `regex` crate rejects falls back to sieve's check. A
//! Lark output is re-parsed by a fresh sieve [`Matcher`] fed the text's bytes: that check
//! is sieve's own, not independent.

use anyhow::{Result, anyhow};
use serde_json::Value;
use sieve_core::grammar::json::JsonOptions;
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
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
    /// Compiles the constraint over `vocab` through [`Grammar::compile`]. JSON Schemas (also
    /// those inside structural tags and Lark `%json`) use LLGuidance's spellings
    /// (`JsonOptions::llguidance_spellings`: canonical keys and numbers, what models write),
    /// which makes declared key names forced text for jump-forward. Returns the coverage
    /// entries of a JSON Schema (keywords not compiled exactly).
    ///
    /// # Errors
    /// The grammar, regex or schema does not compile.
    pub fn compile(&self, vocab: &Arc<Vocabulary>) -> Result<(Grammar, Vec<String>)> {
        let opts = CompileOptions {
            json: JsonOptions {
                llguidance_spellings: true,
                ..JsonOptions::default()
            },
            ..CompileOptions::default()
        };
        let schema_text;
        let (syntax, text, name) = match self {
            Constraint::JsonSchema { schema, name } => {
                schema_text = schema.to_string();
                (
                    GrammarSyntax::JsonSchema,
                    schema_text.as_str(),
                    name.clone(),
                )
            }
            Constraint::Lark { src, name } => (GrammarSyntax::Lark, src.as_str(), name.clone()),
            Constraint::Regex(re) => (GrammarSyntax::Regex, re.as_str(), format!("regex {re:?}")),
            Constraint::StructuralTag { text, name } => {
                (GrammarSyntax::StructuralTag, text.as_str(), name.clone())
            }
        };
        let (grammar, report) = Grammar::compile(syntax, text, &opts, vocab, &Limits::default())
            .map_err(|e| {
                // `name:line:col: message`, or `name: at /pointer: message`.
                if e.span.is_some() {
                    anyhow!("{name}:{e}")
                } else {
                    anyhow!("{name}: {e}")
                }
            })?;
        let coverage = report.map_or_else(Vec::new, |r| {
            r.entries.iter().map(ToString::to_string).collect()
        });
        Ok((grammar, coverage))
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

/// A reasoning phase and literal triggers before the constraint (`--reasoning-end`,
/// `--reasoning-budget`, `--trigger`; see `core/docs/gate.md`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateSpec {
    /// Literal trigger strings (none: the constraint applies from the start, after the
    /// reasoning phase if any).
    pub triggers: Vec<String>,
    /// The token ending a reasoning phase: a special token's name (`</think>`) or an id.
    pub reasoning_end: Option<String>,
    /// At most this many reasoning tokens, then the end token is forced.
    pub reasoning_budget: Option<u32>,
}

impl GateSpec {
    /// The reasoning end token's id in `vocab` (`None` without a reasoning phase).
    ///
    /// # Errors
    /// A name that is no special token of `vocab`, or an id out of range.
    pub fn reasoning_end_id(&self, vocab: &Vocabulary) -> Result<Option<u32>> {
        let Some(end) = &self.reasoning_end else {
            return Ok(None);
        };
        let id = match end.parse::<u32>() {
            Ok(id) if (id as usize) < vocab.vocab_size() => id,
            Ok(id) => return Err(anyhow!("--reasoning-end {id}: not a token id")),
            Err(_) => vocab
                .special_by_name(end)
                .ok_or_else(|| anyhow!("--reasoning-end {end}: no special token of that name"))?,
        };
        Ok(Some(id))
    }

    /// The gate over `vocab`, or `None` when nothing was asked for.
    ///
    /// # Errors
    /// See [`GateSpec::reasoning_end_id`]; a trigger the gate refuses (empty).
    pub fn build(&self, vocab: &Arc<Vocabulary>) -> Result<Option<sieve_core::Gate>> {
        use sieve_core::gate::{GateConfig, Reasoning, Triggers};
        if self.triggers.is_empty() && self.reasoning_end.is_none() {
            return Ok(None);
        }
        let reasoning = self.reasoning_end_id(vocab)?.map(|id| Reasoning {
            end_tokens: vec![id],
            budget: self.reasoning_budget,
        });
        let triggers = (!self.triggers.is_empty()).then(|| Triggers {
            strings: self
                .triggers
                .iter()
                .map(|t| t.as_bytes().to_vec())
                .collect(),
            ..Triggers::default()
        });
        let config = GateConfig {
            reasoning,
            triggers,
        };
        sieve_core::Gate::new(&config, vocab, &Limits::default())
            .map(Some)
            .map_err(|e| anyhow!("the gate (--trigger, --reasoning-end): {e}"))
    }

    /// The part of `text` the constraint applies to, found without sieve: after the first
    /// occurrence of `reasoning_end` (the end token's bytes) when there is a reasoning
    /// phase, then from the start of the first trigger occurrence (the one ending first;
    /// the longest of those) when there are triggers. `None`: the output never got there
    /// (still reasoning, or no trigger), so it is free text and nothing is checked.
    pub fn constrained_part<'t>(
        &self,
        text: &'t [u8],
        reasoning_end: Option<&[u8]>,
    ) -> Option<&'t [u8]> {
        let mut rest = text;
        if let Some(end) = reasoning_end.filter(|e| !e.is_empty()) {
            let at = rest.windows(end.len()).position(|w| w == end)?;
            rest = &rest[at + end.len()..];
        }
        if self.triggers.is_empty() {
            return Some(rest);
        }
        let (end, len) = self
            .triggers
            .iter()
            .filter(|t| !t.is_empty())
            .filter_map(|t| {
                let t = t.as_bytes();
                let at = rest.windows(t.len()).position(|w| w == t)?;
                Some((at + t.len(), t.len()))
            })
            .min_by_key(|&(end, len)| (end, core::cmp::Reverse(len)))?;
        Some(&rest[end - len..])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constrained_part_starts_at_the_first_trigger_after_reasoning() {
        let spec = GateSpec {
            triggers: vec!["<f>".into(), "```json".into(), "f>".into()],
            ..GateSpec::default()
        };
        assert_eq!(spec.constrained_part(b"no trigger", None), None);
        // "f>" and "<f>" end at the same byte: the longer one starts the constrained part.
        assert_eq!(
            spec.constrained_part(b"a <f>1 ```json", None),
            Some(&b"<f>1 ```json"[..])
        );
        let think = GateSpec {
            reasoning_end: Some("</think>".into()),
            ..spec.clone()
        };
        let end = b"\xff9\xff";
        assert_eq!(
            think.constrained_part(b"<f> still thinking", Some(end)),
            None
        );
        assert_eq!(
            think.constrained_part(b"<f>x\xff9\xfftext ```json{}", Some(end)),
            Some(&b"```json{}"[..])
        );
        let plain = GateSpec::default();
        assert_eq!(plain.constrained_part(b"{}", None), Some(&b"{}"[..]));
    }
}
