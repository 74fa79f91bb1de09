//! Lowering structural-tag formats to grammar IR (`core/docs/structural.md`).
//!
//! The format tree is walked on an explicit work list: each item is one format to lower into
//! a nonterminal allocated by its parent, with what must follow it (`follow`: literals the
//! format consumes itself, so that free text ends at their first occurrence in one lexeme).
//! A format's rules name its children's nonterminals; the children are lowered later, so no
//! step waits for another and the input's depth costs heap, not stack. Every rule and lexeme
//! is charged to the [`CompileBudget`] and counted against [`Limits::max_grammar_size`].

use alloc::borrow::ToOwned;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Map, Value};

use super::text::{self, Piece, SpecialNames, TextRule};
use super::xml::{self, XmlStyle};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::grammar::json::{self, JsonOptions, PropertyOrder, Whitespace};
use crate::grammar::lark;
use crate::ir::{GrammarIr, IrLexeme, IrRule, IrSymbol, LexemeMode};
use crate::limits::{CompileBudget, Limits};
use crate::regex::RegexAst;
use crate::vocab::Vocabulary;

/// Lower structural-tag JSON text (`{"type": "structural_tag", "format": ...}`, a bare
/// format object, or the legacy `{"structures": [...], "triggers": [...]}` form) to IR.
/// Strings equal to a control token's name resolve to that token (see `core/docs/structural.md`).
pub fn lower(
    text: &str,
    json: &JsonOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarIr, GrammarError> {
    let mut root = json::parse_schema_within(text, budget)?;
    // The special-token names (`SpecialNames`): each name, its ids and a map entry.
    let names_bytes = vocab.special_tokens().iter().fold(0usize, |acc, &id| {
        acc.saturating_add(vocab.token_text(id).len() + 64)
    });
    budget.charge(names_bytes).map_err(GrammarError::limit)?;
    let legacy = root.get("format").is_none() && root.get("structures").is_some();
    let (format, ptr) = top_format(&mut root)?;
    let mut l = Lowerer::new(json, vocab, limits, budget);
    let start = l.ir.add_nonterminal("start", None);
    l.ir.start = start;
    l.work.push(Work {
        nt: start,
        v: &format,
        ptr,
        follow: None,
        skip_begin: false,
    });
    match l.run() {
        Ok(()) => Ok(l.ir),
        Err(e) if legacy => Err(legacy_pointer(e)),
        Err(e) => Err(e),
    }
}

/// An error of the legacy form, pointing into its `structures` instead of the equivalent
/// `triggered_tags` format's `tags`.
fn legacy_pointer(e: GrammarError) -> GrammarError {
    let Some(rest) = e.pointer().and_then(|p| p.strip_prefix("/tags/")) else {
        return e;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (index, tail) = rest.split_at(digits);
    let tail = if let Some(t) = tail.strip_prefix("/content/json_schema") {
        format!("/schema{t}")
    } else if let Some(t) = tail.strip_prefix("/content") {
        format!("/schema{t}")
    } else {
        tail.to_string()
    };
    let pointer = format!("/structures/{index}{tail}");
    e.with_pointer(pointer)
}

/// The format of a top-level value and its JSON pointer; the legacy form becomes an equal
/// `triggered_tags` format (its schemas moved, not copied).
fn top_format(root: &mut Value) -> Result<(Value, String), GrammarError> {
    let Some(obj) = root.as_object_mut() else {
        return Err(err_syntax("", "a structural tag must be a JSON object"));
    };
    if let Some(f) = obj.get_mut("format") {
        return Ok((f.take(), "/format".into()));
    }
    if obj.contains_key("structures") {
        let triggers = obj
            .get_mut("triggers")
            .map(Value::take)
            .unwrap_or(Value::Null);
        let Some(structures) = obj.get_mut("structures").and_then(Value::as_array_mut) else {
            return Err(err_syntax("/structures", "must be an array"));
        };
        let mut tags = Vec::new();
        for (i, s) in structures.iter_mut().enumerate() {
            let Some(s) = s.as_object_mut() else {
                return Err(err_syntax(&format!("/structures/{i}"), "must be an object"));
            };
            let mut content = Map::new();
            content.insert("type".into(), Value::String("json_schema".into()));
            let schema = s.get_mut("schema").map(Value::take).unwrap_or(Value::Null);
            content.insert("json_schema".into(), schema);
            let mut tag = Map::new();
            tag.insert("type".into(), Value::String("tag".into()));
            for key in ["begin", "end"] {
                let v = s.get_mut(key).map(Value::take).unwrap_or(Value::Null);
                tag.insert(key.into(), v);
            }
            tag.insert("content".into(), Value::Object(content));
            tags.push(Value::Object(tag));
        }
        let mut f = Map::new();
        f.insert("type".into(), Value::String("triggered_tags".into()));
        f.insert("triggers".into(), triggers);
        f.insert("tags".into(), Value::Array(tags));
        return Ok((Value::Object(f), String::new()));
    }
    if obj.get("type").and_then(Value::as_str) == Some("structural_tag") {
        return Err(err_syntax("", "missing \"format\""));
    }
    Ok((root.take(), String::new()))
}

fn err(kind: GrammarErrorKind, ptr: &str, msg: &str) -> GrammarError {
    let at = if ptr.is_empty() { "/" } else { ptr };
    GrammarError::at_pointer(kind, at, msg)
}

fn err_syntax(ptr: &str, msg: &str) -> GrammarError {
    err(GrammarErrorKind::Syntax, ptr, msg)
}

fn err_unsupported(ptr: &str, msg: &str) -> GrammarError {
    err(GrammarErrorKind::Unsupported, ptr, msg)
}

/// A located limit error.
fn err_limit(ptr: &str, kind: LimitKind) -> GrammarError {
    err(GrammarErrorKind::Limit(kind), ptr, &kind.to_string())
}

/// A JSON pointer one step below `ptr`.
fn child(ptr: &str, key: impl core::fmt::Display) -> String {
    let key = key.to_string().replace('~', "~0").replace('/', "~1");
    format!("{ptr}/{key}")
}

/// One format to lower.
struct Work<'v> {
    /// The nonterminal that derives it.
    nt: u32,
    v: &'v Value,
    ptr: String,
    /// Index into [`Lowerer::follows`]: literals the format must also derive after itself.
    follow: Option<usize>,
    /// A `const_string` or `tag` whose literal (or `begin`) the previous element consumed.
    skip_begin: bool,
}

/// A literal: its pieces and its spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lit {
    pieces: Vec<Piece>,
    raw: Vec<u8>,
    /// In a follow: the nonterminal derived after this literal (the rest of the `or`
    /// alternative the literal starts), if any.
    then: Option<u32>,
}

impl Lit {
    fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
}

/// A format that starts with a literal: the literal, the format, its pointer.
type Led<'v> = (Lit, &'v Value, String);

/// What may come after a stop of free text (a trigger, a dispatch pattern): alternatives,
/// each a symbol sequence (none: the stop may not occur).
type After = Vec<Vec<IrSymbol>>;

/// Options of triggered free text (`triggered_tags`, `dispatch`, token versions).
struct Triggered {
    stops: Vec<(Lit, After)>,
    rule: TextRule,
    /// Special tokens allowed inside the free text.
    interleave: Vec<u32>,
    at_least_one: bool,
    stop_after_first: bool,
}

struct Lowerer<'a, 'v> {
    ir: GrammarIr,
    json: &'a JsonOptions,
    vocab: &'a Vocabulary,
    limits: &'a Limits,
    budget: &'a mut CompileBudget,
    names: SpecialNames,
    work: Vec<Work<'v>>,
    follows: Vec<Vec<Lit>>,
    follow_nt: Vec<Option<u32>>,
    /// Literal lexemes by their bytes (special tokens by their encodings' alternation).
    lit_lexemes: BTreeMap<Vec<u8>, u32>,
    special_lexemes: BTreeMap<Vec<u32>, u32>,
    /// Nonterminals of formats followed by something that does not start with a literal
    /// (a `json_schema`, `regex`, `grammar`, a repetition of themselves): free text at
    /// their end could not be told apart from what follows (see [`Lowerer::triggered`]).
    open: alloc::collections::BTreeSet<u32>,
    /// Grammar symbols so far (rule right-hand sides plus lexemes).
    symbols: usize,
    formats: usize,
}

impl<'a, 'v> Lowerer<'a, 'v> {
    fn new(
        json: &'a JsonOptions,
        vocab: &'a Vocabulary,
        limits: &'a Limits,
        budget: &'a mut CompileBudget,
    ) -> Self {
        Lowerer {
            ir: GrammarIr::default(),
            json,
            vocab,
            limits,
            budget,
            names: SpecialNames::new(vocab),
            work: Vec::new(),
            follows: Vec::new(),
            follow_nt: Vec::new(),
            lit_lexemes: BTreeMap::new(),
            special_lexemes: BTreeMap::new(),
            open: alloc::collections::BTreeSet::new(),
            symbols: 0,
            formats: 0,
        }
    }

    fn run(&mut self) -> Result<(), GrammarError> {
        while let Some(w) = self.work.pop() {
            self.formats += 1;
            if self.formats > self.limits.max_grammar_size {
                return Err(err_limit(&w.ptr, LimitKind::GrammarSize));
            }
            self.budget.spend(16).map_err(|k| err_limit(&w.ptr, k))?;
            self.format(w)?;
        }
        Ok(())
    }

    // ---- IR building, charged ----

    fn count(&mut self, n: usize, ptr: &str) -> Result<(), GrammarError> {
        self.symbols = self.symbols.saturating_add(n);
        if self.symbols > self.limits.max_grammar_size {
            return Err(err_limit(ptr, LimitKind::GrammarSize));
        }
        Ok(())
    }

    fn nt(&mut self, name: &str, ptr: &str) -> Result<u32, GrammarError> {
        self.budget
            .charge(core::mem::size_of::<crate::ir::IrNonterminal>() + name.len())
            .map_err(|k| err_limit(ptr, k))?;
        Ok(self.ir.add_nonterminal(name, None))
    }

    fn rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>, ptr: &str) -> Result<(), GrammarError> {
        self.count(rhs.len().max(1), ptr)?;
        self.budget
            .charge(core::mem::size_of::<IrRule>() + rhs.len() * core::mem::size_of::<IrSymbol>())
            .map_err(|k| err_limit(ptr, k))?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    /// One rule per alternative.
    fn alts(&mut self, lhs: u32, alts: Vec<Vec<IrSymbol>>, ptr: &str) -> Result<(), GrammarError> {
        for rhs in alts {
            self.rule(lhs, rhs, ptr)?;
        }
        Ok(())
    }

    /// A nonterminal deriving the alternatives.
    fn nt_alts(
        &mut self,
        name: &str,
        alts: Vec<Vec<IrSymbol>>,
        ptr: &str,
    ) -> Result<u32, GrammarError> {
        let nt = self.nt(name, ptr)?;
        self.alts(nt, alts, ptr)?;
        Ok(nt)
    }

    fn lexeme(&mut self, name: String, regex: RegexAst, ptr: &str) -> Result<u32, GrammarError> {
        let (_, nodes) = regex.structural_hash();
        self.count(1, ptr)?;
        self.budget
            .charge(
                core::mem::size_of::<IrLexeme>()
                    + 2 * name.len()
                    + nodes * core::mem::size_of::<RegexAst>(),
            )
            .map_err(|k| err_limit(ptr, k))?;
        self.budget
            .spend(nodes as u64)
            .map_err(|k| err_limit(ptr, k))?;
        Ok(self.ir.add_lexeme(IrLexeme {
            name,
            regex,
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        }))
    }

    fn text_lexeme(&mut self, bytes: &[u8], ptr: &str) -> Result<u32, GrammarError> {
        if let Some(&l) = self.lit_lexemes.get(bytes) {
            return Ok(l);
        }
        self.budget
            .charge(bytes.len().saturating_mul(2))
            .map_err(|k| err_limit(ptr, k))?;
        let l = self.lexeme(text::show(bytes), RegexAst::Literal(bytes.to_vec()), ptr)?;
        self.lit_lexemes.insert(bytes.to_vec(), l);
        Ok(l)
    }

    /// The lexeme of one control token (any of `ids`).
    fn special_lexeme(&mut self, ids: &[u32], ptr: &str) -> Result<u32, GrammarError> {
        if let Some(&l) = self.special_lexemes.get(ids) {
            return Ok(l);
        }
        let name = match ids.first() {
            Some(&id) => String::from_utf8_lossy(self.vocab.token_text(id)).into_owned(),
            None => String::new(),
        };
        let mut encodings: Vec<RegexAst> = ids
            .iter()
            .map(|&id| RegexAst::Literal(Vocabulary::special_encoding(id)))
            .collect();
        let regex = if encodings.len() == 1 {
            encodings.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::Or(encodings)
        };
        let l = self.lexeme(name, regex, ptr)?;
        self.special_lexemes.insert(ids.to_vec(), l);
        Ok(l)
    }

    /// The symbols of a literal's pieces.
    fn pieces(&mut self, pieces: &[Piece], ptr: &str) -> Result<Vec<IrSymbol>, GrammarError> {
        let mut out = Vec::with_capacity(pieces.len());
        for p in pieces {
            let l = match p {
                Piece::Text(t) => self.text_lexeme(t, ptr)?,
                Piece::Special(ids) => self.special_lexeme(ids, ptr)?,
            };
            out.push(IrSymbol::Lexeme(l));
        }
        Ok(out)
    }

    fn lit(&mut self, s: &str, ptr: &str) -> Result<Lit, GrammarError> {
        self.budget
            .spend((s.len() as u64).saturating_mul(self.names.cost_per_byte() as u64 + 1))
            .map_err(|k| err_limit(ptr, k))?;
        self.budget
            .charge(s.len().saturating_mul(3))
            .map_err(|k| err_limit(ptr, k))?;
        Ok(Lit {
            pieces: self.names.split(s.as_bytes()),
            raw: s.as_bytes().to_vec(),
            then: None,
        })
    }

    /// A string or a `token` format as a literal (`begin`, `end` of a tag).
    fn lit_value(&mut self, v: &Value, ptr: &str) -> Result<Lit, GrammarError> {
        match v {
            Value::String(s) => self.lit(s, ptr),
            Value::Object(_) if v.get("type").and_then(Value::as_str) == Some("token") => {
                let ids =
                    self.token_ids(v.get("token").unwrap_or(&Value::Null), &child(ptr, "token"))?;
                Ok(Lit {
                    raw: self
                        .vocab
                        .token_text(ids.first().copied().unwrap_or(0))
                        .to_vec(),
                    pieces: vec![Piece::Special(ids)],
                    then: None,
                })
            }
            _ => Err(err_syntax(ptr, "must be a string or a token format")),
        }
    }

    /// Marks `nt`'s format as followed by something not led by a literal (when `open`).
    fn mark_open(&mut self, nt: u32, open: bool) {
        if open {
            self.open.insert(nt);
        }
    }

    /// The special tokens in the follow literals (a tag's end tokens): token-level content
    /// before them must not use them, or the content could run past its end.
    fn follow_specials(&self, follow: Option<usize>) -> Vec<u32> {
        let lits = follow.and_then(|f| self.follows.get(f));
        lits.into_iter()
            .flatten()
            .flat_map(|l| l.pieces.iter())
            .filter_map(|p| match p {
                Piece::Special(ids) => Some(ids.iter().copied()),
                Piece::Text(_) => None,
            })
            .flatten()
            .collect()
    }

    fn add_follow(&mut self, lits: Vec<Lit>) -> usize {
        self.follows.push(lits);
        self.follow_nt.push(None);
        self.follows.len() - 1
    }

    /// The symbols deriving one of the follow literals (nothing when there are none).
    fn follow_syms(
        &mut self,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<Vec<IrSymbol>, GrammarError> {
        let Some(f) = follow else {
            return Ok(Vec::new());
        };
        if let Some(Some(nt)) = self.follow_nt.get(f) {
            return Ok(vec![IrSymbol::Nonterminal(*nt)]);
        }
        let lits = self.follows.get(f).cloned().unwrap_or_default();
        let mut alts = Vec::with_capacity(lits.len());
        for lit in &lits {
            let mut alt = self.pieces(&lit.pieces, ptr)?;
            alt.extend(lit.then.map(IrSymbol::Nonterminal));
            alts.push(alt);
        }
        if let [one] = alts.as_slice() {
            return Ok(one.clone());
        }
        let nt = self.nt_alts("follow", alts, ptr)?;
        if let Some(slot) = self.follow_nt.get_mut(f) {
            *slot = Some(nt);
        }
        Ok(vec![IrSymbol::Nonterminal(nt)])
    }

    /// Queue `v` to be lowered into a fresh nonterminal; returns it.
    fn sub(
        &mut self,
        v: &'v Value,
        ptr: String,
        follow: Option<usize>,
        skip_begin: bool,
    ) -> Result<u32, GrammarError> {
        let name = format!("format@{ptr}");
        let nt = self.nt(&name, &ptr)?;
        self.budget
            .charge_for::<Work<'v>>(1)
            .map_err(|k| err_limit(&ptr, k))?;
        self.work.push(Work {
            nt,
            v,
            ptr,
            follow,
            skip_begin,
        });
        Ok(nt)
    }

    // ---- field access ----

    fn field<'x>(v: &'x Value, key: &str, ptr: &str) -> Result<&'x Value, GrammarError> {
        v.get(key)
            .ok_or_else(|| err_syntax(ptr, &format!("missing field \"{key}\"")))
    }

    fn str_field<'x>(v: &'x Value, key: &str, ptr: &str) -> Result<&'x str, GrammarError> {
        Self::field(v, key, ptr)?
            .as_str()
            .ok_or_else(|| err_syntax(&child(ptr, key), "must be a string"))
    }

    fn bool_field(v: &Value, key: &str, default: bool, ptr: &str) -> Result<bool, GrammarError> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(err_syntax(&child(ptr, key), "must be a boolean")),
        }
    }

    fn array_field<'x>(
        v: &'x Value,
        key: &str,
        ptr: &str,
        required: bool,
    ) -> Result<&'x [Value], GrammarError> {
        match v.get(key) {
            None | Some(Value::Null) if !required => Ok(&[]),
            None => Err(err_syntax(ptr, &format!("missing field \"{key}\""))),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(err_syntax(&child(ptr, key), "must be an array")),
        }
    }

    /// A non-negative integer field, or `None` when absent or null.
    fn count_field(v: &Value, key: &str, ptr: &str) -> Result<Option<u64>, GrammarError> {
        match v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| err_syntax(&child(ptr, key), "must be a non-negative integer")),
        }
    }

    fn strings(&mut self, v: &Value, key: &str, ptr: &str) -> Result<Vec<Lit>, GrammarError> {
        let arr = Self::array_field(v, key, ptr, false)?;
        let mut out = Vec::with_capacity(arr.len());
        for (i, s) in arr.iter().enumerate() {
            let p = child(&child(ptr, key), i);
            let s = s
                .as_str()
                .ok_or_else(|| err_syntax(&p, "must be a string"))?;
            out.push(self.lit(s, &p)?);
        }
        Ok(out)
    }

    /// The special ids a `token` value names (an id or a name); text tokens are refused.
    fn token_ids(&self, v: &Value, ptr: &str) -> Result<Vec<u32>, GrammarError> {
        const TEXT: &str = "a text token: sieve constrains text by its bytes; use const_string";
        match v {
            Value::Number(n) => {
                let id = n
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| err_syntax(ptr, "must be a token id or name"))?;
                if (id as usize) >= self.vocab.vocab_size() {
                    return Err(err_syntax(ptr, &format!("token id {id} is out of range")));
                }
                if !self.vocab.is_special(id) {
                    return Err(err_unsupported(ptr, &format!("token {id} is {TEXT}")));
                }
                Ok(vec![id])
            }
            Value::String(s) => {
                let ids = self.names.ids(s.as_bytes());
                if ids.is_empty() {
                    return Err(err_unsupported(
                        ptr,
                        &format!(
                            "{} is not a special token of the vocabulary ({TEXT})",
                            text::show(s.as_bytes())
                        ),
                    ));
                }
                Ok(ids.to_vec())
            }
            _ => Err(err_syntax(ptr, "must be a token id or name")),
        }
    }

    /// The special ids of a token list field (each must be a special token).
    fn token_list(&self, v: &Value, key: &str, ptr: &str) -> Result<Vec<u32>, GrammarError> {
        let arr = Self::array_field(v, key, ptr, false)?;
        let mut out = Vec::new();
        for (i, t) in arr.iter().enumerate() {
            out.extend(self.token_ids(t, &child(&child(ptr, key), i))?);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// Special tokens allowed in free text: all but `excluded` and the EOS tokens.
    fn interleave(&self, excluded: &[u32]) -> Vec<u32> {
        self.vocab
            .special_tokens()
            .iter()
            .copied()
            .filter(|id| !excluded.contains(id) && !self.vocab.eos_tokens().contains(id))
            .collect()
    }

    fn no_max_tokens(v: &Value, ptr: &str) -> Result<(), GrammarError> {
        match v.get("max_tokens") {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(err_unsupported(
                &child(ptr, "max_tokens"),
                "token counting is not in sieve's byte-level grammars (max_tokens must be null)",
            )),
        }
    }

    // ---- formats ----

    fn format(&mut self, w: Work<'v>) -> Result<(), GrammarError> {
        let v = w.v;
        let ptr = w.ptr.as_str();
        if !v.is_object() {
            return Err(err_syntax(ptr, "a format must be a JSON object"));
        }
        let ty = Self::str_field(v, "type", ptr)?;
        let nt = w.nt;
        match ty {
            "const_string" => {
                let value = Self::str_field(v, "value", ptr)?;
                let mut rhs = Vec::new();
                if !w.skip_begin {
                    let lit = self.lit(value, &child(ptr, "value"))?;
                    rhs = self.pieces(&lit.pieces, ptr)?;
                }
                rhs.extend(self.follow_syms(w.follow, ptr)?);
                self.rule(nt, rhs, ptr)
            }
            "json_schema" | "qwen_xml_parameter" => self.json_schema(v, ty, nt, w.follow, ptr),
            "any_text" => self.any_text(v, nt, w.follow, ptr),
            "grammar" => self.grammar_format(v, nt, w.follow, ptr),
            "regex" => self.regex_format(v, nt, w.follow, ptr),
            "sequence" => self.sequence(v, nt, w.follow, ptr),
            "or" => {
                let elems = Self::array_field(v, "elements", ptr, true)?;
                if elems.is_empty() {
                    return Err(err_syntax(&child(ptr, "elements"), "must not be empty"));
                }
                let open = self.open.contains(&nt);
                for (i, e) in elems.iter().enumerate() {
                    let c = self.sub(e, child(&child(ptr, "elements"), i), w.follow, false)?;
                    self.mark_open(c, open);
                    self.rule(nt, vec![IrSymbol::Nonterminal(c)], ptr)?;
                }
                Ok(())
            }
            "optional" | "star" | "plus" | "repeat" => self.repeat(v, ty, nt, w.follow, ptr),
            "tag" => self.tag(v, nt, w.follow, w.skip_begin, ptr),
            "triggered_tags" => self.triggered_tags(v, nt, w.follow, ptr),
            "tags_with_separator" => self.tags_with_separator(v, nt, w.follow, ptr),
            "dispatch" | "token_dispatch" => {
                self.dispatch(v, ty == "token_dispatch", nt, w.follow, ptr)
            }
            "token" => {
                let ids = self.token_ids(Self::field(v, "token", ptr)?, &child(ptr, "token"))?;
                let l = self.special_lexeme(&ids, ptr)?;
                let mut rhs = vec![IrSymbol::Lexeme(l)];
                rhs.extend(self.follow_syms(w.follow, ptr)?);
                self.rule(nt, rhs, ptr)
            }
            "exclude_token" => self.exclude_token(v, nt, w.follow, ptr),
            "any_tokens" => {
                Self::no_max_tokens(v, ptr)?;
                let mut excluded = self.token_list(v, "exclude_tokens", ptr)?;
                excluded.extend(self.follow_specials(w.follow));
                let t = Triggered {
                    stops: Vec::new(),
                    rule: TextRule::default(),
                    interleave: self.interleave(&excluded),
                    at_least_one: false,
                    stop_after_first: true,
                };
                self.triggered(nt, t, w.follow, ptr)
            }
            "token_triggered_tags" => self.token_triggered_tags(v, nt, w.follow, ptr),
            _ => Err(err_syntax(
                &child(ptr, "type"),
                &format!("unknown format type {}", text::show(ty.as_bytes())),
            )),
        }
    }

    /// The `any_text` format: free text (with `excludes` and `max_chars`) up to what follows.
    fn any_text(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        Self::no_max_tokens(v, ptr)?;
        let mut rule = TextRule::default();
        for x in self.strings(v, "excludes", ptr)? {
            rule.excludes.push(x.raw);
        }
        if let Some(n) = Self::count_field(v, "max_chars", ptr)? {
            let n = u32::try_from(n)
                .ok()
                .filter(|&n| n <= self.limits.max_repeat)
                .ok_or_else(|| err_limit(&child(ptr, "max_chars"), LimitKind::RepeatCount))?;
            rule.max_chars = Some(n);
        }
        let t = Triggered {
            stops: Vec::new(),
            rule,
            interleave: Vec::new(),
            at_least_one: false,
            stop_after_first: true,
        };
        self.triggered(nt, t, follow, ptr)
    }

    /// The `grammar` format: an embedded GBNF (`::=`) or Lark grammar.
    fn grammar_format(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let src = Self::str_field(v, "grammar", ptr)?;
        let located = |e: GrammarError| {
            let mut e2 = err(e.kind.clone(), &child(ptr, "grammar"), &e.message);
            e2.span = e.span;
            e2
        };
        // XGrammar's EBNF is GBNF (`root ::= ...`): its one-code-point lexemes are
        // kept (the regular-rule pass decides lexemes for a whole grammar, and what
        // follows the embedded one is not in it).
        let sub = if src.contains("::=") {
            let opts = crate::grammar::gbnf::GbnfOptions::default();
            crate::grammar::gbnf::lower(src, &opts, self.vocab, self.limits, self.budget)
                .map_err(located)?
        } else {
            let ctx = lark::Context {
                specials: self.vocab,
                json: self.json,
                grammars: &lark::NoSubGrammars,
            };
            lark::parse_in(src, &ctx, self.limits, self.budget).map_err(located)?
        };
        if sub.lexemes.iter().any(|l| l.ignore) {
            return Err(err_unsupported(
                &child(ptr, "grammar"),
                "%ignore in an embedded grammar (sieve's lexer would apply it to the whole structural tag)",
            ));
        }
        self.embed(nt, sub, follow, ptr)
    }

    /// The `regex` format: one lexeme.
    fn regex_format(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let pattern = Self::str_field(v, "pattern", ptr)?;
        self.budget
            .charge(pattern.len().saturating_mul(4))
            .map_err(|k| err_limit(ptr, k))?;
        // Text never holds `0xFF` (a byte-mode pattern could name it).
        let regex = RegexAst::And(vec![
            RegexAst::Pattern(pattern.into(), Default::default()),
            text::sigma_star(),
        ]);
        let l = self.lexeme(format!("/{pattern}/"), regex, ptr)?;
        let mut rhs = vec![IrSymbol::Lexeme(l)];
        rhs.extend(self.follow_syms(follow, ptr)?);
        self.rule(nt, rhs, ptr)
    }

    /// The `exclude_token` format: one token, special (not listed) or text.
    fn exclude_token(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        // Text tokens in the list cannot be told apart from other text: ignored
        // (the text branch is a superset of "one text token").
        let mut excluded = self.token_ids_lenient(v, "exclude_tokens", ptr)?;
        excluded.extend(self.follow_specials(follow));
        let allowed = self.interleave(&excluded);
        let follow = self.follow_syms(follow, ptr)?;
        if !allowed.is_empty() {
            let l = self.specials_lexeme(&allowed, ptr)?;
            let mut rhs = vec![IrSymbol::Lexeme(l)];
            rhs.extend(follow.iter().copied());
            self.rule(nt, rhs, ptr)?;
        }
        let l = self.lexeme("TEXT+".into(), text::sigma_plus(), ptr)?;
        let mut rhs = vec![IrSymbol::Lexeme(l)];
        rhs.extend(follow);
        self.rule(nt, rhs, ptr)
    }

    /// Special ids of a token list, skipping text tokens (`exclude_token`).
    fn token_ids_lenient(&self, v: &Value, key: &str, ptr: &str) -> Result<Vec<u32>, GrammarError> {
        let arr = Self::array_field(v, key, ptr, false)?;
        let mut out = Vec::new();
        for (i, t) in arr.iter().enumerate() {
            match self.token_ids(t, &child(&child(ptr, key), i)) {
                Ok(ids) => out.extend(ids),
                Err(e) if e.kind == GrammarErrorKind::Unsupported => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// One lexeme matching any of the special tokens `ids`.
    fn specials_lexeme(&mut self, ids: &[u32], ptr: &str) -> Result<u32, GrammarError> {
        self.budget
            .charge_for::<RegexAst>(ids.len())
            .map_err(|k| err_limit(ptr, k))?;
        let regex = RegexAst::Or(
            ids.iter()
                .map(|&id| RegexAst::Literal(Vocabulary::special_encoding(id)))
                .collect(),
        );
        self.lexeme("<special>".into(), regex, ptr)
    }

    fn embed(
        &mut self,
        nt: u32,
        sub: GrammarIr,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let n: usize = sub.rules.iter().map(|r| r.rhs.len()).sum::<usize>() + sub.lexemes.len();
        self.count(n, ptr)?;
        let start = self.ir.embed(sub);
        let mut rhs = vec![IrSymbol::Nonterminal(start)];
        rhs.extend(self.follow_syms(follow, ptr)?);
        self.rule(nt, rhs, ptr)
    }

    fn json_schema(
        &mut self,
        v: &Value,
        ty: &str,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let sptr = child(ptr, "json_schema");
        let raw = Self::field(v, "json_schema", ptr)?;
        let parsed;
        let schema = match raw {
            Value::String(s) => {
                parsed = json::parse_schema_within(s, self.budget).map_err(|mut e| {
                    // A span in the schema string, not in the tag: the pointer says where.
                    e.span = None;
                    e.with_pointer(&sptr)
                })?;
                &parsed
            }
            Value::Bool(_) | Value::Object(_) => raw,
            _ => {
                return Err(err_syntax(
                    &sptr,
                    "must be a JSON Schema (object or boolean)",
                ));
            }
        };
        let style = if ty == "qwen_xml_parameter" {
            Some(XmlStyle::Qwen)
        } else {
            match v.get("style") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s == "json" => None,
                Some(Value::String(s)) => Some(XmlStyle::from_name(s).ok_or_else(|| {
                    err_unsupported(
                        &child(ptr, "style"),
                        &format!("unknown style {}", text::show(s.as_bytes())),
                    )
                })?),
                Some(_) => return Err(err_syntax(&child(ptr, "style"), "must be a string")),
            }
        };
        let any_order = Self::bool_field(v, "any_order", false, ptr)?;
        let mut opts = self.json.clone();
        // XGrammar's default (`any_order: false`) is schema order, whatever the caller's
        // options say.
        opts.property_order = if any_order {
            PropertyOrder::AnyOrder
        } else {
            PropertyOrder::SchemaOrder
        };
        if let Some(n) = Self::count_field(v, "max_whitespace_cnt", ptr)? {
            let max = u32::try_from(n).map_err(|_| {
                err_limit(&child(ptr, "max_whitespace_cnt"), LimitKind::RepeatCount)
            })?;
            opts.whitespace = Whitespace::Flexible { max };
        }
        let located = |e: GrammarError| e.nested_at(&sptr);
        let sub = match style {
            None => {
                json::compile(schema, &opts, self.limits, self.budget)
                    .map_err(located)?
                    .0
            }
            Some(style) => xml::lower_xml(
                schema,
                style,
                any_order,
                &opts,
                self.vocab,
                self.limits,
                self.budget,
            )
            .map_err(located)?,
        };
        self.embed(nt, sub, follow, ptr)
    }

    /// The literal a format starts with, when the previous element of a sequence can
    /// consume it (a non-empty `const_string`, or a `tag`'s string or token `begin`).
    fn leading_lit(&mut self, v: &Value, ptr: &str) -> Result<Option<Lit>, GrammarError> {
        match v.get("type").and_then(Value::as_str) {
            Some("const_string") => {
                let s = Self::str_field(v, "value", ptr)?;
                let lit = self.lit(s, &child(ptr, "value"))?;
                Ok((!lit.is_empty()).then_some(lit))
            }
            Some("tag") => {
                let b = Self::field(v, "begin", ptr)?;
                let lit = self.lit_value(b, &child(ptr, "begin"))?;
                Ok((!lit.is_empty()).then_some(lit))
            }
            _ => Ok(None),
        }
    }

    /// The alternatives of an `or` that each start with a literal (see
    /// [`Lowerer::leading_lit`]): `(literal, alternative, pointer)`; `None` for other formats.
    fn or_leads(&mut self, v: &'v Value, ptr: &str) -> Result<Option<Vec<Led<'v>>>, GrammarError> {
        if v.get("type").and_then(Value::as_str) != Some("or") {
            return Ok(None);
        }
        let Some(Value::Array(elems)) = v.get("elements") else {
            return Ok(None);
        };
        let eptr = child(ptr, "elements");
        let mut out = Vec::with_capacity(elems.len());
        for (i, e) in elems.iter().enumerate() {
            let p = child(&eptr, i);
            match self.leading_lit(e, &p)? {
                Some(lit) => out.push((lit, e, p)),
                None => return Ok(None),
            }
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// The follow an element gives the one before it when it starts with a literal: a
    /// `const_string`, a `tag` (its `begin`), or an `or` of those (each literal then the rest
    /// of its alternative, lowered here with `follow`). `None` for other formats.
    fn lead_follow(
        &mut self,
        v: &'v Value,
        ptr: &str,
        follow: Option<usize>,
    ) -> Result<Option<usize>, GrammarError> {
        if let Some(lit) = self.leading_lit(v, ptr)? {
            return Ok(Some(self.add_follow(vec![lit])));
        }
        let Some(alts) = self.or_leads(v, ptr)? else {
            return Ok(None);
        };
        let mut lits = Vec::with_capacity(alts.len());
        for (mut lit, alt, p) in alts {
            lit.then = Some(self.sub(alt, p, follow, true)?);
            lits.push(lit);
        }
        Ok(Some(self.add_follow(lits)))
    }

    /// Elements in order. An element directly followed by one that starts with a literal
    /// (see [`Lowerer::lead_follow`]) derives that literal itself (its follow), so free text
    /// ending there is one lexeme; the next element is then skipped (a `const_string`, an
    /// `or` whose alternatives the follow derives) or lowered without its `begin` (a `tag`).
    /// The last element derives the sequence's follow.
    fn sequence(
        &mut self,
        v: &'v Value,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let elems = Self::array_field(v, "elements", ptr, true)?;
        let eptr = child(ptr, "elements");
        let mut rhs = Vec::with_capacity(elems.len());
        // Whether the previous element derived this element's leading literal.
        let mut consumed = false;
        let mut i = 0;
        while let Some(e) = elems.get(i) {
            let skip_begin = core::mem::take(&mut consumed);
            let ty = e.get("type").and_then(Value::as_str);
            if skip_begin && ty == Some("const_string") {
                if i + 1 == elems.len() {
                    rhs.extend(self.follow_syms(follow, ptr)?);
                }
                i += 1;
                continue;
            }
            let f = match elems.get(i + 1) {
                None => follow,
                Some(next) if next.get("type").and_then(Value::as_str) == Some("or") => {
                    // The `or`'s own follow: the element after it, or the sequence's.
                    let (f2, after_or) = match elems.get(i + 2) {
                        None => (follow, false),
                        Some(nn) => match self.leading_lit(nn, &child(&eptr, i + 2))? {
                            Some(lit) => (Some(self.add_follow(vec![lit])), true),
                            None => (None, false),
                        },
                    };
                    match self.lead_follow(next, &child(&eptr, i + 1), f2)? {
                        Some(f) => {
                            // The `or` is derived by this element's follow.
                            let c = self.sub(e, child(&eptr, i), Some(f), skip_begin)?;
                            rhs.push(IrSymbol::Nonterminal(c));
                            consumed = after_or;
                            i += 2;
                            continue;
                        }
                        None => None,
                    }
                }
                Some(next) => {
                    let f = self.lead_follow(next, &child(&eptr, i + 1), None)?;
                    consumed = f.is_some();
                    f
                }
            };
            let c = self.sub(e, child(&eptr, i), f, skip_begin)?;
            // Followed by a format not led by a literal, or last in an open sequence.
            let open = f.is_none() && (i + 1 < elems.len() || self.open.contains(&nt));
            self.mark_open(c, open);
            rhs.push(IrSymbol::Nonterminal(c));
            i += 1;
        }
        if elems.is_empty() {
            rhs.extend(self.follow_syms(follow, ptr)?);
        }
        self.rule(nt, rhs, ptr)
    }

    fn repeat(
        &mut self,
        v: &'v Value,
        ty: &str,
        nt: u32,
        follow: Option<usize>,
        ptr: &str,
    ) -> Result<(), GrammarError> {
        let content = Self::field(v, "content", ptr)?;
        let cptr = child(ptr, "content");
        let open = self.open.contains(&nt);
        if ty == "optional" {
            let c = self.sub(content, cptr, follow, false)?;
            self.mark_open(c, open);
            self.rule(nt, vec![IrSymbol::Nonterminal(c)], ptr)?;
            let f = self.follow_syms(follow, ptr)?;
            return self.rule(nt, f, ptr);
        }
        let (min, max) = match ty {
            "star" => (0, None),
            "plus" => (1, None),
            _ => {
                let min = Self::count_field(v, "min", ptr)?
                    .ok_or_else(|| err_syntax(ptr, "missing field \"min\""))?;
                let max = match Self::field(v, "max", ptr)? {
                    Value::Number(n) if n.as_i64() == Some(-1) => None,
                    m => Some(m.as_u64().ok_or_else(|| {
                        err_syntax(&child(ptr, "max"), "must be a non-negative integer or -1")
                    })?),
                };
                if max.is_some_and(|m| m < min) {
                    return Err(err_syntax(ptr, "max is less than min"));
                }
                let bound = u64::from(self.limits.max_repeat);
                if min > bound || max.is_some_and(|m| m > bound) {
                    return Err(err_limit(ptr, LimitKind::RepeatCount));
                }
                (min as u32, max.map(|m| m as u32))
            }
        };
        let c = self.sub(content, cptr, None, false)?;
        // Another occurrence, or whatever follows the repetition, may come next.
        self.mark_open(c, open || follow.is_some() || max != Some(1));
        let c = IrSymbol::Nonterminal(c);
        let mut rhs = Vec::new();
        self.count(min as usize, ptr)?;
        self.budget
            .charge_for::<IrSymbol>(min as usize)
            .map_err(|k| err_limit(ptr, k))?;
        rhs.resize(min as usize, c);
        match max {
            None => {
                // star → ε | star C
                let star = self.nt("star", ptr)?;
                self.rule(star, Vec::new(), ptr)?;
                self.rule(star, vec![IrSymbol::Nonterminal(star), c], ptr)?;
                rhs.push(IrSymbol::Nonterminal(star));
            }
            Some(max) => {
                // tail_k → ε | C tail_{k-1}: linear in max - min.
                let mut prev: Option<u32> = None;
                for _ in min..max {
                    let t = self.nt("rep", ptr)?;
                    self.rule(t, Vec::new(), ptr)?;
                    let mut r = vec![c];
                    r.extend(prev.map(IrSymbol::Nonterminal));
                    self.rule(t, r, ptr)?;
                    prev = Some(t);
                }
                rhs.extend(prev.map(IrSymbol::Nonterminal));
            }
        }
        rhs.extend(self.follow_syms(follow, ptr)?);
        self.rule(nt, rhs, ptr)
    }
}

mod free_text;
mod tags;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
