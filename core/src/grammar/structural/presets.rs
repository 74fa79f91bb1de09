//! Structural tags for common model families from an OpenAI-style tool list (skeleton;
//! filled in by the presets work).

use alloc::string::String;

use serde_json::Value;

use crate::error::{GrammarError, GrammarErrorKind};

/// Options of [`preset`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresetOptions {
    /// `"auto"` (free text, zero or more calls), `"required"` (at least one call, no
    /// leading text), `"none"` or a tool name (exactly that tool).
    pub tool_choice: Option<String>,
    /// Allow more than one call.
    pub parallel_tool_calls: bool,
    /// Expect a reasoning block first (`<think>...</think>` or the family's equivalent).
    pub reasoning: bool,
}

/// The structural tag (`{"type": "structural_tag", "format": ...}`) for `family` (`qwen3`,
/// `hermes`, `llama3`, `mistral`, `deepseek`, `harmony`) and `tools` (OpenAI format: an
/// array of `{"type": "function", "function": {"name", "parameters"}}`).
pub fn preset(family: &str, tools: &Value, opts: &PresetOptions) -> Result<Value, GrammarError> {
    let _ = (family, tools, opts);
    Err(GrammarError::new(
        GrammarErrorKind::Unsupported,
        "structural-tag presets are not implemented yet",
    ))
}
