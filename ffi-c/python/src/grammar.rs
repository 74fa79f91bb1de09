//! `sieve.Grammar` (a compiled grammar, shared by any number of matchers) and
//! `sieve.JsonOptions` (how a JSON Schema becomes a grammar).

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use sieve_core::Limits;
use sieve_core::grammar::json::{
    CoverageReport, CoverageStatus, Direction, JsonOptions as CoreJsonOptions, PropertyOrder,
    Whitespace,
};
use sieve_core::grammar::{CompileOptions, GrammarSyntax};

use crate::errors::grammar_error;
use crate::tokenizer::Tokenizer;

/// How a JSON Schema (alone, or inside Lark, a structural tag or an LLGuidance request) is
/// compiled. The defaults accept compact, `json.dumps` and pretty-printed JSON with keys in
/// any order; `JsonOptions.llguidance()` gives LLGuidance 1.9.1's defaults.
///
/// - `whitespace`: `"pretty"` (default; bounded by `whitespace_max`, default 64), `"compact"`,
///   `"python"` (exactly `json.dumps`' separators), `"flexible"` (up to `whitespace_max`
///   characters per gap), `"unbounded"`, or a regex given as `whitespace_pattern`.
/// - `property_order`: `"any"` (default) or `"schema"`.
/// - `strict`: every approximated or unsupported keyword is an error.
/// - `additional_properties_default`, `coerce_one_of`, `assert_formats`, `item_separator`,
///   `key_separator`, `llguidance_spellings`: as in `core/src/grammar/json/mod.rs`.
#[pyclass(module = "sieve", from_py_object)]
#[derive(Clone)]
pub struct JsonOptions {
    #[pyo3(get, set)]
    whitespace: String,
    #[pyo3(get, set)]
    whitespace_max: Option<u32>,
    #[pyo3(get, set)]
    whitespace_pattern: Option<String>,
    #[pyo3(get, set)]
    property_order: String,
    #[pyo3(get, set)]
    strict: bool,
    #[pyo3(get, set)]
    additional_properties_default: bool,
    #[pyo3(get, set)]
    coerce_one_of: bool,
    #[pyo3(get, set)]
    assert_formats: bool,
    #[pyo3(get, set)]
    item_separator: String,
    #[pyo3(get, set)]
    key_separator: String,
    #[pyo3(get, set)]
    llguidance_spellings: bool,
}

impl JsonOptions {
    fn from_core(o: &CoreJsonOptions) -> JsonOptions {
        let (whitespace, max, pattern) = match &o.whitespace {
            Whitespace::Compact => ("compact", None, None),
            Whitespace::Python => ("python", None, None),
            Whitespace::Flexible { max } => ("flexible", Some(*max), None),
            Whitespace::Pretty { max_indent } => ("pretty", Some(*max_indent), None),
            Whitespace::Unbounded => ("unbounded", None, None),
            Whitespace::Pattern(p) => ("pattern", None, Some(p.to_string())),
        };
        JsonOptions {
            whitespace: whitespace.into(),
            whitespace_max: max,
            whitespace_pattern: pattern,
            property_order: match o.property_order {
                PropertyOrder::SchemaOrder => "schema".into(),
                PropertyOrder::AnyOrder => "any".into(),
            },
            strict: o.strict,
            additional_properties_default: o.additional_properties_default,
            coerce_one_of: o.coerce_one_of,
            assert_formats: o.assert_formats,
            item_separator: o.item_separator.clone(),
            key_separator: o.key_separator.clone(),
            llguidance_spellings: o.llguidance_spellings,
        }
    }

    pub(crate) fn to_core(&self) -> PyResult<CoreJsonOptions> {
        let defaults = CoreJsonOptions::default();
        let whitespace = match (self.whitespace.as_str(), &self.whitespace_pattern) {
            (_, Some(p)) => Whitespace::Pattern(p.as_str().into()),
            ("pretty", None) => Whitespace::Pretty {
                max_indent: self.whitespace_max.unwrap_or(64),
            },
            ("compact", None) => Whitespace::Compact,
            ("python", None) => Whitespace::Python,
            ("flexible", None) => Whitespace::Flexible {
                max: self.whitespace_max.unwrap_or(4),
            },
            ("unbounded", None) => Whitespace::Unbounded,
            (other, None) => {
                return Err(PyValueError::new_err(format!(
                    "whitespace must be pretty, compact, python, flexible or unbounded \
                     (or set whitespace_pattern), not {other:?}"
                )));
            }
        };
        let property_order = match self.property_order.as_str() {
            "any" => PropertyOrder::AnyOrder,
            "schema" => PropertyOrder::SchemaOrder,
            other => {
                return Err(PyValueError::new_err(format!(
                    "property_order must be 'any' or 'schema', not {other:?}"
                )));
            }
        };
        Ok(CoreJsonOptions {
            whitespace,
            property_order,
            strict: self.strict,
            additional_properties_default: self.additional_properties_default,
            coerce_one_of: self.coerce_one_of,
            assert_formats: self.assert_formats,
            item_separator: self.item_separator.clone(),
            key_separator: self.key_separator.clone(),
            llguidance_spellings: self.llguidance_spellings,
            ..defaults
        })
    }
}

#[pymethods]
impl JsonOptions {
    #[new]
    #[pyo3(signature = (*, whitespace="pretty", whitespace_max=None, whitespace_pattern=None,
        property_order="any", strict=false, additional_properties_default=true,
        coerce_one_of=false, assert_formats=true, item_separator=",", key_separator=":",
        llguidance_spellings=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        whitespace: &str,
        whitespace_max: Option<u32>,
        whitespace_pattern: Option<String>,
        property_order: &str,
        strict: bool,
        additional_properties_default: bool,
        coerce_one_of: bool,
        assert_formats: bool,
        item_separator: &str,
        key_separator: &str,
        llguidance_spellings: bool,
    ) -> PyResult<JsonOptions> {
        let o = JsonOptions {
            whitespace: whitespace.into(),
            whitespace_max,
            whitespace_pattern,
            property_order: property_order.into(),
            strict,
            additional_properties_default,
            coerce_one_of,
            assert_formats,
            item_separator: item_separator.into(),
            key_separator: key_separator.into(),
            llguidance_spellings,
        };
        o.to_core()?;
        Ok(o)
    }

    /// LLGuidance 1.9.1's JSON defaults (schema key order, unbounded whitespace, canonical
    /// spellings).
    #[staticmethod]
    fn llguidance() -> JsonOptions {
        JsonOptions::from_core(&CoreJsonOptions::llguidance())
    }

    fn __repr__(&self) -> String {
        let max = self
            .whitespace_max
            .map_or_else(|| "None".to_owned(), |m| m.to_string());
        let strict = if self.strict { "True" } else { "False" };
        format!(
            "sieve.JsonOptions(whitespace={:?}, whitespace_max={max}, property_order={:?}, \
             strict={strict})",
            self.whitespace, self.property_order
        )
    }
}

/// `Limits` with the fields a dict names (`{"max_memory_bytes": 1 << 20, ...}`).
fn limits(d: Option<HashMap<String, u64>>) -> PyResult<Limits> {
    let mut l = Limits::default();
    for (k, v) in d.into_iter().flatten() {
        let us = usize::try_from(v).map_err(|_| PyValueError::new_err("limit too large"))?;
        match k.as_str() {
            "max_lexer_states" => l.max_lexer_states = us,
            "max_expr_nodes" => l.max_expr_nodes = us,
            "fuel_per_mask" => l.fuel_per_mask = v,
            "compile_fuel" => l.compile_fuel = v,
            "max_items_per_row" => l.max_items_per_row = us,
            "max_items_per_mask" => l.max_items_per_mask = us,
            "max_grammar_size" => l.max_grammar_size = us,
            "max_nesting_depth" => l.max_nesting_depth = us,
            "max_repeat" => {
                l.max_repeat =
                    u32::try_from(v).map_err(|_| PyValueError::new_err("max_repeat too large"))?
            }
            "max_memory_bytes" => l.max_memory_bytes = us,
            other => return Err(PyValueError::new_err(format!("unknown limit {other:?}"))),
        }
    }
    Ok(l)
}

/// A JSON text from a `str`, or any JSON-serializable object through `json.dumps`.
fn json_text(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if obj.is_instance_of::<PyString>() {
        return obj.extract();
    }
    let json = obj.py().import("json")?;
    json.call_method1("dumps", (obj,))?.extract()
}

/// One row of the coverage report: `(pointer, keyword, status, detail)`.
type CoverageRow = (String, String, &'static str, String);

fn coverage_rows(report: Option<CoverageReport>) -> Vec<CoverageRow> {
    let entries = report.map(|r| r.entries).unwrap_or_default();
    entries
        .into_iter()
        .map(|e| {
            let (status, detail) = match e.status {
                CoverageStatus::Approximated { direction, why } => (
                    match direction {
                        Direction::Subset => "subset",
                        _ => "superset",
                    },
                    why,
                ),
                CoverageStatus::Spelling { why } => ("subset", why),
                CoverageStatus::Unknown => ("unknown", String::new()),
                _ => ("unsupported", String::new()),
            };
            (e.pointer, e.keyword, status, detail)
        })
        .collect()
}

/// Compile options with these JSON options (the defaults for `None`) and GBNF's start rule
/// and left-recursion switch.
fn compile_options(
    json: Option<&JsonOptions>,
    root: &str,
    allow_left_recursion: bool,
) -> PyResult<CompileOptions> {
    let mut opts = CompileOptions::default();
    if let Some(j) = json {
        opts.json = j.to_core()?;
    }
    opts.gbnf.root = root.to_owned();
    opts.gbnf.allow_left_recursion = allow_left_recursion;
    Ok(opts)
}

/// A compiled grammar: immutable, thread-safe, shared by any number of `Matcher`s.
///
/// Build it with `Grammar(tokenizer, syntax, text)` (`syntax`: `"json_schema"`, `"lark"`,
/// `"gbnf"`, `"regex"`, `"structural_tag"`, `"llguidance"` or an alias such as `"json"`,
/// `"ebnf"`) or the static constructors `Grammar.json_schema`, `.lark`, `.gbnf`, `.regex`,
/// `.structural_tag`, `.llguidance`. Compiling releases the GIL. A grammar that does not
/// compile raises `sieve.GrammarError` with its location.
#[pyclass(module = "sieve", frozen)]
pub struct Grammar {
    pub(crate) grammar: sieve_core::Grammar,
    syntax: GrammarSyntax,
    coverage: Vec<CoverageRow>,
}

impl Grammar {
    fn compile(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        syntax: GrammarSyntax,
        text: String,
        opts: CompileOptions,
        limits_dict: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        let limits = limits(limits_dict)?;
        let (vocab, cache) = (tokenizer.vocab.clone(), tokenizer.cache.clone());
        let result = py.detach(move || cache.compile(syntax, &text, &opts, &vocab, &limits));
        match result {
            Ok((grammar, report)) => Ok(Grammar {
                grammar,
                syntax,
                coverage: coverage_rows(report),
            }),
            Err(e) => Err(grammar_error(py, &e)),
        }
    }
}

#[pymethods]
impl Grammar {
    #[new]
    #[pyo3(signature = (tokenizer, syntax, text, *, json_options=None, root="root",
        allow_left_recursion=false, limits=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        syntax: &str,
        text: &Bound<'_, PyAny>,
        json_options: Option<JsonOptions>,
        root: &str,
        allow_left_recursion: bool,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        let syntax = GrammarSyntax::from_name(syntax).ok_or_else(|| {
            PyValueError::new_err(format!(
                "unknown grammar syntax {syntax:?} (json_schema, lark, gbnf, regex, \
                 structural_tag, llguidance)"
            ))
        })?;
        let text = match syntax {
            GrammarSyntax::JsonSchema | GrammarSyntax::StructuralTag => json_text(text)?,
            _ => text.extract::<String>()?,
        };
        Grammar::compile(
            py,
            tokenizer,
            syntax,
            text,
            compile_options(json_options.as_ref(), root, allow_left_recursion)?,
            limits,
        )
    }

    /// A JSON Schema (a `str`, or a dict serialized with `json.dumps`).
    #[staticmethod]
    #[pyo3(signature = (tokenizer, schema, *, options=None, limits=None))]
    fn json_schema(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        schema: &Bound<'_, PyAny>,
        options: Option<JsonOptions>,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        let text = json_text(schema)?;
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::JsonSchema,
            text,
            compile_options(options.as_ref(), "root", false)?,
            limits,
        )
    }

    /// A Lark grammar (LLGuidance's dialect, with `%json { ... }` inline schemas).
    #[staticmethod]
    #[pyo3(signature = (tokenizer, text, *, json_options=None, limits=None))]
    fn lark(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        text: String,
        json_options: Option<JsonOptions>,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::Lark,
            text,
            compile_options(json_options.as_ref(), "root", false)?,
            limits,
        )
    }

    /// A llama.cpp GBNF grammar starting at `root`.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, text, *, root="root", allow_left_recursion=false, limits=None))]
    fn gbnf(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        text: String,
        root: &str,
        allow_left_recursion: bool,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::Gbnf,
            text,
            compile_options(None, root, allow_left_recursion)?,
            limits,
        )
    }

    /// A regex the whole output must match.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, pattern, *, limits=None))]
    fn regex(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        pattern: String,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::Regex,
            pattern,
            compile_options(None, "root", false)?,
            limits,
        )
    }

    /// An XGrammar structural tag (a `str`, or a dict serialized with `json.dumps`).
    #[staticmethod]
    #[pyo3(signature = (tokenizer, tag, *, json_options=None, limits=None))]
    fn structural_tag(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        tag: &Bound<'_, PyAny>,
        json_options: Option<JsonOptions>,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        let text = json_text(tag)?;
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::StructuralTag,
            text,
            compile_options(json_options.as_ref(), "root", false)?,
            limits,
        )
    }

    /// An LLGuidance request: Lark text, or its JSON list of grammars.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, text, *, limits=None))]
    fn llguidance(
        py: Python<'_>,
        tokenizer: &Tokenizer,
        text: String,
        limits: Option<HashMap<String, u64>>,
    ) -> PyResult<Grammar> {
        Grammar::compile(
            py,
            tokenizer,
            GrammarSyntax::LlGuidance,
            text,
            compile_options(Some(&JsonOptions::llguidance()), "root", false)?,
            limits,
        )
    }

    /// The syntax's canonical name.
    #[getter]
    fn syntax(&self) -> &'static str {
        self.syntax.name()
    }

    /// Number of token ids.
    #[getter]
    fn vocab_size(&self) -> usize {
        self.grammar.vocab().vocab_size()
    }

    /// int32 words per mask row.
    #[getter]
    fn mask_words(&self) -> usize {
        self.grammar.vocab().mask_words()
    }

    /// JSON Schema keywords not compiled exactly: a list of dicts with `pointer`, `keyword`,
    /// `status` (`subset`, `superset`, `unknown`, `unsupported`) and `detail`.
    #[getter]
    fn coverage<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for (pointer, keyword, status, detail) in &self.coverage {
            let d = PyDict::new(py);
            d.set_item("pointer", pointer)?;
            d.set_item("keyword", keyword)?;
            d.set_item("status", *status)?;
            d.set_item("detail", detail)?;
            list.append(d)?;
        }
        Ok(list)
    }

    fn __repr__(&self) -> String {
        format!(
            "sieve.Grammar(syntax={:?}, vocab_size={})",
            self.syntax.name(),
            self.grammar.vocab().vocab_size()
        )
    }
}
