//! Structural tags: XGrammar's JSON format for tool calls and reasoning
//! (`../shared/design/structural-tags.md`), lowered to one [`GrammarIr`].
//!
//! Entry point: [`crate::Grammar::from_structural_tag`]. Submodules:
//! - [`mod@lower`]: every format type except the XML styles of `json_schema`;
//! - `text`: literals split at control tokens, and the free-text regexes;
//! - [`xml`]: `json_schema` with the XML styles (`qwen_xml`, `minimax_xml`, ...);
//! - [`presets`]: structural tags for common model families from a tool list.
//!
//! Errors name the format by its JSON pointer (`at /format/elements/1/content: ...`).
//!
//! [`GrammarIr`]: crate::ir::GrammarIr

pub mod lower;
pub mod presets;
mod text;
pub mod xml;

pub use lower::lower;
