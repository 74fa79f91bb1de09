//! `sieve.Gate`: what comes before a grammar (a reasoning phase, triggers), compiled once
//! per tokenizer and shared by the matchers built with `sieve.Matcher(grammar, gate=...)`.
//!
//! A shell over `sieve_core::gate` (`core/src/gate.rs`, `core/docs/gate.md`): the phases,
//! their masks and rollback across them are the core's; this file only maps arguments.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use sieve_core::gate::{GateConfig, Reasoning, Triggers};
use sieve_core::{Limits, Vocabulary};

use crate::errors::grammar_error;
use crate::tokenizer::Tokenizer;

/// A token given by id or by a special token's name (`"</think>"`).
#[derive(FromPyObject)]
pub(crate) enum TokenRef {
    Id(u32),
    Name(String),
}

/// Resolves token ids or special-token names against `vocab`. A name that is no special
/// token's raises `ValueError` (the gate could never see it as one token).
pub(crate) fn token_ids(vocab: &Vocabulary, refs: Vec<TokenRef>, what: &str) -> PyResult<Vec<u32>> {
    let mut ids = Vec::with_capacity(refs.len());
    for r in refs {
        match r {
            TokenRef::Id(t) => ids.push(t),
            TokenRef::Name(name) => {
                let found: Vec<u32> = vocab.specials_named(&name).collect();
                if found.is_empty() {
                    return Err(PyValueError::new_err(format!(
                        "{what}: {name:?} is not a special token of this tokenizer"
                    )));
                }
                ids.extend(found);
            }
        }
    }
    Ok(ids)
}

/// A compiled gate. Immutable and thread-safe: build it once and pass it to every matcher.
///
/// - `reasoning_end`: token ids or special-token names (`["</think>"]`) that end a reasoning
///   phase starting at the first token; every token is allowed while reasoning, only the end
///   tokens once `reasoning_budget` reasoning tokens have been spent (None: no limit).
/// - `trigger_strings`, `trigger_tokens`, `trigger_patterns`: the grammar waits (every token
///   allowed except those completing a trigger the grammar then rejects) until a literal
///   string, a token (id or special-token name) or a regex pattern appears; it is then fed
///   from the trigger's start. Without triggers the grammar is active at once (after the
///   reasoning phase, if any).
///
/// Raises `sieve.GrammarError` for a trigger or pattern the core refuses (empty, too long, a
/// pattern matching the empty string, a budget) and `ValueError` for an unknown token name.
#[pyclass(module = "sieve", frozen)]
pub struct Gate {
    pub(crate) gate: sieve_core::gate::Gate,
    vocab_size: usize,
    config: GateConfig,
}

#[pymethods]
impl Gate {
    #[new]
    #[pyo3(signature = (tokenizer, *, reasoning_end=None, reasoning_budget=None,
                        trigger_strings=None, trigger_tokens=None, trigger_patterns=None))]
    fn new(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        reasoning_end: Option<Vec<TokenRef>>,
        reasoning_budget: Option<u32>,
        trigger_strings: Option<Vec<String>>,
        trigger_tokens: Option<Vec<TokenRef>>,
        trigger_patterns: Option<Vec<String>>,
    ) -> PyResult<Gate> {
        let vocab = &tokenizer.vocab;
        if reasoning_budget.is_some() && reasoning_end.is_none() {
            return Err(PyValueError::new_err(
                "reasoning_budget needs reasoning_end (the tokens that end the reasoning)",
            ));
        }
        let reasoning = match reasoning_end {
            Some(end) => Some(Reasoning {
                end_tokens: token_ids(vocab, end, "reasoning_end")?,
                budget: reasoning_budget,
            }),
            None => None,
        };
        let lazy =
            trigger_strings.is_some() || trigger_tokens.is_some() || trigger_patterns.is_some();
        let triggers = if lazy {
            Some(Triggers {
                strings: trigger_strings
                    .unwrap_or_default()
                    .into_iter()
                    .map(String::into_bytes)
                    .collect(),
                tokens: token_ids(vocab, trigger_tokens.unwrap_or_default(), "trigger_tokens")?,
                patterns: trigger_patterns.unwrap_or_default(),
            })
        } else {
            None
        };
        let config = GateConfig {
            reasoning,
            triggers,
        };
        let gate = sieve_core::gate::Gate::new(&config, vocab, &Limits::default())
            .map_err(|e| grammar_error(py, &e))?;
        Ok(Gate {
            gate,
            vocab_size: vocab.vocab_size(),
            config,
        })
    }

    /// The reasoning end token ids (empty without a reasoning phase).
    #[getter]
    fn reasoning_end_tokens(&self) -> Vec<u32> {
        self.config
            .reasoning
            .as_ref()
            .map_or_else(Vec::new, |r| r.end_tokens.clone())
    }

    /// The reasoning budget (None: no limit or no reasoning phase).
    #[getter]
    fn reasoning_budget(&self) -> Option<u32> {
        self.config.reasoning.as_ref().and_then(|r| r.budget)
    }

    /// Whether the grammar waits for a trigger.
    #[getter]
    fn lazy(&self) -> bool {
        self.config.triggers.is_some()
    }

    fn __repr__(&self) -> String {
        let t = self.config.triggers.as_ref();
        format!(
            "sieve.Gate(reasoning_end={:?}, reasoning_budget={}, triggers={}, vocab_size={})",
            self.reasoning_end_tokens(),
            self.reasoning_budget()
                .map_or_else(|| "None".to_owned(), |b| b.to_string()),
            t.map_or(0, |t| t.strings.len() + t.tokens.len() + t.patterns.len()),
            self.vocab_size
        )
    }
}
