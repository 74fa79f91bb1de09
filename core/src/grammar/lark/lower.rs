//! [`Item`]s → [`GrammarIr`].
//!
//! Order of work: collect definitions (duplicates are errors), resolve imports, compute
//! every terminal's [`RegexAst`] in dependency order (an explicit DFS stack; cycles are
//! errors), give every rule a nonterminal id, then lower rule bodies. Rule operators
//! become helper nonterminals, deduplicated structurally (two `x*` share one helper).
//! `%json` schemas are compiled and embedded once per distinct value; with `%ignore`, such
//! a grammar gets an explicit ignore helper instead of a global ignore lexeme (see
//! `Lowerer::ignore_outside_json`).
//! Every rule right-hand-side symbol, rule and regex node is counted against one
//! [`crate::Limits::max_grammar_size`] budget for the whole grammar as it is created, and
//! paid from the [`crate::CompileBudget`], so blow-ups fail fast. Terminals referenced by
//! other terminals are shared ([`RegexAst::Shared`]), not copied: a reference costs one
//! node, and a lexeme is charged its expanded size (what interning it may cost), so the
//! `T_i: T_{i-1} T_{i-1}` doubling chain fails with `GrammarSize` when used, in
//! microseconds and kilobytes.

#[cfg(feature = "text-token-ids")]
use crate::grammar::ID_TOKEN_MISS;
use crate::sync::Arc;
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::ops::Range;

use crate::ir::builder::Builder;

use super::ast::{Def, Item, JsonLit, NodeKind, Parsed, is_terminal_name};
use super::span::LineIndex;
use super::{Context, SpecialTokens, SubGrammars};
use crate::Limits;
use crate::error::{GrammarError, GrammarErrorKind, LimitKind, Span};
#[cfg(feature = "json-schema")]
use crate::grammar::json;
use crate::grammar::json::JsonOptions;
use crate::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::regex::{PatternFlags, RegexAst};

mod terminals;
pub(super) use terminals::Terminals;

type LResult<T> = Result<T, GrammarError>;

/// A terminal referenced by another, with the byte range of the reference.
type Dep = (usize, (usize, usize));

/// A computed terminal regex: its tree (terminals it refers to are
/// [`RegexAst::Shared`] nodes, not copies), the size of the tree it stands for with every
/// reference expanded (saturating: what interning it may cost) and its height (counting
/// through references).
#[derive(Debug, Clone)]
pub(super) struct TermRegex {
    pub(super) ast: RegexAst,
    pub(super) size: usize,
    pub(super) height: usize,
}

/// Terminals whose expanded regex is at most this many nodes are copied into the
/// terminals that use them (so chains of small terminals splice into one flat sequence);
/// larger ones are shared.
const INLINE_TERMINAL: usize = 16;

/// Heap bytes charged per terminal regex node (a `RegexAst` in a doubling `Vec`, its
/// `TermRegex` on the value stack), before the literal text it holds.
const REGEX_NODE_BYTES: usize = 128;
use crate::ir::builder::SYMBOL_BYTES;
/// Heap bytes charged per definition beyond its name's copies: its entries in the maps
/// and lists of definitions, terminals and rule names, and its nonterminal.
const DEF_BYTES: usize = 256;
/// How many copies of a definition's name the lowering keeps (maps, lists, name set).
const DEF_NAME_COPIES: usize = 6;

/// The grammar-size and compile budgets of one Lark compile are the shared
/// [`Builder`]'s: every regex node, rule symbol and lexeme (at its expanded size) of the
/// whole grammar is counted once against [`Limits::max_grammar_size`] and paid from the
/// [`crate::CompileBudget`], which is also charged the heap bytes the lowering allocates
/// (estimates per node, symbol, helper and definition, plus the literal text copied).
type Account<'b> = Builder<'b>;

/// Charges located in Lark source.
trait Charge {
    /// Count `n` against the grammar size and pay its fuel.
    fn charge_at(&mut self, lines: &LineIndex<'_>, n: usize, span: (usize, usize)) -> LResult<()>;
    /// Charge `bytes` of heap.
    fn charge_bytes_at(
        &mut self,
        lines: &LineIndex<'_>,
        bytes: usize,
        span: (usize, usize),
    ) -> LResult<()>;
}

impl Charge for Builder<'_> {
    fn charge_at(&mut self, lines: &LineIndex<'_>, n: usize, span: (usize, usize)) -> LResult<()> {
        self.charge_units(n, Some(lines.span(span.0, span.1)))
    }

    fn charge_bytes_at(
        &mut self,
        lines: &LineIndex<'_>,
        bytes: usize,
        span: (usize, usize),
    ) -> LResult<()> {
        self.charge_bytes(bytes, Some(lines.span(span.0, span.1)))
    }
}

/// Where a terminal's body comes from.
enum TermBody<'a> {
    Source(&'a Def),
    /// Imported from `common`; `span` is the import.
    Prebuilt(TermRegex, (usize, usize)),
}

impl TermBody<'_> {
    fn span(&self) -> (usize, usize) {
        match self {
            TermBody::Source(d) => d.name_span,
            TermBody::Prebuilt(_, s) => *s,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    Todo,
    Active,
    Done,
}

/// Key of an anonymous lexeme (one lexeme per distinct literal text and flags).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum AnonKey {
    Str(String, bool),
    Regex(String, u8),
    Range(char, char),
    Special(Vec<Vec<u8>>),
}

fn flag_bits(f: PatternFlags) -> u8 {
    u8::from(f.case_insensitive)
        | (u8::from(f.dot_matches_new_line) << 1)
        | (u8::from(f.ignore_whitespace) << 2)
        | (u8::from(f.multi_line) << 3)
}

/// A computed terminal as other terminals and lexemes refer to it: copied when small,
/// shared (one [`RegexAst::Shared`] node) otherwise.
fn share(r: TermRegex) -> TermRegex {
    if r.size <= INLINE_TERMINAL || matches!(r.ast, RegexAst::Shared(_)) {
        return r;
    }
    // Height counts only the terminal's own tree: drop, clone and interning never recurse
    // through a shared node.
    TermRegex {
        ast: RegexAst::Shared(Arc::new(r.ast)),
        size: r.size,
        height: 1,
    }
}

/// An "impossible" inconsistency in the node arena, reported instead of panicking.
fn internal() -> GrammarError {
    GrammarError::new(
        GrammarErrorKind::Syntax,
        "internal error: malformed expression",
    )
}

/// The last `k` values, in order.
fn pop_n<T>(vals: &mut Vec<T>, k: usize) -> LResult<Vec<T>> {
    let at = vals.len().checked_sub(k).ok_or_else(internal)?;
    Ok(vals.split_off(at))
}

fn check_repeat(
    lines: &LineIndex<'_>,
    limits: &Limits,
    min: u32,
    max: Option<u32>,
    span: (usize, usize),
) -> LResult<()> {
    if min > limits.max_repeat || max.is_some_and(|n| n > limits.max_repeat) {
        return Err(
            GrammarError::limit(LimitKind::RepeatCount).with_span(lines.span(span.0, span.1))
        );
    }
    Ok(())
}

/// Heap bytes of [`literal_regex`]`(s, ci)` beyond its node (a case-insensitive literal is a
/// pattern with its metacharacters escaped, built in a doubling buffer).
fn literal_bytes(s: &str, ci: bool) -> usize {
    if ci {
        s.len().saturating_mul(4)
    } else {
        s.len()
    }
}

/// A literal, case-insensitive through an escaped pattern.
fn literal_regex(s: &str, ci: bool) -> RegexAst {
    if ci {
        let flags = PatternFlags {
            case_insensitive: true,
            ..PatternFlags::default()
        };
        RegexAst::Pattern(regex_syntax::escape(s), flags)
    } else {
        RegexAst::literal(s)
    }
}

/// `[a-b]` as a pattern (works for any code points).
fn range_regex(a: char, b: char) -> RegexAst {
    let pattern = format!("[\\x{{{:X}}}-\\x{{{:X}}}]", u32::from(a), u32::from(b));
    RegexAst::Pattern(pattern, PatternFlags::default())
}

/// Compute the terminals of the `common` module.
fn common_terminals(limits: &Limits) -> LResult<BTreeMap<String, TermRegex>> {
    let src = super::common::COMMON;
    // The module is fixed text: its own budget (at `limits`), not the user's.
    let mut budget = crate::CompileBudget::new(limits);
    let lines = LineIndex::new(src, &mut budget).map_err(GrammarError::limit)?;
    let toks = super::token::tokenize(src, &lines, &mut budget)?;
    let parsed =
        super::parser::Parser::new(src, toks, &lines, limits, &mut budget).parse_items()?;
    let no_rules = BTreeMap::new();
    let mut terms = Terminals {
        lines: &lines,
        limits,
        index: BTreeMap::new(),
        bodies: Vec::new(),
        names: Vec::new(),
        done: Vec::new(),
        rules: &no_rules,
        parsed: &parsed,
    };
    for item in &parsed.items {
        if let Item::Term(def) = item {
            terms.index.insert(def.name.clone(), terms.bodies.len());
            terms.bodies.push(TermBody::Source(def));
            terms.names.push(def.name.clone());
        }
    }
    terms.compute_all(&mut Builder::new(limits, &mut budget))?;
    let mut out = BTreeMap::new();
    for (name, &i) in &terms.index {
        if let Some(r) = terms.get(i) {
            out.insert(name.clone(), r.clone());
        }
    }
    Ok(out)
}

/// Lower parsed items to the IR.
pub(super) fn lower(
    parsed: &Parsed,
    lines: &LineIndex<'_>,
    ctx: &Context<'_>,
    limits: &Limits,
    budget: &mut crate::CompileBudget,
) -> LResult<GrammarIr> {
    // 1. Collect definitions.
    let mut rules: BTreeMap<String, (usize, &Def)> = BTreeMap::new();
    let mut rule_order: Vec<&Def> = Vec::new();
    let mut term_defs: Vec<(String, (usize, usize), Option<&Def>)> = Vec::new();
    let mut term_spans: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut ignores: Vec<usize> = Vec::new();
    let mut imports = Vec::new();
    let duplicate = |name: &str, span: (usize, usize), first: (usize, usize)| {
        let mut e = lines.error(
            GrammarErrorKind::DuplicateDefinition,
            span.0,
            span.1,
            format!("`{name}` is defined twice"),
        );
        e.aux_span = Some(lines.span(first.0, first.1));
        e
    };
    let def_bytes = |name: &str| DEF_BYTES.saturating_add(name.len() * DEF_NAME_COPIES);
    let charge_def = |budget: &mut crate::CompileBudget, name: &str, span: (usize, usize)| {
        budget
            .charge(def_bytes(name))
            .map_err(|k| GrammarError::limit(k).with_span(lines.span(span.0, span.1)))
    };
    for item in &parsed.items {
        match item {
            Item::Rule(def) => {
                charge_def(budget, &def.name, def.name_span)?;
                if let Some((i, _)) = rules.get(&def.name) {
                    return Err(duplicate(
                        &def.name,
                        def.name_span,
                        rule_order[*i].name_span,
                    ));
                }
                rules.insert(def.name.clone(), (rule_order.len(), def));
                rule_order.push(def);
            }
            Item::Term(def) => {
                charge_def(budget, &def.name, def.name_span)?;
                if let Some(&first) = term_spans.get(&def.name) {
                    return Err(duplicate(&def.name, def.name_span, first));
                }
                term_spans.insert(def.name.clone(), def.name_span);
                term_defs.push((def.name.clone(), def.name_span, Some(def)));
            }
            Item::Ignore(e) => ignores.push(*e),
            Item::Import(names) => {
                for n in names {
                    charge_def(budget, &n.local, n.span)?;
                    if let Some(&first) = term_spans.get(&n.local) {
                        return Err(duplicate(&n.local, n.span, first));
                    }
                    if !is_terminal_name(&n.local) || !is_terminal_name(&n.name) {
                        return Err(lines.error(
                            GrammarErrorKind::Unsupported,
                            n.span.0,
                            n.span.1,
                            "only terminals can be imported from `common`",
                        ));
                    }
                    term_spans.insert(n.local.clone(), n.span);
                    term_defs.push((n.local.clone(), n.span, None));
                    imports.push(n);
                }
            }
        }
    }
    let Some(&(start_index, _)) = rules.get("start") else {
        return Err(GrammarError::new(
            GrammarErrorKind::UndefinedSymbol,
            "the grammar has no `start` rule",
        ));
    };

    // 2. Imports.
    let common = if imports.is_empty() {
        BTreeMap::new()
    } else {
        common_terminals(&Limits::default())?
    };
    let mut terms = Terminals {
        lines,
        limits,
        index: BTreeMap::new(),
        bodies: Vec::new(),
        names: Vec::new(),
        done: Vec::new(),
        rules: &rules,
        parsed,
    };
    let mut import_iter = imports.iter();
    for (name, span, def) in &term_defs {
        let body = match def {
            Some(def) => TermBody::Source(def),
            None => {
                let Some(imp) = import_iter.next() else {
                    continue;
                };
                let Some(r) = common.get(&imp.name) else {
                    return Err(lines.error(
                        GrammarErrorKind::UndefinedSymbol,
                        span.0,
                        span.1,
                        format!("`common` has no terminal `{}`", imp.name),
                    ));
                };
                TermBody::Prebuilt(r.clone(), *span)
            }
        };
        terms.index.insert(name.clone(), terms.bodies.len());
        terms.bodies.push(body);
        terms.names.push(name.clone());
    }

    // 3. Terminal regexes.
    let mut acct = Builder::new(limits, budget);
    terms.compute_all(&mut acct)?;

    // 4. Rules (their definitions were charged above).
    for def in &rule_order {
        let span = Some(lines.span(def.name_span.0, def.name_span.1));
        acct.declare_nonterminal(&def.name, span);
    }
    acct.ir_mut().start = u32::try_from(start_index).unwrap_or(0);
    let mut lw = Lowerer {
        lines,
        limits,
        acct,
        specials: ctx.specials,
        json_options: ctx.json,
        grammars: ctx.grammars,
        terms: &terms,
        term_lexemes: BTreeMap::new(),
        anon: BTreeMap::new(),
        json_cache: BTreeMap::new(),
        json_rules: Vec::new(),
        json_lexemes: Vec::new(),
    };
    for (i, def) in rule_order.iter().enumerate() {
        let lhs = u32::try_from(i).unwrap_or(u32::MAX);
        if def.attrs.makes_lexeme() {
            let lexeme = lw.lexeme_from_def(def)?;
            lw.add_rule(lhs, alloc::vec![IrSymbol::Lexeme(lexeme)], def.name_span)?;
            continue;
        }
        let alts = lw.alternatives(def.body, &def.name)?;
        let span = parsed
            .nodes
            .get(def.body)
            .map_or(def.name_span, |n| (n.start, n.end));
        for alt in alts {
            lw.add_rule(lhs, alt, span)?;
        }
    }

    // 5. `%ignore`.
    if !ignores.is_empty() {
        let mut parts = Vec::new();
        let mut names = Vec::new();
        let mut first_span = (0, 0);
        let mut size = 0usize;
        for &e in &ignores {
            let r = terms.regex(e, &mut lw.acct)?;
            size = size.saturating_add(r.size);
            parts.push(r.ast);
            if let Some(n) = parsed.nodes.get(e) {
                let start = parsed
                    .nodes
                    .get(n.first)
                    .map_or(n.start, |f| f.start.min(n.start));
                if names.is_empty() {
                    first_span = (start, n.end);
                }
                names.push(lines.text(start, n.end).to_string());
            }
        }
        // The lexeme at its expanded size, as `add_lexeme` charges, and its name.
        lw.charge_units(size, first_span)?;
        let name_bytes = names.iter().map(|n| n.len() + 3).sum::<usize>();
        lw.charge_bytes(name_bytes.saturating_mul(2), first_span)?;
        let regex = if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::Or(parts)
        };
        let lexeme = IrLexeme {
            name: format!("%ignore {}", names.join(" | ")),
            regex,
            mode: LexemeMode::Greedy,
            ignore: true,
            span: Some(lines.span(first_span.0, first_span.1)),
        };
        if lw.json_rules.is_empty() {
            lw.acct.ir_mut().add_lexeme(lexeme);
        } else {
            lw.ignore_outside_json(lexeme, first_span)?;
        }
    }
    let start = lw.acct.ir().start;
    Ok(lw.acct.finish(start))
}

/// A lowered rule subexpression.
enum Val {
    /// One symbol sequence.
    Seq(Vec<IrSymbol>),
    /// Two or more alternatives.
    Alts(Vec<Vec<IrSymbol>>),
}

struct Lowerer<'a, 's> {
    lines: &'a LineIndex<'s>,
    limits: &'a Limits,
    /// Grammar size so far and the whole compile's budget (embedded `%json` schemas pay
    /// from it too).
    acct: Account<'a>,
    specials: &'a dyn SpecialTokens,
    json_options: &'a JsonOptions,
    grammars: &'a dyn SubGrammars,
    terms: &'a Terminals<'a, 's>,
    term_lexemes: BTreeMap<usize, u32>,
    anon: BTreeMap<AnonKey, u32>,
    /// Embedded `%json` schemas by their compact text, and `@name` grammars by `@name`:
    /// the start nonterminal of each.
    json_cache: BTreeMap<String, u32>,
    /// Index ranges of the rules and lexemes that embedded grammars brought in.
    json_rules: Vec<Range<usize>>,
    json_lexemes: Vec<Range<usize>>,
}

impl Lowerer<'_, '_> {
    fn span(&self, s: (usize, usize)) -> Span {
        self.lines.span(s.0, s.1)
    }

    fn err(&self, kind: GrammarErrorKind, span: (usize, usize), msg: String) -> GrammarError {
        self.lines.error(kind, span.0, span.1, msg)
    }

    /// Pay for `n` rule symbols: grammar size, fuel and [`SYMBOL_BYTES`] each.
    fn charge(&mut self, n: usize, span: (usize, usize)) -> LResult<()> {
        self.charge_units(n, span)?;
        self.charge_bytes(n.saturating_mul(SYMBOL_BYTES), span)
    }

    /// Count `n` against the grammar size and pay its fuel (no heap: a lexeme at its
    /// expanded size).
    fn charge_units(&mut self, n: usize, span: (usize, usize)) -> LResult<()> {
        self.acct.charge_at(self.lines, n, span)
    }

    /// Charge `bytes` of heap.
    fn charge_bytes(&mut self, bytes: usize, span: (usize, usize)) -> LResult<()> {
        self.acct.charge_bytes_at(self.lines, bytes, span)
    }

    fn add_rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>, span: (usize, usize)) -> LResult<()> {
        self.charge(1 + rhs.len(), span)?;
        self.acct.ir_mut().add_rule(lhs, rhs);
        Ok(())
    }

    fn add_lexeme(
        &mut self,
        name: String,
        r: TermRegex,
        mode: LexemeMode,
        span: (usize, usize),
    ) -> LResult<u32> {
        self.charge_units(r.size, span)?;
        let bytes = 2 * core::mem::size_of::<IrLexeme>() + name.len();
        self.charge_bytes(bytes, span)?;
        let sp = Some(self.span(span));
        Ok(self.acct.ir_mut().add_lexeme(IrLexeme {
            name,
            regex: r.ast,
            mode,
            ignore: false,
            span: sp,
        }))
    }

    /// A rule or terminal with `lazy` / `stop`: one lazy lexeme.
    fn lexeme_from_def(&mut self, def: &Def) -> LResult<u32> {
        let terms = self.terms;
        let body = terms.regex(def.body, &mut self.acct)?;
        let r = match def.attrs.stop {
            None => body,
            Some(stop) => {
                let s = terms.regex(stop, &mut self.acct)?;
                TermRegex {
                    size: body.size.saturating_add(s.size).saturating_add(1),
                    height: body.height.max(s.height) + 1,
                    ast: RegexAst::Concat(alloc::vec![body.ast, s.ast]),
                }
            }
        };
        self.add_lexeme(def.name.clone(), r, LexemeMode::Lazy, def.name_span)
    }

    /// The lexeme for terminal `i` (created on first use).
    fn terminal_lexeme(&mut self, i: usize) -> LResult<u32> {
        if let Some(&id) = self.term_lexemes.get(&i) {
            return Ok(id);
        }
        let id = match self.terms.bodies.get(i) {
            Some(TermBody::Source(def)) if def.attrs.makes_lexeme() => self.lexeme_from_def(def)?,
            Some(body) => {
                let span = body.span();
                let r = self.terms.get(i).cloned().ok_or_else(internal)?;
                let name = self.terms.names.get(i).cloned().unwrap_or_default();
                self.add_lexeme(name, r, LexemeMode::Greedy, span)?
            }
            None => return Err(internal()),
        };
        self.term_lexemes.insert(i, id);
        Ok(id)
    }

    fn anon_lexeme(&mut self, key: AnonKey, ast: RegexAst, span: (usize, usize)) -> LResult<u32> {
        if let Some(&id) = self.anon.get(&key) {
            return Ok(id);
        }
        let r = TermRegex {
            ast,
            size: 1,
            height: 1,
        };
        let text = self.lines.text(span.0, span.1);
        // The key (a copy of the literal) kept in `anon`, and the name.
        self.charge_bytes(text.len().saturating_mul(2), span)?;
        let name = text.to_string();
        let id = self.add_lexeme(name, r, LexemeMode::Greedy, span)?;
        self.anon.insert(key, id);
        Ok(id)
    }

    /// `<|name|>` or `<[ids]>` as a lexeme.
    fn special(&mut self, text: &str, span: (usize, usize)) -> LResult<u32> {
        let lines = self.lines;
        let unknown = |what: String| {
            lines.error(
                GrammarErrorKind::UnknownSpecialToken,
                span.0,
                span.1,
                format!("unknown special token {what}"),
            )
        };
        let bad = || {
            lines.error(
                GrammarErrorKind::Unsupported,
                span.0,
                span.1,
                "expected token ids like `<[128009]>` or `<[1,5-7]>`",
            )
        };
        let mut alts: Vec<Vec<u8>> = Vec::new();
        if !text.starts_with("<[") {
            alts = self.specials.by_name(text);
            if alts.is_empty() {
                return Err(unknown(format!("`{text}`")));
            }
        } else {
            let inner = text
                .strip_prefix("<[")
                .and_then(|t| t.strip_suffix("]>"))
                .unwrap_or("");
            for part in inner.split(',') {
                let part = part.trim();
                let (lo, hi) = match part.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (part, part),
                };
                let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) else {
                    return Err(bad());
                };
                if lo > hi {
                    return Err(bad());
                }
                self.charge((hi - lo) as usize + 1, span)?;
                #[cfg(feature = "text-token-ids")]
                let sp = Some(self.span(span));
                for id in lo..=hi {
                    #[cfg(feature = "text-token-ids")]
                    let found = self.acct.token_by_id(self.specials, id, sp)?;
                    #[cfg(not(feature = "text-token-ids"))]
                    let found = self.specials.by_id(id);
                    match found {
                        Some(b) => alts.push(b),
                        None => {
                            #[cfg(feature = "text-token-ids")]
                            let why =
                                format!("id {id} (not a token of the vocabulary: {ID_TOKEN_MISS})");
                            #[cfg(not(feature = "text-token-ids"))]
                            let why = format!("id {id} (not a special token)");
                            return Err(unknown(why));
                        }
                    }
                }
            }
        }
        alts.sort_unstable();
        alts.dedup();
        let ast = match alts.as_slice() {
            [one] => RegexAst::Literal(one.clone()),
            _ => RegexAst::Or(alts.iter().cloned().map(RegexAst::Literal).collect()),
        };
        self.anon_lexeme(AnonKey::Special(alts), ast, span)
    }

    /// The nonterminal of an inline `%json` schema (compiled and embedded on first use).
    /// Without the `json-schema` feature the parser already refuses `%json`; this stays an
    /// `Unsupported` error so that the compiler (and serde_json's printer) is left out.
    fn json(&mut self, lit: &JsonLit, span: (usize, usize), rule: &str) -> LResult<u32> {
        #[cfg(not(feature = "json-schema"))]
        {
            let _ = (&lit.value, lit.text, self.json_options, rule);
            Err(self.err(
                GrammarErrorKind::Unsupported,
                span,
                "`%json` schemas are not compiled in: enable sieve-core's cargo feature `json-schema`"
                    .into(),
            ))
        }
        #[cfg(feature = "json-schema")]
        self.json_compiled(lit, span, rule)
    }

    #[cfg(feature = "json-schema")]
    fn json_compiled(&mut self, lit: &JsonLit, span: (usize, usize), rule: &str) -> LResult<u32> {
        let key = lit.value.to_string();
        if let Some(&id) = self.json_cache.get(&key) {
            return Ok(id);
        }
        let (sub, _report) = json::compile(
            &lit.value,
            self.json_options,
            self.limits,
            self.acct.budget(),
        )
        .map_err(|e| super::schema::locate(self.lines, lit.text, e))?;
        // Coverage approximations are allowed (the report is dropped), as in
        // `Grammar::from_json_schema` with default options.
        let id = self.embed(sub, span, rule, "json")?;
        self.json_cache.insert(key, id);
        Ok(id)
    }

    /// The nonterminal of grammar `@name` of the request (compiled and embedded on first
    /// use). Like a `%json` value, it is one unit for this grammar's `%ignore`; a referenced
    /// grammar with an `%ignore` of its own is refused (the lexer would apply it everywhere,
    /// where LLGuidance keeps it inside that grammar).
    fn grammar_ref(&mut self, name: &str, span: (usize, usize), rule: &str) -> LResult<u32> {
        let key = format!("@{name}");
        if let Some(&id) = self.json_cache.get(&key) {
            return Ok(id);
        }
        let located = |lw: &Self, e: GrammarError| {
            let mut out = lw.err(
                e.kind.clone(),
                span,
                format!("in grammar @{name}: {}", e.message),
            );
            // A JSON grammar's error keeps its pointer (into that grammar).
            out.pointer = e.pointer;
            out
        };
        let sub = match self.grammars.lower(name, self.limits, self.acct.budget()) {
            None => {
                return Err(self.err(
                    GrammarErrorKind::UndefinedSymbol,
                    span,
                    format!("no grammar named `{name}` in the request"),
                ));
            }
            Some(Err(e)) => return Err(located(self, e)),
            Some(Ok(sub)) => sub,
        };
        if sub.lexemes.iter().any(|l| l.ignore) {
            return Err(self.err(
                GrammarErrorKind::Unsupported,
                span,
                format!("grammar @{name} has its own %ignore, which sieve cannot scope to it"),
            ));
        }
        let id = self.embed(sub, span, rule, &key)?;
        self.json_cache.insert(key, id);
        Ok(id)
    }

    /// Appends a sub-grammar's IR (charged), names its nonterminals `rule.tag.name`, and
    /// records its rules and lexemes as one unit for `%ignore`; returns its start.
    fn embed(
        &mut self,
        sub: GrammarIr,
        span: (usize, usize),
        rule: &str,
        tag: &str,
    ) -> LResult<u32> {
        let size = sub
            .rules
            .iter()
            .map(|r| r.rhs.len() + 1)
            .sum::<usize>()
            .saturating_add(sub.lexemes.len());
        self.charge(size, span)?;
        let (nt0, rule0, lex0) = (
            self.acct.ir_mut().nonterminals.len(),
            self.acct.ir_mut().rules.len(),
            self.acct.ir_mut().lexemes.len(),
        );
        let id = self.acct.ir_mut().embed(sub);
        let sp = Some(self.span(span));
        let base = rule.trim_start_matches('_');
        for n in self.acct.ir_mut().nonterminals.iter_mut().skip(nt0) {
            n.name = format!("{base}.{tag}.{}", n.name);
            n.span = sp;
        }
        for l in self.acct.ir_mut().lexemes.iter_mut().skip(lex0) {
            l.span = sp;
        }
        self.json_rules.push(rule0..self.acct.ir_mut().rules.len());
        self.json_lexemes
            .push(lex0..self.acct.ir_mut().lexemes.len());
        Ok(id)
    }

    /// `%ignore` in a grammar with inline JSON. As in LLGuidance, where a sub-grammar has
    /// its own lexeme class and skip lexeme, the Lark `%ignore` does not reach inside a
    /// JSON value, whose whitespace is its own (folded into its punctuation lexemes and
    /// bounded by the JSON options). A JSON value is treated as one unit: the ignored
    /// text may come before it, before every lexeme of the Lark rules and at the end of
    /// the input, never between the lexemes of a JSON value.
    ///
    /// The lexer applies an `ignore` lexeme everywhere, so here the ignored language
    /// becomes an ordinary lexeme `I` with a helper `ignore_star_N: ε | ignore_star_N I`,
    /// put before every Lark lexeme and every `%json` value in the Lark rules; `start`
    /// becomes `start: start₀ ignore_star_N`. Cost: one nullable helper per such symbol
    /// occurrence (a few more Earley items per row).
    fn ignore_outside_json(&mut self, mut lexeme: IrLexeme, span: (usize, usize)) -> LResult<()> {
        let mut json_rule = alloc::vec![false; self.acct.ir_mut().rules.len()];
        for r in &self.json_rules {
            for i in r.clone() {
                if let Some(f) = json_rule.get_mut(i) {
                    *f = true;
                }
            }
        }
        let mut json_lexeme = alloc::vec![false; self.acct.ir_mut().lexemes.len()];
        for r in &self.json_lexemes {
            for i in r.clone() {
                if let Some(f) = json_lexeme.get_mut(i) {
                    *f = true;
                }
            }
        }
        // The regex was charged by the caller.
        lexeme.ignore = false;
        let ign = self.acct.ir_mut().add_lexeme(lexeme);
        let name = self.helper_name("ignore", "star");
        let sp = Some(self.span(span));
        let star = self.acct.ir_mut().add_nonterminal(name, sp);
        // A JSON value is one unit here: ignored text may come before it, not inside it.
        let json_starts: Vec<u32> = self.json_cache.values().copied().collect();
        let takes_ignore = |s: &IrSymbol| match *s {
            IrSymbol::Lexeme(l) => !json_lexeme.get(l as usize).copied().unwrap_or(true),
            IrSymbol::Nonterminal(n) => json_starts.contains(&n),
        };
        let mut added = 0usize;
        for (i, r) in self.acct.ir_mut().rules.iter_mut().enumerate() {
            if json_rule.get(i).copied().unwrap_or(true) || !r.rhs.iter().any(takes_ignore) {
                continue;
            }
            let mut rhs = Vec::with_capacity(r.rhs.len() * 2);
            for s in r.rhs.drain(..) {
                if takes_ignore(&s) {
                    rhs.push(IrSymbol::Nonterminal(star));
                    added += 1;
                }
                rhs.push(s);
            }
            r.rhs = rhs;
        }
        self.charge(added, span)?;
        self.add_rule(star, Vec::new(), span)?;
        self.add_rule(
            star,
            alloc::vec![IrSymbol::Nonterminal(star), IrSymbol::Lexeme(ign)],
            span,
        )?;
        let old = self.acct.ir_mut().start;
        let (name, start_span) = self
            .acct
            .ir()
            .nonterminals
            .get(old as usize)
            .map(|n| (n.name.clone(), n.span))
            .unwrap_or_default();
        let start = self.acct.ir_mut().add_nonterminal(name, start_span);
        let rhs = alloc::vec![IrSymbol::Nonterminal(old), IrSymbol::Nonterminal(star)];
        self.add_rule(start, rhs, span)?;
        self.acct.ir_mut().start = start;
        Ok(())
    }

    /// A fresh helper nonterminal name.
    fn helper_name(&mut self, base: &str, kind: &str) -> String {
        self.acct.fresh_name(base, kind)
    }

    /// `v` as one symbol sequence (alternatives become a `group` helper).
    fn operand(&mut self, v: Val, base: &str, span: (usize, usize)) -> LResult<Vec<IrSymbol>> {
        match v {
            Val::Seq(s) => Ok(s),
            Val::Alts(alts) => {
                let sp = Some(self.span(span));
                self.acct.group(alts, base, sp)
            }
        }
    }

    fn leaf(&mut self, sym: IrSymbol, span: (usize, usize)) -> LResult<Val> {
        self.charge(1, span)?;
        Ok(Val::Seq(alloc::vec![sym]))
    }

    /// The alternatives of the rule expression at `root` (post-order walk, value stack).
    fn alternatives(&mut self, root: usize, rule: &str) -> LResult<Vec<Vec<IrSymbol>>> {
        let parsed: &Parsed = self.terms.parsed;
        let nodes = parsed.subtree(root);
        let mut vals: Vec<Val> = Vec::new();
        for (k, n) in nodes.iter().enumerate() {
            let span = (n.start, n.end);
            let v = match &n.kind {
                NodeKind::Name(name) => {
                    let sym = self.name(name, span)?;
                    self.leaf(sym, span)?
                }
                NodeKind::Str(s, ci) => {
                    // The key and the regex: copies of the literal, made for every use.
                    let bytes = s.len().saturating_add(literal_bytes(s, *ci));
                    self.charge_bytes(bytes, span)?;
                    let key = AnonKey::Str(s.clone(), *ci);
                    let id = self.anon_lexeme(key, literal_regex(s, *ci), span)?;
                    self.leaf(IrSymbol::Lexeme(id), span)?
                }
                NodeKind::Regex(lit) => {
                    self.charge_bytes(lit.pattern.len().saturating_mul(2), span)?;
                    let key = AnonKey::Regex(lit.pattern.clone(), flag_bits(lit.flags));
                    let ast = RegexAst::Pattern(lit.pattern.clone(), lit.flags);
                    let id = self.anon_lexeme(key, ast, span)?;
                    self.leaf(IrSymbol::Lexeme(id), span)?
                }
                NodeKind::Range(a, b) => {
                    let id = self.anon_lexeme(AnonKey::Range(*a, *b), range_regex(*a, *b), span)?;
                    self.leaf(IrSymbol::Lexeme(id), span)?
                }
                NodeKind::Special(text) => {
                    let id = self.special(text, span)?;
                    self.leaf(IrSymbol::Lexeme(id), span)?
                }
                NodeKind::Json(lit) => {
                    let id = self.json(lit, span, rule)?;
                    self.leaf(IrSymbol::Nonterminal(id), span)?
                }
                NodeKind::GrammarRef(name) => {
                    let id = self.grammar_ref(name, span, rule)?;
                    self.leaf(IrSymbol::Nonterminal(id), span)?
                }
                NodeKind::And(_) | NodeKind::Not => {
                    return Err(self.err(
                        GrammarErrorKind::Unsupported,
                        span,
                        "`&` and prefix `~` are only allowed in terminal definitions \
                         (UPPERCASE names), as in LLGuidance"
                            .to_string(),
                    ));
                }
                NodeKind::Seq(count) => {
                    let mut out = Vec::new();
                    for c in pop_n(&mut vals, *count)? {
                        out.extend(self.operand(c, rule, span)?);
                    }
                    Val::Seq(out)
                }
                NodeKind::Alt(count) => {
                    let mut alts = Vec::new();
                    for c in pop_n(&mut vals, *count)? {
                        match c {
                            Val::Seq(s) => alts.push(s),
                            Val::Alts(a) => alts.extend(a),
                        }
                    }
                    Val::Alts(alts)
                }
                NodeKind::Repeat(min, max) => {
                    let child = pop_n(&mut vals, 1)?.pop().ok_or_else(internal)?;
                    // Helpers are named after a repeated name, else after the rule.
                    let child_node = k.checked_sub(1).and_then(|c| nodes.get(c));
                    let base = match child_node.map(|c| &c.kind) {
                        Some(NodeKind::Name(name)) => {
                            name.trim_start_matches('_').to_ascii_lowercase()
                        }
                        _ => rule.trim_start_matches('_').to_string(),
                    };
                    let base = if base.is_empty() {
                        String::from("rule")
                    } else {
                        base
                    };
                    Val::Seq(self.repeat(child, *min, *max, span, &base)?)
                }
            };
            vals.push(v);
        }
        let v = vals.pop().ok_or_else(internal)?;
        if !vals.is_empty() {
            return Err(internal());
        }
        Ok(match v {
            Val::Seq(s) => alloc::vec![s],
            Val::Alts(a) => a,
        })
    }

    /// A rule or terminal name used in a rule.
    fn name(&mut self, name: &str, span: (usize, usize)) -> LResult<IrSymbol> {
        if is_terminal_name(name) {
            let Some(&i) = self.terms.index.get(name) else {
                return Err(self.lines.error(
                    GrammarErrorKind::UndefinedSymbol,
                    span.0,
                    span.1,
                    format!("undefined terminal `{name}`"),
                ));
            };
            Ok(IrSymbol::Lexeme(self.terminal_lexeme(i)?))
        } else {
            let Some(&(i, _)) = self.terms.rules.get(name) else {
                return Err(self.lines.error(
                    GrammarErrorKind::UndefinedSymbol,
                    span.0,
                    span.1,
                    format!("undefined rule `{name}`"),
                ));
            };
            Ok(IrSymbol::Nonterminal(u32::try_from(i).unwrap_or(u32::MAX)))
        }
    }

    /// `child{min,max}` as a symbol sequence (helpers named after `base`, or `rule` for a
    /// group).
    fn repeat(
        &mut self,
        child: Val,
        min: u32,
        max: Option<u32>,
        span: (usize, usize),
        base: &str,
    ) -> LResult<Vec<IrSymbol>> {
        let alts = match child {
            Val::Seq(s) => alloc::vec![s],
            Val::Alts(a) => a,
        };
        let sp = Some(self.span(span));
        self.acct.repeat(alts, min, max, base, sp)
    }
}
