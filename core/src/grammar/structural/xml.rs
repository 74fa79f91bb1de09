//! `json_schema` formats with an XML style: a top-level object schema rendered as a sequence
//! of per-property elements (`<parameter=KEY>VALUE</parameter>`, ...), as XGrammar's
//! `XMLToolCallingConverter` does (`cpp/json_schema_converter_ext.cc` at
//! mlc-ai/xgrammar@53da3ff; format learned from it, code our own).
//!
//! Each element is one *open* lexeme (the start tag with the key, special tokens resolved),
//! then either a raw string (one lexeme: the text and the close tag, ending at the close
//! tag's first occurrence, so greedy lexing never swallows it) or a JSON value compiled by
//! [`crate::grammar::json::compile`] between optional whitespace and a close lexeme.
//! Elements are separated (and the object preceded and followed) by optional whitespace,
//! `[ \t\n]` runs bounded per gap (see [`xml_whitespace_bound`]). Nothing here recurses on
//! the schema: `$ref` chains and `anyOf` branches are followed with bounded loops, and
//! Cohere's nested `dict`/`list` values (rendered as nested elements, not JSON) are lowered
//! from a work list, memoized by schema text so that recursive schemas terminate.
//! Property sets in any order are tracked as subsets (at most [`MAX_TRACKED`] keys, so at
//! most 256 nonterminals); see `core/docs/structural-presets.md` for every choice.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Map, Value};

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::json::{self, JsonOptions, Whitespace};
use crate::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{PatternFlags, RegexAst};
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

    /// The closing string of every element.
    pub fn close_tag(self) -> &'static str {
        match self {
            XmlStyle::Qwen | XmlStyle::Minimax => "</parameter>",
            XmlStyle::Deepseek => "</｜DSML｜parameter>",
            XmlStyle::Glm => "</arg_value>",
            XmlStyle::Cohere => "</cofl:value>",
            XmlStyle::KimiK3 => "<|close|>argument<|sep|>",
        }
    }
}

/// Most keys whose presence is tracked exactly in `any_order` mode (2^8 = 256 subset
/// nonterminals).
pub const MAX_TRACKED: usize = 8;

/// Gap bound used when the JSON options name no bound of their own (every
/// [`Whitespace`] other than `Flexible` and `Unbounded`): 64 characters, as
/// [`Whitespace::DEFAULT_MAX_INDENT`].
pub const DEFAULT_XML_WHITESPACE: u32 = Whitespace::DEFAULT_MAX_INDENT;

/// Most `$ref` hops followed when classifying a property schema.
const MAX_REF_HOPS: usize = 32;

/// Most repetitions counted exactly (any-order property counts, Cohere list lengths).
const MAX_COUNTED: u64 = 64;

/// Most `anyOf`/`oneOf` branches looked into when classifying a property schema.
const MAX_BRANCHES: usize = 64;

/// Bound of every whitespace gap between elements (and inside GLM's key/value pair):
/// `Flexible { max }` (how `max_whitespace_cnt` arrives) bounds it at `max`, `Unbounded`
/// leaves it unbounded (XGrammar's `[ \n\t]*`), any other policy bounds it at
/// [`DEFAULT_XML_WHITESPACE`].
pub fn xml_whitespace_bound(ws: &Whitespace) -> Option<u32> {
    match ws {
        Whitespace::Flexible { max } => Some(*max),
        Whitespace::Unbounded => None,
        _ => Some(DEFAULT_XML_WHITESPACE),
    }
}

/// Lower a JSON Schema rendered in an XML style to IR (its own start nonterminal): the
/// top-level object's properties as elements, string values as raw text, other values as
/// JSON (compiled by [`crate::grammar::json`] with `json`). `any_order` and
/// `max_whitespace_cnt` as in the format spec. Strings naming control tokens of `vocab`
/// resolve to those tokens.
///
/// # Errors
/// `Unsupported` (with a JSON pointer into `schema`) for a top-level schema that is not an
/// object schema, `patternProperties`/`propertyNames` at the top level, or errors of the
/// JSON Schema compiler for property values (their pointers prefixed with the property's);
/// `Limit` when the budget runs out.
pub fn lower_xml(
    schema: &Value,
    style: XmlStyle,
    any_order: bool,
    json: &JsonOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let mut cx = Lowering::new(schema, style, json, vocab, limits, budget)?;
    cx.any_order = any_order;
    let body = cx.object_body(schema, "", true)?;
    let (start, ws) = (cx.ir.start, cx.ws_opt);
    cx.rule(
        start,
        vec![IrSymbol::Nonterminal(body), IrSymbol::Nonterminal(ws)],
    )?;
    // Cohere's nested `dict` and `list` bodies, one job each (memoized by schema text, so
    // recursive schemas close into recursive nonterminals).
    while let Some(job) = cx.pending.pop() {
        let body = match job.kind {
            Native::Dict => cx.object_body(&job.schema, &job.ptr, false)?,
            Native::List => cx.list_body(&job.schema, &job.ptr)?,
        };
        cx.rule(job.nt, vec![IrSymbol::Nonterminal(body)])?;
    }
    Ok(cx.ir)
}

/// What a property value may be.
struct ValueKinds {
    /// Raw text allowed, constrained by this regex (`None`: raw text not allowed).
    raw: Option<RegexAst>,
    /// JSON values allowed (compiled from the property's whole schema).
    json: bool,
    /// JSON type names the value may have (`string` only for JSON strings).
    types: Vec<&'static str>,
}

const ALL_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// A property key: a literal name, (for additional properties) a pattern, or none (the
/// items of a Cohere `list`).
enum Key<'a> {
    Name(&'a str),
    Pattern(RegexAst),
    Unnamed,
}

/// Cohere's natively rendered values: nested elements, not JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Native {
    /// `type="dict"`: the object's properties as named elements.
    Dict,
    /// `type="list"`: the array's items as unnamed elements.
    List,
}

/// A Cohere `dict`/`list` body to lower into `nt`.
struct Job {
    nt: u32,
    schema: Value,
    ptr: String,
    kind: Native,
}

struct Lowering<'a> {
    root: &'a Value,
    style: XmlStyle,
    json: &'a JsonOptions,
    limits: &'a Limits,
    budget: &'a mut CompileBudget,
    /// Special-token names and ids, longest names first.
    specials: Vec<(String, u32)>,
    ir: GrammarIr,
    /// `ws_opt → ε | WS`.
    ws_opt: u32,
    /// The close string as a lexeme (after JSON values).
    close_lexeme: u32,
    ws_bound: Option<u32>,
    any_order: bool,
    /// Cohere bodies still to lower.
    pending: Vec<Job>,
    /// Cohere bodies by kind and schema text.
    memo: Vec<(Native, String, u32)>,
}

/// The pointer of `key` below `base` (`~` and `/` escaped).
fn pointer(base: &str, segment: &str) -> String {
    format!("{base}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

fn unsupported(ptr: &str, msg: &str) -> GrammarError {
    let ptr = if ptr.is_empty() { "#" } else { ptr };
    GrammarError::at_pointer(GrammarErrorKind::Unsupported, ptr, msg)
}

/// Every byte but `0xFF` (text never matches special-token encodings).
fn sigma() -> RegexAst {
    let mut w = [u32::MAX; 8];
    w[7] &= !(1u32 << 31);
    RegexAst::ByteSet(w)
}

fn byte_set(bytes: &[u8]) -> RegexAst {
    let mut w = [0u32; 8];
    for &b in bytes {
        w[(b / 32) as usize] |= 1 << (b % 32);
    }
    RegexAst::ByteSet(w)
}

fn star(x: RegexAst) -> RegexAst {
    RegexAst::Repeat(Box::new(x), 0, None)
}

/// `[A-Za-z_][A-Za-z0-9_]*`: XGrammar's key pattern for additional properties.
fn identifier() -> RegexAst {
    RegexAst::Pattern("[A-Za-z_][A-Za-z0-9_]*".into(), PatternFlags::default())
}

/// Text followed by `close`, ending at the first occurrence of `close`:
/// `(body · E) ∩ ¬(Σ* E Σ⁺)`, Σ = bytes `0x00..=0xFE`.
pub fn text_until(body: RegexAst, close: RegexAst) -> RegexAst {
    RegexAst::And(vec![
        RegexAst::Concat(vec![body, close.clone()]),
        RegexAst::Not(Box::new(RegexAst::Concat(vec![
            star(sigma()),
            close,
            sigma(),
            star(sigma()),
        ]))),
    ])
}

/// `s` as a regex, each occurrence of a special token's name (longest first) replaced by
/// that token's encoding. `specials` lists names and ids, longest names first.
pub fn resolve_specials(s: &str, specials: &[(String, u32)]) -> RegexAst {
    let b = s.as_bytes();
    let mut parts: Vec<RegexAst> = Vec::new();
    let mut text: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hit = specials
            .iter()
            .find(|(name, _)| b.get(i..).is_some_and(|r| r.starts_with(name.as_bytes())));
        match hit {
            Some((name, id)) => {
                if !text.is_empty() {
                    parts.push(RegexAst::Literal(core::mem::take(&mut text)));
                }
                parts.push(RegexAst::Literal(Vocabulary::special_encoding(*id)));
                i += name.len();
            }
            None => {
                text.extend(b.get(i));
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        parts.push(RegexAst::Literal(text));
    }
    match parts.len() {
        0 => RegexAst::Epsilon,
        1 => parts.pop().unwrap_or(RegexAst::Epsilon),
        _ => RegexAst::Concat(parts),
    }
}

/// The special tokens of `vocab` whose names are valid UTF-8, longest names first.
pub fn special_names(vocab: &Vocabulary) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = vocab
        .special_tokens()
        .iter()
        .filter_map(|&id| {
            let name = core::str::from_utf8(vocab.token_text(id)).ok()?;
            (!name.is_empty()).then(|| (name.to_string(), id))
        })
        .collect();
    out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
    out
}

/// Estimated heap bytes of a JSON value (explicit stack).
fn value_bytes(v: &Value) -> usize {
    let mut n = 0usize;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n = n.saturating_add(32);
        match v {
            Value::String(s) => n = n.saturating_add(s.len()),
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(m) => {
                for (k, x) in m {
                    n = n.saturating_add(k.len() + 64);
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    n
}

impl<'a> Lowering<'a> {
    fn new(
        root: &'a Value,
        style: XmlStyle,
        json: &'a JsonOptions,
        vocab: &Vocabulary,
        limits: &'a Limits,
        budget: &'a mut CompileBudget,
    ) -> Result<Lowering<'a>, GrammarError> {
        let specials = special_names(vocab);
        budget.charge(specials.iter().map(|(n, _)| n.len() + 32).sum::<usize>())?;
        let mut ir = GrammarIr::default();
        let start = ir.add_nonterminal("xml_object", None);
        ir.start = start;
        let ws_opt = ir.add_nonterminal("xml_ws", None);
        let ws_bound = xml_whitespace_bound(&json.whitespace);
        let mut cx = Lowering {
            root,
            style,
            json,
            limits,
            budget,
            specials,
            ir,
            ws_opt,
            close_lexeme: 0,
            ws_bound,
            any_order: false,
            pending: Vec::new(),
            memo: Vec::new(),
        };
        cx.rule(ws_opt, vec![])?;
        if ws_bound != Some(0) {
            let ws = cx.lexeme(
                "xml_whitespace",
                RegexAst::Repeat(Box::new(byte_set(b" \t\n")), 1, ws_bound),
            )?;
            cx.rule(ws_opt, vec![IrSymbol::Lexeme(ws)])?;
        }
        let close = cx.special_text(style.close_tag());
        cx.close_lexeme = cx.lexeme(style.close_tag(), close)?;
        Ok(cx)
    }

    fn special_text(&self, s: &str) -> RegexAst {
        resolve_specials(s, &self.specials)
    }

    fn lexeme(&mut self, name: &str, regex: RegexAst) -> Result<u32, GrammarError> {
        let (_, nodes) = regex.structural_hash();
        self.budget.spend(nodes as u64 + 1)?;
        self.budget.charge(
            core::mem::size_of::<IrLexeme>()
                + 2 * name.len()
                + nodes * core::mem::size_of::<RegexAst>(),
        )?;
        Ok(self.ir.add_lexeme(IrLexeme {
            name: name.into(),
            regex,
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        }))
    }

    fn rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>) -> Result<(), GrammarError> {
        self.budget.spend(1 + rhs.len() as u64)?;
        self.budget
            .charge(64 + rhs.len() * core::mem::size_of::<IrSymbol>())?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    fn nonterminal(&mut self, name: String) -> Result<u32, GrammarError> {
        self.budget.spend(1)?;
        self.budget.charge(64 + name.len())?;
        Ok(self.ir.add_nonterminal(name, None))
    }

    /// The elements of an object schema (the top level, or a Cohere `dict`), each after
    /// optional whitespace; returns the body's nonterminal.
    fn object_body(&mut self, schema: &Value, at: &str, top: bool) -> Result<u32, GrammarError> {
        let resolved = resolve_ref(self.root, schema, at)?;
        let obj: Map<String, Value> = match resolved {
            Value::Bool(true) => Map::new(),
            Value::Object(m) => m.clone(),
            _ => return Err(unsupported(at, "XML styles need an object schema")),
        };
        self.budget.charge(value_bytes(resolved))?;
        if top && self.style == XmlStyle::Cohere {
            let text = self.memo_key(resolved)?;
            let body = self.nonterminal("xml_dict".into())?;
            self.memo.push((Native::Dict, text, body));
            let inner = self.object_body(&Value::Object(obj), at, false)?;
            self.rule(body, vec![IrSymbol::Nonterminal(inner)])?;
            return Ok(body);
        }
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(Value::Array(a)) if a.iter().any(|t| t == "object") => {}
            Some(_) => {
                return Err(unsupported(
                    &pointer(at, "type"),
                    "XML styles need a top-level schema of type object",
                ));
            }
        }
        for k in ["patternProperties", "propertyNames"] {
            if obj.contains_key(k) {
                return Err(unsupported(
                    &pointer(at, k),
                    "not supported at the top level of an XML style",
                ));
            }
        }
        let empty = Map::new();
        let props = match obj.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(unsupported(&pointer(at, "properties"), "must be an object")),
        };
        let required: Vec<&str> = match obj.get("required") {
            None => Vec::new(),
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(unsupported(&pointer(at, "required"), "must be an array")),
        };
        // XGrammar compiles structural-tag schemas in strict mode: no additional
        // properties unless the schema allows them. A schema without `properties` at all
        // (`{}`, `true`, `{"type": "object"}`) takes any keys, as XGrammar's `xml_object`.
        let additional: Option<Value> = match obj.get("additionalProperties") {
            Some(Value::Bool(false)) => None,
            Some(v @ Value::Object(_)) | Some(v @ Value::Bool(true)) => Some(v.clone()),
            Some(_) => {
                return Err(unsupported(
                    &pointer(at, "additionalProperties"),
                    "must be a schema",
                ));
            }
            None if props.is_empty() => Some(Value::Bool(true)),
            None => None,
        };
        let mut elements: Vec<(u32, bool)> = Vec::with_capacity(props.len());
        for (k, v) in props {
            let ptr = pointer(&pointer(at, "properties"), k);
            let el = self.element(Key::Name(k), v, &ptr)?;
            elements.push((el, required.contains(&k.as_str())));
        }
        for r in &required {
            if !props.contains_key(*r) {
                // A required key without a declared schema: any value.
                let ptr = pointer(&pointer(at, "required"), r);
                let el = self.element(Key::Name(r), &Value::Bool(true), &ptr)?;
                elements.push((el, true));
            }
        }
        let extra = match &additional {
            Some(schema) => {
                let names: Vec<RegexAst> = elements_names(props, &required);
                let key = if names.is_empty() {
                    identifier()
                } else {
                    RegexAst::And(vec![
                        identifier(),
                        RegexAst::Not(Box::new(RegexAst::Or(names))),
                    ])
                };
                let schema = schema.clone();
                let ptr = pointer(at, "additionalProperties");
                Some(self.element(Key::Pattern(key), &schema, &ptr)?)
            }
            None => None,
        };
        let min = obj.get("minProperties").and_then(Value::as_u64);
        let max = obj.get("maxProperties").and_then(Value::as_u64);
        if self.any_order {
            self.any_order(&elements, extra, min, max)
        } else {
            self.declared_order(&elements, extra)
        }
    }

    /// The items of a Cohere `list`: `prefixItems` (draft-7 `items` arrays) in order, then
    /// `items` (or `additionalItems`) counted within `minItems..=maxItems`.
    fn list_body(&mut self, schema: &Value, at: &str) -> Result<u32, GrammarError> {
        let s = resolve_ref(self.root, schema, at)?.clone();
        self.budget.charge(value_bytes(&s))?;
        let (prefix, rest, rest_key): (Vec<Value>, Value, &str) =
            match (s.get("prefixItems"), s.get("items")) {
                (Some(Value::Array(p)), items) => (
                    p.clone(),
                    items.cloned().unwrap_or(Value::Bool(true)),
                    "items",
                ),
                (None, Some(Value::Array(p))) => (
                    p.clone(),
                    s.get("additionalItems")
                        .cloned()
                        .unwrap_or(Value::Bool(true)),
                    "additionalItems",
                ),
                (_, items) => (
                    Vec::new(),
                    items.cloned().unwrap_or(Value::Bool(true)),
                    "items",
                ),
            };
        let prefix_key = if s.get("prefixItems").is_some() {
            "prefixItems"
        } else {
            "items"
        };
        let min = s.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = s.get("maxItems").and_then(Value::as_u64);
        let n = prefix.len() as u64;
        let rest_el = if rest == Value::Bool(false) || max.is_some_and(|m| m <= n) {
            None
        } else {
            Some(self.element(Key::Unnamed, &rest, &pointer(at, rest_key))?)
        };
        let tail = match rest_el {
            Some(el) => {
                let hi = max.map(|m| m.saturating_sub(n));
                self.counted(el, min.saturating_sub(n), hi)?
            }
            None => {
                let t = self.nonterminal("xml_list_end".into())?;
                self.rule(t, vec![])?;
                t
            }
        };
        let ws = self.ws_opt;
        let mut next = tail;
        for (i, item) in prefix.iter().enumerate().rev() {
            let ptr = pointer(&pointer(at, prefix_key), &i.to_string());
            let el = self.element(Key::Unnamed, item, &ptr)?;
            let nt = self.nonterminal(format!("xml_list_{i}"))?;
            self.rule(
                nt,
                vec![
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Nonterminal(el),
                    IrSymbol::Nonterminal(next),
                ],
            )?;
            next = nt;
        }
        Ok(next)
    }

    /// `ws el` repeated `lo..=hi` times (counted up to [`MAX_COUNTED`]; a larger bound is
    /// dropped, a larger minimum lowered to it: supersets).
    fn counted(&mut self, el: u32, lo: u64, hi: Option<u64>) -> Result<u32, GrammarError> {
        let lo = lo.min(MAX_COUNTED) as u32;
        let hi = hi.filter(|&m| m <= MAX_COUNTED).map(|m| m as u32);
        let top = hi.unwrap_or(lo);
        let ws = self.ws_opt;
        let base = self.ir.nonterminals.len() as u32;
        for k in 0..=top {
            self.nonterminal(format!("xml_count_{k}"))?;
        }
        for k in 0..=top {
            let nt = base + k;
            if k >= lo {
                self.rule(nt, vec![])?;
            }
            let next = if k < top {
                Some(base + k + 1)
            } else if hi.is_none() {
                Some(nt)
            } else {
                None
            };
            if let Some(next) = next {
                self.rule(
                    nt,
                    vec![
                        IrSymbol::Nonterminal(ws),
                        IrSymbol::Nonterminal(el),
                        IrSymbol::Nonterminal(next),
                    ],
                )?;
            }
        }
        Ok(base)
    }

    /// The memo key of a Cohere body: the schema's text, charged.
    fn memo_key(&mut self, schema: &Value) -> Result<String, GrammarError> {
        self.budget.charge(value_bytes(schema))?;
        let text = serde_json::to_string(schema)
            .map_err(|_| unsupported("#", "schema cannot be printed"))?;
        self.budget.spend(text.len() as u64 / 16 + 1)?;
        Ok(text)
    }

    /// The nonterminal of a Cohere `dict`/`list` body for `schema`, queued if new.
    fn native_body(
        &mut self,
        kind: Native,
        schema: &Value,
        ptr: &str,
    ) -> Result<u32, GrammarError> {
        let text = self.memo_key(schema)?;
        if let Some(&(_, _, nt)) = self.memo.iter().find(|m| m.0 == kind && m.1 == text) {
            return Ok(nt);
        }
        let name = match kind {
            Native::Dict => "xml_dict",
            Native::List => "xml_list",
        };
        let nt = self.nonterminal(name.into())?;
        self.memo.push((kind, text, nt));
        self.pending.push(Job {
            nt,
            schema: schema.clone(),
            ptr: ptr.into(),
            kind,
        });
        Ok(nt)
    }

    /// `N_i → ws EL_i N_{i+1}` (and `N_i → N_{i+1}` for optional ones); the last takes
    /// any number of additional properties.
    fn declared_order(
        &mut self,
        elements: &[(u32, bool)],
        extra: Option<u32>,
    ) -> Result<u32, GrammarError> {
        let tail = self.nonterminal("xml_rest".into())?;
        self.rule(tail, vec![])?;
        if let Some(x) = extra {
            let ws = self.ws_opt;
            self.rule(
                tail,
                vec![
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Nonterminal(x),
                    IrSymbol::Nonterminal(tail),
                ],
            )?;
        }
        let mut next = tail;
        for (i, &(el, required)) in elements.iter().enumerate().rev() {
            let n = self.nonterminal(format!("xml_props_{i}"))?;
            let ws = self.ws_opt;
            self.rule(
                n,
                vec![
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Nonterminal(el),
                    IrSymbol::Nonterminal(next),
                ],
            )?;
            if !required {
                self.rule(n, vec![IrSymbol::Nonterminal(next)])?;
            }
            next = n;
        }
        Ok(next)
    }

    /// Any order. Up to [`MAX_TRACKED`] properties: each at most once, required ones
    /// present (one nonterminal per subset seen). More properties with at most
    /// [`MAX_TRACKED`] required: the required ones tracked, the optional ones (and
    /// additional properties) may repeat. More required ones: any elements, counted
    /// between `max(minProperties, #required)` and `maxProperties`.
    fn any_order(
        &mut self,
        elements: &[(u32, bool)],
        extra: Option<u32>,
        min: Option<u64>,
        max: Option<u64>,
    ) -> Result<u32, GrammarError> {
        let n_required = elements.iter().filter(|e| e.1).count();
        let ws = self.ws_opt;
        if elements.len() <= MAX_TRACKED || n_required <= MAX_TRACKED {
            let all = elements.len() <= MAX_TRACKED;
            let tracked: Vec<(u32, bool)> =
                elements.iter().copied().filter(|e| all || e.1).collect();
            let mut loops: Vec<u32> = elements
                .iter()
                .filter(|e| !all && !e.1)
                .map(|e| e.0)
                .collect();
            loops.extend(extra);
            let need: u32 = tracked
                .iter()
                .enumerate()
                .filter(|(_, e)| e.1)
                .fold(0, |m, (i, _)| m | (1 << i));
            let states = 1u32 << tracked.len();
            let base = self.ir.nonterminals.len() as u32;
            for s in 0..states {
                self.nonterminal(format!("xml_seen_{s:x}"))?;
            }
            for s in 0..states {
                let nt = base + s;
                if s & need == need {
                    self.rule(nt, vec![])?;
                }
                for (i, e) in tracked.iter().enumerate() {
                    if s & (1 << i) == 0 {
                        self.rule(
                            nt,
                            vec![
                                IrSymbol::Nonterminal(ws),
                                IrSymbol::Nonterminal(e.0),
                                IrSymbol::Nonterminal(base + (s | (1 << i))),
                            ],
                        )?;
                    }
                }
                for &l in &loops {
                    self.rule(
                        nt,
                        vec![
                            IrSymbol::Nonterminal(ws),
                            IrSymbol::Nonterminal(l),
                            IrSymbol::Nonterminal(nt),
                        ],
                    )?;
                }
            }
            return Ok(base);
        }
        // Counted: any element, `lo..=hi` times.
        let any = self.nonterminal("xml_any_property".into())?;
        for e in elements.iter().map(|e| e.0).chain(extra) {
            self.rule(any, vec![IrSymbol::Nonterminal(e)])?;
        }
        let lo = min.unwrap_or(0).max(n_required as u64);
        self.counted(any, lo, max)
    }

    /// One element for `key` with value schema `schema`: a nonterminal with one rule per
    /// value kind (raw text, JSON).
    fn element(&mut self, key: Key<'_>, schema: &Value, ptr: &str) -> Result<u32, GrammarError> {
        let name = match &key {
            Key::Name(k) => format!("xml_param_{k}"),
            Key::Pattern(_) => "xml_param_additional".into(),
            Key::Unnamed => "xml_item".into(),
        };
        let el = self.nonterminal(name.clone())?;
        if self.style == XmlStyle::Cohere
            && let Some(kind) = native_kind(resolve_ref(self.root, schema, ptr)?)
        {
            let resolved = resolve_ref(self.root, schema, ptr)?.clone();
            let body = self.native_body(kind, &resolved, ptr)?;
            let attr = match kind {
                Native::Dict => "dict",
                Native::List => "list",
            };
            let open = self.open_tag(&key, &[attr], false);
            let open = self.lexeme(&format!("{name}_open_{attr}"), open)?;
            let (ws, close) = (self.ws_opt, self.close_lexeme);
            self.rule(
                el,
                vec![
                    IrSymbol::Lexeme(open),
                    IrSymbol::Nonterminal(body),
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Lexeme(close),
                ],
            )?;
            return Ok(el);
        }
        let kinds = self.classify(schema, ptr)?;
        if let Some(body) = kinds.raw {
            let open = self.open_tag(&key, &["string"], true);
            let open = self.lexeme(&format!("{name}_open"), open)?;
            let close = self.special_text(self.style.close_tag());
            let text = self.lexeme(&format!("{name}_text"), text_until(body, close))?;
            self.rule(el, vec![IrSymbol::Lexeme(open), IrSymbol::Lexeme(text)])?;
        }
        if kinds.json {
            let value = self.json_value(schema, ptr)?;
            let types: Vec<&'static str> = if kinds.types.is_empty() {
                ALL_TYPES.to_vec()
            } else {
                kinds.types
            };
            let open = self.open_tag(&key, &types, false);
            let open = self.lexeme(&format!("{name}_open_json"), open)?;
            let ws = self.ws_opt;
            let close = self.close_lexeme;
            self.rule(
                el,
                vec![
                    IrSymbol::Lexeme(open),
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Nonterminal(value),
                    IrSymbol::Nonterminal(ws),
                    IrSymbol::Lexeme(close),
                ],
            )?;
        }
        Ok(el)
    }

    /// The open tag for `key` whose value is raw text (`raw`) or JSON of one of `types`.
    fn open_tag(&self, key: &Key<'_>, types: &[&'static str], raw: bool) -> RegexAst {
        let lit = |s: &str| RegexAst::literal(s);
        let key_re = |escape: bool| match key {
            Key::Name(k) if escape => lit(&k.replace('&', "&amp;").replace('"', "&quot;")),
            Key::Name(k) => lit(k),
            Key::Pattern(p) => p.clone(),
            Key::Unnamed => RegexAst::Epsilon,
        };
        let one_of = |names: Vec<&str>| {
            let mut names = names;
            names.sort_unstable();
            names.dedup();
            RegexAst::Or(names.into_iter().map(lit).collect())
        };
        let parts: Vec<RegexAst> = match self.style {
            XmlStyle::Qwen => vec![lit("<parameter="), key_re(false), lit(">")],
            XmlStyle::Minimax => vec![lit("<parameter name=\""), key_re(false), lit("\">")],
            XmlStyle::Deepseek => vec![
                self.special_text("<｜DSML｜parameter name=\""),
                key_re(false),
                lit(if raw {
                    "\" string=\"true\">"
                } else {
                    "\" string=\"false\">"
                }),
            ],
            XmlStyle::Glm => vec![
                lit("<arg_key>"),
                key_re(false),
                lit("</arg_key>"),
                RegexAst::Repeat(Box::new(byte_set(b" \t\n")), 0, self.ws_bound),
                lit("<arg_value>"),
            ],
            XmlStyle::Cohere => {
                // JSON values are `json`; natively rendered ones come as `dict`/`list`.
                let t = if raw {
                    vec!["raw"]
                } else {
                    types
                        .iter()
                        .map(|t| match *t {
                            "dict" | "list" => *t,
                            _ => "json",
                        })
                        .collect()
                };
                let name = match key {
                    Key::Unnamed => RegexAst::Epsilon,
                    _ => RegexAst::Concat(vec![lit(" name=\""), key_re(false), lit("\"")]),
                };
                vec![
                    lit("<cofl:value"),
                    name,
                    lit(" type=\""),
                    one_of(t),
                    lit("\">"),
                ]
            }
            XmlStyle::KimiK3 => {
                let t = if raw {
                    vec!["string"]
                } else {
                    // The model's renderer writes every number as `number`.
                    types
                        .iter()
                        .map(|t| if *t == "integer" { "number" } else { *t })
                        .collect()
                };
                vec![
                    self.special_text("<|open|>argument key=\""),
                    key_re(true),
                    lit("\" type=\""),
                    one_of(t),
                    self.special_text("\"<|sep|>"),
                ]
            }
        };
        RegexAst::Concat(parts)
    }

    /// The JSON value of `schema` (compiled with the root's `$defs`/`definitions`
    /// attached, so local references into them resolve), embedded; its start nonterminal.
    fn json_value(&mut self, schema: &Value, ptr: &str) -> Result<u32, GrammarError> {
        let mut doc = schema.clone();
        self.budget.charge(value_bytes(schema))?;
        if let (Value::Object(d), Value::Object(root)) = (&mut doc, self.root) {
            for k in ["$defs", "definitions"] {
                if let Some(defs) = root.get(k)
                    && !d.contains_key(k)
                {
                    self.budget.charge(value_bytes(defs))?;
                    d.insert(k.into(), defs.clone());
                }
            }
        }
        let (sub, _report) =
            json::compile(&doc, self.json, self.limits, self.budget).map_err(|e| {
                if e.pointer.is_some() {
                    e.nested_at(ptr)
                } else {
                    e
                }
            })?;
        Ok(self.ir.embed(sub))
    }

    /// Which kinds of value `schema` admits (see [`ValueKinds`]).
    fn classify(&self, schema: &Value, ptr: &str) -> Result<ValueKinds, GrammarError> {
        let s = resolve_ref(self.root, schema, ptr)?;
        let branches = s
            .get("anyOf")
            .or_else(|| s.get("oneOf"))
            .and_then(Value::as_array);
        let simple = s.get("type").is_some() || s.get("const").is_some() || s.get("enum").is_some();
        match branches {
            Some(bs) if !simple && bs.len() <= MAX_BRANCHES => {
                let mut out = ValueKinds {
                    raw: None,
                    json: false,
                    types: Vec::new(),
                };
                let mut raws = Vec::new();
                for (i, b) in bs.iter().enumerate() {
                    let b = resolve_ref(self.root, b, &pointer(ptr, &i.to_string()))?;
                    let k = if b.get("anyOf").is_some() || b.get("oneOf").is_some() {
                        self.simple_kinds(&Value::Bool(true))
                    } else {
                        self.simple_kinds(b)
                    };
                    raws.extend(k.raw);
                    out.json |= k.json;
                    out.types.extend(k.types);
                }
                if !raws.is_empty() {
                    out.raw = Some(if raws.len() == 1 {
                        raws.pop().unwrap_or(RegexAst::Nothing)
                    } else {
                        RegexAst::Or(raws)
                    });
                }
                Ok(out)
            }
            _ => Ok(self.simple_kinds(s)),
        }
    }

    /// Kinds of a schema without `anyOf`/`oneOf` at its top (or with a `type`).
    fn simple_kinds(&self, s: &Value) -> ValueKinds {
        let mut out = ValueKinds {
            raw: None,
            json: false,
            types: Vec::new(),
        };
        let type_of = |v: &Value| -> &'static str {
            match v {
                Value::String(_) => "string",
                Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
                Value::Number(_) => "number",
                Value::Bool(_) => "boolean",
                Value::Null => "null",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            }
        };
        match s {
            Value::Bool(false) => return out,
            Value::Object(_) => {}
            _ => {
                out.raw = Some(star(sigma()));
                out.json = true;
                out.types = ALL_TYPES.to_vec();
                return out;
            }
        }
        let literals = s.get("const").map(|c| vec![c]).or_else(|| {
            s.get("enum")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
        });
        if let Some(values) = literals {
            let mut strings = Vec::new();
            for v in values {
                match v {
                    Value::String(t) => strings.push(RegexAst::literal(t)),
                    other => {
                        out.json = true;
                        out.types.push(type_of(other));
                    }
                }
            }
            if !strings.is_empty() {
                out.raw = Some(RegexAst::Or(strings));
            }
            return out;
        }
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => ALL_TYPES.to_vec(),
        };
        for t in types {
            match t {
                "string" => out.raw = Some(self.string_constraint(s)),
                "number" | "integer" | "boolean" | "object" | "array" | "null" => {
                    out.json = true;
                    if let Some(&name) = ALL_TYPES.iter().find(|n| **n == t) {
                        out.types.push(name);
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The raw-text constraint of a string schema: `minLength`/`maxLength` (characters),
    /// `pattern` (a search, as JSON Schema says); `format` is not checked (a superset).
    fn string_constraint(&self, s: &Value) -> RegexAst {
        let mut parts = vec![star(sigma())];
        let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = s.get("maxLength").and_then(Value::as_u64);
        let cap = u64::from(self.limits.max_repeat);
        if min > 0 || max.is_some_and(|m| m <= cap) {
            let min = min.min(cap) as u32;
            let max = max.filter(|&m| m <= cap).map(|m| m as u32);
            let any_char = RegexAst::Pattern(
                ".".into(),
                PatternFlags {
                    dot_matches_new_line: true,
                    ..PatternFlags::default()
                },
            );
            parts.push(RegexAst::Repeat(Box::new(any_char), min, max));
        }
        // A search: `.*(?:p).*`, without the `.*` on an anchored side. A pattern with
        // alternation and anchors (`^a|b`), or one that does not translate (look-around,
        // back-references), is dropped: a superset.
        if let Some(p) = s.get("pattern").and_then(Value::as_str)
            && let Ok(t) = json::ecma::translate(p)
            && !(t.contains('|') && (t.contains('^') || t.contains('$')))
        {
            let body = t.strip_prefix('^');
            let head = if body.is_some() { "" } else { "(?s:.)*" };
            let body = body.unwrap_or(&t);
            let anchored_end = body.ends_with('$') && !body.ends_with("\\$");
            let (body, tail) = match body.strip_suffix('$') {
                Some(b) if anchored_end => (b, ""),
                _ => (body, "(?s:.)*"),
            };
            parts.push(RegexAst::Pattern(
                format!("{head}(?:{body}){tail}"),
                PatternFlags::default(),
            ));
        }
        if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::And(parts)
        }
    }
}

/// Whether a (resolved) schema is rendered natively by Cohere: a schema of type `object`
/// (or with `properties` and no `type`) as a `dict`, of type `array` as a `list`.
fn native_kind(s: &Value) -> Option<Native> {
    match s.get("type") {
        Some(Value::String(t)) if t == "object" => Some(Native::Dict),
        Some(Value::String(t)) if t == "array" => Some(Native::List),
        None if s.get("properties").is_some()
            && s.get("anyOf").is_none()
            && s.get("oneOf").is_none() =>
        {
            Some(Native::Dict)
        }
        _ => None,
    }
}

/// `s` with `$ref` chains followed (local pointers into `root` only).
fn resolve_ref<'v>(root: &'v Value, s: &'v Value, ptr: &str) -> Result<&'v Value, GrammarError> {
    let mut cur = s;
    for _ in 0..MAX_REF_HOPS {
        let Some(r) = cur.get("$ref").and_then(Value::as_str) else {
            return Ok(cur);
        };
        let Some(p) = r.strip_prefix('#') else {
            return Err(unsupported(
                ptr,
                "only local $ref (`#/...`) is supported here",
            ));
        };
        cur = root
            .pointer(p)
            .ok_or_else(|| unsupported(ptr, "unresolved $ref"))?;
    }
    Err(unsupported(ptr, "$ref chain too long"))
}

/// The declared and required names, as literals (excluded from additional keys).
fn elements_names(props: &Map<String, Value>, required: &[&str]) -> Vec<RegexAst> {
    let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
    names.extend(required.iter().copied());
    names.sort_unstable();
    names.dedup();
    names.into_iter().map(RegexAst::literal).collect()
}

#[cfg(test)]
mod tests;
