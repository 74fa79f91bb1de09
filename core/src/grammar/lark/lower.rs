//! [`Item`]s → [`GrammarIr`].
//!
//! Order of work: collect definitions (duplicates are errors), resolve imports, compute
//! every terminal's [`RegexAst`] in dependency order (an explicit DFS stack; cycles are
//! errors), give every rule a nonterminal id, then lower rule bodies. Rule operators
//! become helper nonterminals, deduplicated structurally (two `x*` share one helper).
//! Every rule right-hand-side symbol, rule and regex node is counted against
//! [`crate::Limits::max_grammar_size`] as it is created, so blow-ups fail fast.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use hashbrown::HashMap;

use super::SpecialTokens;
use super::ast::{Def, Expr, ExprKind, Item, is_terminal_name};
use super::span::LineIndex;
use crate::Limits;
use crate::error::{GrammarError, GrammarErrorKind, LimitKind, Span};
use crate::grammar::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::regex::{PatternFlags, RegexAst};

type LResult<T> = Result<T, GrammarError>;

/// A computed terminal regex with its node count and tree height.
#[derive(Debug, Clone)]
pub(super) struct TermRegex {
    pub(super) ast: RegexAst,
    pub(super) size: usize,
    pub(super) height: usize,
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

/// Key of a helper nonterminal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HelperKey {
    Alts(Vec<Vec<IrSymbol>>),
    Star(Vec<IrSymbol>),
    Plus(Vec<IrSymbol>),
    /// Up to `n` more copies.
    Tail(Vec<IrSymbol>, u32),
}

fn flag_bits(f: PatternFlags) -> u8 {
    u8::from(f.case_insensitive)
        | (u8::from(f.dot_matches_new_line) << 1)
        | (u8::from(f.ignore_whitespace) << 2)
        | (u8::from(f.multi_line) << 3)
}

/// Terminal-side state shared by the user grammar and the `common` module.
pub(super) struct Terminals<'a, 's> {
    lines: &'a LineIndex<'s>,
    limits: &'a Limits,
    index: BTreeMap<String, usize>,
    bodies: Vec<TermBody<'a>>,
    names: Vec<String>,
    done: Vec<Option<TermRegex>>,
    rules: &'a BTreeMap<String, (usize, &'a Def)>,
}

impl<'a, 's> Terminals<'a, 's> {
    fn err(&self, kind: GrammarErrorKind, span: (usize, usize), msg: String) -> GrammarError {
        self.lines.error(kind, span.0, span.1, msg)
    }

    fn limit(&self, kind: LimitKind, span: (usize, usize)) -> GrammarError {
        GrammarError::limit(kind).with_span(self.lines.span(span.0, span.1))
    }

    /// Terminal names referenced by `e` (with their use spans), checking that each exists
    /// and is a terminal.
    fn deps(&self, e: &Expr, out: &mut Vec<(usize, (usize, usize))>) -> LResult<()> {
        match &e.kind {
            ExprKind::Name(n) => out.push((self.resolve(n, (e.start, e.end))?, (e.start, e.end))),
            ExprKind::Seq(xs) | ExprKind::Alt(xs) => {
                for x in xs {
                    self.deps(x, out)?;
                }
            }
            ExprKind::Repeat(x, _, _) => self.deps(x, out)?,
            ExprKind::Str(..)
            | ExprKind::Regex(_)
            | ExprKind::Range(..)
            | ExprKind::Special(_) => {}
        }
        Ok(())
    }

    fn resolve(&self, name: &str, span: (usize, usize)) -> LResult<usize> {
        if let Some(&i) = self.index.get(name) {
            return Ok(i);
        }
        if !is_terminal_name(name) {
            let msg = if self.rules.contains_key(name) {
                format!("rule `{name}` cannot be used inside a terminal")
            } else {
                format!("undefined rule `{name}` (and rules cannot be used inside a terminal)")
            };
            let kind = if self.rules.contains_key(name) {
                GrammarErrorKind::Syntax
            } else {
                GrammarErrorKind::UndefinedSymbol
            };
            return Err(self.err(kind, span, msg));
        }
        Err(self.err(
            GrammarErrorKind::UndefinedSymbol,
            span,
            format!("undefined terminal `{name}`"),
        ))
    }

    /// Compute every terminal's regex (depth-first, explicit stack).
    fn compute_all(&mut self) -> LResult<()> {
        let n = self.bodies.len();
        let mut state = alloc::vec![Visit::Todo; n];
        self.done = alloc::vec![None; n];
        for root in 0..n {
            if state[root] != Visit::Todo {
                continue;
            }
            let mut stack: Vec<(usize, Vec<(usize, (usize, usize))>, usize)> = Vec::new();
            state[root] = Visit::Active;
            stack.push((root, self.term_deps(root)?, 0));
            while let Some((t, deps, next)) = stack.last_mut() {
                if let Some(&(d, use_span)) = deps.get(*next) {
                    *next += 1;
                    match state[d] {
                        Visit::Done => {}
                        Visit::Active => {
                            let msg = format!("terminal `{}` refers to itself", self.names[d]);
                            return Err(self.err(GrammarErrorKind::Syntax, use_span, msg));
                        }
                        Visit::Todo => {
                            state[d] = Visit::Active;
                            let dd = self.term_deps(d)?;
                            stack.push((d, dd, 0));
                        }
                    }
                    continue;
                }
                let t = *t;
                stack.pop();
                let computed = match &self.bodies[t] {
                    TermBody::Prebuilt(r, _) => r.clone(),
                    TermBody::Source(def) => {
                        let mut budget = 0;
                        let r = self.regex(&def.body, &mut budget)?;
                        if r.height > super::parser::max_height(self.limits) {
                            return Err(self.limit(LimitKind::NestingDepth, def.name_span));
                        }
                        r
                    }
                };
                self.done[t] = Some(computed);
                state[t] = Visit::Done;
            }
        }
        Ok(())
    }

    fn term_deps(&self, t: usize) -> LResult<Vec<(usize, (usize, usize))>> {
        let mut out = Vec::new();
        if let TermBody::Source(def) = &self.bodies[t] {
            self.deps(&def.body, &mut out)?;
            if let Some(stop) = &def.attrs.stop {
                self.deps(stop, &mut out)?;
            }
        }
        Ok(out)
    }

    fn charge(&self, budget: &mut usize, n: usize, span: (usize, usize)) -> LResult<()> {
        *budget = budget.saturating_add(n);
        if *budget > self.limits.max_grammar_size {
            Err(self.limit(LimitKind::GrammarSize, span))
        } else {
            Ok(())
        }
    }

    /// The regex of a terminal expression; referenced terminals must be computed.
    pub(super) fn regex(&self, e: &Expr, budget: &mut usize) -> LResult<TermRegex> {
        let span = (e.start, e.end);
        let leaf = |ast| TermRegex {
            ast,
            size: 1,
            height: 1,
        };
        match &e.kind {
            ExprKind::Name(n) => {
                let i = self.resolve(n, span)?;
                let Some(r) = self.done.get(i).and_then(Option::as_ref) else {
                    let msg = format!("terminal `{n}` refers to itself");
                    return Err(self.err(GrammarErrorKind::Syntax, span, msg));
                };
                self.charge(budget, r.size, span)?;
                Ok(r.clone())
            }
            ExprKind::Str(s, ci) => {
                self.charge(budget, 1, span)?;
                Ok(leaf(literal_regex(s, *ci)))
            }
            ExprKind::Regex(lit) => {
                self.charge(budget, 1, span)?;
                Ok(leaf(RegexAst::Pattern(lit.pattern.clone(), lit.flags)))
            }
            ExprKind::Range(a, b) => {
                self.charge(budget, 1, span)?;
                Ok(leaf(range_regex(*a, *b)))
            }
            ExprKind::Special(_) => Err(self.err(
                GrammarErrorKind::Unsupported,
                span,
                "special tokens are only allowed in rules, not in terminals".to_string(),
            )),
            ExprKind::Seq(xs) | ExprKind::Alt(xs) => {
                let is_seq = matches!(e.kind, ExprKind::Seq(_));
                self.charge(budget, 1, span)?;
                let mut parts = Vec::with_capacity(xs.len());
                let (mut size, mut height) = (1usize, 1usize);
                for x in xs {
                    let r = self.regex(x, budget)?;
                    size = size.saturating_add(r.size);
                    // Splice same-kind children: chains of terminals do not grow the height.
                    match (is_seq, r.ast) {
                        (true, RegexAst::Concat(inner)) | (false, RegexAst::Or(inner)) => {
                            height = height.max(r.height);
                            parts.extend(inner);
                        }
                        (_, ast) => {
                            height = height.max(r.height + 1);
                            parts.push(ast);
                        }
                    }
                }
                let ast = match (is_seq, parts.len()) {
                    (true, 0) => RegexAst::Epsilon,
                    (false, 0) => RegexAst::Nothing,
                    (_, 1) => parts.pop().unwrap_or(RegexAst::Epsilon),
                    (true, _) => RegexAst::Concat(parts),
                    (false, _) => RegexAst::Or(parts),
                };
                Ok(TermRegex { ast, size, height })
            }
            ExprKind::Repeat(x, min, max) => {
                check_repeat(self.lines, self.limits, *min, *max, span)?;
                self.charge(budget, 1, span)?;
                let r = self.regex(x, budget)?;
                Ok(TermRegex {
                    ast: RegexAst::Repeat(Box::new(r.ast), *min, *max),
                    size: r.size.saturating_add(1),
                    height: r.height + 1,
                })
            }
        }
    }

    /// The regex of a computed terminal.
    fn get(&self, i: usize) -> Option<&TermRegex> {
        self.done.get(i).and_then(Option::as_ref)
    }
}

fn check_repeat(
    lines: &LineIndex<'_>,
    limits: &Limits,
    min: u32,
    max: Option<u32>,
    span: (usize, usize),
) -> LResult<()> {
    if min > limits.max_repeat || max.is_some_and(|n| n > limits.max_repeat) {
        return Err(GrammarError::limit(LimitKind::RepeatCount).with_span(lines.span(span.0, span.1)));
    }
    Ok(())
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
    let lines = LineIndex::new(src);
    let toks = super::token::tokenize(src, &lines)?;
    let items = super::parser::Parser::new(src, toks, &lines, limits).parse_items()?;
    let no_rules = BTreeMap::new();
    let mut terms = Terminals {
        lines: &lines,
        limits,
        index: BTreeMap::new(),
        bodies: Vec::new(),
        names: Vec::new(),
        done: Vec::new(),
        rules: &no_rules,
    };
    for item in &items {
        if let Item::Term(def) = item {
            terms.index.insert(def.name.clone(), terms.bodies.len());
            terms.bodies.push(TermBody::Source(def));
            terms.names.push(def.name.clone());
        }
    }
    terms.compute_all()?;
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
    items: &[Item],
    lines: &LineIndex<'_>,
    specials: &dyn SpecialTokens,
    limits: &Limits,
) -> LResult<GrammarIr> {
    // 1. Collect definitions.
    let mut rules: BTreeMap<String, (usize, &Def)> = BTreeMap::new();
    let mut rule_order: Vec<&Def> = Vec::new();
    let mut term_defs: Vec<(String, (usize, usize), Option<&Def>)> = Vec::new();
    let mut term_spans: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut ignores: Vec<&Expr> = Vec::new();
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
    for item in items {
        match item {
            Item::Rule(def) => {
                if let Some((i, _)) = rules.get(&def.name) {
                    return Err(duplicate(&def.name, def.name_span, rule_order[*i].name_span));
                }
                rules.insert(def.name.clone(), (rule_order.len(), def));
                rule_order.push(def);
            }
            Item::Term(def) => {
                if let Some(&first) = term_spans.get(&def.name) {
                    return Err(duplicate(&def.name, def.name_span, first));
                }
                term_spans.insert(def.name.clone(), def.name_span);
                term_defs.push((def.name.clone(), def.name_span, Some(def)));
            }
            Item::Ignore(e) => ignores.push(e),
            Item::Import(names) => {
                for n in names {
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
    terms.compute_all()?;

    // 4. Rules.
    let mut ir = GrammarIr::default();
    for def in &rule_order {
        ir.add_nonterminal(def.name.clone(), Some(lines.span(def.name_span.0, def.name_span.1)));
    }
    ir.start = u32::try_from(start_index).unwrap_or(0);
    let mut lw = Lowerer {
        lines,
        limits,
        specials,
        terms: &terms,
        ir,
        size: 0,
        term_lexemes: BTreeMap::new(),
        anon: BTreeMap::new(),
        helpers: HashMap::new(),
        taken: rules.keys().cloned().collect(),
        counter: 0,
    };
    for (i, def) in rule_order.iter().enumerate() {
        let lhs = u32::try_from(i).unwrap_or(u32::MAX);
        if def.attrs.makes_lexeme() {
            let lexeme = lw.lexeme_from_def(def)?;
            lw.add_rule(lhs, alloc::vec![IrSymbol::Lexeme(lexeme)], def.name_span)?;
            continue;
        }
        let alts = lw.alternatives(&def.body, &def.name)?;
        for alt in alts {
            lw.add_rule(lhs, alt, (def.body.start, def.body.end))?;
        }
    }

    // 5. `%ignore`.
    if !ignores.is_empty() {
        let mut parts = Vec::new();
        let mut budget = lw.size;
        let mut names = Vec::new();
        for e in &ignores {
            let r = terms.regex(e, &mut budget)?;
            parts.push(r.ast);
            names.push(lines_text(lines, e));
        }
        lw.size = budget;
        let regex = if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::Or(parts)
        };
        let first = ignores.first().map_or((0, 0), |e| (e.start, e.end));
        lw.ir.add_lexeme(IrLexeme {
            name: format!("%ignore {}", names.join(" | ")),
            regex,
            mode: LexemeMode::Greedy,
            ignore: true,
            span: Some(lines.span(first.0, first.1)),
        });
    }
    Ok(lw.ir)
}

fn lines_text(lines: &LineIndex<'_>, e: &Expr) -> String {
    lines.text(e.start, e.end).to_string()
}

struct Lowerer<'a, 's> {
    lines: &'a LineIndex<'s>,
    limits: &'a Limits,
    specials: &'a dyn SpecialTokens,
    terms: &'a Terminals<'a, 's>,
    ir: GrammarIr,
    /// Symbols, rules and regex nodes created so far.
    size: usize,
    term_lexemes: BTreeMap<usize, u32>,
    anon: BTreeMap<AnonKey, u32>,
    helpers: HashMap<HelperKey, u32>,
    /// Nonterminal names in use.
    taken: alloc::collections::BTreeSet<String>,
    counter: usize,
}

impl Lowerer<'_, '_> {
    fn span(&self, s: (usize, usize)) -> Span {
        self.lines.span(s.0, s.1)
    }

    fn charge(&mut self, n: usize, span: (usize, usize)) -> LResult<()> {
        self.size = self.size.saturating_add(n);
        if self.size > self.limits.max_grammar_size {
            Err(GrammarError::limit(LimitKind::GrammarSize).with_span(self.span(span)))
        } else {
            Ok(())
        }
    }

    fn add_rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>, span: (usize, usize)) -> LResult<()> {
        self.charge(1 + rhs.len(), span)?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    fn add_lexeme(
        &mut self,
        name: String,
        r: TermRegex,
        mode: LexemeMode,
        span: (usize, usize),
    ) -> LResult<u32> {
        self.charge(r.size, span)?;
        let sp = Some(self.span(span));
        Ok(self.ir.add_lexeme(IrLexeme {
            name,
            regex: r.ast,
            mode,
            ignore: false,
            span: sp,
        }))
    }

    /// A rule or terminal with `lazy` / `stop`: one lazy lexeme.
    fn lexeme_from_def(&mut self, def: &Def) -> LResult<u32> {
        let mut budget = self.size;
        let body = self.terms.regex(&def.body, &mut budget)?;
        let r = match &def.attrs.stop {
            None => body,
            Some(stop) => {
                let s = self.terms.regex(stop, &mut budget)?;
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
        let id = match &self.terms.bodies[i] {
            TermBody::Source(def) if def.attrs.makes_lexeme() => self.lexeme_from_def(def)?,
            body => {
                let span = body.span();
                let Some(r) = self.terms.get(i).cloned() else {
                    return Err(GrammarError::new(
                        GrammarErrorKind::Syntax,
                        "terminal was not computed",
                    ));
                };
                let name = self.terms.names[i].clone();
                self.add_lexeme(name, r, LexemeMode::Greedy, span)?
            }
        };
        self.term_lexemes.insert(i, id);
        Ok(id)
    }

    fn anon_lexeme(&mut self, key: AnonKey, ast: RegexAst, e: &Expr) -> LResult<u32> {
        if let Some(&id) = self.anon.get(&key) {
            return Ok(id);
        }
        let r = TermRegex {
            ast,
            size: 1,
            height: 1,
        };
        let name = self.lines.text(e.start, e.end).to_string();
        let id = self.add_lexeme(name, r, LexemeMode::Greedy, (e.start, e.end))?;
        self.anon.insert(key, id);
        Ok(id)
    }

    fn special(&mut self, text: &str, e: &Expr) -> LResult<u32> {
        let span = (e.start, e.end);
        let unknown = |lines: &LineIndex<'_>, what: String| {
            lines.error(
                GrammarErrorKind::UnknownSpecialToken,
                span.0,
                span.1,
                format!("unknown special token {what}"),
            )
        };
        let mut alts: Vec<Vec<u8>> = Vec::new();
        if text.starts_with("<|") {
            match self.specials.by_name(text) {
                Some(b) => alts.push(b),
                None => return Err(unknown(self.lines, format!("`{text}`"))),
            }
        } else {
            let inner = text
                .strip_prefix("<[")
                .and_then(|t| t.strip_suffix("]>"))
                .unwrap_or("");
            let bad = |lines: &LineIndex<'_>| {
                lines.error(
                    GrammarErrorKind::Unsupported,
                    span.0,
                    span.1,
                    "expected token ids like `<[128009]>`, `<[1,5-7]>`",
                )
            };
            for part in inner.split(',') {
                let part = part.trim();
                let (lo, hi) = match part.split_once('-') {
                    Some((a, b)) => (a.trim(), b.trim()),
                    None => (part, part),
                };
                let (Ok(lo), Ok(hi)) = (lo.parse::<u32>(), hi.parse::<u32>()) else {
                    return Err(bad(self.lines));
                };
                if lo > hi {
                    return Err(bad(self.lines));
                }
                self.charge((hi - lo) as usize + 1, span)?;
                for id in lo..=hi {
                    match self.specials.by_id(id) {
                        Some(b) => alts.push(b),
                        None => return Err(unknown(self.lines, format!("id {id}"))),
                    }
                }
            }
        }
        alts.sort();
        alts.dedup();
        let ast = if alts.len() == 1 {
            RegexAst::Literal(alts[0].clone())
        } else {
            RegexAst::Or(alts.iter().cloned().map(RegexAst::Literal).collect())
        };
        self.anon_lexeme(AnonKey::Special(alts), ast, e)
    }

    /// A fresh helper nonterminal name.
    fn helper_name(&mut self, base: &str, kind: &str) -> String {
        loop {
            self.counter += 1;
            let name = format!("{base}_{kind}_{}", self.counter);
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }

    /// The helper for `key`, created with `productions(id)` if new.
    fn helper(
        &mut self,
        key: HelperKey,
        base: &str,
        kind: &str,
        span: (usize, usize),
        productions: impl FnOnce(u32) -> Vec<Vec<IrSymbol>>,
    ) -> LResult<u32> {
        if let Some(&id) = self.helpers.get(&key) {
            return Ok(id);
        }
        let name = self.helper_name(base, kind);
        let sp = Some(self.span(span));
        let id = self.ir.add_nonterminal(name, sp);
        for rhs in productions(id) {
            self.add_rule(id, rhs, span)?;
        }
        self.helpers.insert(key, id);
        Ok(id)
    }

    /// The alternatives of `e`, each a symbol sequence.
    fn alternatives(&mut self, e: &Expr, base: &str) -> LResult<Vec<Vec<IrSymbol>>> {
        match &e.kind {
            ExprKind::Alt(xs) => {
                let mut out = Vec::with_capacity(xs.len());
                for x in xs {
                    let mut seq = Vec::new();
                    self.sequence_into(x, base, &mut seq)?;
                    out.push(seq);
                }
                Ok(out)
            }
            _ => {
                let mut seq = Vec::new();
                self.sequence_into(e, base, &mut seq)?;
                Ok(alloc::vec![seq])
            }
        }
    }

    /// `e` as one symbol sequence (alternatives become a helper).
    fn operand(&mut self, e: &Expr, base: &str) -> LResult<Vec<IrSymbol>> {
        let mut alts = self.alternatives(e, base)?;
        if alts.len() == 1 {
            return Ok(alts.pop().unwrap_or_default());
        }
        let id = self.helper(HelperKey::Alts(alts.clone()), base, "group", (e.start, e.end), |_| alts)?;
        Ok(alloc::vec![IrSymbol::Nonterminal(id)])
    }

    fn push(&mut self, out: &mut Vec<IrSymbol>, sym: IrSymbol, span: (usize, usize)) -> LResult<()> {
        self.charge(1, span)?;
        out.push(sym);
        Ok(())
    }

    fn sequence_into(&mut self, e: &Expr, base: &str, out: &mut Vec<IrSymbol>) -> LResult<()> {
        let span = (e.start, e.end);
        match &e.kind {
            ExprKind::Seq(xs) => {
                for x in xs {
                    self.sequence_into(x, base, out)?;
                }
                Ok(())
            }
            ExprKind::Alt(_) => {
                let op = self.operand(e, base)?;
                for s in op {
                    self.push(out, s, span)?;
                }
                Ok(())
            }
            ExprKind::Name(name) => {
                let sym = if is_terminal_name(name) {
                    let Some(&i) = self.terms.index.get(name) else {
                        return Err(self.lines.error(
                            GrammarErrorKind::UndefinedSymbol,
                            span.0,
                            span.1,
                            format!("undefined terminal `{name}`"),
                        ));
                    };
                    IrSymbol::Lexeme(self.terminal_lexeme(i)?)
                } else {
                    let Some(&(i, _)) = self.terms.rules.get(name) else {
                        return Err(self.lines.error(
                            GrammarErrorKind::UndefinedSymbol,
                            span.0,
                            span.1,
                            format!("undefined rule `{name}`"),
                        ));
                    };
                    IrSymbol::Nonterminal(u32::try_from(i).unwrap_or(u32::MAX))
                };
                self.push(out, sym, span)
            }
            ExprKind::Str(s, ci) => {
                let id = self.anon_lexeme(AnonKey::Str(s.clone(), *ci), literal_regex(s, *ci), e)?;
                self.push(out, IrSymbol::Lexeme(id), span)
            }
            ExprKind::Regex(lit) => {
                let key = AnonKey::Regex(lit.pattern.clone(), flag_bits(lit.flags));
                let ast = RegexAst::Pattern(lit.pattern.clone(), lit.flags);
                let id = self.anon_lexeme(key, ast, e)?;
                self.push(out, IrSymbol::Lexeme(id), span)
            }
            ExprKind::Range(a, b) => {
                let id = self.anon_lexeme(AnonKey::Range(*a, *b), range_regex(*a, *b), e)?;
                self.push(out, IrSymbol::Lexeme(id), span)
            }
            ExprKind::Special(text) => {
                let id = self.special(text, e)?;
                self.push(out, IrSymbol::Lexeme(id), span)
            }
            ExprKind::Repeat(x, min, max) => self.repeat_into(x, *min, *max, span, base, out),
        }
    }

    fn repeat_into(
        &mut self,
        x: &Expr,
        min: u32,
        max: Option<u32>,
        span: (usize, usize),
        rule: &str,
        out: &mut Vec<IrSymbol>,
    ) -> LResult<()> {
        check_repeat(self.lines, self.limits, min, max, span)?;
        // Helpers are named after a repeated name, else after the enclosing rule.
        let base_owned = match &x.kind {
            ExprKind::Name(n) => n.trim_start_matches('_').to_ascii_lowercase(),
            _ => rule.trim_start_matches('_').to_string(),
        };
        let base = if base_owned.is_empty() { "rule" } else { base_owned.as_str() };
        if min == 0 && max == Some(1) {
            let mut alts = self.alternatives(x, rule)?;
            if alts.iter().all(|a| !a.is_empty()) {
                alts.insert(0, Vec::new());
            }
            if alts.len() == 1 {
                return Ok(()); // `[]`: epsilon
            }
            let id = self.helper(HelperKey::Alts(alts.clone()), base, "opt", span, |_| alts)?;
            return self.push(out, IrSymbol::Nonterminal(id), span);
        }
        let mut op = self.operand(x, rule)?;
        if op.is_empty() || max == Some(0) {
            return Ok(());
        }
        // Copies of a multi-symbol operand go through one helper to keep expansions small.
        let copies = match max {
            None => min.saturating_sub(1),
            Some(n) => n,
        };
        if op.len() > 1 && copies > 1 {
            let alts = alloc::vec![op.clone()];
            let id = self.helper(HelperKey::Alts(alts.clone()), base, "group", span, |_| alts)?;
            op = alloc::vec![IrSymbol::Nonterminal(id)];
        }
        match max {
            None if min == 0 => {
                let op2 = op.clone();
                let id = self.helper(HelperKey::Star(op.clone()), base, "star", span, |id| {
                    let mut rec = alloc::vec![IrSymbol::Nonterminal(id)];
                    rec.extend(op2);
                    alloc::vec![Vec::new(), rec]
                })?;
                self.push(out, IrSymbol::Nonterminal(id), span)
            }
            None => {
                for _ in 1..min {
                    for &s in &op {
                        self.push(out, s, span)?;
                    }
                }
                let op2 = op.clone();
                let id = self.helper(HelperKey::Plus(op.clone()), base, "plus", span, |id| {
                    let mut rec = alloc::vec![IrSymbol::Nonterminal(id)];
                    rec.extend(op2.iter().copied());
                    alloc::vec![op2, rec]
                })?;
                self.push(out, IrSymbol::Nonterminal(id), span)
            }
            Some(n) => {
                for _ in 0..min {
                    for &s in &op {
                        self.push(out, s, span)?;
                    }
                }
                if n > min {
                    // tail_k: ε | op tail_{k-1}; tail_1: ε | op.
                    let mut prev: Option<u32> = None;
                    for k in 1..=(n - min) {
                        let mut rhs = op.clone();
                        if let Some(p) = prev {
                            rhs.push(IrSymbol::Nonterminal(p));
                        }
                        let id = self.helper(HelperKey::Tail(op.clone(), k), base, "rep", span, |_| {
                            alloc::vec![Vec::new(), rhs]
                        })?;
                        prev = Some(id);
                    }
                    if let Some(p) = prev {
                        self.push(out, IrSymbol::Nonterminal(p), span)?;
                    }
                }
                Ok(())
            }
        }
    }
}
