//! One name for each grammar syntax, and one entry point that compiles any of them: every
//! shell (C ABI, LLGuidance layer, C++, CLI) dispatches through [`Grammar::compile`].

use crate::sync::Arc;

use super::gbnf::GbnfOptions;
use super::json::{CoverageReport, JsonOptions};
use super::{Grammar, gbnf, json, lark};
use crate::error::GrammarError;
use crate::ir::GrammarIr;
use crate::limits::{CompileBudget, Limits};
use crate::vocab::Vocabulary;

/// The syntaxes a grammar can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum GrammarSyntax {
    /// Lark-style EBNF, as LLGuidance reads it (`core/docs/lark.md`).
    Lark,
    /// llama.cpp's GBNF (`core/docs/gbnf.md`).
    Gbnf,
    /// A JSON Schema.
    JsonSchema,
    /// A regex the whole output must match.
    Regex,
    /// An XGrammar structural tag (`core/docs/structural.md`).
    StructuralTag,
    /// An LLGuidance request: Lark text, or a JSON list of grammars (see [`llguidance`](super::llguidance)).
    LlGuidance,
}

impl GrammarSyntax {
    /// Every syntax, in a fixed order.
    pub const ALL: [GrammarSyntax; 6] = [
        GrammarSyntax::Lark,
        GrammarSyntax::Gbnf,
        GrammarSyntax::JsonSchema,
        GrammarSyntax::Regex,
        GrammarSyntax::StructuralTag,
        GrammarSyntax::LlGuidance,
    ];

    /// The canonical name: `lark`, `gbnf`, `json_schema`, `regex`, `structural_tag`,
    /// `llguidance`.
    pub fn name(self) -> &'static str {
        match self {
            GrammarSyntax::Lark => "lark",
            GrammarSyntax::Gbnf => "gbnf",
            GrammarSyntax::JsonSchema => "json_schema",
            GrammarSyntax::Regex => "regex",
            GrammarSyntax::StructuralTag => "structural_tag",
            GrammarSyntax::LlGuidance => "llguidance",
        }
    }

    /// The syntax a name or a usual alias means (`json`, `ebnf`, `structural-tag`,
    /// `lark_grammar` and the like); case-insensitive.
    pub fn from_name(name: &str) -> Option<GrammarSyntax> {
        let n = name.trim().to_ascii_lowercase().replace('-', "_");
        Some(match n.as_str() {
            "lark" | "lark_grammar" => GrammarSyntax::Lark,
            "gbnf" | "ebnf" | "grammar" => GrammarSyntax::Gbnf,
            "json_schema" | "json" | "jsonschema" | "schema" => GrammarSyntax::JsonSchema,
            "regex" | "regexp" | "pattern" => GrammarSyntax::Regex,
            "structural_tag" | "structural" | "tag" => GrammarSyntax::StructuralTag,
            "llguidance" | "guidance" => GrammarSyntax::LlGuidance,
            _ => return None,
        })
    }
}

impl core::fmt::Display for GrammarSyntax {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Options of every syntax in one place (each syntax reads its own).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// JSON Schemas, and schemas inside Lark, structural tags and LLGuidance requests.
    pub json: JsonOptions,
    /// GBNF.
    pub gbnf: GbnfOptions,
}

impl Grammar {
    /// Compile `text` written in `syntax`. The coverage report is there for the syntaxes
    /// that have one (JSON Schema).
    pub fn compile(
        syntax: GrammarSyntax,
        text: &str,
        opts: &CompileOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<(Grammar, Option<CoverageReport>), GrammarError> {
        match syntax {
            GrammarSyntax::Lark => Grammar::from_lark_with(text, &opts.json, vocab, limits),
            GrammarSyntax::Gbnf => Grammar::from_gbnf(text, &opts.gbnf, vocab, limits),
            GrammarSyntax::JsonSchema => {
                return Grammar::from_json_schema_str(text, &opts.json, vocab, limits)
                    .map(|(g, r)| (g, Some(r)));
            }
            GrammarSyntax::Regex => Grammar::from_regex(text, vocab, limits),
            GrammarSyntax::StructuralTag => {
                Grammar::from_structural_tag(text, &opts.json, vocab, limits)
            }
            GrammarSyntax::LlGuidance => Grammar::from_llguidance(text, &opts.json, vocab, limits),
        }
        .map(|g| (g, None))
    }

    /// Compile GBNF text (llama.cpp's format; see [`gbnf`] and `core/docs/gbnf.md`).
    pub fn from_gbnf(
        src: &str,
        opts: &GbnfOptions,
        vocab: &Arc<Vocabulary>,
        limits: &Limits,
    ) -> Result<Grammar, GrammarError> {
        let mut budget = CompileBudget::new(limits);
        let ir = gbnf::lower(src, opts, &**vocab, limits, &mut budget)?;
        // The build reuses the expressions the analysis compiled.
        let (ir, compiled) = crate::ir::regular::lexify_compiled(ir, limits, &mut budget)?;
        // A rule lowered to a lexeme may match the empty string (`ws ::= [ ]?`).
        Grammar::build_compiled(&ir, compiled, vocab, limits, true, &mut budget)
    }
}

/// The IR `text` lowers to, as [`Grammar::compile`] would build it (for GBNF, after
/// regular rules became lexemes): what grammar analysis reads.
pub fn lower_ir(
    syntax: GrammarSyntax,
    text: &str,
    opts: &CompileOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    match syntax {
        GrammarSyntax::Lark => {
            let ctx = lark::Context {
                specials: vocab,
                json: &opts.json,
                grammars: &lark::NoSubGrammars,
            };
            let ir = lark::parse_in(text, &ctx, limits, budget)?;
            super::repaired(ir, limits, budget).map(|(ir, _)| ir)
        }
        GrammarSyntax::Gbnf => {
            let ir = gbnf::lower(text, &opts.gbnf, vocab, limits, budget)?;
            crate::ir::regular::lexify(ir, limits, budget)
        }
        GrammarSyntax::JsonSchema => {
            let value = json::parse_schema_within(text, budget)?;
            json::compile(&value, &opts.json, limits, budget).map(|(ir, _)| ir)
        }
        GrammarSyntax::Regex => Ok(super::regex_ir(text)),
        #[cfg(feature = "structural")]
        GrammarSyntax::StructuralTag => {
            let ir = super::structural::lower(text, &opts.json, vocab, limits, budget)?;
            super::repaired(ir, limits, budget).map(|(ir, _)| ir)
        }
        #[cfg(not(feature = "structural"))]
        GrammarSyntax::StructuralTag => {
            Err(super::not_compiled_in("structural", "structural tags"))
        }
        #[cfg(feature = "llguidance")]
        GrammarSyntax::LlGuidance => {
            let ir = super::llguidance::lower(text, &opts.json, vocab, limits, budget)?.ir;
            super::repaired(ir, limits, budget).map(|(ir, _)| ir)
        }
        #[cfg(not(feature = "llguidance"))]
        GrammarSyntax::LlGuidance => {
            Err(super::not_compiled_in("llguidance", "LLGuidance requests"))
        }
    }
}
