//! Grammar analysis: what `sieve grammar-info` reports (issue 19; `core/docs/analysis.md`).
//!
//! [`analyze`] reads a [`GrammarIr`] (after lexeme lowering: every lexeme is a terminal)
//! and reports, for each nonterminal and for the grammar from its start:
//!
//! - its **class**: [`GrammarClass::Regular`] when the sub-grammar reachable from it is
//!   *strongly regular* (Mohri & Nederhof, 2001: every recursive strongly connected set of
//!   nonterminals is all left-linear or all right-linear), else [`GrammarClass::Linear`] when
//!   every production reachable from it has at most one nonterminal, else
//!   [`GrammarClass::General`]; with the reason (which production breaks which test);
//! - whether it is nullable, productive (derives some finite string) and reachable from the
//!   start;
//! - the shortest string it derives, in bytes (Knuth's generalization of Dijkstra's
//!   algorithm to grammars, over each lexeme's shortest string found breadth-first over
//!   regex derivatives); special tokens show as their names;
//! - the lexeme conflicts of [`crate::ir::regular::lexeme_conflicts`], as warnings.
//!
//! Every walk uses explicit stacks or worklists (no recursion on the grammar's shape), is
//! linear in the grammar's size up to a logarithm, and is charged to the
//! [`CompileBudget`]: work units as it goes, its tables' bytes before they are allocated.

use alloc::collections::{BinaryHeap, VecDeque};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::fmt::Write as _;

use hashbrown::HashMap;

use crate::error::{GrammarError, LimitKind, Span};
use crate::ir::regular::{ConflictKind, lexeme_conflicts};
use crate::ir::{GrammarIr, IrSymbol};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{COMPILE_REGEX_WEIGHT, ExprId, ExprSet, RegexCompileErrorKind};
use crate::vocab::Vocabulary;

mod classify;
pub mod lost;
use classify::classify;

/// Most derivatives the breadth-first search for one lexeme's shortest string computes;
/// past it the lexeme's shortest string is estimated (see [`Shortest::exact`]).
pub const LEXEME_SEARCH_STATES: usize = 4096;
/// Most characters of a shortest string shown ([`Shortest::text`] ends with `…` past it).
pub const SHORTEST_SHOWN: usize = 160;
/// Most symbols expanded while writing one nonterminal's shortest string.
const EXPANSION_STEPS: usize = 4096;
/// Most characters of a production quoted in a reason.
const PRODUCTION_SHOWN: usize = 80;

/// The class of a (sub-)grammar. Ordered from the most to the least restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GrammarClass {
    /// Strongly regular: no recursion, or each recursive set of nonterminals is all
    /// left-linear or all right-linear. Its language is regular.
    Regular,
    /// Not strongly regular, but every production has at most one nonterminal.
    Linear,
    /// Neither.
    General,
}

impl GrammarClass {
    /// `regular`, `linear` or `general`.
    pub fn name(self) -> &'static str {
        match self {
            GrammarClass::Regular => "regular",
            GrammarClass::Linear => "linear",
            GrammarClass::General => "general",
        }
    }
}

impl core::fmt::Display for GrammarClass {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The shortest string a nonterminal (or lexeme) derives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shortest {
    /// Its length in bytes (saturating; a special token counts its encoding's bytes).
    pub len: u64,
    /// The string, shown: UTF-8 (invalid bytes replaced), special tokens as their names,
    /// at most [`SHORTEST_SHOWN`] characters (then `…`).
    pub text: String,
    /// `false` when some lexeme's search gave up ([`LEXEME_SEARCH_STATES`]): that lexeme
    /// shows as `<NAME>` and counts the least length its structure shows.
    pub exact: bool,
}

/// What [`analyze`] reports for one nonterminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleInfo {
    /// The nonterminal's name.
    pub name: String,
    /// The class of the sub-grammar reachable from it.
    pub class: GrammarClass,
    /// Why it is in its class (which production breaks the stricter classes).
    pub why: String,
    /// Every production reachable from it has at most one nonterminal (true of every
    /// linear and right- or left-linear sub-grammar).
    pub syntactically_linear: bool,
    /// Derives the empty string.
    pub nullable: bool,
    /// Derives some finite string.
    pub productive: bool,
    /// Reachable from the start.
    pub reachable: bool,
    /// The shortest string it derives (`None` when it is not productive).
    pub shortest: Option<Shortest>,
    /// Where it is defined.
    pub span: Option<Span>,
    /// It has no productions left because the regular-rule pass
    /// ([`crate::ir::regular::lexify`]) made it part of a lexeme (GBNF): it is regular, and
    /// its uses are that lexeme's (its other facts are not reported).
    pub in_lexeme: bool,
}

/// A lexeme conflict, named ([`crate::ir::regular::LexemeConflict`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictInfo {
    /// The lexeme shadowed or read past (index into [`GrammarIr::lexemes`]).
    pub first: u32,
    /// The lexeme that shadows it.
    pub second: u32,
    /// `first`'s name.
    pub first_name: String,
    /// `second`'s name.
    pub second_name: String,
    /// Where `first` is defined or first used.
    pub first_span: Option<Span>,
    /// Where `second` is defined or first used.
    pub second_span: Option<Span>,
    /// How they conflict.
    pub kind: ConflictKind,
    /// For a read-past lexeme (`first == second`, [`ConflictKind::ProperPrefix`]): strings
    /// of the grammar where it is followed by a lexeme it may read into, shortest first, not
    /// yet confirmed lost ([`lost`]).
    pub candidates: Vec<lost::LostCandidate>,
    /// The shortest candidate a matcher rejects ([`GrammarInfo::confirm_lost`]).
    pub lost: Option<lost::LostString>,
}

/// How many nonterminals are in each class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Census {
    /// Nonterminals whose sub-grammar is regular.
    pub regular: usize,
    /// ... linear (not regular).
    pub linear: usize,
    /// ... general.
    pub general: usize,
}

/// The whole report of [`analyze`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarInfo {
    /// The class of the grammar from its start.
    pub class: GrammarClass,
    /// Why.
    pub why: String,
    /// Every production reachable from the start has at most one nonterminal.
    pub syntactically_linear: bool,
    /// The start nonterminal's name.
    pub start: String,
    /// One entry per nonterminal, in the IR's order.
    pub rules: Vec<RuleInfo>,
    /// Number of lexemes (including `%ignore` ones).
    pub lexemes: usize,
    /// Lexeme conflicts (warnings).
    pub conflicts: Vec<ConflictInfo>,
    /// Nonterminals per class.
    pub census: Census,
}

/// The name of a conflict kind in reports: `proper_prefix`, `same_text`, `lazy_shadow`.
pub fn conflict_kind_name(kind: ConflictKind) -> &'static str {
    match kind {
        ConflictKind::ProperPrefix => "proper_prefix",
        ConflictKind::SameText => "same_text",
        ConflictKind::LazyShadow => "lazy_shadow",
    }
}

/// Analyze `ir` (see the module documentation). `vocab` names special tokens in shortest
/// strings (without it they show as `<|special 7|>`).
///
/// # Errors
/// [`LimitKind::CompileFuel`] or [`LimitKind::Memory`] when `budget` runs out (the
/// analysis spends about ten units per grammar symbol plus the regex work of the lexeme
/// searches), and the errors of [`lexeme_conflicts`].
pub fn analyze(
    ir: &GrammarIr,
    vocab: Option<&Vocabulary>,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<GrammarInfo, GrammarError> {
    let n = ir.nonterminals.len();
    let g = Index::new(ir, budget)?;
    let lex = lexeme_shortest(ir, vocab, limits, budget)?;
    let short = nonterminal_shortest(ir, &lex, budget)?;
    let reachable = reachable(ir, &g, budget)?;
    let classes = classify(ir, &g, budget)?;
    let conflicts = lexeme_conflicts(ir, limits, budget)?
        .into_iter()
        .map(|c| {
            let name = |i: u32| ir.lexemes.get(i as usize).map(|l| (l.name.clone(), l.span));
            let (first_name, first_span) = name(c.first).unwrap_or_default();
            let (second_name, second_span) = name(c.second).unwrap_or_default();
            let read_past = c.kind == ConflictKind::ProperPrefix && c.first == c.second;
            ConflictInfo {
                first: c.first,
                second: c.second,
                first_name,
                second_name,
                first_span,
                second_span,
                kind: c.kind,
                candidates: if read_past {
                    lost::candidates(ir, c.first, limits)
                } else {
                    Vec::new()
                },
                lost: None,
            }
        })
        .collect();
    budget.charge_for::<RuleInfo>(n)?;
    let mut rules = Vec::with_capacity(n);
    let mut census = Census::default();
    for (i, nt) in ir.nonterminals.iter().enumerate() {
        let (class, why, syntactically_linear) =
            classes
                .get(i)
                .cloned()
                .unwrap_or((GrammarClass::General, String::new(), false));
        match class {
            GrammarClass::Regular => census.regular += 1,
            GrammarClass::Linear => census.linear += 1,
            GrammarClass::General => census.general += 1,
        }
        let shortest = short.get(i).cloned().flatten();
        budget.charge(nt.name.len() + why.len() + shortest.as_ref().map_or(0, |s| s.text.len()))?;
        // Every front end gives each nonterminal a production; none left means the
        // regular-rule pass folded it into a lexeme.
        if g.productions(i).is_empty() {
            rules.push(RuleInfo {
                name: nt.name.clone(),
                class: GrammarClass::Regular,
                why: String::from("folded into a lexeme by the regular-rule pass"),
                syntactically_linear: true,
                nullable: false,
                productive: true,
                reachable: false,
                shortest: None,
                span: nt.span,
                in_lexeme: true,
            });
            continue;
        }
        rules.push(RuleInfo {
            name: nt.name.clone(),
            class,
            why,
            syntactically_linear,
            nullable: shortest.as_ref().is_some_and(|s| s.len == 0),
            productive: shortest.is_some(),
            reachable: reachable.get(i).copied().unwrap_or(false),
            shortest,
            span: nt.span,
            in_lexeme: false,
        });
    }
    let (class, why, syntactically_linear, start) = match rules.get(ir.start as usize) {
        Some(r) => (
            r.class,
            r.why.clone(),
            r.syntactically_linear,
            r.name.clone(),
        ),
        None => (
            GrammarClass::Regular,
            "no start rule".into(),
            true,
            String::new(),
        ),
    };
    Ok(GrammarInfo {
        class,
        why,
        syntactically_linear,
        start,
        rules,
        lexemes: ir.lexemes.len(),
        conflicts,
        census,
    })
}

// ------------------------------------------------------------------------------------------
// Indexes

/// Productions by left-hand side, and occurrences of each nonterminal on right-hand sides.
struct Index {
    /// `by_lhs[by_lhs_start[a]..by_lhs_start[a + 1]]`: the productions of `a`.
    by_lhs_start: Vec<u32>,
    by_lhs: Vec<u32>,
}

impl Index {
    fn new(ir: &GrammarIr, budget: &mut CompileBudget) -> Result<Index, GrammarError> {
        let n = ir.nonterminals.len();
        budget.charge_for::<u32>(n + 1 + ir.rules.len())?;
        budget.spend((n + ir.rules.len()) as u64)?;
        let mut by_lhs_start = vec![0u32; n + 1];
        for r in &ir.rules {
            if let Some(c) = by_lhs_start.get_mut(r.lhs as usize + 1) {
                *c += 1;
            }
        }
        for i in 0..n {
            by_lhs_start[i + 1] += by_lhs_start[i];
        }
        let mut fill = by_lhs_start.clone();
        let mut by_lhs = vec![0u32; by_lhs_start[n] as usize];
        for (i, r) in ir.rules.iter().enumerate() {
            if let Some(f) = fill.get_mut(r.lhs as usize) {
                by_lhs[*f as usize] = i as u32;
                *f += 1;
            }
        }
        Ok(Index {
            by_lhs_start,
            by_lhs,
        })
    }

    /// The production indexes of nonterminal `a`.
    fn productions(&self, a: usize) -> &[u32] {
        let lo = self.by_lhs_start.get(a).copied().unwrap_or(0) as usize;
        let hi = self.by_lhs_start.get(a + 1).copied().unwrap_or(0) as usize;
        self.by_lhs.get(lo..hi).unwrap_or_default()
    }
}

fn nonterminals(rhs: &[IrSymbol]) -> impl Iterator<Item = (usize, u32)> + '_ {
    rhs.iter().enumerate().filter_map(|(i, s)| match s {
        IrSymbol::Nonterminal(n) => Some((i, *n)),
        IrSymbol::Lexeme(_) => None,
    })
}

fn grammar_size(ir: &GrammarIr) -> u64 {
    ir.rules.iter().map(|r| r.rhs.len() as u64 + 1).sum()
}

// ------------------------------------------------------------------------------------------
// Shortest strings

/// A lexeme's shortest string: its length, its text as shown, whether exact. `None`: the
/// lexeme matches nothing.
type LexShortest = Option<(u64, String, bool)>;

fn lexeme_shortest(
    ir: &GrammarIr,
    vocab: Option<&Vocabulary>,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<Vec<LexShortest>, GrammarError> {
    budget.charge_for::<LexShortest>(ir.lexemes.len())?;
    let mut exprs = ExprSet::new(limits);
    exprs.set_fuel(budget.left());
    exprs.set_weight(COMPILE_REGEX_WEIGHT);
    let mut out = Vec::with_capacity(ir.lexemes.len());
    let mut result = Ok(());
    for lex in &ir.lexemes {
        let e = match exprs.compile(&lex.regex) {
            Ok(e) => e,
            Err(err) => {
                if let RegexCompileErrorKind::Limit(k) = err.kind {
                    result = Err(k);
                    break;
                }
                // An invalid pattern: the grammar does not compile; shown by name.
                out.push(Some((1, format!("<{}>", lex.name), false)));
                continue;
            }
        };
        match shortest_bytes(&mut exprs, e) {
            Ok(Some(Some(bytes))) => {
                let text = render(&bytes, vocab);
                out.push(Some((bytes.len() as u64, text, true)));
            }
            Ok(Some(None)) => out.push(None),
            Ok(None) => {
                // Gave up: the least length the structure shows (at least one byte unless
                // the lexeme is nullable, which the search would have seen at once).
                let least = match exprs.length_bounds(e) {
                    Some(Some((lo, _))) => lo,
                    Some(None) => {
                        out.push(None);
                        continue;
                    }
                    None => 0,
                };
                let least = if exprs.is_nullable(e) {
                    0
                } else {
                    least.max(1)
                };
                out.push(Some((least, format!("<{}>", lex.name), false)));
            }
            Err(k) => {
                result = Err(k);
                break;
            }
        }
    }
    budget.settle(exprs.fuel_left());
    budget.charge(exprs.bytes_used())?;
    match result {
        Ok(()) => Ok(out),
        Err(LimitKind::Fuel) => Err(GrammarError::limit(LimitKind::CompileFuel)),
        Err(k) => Err(GrammarError::limit(k)),
    }
}

/// Breadth-first over the derivatives of `e`: `Some(Some(bytes))`, a shortest string;
/// `Some(None)`, the language is empty; `None`, gave up after [`LEXEME_SEARCH_STATES`].
/// Each step takes the most readable byte of its byte class (a letter before a digit
/// before other printable ASCII, space, then the rest).
fn shortest_bytes(s: &mut ExprSet, e: ExprId) -> Result<Option<Option<Vec<u8>>>, LimitKind> {
    if s.is_nullable(e) {
        return Ok(Some(Some(Vec::new())));
    }
    if e == ExprId::NOTHING {
        return Ok(Some(None));
    }
    let classes = s.byte_classes(&[e]);
    let nc = classes.num_classes();
    let mut best = vec![(u8::MAX, 0u8); nc];
    for b in 0..=255u8 {
        let rank = match b {
            b'a'..=b'z' => 0,
            b'0'..=b'9' => 1,
            b'A'..=b'Z' => 2,
            0x21..=0x7e => 3,
            b' ' => 4,
            0x80..=0xfe => 5,
            _ => 6,
        };
        if let Some(slot) = best.get_mut(classes.class_of(b) as usize)
            && rank < slot.0
        {
            *slot = (rank, b);
        }
    }
    // Parent of each state found: (parent, byte).
    let mut parent: HashMap<ExprId, (ExprId, u8)> = HashMap::new();
    let mut queue = VecDeque::from([e]);
    parent.insert(e, (e, 0));
    let mut steps = 0usize;
    while let Some(x) = queue.pop_front() {
        for &(_, b) in &best {
            steps += 1;
            if steps > LEXEME_SEARCH_STATES {
                return Ok(None);
            }
            let d = s.derivative(x, b)?;
            if d == ExprId::NOTHING || parent.contains_key(&d) {
                continue;
            }
            parent.insert(d, (x, b));
            if s.is_nullable(d) {
                let mut bytes = Vec::new();
                let mut cur = d;
                while cur != e {
                    let Some(&(p, b)) = parent.get(&cur) else {
                        break;
                    };
                    bytes.push(b);
                    cur = p;
                }
                bytes.reverse();
                return Ok(Some(Some(bytes)));
            }
            queue.push_back(d);
        }
    }
    Ok(Some(None))
}

/// `bytes` shown: UTF-8 with invalid sequences replaced, special-token encodings
/// (`0xFF digits 0xFF`) as the token's name.
fn render(bytes: &[u8], vocab: Option<&Vocabulary>) -> String {
    let mut out = String::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let cut = rest
            .iter()
            .position(|&b| b == Vocabulary::SPECIAL_PREFIX)
            .unwrap_or(rest.len());
        out.push_str(&String::from_utf8_lossy(
            rest.get(..cut).unwrap_or_default(),
        ));
        rest = rest.get(cut..).unwrap_or_default();
        if rest.is_empty() {
            break;
        }
        // `0xFF digits 0xFF`.
        let tail = rest.get(1..).unwrap_or_default();
        let digits = tail.iter().take_while(|b| b.is_ascii_digit()).count();
        let id = core::str::from_utf8(tail.get(..digits).unwrap_or_default())
            .ok()
            .and_then(|d| d.parse::<u32>().ok());
        match (id, tail.get(digits)) {
            (Some(id), Some(&Vocabulary::SPECIAL_PREFIX)) => {
                let name = vocab.map(|v| v.token_text(id)).unwrap_or_default();
                if name.is_empty() {
                    let _ = write!(out, "<|special {id}|>");
                } else {
                    out.push_str(&String::from_utf8_lossy(name));
                }
                rest = tail.get(digits + 1..).unwrap_or_default();
            }
            _ => {
                out.push('\u{FFFD}');
                rest = tail;
            }
        }
    }
    out
}

/// Knuth's algorithm: each nonterminal's shortest derivation, in order of length. A
/// production is ready once all its nonterminals are done; the shortest ready production
/// on the heap finishes its left-hand side. Unproductive nonterminals are never done.
fn nonterminal_shortest(
    ir: &GrammarIr,
    lex: &[LexShortest],
    budget: &mut CompileBudget,
) -> Result<Vec<Option<Shortest>>, GrammarError> {
    let n = ir.nonterminals.len();
    let done = shortest_derivations(ir, lex, budget)?;
    // Write each string out, skipping empty parts (a derivation of length 0 may be a tree
    // of any size), at most `SHORTEST_SHOWN` characters and `EXPANSION_STEPS` symbols.
    budget.spend((n as u64).saturating_mul(EXPANSION_STEPS as u64 / 64))?;
    let mut out = Vec::with_capacity(n);
    let mut stack: Vec<IrSymbol> = Vec::new();
    for a in 0..n {
        let Some((len, _, exact)) = done.get(a).copied().flatten() else {
            out.push(None);
            continue;
        };
        let text = expand_shortest(ir, lex, &done, a as u32, &mut stack);
        out.push(Some(Shortest { len, text, exact }));
    }
    Ok(out)
}

/// A nonterminal's shortest derivation as Knuth's algorithm found it: (length, the
/// production chosen, exact).
type Derivation = (u64, u32, bool);

/// [`nonterminal_shortest`]'s lengths: per nonterminal, its [`Derivation`] (`None`:
/// unproductive).
fn shortest_derivations(
    ir: &GrammarIr,
    lex: &[LexShortest],
    budget: &mut CompileBudget,
) -> Result<Vec<Option<Derivation>>, GrammarError> {
    let n = ir.nonterminals.len();
    let size = grammar_size(ir);
    budget.spend(size.saturating_mul(4))?;
    // Per production: nonterminal occurrences not yet done, length so far, exactness.
    budget.charge_for::<(u32, u64, bool)>(ir.rules.len())?;
    budget.charge_for::<u32>(size as usize)?;
    let (occ_start, occ) = occurrences(ir);
    let mut pending = Vec::with_capacity(ir.rules.len());
    let mut heap = BinaryHeap::new();
    for (p, r) in ir.rules.iter().enumerate() {
        let mut count = 0u32;
        let mut len = 0u64;
        let mut exact = true;
        let mut dead = false;
        for s in &r.rhs {
            match *s {
                IrSymbol::Nonterminal(_) => count += 1,
                IrSymbol::Lexeme(l) => match lex.get(l as usize) {
                    Some(Some((ll, _, e))) => {
                        len = len.saturating_add(*ll);
                        exact &= *e;
                    }
                    _ => dead = true,
                },
            }
        }
        if dead {
            count = u32::MAX;
        }
        pending.push((count, len, exact));
        if count == 0 {
            heap.push(Reverse((len, p as u32)));
        }
    }
    budget.charge_for::<Option<Derivation>>(n)?;
    let mut done: Vec<Option<Derivation>> = vec![None; n];
    while let Some(Reverse((len, p))) = heap.pop() {
        let Some(rule) = ir.rules.get(p as usize) else {
            continue;
        };
        let a = rule.lhs as usize;
        let Some(slot) = done.get_mut(a) else {
            continue;
        };
        if slot.is_some() {
            continue;
        }
        let exact = pending.get(p as usize).is_none_or(|x| x.2);
        *slot = Some((len, p, exact));
        let lo = occ_start[a] as usize;
        let hi = occ_start[a + 1] as usize;
        for &q in occ.get(lo..hi).unwrap_or_default() {
            let Some(x) = pending.get_mut(q as usize) else {
                continue;
            };
            if x.0 == u32::MAX {
                continue;
            }
            x.0 -= 1;
            x.1 = x.1.saturating_add(len);
            x.2 &= exact;
            if x.0 == 0 {
                heap.push(Reverse((x.1, q)));
            }
        }
    }
    Ok(done)
}

/// The productions using each nonterminal (once per occurrence), as
/// `occ[start[a]..start[a + 1]]` for nonterminal `a`.
fn occurrences(ir: &GrammarIr) -> (Vec<u32>, Vec<u32>) {
    let n = ir.nonterminals.len();
    let mut occ_start = vec![0u32; n + 1];
    for r in &ir.rules {
        for (_, b) in nonterminals(&r.rhs) {
            if let Some(c) = occ_start.get_mut(b as usize + 1) {
                *c += 1;
            }
        }
    }
    for i in 0..n {
        occ_start[i + 1] += occ_start[i];
    }
    let mut fill = occ_start.clone();
    let mut occ = vec![0u32; occ_start[n] as usize];
    for (p, r) in ir.rules.iter().enumerate() {
        for s in &r.rhs {
            if let IrSymbol::Nonterminal(b) = *s
                && let Some(f) = fill.get_mut(b as usize)
            {
                occ[*f as usize] = p as u32;
                *f += 1;
            }
        }
    }
    (occ_start, occ)
}

/// The text of nonterminal `a`'s shortest derivation, empty parts skipped, cut (with `…`)
/// at `SHORTEST_SHOWN` characters or `EXPANSION_STEPS` symbols. `stack` is scratch.
fn expand_shortest(
    ir: &GrammarIr,
    lex: &[LexShortest],
    done: &[Option<Derivation>],
    a: u32,
    stack: &mut Vec<IrSymbol>,
) -> String {
    let mut text = String::new();
    let mut chars = 0usize;
    let mut steps = 0usize;
    let mut cut = false;
    stack.clear();
    stack.push(IrSymbol::Nonterminal(a));
    while let Some(s) = stack.pop() {
        steps += 1;
        if steps > EXPANSION_STEPS || chars >= SHORTEST_SHOWN {
            cut = true;
            break;
        }
        match s {
            IrSymbol::Lexeme(l) => {
                if let Some(Some((_, t, _))) = lex.get(l as usize) {
                    for c in t.chars() {
                        if chars >= SHORTEST_SHOWN {
                            cut = true;
                            break;
                        }
                        text.push(c);
                        chars += 1;
                    }
                }
            }
            IrSymbol::Nonterminal(b) => {
                let Some((blen, bp, _)) = done.get(b as usize).copied().flatten() else {
                    continue;
                };
                if blen == 0 {
                    continue;
                }
                if let Some(r) = ir.rules.get(bp as usize) {
                    for x in r.rhs.iter().rev() {
                        let empty = match *x {
                            IrSymbol::Lexeme(l) => {
                                matches!(lex.get(l as usize), Some(Some((0, _, _))))
                            }
                            IrSymbol::Nonterminal(c) => {
                                matches!(done.get(c as usize), Some(Some((0, _, _))))
                            }
                        };
                        if !empty {
                            stack.push(*x);
                        }
                    }
                }
            }
        }
        if cut {
            break;
        }
    }
    if cut {
        text.push('…');
    }
    text
}

fn reachable(
    ir: &GrammarIr,
    g: &Index,
    budget: &mut CompileBudget,
) -> Result<Vec<bool>, GrammarError> {
    let n = ir.nonterminals.len();
    budget.charge_for::<u32>(2 * n)?;
    budget.spend(grammar_size(ir))?;
    let mut seen = vec![false; n];
    let mut stack = Vec::new();
    if let Some(s) = seen.get_mut(ir.start as usize) {
        *s = true;
        stack.push(ir.start as usize);
    }
    while let Some(a) = stack.pop() {
        for &p in g.productions(a) {
            let Some(r) = ir.rules.get(p as usize) else {
                continue;
            };
            for (_, b) in nonterminals(&r.rhs) {
                if let Some(s) = seen.get_mut(b as usize)
                    && !*s
                {
                    *s = true;
                    stack.push(b as usize);
                }
            }
        }
    }
    Ok(seen)
}

// ------------------------------------------------------------------------------------------
// Classes

/// The strongly connected components of the nonterminal graph (an edge `a → b` when `b`
/// occurs in a production of `a`), by Tarjan's algorithm on an explicit stack. Returns
/// each nonterminal's component; components are numbered in the order they are completed,
/// so every edge leads to a component numbered no higher (successors first).
fn components(
    ir: &GrammarIr,
    g: &Index,
    budget: &mut CompileBudget,
) -> Result<(Vec<u32>, u32), GrammarError> {
    let n = ir.nonterminals.len();
    const UNSEEN: u32 = u32::MAX;
    budget.charge_for::<u32>(6 * n)?;
    budget.spend(grammar_size(ir).saturating_mul(2))?;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0u32; n];
    let mut on_stack = vec![false; n];
    let mut comp = vec![UNSEEN; n];
    let mut tarjan: Vec<u32> = Vec::new();
    // Call frames: (node, production position, symbol position).
    let mut frames: Vec<(u32, u32, u32)> = Vec::new();
    let mut next = 0u32;
    let mut ncomp = 0u32;
    for root in 0..n as u32 {
        if index[root as usize] != UNSEEN {
            continue;
        }
        index[root as usize] = next;
        low[root as usize] = next;
        next += 1;
        tarjan.push(root);
        on_stack[root as usize] = true;
        frames.push((root, 0, 0));
        while let Some(top) = frames.last_mut() {
            let (v, pi, si) = *top;
            let prods = g.productions(v as usize);
            let Some(&p) = prods.get(pi as usize) else {
                // All edges seen: close `v`.
                frames.pop();
                if low[v as usize] == index[v as usize] {
                    while let Some(w) = tarjan.pop() {
                        on_stack[w as usize] = false;
                        comp[w as usize] = ncomp;
                        if w == v {
                            break;
                        }
                    }
                    ncomp += 1;
                }
                if let Some(parent) = frames.last() {
                    let u = parent.0 as usize;
                    low[u] = low[u].min(low[v as usize]);
                }
                continue;
            };
            let rhs = ir
                .rules
                .get(p as usize)
                .map(|r| r.rhs.as_slice())
                .unwrap_or_default();
            let Some(sym) = rhs.get(si as usize) else {
                top.1 += 1;
                top.2 = 0;
                continue;
            };
            top.2 += 1;
            let IrSymbol::Nonterminal(w) = *sym else {
                continue;
            };
            let wi = w as usize;
            if wi >= n {
                continue;
            }
            if index[wi] == UNSEEN {
                index[wi] = next;
                low[wi] = next;
                next += 1;
                tarjan.push(w);
                on_stack[wi] = true;
                frames.push((w, 0, 0));
            } else if on_stack[wi] {
                let vi = v as usize;
                low[vi] = low[vi].min(index[wi]);
            }
        }
    }
    Ok((comp, ncomp))
}

/// `rule → a b c` for reasons, shortened.
fn show_production(ir: &GrammarIr, p: u32) -> String {
    let Some(r) = ir.rules.get(p as usize) else {
        return String::new();
    };
    let mut s = String::new();
    if r.rhs.is_empty() {
        s.push('ε');
    }
    for (i, x) in r.rhs.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let name = match *x {
            IrSymbol::Nonterminal(b) => ir.nonterminals.get(b as usize).map(|t| t.name.as_str()),
            IrSymbol::Lexeme(l) => ir.lexemes.get(l as usize).map(|t| t.name.as_str()),
        };
        s.push_str(name.unwrap_or("?"));
        if s.chars().count() > PRODUCTION_SHOWN {
            let keep: String = s.chars().take(PRODUCTION_SHOWN).collect();
            s = keep;
            s.push('…');
            break;
        }
    }
    format!("`{} → {}`", nt_name(ir, r.lhs), s)
}

fn nt_name(ir: &GrammarIr, a: u32) -> &str {
    ir.nonterminals
        .get(a as usize)
        .map_or("?", |t| t.name.as_str())
}

/// `{a, b, c, …}`: the first members of a component.
fn show_members(ir: &GrammarIr, members: &[u32]) -> String {
    let mut s = String::from("{");
    for (i, &m) in members.iter().take(4).enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(nt_name(ir, m));
    }
    if members.len() > 4 {
        let _ = write!(s, ", … ({} in all)", members.len());
    }
    s.push('}');
    s
}

// ------------------------------------------------------------------------------------------
// Reports

fn span_json(span: Option<Span>) -> serde_json::Value {
    match span {
        Some(s) => serde_json::json!({"line": s.start.line, "column": s.start.column}),
        None => serde_json::Value::Null,
    }
}

impl GrammarInfo {
    /// The report as JSON (the format of `core/docs/analysis.md`, keys in that order).
    pub fn to_json(&self) -> serde_json::Value {
        let rules: Vec<serde_json::Value> = self
            .rules
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "class": r.class.name(),
                    "why": r.why,
                    "syntactically_linear": r.syntactically_linear,
                    "nullable": r.nullable,
                    "productive": r.productive,
                    "reachable": r.reachable,
                    "shortest": r.shortest.as_ref().map(|s| s.text.clone()),
                    "shortest_len": r.shortest.as_ref().map(|s| s.len),
                    "shortest_exact": r.shortest.as_ref().map(|s| s.exact),
                    "span": span_json(r.span),
                    "in_lexeme": r.in_lexeme,
                })
            })
            .collect();
        let conflicts: Vec<serde_json::Value> = self
            .conflicts
            .iter()
            .map(|c| {
                serde_json::json!({
                    "kind": conflict_kind_name(c.kind),
                    "first": c.first_name,
                    "second": c.second_name,
                    "first_span": span_json(c.first_span),
                    "second_span": span_json(c.second_span),
                    "follower": c.lost.as_ref().map(|l| l.follower.clone()),
                    "follower_span": span_json(c.lost.as_ref().and_then(|l| l.follower_span)),
                    "lost": c.lost.as_ref().map(|l| l.text.clone()),
                })
            })
            .collect();
        serde_json::json!({
            "class": self.class.name(),
            "why": self.why,
            "syntactically_linear": self.syntactically_linear,
            "start": self.start,
            "rules": rules,
            "lexemes": self.lexemes,
            "conflicts": conflicts,
            "census": {
                "regular": self.census.regular,
                "linear": self.census.linear,
                "general": self.census.general,
            },
        })
    }

    /// The report for people: the grammar's class, then one line per rule, then the
    /// conflicts.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "grammar: {} (from `{}`): {}",
            self.class, self.start, self.why
        );
        let _ = writeln!(
            s,
            "rules: {} ({} regular, {} linear, {} general); lexemes: {}",
            self.rules.len(),
            self.census.regular,
            self.census.linear,
            self.census.general,
            self.lexemes
        );
        for r in &self.rules {
            let mut flags = Vec::new();
            if r.nullable {
                flags.push("nullable");
            }
            if !r.productive {
                flags.push("unproductive");
            }
            if !r.reachable {
                flags.push("unreachable");
            }
            let at = r
                .span
                .map(|sp| format!(" (line {}, column {})", sp.start.line, sp.start.column))
                .unwrap_or_default();
            if r.in_lexeme {
                let _ = writeln!(s, "  {}{at}: regular, folded into a lexeme", r.name);
                continue;
            }
            let _ = write!(s, "  {}{at}: {}", r.name, r.class);
            if !flags.is_empty() {
                let _ = write!(s, ", {}", flags.join(", "));
            }
            match &r.shortest {
                Some(sh) => {
                    let approx = if sh.exact { "" } else { " at least" };
                    let _ = write!(s, "; shortest{approx} {} bytes: {:?}", sh.len, sh.text);
                }
                None => s.push_str("; derives no string"),
            }
            if r.class != GrammarClass::Regular {
                let _ = write!(s, "\n      why: {}", r.why);
            }
            s.push('\n');
        }
        for c in &self.conflicts {
            let at = |sp: Option<Span>| {
                sp.map(|sp| format!(" (line {}, column {})", sp.start.line, sp.start.column))
                    .unwrap_or_default()
            };
            let kind = conflict_kind_name(c.kind);
            let (first, second) = (&c.first_name, &c.second_name);
            let (fa, sa) = (at(c.first_span), at(c.second_span));
            let _ = match &c.lost {
                Some(l) => writeln!(
                    s,
                    "warning: lexeme conflict ({kind}): {first}{fa} reads on into {}{}: the \
                     grammar's string {:?} is lost (the masks reject it)",
                    l.follower,
                    at(l.follower_span),
                    l.text
                ),
                None if c.first == c.second => writeln!(
                    s,
                    "warning: lexeme conflict ({kind}): {first}{fa} may read on past its end \
                     into what follows it (no lost string confirmed)"
                ),
                None => writeln!(
                    s,
                    "warning: lexeme conflict ({kind}): {first}{fa} and {second}{sa}"
                ),
            };
        }
        s
    }
}

#[cfg(test)]
mod tests;
