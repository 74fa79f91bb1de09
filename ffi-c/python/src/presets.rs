//! `sieve.presets`: structural tags for model families from an OpenAI-style tool list (the
//! core's `grammar::structural::presets`; the Python module `sieve/presets.py` wraps these).

use pyo3::prelude::*;
use sieve_core::grammar::structural::presets::{self, PresetOptions};

use crate::errors::grammar_error;

/// The families `structural_tag_preset` knows.
#[pyfunction]
pub fn preset_families() -> Vec<&'static str> {
    presets::families().to_vec()
}

/// The structural tag (JSON text) for `family` and `tools_json` (an OpenAI tool list as JSON
/// text). Raises `sieve.GrammarError` for an unknown family or a malformed list.
#[pyfunction]
#[pyo3(signature = (family, tools_json, tool_choice=None, parallel_tool_calls=false, reasoning=false))]
pub fn structural_tag_preset(
    py: Python<'_>,
    family: &str,
    tools_json: &str,
    tool_choice: Option<String>,
    parallel_tool_calls: bool,
    reasoning: bool,
) -> PyResult<String> {
    let tools: serde_json::Value = serde_json::from_str(tools_json)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("tools: {e}")))?;
    let opts = PresetOptions {
        tool_choice,
        parallel_tool_calls,
        reasoning,
    };
    let tag = presets::preset(family, &tools, &opts).map_err(|e| grammar_error(py, &e))?;
    Ok(tag.to_string())
}
