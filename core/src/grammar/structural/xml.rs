//! `json_schema` formats with an XML style (skeleton; filled in by the XML-style work).

use serde_json::Value;

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::ir::GrammarIr;
use crate::grammar::json::JsonOptions;
use crate::limits::{CompileBudget, Limits};
use crate::vocab::Vocabulary;

/// The XML styles of a `json_schema` format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XmlStyle {
    /// `<parameter=KEY>VALUE</parameter>`
    Qwen,
    /// `<parameter name="KEY">VALUE</parameter>`
    Minimax,
    /// DeepSeek-V3.2 DSML `<｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>`
    Deepseek,
    /// `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`
    Glm,
    /// `<cofl:value name="KEY" type="raw|json|dict|list">VALUE</cofl:value>`
    Cohere,
    /// `<|open|>argument key="KEY" type="T"<|sep|>VALUE<|close|>argument<|sep|>`
    KimiK3,
}

impl XmlStyle {
    /// The style named `name` in a `json_schema` format's `style` field (`None` for `json`
    /// and unknown names).
    pub fn from_name(name: &str) -> Option<XmlStyle> {
        Some(match name {
            "qwen_xml" => XmlStyle::Qwen,
            "minimax_xml" => XmlStyle::Minimax,
            "deepseek_xml" => XmlStyle::Deepseek,
            "glm_xml" => XmlStyle::Glm,
            "cohere_xml" => XmlStyle::Cohere,
            "kimi_k3_xml" => XmlStyle::KimiK3,
            _ => return None,
        })
    }
}

/// Lower a JSON Schema rendered in an XML style to IR (its own start nonterminal): the
/// top-level object's properties as elements, string values as raw text, other values as
/// JSON (compiled by [`crate::grammar::json`] with `json`). `any_order` and
/// `max_whitespace_cnt` as in the format spec. Strings naming control tokens of `vocab`
/// resolve to those tokens.
pub fn lower_xml(
    schema: &Value,
    style: XmlStyle,
    any_order: bool,
    json: &JsonOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let _ = (schema, style, any_order, json, vocab, limits, budget);
    Err(GrammarError::new(
        GrammarErrorKind::Unsupported,
        "XML styles of json_schema are not implemented yet",
    ))
}
